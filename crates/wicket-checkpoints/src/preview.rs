//! A preview's effects: what a command run over an overlay of the
//! workspace left in the overlay's upper layer, read against the
//! checkpoint taken before it, and applied the way a rewind is (the same
//! [`Plan`], through the workspace's no-link path), or thrown away.
//!
//! The upper layer is read without following anything: a link is a link,
//! a whiteout (a character device 0:0) is a deletion, a folder marked
//! opaque (`user.overlay.opaque`) replaced the one below, and any other
//! special file is refused.

use std::collections::{BTreeMap, BTreeSet};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use wicket_protocol::EffectKind;
use wicket_tools::Workspace;

use crate::objects::{hash_of, stream};
use crate::rewind::{Applied, Plan};
use crate::scan::remove_below;
use crate::state::{Content, Entry, StatKey, State};
use crate::tracker::within;
use crate::{Error, Result, Settings, Store};

/// The most bytes of one file a preview keeps beside its hash for the
/// card's diff (the store holds all of it).
const SHOWN_BYTES: usize = 256 * 1024;

/// One change as a card shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Effected {
    /// The path below the workspace root.
    pub path: Vec<u8>,
    /// What happened to it.
    pub kind: EffectKind,
    /// A file's bytes before (up to [`SHOWN_BYTES`]; `None`: it was not a file).
    pub old: Option<Vec<u8>>,
    /// A file's bytes after, or a link's target.
    pub new: Option<Vec<u8>>,
    /// Its new mode, for a file or a folder.
    pub mode: Option<u32>,
    /// Its size after (a file's).
    pub bytes: u64,
    /// Whether it is (now) a folder.
    pub dir: bool,
    /// The workspace's ignore files (or `[checkpoints] ignore`) skip it: no
    /// checkpoint holds it, so a rewind cannot take it back, and apply
    /// leaves one that was there before as it is.
    pub ignored: bool,
    /// Below a `.git`: a preview whose call may change git read it (the
    /// workspace's own `.git` is its before); no checkpoint holds it.
    pub git: bool,
}

/// What a preview changed, ready to be applied or thrown away.
#[derive(Debug, Clone, Default)]
pub struct Preview {
    /// Each changed path and what it becomes (`None`: removed, with what
    /// was below it).
    changes: BTreeMap<Vec<u8>, Option<Entry>>,
    /// What each path the preview touched held when it started (`None`:
    /// nothing), below a removed folder too: apply refuses when the
    /// workspace no longer holds that.
    started: BTreeMap<Vec<u8>, Option<Entry>>,
    /// As the card shows them, in path order.
    pub seen: Vec<Effected>,
    /// What could not be read in the upper layer, and why.
    pub unread: Vec<(String, String)>,
    /// `.git` paths the workspace changed while the preview ran: apply refuses.
    moved: BTreeSet<Vec<u8>>,
}

impl Preview {
    /// Nothing changed.
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty() && self.seen.is_empty()
    }
}

/// A path below the root, joined.
fn joined(parent: &[u8], name: &[u8]) -> Vec<u8> {
    if parent.is_empty() {
        name.to_vec()
    } else {
        [parent, b"/", name].concat()
    }
}

fn io(path: &[u8], error: impl std::fmt::Display) -> (String, String) {
    (wicket_tools::tree::shown(path), error.to_string())
}

/// Reads the upper layer against `before` (the workspace when the preview
/// started), storing new bytes in `objects`.
struct Reader<'a> {
    before: &'a State,
    objects: &'a crate::objects::Objects,
    workspace: &'a Workspace,
    /// When the preview started (nanoseconds, as a ctime says), when its
    /// call may change git: `.git` is read too, against the workspace's.
    git_since: Option<i128>,
    /// The first bytes of the workspace's `.git` files read, by hash.
    git_heads: BTreeMap<crate::state::Hash, Vec<u8>>,
    preview: Preview,
}

/// Whether `path` lies below a `.git` (and no `.wicket`).
fn in_git(path: &[u8]) -> bool {
    !crate::rewind::in_wicket(path) && path.split(|byte| *byte == b'/').any(|name| name == b".git")
}

/// What the workspace holds at `path` (a `.git` one: no checkpoint has
/// it) and its metadata; a file is read as a stream, and its first
/// [`SHOWN_BYTES`] kept for the card's diff (`head`, by its hash), so a
/// pack of gigabytes costs a read, not its size in memory or in the store.
fn workspace_entry(
    workspace: &Workspace,
    path: &[u8],
    head: Option<&mut BTreeMap<crate::state::Hash, Vec<u8>>>,
) -> std::io::Result<Option<(Entry, rustix::fs::Stat)>> {
    let Some(stat) = workspace.stat_at(path)? else {
        return Ok(None);
    };
    let mode = stat.st_mode & 0o7777;
    let content = match FileType::from_raw_mode(stat.st_mode) {
        FileType::Directory => Content::Dir,
        FileType::RegularFile => {
            let (mut file, _) = workspace.open_at(path)?;
            let (hash, _, first) = stream(&mut file, Vec::new(), SHOWN_BYTES, |_| Ok(()))?;
            if let Some(head) = head {
                head.insert(hash, first);
            }
            Content::File(hash)
        }
        FileType::Symlink => Content::Link(hash_of(&workspace.link_at(path)?)),
        _ => Content::Missed("a special file".into()),
    };
    let key = StatKey::of(&stat);
    Ok(Some((Entry { content, mode, key }, stat)))
}

impl Reader<'_> {
    /// What `path` held when the preview started: the last checkpoint's
    /// entry, or below `.git` the workspace's (one it changed since the
    /// preview started is noted, and apply refuses).
    fn before_of(&mut self, path: &[u8]) -> Option<Entry> {
        let Some(since) = self.git_since.filter(|_| in_git(path)) else {
            return self.before.get(path).cloned();
        };
        match workspace_entry(self.workspace, path, Some(&mut self.git_heads)) {
            Ok(Some((entry, stat))) => {
                let ctime =
                    i128::from(stat.st_ctime) * 1_000_000_000 + i128::from(stat.st_ctime_nsec);
                // A folder's ctime moves with every name made in it; what
                // the preview changes of it is its mode, compared at apply.
                if ctime >= since && entry.content != Content::Dir {
                    self.preview.moved.insert(path.to_vec());
                }
                Some(entry)
            }
            Ok(None) => None,
            Err(error) => {
                self.preview.unread.push(io(path, error));
                None
            }
        }
    }

    /// One folder of the upper layer (held), at `path` below the root.
    fn folder(&mut self, dir: &OwnedFd, path: &[u8]) {
        let names = match rustix::fs::Dir::read_from(dir) {
            Ok(listing) => listing
                .filter_map(|entry| entry.ok())
                .map(|entry| entry.file_name().to_bytes().to_vec())
                .filter(|name| name != b"." && name != b"..")
                .collect::<Vec<_>>(),
            Err(error) => {
                self.preview.unread.push(io(path, error));
                return;
            }
        };
        let mut names = names;
        names.sort();
        for name in names {
            let child = joined(path, &name);
            // `.wicket` stays as it is, and `.git` unless the call may change git.
            let guarded = wicket_protocol::guarded::git_or_wicket(Path::new(
                std::ffi::OsStr::from_bytes(&child),
            ));
            if guarded && !(self.git_since.is_some() && in_git(&child)) {
                continue;
            }
            self.entry(dir, &name, &child);
        }
    }

    fn entry(&mut self, dir: &OwnedFd, name: &[u8], path: &[u8]) {
        let name_os = std::ffi::OsStr::from_bytes(name);
        let stat = match rustix::fs::statat(dir, name_os, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) => stat,
            Err(error) => {
                self.preview.unread.push(io(path, error));
                return;
            }
        };
        let mode = stat.st_mode & 0o7777;
        let before = self.before_of(path);
        let before = before.as_ref();
        match FileType::from_raw_mode(stat.st_mode) {
            FileType::CharacterDevice if stat.st_rdev == 0 => self.removed(path),
            FileType::Directory => self.dir(dir, name_os, path, mode, before),
            FileType::RegularFile => self.file(dir, name_os, path, mode, before),
            FileType::Symlink => self.link(dir, name_os, path, before),
            _ => self.preview.seen.push(Effected {
                path: path.to_vec(),
                kind: EffectKind::Refused,
                old: None,
                new: None,
                mode: Some(mode),
                bytes: 0,
                dir: false,
                ignored: false,
                git: false,
            }),
        }
    }

    /// A whiteout: the path, and all below it, are gone.
    fn removed(&mut self, path: &[u8]) {
        let Some(before) = self.before_of(path) else {
            return;
        };
        self.note_below(path);
        self.preview.changes.insert(path.to_vec(), None);
        self.preview.seen.push(Effected {
            path: path.to_vec(),
            kind: EffectKind::Deleted,
            old: self.shown(&before),
            new: None,
            mode: None,
            bytes: 0,
            dir: before.kind() == Some(wicket_tools::tree::Kind::Dir),
            ignored: false,
            git: false,
        });
    }

    /// Records what `path` and everything below it held at the start.
    fn note_below(&mut self, path: &[u8]) {
        let entry = self.before_of(path);
        self.preview.started.insert(path.to_vec(), entry);
        for inner in self.inner(path) {
            let entry = self.before_of(&inner);
            self.preview.started.insert(inner, entry);
        }
    }

    /// `name` in `parent`, opened to read (`flags` besides), never through
    /// a link; what fails is said as not read.
    fn open_in(
        &mut self,
        parent: &OwnedFd,
        name: &std::ffi::OsStr,
        path: &[u8],
        flags: OFlags,
    ) -> Option<OwnedFd> {
        let opened = rustix::fs::openat(
            parent,
            name,
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | flags,
            Mode::empty(),
        );
        match opened {
            Ok(fd) => Some(fd),
            Err(error) => {
                self.preview.unread.push(io(path, error));
                None
            }
        }
    }

    /// The paths the workspace held below `path` when the preview started
    /// (below `.git`: holds now, each folder listed, no link followed).
    fn inner(&self, path: &[u8]) -> Vec<Vec<u8>> {
        if self.git_since.is_some() && in_git(path) {
            let mut found = Vec::new();
            let mut folders = vec![path.to_vec()];
            while let Some(folder) = folders.pop() {
                let is_dir = self
                    .workspace
                    .stat_at(&folder)
                    .ok()
                    .flatten()
                    .is_some_and(|stat| {
                        FileType::from_raw_mode(stat.st_mode) == FileType::Directory
                    });
                if !is_dir {
                    continue;
                }
                for name in self.workspace.names_at(&folder).unwrap_or_default() {
                    let inner = joined(&folder, &name);
                    found.push(inner.clone());
                    folders.push(inner);
                }
            }
            found.sort();
            return found;
        }
        self.before
            .range(path.to_vec()..)
            .take_while(|(inner, _)| inner.starts_with(path))
            .filter(|(inner, _)| inner.len() > path.len() && within(inner, path))
            .map(|(inner, _)| inner.clone())
            .collect()
    }

    fn dir(
        &mut self,
        parent: &OwnedFd,
        name: &std::ffi::OsStr,
        path: &[u8],
        mode: u32,
        before: Option<&Entry>,
    ) {
        let Some(dir) = self.open_in(parent, name, path, OFlags::DIRECTORY) else {
            return;
        };
        let was_dir = before.is_some_and(|before| matches!(before.content, Content::Dir));
        let opaque = was_dir && opaque(&dir);
        let entry = Entry {
            content: Content::Dir,
            mode,
            key: StatKey::default(),
        };
        if !was_dir || opaque || before.is_some_and(|before| before.mode != mode) {
            if opaque {
                // A folder replaced whole: what it held is gone unless the upper layer has it again.
                self.removed_below(path);
            }
            self.preview.started.insert(path.to_vec(), before.cloned());
            self.preview.changes.insert(path.to_vec(), Some(entry));
            let kind = match before {
                Some(_) if was_dir && !opaque => EffectKind::Mode,
                Some(_) if was_dir => EffectKind::Modified,
                _ => EffectKind::Created,
            };
            self.preview.seen.push(Effected {
                path: path.to_vec(),
                kind,
                old: None,
                new: None,
                mode: Some(mode),
                bytes: 0,
                dir: true,
                ignored: false,
                git: false,
            });
        }
        self.folder(&dir, path);
    }

    /// Everything below an opaque folder, removed (entries the upper layer
    /// has are put back by their own change, read after this).
    fn removed_below(&mut self, path: &[u8]) {
        for inner in self.inner(path) {
            let entry = self.before_of(&inner);
            self.preview.started.insert(inner.clone(), entry);
            self.preview.changes.insert(inner, None);
        }
    }

    fn file(
        &mut self,
        parent: &OwnedFd,
        name: &std::ffi::OsStr,
        path: &[u8],
        mode: u32,
        before: Option<&Entry>,
    ) {
        let Some(fd) = self.open_in(parent, name, path, OFlags::NONBLOCK) else {
            return;
        };
        // Stored as it is read: a large file is never whole in memory.
        let (hash, size, shown) = match self
            .objects
            .put_read(&mut std::fs::File::from(fd), SHOWN_BYTES)
        {
            Ok(stored) => stored,
            Err(error) => {
                self.preview
                    .unread
                    .push(io(path, format!("not stored: {error}")));
                return;
            }
        };
        let kind = match before.map(|before| &before.content) {
            Some(Content::File(old)) if *old == hash => {
                if before.is_some_and(|before| before.mode == mode) {
                    // Copied up, not changed (a touch, an open for writing).
                    return;
                }
                EffectKind::Mode
            }
            Some(Content::File(_)) => EffectKind::Modified,
            _ => EffectKind::Created,
        };
        let entry = Entry {
            content: Content::File(hash),
            mode,
            key: StatKey::default(),
        };
        self.record(path, before, entry);
        self.preview.seen.push(Effected {
            path: path.to_vec(),
            kind,
            old: before.and_then(|before| self.shown(before)),
            new: Some(shown),
            mode: Some(mode),
            bytes: size,
            dir: false,
            ignored: false,
            git: false,
        });
    }

    fn link(
        &mut self,
        parent: &OwnedFd,
        name: &std::ffi::OsStr,
        path: &[u8],
        before: Option<&Entry>,
    ) {
        let target = match rustix::fs::readlinkat(parent, name, Vec::new()) {
            Ok(target) => target.into_bytes(),
            Err(error) => {
                self.preview.unread.push(io(path, error));
                return;
            }
        };
        let hash = hash_of(&target);
        if before.is_some_and(|before| before.content == Content::Link(hash)) {
            return;
        }
        let entry = Entry {
            content: Content::Link(hash),
            mode: 0o777,
            key: StatKey::default(),
        };
        if !self.put(path, before, &hash, &target, entry) {
            return;
        }
        self.preview.seen.push(Effected {
            path: path.to_vec(),
            kind: EffectKind::Link,
            old: None,
            new: Some(target),
            mode: None,
            bytes: 0,
            dir: false,
            ignored: false,
            git: false,
        });
    }

    /// Stores `bytes` (a file's, a link's target) and records `path`'s
    /// change to `entry`, and what it replaces (a folder: what was in it
    /// too); false, and said, when the store could not take them.
    fn put(
        &mut self,
        path: &[u8],
        before: Option<&Entry>,
        hash: &crate::state::Hash,
        bytes: &[u8],
        entry: Entry,
    ) -> bool {
        if let Err(error) = self.objects.put(hash, bytes) {
            self.preview
                .unread
                .push(io(path, format!("the store could not take it: {error}")));
            return false;
        }
        self.record(path, before, entry);
        true
    }

    /// Records `path`'s change to `entry` (its bytes stored), and what it
    /// replaces (a folder: what was in it too).
    fn record(&mut self, path: &[u8], before: Option<&Entry>, entry: Entry) {
        self.preview.started.insert(path.to_vec(), before.cloned());
        if before.is_some_and(|before| matches!(before.content, Content::Dir)) {
            self.removed_below(path);
        }
        self.preview.changes.insert(path.to_vec(), Some(entry));
    }

    /// A file's bytes as they were, from the store, for the diff.
    fn shown(&self, before: &Entry) -> Option<Vec<u8>> {
        match &before.content {
            Content::File(hash) if self.git_heads.contains_key(hash) => {
                self.git_heads.get(hash).cloned()
            }
            Content::File(hash) => self.objects.get(hash).ok().map(|mut bytes| {
                bytes.truncate(SHOWN_BYTES);
                bytes
            }),
            _ => None,
        }
    }
}

/// Whether the overlay marked `dir` as replacing the folder below it.
fn opaque(dir: &OwnedFd) -> bool {
    let mut value = [0u8; 4];
    matches!(
        rustix::fs::fgetxattr(dir.as_fd(), "user.overlay.opaque", &mut value),
        Ok(length) if value[..length] == *b"y"
    )
}

/// Marks each change the checkpoints skip (an ignored path): the last
/// checkpoint has no record of it, so one that stood in the workspace
/// before reads as new in the upper layer; it is said as modified instead.
fn mark_ignored(preview: &mut Preview, workspace: &Workspace, settings: &Settings) {
    // The changes come in path order, a folder before what is below it:
    // below an ignored folder everything is ignored, and below one the
    // workspace did not hold nothing was there either. So `node_modules/`
    // costs one read of the ignore files, not one per file in it.
    let mut folder: Option<(Vec<u8>, bool)> = None;
    for seen in preview.seen.iter_mut().filter(|seen| !seen.git) {
        let inside = folder
            .as_ref()
            .filter(|(above, _)| within(&seen.path, above) && seen.path != *above);
        let (ignored, held) = match inside {
            Some((_, held)) => (true, *held && workspace.holds(&seen.path)),
            None => {
                let skipped = !settings.ignore.is_empty()
                    && settings
                        .ignore
                        .is_match(Path::new(std::ffi::OsStr::from_bytes(&seen.path)));
                let ignored = skipped || workspace.ignored(&seen.path, seen.dir);
                (ignored, ignored && workspace.holds(&seen.path))
            }
        };
        if ignored && seen.dir && inside.is_none() {
            folder = Some((seen.path.clone(), held));
        }
        seen.ignored = ignored;
        if ignored && seen.kind == EffectKind::Created && held {
            seen.kind = EffectKind::Modified;
        }
    }
}

impl Store {
    /// What a command run over an overlay of `workspace` changed, read from
    /// the overlay's `upper` layer against the last checkpoint (the one
    /// taken before the command); its new bytes go into the store. With
    /// `git_since` (when the command started, in nanoseconds, for a call
    /// that may change git), what it changed below `.git` too, against
    /// the workspace's own.
    pub fn preview(
        &self,
        workspace: &Workspace,
        settings: &Settings,
        upper: &Path,
        git_since: Option<i128>,
    ) -> Result<Preview> {
        let mut guard = self.lock();
        let cache = self.cache(&mut guard, settings)?;
        let Some(objects) = self.objects(Some(workspace))? else {
            return Err(Error::Gone);
        };
        let _held = objects.hold().map_err(self.io(objects.dir(), "read"))?;
        let root = rustix::fs::open(
            upper,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|error| Error::Workspace(error.into()))?;
        let mut reader = Reader {
            before: &cache.journaled,
            objects,
            workspace,
            git_since,
            git_heads: BTreeMap::new(),
            preview: Preview::default(),
        };
        reader.folder(&root, b"");
        objects.flush().map_err(self.io(objects.dir(), "written"))?;
        let mut preview = reader.preview;
        for seen in &mut preview.seen {
            seen.git = in_git(&seen.path);
        }
        mark_ignored(&mut preview, workspace, settings);
        Ok(preview)
    }

    /// Writes what `preview` changed into the workspace, after a
    /// checkpoint (`seq`, `tool`): the same plan and steps as a rewind,
    /// through the workspace's no-link path. Nothing is written, and the
    /// error names the path, when any path the preview changed differs now
    /// from what it held when the preview started.
    pub fn apply_preview(
        &self,
        workspace: &Workspace,
        settings: &Settings,
        preview: &Preview,
        seq: u64,
        tool: &str,
    ) -> Result<Applied> {
        let mut guard = self.lock();
        let cache = self.cache(&mut guard, settings)?;
        if let Err(error) =
            self.take_in(cache, workspace, settings, seq, tool, crate::Taking::Walked)
        {
            *guard = None;
            return Err(error);
        }
        if let Some(path) = preview.moved.iter().next() {
            return Err(Error::ChangedSincePreview(wicket_tools::tree::shown(path)));
        }
        let mut now = cache.journaled.clone();
        // No checkpoint holds `.git`: what the workspace holds there now.
        for path in preview.started.keys().filter(|path| in_git(path)) {
            match workspace_entry(workspace, path, None) {
                Ok(Some((entry, _))) => {
                    now.insert(path.clone(), entry);
                }
                Ok(None) => {}
                Err(error) => return Err(Error::Workspace(error)),
            }
        }
        let now = &now;
        for (path, started) in &preview.started {
            let same = match (now.get(path), started) {
                (None, None) => true,
                (Some(now), Some(started)) => now.same_as(started),
                _ => false,
            };
            if !same {
                return Err(Error::ChangedSincePreview(wicket_tools::tree::shown(path)));
            }
        }
        let mut then = now.clone();
        for (path, change) in &preview.changes {
            match change {
                Some(entry) => {
                    then.insert(path.clone(), entry.clone());
                }
                None => remove_below(&mut then, &mut BTreeMap::new(), path, true),
            }
        }
        let Some(objects) = self.objects(Some(workspace))? else {
            return Err(Error::Gone);
        };
        let _held = objects.hold().map_err(self.io(objects.dir(), "read"))?;
        // Below `.git` only when the preview changed something there (its call may change git).
        let git = preview.changes.keys().any(|path| in_git(path));
        Ok(Plan::between_with(&then, now, &BTreeSet::new(), git).apply(workspace, objects))
    }
}

#[cfg(test)]
#[path = "preview_tests.rs"]
mod tests;
