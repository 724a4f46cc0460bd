//! `$WICKET_HOME/server.json`: where a running server is, and its token
//! (mode 0600, written atomically).

use std::path::Path;

use serde::{Deserialize, Serialize};

/// `$WICKET_HOME/server.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ServerFile {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    /// The port.
    pub port: u16,
    /// The token.
    pub token: String,
    /// The server's pid.
    pub pid: u32,
}

/// The server already running on this home, if its process is alive.
pub fn running_server(home: &Path) -> Option<ServerFile> {
    // Wicket's own small file, opened without waiting (a FIFO is refused).
    let bytes = wicket_os::files::read_own(&home.join("server.json"), 64 * 1024).ok()??;
    let file: ServerFile = serde_json::from_slice(&bytes).ok()?;
    (wicket_os::process::alive(file.pid) && file.pid != std::process::id()).then_some(file)
}

/// Writes `server.json` with mode 0600 (temp file, then rename).
pub fn write_server_file(home: &Path, file: &ServerFile) -> std::io::Result<()> {
    wicket_os::files::private_dir(home)?;
    let bytes = serde_json::to_vec_pretty(file).map_err(std::io::Error::other)?;
    wicket_os::files::write_atomically(&home.join("server.json"), &bytes, true)
}
