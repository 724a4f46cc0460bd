//! What can go wrong in the config and in setting a turn up.

/// What can go wrong in the config and in setting a turn up; the session
/// store's errors come through as they are.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A config file is wrong; the message names the key.
    #[error("the config file {path} is not valid: {message}")]
    Config {
        /// The file.
        path: String,
        /// What is wrong, naming the key.
        message: String,
    },
    /// A tool refused.
    #[error(transparent)]
    Tool(#[from] wicket_tools::Error),
    /// The session store failed.
    #[error(transparent)]
    Session(#[from] wicket_session::Error),
}

/// A result with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
