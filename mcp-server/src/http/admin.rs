//! The admin endpoint: `/healthz`, `/readyz` and `/metrics` on a listener of their own,
//! for an orchestrator and a scraper, wherever MCP is served (stdio, or HTTP with tokens,
//! where `/metrics` is never on the MCP listener: metrics name what no single caller's
//! view may include). Nothing else is served there; no MCP request reaches it.
//!
//! Bind it where only the operator's network reaches it. A browser page is still kept
//! out: a request whose `Host` is a name (not an address literal, `localhost`, or one of
//! [`AdminOptions::allowed_hosts`]) may come from a page whose name was rebound to this
//! machine, and one with an `Origin` of another host is a page's, so neither gets
//! readiness details or metrics (`403`, or a probe's bare status).

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use http::{header, Method, Request, Response, StatusCode};

use super::checks::{header_str, host_of};
use super::conn::{serve_endpoint, Bounds, Endpoint};
use super::reply::{empty, respond};
use super::{health, metrics, HealthCheck, HttpBody, MetricsSource, METRICS_PATH};

/// What the admin endpoint serves, and the bounds of its connections.
///
/// ```
/// # use std::time::Duration;
/// let o = mcp_server::http::AdminOptions::default()
///     .allowed_hosts(vec!["gateway.internal".into()])
///     .max_connections(8);
/// assert_eq!(o.max_connections, 8);
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct AdminOptions {
    /// Answers `/healthz` and `/readyz` (default: neither is served).
    pub health: Option<HealthCheck>,
    /// Answers `/metrics` (default: not served).
    pub metrics: Option<MetricsSource>,
    /// Host names accepted in `Host` besides address literals and `localhost` (default:
    /// none): the names a scraper or a probe uses to reach this listener.
    pub allowed_hosts: Vec<String>,
    /// The most connections served at once (default 16).
    pub max_connections: usize,
    /// The request head must arrive within this long (default 5 s).
    pub header_read_timeout: Duration,
    /// A connection idle this long is closed (default 30 s).
    pub idle_timeout: Duration,
}

impl Default for AdminOptions {
    fn default() -> Self {
        AdminOptions {
            health: None,
            metrics: None,
            allowed_hosts: Vec::new(),
            max_connections: 16,
            header_read_timeout: Duration::from_secs(5),
            idle_timeout: Duration::from_secs(30),
        }
    }
}

impl AdminOptions {
    /// Serves `/healthz` and `/readyz` with `health`.
    #[must_use]
    pub fn health(mut self, health: Arc<dyn super::Health>) -> Self {
        self.health = Some(HealthCheck(health));
        self
    }

    /// Serves `/metrics` with `metrics`.
    #[must_use]
    pub fn metrics(mut self, metrics: Arc<dyn super::Metrics>) -> Self {
        self.metrics = Some(MetricsSource(metrics));
        self
    }

    /// Sets [`AdminOptions::allowed_hosts`].
    #[must_use]
    pub fn allowed_hosts(mut self, hosts: Vec<String>) -> Self {
        self.allowed_hosts = hosts;
        self
    }

    /// Sets [`AdminOptions::max_connections`].
    #[must_use]
    pub fn max_connections(mut self, n: usize) -> Self {
        self.max_connections = n;
        self
    }

    /// Sets [`AdminOptions::header_read_timeout`].
    #[must_use]
    pub fn header_read_timeout(mut self, t: Duration) -> Self {
        self.header_read_timeout = t;
        self
    }

    /// Sets [`AdminOptions::idle_timeout`].
    #[must_use]
    pub fn idle_timeout(mut self, t: Duration) -> Self {
        self.idle_timeout = t;
        self
    }
}

/// The admin endpoint; cheap to clone.
#[derive(Debug, Clone)]
pub struct Admin {
    options: Arc<AdminOptions>,
}

impl Admin {
    /// An endpoint serving what `options` names.
    pub fn new(options: AdminOptions) -> Self {
        Admin {
            options: Arc::new(options),
        }
    }

    /// Answers one request: a probe, a scrape, or `404`.
    pub fn handle<B>(&self, req: &Request<B>) -> Response<HttpBody> {
        let o = &self.options;
        let (method, path) = (req.method(), req.uri().path());
        let trusted = self.trusted(req);
        if let Some(h) = &o.health {
            if let Some(r) = health::probe(h.0.as_ref(), method, path, trusted) {
                return r;
            }
        }
        match &o.metrics {
            Some(m) if path == METRICS_PATH && trusted => metrics::scrape(m.0.as_ref(), method),
            Some(_) if path == METRICS_PATH => {
                tracing::info!("admin: /metrics refused to a Host or Origin not allowed");
                respond(StatusCode::FORBIDDEN, empty(), None)
            }
            _ => respond(StatusCode::NOT_FOUND, empty(), None),
        }
    }

    /// Whether the request is not a browser page's: its `Host` an address, `localhost` or
    /// allowed, and any `Origin` of that same host.
    fn trusted<B>(&self, req: &Request<B>) -> bool {
        let authority = header_str(req.headers(), &header::HOST)
            .or_else(|| req.uri().authority().map(|a| a.as_str()));
        let Some(host) = authority.map(host_of) else {
            return false;
        };
        let known = host.eq_ignore_ascii_case("localhost")
            || host.parse::<std::net::IpAddr>().is_ok()
            || self
                .options
                .allowed_hosts
                .iter()
                .any(|a| a.eq_ignore_ascii_case(host));
        let same_origin = match header_str(req.headers(), &header::ORIGIN) {
            None => true,
            Some(origin) => origin
                .split_once("://")
                .is_some_and(|(_, rest)| host_of(rest).eq_ignore_ascii_case(host)),
        };
        known && same_origin && req.method() != Method::OPTIONS
    }
}

impl Endpoint for Admin {
    fn bounds(&self) -> Bounds {
        let o = &self.options;
        Bounds {
            max_connections: o.max_connections,
            header_read_timeout: o.header_read_timeout,
            idle_timeout: o.idle_timeout,
        }
    }

    fn answer(
        &self,
        req: Request<hyper::body::Incoming>,
        _peer: SocketAddr,
    ) -> impl Future<Output = Response<HttpBody>> + Send {
        std::future::ready(self.handle(&req))
    }
}

/// Binds `addr` and serves the admin endpoint there until `shutdown` resolves (then the
/// requests being answered finish, for up to a second). Returns the bound address and the
/// serving task.
pub async fn bind_admin(
    addr: SocketAddr,
    options: AdminOptions,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<(SocketAddr, tokio::task::JoinHandle<std::io::Result<()>>)> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    let admin = Admin::new(options);
    Ok((
        local,
        tokio::spawn(serve_endpoint(
            listener,
            admin,
            shutdown,
            Duration::from_secs(1),
        )),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::{Health, Metrics, Readiness};

    struct Up;
    impl Health for Up {
        fn readiness(&self) -> Readiness {
            Readiness::new(false, serde_json::json!({"upstream": "down"}))
        }
    }
    impl Metrics for Up {
        fn render(&self) -> String {
            "calls_total 3\n".into()
        }
    }

    fn get(host: &str, origin: Option<&str>, path: &str) -> Request<()> {
        let mut r = Request::get(path).header("host", host);
        if let Some(o) = origin {
            r = r.header("origin", o);
        }
        r.body(()).expect("request")
    }

    fn admin() -> Admin {
        Admin::new(
            AdminOptions::default()
                .health(Arc::new(Up))
                .metrics(Arc::new(Up))
                .allowed_hosts(vec!["gw.internal".into()]),
        )
    }

    #[test]
    fn probes_and_scrapes_are_answered_to_addresses_and_allowed_names() {
        let a = admin();
        for host in [
            "10.0.0.7:9090",
            "[::1]:9090",
            "localhost:9090",
            "gw.internal",
        ] {
            assert_eq!(
                a.handle(&get(host, None, "/metrics")).status(),
                200,
                "{host}"
            );
            let ready = a.handle(&get(host, None, "/readyz"));
            assert_eq!(ready.status(), 503);
            assert_eq!(
                ready.headers()["content-type"],
                "application/json",
                "details for {host}"
            );
        }
        assert_eq!(a.handle(&get("10.0.0.7", None, "/healthz")).status(), 200);
        assert_eq!(a.handle(&get("10.0.0.7", None, "/mcp")).status(), 404);
    }

    #[test]
    fn a_browser_page_gets_no_metrics_or_details() {
        let a = admin();
        for (host, origin) in [
            ("evil.example:9090", None),
            ("127.0.0.1:9090", Some("https://evil.example")),
        ] {
            assert_eq!(a.handle(&get(host, origin, "/metrics")).status(), 403);
            let ready = a.handle(&get(host, origin, "/readyz"));
            assert_eq!(ready.status(), 503, "a probe's status still");
            assert_ne!(ready.headers()["content-type"], "application/json");
        }
        let same = get("127.0.0.1:9090", Some("http://127.0.0.1:9090"), "/metrics");
        assert_eq!(a.handle(&same).status(), 200);
    }

    #[test]
    fn what_is_not_configured_is_not_found() {
        let a = Admin::new(AdminOptions::default());
        assert_eq!(a.handle(&get("127.0.0.1", None, "/metrics")).status(), 404);
        assert_eq!(a.handle(&get("127.0.0.1", None, "/healthz")).status(), 404);
    }
}
