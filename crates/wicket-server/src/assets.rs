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

#[cfg(test)]
mod tests {
    use wicket_protocol::EventBody;

    /// The cases of the `switch` of `function NAME(` in app.js.
    fn cases_of(function: &str) -> Vec<String> {
        let start = super::APP_JS
            .find(&format!("function {function}("))
            .unwrap_or_else(|| panic!("app.js has no function {function}"));
        let body = &super::APP_JS[start..];
        // The function ends at the first line that closes it at column 0.
        let end = body.find("\n}\n").unwrap_or(body.len());
        body[..end]
            .split("case \"")
            .skip(1)
            .filter_map(|rest| rest.split('"').next())
            .map(str::to_string)
            .collect()
    }

    /// The compiler checks every Rust renderer of an event; this checks
    /// the page's: a new kind of event is a failing test until app.js
    /// takes it in (`ingest`) and, where it shows as a row of its own, draws it (`row`).
    #[test]
    fn the_page_handles_every_kind_of_event_the_protocol_has() {
        let taken = cases_of("ingest");
        let drawn = cases_of("row");
        for kind in EventBody::KINDS {
            assert!(
                taken.iter().any(|case| case == kind),
                "app.js's ingest has no case for \"{kind}\""
            );
            // An answer, a reply and a turn's end change a row already shown.
            let own_row = !matches!(kind, "answer" | "reply" | "turn_ended");
            assert!(
                !own_row || drawn.iter().any(|case| case == kind),
                "app.js's row draws no \"{kind}\""
            );
        }
        assert!(cases_of("ingest").len() >= EventBody::KINDS.len());
    }
}
