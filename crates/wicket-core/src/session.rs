//! The session on disk: `sessions/<id>/log.jsonl`, append-only, one JSON event
//! per line written with a single write, and `meta.json`, replaced atomically.

use std::collections::BTreeSet;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use wicket_protocol::{Event, EventBody, Usage};

use crate::error::{Error, Result, io};

/// `$WICKET_HOME`, else `$XDG_DATA_HOME/wicket`, else `~/.local/share/wicket`.
pub fn home() -> PathBuf {
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

pub const SESSION_ID_MAX: usize = 64;

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

pub fn now_rfc3339() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

/// A new session id: the UTC time and a random suffix, sortable by age.
pub fn new_id() -> String {
    let now = time::OffsetDateTime::now_utc();
    format!(
        "{:04}{:02}{:02}-{:02}{:02}{:02}-{:06x}",
        now.year(),
        u8::from(now.month()),
        now.day(),
        now.hour(),
        now.minute(),
        now.second(),
        fastrand::u32(..0x100_0000)
    )
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    #[default]
    Idle,
    Running,
    Waiting,
}

/// The allow_session keys: exact, and this session's only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Allowed {
    /// Resolved absolute paths writes may go to without a card.
    #[serde(default)]
    pub write: BTreeSet<String>,
    /// Absolute outside paths reads and lists may reach without a card.
    #[serde(default)]
    pub outside_read: BTreeSet<String>,
    /// Exact argv arrays that run without a card.
    #[serde(default)]
    pub argv: BTreeSet<Vec<String>>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Meta {
    pub id: String,
    pub title: String,
    pub workspace: String,
    #[serde(default)]
    pub model: Option<String>,
    pub created: String,
    pub updated: String,
    pub status: Status,
    #[serde(default)]
    pub allowed: Allowed,
    /// Tokens every model reply of the session used, summed. Written with
    /// the next change of status; the log keeps each reply's own count.
    #[serde(default)]
    pub usage: Usage,
}

/// What loading a log found.
#[derive(Debug, Default)]
pub struct Loaded {
    pub events: Vec<Event>,
    /// A torn last line (a crash mid-write) that was skipped, with its byte length.
    pub torn_tail: Option<usize>,
}

/// Reads a `log.jsonl`. A torn last line is skipped and reported; a bad line
/// anywhere else is corruption.
pub fn load_log(path: &Path) -> Result<Loaded> {
    let file = match File::open(path) {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Loaded::default()),
        Err(error) => return Err(io(path)(error)),
    };
    let mut reader = BufReader::with_capacity(256 * 1024, file);
    let mut loaded = Loaded::default();
    let mut line = Vec::new();
    let mut number = 0usize;
    loop {
        line.clear();
        let n = reader.read_until(b'\n', &mut line).map_err(io(path))?;
        if n == 0 {
            break;
        }
        number += 1;
        let complete = line.ends_with(b"\n");
        match serde_json::from_slice::<Event>(&line) {
            Ok(event) if complete => loaded.events.push(event),
            parsed => {
                let at_end = reader.fill_buf().map_err(io(path))?.is_empty();
                if at_end && (!complete || parsed.is_err()) {
                    loaded.torn_tail = Some(n);
                    break;
                }
                let message = match parsed {
                    Err(error) => format!("line {number} is not a valid event: {error}"),
                    Ok(_) => format!("line {number} has no line end"),
                };
                return Err(Error::Corrupt {
                    path: path.display().to_string(),
                    message,
                });
            }
        }
    }
    Ok(loaded)
}

struct LogWriter {
    file: File,
    next_seq: u64,
    /// The log's length after the last whole line.
    length: u64,
}

/// Called with every event right after it is appended, in seq order.
pub type Listener = Box<dyn Fn(&Event) + Send + Sync>;

/// One session: the only writer of its log and its meta.json.
pub struct Session {
    dir: PathBuf,
    log_path: PathBuf,
    log: Mutex<LogWriter>,
    meta: Mutex<Meta>,
    listener: std::sync::OnceLock<Listener>,
    /// False for a throwaway session: nothing is fsynced.
    durable: bool,
    /// Held while the session is open: one writer per log, across processes.
    _lock: File,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Session")
            .field("dir", &self.dir)
            .finish()
    }
}

fn write_atomically(path: &Path, bytes: &[u8], durable: bool) -> Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let temp = dir.join(format!(
        ".{}.{:016x}.tmp",
        path.file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default(),
        fastrand::u64(..)
    ));
    let result = (|| {
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)?;
        file.write_all(bytes)?;
        if durable {
            file.sync_all()?;
        }
        std::fs::rename(&temp, path)?;
        if durable {
            File::open(dir)?.sync_all()?;
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result.map_err(io(path))
}

impl Session {
    pub fn dir_of(home: &Path, id: &str) -> PathBuf {
        home.join("sessions").join(id)
    }

    /// Opens a session, creating it when it does not exist. A torn last log line
    /// is cut off so appends start on a clean line; the returned `Loaded` says so.
    pub fn open_or_create(
        home: &Path,
        id: &str,
        workspace: &Path,
        model: Option<&str>,
    ) -> Result<(Session, Loaded)> {
        Session::open(home, id, workspace, model, true)
    }

    /// A session that is thrown away when the process ends (`wicket tool`
    /// without `--session`): the same files and order, but no fsync, since
    /// nothing will ever resume it.
    pub fn open_throwaway(home: &Path, workspace: &Path) -> Result<(Session, Loaded)> {
        Session::open(home, &new_id(), workspace, None, false)
    }

    fn open(
        home: &Path,
        id: &str,
        workspace: &Path,
        model: Option<&str>,
        durable: bool,
    ) -> Result<(Session, Loaded)> {
        validate_id(id)?;
        let dir = Session::dir_of(home, id);
        std::fs::create_dir_all(&dir).map_err(io(&dir))?;
        let lock = lock_session(&dir, id)?;
        let meta_path = dir.join("meta.json");
        let workspace_text = workspace.display().to_string();
        let meta = match std::fs::read(&meta_path) {
            Ok(bytes) => {
                let meta: Meta =
                    serde_json::from_slice(&bytes).map_err(|error| Error::Corrupt {
                        path: meta_path.display().to_string(),
                        message: error.to_string(),
                    })?;
                if meta.workspace != workspace_text {
                    return Err(Error::WorkspaceMismatch {
                        id: id.to_string(),
                        existing: meta.workspace,
                        given: workspace_text,
                    });
                }
                meta
            }
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                let now = now_rfc3339();
                let meta = Meta {
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
                // meta.json first: a kill before the log exists still leaves a
                // session that loads (with an empty log), never a nameless folder.
                let bytes = serde_json::to_vec_pretty(&meta).unwrap_or_default();
                write_atomically(&meta_path, &bytes, durable)?;
                meta
            }
            Err(error) => return Err(io(&meta_path)(error)),
        };
        let log_path = dir.join("log.jsonl");
        let loaded = load_log(&log_path)?;
        let mut file = OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(&log_path)
            .map_err(io(&log_path))?;
        if let Some(torn) = loaded.torn_tail {
            let length = file.seek(SeekFrom::End(0)).map_err(io(&log_path))?;
            file.set_len(length - torn as u64).map_err(io(&log_path))?;
            if durable {
                file.sync_all().map_err(io(&log_path))?;
            }
        }
        let next_seq = loaded.events.last().map_or(1, |event| event.seq + 1);
        let length = file.seek(SeekFrom::End(0)).map_err(io(&log_path))?;
        let session = Session {
            dir,
            log_path,
            log: Mutex::new(LogWriter {
                file,
                next_seq,
                length,
            }),
            meta: Mutex::new(meta),
            listener: std::sync::OnceLock::new(),
            durable,
            _lock: lock,
        };
        session.save_meta()?;
        if loaded.events.is_empty() {
            session.append(EventBody::SessionStarted {
                session: id.to_string(),
                workspace: workspace.display().to_string(),
            })?;
            session.sync()?;
        }
        Ok((session, loaded))
    }

    /// Opens an existing session for reading (`wicket log`).
    pub fn load_existing(home: &Path, id: &str) -> Result<(Meta, Loaded)> {
        validate_id(id)?;
        let dir = Session::dir_of(home, id);
        let meta_path = dir.join("meta.json");
        let bytes = match std::fs::read(&meta_path) {
            Ok(bytes) => bytes,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                return Err(Error::NoSuchSession(id.into()));
            }
            Err(error) => return Err(io(&meta_path)(error)),
        };
        let meta: Meta = serde_json::from_slice(&bytes).map_err(|error| Error::Corrupt {
            path: meta_path.display().to_string(),
            message: error.to_string(),
        })?;
        Ok((meta, load_log(&dir.join("log.jsonl"))?))
    }

    pub fn log_path(&self) -> &Path {
        &self.log_path
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn meta(&self) -> Meta {
        match self.meta.lock() {
            Ok(meta) => meta.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Appends one event as one line, with a single write. Returns the event.
    pub fn append(&self, body: EventBody) -> Result<Event> {
        let mut log = self
            .log
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let event = Event {
            seq: log.next_seq,
            ts: now_rfc3339(),
            body,
        };
        let mut line = serde_json::to_vec(&event).map_err(|error| Error::Corrupt {
            path: self.log_path.display().to_string(),
            message: error.to_string(),
        })?;
        line.push(b'\n');
        if let Err(error) = log.file.write_all(&line) {
            // A short write (a full disk) must not leave half a line for the
            // next append to follow: cut back to the last whole line.
            let _ = log.file.set_len(log.length);
            return Err(io(&self.log_path)(error));
        }
        log.length += line.len() as u64;
        log.next_seq += 1;
        if let Some(listener) = self.listener.get() {
            listener(&event);
        }
        Ok(event)
    }

    /// Sets the one listener that sees every event as it is appended (the
    /// session manager's broadcast). Returns false when one is already set.
    pub fn set_listener(&self, listener: Listener) -> bool {
        self.listener.set(listener).is_ok()
    }

    /// Makes every appended event durable (turn boundaries, after answers).
    pub fn sync(&self) -> Result<()> {
        let log = self
            .log
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if !self.durable {
            return Ok(());
        }
        log.file.sync_data().map_err(io(&self.log_path))
    }

    /// Changes meta.json under its lock and writes it atomically.
    pub fn update_meta(&self, change: impl FnOnce(&mut Meta)) -> Result<()> {
        let mut meta = self
            .meta
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        change(&mut meta);
        meta.updated = now_rfc3339();
        let bytes = serde_json::to_vec_pretty(&*meta).unwrap_or_default();
        write_atomically(&self.dir.join("meta.json"), &bytes, self.durable)
    }

    /// Adds one reply's tokens to the session's total. Only in memory: the
    /// turn's next status change writes it, so a long turn does not rewrite
    /// meta.json per reply.
    pub fn count_usage(&self, usage: &Usage) {
        self.meta
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .usage
            .add(usage);
    }

    fn save_meta(&self) -> Result<()> {
        self.update_meta(|_| {})
    }
}

/// Takes the session's lock (`flock` on `lock` in its folder), so a second
/// process cannot write the same log; the kernel lets go when the process dies.
fn lock_session(dir: &Path, id: &str) -> Result<File> {
    let path = dir.join("lock");
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(io(&path))?;
    // A lock just let go can still be held for an instant by a child of
    // this process between its fork and its exec (the fd is close-on-exec,
    // not close-on-fork), so a busy lock is tried again for a moment before
    // it counts as another writer.
    for attempt in 0..LOCK_ATTEMPTS {
        match rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => return Ok(file),
            Err(rustix::io::Errno::WOULDBLOCK) if attempt + 1 < LOCK_ATTEMPTS => {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            Err(rustix::io::Errno::WOULDBLOCK) => break,
            Err(error) => return Err(io(&path)(error.into())),
        }
    }
    Err(Error::InUse(id.to_string()))
}

/// Tries at taking a session's lock, 10 ms apart.
const LOCK_ATTEMPTS: u32 = 20;

/// Every session under `home`, newest update first. Unreadable ones are skipped.
pub fn list(home: &Path) -> Vec<Meta> {
    let Ok(entries) = std::fs::read_dir(home.join("sessions")) else {
        return Vec::new();
    };
    let mut metas: Vec<Meta> = entries
        .filter_map(|entry| entry.ok())
        .filter_map(|entry| std::fs::read(entry.path().join("meta.json")).ok())
        .filter_map(|bytes| serde_json::from_slice(&bytes).ok())
        .collect();
    metas.sort_by(|a, b| b.updated.cmp(&a.updated).then(a.id.cmp(&b.id)));
    metas
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_must_be_safe_names() {
        for bad in ["", "../x", "a/b", ".hidden", "a b", &"x".repeat(65)] {
            assert!(validate_id(bad).is_err(), "{bad:?}");
        }
        for good in ["abc", "2026-12-02_x.1", &new_id()] {
            assert!(validate_id(good).is_ok(), "{good:?}");
        }
    }

    #[test]
    fn a_torn_last_line_is_skipped_and_cut_off() -> Result<()> {
        let home = tempfile::tempdir().map_err(io(Path::new("tmp")))?;
        let workspace = home.path();
        {
            let (session, _) = Session::open_or_create(home.path(), "s1", workspace, None)?;
            session.append(EventBody::error("one"))?;
            session.append(EventBody::error("two"))?;
        }
        let log = Session::dir_of(home.path(), "s1").join("log.jsonl");
        let mut file = OpenOptions::new()
            .append(true)
            .open(&log)
            .map_err(io(&log))?;
        file.write_all(br#"{"seq":4,"ts":"x","type":"err"#)
            .map_err(io(&log))?;
        drop(file);
        let (session, loaded) = Session::open_or_create(home.path(), "s1", workspace, None)?;
        assert_eq!(loaded.events.len(), 3, "session_started, one, two");
        assert!(loaded.torn_tail.is_some());
        let event = session.append(EventBody::error("three"))?;
        assert_eq!(event.seq, 4);
        let again = load_log(&log)?;
        assert_eq!(again.events.len(), 4);
        assert!(again.torn_tail.is_none());
        Ok(())
    }

    #[test]
    fn a_session_has_one_writer_at_a_time() -> Result<()> {
        let home = tempfile::tempdir().map_err(io(Path::new("tmp")))?;
        let first = Session::open_or_create(home.path(), "s", home.path(), None)?;
        let second = Session::open_or_create(home.path(), "s", home.path(), None);
        assert!(matches!(second, Err(Error::InUse(_))), "{second:?}");
        drop(first);
        Session::open_or_create(home.path(), "s", home.path(), None)?;
        Ok(())
    }

    #[test]
    fn a_bad_line_in_the_middle_is_corruption() -> Result<()> {
        let dir = tempfile::tempdir().map_err(io(Path::new("tmp")))?;
        let log = dir.path().join("log.jsonl");
        std::fs::write(
            &log,
            "garbage\n{\"seq\":1,\"ts\":\"t\",\"type\":\"error\",\"message\":\"m\"}\n",
        )
        .map_err(io(&log))?;
        assert!(matches!(load_log(&log), Err(Error::Corrupt { .. })));
        Ok(())
    }
}
