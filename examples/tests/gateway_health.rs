//! The gateway binary on HTTP serves `/healthz` and `/readyz` beside `/mcp`: ready, with
//! each upstream's state, once its `required` upstream is connected.

use std::time::Duration;

use serde_json::json;

mod common;
use common::{example, http_gateway};

#[tokio::test]
async fn the_http_gateway_answers_probes_with_its_upstreams_state() {
    let dir = std::env::temp_dir().join(format!("mcp-gateway-health-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let config = dir.join("gateway.json");
    let body = json!({"mcpServers": {"echo": {"command": example("echo-server"), "required": true}},
            "gateway": {"startupWaitMillis": 60000}});
    std::fs::write(&config, body.to_string()).expect("config");
    let (_gateway, url) = http_gateway(&config).await;
    let base = url.trim_end_matches("/mcp");
    let live =
        mcp_client::fetch::redirect_of(&format!("{base}/healthz"), Duration::from_secs(5)).await;
    assert!(matches!(live, Ok(None)), "{live:?}");
    let ready =
        mcp_client::fetch::get_json(&format!("{base}/readyz"), 65536, Duration::from_secs(5))
            .await
            .expect("200 with JSON");
    assert_eq!(ready["ready"], true, "{ready}");
    let echo = &ready["detail"]["upstreams"][0];
    assert_eq!(
        (echo["key"].as_str(), echo["connected"].as_bool()),
        (Some("echo"), Some(true))
    );
    assert_eq!(echo["required"], true);
    let _ = std::fs::remove_dir_all(&dir);
}
