//! A raw HTTP/1.1 client over `TcpStream` and an SSE parser, so the tests
//! see the bytes on the wire: chunk boundaries, the terminating chunk, and
//! a connection that is cut or stalls.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::Value;
use wicket_fake::FakeServer;

/// Long enough for any scripted stream here; a hang fails instead of blocking.
pub(crate) const PATIENCE: Duration = Duration::from_secs(5);

/// A response as read off the socket.
pub(crate) struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    /// The HTTP chunks of a chunked body, each as sent.
    pub chunks: Vec<Vec<u8>>,
    /// The body with chunked framing removed.
    pub body: Vec<u8>,
    /// The body bytes exactly as received, framing included.
    pub raw_body: Vec<u8>,
    /// Whether the body ended properly: the terminating chunk, or all of
    /// Content-Length.
    pub complete: bool,
    /// Whether reading stopped because nothing arrived for the timeout.
    pub timed_out: bool,
}

/// One SSE event.
#[derive(Debug)]
pub(crate) struct Sse {
    pub event: Option<String>,
    pub data: String,
}

/// POSTs `body` as JSON to `path` and reads the whole response.
pub(crate) fn post(server: &FakeServer, path: &str, body: &Value) -> Response {
    let mut stream = send(server, "POST", path, &[], &body.to_string());
    read_response(&mut stream, PATIENCE)
}

/// Opens a connection and writes one request with `Connection: close`, so
/// the response ends when the server closes.
pub(crate) fn send(
    server: &FakeServer,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> TcpStream {
    let host = host_port(&server.base_url());
    let mut stream = TcpStream::connect(&host).unwrap();
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes()).unwrap();
    stream
}

/// `127.0.0.1:PORT` out of a base URL.
pub(crate) fn host_port(base_url: &str) -> String {
    let rest = base_url.strip_prefix("http://").unwrap();
    rest.split('/').next().unwrap().to_owned()
}

/// Reads until the server closes, resets, or sends nothing for `quiet`.
pub(crate) fn read_response(stream: &mut TcpStream, quiet: Duration) -> Response {
    stream.set_read_timeout(Some(quiet)).unwrap();
    let mut received = Vec::new();
    let mut buffer = [0u8; 4096];
    let mut timed_out = false;
    loop {
        match stream.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => received.extend_from_slice(&buffer[..n]),
            Err(error) if matches!(error.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                timed_out = true;
                break;
            }
            Err(_) => break,
        }
    }
    parse_response(&received, timed_out)
}

/// Reads until the body holds `events` SSE events (waiting up to
/// `patience` for them, however slow the machine), then listens `quiet`
/// longer: `timed_out` says nothing more came and the connection stayed open.
pub(crate) fn read_events_then_silence(
    stream: &mut TcpStream,
    events: usize,
    patience: Duration,
    quiet: Duration,
) -> Response {
    let deadline = std::time::Instant::now() + patience;
    stream
        .set_read_timeout(Some(Duration::from_millis(20)))
        .unwrap();
    let mut received = Vec::new();
    let mut buffer = [0u8; 4096];
    loop {
        let enough = find(&received, b"\r\n\r\n").is_some()
            && parse_response(&received, true).events().len() >= events;
        if enough || std::time::Instant::now() >= deadline {
            break;
        }
        match stream.read(&mut buffer) {
            Ok(0) => return parse_response(&received, false),
            Ok(n) => received.extend_from_slice(&buffer[..n]),
            Err(error) if matches!(error.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => return parse_response(&received, false),
        }
    }
    let rest = read_response_tail(stream, quiet);
    received.extend_from_slice(&rest.0);
    parse_response(&received, rest.1)
}

/// What arrives within `quiet`, and whether the read then timed out.
fn read_response_tail(stream: &mut TcpStream, quiet: Duration) -> (Vec<u8>, bool) {
    stream.set_read_timeout(Some(quiet)).unwrap();
    let mut received = Vec::new();
    let mut buffer = [0u8; 4096];
    loop {
        match stream.read(&mut buffer) {
            Ok(0) => return (received, false),
            Ok(n) => received.extend_from_slice(&buffer[..n]),
            Err(error) if matches!(error.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return (received, true);
            }
            Err(_) => return (received, false),
        }
    }
}

fn parse_response(received: &[u8], timed_out: bool) -> Response {
    let split = find(received, b"\r\n\r\n").expect("a complete response head");
    let head = std::str::from_utf8(&received[..split]).unwrap();
    let raw_body = received[split + 4..].to_vec();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers: Vec<(String, String)> = lines
        .map(|line| {
            let (name, value) = line.split_once(':').unwrap();
            (name.trim().to_ascii_lowercase(), value.trim().to_owned())
        })
        .collect();
    let mut response = Response {
        status,
        headers,
        chunks: Vec::new(),
        body: Vec::new(),
        raw_body,
        complete: false,
        timed_out,
    };
    if response.header("transfer-encoding") == Some("chunked") {
        let (chunks, complete) = dechunk(&response.raw_body);
        response.body = chunks.concat();
        response.chunks = chunks;
        response.complete = complete;
    } else {
        let length: usize = response.header("content-length").unwrap().parse().unwrap();
        response.complete = response.raw_body.len() >= length;
        response.body = response.raw_body[..length.min(response.raw_body.len())].to_vec();
    }
    response
}

/// Splits a chunked body into its chunks; `true` when the terminating
/// `0\r\n\r\n` was there.
fn dechunk(mut rest: &[u8]) -> (Vec<Vec<u8>>, bool) {
    let mut chunks = Vec::new();
    while let Some(line_end) = find(rest, b"\r\n") {
        let size_line = std::str::from_utf8(&rest[..line_end]).unwrap();
        let size = usize::from_str_radix(size_line.split(';').next().unwrap().trim(), 16).unwrap();
        rest = &rest[line_end + 2..];
        if size == 0 {
            return (chunks, rest == b"\r\n");
        }
        if rest.len() < size + 2 {
            chunks.push(rest.to_vec());
            break;
        }
        chunks.push(rest[..size].to_vec());
        rest = &rest[size + 2..];
    }
    (chunks, false)
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

impl Response {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(have, _)| have == name)
            .map(|(_, value)| value.as_str())
    }

    pub(crate) fn text(&self) -> &str {
        std::str::from_utf8(&self.body).unwrap()
    }

    pub(crate) fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap()
    }

    /// The SSE events of the body; comments are not events.
    pub(crate) fn events(&self) -> Vec<Sse> {
        parse_sse(self.text()).0
    }

    /// How many SSE comment lines the body has.
    pub(crate) fn comments(&self) -> usize {
        parse_sse(self.text()).1
    }
}

/// Parses SSE as the spec says: fields until a blank line dispatch an event.
fn parse_sse(text: &str) -> (Vec<Sse>, usize) {
    let mut events = Vec::new();
    let mut comments = 0;
    let mut event = None;
    let mut data: Option<String> = None;
    for line in text.split('\n') {
        if line.is_empty() {
            if let Some(data) = data.take() {
                events.push(Sse {
                    event: event.take(),
                    data,
                });
            }
            event = None;
        } else if line.starts_with(':') {
            comments += 1;
        } else if let Some(value) = line.strip_prefix("event: ") {
            event = Some(value.to_owned());
        } else if let Some(value) = line.strip_prefix("data: ") {
            let data = data.get_or_insert_with(String::new);
            if !data.is_empty() {
                data.push('\n');
            }
            data.push_str(value);
        } else {
            panic!("unexpected SSE line {line:?}");
        }
    }
    (events, comments)
}

impl Sse {
    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(&self.data).unwrap()
    }
}
