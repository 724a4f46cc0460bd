//! run: an argv with no shell, through the one spawning module
//! (`wicket_os::spawn`): its own process group, no provider keys, a
//! timeout, SIGTERM then SIGKILL
//! [`crate::limits::RUN_KILL_GRACE_MS`] later, and the head
//! and tail of each stream, [`RUN_STREAM_MAX_BYTES`] in all.

use std::path::PathBuf;
use std::time::Duration;

use wicket_os::egress::Egress;
use wicket_os::spawn::{self, Confine, Cwd, Limits, SpawnError, Spec};
use wicket_protocol::{ErrorKind, RunArgs, RunOutput};

use crate::Cancel;
use crate::error::{Error, Result};
use crate::limits::{RUN_DEFAULT_TIMEOUT_S, RUN_MAX_TIMEOUT_S, RUN_STREAM_MAX_BYTES};
use crate::resolve::{Location, Workspace};

/// The timeout a run call asks for, checked against the limits.
pub fn timeout_of(args: &RunArgs) -> Result<u64> {
    match args.timeout_s {
        None => Ok(RUN_DEFAULT_TIMEOUT_S),
        Some(0) => Err(Error::invalid("timeout_s must be at least 1")),
        Some(seconds) if seconds > RUN_MAX_TIMEOUT_S => Err(Error::invalid(format!(
            "timeout_s is {seconds}; the most a command may run is {RUN_MAX_TIMEOUT_S} s"
        ))),
        Some(seconds) => Ok(seconds),
    }
}

/// Where a command would run: the folder as the card names it (relative to
/// the workspace, `.` for the root) and its resolved absolute path (the
/// allow_session key's half).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunDir {
    /// Relative to the workspace root, symlinks resolved.
    pub shown: String,
    /// Absolute, symlinks resolved.
    pub absolute: PathBuf,
}

/// Checks a run call's arguments without running anything, and resolves
/// its cwd, which must be an existing folder inside the workspace: a
/// person is never asked about a call that would fail.
pub fn validate(workspace: &Workspace, args: &RunArgs) -> Result<RunDir> {
    timeout_of(args)?;
    let Some(program) = args.argv.first() else {
        return Err(Error::invalid(
            "argv is empty; give the program and its arguments, e.g. [\"cargo\", \"test\"]",
        ));
    };
    if program.is_empty() {
        return Err(Error::invalid("argv[0] is empty; name the program to run"));
    }
    if args.argv.iter().any(|arg| arg.contains('\0')) {
        return Err(Error::invalid("an argv element contains a NUL byte"));
    }
    let (_, dir) = open_dir(workspace, args)?;
    Ok(dir)
}

/// Opens a run's folder (its `cwd`, which must be a folder inside the
/// workspace) through the resolver: the folder itself, and how it is named.
pub fn open_dir(workspace: &Workspace, args: &RunArgs) -> Result<(std::os::fd::OwnedFd, RunDir)> {
    let cwd_shown = args.cwd.as_deref().unwrap_or(".");
    let location = workspace.classify(cwd_shown)?;
    let Location::Inside(relative) = &location else {
        return Err(Error::new(
            ErrorKind::OutsideWorkspace,
            format!("cwd '{cwd_shown}' is outside the workspace; commands run inside it"),
        ));
    };
    let (fd, absolute) = workspace.open_folder(relative, cwd_shown)?;
    let shown = absolute
        .strip_prefix(workspace.root())
        .ok()
        .filter(|relative| !relative.as_os_str().is_empty())
        .map_or_else(
            || ".".to_string(),
            |relative| relative.display().to_string(),
        );
    Ok((fd, RunDir { shown, absolute }))
}

/// Runs the command in the folder the card named (`approved`): if the cwd
/// now resolves elsewhere, nothing starts.
pub fn run(
    workspace: &Workspace,
    args: &RunArgs,
    approved: &RunDir,
    confine: Confine,
    egress: Option<Egress>,
    cancel: &Cancel,
) -> Result<RunOutput> {
    let timeout = Duration::from_secs(timeout_of(args)?);
    let (fd, dir) = open_dir(workspace, args)?;
    if &dir != approved {
        return Err(Error::new(
            ErrorKind::Stale,
            format!(
                "cwd now resolves to {} instead of {}; the command did not start",
                dir.absolute.display(),
                approved.absolute.display()
            ),
        ));
    }
    let spec = Spec {
        confine,
        egress,
        ..Spec::new(args.argv.clone(), Cwd::Fd(fd))
    };
    let limits = Limits {
        timeout,
        keep_bytes: RUN_STREAM_MAX_BYTES,
        cut_note: CUT_NOTE,
    };
    let finished = spawn::run(spec, limits, cancel).map_err(not_started)?;
    let output = RunOutput {
        exit_code: finished.code(),
        signal: finished.signal(),
        timed_out: finished.timed_out,
        stdout: finished.stdout.0,
        stderr: finished.stderr.0,
        stdout_cut: finished.stdout.1,
        stderr_cut: finished.stderr.1,
        duration_ms: finished.duration.as_millis() as u64,
        net: Vec::new(),
        runs_later: finished.runs_later,
        note: None,
    };
    Ok(noted(output, args, timeout.as_secs()))
}
/// What a failed command printed when it had no network to reach.
const NO_NETWORK: [&str; 12] = [
    "Could not resolve host",
    "Could not resolve",
    "Temporary failure in name resolution",
    "Name or service not known",
    "No address associated with hostname",
    "nodename nor servname",
    "getaddrinfo",
    "Network is unreachable",
    "Failed to establish a new connection",
    "ENOTFOUND",
    "EAI_AGAIN",
    "dial tcp",
];

/// What a failed command printed when it could not write `.git`.
const READ_ONLY: [&str; 3] = [
    "Read-only file system",
    "Permission denied",
    "Operation not permitted",
];

/// `output` with its note: what to ask for when the jail is the likely
/// reason it failed.
fn noted(mut output: RunOutput, args: &RunArgs, timeout_s: u64) -> RunOutput {
    let said = |words: &[&str]| {
        words
            .iter()
            .any(|word| output.stderr.contains(word) || output.stdout.contains(word))
    };
    output.note = if output.timed_out {
        Some(if timeout_s < RUN_MAX_TIMEOUT_S {
            format!(
                "it ran past its timeout of {timeout_s} s and was stopped; if it needs longer, \
                     give timeout_s (at most {RUN_MAX_TIMEOUT_S})"
            )
        } else {
            format!("it ran past the longest timeout, {RUN_MAX_TIMEOUT_S} s, and was stopped")
        })
    } else if output.exit_code == Some(0) {
        None
    } else if args.network.is_off() && said(&NO_NETWORK) {
        Some(
            "the command has no network; if it needs one, run it again with \"network\": true \
                 (the person approves each host it reaches)"
                .into(),
        )
    } else if !args.git && said(&[".git"]) && said(&READ_ONLY) {
        Some(
            ".git is read-only for commands; to commit, check out, branch or change git's \
                 config, run it again with \"git\": true (the person sees that on the card)"
                .into(),
        )
    } else {
        None
    };
    output
}

/// What a run's cut marker says after the count: how to see the rest.
pub const CUT_NOTE: &str = "; redirect the output to a file in the workspace and grep it";

/// A command that did not start, as the model (or the person) reads it:
/// the one place spawn failures become wire errors, for `run`, hooks and
/// MCP servers alike.
pub fn not_started(error: SpawnError) -> Error {
    let kind = match &error {
        SpawnError::EmptyArgv => ErrorKind::InvalidArgs,
        SpawnError::NotFound { .. } => ErrorKind::NotFound,
        SpawnError::NoLauncher { .. } => ErrorKind::Unsandboxed,
        SpawnError::Start { .. }
        | SpawnError::Egress { .. }
        | SpawnError::Tmp { .. }
        | SpawnError::Report { .. }
        | SpawnError::NoPid { .. }
        | SpawnError::Lost { .. } => ErrorKind::Io,
    };
    let advice = match &error {
        SpawnError::EmptyArgv => "; give the program and its arguments",
        SpawnError::NotFound { .. } => " on PATH; check the name, or give its path",
        _ => "",
    };
    Error::new(kind, format!("{error}{advice}"))
}
