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
use std::io::Read;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use wicket_protocol::EffectKind;
use wicket_tools::Workspace;

use crate::objects::hash_of;
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
    preview: Preview,
}

impl Reader<'_> {
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
            // `.git` and `.wicket` stay as they are: a preview never applies them.
            if wicket_protocol::guarded::git_or_wicket(Path::new(std::ffi::OsStr::from_bytes(
                &child,
            ))) {
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
        let before = self.before.get(path);
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
            }),
        }
    }

    /// A whiteout: the path, and all below it, are gone.
    fn removed(&mut self, path: &[u8]) {
        let Some(before) = self.before.get(path) else {
            return;
        };
        self.note_below(path);
        self.preview.changes.insert(path.to_vec(), None);
        self.preview.seen.push(Effected {
            path: path.to_vec(),
            kind: EffectKind::Deleted,
            old: self.shown(before),
            new: None,
            mode: None,
            bytes: 0,
            dir: before.kind() == Some(wicket_tools::tree::Kind::Dir),
            ignored: false,
        });
    }

    /// Records what `path` and everything below it held at the start.
    fn note_below(&mut self, path: &[u8]) {
        self.preview
            .started
            .insert(path.to_vec(), self.before.get(path).cloned());
        for inner in self.inner(path) {
            let entry = self.before.get(&inner).cloned();
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

    /// The paths the workspace held below `path` when the preview started.
    fn inner(&self, path: &[u8]) -> Vec<Vec<u8>> {
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
            });
        }
        self.folder(&dir, path);
    }

    /// Everything below an opaque folder, removed (entries the upper layer
    /// has are put back by their own change, read after this).
    fn removed_below(&mut self, path: &[u8]) {
        for inner in self.inner(path) {
            let entry = self.before.get(&inner).cloned();
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
        let mut bytes = Vec::new();
        if let Err(error) = std::fs::File::from(fd).read_to_end(&mut bytes) {
            self.preview.unread.push(io(path, error));
            return;
        }
        let hash = hash_of(&bytes);
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
        if !self.put(path, before, &hash, &bytes, entry) {
            return;
        }
        let size = bytes.len() as u64;
        bytes.truncate(SHOWN_BYTES);
        self.preview.seen.push(Effected {
            path: path.to_vec(),
            kind,
            old: before.and_then(|before| self.shown(before)),
            new: Some(bytes),
            mode: Some(mode),
            bytes: size,
            dir: false,
            ignored: false,
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
        self.preview.started.insert(path.to_vec(), before.cloned());
        if before.is_some_and(|before| matches!(before.content, Content::Dir)) {
            self.removed_below(path);
        }
        self.preview.changes.insert(path.to_vec(), Some(entry));
        true
    }

    /// A file's bytes as they were, from the store, for the diff.
    fn shown(&self, before: &Entry) -> Option<Vec<u8>> {
        match &before.content {
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
    for seen in &mut preview.seen {
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
    /// taken before the command); its new bytes go into the store.
    pub fn preview(
        &self,
        workspace: &Workspace,
        settings: &Settings,
        upper: &Path,
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
            preview: Preview::default(),
        };
        reader.folder(&root, b"");
        objects.flush().map_err(self.io(objects.dir(), "written"))?;
        let mut preview = reader.preview;
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
        if let Err(error) = self.take_in(cache, workspace, settings, seq, tool, true) {
            *guard = None;
            return Err(error);
        }
        let now = &cache.journaled;
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
        Ok(Plan::between(&then, now, &BTreeSet::new()).apply(workspace, objects))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    struct World {
        _dir: tempfile::TempDir,
        ws: std::path::PathBuf,
        upper: std::path::PathBuf,
        workspace: Workspace,
        store: Store,
    }

    fn world() -> World {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let ws = root.join("ws");
        let upper = root.join("upper");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::create_dir_all(&upper).unwrap();
        std::fs::write(ws.join("x.txt"), "a\n").unwrap();
        std::fs::write(ws.join("y.txt"), "gone\n").unwrap();
        std::fs::write(ws.join("run.sh"), "echo hi\n").unwrap();
        std::fs::create_dir_all(ws.join("old")).unwrap();
        std::fs::write(ws.join("old/inner"), "inner\n").unwrap();
        World {
            workspace: Workspace::open(&ws).unwrap(),
            store: Store::new(&root.join("sessions/one"), &root.join("store")),
            _dir: dir,
            ws,
            upper,
        }
    }

    /// What the overlay leaves for `sed -i s/a/b/ x.txt; rm y.txt; mkdir d;
    /// echo n > d/new; chmod +x run.sh; ln -s /etc/passwd link`, made by
    /// hand: a whiteout is a character device 0:0.
    fn upper_of_a_command(w: &World) {
        let upper = &w.upper;
        std::fs::write(upper.join("x.txt"), "b\n").unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            upper.join("y.txt"),
            FileType::CharacterDevice,
            Mode::empty(),
            0,
        )
        .unwrap();
        std::fs::create_dir(upper.join("d")).unwrap();
        std::fs::write(upper.join("d/new"), "n\n").unwrap();
        std::fs::write(upper.join("run.sh"), "echo hi\n").unwrap();
        std::fs::set_permissions(upper.join("run.sh"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
        std::os::unix::fs::symlink("/etc/passwd", upper.join("link")).unwrap();
    }

    fn kinds(preview: &Preview) -> Vec<(String, EffectKind)> {
        preview
            .seen
            .iter()
            .map(|seen| (wicket_tools::tree::shown(&seen.path), seen.kind))
            .collect()
    }

    #[test]
    fn the_upper_layer_reads_as_each_change_and_applies_as_a_plain_run_would() {
        let w = world();
        let settings = Settings::default();
        w.store.take(&w.workspace, &settings, 1, "run").unwrap();
        upper_of_a_command(&w);
        let preview = w.store.preview(&w.workspace, &settings, &w.upper).unwrap();
        assert_eq!(
            kinds(&preview),
            vec![
                ("d".into(), EffectKind::Created),
                ("d/new".into(), EffectKind::Created),
                ("link".into(), EffectKind::Link),
                ("run.sh".into(), EffectKind::Mode),
                ("x.txt".into(), EffectKind::Modified),
                ("y.txt".into(), EffectKind::Deleted),
            ]
        );
        let x = preview
            .seen
            .iter()
            .find(|seen| seen.path == b"x.txt")
            .unwrap();
        assert_eq!(
            (x.old.as_deref(), x.new.as_deref()),
            (Some(&b"a\n"[..]), Some(&b"b\n"[..]))
        );
        // Nothing in the workspace yet.
        assert_eq!(std::fs::read_to_string(w.ws.join("x.txt")).unwrap(), "a\n");
        assert!(w.ws.join("y.txt").exists() && !w.ws.join("d").exists());
        let applied = w
            .store
            .apply_preview(&w.workspace, &settings, &preview, 2, "preview")
            .unwrap();
        assert!(applied.failed.is_empty(), "{applied:?}");
        assert_eq!(std::fs::read_to_string(w.ws.join("x.txt")).unwrap(), "b\n");
        assert!(!w.ws.join("y.txt").exists());
        assert_eq!(std::fs::read_to_string(w.ws.join("d/new")).unwrap(), "n\n");
        let mode = std::fs::metadata(w.ws.join("run.sh"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o755);
        // The link is made as a link: nothing is written through it.
        let link = std::fs::symlink_metadata(w.ws.join("link")).unwrap();
        assert!(link.file_type().is_symlink());
        assert_eq!(
            std::fs::read_link(w.ws.join("link")).unwrap(),
            std::path::Path::new("/etc/passwd")
        );
        assert_eq!(
            std::fs::read_to_string(w.ws.join("old/inner")).unwrap(),
            "inner\n",
            "what the command left alone stays"
        );
    }

    #[test]
    fn a_file_edited_in_the_workspace_meanwhile_stops_the_apply_and_is_named() {
        let w = world();
        let settings = Settings::default();
        w.store.take(&w.workspace, &settings, 1, "run").unwrap();
        upper_of_a_command(&w);
        let preview = w.store.preview(&w.workspace, &settings, &w.upper).unwrap();
        std::fs::write(w.ws.join("x.txt"), "edited meanwhile\n").unwrap();
        let refused = w
            .store
            .apply_preview(&w.workspace, &settings, &preview, 2, "preview")
            .unwrap_err();
        assert!(
            matches!(&refused, Error::ChangedSincePreview(path) if path == "x.txt"),
            "{refused}"
        );
        assert_eq!(
            std::fs::read_to_string(w.ws.join("x.txt")).unwrap(),
            "edited meanwhile\n"
        );
        assert!(w.ws.join("y.txt").exists() && !w.ws.join("d").exists());
    }

    #[test]
    fn an_opaque_folder_replaces_what_was_below_it_and_a_link_in_place_of_a_folder_carries_no_write()
     {
        let w = world();
        let settings = Settings::default();
        w.store.take(&w.workspace, &settings, 1, "run").unwrap();
        // `rm -rf old; mkdir old; echo fresh > old/fresh`
        std::fs::create_dir(w.upper.join("old")).unwrap();
        rustix::fs::setxattr(
            w.upper.join("old"),
            "user.overlay.opaque",
            b"y",
            rustix::fs::XattrFlags::empty(),
        )
        .unwrap();
        std::fs::write(w.upper.join("old/fresh"), "fresh\n").unwrap();
        let preview = w.store.preview(&w.workspace, &settings, &w.upper).unwrap();
        w.store
            .apply_preview(&w.workspace, &settings, &preview, 2, "preview")
            .unwrap();
        assert!(!w.ws.join("old/inner").exists());
        assert_eq!(
            std::fs::read_to_string(w.ws.join("old/fresh")).unwrap(),
            "fresh\n"
        );

        // A link where a folder was, and a file below the folder's name.
        let w = world();
        w.store.take(&w.workspace, &settings, 1, "run").unwrap();
        let outside = w.ws.parent().unwrap().join("outside");
        std::fs::create_dir(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, w.upper.join("old")).unwrap();
        let preview = w.store.preview(&w.workspace, &settings, &w.upper).unwrap();
        w.store
            .apply_preview(&w.workspace, &settings, &preview, 2, "preview")
            .unwrap();
        assert!(
            std::fs::symlink_metadata(w.ws.join("old"))
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(
            std::fs::read_dir(&outside).unwrap().count(),
            0,
            "nothing written through it"
        );
    }
}
