//! A tool's failure is the wire error itself: one of the contract's kinds
//! and a message that says what was wrong and what to do instead.

pub use wicket_protocol::WireError as Error;

/// A tool's result.
pub type Result<T, E = Error> = std::result::Result<T, E>;
