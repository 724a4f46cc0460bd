//! One configured server: how to reach it, which of its tools the model is
//! offered, which skip the card, and how long it may take.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use wicket_os::spawn::{Confine, Cwd};
use wicket_protocol::WireError;

/// The startup timeout when the config gives none.
pub const DEFAULT_STARTUP_TIMEOUT_S: u64 = 10;
/// A tool call's timeout when the config gives none.
pub const DEFAULT_TOOL_TIMEOUT_S: u64 = 120;

/// How a server is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// A command Wicket starts, speaking JSON-RPC on its stdin and stdout.
    Stdio {
        /// `command` then `args`: run as given, no shell.
        argv: Vec<String>,
        /// Variables added to its environment (never the provider keys).
        env: Vec<(String, String)>,
        /// Where it runs: relative to the workspace, or absolute (home
        /// config only). `None`: the workspace.
        cwd: Option<PathBuf>,
        /// Its network: none, through Wicket's proxy, or the host's own.
        network: wicket_protocol::Network,
        /// Whether it may write `.git` (a git server: `write_git = true`).
        write_git: bool,
        /// Paths outside the workspace it may read (absolute or `~/…`),
        /// besides the toolchains every command sees of the home folders.
        read: Vec<String>,
    },
    /// A Streamable HTTP endpoint.
    Http {
        /// The endpoint's URL.
        url: String,
        /// Headers sent with every request, `${VAR}`s already expanded.
        headers: Vec<(String, String)>,
    },
}

/// One `[mcp_servers.NAME]` table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerSpec {
    /// NAME: letters, digits, `-`, single `_`s.
    pub name: String,
    /// How it is reached.
    pub transport: Transport,
    /// `enabled = false` (Codex's key): declared, and never started; its
    /// name stays taken, so no later config's server takes its place.
    pub enabled: bool,
    /// When set, only these tools are offered.
    pub enabled_tools: Option<BTreeSet<String>>,
    /// Tools never offered.
    pub disabled_tools: BTreeSet<String>,
    /// Tools that skip the card: the person's own rule, so always empty
    /// for a server the workspace declared.
    pub auto_allow: BTreeSet<String>,
    /// How long it has to start and list its tools.
    pub startup_timeout: Duration,
    /// How long one call may take.
    pub tool_timeout: Duration,
    /// Declared by the workspace's config (untrusted): a stdio server
    /// raises a `run` card before it starts.
    pub from_workspace: bool,
    /// Why it cannot start, found as its config was read (a header names
    /// a variable that is not set): it fails alone, never started, and the
    /// rest of Wicket goes on.
    pub fails: Option<String>,
}

impl ServerSpec {
    /// Whether the model is offered `tool`.
    pub fn offers(&self, tool: &str) -> bool {
        !self.disabled_tools.contains(tool)
            && self
                .enabled_tools
                .as_ref()
                .is_none_or(|enabled| enabled.contains(tool))
    }

    /// The argv of a stdio server.
    pub fn argv(&self) -> Option<&[String]> {
        match &self.transport {
            Transport::Stdio { argv, .. } => Some(argv),
            Transport::Http { .. } => None,
        }
    }
}

/// Opens the folder a stdio server starts in, afresh for each start.
pub type OpenCwd = Arc<dyn Fn() -> Result<Cwd, WireError> + Send + Sync>;

/// How an allowed stdio server starts: its sandbox and its folder.
#[derive(Clone)]
pub struct Launch {
    /// The sandbox.
    pub confine: Confine,
    /// Its folder.
    pub cwd: OpenCwd,
    /// With a network through Wicket: what is done with each connection.
    pub egress: Option<wicket_os::egress::Egress>,
}

impl std::fmt::Debug for Launch {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Launch")
            .field("confine", &self.confine)
            .finish_non_exhaustive()
    }
}
