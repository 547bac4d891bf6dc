//! Per-user upstream credentials end to end, with real processes and real authorization
//! servers: the gateway program (`gateway.auth.jwt` trusting the "users" issuer of
//! `examples/interop/oidc/providers.mjs`) in front of an upstream that takes only tokens
//! of its own authorization server ("upstream"). Each user's calls reach the upstream with
//! a token of that user obtained by RFC 8693 token exchange (one exchange per user while
//! the token lasts), a user the authorization server refuses gets an error result naming
//! the upstream and why, and no token crosses over: host tokens never reach the upstream,
//! upstream tokens never reach a host, and neither is in the gateway's trace-level logs
//! or metrics.
//!
//! With `MCP_INTEROP=required` (as `.ci/run` sets) a missing Node or `oidc-provider` fails
//! the test; otherwise it is skipped with a note.

use std::collections::BTreeMap;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use mcp_client::http::HttpConfig;
use mcp_client::{connect_http, Client, ClientOptions, EraChoice, NoHandler};
use mcp_examples::OutputLog;
use mcp_proxy::jwks::JwksUri;
use mcp_server::auth::{
    bearer_token, Authenticator, Authorization, JwtAuthenticator, JwtOptions, Principal,
    ProtectedResource, Refusal,
};
use mcp_server::http::{bind, HttpOptions};
use mcp_server::{Outcome, RequestContext, Server, ToolError, ToolRegistry};
use mcp_types::protocol::{CallToolResult, ContentBlock};
use mcp_types::Revision;
use serde_json::{json, Map, Value};

mod common;
use common::browser::{http_client, jwt_claims, user_access_token};
use common::providers::Providers;
use common::{example, free_port, interop_dir};

const SECRET: &str = "gateway-secret: exchange & list";
const HOST_REDIRECT: &str = "http://127.0.0.1:9/cb";
const CALLS: u64 = 200;
const LIMIT: Duration = Duration::from_secs(60);

/// What the upstream saw.
#[derive(Clone, Default)]
struct Seen {
    /// Every bearer token a request carried, with the subject it was accepted for (or why not).
    bearers: Arc<Mutex<Vec<(String, String)>>>,
    /// Every `whoami` call served: its `n`, the principal's `sub` and the token's `aud`.
    calls: Arc<Mutex<Vec<(u64, String, String)>>>,
}

/// The upstream's JWT authenticator, recording the raw bearer token of every request.
struct Recorded {
    inner: JwtAuthenticator,
    seen: Seen,
}

#[async_trait]
impl Authenticator for Recorded {
    async fn authenticate(&self, parts: &http::request::Parts) -> Result<Principal, Refusal> {
        let token = bearer_token(&parts.headers).map(str::to_owned);
        let got = self.inner.authenticate(parts).await;
        if let Some(token) = token {
            let who = got
                .as_ref()
                .map_or_else(|r| format!("refused: {r}"), |p| p.subject.clone());
            self.seen.bearers.lock().expect("lock").push((who, token));
        }
        got
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct WhoArgs {
    /// Which call this is.
    n: u64,
}

/// A token's `aud` (one audience), as text.
fn audience(aud: Option<&Value>) -> String {
    aud.map(|a| a.as_str().map_or_else(|| a.to_string(), str::to_owned))
        .unwrap_or_default()
}

/// The upstream at `url`: tokens of `issuer` for `url` only, and a tool `whoami` that says
/// (and records) whom it serves.
async fn upstream(url: &str, issuer: &str) -> Seen {
    let seen = Seen::default();
    let calls = seen.calls.clone();
    let mut tools = ToolRegistry::new();
    tools.tool(
        "whoami",
        "Says whom the upstream serves.",
        move |a: WhoArgs, ctx: RequestContext| {
            let calls = calls.clone();
            async move {
                let p = ctx.principal();
                let sub = p.map(|p| p.subject.clone()).unwrap_or_default();
                let aud = audience(p.and_then(|p| p.claims.get("aud")));
                calls
                    .lock()
                    .expect("lock")
                    .push((a.n, sub.clone(), aud.clone()));
                Ok::<_, ToolError>(Outcome::Complete(CallToolResult {
                    content: vec![ContentBlock::text(format!("sub={sub} aud={aud}"))],
                    ..Default::default()
                }))
            }
        },
    );
    let jwt = JwtAuthenticator::new(JwksUri::discover(issuer), JwtOptions::new(issuer, url));
    let recorded = Recorded {
        inner: jwt,
        seen: seen.clone(),
    };
    let resource = ProtectedResource::new(url)
        .expect("resource")
        .authorization_server(issuer);
    let options = HttpOptions::default().authorization(Authorization::new(recorded, resource));
    let addr = url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .parse()
        .expect("address");
    bind(addr, Server::new(tools), options).await.expect("bind");
    seen
}

/// The gateway program on HTTP at `port`, `--admin` at `admin`, all it writes kept; killed
/// if the test ends before [`Gateway::stop`].
struct Gateway(Option<std::process::Child>, Option<(OutputLog, OutputLog)>);

impl Gateway {
    async fn start(config: &std::path::Path, port: u16, admin: u16) -> Gateway {
        let mut child = std::process::Command::new(example("gateway"))
            .arg("--config")
            .arg(config)
            .args(["--http", &format!("127.0.0.1:{port}")])
            .args(["--admin", &format!("127.0.0.1:{admin}")])
            .envs([
                ("RUST_LOG", "trace"),
                ("NO_COLOR", "1"),
                ("GW_EXCHANGE_SECRET", SECRET),
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the gateway");
        let mut out = OutputLog::read(child.stdout.take().expect("stdout"));
        let mut err = OutputLog::read(child.stderr.take().expect("stderr"));
        let ready = out.says("/mcp\n", LIMIT).await && err.says("/metrics on", LIMIT).await;
        assert!(ready, "the gateway did not start:\n{}", err.text());
        Gateway(Some(child), Some((out, err)))
    }

    /// Stopped with `SIGTERM`: everything it wrote.
    async fn stop(mut self) -> String {
        let mut c = self.0.take().expect("running");
        let _ = std::process::Command::new("kill")
            .args(["-TERM", &c.id().to_string()])
            .status();
        let exited = mcp_examples::wait_until(Duration::from_secs(15), || {
            std::future::ready(!matches!(c.try_wait(), Ok(None)))
        });
        assert!(exited.await, "the gateway did not stop on SIGTERM");
        let (out, err) = self.1.take().expect("output");
        format!("{}\n{}", out.all(), err.all())
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

async fn host(url: &str, token: &str, era: EraChoice) -> Client {
    let mut config = HttpConfig::new(url);
    config
        .headers
        .push(("Authorization".into(), format!("Bearer {token}")));
    connect_http(config, NoHandler, ClientOptions::default().era(era))
        .await
        .expect("host connects")
}

fn text(r: &CallToolResult) -> String {
    r.content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect()
}

fn nth(n: u64) -> Map<String, Value> {
    json!({ "n": n }).as_object().cloned().unwrap_or_default()
}

/// The TypeScript SDK host (`host.mjs`) calling `whoami` once as `token`: what it printed.
async fn ts_host(url: &str, token: &str, n: u64) -> Option<String> {
    let sdk = interop_dir().join("node_modules/@modelcontextprotocol/sdk");
    if !sdk.exists() {
        let required = std::env::var("MCP_INTEROP").as_deref() == Ok("required");
        assert!(!required, "{} is not installed", sdk.display());
        eprintln!(
            "SKIPPED the TypeScript host: {} is not installed",
            sdk.display()
        );
        return None;
    }
    let calls = json!([["up__whoami", {"n": n}]]).to_string();
    let run = tokio::process::Command::new("node")
        .args(["host.mjs", url, &calls])
        .env("MCP_BEARER_TOKEN", token)
        .current_dir(interop_dir())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(LIMIT, run)
        .await
        .expect("the TypeScript host finished in time")
        .expect("the TypeScript host ran");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "host.mjs: {stdout}\n{stderr}");
    Some(format!("{stdout}\n{stderr}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_user_reaches_the_upstream_with_an_exchanged_token_and_no_token_crosses_over() {
    if Providers::available().is_none() {
        return;
    }
    let (gw_port, admin_port) = (free_port(), free_port());
    let gw_url = format!("http://127.0.0.1:{gw_port}/mcp");
    let up_url = format!("http://127.0.0.1:{}/mcp", free_port());
    let Some(p) = Providers::start(json!({
        "gatewayResource": gw_url, "upstreamResource": up_url,
        "hostRedirectUri": HOST_REDIRECT,
        "gatewayLoginRedirectUri": format!("http://127.0.0.1:{gw_port}/login/callback"),
        "gatewayCallbackUri": format!("http://127.0.0.1:{gw_port}/oauth/callback"),
        "gatewayClientSecret": SECRET, "deniedSubjects": ["mallory"], "accessTokenTtl": 120,
    }))
    .await
    else {
        return;
    };
    let seen = upstream(&up_url, &p.upstream).await;
    let dir = std::env::temp_dir().join(format!("mcp-per-user-exchange-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let config = dir.join("gateway.json");
    let (issuer, secret) = (&p.upstream, "GW_EXCHANGE_SECRET");
    let body = json!({
        "mcpServers": {"up": {"url": up_url,
            "auth": {"type": "clientCredentials", "issuer": issuer, "clientId": "gateway",
                     "clientSecretEnv": secret},
            "userAuth": {"type": "tokenExchange", "issuer": issuer, "clientId": "gateway",
                         "clientSecretEnv": secret, "scopes": ["mcp"]}}},
        "gateway": {"startupWaitMillis": 60000, "auth": {
            "resource": gw_url, "authorizationServers": [p.users],
            "jwt": {"issuer": p.users}}}});
    std::fs::write(&config, body.to_string()).expect("config");
    let gw = Gateway::start(&config, gw_port, admin_port).await;

    let token = |login| user_access_token(&p.users, "host-app", HOST_REDIRECT, &gw_url, login);
    let (alice, bob) = (token("alice").await, token("bob").await);
    let mallory = token("mallory").await;
    let host_tokens = [("alice", &alice), ("bob", &bob), ("mallory", &mallory)];
    let legacy = EraChoice::Legacy(Revision::V2025_11_25);
    let hosts = [
        ("alice", host(&gw_url, &alice, EraChoice::Modern).await),
        ("bob", host(&gw_url, &bob, legacy).await),
        ("alice", host(&gw_url, &alice, legacy).await),
        ("bob", host(&gw_url, &bob, EraChoice::Modern).await),
    ];
    // Everything the hosts were shown, serialized.
    let mut visible = Vec::new();
    for (who, h) in &hosts {
        let tools = h.list_tools().await.expect("tools");
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["up__whoami"], "{who}");
        visible.push(serde_json::to_string(&tools).expect("JSON"));
    }

    // 200 calls at once, alice's and bob's hosts (both eras) interleaved.
    let mut calls = tokio::task::JoinSet::new();
    for n in 0..CALLS {
        let (who, h) = hosts[n as usize % hosts.len()].clone();
        calls.spawn(async move { (n, who, h.call_tool("up__whoami", nth(n)).await) });
    }
    let mut expected = BTreeMap::new();
    let all = tokio::time::timeout(LIMIT, async {
        while let Some(joined) = calls.join_next().await {
            let (n, who, got) = joined.expect("joined");
            let r = got
                .unwrap_or_else(|e| panic!("call {n} of {who}: {e}"))
                .result;
            visible.push(serde_json::to_string(&r).expect("JSON"));
            assert_ne!(r.is_error, Some(true), "call {n} of {who}: {}", text(&r));
            assert_eq!(text(&r), format!("sub={who} aud={up_url}"), "call {n}");
            expected.insert(n, who);
        }
    });
    all.await.expect("the 200 calls were answered in time");
    let served = seen.calls.lock().expect("lock").clone();
    assert_eq!(served.len(), CALLS as usize, "{served:?}");
    for (n, sub, aud) in &served {
        assert_eq!(
            Some(&sub.as_str()),
            expected.get(n),
            "call {n} served as {sub}"
        );
        assert_eq!(aud, &up_url, "call {n}");
    }
    for who in ["alice", "bob"] {
        let as_who = served.iter().filter(|(_, s, _)| s == who).count();
        assert_eq!(as_who, CALLS as usize / 2, "{who}");
    }
    let exchanges = p.exchanges().await;
    assert_eq!(exchanges["count"], 2, "{exchanges}");
    assert_eq!(
        exchanges["bySubject"],
        json!({"alice": 1, "bob": 1}),
        "{exchanges}"
    );

    // A host we did not write, as bob: served as bob, with the token already had.
    if let Some(out) = ts_host(&gw_url, &bob, 1000).await {
        assert!(out.contains(&format!("sub=bob aud={up_url}")), "{out}");
        visible.push(out);
        let calls = seen.calls.lock().expect("lock").clone();
        assert!(
            calls.iter().any(|c| c.0 == 1000 && c.1 == "bob"),
            "{calls:?}"
        );
    }

    // Mallory: the authorization server refuses her exchange; her hosts hear why.
    for (n, era) in [(2000, EraChoice::Modern), (2001, legacy)] {
        let h = host(&gw_url, &mallory, era).await;
        let r = h
            .call_tool("up__whoami", nth(n))
            .await
            .expect("answered")
            .result;
        let said = text(&r);
        eprintln!("mallory was told: {said}");
        visible.push(serde_json::to_string(&r).expect("JSON"));
        assert_eq!(r.is_error, Some(true), "{said}");
        let why = "invalid_grant: token exchange for subject mallory is denied by policy";
        assert!(
            said.contains("upstream `up`") && said.contains(why),
            "{said}"
        );
        assert!(!said.contains("eyJ") && !said.contains(&mallory), "{said}");
        assert_eq!(
            said.matches("upstream `up`").count(),
            1,
            "named once: {said}"
        );
        h.close().await;
    }
    let calls = seen.calls.lock().expect("lock").clone();
    assert!(
        calls.iter().all(|c| c.1 != "mallory" && c.0 < 2000),
        "{calls:?}"
    );
    let exchanges = p.exchanges().await;
    assert_eq!(exchanges["count"], 2, "{exchanges}");
    assert!(exchanges["refused"].as_u64() >= Some(1), "{exchanges}");

    // What reached the upstream: only its own issuer's tokens for it, one per user (and
    // the gateway's own, for listing), never a host's.
    let bearers = seen.bearers.lock().expect("lock").clone();
    let mut upstream_tokens: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (who, t) in &bearers {
        let claims = jwt_claims(t);
        assert_eq!(claims["iss"], p.upstream.as_str(), "{who}: {claims}");
        assert_eq!(audience(claims.get("aud")), up_url, "{who}: {claims}");
        assert_eq!(claims["sub"], who.as_str(), "{who}: {claims}");
        let tokens = upstream_tokens.entry(who.clone()).or_default();
        if !tokens.contains(t) {
            tokens.push(t.clone());
        }
    }
    let kept: Vec<(&str, usize)> = upstream_tokens
        .iter()
        .map(|(w, t)| (w.as_str(), t.len()))
        .collect();
    assert_eq!(
        kept,
        [("alice", 1), ("bob", 1), ("gateway", 1)],
        "listing went as the gateway"
    );
    for (who, t) in host_tokens {
        assert!(
            !bearers.iter().any(|(_, b)| b == t),
            "{who}'s host token reached the upstream"
        );
    }

    let metrics_url = format!("http://127.0.0.1:{admin_port}/metrics");
    let metrics = http_client()
        .get(&metrics_url)
        .send()
        .await
        .expect("metrics");
    let metrics = metrics.text().await.expect("metrics text");
    assert!(metrics.contains("upstream=\"up\""), "{metrics}");
    for (_, h) in &hosts {
        h.close().await;
    }
    let output = gw.stop().await;
    assert!(output.contains("TRACE"), "trace-level logs");
    eprintln!(
        "upstream: {} requests; gateway output: {} bytes; metrics: {} bytes",
        bearers.len(),
        output.len(),
        metrics.len()
    );
    // A token's signature is what makes it usable: none may be anywhere it should not be.
    let signature = |t: &str| t.rsplit('.').next().unwrap_or(t).to_owned();
    let visible = visible.join("\n");
    let places = [
        ("a host", &visible),
        ("the gateway's output", &output),
        ("metrics", &metrics),
    ];
    for (who, tokens) in &upstream_tokens {
        for (place, text) in places {
            let leaked = tokens.iter().any(|t| text.contains(&signature(t)));
            assert!(!leaked, "{who}'s upstream token is in {place}");
        }
    }
    for (who, t) in host_tokens {
        for (place, text) in &places[1..] {
            assert!(
                !text.contains(&signature(t)),
                "{who}'s host token is in {place}"
            );
        }
    }
    assert!(
        !output.contains(SECRET),
        "the client secret is in the gateway's output"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn the_gateway_may_authenticate_its_exchanges_with_a_signed_assertion() {
    if Providers::available().is_none() {
        return;
    }
    let (gw_port, admin_port) = (free_port(), free_port());
    let gw_url = format!("http://127.0.0.1:{gw_port}/mcp");
    let up_url = format!("http://127.0.0.1:{}/mcp", free_port());
    let (pem, jwk) = common::providers::es256_key("gw-key-1");
    let Some(p) = Providers::start(json!({
        "gatewayResource": gw_url, "upstreamResource": up_url,
        "hostRedirectUri": HOST_REDIRECT,
        "gatewayLoginRedirectUri": format!("http://127.0.0.1:{gw_port}/login/callback"),
        "gatewayCallbackUri": format!("http://127.0.0.1:{gw_port}/oauth/callback"),
        "gatewayClientSecret": SECRET, "gatewayJwks": {"keys": [jwk]}, "accessTokenTtl": 120,
    }))
    .await
    else {
        return;
    };
    let seen = upstream(&up_url, &p.upstream).await;
    let dir = std::env::temp_dir().join(format!("mcp-per-user-jwt-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let key = dir.join("gateway.pem");
    std::fs::write(&key, &pem).expect("key");
    let config = dir.join("gateway.json");
    let issuer = &p.upstream;
    let body = json!({
        "mcpServers": {"up": {"url": up_url,
            "auth": {"type": "clientCredentials", "issuer": issuer, "clientId": "gateway",
                     "clientSecretEnv": "GW_EXCHANGE_SECRET"},
            "userAuth": {"type": "tokenExchange", "issuer": issuer, "clientId": "gateway-jwt",
                         "privateKeyFile": key, "signingAlgorithm": "ES256", "keyId": "gw-key-1",
                         "scopes": ["mcp"]}}},
        "gateway": {"startupWaitMillis": 60000, "auth": {
            "resource": gw_url, "jwt": {"issuer": p.users}}}});
    std::fs::write(&config, body.to_string()).expect("config");
    let _gw = Gateway::start(&config, gw_port, admin_port).await;
    let alice = user_access_token(&p.users, "host-app", HOST_REDIRECT, &gw_url, "alice").await;
    let h = host(&gw_url, &alice, EraChoice::Modern).await;
    let r = h
        .call_tool("up__whoami", nth(1))
        .await
        .expect("answered")
        .result;
    assert_ne!(r.is_error, Some(true), "{}", text(&r));
    assert!(text(&r).starts_with("sub=alice "), "{}", text(&r));
    // One exchange, by the client that signs its assertions.
    let exchanges = p.exchanges().await;
    assert_eq!(exchanges["count"], 1, "{exchanges}");
    let bearers = seen.bearers.lock().expect("lock").clone();
    let alices: Vec<_> = bearers.iter().filter(|(sub, _)| sub == "alice").collect();
    assert!(!alices.is_empty(), "{bearers:?}");
    for (_, token) in alices {
        assert_eq!(jwt_claims(token)["client_id"], json!("gateway-jwt"));
        assert_ne!(token, &alice, "the host's own token went upstream");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
