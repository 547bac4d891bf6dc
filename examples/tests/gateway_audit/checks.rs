//! What each call's record should say, and how a record falls short of it.

use serde_json::Value;

use super::trail::Call;

/// What a call's record should say: its outcome, error kind, the upstream's name for
/// what it named, and a piece of its error message.
pub(crate) struct Expected<'a> {
    pub(crate) outcome: &'static str,
    pub(crate) kind: Option<&'static str>,
    pub(crate) upstream_name: Option<&'a str>,
    pub(crate) message: Option<&'static str>,
}

pub(crate) fn expected(call: &Call) -> Expected<'_> {
    let e = |outcome, kind, upstream_name, message| Expected {
        outcome,
        kind,
        upstream_name,
        message,
    };
    let own = call.name.strip_prefix("shop__");
    match call.label {
        "ok" | "secrets" | "special" | "limited" | "retried" => e("ok", None, own, None),
        "view" => e("refused", Some("view"), own, Some("Unknown tool")),
        "unknown" => e("refused", Some("unknown"), None, Some("Unknown tool")),
        "pin" | "asked pin" => e("refused", Some("pin"), own, None),
        "confirm" | "asked confirm" => e("refused", Some("confirmation_declined"), own, None),
        "limited again" => e("refused", Some("rate_limited"), own, Some("Rate limited")),
        "rpc error" => e("error", Some("upstream_error"), own, None),
        "is error" => e("is_error", None, own, None),
        "prompt" => e("ok", None, Some("greet"), None),
        "resource" => e("ok", None, Some("shop://catalog"), None),
        other => panic!("no expectation for {other}"),
    }
}

/// Whether the host was answered as the gateway should answer it (the records are
/// checked against what the host saw).
pub(crate) fn check_answer(call: &Call) -> Result<(), String> {
    let what = format!("{} {} ({})", call.who, call.label, call.name);
    let is_error = |v: &Value| v["isError"] == true;
    match (call.label, &call.answer) {
        ("view" | "unknown" | "limited again" | "rpc error", Err(_)) => Ok(()),
        ("pin" | "confirm" | "is error" | "asked pin" | "asked confirm", Ok(v)) if is_error(v) => {
            Ok(())
        }
        ("ok" | "secrets" | "special" | "limited" | "prompt" | "resource" | "retried", Ok(v))
            if !is_error(v) =>
        {
            Ok(())
        }
        (_, answer) => Err(format!("{what}: the host got {answer:?}")),
    }
}

/// The faults of `r`, the record of `call` (request `id`), against what it should say.
pub(crate) fn faults_of(call: &Call, r: &Value, e: &Expected<'_>) -> Vec<String> {
    let what = format!("{} {} ({})", call.who, call.label, call.name);
    let mut faults = Vec::new();
    let mut check = |ok: bool, member: &str| {
        if !ok {
            faults.push(format!("{what}: {member} is wrong in {r}"));
        }
    };
    let legacy = matches!(call.who, "alice" | "carol");
    check(
        r["principal"]["credential"] == format!("{}-key", call.who),
        "principal.credential",
    );
    check(r["principal"].get("issuer").is_none(), "principal.issuer");
    check(r["session"].is_string() == legacy, "session");
    check(r["trace"].as_str() == call.trace.as_deref(), "trace");
    check(r["name"] == call.name.as_str(), "name");
    check(
        r["upstream"].as_str() == e.upstream_name.map(|_| "shop"),
        "upstream",
    );
    check(
        r["upstreamName"].as_str() == e.upstream_name,
        "upstreamName",
    );
    check(r["outcome"] == e.outcome, "outcome");
    check(r["errorKind"].as_str() == e.kind, "errorKind");
    if let Some(m) = e.message {
        check(
            r["errorMessage"].as_str().is_some_and(|s| s.contains(m)),
            "errorMessage",
        );
    }
    check(
        r["durationMs"].as_f64().is_some_and(|d| d >= 0.0),
        "durationMs",
    );
    if call.method == "tools/call" {
        let args_len = call.arguments.as_ref().map_or(0, String::len) as u64;
        check(r["requestBytes"].as_u64() == Some(args_len), "requestBytes");
    }
    let answered = matches!(e.outcome, "ok" | "is_error");
    check(
        r["responseBytes"]
            .as_u64()
            .is_some_and(|b| !answered || b > 0),
        "responseBytes",
    );
    check(
        r["time"]
            .as_str()
            .is_some_and(|s| s.len() == 24 && s.ends_with('Z')),
        "time",
    );
    check(
        r["seq"].is_u64() && r["prev"].is_string() && r["hash"].is_string(),
        "chain",
    );
    faults
}

// ---------------------------------------------------------------------------------------
// The tests.
// ---------------------------------------------------------------------------------------
