//! Tasks: the 2025-11-25 core feature and the 2026-07-28 tasks extension
//! (`io.modelcontextprotocol/tasks`).
//!
//! One [`Task`] models both shapes: 2025-11-25 names its timing fields `ttl` and
//! `pollInterval`, the extension `ttlMs` and `pollIntervalMs` and adds the
//! status-specific `inputRequests`, `result` and `error`. Translation between the
//! two lives in `mcp-revisions`.

use serde_json::{Map, Value};

use super::common::{Cursor, ResultType};
use crate::meta::Meta;
use crate::model::{open_enum, wire_object};

/// Extension id of the 2026-07-28 tasks extension.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

open_enum! {
    /// Where a task is in its life.
    pub enum TaskStatus {
        /// `working`
        Working = "working",
        /// `input_required`
        InputRequired = "input_required",
        /// `completed`
        Completed = "completed",
        /// `failed`
        Failed = "failed",
        /// `cancelled`
        Cancelled = "cancelled",
    }
}

impl TaskStatus {
    /// Whether the task can change no more.
    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled
        )
    }
}

wire_object! {
    /// 2025-11-25 `task` param: ask for a request to run as a task.
    pub struct TaskMetadata {
        /// Requested retention in milliseconds.
        opt ttl: serde_json::Number,
    }
}

wire_object! {
    /// A task, in the 2025-11-25 shape or the 2026-07-28 extension's shape.
    pub struct Task {
        /// Task id.
        req task_id: String,
        /// Status.
        req status: TaskStatus,
        /// Human-readable status.
        opt status_message: String,
        /// ISO 8601 creation time.
        req created_at: String,
        /// ISO 8601 time of the last change.
        req last_updated_at: String,
        /// 2025-11-25 retention in ms (`null`: unlimited; kept distinct from absent).
        #[serde(deserialize_with = "crate::serde_util::present")]
        opt ttl: Value,
        /// 2025-11-25 suggested polling interval in ms.
        opt poll_interval: serde_json::Number,
        /// Extension: retention in ms (`null`: unlimited; kept distinct from absent).
        #[serde(deserialize_with = "crate::serde_util::present")]
        opt ttl_ms: Value,
        /// Extension: suggested polling interval in ms.
        opt poll_interval_ms: serde_json::Number,
        /// Extension, `input_required`: outstanding requests.
        opt input_requests: Map<String, Value>,
        /// Extension, `completed`: the final result.
        opt result: Map<String, Value>,
        /// Extension, `failed`: the error, kept raw.
        opt error: Value,
        /// Extension: result type (`task` on creation, `complete` on `tasks/get`).
        opt result_type: ResultType,
        /// Metadata.
        #[serde(rename = "_meta")]
        opt meta: Meta,
    }
}

wire_object! {
    /// 2025-11-25 `CreateTaskResult`: the task created for a task-augmented request.
    pub struct CreateTaskResult {
        /// The new task.
        req task: Task,
        /// Result metadata.
        #[serde(rename = "_meta")]
        opt meta: Meta,
    }
}

wire_object! {
    /// 2025-11-25 result of `tasks/list`.
    pub struct ListTasksResult {
        /// The tasks on this page.
        req tasks: Vec<Task>,
        /// Cursor of the next page.
        opt next_cursor: Cursor,
        /// Result metadata.
        #[serde(rename = "_meta")]
        opt meta: Meta,
    }
}

wire_object! {
    /// Params of `tasks/get`, `tasks/cancel`, `tasks/result` (2025-11-25) and, with
    /// `inputResponses`, `tasks/update` (extension).
    pub struct TaskRequestParams {
        /// The task.
        req task_id: String,
        /// Extension `tasks/update`: answers to the task's `inputRequests`.
        opt input_responses: Map<String, Value>,
        /// Request metadata.
        #[serde(rename = "_meta")]
        opt meta: Meta,
    }
}

/// 2026-07-28 extension `CreateTaskResult`: the task fields flat, with `resultType: "task"`.
pub type ExtCreateTaskResult = Task;
