//! The walks of a checkpoint. A full scan compares every entry with the
//! last checkpoint by its stat key, and reads, hashes and stores what
//! changed; it gives only what differs (an unchanged tree allocates
//! nothing per entry, and no new state is sorted), and it also
//! (re)starts the tracker. A tracked checkpoint looks
//! only at the paths the tracker heard of since the last one, and changes
//! the last state in place.

use std::collections::{BTreeMap, BTreeSet};
use std::os::fd::BorrowedFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

use wicket_tools::tree::{Found, Visitor};

use super::*;
use crate::objects::Objects;
use crate::tracker::{Heard, Tracker, Watcher, within};

/// A file's bytes for its copy, or why it gets none: past `max_file_mb`,
/// sparse (a large file mostly holes), or unreadable.
fn file_bytes(found: &Found<'_>, settings: &Settings) -> std::result::Result<Vec<u8>, String> {
    let size = found.stat.st_size as u64;
    if size > settings.max_file_bytes {
        return Err(format!(
            "no copy: it is {}, over [checkpoints] max_file_mb ({})",
            mib(size),
            mib(settings.max_file_bytes)
        ));
    }
    let on_disk = (found.stat.st_blocks as u64).saturating_mul(512);
    if size > SPARSE_FROM && on_disk < size / 2 {
        return Err(format!(
            "no copy: it is sparse ({} written of {})",
            mib(on_disk),
            mib(size)
        ));
    }
    found
        .read(settings.max_file_bytes)
        .map(|(bytes, _)| bytes)
        .map_err(|error| format!("no copy: it could not be read: {error}"))
}

/// The entry of what could not be read: no copy, and why.
fn unreadable(error: &std::io::Error) -> Entry {
    Entry {
        content: Content::Missed(format!("no copy: it could not be read: {error}")),
        mode: 0,
        key: StatKey::default(),
    }
}

/// The gap `entry` adds to this checkpoint's list (its path shown, and
/// why it has no copy), unless it was missed the same way `before`.
fn new_gap(before: Option<&Entry>, path: &[u8], entry: &Entry) -> Option<(String, String)> {
    let Content::Missed(why) = &entry.content else {
        return None;
    };
    let known = before.is_some_and(|before| before.content == entry.content);
    (!known).then(|| (wicket_tools::tree::shown(path), why.clone()))
}

/// What one walk needs to make an entry of what it finds.
pub(crate) struct Maker<'a> {
    pub objects: Option<&'a Objects>,
    pub settings: &'a Settings,
    pub keep: Keep,
    /// `$WICKET_HOME` below the root, when it is there: never walked.
    pub home: Option<&'a [u8]>,
    /// When the walk started (seconds): what changed in the last tick is read again next time.
    pub started: i64,
    /// What this checkpoint stored so far (its walkers add to it).
    pub new_bytes: AtomicU64,
    pub gaps: Mutex<Vec<(String, String)>>,
}

impl Maker<'_> {
    /// Whether the walk leaves `path` out: `$WICKET_HOME` inside the
    /// workspace, or what `[checkpoints] ignore` names.
    fn skipped(&self, path: &[u8]) -> bool {
        self.home == Some(path)
            || (!self.settings.ignore.is_empty()
                && self.settings.ignore.is_match(Path::new(
                    <std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(path),
                )))
    }

    /// The entry of `found`: `before`'s content when its stat key is the
    /// same, else read, hashed and stored.
    fn entry(&self, found: &Found<'_>, before: Option<&Entry>) -> Entry {
        let key = StatKey::of(found.stat);
        let mode = found.stat.st_mode & 0o7777;
        let kept = before.filter(|before| before.key == key && before.kind() == Some(found.kind));
        let content = match (kept, found.kind) {
            (Some(before), _) => before.content.clone(),
            (None, Kind::Dir) => Content::Dir,
            (None, Kind::File) => {
                let settings = self.settings;
                self.copy(|| file_bytes(found, settings), Content::File)
            }
            (None, Kind::Link) => self.copy(
                || {
                    found
                        .link_target()
                        .map_err(|error| format!("no copy: the link could not be read: {error}"))
                },
                Content::Link,
            ),
        };
        // A file changed in the last tick may change again unseen: read it next time.
        let key = match found.kind != Kind::Dir && key.racy(self.started, RACY_SECONDS) {
            true => StatKey::default(),
            false => key,
        };
        let entry = Entry { content, mode, key };
        if let Some(gap) = new_gap(before, found.path, &entry) {
            self.gap(gap);
        }
        entry
    }

    /// The paths this checkpoint holds no copy of, by path.
    pub(crate) fn gaps(self) -> Vec<(String, String)> {
        let mut gaps = self
            .gaps
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner);
        gaps.sort();
        gaps
    }

    /// Adds a path with no copy to this checkpoint's list.
    fn gap(&self, gap: (String, String)) {
        self.gaps
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(gap);
    }

    /// Reads an entry's bytes and stores them; a read that fails (or a
    /// file too big, or past what one checkpoint may store) is an entry
    /// with no copy.
    fn copy(
        &self,
        read: impl FnOnce() -> std::result::Result<Vec<u8>, String>,
        content: fn(state::Hash) -> Content,
    ) -> Content {
        if self.new_bytes.load(Ordering::Relaxed) >= CHECKPOINT_MAX_NEW_BYTES {
            return Content::Missed(format!(
                "no copy: this checkpoint already stored {} of new copies (the most one may)",
                mib(CHECKPOINT_MAX_NEW_BYTES)
            ));
        }
        let bytes = match read() {
            Ok(bytes) if bytes.len() as u64 > self.settings.max_file_bytes => {
                return Content::Missed(format!(
                    "no copy: it grew past [checkpoints] max_file_mb ({}) while it was read",
                    mib(self.settings.max_file_bytes)
                ));
            }
            Ok(bytes) => bytes,
            Err(why) => return Content::Missed(why),
        };
        let hash = hash_of(&bytes);
        let Some(objects) = self.objects.filter(|_| self.keep == Keep::Store) else {
            return content(hash);
        };
        match objects.put(&hash, &bytes) {
            Ok(true) => {
                self.new_bytes
                    .fetch_add(bytes.len() as u64, Ordering::Relaxed);
            }
            Ok(false) => {}
            Err(error) => {
                return Content::Missed(format!(
                    "no copy: the store could not be written: {error}"
                ));
            }
        }
        content(hash)
    }
}

/// One walker of a full scan: what differs from the last state, of the
/// entries it meets.
struct Full<'a, 'l, 'm> {
    maker: &'a Maker<'m>,
    last: &'l State,
    /// Stat keys other sessions saw, for what `last` does not hold: used
    /// only when the store still holds the content they name.
    seed: Option<&'l State>,
    /// The entries met that are new or not as `last` has them (their key
    /// included), in the walk's order (sorted once at the end).
    changed: Vec<(Vec<u8>, Entry)>,
    /// The paths of `last` met (its own keys: no copy), to find what is
    /// gone when not all of them were met.
    matched: Vec<&'l Vec<u8>>,
    /// How many entries this walker met.
    met: usize,
    keys_changed: bool,
    watcher: Option<Watcher<'a>>,
    failure: Option<Error>,
    /// How many entries the walkers have met, told every [`PROGRESS_EVERY`].
    progress: &'a AtomicU64,
    /// Met by this walker and not yet told.
    untold: u64,
    /// How many files (not folders) the walkers have met, told with `progress`:
    /// `max_files` counts these.
    files: &'a AtomicU64,
    /// Files met by this walker and not yet told.
    files_untold: u64,
}

/// A full walk tells how far it got once per this many entries.
const PROGRESS_EVERY: u64 = 1024;

/// At most this many walkers share a full scan (git's preload uses up to 20).
const MAX_WALKERS: usize = 8;

impl<'l> Full<'_, 'l, '_> {
    /// What `path` was: `last`'s entry (and its key), or a seeded one.
    fn before(&self, path: &[u8]) -> Option<(Option<&'l Vec<u8>>, &'l Entry)> {
        if let Some((key, before)) = self.last.get_key_value(path) {
            return Some((Some(key), before));
        }
        let seeded = self.seed?.get(path)?;
        let stored = match &seeded.content {
            Content::File(hash) | Content::Link(hash) => {
                self.maker.objects.is_some_and(|objects| objects.has(hash))
            }
            Content::Dir => true,
            Content::Missed(_) => false,
        };
        stored.then_some((None, seeded))
    }

    /// Keeps what the walk found at `path`, when it is not what `last` had.
    fn found(
        &mut self,
        path: &[u8],
        before: Option<(Option<&'l Vec<u8>>, &'l Entry)>,
        entry: Entry,
    ) {
        self.met += 1;
        if let Some((Some(key), was)) = before {
            self.matched.push(key);
            if *was == entry {
                return;
            }
        }
        self.changed.push((path.to_vec(), entry));
    }

    /// Tells the walk's count what this walker met since it last told.
    fn tell(&mut self) {
        self.progress.fetch_add(self.untold, Ordering::Relaxed);
        self.files.fetch_add(self.files_untold, Ordering::Relaxed);
        self.untold = 0;
        self.files_untold = 0;
    }
}

impl Visitor for Full<'_, '_, '_> {
    fn skip(&self, path: &[u8], _is_dir: bool) -> bool {
        self.maker.skipped(path)
    }

    fn visit(&mut self, met: Met<'_>) -> Go {
        // What every walker told, and this one's own: one more than the most is too many.
        let is_file = !matches!(&met, Met::Entry(found) if found.kind == Kind::Dir);
        if is_file {
            let max_files = self.maker.settings.max_files as u64;
            if self.files.load(Ordering::Relaxed) + self.files_untold >= max_files {
                self.failure = Some(Error::TooManyFiles(self.maker.settings.max_files));
                return Go::Stop;
            }
            self.files_untold += 1;
        }
        match met {
            Met::Entry(found) => {
                let before = self.before(found.path);
                let was = before.map(|(_, was)| was);
                let entry = self.maker.entry(&found, was);
                self.keys_changed |= was.is_none_or(|was| was.key != entry.key);
                self.found(found.path, before, entry);
            }
            Met::Unreadable { path, error } => {
                let entry = unreadable(&error);
                let before = self.last.get_key_value(path);
                if let Some(gap) = new_gap(before.map(|(_, was)| was), path, &entry) {
                    self.maker.gap(gap);
                }
                let before = before.map(|(key, was)| (Some(key), was));
                self.found(path, before, entry);
            }
        }
        self.untold += 1;
        if self.untold == PROGRESS_EVERY {
            self.tell();
        }
        Go::On
    }

    fn entered(&mut self, path: &[u8], dir: BorrowedFd<'_>) {
        if let Some(watcher) = self.watcher.as_mut() {
            watcher.watch(path, dir);
        }
    }
}

/// What a full scan found, as what differs from the state it was made
/// against (`last`): a walk of an unchanged tree makes nothing new.
pub(crate) struct Scanned {
    /// The entries new or not as `last` has them (their key included), by path.
    pub changed: Vec<(Vec<u8>, Entry)>,
    /// The paths of `last` the walk did not meet, by path.
    pub removed: Vec<Vec<u8>>,
    /// How many entries the walk met.
    pub entries: usize,
    pub keys_changed: bool,
}

impl Scanned {
    /// The entry the walk found at `path` (`last`'s, when it differs in nothing).
    fn get<'s>(&'s self, last: &'s State, path: &[u8]) -> Option<&'s Entry> {
        if let Ok(at) = self
            .changed
            .binary_search_by(|(changed, _)| changed.as_slice().cmp(path))
        {
            return Some(&self.changed[at].1);
        }
        if self
            .removed
            .binary_search_by(|gone| gone.as_slice().cmp(path))
            .is_ok()
        {
            return None;
        }
        last.get(path)
    }

    /// The paths whose content or mode is not as in `last`, or that came or went.
    fn differing<'s>(&'s self, last: &'s State) -> impl Iterator<Item = &'s Vec<u8>> {
        let changed = self.changed.iter().filter(|(path, entry)| {
            last.get(path)
                .is_none_or(|was| was.content != entry.content || was.mode != entry.mode)
        });
        changed.map(|(path, _)| path).chain(&self.removed)
    }

    /// What changed from `last`, as journal changes in path order (as
    /// [`state::delta`] gives them: a new stat key alone is no change).
    pub(crate) fn changes(&self, last: &State) -> Vec<Change> {
        let mut changes = Vec::new();
        let mut gone = self.removed.iter().peekable();
        for (path, entry) in &self.changed {
            while let Some(gone) = gone.next_if(|gone| *gone < path) {
                changes.push(Change::gone(gone));
            }
            match last.get(path) {
                Some(was) if was.content == entry.content && was.mode == entry.mode => {}
                _ => changes.push(Change::of(path, entry, false)),
            }
        }
        changes.extend(gone.map(|gone| Change::gone(gone)));
        changes
    }

    /// Makes `state` (the `last` it was made against) what the walk found.
    pub(crate) fn apply(self, state: &mut State) {
        for path in &self.removed {
            state.remove(path);
        }
        state.extend(self.changed);
    }

    /// What the walk found, as a state of its own (`last` copied).
    pub(crate) fn state(self, last: &State) -> State {
        let mut state = last.clone();
        self.apply(&mut state);
        state
    }
}

/// One path the tracker heard of, walked again into the last state.
struct Tracked<'a, 'm> {
    maker: &'a Maker<'m>,
    state: &'a mut State,
    /// What each path touched was before (first touch only).
    touched: &'a mut BTreeMap<Vec<u8>, Option<Entry>>,
    tracker: &'a mut Tracker,
    target: &'a [u8],
    found: bool,
    /// The target is a folder walked whole: what was heard below it is covered.
    whole: bool,
    failure: Option<Error>,
}

/// Removes `path` and all below it from `state`, keeping what each was.
pub(crate) fn remove_below(
    state: &mut State,
    touched: &mut BTreeMap<Vec<u8>, Option<Entry>>,
    path: &[u8],
    with_itself: bool,
) {
    let below: Vec<Vec<u8>> = state
        .range(path.to_vec()..)
        .take_while(|(key, _)| key.starts_with(path))
        .filter(|(key, _)| within(key, path) && (with_itself || key.len() > path.len()))
        .map(|(key, _)| key.clone())
        .collect();
    for key in below {
        let old = state.remove(&key);
        touched.entry(key).or_insert(old);
    }
}

impl Tracked<'_, '_> {
    fn put(&mut self, path: &[u8], entry: Entry) {
        let old = self.state.insert(path.to_vec(), entry);
        self.touched.entry(path.to_vec()).or_insert(old);
    }
}

impl Visitor for Tracked<'_, '_> {
    fn skip(&self, path: &[u8], _is_dir: bool) -> bool {
        self.maker.skipped(path)
    }

    fn visit(&mut self, met: Met<'_>) -> Go {
        // A file the state does not hold yet, when it holds the most
        // already: its entries less its folders (each watched).
        let (path, is_file) = match &met {
            Met::Entry(found) => (found.path, found.kind != Kind::Dir),
            Met::Unreadable { path, .. } => (*path, true),
        };
        if is_file && !self.state.contains_key(path) {
            let files = self.state.len().saturating_sub(self.tracker.folders());
            if files >= self.maker.settings.max_files {
                self.failure = Some(Error::TooManyFiles(self.maker.settings.max_files));
                return Go::Stop;
            }
        }
        match met {
            Met::Entry(found) => {
                let before = self.state.get(found.path).cloned();
                let is_target = found.path == self.target;
                if is_target {
                    self.found = true;
                    let watched_dir = found.kind == Kind::Dir
                        && before.as_ref().and_then(Entry::kind) == Some(Kind::Dir)
                        && self.tracker.watches(found.path, found.stat.st_ino);
                    if watched_dir {
                        // Its names are heard by its own watch: only its metadata here.
                        let entry = self.maker.entry(&found, before.as_ref());
                        self.put(found.path, entry);
                        return Go::Over;
                    }
                    // New, or something else now: all of it walked again.
                    self.tracker.forget(found.path);
                    remove_below(self.state, self.touched, found.path, false);
                    self.whole = found.kind == Kind::Dir;
                }
                let entry = self.maker.entry(&found, before.as_ref());
                self.put(found.path, entry);
                Go::On
            }
            Met::Unreadable { path, error } => {
                if path == self.target {
                    self.found = true;
                }
                let entry = unreadable(&error);
                if let Some(gap) = new_gap(self.state.get(path), path, &entry) {
                    self.maker.gap(gap);
                }
                self.put(path, entry);
                Go::On
            }
        }
    }

    fn entered(&mut self, path: &[u8], dir: BorrowedFd<'_>) {
        self.tracker.watch(path, dir);
    }
}

/// A name whose change changes which paths are ignored below its folder.
fn rules_file(path: &[u8]) -> bool {
    let name = path.rsplit(|byte| *byte == b'/').next().unwrap_or(path);
    name == b".gitignore" || name == b".ignore"
}

/// Whether `path`, or a folder above it, is among the paths heard.
pub(crate) fn heard_at(heard: &BTreeSet<Vec<u8>>, path: &[u8]) -> bool {
    if heard.contains(path) {
        return true;
    }
    let mut end = path.len();
    while let Some(slash) = path[..end].iter().rposition(|byte| *byte == b'/') {
        end = slash;
        if heard.contains(&path[..end]) {
            return true;
        }
    }
    false
}

impl Store {
    /// A full scan of the workspace against `last` (and `seed`), watching
    /// every folder it walks when `tracker` is given.
    pub(crate) fn scan_full(
        &self,
        workspace: &Workspace,
        maker: &Maker<'_>,
        last: &State,
        seed: Option<&State>,
        tracker: Option<&mut Tracker>,
    ) -> Result<Scanned> {
        let walkers = std::thread::available_parallelism()
            .map_or(1, |cpus| cpus.get())
            .min(MAX_WALKERS);
        // As many as last time, or as another session saw: little regrowth on the way.
        let expected = last.len().max(seed.map_or(0, State::len)) / walkers;
        let watching = tracker.as_deref();
        let files = AtomicU64::new(0);
        let mut fulls: Vec<Full<'_, '_, '_>> = (0..walkers)
            .map(|_| Full {
                maker,
                last,
                seed,
                changed: Vec::new(),
                matched: Vec::with_capacity(expected),
                met: 0,
                keys_changed: false,
                watcher: watching.map(Tracker::watcher),
                failure: None,
                progress: &self.walk.met,
                untold: 0,
                files: &files,
                files_untold: 0,
            })
            .collect();
        self.walk.met.store(0, Ordering::Relaxed);
        self.walk.running.store(true, Ordering::Relaxed);
        let walked = workspace
            .scan_parallel(&mut fulls)
            .map_err(Error::Workspace);
        self.walk.running.store(false, Ordering::Relaxed);
        let mut added = Vec::with_capacity(walkers);
        let mut failure = None;
        let mut keys_changed = false;
        let (mut changed, mut matched, mut entries) = (Vec::new(), Vec::new(), 0);
        for mut full in fulls {
            full.tell();
            added.extend(full.watcher.take().map(Watcher::added));
            failure = failure.or(full.failure.take());
            keys_changed |= full.keys_changed;
            entries += full.met;
            changed.append(&mut full.changed);
            matched.push(full.matched);
        }
        if let Some(tracker) = tracker {
            for added in added {
                tracker.adopt(added);
            }
        }
        walked?;
        if let Some(error) = failure {
            return Err(error);
        }
        if files.load(Ordering::Relaxed) > maker.settings.max_files as u64 {
            return Err(Error::TooManyFiles(maker.settings.max_files));
        }
        changed.sort_unstable_by(|(a, _), (b, _)| a.cmp(b));
        Ok(Scanned {
            changed,
            removed: gone_from(last, matched),
            entries,
            keys_changed,
        })
    }

    /// Walks again only what `heard` names, changing `state` in place;
    /// the changes, as journal changes. `None` when a full scan must be
    /// made instead (a rule file changed).
    pub(crate) fn scan_heard(
        &self,
        workspace: &Workspace,
        maker: &mut Maker<'_>,
        state: &mut State,
        tracker: &mut Tracker,
        heard: &Heard,
    ) -> Result<Option<Vec<Change>>> {
        if heard.paths.iter().any(|path| rules_file(path)) {
            return Ok(None);
        }
        let mut touched = BTreeMap::new();
        let mut walked: Vec<&[u8]> = Vec::new();
        for path in &heard.paths {
            // Below a folder walked whole already.
            if walked.iter().any(|folder| within(path, folder)) {
                continue;
            }
            let mut tracked = Tracked {
                maker: &mut *maker,
                state: &mut *state,
                touched: &mut touched,
                tracker: &mut *tracker,
                target: path,
                found: false,
                whole: false,
                failure: None,
            };
            let below = workspace.scan_below(path, &mut tracked);
            if let Some(error) = tracked.failure {
                return Err(error);
            }
            if below.is_err() {
                // A folder above it could not be opened (its mode changed?): what
                // was changed here is put back, and the checkpoint walks whole.
                for (path, old) in touched {
                    match old {
                        Some(entry) => state.insert(path, entry),
                        None => state.remove(&path),
                    };
                }
                return Ok(None);
            }
            let (whole, found) = (tracked.whole, tracked.found);
            if !found {
                tracker.forget(path);
                remove_below(state, &mut touched, path, true);
            }
            if whole || !found {
                walked.push(path);
            }
        }
        let mut changes = Vec::new();
        for (path, old) in touched {
            match (old, state.get(&path)) {
                (Some(old), Some(new)) if old.content == new.content && old.mode == new.mode => {}
                (None, None) => {}
                (_, Some(new)) => changes.push(Change::of(&path, new, false)),
                (Some(_), None) => changes.push(Change::gone(&path)),
            }
        }
        Ok(Some(changes))
    }
}

/// The paths of `last` that are none of `matched` (each a key of
/// `last`'s own, met once): nothing to look for when all were met.
fn gone_from(last: &State, matched: Vec<Vec<&Vec<u8>>>) -> Vec<Vec<u8>> {
    if matched.iter().map(Vec::len).sum::<usize>() == last.len() {
        return Vec::new();
    }
    let met: std::collections::HashSet<*const Vec<u8>> = matched
        .into_iter()
        .flatten()
        .map(std::ptr::from_ref)
        .collect();
    last.keys()
        .filter(|path| !met.contains(&std::ptr::from_ref(*path)))
        .cloned()
        .collect()
}

/// What `now` holds no copy of that `last` did not miss the same way.
pub(crate) fn gaps_between(last: &State, now: &State) -> Vec<(String, String)> {
    now.iter()
        .filter_map(|(path, entry)| new_gap(last.get(path), path, entry))
        .collect()
}

/// The paths whose entry differs between `last` and `now` though nothing
/// was heard of them: changes the tracker missed. A path heard covers
/// what is below it only when it was walked whole: not a folder whose
/// own metadata was heard while its watch (`tracker`, on the same inode)
/// stood for what it holds.
pub(crate) fn unheard(
    last: &State,
    now: &Scanned,
    heard: &BTreeSet<Vec<u8>>,
    tracker: &Tracker,
) -> Vec<Vec<u8>> {
    let walked_whole = |folder: &[u8]| {
        now.get(last, folder)
            .is_none_or(|entry| !tracker.watches(folder, entry.key.ino()))
    };
    let covered = |path: &[u8]| {
        if heard.contains(path) {
            return true;
        }
        let mut end = path.len();
        while let Some(slash) = path[..end].iter().rposition(|byte| *byte == b'/') {
            end = slash;
            if heard.contains(&path[..end]) && walked_whole(&path[..end]) {
                return true;
            }
        }
        false
    };
    let mut missed: Vec<Vec<u8>> = now
        .differing(last)
        .filter(|path| !covered(path))
        .cloned()
        .collect();
    missed.sort();
    missed
}
