//! `gateway.cluster`: what replicas of one gateway share, so that an id one of them hands a
//! host is known for genuine, and for whose, by every other.
//!
//! ```json
//! "cluster": {"replicaEnv": "GW_REPLICA",
//!             "keys": [{"name": "2026-12", "secretEnv": "GW_SEAL_KEY"},
//!                      {"name": "2026-11", "secretFile": "/run/secrets/gw-seal-2026-11"}]}
//! ```
//!
//! Secrets come from the environment or a file, never the configuration itself, which is
//! often shared more widely than a key should be.

use std::collections::BTreeMap;
use std::sync::Arc;

use mcp_server::http::{HttpOptions, Peers, ReplicaLink, StaticPeers};

use crate::store::{ReplicaEntry, StoreHandover, StorePeers};
use crate::AggregatorOptions;
use mcp_server::seal::{ReplicaId, SealKey, Sealer, MIN_SECRET_LEN};

use crate::placement::GatewayPlacement;

use super::file;
use super::{join, Problem};

/// What `gateway.cluster` makes: the listener's options, and with `redis` the registry
/// and the session handover.
pub(super) struct Clustered {
    pub(super) http: HttpOptions,
    pub(super) registry: Option<Arc<StorePeers>>,
    pub(super) handover: Option<Arc<StoreHandover>>,
}

/// What `gateway.cluster` describes, for the aggregator (its sealer and, with peers, the
/// link to the other replicas) and for the listener (`http` given the sealer and, with
/// peers, them and the gateway's placement).
pub(super) fn cluster(
    mut cluster: file::Cluster,
    options: &mut AggregatorOptions,
    http: HttpOptions,
    config_digest: &str,
) -> Result<Clustered, Problem> {
    let at = "gateway.cluster";
    let listed = cluster.peers.as_ref().map(peers).transpose()?;
    let redis = cluster.redis.take();
    let advertise = cluster.advertise.take();
    if listed.is_some() && redis.is_some() {
        return Err(Problem::new(
            join(at, "redis"),
            "give `peers` or `redis`, not both",
        ));
    }
    let sealer = sealer(cluster)?;
    options.sealer = Some(sealer.clone());
    let mut http = http.sealer(sealer.clone());
    let mut handover = None;
    let (peers, registry): (Option<Arc<dyn Peers>>, _) = match (listed, redis) {
        (Some(p), _) => (Some(Arc::new(p)), None),
        (None, Some(r)) => {
            let me = ReplicaEntry::new(sealer.replica(), advertised(advertise)?, config_digest);
            let registry = super::cluster_store::registry(r, me)?;
            let made = StoreHandover::new(
                registry.store(),
                sealer.replica(),
                http.session_idle_timeout,
                registry.lease(),
            );
            http = http.session_handover(made.clone());
            handover = Some(made);
            (Some(registry.clone() as Arc<dyn Peers>), Some(registry))
        }
        (None, None) => (None, None),
    };
    if let Some(p) = peers {
        let link = ReplicaLink::new(p.clone(), sealer.clone(), http.path.clone());
        options.replicas = Some(link);
        let placement = GatewayPlacement::new(sealer);
        http = http.peers(p).placement(Arc::new(placement));
    }
    Ok(Clustered {
        http,
        registry,
        handover,
    })
}

/// `gateway.cluster.advertise`, required with `redis`.
fn advertised(advertise: Option<String>) -> Result<String, Problem> {
    let at = "gateway.cluster.advertise";
    let given = advertise.ok_or_else(|| {
        Problem::new(
            at,
            "required with `redis`: this replica's http://host:port as the others reach it",
        )
    })?;
    let ok = given
        .parse::<http::Uri>()
        .ok()
        .is_some_and(|u| u.scheme_str() == Some("http") && u.authority().is_some());
    match ok {
        true => Ok(given),
        false => Err(Problem::new(
            at,
            "must be the replica's base URL: http://host:port",
        )),
    }
}

/// `gateway.cluster.peers`, each number and address checked.
fn peers(map: &BTreeMap<String, String>) -> Result<StaticPeers, Problem> {
    let mut peers = StaticPeers::new();
    for (n, address) in map {
        let at = format!("gateway.cluster.peers.{n}");
        let replica = n.parse::<u16>().map_err(|_| {
            Problem::new(
                at.clone(),
                "a replica's number, from 0 to 65535, is the key",
            )
        })?;
        let uri = address
            .parse::<http::Uri>()
            .ok()
            .filter(|u| u.scheme_str() == Some("http") && u.authority().is_some())
            .filter(|u| u.path_and_query().is_none_or(|p| p.as_str() == "/"))
            .ok_or_else(|| Problem::new(at, "must be the replica's base URL: http://host:port"))?;
        peers = peers.with(ReplicaId(replica), uri);
    }
    Ok(peers)
}

/// The sealer `gateway.cluster` describes.
fn sealer(cluster: file::Cluster) -> Result<Arc<Sealer>, Problem> {
    let at = "gateway.cluster";
    let file::Cluster {
        replica,
        replica_env,
        keys,
        peers: _,
        redis: _,
        advertise: _,
    } = cluster;
    let replica = match (replica, replica_env) {
        (Some(n), None) => ReplicaId(u16::try_from(n.0).unwrap_or(u16::MAX)),
        (None, Some(var)) => replica_from_env(&var, at)?,
        (None, None) => {
            return Err(Problem::new(
                at,
                "needs `replica` or `replicaEnv`: each replica's own number",
            ))
        }
        (Some(_), Some(_)) => {
            return Err(Problem::new(
                join(at, "replicaEnv"),
                "give `replica` or `replicaEnv`, not both",
            ))
        }
    };
    let keys = keys.unwrap_or_default();
    if keys.is_empty() {
        return Err(Problem::new(join(at, "keys"), "needs at least one key"));
    }
    let mut sealing = Vec::with_capacity(keys.len());
    for (n, key) in keys.into_iter().enumerate() {
        sealing.push(key_of(key, &format!("{at}.keys[{n}]"))?);
    }
    Sealer::new(sealing, replica)
        .map(Arc::new)
        .map_err(|e| Problem::new(join(at, "keys"), e.to_string()))
}

fn replica_from_env(var: &str, at: &str) -> Result<ReplicaId, Problem> {
    let at = join(at, "replicaEnv");
    let text = std::env::var(var)
        .map_err(|_| Problem::new(at.clone(), format!("environment variable {var} is not set")))?;
    text.trim().parse::<u16>().map(ReplicaId).map_err(|_| {
        Problem::new(
            at,
            format!("environment variable {var} must hold a number from 0 to 65535"),
        )
    })
}

/// A value given by the environment variable `env` names or in the file `file` names
/// (its trailing whitespace not part of it), one of the two, as `names` call them in the
/// object at `at`; and where it was found. Errors never hold the value.
pub(super) fn env_or_file(
    env: Option<String>,
    file: Option<String>,
    at: &str,
    [env_key, file_key]: [&str; 2],
) -> Result<(Vec<u8>, String), Problem> {
    match (env, file) {
        (Some(var), None) => {
            let value = std::env::var(&var).map_err(|_| {
                Problem::new(
                    join(at, env_key),
                    format!("environment variable {var} is not set"),
                )
            })?;
            Ok((value.into_bytes(), join(at, env_key)))
        }
        (None, Some(path)) => {
            let mut value = std::fs::read(&path).map_err(|e| {
                Problem::new(join(at, file_key), format!("cannot read {path}: {e}"))
            })?;
            while value.last().is_some_and(u8::is_ascii_whitespace) {
                value.pop();
            }
            Ok((value, join(at, file_key)))
        }
        (None, None) => Err(Problem::new(
            at,
            format!("needs `{env_key}` or `{file_key}` (one of them)"),
        )),
        (Some(_), Some(_)) => Err(Problem::new(
            join(at, file_key),
            format!("give `{env_key}` or `{file_key}`, not both"),
        )),
    }
}

/// One key, its secret read. Errors name the key and where its secret was to be found,
/// never the secret.
fn key_of(key: file::ClusterKey, at: &str) -> Result<SealKey, Problem> {
    let file::ClusterKey {
        name,
        secret_env,
        secret_file,
    } = key;
    let name =
        name.ok_or_else(|| Problem::new(join(at, "name"), "required: names the key in logs"))?;
    let (secret, from) = env_or_file(secret_env, secret_file, at, ["secretEnv", "secretFile"])?;
    SealKey::new(name.clone(), &secret).map_err(|_| {
        Problem::new(
            from,
            format!("key `{name}` needs a secret of at least {MIN_SECRET_LEN} bytes"),
        )
    })
}

#[cfg(test)]
mod tests {
    use crate::config::parse;
    use mcp_server::seal::{Purpose, ReplicaId};

    /// A file holding `secret`, named after the test (tests run at once).
    fn secret_file(test: &str, secret: &str) -> String {
        let path = std::env::temp_dir().join(format!(
            "mcp-proxy-cluster-{test}-{}.key",
            std::process::id()
        ));
        std::fs::write(&path, secret).expect("write the secret");
        path.display().to_string()
    }

    fn gateway_with(cluster: &str) -> String {
        format!(r#"{{"mcpServers": {{}}, "gateway": {{"cluster": {cluster}}}}}"#)
    }

    #[test]
    fn replicas_given_the_same_keys_open_each_others_ids() {
        let new = secret_file("new", &format!("{}\n", "n".repeat(48)));
        let old = secret_file("old", &"o".repeat(32));
        let one = gateway_with(&format!(
            r#"{{"replica": 1, "keys": [{{"name": "new", "secretFile": {new:?}}}, {{"name": "old", "secretFile": {old:?}}}]}}"#
        ));
        // Cargo gives a test its package's version in the environment: 0 here.
        let other = gateway_with(&format!(
            r#"{{"replicaEnv": "CARGO_PKG_VERSION_MAJOR", "keys": [{{"name": "new", "secretFile": {new:?}}}]}}"#
        ));
        let a = parse(&one, "c.json")
            .expect("valid")
            .http
            .sealer
            .expect("a sealer");
        let b = parse(&other, "c.json")
            .expect("valid")
            .http
            .sealer
            .expect("a sealer");
        assert_eq!((a.replica(), b.replica()), (ReplicaId(1), ReplicaId(0)));
        let t = a.seal(Purpose::Session, 0, b"x").expect("sealed");
        assert_eq!(
            b.open(Purpose::Session, &t).expect("opens").replica,
            ReplicaId(1)
        );
        // The trailing newline of the file is not part of the key.
        let same = secret_file("same", &"n".repeat(48));
        let trimmed = gateway_with(&format!(
            r#"{{"replica": 2, "keys": [{{"name": "n", "secretFile": {same:?}}}]}}"#
        ));
        let c = parse(&trimmed, "c.json")
            .expect("valid")
            .http
            .sealer
            .expect("a sealer");
        assert!(c.open(Purpose::Session, &t).is_ok());
        for f in [new, old, same] {
            let _ = std::fs::remove_file(f);
        }
    }

    #[test]
    fn cluster_mistakes_name_the_key_and_never_the_secret() {
        let short = secret_file("short", "a short secret, not 32 bytes");
        let good = secret_file("good", &"g".repeat(40));
        for (bad, at) in [
            (r#"{"replica": 1}"#.to_owned(), "gateway.cluster.keys"),
            (r#"{"replica": 1, "keys": []}"#.to_owned(), "gateway.cluster.keys"),
            (
                format!(r#"{{"keys": [{{"name": "k", "secretFile": {good:?}}}]}}"#),
                "gateway.cluster",
            ),
            (
                format!(
                    r#"{{"replica": 1, "replicaEnv": "X", "keys": [{{"name": "k", "secretFile": {good:?}}}]}}"#
                ),
                "gateway.cluster.replicaEnv",
            ),
            (
                format!(
                    r#"{{"replicaEnv": "CARGO_PKG_NAME", "keys": [{{"name": "k", "secretFile": {good:?}}}]}}"#
                ),
                "gateway.cluster.replicaEnv",
            ),
            (
                r#"{"replica": 70000, "keys": [{"name": "k", "secretEnv": "X"}]}"#.to_owned(),
                "gateway.cluster.replica",
            ),
            (
                r#"{"replica": 1, "keys": [{"name": "k", "secretEnv": "MCP_PROXY_TEST_UNSET_VAR"}]}"#
                    .to_owned(),
                "gateway.cluster.keys[0].secretEnv",
            ),
            (
                r#"{"replica": 1, "keys": [{"name": "k", "secretFile": "/nonexistent/key"}]}"#
                    .to_owned(),
                "gateway.cluster.keys[0].secretFile",
            ),
            (
                format!(r#"{{"replica": 1, "keys": [{{"name": "k", "secretFile": {short:?}}}]}}"#),
                "gateway.cluster.keys[0].secretFile",
            ),
            (
                r#"{"replica": 1, "keys": [{"name": "k"}]}"#.to_owned(),
                "gateway.cluster.keys[0]",
            ),
            (
                format!(r#"{{"replica": 1, "keys": [{{"secretFile": {good:?}}}]}}"#),
                "gateway.cluster.keys[0].name",
            ),
            (
                format!(
                    r#"{{"replica": 1, "keys": [{{"name": "a", "secretFile": {good:?}}}, {{"name": "b", "secretFile": {good:?}}}]}}"#
                ),
                "gateway.cluster.keys",
            ),
            (
                format!(r#"{{"replica": 1, "keys": [{{"name": "k", "secret": "inline secrets are refused", "secretFile": {good:?}}}]}}"#),
                "gateway.cluster.keys[0].secret",
            ),
            (
                format!(r#"{{"replica": 1, "keys": [{{"name": "k", "secretFile": {good:?}}}], "peers": {{"two": "http://10.0.0.2:80"}}}}"#),
                "gateway.cluster.peers.two",
            ),
            (
                format!(r#"{{"replica": 1, "keys": [{{"name": "k", "secretFile": {good:?}}}], "peers": {{"2": "https://10.0.0.2"}}}}"#),
                "gateway.cluster.peers.2",
            ),
            (
                format!(r#"{{"replica": 1, "keys": [{{"name": "k", "secretFile": {good:?}}}], "peers": {{"2": "http://10.0.0.2/mcp"}}}}"#),
                "gateway.cluster.peers.2",
            ),
        ] {
            let e = parse(&gateway_with(&bad), "c.json").expect_err(&bad);
            assert_eq!(e.location, at, "{bad}: {e}");
            let said = e.to_string();
            assert!(!said.contains("a short secret") && !said.contains(&"g".repeat(32)), "{said}");
        }
        for f in [short, good] {
            let _ = std::fs::remove_file(f);
        }
    }
}

#[cfg(test)]
mod registry_tests {
    use crate::config::parse;

    fn with(cluster: &str) -> String {
        format!(r#"{{"mcpServers": {{}}, "gateway": {{"cluster": {cluster}}}}}"#)
    }

    #[test]
    fn a_registry_needs_an_address_a_url_and_no_static_peers() {
        let key =
            std::env::temp_dir().join(format!("mcp-proxy-registry-{}.key", std::process::id()));
        std::fs::write(&key, "k".repeat(40)).expect("key");
        let keys = format!(r#""replica": 1, "keys": [{{"name": "k", "secretFile": {key:?}}}]"#);
        for (bad, at) in [
            (
                format!(
                    r#"{{{keys}, "redis": {{"urlEnv": "MCP_PROXY_TEST_UNSET_VAR"}}, "advertise": "http://10.0.0.1:80"}}"#
                ),
                "gateway.cluster.redis.urlEnv",
            ),
            (
                format!(r#"{{{keys}, "redis": {{}}, "advertise": "http://10.0.0.1:80"}}"#),
                "gateway.cluster.redis",
            ),
            (
                format!(r#"{{{keys}, "redis": {{"urlFile": "/nonexistent/url"}}}}"#),
                "gateway.cluster.advertise",
            ),
            (
                format!(
                    r#"{{{keys}, "redis": {{"urlFile": "/nonexistent/url"}}, "advertise": "10.0.0.1:80"}}"#
                ),
                "gateway.cluster.advertise",
            ),
            (
                format!(
                    r#"{{{keys}, "redis": {{"urlFile": "/x"}}, "peers": {{"1": "http://a:1"}}}}"#
                ),
                "gateway.cluster.redis",
            ),
        ] {
            let e = parse(&with(&bad), "c.json").expect_err(&bad);
            assert_eq!(e.location, at, "{bad}: {e}");
        }
        // A URL file is read, and its password never said.
        let url =
            std::env::temp_dir().join(format!("mcp-proxy-registry-{}.url", std::process::id()));
        std::fs::write(&url, "redis://:a-secret-password@127.0.0.1:1/\n").expect("url");
        let good = with(&format!(
            r#"{{{keys}, "redis": {{"urlFile": {url:?}, "prefix": "p"}}, "advertise": "http://10.0.0.1:8080"}}"#
        ));
        if cfg!(feature = "redis") {
            let g = parse(&good, "c.json").expect("valid");
            let registry = g.registry.expect("a registry");
            assert!(!format!("{registry:?}").contains("a-secret-password"));
            assert!(g.http.peers.is_some() && g.options.replicas.is_some());
        } else {
            let e = parse(&good, "c.json").expect_err("no Redis in this build");
            assert!(e.to_string().contains("feature `redis`"), "{e}");
        }
        for f in [key, url] {
            let _ = std::fs::remove_file(f);
        }
    }
}
