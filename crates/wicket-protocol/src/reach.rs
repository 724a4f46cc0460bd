//! What an outside read reaches: its own room, because both a card (what
//! is asked) and a rule (what is allowed) name it.

use serde::{Deserialize, Serialize};

/// What an outside read reaches: a file's bytes, a folder's names, or
/// every file below a folder. An allow_session for one is not one for another.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reach {
    /// read_file of one file.
    Read,
    /// list_dir of one folder: its names only.
    List,
    /// grep of a file or of every file below a folder.
    Grep,
}

impl Reach {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Reach::Read => "read",
            Reach::List => "list",
            Reach::Grep => "grep",
        }
    }
}
