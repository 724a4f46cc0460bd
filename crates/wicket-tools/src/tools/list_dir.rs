//! list_dir: one level of names, sorted; folders end in `/`, a symlink shows as
//! `name -> target` and is not followed; at most [`LIST_DIR_MAX_ENTRIES`].

use std::os::unix::ffi::OsStrExt;

use rustix::fs::{AtFlags, Dir, FileType};
use wicket_protocol::{ListDirArgs, ListDirOutput};

use crate::error::{Error, Result};
use crate::limits::LIST_DIR_MAX_ENTRIES;
use crate::resolve::{Location, Workspace, file_type};

/// list_dir.
pub fn list_dir(
    workspace: &Workspace,
    location: &Location,
    args: &ListDirArgs,
) -> Result<ListDirOutput> {
    let shown = args.path.as_deref().unwrap_or(".");
    let fd = workspace.open_dir(location, shown)?;
    let mut dir = Dir::read_from(&fd).map_err(|error| Error::io(shown, error))?;
    let mut names: Vec<(Vec<u8>, FileType)> = Vec::new();
    // What is hidden from the tools is left out, and counted.
    let hidden = workspace.hidden();
    let folder = (!hidden.is_empty())
        .then(|| crate::resolve::real_path(&fd))
        .flatten();
    let mut left_out = 0;
    while let Some(entry) = dir.read() {
        let entry = entry.map_err(|error| Error::io(shown, error))?;
        let name = entry.file_name().to_bytes();
        if name == b"." || name == b".." {
            continue;
        }
        if let Some(folder) = &folder {
            let path = folder.join(std::ffi::OsStr::from_bytes(name));
            if hidden.iter().any(|hidden| path.starts_with(hidden)) {
                left_out += 1;
                continue;
            }
        }
        let mut kind = entry.file_type();
        if kind == FileType::Unknown
            && let Ok(stat) = rustix::fs::statat(&fd, entry.file_name(), AtFlags::SYMLINK_NOFOLLOW)
        {
            kind = file_type(&stat);
        }
        names.push((name.to_vec(), kind));
    }
    names.sort_by(|a, b| a.0.cmp(&b.0));
    let omitted = names.len().saturating_sub(LIST_DIR_MAX_ENTRIES) as u64;
    let entries = names
        .into_iter()
        .take(LIST_DIR_MAX_ENTRIES)
        .map(|(name, kind)| {
            let text = String::from_utf8_lossy(&name).into_owned();
            match kind {
                FileType::Directory => format!("{text}/"),
                FileType::Symlink => {
                    let target =
                        rustix::fs::readlinkat(&fd, std::ffi::OsStr::from_bytes(&name), Vec::new())
                            .map(|target| String::from_utf8_lossy(target.as_bytes()).into_owned())
                            .unwrap_or_else(|_| "?".into());
                    format!("{text} -> {target}")
                }
                _ => text,
            }
        })
        .collect();
    Ok(ListDirOutput {
        entries,
        omitted,
        hidden: left_out,
    })
}
