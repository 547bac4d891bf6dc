//! Test helpers shared by the corpus tests of mcp-types and mcp-revisions.

use mcp_types::protocol::method;

/// The method whose result a `<Type>` (or `<Type>Response`) fixture is.
pub fn result_method(def: &str) -> Option<&'static str> {
    let def = def.strip_suffix("Response").unwrap_or(def);
    Some(match def {
        "InitializeResult" => method::INITIALIZE,
        "EmptyResult" => method::PING,
        "DiscoverResult" => method::DISCOVER,
        "ListToolsResult" => method::TOOLS_LIST,
        "CallToolResult" | "InputRequiredResult" => method::TOOLS_CALL,
        "ListPromptsResult" => method::PROMPTS_LIST,
        "GetPromptResult" => method::PROMPTS_GET,
        "ListResourcesResult" => method::RESOURCES_LIST,
        "ListResourceTemplatesResult" => method::RESOURCES_TEMPLATES_LIST,
        "ReadResourceResult" => method::RESOURCES_READ,
        "CompleteResult" => method::COMPLETION_COMPLETE,
        "CreateMessageResult" => method::SAMPLING_CREATE_MESSAGE,
        "ElicitResult" => method::ELICITATION_CREATE,
        "ListRootsResult" => method::ROOTS_LIST,
        "SubscriptionsListenResult" => method::SUBSCRIPTIONS_LISTEN,
        "GetTaskResult" => method::TASKS_GET,
        "CancelTaskResult" => method::TASKS_CANCEL,
        "ListTasksResult" => method::TASKS_LIST,
        "GetTaskPayloadResult" => method::TASKS_RESULT,
        _ => return None,
    })
}
