//! Files Wicket writes for itself (not the workspace's: those go through the
//! resolver): atomically, privately (folders 0700, files 0600, whatever the
//! umask), and locks that the kernel lets go when the process dies.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

use crate::ids::random_u64;

/// The mode of every folder Wicket makes for itself.
pub const PRIVATE_DIR_MODE: u32 = 0o700;
/// The mode of every file Wicket writes for itself.
pub const PRIVATE_FILE_MODE: u32 = 0o600;

/// The mode bits a file Wicket writes may carry (a write keeping a file's
/// mode, a rewind's restore, a preview's apply): the permissions and the
/// sticky bit, never setuid or setgid, whoever owns the file and whatever
/// mode it had: a setuid-root file is a way for anyone on the machine to
/// become root.
pub const WRITTEN_MODE_BITS: u32 = 0o1777;

/// Makes `dir` and its missing parents with mode 0700, and narrows `dir`
/// itself to 0700 if it already existed wider.
pub fn private_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(PRIVATE_DIR_MODE)
        .create(dir)?;
    let metadata = std::fs::metadata(dir)?;
    if metadata.permissions().mode() & 0o077 != 0 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(PRIVATE_DIR_MODE))?;
    }
    Ok(())
}

/// Opens `path` for appending (creating it 0600), for a log.
pub fn open_private_append(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .create(true)
        .read(true)
        .append(true)
        .mode(PRIVATE_FILE_MODE)
        .open(path)
}

/// Replaces `path` with `bytes`: a 0600 temporary file beside it, written,
/// (with `durable`) fsynced, renamed over it, and the folder fsynced. A
/// crash leaves the old file or the new one, never a torn one.
pub fn write_atomically(path: &Path, bytes: &[u8], durable: bool) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    let temp = dir.join(format!(".{name}.{:016x}.tmp", random_u64()));
    let result = (|| {
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(PRIVATE_FILE_MODE)
            .open(&temp)?;
        file.write_all(bytes)?;
        if durable {
            file.sync_all()?;
        }
        std::fs::rename(&temp, path)?;
        if durable {
            File::open(dir)?.sync_all()?;
        }
        Ok(())
    })();
    if result.is_err() {
        // The write failed: its temporary file goes; if that fails too it is only a stray file beside the target.
        let _ = std::fs::remove_file(&temp);
    }
    result
}

/// Reads a regular file of at most `cap` bytes without ever blocking on a
/// FIFO or device (opened non-blocking, then checked); `None` when absent.
pub fn read_regular(path: &Path, cap: u64) -> std::io::Result<Option<Vec<u8>>> {
    use std::io::Read;
    let file = match OpenOptions::new()
        .read(true)
        .custom_flags((rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOCTTY).bits() as i32)
        .open(path)
    {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(error),
    };
    let metadata = file.metadata()?;
    if !metadata.is_file() {
        return Err(std::io::Error::other(format!(
            "{} is not a regular file",
            path.display()
        )));
    }
    if metadata.len() > cap {
        return Err(std::io::Error::other(format!(
            "{} is {} bytes, more than the {cap} read",
            path.display(),
            metadata.len()
        )));
    }
    let mut bytes = Vec::new();
    file.take(cap).read_to_end(&mut bytes)?;
    Ok(Some(bytes))
}

/// What [`lock`] found.
#[derive(Debug)]
pub enum Locked {
    /// This process holds the lock while the file stays open.
    Held(File),
    /// Another process holds it.
    Busy,
}

/// Takes an exclusive `flock` on `path` (created 0600), trying again for
/// `patience` before calling it busy: a lock just let go can be held for an
/// instant by a child between its fork and its exec.
pub fn lock(path: &Path, patience: std::time::Duration) -> std::io::Result<Locked> {
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(PRIVATE_FILE_MODE)
        .open(path)?;
    let deadline = std::time::Instant::now() + patience;
    loop {
        match rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => return Ok(Locked::Held(file)),
            Err(rustix::io::Errno::WOULDBLOCK) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            Err(rustix::io::Errno::WOULDBLOCK) => return Ok(Locked::Busy),
            Err(error) => return Err(error.into()),
        }
    }
}

/// Writes this process's pid into a lock file it holds, so a refusal can name the holder.
pub fn record_holder(file: &mut File) -> std::io::Result<()> {
    file.set_len(0)?;
    use std::io::Seek;
    file.seek(std::io::SeekFrom::Start(0))?;
    write!(file, "{}", std::process::id())?;
    file.flush()
}

/// The pid a lock file names, if it names one.
pub fn holder(path: &Path) -> Option<u32> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_files_and_folders_ignore_the_umask() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("a/b");
        private_dir(&home).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&home), 0o700);
        std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o755)).unwrap();
        private_dir(&home).unwrap();
        assert_eq!(mode(&home), 0o700);
        let file = home.join("meta.json");
        write_atomically(&file, b"{}", true).unwrap();
        assert_eq!(mode(&file), 0o600);
        assert_eq!(std::fs::read(&file).unwrap(), b"{}");
        let log = home.join("log.jsonl");
        drop(open_private_append(&log).unwrap());
        assert_eq!(mode(&log), 0o600);
        let leftovers: Vec<_> = std::fs::read_dir(&home)
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
            .collect();
        assert!(leftovers.is_empty());
    }

    #[test]
    fn a_lock_has_one_holder_and_names_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lock");
        let Locked::Held(mut first) = lock(&path, std::time::Duration::ZERO).unwrap() else {
            panic!("the first lock is busy");
        };
        record_holder(&mut first).unwrap();
        assert!(matches!(
            lock(&path, std::time::Duration::from_millis(30)).unwrap(),
            Locked::Busy
        ));
        assert_eq!(holder(&path), Some(std::process::id()));
        drop(first);
        assert!(matches!(
            lock(&path, std::time::Duration::ZERO).unwrap(),
            Locked::Held(_)
        ));
    }
}
