//! `gateway.http`: the bounds of the gateway's Streamable HTTP listener (`--http`), and the
//! names it answers to besides loopback.
//!
//! ```json
//! "http": {"allowedHosts": ["gw.internal"], "maxSessions": 256, "maxSessionsPerClient": 16,
//!          "maxConnections": 1024, "maxBodyBytes": 1048576, "sessionIdleSeconds": 300}
//! ```

use std::time::Duration;

use mcp_server::http::HttpOptions;
use serde_json::Value;

use super::{keys, known_keys, Fields, Problem};

/// The listener's options: [`HttpOptions::default`] with what `gateway.http` sets.
pub(super) fn http(v: &Value) -> Result<HttpOptions, Problem> {
    let at = "gateway.http";
    let obj = v
        .as_object()
        .ok_or_else(|| Problem::new(at, "must be an object"))?;
    known_keys(obj, &keys::HTTP, at)?;
    let f = Fields { obj, at: at.into() };
    let mut o = HttpOptions::default();
    o.allowed_hosts.extend(f.strings("allowedHosts")?);
    o.allowed_origins.extend(f.strings("allowedOrigins")?);
    let count = |field: &str| -> Result<Option<usize>, Problem> {
        Ok(f.positive(field)?
            .map(|n| usize::try_from(n).unwrap_or(usize::MAX)))
    };
    let seconds = |field: &str| -> Result<Option<Duration>, Problem> {
        Ok(f.positive(field)?.map(Duration::from_secs))
    };
    if let Some(n) = count("maxBodyBytes")? {
        o.max_body_bytes = n;
    }
    if let Some(n) = count("maxSessions")? {
        o.max_sessions = n;
    }
    if let Some(n) = count("maxSessionsPerClient")? {
        o.max_sessions_per_client = n;
    }
    if let Some(n) = count("maxInFlightPerSession")? {
        o.max_in_flight_per_session = n;
    }
    if let Some(n) = count("maxConnections")? {
        o.max_connections = n;
    }
    if let Some(t) = seconds("sessionIdleSeconds")? {
        o.session_idle_timeout = t;
    }
    if let Some(t) = seconds("idleTimeoutSeconds")? {
        o.idle_timeout = t;
    }
    if let Some(t) = seconds("headerReadTimeoutSeconds")? {
        o.header_read_timeout = t;
    }
    if let Some(t) = seconds("bodyReadTimeoutSeconds")? {
        o.body_read_timeout = t;
    }
    Ok(o)
}

#[cfg(test)]
mod tests {
    use crate::config::parse;
    use std::time::Duration;

    #[test]
    fn the_listeners_bounds_and_names_are_read() {
        let g = parse(
            r#"{"mcpServers": {}, "gateway": {"http": {"allowedHosts": ["gw.internal"],
                "allowedOrigins": ["app.example"], "maxBodyBytes": 1024, "maxSessions": 8,
                "maxSessionsPerClient": 3, "maxInFlightPerSession": 4, "maxConnections": 32, "sessionIdleSeconds": 60,
                "idleTimeoutSeconds": 20, "headerReadTimeoutSeconds": 3, "bodyReadTimeoutSeconds": 5}}}"#,
            "c.json",
        )
        .expect("valid");
        let o = &g.http;
        assert!(o.allowed_hosts.iter().any(|h| h == "gw.internal"));
        assert!(
            o.allowed_hosts.iter().any(|h| h == "127.0.0.1"),
            "loopback kept"
        );
        assert!(o.allowed_origins.iter().any(|h| h == "app.example"));
        assert_eq!((o.max_body_bytes, o.max_sessions), (1024, 8));
        assert_eq!(o.max_sessions_per_client, 3);
        assert_eq!((o.max_in_flight_per_session, o.max_connections), (4, 32));
        assert_eq!(o.session_idle_timeout, Duration::from_secs(60));
        assert_eq!(o.idle_timeout, Duration::from_secs(20));
        assert_eq!(o.header_read_timeout, Duration::from_secs(3));
        assert_eq!(o.body_read_timeout, Duration::from_secs(5));
        let default = parse(r#"{"mcpServers": {}}"#, "c.json").expect("valid");
        assert_eq!(default.http.max_sessions, 1024);
        assert_eq!(default.http.max_sessions_per_client, 256);
        for (bad, at) in [
            (
                r#"{"mcpServers": {}, "gateway": {"http": {"maxSessions": 0}}}"#,
                "gateway.http.maxSessions",
            ),
            (
                r#"{"mcpServers": {}, "gateway": {"http": {"maxSesions": 1}}}"#,
                "gateway.http.maxSesions",
            ),
            (
                r#"{"mcpServers": {}, "gateway": {"http": {"maxSessionsPerClient": 0}}}"#,
                "gateway.http.maxSessionsPerClient",
            ),
            (
                r#"{"mcpServers": {}, "gateway": {"http": {"allowedHosts": "gw"}}}"#,
                "gateway.http.allowedHosts",
            ),
        ] {
            assert_eq!(parse(bad, "c.json").expect_err(bad).location, at);
        }
    }
}
