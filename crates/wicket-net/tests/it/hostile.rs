//! Input no client should send: each gets its `400` (or is closed) at
//! once, never a hang, and no host is asked about or reached.

use std::io::Write;
use std::net::{Shutdown, TcpStream};

use wicket_net::{HEAD_MAX_BYTES, Outcome};

use crate::harness::{Proxy, Rules, Upstream, exchange, read_to_close};

/// The status line and body of a reply.
fn reply(bytes: &[u8]) -> (String, String) {
    let text = String::from_utf8_lossy(bytes).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.lines().next().unwrap_or_default().to_owned();
    (status, body.to_owned())
}

#[test]
fn a_head_over_64_kib_gets_400_and_the_connection_closes() {
    let upstream = Upstream::start(b"never sent");
    let rules = Rules::allowing(&["localhost"]);
    let proxy = Proxy::start(rules.clone());
    let request = format!(
        "GET http://localhost:{}/ HTTP/1.1\r\nX-Big: {}\r\n\r\n",
        upstream.port(),
        "a".repeat(HEAD_MAX_BYTES + 1)
    );
    let (status, body) = reply(&exchange(&proxy, request.as_bytes()));
    assert_eq!(status, "HTTP/1.1 400 Bad Request");
    assert!(body.contains(&HEAD_MAX_BYTES.to_string()), "{body}");
    assert!(matches!(
        proxy.only_closed().outcome,
        Outcome::BadRequest(_)
    ));
    assert!(rules.asked().is_empty());
    assert_eq!(upstream.accepts(), 0);
}

#[test]
fn a_head_of_exactly_64_kib_is_served() {
    let upstream = Upstream::start(b"fits");
    let proxy = Proxy::start(Rules::allowing(&["localhost"]));
    let start = format!(
        "GET http://localhost:{}/ HTTP/1.1\r\nX-Big: ",
        upstream.port()
    );
    let filler = HEAD_MAX_BYTES - start.len() - "\r\n\r\n".len();
    let request = format!("{start}{}\r\n\r\n", "a".repeat(filler));
    assert_eq!(request.len(), HEAD_MAX_BYTES);
    let (status, body) = reply(&exchange(&proxy, request.as_bytes()));
    assert_eq!(
        (status.as_str(), body.as_str()),
        ("HTTP/1.1 200 OK", "fits")
    );
}

#[test]
fn garbage_gets_400() {
    let proxy = Proxy::start(Rules::allowing(&["*"]));
    for garbage in [
        &b"hello there\r\n\r\n"[..],
        b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03\n\n",
        b"GET http://a/ HTTP/1.1\r\nno colon\r\n\r\n",
        b"\r\n\r\n",
    ] {
        let (status, _) = reply(&exchange(&proxy, garbage));
        assert_eq!(status, "HTTP/1.1 400 Bad Request", "{garbage:?}");
    }
}

#[test]
fn an_origin_form_request_gets_400_saying_to_use_the_proxy_as_a_proxy() {
    let proxy = Proxy::start(Rules::allowing(&["*"]));
    let (status, body) = reply(&exchange(
        &proxy,
        b"GET /index.html HTTP/1.1\r\nHost: example.com\r\n\r\n",
    ));
    assert_eq!(status, "HTTP/1.1 400 Bad Request");
    assert!(body.contains("use it as a proxy"), "{body}");
}

#[test]
fn an_https_absolute_form_request_gets_400_saying_to_use_connect() {
    let proxy = Proxy::start(Rules::allowing(&["*"]));
    let (status, body) = reply(&exchange(
        &proxy,
        b"GET https://example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n",
    ));
    assert_eq!(status, "HTTP/1.1 400 Bad Request");
    assert!(body.contains("CONNECT"), "{body}");
}

#[test]
fn bad_hosts_and_ports_get_400_and_no_decision() {
    let rules = Rules::allowing(&["*"]);
    let proxy = Proxy::start(rules.clone());
    // Four labels of 63 bytes: 255 bytes, each label within its limit.
    let long = ["a".repeat(63).as_str(); 4].join(".");
    let long_connect = format!("{long}:443");
    for target in [
        "example.com:0",
        "example.com:65536",
        "example.com:https",
        "example.com",
        "user@example.com:443",
        "example.com/x:443",
        "exa\x01mple.com:443",
        "127.1:443",
        "[::1:443",
        long_connect.as_str(),
    ] {
        let request = format!("CONNECT {target} HTTP/1.1\r\n\r\n");
        let (status, body) = reply(&exchange(&proxy, request.as_bytes()));
        assert_eq!(status, "HTTP/1.1 400 Bad Request", "{target:?}: {body}");
    }
    let (status, _) = reply(&exchange(
        &proxy,
        format!("GET http://{long}:80/ HTTP/1.1\r\n\r\n").as_bytes(),
    ));
    assert_eq!(status, "HTTP/1.1 400 Bad Request", "a name over 253 bytes");
    assert!(rules.asked().is_empty());
}

#[test]
fn a_client_that_closes_before_its_head_ends_is_let_go() {
    let proxy = Proxy::start(Rules::allowing(&["*"]));
    let mut stream = TcpStream::connect(proxy.address()).unwrap();
    stream.write_all(b"GET http://example.com/ HTT").unwrap();
    stream.shutdown(Shutdown::Write).unwrap();
    assert!(read_to_close(&mut stream).is_empty(), "closed, unanswered");
    drop(TcpStream::connect(proxy.address()).unwrap());
    let closed = proxy.closed(2);
    for closed in closed {
        let Outcome::BadRequest(why) = &closed.outcome else {
            panic!("{closed:?}")
        };
        assert!(why.contains("closed the connection"), "{why}");
        assert!(closed.target.is_none());
    }
}
