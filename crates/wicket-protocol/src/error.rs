//! The wire error: `{"kind": "...", "message": "..."}`.

use serde::{Deserialize, Serialize};

/// The error kinds of the contract: every tool error and API error carries one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// A path meant to be inside the workspace landed outside it.
    OutsideWorkspace,
    /// The person denied the card.
    Denied,
    /// The path, program or skill does not exist.
    NotFound,
    /// Over one of the limits.
    TooLarge,
    /// search_replace's `old` occurs more than once.
    NotUnique,
    /// search_replace's `old` does not occur.
    NoMatch,
    /// A FIFO, socket or device.
    SpecialFile,
    /// The arguments do not fit the tool.
    InvalidArgs,
    /// The file changed after the card went up (internal: it re-asks).
    Stale,
    /// The operating system refused.
    Io,
    /// A Stop hook blocked `finish`; the hook's stderr says why.
    Blocked,
    /// The turn was cancelled before this call ran or finished.
    Cancelled,
    /// The sandbox cannot confine the command and `[sandbox] required` is set.
    Unsandboxed,
    /// An MCP server failed, died or answered with an error.
    Mcp,
    /// Never allowed, so never asked: a write into `$WICKET_HOME`.
    Forbidden,
}

impl ErrorKind {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::OutsideWorkspace => "outside_workspace",
            ErrorKind::Denied => "denied",
            ErrorKind::NotFound => "not_found",
            ErrorKind::TooLarge => "too_large",
            ErrorKind::NotUnique => "not_unique",
            ErrorKind::NoMatch => "no_match",
            ErrorKind::SpecialFile => "special_file",
            ErrorKind::InvalidArgs => "invalid_args",
            ErrorKind::Stale => "stale",
            ErrorKind::Io => "io",
            ErrorKind::Blocked => "blocked",
            ErrorKind::Cancelled => "cancelled",
            ErrorKind::Unsandboxed => "unsandboxed",
            ErrorKind::Mcp => "mcp",
            ErrorKind::Forbidden => "forbidden",
        }
    }
}

/// An error as it goes on the wire: `{"kind": "...", "message": "..."}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{message}")]
pub struct WireError {
    /// What kind of failure.
    pub kind: ErrorKind,
    /// What happened and what to do.
    pub message: String,
}

impl WireError {
    /// An error of `kind` with `message`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> WireError {
        WireError {
            kind,
            message: message.into(),
        }
    }

    /// `invalid_args` with `message`.
    pub fn invalid(message: impl Into<String>) -> WireError {
        WireError::new(ErrorKind::InvalidArgs, message)
    }

    /// `io`: `what` failed with `error`.
    pub fn io(what: &str, error: impl std::fmt::Display) -> WireError {
        WireError::new(ErrorKind::Io, format!("{what}: {error}"))
    }
}
