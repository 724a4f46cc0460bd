//! A client for `wicket serve`: JSON requests with the token, any header
//! replaced or dropped (to test the refusals), and the event stream read
//! as server-sent events.

use std::io::{BufRead, BufReader};
use std::time::Duration;

use reqwest::blocking::{Client, Response};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;

/// A server at `127.0.0.1:port` with its token.
#[derive(Clone)]
pub struct Api {
    /// The port.
    pub port: u16,
    /// The token.
    pub token: String,
    client: Client,
    /// For event streams: no deadline on the whole response, which lasts
    /// as long as the test reads it (a slow machine reads longer); a
    /// stream that stops is the test runner's to end.
    streams: Client,
}

/// What a request got back.
#[derive(Debug)]
pub struct Reply {
    /// The status.
    pub status: u16,
    /// The headers.
    pub headers: HeaderMap,
    /// The body as JSON (`null` when it is not JSON).
    pub body: Value,
}

impl Api {
    /// A client for the server on `port`.
    pub fn new(port: u16, token: &str) -> Api {
        wicket_chat::tls::install();
        Api {
            port,
            token: token.to_string(),
            client: Client::builder()
                .timeout(Duration::from_secs(30))
                .build()
                .expect("an HTTP client"),
            streams: Client::builder()
                .timeout(None)
                .build()
                .expect("an HTTP client"),
        }
    }

    /// `METHOD path` with the token and Host; each of `headers` replaces the
    /// default of that name, and an empty value drops it.
    pub fn request(
        &self,
        method: &str,
        path: &str,
        body: Option<Value>,
        headers: &[(&str, &str)],
    ) -> Reply {
        let response = self.send(method, path, body, headers, false);
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let text = response.text().unwrap_or_default();
        Reply {
            status,
            headers,
            body: serde_json::from_str(&text).unwrap_or(Value::Null),
        }
    }

    /// Sends a request; a `stream`'s response has no deadline on its whole
    /// body (an event stream), any other's the client's 30 s.
    fn send(
        &self,
        method: &str,
        path: &str,
        body: Option<Value>,
        headers: &[(&str, &str)],
        stream: bool,
    ) -> Response {
        let mut all = HeaderMap::new();
        let host = format!("127.0.0.1:{}", self.port);
        all.insert("host", HeaderValue::from_str(&host).unwrap());
        all.insert(
            "authorization",
            HeaderValue::from_str(&format!("Bearer {}", self.token)).unwrap(),
        );
        for (name, value) in headers {
            let name = HeaderName::from_bytes(name.as_bytes()).unwrap();
            all.remove(&name);
            if !value.is_empty() {
                all.insert(name, HeaderValue::from_str(value).unwrap());
            }
        }
        let url = format!("http://127.0.0.1:{}{path}", self.port);
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let client = match stream {
            false => &self.client,
            true => &self.streams,
        };
        let mut request = client.request(method, url).headers(all);
        if let Some(body) = body {
            request = request
                .header("content-type", "application/json")
                .body(body.to_string());
        }
        request.send().expect("the server answers")
    }

    /// `GET path`.
    pub fn get(&self, path: &str) -> Reply {
        self.request("GET", path, None, &[])
    }

    /// `POST path` with a JSON body.
    pub fn post(&self, path: &str, body: Value) -> Reply {
        self.request("POST", path, Some(body), &[])
    }

    /// Opens a session's event stream after `after`, or resuming from `last_event_id`.
    pub fn events(&self, id: &str, after: u64, last_event_id: Option<u64>) -> Events {
        let last = last_event_id.map(|seq| seq.to_string()).unwrap_or_default();
        let headers: Vec<(&str, &str)> = if last.is_empty() {
            vec![]
        } else {
            vec![("last-event-id", last.as_str())]
        };
        let response = self.send(
            "GET",
            &format!("/api/sessions/{id}/events?after={after}"),
            None,
            &headers,
            true,
        );
        assert_eq!(response.status().as_u16(), 200, "the event stream opens");
        Events {
            reader: BufReader::new(response),
            parser: wicket_chat::sse::SseParser::default(),
            ready: std::collections::VecDeque::new(),
        }
    }
}

/// A session's event stream, one parsed event at a time, through the
/// chat client's own event-stream parser (one parser for both).
pub struct Events {
    reader: BufReader<Response>,
    parser: wicket_chat::sse::SseParser,
    ready: std::collections::VecDeque<wicket_chat::sse::SseEvent>,
}

impl Iterator for Events {
    type Item = Value;

    /// The next event's data, as JSON; `None` when the stream ends.
    fn next(&mut self) -> Option<Value> {
        loop {
            if let Some(event) = self.ready.pop_front() {
                return serde_json::from_str(&event.data).ok();
            }
            let read = self.reader.fill_buf().ok()?;
            if read.is_empty() {
                self.ready.extend(self.parser.end());
                return self
                    .ready
                    .pop_front()
                    .and_then(|event| serde_json::from_str(&event.data).ok());
            }
            let length = read.len();
            let events = self.parser.feed(read);
            self.reader.consume(length);
            self.ready.extend(events);
        }
    }
}
