//! [`ConnectDesk`]: the gateway's connect pages, where a user gives an upstream that acts
//! as each user their consent (the spec's URL-mode elicitation for OAuth flows).
//!
//! A request of a user without a grant is answered with a link to `/connect/start` on the
//! gateway's own listener (never the upstream's authorization endpoint), holding a sealed,
//! single-use ticket bound to the user and the upstream. Opened, the page first logs the
//! browser's user in at the gateway's own issuer (authorization code with PKCE, the token
//! checked by the gateway's own authenticator) and compares that user with the ticket's
//! (the spec's "Phishing" check); only then does it send the browser to the upstream's
//! authorization server (code with PKCE). The code that comes back to `/connect/callback`
//! becomes the user's grant, sealed in the [`GrantVault`], and the host that was sent the
//! link is told the elicitation completed. Every step is tied to the browser that began
//! the flow by a cookie; a step from another browser binds nothing.

mod clients;
mod flows;
mod ticket;
mod web;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use http::{Response, StatusCode};
use mcp_client::auth::{
    discovery, AuthorizationRequest, AuthorizationServerMetadata, ClientIdentity, TokenError,
};
use mcp_server::auth::Principal;
use mcp_server::http::{HttpBody, Pages};
use mcp_server::seal::unix_now;
use parking_lot::RwLock;
use ring::rand::{SecureRandom, SystemRandom};
use tokio::sync::OnceCell;

pub use self::clients::{ConnectLogin, ConsentClient};
use self::clients::{Registration, UpstreamClient};
use self::flows::{Flow, Step};
use self::ticket::{Ticket, Tickets};
use self::web::{cookie, page, query_value, redirect, COOKIE};
use super::grants::{grant_place, Grant, GrantVault};
use super::mailbox::ElicitationMailbox;
use super::Consent;

/// The path the pages are served under.
pub const CONNECT_PATH: &str = "/connect";

/// The connect pages and what they share with the upstreams' credentials.
pub struct ConnectDesk {
    base: String,
    vault: GrantVault,
    login: ConnectLogin,
    login_metadata: OnceCell<AuthorizationServerMetadata>,
    upstreams: RwLock<HashMap<String, Arc<UpstreamClient>>>,
    tickets: Tickets,
    pub(crate) mailbox: ElicitationMailbox,
    /// The other replicas, told of a completion whose host is not here.
    replicas: std::sync::OnceLock<mcp_server::http::ReplicaLink>,
    ticket_life: Duration,
    random: SystemRandom,
}

impl std::fmt::Debug for ConnectDesk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectDesk")
            .field("base", &self.base)
            .field("login", &self.login)
            .finish_non_exhaustive()
    }
}

impl ConnectDesk {
    /// Connect pages served at `base` (the gateway's public origin, `https://gw.example`),
    /// keeping grants in `vault` and logging users in with `login`.
    pub fn new(base: impl Into<String>, vault: GrantVault, login: ConnectLogin) -> Arc<Self> {
        Arc::new(ConnectDesk {
            base: base.into().trim_end_matches('/').to_owned(),
            vault,
            login,
            login_metadata: OnceCell::new(),
            upstreams: RwLock::new(HashMap::new()),
            tickets: Tickets::new(),
            mailbox: ElicitationMailbox::default(),
            replicas: std::sync::OnceLock::new(),
            ticket_life: Duration::from_secs(600),
            random: SystemRandom::new(),
        })
    }

    /// Tells `replicas` of a completed consent whose host waits at another replica (the
    /// one that answered its request), so that it hears
    /// `notifications/elicitation/complete` wherever the browser finished.
    pub fn tell_replicas(&self, replicas: mcp_server::http::ReplicaLink) {
        let _ = self.replicas.set(replicas);
    }

    /// Where the upstreams' authorization servers send the browser back: register it
    /// with each as the gateway client's redirect URI.
    pub fn callback_uri(&self) -> String {
        format!("{}{CONNECT_PATH}/callback", self.base)
    }

    /// Where the gateway's own issuer sends the browser back after a login.
    pub fn login_uri(&self) -> String {
        format!("{}{CONNECT_PATH}/login", self.base)
    }

    /// The vault the grants are kept in.
    pub fn vault(&self) -> &GrantVault {
        &self.vault
    }

    /// Takes upstream `key` (its resource `resource`), the gateway known to its
    /// authorization server (`issuer`, else discovered) as `client` says, asking `scope`.
    pub(crate) fn register(
        &self,
        key: &str,
        resource: &str,
        client: ConsentClient,
        scope: Option<String>,
        issuer: Option<String>,
    ) -> Arc<UpstreamClient> {
        let u = Arc::new(UpstreamClient {
            resource: resource.to_owned(),
            source: client,
            scope,
            issuer,
            metadata: OnceCell::new(),
            client: OnceCell::new(),
        });
        self.upstreams.write().insert(key.to_owned(), u.clone());
        u
    }

    /// The gateway's dynamic registration at upstream `key`'s authorization server
    /// (`meta`): the one kept, else a new one, kept.
    async fn registered(
        &self,
        key: &str,
        meta: &AuthorizationServerMetadata,
    ) -> Result<ClientIdentity, TokenError> {
        let place = format!("registration:{key}");
        let kept = self.vault.get_raw(&place).await.ok().flatten();
        if let Some(r) = kept.and_then(|b| serde_json::from_slice::<Registration>(&b).ok()) {
            let mut client = ClientIdentity::public(r.client_id);
            client.client_secret = r.client_secret;
            client.auth_method = r.auth_method;
            return Ok(client);
        }
        let client =
            mcp_client::auth::register(meta, "mcp-proxy gateway", &self.callback_uri()).await?;
        tracing::info!(upstream = %key, "registered at the upstream's authorization server for users' consents");
        let r = Registration {
            client_id: client.client_id.clone(),
            client_secret: client.client_secret.clone(),
            auth_method: client.auth_method.clone(),
        };
        if let Ok(bytes) = serde_json::to_vec(&r) {
            if let Err(e) = self.vault.put_raw(&place, &bytes).await {
                tracing::warn!(upstream = %key, "the registration is not kept: {e}");
            }
        }
        Ok(client)
    }

    /// A new consent for `principal` at `upstream`: a single-use link to the connect page.
    pub(crate) fn consent(&self, principal: &Principal, upstream: &str) -> Result<Consent, String> {
        let ticket = Ticket {
            place: grant_place(principal, upstream),
            upstream: upstream.to_owned(),
            elicitation: self.random_hex()?,
            expires: unix_now() + self.ticket_life.as_secs(),
            nonce: self.random_hex()?,
        };
        let sealed = self
            .tickets
            .seal(self.vault.keys(), &ticket)
            .ok_or("cannot seal a connect ticket")?;
        let url = format!("{}{CONNECT_PATH}/start?t={sealed}", self.base);
        Ok(Consent::new(upstream, ticket.elicitation, url))
    }

    /// How long a connect link stays good.
    pub(crate) fn ticket_life(&self) -> Duration {
        self.ticket_life
    }

    fn random_hex(&self) -> Result<String, String> {
        let mut b = [0u8; 16];
        self.random
            .fill(&mut b)
            .map_err(|_| "no system randomness")?;
        Ok(b.iter().map(|x| format!("{x:02x}")).collect())
    }

    async fn login_metadata(&self) -> Result<&AuthorizationServerMetadata, TokenError> {
        self.login_metadata
            .get_or_try_init(|| async {
                discovery::server_metadata(&self.login.issuer)
                    .await
                    .map_err(|e| TokenError::Transport(e.to_string()))
            })
            .await
    }

    /// `GET /connect/start?t=…`: the ticket checked and spent, the browser sent to log in.
    async fn start(&self, parts: &http::request::Parts) -> Response<HttpBody> {
        let query = parts.uri.query().unwrap_or_default();
        let Some(text) = query_value(query, "t") else {
            return refused("This link is incomplete.");
        };
        let ticket = match self.tickets.open(self.vault.keys(), &text, unix_now()) {
            Ok(t) => t,
            Err(why) => return refused(&why.to_string()),
        };
        if !self.upstreams.read().contains_key(&ticket.upstream) {
            return refused("This link names no upstream of this gateway.");
        }
        if let Err(why) = self
            .tickets
            .use_once(&self.vault, &ticket, self.ticket_life)
            .await
        {
            return refused(&why.to_string());
        }
        let meta = match self.login_metadata().await {
            Ok(m) => m,
            Err(e) => return unavailable("the gateway's sign-in", &e),
        };
        let request = AuthorizationRequest::new(
            meta,
            &self.login.client.client_id,
            &self.login_uri(),
            &self.login.resource,
            self.login.scope.as_deref(),
        );
        let (Ok(request), Ok(browser)) = (request, self.browser(parts)) else {
            return unavailable("the gateway", &"no system randomness");
        };
        let to = request.url.clone();
        let flow = Flow::new(Step::Login, ticket, request, browser.clone());
        if let Err(e) = flows::put(&self.vault, flow).await {
            return unavailable("the gateway's store", &e);
        }
        redirect(&to, Some((&browser, self.base.starts_with("https://"))))
    }

    /// The browser's flow cookie, or a new one.
    fn browser(&self, parts: &http::request::Parts) -> Result<String, String> {
        match cookie(&parts.headers, COOKIE) {
            Some(c) if c.len() == 32 && c.bytes().all(|b| b.is_ascii_hexdigit()) => Ok(c),
            _ => self.random_hex(),
        }
    }

    /// The flow a return from an authorization server continues, at `step`, from the
    /// browser that began it.
    async fn returning(
        &self,
        parts: &http::request::Parts,
        step: Step,
    ) -> Result<Flow, Box<Response<HttpBody>>> {
        let query = parts.uri.query().unwrap_or_default();
        let taken = match query_value(query, "state") {
            Some(s) => flows::take(&self.vault, &s).await,
            None => Ok(None),
        };
        let taken = taken.map_err(|e| Box::new(unavailable("the gateway's store", &e)))?;
        let flow = taken.filter(|f| f.step == step).ok_or_else(|| {
            Box::new(refused(
                "This sign-in is unknown, expired, or was finished already.",
            ))
        })?;
        if cookie(&parts.headers, COOKIE).as_deref() != Some(flow.browser.as_str()) {
            tracing::warn!(upstream = %flow.ticket.upstream, "connect flow returned in another browser: nothing bound");
            return Err(Box::new(page(
                StatusCode::FORBIDDEN,
                "Not linked",
                "This sign-in began in another browser. Nothing was linked to any account.",
            )));
        }
        Ok(flow)
    }

    /// The code a return carries, as `request` checks it.
    fn code(
        &self,
        parts: &http::request::Parts,
        request: &AuthorizationRequest,
        meta: &AuthorizationServerMetadata,
    ) -> Result<String, Box<Response<HttpBody>>> {
        let here = format!(
            "{}{}",
            self.base,
            parts.uri.path_and_query().map_or("", |p| p.as_str())
        );
        let iss = meta.authorization_response_iss_parameter_supported == Some(true);
        request.code_from(&here, iss).map_err(|e| {
            Box::new(page(
                StatusCode::BAD_REQUEST,
                "Not linked",
                &format!("{e}. Nothing was linked."),
            ))
        })
    }

    /// `GET /connect/login?code&state`: who logged in, compared with whom the link was
    /// for; the same user is sent to the upstream's authorization server.
    async fn logged_in(&self, parts: &http::request::Parts) -> Response<HttpBody> {
        let flow = match self.returning(parts, Step::Login).await {
            Ok(f) => f,
            Err(r) => return *r,
        };
        let meta = match self.login_metadata().await {
            Ok(m) => m,
            Err(e) => return unavailable("the gateway's sign-in", &e),
        };
        let code = match self.code(parts, &flow.request, meta) {
            Ok(c) => c,
            Err(r) => return *r,
        };
        let params = [
            ("grant_type", "authorization_code"),
            ("code", code.as_str()),
            ("redirect_uri", flow.request.redirect_uri.as_str()),
            ("code_verifier", flow.request.code_verifier()),
            ("resource", self.login.resource.as_str()),
        ];
        let token = match mcp_client::auth::request_token(meta, &self.login.client, &params).await {
            Ok(t) => t,
            Err(e) => return unavailable("the gateway's sign-in", &e),
        };
        let Some(principal) = self.who(&token.access_token).await else {
            return page(
                StatusCode::FORBIDDEN,
                "Not linked",
                "The sign-in gave no user this gateway knows. Nothing was linked.",
            );
        };
        if grant_place(&principal, &flow.ticket.upstream) != flow.ticket.place {
            tracing::warn!(upstream = %flow.ticket.upstream, "connect link opened by another user than the one it was made for: nothing bound");
            return page(
                StatusCode::FORBIDDEN,
                "Not linked",
                "This link was made for another user than the one signed in here. Nothing was linked to either account: ask the person who sent it to open it themselves.",
            );
        }
        let Some(upstream) = self.upstreams.read().get(&flow.ticket.upstream).cloned() else {
            return refused("This link names no upstream of this gateway.");
        };
        let meta = match upstream.metadata().await {
            Ok(m) => m,
            Err(e) => {
                return unavailable(
                    &format!("upstream `{}`'s authorization server", flow.ticket.upstream),
                    &e,
                )
            }
        };
        let client = match upstream.client(self, &flow.ticket.upstream, meta).await {
            Ok(c) => c,
            Err(e) => {
                let what = format!("upstream `{}`'s authorization server", flow.ticket.upstream);
                return unavailable(&what, &e);
            }
        };
        let Ok(request) = AuthorizationRequest::new(
            meta,
            &client.client_id,
            &self.callback_uri(),
            &upstream.resource,
            upstream.scope.as_deref(),
        ) else {
            return unavailable("the gateway", &"no system randomness");
        };
        let to = request.url.clone();
        let next = Flow::new(Step::Consent, flow.ticket, request, flow.browser);
        if let Err(e) = flows::put(&self.vault, next).await {
            return unavailable("the gateway's store", &e);
        }
        redirect(&to, None)
    }

    /// The principal a token of the gateway's own issuer stands for.
    async fn who(&self, token: &str) -> Option<Principal> {
        let mut req = http::Request::new(());
        let value = http::HeaderValue::from_str(&format!("Bearer {token}")).ok()?;
        req.headers_mut().insert(http::header::AUTHORIZATION, value);
        let (parts, ()) = req.into_parts();
        self.login.authorization.authenticate(&parts).await.ok()
    }

    /// `GET /connect/callback?code&state`: the upstream's code becomes the user's grant.
    async fn callback(&self, parts: &http::request::Parts) -> Response<HttpBody> {
        let flow = match self.returning(parts, Step::Consent).await {
            Ok(f) => f,
            Err(r) => return *r,
        };
        let upstream_key = flow.ticket.upstream.clone();
        let Some(upstream) = self.upstreams.read().get(&upstream_key).cloned() else {
            return refused("This link names no upstream of this gateway.");
        };
        let meta = match upstream.metadata().await {
            Ok(m) => m,
            Err(e) => {
                return unavailable(
                    &format!("upstream `{upstream_key}`'s authorization server"),
                    &e,
                )
            }
        };
        let code = match self.code(parts, &flow.request, meta) {
            Ok(c) => c,
            Err(r) => return *r,
        };
        let params = [
            ("grant_type", "authorization_code"),
            ("code", code.as_str()),
            ("redirect_uri", flow.request.redirect_uri.as_str()),
            ("code_verifier", flow.request.code_verifier()),
            ("resource", upstream.resource.as_str()),
        ];
        let client = match upstream.client(self, &upstream_key, meta).await {
            Ok(c) => c,
            Err(e) => {
                let what = format!("upstream `{upstream_key}`'s authorization server");
                return unavailable(&what, &e);
            }
        };
        let token = match mcp_client::auth::request_token(meta, client, &params).await {
            Ok(t) => t,
            Err(e) => {
                return unavailable(
                    &format!("upstream `{upstream_key}`'s authorization server"),
                    &e,
                )
            }
        };
        if let Err(e) = self.vault.put(&flow.ticket.place, &Grant::of(&token)).await {
            tracing::error!(upstream = %upstream_key, "grant not kept: {e}");
            return page(
                StatusCode::SERVICE_UNAVAILABLE,
                "Not linked",
                "The gateway could not keep the grant. Try again later.",
            );
        }
        tracing::info!(upstream = %upstream_key, "a user linked their account");
        let id = &flow.ticket.elicitation;
        if !self.mailbox.complete(id).await {
            if let Some(replicas) = self.replicas.get() {
                replicas.tell(crate::aggregator::elicitation_notice(&upstream_key, id));
            }
        }
        page(
            StatusCode::OK,
            "Connected",
            &format!("Upstream `{upstream_key}` now acts as you through the gateway. Return to your app and try again."),
        )
    }

    /// Forgets the grant the user `subject` of `issuer` (default: the issuer users log in
    /// at) gave for `upstream`; whether there was one. The gateway asks the user again at
    /// their next request there (a token already held lasts until it expires; revoke the
    /// grant at the upstream's authorization server as well to end it sooner).
    pub async fn forget(
        &self,
        subject: &str,
        issuer: Option<&str>,
        upstream: &str,
    ) -> Result<bool, super::GrantStoreError> {
        let issuer = issuer.unwrap_or(&self.login.issuer);
        let mut claims = serde_json::Map::new();
        claims.insert("iss".into(), serde_json::Value::String(issuer.to_owned()));
        let principal = Principal::new(subject).with_claims(claims);
        self.vault.forget(&grant_place(&principal, upstream)).await
    }

    /// A new grant for `upstream` from `grant`'s refresh token.
    pub(crate) async fn refresh(&self, upstream: &str, refresh: &str) -> Result<Grant, TokenError> {
        let u = self
            .upstreams
            .read()
            .get(upstream)
            .cloned()
            .ok_or(TokenError::NoEndpoint("upstream registered for consent"))?;
        let meta = u.metadata().await?;
        let params = [
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh),
            ("resource", u.resource.as_str()),
        ];
        let client = u.client(self, upstream, meta).await?;
        let token = mcp_client::auth::request_token(meta, client, &params).await?;
        let mut grant = Grant::of(&token);
        // A server that does not rotate refresh tokens keeps the one it gave.
        if grant.refresh_token.is_none() {
            grant.refresh_token = Some(refresh.to_owned());
        }
        Ok(grant)
    }
}

/// The answer for a link that cannot be used: why, and that nothing was bound.
fn refused(why: &str) -> Response<HttpBody> {
    page(
        StatusCode::BAD_REQUEST,
        "Not linked",
        &format!("{why} Nothing was linked. Call the tool again for a new link."),
    )
}

/// The answer when `what` could not be reached.
fn unavailable(what: &str, e: &dyn std::fmt::Display) -> Response<HttpBody> {
    tracing::warn!("connect page: {what} failed: {e}");
    page(
        StatusCode::BAD_GATEWAY,
        "Not linked",
        &format!("{what} could not be reached. Nothing was linked; try again later."),
    )
}

/// The pages of a [`ConnectDesk`].
#[async_trait]
impl Pages for ConnectDesk {
    fn prefix(&self) -> &str {
        CONNECT_PATH
    }

    async fn serve(&self, parts: &http::request::Parts) -> Response<HttpBody> {
        if parts.method != http::Method::GET {
            return page(StatusCode::METHOD_NOT_ALLOWED, "Not here", "Only GET.");
        }
        match parts.uri.path().strip_prefix(CONNECT_PATH) {
            Some("/start") => self.start(parts).await,
            Some("/login") => self.logged_in(parts).await,
            Some("/callback") => self.callback(parts).await,
            _ => page(StatusCode::NOT_FOUND, "Not here", "No such page."),
        }
    }
}
