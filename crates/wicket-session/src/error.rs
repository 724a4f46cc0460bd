//! What can go wrong in the session store.

/// What can go wrong in the session store.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A session id that is not a safe folder name.
    #[error(
        "session id '{0}' is not a safe name; use letters, digits, '.', '_' and '-' (at most 64, not starting with '.')"
    )]
    BadSessionId(String),
    #[error(
        "session '{id}' belongs to the workspace {existing}, not {given}; continue it with --workspace {existing}, or start a new session"
    )]
    /// A session continued in another workspace than its own.
    WorkspaceMismatch {
        /// The session.
        id: String,
        /// Its workspace.
        existing: String,
        /// The one given.
        given: String,
    },
    /// A file of the session or home could not be read or written.
    #[error("{path}: {cause}")]
    Io {
        /// The file.
        path: String,
        /// Why. Said in the message, and not as the error's source, so a
        /// chain printed whole (`{:#}`) says it once.
        cause: std::io::Error,
    },
    /// A value could not be encoded as JSON: nothing was written, so no
    /// empty or partial line or meta.json is left for the next read.
    #[error(
        "{path}: could not be written, its JSON could not be encoded ({message}); nothing was written"
    )]
    Encode {
        /// The file it was for.
        path: String,
        /// Why.
        message: String,
    },
    /// A file of the session is not what Wicket writes.
    #[error("{path}: {message}")]
    Corrupt {
        /// The file.
        path: String,
        /// What is wrong with it.
        message: String,
    },
    /// The log's seq cannot grow: it is at [`wicket_protocol::limits::LOG_SEQ_MAX`].
    #[error(
        "session '{id}' cannot take another event: its log is at seq {seq}, the last one Wicket numbers ({max}); the log was damaged or written by something else. Start a new session; `wicket log {id}` still shows this one",
        max = wicket_protocol::limits::LOG_SEQ_MAX
    )]
    SeqExhausted {
        /// The session.
        id: String,
        /// The last seq in its log.
        seq: u64,
    },
    /// No session has this id.
    #[error("session '{0}' does not exist; `wicket sessions` lists the sessions there are")]
    NoSuchSession(String),
    #[error(
        "session '{id}' is open in another wicket process{}; wait for it to end, or use another session",
        pid.map(|pid| format!(" (pid {pid})")).unwrap_or_default()
    )]
    /// Another process holds the session.
    InUse {
        /// The session.
        id: String,
        /// The process holding it, when its lock file names one.
        pid: Option<u32>,
    },
}

/// A result with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

pub(crate) fn io(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |cause| Error::Io {
        path: path.display().to_string(),
        cause,
    }
}
