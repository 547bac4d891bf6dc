//! The gateway's own `requestState`: a call parked for a 2026 host's answers is named by a
//! sealed token (see [`mcp_server::seal`]) that says which parked call it is, until when,
//! for whom, and for which request, as the MRTR pattern asks (integrity-protected, bound
//! to the principal, a short expiry, and the originating request), and which replica
//! holds it. A retry presenting it by another principal, for another request, after it
//! lapsed, altered, or a second time is refused alike.

use std::time::Duration;

use mcp_server::auth::{Principal, PrincipalDigest};
use mcp_server::seal::{unix_now, OpenError, Purpose, ReplicaId, SealError, Sealer};
use mcp_types::raw::RawObject;

use crate::upstream_questions::STATE_PREFIX;

/// What a parked request was for: its upstream, its method and what it names (a tool, a
/// prompt, a resource, a task), as 16 bytes of SHA-256.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RequestBinding([u8; 16]);

impl RequestBinding {
    /// A request of `method` to upstream `upstream` naming `target`.
    pub(crate) fn of(upstream: &str, method: &str, target: &str) -> RequestBinding {
        let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
        for part in [upstream, method, target] {
            ctx.update(&(part.len() as u64).to_be_bytes());
            ctx.update(part.as_bytes());
        }
        let mut out = [0; 16];
        out.copy_from_slice(&ctx.finish().as_ref()[..16]);
        RequestBinding(out)
    }

    /// A request of `method` to `upstream` with `params` (in the upstream's revision): what
    /// it names is its `name`, else its `uri`, else its `taskId`.
    pub(crate) fn of_params(upstream: &str, method: &str, params: &RawObject<'_>) -> Self {
        let target = ["name", "uri", "taskId"]
            .into_iter()
            .find_map(|k| params.get_str(k))
            .unwrap_or_default();
        RequestBinding::of(upstream, method, &target)
    }

    /// [`RequestBinding::of_params`] of params as a value.
    pub(crate) fn of_value(upstream: &str, method: &str, params: &serde_json::Value) -> Self {
        let target = ["name", "uri", "taskId"]
            .into_iter()
            .find_map(|k| params.get(k).and_then(serde_json::Value::as_str))
            .unwrap_or_default();
        RequestBinding::of(upstream, method, target)
    }
}

/// What a gateway `requestState` holds the place of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Held {
    /// A call parked in this slot of its replica (a legacy upstream's question).
    Slot(u64),
    /// An upstream's own `requestState`, sealed in so that the retry finds the replica
    /// whose upstream issued it, and only for this host's own request.
    Upstream(String),
    /// A consent the gateway asked the host's user for (a URL-mode elicitation): the
    /// retry goes upstream afresh, on any replica.
    Consent,
}

/// What a gateway `requestState` says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StateClaims {
    /// What it holds the place of.
    pub(crate) held: Held,
    /// The replica holding it.
    pub(crate) owner: ReplicaId,
    expires: u64,
    principal: PrincipalDigest,
    binding: RequestBinding,
}

/// Expiry, principal, binding; then the slot, or the upstream's state.
const FIXED_LEN: usize = 8 + 16 + 16;
const SLOT: u8 = 0;
const UPSTREAM: u8 = 1;
const CONSENT: u8 = 2;

/// Why a presented state names no call this retry may resume.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Refused {
    #[error("not the gateway's: {0}")]
    Unsealed(#[from] OpenError),
    #[error("expired")]
    Expired,
    #[error("presented by another principal")]
    Principal,
    #[error("presented for another request")]
    Request,
}

/// The state holding the place of `held`, for `principal` retrying the request `binding`
/// names within `wait`.
pub(crate) fn seal(
    sealer: &Sealer,
    held: &Held,
    wait: Duration,
    principal: Option<&Principal>,
    binding: RequestBinding,
) -> Result<String, SealError> {
    let expires = unix_now().saturating_add(wait.as_secs().saturating_add(1));
    let mut payload = Vec::with_capacity(FIXED_LEN + 8);
    payload.extend_from_slice(&expires.to_be_bytes());
    payload.extend_from_slice(&PrincipalDigest::of(principal).0);
    payload.extend_from_slice(&binding.0);
    let kind = match held {
        Held::Slot(slot) => {
            payload.extend_from_slice(&slot.to_be_bytes());
            SLOT
        }
        Held::Upstream(state) => {
            payload.extend_from_slice(state.as_bytes());
            UPSTREAM
        }
        Held::Consent => CONSENT,
    };
    let token = sealer.seal(Purpose::RequestState, kind, &payload)?;
    Ok(format!("{STATE_PREFIX}{token}"))
}

/// The claims of `state`, if `principal` may resume with it the request `binding` names now.
pub(crate) fn open(
    sealer: &Sealer,
    state: &str,
    principal: Option<&Principal>,
    binding: RequestBinding,
) -> Result<StateClaims, Refused> {
    open_at(sealer, state, principal, binding, unix_now())
}

/// [`open`] at `now` (Unix seconds).
fn open_at(
    sealer: &Sealer,
    state: &str,
    principal: Option<&Principal>,
    binding: RequestBinding,
    now: u64,
) -> Result<StateClaims, Refused> {
    let token = state.strip_prefix(STATE_PREFIX).unwrap_or(state);
    let opened = sealer.open(Purpose::RequestState, token)?;
    let p = opened.payload.as_slice();
    if p.len() < FIXED_LEN {
        return Err(OpenError::Truncated.into());
    }
    let (fixed, rest) = p.split_at(FIXED_LEN);
    let mut word = [0u8; 8];
    word.copy_from_slice(&fixed[..8]);
    let mut digest = [0u8; 16];
    digest.copy_from_slice(&fixed[8..24]);
    let mut bound = [0u8; 16];
    bound.copy_from_slice(&fixed[24..]);
    let held = match (opened.flags, rest.len()) {
        (SLOT, 8) => {
            let mut slot = [0u8; 8];
            slot.copy_from_slice(rest);
            Held::Slot(u64::from_be_bytes(slot))
        }
        // Sealed here from a `&str`: anything else was not.
        (UPSTREAM, _) => {
            Held::Upstream(String::from_utf8(rest.to_vec()).map_err(|_| OpenError::Forged)?)
        }
        (CONSENT, 0) => Held::Consent,
        _ => return Err(OpenError::Truncated.into()),
    };
    let claims = StateClaims {
        held,
        owner: opened.replica,
        expires: u64::from_be_bytes(word),
        principal: PrincipalDigest(digest),
        binding: RequestBinding(bound),
    };
    if claims.expires < now {
        return Err(Refused::Expired);
    }
    if claims.principal != PrincipalDigest::of(principal) {
        return Err(Refused::Principal);
    }
    if claims.binding != binding {
        return Err(Refused::Request);
    }
    Ok(claims)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_opens_only_for_its_principal_its_request_and_its_time() {
        let sealer = Sealer::random().expect("sealer");
        let alice = Principal::new("alice");
        let bob = Principal::new("bob");
        let greet = RequestBinding::of("up", "tools/call", "greet");
        let wait = Duration::from_secs(60);
        let state = seal(&sealer, &Held::Slot(7), wait, Some(&alice), greet).expect("sealed");
        assert!(state.starts_with(STATE_PREFIX));
        let claims = open(&sealer, &state, Some(&alice), greet).expect("opens");
        assert_eq!(
            (&claims.held, claims.owner),
            (&Held::Slot(7), sealer.replica())
        );
        // An upstream's own state, sealed in, comes out exactly.
        let theirs = Held::Upstream("eyJzdGVwIjoxfQ==.ü".into());
        let wrapped = seal(&sealer, &theirs, wait, Some(&alice), greet).expect("sealed");
        let opened = open(&sealer, &wrapped, Some(&alice), greet).expect("opens");
        assert_eq!(opened.held, theirs);
        assert_eq!(
            open(&sealer, &wrapped, Some(&bob), greet),
            Err(Refused::Principal)
        );
        assert_eq!(
            open(&sealer, &state, Some(&bob), greet),
            Err(Refused::Principal)
        );
        assert_eq!(open(&sealer, &state, None, greet), Err(Refused::Principal));
        let other_tool = RequestBinding::of("up", "tools/call", "other");
        let other_upstream = RequestBinding::of("down", "tools/call", "greet");
        let other_method = RequestBinding::of("up", "prompts/get", "greet");
        for b in [other_tool, other_upstream, other_method] {
            assert_eq!(
                open(&sealer, &state, Some(&alice), b),
                Err(Refused::Request)
            );
        }
        // Parts are length-framed: a name cannot move between them.
        assert_ne!(
            RequestBinding::of("up", "tools/call", "a"),
            RequestBinding::of("up", "tools/cal", "la")
        );
        // Good for the wait (rounded up), then refused.
        assert!(claims.expires > unix_now() + wait.as_secs() - 1);
        let last = claims.expires;
        assert!(open_at(&sealer, &state, Some(&alice), greet, last).is_ok());
        assert_eq!(
            open_at(&sealer, &state, Some(&alice), greet, last + 1),
            Err(Refused::Expired)
        );
        let mut altered = state.clone().into_bytes();
        let at = STATE_PREFIX.len() + 40;
        altered[at] = if altered[at] == b'A' { b'B' } else { b'A' };
        let altered = String::from_utf8(altered).expect("ascii");
        assert_eq!(
            open(&sealer, &altered, Some(&alice), greet),
            Err(Refused::Unsealed(OpenError::Forged))
        );
        let foreign = Sealer::random().expect("sealer");
        assert_eq!(
            open(&foreign, &state, Some(&alice), greet),
            Err(Refused::Unsealed(OpenError::UnknownKey))
        );
    }
}
