//! curl through the proxy, each of the three ways a command's environment
//! points it there (`HTTP_PROXY` for http, `HTTPS_PROXY` for CONNECT,
//! `ALL_PROXY=socks5h://`), allowed and denied.

use std::net::SocketAddr;
use std::process::{Command, Output};

use wicket_net::{Closed, Host, Outcome, Via};

use crate::harness::{Proxy, Rules, Served, Upstream, have};
use wicket_test_support::net::{TLS_BODY, TlsServer};

/// curl, its own config and the environment's proxy settings ignored:
/// only the arguments say where it goes.
fn curl(args: &[&str]) -> Output {
    let mut command = Command::new("curl");
    command
        .args(["-q", "-sS", "--max-time", "60", "--noproxy", ""])
        .args(args);
    for name in [
        "http_proxy",
        "HTTP_PROXY",
        "https_proxy",
        "HTTPS_PROXY",
        "all_proxy",
        "ALL_PROXY",
        "no_proxy",
        "NO_PROXY",
    ] {
        command.env_remove(name);
    }
    command.output().unwrap()
}

fn succeeded(output: &Output) {
    assert!(
        output.status.success(),
        "curl failed ({}): {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
}

/// A body big enough to take more than one read each way.
fn body() -> Vec<u8> {
    (0..300_000u32).map(|i| b'a' + (i % 26) as u8).collect()
}

/// The connection was relayed to the upstream server, and the proxy
/// counted the bytes as the server did.
fn relayed_as_served(closed: &Closed, served: &Served, via: Via, port: u16) {
    assert_eq!(closed.outcome, Outcome::Relayed, "{closed:?}");
    let target = closed.target.as_ref().unwrap();
    assert_eq!(target.via, via);
    assert_eq!(
        target.host,
        Host::Name {
            ascii: "localhost".into(),
            shown: "localhost".into()
        }
    );
    assert_eq!(target.port, port);
    let loopback: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    assert_eq!(closed.address, Some(loopback));
    assert_eq!(closed.allowed_by.as_deref(), Some("rule localhost"));
    assert_eq!(closed.sent, served.received, "sent, as the host received");
    assert_eq!(closed.received, served.sent, "received, as the host sent");
}

#[test]
fn curl_fetches_http_through_the_proxy_in_absolute_form_with_exact_counts() {
    if !have("curl") {
        return;
    }
    let body = body();
    let upstream = Upstream::start(&body);
    let proxy = Proxy::start(Rules::allowing(&["localhost"]));
    let port = upstream.port();
    let output = curl(&[
        "-x",
        &proxy.url(),
        "-H",
        "Proxy-Authorization: Basic c2VjcmV0OnNlY3JldA==",
        &format!("http://localhost:{port}/file"),
    ]);
    succeeded(&output);
    assert!(output.stdout == body, "the body arrives whole");

    let served = upstream.served(1).remove(0);
    let head = &served.head;
    assert!(
        head.starts_with(&format!("GET /file HTTP/1.1\r\nHost: localhost:{port}\r\n")),
        "origin-form, Host from the request line: {head}"
    );
    assert!(head.ends_with("Connection: close\r\n\r\n"), "{head}");
    let lowercase = head.to_ascii_lowercase();
    assert!(!lowercase.contains("proxy-"), "no proxy headers: {head}");
    assert_eq!(lowercase.matches("connection:").count(), 1, "{head}");
    relayed_as_served(&proxy.only_closed(), &served, Via::Http, port);
}

#[test]
fn curl_tunnels_http_through_connect_with_exact_counts() {
    if !have("curl") {
        return;
    }
    let body = body();
    let upstream = Upstream::start(&body);
    let proxy = Proxy::start(Rules::allowing(&["localhost"]));
    let port = upstream.port();
    let url = format!("http://localhost:{port}/tunnelled");
    let output = curl(&["-p", "-x", &proxy.url(), &url]);
    succeeded(&output);
    assert!(output.stdout == body, "the body arrives whole");
    let served = upstream.served(1).remove(0);
    assert!(
        served.head.starts_with("GET /tunnelled HTTP/1.1\r\n"),
        "the client's own request, untouched: {}",
        served.head
    );
    relayed_as_served(&proxy.only_closed(), &served, Via::Connect, port);
}

#[test]
fn curl_fetches_through_socks5_with_the_proxy_resolving_the_name() {
    if !have("curl") {
        return;
    }
    let body = body();
    let upstream = Upstream::start(&body);
    let proxy = Proxy::start(Rules::allowing(&["localhost"]));
    let port = upstream.port();
    let output = curl(&[
        "--socks5-hostname",
        &proxy.address().to_string(),
        &format!("http://localhost:{port}/socks"),
    ]);
    succeeded(&output);
    assert!(output.stdout == body, "the body arrives whole");
    let served = upstream.served(1).remove(0);
    relayed_as_served(&proxy.only_closed(), &served, Via::Socks5, port);
}

#[test]
fn curl_reaches_a_tls_server_through_connect() {
    if !(have("curl") && have("openssl") && have("python3")) {
        return;
    }
    let server = TlsServer::start();
    let proxy = Proxy::start(Rules::allowing(&["localhost"]));
    let url = format!("https://localhost:{}/", server.port);
    let output = curl(&["--cacert", &server.ca, "-x", &proxy.url(), &url]);
    succeeded(&output);
    assert_eq!(String::from_utf8_lossy(&output.stdout), TLS_BODY);
    let closed = proxy.only_closed();
    assert_eq!(closed.outcome, Outcome::Relayed, "{closed:?}");
    assert_eq!(closed.target.as_ref().unwrap().via, Via::Connect);
    assert_eq!(closed.target.as_ref().unwrap().port, server.port);
    // A TLS handshake and a response, sealed: more than the body each way.
    assert!(
        closed.sent > 200 && closed.received > TLS_BODY.len() as u64,
        "{closed:?}"
    );
}

#[test]
fn curl_is_refused_every_way_when_the_host_is_denied_and_the_host_sees_nothing() {
    if !have("curl") {
        return;
    }
    let upstream = Upstream::start(b"never sent");
    let rules = Rules::allowing(&[]);
    let proxy = Proxy::start(rules.clone());
    let port = upstream.port();
    let url = format!("http://localhost:{port}/");

    // curl reports a proxy's answer to CONNECT as `http_connect`, and
    // any other response as `http_code`.
    let status = |args: &[&str], variable: &str| {
        let output = curl(&[&["-o", "/dev/null", "-w", variable][..], args].concat());
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    let absolute_form = status(&["-x", &proxy.url(), &url], "%{http_code}");
    assert_eq!(absolute_form, "403");
    let connect = status(&["-p", "-x", &proxy.url(), &url], "%{http_connect}");
    assert_eq!(connect, "403");
    let body = curl(&["-x", &proxy.url(), &url]);
    assert_eq!(
        String::from_utf8_lossy(&body.stdout),
        format!("Wicket refused localhost:{port}: the person denied it (or a rule did).\n")
    );
    let socks = curl(&["--socks5-hostname", &proxy.address().to_string(), &url]);
    assert!(!socks.status.success(), "the SOCKS5 client is refused");

    let closed = proxy.closed(4);
    assert!(
        closed.iter().all(|c| c.outcome == Outcome::Denied),
        "{closed:?}"
    );
    assert!(closed.iter().all(|c| c.address.is_none() && c.sent == 0));
    assert_eq!(rules.asked().len(), 4, "each asked");
    assert_eq!(upstream.accepts(), 0, "the denied host saw no connection");
}
