//! Drives the fake servers with a raw HTTP/1.1 client over TcpStream and
//! checks the bytes they stream against the providers' wire formats.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

mod anthropic;
mod client;
mod openai;
mod server;
