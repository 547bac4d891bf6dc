//! The call relay: one host `tools/call` from its gates to its answer.
//!
//! - `gates.rs`: the gates a call passes, in order, written once for both paths;
//! - `confirm.rs`: the questions two of them ask the host's user;
//! - `fast.rs`: the common call, forwarded where it arrives and answered from the
//!   upstream connection's read loop;
//! - `call.rs`: any other call, driven on a task, and the answer made the host's;
//! - `hop_meta.rs`: this hop's `_meta`.

use std::sync::Arc;

use mcp_server::Call;
use mcp_types::raw::RawObject;

use super::catalog::Catalog;
use super::downgrade::Downgrade;
use super::flights::Flights;
use super::own_lists::OwnSessions;
use super::pool::Pool;
use super::tasks::Tasks;
use super::visibility::Visibility;
use crate::audit::AuditLog;
use crate::limits::RateLimits;
use crate::metrics::Metrics;
use crate::policy::Confirm;

mod audit;
mod call;
mod confirm;
mod fast;
mod gates;
mod hop_meta;
mod limited;

/// One call from its route to its answer: the gates, the questions they ask, the
/// upstream request (without a task where it can, `fast.rs`), and the answer made the
/// host's. Shared (`Arc`): a call in flight holds it.
pub(super) struct Relay {
    tasks: Tasks,
    /// What each host sees: the routes of its calls.
    own: Arc<OwnSessions>,
    catalog: Arc<Catalog>,
    visibility: Arc<Visibility>,
    metrics: Arc<Metrics>,
    confirm: Option<Arc<dyn Confirm>>,
    downgrade: Downgrade,
    /// Where each call's record goes, if calls are audited.
    audit: Option<AuditLog>,
    /// The rate limits calls are held to.
    limits: Option<RateLimits>,
}

/// What watches over calls beside the gates' routing: the confirmation hook and the
/// audit log.
#[derive(Clone, Default)]
pub(super) struct Watch {
    /// Destructive calls are put to it.
    pub(super) confirm: Option<Arc<dyn Confirm>>,
    /// Each call's record goes there.
    pub(super) audit: Option<AuditLog>,
    /// The rate limits calls are held to.
    pub(super) limits: Option<RateLimits>,
}

impl Relay {
    /// A relay over `tasks` (and the flights, links and pool under them), routing by what
    /// `own` and `catalog` say each host sees, and `visibility` lets it; metered in
    /// `metrics`; watched by `watch`; translated by `downgrade`.
    pub(super) fn new(
        tasks: Tasks,
        own: Arc<OwnSessions>,
        catalog: Arc<Catalog>,
        visibility: Arc<Visibility>,
        metrics: Arc<Metrics>,
        watch: Watch,
        downgrade: Downgrade,
    ) -> Relay {
        Relay {
            tasks,
            own,
            catalog,
            visibility,
            metrics,
            confirm: watch.confirm,
            audit: watch.audit,
            limits: watch.limits.filter(|l| !l.is_empty()),
            downgrade,
        }
    }

    /// The tasks the relay hands a task's answer to.
    pub(super) fn tasks(&self) -> &Tasks {
        &self.tasks
    }

    /// The flights that carry requests other than calls upstream.
    pub(super) fn flights(&self) -> &Flights {
        self.tasks.flights()
    }

    fn pool(&self) -> &Pool {
        self.flights().links().pool()
    }

    /// A host's `tools/call`: the gates first, once; a refusal is answered at once; the
    /// common call goes without a task of its own (`fast.rs`); any other is driven on one.
    /// One of the dispatcher's own tools goes to the handler's typed `call_tool`.
    pub(super) fn serve(self: &Arc<Self>, call: Call, params: RawObject<'_>) {
        let ctx = call.context();
        let seen = self.visibility.seen(ctx);
        let admitted = match gates::tool_name(&params) {
            Ok(name) if gates::is_own_tool(&seen, &name) => return call.serve_typed(),
            Ok(name) => self
                .admit(ctx, &seen, &name)
                .inspect_err(|e| self.audit_refusal(ctx, &seen, &name, &params, e)),
            Err(e) => Err(e),
        };
        let admitted = match admitted {
            Ok(a) => a,
            Err(e) => return call.respond(Err(e)),
        };
        let call = match admitted.driven(ctx) {
            None => match self.call_now(call, params, &admitted) {
                None => return,
                Some(call) => call,
            },
            Some(_) => call,
        };
        let relay = self.clone();
        call.spawn(move |req| async move {
            let params = req.params()?;
            let name = gates::tool_name(&params)?;
            relay
                .relay_admitted(req.context(), &params, &name, admitted)
                .await
        });
    }
}

#[cfg(test)]
mod tests;
