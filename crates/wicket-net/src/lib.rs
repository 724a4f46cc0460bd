//! The host side of Wicket's egress proxy. A sandboxed command runs in a
//! network namespace with only loopback; its `HTTP_PROXY`, `HTTPS_PROXY`
//! and `ALL_PROXY` point at a listener there, and each connection it opens
//! is handed to Wicket outside the jail. [`serve`] takes one such accepted
//! connection and serves it to the end: reads which host the client wants
//! (HTTP absolute-form and `CONNECT`, or SOCKS5) into a [`Target`], asks
//! a [`Decide`] (the gate, which may show the person a card and wait) by
//! the name alone, resolves the name itself only once allowed
//! ([`resolve`]; a local answer is decided again), connects to one of
//! those addresses, relays the bytes both ways counting them, and returns
//! the connection as it closed, a [`Closed`]. Start from [`serve`].
//!
//! The listener in the namespace and the passing of descriptors are not
//! here: this crate starts from a [`std::net::TcpStream`] already accepted.
//! Everything is blocking, one thread per connection (two while relaying):
//! a decision may wait minutes for a person, and a thread waiting costs
//! nothing but its stack.

pub mod desk;
mod error;
pub mod host;
mod http;
mod intake;
mod relay;
pub mod resolve;
mod serve;
mod socks;

pub use error::{Error, Result};
pub use host::{Host, Target, Via};
pub use resolve::Resolved;
pub use serve::{Closed, Decide, Decision, Outcome, serve};

use std::time::Duration;

/// The most bytes a client may send before its request is complete: an
/// HTTP request line and header block, blank line included, or a SOCKS5
/// greeting and request. Past it the client gets `400` and is closed.
pub const HEAD_MAX_BYTES: usize = 64 * 1024;

/// How long a client has, from its connection, to finish its request's
/// head (or its SOCKS5 greeting and request). A client that has not by
/// then is closed, so a stalled or trickling client holds no thread for
/// long.
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(30);

/// How long one connect to one resolved address may take before the next
/// address is tried (or the connection fails, after the last).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The longest host name, in bytes of its ASCII form (RFC 1035's 255 less
/// the length octet and the root label).
pub const HOST_MAX_BYTES: usize = 253;

/// The longest label of a host name, in bytes of its ASCII form (RFC 1035).
pub const LABEL_MAX_BYTES: usize = 63;
