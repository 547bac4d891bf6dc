//! Gateway task ids as sealed tokens (see [`mcp_server::seal`]): each says which upstream
//! (by key, which every replica and every reload shares) runs which task of its own, for
//! whom and until when. So any replica with the keys routes `tasks/*` by the id alone,
//! and an id another principal presents, an invented or altered one, or one past its
//! retention is unknown without a lookup.

use std::time::Duration;

use mcp_server::auth::{Principal, PrincipalDigest};
use mcp_server::seal::{unix_now, OpenError, Purpose, ReplicaId, SealError, Sealer};

/// What a gateway task id says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TaskClaims {
    /// The key of the upstream running it.
    pub(crate) upstream: String,
    /// The upstream's own id for it.
    pub(crate) upstream_id: String,
    /// The replica that handed it out.
    pub(crate) owner: ReplicaId,
    expires: u64,
}

/// Why a presented id names no task for this host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Refused {
    #[error("not the gateway's: {0}")]
    Unsealed(#[from] OpenError),
    #[error("past its retention")]
    Expired,
    #[error("presented by another principal")]
    Principal,
}

/// Why an upstream's task cannot be given an id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Unsealable {
    #[error(transparent)]
    Seal(#[from] SealError),
    #[error("its upstream's key and task id are too long to seal into a task id")]
    TooLong,
}

const FIXED_LEN: usize = 8 + 16 + 2;

/// The id of upstream `upstream`'s task `upstream_id`, for `principal`, good for `retention`.
pub(crate) fn seal(
    sealer: &Sealer,
    upstream: &str,
    upstream_id: &str,
    principal: Option<&Principal>,
    retention: Duration,
) -> Result<String, Unsealable> {
    let key_len = u16::try_from(upstream.len()).map_err(|_| Unsealable::TooLong)?;
    let expires = unix_now().saturating_add(retention.as_secs());
    let mut payload = Vec::with_capacity(FIXED_LEN + upstream.len() + upstream_id.len());
    payload.extend_from_slice(&expires.to_be_bytes());
    payload.extend_from_slice(&PrincipalDigest::of(principal).0);
    payload.extend_from_slice(&key_len.to_be_bytes());
    payload.extend_from_slice(upstream.as_bytes());
    payload.extend_from_slice(upstream_id.as_bytes());
    let token = sealer.seal(Purpose::Task, 0, &payload)?;
    if token.len() > mcp_server::seal::MAX_TOKEN_LEN {
        return Err(Unsealable::TooLong);
    }
    Ok(token)
}

/// What task id `id` says, if `principal` may reach the task now.
pub(crate) fn open(
    sealer: &Sealer,
    id: &str,
    principal: Option<&Principal>,
) -> Result<TaskClaims, Refused> {
    open_at(sealer, id, principal, unix_now())
}

fn open_at(
    sealer: &Sealer,
    id: &str,
    principal: Option<&Principal>,
    now: u64,
) -> Result<TaskClaims, Refused> {
    let opened = sealer.open(Purpose::Task, id)?;
    let p = opened.payload.as_slice();
    if p.len() < FIXED_LEN {
        return Err(OpenError::Truncated.into());
    }
    let mut word = [0u8; 8];
    word.copy_from_slice(&p[..8]);
    let expires = u64::from_be_bytes(word);
    let mut digest = [0u8; 16];
    digest.copy_from_slice(&p[8..24]);
    let key_len = usize::from(u16::from_be_bytes([p[24], p[25]]));
    let rest = &p[FIXED_LEN..];
    if rest.len() < key_len {
        return Err(OpenError::Truncated.into());
    }
    let (key, upstream_id) = rest.split_at(key_len);
    // Sealed here from `&str`s: anything else was not.
    let text = |b: &[u8]| String::from_utf8(b.to_vec()).map_err(|_| OpenError::Forged);
    let claims = TaskClaims {
        upstream: text(key)?,
        upstream_id: text(upstream_id)?,
        owner: opened.replica,
        expires,
    };
    if expires < now {
        return Err(Refused::Expired);
    }
    if PrincipalDigest(digest) != PrincipalDigest::of(principal) {
        return Err(Refused::Principal);
    }
    Ok(claims)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_server::seal::SealKey;

    #[test]
    fn a_task_id_routes_on_any_replica_only_for_its_principal_until_it_expires() {
        let key = || SealKey::new("k", &[5; 32]).expect("key");
        let one = Sealer::new(vec![key()], ReplicaId(1)).expect("sealer");
        let two = Sealer::new(vec![key()], ReplicaId(2)).expect("sealer");
        let alice = Principal::new("alice");
        let hour = Duration::from_secs(3600);
        let id = seal(&one, "files", "task-ü-42", Some(&alice), hour).expect("sealed");
        let claims = open(&two, &id, Some(&alice)).expect("routes on another replica");
        assert_eq!(claims.upstream, "files");
        assert_eq!(claims.upstream_id, "task-ü-42");
        assert_eq!(claims.owner, ReplicaId(1));
        assert_eq!(
            open(&two, &id, Some(&Principal::new("bob"))),
            Err(Refused::Principal)
        );
        assert_eq!(open(&two, &id, None), Err(Refused::Principal));
        let last = claims.expires;
        assert!(open_at(&two, &id, Some(&alice), last).is_ok());
        assert_eq!(
            open_at(&two, &id, Some(&alice), last + 1),
            Err(Refused::Expired)
        );
        for guess in ["1", "", "mcp-proxy.0000", "up-1"] {
            assert!(matches!(
                open(&two, guess, Some(&alice)),
                Err(Refused::Unsealed(_))
            ));
        }
        // An empty upstream id, an empty key: still exact.
        let odd = seal(&one, "", "", None, hour).expect("sealed");
        let claims = open(&one, &odd, None).expect("opens");
        assert_eq!(
            (claims.upstream.as_str(), claims.upstream_id.as_str()),
            ("", "")
        );
    }

    #[test]
    fn an_upstream_task_id_too_long_to_seal_is_refused_when_made() {
        let sealer = Sealer::random().expect("sealer");
        let long = "x".repeat(2000);
        assert_eq!(
            seal(&sealer, "up", &long, None, Duration::from_secs(1)),
            Err(Unsealable::TooLong)
        );
    }
}
