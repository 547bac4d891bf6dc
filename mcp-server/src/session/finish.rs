//! The last step of every answer: translated to the client's revision, with what that
//! revision's results carry from this hop (2026-07-28: `serverInfo`, list cache hints).
//!
//! A result written in a known revision (a relayed upstream's) is translated first and
//! given this hop's members after; one of the union model is given them first, since its
//! translation drops whatever the client's revision lacks. Either way only the top level
//! and `_meta` are rewritten, and only when something is added: the rest stays as it was.

use mcp_revisions::{features, shapes, Translator};
use mcp_types::meta;
use mcp_types::raw::{self, RawObject};
use serde_json::value::RawValue;

use super::route::Answer;
use super::{internal, Session};
use crate::RawResult;
use mcp_types::Revision;

impl Session {
    /// Translates a result to the revision it goes to, with what this hop adds.
    pub(super) fn finish(&self, m: &str, revision: Revision, result: RawResult) -> Answer {
        let policy = self.shared.options.downgrade_policy.as_ref();
        match result.revision {
            None => {
                let body = self.hop_members(m, revision, result.body, false)?;
                let t = crate::with_policy(Translator::canonical_to(revision), policy);
                translated(&t, m, body).inspect_err(|_| self.shared.stats.refused())
            }
            Some(from) => {
                let t = crate::with_policy(Translator::new(from, revision), policy);
                let body =
                    translated(&t, m, result.body).inspect_err(|_| self.shared.stats.refused())?;
                self.hop_members(m, revision, body, true)
            }
        }
    }

    /// Adds what a result of `revision` carries from the server that answers it: its
    /// `serverInfo`, and a list's `ttlMs`/`cacheScope` where it has none (2026-07-28).
    /// `relayed`: the result came from another server (a relay's upstream), whose
    /// `serverInfo` names that server, not this one: it is replaced.
    fn hop_members(
        &self,
        m: &str,
        revision: Revision,
        body: Box<RawValue>,
        relayed: bool,
    ) -> Answer {
        if !features::result_server_info(revision) {
            return Ok(body);
        }
        let text = body.get();
        let may_cache = shapes::method(m)
            .and_then(|s| s.result)
            .is_some_and(|r| r.has("ttlMs", revision));
        let plain = !raw::has_key_escapes(text)
            && !may_cache
            && !finders::META.may_be_in(text)
            && !finders::TTL_MS.may_be_in(text);
        if plain {
            // Nothing to keep in step with: the server's name is one member more.
            if let Some(out) = raw::append_member(&body, "_meta", &self.shared.info_meta) {
                return Ok(out);
            }
        }
        let mut o = RawObject::from_raw(&body).map_err(internal)?;
        // A task's `ttlMs` is its retention, not a list's cache lifetime.
        let is_task = m.starts_with("tasks/") || o.get_str("resultType").as_deref() == Some("task");
        let cached = o.contains_key("ttlMs")
            || shapes::method(m)
                .and_then(|s| s.result)
                .is_some_and(|r| r.has("ttlMs", revision));
        let options = &self.shared.options;
        if !is_task && cached {
            if !o.contains_key("ttlMs") {
                o.insert_json("ttlMs", &options.list_ttl_ms)
                    .map_err(internal)?;
            }
            if !o.contains_key("cacheScope") {
                o.insert_json("cacheScope", &options.list_cache_scope)
                    .map_err(internal)?;
            }
        }
        let own = &self.shared.info_raw;
        let named = o
            .get("_meta")
            .and_then(|raw| RawObject::from_raw(raw).ok())
            .is_some_and(|m| m.get(meta::SERVER_INFO).map(RawValue::get) == Some(own.get()));
        if !named {
            meta::set_raw(&mut o, meta::SERVER_INFO, own, !relayed);
        }
        if !o.is_modified() {
            drop(o);
            return Ok(body);
        }
        Ok(o.to_raw())
    }
}

/// `body` translated by `t`; the same box when nothing changed.
fn translated(t: &Translator<'_>, m: &str, body: Box<RawValue>) -> Answer {
    let changed = match t.result_raw(m, &body).map_err(internal)? {
        std::borrow::Cow::Owned(b) => Some(b),
        std::borrow::Cow::Borrowed(_) => None,
    };
    Ok(changed.unwrap_or(body))
}

/// `_meta[key]` set on a raw result.
pub(super) fn with_meta(body: &RawValue, key: &str, value: Box<RawValue>, keep: bool) -> Answer {
    let mut o = RawObject::from_raw(body).map_err(internal)?;
    meta::set_raw(&mut o, key, &value, keep);
    Ok(o.to_raw())
}

/// The searchers for the names every result is looked at for, built once.
mod finders {
    use std::sync::LazyLock;

    use mcp_types::raw::KeyFinder;

    pub(super) static META: LazyLock<KeyFinder> = LazyLock::new(|| KeyFinder::new("_meta"));
    pub(super) static TTL_MS: LazyLock<KeyFinder> = LazyLock::new(|| KeyFinder::new("ttlMs"));
}
