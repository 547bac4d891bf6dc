//! This hop's `_meta` on a relayed call: the host's own hop keys go (its progress token,
//! its envelope: each hop writes its own), and a 2026-07-28 upstream hears the gateway's
//! envelope with what this host declared (its capabilities as it wrote them, or with the
//! tasks extension when the gateway takes a task on itself; its log level). A 2026-07-28
//! host's capabilities and log level go on as it wrote them.
//!
//! A host sends the same envelope with every call, so what the upstream hears is written
//! once per host and connection and kept ([`mcp_client::Client::host_meta`],
//! [`mcp_client::Client::memo_meta`], for an upstream of any revision); only a `_meta`
//! that differs is read and written.

use mcp_client::{Client, MetaRewrite as Written};
use mcp_revisions::features;
use mcp_server::RequestContext;
use mcp_types::raw::{self, RawObject};
use mcp_types::{meta, Revision};
use serde_json::value::RawValue;

use crate::aggregator::tasks;

/// The host's `_meta` keys that belong to its hop: its progress token (the upstream gets
/// the gateway's) and the 2026 envelope (each hop writes its own).
const HOST_HOP_META: [&str; 5] = [
    meta::PROGRESS_TOKEN,
    meta::PROTOCOL_VERSION,
    meta::CLIENT_CAPABILITIES,
    meta::CLIENT_INFO,
    meta::LOG_LEVEL,
];

/// How one call's `_meta` is written: who declares what.
struct Hop<'c> {
    ctx: &'c RequestContext,
    /// The upstream's connection, when it hears an envelope (2026-07-28).
    client: Option<&'c Client>,
    /// The host's capabilities and log level go on as it wrote them (both 2026-07-28).
    keep_host: bool,
    /// The gateway declares the host's capabilities and log level itself.
    declare: bool,
    /// ... with the tasks extension (it follows a task for the host).
    extension: bool,
}

/// Writes this hop's `_meta` into `p`, the params `upstream` (speaking `up`) gets.
pub(super) fn hop_meta(
    ctx: &RequestContext,
    upstream: &Client,
    up: Revision,
    p: &mut RawObject<'_>,
    extension: bool,
) {
    let up_modern = features::per_request_meta(up);
    let keep_host = up_modern && features::per_request_meta(ctx.revision()) && !extension;
    let hop = Hop {
        ctx,
        client: Some(upstream).filter(|_| up_modern),
        keep_host,
        declare: up_modern && !keep_host,
        extension,
    };
    let host = p.get("_meta");
    // A trace begun in HTTP headers is the request's own, not the host's: not kept.
    let memo = ctx.trace_context().is_none() && !extension;
    let written = match (&hop.client, upstream, host) {
        // The common legacy host: nothing of its own in `_meta`.
        (Some(c), _, None) if memo && hop.declare => c
            .host_meta(ctx.client_capabilities_raw_shared(), ctx.log_level())
            .map_or(Written::Keep, Written::Write),
        // The common 2026 host: the same envelope with every call, whose rewrite
        // depends on nothing but its text when the gateway declares nothing itself.
        (_, c, Some(m)) if memo && !hop.declare && raw::is_object(m) => {
            c.memo_meta(m.get(), || hop.write(Some(m)))
        }
        _ => hop.write(host),
    };
    match written {
        Written::Write(m) => {
            p.insert("_meta", m);
        }
        Written::Remove => {
            p.remove("_meta");
        }
        Written::Keep => {}
    }
}

impl Hop<'_> {
    /// The `_meta` for `host`'s (the host's own `_meta`, if it wrote one), read and
    /// written once.
    fn write(&self, host: Option<&RawValue>) -> Written {
        let ctx = self.ctx;
        let mut m = match host {
            None => RawObject::new(),
            Some(m) if raw::is_object(m) => match RawObject::from_raw(m) {
                Ok(m) => m,
                Err(_) => return Written::Keep,
            },
            // Not an object: the upstream hears it as the host wrote it.
            Some(_) => return Written::Keep,
        };
        let before = m.len();
        m.retain(|k, _| match k {
            meta::CLIENT_CAPABILITIES | meta::LOG_LEVEL => self.keep_host,
            k => !HOST_HOP_META.contains(&k),
        });
        let mut changed = m.len() != before;
        let extended = (self.declare && self.extension)
            .then(|| raw::encode(&tasks::with_tasks_extension(ctx)));
        let level = ctx.log_level().filter(|_| self.declare).map(raw::encode);
        if self.declare {
            let caps = extended.as_deref().unwrap_or(ctx.client_capabilities_raw());
            m.insert(meta::CLIENT_CAPABILITIES, caps);
            if let Some(level) = level.as_deref() {
                m.insert(meta::LOG_LEVEL, level);
            }
            changed = true;
        }
        if let Some(client) = self.client {
            changed |= client.write_envelope(&mut m);
        }
        // A trace the host began in its HTTP headers continues upstream in `_meta` (one
        // it began in `_meta` is there already).
        if let Some(t) = ctx.trace_context() {
            if !m.contains_key(meta::TRACEPARENT) {
                m.insert_str(meta::TRACEPARENT, t.traceparent());
                if let Some(state) = t.tracestate() {
                    m.insert_str(meta::TRACESTATE, state);
                }
                changed = true;
            }
        }
        match (changed, m.is_empty()) {
            (false, _) => Written::Keep,
            (true, true) => Written::Remove,
            (true, false) => Written::Write(m.to_raw()),
        }
    }
}
