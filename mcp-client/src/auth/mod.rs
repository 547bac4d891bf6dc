//! MCP authorization, client side: what a client needs to find out, on a `401`, where to
//! get a token — the `WWW-Authenticate` challenge, the protected resource's metadata and
//! its authorization server's (see the spec's `basic/authorization`). The flows that
//! obtain a token build on these.

mod challenge;
pub mod discovery;

pub use challenge::BearerChallenge;
pub use discovery::{
    discover, AuthorizationServerMetadata, Discovery, DiscoveryError, ProtectedResourceMetadata,
};
