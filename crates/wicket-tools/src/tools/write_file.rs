//! write_file, and the write path search_replace shares: a temporary file
//! beside the resolved target (O_CREAT|O_EXCL|O_NOFOLLOW, random name), fsync,
//! a last check of what is on disk, renameat, fsync of the folder. Renaming
//! replaces the directory entry, so a hard link to an outside inode or a
//! symlink at the target is replaced, never written through.

use std::ffi::OsString;
use std::fs::File;
use std::io::Write;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;
use wicket_protocol::{ErrorKind, WriteOutput};

use crate::error::{Error, Result};
use crate::limits::{WRITE_EXISTING_MAX_BYTES, WRITE_MAX_BYTES};
use crate::resolve::{Location, Resolved, Workspace, read_up_to, require_regular};

/// What a write would replace, read before any card goes up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteTarget {
    /// The resolved absolute path the write lands on.
    pub absolute: PathBuf,
    /// The bytes on disk now, or `None` when the file does not exist.
    pub current: Option<Vec<u8>>,
}

/// Refuses content over [`WRITE_MAX_BYTES`].
pub fn check_content_size(content_len: usize, shown: &str) -> Result<()> {
    if content_len > WRITE_MAX_BYTES {
        return Err(Error::new(
            ErrorKind::TooLarge,
            format!(
                "the content for '{shown}' is {content_len} bytes, more than the {WRITE_MAX_BYTES} a write may have; write it in parts or generate it with a command"
            ),
        ));
    }
    Ok(())
}

fn read_current(resolved: &Resolved, shown: &str) -> Result<Option<Vec<u8>>> {
    let Some(name) = resolved.name.as_deref() else {
        return Err(Error::invalid(format!("'{shown}' is a folder")));
    };
    let fd = match rustix::fs::openat(
        &resolved.dir,
        name,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => fd,
        Err(Errno::NOENT) => return Ok(None),
        Err(Errno::LOOP) => {
            return Err(Error::new(
                ErrorKind::Stale,
                format!("'{shown}' became a symlink; resolving it again"),
            ));
        }
        Err(error) => return Err(Error::io(shown, error)),
    };
    let stat = rustix::fs::fstat(&fd).map_err(|error| Error::io(shown, error))?;
    require_regular(&stat, shown)?;
    if stat.st_size as u64 > WRITE_EXISTING_MAX_BYTES {
        return Err(Error::new(
            ErrorKind::TooLarge,
            format!(
                "'{shown}' is {} bytes; Wicket replaces files of at most {WRITE_EXISTING_MAX_BYTES} bytes",
                stat.st_size
            ),
        ));
    }
    let mut file = File::from(fd);
    read_up_to(&mut file, WRITE_EXISTING_MAX_BYTES + 1, shown).map(Some)
}

/// Resolves a write and reads what it would replace, changing nothing.
pub fn plan_write(workspace: &Workspace, location: &Location, shown: &str) -> Result<WriteTarget> {
    let resolved = workspace.resolve_write(location, false)?;
    let current = if resolved.missing.is_empty() {
        read_current(&resolved, shown)?
    } else {
        None
    };
    Ok(WriteTarget {
        absolute: resolved.absolute,
        current,
    })
}

/// Writes `content` to the location, which must still resolve to
/// `planned.absolute`. `still_current` is asked about the bytes on disk right
/// before the rename; when it says no, nothing is replaced and the error is `stale`.
pub fn commit_write(
    workspace: &Workspace,
    location: &Location,
    planned: &PathBuf,
    content: &[u8],
    still_current: &dyn Fn(Option<&[u8]>) -> bool,
) -> Result<WriteOutput> {
    let shown = planned.to_string_lossy().into_owned();
    check_content_size(content.len(), &shown)?;
    let resolved = workspace.resolve_write(location, true)?;
    if &resolved.absolute != planned {
        return Err(Error::new(
            ErrorKind::Stale,
            format!(
                "'{shown}' now resolves to '{}'",
                resolved.absolute.display()
            ),
        ));
    }
    let Some(name) = resolved.name.clone() else {
        return Err(Error::invalid(format!("'{shown}' is a folder")));
    };
    let mode = match &resolved.stat {
        Some(stat) => Mode::from_raw_mode(stat.st_mode & wicket_os::files::WRITTEN_MODE_BITS),
        None => Mode::from_raw_mode(0o644),
    };
    sweep_abandoned_temps(&resolved, &name);
    let temp_name = temp_name_for(&name);
    let temp = rustix::fs::openat(
        &resolved.dir,
        temp_name.as_os_str(),
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        mode,
    )
    .map_err(|error| {
        Error::io(
            &format!("creating a temporary file beside '{shown}'"),
            error,
        )
    })?;
    let outcome = fill_and_rename(
        &resolved,
        &name,
        &temp_name,
        temp,
        mode,
        content,
        still_current,
        &shown,
    );
    if outcome.is_err() {
        // Cleanup of our own temporary file: one left behind is swept by the next write's check of stale temporaries.
        let _ = rustix::fs::unlinkat(
            &resolved.dir,
            temp_name.as_os_str(),
            rustix::fs::AtFlags::empty(),
        );
    }
    outcome?;
    Ok(WriteOutput {
        path: shown,
        bytes: content.len() as u64,
        runs_later: None,
    })
}

/// `.NAME.wicket-PID-RANDOM.tmp`: beside the target, hidden, and naming the
/// process that made it so a later write can tell an abandoned one.
fn temp_name_for(name: &OsString) -> OsString {
    let mut temp = temp_prefix(name);
    temp.push(format!(
        "{}-{:016x}.tmp",
        std::process::id(),
        wicket_os::ids::random_u64()
    ));
    temp
}

fn temp_prefix(name: &OsString) -> OsString {
    let mut temp = OsString::from(".");
    // Keep the temp name short enough for NAME_MAX whatever the target's length.
    let bytes = name.as_bytes();
    temp.push(std::ffi::OsStr::from_bytes(&bytes[..bytes.len().min(200)]));
    temp.push(".wicket-");
    temp
}

/// The process id in a temp name this module made for `name`, if it is one.
fn temp_owner(entry: &[u8], prefix: &[u8]) -> Option<i32> {
    let rest = entry.strip_prefix(prefix)?.strip_suffix(b".tmp")?;
    let (pid, random) = std::str::from_utf8(rest).ok()?.split_once('-')?;
    if random.len() != 16 || !random.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    pid.parse().ok()
}

/// Removes the temp files a killed write to this same target left behind:
/// only names this module makes, and only when their process is gone.
fn sweep_abandoned_temps(resolved: &Resolved, name: &OsString) {
    let prefix = temp_prefix(name);
    let Ok(fd) = rustix::fs::openat(
        &resolved.dir,
        ".",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    ) else {
        return;
    };
    let Ok(dir) = rustix::fs::Dir::new(fd) else {
        return;
    };
    for entry in dir.flatten() {
        let file_name = entry.file_name().to_bytes();
        let Some(pid) = temp_owner(file_name, prefix.as_bytes()) else {
            continue;
        };
        let alive = rustix::process::Pid::from_raw(pid)
            .is_some_and(|pid| rustix::process::test_kill_process(pid) != Err(Errno::SRCH));
        if !alive {
            // Another process's stale temporary: if it is already gone, so much the better.
            let _ = rustix::fs::unlinkat(
                &resolved.dir,
                std::ffi::OsStr::from_bytes(file_name),
                rustix::fs::AtFlags::empty(),
            );
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn fill_and_rename(
    resolved: &Resolved,
    name: &OsString,
    temp_name: &OsString,
    temp: OwnedFd,
    mode: Mode,
    content: &[u8],
    still_current: &dyn Fn(Option<&[u8]>) -> bool,
    shown: &str,
) -> Result<()> {
    let mut file = File::from(temp);
    file.write_all(content)
        .map_err(|error| Error::io(&format!("writing '{shown}'"), error))?;
    // The umask may have narrowed the mode at create time; the old file's mode wins.
    rustix::fs::fchmod(&file, mode).map_err(|error| Error::io(shown, error))?;
    file.sync_all()
        .map_err(|error| Error::io(&format!("syncing '{shown}'"), error))?;
    let on_disk = read_current(resolved, shown)?;
    if !still_current(on_disk.as_deref()) {
        return Err(Error::new(
            ErrorKind::Stale,
            format!("'{shown}' changed on disk after the card went up"),
        ));
    }
    rustix::fs::renameat(
        &resolved.dir,
        temp_name.as_os_str(),
        &resolved.dir,
        name.as_os_str(),
    )
    .map_err(|error| Error::io(&format!("replacing '{shown}'"), error))?;
    rustix::fs::fsync(&resolved.dir)
        .map_err(|error| Error::io(&format!("syncing the folder of '{shown}'"), error))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_our_own_temp_names_have_an_owner() {
        let name = OsString::from("a.txt");
        let prefix = temp_prefix(&name);
        let ours = temp_name_for(&name);
        assert_eq!(
            temp_owner(ours.as_bytes(), prefix.as_bytes()),
            Some(std::process::id() as i32)
        );
        for other in [
            ".a.txt.wicket-12.tmp",
            ".a.txt.wicket-12-xyz.tmp",
            ".a.txt.wicket-x-0123456789abcdef.tmp",
            ".b.txt.wicket-12-0123456789abcdef.tmp",
            "a.txt",
        ] {
            assert_eq!(
                temp_owner(other.as_bytes(), prefix.as_bytes()),
                None,
                "{other}"
            );
        }
        assert_eq!(
            temp_owner(b".a.txt.wicket-12-0123456789abcdef.tmp", prefix.as_bytes()),
            Some(12)
        );
    }
}
