//! The configuration's JSON Schema (`mcp-gateway --print-config-schema`): a valid 2020-12
//! schema that accepts every configuration README.md and `docs/` show, and refuses what
//! the reader refuses for the shape of a member.

use serde_json::Value;

fn validator() -> jsonschema::Validator {
    let schema = mcp_proxy::config::schema();
    jsonschema::meta::validate(&schema).expect("a valid JSON Schema");
    assert_eq!(
        schema["$schema"], "https://json-schema.org/draft/2020-12/schema",
        "2020-12, as editors read it"
    );
    jsonschema::validator_for(&schema).expect("a usable JSON Schema")
}

/// The complete configurations (JSON objects with `mcpServers`) in README.md's `json` blocks.
fn readme_configs() -> Vec<Value> {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md"))
        .expect("README.md");
    configs_in(&readme)
}

/// The complete configurations in the `json` blocks of every page under `docs/`.
fn docs_configs() -> Vec<(String, Value)> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs");
    let mut pages: Vec<_> = std::fs::read_dir(dir)
        .expect("docs/")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    pages.sort();
    pages
        .iter()
        .flat_map(|p| {
            let text = std::fs::read_to_string(p).expect("a page");
            let name = p.display().to_string();
            configs_in(&text)
                .into_iter()
                .map(move |c| (name.clone(), c))
        })
        .collect()
}

fn configs_in(markdown: &str) -> Vec<Value> {
    markdown
        .split("```json\n")
        .skip(1)
        .filter_map(|block| block.split("```").next())
        .filter_map(|block| serde_json::from_str::<Value>(block).ok())
        .filter(|v| v.get("mcpServers").is_some())
        .collect()
}

#[test]
fn the_schema_accepts_every_configuration_the_docs_show() {
    let validator = validator();
    let configs = docs_configs();
    assert!(
        configs.len() >= 3,
        "docs/ shows configurations: {configs:?}"
    );
    for (page, config) in &configs {
        let errors = schema_errors(&validator, config);
        assert!(errors.is_empty(), "{page}: {config}:\n{errors:#?}");
    }
}

/// What the schema finds wrong with `config`, each with where.
fn schema_errors(validator: &jsonschema::Validator, config: &Value) -> Vec<String> {
    validator
        .iter_errors(config)
        .map(|e| format!("{}: {e}", e.instance_path))
        .collect()
}

#[test]
fn the_schema_accepts_every_configuration_the_readme_shows() {
    let validator = validator();
    let configs = readme_configs();
    assert!(
        configs.len() >= 3,
        "README shows configurations: {configs:?}"
    );
    for config in &configs {
        let errors = schema_errors(&validator, config);
        assert!(errors.is_empty(), "{config}:\n{errors:#?}");
    }
}

#[test]
fn the_schema_and_the_reader_agree_on_good_and_bad_files() {
    let validator = validator();
    let good = [
        r#"{"mcpServers": {}}"#,
        r#"{"mcpServers": {"a": {"command": "x", "args": ["-v"], "env": {"K": "v"}, "cwd": "/tmp",
             "type": "stdio", "namespace": "n", "trusted": true, "protocolVersion": "2025-06-18",
             "allowTools": ["read_*"], "denyTools": ["read_secret"], "session": "shared",
             "callTimeoutSeconds": 5, "maxMessageBytes": 4096, "required": true,
             "overrides": {"t": {"name": "u", "title": "T", "description": "d", "annotations": {"readOnlyHint": true}}}},
           "b": {"url": "https://example.com/mcp", "headers": {"X": "y"}, "type": "streamable-http",
             "session": "per-host", "maxHostSessions": 4, "hostSessionIdleSeconds": 60},
           "c": {"command": "y", "disabled": true},
           "d": {"command": "z", "session": "pooled", "maxPooledSessions": 4, "maxHostSessions": 2,
             "withholdHints": true}},
          "gateway": {"separator": "_", "maxNameLength": 48, "confirmDestructive": true,
             "surface": "dispatcher", "callTimeoutSeconds": 30, "stdioSubject": "me",
             "views": [{"name": "v", "subjects": ["me"], "upstreams": ["a"], "allowTools": ["a_*"], "surface": "direct"}],
             "http": {"allowedHosts": ["gw.internal"], "maxSessions": 8, "maxConnections": 64,
                      "maxSessionsPerClient": 2, "sessionIdleSeconds": 60}}}"#,
    ];
    for text in good {
        let v: Value = serde_json::from_str(text).expect("JSON");
        assert!(validator.is_valid(&v), "schema refuses {text}");
        mcp_proxy::config::parse(text, "good.json").expect("the reader accepts it");
    }
    let bad = [
        r#"{"servers": {}}"#,
        r#"{"mcpServers": {}, "gatway": {}}"#,
        r#"{"mcpServers": {"a": {"comand": "x"}}}"#,
        r#"{"mcpServers": {"a": {"command": 1}}}"#,
        r#"{"mcpServers": {"a": {"command": "x", "args": "y"}}}"#,
        r#"{"mcpServers": {"a": {"command": "x", "type": "ws"}}}"#,
        r#"{"mcpServers": {"a": {"command": "x", "session": "pool"}}}"#,
        r#"{"mcpServers": {"a": {"command": "x", "maxPooledSessions": 0}}}"#,
        r#"{"mcpServers": {"a": {"command": "x", "protocolVersion": "2025-01-01"}}}"#,
        r#"{"mcpServers": {"a": {"command": "x", "callTimeoutSeconds": 0}}}"#,
        r#"{"mcpServers": {"a": {"command": "x", "denyTools": ["read file"]}}}"#,
        r#"{"mcpServers": {"a": {"url": "ftp://h/mcp"}}}"#,
        r#"{"mcpServers": {"a": {"url": "https://h/mcp", "auth": {"type": "password"}}}}"#,
        r#"{"mcpServers": {"a": {"command": "x", "overrides": {"t": {"name": "bad name"}}}}}"#,
        r#"{"mcpServers": {}, "gateway": {"separator": "."}}"#,
        r#"{"mcpServers": {}, "gateway": {"maxNameLength": 8}}"#,
        r#"{"mcpServers": {}, "gateway": {"surface": "tiny"}}"#,
        r#"{"mcpServers": {}, "gateway": {"auth": {"jwt": {"issuer": "https://i"}}}}"#,
        r#"{"mcpServers": {}, "gateway": {"pins": {"file": "/p.json", "onChange": "allow"}}}"#,
        r#"{"mcpServers": {}, "gateway": {"views": [{"nmae": "v"}]}}"#,
        r#"{"mcpServers": {}, "gateway": {"http": {"maxSessions": 0}}}"#,
        r#"{"mcpServers": {}, "gateway": {"http": {"maxSessionsPerClient": 0}}}"#,
        r#"{"mcpServers": {}, "gateway": {"http": {"allowedHost": ["gw"]}}}"#,
    ];
    for text in bad {
        let v: Value = serde_json::from_str(text).expect("JSON");
        assert!(!validator.is_valid(&v), "schema accepts {text}");
        assert!(
            mcp_proxy::config::parse(text, "bad.json").is_err(),
            "the reader accepts {text}"
        );
    }
}

#[test]
fn a_servers_session_reads_as_its_mode_and_bounds() {
    use mcp_proxy::{PerHostLimits, PoolLimits, SessionMode};
    use std::time::Duration;
    let text = r#"{"mcpServers": {
        "plain": {"command": "x"},
        "pooled": {"command": "x", "maxPooledSessions": 3, "maxHostSessions": 5, "hostSessionIdleSeconds": 30},
        "own": {"command": "x", "session": "per-host", "maxHostSessions": 2},
        "one": {"command": "x", "session": "shared"}}}"#;
    let gateway = mcp_proxy::config::parse(text, "sessions.json").expect("parses");
    let mode = |key: &str| {
        let u = gateway.upstreams.iter().find(|u| u.key == key);
        u.map(|u| u.session.clone()).expect("the server")
    };
    let idle = Duration::from_secs(30);
    assert_eq!(mode("plain"), SessionMode::default());
    assert_eq!(
        mode("pooled"),
        SessionMode::Pooled(PoolLimits::new(3, idle).hosts(PerHostLimits::new(5, idle)))
    );
    assert_eq!(
        mode("own"),
        SessionMode::PerHost(PerHostLimits::new(2, Duration::from_secs(600)))
    );
    assert_eq!(mode("one"), SessionMode::Shared);
    assert!(
        matches!(SessionMode::default(), SessionMode::Pooled(l) if l.max_sessions == 8),
        "pooled by default, 8 sessions"
    );
}
