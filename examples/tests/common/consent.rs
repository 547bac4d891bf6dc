//! A gateway whose upstream acts as each user by their own consent (`userAuth` of type
//! `oauth`), with real parts around it: two `oidc-provider` authorization servers (the
//! gateway's users' issuer, and the upstream's), the gateway program (its stderr, at
//! `RUST_LOG=trace`, in a file), and an upstream on HTTP that takes only the upstream
//! issuer's tokens for its own resource, answers `whoami` with the caller's `sub`, and
//! notes every token it is shown.

use std::sync::{Arc, Mutex};

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
use mcp_types::ErrorObject;
use serde_json::{json, Value};

use super::browser::{user_access_token, Browser};
use super::providers::Providers;
use super::{example, free_port};

pub const SECRET: &str = "gateway-secret-for-tests-only";
pub const HOST_REDIRECT: &str = "http://127.0.0.1:9/cb";
/// The API key of a principal no issuer names (`ci-bot`).
pub const CI_KEY: &str = "ci-key-0123456789abcdef";
pub const GRANT_KEYS: &str = "k1:AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE";

/// What the upstream saw of each call: the token's `sub` and `aud`, and the token.
#[derive(Clone, Default)]
pub struct Seen(pub Arc<Mutex<Vec<(String, Value, String)>>>);

impl Seen {
    /// Each call served: the `sub` and `aud` of its token.
    pub fn all(&self) -> Vec<(String, Value)> {
        let calls = self.0.lock().expect("seen");
        calls
            .iter()
            .map(|(s, a, _)| (s.clone(), a.clone()))
            .collect()
    }
}

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

/// The upstream on 127.0.0.1:`port` (its resource `url`): only `issuer`'s tokens for
/// itself; what each call it served was for, and every token it was shown.
pub async fn recording_upstream(
    issuer: &str,
    url: &str,
    port: u16,
) -> (Seen, Arc<Mutex<Vec<String>>>) {
    let seen = Seen::default();
    let upstream_tokens = Arc::new(Mutex::new(Vec::new()));
    let keys = mcp_proxy::jwks::JwksUri::discover(issuer.to_owned());
    let jwt = JwtAuthenticator::new(keys, JwtOptions::new(issuer.to_owned(), url.to_owned()));
    let noting = Noting {
        inner: jwt,
        tokens: upstream_tokens.clone(),
    };
    let resource = ProtectedResource::new(url.to_owned())
        .expect("resource")
        .authorization_server(issuer.to_owned());
    let options = HttpOptions::default().authorization(Authorization::new(noting, resource));
    bind(
        format!("127.0.0.1:{port}").parse().expect("address"),
        Server::new(WhoAmI(seen.clone())),
        options,
    )
    .await
    .expect("upstream binds");
    (seen, upstream_tokens)
}

/// Everything one run holds: the providers, the upstream, the gateway.
pub struct World {
    pub providers: Providers,
    pub gateway: tokio::process::Child,
    pub gateway_url: String,
    pub upstream_url: String,
    pub seen: Seen,
    pub upstream_tokens: Arc<Mutex<Vec<String>>>,
    pub log: std::path::PathBuf,
    pub dir: std::path::PathBuf,
}

impl World {
    /// The gateway stopped and started again on its port, its grants sealed under `keys`
    /// (its log goes on in the same file).
    pub async fn restart(&mut self, keys: &str) {
        let _ = self.gateway.start_kill();
        let _ = self.gateway.wait().await;
        let port: u16 = self
            .gateway_url
            .trim_start_matches("http://127.0.0.1:")
            .trim_end_matches("/mcp")
            .parse()
            .expect("port");
        let (gateway, url) =
            spawn_gateway(&self.dir.join("gateway.json"), port, &self.log, keys).await;
        assert_eq!(url, self.gateway_url);
        self.gateway = gateway;
    }

    /// The file the gateway keeps users' grants in.
    pub fn grants_file(&self) -> std::path::PathBuf {
        self.dir.join("grants.json")
    }
}

impl Drop for World {
    fn drop(&mut self) {
        let _ = self.gateway.start_kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

pub async fn world(ttl: u64) -> Option<World> {
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
    let (seen, upstream_tokens) =
        recording_upstream(&providers.upstream, &upstream_url, up_port).await;
    // The gateway.
    let dir = std::env::temp_dir().join(format!("per-user-oauth-{}-{gw_port}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    // Two upstreams, one server: a grant for one is no grant for the other.
    let desk = json!({
        "url": upstream_url,
        "auth": {"type": "clientCredentials", "issuer": providers.upstream, "clientId": "gateway",
                 "clientSecretEnv": "GW_SECRET", "scopes": ["mcp"]},
        "userAuth": {"type": "oauth", "issuer": providers.upstream, "clientId": "gateway",
                     "clientSecretEnv": "GW_SECRET", "scopes": ["mcp"]}
    });
    // The second is known to the upstream's server by dynamic registration (RFC 7591).
    let mut desk2 = desk.clone();
    desk2["userAuth"] = json!({"type": "oauth", "issuer": providers.upstream, "scopes": ["mcp"]});
    let config = json!({
        "mcpServers": {"desk": desk, "desk2": desk2},
        "gateway": {
            "auth": {"resource": gateway_url, "jwt": {"issuer": providers.users},
                     "apiKeys": [{"name": "ci", "keyEnv": "GW_CI_KEY", "subject": "ci-bot"}],
                     "login": {"clientId": "gateway-login", "clientSecretEnv": "GW_SECRET", "scopes": ["mcp"]}},
            "grants": {"file": dir.join("grants.json"), "keysEnv": "GW_GRANT_KEYS"}
        }
    });
    let path = dir.join("gateway.json");
    std::fs::write(&path, config.to_string()).expect("config");
    let log = dir.join("gateway.log");
    let (gateway, printed) = spawn_gateway(&path, gw_port, &log, GRANT_KEYS).await;
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

pub async fn spawn_gateway(
    config: &std::path::Path,
    port: u16,
    log: &std::path::Path,
    keys: &str,
) -> (tokio::process::Child, String) {
    let err = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .expect("log");
    let mut child = tokio::process::Command::new(example("gateway"))
        .args([
            "--config",
            &config.display().to_string(),
            "--http",
            &format!("127.0.0.1:{port}"),
        ])
        .env("GW_SECRET", SECRET)
        .env("GW_GRANT_KEYS", keys)
        .env("GW_CI_KEY", CI_KEY)
        .env("RUST_LOG", "trace")
        .stdout(std::process::Stdio::piped())
        .stderr(err)
        .kill_on_drop(true)
        .spawn()
        .expect("gateway");
    let url = super::announced_url(&mut child)
        .await
        .expect("the gateway started in time");
    (child, url)
}

/// A host of `user` (its bearer `token`) in `era`, declaring URL-mode elicitation if
/// `url_mode`; its elicitations opened in `browser`.
pub async fn host(
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
pub struct Opener(pub Arc<Browser>);

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

pub async fn whoami(host: &Client) -> Result<CallToolResult, ClientError> {
    host.call_tool("desk__whoami", Default::default())
        .await
        .map(|r| r.result)
}

pub fn text(r: &CallToolResult) -> String {
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
pub fn elicitation_url(e: &ErrorObject) -> (String, String) {
    let el = &e.data.as_ref().expect("data")["elicitations"][0];
    assert_eq!(el["mode"], "url");
    (
        el["url"].as_str().expect("url").to_owned(),
        el["elicitationId"].as_str().expect("id").to_owned(),
    )
}

pub async fn user_token(w: &World, login: &str) -> String {
    user_access_token(
        &w.providers.users,
        "host-app",
        HOST_REDIRECT,
        &w.gateway_url,
        login,
    )
    .await
}
