//! Turns and what they run on: the tool loop ([`turn::Runner`]), compaction,
//! models and prices, the config's layers, Stop hooks, skills, the MCP glue,
//! and the [`manager::Manager`] every front end drives sessions through.
//! Below it: the gate (`wicket_gate`, which knows nothing of turns) and the
//! session store (`wicket_session`).

pub mod claude;
pub mod config;
pub mod error;
pub mod hooked;
pub mod hooks;
pub mod manager;
pub mod mcp;
pub mod models;
pub mod rebuild;
pub mod skills;
pub mod turn;

pub use error::{Error, Result};
