//! What this side cannot take as an answer: a line that is no frame, an answer under an
//! id no request has, an error answer without an id. Each fails the request it can be
//! tied to at once, instead of leaving it to wait for its timeout, and is otherwise only
//! logged: never guessed among several requests waiting.
//!
//! A line that is no frame is tied by the id a look at its beginning finds (an answer
//! cut short still names it, see [`LineHint`]), else, when it may be an answer (it has a
//! `result` or `error` member, or the look could not tell), to the only request waiting.
//! A line that is a request or notification, a whole object without an answer's members,
//! or plain text (what a server that prints to stdout writes) answers nothing.
//!
//! An answer whose id no request has fails the only request waiting, if the id is not one
//! this side gave out (its ids are the integers from 1 up, unless a caller picked its
//! own): a server that echoes a wrong id answered that request, but its result cannot be
//! trusted to be that request's, so the request fails saying so, never gets the result.
//! An id this side gave out is a request no longer waiting (timed out, cancelled), whose
//! late answer is dropped.

use std::sync::atomic::Ordering;

use serde_json::value::RawValue;

use super::{Peer, RpcError};
use crate::jsonrpc::{ErrorResponse, Message, RequestId};
use crate::transport::{LineHint, LineShape};
use crate::{codes, ErrorObject};

impl Peer {
    /// A line that was no frame: answered with its error (id `null`), and the request it
    /// can be tied to fails with what was wrong.
    pub(super) async fn invalid_line(&self, error: ErrorObject, hint: Box<LineHint>) {
        tracing::warn!(code = error.code, data = ?error.data, fault = %hint.fault, "invalid message from peer");
        if let Some(id) = self.tie_line(&hint) {
            let detail = match &error.data {
                Some(serde_json::Value::String(s)) => s.clone(),
                _ => error.message.clone(),
            };
            let why = ErrorObject::new(
                codes::INTERNAL_ERROR,
                format!("the answer could not be read: {} ({detail})", hint.fault),
            );
            tracing::warn!(%id, "the unreadable line fails the request it is tied to");
            self.fail_request(&id, why);
        }
        let _ = self
            .send(Message::Error(ErrorResponse::new(None, error)))
            .await;
    }

    fn tie_line(&self, hint: &LineHint) -> Option<RequestId> {
        let pending = &self.shared.pending;
        match (&hint.id, hint.shape) {
            (_, LineShape::Call) => None,
            (Some(id), _) if pending.contains(id) => Some(id.clone()),
            (Some(id), _) if self.gave(id) => None,
            (_, LineShape::Answer | LineShape::Unknown) => pending.sole(),
            _ => None,
        }
    }

    /// An answer to `id`, which no request waits for.
    pub(super) fn stray_answer(&self, id: &RequestId, answer: Result<Box<RawValue>, ErrorObject>) {
        if self.gave(id) {
            tracing::debug!(%id, "answer to a request that is no longer waiting");
            return;
        }
        let Some(only) = self.shared.pending.sole() else {
            tracing::warn!(%id, "peer answered an id no request has");
            return;
        };
        tracing::warn!(%id, tied = %only, "peer answered an id no request has; it fails the only request waiting");
        let what = match answer {
            Ok(_) => "a result".to_owned(),
            Err(e) => format!("error {}: {}", e.code, e.message),
        };
        let why = ErrorObject::new(
            codes::INTERNAL_ERROR,
            format!("the answer came with id {id}, which no request has ({what})"),
        );
        self.fail_request(&only, why);
    }

    /// An error answer whose id is `null`: the peer could not read something this side
    /// sent. It fails the request it can be tied to (the only one waiting, or the one
    /// written last when the peer says it could not read a message), so that request does
    /// not wait for its timeout; anything else is only logged.
    pub(super) fn unaddressed_error(&self, error: ErrorObject) {
        let unreadable = matches!(error.code, codes::PARSE_ERROR | codes::INVALID_REQUEST);
        let last = RequestId::from(self.shared.next_id.load(Ordering::Relaxed) - 1);
        let tied = self
            .shared
            .pending
            .sole()
            .or_else(|| (unreadable && self.shared.pending.contains(&last)).then_some(last));
        match tied {
            Some(id) => {
                tracing::warn!(%id, code = error.code, message = %error.message, "peer reported an error without an id; it fails the request it is tied to");
                self.resolve(&id, Err(error));
            }
            None => {
                tracing::warn!(code = error.code, message = %error.message, "peer reported an error")
            }
        }
    }

    /// Whether `id` is one this side gave out ([`Peer::next_id`]).
    fn gave(&self, id: &RequestId) -> bool {
        let RequestId::Number(n) = id else {
            return false;
        };
        let next = self.shared.next_id.load(Ordering::Relaxed);
        n.as_i64().is_some_and(|n| (1..next).contains(&n))
    }

    fn fail_request(&self, id: &RequestId, why: ErrorObject) {
        if let Some(waiter) = self.shared.pending.take(id) {
            waiter.fail(RpcError::BadAnswer(why));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use async_trait::async_trait;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};
    use tokio::io::{ReadHalf, WriteHalf};

    use super::*;
    use crate::jsonrpc::{Notification, Request};
    use crate::rpc::Inbound;
    use crate::transport::LineTransport;

    struct Deaf;

    #[async_trait]
    impl Inbound for Deaf {
        async fn request(&self, _peer: &Peer, r: Request) -> Message {
            crate::rpc::error_response(r.id, ErrorObject::new(-32601, "no"))
        }
        async fn notification(&self, _peer: &Peer, _n: Notification) {}
    }

    /// A client peer on a pipe, and the server's ends: what the client wrote, line by
    /// line, and where the server writes raw bytes.
    struct Wired {
        peer: Peer,
        sent: Lines<BufReader<ReadHalf<DuplexStream>>>,
        server: WriteHalf<DuplexStream>,
    }

    fn wired() -> Wired {
        wired_with_limit(crate::transport::DEFAULT_MAX_MESSAGE_BYTES)
    }

    fn wired_with_limit(max_message_bytes: usize) -> Wired {
        let (client, server) = tokio::io::duplex(1 << 16);
        let (cr, cw) = tokio::io::split(client);
        let transport =
            LineTransport::new(BufReader::new(cr), cw).with_max_message_bytes(max_message_bytes);
        let (peer, _) = Peer::start(Arc::new(transport), Arc::new(Deaf));
        let (sr, sw) = tokio::io::split(server);
        Wired {
            peer,
            sent: BufReader::new(sr).lines(),
            server: sw,
        }
    }

    impl Wired {
        /// Sends a request (a 60 s timeout, which no test waits for) and waits until the
        /// server has it.
        async fn call(&mut self) -> tokio::task::JoinHandle<Result<Box<RawValue>, RpcError>> {
            let peer = self.peer.clone();
            let call = tokio::spawn(async move {
                peer.request("x", None, Some(Duration::from_secs(60))).await
            });
            // Past the error answers the client wrote back for bad lines.
            loop {
                let line = self.sent.next_line().await.expect("read").expect("a line");
                if line.contains("\"method\":\"x\"") {
                    return call;
                }
            }
        }

        async fn write(&mut self, bytes: &[u8]) {
            self.server.write_all(bytes).await.expect("write");
        }
    }

    /// What a call ended with: its result's text, or its error's message.
    async fn outcome(call: tokio::task::JoinHandle<Result<Box<RawValue>, RpcError>>) -> String {
        let ended = tokio::time::timeout(Duration::from_secs(10), call).await;
        match ended.expect("the call ends").expect("joined") {
            Ok(r) => format!("ok {}", r.get()),
            Err(RpcError::BadAnswer(e)) => format!("bad {} {}", e.code, e.message),
            Err(e) => format!("other {e}"),
        }
    }

    #[tokio::test]
    async fn an_answer_cut_short_fails_the_request_it_names() {
        let mut w = wired();
        let (one, two) = (w.call().await, w.call().await);
        w.write(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"content\":[{\"ty\n")
            .await;
        let two = outcome(two).await;
        assert!(
            two.starts_with("bad -32603 the answer could not be read: it is cut short ("),
            "{two}"
        );
        w.write(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n")
            .await;
        assert_eq!(outcome(one).await, "ok {}", "the other one is answered");
    }

    #[tokio::test]
    async fn an_unreadable_answer_fails_the_only_request_waiting() {
        let mut w = wired();
        let call = w.call().await;
        w.write(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"t\":\"\xff\"}}\n")
            .await;
        let got = outcome(call).await;
        assert!(
            got.starts_with("bad -32603 the answer could not be read: it is not valid UTF-8"),
            "{got}"
        );
        // Nothing to go by but a brace: still the only one waiting.
        let call = w.call().await;
        w.write(b"{\"jsonrpc\":\"2.0\",\"resu\n").await;
        let got = outcome(call).await;
        assert!(got.contains("it is cut short"), "{got}");
        let next = w.call().await;
        w.write(b"{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}\n")
            .await;
        assert_eq!(outcome(next).await, "ok {}", "the connection goes on");
    }

    #[tokio::test]
    async fn an_answer_over_the_limit_fails_the_request_it_names() {
        // Past the read buffer too: the line is skipped as it comes, its head kept.
        let mut w = wired_with_limit(200);
        let (one, two) = (w.call().await, w.call().await);
        let long = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"{}\"}}\n",
            "x".repeat(10_000)
        );
        w.write(long.as_bytes()).await;
        let got = outcome(one).await;
        assert!(
            got.starts_with(
                "bad -32603 the answer could not be read: it is longer than the message limit ("
            ),
            "{got}"
        );
        w.write(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\n")
            .await;
        assert_eq!(outcome(two).await, "ok {}");
    }

    #[tokio::test]
    async fn stray_output_and_broken_calls_fail_nothing() {
        let mut w = wired();
        let call = w.call().await;
        w.write(b"this is not json\n{\"also\": \"not json-rpc\"}\n")
            .await;
        w.write(b"{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"ping\",\"par\n")
            .await;
        w.write(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n")
            .await;
        assert_eq!(outcome(call).await, "ok {}");
    }

    #[tokio::test]
    async fn an_answer_under_an_unknown_id_fails_the_only_request_waiting() {
        let mut w = wired();
        let call = w.call().await;
        w.write(b"{\"jsonrpc\":\"2.0\",\"id\":\"nobody\",\"result\":{}}\n")
            .await;
        assert_eq!(
            outcome(call).await,
            "bad -32603 the answer came with id \"nobody\", which no request has (a result)"
        );
        // With two waiting it is not guessed at.
        let (two, three) = (w.call().await, w.call().await);
        w.write(b"{\"jsonrpc\":\"2.0\",\"id\":77,\"error\":{\"code\":1,\"message\":\"m\"}}\n")
            .await;
        w.write(b"{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":1}\n{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":2}\n")
            .await;
        assert_eq!(outcome(two).await, "ok 2");
        assert_eq!(outcome(three).await, "ok 1");
    }

    #[tokio::test]
    async fn a_late_answer_to_a_request_no_longer_waiting_fails_nothing() {
        let mut w = wired();
        let gone = w.call().await;
        gone.abort();
        let _ = gone.await;
        w.peer.forget(&RequestId::from(1));
        let call = w.call().await;
        w.write(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"late\"}\n")
            .await;
        w.write(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"cut\n")
            .await;
        w.write(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":\"mine\"}\n")
            .await;
        assert_eq!(outcome(call).await, "ok \"mine\"");
    }
}
