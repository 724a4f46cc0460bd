//! What kind of refusal a [`ManagerError`] is, decided once here, where the
//! errors of the session store, the checkpoints and the rules are known: a
//! front end (the server's status codes, a CLI's exit) reads the kind and
//! never matches another crate's error variants.

use super::ManagerError;

/// The kind of a refusal, as the wire names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// A card or question is open (`blocked`).
    Blocked,
    /// No such session, checkpoint, grant or rule (`not_found`).
    NotFound,
    /// The card or question answered is not the open one (`not_open`).
    NotOpen,
    /// Another process holds the session (`in_use`).
    InUse,
    /// The request itself is wrong (`invalid_args`, or the tool's own kind).
    Invalid(&'static str),
    /// A turn or a rewind is running (`busy`).
    Busy,
    /// The process is shutting down (`busy`, and try again elsewhere).
    Closing,
    /// The disk failed, or a file is not what Wicket writes (`io`).
    Io,
    /// Wicket itself failed (`internal`).
    Internal,
}

impl Refusal {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Refusal::Blocked => "blocked",
            Refusal::NotFound => "not_found",
            Refusal::NotOpen => "not_open",
            Refusal::InUse => "in_use",
            Refusal::Invalid(kind) => kind,
            Refusal::Busy | Refusal::Closing => "busy",
            Refusal::Io => "io",
            Refusal::Internal => "internal",
        }
    }
}

impl ManagerError {
    /// What kind of refusal this is.
    pub fn refusal(&self) -> Refusal {
        use wicket_checkpoints::Error as Checkpoints;
        use wicket_session::Error as Store;
        match self {
            ManagerError::Blocked { .. } => Refusal::Blocked,
            ManagerError::NoSuchSession(_) | ManagerError::NoSuchGrant(_) => Refusal::NotFound,
            ManagerError::NotOpen { .. } => Refusal::NotOpen,
            ManagerError::Session(store) | ManagerError::Config(crate::Error::Session(store)) => {
                match store {
                    Store::InUse { .. } => Refusal::InUse,
                    Store::BadSessionId(_) | Store::WorkspaceMismatch { .. } => {
                        Refusal::Invalid("invalid_args")
                    }
                    Store::NoSuchSession(_) => Refusal::NotFound,
                    Store::Io { .. }
                    | Store::Corrupt { .. }
                    | Store::Encode { .. }
                    | Store::SeqExhausted { .. } => Refusal::Io,
                }
            }
            ManagerError::Config(crate::Error::Config { .. })
            | ManagerError::BadAnswer(_)
            | ManagerError::BadModel(_) => Refusal::Invalid("invalid_args"),
            ManagerError::Config(crate::Error::Tool(_)) => Refusal::Io,
            ManagerError::Workspace(wire) => Refusal::Invalid(wire.kind.as_str()),
            ManagerError::Thread(_) => Refusal::Internal,
            ManagerError::Busy(_) | ManagerError::Rewinding(_) => Refusal::Busy,
            ManagerError::Closing(_) => Refusal::Closing,
            ManagerError::Checkpoints(checkpoints) => match checkpoints {
                Checkpoints::NoCheckpoint(_)
                | Checkpoints::Gone
                | Checkpoints::Missed { .. }
                | Checkpoints::Unattributed { .. } => Refusal::NotFound,
                Checkpoints::BadGlob { .. } => Refusal::Invalid("invalid_args"),
                Checkpoints::ChangedSincePreview(_) => Refusal::Invalid("stale"),
                Checkpoints::Io { .. }
                | Checkpoints::Workspace(_)
                | Checkpoints::TooManyFiles(_)
                | Checkpoints::StoreFull(_)
                | Checkpoints::Encode(_) => Refusal::Io,
            },
            ManagerError::Rules(wicket_gate::rules::Error::NoSuchRule(_)) => Refusal::NotFound,
            ManagerError::Rules(wicket_gate::rules::Error::File { .. }) => {
                Refusal::Invalid("invalid_args")
            }
        }
    }
}
