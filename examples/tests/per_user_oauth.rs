//! An upstream that acts as each user by the user's own consent (`userAuth` of type
//! `oauth`), end to end with real parts: two `oidc-provider` authorization servers (the
//! gateway's users' issuer, and the upstream's), the gateway program, an upstream that
//! takes only the upstream issuer's tokens and records whom each call it serves was for,
//! and a scripted browser for each user.
//!
//! Each host is asked the way it can be: a 2025-11-25 host with URL-mode elicitation gets
//! `-32042` and then `notifications/elicitation/complete`; a 2026 host gets an
//! `InputRequiredResult` and its retry completes the call; a host without URL mode gets an
//! error result naming the link. After the browser flow every call reaches the upstream
//! as its own user, never as another.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use mcp_client::http::HttpConfig;
use mcp_client::{connect_http, Client, ClientError, ClientHandler, ClientOptions, EraChoice};
use mcp_server::auth::{
    bearer_token, Authenticator, Authorization, JwtAuthenticator, JwtOptions, Principal,
    ProtectedResource, Refusal,
};
use mcp_server::http::{bind, HttpOptions};
use mcp_server::{Outcome, RequestContext, Server, ServerHandler};
use mcp_types::protocol::*;
use mcp_types::{ErrorObject, Revision};
use serde_json::{json, Value};

mod common;
use common::browser::{jwt_claims, user_access_token, Browser, Providers};
use common::{example, free_port};

const SECRET: &str = "gateway-secret-for-tests-only";
const HOST_REDIRECT: &str = "http://127.0.0.1:9/cb";
const GRANT_KEYS: &str = "k1:AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE";

/// What the upstream saw of each call: the token's `sub` and `aud`, and the token.
#[derive(Clone, Default)]
struct Seen(Arc<Mutex<Vec<(String, Value, String)>>>);

/// The upstream's authenticator: the issuer's JWTs, each token it is shown noted.
struct Noting {
    inner: JwtAuthenticator,
    tokens: Arc<Mutex<Vec<String>>>,
}

#[async_trait]
impl Authenticator for Noting {
    async fn authenticate(&self, request: &http::request::Parts) -> Result<Principal, Refusal> {
        if let Some(t) = bearer_token(&request.headers) {
            self.tokens.lock().expect("tokens").push(t.to_owned());
        }
        self.inner.authenticate(request).await
    }
}

#[derive(Clone)]
struct WhoAmI(Seen);

#[async_trait]
impl ServerHandler for WhoAmI {
    fn capabilities(&self) -> ServerCapabilities {
        ServerCapabilities {
            tools: Some(Default::default()),
            ..Default::default()
        }
    }
    async fn list_tools(
        &self,
        _: &RequestContext,
        _: PaginatedRequestParams,
    ) -> Result<ListToolsResult, ErrorObject> {
        let tool: Tool = serde_json::from_value(json!({
            "name": "whoami", "inputSchema": {"type": "object"}}))
        .map_err(|e| ErrorObject::new(-32603, e.to_string()))?;
        Ok(ListToolsResult {
            tools: vec![tool],
            ..Default::default()
        })
    }
    async fn call_tool(
        &self,
        ctx: &RequestContext,
        _: CallToolRequestParams,
    ) -> Result<Outcome<CallToolResult>, ErrorObject> {
        let p = ctx
            .principal()
            .cloned()
            .unwrap_or_else(|| Principal::new(""));
        let aud = p.claims.get("aud").cloned().unwrap_or(Value::Null);
        self.0
             .0
            .lock()
            .expect("seen")
            .push((p.subject.clone(), aud, String::new()));
        Ok(Outcome::Complete(CallToolResult {
            content: vec![ContentBlock::text(p.subject)],
            ..Default::default()
        }))
    }
}

/// Everything one run holds: the providers, the upstream, the gateway.
struct World {
    providers: Providers,
    gateway: tokio::process::Child,
    gateway_url: String,
    upstream_url: String,
    seen: Seen,
    upstream_tokens: Arc<Mutex<Vec<String>>>,
    log: std::path::PathBuf,
    dir: std::path::PathBuf,
}

impl Drop for World {
    fn drop(&mut self) {
        let _ = self.gateway.start_kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

async fn world(ttl: u64) -> Option<World> {
    let gw_port = free_port();
    let up_port = free_port();
    let gateway_origin = format!("http://127.0.0.1:{gw_port}");
    let gateway_url = format!("{gateway_origin}/mcp");
    let upstream_url = format!("http://127.0.0.1:{up_port}/mcp");
    let providers = Providers::start(json!({
        "gatewayResource": gateway_url,
        "upstreamResource": upstream_url,
        "hostRedirectUri": HOST_REDIRECT,
        "gatewayLoginRedirectUri": format!("{gateway_origin}/connect/login"),
        "gatewayCallbackUri": format!("{gateway_origin}/connect/callback"),
        "gatewayClientSecret": SECRET,
        "accessTokenTtl": ttl,
    }))
    .await?;
    // The upstream: only the upstream issuer's tokens, for its own resource.
    let seen = Seen::default();
    let upstream_tokens = Arc::new(Mutex::new(Vec::new()));
    let keys = mcp_proxy::jwks::JwksUri::discover(providers.upstream.clone());
    let jwt = JwtAuthenticator::new(
        keys,
        JwtOptions::new(providers.upstream.clone(), upstream_url.clone()),
    );
    let noting = Noting {
        inner: jwt,
        tokens: upstream_tokens.clone(),
    };
    let resource = ProtectedResource::new(upstream_url.clone())
        .expect("resource")
        .authorization_server(providers.upstream.clone());
    let options = HttpOptions::default().authorization(Authorization::new(noting, resource));
    bind(
        format!("127.0.0.1:{up_port}").parse().expect("address"),
        Server::new(WhoAmI(seen.clone())),
        options,
    )
    .await
    .expect("upstream binds");
    // The gateway.
    let dir = std::env::temp_dir().join(format!("per-user-oauth-{}-{gw_port}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let config = json!({
        "mcpServers": {"desk": {
            "url": upstream_url,
            "auth": {"type": "clientCredentials", "issuer": providers.upstream, "clientId": "gateway",
                     "clientSecretEnv": "GW_SECRET", "scopes": ["mcp"]},
            "userAuth": {"type": "oauth", "issuer": providers.upstream, "clientId": "gateway",
                         "clientSecretEnv": "GW_SECRET", "scopes": ["mcp"]}
        }},
        "gateway": {
            "auth": {"resource": gateway_url, "jwt": {"issuer": providers.users},
                     "login": {"clientId": "gateway-login", "clientSecretEnv": "GW_SECRET", "scopes": ["mcp"]}},
            "grants": {"file": dir.join("grants.json"), "keysEnv": "GW_GRANT_KEYS"}
        }
    });
    let path = dir.join("gateway.json");
    std::fs::write(&path, config.to_string()).expect("config");
    let log = dir.join("gateway.log");
    let (gateway, printed) = spawn_gateway(&path, gw_port, &log).await;
    assert_eq!(printed, gateway_url);
    Some(World {
        providers,
        gateway,
        gateway_url,
        upstream_url,
        seen,
        upstream_tokens,
        log,
        dir,
    })
}

async fn spawn_gateway(
    config: &std::path::Path,
    port: u16,
    log: &std::path::Path,
) -> (tokio::process::Child, String) {
    let err = std::fs::File::create(log).expect("log");
    let mut child = tokio::process::Command::new(example("gateway"))
        .args([
            "--config",
            &config.display().to_string(),
            "--http",
            &format!("127.0.0.1:{port}"),
        ])
        .env("GW_SECRET", SECRET)
        .env("GW_GRANT_KEYS", GRANT_KEYS)
        .env("RUST_LOG", "trace")
        .stdout(std::process::Stdio::piped())
        .stderr(err)
        .kill_on_drop(true)
        .spawn()
        .expect("gateway");
    let out = child.stdout.take().expect("stdout");
    let url = tokio::time::timeout(
        Duration::from_secs(60),
        tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(out)).next_line(),
    )
    .await
    .expect("the gateway started")
    .expect("read")
    .expect("a URL");
    (child, url)
}

/// A host of `user` (its bearer `token`) in `era`, declaring URL-mode elicitation if
/// `url_mode`; its elicitations opened in `browser`.
async fn host(
    w: &World,
    token: &str,
    era: EraChoice,
    url_mode: bool,
    browser: Arc<Browser>,
) -> Client {
    let mut config = HttpConfig::new(&w.gateway_url);
    config
        .headers
        .push(("Authorization".into(), format!("Bearer {token}")));
    let mut caps = ClientCapabilities::default();
    if url_mode {
        caps.elicitation = Some(serde_json::from_value(json!({"url": {}})).expect("caps"));
    }
    let options = ClientOptions::default().era(era).capabilities(caps);
    connect_http(config, Opener(browser), options)
        .await
        .expect("host connects")
}

/// A host whose user opens each URL elicitation in their browser and accepts it.
#[derive(Clone)]
struct Opener(Arc<Browser>);

#[async_trait]
impl ClientHandler for Opener {
    async fn elicit(&self, p: ElicitRequestParams) -> Result<ElicitResult, ErrorObject> {
        let url = p
            .url
            .ok_or_else(|| ErrorObject::new(-32602, "form mode not here"))?;
        let page = self.0.visit(&url).await;
        assert!(
            page.body.contains("Connected"),
            "{} {}",
            page.status,
            page.body
        );
        Ok(ElicitResult {
            action: ElicitAction::Accept,
            ..Default::default()
        })
    }
}

async fn whoami(host: &Client) -> Result<CallToolResult, ClientError> {
    host.call_tool("desk__whoami", Default::default())
        .await
        .map(|r| r.result)
}

fn text(r: &CallToolResult) -> String {
    r.content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The connect URL of a `-32042` error.
fn elicitation_url(e: &ErrorObject) -> (String, String) {
    let el = &e.data.as_ref().expect("data")["elicitations"][0];
    assert_eq!(el["mode"], "url");
    (
        el["url"].as_str().expect("url").to_owned(),
        el["elicitationId"].as_str().expect("id").to_owned(),
    )
}

async fn user_token(w: &World, login: &str) -> String {
    user_access_token(
        &w.providers.users,
        "host-app",
        HOST_REDIRECT,
        &w.gateway_url,
        login,
    )
    .await
}

#[tokio::test]
async fn each_user_consents_once_in_the_form_their_host_can_take_and_is_then_themselves() {
    let Some(w) = world(300).await else { return };
    let alice_token = user_token(&w, "alice").await;
    let bob_token = user_token(&w, "bob").await;
    let carol_token = user_token(&w, "carol").await;
    let alice = Arc::new(Browser::new_as("alice"));
    let bob = Arc::new(Browser::new_as("bob"));
    let carol = Arc::new(Browser::new_as("carol"));

    // alice, 2025-11-25 with URL mode: -32042, then the completion notice.
    let a = host(
        &w,
        &alice_token,
        EraChoice::Legacy(Revision::V2025_11_25),
        true,
        alice.clone(),
    )
    .await;
    let mut notices = a.notifications();
    let e = match whoami(&a).await {
        Err(ClientError::Server(e)) => e,
        other => panic!("no elicitation: {other:?}"),
    };
    assert_eq!(e.code, -32042, "{e:?}");
    let (url, id) = elicitation_url(&e);
    assert!(
        url.starts_with(&format!(
            "{}/connect/start?t=",
            w.gateway_url.trim_end_matches("/mcp")
        )),
        "{url}"
    );
    let page = alice.visit(&url).await;
    assert!(
        page.body.contains("Connected"),
        "{} {}",
        page.status,
        page.body
    );
    let done = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            if let Ok(TypedNotification::ElicitationComplete(p)) = notices.recv().await {
                return p.elicitation_id;
            }
        }
    })
    .await
    .expect("the completion was announced");
    assert_eq!(done, id);
    assert_eq!(text(&whoami(&a).await.expect("served")), "alice");

    // bob, 2026 with URL mode: InputRequiredResult; the retry completes the call.
    let b = host(&w, &bob_token, EraChoice::Modern, true, bob.clone()).await;
    assert_eq!(
        text(&whoami(&b).await.expect("served after consent")),
        "bob"
    );

    // carol, 2025-06-18 without URL mode: an error result naming the link.
    let c = host(
        &w,
        &carol_token,
        EraChoice::Legacy(Revision::V2025_06_18),
        false,
        carol.clone(),
    )
    .await;
    let told = whoami(&c).await.expect("answered");
    assert_eq!(told.is_error, Some(true));
    let said = text(&told);
    let link = said
        .split_whitespace()
        .find(|w| w.contains("/connect/start?t="))
        .expect("a link");
    assert!(said.contains("call again"), "{said}");
    assert!(carol.visit(link).await.body.contains("Connected"));
    assert_eq!(text(&whoami(&c).await.expect("served")), "carol");

    // 200 calls, interleaved: each as its own user.
    let before = w.seen.0.lock().expect("seen").len();
    // At most 30 at once: each host session takes 64 unanswered requests.
    let room = Arc::new(tokio::sync::Semaphore::new(30));
    let mut calls = tokio::task::JoinSet::new();
    for n in 0..200 {
        let room = room.clone();
        let (who, h) = match n % 3 {
            0 => ("alice", a.clone()),
            1 => ("bob", b.clone()),
            _ => ("carol", c.clone()),
        };
        calls.spawn(async move {
            let _turn = room.acquire().await;
            (who, whoami(&h).await)
        });
    }
    while let Some(j) = calls.join_next().await {
        let (who, r) = j.expect("joined");
        assert_eq!(text(&r.expect("served")), who);
    }
    let seen = w.seen.0.lock().expect("seen").clone();
    assert_eq!(seen.len() - before, 200);
    for (sub, aud, _) in &seen {
        assert!(["alice", "bob", "carol"].contains(&sub.as_str()), "{sub}");
        assert!(
            aud == &json!(w.upstream_url) || aud == &json!([w.upstream_url]),
            "{aud}"
        );
    }
    // No host token reached the upstream; no upstream token reached a host or the log.
    let upstream_tokens = w.upstream_tokens.lock().expect("tokens").clone();
    for t in [&alice_token, &bob_token, &carol_token] {
        assert!(!upstream_tokens.contains(t), "a host token went upstream");
    }
    let log = std::fs::read_to_string(&w.log).expect("log");
    for t in upstream_tokens
        .iter()
        .chain([&alice_token, &bob_token, &carol_token])
    {
        assert!(!log.contains(t.as_str()), "a token in the gateway's log");
    }
    assert!(upstream_tokens
        .iter()
        .all(|t| jwt_claims(t)["iss"] == json!(w.providers.upstream)));
}
