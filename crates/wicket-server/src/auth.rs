//! Who may talk to the server: the Host and Origin checks, and the token.

use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use subtle::ConstantTimeEq;

use crate::Shared;
use crate::api::ApiError;

/// DNS rebinding: the Host must be this server. CSRF: a state-changing
/// request with an Origin must come from this server's own page.
pub async fn check_host_and_origin(
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
        return ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden_host",
            format!(
                "the Host '{host}' is not this server; use http://{}",
                server.hosts[0]
            ),
        )
        .into_response();
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
            return ApiError::new(
                StatusCode::FORBIDDEN,
                "forbidden_origin",
                format!("requests from the origin '{origin}' are refused"),
            )
            .into_response();
        }
    }
    next.run(request).await
}

fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)?
        .to_str()
        .ok()?
        .strip_prefix("Bearer ")
}

/// Whether `given` is the token, compared in constant time.
pub fn token_matches(server: &crate::Server, given: &str) -> bool {
    given.as_bytes().ct_eq(server.token.as_bytes()).into()
}

/// Every `/api` request: `Authorization: Bearer TOKEN`, nothing else.
pub async fn require_token(State(server): State<Shared>, request: Request, next: Next) -> Response {
    match bearer(request.headers()) {
        Some(token) if token_matches(&server, token) => next.run(request).await,
        Some(_) => ApiError::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "the token is wrong; it is in $WICKET_HOME/server.json",
        )
        .into_response(),
        None => ApiError::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "a token is needed: Authorization: Bearer TOKEN (from $WICKET_HOME/server.json), or open the link wicket serve printed",
        )
        .into_response(),
    }
}
