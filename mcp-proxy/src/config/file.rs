//! The configuration file's shape, as types: the reader deserializes the file into them
//! (serde), and the schema `mcp-gateway --print-config-schema` prints (for editors and CI
//! linters) is generated from them (schemars), so what is read and what is described
//! cannot drift apart. Their doc comments are the schema's descriptions, and with it the
//! text of `docs/configuration.md`.
//!
//! The types say what each member is; what only the file as a whole can say (a server has
//! `command` or `url`, a view names servers that exist, a secret's variable is set) is
//! checked as they are turned into the gateway's own types, in [`crate::config::parse`],
//! which `--check-config` runs.
//!
//! A member the reader requires but whose absence it reports in its own words is an
//! `Option` marked `#[schemars(required)]`; one whose `null` it refuses is read with
//! [`given`].

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::values::{
    given, Choice, Count, HttpUrl, Patterns, Pinned, Positive, Separator, ToolName, Whole,
};

/// The fewest characters of an API key (`gateway.auth.apiKeys[].key`, or the variable's
/// value).
pub(super) const MIN_API_KEY_CHARS: usize = 16;

/// A gateway configuration file: Claude Desktop's and Cursor's `mcpServers`, and `gateway`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "an object")]
#[schemars(title = "mcp-gateway configuration")]
pub(super) struct ConfigFile {
    /// The upstream MCP servers, by key (the key is their default namespace).
    #[serde(rename = "mcpServers")]
    #[schemars(required)]
    pub(super) mcp_servers: Option<BTreeMap<String, Server>>,
    /// What applies to the gateway as a whole.
    #[serde(default, deserialize_with = "given")]
    pub(super) gateway: Option<Gateway>,
}

/// One upstream server: `command` (stdio) or `url` (Streamable HTTP, or SSE below
/// 2025-03-26), not both.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, expecting = "an object")]
pub(super) struct Server {
    /// The program to start (stdio).
    pub(super) command: Option<String>,
    /// Its arguments.
    pub(super) args: Option<Vec<String>>,
    /// Environment variables it gets besides the gateway's.
    pub(super) env: Option<BTreeMap<String, String>>,
    /// Its working directory.
    pub(super) cwd: Option<String>,
    /// The server's MCP endpoint (HTTP).
    pub(super) url: Option<HttpUrl>,
    /// HTTP headers sent with every request to `url`.
    pub(super) headers: Option<BTreeMap<String, String>>,
    /// What other hosts' files write; must agree with `command` or `url`.
    #[serde(rename = "type")]
    pub(super) kind: Option<Choice<ServerType>>,
    /// Leaves the server out.
    pub(super) disabled: Option<bool>,
    /// The prefix of its tools' exposed names (default: the key).
    pub(super) namespace: Option<String>,
    /// Trust its tool annotations (hints) as given.
    pub(super) trusted: Option<bool>,
    /// Show hosts none of its tools' hints unless it is trusted (default false).
    pub(super) withhold_hints: Option<bool>,
    /// The revision spoken with it (default: detect).
    pub(super) protocol_version: Option<Pinned>,
    /// Only tools matching one of these name patterns (`*` for any run) are served.
    pub(super) allow_tools: Option<Patterns>,
    /// Tools matching one of these patterns are not served.
    pub(super) deny_tools: Option<Patterns>,
    /// How hosts share a legacy upstream: `"pooled"` (the default), a pool of sessions,
    /// each lent to one call at a time, or to all the calls of one host that can be asked
    /// nothing; `"per-host"`, one session per host; or `"shared"`, one for all.
    #[serde(default, deserialize_with = "given")]
    pub(super) session: Option<Choice<SessionKind>>,
    /// Most pooled sessions at once (`pooled`; default 8).
    #[serde(default, deserialize_with = "given")]
    pub(super) max_pooled_sessions: Option<Positive>,
    /// Most sessions of hosts' own at once (`per-host`, and hosts that keep state upstream
    /// under `pooled`; default 64).
    #[serde(default, deserialize_with = "given")]
    pub(super) max_host_sessions: Option<Positive>,
    /// Seconds an idle session opened for hosts is kept (default 600).
    #[serde(default, deserialize_with = "given")]
    pub(super) host_session_idle_seconds: Option<Positive>,
    /// Longest one call may take (default: the gateway's).
    pub(super) call_timeout_seconds: Option<Positive>,
    /// Longest stdio message each way (default 16 MiB).
    pub(super) max_message_bytes: Option<Positive>,
    /// What hosts see of its tools instead of what it lists, by real tool name.
    pub(super) overrides: Option<BTreeMap<String, ToolOverride>>,
    /// How the gateway gets its own tokens for it (`url` only).
    #[serde(default, deserialize_with = "given")]
    pub(super) auth: Option<UpstreamAuth>,
    /// It acts as each signed-in user: how each user's tokens for it are had (`url`
    /// only; needs `gateway.auth.jwt`). `auth`, if given, is then used only to list what
    /// it offers.
    #[serde(default, deserialize_with = "given")]
    pub(super) user_auth: Option<UserAuth>,
    /// The gateway is not ready (`/readyz`) until it is connected.
    pub(super) required: Option<bool>,
    /// It serves both eras on one connection: opened with `initialize`, it speaks
    /// 2026-07-28 too, and legacy hosts' calls go in their own era (`command` only).
    pub(super) legacy_session: Option<bool>,
}

/// A server's `type`.
#[derive(Deserialize, JsonSchema)]
pub(super) enum ServerType {
    #[serde(rename = "stdio")]
    Stdio,
    #[serde(rename = "http")]
    Http,
    #[serde(rename = "streamable-http")]
    StreamableHttp,
    #[serde(rename = "streamableHttp")]
    StreamableHttpCamel,
    #[serde(rename = "sse")]
    Sse,
}

/// A server's `session`.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub(super) enum SessionKind {
    Pooled,
    PerHost,
    Shared,
}

/// One entry of a server's `overrides`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "an object")]
pub(super) struct ToolOverride {
    /// The name hosts see (before the namespace).
    pub(super) name: Option<ToolName>,
    /// The title hosts see.
    pub(super) title: Option<String>,
    /// The description hosts see.
    pub(super) description: Option<String>,
    /// Hints replacing the tool's own (`destructiveHint`, …).
    pub(super) annotations: Option<Map<String, Value>>,
}

/// A `url` server's `auth`.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, expecting = "an object")]
pub(super) struct UpstreamAuth {
    /// The grant the gateway uses.
    #[serde(rename = "type")]
    // `with`, not `required`, which would inline the enum instead of naming its `$defs`.
    #[schemars(with = "UpstreamAuthType")]
    pub(super) kind: Option<Choice<UpstreamAuthType>>,
    /// A pre-registered client (without one, `oauth` registers itself).
    pub(super) client_id: Option<String>,
    /// Its secret.
    pub(super) client_secret: Option<String>,
    /// The environment variable holding its secret.
    pub(super) client_secret_env: Option<String>,
    /// A PEM key it signs its assertions with (`private_key_jwt`).
    pub(super) private_key_file: Option<String>,
    /// That key's algorithm (default ES256).
    pub(super) signing_algorithm: Option<String>,
    /// That key's `kid`.
    pub(super) key_id: Option<String>,
    /// A client ID metadata document's URL, instead of registering.
    pub(super) client_metadata_url: Option<String>,
    /// Where the browser returns (`oauth`; default `http://127.0.0.1:8765/callback`).
    pub(super) redirect_uri: Option<String>,
    /// The scopes asked for.
    pub(super) scopes: Option<Vec<String>>,
    /// A directory tokens are kept in across restarts.
    pub(super) token_store: Option<String>,
    /// The file the platform keeps the workload's token in (`workloadIdentity`).
    pub(super) token_file: Option<String>,
    /// Sender-constrained tokens (DPoP).
    pub(super) dpop: Option<bool>,
    /// The authorization server the credentials are for.
    pub(super) issuer: Option<String>,
}

/// A `url` server's `userAuth`.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, expecting = "an object")]
pub(super) struct UserAuth {
    /// How each user's tokens are had: `"tokenExchange"` (RFC 8693), the user's own
    /// access token traded for one whose audience is the upstream; or `"oauth"`, each
    /// user's consent at the upstream's authorization server, asked through a link to
    /// the gateway's connect page.
    #[serde(rename = "type")]
    #[schemars(with = "UserAuthType")]
    pub(super) kind: Option<Choice<UserAuthType>>,
    /// The authorization server (`tokenExchange`: exchanged at, its metadata naming the
    /// token endpoint; `oauth`: default, the one the upstream's metadata names).
    pub(super) issuer: Option<String>,
    /// Its token endpoint, instead of discovering it.
    pub(super) token_endpoint: Option<String>,
    /// The gateway's client there (`oauth` without it: `clientMetadataUrl`, else
    /// dynamic registration).
    pub(super) client_id: Option<String>,
    /// Its secret.
    pub(super) client_secret: Option<String>,
    /// The environment variable holding its secret.
    pub(super) client_secret_env: Option<String>,
    /// A PEM key it signs its assertions with (`private_key_jwt`).
    pub(super) private_key_file: Option<String>,
    /// That key's algorithm (default ES256).
    pub(super) signing_algorithm: Option<String>,
    /// That key's `kid`.
    pub(super) key_id: Option<String>,
    /// `oauth` without `clientId`: the URL of the gateway's client ID metadata document,
    /// its id at a server that takes them.
    pub(super) client_metadata_url: Option<String>,
    /// The resource the tokens are for (default: the server's `url`).
    pub(super) resource: Option<String>,
    /// An `audience` to name as well.
    pub(super) audience: Option<String>,
    /// The scopes asked for.
    pub(super) scopes: Option<Vec<String>>,
    /// Most users with a connection open to it at once (default 256).
    #[serde(default, deserialize_with = "given")]
    pub(super) max_users: Option<Positive>,
    /// Seconds a user's idle connection is kept (default 600).
    #[serde(default, deserialize_with = "given")]
    pub(super) idle_seconds: Option<Positive>,
}

/// A `userAuth`'s `type`.
#[derive(Deserialize, JsonSchema, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub(super) enum UserAuthType {
    TokenExchange,
    #[serde(rename = "oauth")]
    OAuth,
}

/// An upstream `auth`'s `type`.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(super) enum UpstreamAuthType {
    #[serde(rename = "oauth")]
    OAuth,
    ClientCredentials,
    WorkloadIdentity,
}

/// The `gateway` object.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, expecting = "an object")]
pub(super) struct Gateway {
    /// Who may use the gateway over HTTP.
    #[serde(default, deserialize_with = "given")]
    pub(super) auth: Option<Auth>,
    /// What each principal sees; the first matching view wins.
    #[serde(default, deserialize_with = "given")]
    pub(super) views: Option<Vec<View>>,
    /// Approved tool definitions, and what to do with tools not as approved.
    #[serde(default, deserialize_with = "given")]
    pub(super) pins: Option<Pins>,
    /// The principal of a host on stdio, whom views match.
    pub(super) stdio_subject: Option<String>,
    /// Between namespace and tool name (default `__`).
    #[serde(default, deserialize_with = "given")]
    pub(super) separator: Option<Separator>,
    /// Longest exposed tool name (default 64).
    #[serde(default, deserialize_with = "given")]
    pub(super) max_name_length: Option<Count<16, 128>>,
    /// Ask the host's user before a call to a tool that may be destructive.
    pub(super) confirm_destructive: Option<bool>,
    /// The tools hosts see: the upstreams' own, or four dispatcher tools (`search_tools`, `list_tools`, `describe_tool`, `call_tool`).
    #[serde(default, deserialize_with = "given")]
    pub(super) surface: Option<Choice<Surface>>,
    /// Longest one call may take (default 120).
    pub(super) call_timeout_seconds: Option<Positive>,
    /// Longest the gateway waits at start for its upstreams before it serves with those
    /// that are ready (default 500); a later one's lists are announced when it comes.
    #[serde(default, deserialize_with = "given")]
    pub(super) startup_wait_millis: Option<Whole>,
    /// Items per page of a merged list hosts get (default 500; 0: everything in one
    /// page).
    #[serde(default, deserialize_with = "given")]
    pub(super) page_size: Option<Whole>,
    /// The bounds of the `--http` listener, and the names it answers to.
    #[serde(default, deserialize_with = "given")]
    pub(super) http: Option<Http>,
    /// Replicas of one gateway: the keys that seal the ids every replica hands hosts
    /// (session ids, `requestState`s, task ids), so that any of them can tell which replica
    /// holds what an id names and that it is genuine, and where the others are.
    #[serde(default, deserialize_with = "given")]
    pub(super) cluster: Option<Cluster>,
    /// Where users' upstream grants are kept (`userAuth` of type `oauth`).
    #[serde(default, deserialize_with = "given")]
    pub(super) grants: Option<Grants>,
    /// A tamper-evident record of each call: who called what, with which arguments
    /// (redacted), and how it ended.
    #[serde(default, deserialize_with = "given")]
    pub(super) audit: Option<super::audit::Audit>,
    /// Token buckets per principal, upstream and tool.
    #[serde(default, deserialize_with = "given")]
    pub(super) rate_limits: Option<super::rate_limits::RateLimitsFile>,
}

/// `gateway.cluster`.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, expecting = "an object")]
pub(super) struct Cluster {
    /// This replica's number, 0 to 65535, different on every replica (or `replicaEnv`).
    pub(super) replica: Option<Count<0, 65535>>,
    /// The environment variable holding this replica's number (one config file for all).
    pub(super) replica_env: Option<String>,
    /// The sealing keys: the first seals, every one listed opens (list the new key first
    /// and keep the old one until the ids it sealed are gone).
    #[schemars(required, length(min = 1))]
    pub(super) keys: Option<Vec<ClusterKey>>,
    /// Each replica's address by its number (`{"2": "http://10.0.0.2:8080"}`; listing this
    /// one too is fine): a request naming state another replica holds (a legacy session, a
    /// parked call's `requestState`, a task) is forwarded there over plain HTTP, signed with
    /// the keys. Without it, such a request is served where it lands.
    pub(super) peers: Option<BTreeMap<String, String>>,
    /// A Redis every replica reaches, where replicas find each other (in place of
    /// `peers`): each announces `advertise` there. Needs a gateway built with feature
    /// `redis`. Read at start.
    #[serde(default, deserialize_with = "given")]
    pub(super) redis: Option<ClusterRedis>,
    /// This replica's base URL as the others reach it (`http://10.0.0.1:8080`), announced
    /// in `redis`.
    pub(super) advertise: Option<String>,
}

/// `gateway.cluster.redis`: `urlEnv` or `urlFile` (a Redis URL may hold a password).
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, expecting = "an object")]
pub(super) struct ClusterRedis {
    /// The environment variable holding the URL (`redis://…`, `rediss://…`,
    /// `redis+unix:///path`).
    pub(super) url_env: Option<String>,
    /// A file holding the URL.
    pub(super) url_file: Option<String>,
    /// What every key starts with (default `mcp-gateway`).
    pub(super) prefix: Option<String>,
    /// Longest one Redis command may take (default 1000).
    pub(super) timeout_millis: Option<Positive>,
}

/// One of `gateway.cluster.keys`: `secretEnv` or `secretFile`, at least 32 bytes (say,
/// `openssl rand -base64 48`).
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, expecting = "an object")]
pub(super) struct ClusterKey {
    /// Names the key in logs and errors (never its secret).
    #[schemars(required)]
    pub(super) name: Option<String>,
    /// The environment variable holding the secret.
    pub(super) secret_env: Option<String>,
    /// A file holding the secret (trailing whitespace is not part of it).
    pub(super) secret_file: Option<String>,
}

/// `gateway.http`: the `--http` listener.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, expecting = "an object")]
pub(super) struct Http {
    /// Host names accepted in `Host` besides loopback ones.
    pub(super) allowed_hosts: Option<Vec<String>>,
    /// Host names accepted in `Origin` besides loopback ones.
    pub(super) allowed_origins: Option<Vec<String>>,
    /// Largest request body (default 4 MiB; larger is `413`).
    pub(super) max_body_bytes: Option<Positive>,
    /// Most legacy sessions open at once (default 1024); past it the idle session idle
    /// longest ends, and with every session in use `503`.
    pub(super) max_sessions: Option<Positive>,
    /// Most legacy sessions one client holds (default 256): its principal with `auth`,
    /// else its address; past it its own idle session idle longest ends, and with all
    /// of its sessions in use `429`.
    pub(super) max_sessions_per_client: Option<Positive>,
    /// Most unanswered requests of one legacy session (default 64; past it `429`).
    pub(super) max_in_flight_per_session: Option<Positive>,
    /// Most connections served at once (default 512).
    pub(super) max_connections: Option<Positive>,
    /// A legacy session idle this long ends (default 600).
    pub(super) session_idle_seconds: Option<Positive>,
    /// A connection on which nothing moves this long closes (default 60).
    pub(super) idle_timeout_seconds: Option<Positive>,
    /// A request head must arrive within this long (default 10).
    pub(super) header_read_timeout_seconds: Option<Positive>,
    /// A request body must arrive within this long (default 30).
    pub(super) body_read_timeout_seconds: Option<Positive>,
}

/// `surface`.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(super) enum Surface {
    Direct,
    Dispatcher,
}

/// `gateway.auth`.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, expecting = "an object")]
pub(super) struct Auth {
    /// This gateway's canonical URL, the audience of its tokens.
    #[schemars(required)]
    pub(super) resource: Option<String>,
    /// The authorization servers hosts get tokens from.
    pub(super) authorization_servers: Option<Vec<String>>,
    /// Scopes every request's token must hold.
    pub(super) required_scopes: Option<Vec<String>>,
    /// Scopes the metadata lists (default: the required ones).
    pub(super) scopes_supported: Option<Vec<String>>,
    /// Bearer JWTs.
    #[serde(default, deserialize_with = "given")]
    pub(super) jwt: Option<Jwt>,
    /// Static API keys.
    #[serde(default, deserialize_with = "given")]
    pub(super) api_keys: Option<Vec<ApiKey>>,
    /// How the connect pages log a browser's user in, to check that whoever opens a
    /// consent link is the user it was made for (needed by a `userAuth` of type `oauth`).
    #[serde(default, deserialize_with = "given")]
    pub(super) login: Option<Login>,
}

/// `gateway.auth.login`: the gateway as a client of its users' issuer.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, expecting = "an object")]
pub(super) struct Login {
    /// The issuer users log in at (default: `jwt.issuer`).
    pub(super) issuer: Option<String>,
    /// The gateway's client there.
    #[schemars(required)]
    pub(super) client_id: Option<String>,
    /// Its secret.
    pub(super) client_secret: Option<String>,
    /// The environment variable holding its secret.
    pub(super) client_secret_env: Option<String>,
    /// A PEM key it signs its assertions with (`private_key_jwt`).
    pub(super) private_key_file: Option<String>,
    /// That key's algorithm (default ES256).
    pub(super) signing_algorithm: Option<String>,
    /// That key's `kid`.
    pub(super) key_id: Option<String>,
    /// The scopes asked for at login.
    pub(super) scopes: Option<Vec<String>>,
}

/// `gateway.grants`: where users' upstream grants are kept, and the keys they are sealed
/// with.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, expecting = "an object")]
pub(super) struct Grants {
    /// A file the sealed grants are kept in across restarts (default: memory only).
    pub(super) file: Option<String>,
    /// The environment variable holding the keys: `name:secret` (32 bytes, base64),
    /// comma-separated, the first sealing.
    pub(super) keys_env: Option<String>,
    /// A file holding the keys, one `name:secret` per line, the first sealing.
    pub(super) keys_file: Option<String>,
}

/// `gateway.auth.jwt`.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, expecting = "an object")]
pub(super) struct Jwt {
    /// The `iss` tokens carry.
    #[schemars(required)]
    pub(super) issuer: Option<String>,
    /// The `aud` they carry (default: `resource`).
    pub(super) audience: Option<String>,
    /// A JWKS file; or `jwksUri`; or neither: the issuer's metadata names the keys.
    pub(super) jwks_file: Option<String>,
    /// A JWKS URL (https, or http to this machine).
    pub(super) jwks_uri: Option<String>,
    /// How old the keys in use may be, the bound within which a removed key is refused:
    /// a `jwksFile` is read again (default 5), the `jwksUri` fetched again (default 60).
    pub(super) jwks_refresh_seconds: Option<Positive>,
    /// Algorithms accepted.
    pub(super) algorithms: Option<Vec<String>>,
    /// Clock skew allowed, at most 300.
    pub(super) leeway_seconds: Option<Positive>,
}

/// One of `gateway.auth.apiKeys`: `key` or `keyEnv`.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, expecting = "an object")]
pub(super) struct ApiKey {
    /// Names the key in logs and views.
    #[schemars(required)]
    pub(super) name: Option<String>,
    /// The key itself, at least 16 characters.
    #[schemars(length(min = MIN_API_KEY_CHARS))]
    pub(super) key: Option<String>,
    /// The environment variable holding it.
    pub(super) key_env: Option<String>,
    /// The principal it stands for (default: `name`).
    pub(super) subject: Option<String>,
    /// Its scopes.
    pub(super) scopes: Option<Vec<String>>,
}

/// `gateway.pins`.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, expecting = "an object")]
pub(super) struct Pins {
    /// Where the approved definitions are kept.
    #[schemars(required)]
    pub(super) file: Option<String>,
    /// A pinned tool that changed: hidden (default) or asked about.
    pub(super) on_change: Option<Choice<OnChange>>,
    /// A tool nobody approved.
    pub(super) unpinned: Option<Choice<Unpinned>>,
}

/// `pins.onChange`.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(super) enum OnChange {
    Hide,
    Ask,
}

/// `pins.unpinned`.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(super) enum Unpinned {
    Allow,
    Hide,
    Ask,
}

/// One of `gateway.views`.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, expecting = "an object")]
pub(super) struct View {
    /// Names it in logs.
    pub(super) name: Option<String>,
    /// Principals it is for, by subject.
    pub(super) subjects: Option<Vec<String>>,
    /// Principals it is for, by a scope they hold.
    pub(super) scopes: Option<Vec<String>>,
    /// Principals it is for, by the API key they used.
    pub(super) credentials: Option<Vec<String>>,
    /// The servers it shows (default: all), by key.
    pub(super) upstreams: Option<Vec<String>>,
    /// Only exposed tools matching these are shown.
    pub(super) allow_tools: Option<Patterns>,
    /// Exposed tools matching these are not shown.
    pub(super) deny_tools: Option<Patterns>,
    /// Its tools as the upstreams' own or as four dispatcher tools.
    #[serde(default, deserialize_with = "given")]
    pub(super) surface: Option<Choice<Surface>>,
}
