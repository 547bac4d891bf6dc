//! `/healthz` and `/readyz`: served without credentials or a loopback `Host` (probes come
//! from an orchestrator), readiness as the `Health` says, its details only to a request
//! that passes the `Host` check; the MCP endpoint's own checks unchanged.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Full};
use mcp_server::auth::{ApiKey, ApiKeys, Authorization, Principal, ProtectedResource};
use mcp_server::http::{Health, HttpOptions, Readiness, StreamableHttp};
use mcp_server::Server;
use serde_json::{json, Value};

#[derive(Default)]
struct Switch(AtomicBool);

impl Health for Switch {
    fn readiness(&self) -> Readiness {
        let ready = self.0.load(Ordering::SeqCst);
        Readiness::new(
            ready,
            json!({"upstreams": [{"key": "a", "connected": ready}]}),
        )
    }
}

async fn get(http: &StreamableHttp, path: &str, host: &str) -> (StatusCode, String) {
    let req = Request::get(path)
        .header("host", host)
        .body(Full::new(Bytes::new()))
        .expect("request");
    let resp = http.handle(req).await;
    let status = resp.status();
    let body = resp.into_body().collect().await.map(|b| b.to_bytes());
    (
        status,
        String::from_utf8_lossy(&body.unwrap_or_default()).into_owned(),
    )
}

#[tokio::test]
async fn probes_answer_as_the_health_says_and_details_go_only_to_allowed_hosts() {
    let switch = Arc::new(Switch::default());
    let options = HttpOptions::default().health(switch.clone());
    let http = StreamableHttp::new(Server::new(mcp_examples::echo_tools()), options);

    assert_eq!(
        get(&http, "/healthz", "10.0.0.7:8080").await,
        (StatusCode::OK, "ok\n".into())
    );
    let (status, body) = get(&http, "/readyz", "10.0.0.7:8080").await;
    assert_eq!(
        (status, body.as_str()),
        (StatusCode::SERVICE_UNAVAILABLE, "not ready\n")
    );
    let (status, body) = get(&http, "/readyz", "127.0.0.1:8080").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    let v: Value = serde_json::from_str(&body).expect("json");
    assert_eq!(v["ready"], false);
    assert_eq!(v["detail"]["upstreams"][0]["key"], "a");

    switch.0.store(true, Ordering::SeqCst);
    assert_eq!(
        get(&http, "/readyz", "10.0.0.7:8080").await.0,
        StatusCode::OK
    );
    let (_, body) = get(&http, "/readyz", "localhost").await;
    assert_eq!(
        serde_json::from_str::<Value>(&body).expect("json")["ready"],
        true
    );
    assert_eq!(
        get(&http, "/mcp", "10.0.0.7:8080").await.0,
        StatusCode::FORBIDDEN
    );
    let post = Request::post("/healthz")
        .header("host", "127.0.0.1")
        .body(Full::new(Bytes::new()))
        .expect("request");
    assert_eq!(
        http.handle(post).await.status(),
        StatusCode::METHOD_NOT_ALLOWED
    );
}

#[tokio::test]
async fn where_tokens_are_required_probes_answer_without_one_but_give_no_details() {
    let switch = Arc::new(Switch(AtomicBool::new(true)));
    let resource = ProtectedResource::new("https://gw.example.com/mcp").expect("resource");
    let keys = ApiKeys::new().with(ApiKey::new("k", "0123456789abcdef", Principal::new("p")));
    let options = HttpOptions::default()
        .health(switch)
        .authorization(Authorization::new(keys, resource));
    let http = StreamableHttp::new(Server::new(mcp_examples::echo_tools()), options);
    assert_eq!(get(&http, "/healthz", "10.0.0.7").await.0, StatusCode::OK);
    let (status, body) = get(&http, "/readyz", "127.0.0.1").await;
    assert_eq!((status, body.as_str()), (StatusCode::OK, "ready\n"));
    // The MCP endpoint still wants a token.
    assert_eq!(
        get(&http, "/mcp", "127.0.0.1").await.0,
        StatusCode::UNAUTHORIZED
    );
}

#[tokio::test]
async fn without_a_health_there_are_no_probe_paths() {
    let http = StreamableHttp::new(
        Server::new(mcp_examples::echo_tools()),
        HttpOptions::default(),
    );
    assert_eq!(
        get(&http, "/healthz", "127.0.0.1").await.0,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        get(&http, "/readyz", "127.0.0.1").await.0,
        StatusCode::NOT_FOUND
    );
}
