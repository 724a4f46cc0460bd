//! SOCKS5 spoken byte by byte: each reply code the proxy sends, and what
//! the host sees.

use std::io::{Read, Write};
use std::net::TcpStream;

use wicket_net::{Host, Outcome, Via};

use crate::harness::{PATIENCE, Proxy, Rules, Upstream, closed_port, read_to_close};

/// A client past the greeting (no authentication offered and accepted).
fn greeted(proxy: &Proxy) -> TcpStream {
    let mut stream = TcpStream::connect(proxy.address()).unwrap();
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    stream.write_all(&[5, 2, 2, 0]).unwrap();
    let mut choice = [0; 2];
    stream.read_exact(&mut choice).unwrap();
    assert_eq!(choice, [5, 0], "no authentication chosen");
    stream
}

/// Sends `CONNECT` with the address `address` (its type byte first) and
/// `port`; returns the reply's code and the stream.
fn connect(proxy: &Proxy, address: &[u8], port: u16) -> (u8, TcpStream) {
    let mut stream = greeted(proxy);
    let request = [&[5, 1, 0][..], address, &port.to_be_bytes()].concat();
    stream.write_all(&request).unwrap();
    let mut reply = [0; 4];
    stream.read_exact(&mut reply).unwrap();
    assert_eq!((reply[0], reply[2]), (5, 0), "version and reserved byte");
    let bound = match reply[3] {
        1 => 4,
        4 => 16,
        other => panic!("bound address of type {other}"),
    };
    let mut rest = vec![0; bound + 2];
    stream.read_exact(&mut rest).unwrap();
    (reply[1], stream)
}

fn name(text: &str) -> Vec<u8> {
    [&[3, text.len() as u8][..], text.as_bytes()].concat()
}

#[test]
fn an_ipv4_connect_is_relayed_to_that_address_with_exact_counts() {
    let upstream = Upstream::start(b"socks body");
    let proxy = Proxy::start(Rules::allowing(&["127.0.0.1"]));
    let (code, mut stream) = connect(&proxy, &[1, 127, 0, 0, 1], upstream.port());
    assert_eq!(code, 0, "succeeded");
    stream
        .write_all(b"GET /over-socks HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let response = read_to_close(&mut stream);
    assert!(response.ends_with(b"\r\n\r\nsocks body"));
    drop(stream);
    let served = upstream.served(1).remove(0);
    let closed = proxy.only_closed();
    let target = closed.target.unwrap();
    assert_eq!(target.via, Via::Socks5);
    assert_eq!(target.host, Host::Ip("127.0.0.1".parse().unwrap()));
    assert_eq!(
        (closed.sent, closed.received),
        (served.received, served.sent)
    );
}

#[test]
fn a_denied_host_gets_reply_2_and_the_host_sees_nothing() {
    let upstream = Upstream::start(b"never sent");
    let proxy = Proxy::start(Rules::allowing(&[]));
    let (code, mut stream) = connect(&proxy, &name("localhost"), upstream.port());
    assert_eq!(code, 2, "connection not allowed by ruleset");
    assert!(read_to_close(&mut stream).is_empty(), "then closed");
    assert_eq!(proxy.only_closed().outcome, Outcome::Denied);
    assert_eq!(upstream.accepts(), 0);
}

#[test]
fn an_unresolvable_name_gets_reply_4_and_a_refused_connect_reply_5() {
    let rules = Rules::allowing(&["localhost", "no-such-host.invalid"]);
    let proxy = Proxy::start(rules.clone());
    let (code, _) = connect(&proxy, &name("no-such-host.invalid"), 80);
    assert_eq!(code, 4, "host unreachable");
    let (code, _) = connect(&proxy, &name("localhost"), closed_port());
    assert_eq!(code, 5, "connection refused");
    let outcomes: Vec<Outcome> = proxy.closed(2).into_iter().map(|c| c.outcome).collect();
    assert!(
        outcomes.iter().any(|o| matches!(o, Outcome::Unresolved(_))),
        "{outcomes:?}"
    );
    assert!(
        outcomes
            .iter()
            .any(|o| matches!(o, Outcome::ConnectFailed(_))),
        "{outcomes:?}"
    );
    let asked = rules.asked();
    assert_eq!(
        asked.len(),
        3,
        "each name before its lookup, and localhost again for its local address: {asked:?}"
    );
    // Denied by its name: refused (reply 2), where a lookup would have said 4.
    let (code, _) = connect(&proxy, &name("secret.no-such-host.invalid"), 80);
    assert_eq!(code, 2, "not allowed, and never looked up");
    assert_eq!(proxy.closed(3)[2].outcome, Outcome::Denied);
}

#[test]
fn a_greeting_without_no_authentication_gets_ff_and_is_closed() {
    let proxy = Proxy::start(Rules::allowing(&["*"]));
    let mut stream = TcpStream::connect(proxy.address()).unwrap();
    stream.write_all(&[5, 1, 2]).unwrap();
    assert_eq!(read_to_close(&mut stream), [5, 0xff]);
    let mut stream = TcpStream::connect(proxy.address()).unwrap();
    stream.write_all(&[5, 0]).unwrap();
    assert_eq!(read_to_close(&mut stream), [5, 0xff], "no methods at all");
    let closed = proxy.closed(2);
    assert!(
        closed
            .iter()
            .all(|c| matches!(c.outcome, Outcome::BadRequest(_)))
    );
}

#[test]
fn a_request_of_another_version_is_closed_without_a_reply() {
    let proxy = Proxy::start(Rules::allowing(&["*"]));
    let mut stream = greeted(&proxy);
    stream
        .write_all(&[4, 1, 0, 1, 127, 0, 0, 1, 0, 80])
        .unwrap();
    assert!(read_to_close(&mut stream).is_empty());
    assert!(matches!(
        proxy.only_closed().outcome,
        Outcome::BadRequest(_)
    ));
}

#[test]
fn bind_and_udp_associate_get_reply_7() {
    let proxy = Proxy::start(Rules::allowing(&["*"]));
    for command in [2, 3] {
        let mut stream = greeted(&proxy);
        stream
            .write_all(&[5, command, 0, 1, 127, 0, 0, 1, 0, 80])
            .unwrap();
        assert_eq!(read_to_close(&mut stream), [5, 7, 0, 1, 0, 0, 0, 0, 0, 0]);
    }
}

#[test]
fn an_unknown_address_type_gets_reply_8() {
    let proxy = Proxy::start(Rules::allowing(&["*"]));
    let mut stream = greeted(&proxy);
    stream.write_all(&[5, 1, 0, 9, 1, 2, 3, 4, 0, 80]).unwrap();
    assert_eq!(read_to_close(&mut stream), [5, 8, 0, 1, 0, 0, 0, 0, 0, 0]);
}

#[test]
fn a_name_no_host_has_or_port_0_gets_reply_1() {
    let rules = Rules::allowing(&["*"]);
    let proxy = Proxy::start(rules.clone());
    for (address, port) in [
        (name("exa mple.com"), 80),
        (name("user@example.com"), 80),
        (name(""), 80),
        (vec![3, 2, 0xff, 0xfe], 80),
        (name("example.com"), 0u16),
    ] {
        let mut stream = greeted(&proxy);
        let request = [&[5, 1, 0][..], &address, &port.to_be_bytes()].concat();
        stream.write_all(&request).unwrap();
        assert_eq!(
            read_to_close(&mut stream),
            [5, 1, 0, 1, 0, 0, 0, 0, 0, 0],
            "{address:?}"
        );
    }
    assert!(rules.asked().is_empty());
}
