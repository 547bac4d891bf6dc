//! Where the JWT of a JWT bearer grant (RFC 7523 §2.1) comes from: for workload identity
//! federation, a token a platform (Kubernetes, a cloud's metadata service, a CI runner)
//! issues the workload, read each time it is needed since platforms rotate it; for
//! enterprise-managed authorization, an identity assertion grant the enterprise's
//! identity provider issues for the user ([`super::IdJagExchange`]).

use std::path::PathBuf;

use async_trait::async_trait;

use super::provider::AuthError;

/// Gives the JWT to present in a JWT bearer grant.
#[async_trait]
pub trait GrantAssertion: Send + Sync + 'static {
    /// The assertion for the authorization server whose issuer is `audience`, for a token
    /// for `resource`.
    async fn assertion(&self, audience: &str, resource: &str) -> Result<String, AuthError>;
}

/// An assertion given once (tests, or a caller that renews it itself).
#[derive(Clone)]
pub struct StaticAssertion(pub String);

impl std::fmt::Debug for StaticAssertion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StaticAssertion(..)")
    }
}

#[async_trait]
impl GrantAssertion for StaticAssertion {
    async fn assertion(&self, _audience: &str, _resource: &str) -> Result<String, AuthError> {
        Ok(self.0.clone())
    }
}

/// A token in a file the platform keeps fresh (a projected service account token, say),
/// read again for every grant: workload identity federation.
#[derive(Debug, Clone)]
pub struct AssertionFile(pub PathBuf);

/// At most this much is read from the file: a JWT is a few kilobytes.
const MAX_TOKEN_BYTES: u64 = 64 * 1024;

#[async_trait]
impl GrantAssertion for AssertionFile {
    async fn assertion(&self, _audience: &str, _resource: &str) -> Result<String, AuthError> {
        use tokio::io::AsyncReadExt;
        let unreadable = |e: std::io::Error| {
            AuthError::NotCompleted(format!("assertion file {}: {e}", self.0.display()))
        };
        let file = tokio::fs::File::open(&self.0).await.map_err(unreadable)?;
        let mut text = String::new();
        file.take(MAX_TOKEN_BYTES)
            .read_to_string(&mut text)
            .await
            .map_err(unreadable)?;
        let token = text.trim();
        if token.is_empty() {
            return Err(AuthError::NotCompleted(format!(
                "assertion file {} is empty",
                self.0.display()
            )));
        }
        Ok(token.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_token_file_is_read_each_time_and_trimmed() {
        let dir = std::env::temp_dir().join(format!("mcp-wif-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("token");
        let source = AssertionFile(path.clone());
        assert!(
            source.assertion("https://as", "https://rs").await.is_err(),
            "missing"
        );
        std::fs::write(&path, "first.jwt\n").expect("write");
        assert_eq!(
            source
                .assertion("https://as", "https://rs")
                .await
                .ok()
                .as_deref(),
            Some("first.jwt")
        );
        std::fs::write(&path, "second.jwt").expect("write");
        assert_eq!(
            source
                .assertion("https://as", "https://rs")
                .await
                .ok()
                .as_deref(),
            Some("second.jwt")
        );
        std::fs::write(&path, "  \n").expect("write");
        assert!(
            source.assertion("https://as", "https://rs").await.is_err(),
            "empty"
        );
        let _ = std::fs::remove_dir_all(dir);
    }
}
