//! [`RedisStore`]: the replicas' shared state in a Redis server (feature `redis`), through
//! the `redis` crate's connection manager (which reconnects), every command bounded by a
//! timeout, every key expiring.
//!
//! Keys, under the configured prefix: `{prefix}:replica:{n}` (the entry's JSON, expiring
//! with its heartbeat), `{prefix}:replicas` (the set of numbers announced, expiring if no
//! replica announces for four of their TTLs), `{prefix}:session:{id}` (a hash: `owner`,
//! `epoch`, and `record`, the rest as JSON; expiring with the session's idle timeout),
//! `{prefix}:rate:{key}` (a token bucket, see [`TAKE`]; expiring when full again). A
//! claim is one Lua script, so that of two replicas racing for a session exactly one wins;
//! so is taking a token.
//!
//! The connection is made at the first command, not before: a gateway whose Redis is down
//! at start serves what needs no store, and its commands reach Redis once it is back.

use std::collections::HashMap;
use std::time::Duration;

use async_trait::async_trait;
use mcp_server::seal::ReplicaId;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{AsyncCommands, ErrorKind, RedisError};

use super::{ReplicaEntry, SessionState, StateStore, StoreError, TokenRate, TokenTaken};

/// How to reach Redis.
#[derive(Clone)]
#[non_exhaustive]
pub struct RedisStoreOptions {
    /// `redis://[user:password@]host:port/db`, `rediss://…` or `redis+unix:///path`.
    pub url: String,
    /// What every key starts with (one deployment's keys apart from another's).
    pub prefix: String,
    /// Longest a connection or one command may take (default 1 s); past it the store is
    /// taken as unavailable for that command.
    pub timeout: Duration,
}

impl std::fmt::Debug for RedisStoreOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The URL may hold a password.
        f.debug_struct("RedisStoreOptions")
            .field("prefix", &self.prefix)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl RedisStoreOptions {
    /// Redis at `url`, keys under `prefix`, a 1 s timeout.
    pub fn new(url: impl Into<String>, prefix: impl Into<String>) -> Self {
        RedisStoreOptions {
            url: url.into(),
            prefix: prefix.into(),
            timeout: Duration::from_secs(1),
        }
    }

    /// With commands (and connecting) bounded by `timeout`.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }
}

/// The replicas' shared state in Redis (see the module).
pub struct RedisStore {
    client: redis::Client,
    prefix: String,
    timeout: Duration,
    connection: tokio::sync::Mutex<Option<ConnectionManager>>,
    claim: redis::Script,
    put: redis::Script,
    remove: redis::Script,
    take: redis::Script,
    give: redis::Script,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

const CLAIM: &str = r"
local epoch = redis.call('HGET', KEYS[1], 'epoch')
if not epoch or tonumber(epoch) ~= tonumber(ARGV[1]) then return false end
redis.call('HSET', KEYS[1], 'owner', ARGV[2], 'epoch', tonumber(epoch) + 1)
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return redis.call('HGETALL', KEYS[1])
";

/// Replaces a session's record unless another holder or epoch has it (KEYS: the record;
/// ARGV: owner, epoch, record JSON, TTL in ms): 1 when written.
const PUT: &str = r"
local owner = redis.call('HGET', KEYS[1], 'owner')
if owner and (owner ~= ARGV[1] or redis.call('HGET', KEYS[1], 'epoch') ~= ARGV[2]) then
  return 0
end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'epoch', ARGV[2], 'record', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 1
";

/// Deletes a session's record if it names the owner given (KEYS: the record; ARGV: owner).
const REMOVE: &str = r"
if redis.call('HGET', KEYS[1], 'owner') == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 1
";

/// Takes a token from a bucket by GCRA (the generic cell rate algorithm: a token bucket
/// kept as one number, the time it will be full again), on Redis's own clock (`TIME`), so
/// that replicas whose clocks differ agree. KEYS: the bucket (that time, in µs since the
/// epoch, as an integer string); ARGV: one token's worth in µs, the burst. A token is taken
/// when the bucket, one token emptier, is at most a burst's worth from full; the bucket
/// then expires when it will be full. Returns {taken (0 or 1), µs until a token if not,
/// tokens left}.
///
/// Times are Lua numbers (doubles): exact to the µs up to 2⁵³ µs, well past any bucket a
/// configuration makes. Numbers handed to Redis are formatted by `%.0f`, as Redis would
/// write a large one with an exponent it does not read back.
const TAKE: &str = r"
-- Before Redis 5, a script writing after TIME must ask for its effects to be replicated.
if redis.replicate_commands then redis.replicate_commands() end
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000000 + tonumber(time[2])
local interval = tonumber(ARGV[1])
local span = interval * tonumber(ARGV[2])
local full = tonumber(redis.call('GET', KEYS[1])) or now
if full < now then full = now end
full = full + interval
if full - span > now then
  return {0, math.min(full - span - now, 1e15), 0}
end
local ttl = math.min(math.max(1, math.ceil((full - now) / 1000)), 1e15)
redis.call('SET', KEYS[1], string.format('%.0f', full), 'PX', string.format('%.0f', ttl))
return {1, 0, math.floor((now + span - full) / interval)}
";

/// Puts a token back into a bucket (KEYS: the bucket; ARGV: one token's worth in µs): its
/// full time moves a token's worth earlier, and a bucket then full is forgotten.
const GIVE: &str = r"
if redis.replicate_commands then redis.replicate_commands() end
local full = tonumber(redis.call('GET', KEYS[1]))
if not full then return 0 end
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000000 + tonumber(time[2])
full = full - tonumber(ARGV[1])
if full <= now then
  redis.call('DEL', KEYS[1])
  return 1
end
local ttl = math.min(math.max(1, math.ceil((full - now) / 1000)), 1e15)
redis.call('SET', KEYS[1], string.format('%.0f', full), 'PX', string.format('%.0f', ttl))
return 1
";

/// One token's worth of `per_second`, in µs, rounded up (never more generous than the
/// rate): from 1 µs to 10¹⁵ µs (31 years), which keeps a burst's worth a finite double.
fn micros_per_token(per_second: f64) -> u64 {
    let us = (1e6 / per_second).ceil();
    if us.is_nan() || us >= 1e15 {
        1_000_000_000_000_000
    } else {
        (us as u64).max(1)
    }
}

/// What a command's failure is to the store's users (never the URL: it may hold a password).
fn failed(e: RedisError) -> StoreError {
    match e.kind() {
        ErrorKind::AuthenticationFailed => StoreError::Refused("authentication failed".into()),
        ErrorKind::ResponseError | ErrorKind::TypeError | ErrorKind::ExecAbortError => {
            StoreError::Refused(e.to_string())
        }
        _ => StoreError::Unavailable(e.to_string()),
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1)
}

impl RedisStore {
    /// A store at `options.url`; nothing is connected yet (see the module). Fails only for
    /// a URL that is not one.
    pub fn new(options: RedisStoreOptions) -> Result<RedisStore, StoreError> {
        let client = redis::Client::open(options.url.as_str())
            .map_err(|e| StoreError::Refused(format!("not a Redis URL ({:?})", e.kind())))?;
        Ok(RedisStore {
            client,
            prefix: options.prefix,
            timeout: options.timeout,
            connection: tokio::sync::Mutex::new(None),
            claim: redis::Script::new(CLAIM),
            put: redis::Script::new(PUT),
            remove: redis::Script::new(REMOVE),
            take: redis::Script::new(TAKE),
            give: redis::Script::new(GIVE),
        })
    }

    async fn connection(&self) -> Result<ConnectionManager, StoreError> {
        let mut held = self.connection.lock().await;
        if let Some(c) = &*held {
            return Ok(c.clone());
        }
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(self.timeout)
            .set_response_timeout(self.timeout)
            .set_number_of_retries(1);
        let made = ConnectionManager::new_with_config(self.client.clone(), config);
        let c = tokio::time::timeout(self.timeout * 2, made)
            .await
            .map_err(|_| StoreError::Unavailable("connecting timed out".into()))?
            .map_err(failed)?;
        *held = Some(c.clone());
        Ok(c)
    }

    async fn bounded<T>(
        &self,
        command: impl std::future::Future<Output = Result<T, RedisError>>,
    ) -> Result<T, StoreError> {
        tokio::time::timeout(self.timeout, command)
            .await
            .map_err(|_| StoreError::Unavailable("a command timed out".into()))?
            .map_err(failed)
    }

    fn key(&self, kind: &str, id: &str) -> String {
        format!("{}:{kind}:{id}", self.prefix)
    }

    fn replicas_key(&self) -> String {
        format!("{}:replicas", self.prefix)
    }
}

/// A session's hash as a record; `None` (logged) for one that does not read.
fn session_of(id: &str, fields: HashMap<String, String>) -> Option<SessionState> {
    if fields.is_empty() {
        return None;
    }
    let read = || -> Option<SessionState> {
        let mut s: SessionState = serde_json::from_str(fields.get("record")?).ok()?;
        s.owner = ReplicaId(fields.get("owner")?.parse().ok()?);
        s.epoch = fields.get("epoch")?.parse().ok()?;
        (s.id == id).then_some(s)
    };
    let s = read();
    if s.is_none() {
        tracing::warn!("a session record in the state store does not read: ignored");
    }
    s
}

#[async_trait]
impl StateStore for RedisStore {
    async fn check(&self) -> Result<(), StoreError> {
        let mut c = self.connection().await?;
        self.bounded(async move { redis::cmd("PING").query_async::<String>(&mut c).await })
            .await
            .map(|_| ())
    }

    async fn announce(&self, entry: &ReplicaEntry, ttl: Duration) -> Result<(), StoreError> {
        let json = serde_json::to_string(entry).map_err(|e| StoreError::Refused(e.to_string()))?;
        let mut c = self.connection().await?;
        let (key, set) = (
            self.key("replica", &entry.replica.to_string()),
            self.replicas_key(),
        );
        let mut pipe = redis::pipe();
        pipe.atomic()
            .cmd("SET")
            .arg(&key)
            .arg(json)
            .arg("PX")
            .arg(millis(ttl))
            .ignore()
            .cmd("SADD")
            .arg(&set)
            .arg(entry.replica.0)
            .ignore()
            .cmd("PEXPIRE")
            .arg(&set)
            .arg(millis(ttl * 4))
            .ignore();
        self.bounded(async move { pipe.query_async::<()>(&mut c).await })
            .await
    }

    async fn leave(&self, replica: ReplicaId) -> Result<(), StoreError> {
        let mut c = self.connection().await?;
        let (key, set) = (
            self.key("replica", &replica.to_string()),
            self.replicas_key(),
        );
        let mut pipe = redis::pipe();
        pipe.atomic()
            .cmd("DEL")
            .arg(&key)
            .ignore()
            .cmd("SREM")
            .arg(&set)
            .arg(replica.0)
            .ignore();
        self.bounded(async move { pipe.query_async::<()>(&mut c).await })
            .await
    }

    async fn replicas(&self) -> Result<Vec<ReplicaEntry>, StoreError> {
        let mut c = self.connection().await?;
        let set = self.replicas_key();
        let mut numbers: Vec<u16> = {
            let mut c = c.clone();
            let set = set.clone();
            self.bounded(async move { c.smembers(&set).await }).await?
        };
        numbers.sort_unstable();
        if numbers.is_empty() {
            return Ok(Vec::new());
        }
        let keys: Vec<String> = numbers
            .iter()
            .map(|n| self.key("replica", &n.to_string()))
            .collect();
        let values: Vec<Option<String>> = {
            let mut c = c.clone();
            self.bounded(async move { c.mget(&keys).await }).await?
        };
        let mut live = Vec::new();
        let mut gone = Vec::new();
        for (n, v) in numbers.iter().zip(values) {
            match v.and_then(|v| serde_json::from_str::<ReplicaEntry>(&v).ok()) {
                Some(e) => live.push(e),
                None => gone.push(*n),
            }
        }
        if !gone.is_empty() {
            // Their heartbeats lapsed: out of the set too.
            let _ = self
                .bounded(async move { c.srem::<_, _, ()>(&set, gone).await })
                .await;
        }
        Ok(live)
    }

    async fn put_session(&self, state: &SessionState, ttl: Duration) -> Result<bool, StoreError> {
        let json = serde_json::to_string(state).map_err(|e| StoreError::Refused(e.to_string()))?;
        let mut c = self.connection().await?;
        let mut call = self.put.key(self.key("session", &state.id));
        call.arg(state.owner.0)
            .arg(state.epoch)
            .arg(json)
            .arg(millis(ttl));
        let written: i64 = self
            .bounded(async move { call.invoke_async(&mut c).await })
            .await?;
        Ok(written == 1)
    }

    async fn session(&self, id: &str) -> Result<Option<SessionState>, StoreError> {
        let mut c = self.connection().await?;
        let key = self.key("session", id);
        let fields: HashMap<String, String> =
            self.bounded(async move { c.hgetall(&key).await }).await?;
        Ok(session_of(id, fields))
    }

    async fn claim_session(
        &self,
        id: &str,
        epoch: u64,
        owner: ReplicaId,
        ttl: Duration,
    ) -> Result<Option<SessionState>, StoreError> {
        let mut c = self.connection().await?;
        let key = self.key("session", id);
        let mut call = self.claim.key(key);
        call.arg(epoch).arg(owner.0).arg(millis(ttl));
        let fields: Option<HashMap<String, String>> = self
            .bounded(async move { call.invoke_async(&mut c).await })
            .await?;
        Ok(fields.and_then(|f| session_of(id, f)))
    }

    async fn remove_session(&self, id: &str, owner: ReplicaId) -> Result<(), StoreError> {
        let mut c = self.connection().await?;
        let mut call = self.remove.key(self.key("session", id));
        call.arg(owner.0);
        self.bounded(async move { call.invoke_async::<i64>(&mut c).await })
            .await
            .map(|_| ())
    }

    async fn put_value(
        &self,
        key: &str,
        value: &str,
        ttl: Option<Duration>,
    ) -> Result<(), StoreError> {
        let mut c = self.connection().await?;
        let mut cmd = redis::cmd("SET");
        cmd.arg(self.key("value", key)).arg(value);
        if let Some(t) = ttl {
            cmd.arg("PX").arg(millis(t));
        }
        self.bounded(async move { cmd.query_async::<()>(&mut c).await })
            .await
    }

    async fn put_value_once(
        &self,
        key: &str,
        value: &str,
        ttl: Duration,
    ) -> Result<bool, StoreError> {
        let mut c = self.connection().await?;
        let mut cmd = redis::cmd("SET");
        cmd.arg(self.key("value", key))
            .arg(value)
            .arg("NX")
            .arg("PX")
            .arg(millis(ttl));
        let set: Option<String> = self
            .bounded(async move { cmd.query_async(&mut c).await })
            .await?;
        Ok(set.is_some())
    }

    async fn value(&self, key: &str) -> Result<Option<String>, StoreError> {
        let mut c = self.connection().await?;
        let key = self.key("value", key);
        self.bounded(async move { c.get(&key).await }).await
    }

    async fn take_value(&self, key: &str) -> Result<Option<String>, StoreError> {
        let mut c = self.connection().await?;
        let mut cmd = redis::cmd("GETDEL");
        cmd.arg(self.key("value", key));
        self.bounded(async move { cmd.query_async(&mut c).await })
            .await
    }

    async fn remove_value(&self, key: &str) -> Result<bool, StoreError> {
        let mut c = self.connection().await?;
        let key = self.key("value", key);
        let removed: u64 = self.bounded(async move { c.del(&key).await }).await?;
        Ok(removed > 0)
    }

    async fn take_token(&self, key: &str, rate: TokenRate) -> Result<TokenTaken, StoreError> {
        let rate = rate.rate()?;
        let mut c = self.connection().await?;
        let mut call = self.take.key(self.key("rate", key));
        call.arg(micros_per_token(rate.per_second)).arg(rate.burst);
        let (taken, wait, left): (i64, i64, i64) = self
            .bounded(async move { call.invoke_async(&mut c).await })
            .await?;
        Ok(if taken == 1 {
            TokenTaken::taken(u32::try_from(left.max(0)).unwrap_or(u32::MAX))
        } else {
            let wait = u64::try_from(wait).unwrap_or(0).max(1);
            TokenTaken::refused(Duration::from_micros(wait))
        })
    }

    async fn give_token(&self, key: &str, rate: TokenRate) -> Result<(), StoreError> {
        let rate = rate.rate()?;
        let mut c = self.connection().await?;
        let mut call = self.give.key(self.key("rate", key));
        call.arg(micros_per_token(rate.per_second));
        let _: i64 = self
            .bounded(async move { call.invoke_async(&mut c).await })
            .await?;
        Ok(())
    }
}
