//! One client connection, served from its first byte to its close: the
//! request read, the host resolved, the decision asked, the connection
//! made to an address the decision saw, the bytes relayed, the
//! [`Closed`] record returned.

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::host::{Target, Via};
use crate::intake::Intake;
use crate::relay::relay;
use crate::resolve::{Resolved, resolve};
use crate::socks::Reply;
use crate::{CONNECT_TIMEOUT, http, socks};

/// Decides whether a client may connect to a host. Called on the
/// connection's own thread once the name is resolved, and may block for
/// as long as it needs (a person reading a card); the client waits.
pub trait Decide: Sync {
    /// Whether `target`, resolved to `resolved`, may be connected to.
    fn decide(&self, target: &Target, resolved: &Resolved) -> Decision;

    /// The connection to the host is made, before a byte is relayed: a
    /// caller that must be able to end the relay (the command it serves is
    /// over) keeps a clone of `upstream` to shut down.
    fn connected(&self, _upstream: &TcpStream) {}
}

impl<F> Decide for F
where
    F: Fn(&Target, &Resolved) -> Decision + Sync,
{
    fn decide(&self, target: &Target, resolved: &Resolved) -> Decision {
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
    /// The name did not resolve: the resolver's error. The decision was
    /// not asked.
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
/// The host is resolved here, before `decide` is asked, and the connection
/// goes to the first of those addresses that accepts it: never resolved
/// again, so a second DNS answer cannot take it somewhere the decision did
/// not see. A relay has no idle timeout: it lasts while the client and the
/// host keep it open.
pub fn serve(client: TcpStream, decide: &dyn Decide) -> Closed {
    let mut record = Record::new();
    // Replies and small writes (a TLS handshake, a request) go at once,
    // not after Nagle's wait for more. A socket that refuses the option
    // still carries the bytes, only later.
    let _ = client.set_nodelay(true);
    let mut intake = Intake::new(&client, record.started);
    let (target, head) = match read_request(&mut intake, &client) {
        Ok(asked) => asked,
        Err(error) => return record.closed(Outcome::BadRequest(error.to_string())),
    };
    record.target = Some(target.clone());
    let resolved = match resolve(&target.host, target.port) {
        Ok(resolved) => resolved,
        Err(why) => {
            refuse(&client, &unresolved_reply(&target, &why));
            return record.closed(Outcome::Unresolved(why));
        }
    };
    match decide.decide(&target, &resolved) {
        Decision::Allow { allowed_by } => record.allowed_by = Some(allowed_by),
        Decision::Deny => {
            refuse(&client, &denied_reply(&target));
            return record.closed(Outcome::Denied);
        }
    }
    let (upstream, address) = match connect(&resolved.addresses) {
        Ok(connected) => connected,
        Err(failure) => {
            refuse(&client, &connect_failed_reply(&target, &failure));
            return record.closed(Outcome::ConnectFailed(failure.why));
        }
    };
    record.address = Some(address);
    decide.connected(&upstream);
    // As for the client's socket.
    let _ = upstream.set_nodelay(true);
    let to_client = established_reply(&target, &upstream);
    let mut to_upstream = head;
    to_upstream.extend_from_slice(intake.rest());
    drop(intake);
    match relay(&client, &upstream, &to_client, &to_upstream) {
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
            refuse(&client, &connect_failed_reply(&target, &failure));
            record.closed(Outcome::ConnectFailed(failure.why))
        }
    }
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
    fn new() -> Self {
        Self {
            started: Instant::now(),
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
/// can still read one.
fn read_request(intake: &mut Intake<'_>, client: &TcpStream) -> Result<(Target, Vec<u8>)> {
    if intake.peek()? == socks::VERSION {
        return Ok((socks::request(intake, client)?, Vec::new()));
    }
    match intake.take_http_head().and_then(http::parse) {
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
