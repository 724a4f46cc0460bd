//! The router through `oneshot`: refusals, limits, the page.
#![allow(clippy::unwrap_used)]

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::http::{StatusCode, header};
use wicket_core::manager::Manager;

use super::*;
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
async fn every_refusal_is_a_json_error_the_body_limit_and_bad_json_included() {
    let home = tempfile::tempdir().unwrap();
    let post = |body: String| {
        axum::http::Request::post("/api/sessions")
            .header(header::HOST, "127.0.0.1:7433")
            .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(body))
            .unwrap()
    };
    let big = serde_json::json!({ "workspace": "x".repeat(BODY_LIMIT_BYTES + 1) }).to_string();
    let (status, body) = send(router(home.path()), post(big)).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(body["error"]["kind"], "too_large", "{body}");
    let (status, body) = send(router(home.path()), post("{not json".into())).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["error"]["kind"], "invalid_args", "{body}");
    let (status, body) = send(router(home.path()), post(r#"{"wrkspace":"/tmp"}"#.into())).await;
    assert_eq!(status.as_u16(), 422);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("wrkspace"),
        "{body}"
    );
    let missing = get("/api/no/such/path")
        .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
        .body(Body::empty())
        .unwrap();
    let (status, body) = send(router(home.path()), missing).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(body["error"]["kind"], "not_found", "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_list_starts_empty_and_the_page_carries_no_token_and_cannot_be_framed() {
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
        .oneshot(get("/").body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(page.status(), StatusCode::OK);
    assert!(page.headers().get(header::SET_COOKIE).is_none());
    let csp = page.headers()[header::CONTENT_SECURITY_POLICY]
        .to_str()
        .unwrap();
    assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
    assert_eq!(page.headers()[header::X_FRAME_OPTIONS], "DENY");
    let html = page.into_body().collect().await.unwrap().to_bytes();
    let html = String::from_utf8_lossy(&html);
    assert!(html.contains("<script") && !html.contains(TOKEN));
    // A cookie is no way in any more: only the Authorization header is.
    let cookie = get("/api/sessions")
        .header(header::COOKIE, format!("wicket_token={TOKEN}"))
        .body(Body::empty())
        .unwrap();
    let (status, body) = send(router(home.path()), cookie).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
}
