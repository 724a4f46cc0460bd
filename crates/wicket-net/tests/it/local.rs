//! What the decider is shown: a name by itself before any lookup, a name
//! that resolved to a local address again with its addresses, IP literals
//! as addresses; a name no one allowed never looked up; and what a
//! connection carries once allowed.

use std::io::{Read, Write};
use std::net::TcpStream;

use wicket_net::{Host, Outcome, Via};

use crate::harness::{PATIENCE, Proxy, Rules, Upstream, closed_port, exchange, read_to_close};

fn status_line(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes)
        .lines()
        .next()
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn localhost_resolves_as_local_and_a_wildcard_rule_does_not_open_it() {
    let upstream = Upstream::start(b"never sent");
    let rules = Rules::allowing(&["*"]);
    let proxy = Proxy::start(rules.clone());
    let request = format!("CONNECT localhost:{} HTTP/1.1\r\n\r\n", upstream.port());
    let reply = exchange(&proxy, request.as_bytes());
    assert_eq!(status_line(&reply), "HTTP/1.1 403 Forbidden");
    let asked = rules.asked();
    assert_eq!(
        asked.len(),
        2,
        "by name, then by its local addresses: {asked:?}"
    );
    assert_eq!(
        asked[0].1, None,
        "the name was decided before it was looked up"
    );
    let (target, resolved) = &asked[1];
    let resolved = resolved.as_ref().unwrap();
    assert_eq!(target.host.ascii(), "localhost");
    assert!(resolved.local, "{resolved:?}");
    assert!(resolved.addresses.iter().all(|a| a.ip().is_loopback()));
    assert_eq!(proxy.only_closed().outcome, Outcome::Denied);
    assert_eq!(upstream.accepts(), 0);
}

#[test]
fn an_ip_literal_is_shown_as_an_address_and_connected_to_as_is() {
    let upstream = Upstream::start(b"by address");
    let rules = Rules::allowing(&["127.0.0.1"]);
    let proxy = Proxy::start(rules.clone());
    let port = upstream.port();
    let request =
        format!("CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n");
    let reply = exchange(&proxy, request.as_bytes());
    let text = String::from_utf8_lossy(&reply);
    assert!(
        text.starts_with("HTTP/1.1 200 Connection established\r\n\r\nHTTP/1.1 200 OK\r\n"),
        "the bytes sent with the CONNECT went through: {text}"
    );
    assert!(text.ends_with("by address"));
    let asked = rules.asked();
    assert_eq!(asked.len(), 1, "an address is asked about once: {asked:?}");
    let (target, resolved) = asked[0].clone();
    let resolved = resolved.unwrap();
    assert_eq!(target.host, Host::Ip("127.0.0.1".parse().unwrap()));
    assert!(!target.host.is_mixed());
    assert!(resolved.local);
    assert_eq!(
        resolved.addresses,
        vec![format!("127.0.0.1:{port}").parse().unwrap()]
    );
    let served = upstream.served(1).remove(0);
    let closed = proxy.only_closed();
    assert_eq!(
        (closed.sent, closed.received),
        (served.received, served.sent)
    );
}

#[test]
fn a_denied_name_is_refused_before_any_lookup() {
    // Were it looked up first, `.invalid` (RFC 6761) would end in a 502.
    let rules = Rules::allowing(&["elsewhere.example"]);
    let proxy = Proxy::start(rules.clone());
    for request in [
        &b"CONNECT secret-in-a-name.no-such-host.invalid:443 HTTP/1.1\r\n\r\n"[..],
        &b"GET http://secret-in-a-name.no-such-host.invalid/ HTTP/1.1\r\n\r\n"[..],
    ] {
        let reply = exchange(&proxy, request);
        assert_eq!(status_line(&reply), "HTTP/1.1 403 Forbidden");
    }
    let asked = rules.asked();
    assert_eq!(asked.len(), 2);
    assert!(
        asked.iter().all(|(_, resolved)| resolved.is_none()),
        "{asked:?}"
    );
    for closed in proxy.closed(2) {
        assert_eq!(closed.outcome, Outcome::Denied);
        assert_eq!(closed.address, None);
    }
}

#[test]
fn an_allowed_name_that_does_not_resolve_gets_502_and_is_decided_once() {
    let rules = Rules::allowing(&["*"]);
    let proxy = Proxy::start(rules.clone());
    let reply = exchange(&proxy, b"CONNECT no-such-host.invalid:443 HTTP/1.1\r\n\r\n");
    assert_eq!(status_line(&reply), "HTTP/1.1 502 Bad Gateway");
    assert!(
        String::from_utf8_lossy(&reply).contains("Wicket could not resolve no-such-host.invalid")
    );
    let asked = rules.asked();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0].1, None);
    let closed = proxy.only_closed();
    assert!(
        matches!(closed.outcome, Outcome::Unresolved(_)),
        "{closed:?}"
    );
    assert_eq!(closed.target.unwrap().host.ascii(), "no-such-host.invalid");
}

#[test]
fn an_allowed_host_that_refuses_gets_502_naming_the_address() {
    let proxy = Proxy::start(Rules::allowing(&["localhost"]));
    let port = closed_port();
    let reply = exchange(
        &proxy,
        format!("GET http://localhost:{port}/ HTTP/1.1\r\n\r\n").as_bytes(),
    );
    assert_eq!(status_line(&reply), "HTTP/1.1 502 Bad Gateway");
    let closed = proxy.only_closed();
    let Outcome::ConnectFailed(why) = &closed.outcome else {
        panic!("{closed:?}")
    };
    assert!(why.contains(&format!("127.0.0.1:{port}")), "{why}");
    assert_eq!(closed.allowed_by.as_deref(), Some("rule localhost"));
    assert_eq!(closed.address, None);
}

#[test]
fn a_forwarded_post_carries_its_body_and_the_rewritten_head_is_counted() {
    let upstream = Upstream::start(b"posted");
    let proxy = Proxy::start(Rules::allowing(&["localhost"]));
    let port = upstream.port();
    let mut stream = TcpStream::connect(proxy.address()).unwrap();
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    stream
        .write_all(
            format!(
                "POST http://localhost:{port}/form HTTP/1.1\r\nHost: elsewhere.example\r\n\
                 Proxy-Connection: keep-alive\r\nContent-Length: 11\r\n\r\nhello=world"
            )
            .as_bytes(),
        )
        .unwrap();
    let response = read_to_close(&mut stream);
    assert!(response.ends_with(b"\r\n\r\nposted"));
    drop(stream);
    let served = upstream.served(1).remove(0);
    assert_eq!(
        served.head,
        format!(
            "POST /form HTTP/1.1\r\nHost: localhost:{port}\r\nContent-Length: 11\r\nConnection: close\r\n\r\n"
        )
    );
    let closed = proxy.only_closed();
    assert_eq!(closed.sent, served.received);
    assert_eq!(
        closed.sent,
        (served.head.len() + "hello=world".len()) as u64
    );
    assert_eq!(closed.received, served.sent);
    assert_eq!(closed.target.unwrap().via, Via::Http);
}

#[test]
fn a_connect_tunnel_carries_bytes_both_ways_until_both_close() {
    // The client ends its sending first; the host still answers after.
    let upstream = Upstream::start(b"after the half-close");
    let proxy = Proxy::start(Rules::allowing(&["localhost"]));
    let mut stream = TcpStream::connect(proxy.address()).unwrap();
    stream
        .write_all(format!("CONNECT localhost:{} HTTP/1.1\r\n\r\n", upstream.port()).as_bytes())
        .unwrap();
    let mut established = [0; 39];
    stream.read_exact(&mut established).unwrap();
    assert_eq!(&established, b"HTTP/1.1 200 Connection established\r\n\r\n");
    stream.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
    stream.shutdown(std::net::Shutdown::Write).unwrap();
    assert!(read_to_close(&mut stream).ends_with(b"after the half-close"));
    let served = upstream.served(1).remove(0);
    let closed = proxy.only_closed();
    assert_eq!(
        (closed.sent, closed.received),
        (served.received, served.sent)
    );
}

#[test]
fn a_unicode_host_reaches_the_record_in_both_forms() {
    // `.invalid` never resolves (RFC 6761), so the connection ends there,
    // with the host as the card would show it.
    let rules = Rules::allowing(&["*"]);
    let proxy = Proxy::start(rules.clone());
    let reply = exchange(
        &proxy,
        "CONNECT bücher.invalid:443 HTTP/1.1\r\n\r\n".as_bytes(),
    );
    assert_eq!(status_line(&reply), "HTTP/1.1 502 Bad Gateway");
    let closed = proxy.only_closed();
    let host = closed.target.unwrap().host;
    assert_eq!(
        host,
        Host::Name {
            ascii: "xn--bcher-kva.invalid".into(),
            shown: "bücher.invalid".into()
        }
    );
    assert!(host.is_mixed());
    assert!(matches!(closed.outcome, Outcome::Unresolved(_)));
    assert_eq!(rules.asked().len(), 1, "by its name, before the lookup");
}
