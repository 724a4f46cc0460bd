//! HTTP/1.x proxy requests: `CONNECT host:port` (a tunnel) and
//! absolute-form requests (`GET http://host/path HTTP/1.1`), forwarded to
//! the host in origin-form with `Connection: close`. One request per client
//! connection: the response's `Connection: close` makes the client open a
//! new connection (and so a new decision) for its next request, so every
//! request on a connection goes to the host that was decided.

use crate::error::{Error, Result, quoted};
use crate::host::{Target, Via, parse_authority};

/// An HTTP request's head, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Request {
    /// `CONNECT host:port`: once connected, the tunnel carries whatever the
    /// client sends.
    Connect(Target),
    /// An absolute-form `http://` request, with the head to send the host
    /// in its place: origin-form request line, `Host` from the request
    /// line, the proxy's hop-by-hop headers dropped, `Connection: close`.
    Forward {
        /// Where the request goes.
        target: Target,
        /// The head to send the host.
        head: Vec<u8>,
    },
}

/// The port an `http://` URL without one means.
pub(crate) const HTTP_DEFAULT_PORT: u16 = 80;

/// Headers that speak to the proxy, or to one hop, and are not forwarded;
/// `Host` is written again from the request line (RFC 9112 §3.2.2: a
/// proxy replaces it), so a request cannot reach one host while naming
/// another to it.
const DROPPED_HEADERS: [&str; 5] = [
    "proxy-connection",
    "proxy-authorization",
    "connection",
    "keep-alive",
    "host",
];

/// Reads a complete request head (request line, headers, empty line).
pub(crate) fn parse(head: &[u8]) -> Result<Request> {
    let mut lines = lines(head)?;
    let request_line = lines.first().copied().unwrap_or_default();
    let (method, target, version) = request_line_parts(request_line)?;
    let headers = lines.split_off(1);
    let headers = headers
        .into_iter()
        .map(header)
        .collect::<Result<Vec<_>>>()?;
    if method == "CONNECT" {
        let (host, port) = parse_authority(target, None)?;
        return Ok(Request::Connect(Target {
            host,
            port,
            via: Via::Connect,
        }));
    }
    let Some((scheme, rest)) = target.split_once("://") else {
        return Err(Error::NotProxyForm(quoted(target)));
    };
    match scheme.to_ascii_lowercase().as_str() {
        "http" => {}
        "https" => return Err(Error::HttpsAbsoluteForm),
        _ => return Err(Error::Scheme(quoted(scheme))),
    }
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(authority_end);
    if authority.contains('@') {
        return Err(Error::bad_host(
            authority,
            "carries a user name (user@host), which Wicket's proxy does not forward",
        ));
    }
    let (host, port) = parse_authority(authority, Some(HTTP_DEFAULT_PORT))?;
    let target = Target {
        host,
        port,
        via: Via::Http,
    };
    let head = forwarded_head(method, path, version, &target, &headers);
    Ok(Request::Forward { target, head })
}

/// The head's lines, line ends removed, up to the empty line that ends it.
fn lines(head: &[u8]) -> Result<Vec<&[u8]>> {
    let mut lines = Vec::new();
    for line in head.split(|b| *b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            break;
        }
        if let Some(bad) = line.iter().find(|b| matches!(b, b'\r' | b'\0')) {
            return Err(Error::Malformed(format!(
                "a line of the request holds byte {bad:#04x}, which HTTP does not allow there"
            )));
        }
        lines.push(line);
    }
    if lines.is_empty() {
        return Err(Error::Malformed(
            "the request starts with an empty line".into(),
        ));
    }
    Ok(lines)
}

/// `METHOD SP target SP HTTP/1.x`, each part checked.
fn request_line_parts(line: &[u8]) -> Result<(&str, &str, &str)> {
    let malformed = || {
        Error::Malformed(format!(
            "the request line {} is not METHOD TARGET HTTP/1.1",
            quoted(&String::from_utf8_lossy(line))
        ))
    };
    let text = std::str::from_utf8(line).map_err(|_| malformed())?;
    let mut parts = text.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(malformed());
    };
    if method.is_empty() || !method.bytes().all(token_byte) {
        return Err(malformed());
    }
    // HTTP's targets are ASCII, but a host written in UTF-8 (and not yet
    // in punycode) is still a host: Host::parse judges it.
    let target_char = |c: char| c.is_ascii_graphic() || (!c.is_ascii() && !c.is_control());
    if target.is_empty() || !target.chars().all(target_char) {
        return Err(malformed());
    }
    if !matches!(version, "HTTP/1.1" | "HTTP/1.0") {
        return Err(Error::Malformed(format!(
            "version {} is not HTTP/1.1 or HTTP/1.0, which Wicket's proxy speaks",
            quoted(version)
        )));
    }
    Ok((method, target, version))
}

/// A header line as `(name, whole line)`, its name checked.
fn header(line: &[u8]) -> Result<(&str, &[u8])> {
    let shown = || quoted(&String::from_utf8_lossy(line));
    if matches!(line.first(), Some(b' ' | b'\t')) {
        return Err(Error::Malformed(format!(
            "header line {} continues the one before it (obsolete line folding); send each header on one line",
            shown()
        )));
    }
    let Some(colon) = line.iter().position(|b| *b == b':') else {
        return Err(Error::Malformed(format!(
            "header line {} has no ':'",
            shown()
        )));
    };
    let name = &line[..colon];
    if name.is_empty() || !name.iter().copied().all(token_byte) {
        return Err(Error::Malformed(format!(
            "header line {} does not start with a header name and ':'",
            shown()
        )));
    }
    // Token bytes are ASCII, so this cannot fail.
    let name = std::str::from_utf8(name).map_err(|_| Error::Malformed(shown()))?;
    Ok((name, line))
}

/// The head to send the host: origin-form, `Host` first, the rest of the
/// client's headers but the dropped ones, in their order, then
/// `Connection: close`.
fn forwarded_head(
    method: &str,
    path: &str,
    version: &str,
    target: &Target,
    headers: &[(&str, &[u8])],
) -> Vec<u8> {
    // The fragment is the client's own; an empty path is the root.
    let path = path.split('#').next().unwrap_or_default();
    let slash = if path.starts_with('/') { "" } else { "/" };
    let host = match (&target.host, target.port) {
        (host, HTTP_DEFAULT_PORT) => host.to_string(),
        (host, port) => format!("{host}:{port}"),
    };
    let mut head = format!("{method} {slash}{path} {version}\r\nHost: {host}\r\n").into_bytes();
    for (name, line) in headers {
        if DROPPED_HEADERS
            .iter()
            .any(|dropped| name.eq_ignore_ascii_case(dropped))
        {
            continue;
        }
        head.extend_from_slice(line);
        head.extend_from_slice(b"\r\n");
    }
    head.extend_from_slice(b"Connection: close\r\n\r\n");
    head
}

/// A `tchar` of RFC 9110 §5.6.2: what methods and header names are made of.
fn token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// The reply to a `CONNECT` once the host is connected.
pub(crate) const ESTABLISHED: &[u8] = b"HTTP/1.1 200 Connection established\r\n\r\n";

/// A reply that ends the connection: `status` and `reason`, a plain-text
/// `body`, `Connection: close`.
pub(crate) fn reply(status: u16, reason: &str, body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// The `403` for a host the gate refused, naming Wicket and the host.
pub(crate) fn denied(target: &Target) -> Vec<u8> {
    reply(
        403,
        "Forbidden",
        &format!("Wicket refused {target}: the person denied it (or a rule did).\n"),
    )
}

/// The `400` for a request Wicket's proxy could not read (`408` when it
/// did not come in time).
pub(crate) fn bad_request(error: &Error) -> Vec<u8> {
    let (status, reason) = match error {
        Error::HeadTimeout => (408, "Request Timeout"),
        Error::HeadTooLarge
        | Error::ClosedEarly
        | Error::Read(_)
        | Error::Malformed(_)
        | Error::NotProxyForm(_)
        | Error::HttpsAbsoluteForm
        | Error::Scheme(_)
        | Error::BadHost { .. }
        | Error::BadPort { .. }
        | Error::Socks(_) => (400, "Bad Request"),
    };
    reply(
        status,
        reason,
        &format!("Wicket's proxy could not serve this request: {error}.\n"),
    )
}

/// The `502` for a host that did not resolve.
pub(crate) fn unresolved(target: &Target, why: &str) -> Vec<u8> {
    reply(
        502,
        "Bad Gateway",
        &format!("Wicket could not resolve {}: {why}.\n", target.host),
    )
}

/// The `502` for a host that was allowed but could not be connected to.
pub(crate) fn connect_failed(target: &Target, why: &str) -> Vec<u8> {
    reply(
        502,
        "Bad Gateway",
        &format!("Wicket could not connect to {target}: {why}.\n"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::Host;

    fn forward(head: &str) -> (Target, String) {
        match parse(head.as_bytes()).unwrap() {
            Request::Forward { target, head } => (target, String::from_utf8(head).unwrap()),
            other => panic!("not forwarded: {other:?}"),
        }
    }

    #[test]
    fn connect_names_host_and_port() {
        let request =
            parse(b"CONNECT pypi.org:443 HTTP/1.1\r\nHost: pypi.org:443\r\n\r\n").unwrap();
        let Request::Connect(target) = request else {
            panic!("{request:?}")
        };
        assert_eq!(target.to_string(), "pypi.org:443");
        assert_eq!(target.via, Via::Connect);
        let request = parse(b"CONNECT [::1]:8443 HTTP/1.1\r\n\r\n").unwrap();
        assert_eq!(
            request,
            Request::Connect(Target {
                host: Host::Ip("::1".parse().unwrap()),
                port: 8443,
                via: Via::Connect
            })
        );
        let request = parse(b"CONNECT 127.0.0.1:22 HTTP/1.1\r\n\r\n").unwrap();
        assert!(matches!(
            request,
            Request::Connect(Target {
                host: Host::Ip(_),
                ..
            })
        ));
    }

    #[test]
    fn absolute_form_is_forwarded_in_origin_form_without_proxy_headers() {
        let (target, head) = forward(
            "GET http://Example.com/a/b?c=d#frag HTTP/1.1\r\n\
             Host: evil.example\r\n\
             User-Agent: curl/8\r\n\
             Proxy-Connection: Keep-Alive\r\n\
             Proxy-Authorization: Basic eDp5\r\n\
             Connection: keep-alive\r\n\
             Keep-Alive: timeout=5\r\n\
             Accept: */*\r\n\r\n",
        );
        assert_eq!(target.to_string(), "example.com:80");
        assert_eq!(target.via, Via::Http);
        assert_eq!(
            head,
            "GET /a/b?c=d HTTP/1.1\r\nHost: example.com\r\nUser-Agent: curl/8\r\n\
             Accept: */*\r\nConnection: close\r\n\r\n"
        );
    }

    #[test]
    fn absolute_form_keeps_a_port_and_fills_an_empty_path() {
        let (target, head) = forward("POST http://localhost:8080 HTTP/1.0\nContent-Length: 3\n\n");
        assert_eq!(target.port, 8080);
        assert_eq!(
            head,
            "POST / HTTP/1.0\r\nHost: localhost:8080\r\nContent-Length: 3\r\nConnection: close\r\n\r\n"
        );
        let (_, head) = forward("GET http://[::1]:81?q HTTP/1.1\r\n\r\n");
        assert!(
            head.starts_with("GET /?q HTTP/1.1\r\nHost: [::1]:81\r\n"),
            "{head}"
        );
    }

    #[test]
    fn https_absolute_form_and_origin_form_are_refused_with_what_to_do() {
        let error = parse(b"GET https://example.com/ HTTP/1.1\r\n\r\n").unwrap_err();
        assert!(error.to_string().contains("CONNECT"), "{error}");
        let error = parse(b"GET / HTTP/1.1\r\nHost: example.com\r\n\r\n").unwrap_err();
        assert!(error.to_string().contains("use it as a proxy"), "{error}");
        assert!(matches!(
            parse(b"GET ftp://example.com/ HTTP/1.1\r\n\r\n"),
            Err(Error::Scheme(_))
        ));
    }

    #[test]
    fn malformed_heads_are_refused() {
        for head in [
            "garbage\r\n\r\n",
            "\r\n\r\n",
            "GET  http://a/ HTTP/1.1\r\n\r\n",
            "GET http://a/ HTTP/2\r\n\r\n",
            "G(T http://a/ HTTP/1.1\r\n\r\n",
            "GET http://a/ HTTP/1.1 extra\r\n\r\n",
            "GET http://a/ HTTP/1.1\r\nNo colon here\r\n\r\n",
            "GET http://a/ HTTP/1.1\r\nX: a\r\n folded\r\n\r\n",
            "GET http://a/ HTTP/1.1\r\nBad Name: a\r\n\r\n",
            "GET http://a/ HTTP/1.1\r\nX: a\rb\r\n\r\n",
            "GET http://us@er@a/ HTTP/1.1\r\n\r\n",
            "GET http://user@a/ HTTP/1.1\r\n\r\n",
            "GET http://a:0/ HTTP/1.1\r\n\r\n",
            "GET http://a:99999/ HTTP/1.1\r\n\r\n",
            "CONNECT a HTTP/1.1\r\n\r\n",
            "CONNECT a:https HTTP/1.1\r\n\r\n",
            "CONNECT a%2eb:443 HTTP/1.1\r\n\r\n",
        ] {
            assert!(parse(head.as_bytes()).is_err(), "{head:?}");
        }
        assert!(parse(b"GET http://a/ HTTP/1.1\r\nX: \xff\xfe\r\n\r\n").is_ok());
        assert!(parse(b"\x16\x03\x01\x02\x00\x01\r\n\r\n").is_err());
    }

    #[test]
    fn a_unicode_host_is_forwarded_under_its_ascii_name() {
        let (target, head) = forward("GET http://bücher.example/ HTTP/1.1\r\n\r\n");
        assert!(target.host.is_mixed());
        assert!(head.contains("Host: xn--bcher-kva.example\r\n"), "{head}");
    }

    #[test]
    fn replies_close_and_say_who_refused() {
        let target = Target {
            host: Host::parse("example.com").unwrap(),
            port: 443,
            via: Via::Connect,
        };
        let reply = String::from_utf8(denied(&target)).unwrap();
        let body = "Wicket refused example.com:443: the person denied it (or a rule did).\n";
        assert_eq!(
            reply,
            format!(
                "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain; charset=utf-8\r\n\
                 Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            )
        );
    }
}
