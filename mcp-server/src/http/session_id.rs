//! Legacy session ids (`Mcp-Session-Id`) as sealed tokens (see [`crate::seal`]): each
//! says which replica holds the session, when it was issued and for whom, so that an id
//! this deployment did not issue is refused before any store is asked, and another
//! replica can tell where the session lives.
//!
//! 82 characters of base64url: the session's payload is 24 bytes (issue time in Unix
//! seconds, then the [`PrincipalDigest`]).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::auth::{Principal, PrincipalDigest};
use crate::seal::{OpenError, Purpose, ReplicaId, SealError, Sealer};

const PAYLOAD_LEN: usize = 24;

/// What a session id says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct SessionClaims {
    /// The replica holding the session.
    pub(super) owner: ReplicaId,
    /// When it was issued.
    pub(super) issued_at: SystemTime,
    /// Whose it is.
    pub(super) principal: PrincipalDigest,
}

/// A new session id for `principal`, held by `sealer`'s replica.
pub(super) fn mint(sealer: &Sealer, principal: Option<&Principal>) -> Result<String, SealError> {
    let secs = crate::seal::unix_now();
    let mut payload = [0u8; PAYLOAD_LEN];
    payload[..8].copy_from_slice(&secs.to_be_bytes());
    payload[8..].copy_from_slice(&PrincipalDigest::of(principal).0);
    sealer.seal(Purpose::Session, 0, &payload)
}

/// What the session id `id` says, if this deployment issued it.
pub(super) fn open(sealer: &Sealer, id: &str) -> Result<SessionClaims, OpenError> {
    let opened = sealer.open(Purpose::Session, id)?;
    let payload: &[u8; PAYLOAD_LEN] = opened
        .payload
        .as_slice()
        .try_into()
        .map_err(|_| OpenError::Truncated)?;
    let mut secs = [0u8; 8];
    secs.copy_from_slice(&payload[..8]);
    let mut principal = [0u8; 16];
    principal.copy_from_slice(&payload[8..]);
    Ok(SessionClaims {
        owner: opened.replica,
        issued_at: UNIX_EPOCH + Duration::from_secs(u64::from_be_bytes(secs)),
        principal: PrincipalDigest(principal),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seal::SealKey;

    #[test]
    fn an_id_names_its_owner_its_time_and_its_principal_in_82_characters() {
        let key = |n| SealKey::new(n, &[7; 32]).expect("key");
        let a = Sealer::new(vec![key("k")], ReplicaId(2)).expect("sealer");
        let b = Sealer::new(vec![key("k")], ReplicaId(5)).expect("sealer");
        let alice = Principal::new("alice");
        let id = mint(&a, Some(&alice)).expect("minted");
        assert_eq!(id.len(), 82);
        assert!(id
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_'));
        let claims = open(&b, &id).expect("opens on another replica");
        assert_eq!(claims.owner, ReplicaId(2));
        assert_eq!(claims.principal, PrincipalDigest::of(Some(&alice)));
        let age = SystemTime::now()
            .duration_since(claims.issued_at)
            .expect("issued in the past");
        assert!(age < Duration::from_secs(5));
        // An id of another purpose's key is no session id.
        let other = a.seal(Purpose::Task, 0, &[0; PAYLOAD_LEN]).expect("sealed");
        assert_eq!(open(&a, &other), Err(OpenError::Purpose));
    }
}
