//! MCP authorization, client side: what a client needs to find out, on a `401`, where to
//! get a token — the `WWW-Authenticate` challenge, the protected resource's metadata and
//! its authorization server's (see the spec's `basic/authorization`) — and the pieces of
//! the authorization code flow: PKCE, scope selection, the request and the checks of
//! what comes back to the redirect URI. The flows that obtain a token build on these.

mod assertion;
mod challenge;
pub mod discovery;
mod dpop;
mod exchange;
mod grant;
mod grant_assertion;
mod id_jag;
mod loopback;
mod oauth;
mod pkce;
mod provider;
mod request;
mod store;
mod token;

pub use assertion::{ClientKey, ClientKeyError, JWT_BEARER_ASSERTION};
pub use challenge::BearerChallenge;
pub use discovery::{
    discover, AuthorizationServerMetadata, Discovery, DiscoveryError, ProtectedResourceMetadata,
};
pub use dpop::DpopKey;
pub use exchange::{TokenExchange, ACCESS_TOKEN_TYPE, TOKEN_EXCHANGE_GRANT};
pub use grant::JWT_BEARER_GRANT;
pub use grant_assertion::{AssertionFile, GrantAssertion, StaticAssertion};
pub use id_jag::IdJagExchange;
pub use loopback::LoopbackBrowser;
pub use oauth::{AuthorizationHandler, FollowRedirects, OAuth, OAuthOptions};
pub use pkce::{NoRandomness, Pkce};
pub use provider::{AuthError, AuthProvider, Credentials, Refused};
pub use request::{select_scopes, AuthorizationRequest, RedirectError};
pub use store::{FileStore, MemoryStore, TokenStore};
pub use token::{register, request_token, ClientIdentity, Token, TokenError};
