//! The HTTP server: its thread and runtime, the request log, the step queue.

use std::collections::VecDeque;
use std::fmt::Display;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::header::{CONTENT_TYPE, RETRY_AFTER};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use tokio::runtime::Runtime;
use tokio::sync::oneshot;

use crate::playback::{Ending, Playback};
use crate::steps::{FakeReply, Step};
use crate::wire::{Exchange, Wire};

/// A fake provider on 127.0.0.1 with a random port.
///
/// It runs on its own std::thread with its own tokio runtime, so synchronous
/// tests and tests that spawn a separate binary can both use it. Dropping it
/// stops the server and closes every connection, stalled ones included.
pub struct FakeServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

/// One request as the server received it.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// The HTTP method.
    pub method: String,
    /// The path without the query string.
    pub path: String,
    /// In the order the server saw them; names are lowercase.
    pub headers: Vec<(String, String)>,
    /// The JSON body; `Null` when empty, the raw text as a JSON string when
    /// it is not JSON.
    pub body: Value,
}

impl Recorded {
    /// The first value of header `name`, matched case-insensitively.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(have, _)| have.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    fn new(method: &Method, uri: &Uri, headers: &HeaderMap, body: &[u8]) -> Recorded {
        let headers = headers
            .iter()
            .map(|(name, value)| {
                let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
                (name.as_str().to_owned(), value)
            })
            .collect();
        Recorded {
            method: method.as_str().to_owned(),
            path: uri.path().to_owned(),
            headers,
            body: parse_body(body),
        }
    }
}

fn parse_body(body: &[u8]) -> Value {
    if body.is_empty() {
        return Value::Null;
    }
    serde_json::from_slice(body)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(body).into_owned()))
}

/// State shared by the test's thread and the server's.
struct Shared {
    wire: Wire,
    script: Mutex<Script>,
}

#[derive(Default)]
struct Script {
    steps: VecDeque<Step>,
    requests: Vec<Recorded>,
}

impl Shared {
    /// A panic elsewhere while holding the lock leaves the data intact, and
    /// the test should see that panic, not a poisoned-lock one.
    fn lock(&self) -> MutexGuard<'_, Script> {
        self.script.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Logs `request` and, for the scripted endpoint, takes the next step,
    /// in one critical section so numbering and consumption agree. Returns
    /// the request's 1-based number.
    fn record(&self, request: Recorded, takes_step: bool) -> (usize, Option<Step>) {
        let mut script = self.lock();
        script.requests.push(request);
        let step = if takes_step {
            script.steps.pop_front()
        } else {
            None
        };
        (script.requests.len(), step)
    }
}

impl FakeServer {
    /// Binds 127.0.0.1:0 and starts serving `wire`. Panics with the reason
    /// when the socket, the runtime or the thread cannot be had: a test
    /// cannot go on without its server.
    pub fn start(wire: Wire) -> FakeServer {
        let listener = or_panic(
            std::net::TcpListener::bind("127.0.0.1:0"),
            "bind 127.0.0.1:0",
        );
        let addr = or_panic(listener.local_addr(), "read the bound address");
        or_panic(
            listener.set_nonblocking(true),
            "make the listener non-blocking",
        );
        let runtime = or_panic(
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build(),
            "build a tokio runtime",
        );
        let listener = {
            let _context = runtime.enter();
            or_panic(
                tokio::net::TcpListener::from_std(listener),
                "register the listener with tokio",
            )
        };
        let shared = Arc::new(Shared {
            wire,
            script: Mutex::default(),
        });
        let app = Router::new()
            .fallback(handle)
            .with_state(Arc::clone(&shared))
            .layer(DefaultBodyLimit::disable());
        let (stop, stopped) = oneshot::channel();
        let thread = or_panic(
            std::thread::Builder::new()
                .name(format!("wicket-fake {addr}"))
                .spawn(move || serve(runtime, listener, app, stopped)),
            "spawn the server thread",
        );
        FakeServer {
            addr,
            shared,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// What a client is configured with: `http://127.0.0.1:PORT/v1` for
    /// OpenAI, `http://127.0.0.1:PORT` for Anthropic.
    pub fn base_url(&self) -> String {
        format!("http://{}{}", self.addr, self.shared.wire.base_path())
    }

    /// Queues the answer to a later POST; each POST to the endpoint takes
    /// the oldest one.
    pub fn push(&self, step: Step) {
        self.shared.lock().steps.push_back(step);
    }

    /// Every request received so far, in arrival order, including the ones
    /// answered 404 or 500.
    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.lock().requests.clone()
    }

    /// How many requests came so far.
    pub fn request_count(&self) -> usize {
        self.shared.lock().requests.len()
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            // The server thread may already be gone; then there is nothing to stop.
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            // A panic on the server thread was already printed; panicking
            // again inside drop would only abort the test run.
            let _ = thread.join();
        }
    }
}

fn or_panic<T, E: Display>(result: Result<T, E>, what: &str) -> T {
    result.unwrap_or_else(|error| panic!("wicket-fake: cannot {what}: {error}"))
}

/// The server thread: serves until told to stop, then drops the runtime,
/// which cancels the accept loop and every connection task. Graceful
/// shutdown would instead wait forever on a stalled stream.
fn serve(
    runtime: Runtime,
    listener: tokio::net::TcpListener,
    app: Router,
    stopped: oneshot::Receiver<()>,
) {
    runtime.block_on(async move {
        tokio::spawn(async move { axum::serve(listener, app).await });
        // Sent or dropped, either way the owner is done with the server.
        let _ = stopped.await;
    });
}

/// Answers every request: records it, then plays the next step if it is a
/// POST to the provider's endpoint.
async fn handle(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let wire = shared.wire;
    let recorded = Recorded::new(&method, &uri, &headers, &body);
    let request_body = recorded.body.clone();
    let takes_step = method == Method::POST && uri.path() == wire.endpoint();
    let (number, step) = shared.record(recorded, takes_step);
    if !takes_step {
        let message = format!(
            "wicket-fake: nothing at {method} {}; this fake serves POST {}",
            uri.path(),
            wire.endpoint()
        );
        return error_response(wire, StatusCode::NOT_FOUND, &message);
    }
    match step {
        Some(step) => respond(wire, step, &Exchange::new(number, &request_body)),
        None => {
            let message = format!("wicket-fake: no scripted response left for request {number}");
            error_response(wire, StatusCode::INTERNAL_SERVER_ERROR, &message)
        }
    }
}

fn respond(wire: Wire, step: Step, exchange: &Exchange) -> Response {
    let play = |reply: &FakeReply| Playback::new(wire.events(reply, exchange), reply);
    match step {
        Step::Reply(reply) => play(&reply).into_response(),
        Step::Status {
            status,
            body,
            retry_after,
        } => json_response(status, &body, retry_after.as_deref()),
        Step::CutAfter { reply, events } => {
            play(&reply).first(events, Ending::Abort).into_response()
        }
        Step::Slow { reply, delay } => Playback {
            delay,
            ..play(&reply)
        }
        .into_response(),
        Step::Stall { reply, events } => play(&reply).first(events, Ending::Hang).into_response(),
        Step::StreamError {
            reply,
            events,
            error_type,
            message,
        } => {
            let mut playback = play(&reply).first(events, Ending::Finish);
            playback
                .events
                .push(wire.stream_error_event(&error_type, &message));
            playback.into_response()
        }
        Step::Raw { events } => Playback::new(events, &FakeReply::text("")).into_response(),
    }
}

fn error_response(wire: Wire, status: StatusCode, message: &str) -> Response {
    json_response(
        status.as_u16(),
        &wire.error_body(status.as_u16(), message),
        None,
    )
}

/// A JSON response for a scripted status. A Retry-After that is no valid
/// header value is the script's mistake, so it is answered as a 500 naming it.
fn json_response(status: u16, body: &Value, retry_after: Option<&str>) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = (
        status,
        [(CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response();
    if let Some(retry_after) = retry_after {
        let Ok(value) = HeaderValue::from_str(retry_after) else {
            let message =
                format!("wicket-fake: Retry-After {retry_after:?} is not a valid header value");
            return (StatusCode::INTERNAL_SERVER_ERROR, message).into_response();
        };
        response.headers_mut().insert(RETRY_AFTER, value);
    }
    response
}
