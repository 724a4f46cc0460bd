//! What the tests of every crate share, in the spirit of codex's
//! `core_test_support` and uv's `uv-test`: the workspace [`Fixture`], the
//! [`ScriptedClient`] that plays a model in-process, an HTTP and SSE
//! client for `wicket serve` ([`http`]), a driver for a program on a real
//! pseudo-terminal ([`pty`]), process checks that cannot pass by accident
//! ([`process`]), and the insta filters for what a person reads
//! ([`filters`]). A test that cannot set up fails here, loudly: nothing
//! returns early.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// Tests start the binary under test (and git, node) themselves: what they
// check is wicket-os's own spawning from the outside.
#![allow(clippy::disallowed_methods)]

pub mod endings;
pub mod filters;
pub mod fixture;
pub mod http;
pub mod net;
pub mod process;
pub mod pty;
pub mod scripted;

pub use fixture::Fixture;
pub use process::{alive, wait_until};
pub use scripted::ScriptedClient;
