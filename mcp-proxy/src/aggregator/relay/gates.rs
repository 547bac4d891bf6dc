//! The gates a host's `tools/call` passes, in order, written once for both paths:
//!
//! 1. the tool's route: unknown, outside the principal's view, or denied by policy, the
//!    call is refused as a call to an unknown tool (the denied tool's upstream is named
//!    to a principal that sees it);
//! 2. the task plan (TOOL-21): a task asked of a tool that forbids one is refused;
//! 3. the rate limits (`limited.rs`): a token from each bucket the call is under, taken
//!    here when the buckets are in this process, before the upstream when in a store;
//! 4. the pinning gate: a tool that is not as approved needs the user's leave;
//! 5. the confirmation gate (TOOL-17): a tool that may be destructive goes to the
//!    configured hook, which may have the user asked.
//!
//! What they say also decides the path: a call that asks nobody anything, runs as no
//! task, relays no progress and resumes no parked call goes without a task of its own
//! (`fast.rs`); any other is driven on one (`call.rs`), which asks the questions.

use std::sync::Arc;

use mcp_server::RequestContext;
use mcp_types::{codes, ErrorObject};

use super::call::TaskPlan;
use super::limited::Limit;
use super::Relay;
pub(super) use crate::aggregator::answers::{APPROVE_KEY, CONFIRM_KEY, OWN_KEYS};
use crate::aggregator::id::UpstreamId;
use crate::aggregator::route::Route;
use crate::aggregator::visibility::Seen;
use crate::policy::{may_be_destructive, Surface};
use mcp_types::protocol::{TaskSupport, Tool};

/// A call the gates let through: where it goes and how.
pub(super) struct Admitted {
    pub(super) route: Arc<Route>,
    pub(super) plan: TaskPlan,
    /// TOOL-18: only a tool its trusted upstream calls idempotent is called again after
    /// the connection dropped under it; anything else might act twice.
    pub(super) may_retry: bool,
    /// The pinning gate's reason, when the user must allow the call.
    pub(super) unapproved: Option<Arc<str>>,
    /// Whether the confirmation hook is to be asked.
    pub(super) confirm: bool,
    /// Whether the rate limits' store is to be asked.
    pub(super) limit: Limit,
}

/// Why a call is driven on a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Driven {
    /// The host asked for progress, which the task relays.
    Progress,
    /// It resumes a call parked for the host's answers.
    Resumed,
    /// A gate asks a question (pinning or confirmation).
    Asks,
    /// The upstream runs it as a task.
    AsTask,
    /// Its rate limits are kept elsewhere, and asked first.
    Limited,
}

/// Whether `name` is one of the dispatcher's own tools for a principal that sees `seen`,
/// which the gateway answers itself (no gate applies: they reach only what passes them).
pub(super) fn is_own_tool(seen: &Seen<'_>, name: &str) -> bool {
    seen.surface() == Surface::Dispatcher && crate::dispatcher::is_own_tool(name)
}

impl Relay {
    /// The gates, in order, for the call to the tool hosts know as `name`, for the
    /// request's principal, who sees `seen`: a refusal, or the call let through.
    pub(super) fn admit(
        &self,
        ctx: &RequestContext,
        seen: &Seen<'_>,
        name: &str,
    ) -> Result<Admitted, ErrorObject> {
        let route = self.route_for(ctx, seen, name)?;
        let plan = self.task_plan(ctx, route.upstream, name, &route.tool)?;
        let limit = self.limit_now(ctx, self.pool().key(route.upstream), name)?;
        let confirm = self.confirm.is_some()
            && (ctx.input_response(CONFIRM_KEY).is_some()
                || may_be_destructive(&route.tool, route.hints_trusted));
        Ok(Admitted {
            may_retry: route.hints_trusted && route.tool.is_idempotent(),
            unapproved: route.unapproved.clone(),
            confirm,
            limit,
            plan,
            route,
        })
    }

    /// Where the tool hosts know as `name` leads, for the request's principal: a tool
    /// outside its view is refused as one that does not exist.
    fn route_for(
        &self,
        ctx: &RequestContext,
        seen: &Seen<'_>,
        name: &str,
    ) -> Result<Arc<Route>, ErrorObject> {
        let route = self.own.host_route(ctx, name);
        if let Some(route) = route.filter(|r| seen.sees_tool(r.upstream, name)) {
            return Ok(route);
        }
        let denied = self.catalog.denied_upstream(name);
        let message = match denied.filter(|key| seen.reaches_key(key)) {
            Some(key) => {
                format!("Tool {name} of upstream `{key}` is not allowed by this gateway's policy")
            }
            None => format!("Unknown tool: {name}"),
        };
        Err(ErrorObject::new(codes::INVALID_PARAMS, message))
    }
}

impl Relay {
    /// Whether the call runs as a task, and for how long it is kept.
    pub(super) fn task_plan(
        &self,
        ctx: &RequestContext,
        i: UpstreamId,
        name: &str,
        tool: &Tool,
    ) -> Result<TaskPlan, ErrorObject> {
        let support = tool.task_support();
        if ctx.task_requested().is_some() && support == TaskSupport::Forbidden {
            return Err(ErrorObject::new(
                codes::METHOD_NOT_FOUND,
                format!("Tool {name} cannot run as a task (its taskSupport is forbidden)"),
            ));
        }
        // TOOL-21: a tool that must run as a task is run as one here; a host that takes
        // tasks sees the task, any other gets the result awaited, as from an ordinary tool.
        let host_takes_task = ctx.accepts_task();
        let as_task = support == TaskSupport::Required
            || (support == TaskSupport::Optional && host_takes_task);
        // A host that follows the task keeps it as long as it (or the upstream) says; one
        // the gateway follows for a plain host is not kept past the call's time.
        let ttl = match ctx.task_requested().and_then(|t| t.ttl.clone()) {
            Some(t) => Some(t),
            None if host_takes_task => None,
            None => Some(serde_json::Number::from(
                self.pool().call_timeout(i).as_millis() as u64,
            )),
        };
        Ok(TaskPlan {
            as_task,
            host_takes_task,
            ttl,
        })
    }
}

impl Admitted {
    /// Why the call must be driven on a task; `None`: it can go without one.
    pub(super) fn driven(&self, ctx: &RequestContext) -> Option<Driven> {
        if ctx.wants_progress() {
            Some(Driven::Progress)
        } else if ctx
            .request_state()
            .is_some_and(|s| s.starts_with(crate::upstream_questions::STATE_PREFIX))
        {
            Some(Driven::Resumed)
        } else if self.unapproved.is_some() || self.confirm {
            Some(Driven::Asks)
        } else if self.plan.as_task {
            Some(Driven::AsTask)
        } else if self.limit == Limit::Ask {
            Some(Driven::Limited)
        } else {
            None
        }
    }
}

/// The name a `tools/call`'s params give, or the error for params without one.
pub(super) fn tool_name<'a>(
    params: &'a mcp_types::raw::RawObject<'_>,
) -> Result<std::borrow::Cow<'a, str>, ErrorObject> {
    params.get_str("name").ok_or_else(|| {
        ErrorObject::new(
            codes::INVALID_PARAMS,
            "Invalid params for tools/call: `name` (a string) is required",
        )
    })
}
