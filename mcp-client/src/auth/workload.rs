//! Where a workload's own identity token comes from, for the JWT bearer grant (workload
//! identity federation): a platform (Kubernetes, a cloud's metadata service, a CI
//! runner) issues the workload a short-lived JWT, and the authorization server trusts
//! that platform's issuer. The token is read each time it is needed: platforms rotate it.

use std::path::PathBuf;

use async_trait::async_trait;

use super::provider::AuthError;

/// Gives the workload's current identity token (a JWT) for an authorization server.
#[async_trait]
pub trait WorkloadToken: Send + Sync + 'static {
    /// The token to present to the authorization server whose issuer is `audience`.
    async fn token(&self, audience: &str) -> Result<String, AuthError>;
}

/// A token given once (tests, or a caller that renews it itself).
#[derive(Clone)]
pub struct StaticWorkloadToken(pub String);

impl std::fmt::Debug for StaticWorkloadToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StaticWorkloadToken(..)")
    }
}

#[async_trait]
impl WorkloadToken for StaticWorkloadToken {
    async fn token(&self, _audience: &str) -> Result<String, AuthError> {
        Ok(self.0.clone())
    }
}

/// A token in a file the platform keeps fresh (a projected service account token, say),
/// read again for every grant.
#[derive(Debug, Clone)]
pub struct WorkloadTokenFile(pub PathBuf);

/// At most this much is read from the file: a JWT is a few kilobytes.
const MAX_TOKEN_BYTES: u64 = 64 * 1024;

#[async_trait]
impl WorkloadToken for WorkloadTokenFile {
    async fn token(&self, _audience: &str) -> Result<String, AuthError> {
        use tokio::io::AsyncReadExt;
        let unreadable = |e: std::io::Error| {
            AuthError::NotCompleted(format!("workload token {}: {e}", self.0.display()))
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
                "workload token {} is empty",
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
        let source = WorkloadTokenFile(path.clone());
        assert!(source.token("https://as").await.is_err(), "missing");
        std::fs::write(&path, "first.jwt\n").expect("write");
        assert_eq!(
            source.token("https://as").await.ok().as_deref(),
            Some("first.jwt")
        );
        std::fs::write(&path, "second.jwt").expect("write");
        assert_eq!(
            source.token("https://as").await.ok().as_deref(),
            Some("second.jwt")
        );
        std::fs::write(&path, "  \n").expect("write");
        assert!(source.token("https://as").await.is_err(), "empty");
        let _ = std::fs::remove_dir_all(dir);
    }
}
