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

use crate::layer::{self, Visit, joined, open_root};
use crate::objects::{hash_of, stream};
use crate::rewind::{Applied, Plan};
use crate::state::{Content, Entry, StatKey, State};
use crate::tracker::within;
use crate::{Error, Result, Settings, Store};

/// The most bytes of one file a preview keeps beside its hash for the
/// card's diff (the store holds all of it): a diff of a longer file is
/// of its first this many bytes, and marked cut ([`Effected::cut`]).
pub const SHOWN_BYTES: usize = 256 * 1024;

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
    /// Why a refused change is not applied.
    pub why: Option<String>,
    /// The file was longer than [`SHOWN_BYTES`] before or after: `old`
    /// and `new` hold its first bytes only, and a diff of them stops there.
    pub cut: bool,
}

/// What a preview changed, ready to be applied or thrown away.
#[derive(Debug, Clone, Default)]
pub struct Preview {
    /// Each path apply changes, and what it becomes (`None`: removed, that
    /// path alone: each path below a removed folder is a change of its
    /// own, on the card too).
    changes: BTreeMap<Vec<u8>, Option<Entry>>,
    /// What the workspace held when the preview started at each changed
    /// path and at every path below a changed or replaced folder (below
    /// `.git`: at each changed path, `None` for nothing): apply refuses
    /// when it holds anything else there.
    started: BTreeMap<Vec<u8>, Option<Entry>>,
    /// The topmost paths apply changes, or folders the command replaced
    /// (but below `.git`): below each, apply refuses a path `started` has
    /// no record of (one made meanwhile).
    roots: Vec<Vec<u8>>,
    /// As the card shows them, in path order (a folder, then what is below it).
    pub seen: Vec<Effected>,
    /// Folders the command replaced whole (opaque ones): each path below
    /// one that apply removes is in `seen`, as deleted.
    pub replaced: Vec<Vec<u8>>,
    /// What could not be read in the upper layer, and why.
    pub unread: Vec<(String, String)>,
    /// Paths no checkpoint holds (below `.git`, ignored ones) that the
    /// workspace changed while the preview ran: apply refuses.
    moved: BTreeSet<Vec<u8>>,
    /// Its call may change git: `.git` was read too.
    git: bool,
}

impl Preview {
    /// Nothing changed.
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty() && self.seen.is_empty()
    }
}

fn io(path: &[u8], error: impl std::fmt::Display) -> (String, String) {
    (wicket_tools::tree::shown(path), error.to_string())
}

/// One path the upper layer touches: what it held when the preview
/// started and what it holds after (`None`: nothing), with a new file's
/// first bytes (a link's target) and size.
struct Touched {
    before: Option<Entry>,
    after: Option<Entry>,
    shown: Vec<u8>,
    bytes: u64,
}

/// Reads the upper layer against `before` (the workspace when the preview
/// started), storing new bytes in `objects`: what each path becomes, read
/// as the overlay shows it (a whiteout removes a path and all below it,
/// an opaque folder all below it that the upper layer does not hold
/// again), then compared path by path, so that what is the same after as
/// before is no change, and every path that differs is one.
struct Reader<'a> {
    before: &'a State,
    objects: &'a crate::objects::Objects,
    workspace: &'a Workspace,
    /// When the preview started (nanoseconds, as a ctime says): what the
    /// workspace changed since, where no checkpoint holds it, stops the apply.
    since: i128,
    /// Its call may change git: `.git` is read too, against the workspace's.
    git: bool,
    /// The first bytes of the workspace's files read where no checkpoint
    /// holds them (below `.git`, an ignored path), by hash.
    heads: BTreeMap<crate::state::Hash, Vec<u8>>,
    /// The most bytes the files read may hold together, by their apparent
    /// sizes: a sparse file past it is refused (the store would keep its
    /// holes as bytes). A dense one was bounded on disk as it was written.
    most: u64,
    /// The apparent bytes of the files stored so far.
    counted: u64,
    /// Each path touched, in byte order.
    touched: BTreeMap<Vec<u8>, Touched>,
    /// Folders the command replaced whole (opaque ones).
    replaced: Vec<Vec<u8>>,
    /// What is never applied (a special file, one too large), and why.
    refused: Vec<Effected>,
    preview: Preview,
}

/// Whether `path` lies below a `.git` (and no `.wicket`).
fn in_git(path: &[u8]) -> bool {
    !crate::rewind::in_wicket(path) && path.split(|byte| *byte == b'/').any(|name| name == b".git")
}

/// Whether the workspace can reach `path` through folders alone: where a
/// file or a link stands in place of a folder of it, nothing is there (what
/// replaces that file is the preview's to say).
fn reachable(workspace: &Workspace, path: &[u8]) -> bool {
    workspace.stat_at(path).is_ok()
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
    /// Whether `path` is below a `.git` this preview reads: only a call
    /// that may change git reads one (a path's every name is looked at,
    /// so a preview that reads none never pays for it).
    fn in_git(&self, path: &[u8]) -> bool {
        self.git && in_git(path)
    }

    /// What `path` held when the preview started: the last checkpoint's
    /// entry, or where no checkpoint holds it (below `.git`, an ignored
    /// path such as `node_modules/`) the workspace's, read now (one it
    /// changed since the preview started is noted, and apply refuses).
    fn before_of(&mut self, path: &[u8]) -> Option<Entry> {
        if !self.in_git(path)
            && let Some(entry) = self.before.get(path)
        {
            return Some(entry.clone());
        }
        let since = self.since;
        match workspace_entry(self.workspace, path, Some(&mut self.heads)) {
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
            Err(_) if !self.in_git(path) && !reachable(self.workspace, path) => None,
            Err(error) => {
                self.preview.unread.push(io(path, error));
                None
            }
        }
    }

    /// What `path` held when the preview started (read once: until it is
    /// set, it holds the same after).
    fn touch(&mut self, path: &[u8]) -> &mut Touched {
        if !self.touched.contains_key(path) {
            let before = self.before_of(path);
            let touched = Touched {
                after: before.clone(),
                before,
                shown: Vec::new(),
                bytes: 0,
            };
            self.touched.insert(path.to_vec(), touched);
        }
        match self.touched.get_mut(path) {
            Some(touched) => touched,
            None => unreachable!("inserted above"),
        }
    }

    fn known(&mut self, path: &[u8]) -> Option<Entry> {
        self.touch(path).before.clone()
    }

    /// `path` holds `after` once the command is done (`shown`, `bytes`:
    /// a new file's first bytes and size, a link's target).
    fn set(&mut self, path: &[u8], after: Option<Entry>, shown: Vec<u8>, bytes: u64) {
        let touched = self.touch(path);
        (touched.after, touched.shown, touched.bytes) = (after, shown, bytes);
    }

    /// Everything the workspace held below `path` is gone (what the upper
    /// layer holds there again is set by its own entry, read after this).
    fn gone_below(&mut self, path: &[u8]) {
        for inner in self.inner(path) {
            self.set(&inner, None, Vec::new(), 0);
        }
    }

    /// `path` is left as it was, whatever a folder above it did: what
    /// cannot be read or is refused is never applied.
    fn left(&mut self, path: &[u8]) {
        self.touched.remove(path);
    }

    /// A whiteout: the path, and all below it, are gone.
    fn removed(&mut self, path: &[u8]) {
        let Some(before) = self.known(path) else {
            return;
        };
        if before.content == Content::Dir {
            self.gone_below(path);
        }
        self.set(path, None, Vec::new(), 0);
    }

    /// `name` in `parent`, opened to read (`flags` besides), never through
    /// a link; what fails is said as not read, and left as it was.
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
                self.left(path);
                None
            }
        }
    }

    /// The paths the workspace held below `path` when the preview started
    /// (below `.git`: holds now, each folder listed, no link followed).
    fn inner(&self, path: &[u8]) -> Vec<Vec<u8>> {
        if self.in_git(path) {
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
        below_in(self.before, path)
            .map(|(inner, _)| inner.clone())
            .collect()
    }

    /// A folder of the upper layer: held, to be read next. One marked
    /// opaque replaced the folder below it: all that held is gone but what
    /// the upper layer holds again.
    fn dir(
        &mut self,
        parent: &OwnedFd,
        name: &std::ffi::OsStr,
        path: &[u8],
        mode: u32,
    ) -> Option<OwnedFd> {
        let dir = self.open_in(parent, name, path, OFlags::DIRECTORY)?;
        let before = self.known(path);
        let was_dir = before
            .as_ref()
            .is_some_and(|before| before.content == Content::Dir);
        if was_dir && opaque(&dir) {
            self.gone_below(path);
            self.replaced.push(path.to_vec());
        }
        let entry = Entry {
            content: Content::Dir,
            mode,
            key: StatKey::default(),
        };
        self.set(path, Some(entry), Vec::new(), 0);
        Some(dir)
    }

    fn file(&mut self, parent: &OwnedFd, name: &std::ffi::OsStr, path: &[u8], mode: u32) {
        let Some(fd) = self.open_in(parent, name, path, OFlags::NONBLOCK) else {
            return;
        };
        let (size, on_disk) = match rustix::fs::fstat(&fd) {
            Ok(stat) => (
                u64::try_from(stat.st_size).unwrap_or(0),
                u64::try_from(stat.st_blocks)
                    .unwrap_or(0)
                    .saturating_mul(512),
            ),
            Err(error) => {
                self.preview.unread.push(io(path, error));
                self.left(path);
                return;
            }
        };
        // The bytes a file holds on disk were bounded while the command ran;
        // its holes were not, and the store would keep each as bytes.
        let sparse = on_disk < size;
        if sparse && self.counted.saturating_add(size) > self.most {
            self.too_large(path, size, mode);
            return;
        }
        self.counted += size;
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
                self.left(path);
                return;
            }
        };
        self.replace(path);
        let entry = Entry {
            content: Content::File(hash),
            mode,
            key: StatKey::default(),
        };
        self.set(path, Some(entry), shown, size);
    }

    /// A file or a link at `path`: a folder that was there is gone, with
    /// all below it.
    fn replace(&mut self, path: &[u8]) {
        if self
            .known(path)
            .is_some_and(|before| before.content == Content::Dir)
        {
            self.gone_below(path);
        }
    }

    /// A sparse file whose size (holes counted) would take the files read
    /// past [`Reader::most`]: not stored, refused, and said why.
    fn too_large(&mut self, path: &[u8], size: u64, mode: u32) {
        let why = format!(
            "not stored and never applied: it is {} (holes counted), which takes what the \
             preview wrote past [sandbox] preview_max_mb ({}); apply leaves {} as it was",
            crate::mib(size),
            crate::mib(self.most),
            wicket_tools::tree::shown(path)
        );
        self.refuse(path, mode, size, Some(why));
    }

    /// What is never applied, on the card as refused; `path` is left as it was.
    fn refuse(&mut self, path: &[u8], mode: u32, bytes: u64, why: Option<String>) {
        self.left(path);
        self.refused.push(Effected {
            path: path.to_vec(),
            kind: EffectKind::Refused,
            old: None,
            new: None,
            mode: Some(mode),
            bytes,
            dir: false,
            ignored: false,
            git: false,
            why,
            cut: false,
        });
    }

    fn link(&mut self, parent: &OwnedFd, name: &std::ffi::OsStr, path: &[u8]) {
        let target = match rustix::fs::readlinkat(parent, name, Vec::new()) {
            Ok(target) => target.into_bytes(),
            Err(error) => {
                self.preview.unread.push(io(path, error));
                self.left(path);
                return;
            }
        };
        let hash = hash_of(&target);
        if let Err(error) = self.objects.put(&hash, &target) {
            self.preview
                .unread
                .push(io(path, format!("the store could not take it: {error}")));
            self.left(path);
            return;
        }
        self.replace(path);
        let entry = Entry {
            content: Content::Link(hash),
            mode: 0o777,
            key: StatKey::default(),
        };
        self.set(path, Some(entry), target, 0);
    }

    /// A file's bytes as they were, from the store, for the diff.
    /// Its first [`SHOWN_BYTES`], and whether there was more.
    fn shown(&self, before: &Entry) -> Option<(Vec<u8>, bool)> {
        match &before.content {
            Content::File(hash) if self.heads.contains_key(hash) => {
                let longer = before.key.size() > SHOWN_BYTES as u64;
                self.heads.get(hash).cloned().map(|head| (head, longer))
            }
            Content::File(hash) => self.objects.get(hash).ok().map(|mut bytes| {
                let longer = bytes.len() > SHOWN_BYTES;
                bytes.truncate(SHOWN_BYTES);
                (bytes, longer)
            }),
            _ => None,
        }
    }

    /// Each path whose entry after differs from before, as a change and
    /// as the card shows it; what is the same (a file copied up, a
    /// byte-identical one made again below a replaced folder) is none.
    fn finish(mut self) -> Preview {
        let touched = std::mem::take(&mut self.touched);
        let mut preview = std::mem::take(&mut self.preview);
        for (path, touched) in touched {
            let Touched {
                before,
                after,
                shown,
                bytes,
            } = touched;
            let same = match (&before, &after) {
                (None, None) => true,
                (Some(before), Some(after)) => before.same_as(after),
                _ => false,
            };
            if same {
                continue;
            }
            let kind = kind_of(before.as_ref(), after.as_ref());
            let after_content = after.as_ref().map(|after| &after.content);
            let (old, old_cut) = before
                .as_ref()
                .and_then(|before| self.shown(before))
                .map_or((None, false), |(old, cut)| (Some(old), cut));
            let new_cut =
                matches!(after_content, Some(Content::File(_))) && bytes > SHOWN_BYTES as u64;
            preview.seen.push(Effected {
                path: path.clone(),
                kind,
                old,
                new: match after_content {
                    Some(Content::File(_) | Content::Link(_)) => Some(shown),
                    _ => None,
                },
                mode: match after_content {
                    Some(Content::File(_) | Content::Dir) => after.as_ref().map(|after| after.mode),
                    _ => None,
                },
                // A removed file's size as it was.
                bytes,
                dir: match &after {
                    Some(after) => after.content == Content::Dir,
                    None => before
                        .as_ref()
                        .is_some_and(|before| before.content == Content::Dir),
                },
                ignored: false,
                git: false,
                why: None,
                cut: old_cut || new_cut,
            });
            if before.is_some() || self.in_git(&path) {
                preview.started.insert(path.clone(), before);
            }
            preview.changes.insert(path, after);
        }
        preview.seen.append(&mut self.refused);
        preview.seen.sort_by(|a, b| tree_order(&a.path, &b.path));
        guard_below(&mut preview, self.before, &self.replaced, |path| {
            self.in_git(path)
        });
        preview.replaced = self.replaced;
        preview.git = self.git;
        preview
    }
}

/// Below each changed or replaced folder (but `.git` ones, `in_git`),
/// what the workspace held then is what it must hold at apply, and
/// nothing more: the topmost of them are `roots`, and `started` holds
/// what `before` had at and below each.
fn guard_below(
    preview: &mut Preview,
    before: &State,
    replaced: &[Vec<u8>],
    in_git: impl Fn(&[u8]) -> bool,
) {
    let mut tops: Vec<&Vec<u8>> = preview
        .changes
        .keys()
        .chain(replaced)
        .filter(|path| !in_git(path))
        .collect();
    tops.sort();
    let mut roots: Vec<Vec<u8>> = Vec::new();
    for top in tops {
        if roots.last().is_some_and(|root| within(top, root)) {
            continue;
        }
        roots.push(top.clone());
    }
    for root in &roots {
        let at_root = before.get_key_value(root.as_slice()).into_iter();
        for (path, entry) in at_root.chain(below_in(before, root)) {
            preview
                .started
                .entry(path.clone())
                .or_insert_with(|| Some(entry.clone()));
        }
    }
    preview.roots = roots;
}

/// Paths in tree order: name by name, so a folder's contents come right
/// after it (`a`, `a/x`, `a.txt`). A name holds no `/` and no NUL, so
/// that is byte order with `/` below every other byte.
fn tree_order(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    let rank = |byte: u8| if byte == b'/' { 0 } else { byte };
    // Long shared beginnings (a deep tree's) are skipped a block at a time.
    let most = a.len().min(b.len());
    let mut at = 0;
    while at + 64 <= most && a[at..at + 64] == b[at..at + 64] {
        at += 64;
    }
    while at < most {
        if a[at] != b[at] {
            return rank(a[at]).cmp(&rank(b[at]));
        }
        at += 1;
    }
    a.len().cmp(&b.len())
}

/// The entries of `state` below `path` (not it).
fn below_in<'s>(state: &'s State, path: &[u8]) -> impl Iterator<Item = (&'s Vec<u8>, &'s Entry)> {
    let from = path.to_vec();
    state
        .range(from..)
        .take_while(move |(inner, _)| inner.starts_with(path))
        .filter(move |(inner, _)| inner.len() > path.len() && within(inner, path))
}

/// What a change is, by what a path held before and after.
fn kind_of(before: Option<&Entry>, after: Option<&Entry>) -> EffectKind {
    match (
        before.map(|before| &before.content),
        after.map(|after| &after.content),
    ) {
        (_, None) => EffectKind::Deleted,
        (_, Some(Content::Link(_))) => EffectKind::Link,
        (Some(Content::Dir), Some(Content::Dir)) => EffectKind::Mode,
        (Some(Content::File(old)), Some(Content::File(new))) if old == new => EffectKind::Mode,
        (Some(Content::File(_)), Some(Content::File(_))) => EffectKind::Modified,
        (_, Some(_)) => EffectKind::Created,
    }
}

impl Visit for Reader<'_> {
    /// `.wicket` stays as it is, and `.git` unless the call may change git.
    fn keep(&self, name: &[u8]) -> bool {
        match name {
            b".wicket" => false,
            b".git" => self.git,
            _ => true,
        }
    }

    /// One name in a folder of the upper layer: its change noted; a
    /// folder to read next is handed back, held.
    fn visit(&mut self, dir: &OwnedFd, name: &[u8], path: &[u8]) -> Option<OwnedFd> {
        let name_os = std::ffi::OsStr::from_bytes(name);
        let stat = match rustix::fs::statat(dir, name_os, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) => stat,
            Err(error) => {
                self.unread(path, error.to_string());
                return None;
            }
        };
        let mode = stat.st_mode & 0o7777;
        match FileType::from_raw_mode(stat.st_mode) {
            FileType::CharacterDevice if stat.st_rdev == 0 => self.removed(path),
            FileType::Directory => return self.dir(dir, name_os, path, mode),
            FileType::RegularFile => self.file(dir, name_os, path, mode),
            FileType::Symlink => self.link(dir, name_os, path),
            _ => self.refuse(path, mode, 0, None),
        }
        None
    }

    fn unread(&mut self, path: &[u8], why: String) {
        self.preview.unread.push(io(path, why));
        self.left(path);
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

/// When a preview's command started, and what it may change.
#[derive(Debug, Clone, Copy)]
pub struct Began {
    /// In nanoseconds since the epoch, as a ctime says it (a clock tick
    /// early): what the workspace changed since, where no checkpoint holds
    /// it, stops the apply.
    pub at: i128,
    /// Its call may change git: what it changed below `.git` is read too.
    pub git: bool,
}

impl Store {
    /// What a command run over an overlay of `workspace` changed, read from
    /// the overlay's `upper` layer against the last checkpoint (the one
    /// taken before the command), and where no checkpoint holds a path
    /// (below `.git` for a call that may change git, an ignored path)
    /// against the workspace's own; its new bytes go into the store. A
    /// sparse file that takes the files past `most` bytes together
    /// (apparent sizes, holes counted) is refused, not stored.
    pub fn preview(
        &self,
        workspace: &Workspace,
        settings: &Settings,
        upper: &Path,
        began: Began,
        most: u64,
    ) -> Result<Preview> {
        let mut guard = self.lock();
        let cache = self.cache(&mut guard, settings)?;
        let Some(objects) = self.objects(Some(workspace))? else {
            return Err(Error::Gone);
        };
        let _held = objects.hold().map_err(self.io(objects.dir(), "read"))?;
        let root = open_root(upper).map_err(|error| Error::Workspace(error.into()))?;
        let mut reader = Reader {
            before: &cache.journaled,
            objects,
            workspace,
            since: began.at,
            git: began.git,
            heads: BTreeMap::new(),
            most,
            counted: 0,
            touched: BTreeMap::new(),
            replaced: Vec::new(),
            refused: Vec::new(),
            preview: Preview::default(),
        };
        layer::walk(root, &mut reader);
        objects.flush().map_err(self.io(objects.dir(), "written"))?;
        let mut preview = reader.finish();
        for seen in &mut preview.seen {
            seen.git = began.git && in_git(&seen.path);
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
        // Where no checkpoint holds a path (below `.git`, an ignored one,
        // one new to the workspace): what the workspace holds there now.
        let unheld: Vec<&Vec<u8>> = preview
            .started
            .keys()
            .filter(|path| (preview.git && in_git(path)) || !now.contains_key(*path))
            .collect();
        for path in unheld {
            // A path outside `.git` the workspace cannot reach holds nothing there.
            let git = preview.git && in_git(path);
            if !git && !reachable(workspace, path) {
                continue;
            }
            match workspace_entry(workspace, path, None) {
                Ok(Some((entry, _))) => {
                    now.insert(path.clone(), entry);
                }
                Ok(None) => {}
                Err(error) => return Err(Error::Workspace(error)),
            }
        }
        let now = &now;
        if let Some(path) = changed_since(preview, now) {
            return Err(Error::ChangedSincePreview(wicket_tools::tree::shown(path)));
        }
        // Each change is of its own path: every path below a removed
        // folder is listed, so nothing is removed that the card did not list.
        let mut then = now.clone();
        for (path, change) in &preview.changes {
            match change {
                Some(entry) => {
                    then.insert(path.clone(), entry.clone());
                }
                None => {
                    then.remove(path);
                }
            }
        }
        let Some(objects) = self.objects(Some(workspace))? else {
            return Err(Error::Gone);
        };
        let _held = objects.hold().map_err(self.io(objects.dir(), "read"))?;
        // Below `.git` only when the preview changed something there (its call may change git).
        let git = preview.git && preview.changes.keys().any(|path| in_git(path));
        Ok(Plan::between_with(&then, now, &BTreeSet::new(), git).apply(workspace, objects))
    }
}

/// The first path where the workspace `now` differs from what the
/// preview saw when it started: at a path it changes, or below one it
/// changes or replaced (a path made there meanwhile too).
fn changed_since<'p>(preview: &'p Preview, now: &'p State) -> Option<&'p [u8]> {
    for (path, started) in &preview.started {
        let same = match (now.get(path), started) {
            (None, None) => true,
            (Some(now), Some(started)) => now.same_as(started),
            _ => false,
        };
        if !same {
            return Some(path);
        }
    }
    for root in &preview.roots {
        let at_root = now.get_key_value(root.as_slice()).into_iter();
        for (path, _) in at_root.chain(below_in(now, root)) {
            if !preview.started.contains_key(path) {
                return Some(path);
            }
        }
    }
    None
}

#[cfg(test)]
#[path = "preview_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "preview_props_tests.rs"]
mod props;
