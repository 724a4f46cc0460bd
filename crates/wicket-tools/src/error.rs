use wicket_protocol::{ErrorKind, WireError};

/// A tool's failure: one of the contract's kinds and a message that says what
/// was wrong and what to do instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Error {
    pub kind: ErrorKind,
    pub message: String,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Error {
        Error {
            kind,
            message: message.into(),
        }
    }

    pub fn invalid(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::InvalidArgs, message)
    }

    pub fn io(what: &str, error: impl std::fmt::Display) -> Error {
        Error::new(ErrorKind::Io, format!("{what}: {error}"))
    }

    /// The one place a tool error becomes the wire's `error` object.
    pub fn to_wire(&self) -> WireError {
        WireError {
            kind: self.kind,
            message: self.message.clone(),
        }
    }
}

impl From<Error> for WireError {
    fn from(error: Error) -> WireError {
        WireError {
            kind: error.kind,
            message: error.message,
        }
    }
}
