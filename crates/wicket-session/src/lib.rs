//! The session on disk: `sessions/<id>/log.jsonl`, append-only, one JSON event
//! per line written with a single write, and `meta.json`, replaced atomically.
//! The home and session folders are 0700, their files 0600: logs hold file
//! contents and outside reads.
//!
//! A session has one writer at a time (a lock the kernel lets go when the
//! process dies). So when a process opens a session whose log shows a turn
//! still running or a card still open, the process that ran it is gone: the
//! opener closes that turn in the log ([`EventBody::Interrupted`]) and the
//! status comes from the log, never from a stale meta.json.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::{BufRead, BufReader, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use wicket_os::files::{self, Locked};
use wicket_protocol::event::{
    InterruptedEvent, SessionStartedEvent, ToolResultEvent, TurnEndedEvent,
};
use wicket_protocol::{
    CallId, CardId, ErrorKind, Event, EventBody, GrantId, QuestionId, Reach, TurnOutcome, Usage,
    WireError,
};

pub mod error;
mod grants;
mod lines;
mod log;

mod recorded;
pub use grants::{
    Allowed, Grant, GrantKind, GrantOrigin, McpKey, NetKey, OutsideKey, RunKey, grant_id,
};
pub use log::{Loaded, Unfinished, load_for_conversation, load_log, load_log_after};
pub use recorded::Recorded;

use error::io;
pub use error::{Error, Result};
use lines::Line;
use wicket_protocol::limits::{LOG_LINE_MAX_BYTES, LOG_SEQ_MAX, META_MAX_BYTES};

/// `$WICKET_HOME`, else `$XDG_DATA_HOME/wicket`, else
/// `~/.local/share/wicket`; made absolute against the folder the process
/// is in at its first call (the binary calls it first thing), and the same
/// from then on. A relative home kept relative would name another folder
/// wherever it is used from (the jail's stage 2 runs in the command's cwd).
pub fn home() -> PathBuf {
    static HOME: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    HOME.get_or_init(|| {
        let named = named_home();
        // No cwd to resolve against: nothing relative works anyway; kept as named.
        std::path::absolute(&named).unwrap_or(named)
    })
    .clone()
}

/// The home as the environment names it.
fn named_home() -> PathBuf {
    if let Some(home) = std::env::var_os("WICKET_HOME").filter(|v| !v.is_empty()) {
        return PathBuf::from(home);
    }
    if let Some(data) = std::env::var_os("XDG_DATA_HOME").filter(|v| !v.is_empty()) {
        return PathBuf::from(data).join("wicket");
    }
    let user_home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/tmp"));
    user_home.join(".local/share/wicket")
}

/// The longest session id.
pub const SESSION_ID_MAX: usize = 64;

/// Refuses a session id that is not a safe folder name.
pub fn validate_id(id: &str) -> Result<()> {
    let safe = !id.is_empty()
        && id.len() <= SESSION_ID_MAX
        && !id.starts_with('.')
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-');
    if safe {
        Ok(())
    } else {
        Err(Error::BadSessionId(id.to_string()))
    }
}

/// Now, as RFC 3339.
pub fn now_rfc3339() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

/// A new session id: the UTC time and a random suffix, sortable by age.
pub fn new_id() -> String {
    wicket_os::ids::session_id(time::OffsetDateTime::now_utc().unix_timestamp())
}

/// Where a session stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// No turn runs.
    #[default]
    Idle,
    /// A turn runs.
    Running,
    /// A card or question waits for the person.
    Waiting,
}

impl Status {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Idle => "idle",
            Status::Running => "running",
            Status::Waiting => "waiting",
        }
    }
}

/// `meta.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Meta {
    /// The session id.
    pub id: String,
    /// The first message, cut.
    pub title: String,
    /// The workspace, canonical.
    pub workspace: String,
    /// The model string it runs with.
    #[serde(default)]
    pub model: Option<String>,
    /// RFC 3339.
    pub created: String,
    /// RFC 3339.
    pub updated: String,
    /// Where it stands.
    pub status: Status,
    /// The allow_session keys.
    #[serde(default)]
    pub allowed: Allowed,
    /// Tokens every model reply of the session used, summed. Written with
    /// the next change of status; the log keeps each reply's own count.
    #[serde(default)]
    pub usage: Usage,
    /// The session whose `task` call started this one (a sub-task).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// That `task` call, in the parent's log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_call: Option<String>,
}

struct LogWriter {
    /// `None` for a session kept in memory only.
    file: Option<File>,
    next_seq: u64,
    /// The log's length after the last whole line.
    length: u64,
}

/// Called with every event right after it is appended, in seq order.
pub type Listener = Box<dyn Fn(&Event) + Send + Sync>;

/// One session: the only writer of its log and its meta.json.
pub struct Session {
    /// The session's id, for errors that name it.
    id: String,
    dir: PathBuf,
    log_path: PathBuf,
    log: Mutex<LogWriter>,
    meta: Mutex<Meta>,
    listener: std::sync::OnceLock<Listener>,
    /// The first write of the log or meta.json that failed since
    /// [`Session::take_failure`] (the turn ends on it).
    failure: Mutex<Option<String>>,
    /// False for a session in memory only: nothing is fsynced.
    durable: bool,
    /// Held while the session is open: one writer per log, across processes
    /// (`None` in memory only).
    _lock: Option<File>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Session")
            .field("dir", &self.dir)
            .finish()
    }
}

/// meta.json, never waited on (a FIFO or a link there is refused).
fn read_meta(path: &Path) -> Result<Option<Meta>> {
    let Some(bytes) = files::read_own(path, META_MAX_BYTES).map_err(io(path))? else {
        return Ok(None);
    };
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|error| Error::Corrupt {
            path: path.display().to_string(),
            message: error.to_string(),
        })
}

impl Session {
    /// The folder of session `id`.
    pub fn dir_of(home: &Path, id: &str) -> PathBuf {
        home.join("sessions").join(id)
    }

    /// Opens a session, creating it when it does not exist. A torn last log
    /// line is cut off so appends start on a clean line, and a turn a dead
    /// process left open is closed; the returned `Loaded` is the log as found.
    pub fn open_or_create(
        home: &Path,
        id: &str,
        workspace: &Path,
        model: Option<&str>,
    ) -> Result<(Session, Loaded)> {
        Session::open(home, id, workspace, model, true)
    }

    /// A session in memory only (`wicket tool` without `--session`): the
    /// same events, seqs and allow_session keys for its one call, and no
    /// file, since nothing will ever resume it.
    pub fn in_memory(workspace: &Path) -> Session {
        let now = now_rfc3339();
        let id = new_id();
        let session = Session {
            id: id.clone(),
            dir: PathBuf::new(),
            log_path: PathBuf::new(),
            log: Mutex::new(LogWriter {
                file: None,
                next_seq: 1,
                length: 0,
            }),
            meta: Mutex::new(Meta {
                parent: None,
                parent_call: None,
                id: id.clone(),
                title: String::new(),
                workspace: workspace.display().to_string(),
                model: None,
                created: now.clone(),
                updated: now,
                status: Status::Idle,
                allowed: Allowed::default(),
                usage: Usage::default(),
            }),
            listener: std::sync::OnceLock::new(),
            failure: Mutex::new(None),
            durable: false,
            _lock: None,
        };
        // A session in memory has no file: its append cannot fail.
        let _ = session.append(EventBody::SessionStarted(SessionStartedEvent {
            session: id,
            workspace: workspace.display().to_string(),
        }));
        session
    }

    fn open(
        home: &Path,
        id: &str,
        workspace: &Path,
        model: Option<&str>,
        durable: bool,
    ) -> Result<(Session, Loaded)> {
        validate_id(id)?;
        files::private_dir(home).map_err(io(home))?;
        let dir = Session::dir_of(home, id);
        files::private_dir(&dir).map_err(io(&dir))?;
        let lock = lock_session(&dir, id)?;
        let meta = meta_for(&dir, id, workspace, model, durable)?;
        let log_path = dir.join("log.jsonl");
        let (file, loaded) = open_log(&log_path, durable)?;
        // Checked: a seq from the file (a damaged log, or u64::MAX) must not
        // wrap to 0 and number events again.
        let next_seq = match loaded.events.last() {
            None => 1,
            Some(last) => last
                .seq
                .checked_add(1)
                .filter(|&next| next <= LOG_SEQ_MAX)
                .ok_or_else(|| Error::SeqExhausted {
                    id: id.to_string(),
                    seq: last.seq,
                })?,
        };
        let mut file = file;
        let length = file.seek(SeekFrom::End(0)).map_err(io(&log_path))?;
        let session = Session {
            id: id.to_string(),
            dir,
            log_path,
            log: Mutex::new(LogWriter {
                file: Some(file),
                next_seq,
                length,
            }),
            meta: Mutex::new(meta),
            listener: std::sync::OnceLock::new(),
            failure: Mutex::new(None),
            durable,
            _lock: Some(lock),
        };
        if loaded.events.is_empty() {
            session.append(EventBody::SessionStarted(SessionStartedEvent {
                session: id.to_string(),
                workspace: workspace.display().to_string(),
            }))?;
            session.sync()?;
        }
        session.recover(&loaded.events)?;
        // The status comes from the log: whatever meta.json said, nothing
        // runs in a session this process has only just opened.
        session.update_meta(|meta| meta.status = Status::Idle)?;
        Ok((session, loaded))
    }

    /// Closes what a dead process left open: synthetic results for its
    /// calls, then `interrupted` naming the card or question.
    fn recover(&self, events: &[Event]) -> Result<()> {
        let open = Unfinished::of(events);
        if let Some(outcome) = open.unannounced {
            // It died between a turn's end and its `turn_ended`.
            self.append(EventBody::TurnEnded(TurnEndedEvent { outcome }))?;
            return self.sync();
        }
        if !open.any() {
            return Ok(());
        }
        for call_id in open.calls {
            self.append(EventBody::ToolResult(ToolResultEvent {
                call_id,
                result: Err(WireError::new(
                    ErrorKind::Cancelled,
                    "the process running this call ended before it finished (a crash or a kill)",
                )),
            }))?;
        }
        self.append(EventBody::Interrupted(InterruptedEvent {
            card: open.card,
            question: open.question,
        }))?;
        self.append(EventBody::TurnEnded(TurnEndedEvent {
            outcome: TurnOutcome::Interrupted,
        }))?;
        self.sync()
    }

    /// Opens an existing session for reading (`wicket log`).
    pub fn load_existing(home: &Path, id: &str) -> Result<(Meta, Loaded)> {
        let meta = Session::meta_of(home, id)?;
        let log = Session::dir_of(home, id).join("log.jsonl");
        Ok((meta, load_log(&log)?))
    }

    /// An existing session's meta.json, without its log.
    pub fn meta_of(home: &Path, id: &str) -> Result<Meta> {
        validate_id(id)?;
        let path = Session::dir_of(home, id).join("meta.json");
        read_meta(&path)?.ok_or_else(|| Error::NoSuchSession(id.into()))
    }

    /// The path of `log.jsonl`.
    pub fn log_path(&self) -> &Path {
        &self.log_path
    }

    /// The session's folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// A copy of meta.json as it is now.
    pub fn meta(&self) -> Meta {
        wicket_os::sync::lock(&self.meta).clone()
    }

    fn log(&self) -> std::sync::MutexGuard<'_, LogWriter> {
        wicket_os::sync::lock(&self.log)
    }

    /// The next event, with the next seq and the time now; an error naming
    /// the session when the log is at its last seq.
    fn next_event(&self, log: &LogWriter, body: EventBody) -> Result<Event> {
        if log.next_seq > LOG_SEQ_MAX {
            return Err(Error::SeqExhausted {
                id: self.id.clone(),
                seq: log.next_seq - 1,
            });
        }
        Ok(Event {
            seq: log.next_seq,
            ts: now_rfc3339(),
            body,
        })
    }

    /// Takes the event's seq and hands it to the listener, in seq order
    /// (the log's lock is held).
    fn publish(&self, log: &mut LogWriter, event: &Event) {
        log.next_seq = log.next_seq.saturating_add(1);
        if let Some(listener) = self.listener.get() {
            listener(event);
        }
    }

    /// Appends one event as one line, with a single write. Returns the event.
    pub fn append(&self, body: EventBody) -> Result<Event> {
        let mut log = self.log();
        let event = self
            .next_event(&log, body)
            .inspect_err(|error| self.failed(error))?;
        let mut line = encoded(&self.log_path, serde_json::to_vec(&event))
            .inspect_err(|error| self.failed(error))?;
        line.push(b'\n');
        let length = log.length;
        if let Some(file) = log.file.as_mut()
            && let Err(error) = file.write_all(&line)
        {
            // A short write (a full disk) must not leave half a line for the
            // next append to follow: cut back to the last whole line. If even
            // that fails, the loader drops the torn line (the error below
            // is what the turn ends on either way).
            let _ = file.set_len(length);
            let error = io(&self.log_path)(error);
            self.failed(&error);
            return Err(error);
        }
        log.length += line.len() as u64;
        self.publish(&mut log, &event);
        Ok(event)
    }

    /// Sets the one listener that sees every event as it is appended (the
    /// session manager's broadcast). Returns false when one is already set.
    pub fn set_listener(&self, listener: Listener) -> bool {
        self.listener.set(listener).is_ok()
    }

    /// Hands `body` to the listener without logging it: the last word of a
    /// turn whose log can no longer be written, so that whoever follows the
    /// session still learns the turn is over. It takes the next seq (the log
    /// keeps a gap there, which nothing reads as damage).
    pub fn announce(&self, body: EventBody) -> Event {
        let mut log = self.log();
        // Past the last seq the listener still hears the turn is over: the
        // event takes the seq after the log's last, which nothing follows
        // past, so a follower waiting on it is not left hanging.
        let event = Event {
            seq: log.next_seq,
            ts: now_rfc3339(),
            body,
        };
        self.publish(&mut log, &event);
        event
    }

    /// The seq of the last event appended (or announced); 0 for none.
    pub fn last_seq(&self) -> u64 {
        self.log().next_seq.saturating_sub(1)
    }

    /// Appends `body`, or (when the log cannot take it) announces it.
    pub fn append_or_announce(&self, body: EventBody) -> Event {
        match self.append(body.clone()) {
            Ok(event) => event,
            Err(_) => self.announce(body),
        }
    }

    /// The session's writes as a turn makes them: see [`Recorded`].
    pub fn recorded(&self) -> Recorded<'_> {
        Recorded(self)
    }

    fn failed(&self, error: &Error) {
        let mut failure = wicket_os::sync::lock(&self.failure);
        failure.get_or_insert_with(|| error.to_string());
    }

    /// The first write of the log or meta.json that failed since the last
    /// call, taken (a turn checks at each boundary and ends on one).
    pub fn take_failure(&self) -> Option<String> {
        wicket_os::sync::lock(&self.failure).take()
    }

    /// Makes every appended event durable (turn boundaries, after answers).
    pub fn sync(&self) -> Result<()> {
        let log = self.log();
        let synced = match &log.file {
            Some(file) if self.durable => file.sync_data().map_err(io(&self.log_path)),
            _ => Ok(()),
        };
        drop(log);
        synced.inspect_err(|error| self.failed(error))
    }

    /// Changes meta.json under its lock and writes it atomically.
    pub fn update_meta(&self, change: impl FnOnce(&mut Meta)) -> Result<()> {
        let mut meta = wicket_os::sync::lock(&self.meta);
        change(&mut meta);
        meta.updated = now_rfc3339();
        if self._lock.is_none() {
            return Ok(());
        }
        let path = self.dir.join("meta.json");
        encoded(&path, serde_json::to_vec_pretty(&*meta))
            .and_then(|bytes| {
                files::write_atomically(&path, &bytes, self.durable).map_err(io(&path))
            })
            .inspect_err(|error| self.failed(error))
    }

    /// Adds one reply's tokens to the session's total. Only in memory: the
    /// turn's next status change writes it, so a long turn does not rewrite
    /// meta.json per reply.
    pub fn count_usage(&self, usage: &Usage) {
        wicket_os::sync::lock(&self.meta).usage.add(usage);
    }
}

/// The session's meta.json: read (its workspace must be this one), or
/// written first for a new session, so a kill before the log exists still
/// leaves a session that loads, never a nameless folder.
fn meta_for(
    dir: &Path,
    id: &str,
    workspace: &Path,
    model: Option<&str>,
    durable: bool,
) -> Result<Meta> {
    let meta_path = dir.join("meta.json");
    let workspace_text = workspace.display().to_string();
    if let Some(meta) = read_meta(&meta_path)? {
        if meta.workspace != workspace_text {
            return Err(Error::WorkspaceMismatch {
                id: id.to_string(),
                existing: meta.workspace,
                given: workspace_text,
            });
        }
        return Ok(meta);
    }
    let now = now_rfc3339();
    let meta = Meta {
        parent: None,
        parent_call: None,
        id: id.to_string(),
        title: String::new(),
        workspace: workspace_text,
        model: model.map(str::to_string),
        created: now.clone(),
        updated: now,
        status: Status::Idle,
        allowed: Allowed::default(),
        usage: Usage::default(),
    };
    let bytes = encoded(&meta_path, serde_json::to_vec_pretty(&meta))?;
    files::write_atomically(&meta_path, &bytes, durable).map_err(io(&meta_path))?;
    Ok(meta)
}

/// JSON bytes for `path`, or the error that nothing was written.
fn encoded(path: &Path, bytes: serde_json::Result<Vec<u8>>) -> Result<Vec<u8>> {
    bytes.map_err(|error| Error::Encode {
        path: path.display().to_string(),
        message: error.to_string(),
    })
}

/// The log, loaded and opened for appending; a torn last line (and a
/// sparse tail after it) is cut off so appends start on a clean line.
fn open_log(log_path: &Path, durable: bool) -> Result<(File, Loaded)> {
    let loaded = load_log(log_path)?;
    let mut file = files::open_private_append(log_path).map_err(io(log_path))?;
    if loaded.torn_tail.is_some() || loaded.hole.is_some() {
        let length = file.seek(SeekFrom::End(0)).map_err(io(log_path))?;
        let end = loaded.hole.unwrap_or(length).min(length);
        let torn = loaded.torn_tail.unwrap_or(0) as u64;
        file.set_len(end.saturating_sub(torn))
            .map_err(io(log_path))?;
        if durable {
            file.sync_all().map_err(io(log_path))?;
        }
    }
    Ok((file, loaded))
}

/// How long a busy session lock is tried again before it counts as another
/// writer: a lock just let go can still be held for an instant by a child
/// of this process between its fork and its exec.
const LOCK_PATIENCE: std::time::Duration = std::time::Duration::from_millis(200);

/// Takes the session's lock (`flock` on `lock` in its folder), so a second
/// process cannot write the same log, and records this pid in it.
fn lock_session(dir: &Path, id: &str) -> Result<File> {
    let path = dir.join("lock");
    match files::lock(&path, LOCK_PATIENCE).map_err(io(&path))? {
        Locked::Held(mut file) => {
            // The holder's pid is a courtesy for the error another process shows; the lock is what counts.
            let _ = files::record_holder(&mut file);
            Ok(file)
        }
        Locked::Busy => Err(Error::InUse {
            id: id.to_string(),
            pid: files::holder(&path),
        }),
    }
}

/// Every session under `home`, newest update first. Unreadable ones are
/// skipped. A session whose meta.json says it runs, but that no process
/// holds, was left by a dead process: it is recovered (closed in its log)
/// and listed as idle.
pub fn list(home: &Path) -> Vec<Meta> {
    let Ok(entries) = std::fs::read_dir(home.join("sessions")) else {
        return Vec::new();
    };
    let mut metas: Vec<Meta> = entries
        .filter_map(|entry| entry.ok())
        .filter_map(|entry| read_meta(&entry.path().join("meta.json")).ok().flatten())
        .map(|meta| {
            if meta.status == Status::Idle {
                return meta;
            }
            let workspace = PathBuf::from(&meta.workspace);
            match Session::open(home, &meta.id, &workspace, None, true) {
                Ok((session, _)) => session.meta(),
                Err(_) => meta,
            }
        })
        .collect();
    metas.sort_by(|a, b| b.updated.cmp(&a.updated).then(a.id.cmp(&b.id)));
    metas
}

/// The newest session (by its last update) whose workspace is `workspace`
/// (compared where it really is), not a sub-task's: what `--last` and
/// `--continue` pick. The error says which folder had none.
pub fn newest_in(home: &Path, workspace: &Path) -> Result<String, String> {
    let wanted = std::fs::canonicalize(workspace).unwrap_or_else(|_| workspace.to_path_buf());
    list(home)
        .into_iter()
        .filter(|meta| meta.parent.is_none())
        .find(|meta| {
            let theirs = PathBuf::from(&meta.workspace);
            std::fs::canonicalize(&theirs).unwrap_or(theirs) == wanted
        })
        .map(|meta| meta.id)
        .ok_or_else(|| {
            format!(
                "no session has worked in {} yet; `wicket sessions` lists them all, or give a \
                 session's id",
                wanted.display()
            )
        })
}

/// The arguments as canonical JSON: keys sorted at every level, so an
/// allow_session key matches the same arguments however they were ordered.
pub fn canonical(value: &serde_json::Value) -> String {
    fn sorted(value: &serde_json::Value) -> serde_json::Value {
        match value {
            serde_json::Value::Object(map) => {
                let ordered: BTreeMap<&String, serde_json::Value> = map
                    .iter()
                    .map(|(key, value)| (key, sorted(value)))
                    .collect();
                serde_json::Value::Object(
                    ordered
                        .into_iter()
                        .map(|(key, value)| (key.clone(), value))
                        .collect(),
                )
            }
            serde_json::Value::Array(items) => {
                serde_json::Value::Array(items.iter().map(sorted).collect())
            }
            other => other.clone(),
        }
    }
    sorted(value).to_string()
}

/// Cases each property test of this crate runs: a fixed 256, so CI is the
/// same size every time and quick; a longer campaign sets `PROPTEST_CASES`.
#[cfg(test)]
fn proptest_cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|cases| cases.parse().ok())
        .unwrap_or(256)
}

#[cfg(test)]
mod tests;
