/// What can go wrong in the gate and the session store.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(
        "session id '{0}' is not a safe name; use letters, digits, '.', '_' and '-' (at most 64, not starting with '.')"
    )]
    BadSessionId(String),
    #[error(
        "session '{id}' belongs to the workspace {existing}, not {given}; continue it with --workspace {existing}, or start a new session"
    )]
    WorkspaceMismatch {
        id: String,
        existing: String,
        given: String,
    },
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Corrupt { path: String, message: String },
    #[error("session '{0}' does not exist; `wicket sessions` lists the sessions there are")]
    NoSuchSession(String),
    #[error("the config file {path} is not valid: {message}")]
    Config { path: String, message: String },
    #[error(transparent)]
    Tool(#[from] wicket_tools::Error),
    #[error(
        "session '{id}' is open in another wicket process{}; wait for it to end, or use another session",
        pid.map(|pid| format!(" (pid {pid})")).unwrap_or_default()
    )]
    InUse { id: String, pid: Option<u32> },
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

pub(crate) fn io(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.display().to_string(),
        source,
    }
}
