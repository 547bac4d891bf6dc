//! An in-memory duplex pair: frames moved, never encoded.

use async_trait::async_trait;
use parking_lot::Mutex;
use tokio::sync::mpsc;

use super::stop::Stop;
use super::{CloseReason, CloseSlot, Closed, Incoming, Transport, TrySendError};
use crate::jsonrpc::Frame;

/// One end of an in-memory duplex pair; see [`memory_pair`].
pub struct MemoryTransport {
    tx: Mutex<Option<mpsc::Sender<Frame>>>,
    rx: tokio::sync::Mutex<mpsc::Receiver<Frame>>,
    closed: CloseSlot,
    shutdown: Stop,
}

/// Two connected in-memory transports: what one sends, the other receives. Frames are
/// moved, never encoded. `capacity` frames may wait in each direction.
pub fn memory_pair(capacity: usize) -> (MemoryTransport, MemoryTransport) {
    let (atx, brx) = mpsc::channel(capacity.max(1));
    let (btx, arx) = mpsc::channel(capacity.max(1));
    let end = |tx, rx| MemoryTransport {
        tx: Mutex::new(Some(tx)),
        rx: tokio::sync::Mutex::new(rx),
        closed: CloseSlot::default(),
        shutdown: Stop::default(),
    };
    (end(atx, arx), end(btx, brx))
}

#[async_trait]
impl Transport for MemoryTransport {
    async fn send(&self, frame: Frame) -> Result<(), Closed> {
        let tx = self.tx.lock().clone();
        let Some(tx) = tx else {
            return Err(Closed(self.close_reason().unwrap_or(CloseReason::Closed)));
        };
        tx.send(frame)
            .await
            .map_err(|_| Closed(CloseReason::PeerClosed))
    }

    fn try_send(&self, frame: Frame) -> Result<(), TrySendError> {
        let tx = self.tx.lock().clone();
        let Some(tx) = tx else {
            let reason = self.close_reason().unwrap_or(CloseReason::Closed);
            return Err(TrySendError::Closed(Closed(reason)));
        };
        tx.try_send(frame).map_err(|e| match e {
            mpsc::error::TrySendError::Full(f) => TrySendError::WouldWait(Box::new(f)),
            mpsc::error::TrySendError::Closed(_) => {
                TrySendError::Closed(Closed(CloseReason::PeerClosed))
            }
        })
    }

    async fn recv(&self) -> Result<Incoming, Closed> {
        if let Some(r) = self.closed.get() {
            return Err(Closed(r));
        }
        let mut rx = match self.rx.try_lock() {
            Ok(rx) => rx,
            Err(_) => self.rx.lock().await,
        };
        match self.shutdown.until(rx.recv()).await {
            Some(Some(f)) => Ok(Incoming::Frame(f)),
            Some(None) => Err(Closed(self.closed.record(CloseReason::PeerClosed))),
            None => Err(Closed(self.closed.record(CloseReason::Closed))),
        }
    }

    async fn close(&self) {
        self.closed.record(CloseReason::Closed);
        self.tx.lock().take();
        self.shutdown.set();
    }

    fn close_reason(&self) -> Option<CloseReason> {
        self.closed.get()
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::frame;
    use super::*;
    use crate::Message;

    #[tokio::test]
    async fn memory_pair_moves_frames_and_reports_closing() {
        let (a, b) = memory_pair(4);
        a.send(frame(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#))
            .await
            .expect("send");
        let Incoming::Frame(Frame::Single(Message::Request(r))) = b.recv().await.expect("recv")
        else {
            panic!("request")
        };
        assert_eq!(r.method, "ping");
        a.close().await;
        assert_eq!(b.recv().await.unwrap_err(), Closed(CloseReason::PeerClosed));
        assert_eq!(a.close_reason(), Some(CloseReason::Closed));
        assert!(a
            .send(frame(r#"{"jsonrpc":"2.0","method":"x"}"#))
            .await
            .is_err());
    }
}
