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
mod prune;
mod rewind;
mod scan;
mod state;

use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use globset::{Glob, GlobSet, GlobSetBuilder};
use serde::{Deserialize, Serialize};
use wicket_protocol::limits::{
    CHECKPOINT_KEEP_DAYS, CHECKPOINT_MAX_FILE_BYTES, CHECKPOINT_MAX_FILES,
    CHECKPOINT_MAX_NEW_BYTES, CHECKPOINT_MAX_STORE_BYTES,
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
    /// A journal line or the index could not be encoded (nothing was written).
    #[error("a checkpoint record could not be encoded ({0}); nothing was written")]
    Encode(String),
    /// Even the newest checkpoint alone is past `max_store_mb`: none is kept.
    #[error(
        "the checkpoint store would pass max_store_mb ({0} MB) with this checkpoint alone, so \
         it keeps none; raise [checkpoints] max_store_mb, or add ignore globs, in \
         $WICKET_HOME/config.toml"
    )]
    StoreFull(u64),
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
    /// A checkpoint that is no longer kept.
    #[error(
        "that checkpoint is no longer kept (older than [checkpoints] keep_days, or lost with a damaged journal line); `wicket rewind SESSION --list` shows the ones there are"
    )]
    Gone,
    /// A call's checkpoint was never taken.
    #[error(
        "the checkpoint before event {missed} was not taken (its `checkpoint` event says why), so the files cannot go back to before it; the nearest earlier point is before event {nearest}"
    )]
    Missed {
        /// The call that has none.
        missed: u64,
        /// The nearest checkpoint before it (0: none).
        nearest: u64,
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
    /// The session's objects may take this many bytes; the oldest
    /// checkpoints are pruned to stay below it.
    pub max_store_bytes: u64,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            ignore: GlobSet::empty(),
            ignore_globs: Vec::new(),
            keep_days: CHECKPOINT_KEEP_DAYS,
            max_file_bytes: CHECKPOINT_MAX_FILE_BYTES,
            max_files: CHECKPOINT_MAX_FILES,
            max_store_bytes: CHECKPOINT_MAX_STORE_BYTES,
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
            self.max_store_bytes,
        ) == (
            &other.ignore_globs,
            other.keep_days,
            other.max_file_bytes,
            other.max_files,
            other.max_store_bytes,
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

/// A journal line read back.
struct Record {
    info: Info,
    changes: Vec<state::Decoded>,
    /// The journal's length up to and including this line.
    end: u64,
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
    /// Bytes of the objects, once counted (then kept up to date).
    object_bytes: Option<u64>,
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

/// A file changed within this many seconds of a scan is read again at the
/// next one, whatever its stat says.
const RACY_SECONDS: i64 = 2;

/// A session's checkpoints.
pub struct Store {
    dir: PathBuf,
    /// `$WICKET_HOME`, canonical (found at the first scan): never part of
    /// a checkpoint, even when the workspace holds it.
    home: std::sync::OnceLock<Option<PathBuf>>,
    objects: Objects,
    cache: Mutex<Option<Cache>>,
}

/// A journal line's text, with its newline.
fn line_text(line: &Line) -> Result<String> {
    let mut text = serde_json::to_string(line).map_err(|error| Error::Encode(error.to_string()))?;
    text.push('\n');
    Ok(text)
}

impl Store {
    /// The store of the session whose folder is `session_dir` (in
    /// `$WICKET_HOME/sessions/`; nothing is read or made until it is used).
    pub fn new(session_dir: &Path) -> Store {
        let dir = session_dir.join("checkpoints");
        Store {
            objects: Objects::new(dir.join("objects")),
            dir,
            home: std::sync::OnceLock::new(),
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
        wicket_os::sync::lock(&self.cache)
    }

    /// The journal's lines, oldest first. The journal is cut after the
    /// last line that reads whole: a torn line (a crash, a full disk) or a
    /// damaged one goes, and what follows it too (a delta after a gap
    /// cannot be replayed) — checkpoints are lost, never the store.
    fn records(&self) -> Result<Vec<Record>> {
        let path = self.journal();
        // Never waited on: a FIFO or a link in its place is an error naming it.
        let bytes = match wicket_os::files::read_own(&path, u64::MAX) {
            Ok(Some(bytes)) => bytes,
            Ok(None) => return Ok(Vec::new()),
            Err(error) => return Err(self.io(&path, "read")(error)),
        };
        let mut records = Vec::new();
        let mut end = 0usize;
        for text in bytes.split_inclusive(|byte| *byte == b'\n') {
            let Some(body) = text.strip_suffix(b"\n") else {
                break;
            };
            let Ok(line) = serde_json::from_slice::<Line>(body) else {
                break;
            };
            let Some(changes) = line
                .changes
                .into_iter()
                .map(Change::decode)
                .collect::<Option<Vec<_>>>()
            else {
                break;
            };
            end += text.len();
            records.push(Record {
                info: Info {
                    id: line.id,
                    seq: line.seq,
                    at: line.at,
                    tool: line.tool,
                    changed: changes.len(),
                },
                changes,
                end: end as u64,
            });
        }
        if end < bytes.len() {
            std::fs::OpenOptions::new()
                .write(true)
                .open(&path)
                .and_then(|file| file.set_len(end as u64))
                .map_err(self.io(&path, "written"))?;
        }
        Ok(records)
    }

    /// The state at checkpoint `id`.
    fn state_at(records: &[Record], id: u64) -> Result<State> {
        let mut state = State::new();
        for record in records {
            state::apply(&mut state, &record.changes);
            if record.info.id == id {
                return Ok(state);
            }
        }
        Err(Error::Gone)
    }

    /// Loads the last checkpoint: the index, and the journal's lines after
    /// it replayed on it (a replayed file is read again at the next scan).
    fn load(&self, settings: &Settings) -> Result<Cache> {
        self.prune(settings.keep_days)?;
        let records = self.records()?;
        let journal_len = records.last().map_or(0, |record| record.end);
        let next_id = records.last().map_or(1, |record| record.info.id + 1);
        let index = wicket_os::files::read_own(&self.index(), u64::MAX)
            .ok()
            .flatten()
            .and_then(|bytes| serde_json::from_slice::<Index>(&bytes).ok())
            .filter(|index| {
                index.journal_len == 0
                    || records.iter().any(|record| record.end == index.journal_len)
            });
        let mut journaled = State::new();
        let mut after = 0;
        // Ids never repeat, even after a store emptied to stay below its bound.
        let index_next_id = index.as_ref().map_or(1, |index| index.next_id);
        if let Some(index) = index {
            let decoded: Option<Vec<_>> = index.entries.into_iter().map(Change::decode).collect();
            if let Some(decoded) = decoded {
                state::apply(&mut journaled, &decoded);
                after = index.journal_len;
            }
        }
        for record in records.iter().filter(|record| record.end > after) {
            state::apply(&mut journaled, &record.changes);
        }
        Ok(Cache {
            journaled,
            journal_len,
            next_id: next_id.max(index_next_id),
            object_bytes: None,
        })
    }

    /// Makes the store ready: old checkpoints pruned, the last one loaded.
    pub fn ready(&self, settings: &Settings) -> Result<()> {
        let mut guard = self.lock();
        self.cache(&mut guard, settings).map(drop)
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
        let taken = self.take_in(cache, workspace, settings, seq, tool)?;
        let total = match cache.object_bytes {
            Some(before) => before.saturating_add(taken.new_bytes),
            None => self.objects.bytes(),
        };
        cache.object_bytes = Some(total);
        if total <= settings.max_store_bytes {
            return Ok(taken);
        }
        // The journal changes under the cache: it is read again next time.
        *guard = None;
        self.bound(settings.max_store_bytes)?;
        Ok(taken)
    }

    fn take_in(
        &self,
        cache: &mut Cache,
        workspace: &Workspace,
        settings: &Settings,
        seq: u64,
        tool: &str,
    ) -> Result<Taken> {
        let scanned = self.scan(workspace, settings, &cache.journaled, Keep::Store)?;
        let line = Line {
            id: cache.next_id,
            seq,
            at: now_secs(),
            tool: tool.to_string(),
            changes: state::delta(&cache.journaled, &scanned.state),
        };
        let text = line_text(&line)?;
        let journal = self.journal();
        wicket_os::files::private_dir(&self.dir).map_err(self.io(&self.dir, "written"))?;
        let appended = wicket_os::files::open_private_append(&journal).and_then(|mut file| {
            let written = file.write_all(text.as_bytes());
            if written.is_err() {
                // A part of the line may be there: cut it, or the next line
                // joins it. If the cut fails too, the next load cuts it.
                let _ = file.set_len(cache.journal_len);
            }
            written
        });
        appended.map_err(self.io(&journal, "written"))?;
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
        self.put_index(&Index {
            journal_len: cache.journal_len,
            next_id: cache.next_id,
            entries: cache
                .journaled
                .iter()
                .map(|(path, entry)| Change::of(path, entry, true))
                .collect(),
        })
    }

    /// Replaces `index.json` whole with `index`.
    fn put_index(&self, index: &Index) -> Result<()> {
        let bytes = serde_json::to_vec(index).map_err(|error| Error::Encode(error.to_string()))?;
        let path = self.index();
        wicket_os::files::write_atomically(&path, &bytes, false).map_err(self.io(&path, "written"))
    }

    /// `$WICKET_HOME` as a path below the workspace root, when it is there.
    fn home_below(&self, workspace: &Workspace) -> Option<Vec<u8>> {
        use std::os::unix::ffi::OsStrExt;
        let home = self.home.get_or_init(|| {
            // checkpoints/ → <id>/ → sessions/ → the home.
            let home = self.dir.ancestors().nth(3)?;
            std::fs::canonicalize(home).ok()
        });
        let below = home.as_ref()?.strip_prefix(workspace.root()).ok()?;
        Some(below.as_os_str().as_bytes().to_vec())
    }

    /// Every checkpoint, oldest first.
    pub fn list(&self) -> Result<Vec<Info>> {
        let _guard = self.lock();
        Ok(self
            .records()?
            .into_iter()
            .map(|record| record.info)
            .collect())
    }

    /// The first checkpoint at or after event `seq`: the files as they
    /// were just before that event.
    pub fn find(&self, seq: u64) -> Result<Info> {
        first_at(&self.list()?, seq).cloned()
    }

    /// What a rewind to the checkpoint `to` would change now (nothing is
    /// recorded, stored or changed).
    pub fn plan(&self, workspace: &Workspace, settings: &Settings, to: &Info) -> Result<Plan> {
        let mut guard = self.lock();
        let cache = self.cache(&mut guard, settings)?;
        let then = Self::state_at(&self.records()?, to.id)?;
        let now = self.scan(workspace, settings, &cache.journaled, Keep::HashOnly)?;
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
        let then = Self::state_at(&self.records()?, to.id)?;
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

/// In a list of checkpoints, the first at or after event `seq`.
pub fn first_at(checkpoints: &[Info], seq: u64) -> Result<&Info> {
    checkpoints
        .iter()
        .find(|info| info.seq >= seq)
        .ok_or(Error::NoCheckpoint(seq))
}

/// What a scan does with a changed file's bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Keep {
    /// Stores them (a checkpoint).
    Store,
    /// Only hashes them (a plan: it records nothing, so it stores nothing).
    HashOnly,
}

/// A file larger than this whose blocks on disk are fewer than half its
/// size is sparse, and not copied (its holes would be stored as bytes).
const SPARSE_FROM: u64 = 1024 * 1024;

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

    #[test]
    fn the_store_stays_below_max_store_mb_oldest_first_and_a_checkpoint_past_it_alone_is_a_gap() {
        let w = world();
        let settings = Settings {
            max_store_bytes: 2_500_000,
            ..Settings::default()
        };
        let megabyte = |n: u8| vec![n; 1_000_000];
        for n in 0..4u8 {
            std::fs::write(w.ws.join("f"), megabyte(n)).unwrap();
            w.store
                .take(&w.workspace, &settings, u64::from(n) + 1, "run")
                .unwrap();
            assert!(w.store.object_bytes() <= 2_500_000, "after {n}");
        }
        let seqs: Vec<u64> = w
            .store
            .list()
            .unwrap()
            .iter()
            .map(|info| info.seq)
            .collect();
        assert_eq!(seqs.last(), Some(&4));
        assert!(seqs.len() < 4, "{seqs:?}");
        assert!(w.store.objects.get(&hash_of(&megabyte(0))).is_err());
        // The newest is whole and rewinds.
        std::fs::write(w.ws.join("f"), "changed").unwrap();
        let to = w.store.find(4).unwrap();
        w.store.rewind(&w.workspace, &settings, &to, 5).unwrap();
        assert_eq!(std::fs::read(w.ws.join("f")).unwrap(), megabyte(3));
        // One checkpoint alone past the bound keeps nothing, and says so.
        std::fs::write(w.ws.join("g"), vec![9u8; 3_000_000]).unwrap();
        let full = w.store.take(&w.workspace, &settings, 6, "run");
        assert!(matches!(full, Err(Error::StoreFull(_))), "{full:?}");
        assert_eq!(w.store.object_bytes(), 0);
        assert!(w.store.list().unwrap().is_empty());
        // The next checkpoint starts whole, with an id never used before.
        std::fs::remove_file(w.ws.join("g")).unwrap();
        let taken = w.store.take(&w.workspace, &settings, 7, "run").unwrap();
        assert!(taken.id > to.id + 1, "{taken:?}");
    }

    fn age_journal(store: &Store, days: u64, lines: usize) {
        let journal = store.journal();
        let text = std::fs::read_to_string(&journal).unwrap();
        let old = now_secs() - days * 86_400;
        let aged: Vec<String> = text
            .lines()
            .enumerate()
            .map(|(n, line)| {
                let mut value: serde_json::Value = serde_json::from_str(line).unwrap();
                if n < lines {
                    value["at"] = serde_json::json!(old);
                }
                value.to_string()
            })
            .collect();
        std::fs::write(&journal, aged.join("\n") + "\n").unwrap();
    }

    #[test]
    fn a_rewind_to_a_pruned_checkpoint_is_refused_and_deletes_nothing() {
        let w = world();
        let settings = Settings::default();
        std::fs::write(w.ws.join("f"), "f\n").unwrap();
        w.store.take(&w.workspace, &settings, 1, "run").unwrap();
        let to = w.store.find(1).unwrap();
        age_journal(&w.store, 40, 1);
        let fresh = Store::new(w.store.dir.parent().unwrap());
        let refused = fresh.rewind(&w.workspace, &settings, &to, 2);
        assert!(matches!(refused, Err(Error::Gone)), "{refused:?}");
        assert_eq!(std::fs::read_to_string(w.ws.join("f")).unwrap(), "f\n");
        assert!(matches!(fresh.find(1), Err(Error::NoCheckpoint(1))));
    }

    #[test]
    fn a_damaged_line_loses_that_checkpoint_and_what_follows_not_the_store() {
        let w = world();
        let settings = Settings::default();
        std::fs::write(w.ws.join("f"), "one\n").unwrap();
        w.store.take(&w.workspace, &settings, 1, "run").unwrap();
        let journal = w.store.journal();
        let mut text = std::fs::read_to_string(&journal).unwrap();
        text.push_str("{\"id\": 2, \"seq\": 2, torn\n{\"id\":3}\n");
        std::fs::write(&journal, text).unwrap();
        let fresh = Store::new(w.store.dir.parent().unwrap());
        std::fs::write(w.ws.join("f"), "two\n").unwrap();
        fresh.take(&w.workspace, &settings, 5, "run").unwrap();
        let seqs: Vec<u64> = fresh.list().unwrap().iter().map(|info| info.seq).collect();
        assert_eq!(seqs, [1, 5]);
        let to = fresh.find(1).unwrap();
        let rewound = fresh.rewind(&w.workspace, &settings, &to, 6).unwrap();
        assert!(rewound.applied.failed.is_empty(), "{rewound:?}");
        assert_eq!(std::fs::read_to_string(w.ws.join("f")).unwrap(), "one\n");
    }

    #[test]
    fn a_file_that_is_ignored_now_is_never_written_over() {
        let w = world();
        let settings = Settings::default();
        std::fs::write(w.ws.join("x.log"), "old\n").unwrap();
        w.store.take(&w.workspace, &settings, 1, "run").unwrap();
        // The model hides the file from later checkpoints, then changes it.
        std::fs::write(w.ws.join(".gitignore"), "x.log\n").unwrap();
        std::fs::write(w.ws.join("x.log"), "precious\n").unwrap();
        let applied = rewind_to(&w, 1, 2);
        assert_eq!(
            std::fs::read_to_string(w.ws.join("x.log")).unwrap(),
            "precious\n"
        );
        assert_eq!(applied.failed.len(), 1, "{applied:?}");
        assert!(applied.failed[0].1.contains("left as it is"), "{applied:?}");
        assert!(applied.plan.create.is_empty(), "{applied:?}");
        assert!(!w.ws.join(".gitignore").exists());
    }

    #[test]
    fn wickets_own_home_inside_the_workspace_is_never_checkpointed() {
        let dir = tempfile::tempdir().unwrap();
        let ws = std::fs::canonicalize(dir.path()).unwrap();
        let session = ws.join("home/sessions/s");
        std::fs::create_dir_all(&session).unwrap();
        std::fs::write(session.join("log.jsonl"), "{}\n").unwrap();
        std::fs::write(ws.join("a"), "a\n").unwrap();
        let store = Store::new(&session);
        let workspace = Workspace::open(&ws).unwrap();
        let taken = store
            .take(&workspace, &Settings::default(), 1, "run")
            .unwrap();
        assert_eq!(taken.entries, 1, "{taken:?}");
        let again = store
            .take(&workspace, &Settings::default(), 2, "run")
            .unwrap();
        assert_eq!(again.changed, 0, "{again:?}");
    }

    #[test]
    fn a_plan_stores_nothing() {
        let w = world();
        let settings = Settings::default();
        std::fs::write(w.ws.join("f"), "one\n").unwrap();
        w.store.take(&w.workspace, &settings, 1, "run").unwrap();
        let stored = w.store.object_bytes();
        std::fs::write(w.ws.join("f"), "a change nobody recorded\n").unwrap();
        let to = w.store.find(1).unwrap();
        let plan = w.store.plan(&w.workspace, &settings, &to).unwrap();
        assert_eq!(plan.restore, ["f"]);
        assert_eq!(w.store.object_bytes(), stored);
    }
}
