//! `wicket serve`: an HTTP API with server-sent events over the session
//! manager, and the web page, served by the same binary. Start from [`app`].
//!
//! - [`auth`] checks who may talk to the server: every `/api` request carries the token as
//!   `Authorization: Bearer` (the page keeps it from the link's fragment,
//!   which never reaches a server, and no cookie carries it: cookies are
//!   shared by every port of 127.0.0.1); every request's Host must be this
//!   server's (DNS rebinding); every state-changing request with an Origin
//!   must come from this server's page (CSRF).
//! - [`api`] holds the handlers. They only translate: queueing, blocking and
//!   cancel are the manager's, every manager call that can touch the disk
//!   or wait on a lock runs on the blocking pool, and every refusal —
//!   axum's own rejections included — is `{"error":{"kind","message"}}`.
//! - [`events`] serves the event stream (SSE) and the log in one response.
//! - [`assets`] serves the page, served with a CSP and `frame-ancestors 'none'`.
//! - [`server_file`] reads and writes `$WICKET_HOME/server.json`.

pub mod api;
pub mod assets;
pub mod auth;
pub mod events;
pub mod server_file;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::middleware;
use axum::routing::{delete, get, post};
use wicket_core::manager::Manager;

pub use api::ApiError;
pub use server_file::{ServerFile, running_server, write_server_file};

/// The largest request body the API accepts.
pub const BODY_LIMIT_BYTES: usize = 1024 * 1024;

/// What the handlers share.
pub struct Server {
    /// The sessions.
    pub manager: Arc<Manager>,
    /// The token every `/api` request carries.
    pub token: String,
    /// The hosts a request may name: `127.0.0.1:PORT`, `localhost:PORT`, and
    /// the `--listen` address when one was given.
    pub hosts: Vec<String>,
    /// The workspace a new session gets when the request names none.
    pub default_workspace: Option<PathBuf>,
}

impl Server {
    /// A server listening on `addr`.
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

/// A fresh token: 256 bits from the kernel's CSPRNG, as hex.
pub fn new_token() -> String {
    wicket_os::ids::random_hex(64)
}

/// The router: the page and the API, behind the Host, Origin and token checks.
pub fn app(server: Shared) -> Router {
    let api = Router::new()
        .route(
            "/sessions",
            get(api::list_sessions).post(api::create_session),
        )
        .route("/sessions/{id}", get(api::session_detail))
        .route("/sessions/{id}/messages", post(api::send_message))
        .route("/sessions/{id}/cards/{card}", post(api::answer_card))
        .route("/sessions/{id}/questions/{qid}", post(api::reply_question))
        .route("/sessions/{id}/cancel", post(api::cancel_turn))
        .route("/sessions/{id}/compact", post(api::compact_session))
        .route("/sessions/{id}/rewind", post(api::rewind_session))
        .route("/sessions/{id}/checkpoints", get(api::list_checkpoints))
        .route("/sessions/{id}/grants", get(api::list_grants))
        .route("/sessions/{id}/grants/{grant}", delete(api::revoke_grant))
        .route("/rules", get(api::list_rules).post(api::add_rule))
        .route("/rules/{id}", delete(api::revoke_rule))
        .route("/sessions/{id}/events", get(events::events))
        .route("/sessions/{id}/log", get(events::log))
        .fallback(api::not_found)
        .method_not_allowed_fallback(api::method_not_allowed)
        .layer(middleware::from_fn_with_state(
            server.clone(),
            auth::require_token,
        ));
    Router::new()
        .route("/", get(assets::page))
        .route("/app.js", get(assets::script))
        .route("/app.css", get(assets::style))
        .nest("/api", api)
        .layer(DefaultBodyLimit::max(BODY_LIMIT_BYTES))
        .layer(middleware::from_fn_with_state(
            server.clone(),
            auth::check_host_and_origin,
        ))
        .with_state(server)
}

#[cfg(test)]
mod tests;
