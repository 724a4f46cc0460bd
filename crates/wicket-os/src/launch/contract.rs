//! The launch contract: what crosses the process boundary between Wicket
//! and its launcher, and between the launcher's two stages. The first
//! argument names the stage ([`LAUNCH_ARG`], [`INIT_ARG`], [`PROBE_ARG`]);
//! the second is a [`Launch`] as JSON (read by another process, the
//! launcher: its field names are the wire); then `--` and the argv.
//! A launcher that cannot set the sandbox up exits with [`SETUP_FAILED`].
//! Wicket's side installs the binary that speaks it ([`install_launcher`]).

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use super::limits::ResourceLimits;

/// The first argument that makes the `wicket` binary its own launcher.
pub const LAUNCH_ARG: &str = "__wicket-launch";

/// The binary installed as the launcher: see [`install_launcher`].
static LAUNCHER: OnceLock<PathBuf> = OnceLock::new();

/// Makes `exe` (the `wicket` binary itself) the launcher every spawn goes
/// through. The binary calls this once at start; without it (a library's
/// tests) commands start directly and cannot be sandboxed.
pub fn install_launcher(exe: PathBuf) {
    // A second call (a test that installs it again) keeps the first: every
    // spawn of the process goes through the same launcher.
    let _ = LAUNCHER.set(exe);
}

/// The launcher, if one is installed.
pub fn launcher() -> Option<&'static PathBuf> {
    LAUNCHER.get()
}

/// The first argument of stage 2.
pub const INIT_ARG: &str = "__wicket-init";
/// The first argument of the probe.
pub const PROBE_ARG: &str = "__wicket-probe";
/// The first argument of the probe's second stage, in its namespaces.
pub(super) const PROBE_MOUNTS_ARG: &str = "__wicket-probe-mounts";

/// Exit code of a launcher that could not set the sandbox up (the command never started).
pub const SETUP_FAILED: u8 = 125;

/// Stage 2's name when its command died of a signal: `wkt-signal-N` (an
/// init cannot die of a signal it sends itself, so stage 1 reads the
/// signal from the name and dies of it instead).
pub(super) const SIGNAL_NAME: &str = "wkt-signal-";

/// What a sandboxed command may do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Policy {
    /// The workspace: readable, and writable unless `read_only`.
    pub workspace: PathBuf,
    /// Only the private TMPDIR and `writable` may be written.
    pub read_only: bool,
    /// Folders or files writable besides the workspace (the private TMPDIR, `extra_write`).
    pub writable: Vec<PathBuf>,
    /// Folders or files shown read-only even where the jail's private tmpfs
    /// covers them (`extra_read`: a tool or server kept under /tmp).
    #[serde(default)]
    pub visible: Vec<PathBuf>,
    /// Paths that may not be read ($WICKET_HOME, `deny_read`).
    pub deny_read: Vec<PathBuf>,
    /// Home folders shown as empty folders: of each, only what `visible`
    /// names (the toolchains of `home_read`, a call's `read`) and the
    /// workspace are bound back.
    #[serde(default)]
    pub hidden: Vec<PathBuf>,
    /// The network: none (only the jail's loopback), through Wicket's
    /// proxy (only loopback, where a listener hands each connection to
    /// Wicket), or the host's own.
    pub network: wicket_protocol::Network,
    /// Whether `.git` stays writable (the call asked, and the card said so).
    #[serde(default)]
    pub write_git: bool,
    /// How many processes and how much memory.
    pub limits: ResourceLimits,
    /// A preview: the workspace is the lower layer of an overlay, whose
    /// upper layer takes every write (the workspace does not change).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overlay: Option<Overlay>,
}

/// The two folders of a preview's overlay, empty at the start, on one
/// filesystem, outside the workspace (under the session's folder).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Overlay {
    /// Where what the command writes lands.
    pub upper: PathBuf,
    /// The overlay's own scratch folder.
    pub work: PathBuf,
}

/// What the launcher is told.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Launch {
    /// Wicket's pid: if the launcher's parent is already someone else, Wicket died.
    pub parent: u32,
    /// The sandbox, if any.
    pub policy: Option<Policy>,
    /// Whether to use namespaces (the probe found them usable).
    #[serde(default)]
    pub isolate: bool,
    /// Whether to build the jail's own file tree (a mount namespace).
    #[serde(default)]
    pub mounts: bool,
    /// Whether to apply the seccomp filter.
    #[serde(default)]
    pub seccomp: bool,
    /// Whether to give the command a cgroup for its limits (else rlimits).
    #[serde(default)]
    pub cgroup: bool,
    /// For a command with no policy: paths it may not write all the same.
    #[serde(default)]
    pub protect: Vec<PathBuf>,
    /// For a command with no policy: paths it may not read all the same
    /// (seen empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mask: Vec<PathBuf>,
    /// A network through Wicket: the UNIX socket stage 1 connects to, over
    /// which it hands Wicket every connection the command makes to its
    /// proxy listener (`crate::egress`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub egress: Option<PathBuf>,
    /// Stage 1 to stage 2: the port of that listener on the jail's
    /// loopback, the one TCP port Landlock lets the command connect to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy_port: Option<u16>,
    /// Where stage 2 writes what the settle after the command found (a
    /// [`Report`]): an empty file Wicket made outside the workspace, and
    /// reads through the descriptor it kept, not by its path. Stage 2
    /// opens it before it builds the jail's tree and writes it over only
    /// once every process of the command is killed and reaped. The command
    /// cannot write it meanwhile: the jail's tree does not show it (the
    /// host's `/tmp` is not the jail's, and the path is masked wherever it
    /// lies), Landlock refuses a write outside the writable paths even
    /// through a `/proc/PID/fd` link, and stage 2 is not dumpable, so
    /// neither its `/proc/1/fd` nor `ptrace` of it is the command's.
    /// Unlike a line on stderr, which the command writes too, no command
    /// can forge it. It comes to stage 2 holding what the last scan of the
    /// workspace kept, for its scan before the command ([`report_file`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report: Option<PathBuf>,
}

/// At most this much of a [`Report`] is read (ten paths, each at most a `PATH_MAX`).
pub const REPORT_MAX_BYTES: u64 = 64 * 1024;

/// The report file both ways: Wicket writes in it what the last scan of
/// the workspace kept ([`crate::guard::Found::kept`]) for stage 2's scan
/// before the command to read, and stage 2 writes over it its [`Report`]
/// and what its scan after the command kept, for the next command. Laid
/// out as the report's length (8 bytes, little-endian; 0 for none), the
/// report as JSON, then what the scan kept, to the end.
pub fn report_file(report: Option<&Report>, kept: &[u8]) -> Vec<u8> {
    let json = report
        .and_then(|report| serde_json::to_vec(report).ok())
        .unwrap_or_default();
    let mut bytes = Vec::with_capacity(8 + json.len() + kept.len());
    bytes.extend_from_slice(&(json.len() as u64).to_le_bytes());
    bytes.extend_from_slice(&json);
    bytes.extend_from_slice(kept);
    bytes
}

/// A report file's [`Report`] (the default when it holds none, or one
/// past [`REPORT_MAX_BYTES`] or not JSON) and what the scan kept.
pub fn read_report_file(bytes: &[u8]) -> (Report, &[u8]) {
    let Some((length, rest)) = bytes.split_first_chunk::<8>() else {
        return (Report::default(), &[]);
    };
    let length = u64::from_le_bytes(*length);
    if length > REPORT_MAX_BYTES || length > rest.len() as u64 {
        return (Report::default(), &[]);
    }
    let (json, kept) = rest.split_at(length as usize);
    let report = serde_json::from_slice(json).unwrap_or_default();
    (report, kept)
}

/// What stage 2 tells Wicket after the command, in [`Launch::report`], as JSON.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Report {
    /// The files the command created or changed that another tool runs
    /// later, relative to the workspace, in path order
    /// ([`crate::guard::Settled::runs_later`]).
    #[serde(default)]
    pub runs_later: Vec<String>,
}

impl Launch {
    /// As one argument (its JSON; every field has a JSON form, but an
    /// error is returned rather than an empty argument the launcher would
    /// read as no policy).
    pub fn to_arg(&self) -> serde_json::Result<String> {
        serde_json::to_string(self)
    }
}

/// Says on stderr why the sandbox could not be set up; the exit code for it.
pub(super) fn fail(message: impl std::fmt::Display) -> u8 {
    eprintln!("wicket sandbox: {message}");
    SETUP_FAILED
}

/// The launch description and the argv after `--`.
pub(super) fn parse(args: &[OsString]) -> Result<(Launch, Vec<OsString>), String> {
    let launch: Launch = args
        .first()
        .and_then(|arg| serde_json::from_str(&arg.to_string_lossy()).ok())
        .ok_or("the launcher was started without its launch description")?;
    if args.get(1).and_then(|arg| arg.to_str()) != Some("--") {
        return Err("the launcher's argv must follow --".into());
    }
    let argv = args.get(2..).unwrap_or_default().to_vec();
    if argv.is_empty() {
        return Err("the launcher was given no command".into());
    }
    Ok((launch, argv))
}
