//! The stop signals a gateway process listens for.

use tokio::signal::unix::{signal, Signal, SignalKind};

/// `SIGTERM` and `SIGINT`, listened to from the start: one arriving while upstreams
/// start is taken once they have.
pub(super) struct StopSignals(Option<(Signal, Signal)>);

impl StopSignals {
    pub(super) fn listen() -> StopSignals {
        match (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) {
            (Ok(term), Ok(int)) => StopSignals(Some((term, int))),
            (Err(e), _) | (_, Err(e)) => {
                eprintln!("gateway: cannot listen for SIGTERM/SIGINT: {e}");
                StopSignals(None)
            }
        }
    }

    /// The name of the first of them to arrive.
    pub(super) async fn next(&mut self) -> &'static str {
        let Some((term, int)) = &mut self.0 else {
            return std::future::pending().await;
        };
        tokio::select! {
            _ = term.recv() => "SIGTERM",
            _ = int.recv() => "SIGINT",
        }
    }
}
