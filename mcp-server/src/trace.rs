//! W3C Trace Context (`traceparent`, `tracestate`) of a request, so a trace a host began
//! continues through every hop: read from the request's `_meta` (as the SDKs carry it)
//! or, for a 2026-07-28 request over HTTP, from its headers; a relay passes it on.

/// A request's trace context, its `traceparent` checked (version `00` layout: 55
/// characters, lowercase hex, ids not all zero).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceContext {
    traceparent: String,
    tracestate: Option<String>,
}

/// The longest `tracestate` kept (W3C allows 32 members of at most 256 characters; 512
/// is what implementations must propagate at least).
const MAX_TRACESTATE: usize = 512;

impl TraceContext {
    /// The context of `traceparent` (and `tracestate`), if `traceparent` is well formed.
    pub fn parse(traceparent: &str, tracestate: Option<&str>) -> Option<TraceContext> {
        let t = traceparent.trim();
        let parts: Vec<&str> = t.split('-').collect();
        let [version, trace, parent, flags] = parts[..] else {
            return None;
        };
        let hex = |s: &str, n: usize| {
            s.len() == n && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        };
        let zero = |s: &str| s.bytes().all(|b| b == b'0');
        let good = hex(version, 2)
            && version != "ff"
            && hex(trace, 32)
            && !zero(trace)
            && hex(parent, 16)
            && !zero(parent)
            && hex(flags, 2);
        good.then(|| TraceContext {
            traceparent: t.to_owned(),
            tracestate: tracestate
                .map(str::trim)
                .filter(|s| !s.is_empty() && s.len() <= MAX_TRACESTATE)
                .map(str::to_owned),
        })
    }

    /// The `traceparent` value.
    pub fn traceparent(&self) -> &str {
        &self.traceparent
    }

    /// The `tracestate` value, if any.
    pub fn tracestate(&self) -> Option<&str> {
        self.tracestate.as_deref()
    }

    /// The trace id (32 hex digits): what every hop of one trace shares.
    pub fn trace_id(&self) -> &str {
        &self.traceparent[3..35]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_well_formed_traceparents_are_taken() {
        let good = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let t = TraceContext::parse(good, Some("congo=t61rcWkgMzE")).expect("good");
        assert_eq!(t.trace_id(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(t.tracestate(), Some("congo=t61rcWkgMzE"));
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473-600f067aa0ba902b7-01",
        ] {
            assert_eq!(TraceContext::parse(bad, None), None, "{bad}");
        }
        let long = "a=".to_owned() + &"b".repeat(600);
        assert_eq!(
            TraceContext::parse(good, Some(&long)).and_then(|t| t.tracestate),
            None
        );
    }
}
