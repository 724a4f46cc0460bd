//! The gate, cards, diffs and the session on disk. Start from [`gate::Gate`]:
//! every tool call a turn makes goes through it to `wicket_tools::Tools`, and it
//! records each call, card, answer and result in the session's `log.jsonl`
//! ([`session::Session`]).

pub mod config;
pub mod diff;
pub mod error;
pub mod gate;
pub mod hooks;
pub mod manager;
pub mod mcp;
pub mod models;
pub mod sandbox;
pub mod session;
pub mod skills;
pub mod turn;

pub use error::{Error, Result};
