//! [`ClientOptions`] and [`CallOptions`]: how a client behaves, and how one request does.
//! Both are `#[non_exhaustive]`: build them from `Default` with the setters, each named
//! after its field, so a new option is not a breaking change.

use std::sync::Arc;
use std::time::Duration;

use mcp_types::protocol::{
    ClientCapabilities, Implementation, ListChangedCapability, ProgressNotificationParams,
};
use mcp_types::schema::ValidationLimits;
use mcp_types::Revision;
use serde_json::Map;
use tokio::sync::mpsc;

use crate::EraChoice;

/// How a [`Client`](crate::Client) presents itself and behaves.
///
/// Built from [`ClientOptions::default`] with the setters, each named after its field:
///
/// ```
/// # use std::time::Duration;
/// use mcp_client::{ClientOptions, EraChoice};
/// let o = ClientOptions::default()
///     .era(EraChoice::Modern)
///     .probe_timeout(Duration::from_secs(2));
/// assert_eq!(o.era, EraChoice::Modern);
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ClientOptions {
    /// `clientInfo`.
    pub info: Implementation,
    /// What the client declares; set the parts its [`ClientHandler`](crate::ClientHandler)
    /// implements.
    pub capabilities: ClientCapabilities,
    /// Era selection.
    pub era: EraChoice,
    /// Revisions the client accepts.
    pub supported: Vec<Revision>,
    /// Default timeout of a request (`None`: wait as long as the connection lives).
    pub request_timeout: Option<Duration>,
    /// How long to wait for the `server/discover` probe before assuming a legacy server.
    pub probe_timeout: Duration,
    /// Most `InputRequiredResult` rounds for one request.
    pub max_input_rounds: usize,
    /// Bounds for validating structured results against output schemas.
    pub validation: ValidationLimits,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            info: Implementation {
                name: env!("CARGO_PKG_NAME").into(),
                version: env!("CARGO_PKG_VERSION").into(),
                ..Default::default()
            },
            capabilities: ClientCapabilities::default(),
            era: EraChoice::Detect,
            supported: Revision::ALL.to_vec(),
            request_timeout: Some(Duration::from_secs(300)),
            probe_timeout: Duration::from_secs(10),
            max_input_rounds: 16,
            validation: ValidationLimits::default(),
        }
    }
}

impl ClientOptions {
    /// Declares sampling support.
    pub fn with_sampling(mut self) -> Self {
        self.capabilities.sampling = Some(Map::new());
        self
    }

    /// Declares elicitation support (form mode).
    pub fn with_elicitation(mut self) -> Self {
        self.capabilities.elicitation = Some(Map::new());
        self
    }

    /// Declares roots support.
    pub fn with_roots(mut self) -> Self {
        self.capabilities.roots = Some(ListChangedCapability::default());
        self
    }
}

mcp_types::setters! {
    ClientOptions {
        /// Sets [`ClientOptions::info`], the `clientInfo` sent to the server.
        info: Implementation;
        /// Sets [`ClientOptions::capabilities`] whole (see also
        /// [`ClientOptions::with_sampling`] and its siblings).
        capabilities: ClientCapabilities;
        /// Sets [`ClientOptions::era`].
        era: EraChoice;
        /// Sets [`ClientOptions::supported`], the revisions the client accepts.
        supported: Vec<Revision>;
        /// Sets [`ClientOptions::request_timeout`]; `None` waits as long as the connection
        /// lives.
        request_timeout: Option<Duration>;
        /// Sets [`ClientOptions::probe_timeout`].
        probe_timeout: Duration;
        /// Sets [`ClientOptions::max_input_rounds`].
        max_input_rounds: usize;
        /// Sets [`ClientOptions::validation`].
        validation: ValidationLimits;
    }
}

/// Options of one request.
///
/// Built from [`CallOptions::default`] with the setters, each named after its field:
///
/// ```
/// # use std::time::Duration;
/// let o = mcp_client::CallOptions::default().timeout(Duration::from_secs(5));
/// assert_eq!(o.timeout, Some(Duration::from_secs(5)));
/// ```
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct CallOptions {
    /// Overrides [`ClientOptions::request_timeout`].
    pub timeout: Option<Duration>,
    /// Receives the request's progress notifications.
    pub progress: Option<mpsc::UnboundedSender<ProgressNotificationParams>>,
    /// Return a 2026 `InputRequiredResult` to the caller instead of answering it with the
    /// [`ClientHandler`](crate::ClientHandler) (a proxy relays it to its host).
    pub return_input_required: bool,
    /// Cancels the request when notified: `notifications/cancelled` goes to the server and
    /// the call returns [`ClientError::Cancelled`](crate::ClientError::Cancelled).
    pub cancel: Option<Arc<tokio::sync::Notify>>,
}

impl CallOptions {
    /// Gives this request `timeout` instead of [`ClientOptions::request_timeout`].
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Sends the request's progress notifications to `progress`.
    #[must_use]
    pub fn progress(mut self, progress: mpsc::UnboundedSender<ProgressNotificationParams>) -> Self {
        self.progress = Some(progress);
        self
    }

    /// Cancels the request when `cancel` is notified (see [`CallOptions::cancel`]).
    #[must_use]
    pub fn cancel(mut self, cancel: Arc<tokio::sync::Notify>) -> Self {
        self.cancel = Some(cancel);
        self
    }
}

mcp_types::setters! {
    CallOptions {
        /// Sets [`CallOptions::return_input_required`].
        return_input_required: bool;
    }
}
