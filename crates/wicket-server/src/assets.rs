//! The page: static files embedded in the binary, served with a content
//! security policy that allows only this server's own script, style and
//! API, and no framing. The page holds no secret: the token comes with the
//! link's fragment and stays in the tab.

use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};

const INDEX_HTML: &str = include_str!("../web/index.html");
const APP_JS: &str = include_str!("../web/app.js");
const APP_CSS: &str = include_str!("../web/app.css");

/// The page's Content-Security-Policy.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; \
img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

fn served(content_type: &'static str, body: &'static str) -> Response {
    let mut response = ([(header::CONTENT_TYPE, content_type)], body).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// `GET /`.
pub async fn page() -> Response {
    served("text/html; charset=utf-8", INDEX_HTML)
}

/// `GET /app.js`.
pub async fn script() -> Response {
    served("text/javascript; charset=utf-8", APP_JS)
}

/// `GET /app.css`.
pub async fn style() -> Response {
    served("text/css; charset=utf-8", APP_CSS)
}
