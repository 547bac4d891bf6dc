//! [`AuditLog`]: records queued by the request path under one short lock, and written by
//! one thread of their own.
//!
//! The request path only copies the record's parts into a byte buffer (see
//! [`super::queue`]): no allocation, parsing, hashing, I/O or thread wake-up per call. The
//! writer thread sleeps while nothing is queued; woken by the first record, it waits one
//! `interval` (or until 64 records are waiting) for more, swaps the buffer for its empty
//! one, and does the rest: redaction, digests, serialization, one seal per sink, writes, a
//! flush. Small batches keep its work from taking a core for long at a time (a host's
//! slowest answers are what that would cost).

use std::io;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use parking_lot::{Condvar, Mutex};

use super::chain::Chain;
use super::pending::{Storage, POOLED};
use super::queue::{pack, packed_len, Packed, RecordParts};
use super::record::{anchor_body, gap_body, write_body, AuditRecord, Written};
use super::redact::{Redacted, Redaction};
use super::sink::AuditSink;

/// Records waiting at which the writer is woken before its interval ends: at most two
/// wake-ups per this many records, and a burst does not wait for the timer.
const WAKE_AT: usize = 64;
/// Capacity a sink's line buffer keeps after a long line.
const LINE_CAPACITY: usize = 64 * 1024;
/// At most one log line per sink per this long about its failures.
const ERROR_LOG_EVERY: Duration = Duration::from_secs(10);
/// Bytes the writer keeps in its spare buffer between drains: a burst's buffer is not
/// kept forever.
const SPARE_CAPACITY: usize = 4 << 20;

/// How [`AuditLog`] queues and writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct AuditOptions {
    /// Records held waiting for the writer; beyond this they are dropped, counted, and
    /// marked in the trail by a `gap` record (65,536).
    pub queue: usize,
    /// Bytes of records (their arguments and every other member, as queued) held
    /// waiting for the writer, beyond which records are dropped as at
    /// [`AuditOptions::queue`] (64 MiB): hosts sending large arguments faster than the
    /// disk takes them cannot make the gateway hold more.
    pub queue_bytes: usize,
    /// How long the writer lets records gather before it writes them (2 ms): how late a
    /// record may reach the sinks, and, with [`AuditOptions::queue`], how many it can
    /// take at a burst.
    pub interval: Duration,
}

impl Default for AuditOptions {
    fn default() -> Self {
        AuditOptions {
            queue: 65_536,
            queue_bytes: 64 << 20,
            interval: Duration::from_millis(2),
        }
    }
}

impl AuditOptions {
    /// The defaults.
    pub fn new() -> AuditOptions {
        AuditOptions::default()
    }

    /// Holds at most `queue` records waiting.
    pub fn queue(mut self, queue: usize) -> Self {
        self.queue = queue;
        self
    }

    /// Holds at most `bytes` of records waiting ([`AuditOptions::queue_bytes`]).
    pub fn queue_bytes(mut self, bytes: usize) -> Self {
        self.queue_bytes = bytes;
        self
    }

    /// Lets records gather for `interval` before writing them.
    pub fn interval(mut self, interval: Duration) -> Self {
        self.interval = interval;
        self
    }
}

/// The audit trail's writer. Clones share one queue and one writer thread; the thread
/// writes what is left and stops when the last clone is dropped (which waits for it).
#[derive(Clone)]
pub struct AuditLog {
    inner: Arc<Handle>,
}

impl std::fmt::Debug for AuditLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditLog")
            .field("dropped", &self.dropped())
            .finish_non_exhaustive()
    }
}

/// What the last clone's drop stops.
struct Handle {
    shared: Arc<Shared>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

struct Shared {
    state: Mutex<State>,
    /// The writer waits on this.
    work: Condvar,
    /// [`AuditLog::flush`] waits on this.
    done: Condvar,
    queue: usize,
    queue_bytes: usize,
    wake_at: usize,
    dropped: AtomicU64,
}

#[derive(Default)]
struct State {
    /// The records waiting, packed ([`super::queue`]).
    records: Vec<u8>,
    /// How many records `records` holds.
    count: usize,
    /// Dropped since the last drain: the next drain writes a gap for them.
    dropped: u64,
    flush_requested: u64,
    flushed: u64,
    stop: bool,
    /// The writer thread is gone (or never started): nothing waits for it.
    dead: bool,
    /// The writer sleeps until a record comes (rather than for an interval).
    idle: bool,
    /// Storage of finished records, lent again to the next ([`super::pending`]). Boxed:
    /// it is lent as a box, so that a pending record is two pointers.
    #[allow(clippy::vec_box)]
    spare: Vec<Box<Storage>>,
}

impl AuditLog {
    /// Starts the writer thread for `sinks`. Each sink's chain is continued where the sink
    /// says it ends ([`AuditSink::resume`]).
    pub fn new(
        sinks: Vec<Box<dyn AuditSink>>,
        redaction: Redaction,
        options: AuditOptions,
    ) -> AuditLog {
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            work: Condvar::new(),
            done: Condvar::new(),
            queue: options.queue,
            queue_bytes: options.queue_bytes,
            wake_at: WAKE_AT.min(options.queue.max(1)),
            dropped: AtomicU64::new(0),
        });
        let slots = sinks.into_iter().enumerate().map(Slot::new).collect();
        let writer = Writer {
            shared: Arc::clone(&shared),
            slots,
            redaction,
            // A zero interval would spin.
            interval: options.interval.max(Duration::from_millis(1)),
            unlogged_drops: 0,
            drops_logged: None,
        };
        let thread = std::thread::Builder::new()
            .name("mcp-audit".into())
            .spawn(move || writer.run());
        let thread = match thread {
            Ok(thread) => Some(thread),
            Err(e) => {
                tracing::error!(error = %e, "audit writer thread not started: no record will be written");
                shared.state.lock().dead = true;
                None
            }
        };
        AuditLog {
            inner: Arc::new(Handle {
                shared,
                thread: Mutex::new(thread),
            }),
        }
    }

    /// Queues `record` for writing. Takes one uncontended lock and never waits for I/O;
    /// when the queue is full the record is dropped and counted instead.
    pub fn record(&self, record: AuditRecord) {
        self.record_parts(&record.parts());
    }

    /// [`AuditLog::record`] from borrowed parts (already bounded): the request path's
    /// way, which copies them into the queue and allocates nothing.
    pub(crate) fn record_parts(&self, parts: &RecordParts<'_>) {
        let shared = &self.inner.shared;
        let size = packed_len(parts);
        let mut state = shared.state.lock();
        let full = state.count >= shared.queue
            || state.records.len().saturating_add(size) > shared.queue_bytes;
        if full || state.dead {
            state.dropped += 1;
            let wake = state.idle;
            drop(state);
            shared.dropped.fetch_add(1, Ordering::Relaxed);
            if wake {
                shared.work.notify_one();
            }
            return;
        }
        pack(parts, &mut state.records);
        state.count += 1;
        let wake = state.count == shared.wake_at || state.idle;
        drop(state);
        if wake {
            shared.work.notify_one();
        }
    }

    /// Waits until every record queued before this call is written and flushed. Blocks
    /// the calling thread: in async code call it from `spawn_blocking`.
    pub fn flush(&self) {
        let shared = &self.inner.shared;
        let mut state = shared.state.lock();
        state.flush_requested += 1;
        let ticket = state.flush_requested;
        shared.work.notify_one();
        while state.flushed < ticket && !state.dead {
            shared.done.wait(&mut state);
        }
    }

    /// Storage for a pending record: a spare one, else new.
    pub(crate) fn lend(&self) -> Box<Storage> {
        let spare = self.inner.shared.state.lock().spare.pop();
        spare.unwrap_or_else(Storage::new)
    }

    /// Takes `storage` back for another record, unless enough are spare.
    pub(crate) fn give_back(&self, storage: Box<Storage>) {
        if !storage.reusable() {
            return;
        }
        let mut state = self.inner.shared.state.lock();
        if state.spare.len() < POOLED {
            state.spare.push(storage);
        }
    }

    /// How much storage is spare.
    #[cfg(test)]
    pub(crate) fn pooled(&self) -> usize {
        self.inner.shared.state.lock().spare.len()
    }

    /// Records dropped since the start because the queue was full.
    pub fn dropped(&self) -> u64 {
        self.inner.shared.dropped.load(Ordering::Relaxed)
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        self.shared.state.lock().stop = true;
        self.shared.work.notify_one();
        if let Some(thread) = self.thread.lock().take() {
            // A sink holding the last handle would otherwise wait for itself.
            if thread.thread().id() == std::thread::current().id() {
                return;
            }
            if thread.join().is_err() {
                tracing::error!("audit writer thread panicked");
            }
        }
    }
}

/// The writer thread's own state.
struct Writer {
    shared: Arc<Shared>,
    slots: Vec<Slot>,
    redaction: Redaction,
    interval: Duration,
    /// Dropped records not yet logged: a sustained overload logs once per
    /// [`ERROR_LOG_EVERY`], not once per drain.
    unlogged_drops: u64,
    drops_logged: Option<Instant>,
}

/// Marks the writer dead however it ends, so no [`AuditLog::flush`] waits forever.
struct Dead(Arc<Shared>);

impl Drop for Dead {
    fn drop(&mut self) {
        if std::thread::panicking() {
            tracing::error!(
                "audit writer thread stopped by a panic: records are no longer written"
            );
        }
        self.0.state.lock().dead = true;
        self.0.done.notify_all();
    }
}

impl Writer {
    fn run(mut self) {
        let _dead = Dead(Arc::clone(&self.shared));
        for slot in &mut self.slots {
            slot.start();
        }
        let mut batch = Vec::new();
        let mut body = Vec::with_capacity(1024);
        loop {
            let (dropped, ticket, stop) = self.take(&mut batch);
            let wrote = !batch.is_empty() || dropped > 0;
            let written = catch_unwind(AssertUnwindSafe(|| {
                self.write_batch(&batch, dropped, &mut body);
            }));
            if written.is_err() {
                tracing::error!(
                    records = batch.len(),
                    "audit writer: a batch panicked; records in it may be missing"
                );
            }
            batch.clear();
            // Kept for the next swap, so a steady load queues without allocating.
            batch.shrink_to(SPARE_CAPACITY);
            if wrote || stop {
                for slot in &mut self.slots {
                    slot.flush();
                }
            }
            let mut state = self.shared.state.lock();
            state.flushed = ticket;
            self.shared.done.notify_all();
            // Stop is only set when no handle is left, so nothing can be queued after the
            // batch just taken.
            if stop {
                return;
            }
        }
    }

    /// Waits for work (at most one interval), then swaps the queue for `batch` (empty):
    /// returns the dropped count, the flush ticket the batch satisfies, and whether to stop.
    fn take(&self, batch: &mut Vec<u8>) -> (u64, u64, bool) {
        let mut state = self.shared.state.lock();
        let called = |s: &State| s.stop || s.flush_requested != s.flushed;
        // Nothing queued: sleep until something is (no wake-up of an idle gateway).
        while !called(&state) && state.count == 0 && state.dropped == 0 {
            state.idle = true;
            self.shared.work.wait(&mut state);
            state.idle = false;
        }
        // Something is: give it one interval to gather company, so a batch is not a record.
        if !called(&state) && state.count < self.shared.wake_at {
            self.shared.work.wait_for(&mut state, self.interval);
        }
        std::mem::swap(&mut state.records, batch);
        state.count = 0;
        (
            std::mem::take(&mut state.dropped),
            state.flush_requested,
            state.stop,
        )
    }

    fn write_batch(&mut self, batch: &[u8], dropped: u64, body: &mut Vec<u8>) {
        if dropped > 0 {
            self.unlogged_drops += dropped;
            let due = self
                .drops_logged
                .is_none_or(|at| at.elapsed() >= ERROR_LOG_EVERY);
            if due {
                let dropped = std::mem::take(&mut self.unlogged_drops);
                tracing::error!(
                    dropped,
                    "audit queue full: {dropped} record(s) dropped; gap records mark them"
                );
                self.drops_logged = Some(Instant::now());
            }
            let gap = gap_body(SystemTime::now(), dropped);
            for slot in &mut self.slots {
                slot.write(&gap);
            }
        }
        for record in Packed::new(batch) {
            body.clear();
            let arguments = record.arguments.map(|text| {
                let mut names = [""; 2];
                let mut n = 0;
                for name in [record.name, record.upstream_name].into_iter().flatten() {
                    names[n] = name;
                    n += 1;
                }
                let (redacted, digest) =
                    self.redaction.redacted(record.upstream, &names[..n], text);
                (text, redacted, digest)
            });
            let arguments = arguments.as_ref().map(|(text, redacted, digest)| {
                let written = match &redacted {
                    Redacted::AsSent => Written::AsSent(text),
                    Redacted::Edited(value) => Written::Value(value),
                };
                (written, digest.as_str())
            });
            write_body(&record, body, arguments);
            for slot in &mut self.slots {
                slot.write(body);
            }
        }
    }
}

/// One sink with its chain.
struct Slot {
    index: usize,
    sink: Box<dyn AuditSink>,
    chain: Chain,
    /// The line being sealed, kept between lines.
    line: Vec<u8>,
    /// Records the sink failed to take since it last took one: owed a gap record.
    lost: u64,
    errors: ErrorLog,
}

impl Slot {
    fn new((index, sink): (usize, Box<dyn AuditSink>)) -> Slot {
        Slot {
            index,
            sink,
            chain: Chain::new(),
            line: Vec::with_capacity(1024),
            lost: 0,
            errors: ErrorLog::default(),
        }
    }

    /// Continues the chain the sink holds, and anchors it when the sink started a new file.
    fn start(&mut self) {
        let resume = catch_unwind(AssertUnwindSafe(|| self.sink.resume()));
        let Ok(Some(resume)) = resume else { return };
        match Chain::resume(resume.seq, &resume.hash) {
            Some(chain) => self.chain = chain,
            None => tracing::warn!(
                sink = self.index,
                hash = %resume.hash,
                "audit sink's chain cannot be continued (its hash is not hex); a new chain starts"
            ),
        }
        if let Some(previous) = resume.anchor {
            let anchor = anchor_body(SystemTime::now(), &previous);
            if !self.put(&anchor) {
                self.lost += 1;
            }
        }
    }

    /// Writes one record's body, preceded by a gap for records the sink failed to take.
    fn write(&mut self, body: &[u8]) {
        if self.lost > 0 {
            let gap = gap_body(SystemTime::now(), self.lost);
            if !self.put(&gap) {
                self.lost += 1;
                return;
            }
            self.lost = 0;
        }
        if !self.put(body) {
            self.lost += 1;
        }
    }

    /// Seals and writes `body`; false (logged) when the sink failed or panicked.
    fn put(&mut self, body: &[u8]) -> bool {
        match catch_unwind(AssertUnwindSafe(|| self.try_put(body))) {
            Ok(Ok(())) => {
                self.errors.succeeded(self.index);
                true
            }
            Ok(Err(e)) => {
                self.errors.failed(self.index, &e);
                false
            }
            Err(_) => {
                self.errors.failed(self.index, &"the sink panicked");
                false
            }
        }
    }

    fn try_put(&mut self, body: &[u8]) -> io::Result<()> {
        let len = self.chain.sealed_len(body.len());
        if let Some(previous) = self.sink.rotate_before(len)? {
            self.seal_and_write(&anchor_body(SystemTime::now(), &previous))?;
        }
        self.seal_and_write(body)
    }

    /// The chain advances only when the sink took the line: a line never written must not
    /// be the `prev` of the next.
    fn seal_and_write(&mut self, body: &[u8]) -> io::Result<()> {
        let mut next = self.chain;
        next.seal_into(body, &mut self.line);
        self.sink.write_line(&self.line)?;
        self.chain = next;
        if self.line.capacity() > LINE_CAPACITY {
            self.line = Vec::with_capacity(LINE_CAPACITY);
        }
        Ok(())
    }

    fn flush(&mut self) {
        match catch_unwind(AssertUnwindSafe(|| self.sink.flush())) {
            Ok(Ok(())) => {}
            Ok(Err(e)) => self.errors.failed(self.index, &e),
            Err(_) => self.errors.failed(self.index, &"the sink panicked"),
        }
    }
}

/// Failures of one sink, logged at most once per [`ERROR_LOG_EVERY`]: a full disk must not
/// turn into a log line per record.
#[derive(Default)]
struct ErrorLog {
    failing: bool,
    last_logged: Option<Instant>,
    suppressed: u64,
}

impl ErrorLog {
    fn due(&self) -> bool {
        self.last_logged
            .is_none_or(|at| at.elapsed() >= ERROR_LOG_EVERY)
    }

    fn failed(&mut self, sink: usize, error: &dyn std::fmt::Display) {
        self.failing = true;
        if self.due() {
            tracing::error!(
                sink,
                error = %error,
                suppressed = self.suppressed,
                "audit sink failed; it keeps being tried, and a gap record will mark what it missed"
            );
            self.last_logged = Some(Instant::now());
            self.suppressed = 0;
        } else {
            self.suppressed += 1;
        }
    }

    fn succeeded(&mut self, sink: usize) {
        if self.failing && self.due() {
            tracing::info!(
                sink,
                suppressed = self.suppressed,
                "audit sink writes again"
            );
            self.last_logged = Some(Instant::now());
            self.suppressed = 0;
        }
        self.failing = false;
    }
}
