//! Checkpoints of a session's workspace, and the rewinds that restore them.
//!
//! Before each write and each command the session records what every file,
//! link and folder of the workspace is (`.git` and what the ignore files or
//! `[checkpoints] ignore` skip left out), never in the workspace or its git.
//! The session's own folder holds its journal; the bytes live once per
//! workspace, shared by its sessions:
//!
//! - `$WICKET_HOME/checkpoints/<key>/` (`key` from the workspace's path):
//!   the objects, each distinct content once by its SHA-256, small ones
//!   packed ([`objects`]); `index.json`, the last full scan's entries with
//!   their stat keys, so another session's first checkpoint reads only
//!   what changed since;
//! - `sessions/<id>/checkpoints/journal.jsonl`: one line a checkpoint (`id`,
//!   the log `seq` it comes before, `at`, the tool), holding only the
//!   entries that changed since the one before — the first line holds them
//!   all, in objects of the store when they are many (`base`), so another
//!   session's same tree costs no new bytes; `store` names the workspace's
//!   store, `index.json` the next id.
//!
//! The first checkpoint in a process walks the whole tree and starts the
//! [`tracker`]; the next ones look only at what it heard of since, so their
//! cost follows the change, not the tree. A rewind (and its plan) walks the
//! whole tree again, and a path that changed with nothing heard of it is a
//! *doubt*: the checkpoints taken since the last full walk may not hold its
//! bytes, so a rewind to one of them leaves it as it is and says why,
//! never writing bytes it did not verify.
//!
//! A rewind first records a checkpoint of the workspace as it is (so the
//! rewind can itself be rewound), then writes back, makes and removes what
//! differs from the checkpoint it goes to, through the workspace's no-link
//! path.

mod layer;
mod objects;
mod preview;
mod prune;
mod rewind;
mod scan;
mod state;
mod tracker;

use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, OnceLock};

use globset::{Glob, GlobSet, GlobSetBuilder};
use serde::{Deserialize, Serialize};
use wicket_protocol::limits::{
    CHECKPOINT_KEEP_DAYS, CHECKPOINT_MAX_FILE_BYTES, CHECKPOINT_MAX_FILES,
    CHECKPOINT_MAX_NEW_BYTES, CHECKPOINT_MAX_STORE_BYTES,
};
use wicket_tools::Workspace;
use wicket_tools::tree::{Go, Kind, Met};

pub use layer::on_disk;
use objects::{Objects, hash_of};
pub use preview::{Began, Effected, Preview, SHOWN_BYTES as PREVIEW_SHOWN_BYTES};
pub use rewind::{Applied, Plan, first_at};
use scan::Maker;
use state::{Change, Content, Entry, StatKey, State};
use tracker::Tracker;

/// Which line a checkpoint writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Taking<'a> {
    /// Before a call: what the tracker heard since the last line.
    Before,
    /// Before a call, walking the whole workspace (a rewind's).
    Walked,
    /// After a call: what it left (a write: the path it wrote).
    After(Option<&'a [u8]>),
}

impl Taking<'_> {
    /// The path a write wrote, for its line after.
    fn wrote(self) -> Option<state::Named> {
        match self {
            Taking::After(wrote) => wrote.map(state::Named::of),
            _ => None,
        }
    }
}

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
        "the workspace has more than {0} files (its folders not counted) that are not ignored; add [checkpoints] ignore globs (or raise max_files) in $WICKET_HOME/config.toml"
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
    /// A path a preview changed was changed in the workspace too since it started.
    #[error(
        "{0} changed in the workspace since the preview started, so nothing was applied; run the command again"
    )]
    ChangedSincePreview(String),
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
    /// A call whose changes were not recorded on their own (a journal of
    /// an older Wicket, or a call cut short): a rewind past it could take
    /// back what others did.
    #[error(
        "what the call at event {unknown} changed was not recorded (its checkpoints were made by an older Wicket, or it was cut short), so a rewind past it could take back others' work; nothing was changed; the earliest point that can be rewound to is before event {nearest}"
    )]
    Unattributed {
        /// The call whose changes are not known.
        unknown: u64,
        /// The earliest checkpoint a rewind can go back to (0: none).
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
    /// Entries the call changed, where the session recorded what it left
    /// (`scoped`); else entries that changed since the checkpoint before.
    pub changed: usize,
    /// What the call changed was recorded on its own (a line after it):
    /// a rewind past it takes back only this session's work.
    #[serde(default)]
    pub scoped: bool,
}

impl Info {
    /// What the call changed, as a person reads it: `changed 3 entries`,
    /// or, for a call an older Wicket recorded, what changed since the
    /// checkpoint before it, said so.
    pub fn changed_line(&self) -> String {
        let plural = if self.changed == 1 {
            "entry"
        } else {
            "entries"
        };
        match self.scoped {
            true => format!("changed {} {plural}", self.changed),
            false => format!(
                "{} {plural} changed since the checkpoint before (what the call itself changed was not recorded)",
                self.changed
            ),
        }
    }
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
    /// It walked the whole workspace (the first in a process, a rewind's,
    /// or after the tracker lost count), not only what changed.
    pub whole: bool,
    /// What it newly holds no copy of, and why.
    pub gaps: Vec<(String, String)>,
    /// The doubt its line carries: the paths the checkpoints after `.0`
    /// and before this one may not hold as they were.
    doubt: Option<Doubted>,
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
    /// A line of many changes (a session's first: the whole tree) keeps
    /// them in the store as objects of about [`PIECE`] changes each, cut
    /// where a path says (`Change::ends_piece`), these their hashes: the
    /// same tree in another session is the same objects, and a tree that
    /// differs in one file one new piece. Their changes come before the
    /// line's own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    base: Vec<String>,
    /// Paths a full walk found changed with nothing heard of them: the
    /// checkpoints after `since` and before this one may not hold them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    doubt: Option<Doubt>,
    /// The line after the call `seq` (its `changes`: what the call left),
    /// not a checkpoint before one.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    after: bool,
    /// For the line after a write, the path it wrote: of its `changes`,
    /// only that path and the folders it made for it are the call's (the
    /// others were heard in the same moment, and are someone else's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    wrote: Option<state::Named>,
}

#[derive(Serialize, Deserialize, Clone)]
struct Doubt {
    since: u64,
    paths: Vec<state::Named>,
}

/// A doubt: the last full walk before it, and the paths the checkpoints
/// after that one and before its own line may not hold as they were.
type Doubted = (u64, Vec<Vec<u8>>);

/// A journal line read back.
struct Record {
    info: Info,
    changes: Vec<state::Decoded>,
    /// The objects holding most of its changes.
    base: Vec<state::Hash>,
    /// Paths in doubt in the checkpoints after `.0`, before this one.
    doubt: Option<Doubted>,
    /// The journal's length up to and including this line.
    end: u64,
    /// The line after a call: what it left ([`Line::after`]).
    after: bool,
    /// The line after a write: the path it wrote ([`Line::wrote`]).
    wrote: Option<Vec<u8>>,
}

/// The session's `index.json`: where ids go on (they never repeat, even
/// after a store emptied to stay below its bound). An older Wicket kept
/// the entries here too; they are read from the journal now.
#[derive(Serialize, Deserialize)]
struct Index {
    journal_len: u64,
    next_id: u64,
    #[serde(default)]
    entries: Vec<Change>,
}

/// The workspace's shared `index.json`: the last full walk's entries with
/// their stat keys.
#[derive(Serialize, Deserialize)]
struct Seen {
    entries: Vec<Change>,
}

pub(crate) struct Cache {
    /// The last recorded checkpoint, with its stat keys.
    journaled: State,
    journal_len: u64,
    next_id: u64,
    /// The workspace's shared index, until the first full walk uses it.
    seed: Option<State>,
    /// What changed since the last checkpoint, while it can be trusted.
    tracker: Option<Tracker>,
    /// A full walk made ahead of the first checkpoint ([`Store::warm`]),
    /// with the tracker started at it: that checkpoint walks only what
    /// was heard since. The store is held meanwhile, so no sweep removes
    /// an object it names before a journal line does.
    warm: Option<(State, objects::Held)>,
    /// The last checkpoint a full walk took in this process, and whether
    /// tracked ones came after it.
    walked: Option<u64>,
    tracked_since: bool,
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
    /// The session's `checkpoints/`.
    dir: PathBuf,
    /// `$WICKET_HOME/checkpoints`, where each workspace's store is.
    shared: PathBuf,
    /// `$WICKET_HOME`, canonical (found at the first scan): never part of
    /// a checkpoint, even when the workspace holds it.
    home: OnceLock<Option<PathBuf>>,
    objects: OnceLock<Objects>,
    cache: Mutex<Option<Cache>>,
    /// The full walk in progress, read without the cache's lock.
    walk: Walk,
}

/// How far a full walk of the workspace has got.
#[derive(Debug, Default)]
struct Walk {
    running: std::sync::atomic::AtomicBool,
    /// Entries met so far (told every thousand or so).
    met: std::sync::atomic::AtomicU64,
}

/// A journal line's text, with its newline.
/// A line of at least this many changes keeps them as objects of the
/// store (`Line::base`).
const BASE_FROM: usize = 1024;

/// About how many changes one base object holds.
const PIECE: u64 = 512;

/// `line` as a journal line, with its newline: its changes moved into
/// objects of `objects` (stored, and written, before the line names them)
/// when there are [`BASE_FROM`] or more.
fn line_text(mut line: Line, objects: Option<&Objects>) -> Result<String> {
    if let Some(objects) = objects.filter(|_| line.changes.len() >= BASE_FROM) {
        let written = |source| Error::Io {
            path: objects.dir().to_path_buf(),
            what: "written",
            source,
        };
        let mut pieces = Vec::new();
        let mut piece = Vec::new();
        for change in std::mem::take(&mut line.changes) {
            let ends = change.ends_piece(PIECE);
            piece.push(change);
            if ends {
                pieces.push(std::mem::take(&mut piece));
            }
        }
        pieces.push(piece);
        for piece in pieces.iter().filter(|piece| !piece.is_empty()) {
            let bytes =
                serde_json::to_vec(piece).map_err(|error| Error::Encode(error.to_string()))?;
            let hash = hash_of(&bytes);
            objects.put(&hash, &bytes).map_err(written)?;
            line.base.push(hex::encode(hash));
        }
        objects.flush().map_err(written)?;
    }
    let mut text =
        serde_json::to_string(&line).map_err(|error| Error::Encode(error.to_string()))?;
    text.push('\n');
    Ok(text)
}

/// The changes of a line's `base` object: `None` when it is not in the
/// store or does not read as changes.
fn base_changes(objects: Option<&Objects>, base: &str) -> Option<(state::Hash, Vec<Change>)> {
    let hash: state::Hash = hex::decode(base).ok()?.try_into().ok()?;
    let bytes = objects?.get(&hash).ok()?;
    Some((hash, serde_json::from_slice(&bytes).ok()?))
}

/// The journal lines in `bytes`, up to the last that reads whole: a torn
/// line (a crash, a full disk) or a damaged one ends them, since a delta
/// after a gap cannot be replayed; so does one whose `base` the store
/// (`objects`) does not hold whole. The second value says whether the
/// journal may be cut where the lines end: not when no store was open to
/// read a base from.
fn parse_records(bytes: &[u8], objects: Option<&Objects>) -> (Vec<Record>, bool) {
    let mut records = Vec::new();
    let mut end = 0usize;
    for text in bytes.split_inclusive(|byte| *byte == b'\n') {
        let Some(body) = text.strip_suffix(b"\n") else {
            break;
        };
        let Ok(line) = serde_json::from_slice::<Line>(body) else {
            break;
        };
        let mut base = Vec::with_capacity(line.base.len());
        let mut all = Vec::new();
        for piece in &line.base {
            let Some((hash, changes)) = base_changes(objects, piece) else {
                return (records, objects.is_some());
            };
            base.push(hash);
            all.extend(changes);
        }
        all.extend(line.changes);
        let Some(changes) = all
            .into_iter()
            .map(Change::decode)
            .collect::<Option<Vec<_>>>()
        else {
            break;
        };
        let doubt = line.doubt.map(|doubt| {
            let paths = doubt
                .paths
                .into_iter()
                .filter_map(state::Named::decode)
                .collect();
            (doubt.since, paths)
        });
        end += text.len();
        records.push(Record {
            info: Info {
                id: line.id,
                seq: line.seq,
                at: line.at,
                tool: line.tool,
                changed: changes.len(),
                scoped: false,
            },
            changes,
            base,
            doubt,
            end: end as u64,
            after: line.after,
            wrote: line.wrote.and_then(state::Named::decode),
        });
    }
    (records, true)
}

/// The workspace store's name for the workspace at `root`.
fn store_key(root: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    hex::encode(&hash_of(root.as_os_str().as_bytes())[..16])
}

impl Store {
    /// The store of the session whose folder is `session_dir` (in
    /// `$WICKET_HOME/sessions/`), its objects under `shared`
    /// (`$WICKET_HOME/checkpoints`); nothing is read or made until it is used.
    pub fn new(session_dir: &Path, shared: &Path) -> Store {
        Store {
            dir: session_dir.join("checkpoints"),
            shared: shared.to_path_buf(),
            home: OnceLock::new(),
            objects: OnceLock::new(),
            cache: Mutex::new(None),
            walk: Walk::default(),
        }
    }

    /// While a full walk of the workspace runs (the first checkpoint in
    /// this process, or one after the tracker lost count): how many
    /// entries it has met so far. Read without waiting for the walk.
    pub fn walking(&self) -> Option<u64> {
        use std::sync::atomic::Ordering;
        self.walk
            .running
            .load(Ordering::Relaxed)
            .then(|| self.walk.met.load(Ordering::Relaxed))
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

    /// The session's objects of before stores were shared, when it has some.
    fn legacy(&self) -> Option<PathBuf> {
        let legacy = self.dir.join("objects");
        legacy.is_dir().then_some(legacy)
    }

    /// The workspace store this session names (`store`), if it names one yet.
    fn named_key(&self) -> Option<String> {
        let bytes = wicket_os::files::read_own(&self.dir.join("store"), 256).ok()??;
        let key = String::from_utf8(bytes).ok()?.trim().to_string();
        (key.len() == 32 && key.bytes().all(|byte| byte.is_ascii_hexdigit())).then_some(key)
    }

    /// The objects: the workspace's store, named in `store` (written here
    /// the first time, from `workspace`). `None` when neither says which.
    fn objects(&self, workspace: Option<&Workspace>) -> Result<Option<&Objects>> {
        if let Some(objects) = self.objects.get() {
            return Ok(Some(objects));
        }
        let key = match (self.named_key(), workspace) {
            (Some(key), _) => key,
            (None, Some(workspace)) => {
                let key = store_key(workspace.root());
                let store = self.shared.join(&key);
                wicket_os::files::private_dir(&store).map_err(self.io(&store, "written"))?;
                let named = store.join("workspace");
                let root = workspace.root().to_string_lossy().into_owned() + "\n";
                wicket_os::files::write_atomically(&named, root.as_bytes(), false)
                    .map_err(self.io(&named, "written"))?;
                wicket_os::files::private_dir(&self.dir).map_err(self.io(&self.dir, "written"))?;
                let path = self.dir.join("store");
                wicket_os::files::write_atomically(&path, format!("{key}\n").as_bytes(), false)
                    .map_err(self.io(&path, "written"))?;
                key
            }
            (None, None) => return Ok(None),
        };
        let objects = Objects::new(self.shared.join(key), self.legacy());
        Ok(Some(self.objects.get_or_init(|| objects)))
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
        let (records, cut) = parse_records(&bytes, self.objects(None)?);
        let end = records.last().map_or(0, |record| record.end);
        if cut && end < bytes.len() as u64 {
            std::fs::OpenOptions::new()
                .write(true)
                .open(&path)
                .and_then(|file| file.set_len(end))
                .map_err(self.io(&path, "written"))?;
        }
        Ok(records)
    }

    /// The workspace's shared index, when there is one that reads whole.
    fn seen(&self) -> Option<State> {
        let objects = self.objects.get()?;
        let bytes =
            wicket_os::files::read_own(&objects.dir().join("index.json"), u64::MAX).ok()??;
        let seen: Seen = serde_json::from_slice(&bytes).ok()?;
        let decoded: Vec<state::Decoded> = seen
            .entries
            .into_iter()
            .map(Change::decode)
            .collect::<Option<_>>()?;
        let mut state = State::new();
        state::apply(&mut state, &decoded);
        Some(state)
    }

    /// Loads the last checkpoint: the journal replayed, and the stat keys
    /// of the workspace's shared index where they name the same content.
    fn load(&self, settings: &Settings) -> Result<Cache> {
        self.prune(settings.keep_days)?;
        let records = self.records()?;
        let journal_len = records.last().map_or(0, |record| record.end);
        let next_id = records.last().map_or(1, |record| record.info.id + 1);
        let index_next_id = wicket_os::files::read_own(&self.index(), u64::MAX)
            .ok()
            .flatten()
            .and_then(|bytes| serde_json::from_slice::<Index>(&bytes).ok())
            .map_or(1, |index| index.next_id);
        let mut journaled = State::new();
        for record in &records {
            state::apply(&mut journaled, &record.changes);
        }
        let seed = self.seen();
        if let Some(seed) = &seed {
            for (path, entry) in journaled.iter_mut() {
                if let Some(seen) = seed.get(path)
                    && seen.content == entry.content
                    && seen.mode == entry.mode
                {
                    entry.key = seen.key;
                }
            }
        }
        Ok(Cache {
            journaled,
            journal_len,
            next_id: next_id.max(index_next_id),
            seed,
            tracker: None,
            warm: None,
            walked: None,
            tracked_since: false,
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
            self.objects(None)?;
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
        self.take_with(workspace, settings, seq, tool, Taking::Before)
    }

    /// Records what the call at event `seq` left (a line after it): what
    /// changed since its checkpoint, from what the tracker heard. A rewind
    /// takes back only what these lines say this session's calls did: of
    /// a write's (`wrote`: the path it wrote, below the workspace), that
    /// path and the folders made for it alone.
    pub fn take_after(
        &self,
        workspace: &Workspace,
        settings: &Settings,
        seq: u64,
        tool: &str,
        wrote: Option<&[u8]>,
    ) -> Result<Taken> {
        self.take_with(workspace, settings, seq, tool, Taking::After(wrote))
    }

    /// Records a checkpoint as [`Store::take`] does, but walking the whole
    /// workspace whatever the tracker heard (as a rewind does first).
    pub fn take_walked(
        &self,
        workspace: &Workspace,
        settings: &Settings,
        seq: u64,
        tool: &str,
    ) -> Result<Taken> {
        self.take_with(workspace, settings, seq, tool, Taking::Walked)
    }

    fn take_with(
        &self,
        workspace: &Workspace,
        settings: &Settings,
        seq: u64,
        tool: &str,
        taking: Taking,
    ) -> Result<Taken> {
        let mut guard = self.lock();
        let cache = self.cache(&mut guard, settings)?;
        let taken = self.take_in(cache, workspace, settings, seq, tool, taking);
        if taken.is_err() {
            // What is in memory may be ahead of the journal: read again next time.
            *guard = None;
        }
        let taken = taken?;
        if self.object_bytes() <= settings.max_store_bytes {
            return Ok(taken);
        }
        // The journal changes under the cache: it is read again next time.
        *guard = None;
        self.bound(settings.max_store_bytes)?;
        Ok(taken)
    }

    /// Walks the whole workspace ahead of the first checkpoint in this
    /// process (storing what it reads, starting the tracker), so that
    /// checkpoint, when a write or command comes, walks only what changed
    /// since: a large workspace is read while the model thinks. Nothing
    /// when a walk was made already, or the workspace gives no tracker.
    pub fn warm(&self, workspace: &Workspace, settings: &Settings) -> Result<()> {
        let mut guard = self.lock();
        let cache = self.cache(&mut guard, settings)?;
        if cache.tracker.is_some() {
            return Ok(());
        }
        let Some(mut tracker) = Tracker::new(workspace.root_fd()) else {
            return Ok(());
        };
        let home = self.home_below(workspace);
        let mut maker = self.maker(workspace, settings)?;
        maker.home = home.as_deref();
        let Some(objects) = maker.objects else {
            return Ok(());
        };
        let held = objects.hold().map_err(self.io(objects.dir(), "read"))?;
        let scanned = self.scan_full(
            workspace,
            &maker,
            &cache.journaled,
            cache.seed.as_ref(),
            Some(&mut tracker),
        )?;
        objects.flush().map_err(self.io(objects.dir(), "written"))?;
        let keys_changed = scanned.keys_changed;
        let state = scanned.state(&cache.journaled);
        if keys_changed {
            self.put_seen(&state)?;
        }
        cache.seed = None;
        cache.warm = Some((state, held));
        cache.tracker = Some(tracker);
        Ok(())
    }

    fn maker<'m>(&'m self, workspace: &Workspace, settings: &'m Settings) -> Result<Maker<'m>> {
        Ok(Maker {
            objects: self.objects(Some(workspace))?,
            settings,
            keep: Keep::Store,
            home: None,
            started: now_secs() as i64,
            new_bytes: 0.into(),
            gaps: Mutex::default(),
        })
    }

    /// Takes a checkpoint: a walk of what the tracker heard, or (`whole`,
    /// the first in this process, or a tracker that lost count) of
    /// everything; then its journal line.
    fn take_in(
        &self,
        cache: &mut Cache,
        workspace: &Workspace,
        settings: &Settings,
        seq: u64,
        tool: &str,
        taking: Taking,
    ) -> Result<Taken> {
        let whole = taking == Taking::Walked;
        let home = self.home_below(workspace);
        let mut maker = self.maker(workspace, settings)?;
        maker.home = home.as_deref();
        let objects = maker.objects;
        let _held = match objects {
            Some(objects) => Some(objects.hold().map_err(self.io(objects.dir(), "read"))?),
            None => None,
        };
        let heard = cache.tracker.as_mut().map(Tracker::drain);
        let mut tracked = None;
        let warm = cache.warm.take();
        if let (false, Some(tracker), Some(heard)) = (whole, cache.tracker.as_mut(), &heard)
            && !heard.lost
        {
            tracked = match warm {
                // What the walk ahead found, and what changed since: the whole state, as a delta.
                Some((mut state, _warm_held)) => self
                    .scan_heard(workspace, &mut maker, &mut state, tracker, heard)?
                    .map(|_| {
                        let changes = state::delta(&cache.journaled, &state);
                        maker.gaps = scan::gaps_between(&cache.journaled, &state).into();
                        cache.journaled = state;
                        // This one is tracked too: a doubt found later covers it.
                        cache.walked = Some(cache.next_id - 1);
                        changes
                    }),
                None => {
                    self.scan_heard(workspace, &mut maker, &mut cache.journaled, tracker, heard)?
                }
            };
        }
        let whole = tracked.is_none();
        let (changes, doubt, entries) = match tracked {
            Some(changes) => {
                cache.tracked_since = true;
                (changes, None, cache.journaled.len())
            }
            None => self.walk_whole(cache, workspace, &mut maker, heard.as_ref())?,
        };
        if let Some(objects) = objects {
            objects.flush().map_err(self.io(objects.dir(), "written"))?;
        }
        let line = Line {
            id: cache.next_id,
            seq,
            at: now_secs(),
            tool: tool.to_string(),
            changes,
            base: Vec::new(),
            doubt: doubt.as_ref().map(|(since, paths)| Doubt {
                since: *since,
                paths: paths.iter().map(|path| state::Named::of(path)).collect(),
            }),
            after: matches!(taking, Taking::After(_)),
            wrote: taking.wrote(),
        };
        let (id, changed) = (line.id, line.changes.len());
        self.append(cache, line)?;
        Ok(Taken {
            id,
            entries,
            changed,
            new_bytes: maker.new_bytes.load(std::sync::atomic::Ordering::Relaxed),
            gaps: maker.gaps(),
            whole,
            doubt,
        })
    }

    /// The full walk of a checkpoint: a new state (and a new tracker) in
    /// the cache, the changes since the last one, and the doubts of a
    /// drain (`heard`) that lost nothing yet did not name a change found.
    fn walk_whole(
        &self,
        cache: &mut Cache,
        workspace: &Workspace,
        maker: &mut Maker<'_>,
        heard: Option<&tracker::Heard>,
    ) -> Result<(Vec<Change>, Option<Doubted>, usize)> {
        let mut tracker = Tracker::new(workspace.root_fd());
        let scanned = self.scan_full(
            workspace,
            maker,
            &cache.journaled,
            cache.seed.as_ref(),
            tracker.as_mut(),
        )?;
        let doubt = match (heard, cache.walked, &cache.tracker) {
            (Some(heard), Some(since), Some(old)) if !heard.lost && cache.tracked_since => {
                let missed = scan::unheard(&cache.journaled, &scanned, &heard.paths, old);
                (!missed.is_empty()).then_some((since, missed))
            }
            _ => None,
        };
        let changes = scanned.changes(&cache.journaled);
        let (entries, keys_changed) = (scanned.entries, scanned.keys_changed);
        scanned.apply(&mut cache.journaled);
        // A changed or new file has a new key too.
        if keys_changed {
            self.put_seen(&cache.journaled)?;
        }
        cache.seed = None;
        cache.tracker = tracker;
        cache.walked = Some(cache.next_id);
        cache.tracked_since = false;
        Ok((changes, doubt, entries))
    }

    /// Appends `line` to the journal.
    fn append(&self, cache: &mut Cache, line: Line) -> Result<()> {
        let text = line_text(line, self.objects.get())?;
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
        cache.journal_len += text.len() as u64;
        cache.next_id += 1;
        Ok(())
    }

    /// Replaces the workspace's shared index with `state` and its keys.
    fn put_seen(&self, state: &State) -> Result<()> {
        let Some(objects) = self.objects.get() else {
            return Ok(());
        };
        let seen = Seen {
            entries: state
                .iter()
                .map(|(path, entry)| Change::of(path, entry, true))
                .collect(),
        };
        let bytes = serde_json::to_vec(&seen).map_err(|error| Error::Encode(error.to_string()))?;
        let path = objects.dir().join("index.json");
        wicket_os::files::write_atomically(&path, &bytes, false).map_err(self.io(&path, "written"))
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

    /// Drops what the tracker heard since the last checkpoint: a change it
    /// missed, for the tests.
    #[cfg(test)]
    fn forget_heard(&self) {
        if let Some(Some(tracker)) = self.lock().as_mut().map(|cache| cache.tracker.as_mut()) {
            tracker.drain();
        }
    }

    /// Bytes of the pieces this session's journal names for its listings
    /// of the whole tree (`base`): objects of the workspace's store beside
    /// the files' copies.
    pub fn listing_bytes(&self) -> Result<u64> {
        let records = self.records()?;
        let Some(objects) = self.objects(None)? else {
            return Ok(0);
        };
        let mut bytes = 0;
        for hash in records.iter().flat_map(|record| &record.base) {
            let piece = objects.get(hash).map_err(self.io(objects.dir(), "read"))?;
            bytes += piece.len() as u64;
        }
        Ok(bytes)
    }

    /// Bytes of the workspace's store.
    pub fn object_bytes(&self) -> u64 {
        self.objects.get().map_or(0, Objects::bytes)
    }
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
mod tests;
#[cfg(test)]
mod tests_scale;
