//! The reader, file by file: a table of whole files and what it makes of them, then each
//! part of a server entry and of `gateway`.

use super::*;
use crate::aggregator::UpstreamTransport;
use crate::policy::GlobFilter;

/// What a test looks at in a configuration read: each upstream (key, transport, session),
/// how long the start waits, the surface, and which of auth, views and pins there are.
fn summary(g: &Gateway) -> String {
    let upstreams: Vec<String> = g
        .upstreams
        .iter()
        .map(|u| match &u.transport {
            UpstreamTransport::Stdio(c) => format!("{} stdio {} {:?}", u.key, c.command, c.args),
            UpstreamTransport::Http(h) => format!("{} http {} {:?}", u.key, h.url, h.headers),
            _ => format!("{} other", u.key),
        })
        .collect();
    format!(
        "{} | wait {:?} | page {} | {:?} | auth {} views {} pins {}",
        upstreams.join(", "),
        g.options.startup_wait,
        g.options.page_size,
        g.options.surface,
        g.authorization.is_some(),
        g.options.views.is_some(),
        g.options.pins.is_some(),
    )
}

/// Files the reader takes, and what it makes of them.
#[test]
fn a_table_of_files_and_what_the_reader_makes_of_them() {
    let read = [
        (
            r#"{"mcpServers": {"fs": {"command": "npx", "args": ["-y", "fs"]},
                               "web": {"url": "https://h/mcp", "headers": {"X": "y"}}}}"#,
            r#"fs stdio npx ["-y", "fs"], web http https://h/mcp [("X", "y")] | wait None | page 500 | Direct | auth false views false pins false"#,
        ),
        (
            // A `gateway` object brings `startupWaitMillis`' default; `null` for a list
            // or a map of a server is as if it were left out.
            r#"{"mcpServers": {"a": {"command": "x", "args": null, "env": null}},
                "gateway": {"surface": "dispatcher", "pageSize": 100}}"#,
            r#"a stdio x [] | wait Some(500ms) | page 100 | Dispatcher | auth false views false pins false"#,
        ),
        (
            // A disabled entry is left out before its values are read.
            r#"{"mcpServers": {"a": {"command": "x", "type": "stdio"},
                               "off": {"disabled": true, "session": "whatever"}},
                "gateway": {"startupWaitMillis": 0, "pageSize": 0, "views": [{"upstreams": ["a"]}],
                            "auth": {"resource": "https://gw/mcp",
                                     "apiKeys": [{"name": "ci", "key": "0123456789abcdef"}]}}}"#,
            r#"a stdio x [] | wait Some(0ns) | page 0 | Direct | auth true views true pins false"#,
        ),
    ];
    for (text, seen) in read {
        let g = super::parse(text, "c.json").unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(summary(&g), seen, "{text}");
    }
}

/// Files the reader refuses, and the whole error: where, and what (with the key meant).
#[test]
fn a_table_of_files_and_what_the_reader_says_is_wrong() {
    let refused = [
        (
            r#"{"mcpServers": {"fs": {"command": "x", "denyTool": ["write_*"]}}}"#,
            "mcpServers.fs.denyTool: unknown key `denyTool`; did you mean `denyTools`?",
        ),
        (
            r#"{"mcpServers": {}, "gateway": {"views": [{"upstream": ["fs"]}]}}"#,
            "gateway.views[0].upstream: unknown key `upstream`; did you mean `upstreams`?",
        ),
        (
            r#"{"mcpServers": {"a": {"url": "https://h/mcp", "auth": {"type": "oauth", "clientSecert": "s"}}}}"#,
            "mcpServers.a.auth.clientSecert: unknown key `clientSecert`; did you mean `clientSecret`?",
        ),
        (
            r#"{"mcpServers": {}, "gateway": {"auth": {"resource": "https://gw/mcp", "apiKeys": [{"name": "a", "subjet": "ci"}]}}}"#,
            "gateway.auth.apiKeys[0].subjet: unknown key `subjet`; did you mean `subject`?",
        ),
        (
            r#"{"mcpServers": {"a": {"command": "x", "disabled": true, "trusted": true, "allow": []}}}"#,
            "mcpServers.a.allow: unknown key `allow`; known keys here: allowTools, args, auth, \
             callTimeoutSeconds, command, cwd, denyTools, disabled, env, headers, hostSessionIdleSeconds, \
             legacySession, maxHostSessions, maxMessageBytes, maxPooledSessions, namespace, overrides, \
             protocolVersion, required, session, trusted, type, url, userAuth, withholdHints",
        ),
        (
            r#"{"mcpServers": {"a": {"command": 1}}}"#,
            "mcpServers.a.command: invalid type: integer `1`, expected a string",
        ),
        (
            r#"{"mcpServers": {"a": {"command": "x", "session": "pool"}}}"#,
            r#"mcpServers.a.session: "pool" is not "pooled", "per-host" or "shared""#,
        ),
        (
            r#"{"mcpServers": {"a": {"command": "x", "session": null}}}"#,
            r#"mcpServers.a.session: must be "pooled", "per-host" or "shared""#,
        ),
        (
            r#"{"mcpServers": {"a": {"command": "x", "maxPooledSessions": 0}}}"#,
            "mcpServers.a.maxPooledSessions: must be a positive integer",
        ),
        (
            r#"{"mcpServers": {"a": {"command": "x", "url": "https://h/mcp"}}}"#,
            "mcpServers.a: has both `command` and `url`; give one",
        ),
        (
            r#"{"mcpServers": {"a": {"url": "https://h/mcp", "type": "stdio"}}}"#,
            r#"mcpServers.a.type: "stdio" needs `command`, not `url`"#,
        ),
        (
            r#"{"mcpServers": {"a": {"url": "https://h/mcp", "legacySession": true}}}"#,
            "mcpServers.a.legacySession: is for a `command` server only",
        ),
        (
            r#"{"mcpServers": {"a": {"command": "x", "disabled": true}},
                "gateway": {"views": [{"upstreams": ["a"]}]}}"#,
            "gateway.views[0].upstreams: no server `a` in mcpServers",
        ),
        (
            r#"{"mcpServers": {}, "gateway": null}"#,
            "gateway: must be an object",
        ),
        (
            r#"{"mcpServers": {}, "gateway": {"auth": {"jwt": {"issuer": "i"}}}}"#,
            "gateway.auth.resource: required: this gateway's canonical URL, the audience of its tokens",
        ),
        (
            r#"{"mcpServers": {}, "gateway": {"auth": {"resource": "https://gw/mcp",
                "apiKeys": [{"name": "a", "keyEnv": "MCP_PROXY_TEST_UNSET_VAR"}]}}}"#,
            "gateway.auth.apiKeys[0].keyEnv: environment variable MCP_PROXY_TEST_UNSET_VAR is not set",
        ),
        (
            r#"{"mcpServers": {}, "gateway": {"maxNameLength": 8}}"#,
            "gateway.maxNameLength: must be an integer from 16 to 128",
        ),
        (
            // serde alone would read a struct from an array of its members.
            r#"{"mcpServers": {}, "gateway": {"pins": ["/p.json", "ask"]}}"#,
            "gateway.pins: must be an object",
        ),
        (
            r#"{"mcpServers": {"a": {"command": "x", "type": {"stdio": null}}}}"#,
            r#"mcpServers.a.type: must be "stdio", "http", "streamable-http", "streamableHttp" or "sse""#,
        ),
        ("[]", "(file): must be a JSON object"),
    ];
    for (text, says) in refused {
        let e = super::parse(text, "c.json").expect_err(text);
        assert_eq!(e.to_string(), format!("c.json: {says}"), "{text}");
    }
}

/// The upstreams and options of a configuration.
fn parse(
    text: &str,
    source_name: &str,
) -> Result<(Vec<UpstreamConfig>, AggregatorOptions), ConfigError> {
    super::parse(text, source_name).map(|g| (g.upstreams, g.options))
}

#[test]
fn the_desktop_format_with_our_additions() {
    let (ups, _) = parse(
        r#"{"mcpServers": {"fs": {"command": "npx", "args": ["-y", "x"], "env": {"A": "1"}, "cwd": "/tmp"},
             "web": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer t"}, "namespace": "w", "trusted": true}},
            "gateway": {"separator": "_", "maxNameLength": 48}}"#,
        "c.json",
    )
    .expect("valid");
    assert_eq!(ups.len(), 2);
    assert!(
        matches!(&ups[0].transport, UpstreamTransport::Stdio(c) if c.command == "npx" && c.env["A"] == "1")
    );
    assert!(ups[1].trusted && ups[1].namespace.as_deref() == Some("w"));
    assert_eq!(filter_of(&ups[0]), format!("{:?}", GlobFilter::default()));
}

#[test]
fn timeouts_and_message_limits() {
    let (ups, options) = parse(
        r#"{"mcpServers": {"a": {"command": "x", "callTimeoutSeconds": 5, "maxMessageBytes": 4096},
                           "b": {"command": "y"}},
            "gateway": {"callTimeoutSeconds": 30}}"#,
        "c.json",
    )
    .expect("valid");
    assert_eq!(ups[0].call_timeout, Some(std::time::Duration::from_secs(5)));
    assert_eq!(ups[0].max_message_bytes, Some(4096));
    assert_eq!(
        (ups[1].call_timeout, ups[1].max_message_bytes),
        (None, None)
    );
    assert_eq!(options.call_timeout, std::time::Duration::from_secs(30));
    for bad in [
        r#"{"mcpServers": {"a": {"command": "x", "callTimeoutSeconds": 0}}}"#,
        r#"{"mcpServers": {"a": {"command": "x", "maxMessageBytes": "big"}}}"#,
        r#"{"mcpServers": {}, "gateway": {"callTimeoutSeconds": -1}}"#,
    ] {
        let e = parse(bad, "c.json").expect_err(bad);
        assert!(e.problem.contains("positive integer"), "{bad}: {e}");
    }
}

#[test]
fn policies_in_the_config() {
    let (ups, options) = parse(
        r#"{"mcpServers": {"fs": {"command": "x", "allowTools": ["read_*"], "denyTools": ["read_secret"]}},
            "gateway": {"confirmDestructive": true, "surface": "dispatcher"}}"#,
        "c.json",
    )
    .expect("valid");
    let globs = GlobFilter {
        allow: Some(vec!["read_*".into()]),
        deny: vec!["read_secret".into()],
    };
    assert_eq!(filter_of(&ups[0]), format!("{globs:?}"));
    assert!(options.confirm.is_some());
    assert_eq!(options.surface, Surface::Dispatcher);
    let e = parse(
        r#"{"mcpServers": {}, "gateway": {"surface": "tiny"}}"#,
        "c.json",
    )
    .unwrap_err();
    assert_eq!(e.location, "gateway.surface");
    let e = parse(
        r#"{"mcpServers": {"fs": {"command": "x", "denyTools": "all"}}}"#,
        "c.json",
    )
    .unwrap_err();
    assert_eq!(e.location, "mcpServers.fs.denyTools");
}

#[test]
fn errors_name_the_file_the_key_and_the_problem() {
    let e = parse(r#"{"mcpServers": {"fs": {"args": []}}}"#, "c.json").unwrap_err();
    assert_eq!(
        e.to_string(),
        "c.json: mcpServers.fs: needs `command` (stdio) or `url` (HTTP)"
    );
    let e = parse(
        r#"{"mcpServers": {"fs": {"command": "x", "args": "y"}}}"#,
        "c.json",
    )
    .unwrap_err();
    assert_eq!(e.location, "mcpServers.fs.args");
    let e = parse(r#"{"servers": {}}"#, "c.json").unwrap_err();
    assert_eq!(e.location, "servers");
    assert!(e.problem.contains("did you mean `mcpServers`"), "{e}");
    let e = parse(r#"{"gateway": {}}"#, "c.json").unwrap_err();
    assert_eq!(e.location, "mcpServers");
    assert!(parse("{oops", "c.json")
        .unwrap_err()
        .problem
        .starts_with("not JSON"));
}

#[test]
fn unknown_keys_fail_and_name_the_key_meant() {
    let e = parse(
        r#"{"mcpServers": {"fs": {"command": "x", "denyTool": ["write_*"]}}}"#,
        "c.json",
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "c.json: mcpServers.fs.denyTool: unknown key `denyTool`; did you mean `denyTools`?"
    );
    let e = parse(
        r#"{"mcpServers": {}, "gateway": {"seperator": "_"}}"#,
        "c.json",
    )
    .unwrap_err();
    assert_eq!(e.location, "gateway.seperator");
    assert!(e.problem.contains("`separator`"), "{e}");
    let e = parse(r#"{"mcpServers": {}, "gatway": {}}"#, "c.json").unwrap_err();
    assert_eq!(e.location, "gatway");
    assert!(e.problem.contains("`gateway`"), "{e}");
    let e = parse(
        r#"{"mcpServers": {"a": {"command": "x", "zzz": 1}}}"#,
        "c.json",
    )
    .unwrap_err();
    assert!(
        e.problem.contains("known keys here: ") && e.problem.contains(", command, "),
        "{e}"
    );
}

#[test]
fn separators_patterns_and_types_are_validated() {
    for (bad, at) in [
        (
            r#"{"mcpServers": {}, "gateway": {"separator": "."}}"#,
            "gateway.separator",
        ),
        (
            r#"{"mcpServers": {}, "gateway": {"separator": ""}}"#,
            "gateway.separator",
        ),
        (
            r#"{"mcpServers": {"a": {"command": "x", "denyTools": [""]}}}"#,
            "mcpServers.a.denyTools",
        ),
        (
            r#"{"mcpServers": {"a": {"command": "x", "allowTools": ["read file"]}}}"#,
            "mcpServers.a.allowTools",
        ),
        (
            r#"{"mcpServers": {"a": {"command": "x", "type": "http"}}}"#,
            "mcpServers.a.type",
        ),
        (
            r#"{"mcpServers": {"a": {"command": "x", "type": "ws"}}}"#,
            "mcpServers.a.type",
        ),
    ] {
        assert_eq!(parse(bad, "c.json").expect_err(bad).location, at, "{bad}");
    }
    let (ups, _) = parse(
        r#"{"mcpServers": {"a": {"command": "x", "type": "stdio"},
                           "b": {"url": "http://h/mcp", "type": "streamable-http"},
                           "c": {"command": "y", "disabled": true}}}"#,
        "c.json",
    )
    .expect("valid");
    let keys: Vec<&str> = ups.iter().map(|u| u.key.as_str()).collect();
    assert_eq!(keys, ["a", "b"], "a disabled server is left out");
}

/// The filter an upstream was given, written out: a trait object compares by that.
fn filter_of(u: &crate::aggregator::UpstreamConfig) -> String {
    format!("{:?}", u.tools)
}

#[test]
fn user_auth_is_read_and_its_needs_are_checked() {
    let users = r#""gateway": {"auth": {"resource": "https://gw/mcp",
                              "jwt": {"issuer": "https://idp", "jwksUri": "https://idp/jwks"}}}"#;
    let exchange = r#""userAuth": {"type": "tokenExchange", "issuer": "https://as",
                                   "clientId": "gw", "clientSecret": "s3cret-value",
                                   "maxUsers": 3, "idleSeconds": 9}"#;
    let ok = format!(
        r#"{{"mcpServers": {{"desk": {{"url": "https://desk/mcp", {exchange}}}}}, {users}}}"#
    );
    let g = super::parse(&ok, "c.json").unwrap_or_else(|e| panic!("{e}"));
    let per_user = g.upstreams[0].per_user.as_ref().expect("per user");
    assert_eq!(per_user.max_principals, 3);
    assert_eq!(per_user.idle_timeout, std::time::Duration::from_secs(9));
    let debug = format!("{:?}", g.upstreams[0]);
    assert!(!debug.contains("s3cret-value"), "{debug}");
    for (text, at, says) in [
        (
            format!(r#"{{"mcpServers": {{"desk": {{"url": "https://desk/mcp", {exchange}}}}}}}"#),
            "mcpServers.desk.userAuth",
            "needs `gateway.auth.jwt`",
        ),
        (
            format!(r#"{{"mcpServers": {{"desk": {{"command": "x", {exchange}}}}}, {users}}}"#),
            "mcpServers.desk.userAuth",
            "for a `url` server only",
        ),
        (
            format!(
                r#"{{"mcpServers": {{"desk": {{"url": "https://desk/mcp", "headers": {{"authorization": "Bearer x"}}, {exchange}}}}}, {users}}}"#
            ),
            "mcpServers.desk.headers",
            "every user's requests",
        ),
        (
            format!(
                r#"{{"mcpServers": {{"desk": {{"url": "https://desk/mcp", "userAuth": {{"type": "tokenExchange", "issuer": "https://as", "clientId": "gw"}}}}}}, {users}}}"#
            ),
            "mcpServers.desk.userAuth",
            "needs `clientSecret`",
        ),
        (
            format!(
                r#"{{"mcpServers": {{"desk": {{"url": "https://desk/mcp", "userAuth": {{"type": "magic"}}}}}}, {users}}}"#
            ),
            "mcpServers.desk.userAuth.type",
            "",
        ),
    ] {
        let e = super::parse(&text, "c.json").expect_err(&text);
        assert_eq!(e.location, at, "{text}: {e}");
        assert!(e.problem.contains(says), "{text}: {e}");
    }
}
