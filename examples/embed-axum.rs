//! Serves [`mcp_examples::embedded_app`]: an axum application with the gateway mounted at
//! `/gateway/mcp`, on the address given (default `127.0.0.1:8080`).

#[tokio::main]
async fn main() -> std::process::ExitCode {
    mcp_examples::init_logging();
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:8080".into());
    let (app, aggregator) = match mcp_examples::embedded_app().await {
        Ok(started) => started,
        Err(e) => {
            eprintln!("embed-axum: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let listener = match tokio::net::TcpListener::bind(&addr).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("embed-axum: {addr}: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    eprintln!("embed-axum: the gateway is at http://{addr}/gateway/mcp");
    let served = axum::serve(listener, app).await;
    aggregator.shutdown().await;
    match served {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("embed-axum: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
