//! The MCP client: a session's servers ([`hub::Hub`]), each reached over
//! stdio (a process started through the one spawning module, sandboxed and
//! without the provider keys) or Streamable HTTP, on the official Rust SDK
//! (`rmcp`). Their tools are offered to the model as `mcp__SERVER__TOOL`
//! ([`names`]); every call is put through the gate before it gets here.

pub mod connection;
pub mod hub;
pub mod names;
pub mod server;

pub use hub::{Approval, Hub, Offered, Report, Standing};
pub use server::{Launch, ServerSpec, Transport};
