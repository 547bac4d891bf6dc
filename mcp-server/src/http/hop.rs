//! The hop between replicas: a request one replica forwards to another carries
//! `mcp-gateway-hop: v1 from=<n> to=<n> ts=<unix seconds> mac=<signature>`, the signature
//! [`Sealer::sign`]'s over the sender, the receiver, the time, the method, the path and a
//! digest of the body. The receiver takes it only from its own deployment, addressed to
//! itself, within [`MAX_SKEW`], for this very request; a forwarded request is never
//! forwarded again. A refusal is logged without the signature.

use std::time::Duration;

use http::header::{HeaderName, HeaderValue};
use ring::digest::{digest, SHA256};

use crate::seal::{unix_now, ReplicaId, Sealer};

/// The header that carries the hop.
pub(super) static HOP: HeaderName = HeaderName::from_static("mcp-gateway-hop");

/// How far the sender's clock may be from the receiver's.
pub(super) const MAX_SKEW: Duration = Duration::from_secs(30);

/// What a request's hop header says of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum HopCheck {
    /// No hop: a client's own request.
    Direct,
    /// Forwarded by replica `from` of this deployment: serve it here, whatever it names.
    Forwarded(ReplicaId),
    /// A hop header this replica cannot take.
    Refused(&'static str),
}

/// The hop header for a request `from` → `to`.
pub(super) fn sign(
    sealer: &Sealer,
    to: ReplicaId,
    method: &http::Method,
    path: &str,
    body: &[u8],
) -> Option<HeaderValue> {
    let from = sealer.replica();
    let ts = unix_now();
    let mac = sealer.sign(&message(from, to, ts, method, path, body));
    HeaderValue::try_from(format!("v1 from={from} to={to} ts={ts} mac={mac}")).ok()
}

/// What the hop header of a request to `sealer`'s replica says.
pub(super) fn check(sealer: &Sealer, parts: &http::request::Parts, body: &[u8]) -> HopCheck {
    let mut values = parts.headers.get_all(&HOP).iter();
    let Some(value) = values.next() else {
        return HopCheck::Direct;
    };
    if values.next().is_some() {
        return HopCheck::Refused("more than one hop header");
    }
    let Some(hop) = value.to_str().ok().and_then(parse) else {
        return HopCheck::Refused("a malformed hop header");
    };
    if hop.to != sealer.replica() {
        return HopCheck::Refused("a hop addressed to another replica");
    }
    if unix_now().abs_diff(hop.ts) > MAX_SKEW.as_secs() {
        return HopCheck::Refused("a stale hop");
    }
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let signed = message(hop.from, hop.to, hop.ts, &parts.method, path, body);
    if !sealer.verify(&signed, hop.mac) {
        return HopCheck::Refused("a hop not signed by this deployment");
    }
    HopCheck::Forwarded(hop.from)
}

struct Parsed<'a> {
    from: ReplicaId,
    to: ReplicaId,
    ts: u64,
    mac: &'a str,
}

fn parse(v: &str) -> Option<Parsed<'_>> {
    let mut parts = v.split(' ');
    if parts.next()? != "v1" {
        return None;
    }
    let mut field = |name: &str| parts.next()?.strip_prefix(name)?.strip_prefix('=');
    let from = ReplicaId(field("from")?.parse().ok()?);
    let to = ReplicaId(field("to")?.parse().ok()?);
    let ts = field("ts")?.parse().ok()?;
    let mac = field("mac")?;
    Some(Parsed { from, to, ts, mac })
}

fn message(
    from: ReplicaId,
    to: ReplicaId,
    ts: u64,
    method: &http::Method,
    path: &str,
    body: &[u8],
) -> Vec<u8> {
    let body = digest(&SHA256, body);
    let mut m = format!("mcp-gateway-hop v1\n{from}\n{to}\n{ts}\n{method}\n{path}\n").into_bytes();
    m.extend_from_slice(body.as_ref());
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seal::SealKey;

    fn replica(n: u16, fill: u8) -> Sealer {
        let key = SealKey::new("k", &[fill; 32]).expect("key");
        Sealer::new(vec![key], ReplicaId(n)).expect("sealer")
    }

    fn request(hop: Option<HeaderValue>, method: http::Method, path: &str) -> http::request::Parts {
        let mut r = http::Request::builder().method(method).uri(path);
        if let Some(h) = hop {
            r = r.header(&HOP, h);
        }
        r.body(()).expect("request").into_parts().0
    }

    #[test]
    fn a_hop_is_taken_only_as_signed_for_this_replica() {
        let (one, two, three) = (replica(1, 7), replica(2, 7), replica(3, 7));
        let post = http::Method::POST;
        let hop = sign(&one, ReplicaId(2), &post, "/mcp", b"body");
        let parts = request(hop.clone(), post.clone(), "/mcp");
        assert_eq!(
            check(&two, &parts, b"body"),
            HopCheck::Forwarded(ReplicaId(1))
        );
        assert_eq!(
            check(&two, &request(None, post.clone(), "/mcp"), b""),
            HopCheck::Direct
        );
        // Another receiver, another body, path or method, another deployment: refused.
        assert!(matches!(
            check(&three, &parts, b"body"),
            HopCheck::Refused(_)
        ));
        assert!(matches!(
            check(&two, &parts, b"other"),
            HopCheck::Refused(_)
        ));
        let moved = request(hop.clone(), post.clone(), "/other");
        assert!(matches!(check(&two, &moved, b"body"), HopCheck::Refused(_)));
        let as_get = request(hop, http::Method::GET, "/mcp");
        assert!(matches!(
            check(&two, &as_get, b"body"),
            HopCheck::Refused(_)
        ));
        let foreign = sign(&replica(1, 9), ReplicaId(2), &post, "/mcp", b"body");
        let parts = request(foreign, post.clone(), "/mcp");
        assert!(matches!(check(&two, &parts, b"body"), HopCheck::Refused(_)));
    }

    #[test]
    fn stale_missing_and_malformed_hops_are_refused() {
        let (one, two) = (replica(1, 7), replica(2, 7));
        let post = http::Method::POST;
        let stale_ts = unix_now() - MAX_SKEW.as_secs() - 5;
        let mac = one.sign(&message(
            ReplicaId(1),
            ReplicaId(2),
            stale_ts,
            &post,
            "/mcp",
            b"",
        ));
        let stale = format!("v1 from=1 to=2 ts={stale_ts} mac={mac}");
        for bad in [
            stale.as_str(),
            "v1 from=1 to=2 ts=1 ",
            "v1 from=1 to=2",
            "v2 from=1 to=2 ts=1 mac=x",
            "garbage",
            "v1 from=1 to=2 ts=99999999999 mac=AAAA",
        ] {
            let parts = request(
                Some(HeaderValue::from_str(bad).expect("value")),
                post.clone(),
                "/mcp",
            );
            assert!(
                matches!(check(&two, &parts, b""), HopCheck::Refused(_)),
                "{bad}"
            );
        }
    }
}
