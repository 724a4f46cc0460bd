//! The HTTP side both providers share: one POST with a JSON body, a request
//! timeout on the response headers, an idle timeout on every read of the
//! body, the server's error message on a failure status, and the body as a
//! sequence of server-sent events.

use std::pin::Pin;
use std::time::Duration;
use wicket_protocol::limits::REPLY_MAX_BYTES;

use futures_util::{Stream, StreamExt};
use reqwest::header::HeaderMap;

use crate::retry::parse_retry_after;
use crate::sse::{SseEvent, SseParser};
use crate::{ChatError, ChatErrorKind, ClientConfig};

/// The longest piece of an error body shown to the person.
const ERROR_BODY_LIMIT: usize = 2000;

pub(crate) struct Http {
    client: reqwest::Client,
    /// `openai` or `anthropic`, the start of every error message.
    provider: &'static str,
    request_timeout: Duration,
    idle_timeout: Duration,
}

impl Http {
    pub(crate) fn new(provider: &'static str, config: &ClientConfig) -> Result<Self, ChatError> {
        crate::tls::install();
        let client = reqwest::Client::builder()
            .connect_timeout(config.request_timeout.min(Duration::from_secs(30)))
            .build()
            .map_err(|error| {
                ChatError::new(
                    ChatErrorKind::Config,
                    format!("{provider}: cannot make an HTTP client: {error}"),
                )
            })?;
        Ok(Http {
            client,
            provider,
            request_timeout: config.request_timeout,
            idle_timeout: config.idle_timeout,
        })
    }

    /// POSTs `body` to `url` and returns the response's event stream, or the
    /// error the server (or the network) gave.
    pub(crate) async fn post_events(
        &self,
        url: &str,
        headers: HeaderMap,
        body: &serde_json::Value,
    ) -> Result<Events, ChatError> {
        let send = self.client.post(url).headers(headers).json(body).send();
        let response = match tokio::time::timeout(self.request_timeout, send).await {
            Err(_) => {
                return Err(self.error(
                    ChatErrorKind::Timeout,
                    format!(
                        "no response from {url} within {} s",
                        self.request_timeout.as_secs_f64()
                    ),
                ));
            }
            Ok(Err(error)) => {
                return Err(self.error(
                    ChatErrorKind::Connection,
                    format!("cannot reach {url}: {}", error_chain(&error)),
                ));
            }
            Ok(Ok(response)) => response,
        };
        let status = response.status();
        if !status.is_success() {
            return Err(self.failure(response).await);
        }
        Ok(Events {
            body: Box::pin(response.bytes_stream()),
            parser: SseParser::default(),
            ready: Vec::new().into_iter(),
            ended: false,
            received: 0,
            idle_timeout: self.idle_timeout,
            provider: self.provider,
        })
    }

    /// The error for a failure status, with the message from the body the
    /// server sent and its `Retry-After`.
    async fn failure(&self, response: reqwest::Response) -> ChatError {
        let status = response.status();
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|value| value.to_str().ok())
                .map(str::to_string)
        };
        let retry_after = parse_retry_after(
            header("retry-after").as_deref(),
            header("retry-after-ms").as_deref(),
        );
        let body = tokio::time::timeout(self.idle_timeout, response.text())
            .await
            .ok()
            .and_then(Result::ok)
            .unwrap_or_default();
        let mut error = self.error(
            ChatErrorKind::Http {
                status: status.as_u16(),
            },
            format!("{status}: {}", server_message(&body)),
        );
        error.retry_after = retry_after;
        error
    }

    fn error(&self, kind: ChatErrorKind, message: String) -> ChatError {
        ChatError::new(kind, format!("{}: {message}", self.provider))
    }
}

/// The message a provider put in its error body (`{"error":{"message"}}`
/// for both OpenAI and Anthropic), else the body itself, cut short.
pub(crate) fn server_message(body: &str) -> String {
    let parsed: Option<serde_json::Value> = serde_json::from_str(body).ok();
    let message = parsed.as_ref().and_then(|value| {
        let error = value.get("error")?;
        error
            .get("message")
            .and_then(|message| message.as_str())
            .or_else(|| error.as_str())
            .map(str::to_string)
    });
    let text = message.unwrap_or_else(|| body.trim().to_string());
    if text.is_empty() {
        return "the server sent no message".into();
    }
    match text.char_indices().nth(ERROR_BODY_LIMIT) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

/// An error and its causes, which reqwest keeps apart ("error sending
/// request" alone says nothing).
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

type Body = Pin<Box<dyn Stream<Item = reqwest::Result<bytes::Bytes>> + Send>>;

/// A response body read as server-sent events.
pub(crate) struct Events {
    body: Body,
    parser: SseParser,
    ready: std::vec::IntoIter<SseEvent>,
    /// The body ended (it is not polled again).
    ended: bool,
    /// Bytes of the body so far: bounded, so a server that streams forever
    /// cannot grow the parser or the reply without end.
    received: u64,
    idle_timeout: Duration,
    provider: &'static str,
}

impl Events {
    /// The next event; `None` when the body ended cleanly. A break in the
    /// connection or a silence past the idle timeout is an error.
    pub(crate) async fn next(&mut self) -> Result<Option<SseEvent>, ChatError> {
        loop {
            if let Some(event) = self.ready.next() {
                return Ok(Some(event));
            }
            if self.ended {
                return Ok(None);
            }
            let chunk = match tokio::time::timeout(self.idle_timeout, self.body.next()).await {
                Err(_) => {
                    return Err(ChatError::new(
                        ChatErrorKind::Timeout,
                        format!(
                            "{}: the stream sent nothing for {} s",
                            self.provider,
                            self.idle_timeout.as_secs_f64()
                        ),
                    ));
                }
                Ok(None) => {
                    // The body ended: a last line a final CR ended still counts.
                    self.ended = true;
                    self.ready = self.parser.end().into_iter();
                    continue;
                }
                Ok(Some(Err(error))) => {
                    return Err(ChatError::new(
                        ChatErrorKind::Stream,
                        format!(
                            "{}: the stream broke before its end: {}",
                            self.provider,
                            error_chain(&error)
                        ),
                    ));
                }
                Ok(Some(Ok(chunk))) => chunk,
            };
            self.received = self.received.saturating_add(chunk.len() as u64);
            if self.received > REPLY_MAX_BYTES {
                return Err(ChatError::new(
                    ChatErrorKind::Protocol,
                    format!(
                        "{}: the reply passed {REPLY_MAX_BYTES} bytes, more than any model's reply; \
                         the server (or a proxy before it) sent a broken stream, check its log",
                        self.provider
                    ),
                ));
            }
            self.ready = self.parser.feed(&chunk).into_iter();
        }
    }

    /// The error for a stream that ended without its last event.
    pub(crate) fn ended_early(&self) -> ChatError {
        ChatError::new(
            ChatErrorKind::Stream,
            format!("{}: the stream ended before its last event", self.provider),
        )
    }

    /// The error for an event that is not the protocol.
    pub(crate) fn bad_event(&self, data: &str, error: &EventError) -> ChatError {
        ChatError::new(
            ChatErrorKind::Protocol,
            format!("{}: {}", self.provider, error.describe(data)),
        )
    }
}

/// Why one event could not be read: where in it (the field's path, when
/// the JSON parsed but did not fit) and what serde said.
pub(crate) struct EventError {
    path: String,
    error: serde_json::Error,
}

/// Parses one event's `data` as `T`, saying which field did not fit.
pub(crate) fn parse_event<T: serde::de::DeserializeOwned>(data: &str) -> Result<T, EventError> {
    let mut deserializer = serde_json::Deserializer::from_str(data);
    serde_path_to_error::deserialize(&mut deserializer).map_err(|error| EventError {
        path: error.path().to_string(),
        error: error.into_inner(),
    })
}

impl EventError {
    /// What went wrong, naming the field and showing the event around it.
    pub(crate) fn describe(&self, data: &str) -> String {
        let kind = match self.error.classify() {
            serde_json::error::Category::Data => "does not fit the protocol",
            serde_json::error::Category::Syntax | serde_json::error::Category::Eof => "is not JSON",
            serde_json::error::Category::Io => "could not be read",
        };
        let field = if self.path.is_empty() || self.path == "." {
            String::new()
        } else {
            format!(" at `{}`", self.path)
        };
        format!(
            "the stream sent an event that {kind}{field} ({}): …{}…",
            self.error,
            around(data, self.error.column())
        )
    }
}

/// Up to 120 characters of `data` either side of `column` (1-based, in
/// bytes, on the event's one line).
fn around(data: &str, column: usize) -> String {
    let at = column.saturating_sub(1).min(data.len());
    let mut start = at.saturating_sub(120);
    while !data.is_char_boundary(start) {
        start -= 1;
    }
    let mut end = (at + 120).min(data.len());
    while !data.is_char_boundary(end) {
        end += 1;
    }
    data[start..end].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_server_message_is_found_in_both_error_shapes() {
        let openai = r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}"#;
        assert_eq!(server_message(openai), "Incorrect API key provided");
        let anthropic =
            r#"{"type":"error","error":{"type":"not_found_error","message":"model: claude-x"}}"#;
        assert_eq!(server_message(anthropic), "model: claude-x");
        assert_eq!(
            server_message("<html>Bad Gateway</html>\n"),
            "<html>Bad Gateway</html>"
        );
        assert_eq!(server_message(""), "the server sent no message");
        assert_eq!(
            server_message(&"é".repeat(5000)).chars().count(),
            ERROR_BODY_LIMIT + 1
        );
    }
}
