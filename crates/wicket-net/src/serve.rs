//! One client connection, served from its first byte to its close: the
//! request read, the decision asked on the name the client gave, only then
//! the name resolved (and asked again where it resolved to a local
//! address), the connection made to an address the decision saw, the
//! bytes relayed, the [`Closed`] record returned.

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::host::{Host, Target, Via};
use crate::intake::Intake;
use crate::relay::relay;
use crate::resolve::{Resolved, resolve};
use crate::socks::Reply;
use crate::{CONNECT_TIMEOUT, http, socks};

/// Decides whether a client may connect to a host. Called on the
/// connection's own thread, and may block for as long as it needs (a
/// person reading a card); the client waits.
///
/// A name is decided before anything looks it up (`resolved` is `None`):
/// a name can carry a secret to whoever answers for its domain, so a name
/// no one allowed is never sent to a name server. Once allowed, Wicket
/// resolves it, once; where one of its addresses is local, the decider is
/// asked again with them (`resolved.local`), since an answer about a name
/// on the internet is not one about a service on this machine or its
/// network. An IP literal is asked about once, with itself as the address.
pub trait Decide: Sync {
    /// Whether `target` may be connected to: by its name alone (`None`),
    /// or, resolved to `resolved`, where that is local or was given as an
    /// address.
    fn decide(&self, target: &Target, resolved: Option<&Resolved>) -> Decision;

    /// The connection to the host is made, before a byte is relayed: a
    /// caller that must be able to end the relay (the command it serves is
    /// over) keeps a clone of `upstream` to shut down.
    fn connected(&self, _upstream: &TcpStream) {}
}

impl<F> Decide for F
where
    F: Fn(&Target, Option<&Resolved>) -> Decision + Sync,
{
    fn decide(&self, target: &Target, resolved: Option<&Resolved>) -> Decision {
        self(target, resolved)
    }
}

/// A decision on one connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Connect and relay.
    Allow {
        /// What allowed it (a rule, a grant, a card's answer), for the
        /// log: [`Closed::allowed_by`].
        allowed_by: String,
    },
    /// Refuse: HTTP `403` whose body names Wicket and the host; SOCKS5
    /// reply 2, "connection not allowed by ruleset".
    Deny,
}

/// One connection as it closed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Closed {
    /// What the client asked for; `None` when its request could not be
    /// read far enough to name a host ([`Outcome::BadRequest`]).
    pub target: Option<Target>,
    /// The address connected to, one of those the decision saw.
    pub address: Option<SocketAddr>,
    /// Bytes written to the host: for an absolute-form request, the
    /// forwarded head counts, as the host received it.
    pub sent: u64,
    /// Bytes read from the host.
    pub received: u64,
    /// What allowed the connection, when it was allowed.
    pub allowed_by: Option<String>,
    /// How the connection ended.
    pub outcome: Outcome,
    /// From the connection's hand-over to its close, the decision's wait
    /// included.
    pub duration: Duration,
}

/// How a connection ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Connected and relayed until both sides were done (or one failed).
    Relayed,
    /// The decision was [`Decision::Deny`]; the host saw nothing.
    Denied,
    /// The request could not be read or is not one this proxy serves:
    /// what was wrong with it.
    BadRequest(String),
    /// The name was allowed, and did not resolve: the resolver's error.
    Unresolved(String),
    /// Allowed, but no address accepted the connection: each address's
    /// error.
    ConnectFailed(String),
}

/// Serves one accepted client connection to its end and returns what
/// happened on it. See the crate's documentation for the protocols; the
/// limits are [`HEAD_MAX_BYTES`](crate::HEAD_MAX_BYTES),
/// [`HEAD_TIMEOUT`](crate::HEAD_TIMEOUT) and
/// [`CONNECT_TIMEOUT`](crate::CONNECT_TIMEOUT).
///
/// The name is decided first and resolved only once allowed ([`Decide`]);
/// the connection goes to the first of those addresses that accepts it:
/// never resolved again, so a second DNS answer cannot take it somewhere
/// the decision did not see. A relay has no idle timeout: it lasts while
/// the client and the host keep it open. Whatever happened, the client's
/// socket is shut both ways before this returns, so no copy of it that a
/// caller keeps holds the connection open.
pub fn serve(client: TcpStream, decide: &dyn Decide) -> Closed {
    serve_from(&client, decide, Instant::now())
}

/// [`serve`], for a connection handed over at `started` (its head's
/// deadline counts from then).
fn serve_from(client: &TcpStream, decide: &dyn Decide, started: Instant) -> Closed {
    let closed = serve_until_closed(client, decide, started);
    // Gone already, or shut: either way the client sees the end.
    let _ = client.shutdown(Shutdown::Both);
    closed
}

fn serve_until_closed(client: &TcpStream, decide: &dyn Decide, started: Instant) -> Closed {
    let mut record = Record::new(started);
    send_at_once(client);
    let mut intake = Intake::new(client, record.started);
    let (target, head) = match read_request(&mut intake, client) {
        Ok(asked) => asked,
        Err(error) => return record.closed(Outcome::BadRequest(error.to_string())),
    };
    record.target = Some(target.clone());
    let resolved = match decided_and_resolved(&target, decide, &mut record) {
        Ok(resolved) => resolved,
        Err(refused) => {
            let reply = match &refused {
                Outcome::Unresolved(why) => unresolved_reply(&target, why),
                Outcome::Relayed
                | Outcome::Denied
                | Outcome::BadRequest(_)
                | Outcome::ConnectFailed(_) => denied_reply(&target),
            };
            refuse(client, &reply);
            return record.closed(refused);
        }
    };
    let (upstream, address) = match connect(&resolved.addresses) {
        Ok(connected) => connected,
        Err(failure) => {
            refuse(client, &connect_failed_reply(&target, &failure));
            return record.closed(Outcome::ConnectFailed(failure.why));
        }
    };
    record.address = Some(address);
    decide.connected(&upstream);
    send_at_once(&upstream);
    let to_client = established_reply(&target, &upstream);
    let mut to_upstream = head;
    to_upstream.extend_from_slice(intake.rest());
    drop(intake);
    match relay(client, &upstream, &to_client, &to_upstream) {
        Ok(counts) => {
            record.sent = counts.sent;
            record.received = counts.received;
            record.closed(Outcome::Relayed)
        }
        Err(error) => {
            let failure = ConnectFailure {
                why: format!("starting the relay's second thread: {error}"),
                kind: error.kind(),
            };
            refuse(client, &connect_failed_reply(&target, &failure));
            record.closed(Outcome::ConnectFailed(failure.why))
        }
    }
}

/// Replies and small writes (a TLS handshake, a request) go at once, not
/// after Nagle's wait for more. A socket that refuses the option still
/// carries the bytes, only later.
fn send_at_once(socket: &TcpStream) {
    // Refused, the bytes still go: only later.
    let _ = socket.set_nodelay(true);
}

/// Decides `target` and, once it is allowed, resolves it: a name by itself
/// first, looked up only when allowed, and decided again where it resolves
/// to a local address; an IP literal once, as its own address. The
/// addresses the connection may go to, or how it ended (denied or
/// unresolved); what allowed it is on `record`.
fn decided_and_resolved(
    target: &Target,
    decide: &dyn Decide,
    record: &mut Record,
) -> Result<Resolved, Outcome> {
    let mut allow = |decision: Decision| match decision {
        Decision::Allow { allowed_by } => {
            record.allowed_by = Some(allowed_by);
            Ok(())
        }
        Decision::Deny => Err(Outcome::Denied),
    };
    if let Host::Ip(ip) = target.host {
        let resolved = Resolved::new([SocketAddr::new(ip, target.port)]);
        allow(decide.decide(target, Some(&resolved)))?;
        return Ok(resolved);
    }
    allow(decide.decide(target, None))?;
    let resolved = resolve(&target.host, target.port).map_err(Outcome::Unresolved)?;
    if resolved.local {
        allow(decide.decide(target, Some(&resolved)))?;
    }
    Ok(resolved)
}

/// A [`Closed`] being filled in.
struct Record {
    started: Instant,
    target: Option<Target>,
    address: Option<SocketAddr>,
    sent: u64,
    received: u64,
    allowed_by: Option<String>,
}

impl Record {
    fn new(started: Instant) -> Self {
        Self {
            started,
            target: None,
            address: None,
            sent: 0,
            received: 0,
            allowed_by: None,
        }
    }

    fn closed(self, outcome: Outcome) -> Closed {
        Closed {
            target: self.target,
            address: self.address,
            sent: self.sent,
            received: self.received,
            allowed_by: self.allowed_by,
            outcome,
            duration: self.started.elapsed(),
        }
    }
}

/// Reads the client's request, by its first byte: SOCKS5's version (5), or
/// else HTTP. Returns the target and the head to send the host before the
/// client's own bytes (an absolute-form request's, rewritten; else none).
/// A request that cannot be served has had its reply, where the client
/// can still read one: SOCKS5's own, or an HTTP `400`, or `408` to a
/// client that sent nothing in time.
fn read_request(intake: &mut Intake<'_>, client: &TcpStream) -> Result<(Target, Vec<u8>)> {
    let asked = match intake.peek() {
        Ok(socks::VERSION) => return Ok((socks::request(intake, client)?, Vec::new())),
        Ok(_) => intake.take_http_head().and_then(http::parse),
        Err(error) => Err(error),
    };
    match asked {
        Ok(http::Request::Connect(target)) => Ok((target, Vec::new())),
        Ok(http::Request::Forward { target, head }) => Ok((target, head)),
        Err(error) => {
            match &error {
                // Gone, or broken: no one to reply to.
                Error::ClosedEarly | Error::Read(_) => {}
                Error::HeadTooLarge
                | Error::HeadTimeout
                | Error::Malformed(_)
                | Error::NotProxyForm(_)
                | Error::HttpsAbsoluteForm
                | Error::Scheme(_)
                | Error::BadHost { .. }
                | Error::BadPort { .. }
                | Error::Socks(_) => refuse(client, &http::bad_request(&error)),
            }
            Err(error)
        }
    }
}

/// Why no address took the connection: each address's error, and the
/// kind of the last (for the SOCKS5 reply).
struct ConnectFailure {
    why: String,
    kind: ErrorKind,
}

/// Connects to the first of `addresses` that accepts, in order, each
/// within [`CONNECT_TIMEOUT`].
fn connect(addresses: &[SocketAddr]) -> Result<(TcpStream, SocketAddr), ConnectFailure> {
    let mut errors = Vec::new();
    let mut kind = ErrorKind::NotFound;
    for address in addresses {
        match TcpStream::connect_timeout(address, CONNECT_TIMEOUT) {
            Ok(stream) => return Ok((stream, *address)),
            Err(error) => {
                kind = error.kind();
                errors.push(format!("{address}: {error}"));
            }
        }
    }
    Err(ConnectFailure {
        why: errors.join("; "),
        kind,
    })
}

/// The reply that tells the client the host is connected: `200` to a
/// `CONNECT`, SOCKS5 reply 0 with the address the proxy's socket is bound
/// to, nothing to a forwarded request (the host's response is the reply).
fn established_reply(target: &Target, upstream: &TcpStream) -> Vec<u8> {
    match target.via {
        Via::Http => Vec::new(),
        Via::Connect => http::ESTABLISHED.to_vec(),
        Via::Socks5 => socks::reply(Reply::Succeeded, upstream.local_addr().ok()),
    }
}

fn denied_reply(target: &Target) -> Vec<u8> {
    match target.via {
        Via::Http | Via::Connect => http::denied(target),
        Via::Socks5 => socks::reply(Reply::NotAllowed, None),
    }
}

fn unresolved_reply(target: &Target, why: &str) -> Vec<u8> {
    match target.via {
        Via::Http | Via::Connect => http::unresolved(target, why),
        Via::Socks5 => socks::reply(Reply::HostUnreachable, None),
    }
}

fn connect_failed_reply(target: &Target, failure: &ConnectFailure) -> Vec<u8> {
    match target.via {
        Via::Http | Via::Connect => http::connect_failed(target, &failure.why),
        Via::Socks5 => socks::reply(Reply::for_connect_error(failure.kind), None),
    }
}

/// How long a refused client is read from after its reply, at most.
const LINGER: Duration = Duration::from_secs(2);
/// How long a refused client may be silent before its connection is
/// closed.
const LINGER_IDLE: Duration = Duration::from_millis(200);
/// How much of a refused client's sending is read and dropped, at most.
const LINGER_MAX_BYTES: usize = 1024 * 1024;

/// Sends a refusal and closes the sending side, then reads and drops what
/// the client still sends, for a little while. Closing a socket with
/// unread bytes in it resets the connection, and a reset can destroy the
/// reply before the client reads it: a client still sending its oversized
/// head would never see its `400`.
fn refuse(client: &TcpStream, reply: &[u8]) {
    let mut writer = client;
    // A client that has gone is not told; one that does not read is
    // waited for no longer than the linger. Each step is tried whatever
    // the one before did (`and` takes its argument already made).
    let _ = client
        .set_write_timeout(Some(LINGER))
        .and(writer.write_all(reply))
        .and(client.shutdown(Shutdown::Write));
    let deadline = Instant::now() + LINGER;
    let mut reader = client;
    let mut buffer = [0; 16 * 1024];
    let mut drained = 0;
    while drained < LINGER_MAX_BYTES {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero()
            || client
                .set_read_timeout(Some(left.min(LINGER_IDLE)))
                .is_err()
        {
            return;
        }
        match reader.read(&mut buffer) {
            Ok(0) => return,
            Ok(count) => drained += count,
            Err(error) if error.kind() == ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::HEAD_TIMEOUT;

    fn pair() -> (TcpStream, TcpStream) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let near = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (far, _) = listener.accept().unwrap();
        (near, far)
    }

    /// Everything the client is sent, to the end: a read that waits past
    /// 10 s fails the test (the connection was never closed).
    fn to_the_end(client: &mut TcpStream) -> Vec<u8> {
        client
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut reply = Vec::new();
        client.read_to_end(&mut reply).unwrap();
        reply
    }

    fn never_asked(_: &Target, _: Option<&Resolved>) -> Decision {
        panic!("a client that asked for nothing is not decided")
    }

    #[test]
    fn a_silent_client_gets_408_and_is_closed_though_a_copy_of_its_socket_is_kept() {
        let (mut client, proxy_side) = pair();
        // What a caller keeps to close the connection when its command ends.
        let kept = proxy_side.try_clone().unwrap();
        // As if it had connected HEAD_TIMEOUT less 50 ms ago, and said nothing since.
        let started = Instant::now() - HEAD_TIMEOUT + Duration::from_millis(50);
        let closed = serve_from(&proxy_side, &never_asked, started);
        assert!(
            matches!(&closed.outcome, Outcome::BadRequest(why) if why.contains("was not complete")),
            "{closed:?}"
        );
        let reply = to_the_end(&mut client);
        assert!(
            String::from_utf8_lossy(&reply).starts_with("HTTP/1.1 408 Request Timeout\r\n"),
            "{}",
            String::from_utf8_lossy(&reply)
        );
        drop(kept);
    }

    #[test]
    fn a_refused_socks_client_is_closed_after_its_reply_though_a_copy_is_kept() {
        let (mut client, proxy_side) = pair();
        let kept = proxy_side.try_clone().unwrap();
        // A greeting that offers only username/password (2).
        client.write_all(&[5, 1, 2]).unwrap();
        let closed = serve_from(&proxy_side, &never_asked, Instant::now());
        assert!(
            matches!(closed.outcome, Outcome::BadRequest(_)),
            "{closed:?}"
        );
        let reply = to_the_end(&mut client);
        assert_eq!(reply, [5, 0xff], "the reply, then the end");
        drop(kept);
    }
}
