//! `wicket serve`: an HTTP API with server-sent events over the session
//! manager, and the web page, served by the same binary. Every `/api` request
//! carries the token; every request's Host must be this server's (DNS
//! rebinding); every state-changing request with an Origin must come from
//! this server's page (CSRF). Queueing, blocking and cancel are the manager's:
//! the handlers only translate.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use axum::extract::{DefaultBodyLimit, Path as UrlPath, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use futures_util::Stream;
use serde::Deserialize;
use subtle::ConstantTimeEq;
use tokio::sync::broadcast::error::RecvError;
use wicket_core::manager::{Manager, ManagerError, Open, Sent};
use wicket_protocol::{Answer, Event};

/// The largest request body the API accepts.
pub const BODY_LIMIT_BYTES: usize = 1024 * 1024;
/// The cookie that carries the token for the page.
pub const COOKIE: &str = "wicket_token";

const INDEX_HTML: &str = include_str!("../web/index.html");
const APP_JS: &str = include_str!("../web/app.js");
const APP_CSS: &str = include_str!("../web/app.css");

/// What the handlers share.
pub struct Server {
    pub manager: Arc<Manager>,
    pub token: String,
    /// The hosts a request may name: `127.0.0.1:PORT`, `localhost:PORT`, and
    /// the `--listen` address when one was given.
    pub hosts: Vec<String>,
    /// The workspace a new session gets when the request names none.
    pub default_workspace: Option<PathBuf>,
}

impl Server {
    pub fn new(manager: Arc<Manager>, token: String, addr: SocketAddr) -> Server {
        let port = addr.port();
        let mut hosts = vec![format!("127.0.0.1:{port}"), format!("localhost:{port}")];
        if !addr.ip().is_loopback() {
            hosts.push(addr.to_string());
        }
        Server {
            manager,
            token,
            hosts,
            default_workspace: None,
        }
    }
}

type Shared = Arc<Server>;

/// An API error: `{"error": {"kind", "message"}}` with a status.
struct ApiError(StatusCode, &'static str, String);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = serde_json::json!({"error": {"kind": self.1, "message": self.2}});
        (self.0, Json(body)).into_response()
    }
}

/// A failure of the server itself (a task that panicked, JSON that would
/// not serialise): 500 with what went wrong.
fn internal(error: impl std::fmt::Display) -> ApiError {
    ApiError(
        StatusCode::INTERNAL_SERVER_ERROR,
        "internal",
        error.to_string(),
    )
}

impl From<ManagerError> for ApiError {
    fn from(error: ManagerError) -> ApiError {
        let status = match &error {
            ManagerError::Blocked(_) => StatusCode::CONFLICT,
            ManagerError::NoSuchSession(_) => StatusCode::NOT_FOUND,
            ManagerError::NotOpen(_) => StatusCode::CONFLICT,
            ManagerError::Session(_) => StatusCode::BAD_REQUEST,
        };
        ApiError(status, error.kind(), error.to_string())
    }
}

/// A fresh token: 32 bytes from the kernel's CSPRNG, as hex.
pub fn new_token() -> std::io::Result<String> {
    let mut bytes = [0u8; 32];
    let mut filled = 0;
    while filled < bytes.len() {
        filled +=
            rustix::rand::getrandom(&mut bytes[filled..], rustix::rand::GetRandomFlags::empty())
                .map_err(std::io::Error::from)?;
    }
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// The router: the page and the API, behind the Host, Origin and token checks.
pub fn app(server: Shared) -> Router {
    let api = Router::new()
        .route("/sessions", get(list_sessions).post(create_session))
        .route("/sessions/{id}", get(session_detail))
        .route("/sessions/{id}/messages", post(send_message))
        .route("/sessions/{id}/cards/{card}", post(answer_card))
        .route("/sessions/{id}/questions/{qid}", post(reply_question))
        .route("/sessions/{id}/cancel", post(cancel_turn))
        .route("/sessions/{id}/events", get(events))
        .route("/sessions/{id}/log", get(log))
        .layer(middleware::from_fn_with_state(
            server.clone(),
            require_token,
        ));
    Router::new()
        .route("/", get(page))
        .route(
            "/app.js",
            get(|| async {
                (
                    [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
                    APP_JS,
                )
            }),
        )
        .route(
            "/app.css",
            get(|| async { ([(header::CONTENT_TYPE, "text/css; charset=utf-8")], APP_CSS) }),
        )
        .nest("/api", api)
        .layer(DefaultBodyLimit::max(BODY_LIMIT_BYTES))
        .layer(middleware::from_fn_with_state(
            server.clone(),
            check_host_and_origin,
        ))
        .with_state(server)
}

fn refuse(status: StatusCode, kind: &'static str, message: &str) -> Response {
    ApiError(status, kind, message.to_string()).into_response()
}

/// DNS rebinding: the Host must be this server. CSRF: a state-changing
/// request with an Origin must come from this server's own page.
async fn check_host_and_origin(
    State(server): State<Shared>,
    request: Request,
    next: Next,
) -> Response {
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("");
    if !server.hosts.iter().any(|allowed| allowed == host) {
        return refuse(
            StatusCode::FORBIDDEN,
            "forbidden_host",
            &format!(
                "the Host '{host}' is not this server; use http://{}",
                server.hosts[0]
            ),
        );
    }
    let changes_state = !matches!(
        *request.method(),
        Method::GET | Method::HEAD | Method::OPTIONS
    );
    if changes_state && let Some(origin) = request.headers().get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or("");
        let ours = server
            .hosts
            .iter()
            .any(|host| origin == format!("http://{host}"));
        if !ours {
            return refuse(
                StatusCode::FORBIDDEN,
                "forbidden_origin",
                &format!("requests from the origin '{origin}' are refused"),
            );
        }
    }
    next.run(request).await
}

fn cookie_token(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE)
        .map(|(_, value)| value.to_string())
}

fn token_matches(server: &Server, given: &str) -> bool {
    given.as_bytes().ct_eq(server.token.as_bytes()).into()
}

/// The token from `Authorization: Bearer` or the page's cookie.
fn authorized(server: &Server, headers: &HeaderMap) -> bool {
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .map(str::to_string);
    bearer
        .or_else(|| cookie_token(headers))
        .is_some_and(|token| token_matches(server, &token))
}

async fn require_token(State(server): State<Shared>, request: Request, next: Next) -> Response {
    if !authorized(&server, request.headers()) {
        let message = if request.headers().contains_key(header::AUTHORIZATION)
            || cookie_token(request.headers()).is_some()
        {
            "the token is wrong; it is in $WICKET_HOME/server.json"
        } else {
            "a token is needed: Authorization: Bearer TOKEN (from $WICKET_HOME/server.json), or open the link wicket serve printed"
        };
        return refuse(StatusCode::UNAUTHORIZED, "unauthorized", message);
    }
    next.run(request).await
}

#[derive(Deserialize)]
struct TokenQuery {
    token: Option<String>,
}

/// The page. `/?token=T` sets the HttpOnly cookie and redirects to `/`, so the
/// token leaves the address bar.
async fn page(
    State(server): State<Shared>,
    Query(query): Query<TokenQuery>,
    headers: HeaderMap,
) -> Response {
    if let Some(token) = query.token {
        if !token_matches(&server, &token) {
            return (StatusCode::UNAUTHORIZED, Html("<p>That link's token is wrong. Use the link <code>wicket serve</code> printed.</p>")).into_response();
        }
        let cookie = format!("{COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/");
        let mut response = Redirect::to("/").into_response();
        if let Ok(value) = HeaderValue::from_str(&cookie) {
            response.headers_mut().insert(header::SET_COOKIE, value);
        }
        return response;
    }
    if !authorized(&server, &headers) {
        return (
            StatusCode::UNAUTHORIZED,
            Html("<p>Open the link <code>wicket serve</code> printed (it carries the token).</p>"),
        )
            .into_response();
    }
    ([(header::CACHE_CONTROL, "no-store")], Html(INDEX_HTML)).into_response()
}

fn status_text(status: wicket_core::session::Status) -> &'static str {
    match status {
        wicket_core::session::Status::Idle => "idle",
        wicket_core::session::Status::Running => "running",
        wicket_core::session::Status::Waiting => "waiting",
    }
}

async fn list_sessions(State(server): State<Shared>) -> Json<serde_json::Value> {
    let sessions: Vec<serde_json::Value> = server
        .manager
        .list()
        .into_iter()
        .map(|summary| {
            serde_json::json!({
                "id": summary.id,
                "title": summary.title,
                "workspace": summary.workspace,
                "status": status_text(summary.status),
                "queued": summary.queued,
                "updated": summary.updated,
            })
        })
        .collect();
    Json(serde_json::Value::Array(sessions))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NewSession {
    workspace: Option<String>,
    model: Option<String>,
}

async fn create_session(
    State(server): State<Shared>,
    Json(body): Json<NewSession>,
) -> Result<(StatusCode, Json<serde_json::Value>), ApiError> {
    let workspace = match (
        body.workspace.filter(|w| !w.is_empty()),
        &server.default_workspace,
    ) {
        (Some(workspace), _) => PathBuf::from(workspace),
        (None, Some(default)) => default.clone(),
        (None, None) => {
            return Err(ApiError(
                StatusCode::BAD_REQUEST,
                "invalid_args",
                "give a workspace (an absolute path to a folder)".into(),
            ));
        }
    };
    if !workspace.is_absolute() {
        return Err(ApiError(
            StatusCode::BAD_REQUEST,
            "invalid_args",
            format!(
                "the workspace '{}' must be an absolute path",
                workspace.display()
            ),
        ));
    }
    let manager = server.manager.clone();
    let model = body.model.filter(|m| !m.is_empty());
    let id = tokio::task::spawn_blocking(move || manager.open(None, &workspace, model.as_deref()))
        .await
        .map_err(internal)??;
    Ok((StatusCode::CREATED, Json(serde_json::json!({ "id": id }))))
}

fn open_json(open: &Option<Open>) -> serde_json::Value {
    match open {
        None => serde_json::Value::Null,
        Some(Open::Card(card)) => serde_json::json!({"card": card}),
        Some(Open::Question { id, question }) => {
            serde_json::json!({"question": {"id": id, "question": question}})
        }
    }
}

async fn session_detail(
    State(server): State<Shared>,
    UrlPath(id): UrlPath<String>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let meta = server.manager.meta(&id)?;
    let open = server.manager.open_item(&id)?;
    Ok(Json(serde_json::json!({
        "id": meta.id,
        "title": meta.title,
        "workspace": meta.workspace,
        "model": meta.model,
        "status": status_text(meta.status),
        "usage": meta.usage,
        "running": server.manager.is_running(&id)?,
        "open": open_json(&open),
    })))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NewMessage {
    text: String,
}

async fn send_message(
    State(server): State<Shared>,
    UrlPath(id): UrlPath<String>,
    Json(body): Json<NewMessage>,
) -> Result<(StatusCode, Json<serde_json::Value>), ApiError> {
    if body.text.trim().is_empty() {
        return Err(ApiError(
            StatusCode::BAD_REQUEST,
            "invalid_args",
            "the message is empty".into(),
        ));
    }
    let state = match server.manager.send(&id, &body.text)? {
        Sent::Started => "started",
        Sent::Queued => "queued",
    };
    Ok((
        StatusCode::ACCEPTED,
        Json(serde_json::json!({ "state": state })),
    ))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CardAnswer {
    answer: Answer,
}

async fn answer_card(
    State(server): State<Shared>,
    UrlPath((id, card)): UrlPath<(String, String)>,
    Json(body): Json<CardAnswer>,
) -> Result<Json<serde_json::Value>, ApiError> {
    server.manager.answer(&id, &card, body.answer)?;
    Ok(Json(serde_json::json!({"ok": true})))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct QuestionReply {
    reply: String,
}

async fn reply_question(
    State(server): State<Shared>,
    UrlPath((id, qid)): UrlPath<(String, String)>,
    Json(body): Json<QuestionReply>,
) -> Result<Json<serde_json::Value>, ApiError> {
    server.manager.reply(&id, &qid, &body.reply)?;
    Ok(Json(serde_json::json!({"ok": true})))
}

async fn cancel_turn(
    State(server): State<Shared>,
    UrlPath(id): UrlPath<String>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let cancelled = server.manager.cancel(&id)?;
    Ok(Json(serde_json::json!({ "cancelled": cancelled })))
}

#[derive(Deserialize)]
struct After {
    after: Option<u64>,
}

/// The log after `after` in one JSON response, `{"events": […]}`: what the
/// page loads a long session with before it follows the event stream from
/// the last seq (one response parses far faster than 10,000 SSE messages).
async fn log(
    State(server): State<Shared>,
    UrlPath(id): UrlPath<String>,
    Query(query): Query<After>,
) -> Result<impl IntoResponse, ApiError> {
    #[derive(serde::Serialize)]
    struct Log {
        events: Vec<Event>,
    }
    let manager = server.manager.clone();
    let after = query.after.unwrap_or(0);
    let body = tokio::task::spawn_blocking(move || {
        let events = manager.events_after(&id, after)?;
        serde_json::to_vec(&Log { events }).map_err(internal)
    })
    .await
    .map_err(internal)??;
    Ok(([(header::CONTENT_TYPE, "application/json")], body))
}

fn sse_event(event: &Event) -> SseEvent {
    SseEvent::default()
        .id(event.seq.to_string())
        .data(serde_json::to_string(event).unwrap_or_default())
}

/// Replays the log after `after` (or `Last-Event-ID`), then streams live.
async fn events(
    State(server): State<Shared>,
    UrlPath(id): UrlPath<String>,
    Query(query): Query<After>,
    headers: HeaderMap,
) -> Result<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>, ApiError> {
    let resume = headers
        .get("last-event-id")
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<u64>().ok());
    let after = resume.or(query.after).unwrap_or(0);
    // Subscribe first, then read the log: nothing falls between the two.
    let live = server.manager.subscribe(&id)?;
    let manager = server.manager.clone();
    let replay_id = id.clone();
    let backlog = tokio::task::spawn_blocking(move || manager.events_after(&replay_id, after))
        .await
        .map_err(internal)??;
    let state = (
        std::collections::VecDeque::from(backlog),
        live,
        after,
        server.manager.clone(),
        id,
    );
    let stream = futures_util::stream::unfold(
        state,
        |(mut queue, mut live, mut last, manager, id)| async move {
            loop {
                if let Some(event) = queue.pop_front() {
                    if event.seq <= last {
                        continue;
                    }
                    last = event.seq;
                    let item = sse_event(&event);
                    return Some((Ok(item), (queue, live, last, manager, id)));
                }
                match live.recv().await {
                    Ok(event) => queue.push_back(event),
                    Err(RecvError::Lagged(_)) => {
                        let manager2 = manager.clone();
                        let id2 = id.clone();
                        let caught_up =
                            tokio::task::spawn_blocking(move || manager2.events_after(&id2, last))
                                .await
                                .ok()
                                .and_then(|result| result.ok())
                                .unwrap_or_default();
                        queue.extend(caught_up);
                    }
                    Err(RecvError::Closed) => return None,
                }
            }
        },
    );
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}

/// `$WICKET_HOME/server.json`: where a running server is, and its token.
#[derive(Debug, Clone, serde::Serialize, Deserialize)]
pub struct ServerFile {
    pub url: String,
    pub port: u16,
    pub token: String,
    pub pid: u32,
}

/// The server already running on this home, if its process is alive.
pub fn running_server(home: &Path) -> Option<ServerFile> {
    let bytes = std::fs::read(home.join("server.json")).ok()?;
    let file: ServerFile = serde_json::from_slice(&bytes).ok()?;
    let pid = rustix::process::Pid::from_raw(file.pid as i32)?;
    let alive = rustix::process::test_kill_process(pid) != Err(rustix::io::Errno::SRCH);
    (alive && file.pid != std::process::id()).then_some(file)
}

/// Writes `server.json` with mode 0600 (temp file, then rename).
pub fn write_server_file(home: &Path, file: &ServerFile) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::create_dir_all(home)?;
    let path = home.join("server.json");
    let temp = home.join(format!(".server.json.{}.tmp", std::process::id()));
    let mut out = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&temp)?;
    out.write_all(
        serde_json::to_string_pretty(file)
            .unwrap_or_default()
            .as_bytes(),
    )?;
    out.sync_all()?;
    std::fs::rename(&temp, &path)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use axum::body::Body;
    use http_body_util::BodyExt;
    use tower::ServiceExt;

    const TOKEN: &str = "t0ken";

    fn router(home: &Path) -> Router {
        let manager = Arc::new(Manager::new(
            home,
            tokio::runtime::Handle::current(),
            wicket_core::manager::standard_setup(home),
        ));
        let addr = SocketAddr::from(([127, 0, 0, 1], 7433));
        app(Arc::new(Server::new(manager, TOKEN.into(), addr)))
    }

    fn get(path: &str) -> axum::http::request::Builder {
        axum::http::Request::get(path).header(header::HOST, "127.0.0.1:7433")
    }

    async fn send(
        router: Router,
        request: axum::http::Request<Body>,
    ) -> (StatusCode, serde_json::Value) {
        let response = router.oneshot(request).await.unwrap();
        let status = response.status();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        (status, serde_json::from_slice(&bytes).unwrap_or_default())
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn refusals_carry_their_status_and_kind() {
        let home = tempfile::tempdir().unwrap();
        let bearer = format!("Bearer {TOKEN}");
        let cases = [
            (
                get("/api/sessions").body(Body::empty()).unwrap(),
                401,
                "unauthorized",
            ),
            (
                get("/api/sessions")
                    .header(header::AUTHORIZATION, "Bearer t0kem")
                    .body(Body::empty())
                    .unwrap(),
                401,
                "unauthorized",
            ),
            (
                axum::http::Request::get("/api/sessions")
                    .header(header::HOST, "attacker.example:7433")
                    .header(header::AUTHORIZATION, &bearer)
                    .body(Body::empty())
                    .unwrap(),
                403,
                "forbidden_host",
            ),
            (
                axum::http::Request::post("/api/sessions/x/cancel")
                    .header(header::HOST, "localhost:7433")
                    .header(header::ORIGIN, "http://attacker.example")
                    .header(header::AUTHORIZATION, &bearer)
                    .body(Body::empty())
                    .unwrap(),
                403,
                "forbidden_origin",
            ),
            (
                get("/api/sessions/no-such/events")
                    .header(header::AUTHORIZATION, &bearer)
                    .body(Body::empty())
                    .unwrap(),
                404,
                "not_found",
            ),
        ];
        for (request, status, kind) in cases {
            let uri = request.uri().clone();
            let (got, body) = send(router(home.path()), request).await;
            assert_eq!(got.as_u16(), status, "{uri}: {body}");
            assert_eq!(body["error"]["kind"], kind, "{uri}: {body}");
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_body_over_the_limit_is_refused() {
        let home = tempfile::tempdir().unwrap();
        let text = "x".repeat(BODY_LIMIT_BYTES + 1);
        let request = axum::http::Request::post("/api/sessions")
            .header(header::HOST, "127.0.0.1:7433")
            .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(
                serde_json::json!({ "workspace": text }).to_string(),
            ))
            .unwrap();
        let response = router(home.path()).oneshot(request).await.unwrap();
        assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_list_starts_empty_and_the_page_is_served() {
        let home = tempfile::tempdir().unwrap();
        let request = get("/api/sessions")
            .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
            .body(Body::empty())
            .unwrap();
        assert_eq!(
            send(router(home.path()), request).await,
            (StatusCode::OK, serde_json::json!([]))
        );
        let page = router(home.path())
            .oneshot(
                get(&format!("/?token={TOKEN}"))
                    .body(Body::empty())
                    .unwrap(),
            )
            .await
            .unwrap();
        // The token leaves the address bar for a cookie.
        assert_eq!(page.status(), StatusCode::SEE_OTHER);
        let cookie = page
            .headers()
            .get(header::SET_COOKIE)
            .unwrap()
            .to_str()
            .unwrap();
        assert!(
            cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
            "{cookie}"
        );
        let pair = cookie.split(';').next().unwrap().to_string();
        let page = router(home.path())
            .oneshot(
                get("/")
                    .header(header::COOKIE, pair)
                    .body(Body::empty())
                    .unwrap(),
            )
            .await
            .unwrap();
        assert_eq!(page.status(), StatusCode::OK);
        let html = page.into_body().collect().await.unwrap().to_bytes();
        assert!(String::from_utf8_lossy(&html).contains("<script"));
    }
}
