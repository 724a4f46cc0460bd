//! Checkpoints of a session's workspace, and the rewinds that restore them.
//!
//! Before each write and each command the session records what every file,
//! link and folder of the workspace is (`.git` and what the ignore files or
//! `[checkpoints] ignore` skip left out), under
//! `$WICKET_HOME/sessions/<id>/checkpoints/`, never in the workspace or its git:
//!
//! - `objects/ab/cdef…`: each distinct content once, by its SHA-256;
//! - `journal.jsonl`: one line a checkpoint (`id`, the log `seq` it comes
//!   before, `at`, the tool), holding only the entries that changed since the
//!   one before — the first line holds them all;
//! - `index.json`: the last checkpoint whole, with each file's stat (size,
//!   times, inode), so an unchanged file costs a stat, not a read.
//!
//! A rewind first records a checkpoint of the workspace as it is (so the
//! rewind can itself be rewound), then writes back, makes and removes what
//! differs from the checkpoint it goes to, through the workspace's no-link
//! path.

mod objects;
mod rewind;
mod state;

use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use globset::{Glob, GlobSet, GlobSetBuilder};
use serde::{Deserialize, Serialize};
use wicket_protocol::limits::{
    CHECKPOINT_KEEP_DAYS, CHECKPOINT_MAX_FILE_BYTES, CHECKPOINT_MAX_FILES,
};
use wicket_tools::Workspace;
use wicket_tools::tree::{Go, Kind, Met};

use objects::{Objects, hash_of};
pub use rewind::{Applied, Plan};
use state::{Change, Content, Entry, StatKey, State};

/// Errors of the store, each saying what to do.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The store could not be read or written.
    #[error("the checkpoint store {path} could not be {what}: {source}")]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// "read", "written".
        what: &'static str,
        /// The cause.
        source: std::io::Error,
    },
    /// The workspace could not be walked.
    #[error("the workspace could not be read for a checkpoint: {0}")]
    Workspace(std::io::Error),
    /// More entries than the limit.
    #[error(
        "the workspace has more than {0} files and folders that are not ignored; add [checkpoints] ignore globs (or raise max_files) in $WICKET_HOME/config.toml"
    )]
    TooManyFiles(usize),
    /// A bad `[checkpoints] ignore` glob.
    #[error("[checkpoints] ignore entry '{glob}' is not a glob: {error}")]
    BadGlob {
        /// The glob as written.
        glob: String,
        /// Why.
        error: String,
    },
    /// Nothing recorded at or after the event asked for.
    #[error(
        "no checkpoint at or after event {0}: no write or command ran from there on; `wicket log` shows the events"
    )]
    NoCheckpoint(u64),
    /// A journal line that does not read.
    #[error(
        "line {line} of the checkpoint journal {path} is damaged; checkpoints up to the line before it can still be rewound to"
    )]
    Damaged {
        /// The journal.
        path: PathBuf,
        /// Its 1-based line.
        line: usize,
    },
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// `[checkpoints]` of the person's config.
#[derive(Debug, Clone)]
pub struct Settings {
    ignore: GlobSet,
    /// Globs as written.
    pub ignore_globs: Vec<String>,
    /// Checkpoints older than this are pruned.
    pub keep_days: u64,
    /// A larger file is not copied.
    pub max_file_bytes: u64,
    /// A workspace with more entries gets no checkpoint.
    pub max_files: usize,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            ignore: GlobSet::empty(),
            ignore_globs: Vec::new(),
            keep_days: CHECKPOINT_KEEP_DAYS,
            max_file_bytes: CHECKPOINT_MAX_FILE_BYTES,
            max_files: CHECKPOINT_MAX_FILES,
        }
    }
}

impl PartialEq for Settings {
    fn eq(&self, other: &Settings) -> bool {
        (
            &self.ignore_globs,
            self.keep_days,
            self.max_file_bytes,
            self.max_files,
        ) == (
            &other.ignore_globs,
            other.keep_days,
            other.max_file_bytes,
            other.max_files,
        )
    }
}

impl Settings {
    /// Settings with `ignore` globs: a glob with no `/` matches a name at
    /// any depth (`target`, `*.log`), one with a `/` the path from the root.
    pub fn with_ignore(mut self, globs: Vec<String>) -> Result<Settings> {
        let mut builder = GlobSetBuilder::new();
        for glob in &globs {
            let pattern = glob.trim_end_matches('/');
            let pattern = if pattern.contains('/') {
                pattern.trim_start_matches('/').to_string()
            } else {
                format!("**/{pattern}")
            };
            let compiled = globset::GlobBuilder::new(&pattern)
                .literal_separator(true)
                .build()
                .or_else(|_| Glob::new(&pattern))
                .map_err(|error| Error::BadGlob {
                    glob: glob.clone(),
                    error: error.to_string(),
                })?;
            builder.add(compiled);
        }
        self.ignore = builder.build().map_err(|error| Error::BadGlob {
            glob: globs.join(", "),
            error: error.to_string(),
        })?;
        self.ignore_globs = globs;
        Ok(self)
    }
}

/// One checkpoint, as listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Info {
    /// 1, 2, 3, … in the session.
    pub id: u64,
    /// The log event it comes before (a write's or run's `tool_call`, a `rewound`).
    pub seq: u64,
    /// When (seconds since 1970).
    pub at: u64,
    /// `write_file`, `search_replace`, `run`, `rewind`.
    pub tool: String,
    /// Entries that changed since the checkpoint before.
    pub changed: usize,
}

/// What one checkpoint took.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Taken {
    /// Its id.
    pub id: u64,
    /// Files, links and folders it holds.
    pub entries: usize,
    /// Those changed since the checkpoint before.
    pub changed: usize,
    /// Bytes of new objects it stored.
    pub new_bytes: u64,
    /// What it newly holds no copy of, and why.
    pub gaps: Vec<(String, String)>,
}

/// What a rewind did.
#[derive(Debug, Clone)]
pub struct Rewound {
    /// The checkpoint it went back to.
    pub to: Info,
    /// The checkpoint of the files as they were just before it.
    pub before: Taken,
    /// What it changed and what it could not.
    pub applied: Applied,
}

#[derive(Serialize, Deserialize)]
struct Line {
    id: u64,
    seq: u64,
    at: u64,
    tool: String,
    changes: Vec<Change>,
}

#[derive(Serialize, Deserialize)]
struct Index {
    journal_len: u64,
    next_id: u64,
    entries: Vec<Change>,
}

struct Cache {
    /// The last recorded checkpoint, with its stat keys.
    journaled: State,
    journal_len: u64,
    next_id: u64,
}

struct Scanned {
    state: State,
    gaps: Vec<(String, String)>,
    new_bytes: u64,
    /// A stat key differs from the index's: the index is written again.
    keys_changed: bool,
}

fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs())
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

/// A session's checkpoints.
pub struct Store {
    dir: PathBuf,
    objects: Objects,
    cache: Mutex<Option<Cache>>,
}

impl Store {
    /// The store of the session whose folder is `session_dir` (nothing is
    /// read or made until the first checkpoint).
    pub fn new(session_dir: &Path) -> Store {
        let dir = session_dir.join("checkpoints");
        Store {
            objects: Objects::new(dir.join("objects")),
            dir,
            cache: Mutex::new(None),
        }
    }

    fn journal(&self) -> PathBuf {
        self.dir.join("journal.jsonl")
    }

    fn index(&self) -> PathBuf {
        self.dir.join("index.json")
    }

    fn io(&self, path: &Path, what: &'static str) -> impl FnOnce(std::io::Error) -> Error {
        let path = path.to_path_buf();
        move |source| Error::Io { path, what, source }
    }

    fn lock(&self) -> MutexGuard<'_, Option<Cache>> {
        self.cache
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The journal's whole lines (a torn last line, from a crash while it
    /// was written, is cut off).
    fn lines(&self) -> Result<Vec<String>> {
        let path = self.journal();
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(error) => return Err(self.io(&path, "read")(error)),
        };
        let whole = bytes
            .iter()
            .rposition(|byte| *byte == b'\n')
            .map_or(0, |end| end + 1);
        if whole < bytes.len() {
            let file = std::fs::OpenOptions::new().write(true).open(&path);
            file.and_then(|file| file.set_len(whole as u64))
                .map_err(self.io(&path, "written"))?;
        }
        Ok(String::from_utf8_lossy(&bytes[..whole])
            .lines()
            .map(str::to_string)
            .collect())
    }

    fn parse(&self, number: usize, line: &str) -> Result<Line> {
        serde_json::from_str(line).map_err(|_| Error::Damaged {
            path: self.journal(),
            line: number + 1,
        })
    }

    /// Replays lines onto `state` up to and including checkpoint `until`.
    fn replay(&self, lines: &[String], until: Option<u64>) -> Result<(State, Option<Line>)> {
        let mut state = State::new();
        let mut last = None;
        for (number, text) in lines.iter().enumerate() {
            let mut line = self.parse(number, text)?;
            for change in std::mem::take(&mut line.changes) {
                change.apply(&mut state).ok_or_else(|| Error::Damaged {
                    path: self.journal(),
                    line: number + 1,
                })?;
            }
            let done = until == Some(line.id);
            last = Some(line);
            if done {
                break;
            }
        }
        Ok((state, last))
    }

    /// Loads the last checkpoint (its index, or the journal replayed when
    /// the index is missing or behind), after pruning old checkpoints.
    fn load(&self, settings: &Settings) -> Result<Cache> {
        self.prune(settings.keep_days)?;
        let lines = self.lines()?;
        let journal_len: u64 = lines.iter().map(|line| line.len() as u64 + 1).sum();
        let index = std::fs::read(self.index())
            .ok()
            .and_then(|bytes| serde_json::from_slice::<Index>(&bytes).ok())
            .filter(|index| index.journal_len == journal_len);
        if let Some(index) = index {
            let mut journaled = State::new();
            if index
                .entries
                .into_iter()
                .all(|change| change.apply(&mut journaled).is_some())
            {
                return Ok(Cache {
                    journaled,
                    journal_len,
                    next_id: index.next_id,
                });
            }
        }
        // No index to trust: every file is read once more (objects already
        // stored are not written again).
        let (journaled, last) = self.replay(&lines, None)?;
        Ok(Cache {
            journaled,
            journal_len,
            next_id: last.map_or(1, |line| line.id + 1),
        })
    }

    /// Drops checkpoints older than `keep_days`: the oldest one kept is
    /// written whole as the journal's first line, and objects no kept
    /// checkpoint names are removed. (Done when a process first uses the
    /// store; the caller holds the session's lock.)
    pub fn prune(&self, keep_days: u64) -> Result<()> {
        let lines = self.lines()?;
        let cutoff = now_secs().saturating_sub(keep_days.saturating_mul(86_400));
        let Some(first) = lines.first() else {
            return Ok(());
        };
        if self.parse(0, first)?.at >= cutoff {
            return Ok(());
        }
        let mut kept = None;
        for (number, text) in lines.iter().enumerate() {
            if self.parse(number, text)?.at >= cutoff {
                kept = Some(number);
                break;
            }
        }
        let Some(kept) = kept else {
            for path in [self.journal(), self.index()] {
                match std::fs::remove_file(&path) {
                    Ok(()) => {}
                    Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                    Err(error) => return Err(self.io(&path, "written")(error)),
                }
            }
            return self.sweep(&HashSet::new());
        };
        let (base_state, base) = self.replay(&lines[..=kept], None)?;
        let Some(base) = base else { return Ok(()) };
        let mut keep: HashSet<state::Hash> = state::hashes(&base_state).copied().collect();
        let base = Line {
            changes: state::delta(&State::new(), &base_state),
            ..base
        };
        let mut text = serde_json::to_string(&base).unwrap_or_default();
        text.push('\n');
        for (offset, rest) in lines[kept + 1..].iter().enumerate() {
            let mut state = State::new();
            for change in self.parse(kept + 1 + offset, rest)?.changes {
                // A damaged change was found by the replay above or is found by the next load.
                let _ = change.apply(&mut state);
            }
            keep.extend(state::hashes(&state).copied());
            text.push_str(rest);
            text.push('\n');
        }
        let journal = self.journal();
        wicket_os::files::write_atomically(&journal, text.as_bytes(), false)
            .map_err(self.io(&journal, "written"))?;
        self.sweep(&keep)
    }

    fn sweep(&self, keep: &HashSet<state::Hash>) -> Result<()> {
        let objects = self.dir.join("objects");
        self.objects
            .sweep(keep)
            .map(|_| ())
            .map_err(self.io(&objects, "written"))
    }

    fn cache<'g>(
        &self,
        guard: &'g mut MutexGuard<'_, Option<Cache>>,
        settings: &Settings,
    ) -> Result<&'g mut Cache> {
        if guard.is_none() {
            **guard = Some(self.load(settings)?);
        }
        match guard.as_mut() {
            Some(cache) => Ok(cache),
            None => unreachable!("loaded just above"),
        }
    }

    /// Records a checkpoint of `workspace` before the log event `seq` (a
    /// `tool` call's or a rewind's).
    pub fn take(
        &self,
        workspace: &Workspace,
        settings: &Settings,
        seq: u64,
        tool: &str,
    ) -> Result<Taken> {
        let mut guard = self.lock();
        let cache = self.cache(&mut guard, settings)?;
        self.take_in(cache, workspace, settings, seq, tool)
    }

    fn take_in(
        &self,
        cache: &mut Cache,
        workspace: &Workspace,
        settings: &Settings,
        seq: u64,
        tool: &str,
    ) -> Result<Taken> {
        let scanned = self.scan(workspace, settings, &cache.journaled)?;
        let changes = state::delta(&cache.journaled, &scanned.state);
        let line = Line {
            id: cache.next_id,
            seq,
            at: now_secs(),
            tool: tool.to_string(),
            changes,
        };
        let mut text = serde_json::to_string(&line).unwrap_or_default();
        text.push('\n');
        let journal = self.journal();
        wicket_os::files::private_dir(&self.dir).map_err(self.io(&self.dir, "written"))?;
        wicket_os::files::open_private_append(&journal)
            .and_then(|mut file| file.write_all(text.as_bytes()))
            .map_err(self.io(&journal, "written"))?;
        let changed = line.changes.len();
        cache.journal_len += text.len() as u64;
        cache.next_id += 1;
        let entries = scanned.state.len();
        cache.journaled = scanned.state;
        if changed > 0 || scanned.keys_changed {
            self.write_index(cache)?;
        }
        Ok(Taken {
            id: line.id,
            entries,
            changed,
            new_bytes: scanned.new_bytes,
            gaps: scanned.gaps,
        })
    }

    fn write_index(&self, cache: &Cache) -> Result<()> {
        let index = Index {
            journal_len: cache.journal_len,
            next_id: cache.next_id,
            entries: cache
                .journaled
                .iter()
                .map(|(path, entry)| Change::of(path, entry, true))
                .collect(),
        };
        let path = self.index();
        let bytes = serde_json::to_vec(&index).unwrap_or_default();
        wicket_os::files::write_atomically(&path, &bytes, false).map_err(self.io(&path, "written"))
    }

    /// Walks the workspace: an entry whose stat matches the last checkpoint
    /// keeps its object; any other file or link is read, hashed and stored.
    fn scan(&self, workspace: &Workspace, settings: &Settings, last: &State) -> Result<Scanned> {
        let mut scanned = Scanned {
            state: State::new(),
            gaps: Vec::new(),
            new_bytes: 0,
            keys_changed: false,
        };
        let mut failure = None;
        let skip = |path: &[u8], _is_dir: bool| {
            !settings.ignore.is_empty()
                && settings.ignore.is_match(Path::new(
                    <std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(path),
                ))
        };
        let mut visit = |met: Met<'_>| {
            if scanned.state.len() >= settings.max_files {
                failure = Some(Error::TooManyFiles(settings.max_files));
                return Go::Stop;
            }
            let (path, entry) = match met {
                Met::Entry(found) => {
                    let key = StatKey::of(found.stat);
                    let mode = found.stat.st_mode & 0o7777;
                    let before = last.get(found.path);
                    let kept = before.filter(|before| {
                        before.key == key
                            && matches!(
                                (&before.content, found.kind),
                                (Content::File(_), Kind::File)
                                    | (Content::Link(_), Kind::Link)
                                    | (Content::Dir, Kind::Dir)
                            )
                    });
                    let content = match (kept, found.kind) {
                        (Some(before), _) => before.content.clone(),
                        (None, Kind::Dir) => Content::Dir,
                        (None, Kind::File) => self.copy(
                            &mut scanned.new_bytes,
                            settings,
                            || {
                                if found.stat.st_size as u64 > settings.max_file_bytes {
                                    return Err(format!(
                                        "no copy: it is {}, over [checkpoints] max_file_mb ({})",
                                        mib(found.stat.st_size as u64),
                                        mib(settings.max_file_bytes)
                                    ));
                                }
                                found
                                    .read(settings.max_file_bytes)
                                    .map(|(bytes, _)| bytes)
                                    .map_err(|error| {
                                        format!("no copy: it could not be read: {error}")
                                    })
                            },
                            Content::File,
                        ),
                        (None, Kind::Link) => self.copy(
                            &mut scanned.new_bytes,
                            settings,
                            || {
                                found.link_target().map_err(|error| {
                                    format!("no copy: the link could not be read: {error}")
                                })
                            },
                            Content::Link,
                        ),
                    };
                    scanned.keys_changed |= before.is_none_or(|before| before.key != key);
                    (found.path.to_vec(), Entry { content, mode, key })
                }
                Met::Unreadable { path, error } => (
                    path.to_vec(),
                    Entry {
                        content: Content::Missed(format!(
                            "no copy: the folder could not be read: {error}"
                        )),
                        mode: 0,
                        key: StatKey::default(),
                    },
                ),
            };
            if let Content::Missed(why) = &entry.content {
                let known = last.get(&path).is_some_and(|before| {
                    before.content == entry.content && before.key == entry.key
                });
                if !known {
                    scanned
                        .gaps
                        .push((wicket_tools::tree::shown(&path), why.clone()));
                }
            }
            scanned.state.insert(path, entry);
            if failure.is_some() { Go::Stop } else { Go::On }
        };
        workspace
            .scan(&skip, &mut visit)
            .map_err(Error::Workspace)?;
        match failure {
            Some(error) => Err(error),
            None => Ok(scanned),
        }
    }

    /// Reads an entry's bytes and stores them; a read that fails (or a
    /// file too big) is an entry with no copy, and a store that fails the
    /// whole checkpoint.
    fn copy(
        &self,
        new_bytes: &mut u64,
        settings: &Settings,
        read: impl FnOnce() -> std::result::Result<Vec<u8>, String>,
        content: fn(state::Hash) -> Content,
    ) -> Content {
        let bytes = match read() {
            Ok(bytes) if bytes.len() as u64 > settings.max_file_bytes => {
                return Content::Missed(format!(
                    "no copy: it grew past [checkpoints] max_file_mb ({}) while it was read",
                    mib(settings.max_file_bytes)
                ));
            }
            Ok(bytes) => bytes,
            Err(why) => return Content::Missed(why),
        };
        let hash = hash_of(&bytes);
        match self.objects.put(&hash, &bytes) {
            Ok(true) => *new_bytes += bytes.len() as u64,
            Ok(false) => {}
            Err(error) => {
                return Content::Missed(format!(
                    "no copy: the store could not be written: {error}"
                ));
            }
        }
        content(hash)
    }

    /// Every checkpoint, oldest first.
    pub fn list(&self) -> Result<Vec<Info>> {
        let _guard = self.lock();
        let lines = self.lines()?;
        lines
            .iter()
            .enumerate()
            .map(|(number, text)| {
                let line = self.parse(number, text)?;
                Ok(Info {
                    id: line.id,
                    seq: line.seq,
                    at: line.at,
                    tool: line.tool,
                    changed: line.changes.len(),
                })
            })
            .collect()
    }

    /// The first checkpoint at or after event `seq`: the files as they
    /// were just before that event.
    pub fn find(&self, seq: u64) -> Result<Info> {
        self.list()?
            .into_iter()
            .find(|info| info.seq >= seq)
            .ok_or(Error::NoCheckpoint(seq))
    }

    fn state_of(&self, id: u64) -> Result<State> {
        let lines = self.lines()?;
        Ok(self.replay(&lines, Some(id))?.0)
    }

    /// What a rewind to the checkpoint `to` would change now (nothing is
    /// recorded or changed).
    pub fn plan(&self, workspace: &Workspace, settings: &Settings, to: &Info) -> Result<Plan> {
        let mut guard = self.lock();
        let cache = self.cache(&mut guard, settings)?;
        let then = self.state_of(to.id)?;
        let now = self.scan(workspace, settings, &cache.journaled)?;
        Ok(Plan::between(&then, &now.state))
    }

    /// Rewinds the workspace to the checkpoint `to`: records the files as
    /// they are (before event `seq`, the `rewound` to come), then changes
    /// what differs. Refused, with nothing changed, when that record
    /// cannot be written: a rewind that could not be undone is not made.
    /// What that record has no copy of is left as it is (the plan's `kept`).
    pub fn rewind(
        &self,
        workspace: &Workspace,
        settings: &Settings,
        to: &Info,
        seq: u64,
    ) -> Result<Rewound> {
        let mut guard = self.lock();
        let cache = self.cache(&mut guard, settings)?;
        let then = self.state_of(to.id)?;
        let before = self.take_in(cache, workspace, settings, seq, "rewind")?;
        let plan = Plan::between(&then, &cache.journaled);
        let applied = plan.apply(workspace, &self.objects);
        Ok(Rewound {
            to: to.clone(),
            before,
            applied,
        })
    }

    /// Bytes of the objects stored.
    pub fn object_bytes(&self) -> u64 {
        self.objects.bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    struct World {
        _dir: tempfile::TempDir,
        ws: PathBuf,
        outside: PathBuf,
        workspace: Workspace,
        store: Store,
    }

    fn world() -> World {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let (ws, outside, session) = (root.join("ws"), root.join("outside"), root.join("session"));
        for folder in [&ws, &outside, &session] {
            std::fs::create_dir_all(folder).unwrap();
        }
        World {
            workspace: Workspace::open(&ws).unwrap(),
            store: Store::new(&session),
            _dir: dir,
            ws,
            outside,
        }
    }

    fn rewind_to(world: &World, id: u64, seq: u64) -> Applied {
        let to = world
            .store
            .list()
            .unwrap()
            .into_iter()
            .find(|info| info.id == id)
            .unwrap();
        world
            .store
            .rewind(&world.workspace, &Settings::default(), &to, seq)
            .unwrap()
            .applied
    }

    #[test]
    fn a_link_a_command_left_in_place_of_a_folder_carries_no_restore_out() {
        let w = world();
        std::fs::create_dir(w.ws.join("d")).unwrap();
        std::fs::write(w.ws.join("d/e"), "kept\n").unwrap();
        let settings = Settings::default();
        w.store.take(&w.workspace, &settings, 1, "run").unwrap();
        // The command swapped the folder for a link out of the workspace.
        std::fs::remove_dir_all(w.ws.join("d")).unwrap();
        std::os::unix::fs::symlink(&w.outside, w.ws.join("d")).unwrap();
        let applied = rewind_to(&w, 1, 2);
        assert!(applied.failed.is_empty(), "{applied:?}");
        assert_eq!(applied.plan.restore, ["d"]);
        assert_eq!(applied.plan.create, ["d/e"]);
        assert!(std::fs::symlink_metadata(w.ws.join("d")).unwrap().is_dir());
        assert_eq!(std::fs::read_to_string(w.ws.join("d/e")).unwrap(), "kept\n");
        assert!(!w.outside.join("e").exists());
    }

    #[test]
    fn a_file_over_the_limit_is_a_gap_said_once_and_never_deleted() {
        let w = world();
        std::fs::write(w.ws.join("small"), "s\n").unwrap();
        let settings = Settings {
            max_file_bytes: 4,
            ..Settings::default()
        };
        w.store.take(&w.workspace, &settings, 1, "run").unwrap();
        std::fs::write(w.ws.join("big"), "0123456789").unwrap();
        let taken = w.store.take(&w.workspace, &settings, 2, "run").unwrap();
        assert_eq!(taken.gaps.len(), 1, "{taken:?}");
        assert!(taken.gaps[0].1.contains("max_file_mb"), "{taken:?}");
        let again = w.store.take(&w.workspace, &settings, 3, "run").unwrap();
        assert!(again.gaps.is_empty(), "{again:?}");
        let to = w.store.find(1).unwrap();
        let plan = w.store.plan(&w.workspace, &settings, &to).unwrap();
        assert!(plan.delete.is_empty(), "{plan:?}");
        assert_eq!(plan.kept.len(), 1, "{plan:?}");
        assert!(plan.kept[0].1.contains("never deleted"), "{plan:?}");
    }

    #[test]
    fn modes_links_and_emptied_folders_come_back_and_a_fresh_process_reads_the_index() {
        let w = world();
        std::fs::create_dir(w.ws.join("ro")).unwrap();
        std::fs::write(w.ws.join("ro/x"), "x\n").unwrap();
        std::fs::write(w.ws.join("run.sh"), "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(w.ws.join("run.sh"), std::fs::Permissions::from_mode(0o750))
            .unwrap();
        std::os::unix::fs::symlink("run.sh", w.ws.join("link")).unwrap();
        std::fs::set_permissions(w.ws.join("ro"), std::fs::Permissions::from_mode(0o555)).unwrap();
        let settings = Settings::default();
        w.store.take(&w.workspace, &settings, 1, "run").unwrap();
        std::fs::set_permissions(w.ws.join("ro"), std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::remove_dir_all(w.ws.join("ro")).unwrap();
        std::fs::set_permissions(w.ws.join("run.sh"), std::fs::Permissions::from_mode(0o600))
            .unwrap();
        std::fs::remove_file(w.ws.join("link")).unwrap();
        std::fs::write(w.ws.join("link"), "not a link\n").unwrap();
        // Another process: the store is read from disk.
        let session = w.store.dir.parent().unwrap().to_path_buf();
        let w = World {
            store: Store::new(&session),
            ..w
        };
        let applied = rewind_to(&w, 1, 2);
        assert!(applied.failed.is_empty(), "{applied:?}");
        let mode = |path: &str| {
            std::fs::symlink_metadata(w.ws.join(path))
                .unwrap()
                .permissions()
                .mode()
                & 0o7777
        };
        assert_eq!(mode("ro"), 0o555);
        assert_eq!(mode("run.sh"), 0o750);
        assert_eq!(
            std::fs::read_link(w.ws.join("link")).unwrap(),
            Path::new("run.sh")
        );
        assert_eq!(std::fs::read_to_string(w.ws.join("ro/x")).unwrap(), "x\n");
        std::fs::set_permissions(w.ws.join("ro"), std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[test]
    fn old_checkpoints_are_pruned_and_their_objects_go() {
        let w = world();
        let settings = Settings::default();
        std::fs::write(w.ws.join("f"), "old\n").unwrap();
        w.store.take(&w.workspace, &settings, 1, "run").unwrap();
        std::fs::write(w.ws.join("f"), "new\n").unwrap();
        w.store.take(&w.workspace, &settings, 2, "run").unwrap();
        // Make the first checkpoint 40 days old.
        let journal = w.store.journal();
        let text = std::fs::read_to_string(&journal).unwrap();
        let old = (now_secs() - 40 * 86_400).to_string();
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        let mut first: serde_json::Value = serde_json::from_str(&lines[0]).unwrap();
        first["at"] = serde_json::json!(old.parse::<u64>().unwrap());
        lines[0] = first.to_string();
        std::fs::write(&journal, lines.join("\n") + "\n").unwrap();
        let fresh = Store::new(w.store.dir.parent().unwrap());
        std::fs::write(w.ws.join("f"), "newer\n").unwrap();
        fresh.take(&w.workspace, &settings, 3, "run").unwrap();
        let list = fresh.list().unwrap();
        assert_eq!(list.iter().map(|info| info.seq).collect::<Vec<_>>(), [2, 3]);
        assert!(fresh.objects.get(&hash_of(b"old\n")).is_err());
        assert!(fresh.objects.get(&hash_of(b"new\n")).is_ok());
        let to = fresh.find(2).unwrap();
        let rewound = fresh.rewind(&w.workspace, &settings, &to, 4).unwrap();
        assert!(rewound.applied.failed.is_empty());
        assert_eq!(std::fs::read_to_string(w.ws.join("f")).unwrap(), "new\n");
    }
}
