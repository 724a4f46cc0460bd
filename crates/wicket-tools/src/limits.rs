//! The tools' limits live with every other limit, in `wicket_protocol::limits`.

pub use wicket_protocol::limits::*;
