//! Tasks between a server's own (canonical) values and each revision that has them: the
//! 2025-11-25 core feature and the 2026-07-28 extension.

use mcp_revisions::Translator;
use mcp_types::protocol::method;
use mcp_types::Revision;
use serde_json::json;

fn task(status: &str) -> serde_json::Value {
    json!({
        "taskId": "t1", "status": status, "createdAt": "2026-11-30T00:00:00Z",
        "lastUpdatedAt": "2026-11-30T00:00:01Z", "ttlMs": 60000, "pollIntervalMs": 500
    })
}

#[test]
fn a_created_task_takes_each_revisions_shape() {
    let mut created = task("working");
    created["resultType"] = json!("task");
    let to_2026 = Translator::canonical_to(Revision::V2026_07_28)
        .result(method::TOOLS_CALL, created.clone())
        .expect("2026");
    assert_eq!(to_2026["resultType"], "task");
    assert_eq!(to_2026["taskId"], "t1");
    assert_eq!(to_2026["ttlMs"], 60000);
    assert!(to_2026.get("task").is_none(), "{to_2026}");

    let to_2025 = Translator::canonical_to(Revision::V2025_11_25)
        .result(method::TOOLS_CALL, created.clone())
        .expect("2025-11-25");
    assert_eq!(to_2025["task"]["taskId"], "t1");
    assert_eq!(to_2025["task"]["ttl"], 60000);
    assert_eq!(to_2025["task"]["pollInterval"], 500);
    assert!(to_2025.get("resultType").is_none(), "{to_2025}");

    assert!(Translator::canonical_to(Revision::V2025_06_18)
        .result(method::TOOLS_CALL, created)
        .is_err());
}

#[test]
fn a_finished_task_carries_its_outcome_inline_only_in_the_extension() {
    let mut done = task("completed");
    done["result"] = json!({"content": [{"type": "text", "text": "done"}]});
    let to_2026 = Translator::canonical_to(Revision::V2026_07_28)
        .result(method::TASKS_GET, done.clone())
        .expect("2026");
    assert_eq!(to_2026["result"]["content"][0]["text"], "done");
    assert_eq!(to_2026["resultType"], "complete");

    let to_2025 = Translator::canonical_to(Revision::V2025_11_25)
        .result(method::TASKS_GET, done)
        .expect("2025-11-25");
    assert!(to_2025.get("result").is_none(), "{to_2025}");
    assert_eq!(to_2025["ttl"], 60000);

    // A 2025-11-25 completed task has no outcome inline: it cannot be a 2026 answer.
    let legacy = json!({"taskId": "t1", "status": "completed", "createdAt": "x",
        "lastUpdatedAt": "x", "ttl": null});
    assert!(
        Translator::new(Revision::V2025_11_25, Revision::V2026_07_28)
            .result(method::TASKS_GET, legacy)
            .is_err()
    );
}

#[test]
fn a_cancel_answers_with_the_task_in_2025_11_25_and_an_acknowledgement_in_2026() {
    let cancelled = task("cancelled");
    let to_2025 = Translator::canonical_to(Revision::V2025_11_25)
        .result(method::TASKS_CANCEL, cancelled.clone())
        .expect("2025-11-25");
    assert_eq!(to_2025["status"], "cancelled");
    assert_eq!(to_2025["ttl"], 60000);
    let to_2026 = Translator::canonical_to(Revision::V2026_07_28)
        .result(method::TASKS_CANCEL, cancelled)
        .expect("2026");
    assert_eq!(to_2026, json!({"resultType": "complete"}));
}
