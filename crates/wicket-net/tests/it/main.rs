//! The proxy driven by real clients (curl, and raw sockets speaking the
//! protocols byte by byte) against servers on 127.0.0.1 that the tests
//! start and that count what they receive.
#![allow(
    // Tests start curl, openssl and python3 from the outside.
    clippy::disallowed_methods,
    missing_docs,
    unreachable_pub,
    clippy::unwrap_used,
    clippy::expect_used
)]

mod clients;
mod harness;
mod hostile;
mod load;
mod local;
mod socks;
