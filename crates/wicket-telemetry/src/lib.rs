//! OpenTelemetry for Wicket: a trace per turn and a few metrics, sent as
//! OTLP/HTTP protobuf to the collector the person names.
//!
//! Everything is made from the session's log events, the one record of
//! what a turn did: the session's listener hands each event to
//! [`Telemetry::observe`], which only puts it on a bounded queue (a full
//! queue drops it and counts it). A thread of its own turns the events into
//! spans with the times the log gives ([`spans`]), and the SDK's batching
//! processor sends them from its own thread through a client on a runtime
//! of its own ([`export`]). So a collector that is down or slow costs a turn
//! nothing but the queue push; what could not be sent is counted
//! ([`Telemetry::dropped`]) and said once in the session's log.
//!
//! No prompt, reply, argument, output or file content (nor a command's
//! argv) leaves unless `log_content = true`.

mod export;
mod spans;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use opentelemetry::metrics::MeterProvider as _;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::trace::SdkTracerProvider;
use wicket_protocol::Event;

/// The variable that names the collector when the config does not.
pub const ENDPOINT_ENV: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";

/// Events waiting to become spans; past this many, one is dropped and counted.
const QUEUE: usize = 16_384;

/// How often the span thread takes what is queued: waking it for each
/// event (a futex wake and a context switch) cost a busy turn a quarter
/// of its time on two cores; a batch costs nothing measurable.
const TAKE_EVERY: Duration = Duration::from_millis(100);

/// Spans waiting to be sent (the SDK's own queue).
const SPAN_QUEUE: usize = 16_384;

/// How long a flush at exit may take.
pub const FLUSH: Duration = Duration::from_secs(2);

/// How long one export may take before its spans count as dropped.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(5);

/// `[telemetry]`: where to send, and whether content may go too.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Settings {
    /// `otlp_endpoint`: a base URL (`http://HOST:4318`) to which
    /// `/v1/traces` and `/v1/metrics` are added.
    pub endpoint: Option<String>,
    /// `log_content`: prompts, replies, arguments and argv on the spans.
    pub log_content: bool,
}

impl Settings {
    /// The endpoint the config names, else `OTEL_EXPORTER_OTLP_ENDPOINT`.
    pub fn endpoint_or_env(&self) -> Option<String> {
        self.endpoint
            .clone()
            .or_else(|| std::env::var(ENDPOINT_ENV).ok())
            .map(|endpoint| endpoint.trim().trim_end_matches('/').to_string())
            .filter(|endpoint| !endpoint.is_empty())
    }
}

/// Why telemetry could not start: the endpoint is not a URL, or the
/// exporter's runtime could not be made.
#[derive(Debug, thiserror::Error)]
#[error("telemetry: {0}")]
pub struct Error(String);

/// What the span thread is handed.
enum Message {
    /// An event of a session.
    Event(String, Arc<Event>),
    /// The model a session's turn talks to.
    Model(String, String),
}

/// The messages waiting for the span thread, taken in batches.
#[derive(Default)]
struct Queue {
    waiting: Mutex<Waiting>,
    /// Rung when the queue is half full, and to close.
    wake: Condvar,
    /// Rung by the thread once it has closed.
    closed: Condvar,
}

#[derive(Default)]
struct Waiting {
    messages: Vec<Message>,
    /// Shutdown asked: make spans of what is left, then stop.
    closing: bool,
    /// The thread has stopped.
    done: bool,
}

impl Queue {
    /// Queues `message`; false when the queue is full.
    fn push(&self, message: Message) -> bool {
        let mut waiting = wicket_os::sync::lock(&self.waiting);
        if waiting.messages.len() >= QUEUE || waiting.closing {
            return false;
        }
        waiting.messages.push(message);
        if waiting.messages.len() == QUEUE / 2 {
            self.wake.notify_one();
        }
        true
    }
}

/// The process's telemetry: cheap to clone, one exporter behind it.
#[derive(Clone)]
pub struct Telemetry {
    inner: Arc<Inner>,
}

struct Inner {
    queue: Arc<Queue>,
    traces: SdkTracerProvider,
    metrics: SdkMeterProvider,
    /// Events that found the queue full, and spans whose export failed.
    dropped: Arc<AtomicU64>,
    /// How many of `dropped` were already said in a log.
    reported: AtomicU64,
    /// The span thread, joined at shutdown.
    worker: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// The exporter's runtime: stopped last.
    runtime: Mutex<Option<tokio::runtime::Runtime>>,
    endpoint: String,
}

impl std::fmt::Debug for Telemetry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Telemetry")
            .field("endpoint", &self.inner.endpoint)
            .finish_non_exhaustive()
    }
}

impl Telemetry {
    /// Telemetry to the endpoint `settings` (or the environment) names, or
    /// `None` when none is named. `OTEL_SERVICE_NAME` and
    /// `OTEL_RESOURCE_ATTRIBUTES` are read as their conventions say.
    pub fn start(settings: &Settings) -> Result<Option<Telemetry>, Error> {
        let Some(endpoint) = settings.endpoint_or_env() else {
            return Ok(None);
        };
        if !(endpoint.starts_with("http://") || endpoint.starts_with("https://")) {
            return Err(Error(format!(
                "otlp_endpoint '{endpoint}' is not an http(s) URL; give the collector's base, like http://localhost:4318"
            )));
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("wicket-otlp")
            .enable_all()
            .build()
            .map_err(|error| Error(format!("its runtime could not start: {error}")))?;
        let dropped = Arc::new(AtomicU64::new(0));
        let client = export::Client::new(runtime.handle().clone(), EXPORT_TIMEOUT)
            .map_err(|error| Error(format!("its HTTP client could not be made: {error}")))?;
        let traces = export::tracer_provider(&endpoint, client.clone(), dropped.clone())?;
        let metrics = export::meter_provider(&endpoint, client)?;
        let queue = Arc::new(Queue::default());
        let events = queue.clone();
        let builder = spans::Builder::new(
            traces.clone(),
            &metrics.meter("wicket"),
            settings.log_content,
        );
        let worker = std::thread::Builder::new()
            .name("wicket-spans".into())
            .spawn(move || run(builder, events))
            .map_err(|error| Error(format!("its thread could not start: {error}")))?;
        Ok(Some(Telemetry {
            inner: Arc::new(Inner {
                queue,
                traces,
                metrics,
                dropped,
                reported: AtomicU64::new(0),
                worker: Mutex::new(Some(worker)),
                runtime: Mutex::new(Some(runtime)),
                endpoint,
            }),
        }))
    }

    /// Hands `event` of `session` to the span thread; never waits.
    pub fn observe(&self, session: &str, event: &Arc<Event>) {
        let message = Message::Event(session.to_string(), event.clone());
        if !self.inner.queue.push(message) {
            self.inner.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The model `session`'s turn talks to, for its spans from now on.
    pub fn model(&self, session: &str, model: &str) {
        let message = Message::Model(session.to_string(), model.to_string());
        if !self.inner.queue.push(message) {
            self.inner.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Events and spans that could not be sent so far.
    pub fn dropped(&self) -> u64 {
        self.inner.dropped.load(Ordering::Relaxed)
    }

    /// The drops no log was told of yet, once: `Some(total)` the first
    /// time any are found, `None` after (a session's log says it once).
    pub fn unreported_drops(&self) -> Option<u64> {
        let dropped = self.dropped();
        if dropped == 0 {
            return None;
        }
        let before = self.inner.reported.swap(dropped, Ordering::Relaxed);
        (before == 0).then_some(dropped)
    }

    /// Where it sends.
    pub fn endpoint(&self) -> &str {
        &self.inner.endpoint
    }

    /// Sends what is left, within [`FLUSH`]; nothing is sent after (a
    /// second call does nothing).
    pub fn shutdown(&self) {
        let deadline = std::time::Instant::now() + FLUSH;
        let Some(worker) = wicket_os::sync::lock(&self.inner.worker).take() else {
            return;
        };
        // The events queued before now become spans first.
        let queue = &self.inner.queue;
        let mut waiting = wicket_os::sync::lock(&queue.waiting);
        waiting.closing = true;
        queue.wake.notify_one();
        while !waiting.done {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                break;
            }
            waiting = match queue.closed.wait_timeout(waiting, left) {
                Ok((waiting, _)) => waiting,
                Err(poisoned) => poisoned.into_inner().0,
            };
        }
        let done = waiting.done;
        drop(waiting);
        if done {
            // It has stopped: its spans are ended.
            drop(worker.join());
        }
        // Both flush at once, each on a thread of its own: an export the
        // SDK waits on past its timeout is left behind at the deadline
        // (the runtime below ends it), so the flush never outlasts it.
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let (done, finished) = std::sync::mpsc::channel();
        let (traces, metrics) = (self.inner.traces.clone(), self.inner.metrics.clone());
        let flushes: [Box<dyn FnOnce() + Send>; 2] = [
            Box::new(move || drop(traces.shutdown_with_timeout(left))),
            Box::new(move || drop(metrics.shutdown_with_timeout(left))),
        ];
        let mut started = 0;
        for flush in flushes {
            let done = done.clone();
            let spawned = std::thread::Builder::new()
                .name("wicket-otlp-flush".into())
                .spawn(move || {
                    flush();
                    // The one waiting may have given up.
                    done.send(()).ok();
                });
            // No thread: nothing of it to wait for.
            started += usize::from(spawned.is_ok());
        }
        for _ in 0..started {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if finished.recv_timeout(left).is_err() {
                break;
            }
        }
        if let Some(runtime) = wicket_os::sync::lock(&self.inner.runtime).take() {
            runtime.shutdown_background();
        }
    }
}

/// The span thread: each batch of messages, in order, until it is closed.
fn run(mut builder: spans::Builder, queue: Arc<Queue>) {
    loop {
        let (batch, closing) = {
            let waiting = wicket_os::sync::lock(&queue.waiting);
            let mut waiting = match queue.wake.wait_timeout(waiting, TAKE_EVERY) {
                Ok((waiting, _)) => waiting,
                Err(poisoned) => poisoned.into_inner().0,
            };
            (std::mem::take(&mut waiting.messages), waiting.closing)
        };
        for message in batch {
            match message {
                Message::Event(session, event) => builder.observe(&session, &event),
                Message::Model(session, model) => builder.model(&session, &model),
            }
        }
        if closing {
            builder.close();
            wicket_os::sync::lock(&queue.waiting).done = true;
            queue.closed.notify_all();
            return;
        }
    }
}
