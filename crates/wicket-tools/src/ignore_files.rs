//! The ignore rules grep honours, read through the resolver's rules: every
//! `.gitignore` and `.ignore` is opened relative to a held folder with
//! `O_NOFOLLOW | O_NONBLOCK`, must be a regular file, and is read only up
//! to [`IGNORE_FILE_MAX_BYTES`]. A FIFO, a device or a link named
//! `.gitignore` is not an ignore file; it can neither hang nor exhaust a
//! search.
//!
//! Which files apply follows git and ripgrep: inside the searched tree,
//! every folder's `.ignore` (first) and `.gitignore`; above the workspace
//! root, nothing — unless the workspace lies inside a git repository whose
//! root is above it, and then that repository's `.gitignore` files from its
//! root down, and its `.git/info/exclude`.

use std::ffi::OsStr;
use std::fs::File;
use std::io::Read;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use rustix::fs::{AtFlags, FileType, Mode, OFlags};

use crate::limits::IGNORE_FILE_MAX_BYTES;

/// Opens `name` in `dir` as a regular file of at most the cap, or `None`.
pub(crate) fn read_capped(dir: impl AsFd, name: &OsStr, cap: u64) -> Option<Vec<u8>> {
    let fd = rustix::fs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .ok()?;
    let stat = rustix::fs::fstat(&fd).ok()?;
    if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile || stat.st_size as u64 > cap {
        return None;
    }
    let mut bytes = Vec::new();
    File::from(fd).take(cap).read_to_end(&mut bytes).ok()?;
    Some(bytes)
}

/// The rules of one ignore file, built for the folder `dir` (absolute).
fn rules(dir_fd: impl AsFd, dir: &Path, name: &str) -> Option<Gitignore> {
    let bytes = read_capped(dir_fd, OsStr::new(name), IGNORE_FILE_MAX_BYTES)?;
    let text = String::from_utf8_lossy(&bytes);
    let mut builder = GitignoreBuilder::new(dir);
    let from = dir.join(name);
    for line in text.lines() {
        // A bad line is skipped, as git skips it.
        let _ = builder.add_line(Some(from.clone()), line);
    }
    builder.build().ok().filter(|rules| !rules.is_empty())
}

/// The ignore files of one folder.
#[derive(Debug, Default)]
pub(crate) struct Level {
    ignore: Option<Gitignore>,
    gitignore: Option<Gitignore>,
}

impl Level {
    /// Reads `.ignore` and `.gitignore` in the held folder `dir_fd`, which is `dir`.
    pub(crate) fn read(dir_fd: impl AsFd, dir: &Path) -> Level {
        Level {
            ignore: rules(dir_fd.as_fd(), dir, ".ignore"),
            gitignore: rules(dir_fd.as_fd(), dir, ".gitignore"),
        }
    }

    /// Only the `.gitignore` of a folder (above the workspace: git's rules only).
    fn git_only(dir_fd: impl AsFd, dir: &Path) -> Level {
        Level {
            ignore: None,
            gitignore: rules(dir_fd, dir, ".gitignore"),
        }
    }

    fn is_empty(&self) -> bool {
        self.ignore.is_none() && self.gitignore.is_none()
    }

    fn decide(&self, path: &Path, is_dir: bool) -> Option<bool> {
        for rules in [&self.ignore, &self.gitignore].into_iter().flatten() {
            match rules.matched(path, is_dir) {
                Match::Ignore(_) => return Some(true),
                Match::Whitelist(_) => return Some(false),
                Match::None => {}
            }
        }
        None
    }
}

/// Every level of rules that applies at a point of the walk, root first.
/// A clone shares the levels: each folder a parallel walk has yet to list
/// holds the rules above it.
#[derive(Debug, Default, Clone)]
pub(crate) struct Rules {
    levels: Vec<Arc<Level>>,
    /// `.git/info/exclude` of the repository, weakest of all.
    exclude: Option<Arc<Gitignore>>,
}

impl Rules {
    /// Adds the next folder's level (may be empty; popped with [`Rules::pop`]).
    pub(crate) fn push(&mut self, level: Level) {
        self.levels.push(Arc::new(level));
    }

    /// Whether any level holds any rule.
    pub(crate) fn any(&self) -> bool {
        self.exclude.is_some() || self.levels.iter().any(|level| !level.is_empty())
    }

    /// Drops the deepest level.
    pub(crate) fn pop(&mut self) {
        self.levels.pop();
    }

    /// Whether `path` (absolute) is ignored: the deepest level that has a
    /// say decides; `.ignore` before `.gitignore` within a level.
    pub(crate) fn ignored(&self, path: &Path, is_dir: bool) -> bool {
        for level in self.levels.iter().rev() {
            if let Some(ignored) = level.decide(path, is_dir) {
                return ignored;
            }
        }
        match &self.exclude {
            Some(exclude) => exclude.matched(path, is_dir).is_ignore(),
            None => false,
        }
    }

    /// The rules that apply above a workspace root: none, unless the root
    /// lies inside a git repository whose root is above it.
    pub(crate) fn above(workspace_root: &Path) -> Rules {
        let mut rules = Rules::default();
        let Some(repository) = repository_root(workspace_root) else {
            return rules;
        };
        let exclude_dir = repository.join(".git").join("info");
        if let Ok(fd) = open_dir_path(&exclude_dir) {
            rules.exclude = self::rules(&fd, &repository, "exclude").map(Arc::new);
        }
        if repository == workspace_root {
            return rules;
        }
        let mut dir = repository.clone();
        let below: Vec<_> = workspace_root
            .strip_prefix(&repository)
            .map(|rest| rest.components().collect())
            .unwrap_or_default();
        // The repository root and each folder down to the workspace's parent.
        for component in std::iter::once(None).chain(below.iter().map(Some)) {
            if let Some(component) = component {
                dir.push(component);
            }
            if dir == workspace_root {
                break;
            }
            if let Ok(fd) = open_dir_path(&dir) {
                let level = Level::git_only(&fd, &dir);
                if !level.is_empty() {
                    rules.push(level);
                }
            }
        }
        rules
    }
}

fn open_dir_path(path: &Path) -> rustix::io::Result<OwnedFd> {
    rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
}

/// The nearest folder at or above `start` holding `.git` (a folder, or a
/// file as in a worktree or submodule).
fn repository_root(start: &Path) -> Option<PathBuf> {
    let mut dir = Some(start);
    while let Some(here) = dir {
        if let Ok(fd) = open_dir_path(here)
            && rustix::fs::statat(&fd, ".git", AtFlags::SYMLINK_NOFOLLOW).is_ok()
        {
            return Some(here.to_path_buf());
        }
        dir = here.parent();
    }
    None
}
