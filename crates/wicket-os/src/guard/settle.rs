//! What [`super::Found::settle`] does after a command.

use std::ffi::OsStr;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode};
use rustix::io::Errno;

use super::{Found, Kind, changed_since, names, open_dir, open_root, scan_since};

/// What [`Found::settle`] did after a command.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Settled {
    /// Entries named `.git` or `.wicket` the command made, removed (relative).
    pub removed: Vec<PathBuf>,
    /// Links named `.git` or `.wicket` the command replaced, put back (relative).
    pub restored: Vec<PathBuf>,
    /// What could not be undone, and why.
    pub failed: Vec<String>,
    /// Files the command changed that other tools run later, and who runs each.
    pub runs_later: Vec<(String, String)>,
    /// Folders that were read-only for the command because the scan
    /// before it could not list them, and why (relative).
    pub read_only: Vec<(PathBuf, String)>,
    /// What the scan after the command read of each folder, for the scan
    /// before the next one ([`Found::kept`], [`super::scan_kept`]).
    pub kept: Vec<u8>,
}

impl Settled {
    /// One line a thing, for the command's stderr.
    pub fn lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        for path in &self.removed {
            lines.push(format!(
                "wicket: removed {}, which the command made: without \"git\": true a command may \
                 not make a .git or .wicket, nor a hooks folder or config file a repository's \
                 config names (git and Wicket would run what it holds later); run it again with \
                 \"git\": true if it should stay",
                path.display()
            ));
        }
        for path in &self.restored {
            lines.push(format!(
                "wicket: put back the link {}, which the command replaced: without \"git\": true \
                 a command may not change a .git or .wicket",
                path.display()
            ));
        }
        for failure in &self.failed {
            lines.push(format!("wicket: {failure}"));
        }
        for (path, who) in &self.runs_later {
            lines.push(format!("wicket: changed {path}: {who}"));
        }
        for (path, why) in &self.read_only {
            lines.push(format!(
                "wicket: {path} was read-only for the command: Wicket could not list it ({why}), \
                 so could not check it for .git and .wicket entries; make it readable (chmod \
                 u+rx {path}) if commands should change what it holds",
                path = path.display()
            ));
        }
        lines
    }
}

/// Removes `name` in `folder` and everything below it, no link followed;
/// a folder its owner may not list or empty is made `u+rwx` first.
fn remove_tree(folder: &OwnedFd, name: &OsStr) -> std::io::Result<()> {
    let stat = rustix::fs::statat(folder, name, AtFlags::SYMLINK_NOFOLLOW)?;
    if FileType::from_raw_mode(stat.st_mode) == FileType::Directory {
        let c_name = std::ffi::CString::new(name.as_bytes())?;
        if stat.st_mode & 0o700 != 0o700 {
            let mode = Mode::from_raw_mode((stat.st_mode & 0o7777) | 0o700);
            rustix::fs::chmodat(folder, &c_name, mode, AtFlags::empty())?;
        }
        if let Some(child) = open_dir(folder, &c_name) {
            for (entry, _) in names(&child).0 {
                remove_tree(&child, OsStr::from_bytes(&entry))?;
            }
        }
        rustix::fs::unlinkat(folder, name, AtFlags::REMOVEDIR)?;
    } else {
        rustix::fs::unlinkat(folder, name, AtFlags::empty())?;
    }
    Ok(())
}

/// The folder of `relative`'s parent below `workspace`, reached one real folder at a time.
fn parent_of(workspace: &Path, relative: &Path) -> Option<OwnedFd> {
    let mut folder = open_root(workspace)?;
    for part in relative.parent()?.iter() {
        let name = std::ffi::CString::new(part.as_bytes()).ok()?;
        folder = open_dir(&folder, &name)?;
    }
    Some(folder)
}

impl Found {
    /// After a command (nothing of it left running), made by `since`
    /// (the command's start): undoes what it made or replaced of the
    /// guarded entries (all of them when `write_git` is false, `.wicket`
    /// ones otherwise), and names the files it changed that run later and
    /// the folders that were read-only for it because no one could list them.
    pub fn settle(&self, workspace: &Path, write_git: bool, since: i128) -> Settled {
        let after = scan_since(workspace, Some(since), Some(self));
        let mut settled = Settled::default();
        for (path, kind) in &after.entries {
            let wicket = path.file_name().is_some_and(|name| name == ".wicket");
            if write_git && !wicket {
                continue;
            }
            let before = self.entries.get(path);
            if before != Some(kind) {
                undo(workspace, path, before, since, &mut settled);
            }
        }
        self.put_back_links(workspace, write_git, &after, &mut settled);
        if !write_git {
            self.remove_absent(workspace, &mut settled);
        }
        settled.read_only.clone_from(&self.unscanned);
        for (path, why) in &after.unscanned {
            if !self.unscanned.iter().any(|(before, _)| before == path) {
                settled.failed.push(format!(
                    "could not check {} after the command ({why}): what it made there of .git \
                     and .wicket entries is not undone; look before running git there",
                    path.display()
                ));
            }
        }
        put_back_modes(workspace, &after.reopened, &mut settled);
        settled.kept = after.kept();
        settled.runs_later = after.changed_later;
        settled
    }

    /// Puts back a guarded link the command removed without making
    /// anything in its place (`after` has no entry there).
    fn put_back_links(
        &self,
        workspace: &Path,
        write_git: bool,
        after: &Found,
        settled: &mut Settled,
    ) {
        for (path, kind) in &self.entries {
            let Kind::Link(target) = kind else {
                continue;
            };
            let wicket = path.file_name().is_some_and(|name| name == ".wicket");
            if (write_git && !wicket) || after.entries.contains_key(path) {
                continue;
            }
            if let (Some(parent), Some(name)) = (parent_of(workspace, path), path.file_name())
                && rustix::fs::symlinkat(target.as_os_str(), &parent, name).is_ok()
            {
                settled.restored.push(path.clone());
            }
        }
    }

    /// Removes what the command made where a repository's config names a
    /// hooks folder or an included config that was not there before.
    fn remove_absent(&self, workspace: &Path, settled: &mut Settled) {
        for path in &self.absent {
            let made = std::fs::symlink_metadata(workspace.join(path)).is_ok();
            let (Some(parent), Some(name)) = (parent_of(workspace, path), path.file_name()) else {
                continue;
            };
            if made {
                match remove_tree(&parent, name) {
                    Ok(()) => settled.removed.push(path.clone()),
                    Err(error) => settled.failed.push(format!(
                        "could not remove {}, which the command made where the repository's \
                         config names hooks or an included config: {error}",
                        path.display()
                    )),
                }
            }
        }
    }
}

/// Undoes the guarded entry at `path`, which was `before` (nothing, or
/// something else) when the command started at `since`: removes it, and
/// puts back the link it was. One the scan before did not see and the
/// command did not make or change (by its ctime) is left: it lay in a
/// folder that scan could not list, or moved here with its folder.
fn undo(workspace: &Path, path: &Path, before: Option<&Kind>, since: i128, settled: &mut Settled) {
    let Some(parent) = parent_of(workspace, path) else {
        settled
            .failed
            .push(format!("could not reach {} to undo it", path.display()));
        return;
    };
    let Some(name) = path.file_name() else {
        return;
    };
    if before.is_none() && !changed_since(&parent, name, since) {
        return;
    }
    if let Err(error) = remove_tree(&parent, name) {
        settled.failed.push(format!(
            "could not remove {}, which the command made: {error}; remove it before running git \
             there",
            path.display()
        ));
        return;
    }
    match before {
        Some(Kind::Link(target)) => {
            match rustix::fs::symlinkat(target.as_os_str(), &parent, name) {
                Ok(()) => settled.restored.push(path.to_path_buf()),
                Err(error) => settled.failed.push(format!(
                    "could not put back the link {} -> {}: {error}",
                    path.display(),
                    target.display()
                )),
            }
        }
        Some(_) | None => settled.removed.push(path.to_path_buf()),
    }
}

/// Puts back the mode of each folder the scan after a command opened
/// (see [`super::Walker::reopen`]), the deepest first (its parent may be one).
fn put_back_modes(workspace: &Path, reopened: &[(PathBuf, u32)], settled: &mut Settled) {
    let mut reopened: Vec<&(PathBuf, u32)> = reopened.iter().collect();
    reopened.sort_by_key(|(path, _)| std::cmp::Reverse(path.components().count()));
    for (path, mode) in reopened {
        let (Some(parent), Some(name)) = (parent_of(workspace, path), path.file_name()) else {
            // Removed with what held it (a hooks folder the command made).
            continue;
        };
        match rustix::fs::chmodat(&parent, name, Mode::from_raw_mode(*mode), AtFlags::empty()) {
            Ok(()) | Err(Errno::NOENT) => {}
            Err(error) => settled.failed.push(format!(
                "could not put back the mode {mode:o} of {}, which the command left so that \
                 no one could list it: {error}",
                path.display()
            )),
        }
    }
}
