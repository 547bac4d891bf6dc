//! One entry of `mcpServers`, as the aggregator's [`UpstreamConfig`], with the checks its
//! members' types cannot make alone: `command` or `url` (and a `type` that agrees),
//! `legacySession` on a `command` server, `auth` or an `Authorization` header.

use std::collections::BTreeMap;
use std::sync::Arc;

use mcp_client::http::HttpConfig;
use mcp_client::StdioCommand;

use super::file::{self, ServerType, SessionKind};
use super::values::{Choice, HttpUrl, Pinned, Positive};
use super::{join, overrides, upstream_auth, user_auth, Problem};
use crate::aggregator::{UpstreamConfig, UpstreamTransport};
use crate::policy::GlobFilter;
use crate::sessions::{PerHostLimits, PoolLimits, SessionMode};

/// The server at `mcpServers.<key>`; `None` if it is disabled. `desk`: the connect
/// pages, for a `userAuth` of type `oauth`.
pub(super) fn upstream(
    key: String,
    server: file::Server,
    desk: Option<&Arc<crate::credentials::ConnectDesk>>,
) -> Result<Option<UpstreamConfig>, Problem> {
    let at = join("mcpServers", &key);
    // Each member by name, so that a member added to `file::Server` and not read here is
    // an unused variable, not a setting silently ignored.
    let file::Server {
        command,
        args,
        env,
        cwd,
        url,
        headers,
        kind,
        disabled,
        namespace,
        trusted,
        withhold_hints,
        protocol_version,
        allow_tools,
        deny_tools,
        session,
        max_pooled_sessions,
        max_host_sessions,
        host_session_idle_seconds,
        call_timeout_seconds,
        max_message_bytes,
        overrides,
        auth,
        user_auth,
        required,
        legacy_session,
    } = server;
    // Already left out unread (`leave_out_disabled`); read here all the same, so no
    // member of the type goes unread.
    if disabled == Some(true) {
        return Ok(None);
    }
    agrees(kind, command.is_some(), url.is_some(), &at)?;
    let transport = match (command, url) {
        (Some(command), None) => UpstreamTransport::Stdio(StdioCommand {
            command,
            args: args.unwrap_or_default(),
            env: env.unwrap_or_default().into_iter().collect(),
            cwd: cwd.map(Into::into),
        }),
        (None, Some(HttpUrl(url))) => http(url, headers.unwrap_or_default(), auth, &at)?,
        (Some(_), Some(_)) => {
            return Err(Problem::new(at, "has both `command` and `url`; give one"))
        }
        (None, None) => return Err(Problem::new(at, "needs `command` (stdio) or `url` (HTTP)")),
    };
    let per_user = match user_auth {
        None => None,
        Some(_) if !matches!(transport, UpstreamTransport::Http(_)) => {
            let at = join(&at, "userAuth");
            return Err(Problem::new(at, "is for a `url` server only"));
        }
        Some(u) => {
            let url = match &transport {
                UpstreamTransport::Http(h) => h.url.clone(),
                _ => String::new(),
            };
            Some(user_auth::user_auth(
                u,
                &join(&at, "userAuth"),
                &key,
                &url,
                desk,
            )?)
        }
    };
    if per_user.is_some() && has_authorization_header(&transport) {
        let at = join(&at, "headers");
        return Err(Problem::new(
            at,
            "an `Authorization` header would go with every user's requests: with `userAuth`, give the gateway's own credentials as `auth`",
        ));
    }
    let legacy_session = legacy_session == Some(true);
    if legacy_session && matches!(transport, UpstreamTransport::Http(_)) {
        let at = join(&at, "legacySession");
        return Err(Problem::new(at, "is for a `command` server only"));
    }
    Ok(Some(UpstreamConfig {
        key,
        namespace,
        trusted: trusted.unwrap_or(false),
        withhold_hints: withhold_hints.unwrap_or(false),
        transport,
        revision: protocol_version.map(|Pinned(r)| r),
        tools: Arc::new(GlobFilter {
            allow: allow_tools.map(|p| p.0),
            deny: deny_tools.map(|p| p.0).unwrap_or_default(),
        }),
        session: session_mode(
            session,
            max_pooled_sessions,
            max_host_sessions,
            host_session_idle_seconds,
        ),
        call_timeout: call_timeout_seconds.map(Positive::seconds),
        max_message_bytes: max_message_bytes.map(Positive::usize),
        overrides: Arc::new(overrides::overrides(overrides.unwrap_or_default())),
        required: required.unwrap_or(false),
        legacy_session,
        per_user,
    }))
}

/// Whether `transport` sends a configured `Authorization` header.
fn has_authorization_header(transport: &UpstreamTransport) -> bool {
    match transport {
        UpstreamTransport::Http(h) => h
            .headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("authorization")),
        _ => false,
    }
}

/// `Err` when the server's `type`, if any, says one transport and its members the other.
fn agrees(
    kind: Option<Choice<ServerType>>,
    command: bool,
    url: bool,
    at: &str,
) -> Result<(), Problem> {
    let at = || join(at, "type");
    match kind.map(|Choice(k)| k) {
        Some(ServerType::Stdio) if url => {
            Err(Problem::new(at(), "\"stdio\" needs `command`, not `url`"))
        }
        Some(ServerType::Stdio) | None => Ok(()),
        Some(_) if command => Err(Problem::new(
            at(),
            "an HTTP type needs `url`, not `command`",
        )),
        Some(_) => Ok(()),
    }
}

/// The transport of a `url` server: its headers, and the gateway's own tokens for it when
/// it has `auth`.
fn http(
    url: String,
    headers: BTreeMap<String, String>,
    auth: Option<file::UpstreamAuth>,
    at: &str,
) -> Result<UpstreamTransport, Problem> {
    let headers: Vec<(String, String)> = headers.into_iter().collect();
    let at = join(at, "auth");
    let auth = match auth {
        None => None,
        Some(_)
            if headers
                .iter()
                .any(|(k, _)| k.eq_ignore_ascii_case("authorization")) =>
        {
            return Err(Problem::new(
                at,
                "give `auth` or an `Authorization` header, not both",
            ))
        }
        Some(auth) => Some(upstream_auth::upstream_auth(auth, &at, &url)?),
    };
    let mut config = HttpConfig::new(url).headers(headers);
    config.auth = auth;
    Ok(UpstreamTransport::Http(config))
}

/// A server's `session` (`"pooled"`, the default, `"per-host"` or `"shared"`) with its
/// bounds.
fn session_mode(
    kind: Option<Choice<SessionKind>>,
    max_pooled: Option<Positive>,
    max_hosts: Option<Positive>,
    idle_seconds: Option<Positive>,
) -> SessionMode {
    let mut hosts = PerHostLimits::default();
    let mut pool = PoolLimits::default();
    if let Some(n) = max_hosts {
        hosts.max_sessions = n.usize();
    }
    if let Some(n) = max_pooled {
        pool.max_sessions = n.usize();
    }
    if let Some(idle) = idle_seconds {
        hosts.idle_timeout = idle.seconds();
        pool.idle_timeout = hosts.idle_timeout;
    }
    match kind.map(|Choice(k)| k) {
        None | Some(SessionKind::Pooled) => SessionMode::Pooled(pool.hosts(hosts)),
        Some(SessionKind::PerHost) => SessionMode::PerHost(hosts),
        Some(SessionKind::Shared) => SessionMode::Shared,
    }
}
