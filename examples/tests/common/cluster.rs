//! Gateway replicas in separate processes, for the end-to-end tests of a cluster: free
//! ports, the configuration of a replica that finds the others in Redis, and HAProxy in
//! front of them (Debian's package, round-robin, no stickiness, health checks on
//! `/readyz`, a request whose server refuses it retried on another).

use std::path::{Path, PathBuf};

use super::example;

/// Free ports on 127.0.0.1, released for the processes to take.
pub fn free_ports(n: usize) -> Vec<u16> {
    let held: Vec<std::net::TcpListener> = (0..n)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0").expect("bind"))
        .collect();
    held.iter()
        .map(|l| l.local_addr().expect("addr").port())
        .collect()
}

/// HAProxy in front of `ports`, listening on `front`.
pub fn haproxy_config(dir: &Path, front: u16, ports: &[u16]) -> PathBuf {
    let servers: String = ports
        .iter()
        .enumerate()
        .map(|(i, p)| format!("  server g{i} 127.0.0.1:{p} check inter 500ms\n"))
        .collect();
    let text = format!(
        "global\n  maxconn 1024\ndefaults\n  mode http\n  timeout connect 2s\n  \
         timeout client 120s\n  timeout server 120s\nfrontend mcp\n  bind 127.0.0.1:{front}\n  \
         default_backend gateways\nbackend gateways\n  balance roundrobin\n  \
         option httpchk GET /readyz\n  http-check expect status 200\n  \
         timeout check 500ms\n  retries 3\n  option redispatch 1\n  \
         retry-on conn-failure empty-response\n{servers}"
    );
    let path = dir.join("haproxy.cfg");
    std::fs::write(&path, text).expect("write haproxy.cfg");
    path
}

/// Whether `GET /readyz` on 127.0.0.1:`port` answers `200`.
pub async fn ready(port: u16) -> bool {
    get(port, "/readyz").await.starts_with("HTTP/1.1 200")
}

/// The whole response to `GET path` on 127.0.0.1:`port` (empty when it cannot be had).
pub async fn get(port: u16, path: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let Ok(mut s) = tokio::net::TcpStream::connect(("127.0.0.1", port)).await else {
        return String::new();
    };
    let ask = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    let mut answer = Vec::new();
    if s.write_all(ask.as_bytes()).await.is_err() || s.read_to_end(&mut answer).await.is_err() {
        return String::new();
    }
    String::from_utf8_lossy(&answer).into_owned()
}

/// Replica `n`'s configuration with the registry in Redis at the URL in `url_file`,
/// announcing `port`.
pub fn registry_config(dir: &Path, n: usize, key: &Path, url_file: &Path, port: u16) -> PathBuf {
    let text = serde_json::json!({
        "mcpServers": {"conformance": {
            "command": example("conformance-server"), "args": ["--stdio"], "namespace": ""}},
        "gateway": {"startupWaitMillis": 60000, "cluster": {
            "replica": n, "keys": [{"name": "test", "secretFile": key}],
            "redis": {"urlFile": url_file, "prefix": "e2e"},
            "advertise": format!("http://127.0.0.1:{port}")}}});
    let path = dir.join(format!("registry-{n}.json"));
    std::fs::write(&path, text.to_string()).expect("write config");
    path
}
