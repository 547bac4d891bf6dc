//! The reader: each part of a server entry and of `gateway`.

use super::*;
use crate::policy::GlobFilter;
use crate::UpstreamTransport;

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
fn filter_of(u: &crate::UpstreamConfig) -> String {
    format!("{:?}", u.tools)
}
