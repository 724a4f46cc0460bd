//! What can be wrong with a client's request, before any host is asked
//! for: each becomes a `400` (or a SOCKS5 failure reply) and
//! [`Outcome::BadRequest`](crate::Outcome::BadRequest) with its message.

use crate::{HEAD_MAX_BYTES, HEAD_TIMEOUT};

/// A request Wicket's proxy will not serve, and why. Text that came from
/// the client is quoted with its control characters escaped, and cut short.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The head did not end within [`HEAD_MAX_BYTES`].
    #[error("the request's head is over {HEAD_MAX_BYTES} bytes; Wicket's proxy reads no more")]
    HeadTooLarge,
    /// The head did not end within [`HEAD_TIMEOUT`].
    #[error(
        "the request's head was not complete after {} s; Wicket's proxy closed the connection",
        HEAD_TIMEOUT.as_secs()
    )]
    HeadTimeout,
    /// The client closed (or half-closed) before its request was complete.
    #[error("the client closed the connection before its request was complete")]
    ClosedEarly,
    /// Reading the request failed.
    #[error("reading the request: {0}")]
    Read(#[source] std::io::Error),
    /// The request line or a header line is not HTTP/1.x.
    #[error("{0}")]
    Malformed(String),
    /// An origin-form request (`GET / HTTP/1.1`): a client that took the
    /// proxy for the server.
    #[error(
        "request target {0} names no host: this is Wicket's egress proxy; use it as a proxy (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY), not as the server"
    )]
    NotProxyForm(String),
    /// An `https://` absolute-form request: TLS goes through `CONNECT`.
    #[error(
        "an https:// request sent as plain text; a client asks for https with CONNECT host:443, which Wicket's proxy serves"
    )]
    HttpsAbsoluteForm,
    /// An absolute-form request with a scheme other than `http`.
    #[error(
        "scheme {0} is not proxied; Wicket's proxy forwards http:// requests and tunnels CONNECT"
    )]
    Scheme(String),
    /// A host no name or address looks like.
    #[error("host {host} {reason}")]
    BadHost {
        /// The host as the client wrote it, quoted.
        host: String,
        /// What is wrong with it, e.g. "contains '@'".
        reason: String,
    },
    /// A port that is not a number from 1 to 65535, or none where one is
    /// needed.
    #[error("port {port} is not a number from 1 to 65535")]
    BadPort {
        /// The port as the client wrote it, quoted.
        port: String,
    },
    /// A SOCKS5 greeting or request Wicket's proxy does not serve.
    #[error("SOCKS5: {0}")]
    Socks(String),
}

impl Error {
    /// A [`Error::BadHost`] for `host` as the client wrote it.
    pub(crate) fn bad_host(host: &str, reason: impl Into<String>) -> Self {
        Self::BadHost {
            host: quoted(host),
            reason: reason.into(),
        }
    }

    /// A [`Error::BadPort`] for `port` as the client wrote it.
    pub(crate) fn bad_port(port: &str) -> Self {
        Self::BadPort { port: quoted(port) }
    }
}

/// Text from the client as a message may show it: in double quotes, with
/// control, format and quote characters escaped, at most 100 characters.
pub(crate) fn quoted(text: &str) -> String {
    const SHOWN_CHARS: usize = 100;
    let mut shown: String = text.chars().take(SHOWN_CHARS).collect();
    if shown.len() < text.len() {
        shown.push('…');
    }
    format!("{shown:?}")
}

/// Shorthand for this crate's results.
pub type Result<T, E = Error> = std::result::Result<T, E>;
