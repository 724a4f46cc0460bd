//! The one spawning module: every process Wicket starts for a person — a
//! `run`, a Stop hook, an MCP server — starts here, so each gets the same
//! treatment, and a second copy cannot drift from the first:
//!
//! - no shell: the argv is run as given;
//! - the provider keys Wicket holds ([`HIDDEN_ENV`]) are never passed on;
//! - its own process group, which gets SIGTERM and then, [`KILL_GRACE`]
//!   later, SIGKILL on timeout, cancel or stop;
//! - when the binary installed a launcher
//!   ([`crate::launch::install_launcher`]), the argv starts through it: it
//!   ties the command's life to Wicket's (`PR_SET_PDEATHSIG`) and applies
//!   the sandbox ([`crate::launch`]) before it `execve`s the argv;
//! - every spawn happens on one long-lived thread, because the kernel sends
//!   the parent-death signal when the *thread* that forked exits.
//!
//! [`run`] runs a command to its end, keeping the head and tail of its
//! output; [`start`] starts a long-lived one with pipes (an MCP server).

use std::collections::{BTreeMap, VecDeque};
use std::io::{Read, Seek, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal};
use wicket_protocol::limits::RUN_KILL_GRACE_MS;

use crate::Cancel;
use crate::egress::{Egress, Handoff};
use crate::keeper;
use crate::launch::{LAUNCH_ARG, Launch, Policy, Report, launcher, read_report_file, report_file};
use wicket_protocol::Network;

/// Environment variables holding the provider keys Wicket itself uses; no
/// process it starts ever sees them.
pub const HIDDEN_ENV: [&str; 3] = ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY"];

/// The variables a command gets from Wicket's environment (and every
/// `LC_*`); anything else only when the person's `[sandbox] env_pass` names
/// it. No tokens, no passwords, no socket addresses by default.
pub const PASSED_ENV: [&str; 8] = [
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "TERM", "TZ",
];

/// Whether Wicket's variable `name` reaches a command.
pub fn passes(name: &str, env_pass: &[String]) -> bool {
    !HIDDEN_ENV.contains(&name)
        && (PASSED_ENV.contains(&name)
            || name.starts_with("LC_")
            || env_pass.iter().any(|passed| passed == name))
}

/// Between SIGTERM and SIGKILL.
pub const KILL_GRACE: Duration = Duration::from_millis(RUN_KILL_GRACE_MS);

/// How long output is still drained after the command exits and its group
/// is killed, for a descendant that left the group but holds the pipes.
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(2000);

/// Where a command runs.
#[derive(Debug)]
pub enum Cwd {
    /// A folder the resolver opened: the command starts in exactly that
    /// folder, not in whatever a path names by the time it starts.
    Fd(OwnedFd),
    /// A path (the workspace root of a hook, a server's configured folder).
    Path(PathBuf),
}

/// What the command reads on stdin.
#[derive(Debug, Clone)]
pub enum Input {
    /// Nothing (/dev/null).
    Null,
    /// These bytes, then end of input.
    Bytes(Vec<u8>),
}

/// How a command is confined. Every command, sandboxed or not, starts in a
/// session of its own with no terminal, no inherited descriptor and only
/// the allowlisted environment.
#[derive(Debug, Clone, Default)]
pub struct Confine {
    /// Wicket's variables passed on besides [`PASSED_ENV`].
    pub env_pass: Vec<String>,
    /// Paths the command may not write even unsandboxed (`$WICKET_HOME`).
    pub protect: Vec<PathBuf>,
    /// Paths the command may not read even unsandboxed (the known
    /// credential stores, `deny_read`): empty to it, where this machine
    /// can make a mount namespace. A sandbox has its own (`Policy::deny_read`).
    pub mask: Vec<PathBuf>,
    /// The sandbox, if any: `None` when the person turned it off, or it is
    /// unavailable and not required.
    pub sandbox: Option<Policy>,
}

impl Confine {
    /// No sandbox, nothing protected, nothing passed beyond the allowlist.
    pub fn none() -> Confine {
        Confine::default()
    }

    /// Inside the sandbox `policy` describes.
    pub fn sandbox(policy: Policy) -> Confine {
        Confine {
            sandbox: Some(policy),
            ..Confine::default()
        }
    }
}

/// A command to start.
#[derive(Debug)]
pub struct Spec {
    /// The program and its arguments.
    pub argv: Vec<String>,
    /// Where it runs.
    pub cwd: Cwd,
    /// Variables added to the environment Wicket passes on (minus [`HIDDEN_ENV`]).
    pub env: Vec<(String, String)>,
    /// Its stdin (for [`run`]; [`start`] always pipes it).
    pub input: Input,
    /// Its confinement.
    pub confine: Confine,
    /// With a network through Wicket: what is done with each connection
    /// (without it, such a command reaches nothing).
    pub egress: Option<Egress>,
}

impl Spec {
    /// A command with no added environment, no input and no sandbox.
    pub fn new(argv: Vec<String>, cwd: Cwd) -> Spec {
        Spec {
            argv,
            cwd,
            env: Vec::new(),
            input: Input::Null,
            confine: Confine::none(),
            egress: None,
        }
    }
}

/// Why a command did not start, or was lost track of. What the model or
/// the person reads is made from this at the edge (the `run` tool, a
/// hook, an MCP server's start), not here.
#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    /// The argv is empty.
    #[error("the argv is empty")]
    EmptyArgv,
    /// The program is not on PATH.
    #[error("command '{program}' was not found")]
    NotFound {
        /// The program.
        program: String,
    },
    /// It could not be started.
    #[error("starting '{program}': {source}")]
    Start {
        /// The program.
        program: String,
        /// Why.
        source: std::io::Error,
    },
    /// The socket its connections through Wicket come over could not be made.
    #[error("'{program}' cannot reach Wicket's proxy: {source}")]
    Egress {
        /// The program.
        program: String,
        /// Why.
        source: std::io::Error,
    },
    /// The private TMPDIR could not be made.
    #[error("making a private TMPDIR {path}: {source}", path = path.display())]
    Tmp {
        /// Where.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file the jail reports what the command changed in could not be made.
    #[error("making the jail's report {path}: {source}", path = path.display())]
    Report {
        /// Where.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// It is to be sandboxed and this process has no launcher.
    #[error("'{program}' cannot start sandboxed: no launcher is installed in this process")]
    NoLauncher {
        /// The program.
        program: String,
    },
    /// The kernel gave no pid for it.
    #[error("'{program}' got no pid")]
    NoPid {
        /// The program.
        program: String,
    },
    /// Its exit status was lost.
    #[error("lost track of '{program}'")]
    Lost {
        /// The program.
        program: String,
    },
}

/// The handoff a command with a network through Wicket needs: where the
/// launcher can make that network (namespaces) and the caller said what to
/// do with its connections.
fn handoff_for(spec: &Spec, program: &str) -> Result<Option<Handoff>, SpawnError> {
    let proxied = spec
        .confine
        .sandbox
        .as_ref()
        .is_some_and(|policy| policy.network == Network::Proxied);
    if !proxied
        || spec.egress.is_none()
        || launcher().is_none()
        || !crate::launch::availability().namespaces
    {
        return Ok(None);
    }
    Handoff::open()
        .map(Some)
        .map_err(|source| SpawnError::Egress {
            program: program.to_string(),
            source,
        })
}

fn not_started(program: &str, error: std::io::Error) -> SpawnError {
    match error.kind() {
        std::io::ErrorKind::NotFound => SpawnError::NotFound {
            program: program.to_string(),
        },
        _ => SpawnError::Start {
            program: program.to_string(),
            source: error,
        },
    }
}

/// A private TMPDIR for one sandboxed command, removed when dropped.
struct PrivateTmp(PathBuf);

impl PrivateTmp {
    fn make() -> Result<PrivateTmp, SpawnError> {
        let path =
            std::env::temp_dir().join(format!("wicket-run-{:016x}", crate::ids::random_u64()));
        match crate::files::private_dir(&path) {
            Ok(()) => Ok(PrivateTmp(path)),
            Err(source) => Err(SpawnError::Tmp { path, source }),
        }
    }
}

impl Drop for PrivateTmp {
    fn drop(&mut self) {
        // The private /tmp of a finished command: one that cannot be removed stays under the session's folder, harmless.
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The report stage 2 writes after a command in the jail's tree (see
/// [`Launch::report`]): a file made here, empty, `0600`, whose descriptor
/// Wicket keeps and reads it through (the path is only for stage 2 to
/// open); removed when dropped.
struct SettleReport {
    path: PathBuf,
    file: std::fs::File,
}

/// What the jail's last scan of each workspace kept ([`report_file`]),
/// by the workspace's path: the next command's scan lists again only the
/// folders that changed since. Commands in one workspace at once each take
/// it and each put theirs back; any one is right by itself, since each
/// folder it holds is checked against the folder as it is.
static KEPT: Mutex<BTreeMap<PathBuf, Arc<Vec<u8>>>> = Mutex::new(BTreeMap::new());

/// What the last scan of `workspace` kept; empty for none.
fn kept_for(workspace: &Path) -> Arc<Vec<u8>> {
    KEPT.lock()
        .ok()
        .and_then(|kept| kept.get(workspace).cloned())
        .unwrap_or_default()
}

/// Keeps what a scan of `workspace` kept, for its next command; nothing
/// kept (the settle did not end) forgets the last.
fn keep_for(workspace: &Path, kept: &[u8]) {
    if let Ok(mut all) = KEPT.lock() {
        if kept.is_empty() {
            all.remove(workspace);
        } else {
            all.insert(workspace.to_path_buf(), Arc::new(kept.to_vec()));
        }
    }
}

impl SettleReport {
    /// A report file holding `kept`, what the last scan of the workspace kept.
    fn make(kept: &[u8]) -> Result<SettleReport, SpawnError> {
        let path = std::env::temp_dir().join(format!(
            "wicket-settle-{:016x}.json",
            crate::ids::random_u64()
        ));
        match std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&path)
        {
            Ok(file) => match file.write_all_at(&report_file(None, kept), 0) {
                Ok(()) => Ok(SettleReport { path, file }),
                Err(source) => Err(SpawnError::Report { path, source }),
            },
            Err(source) => Err(SpawnError::Report { path, source }),
        }
    }

    /// What stage 2 wrote, once the launcher has ended, and what its scan
    /// after the command kept: no report when it wrote none (the command
    /// never started, the settle did not end).
    fn read(&self) -> (Report, Vec<u8>) {
        let mut bytes = Vec::new();
        let mut file = &self.file;
        let most = crate::launch::REPORT_MAX_BYTES + crate::guard::KEPT_MAX_BYTES as u64 + 8;
        let read = file
            .seek(std::io::SeekFrom::Start(0))
            .and_then(|_| file.take(most).read_to_end(&mut bytes));
        match read {
            Ok(_) => {
                let (report, kept) = read_report_file(&bytes);
                (report, kept.to_vec())
            }
            Err(_) => (Report::default(), Vec::new()),
        }
    }
}

/// Only a jail's tree has a settle to report: its report file, holding
/// what the last scan of the workspace kept, and the workspace.
fn settle_report(
    spec: &Spec,
    tmp: Option<&Tmp>,
) -> Result<(Option<SettleReport>, Option<PathBuf>), SpawnError> {
    let workspace = spec
        .confine
        .sandbox
        .as_ref()
        .map(|policy| policy.workspace.clone());
    let report = match (tmp, &workspace) {
        (Some(Tmp::Jail), Some(workspace)) => Some(SettleReport::make(&kept_for(workspace))?),
        _ => None,
    };
    Ok((report, workspace))
}

impl SettleReport {
    /// Once the launcher has ended: what the scan after the command kept,
    /// kept for the workspace's next command, and the files it changed
    /// that run later.
    fn settled(&self, workspace: Option<&Path>) -> Vec<String> {
        let (report, kept) = self.read();
        if let Some(workspace) = workspace {
            keep_for(workspace, &kept);
        }
        report.runs_later
    }
}

impl Drop for SettleReport {
    fn drop(&mut self) {
        // A report left behind names a few paths of a workspace, in Wicket's own 0600 file: harmless.
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Where a sandboxed command's temporary files go: a private tmpfs at
/// `/tmp` when the launcher builds the jail's file tree, else a private
/// folder Wicket makes and removes.
enum Tmp {
    Jail,
    Folder(PrivateTmp),
}

/// Whether the launcher builds the jail's own file tree for `confine`
/// (which gives it a private `/tmp`).
fn builds_jail_tree(confine: &Confine) -> bool {
    let available = crate::launch::availability();
    launcher().is_some() && confine.sandbox.is_some() && available.jail_tree()
}

impl Tmp {
    fn for_spec(spec: &Spec) -> Result<Option<Tmp>, SpawnError> {
        if spec.confine.sandbox.is_none() {
            return Ok(None);
        }
        if builds_jail_tree(&spec.confine) {
            return Ok(Some(Tmp::Jail));
        }
        Ok(Some(Tmp::Folder(PrivateTmp::make()?)))
    }

    fn path(&self) -> PathBuf {
        match self {
            Tmp::Jail => PathBuf::from("/tmp"),
            Tmp::Folder(folder) => folder.0.clone(),
        }
    }
}

/// What the launcher is handed besides the spec: the socket a command
/// with a network through Wicket hands its connections over, and where
/// stage 2 reports what the settle after the command found.
struct Handed {
    egress: Option<PathBuf>,
    report: Option<PathBuf>,
}

/// The std `Command` for a spec: through the launcher when there is one.
fn command(spec: &Spec, tmp: Option<&Tmp>, handed: Handed) -> Result<Command, SpawnError> {
    let Some(program) = spec.argv.first() else {
        return Err(SpawnError::EmptyArgv);
    };
    let mut command = match launcher() {
        Some(exe) => {
            let available = crate::launch::availability();
            let sandboxed = spec.confine.sandbox.is_some();
            let isolate = sandboxed && available.namespaces;
            let launch = Launch {
                parent: std::process::id(),
                isolate,
                // The jail's tree, or (unsandboxed) the protecting binds.
                mounts: builds_jail_tree(&spec.confine) || (!sandboxed && available.mounts),
                seccomp: sandboxed && available.seccomp,
                cgroup: sandboxed && available.cgroup_limits(),
                protect: spec.confine.protect.clone(),
                mask: spec.confine.mask.clone(),
                egress: handed.egress,
                proxy_port: None,
                report: handed.report,
                policy: spec.confine.sandbox.clone().map(|mut policy| {
                    if let Some(Tmp::Folder(folder)) = tmp {
                        policy.writable.push(folder.0.clone());
                    }
                    policy
                }),
            };
            let mut command = Command::new(exe);
            command
                .arg(LAUNCH_ARG)
                .arg(launch.to_arg().map_err(|error| SpawnError::Start {
                    program: program.clone(),
                    source: std::io::Error::other(error),
                })?)
                .arg("--")
                .args(&spec.argv);
            command
        }
        None => {
            if spec.confine.sandbox.is_some() {
                return Err(SpawnError::NoLauncher {
                    program: program.clone(),
                });
            }
            let mut command = Command::new(program);
            command.args(&spec.argv[1..]);
            // No launcher to call setsid: at least a group of its own.
            command.process_group(0);
            command
        }
    };
    match &spec.cwd {
        // The folder the resolver opened, not a path that could be swapped since.
        Cwd::Fd(fd) => command.current_dir(format!("/proc/self/fd/{}", fd.as_raw_fd())),
        Cwd::Path(path) => command.current_dir(path),
    };
    command.env_clear();
    for (name, value) in std::env::vars_os() {
        if name
            .to_str()
            .is_some_and(|name| passes(name, &spec.confine.env_pass))
        {
            command.env(name, value);
        }
    }
    for (name, value) in &spec.env {
        command.env(name, value);
    }
    if let Some(tmp) = tmp {
        command.env("TMPDIR", tmp.path());
    }
    for name in HIDDEN_ENV {
        command.env_remove(name);
    }
    Ok(command)
}

/// Signals the command's group; before the launcher's `setsid` made that
/// group, the launcher itself.
fn signal_group(pid: Pid, signal: Signal) {
    // Not yet a group: then the launcher is all there is. Gone already:
    // nothing left to signal, which is what the caller wants.
    let _ = rustix::process::kill_process_group(pid, signal)
        .or_else(|_| rustix::process::kill_process(pid, signal));
}

/// The first and last bytes of a stream, and how many were dropped between.
#[derive(Debug, Default)]
pub struct Capture {
    keep: usize,
    head: Vec<u8>,
    tail: VecDeque<u8>,
    total: u64,
    /// Said in the cut marker after the count (`; redirect …`), or nothing.
    cut_note: &'static str,
}

impl Capture {
    /// Keeps `keep` bytes in all: half head, half tail.
    pub fn new(keep: usize) -> Capture {
        Capture {
            keep,
            ..Capture::default()
        }
    }

    /// As [`Capture::new`], its cut marker saying `note` after the count.
    pub fn with_cut_note(keep: usize, note: &'static str) -> Capture {
        Capture {
            keep,
            cut_note: note,
            ..Capture::default()
        }
    }

    /// Takes more bytes of the stream.
    pub fn push(&mut self, mut bytes: &[u8]) {
        let half = self.keep / 2;
        self.total += bytes.len() as u64;
        if self.head.len() < half {
            let take = bytes.len().min(half - self.head.len());
            self.head.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
        }
        if bytes.len() >= half {
            self.tail.clear();
            self.tail.extend(&bytes[bytes.len() - half..]);
        } else {
            let overflow = (self.tail.len() + bytes.len()).saturating_sub(half);
            self.tail.drain(..overflow);
            self.tail.extend(bytes);
        }
    }

    /// The kept text, with a marker where bytes were cut, and the count cut.
    pub fn finish(&self) -> (String, u64) {
        let cut = self.total - self.head.len() as u64 - self.tail.len() as u64;
        let tail: Vec<u8> = self.tail.iter().copied().collect();
        if cut == 0 {
            let mut all = self.head.clone();
            all.extend_from_slice(&tail);
            return (String::from_utf8_lossy(&all).into_owned(), 0);
        }
        // Cut on character boundaries so no half character turns into U+FFFD.
        let head_end = match std::str::from_utf8(&self.head) {
            Ok(_) => self.head.len(),
            Err(error) => error.valid_up_to(),
        };
        let tail_start = tail
            .iter()
            .take(3)
            .take_while(|byte| *byte & 0xC0 == 0x80)
            .count();
        let text = format!(
            "{}\n[… {cut} bytes cut{} …]\n{}",
            String::from_utf8_lossy(&self.head[..head_end]),
            self.cut_note,
            String::from_utf8_lossy(&tail[tail_start..])
        );
        (text, cut)
    }
}

/// Readers of a command's pipes, and the count of those that reached
/// the end of their stream.
#[derive(Default)]
struct Drains {
    done: Mutex<usize>,
    finished: Condvar,
}

impl Drains {
    /// Reads `stream` to its end on its own thread, into `capture`.
    fn spawn(
        self: &Arc<Self>,
        mut stream: impl Read + Send + 'static,
        capture: Arc<Mutex<Capture>>,
    ) {
        let drains = self.clone();
        std::thread::spawn(move || {
            let mut buffer = vec![0u8; 64 * 1024];
            loop {
                match stream.read(&mut buffer) {
                    Ok(0) => break,
                    Ok(n) => {
                        if let Ok(mut capture) = capture.lock() {
                            capture.push(&buffer[..n]);
                        }
                    }
                    Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
            if let Ok(mut done) = drains.done.lock() {
                *done += 1;
            }
            drains.finished.notify_all();
        });
    }

    /// Waits until `count` readers are done, or the deadline: a descendant
    /// that left the group may hold a pipe open, and is not waited for.
    fn wait(&self, count: usize, deadline: Instant) {
        let Ok(mut done) = self.done.lock() else {
            return;
        };
        while *done < count {
            let now = Instant::now();
            if now >= deadline {
                return;
            }
            done = match self.finished.wait_timeout(done, deadline - now) {
                Ok((done, _)) => done,
                Err(_) => return,
            };
        }
    }
}

/// How long a command may run and how much of its output is kept.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// SIGTERM at this point, SIGKILL [`KILL_GRACE`] later.
    pub timeout: Duration,
    /// Bytes of each stream kept, half head, half tail.
    pub keep_bytes: usize,
    /// What the cut marker says after the count, for whoever reads it.
    pub cut_note: &'static str,
}

/// How a command ended.
#[derive(Debug)]
pub struct Finished {
    /// Its exit status.
    pub status: ExitStatus,
    /// True when the timeout stopped it.
    pub timed_out: bool,
    /// stdout, head and tail, and the bytes cut.
    pub stdout: (String, u64),
    /// stderr, head and tail, and the bytes cut.
    pub stderr: (String, u64),
    /// From start to end.
    pub duration: Duration,
    /// The files it created or changed that another tool runs later
    /// (relative to the workspace), as the jail's stage 2 reported them
    /// after it: empty outside the jail's tree.
    pub runs_later: Vec<String>,
}

impl Finished {
    /// The exit code, when it exited.
    pub fn code(&self) -> Option<i32> {
        self.status.code()
    }

    /// The signal that ended it, when one did.
    pub fn signal(&self) -> Option<i32> {
        self.status.signal()
    }
}

#[derive(Default)]
struct Progress {
    exited: Option<ExitStatus>,
    cancelled: bool,
}

/// Runs a command to its end: TERM then KILL to its group on timeout or
/// cancel, and whatever it leaves in its group is killed when it exits.
pub fn run(spec: Spec, limits: Limits, cancel: &Cancel) -> Result<Finished, SpawnError> {
    let program = spec.argv.first().cloned().unwrap_or_default();
    let tmp = Tmp::for_spec(&spec)?;
    let handoff = handoff_for(&spec, &program)?;
    let (report, workspace) = settle_report(&spec, tmp.as_ref())?;
    let handed = Handed {
        egress: handoff.as_ref().map(Handoff::path),
        report: report.as_ref().map(|report| report.path.clone()),
    };
    let mut command = command(&spec, tmp.as_ref(), handed)?;
    command
        .stdin(match spec.input {
            Input::Null => Stdio::null(),
            Input::Bytes(_) => Stdio::piped(),
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let started = Instant::now();
    let mut child = keeper::spawn(command).map_err(|error| not_started(&program, error))?;
    drop(spec.cwd);
    let handoff = handoff.map(|mut handoff| {
        if let Some(egress) = spec.egress {
            handoff.take_from(child.id(), egress);
        }
        handoff
    });
    let pid = Pid::from_raw(child.id() as i32).ok_or_else(|| SpawnError::NoPid {
        program: program.clone(),
    })?;
    if let (Input::Bytes(bytes), Some(mut stdin)) = (spec.input, child.stdin.take()) {
        // A command need not read its input; a closed pipe is not an error.
        std::thread::spawn(move || {
            // See above: a command that stops reading is no error.
            let _ = stdin.write_all(&bytes);
        });
    }
    let capture = || Capture::with_cut_note(limits.keep_bytes, limits.cut_note);
    let stdout = Arc::new(Mutex::new(capture()));
    let stderr = Arc::new(Mutex::new(capture()));
    let drains = Arc::new(Drains::default());
    let mut readers = 0;
    if let Some(out) = child.stdout.take() {
        drains.spawn(out, stdout.clone());
        readers += 1;
    }
    if let Some(err) = child.stderr.take() {
        drains.spawn(err, stderr.clone());
        readers += 1;
    }
    let (status, timed_out) = supervise(child, pid, started + limits.timeout, cancel);
    // The command is done; whatever it left in its group goes with it, so no
    // descendant outlives the call or holds the pipes open.
    signal_group(pid, Signal::KILL);
    if let Some(handoff) = handoff {
        handoff.finish();
    }
    drains.wait(readers, Instant::now() + DRAIN_AFTER_EXIT);
    drop(tmp);
    let status = status.ok_or(SpawnError::Lost { program })?;
    let (stdout, stderr) = (
        stdout.lock().map(|c| c.finish()).unwrap_or_default(),
        stderr.lock().map(|c| c.finish()).unwrap_or_default(),
    );
    let runs_later = report.map(|report| report.settled(workspace.as_deref()));
    Ok(Finished {
        status,
        timed_out,
        stdout,
        stderr,
        duration: started.elapsed(),
        runs_later: runs_later.unwrap_or_default(),
    })
}

/// Waits for the child, sending TERM then KILL to its group at the deadline
/// or on cancel. Returns its status and whether the deadline stopped it.
fn supervise(
    mut child: Child,
    pid: Pid,
    deadline: Instant,
    cancel: &Cancel,
) -> (Option<ExitStatus>, bool) {
    let progress = Arc::new((Mutex::new(Progress::default()), Condvar::new()));
    let waiter = {
        let progress = progress.clone();
        std::thread::spawn(move || {
            let status = child.wait();
            let (lock, condvar) = &*progress;
            if let Ok(mut state) = lock.lock() {
                state.exited = status.ok().or(Some(ExitStatus::from_raw(0x7f00)));
            }
            condvar.notify_all();
        })
    };
    let listener = {
        let progress = progress.clone();
        cancel.on_cancel(Box::new(move || {
            let (lock, condvar) = &*progress;
            if let Ok(mut state) = lock.lock() {
                state.cancelled = true;
            }
            condvar.notify_all();
        }))
    };
    let (lock, condvar) = &*progress;
    let mut timed_out = false;
    let mut term_sent_at: Option<Instant> = None;
    let mut killed = false;
    let status = loop {
        let Ok(state) = lock.lock() else { break None };
        if let Some(status) = state.exited {
            break Some(status);
        }
        let now = Instant::now();
        if term_sent_at.is_none() && (state.cancelled || now >= deadline) {
            timed_out = !state.cancelled;
            drop(state);
            signal_group(pid, Signal::TERM);
            term_sent_at = Some(now);
            continue;
        }
        let wake = match term_sent_at {
            Some(at) if !killed => {
                let kill_at = at + KILL_GRACE;
                if now >= kill_at {
                    drop(state);
                    signal_group(pid, Signal::KILL);
                    killed = true;
                    continue;
                }
                kill_at
            }
            Some(_) => now + Duration::from_secs(3600),
            None => deadline,
        };
        // The guard is dropped: the loop takes the lock again at its top, and a poisoned lock is taken anyway there.
        let _ = condvar.wait_timeout(state, wake.saturating_duration_since(now));
    };
    cancel.remove(listener);
    // The waiter thread only reaps; its panic would already have been reported.
    let _ = waiter.join();
    (status, timed_out)
}

/// A long-lived command with its pipes (an MCP stdio server). Dropping it
/// stops it: TERM to its group, then KILL.
#[derive(Debug)]
pub struct Running {
    child: Child,
    pid: Pid,
    _tmp: Option<Tmp>,
    _handoff: Option<Handoff>,
}

impl std::fmt::Debug for Tmp {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_tuple("Tmp").field(&self.path()).finish()
    }
}

/// Starts a long-lived command with stdin, stdout and stderr piped.
pub fn start(spec: Spec) -> Result<Running, SpawnError> {
    let program = spec.argv.first().cloned().unwrap_or_default();
    let tmp = Tmp::for_spec(&spec)?;
    let handoff = handoff_for(&spec, &program)?;
    let handed = Handed {
        egress: handoff.as_ref().map(Handoff::path),
        report: None,
    };
    let mut command = command(&spec, tmp.as_ref(), handed)?;
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = keeper::spawn(command).map_err(|error| not_started(&program, error))?;
    let pid = Pid::from_raw(child.id() as i32).ok_or(SpawnError::NoPid { program })?;
    let handoff = handoff.map(|mut handoff| {
        if let Some(egress) = spec.egress {
            handoff.take_from(child.id(), egress);
        }
        handoff
    });
    Ok(Running {
        child,
        pid,
        _tmp: tmp,
        _handoff: handoff,
    })
}

impl Running {
    /// The std child, for its pipes.
    pub fn child_mut(&mut self) -> &mut Child {
        &mut self.child
    }

    /// Its pid.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether it has exited (reaping it if so).
    pub fn exited(&mut self) -> bool {
        !matches!(self.child.try_wait(), Ok(None))
    }

    /// TERM to its group, then KILL [`KILL_GRACE`] later if it is still there.
    pub fn stop(&mut self) {
        if self.exited() {
            signal_group(self.pid, Signal::KILL);
            return;
        }
        signal_group(self.pid, Signal::TERM);
        let deadline = Instant::now() + KILL_GRACE;
        while Instant::now() < deadline {
            if self.exited() {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        signal_group(self.pid, Signal::KILL);
        // Reaping after KILL: an error means it was reaped already.
        let _ = self.child.wait();
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_settle_report_is_read_through_the_descriptor_kept_not_the_path() {
        let report = SettleReport::make(b"kept before").unwrap();
        let path = report.path.clone();
        // Nothing written (the command never started): nothing reported,
        // and what was kept before is still what is kept.
        assert_eq!(report.read(), (Report::default(), b"kept before".to_vec()));
        // What stage 2 writes through its own descriptor, over whatever was there.
        let written = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        written.set_len(0).unwrap();
        let said = Report {
            runs_later: vec!["GNUmakefile".into(), "sub/.envrc".into()],
        };
        std::os::unix::fs::FileExt::write_all_at(
            &written,
            &report_file(Some(&said), b"kept after"),
            0,
        )
        .unwrap();
        // A file put at the path after it is not the one read.
        std::fs::remove_file(&path).unwrap();
        std::fs::write(&path, report_file(Some(&Report::default()), b"forged")).unwrap();
        assert_eq!(report.read(), (said, b"kept after".to_vec()));
        drop(report);
        assert!(!path.exists());
    }

    #[test]
    fn capture_keeps_everything_up_to_the_limit() {
        let mut capture = Capture::new(64 * 1024);
        let data: Vec<u8> = (0..64 * 1024).map(|i| b'a' + (i % 26) as u8).collect();
        for piece in data.chunks(1000) {
            capture.push(piece);
        }
        let (text, cut) = capture.finish();
        assert_eq!(cut, 0);
        assert_eq!(text.as_bytes(), &data[..]);
    }

    #[test]
    fn capture_keeps_head_and_tail_and_counts_the_cut() {
        let keep = 64 * 1024;
        let half = keep / 2;
        let mut capture = Capture::new(keep);
        let data: Vec<u8> = (0..keep + 1).map(|i| b'a' + (i % 26) as u8).collect();
        for piece in data.chunks(777) {
            capture.push(piece);
        }
        let (text, cut) = capture.finish();
        assert_eq!(cut, 1);
        assert!(text.starts_with(std::str::from_utf8(&data[..half]).unwrap()));
        assert!(text.ends_with(std::str::from_utf8(&data[data.len() - half..]).unwrap()));
        assert!(text.contains("[… 1 bytes cut …]"));
    }

    /// The keys set in the parent's environment, as a user's shell would.
    const KEYS: [(&str, &str); 3] = [
        ("OPENAI_API_KEY", "sk-openai"),
        ("ANTHROPIC_API_KEY", "sk-ant"),
        ("OPENROUTER_API_KEY", "sk-or"),
    ];

    #[test]
    fn a_command_gets_no_provider_key_and_its_input() {
        // A test cannot set its own environment without `unsafe`, so it runs
        // itself again with the keys set, and the copy does the looking.
        if std::env::var_os("OPENAI_API_KEY").is_none() {
            let name = "spawn::tests::a_command_gets_no_provider_key_and_its_input";
            let out = Command::new(std::env::current_exe().unwrap())
                .args(["--exact", name, "--nocapture", "--test-threads", "1"])
                .envs(KEYS)
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success(),
                "{text}{}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(text.contains("1 passed"), "the copy ran no test: {text}");
            return;
        }
        for (name, value) in KEYS {
            assert_eq!(std::env::var(name).as_deref(), Ok(value));
        }
        let spec = Spec { egress: Default::default(),
            argv: vec![
                "sh".into(),
                "-c".into(),
                "cat; echo; echo ${OPENAI_API_KEY:-none} ${ANTHROPIC_API_KEY:-none} ${OPENROUTER_API_KEY:-none} $EXTRA".into(),
            ],
            cwd: Cwd::Path(std::env::temp_dir()),
            env: vec![("EXTRA".into(), "extra".into())],
            input: Input::Bytes(b"input".to_vec()),
            confine: Confine::none(),
        };
        let limits = Limits {
            cut_note: Default::default(),
            timeout: Duration::from_secs(10),
            keep_bytes: 1024,
        };
        let finished = run(spec, limits, &Cancel::default()).unwrap();
        assert_eq!(finished.code(), Some(0));
        assert_eq!(finished.stdout.0, "input\nnone none none extra\n");
    }
}
