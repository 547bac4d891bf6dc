//! `gateway.http`: the bounds of the gateway's Streamable HTTP listener (`--http`), and the
//! names it answers to besides loopback.
//!
//! ```json
//! "http": {"allowedHosts": ["gw.internal"], "maxSessions": 256, "maxSessionsPerClient": 16,
//!          "maxConnections": 1024, "maxBodyBytes": 1048576, "sessionIdleSeconds": 300}
//! ```

use mcp_server::http::HttpOptions;

use super::file;

/// The listener's options: [`HttpOptions::default`] with what `gateway.http` sets.
pub(super) fn http(http: file::Http) -> HttpOptions {
    let file::Http {
        allowed_hosts,
        allowed_origins,
        max_body_bytes,
        max_sessions,
        max_sessions_per_client,
        max_in_flight_per_session,
        max_connections,
        session_idle_seconds,
        idle_timeout_seconds,
        header_read_timeout_seconds,
        body_read_timeout_seconds,
    } = http;
    let mut o = HttpOptions::default();
    o.allowed_hosts.extend(allowed_hosts.unwrap_or_default());
    o.allowed_origins
        .extend(allowed_origins.unwrap_or_default());
    let counts = [
        (max_body_bytes, &mut o.max_body_bytes),
        (max_sessions, &mut o.max_sessions),
        (max_sessions_per_client, &mut o.max_sessions_per_client),
        (max_in_flight_per_session, &mut o.max_in_flight_per_session),
        (max_connections, &mut o.max_connections),
    ];
    for (given, field) in counts {
        if let Some(n) = given {
            *field = n.usize();
        }
    }
    let times = [
        (session_idle_seconds, &mut o.session_idle_timeout),
        (idle_timeout_seconds, &mut o.idle_timeout),
        (header_read_timeout_seconds, &mut o.header_read_timeout),
        (body_read_timeout_seconds, &mut o.body_read_timeout),
    ];
    for (given, field) in times {
        if let Some(t) = given {
            *field = t.seconds();
        }
    }
    o
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
