//! The configuration file's shape, as types: [`schema`] (what `mcp-gateway
//! --print-config-schema` prints, for editors and CI linters) is generated from them, and
//! the reader takes the keys each object may hold from that schema, so the two cannot
//! drift apart.
//!
//! The schema says what each member is; what only the file as a whole can say (a server
//! has `command` or `url`, a view names servers that exist, a secret's variable is set) is
//! checked by [`crate::config::parse`], which `--check-config` runs.

// The types are read for their schema only: nothing builds or reads their values.
#![allow(dead_code)]

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde_json::{Map, Value};

/// A gateway configuration file: Claude Desktop's and Cursor's `mcpServers`, and `gateway`.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields, title = "mcp-gateway configuration")]
pub(super) struct ConfigFile {
    /// The upstream MCP servers, by key (the key is their default namespace).
    #[serde(rename = "mcpServers")]
    mcp_servers: BTreeMap<String, Server>,
    /// What applies to the gateway as a whole.
    gateway: Option<Gateway>,
}

/// One upstream server: `command` (stdio) or `url` (Streamable HTTP, or SSE below
/// 2025-03-26), not both.
#[derive(JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub(super) struct Server {
    /// The program to start (stdio).
    command: Option<String>,
    /// Its arguments.
    args: Option<Vec<String>>,
    /// Environment variables it gets besides the gateway's.
    env: Option<BTreeMap<String, String>>,
    /// Its working directory.
    cwd: Option<String>,
    /// The server's MCP endpoint (HTTP).
    #[schemars(regex(pattern = r"^https?://"))]
    url: Option<String>,
    /// HTTP headers sent with every request to `url`.
    headers: Option<BTreeMap<String, String>>,
    /// What other hosts' files write; must agree with `command` or `url`.
    #[serde(rename = "type")]
    kind: Option<ServerType>,
    /// Leaves the server out.
    disabled: Option<bool>,
    /// The prefix of its tools' exposed names (default: the key).
    namespace: Option<String>,
    /// Trust its tool annotations (hints) as given.
    trusted: Option<bool>,
    /// Show hosts none of its tools' hints unless it is trusted (default false).
    withhold_hints: Option<bool>,
    /// The revision spoken with it (default: detect).
    #[serde(default)]
    #[schemars(schema_with = "revision")]
    protocol_version: Option<String>,
    /// Only tools matching one of these name patterns (`*` for any run) are served.
    #[schemars(inner(regex(pattern = r"^\S+$")))]
    allow_tools: Option<Vec<String>>,
    /// Tools matching one of these patterns are not served.
    #[schemars(inner(regex(pattern = r"^\S+$")))]
    deny_tools: Option<Vec<String>>,
    /// How hosts share a legacy upstream: a pool of sessions, each lent to one call at a
    /// time (the default), one session per host, or one for all.
    session: Option<SessionKind>,
    /// Most pooled sessions at once (`pooled`; default 8).
    #[schemars(range(min = 1))]
    max_pooled_sessions: Option<u64>,
    /// Most sessions of hosts' own at once (`per-host`, and hosts that keep state upstream
    /// under `pooled`; default 64).
    #[schemars(range(min = 1))]
    max_host_sessions: Option<u64>,
    /// Seconds an idle session opened for hosts is kept (default 600).
    #[schemars(range(min = 1))]
    host_session_idle_seconds: Option<u64>,
    /// Longest one call may take (default: the gateway's).
    #[schemars(range(min = 1))]
    call_timeout_seconds: Option<u64>,
    /// Longest stdio message each way (default 16 MiB).
    #[schemars(range(min = 1))]
    max_message_bytes: Option<u64>,
    /// What hosts see of its tools instead of what it lists, by real tool name.
    overrides: Option<BTreeMap<String, ToolOverride>>,
    /// How the gateway gets its own tokens for it (`url` only).
    auth: Option<UpstreamAuth>,
    /// The gateway is not ready (`/readyz`) until it is connected.
    required: Option<bool>,
    /// It serves both eras on one connection: opened with `initialize`, it speaks
    /// 2026-07-28 too, and legacy hosts' calls go in their own era (`command` only).
    legacy_session: Option<bool>,
}

/// A server's `type`.
#[derive(JsonSchema)]
enum ServerType {
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
#[derive(JsonSchema)]
#[serde(rename_all = "kebab-case")]
enum SessionKind {
    Pooled,
    PerHost,
    Shared,
}

/// One entry of a server's `overrides`.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(super) struct ToolOverride {
    /// The name hosts see (before the namespace).
    #[schemars(length(min = 1, max = 64), regex(pattern = r"^[A-Za-z0-9_.-]+$"))]
    name: Option<String>,
    /// The title hosts see.
    title: Option<String>,
    /// The description hosts see.
    description: Option<String>,
    /// Hints replacing the tool's own (`destructiveHint`, …).
    annotations: Option<Map<String, Value>>,
}

/// A `url` server's `auth`.
#[derive(JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub(super) struct UpstreamAuth {
    /// The grant the gateway uses.
    #[serde(rename = "type")]
    kind: UpstreamAuthType,
    /// A pre-registered client (without one, `oauth` registers itself).
    client_id: Option<String>,
    /// Its secret.
    client_secret: Option<String>,
    /// The environment variable holding its secret.
    client_secret_env: Option<String>,
    /// A PEM key it signs its assertions with (`private_key_jwt`).
    private_key_file: Option<String>,
    /// That key's algorithm (default ES256).
    signing_algorithm: Option<String>,
    /// That key's `kid`.
    key_id: Option<String>,
    /// A client ID metadata document's URL, instead of registering.
    client_metadata_url: Option<String>,
    /// Where the browser returns (`oauth`; default `http://127.0.0.1:8765/callback`).
    redirect_uri: Option<String>,
    /// The scopes asked for.
    scopes: Option<Vec<String>>,
    /// A directory tokens are kept in across restarts.
    token_store: Option<String>,
    /// The file the platform keeps the workload's token in (`workloadIdentity`).
    token_file: Option<String>,
    /// Sender-constrained tokens (DPoP).
    dpop: Option<bool>,
    /// The authorization server the credentials are for.
    issuer: Option<String>,
}

/// An upstream `auth`'s `type`.
#[derive(JsonSchema)]
#[serde(rename_all = "camelCase")]
enum UpstreamAuthType {
    #[serde(rename = "oauth")]
    OAuth,
    ClientCredentials,
    WorkloadIdentity,
}

/// The `gateway` object.
#[derive(JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub(super) struct Gateway {
    /// Who may use the gateway over HTTP.
    auth: Option<Auth>,
    /// What each principal sees; the first matching view wins.
    views: Option<Vec<View>>,
    /// Approved tool definitions, and what to do with tools not as approved.
    pins: Option<Pins>,
    /// The principal of a host on stdio, whom views match.
    stdio_subject: Option<String>,
    /// Between namespace and tool name (default `__`).
    #[schemars(regex(pattern = r"^[A-Za-z0-9_-]{1,4}$"))]
    separator: Option<String>,
    /// Longest exposed tool name (default 64).
    #[schemars(range(min = 16, max = 128))]
    max_name_length: Option<u64>,
    /// Ask the host's user before a call to a tool that may be destructive.
    confirm_destructive: Option<bool>,
    /// The tools hosts see: the upstreams' own, or three dispatcher tools.
    surface: Option<Surface>,
    /// Longest one call may take (default 120).
    #[schemars(range(min = 1))]
    call_timeout_seconds: Option<u64>,
    /// Longest the gateway waits at start for its upstreams before it serves with those
    /// that are ready (default 500); a later one's lists are announced when it comes.
    startup_wait_millis: Option<u64>,
    /// The bounds of the `--http` listener, and the names it answers to.
    http: Option<Http>,
}

/// `gateway.http`: the `--http` listener.
#[derive(JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub(super) struct Http {
    /// Host names accepted in `Host` besides loopback ones.
    allowed_hosts: Option<Vec<String>>,
    /// Host names accepted in `Origin` besides loopback ones.
    allowed_origins: Option<Vec<String>>,
    /// Largest request body (default 4 MiB; larger is `413`).
    #[schemars(range(min = 1))]
    max_body_bytes: Option<u64>,
    /// Most legacy sessions open at once (default 1024); past it the idle session idle
    /// longest ends, and with every session in use `503`.
    #[schemars(range(min = 1))]
    max_sessions: Option<u64>,
    /// Most legacy sessions one client holds (default 256): its principal with `auth`,
    /// else its address; past it its own idle session idle longest ends, and with all
    /// of its sessions in use `429`.
    #[schemars(range(min = 1))]
    max_sessions_per_client: Option<u64>,
    /// Most unanswered requests of one legacy session (default 64; past it `429`).
    #[schemars(range(min = 1))]
    max_in_flight_per_session: Option<u64>,
    /// Most connections served at once (default 512).
    #[schemars(range(min = 1))]
    max_connections: Option<u64>,
    /// A legacy session idle this long ends (default 600).
    #[schemars(range(min = 1))]
    session_idle_seconds: Option<u64>,
    /// A connection on which nothing moves this long closes (default 60).
    #[schemars(range(min = 1))]
    idle_timeout_seconds: Option<u64>,
    /// A request head must arrive within this long (default 10).
    #[schemars(range(min = 1))]
    header_read_timeout_seconds: Option<u64>,
    /// A request body must arrive within this long (default 30).
    #[schemars(range(min = 1))]
    body_read_timeout_seconds: Option<u64>,
}

/// `surface`.
#[derive(JsonSchema)]
#[serde(rename_all = "camelCase")]
enum Surface {
    Direct,
    Dispatcher,
}

/// `gateway.auth`.
#[derive(JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub(super) struct Auth {
    /// This gateway's canonical URL, the audience of its tokens.
    resource: String,
    /// The authorization servers hosts get tokens from.
    authorization_servers: Option<Vec<String>>,
    /// Scopes every request's token must hold.
    required_scopes: Option<Vec<String>>,
    /// Scopes the metadata lists (default: the required ones).
    scopes_supported: Option<Vec<String>>,
    /// Bearer JWTs.
    jwt: Option<Jwt>,
    /// Static API keys.
    api_keys: Option<Vec<ApiKey>>,
}

/// `gateway.auth.jwt`.
#[derive(JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub(super) struct Jwt {
    /// The `iss` tokens carry.
    issuer: String,
    /// The `aud` they carry (default: `resource`).
    audience: Option<String>,
    /// A JWKS file; or `jwksUri`; or neither: the issuer's metadata names the keys.
    jwks_file: Option<String>,
    /// A JWKS URL (https, or http to this machine).
    jwks_uri: Option<String>,
    /// How old the keys in use may be, the bound within which a removed key is refused:
    /// a `jwksFile` is read again (default 5), the `jwksUri` fetched again (default 60).
    #[schemars(range(min = 1))]
    jwks_refresh_seconds: Option<u64>,
    /// Algorithms accepted.
    algorithms: Option<Vec<String>>,
    /// Clock skew allowed, at most 300.
    #[schemars(range(min = 1))]
    leeway_seconds: Option<u64>,
}

/// One of `gateway.auth.apiKeys`: `key` or `keyEnv`.
#[derive(JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub(super) struct ApiKey {
    /// Names the key in logs and views.
    name: String,
    /// The key itself, at least 16 characters.
    #[schemars(length(min = 16))]
    key: Option<String>,
    /// The environment variable holding it.
    key_env: Option<String>,
    /// The principal it stands for (default: `name`).
    subject: Option<String>,
    /// Its scopes.
    scopes: Option<Vec<String>>,
}

/// `gateway.pins`.
#[derive(JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub(super) struct Pins {
    /// Where the approved definitions are kept.
    file: String,
    /// A pinned tool that changed: hidden (default) or asked about.
    on_change: Option<OnChange>,
    /// A tool nobody approved.
    unpinned: Option<Unpinned>,
}

/// `pins.onChange`.
#[derive(JsonSchema)]
#[serde(rename_all = "camelCase")]
enum OnChange {
    Hide,
    Ask,
}

/// `pins.unpinned`.
#[derive(JsonSchema)]
#[serde(rename_all = "camelCase")]
enum Unpinned {
    Allow,
    Hide,
    Ask,
}

/// One of `gateway.views`.
#[derive(JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub(super) struct View {
    /// Names it in logs.
    name: Option<String>,
    /// Principals it is for, by subject.
    subjects: Option<Vec<String>>,
    /// Principals it is for, by a scope they hold.
    scopes: Option<Vec<String>>,
    /// Principals it is for, by the API key they used.
    credentials: Option<Vec<String>>,
    /// The servers it shows (default: all), by key.
    upstreams: Option<Vec<String>>,
    /// Only exposed tools matching these are shown.
    #[schemars(inner(regex(pattern = r"^\S+$")))]
    allow_tools: Option<Vec<String>>,
    /// Exposed tools matching these are not shown.
    #[schemars(inner(regex(pattern = r"^\S+$")))]
    deny_tools: Option<Vec<String>>,
    /// Its tools as the upstreams' own or as three dispatcher tools.
    surface: Option<Surface>,
}

/// The revisions a server may be pinned to, from the revision table.
fn revision(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let all: Vec<&str> = mcp_types::Revision::ALL
        .iter()
        .map(|r| r.as_str())
        .collect();
    schemars::json_schema!({"type": "string", "enum": all})
}

/// The JSON Schema of the configuration file (2020-12).
pub fn schema() -> Value {
    let mut schema = generator().into_root_schema_for::<ConfigFile>().to_value();
    without_null(&mut schema);
    schema
}

/// The generator: JSON Schema 2020-12.
fn generator() -> schemars::SchemaGenerator {
    schemars::generate::SchemaSettings::draft2020_12().into_generator()
}

/// `schema` without the `null` an `Option` member gets: leaving a member out is how the
/// file says "default", and the reader refuses `null` for some of them.
fn without_null(schema: &mut Value) {
    match schema {
        Value::Object(obj) => {
            if let Some(Value::Array(types)) = obj.get_mut("type") {
                types.retain(|t| t != "null");
                if let [only] = types.as_slice() {
                    let only = only.clone();
                    obj.insert("type".into(), only);
                }
            }
            if let Some(Value::Array(any)) = obj.get("anyOf") {
                let null = serde_json::json!({"type": "null"});
                let rest: Vec<Value> = any.iter().filter(|s| **s != null).cloned().collect();
                if let ([one], true) = (rest.as_slice(), rest.len() < any.len()) {
                    let one = one.clone();
                    obj.remove("anyOf");
                    if let Value::Object(one) = one {
                        obj.extend(one);
                    }
                }
            }
            obj.values_mut().for_each(without_null);
        }
        Value::Array(items) => items.iter_mut().for_each(without_null),
        _ => {}
    }
}

/// The members an object of type `T` may hold, as its schema lists them.
pub(super) fn keys_of<T: JsonSchema>() -> Vec<String> {
    let schema = generator().into_root_schema_for::<T>();
    match schema.get("properties").and_then(Value::as_object) {
        Some(properties) => properties.keys().cloned().collect(),
        None => Vec::new(),
    }
}
