//! `gateway.cluster.redis`: the state store replicas find each other in (see
//! [`crate::store`]). Its URL comes from the environment or a file (it may hold a
//! password), never the configuration; errors name the key, never the URL.

use std::sync::Arc;
use std::time::Duration;

use crate::store::{ReplicaEntry, StorePeers};

use super::file;
use super::Problem;

/// How long a replica's announcement lasts: it beats every quarter of it, and one that
/// stops is gone within it.
pub const REGISTRY_TTL: Duration = Duration::from_secs(3);

/// The registry `gateway.cluster.redis` describes, for replica `me`.
pub(super) fn registry(
    redis: file::ClusterRedis,
    me: ReplicaEntry,
) -> Result<Arc<StorePeers>, Problem> {
    let at = "gateway.cluster.redis";
    let url = url(&redis, at)?;
    store(url, redis, me, at)
}

fn url(redis: &file::ClusterRedis, at: &str) -> Result<String, Problem> {
    let given = (redis.url_env.clone(), redis.url_file.clone());
    let (url, from) = super::cluster::env_or_file(given.0, given.1, at, ["urlEnv", "urlFile"])?;
    String::from_utf8(url)
        .map(|u| u.trim().to_owned())
        .map_err(|_| Problem::new(from, "not text"))
}

#[cfg(feature = "redis")]
fn store(
    url: String,
    redis: file::ClusterRedis,
    me: ReplicaEntry,
    at: &str,
) -> Result<Arc<StorePeers>, Problem> {
    use crate::store::{RedisStore, RedisStoreOptions};
    let prefix = redis.prefix.unwrap_or_else(|| "mcp-gateway".into());
    let mut options = RedisStoreOptions::new(url, prefix);
    if let Some(t) = redis.timeout_millis {
        options = options.timeout(Duration::from_millis(t.0));
    }
    let store = RedisStore::new(options).map_err(|e| Problem::new(at, e.to_string()))?;
    Ok(StorePeers::new(Arc::new(store), me, REGISTRY_TTL))
}

#[cfg(not(feature = "redis"))]
fn store(
    _: String,
    redis: file::ClusterRedis,
    _: ReplicaEntry,
    at: &str,
) -> Result<Arc<StorePeers>, Problem> {
    let _ = (redis.prefix, redis.timeout_millis, REGISTRY_TTL);
    Err(Problem::new(
        at,
        "this gateway was built without Redis support (build it with feature `redis`)",
    ))
}
