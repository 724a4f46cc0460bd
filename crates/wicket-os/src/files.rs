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

/// Flags for opening a file Wicket keeps for itself: never wait on a FIFO
/// or a device (a FIFO opens at once, and is then refused by [`regular`]),
/// never follow a link in its place, never take a terminal.
fn own_file_flags() -> i32 {
    (rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NOCTTY)
        .bits() as i32
}

/// `file` (opened from `path`) when it is a regular file, else an error
/// naming the file and what it is instead.
fn regular(path: &Path, file: File) -> std::io::Result<File> {
    let kind = file.metadata()?.file_type();
    if kind.is_file() {
        return Ok(file);
    }
    use std::os::unix::fs::FileTypeExt;
    let what = if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_char_device() || kind.is_block_device() {
        "a device"
    } else if kind.is_dir() {
        "a folder"
    } else {
        "not a regular file"
    };
    Err(std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        format!(
            "it is {what}, where Wicket keeps a regular file; move {} away (Wicket makes the file again)",
            path.display()
        ),
    ))
}

/// The error of opening `path` without following a link or waiting on a
/// FIFO, said plainly: a link (`ELOOP`) or a FIFO no one reads (`ENXIO`, for
/// a write) named as what it is.
fn named(path: &Path, error: std::io::Error) -> std::io::Error {
    let errno = error.raw_os_error();
    if errno != Some(rustix::io::Errno::LOOP.raw_os_error())
        && errno != Some(rustix::io::Errno::NXIO.raw_os_error())
    {
        return error;
    }
    let what = match std::fs::symlink_metadata(path).map(|metadata| metadata.file_type()) {
        Ok(kind) if kind.is_symlink() => "a symbolic link",
        Ok(kind) if std::os::unix::fs::FileTypeExt::is_fifo(&kind) => "a FIFO",
        Ok(kind) if std::os::unix::fs::FileTypeExt::is_socket(&kind) => "a socket",
        _ => return error,
    };
    std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        format!(
            "it is {what}, where Wicket keeps a regular file; move {} away (Wicket makes the file again)",
            path.display()
        ),
    )
}

/// Opens `path` for appending (creating it 0600), for a log. Anything but
/// a regular file there (a FIFO, a device, a link) is refused, never waited on.
pub fn open_private_append(path: &Path) -> std::io::Result<File> {
    let file = OpenOptions::new()
        .create(true)
        .read(true)
        .append(true)
        .mode(PRIVATE_FILE_MODE)
        .custom_flags(own_file_flags())
        .open(path)
        .map_err(|error| named(path, error))?;
    regular(path, file)
}

/// Opens one of Wicket's own files for reading; `None` when it is absent.
/// Anything but a regular file there (a FIFO, a device, a link) is refused,
/// never waited on.
pub fn open_own(path: &Path) -> std::io::Result<Option<File>> {
    match OpenOptions::new()
        .read(true)
        .custom_flags(own_file_flags())
        .open(path)
    {
        Ok(file) => regular(path, file).map(Some),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(named(path, error)),
    }
}

/// Reads one of Wicket's own files whole, as [`open_own`] opens it, when it
/// is at most `cap` bytes; `None` when it is absent.
pub fn read_own(path: &Path, cap: u64) -> std::io::Result<Option<Vec<u8>>> {
    use std::io::Read;
    let Some(file) = open_own(path)? else {
        return Ok(None);
    };
    let size = file.metadata()?.len();
    if size > cap {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "{} is {size} bytes, more than the {cap} Wicket ever writes there; it is damaged, move it away",
                path.display()
            ),
        ));
    }
    let mut bytes = Vec::new();
    file.take(cap).read_to_end(&mut bytes)?;
    Ok(Some(bytes))
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

/// Where the data of `file` at or after `offset` begins, past any hole (a
/// stretch of a sparse file never written: it reads as zeros, so it holds
/// no newline and no text); `None` when nothing but a hole is left. A
/// filesystem that keeps no holes says the data begins at `offset`. It
/// moves the file's offset (read with `pread`, or seek back).
pub fn data_from(file: &File, offset: u64) -> std::io::Result<Option<u64>> {
    match rustix::fs::seek(file, rustix::fs::SeekFrom::Data(offset)) {
        Ok(at) => Ok(Some(at)),
        Err(rustix::io::Errno::NXIO) => Ok(None),
        Err(rustix::io::Errno::INVAL | rustix::io::Errno::OPNOTSUPP) => Ok(Some(offset)),
        Err(error) => Err(error.into()),
    }
}

/// Where the hole after `offset` begins in `file`: its size when it has
/// none there (a filesystem that keeps no holes has none anywhere). It
/// moves the file's offset, as [`data_from`] does.
pub fn hole_from(file: &File, offset: u64) -> std::io::Result<u64> {
    match rustix::fs::seek(file, rustix::fs::SeekFrom::Hole(offset)) {
        Ok(at) => Ok(at),
        Err(rustix::io::Errno::NXIO | rustix::io::Errno::INVAL | rustix::io::Errno::OPNOTSUPP) => {
            Ok(file.metadata()?.len())
        }
        Err(error) => Err(error.into()),
    }
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
        .custom_flags(own_file_flags())
        .open(path)
        .map_err(|error| named(path, error))?;
    let file = regular(path, file)?;
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
    let bytes = read_own(path, 64).ok()??;
    std::str::from_utf8(&bytes).ok()?.trim().parse().ok()
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

    #[test]
    fn a_sparse_file_s_data_and_holes_are_found_without_reading_them() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sparse");
        let mut file = OpenOptions::new()
            .create(true)
            .truncate(true)
            .read(true)
            .write(true)
            .open(&path)
            .unwrap();
        file.write_all(b"text\n").unwrap();
        // A hole of 64 GiB past the text, then nothing.
        file.set_len(64 << 30).unwrap();
        assert_eq!(data_from(&file, 0).unwrap(), Some(0));
        let hole = hole_from(&file, 0).unwrap();
        assert!((5..64 << 30).contains(&hole), "{hole}");
        assert_eq!(data_from(&file, hole).unwrap(), None, "only a hole is left");
        let plain = dir.path().join("plain");
        std::fs::write(&plain, b"abc").unwrap();
        let plain = File::open(&plain).unwrap();
        assert_eq!(hole_from(&plain, 0).unwrap(), 3);
    }

    #[test]
    fn a_fifo_or_a_link_in_place_of_an_own_file_is_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("log.jsonl");
        rustix::fs::mkfifoat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
        )
        .unwrap();
        for error in [
            open_private_append(&fifo).unwrap_err(),
            open_own(&fifo).unwrap_err(),
            read_own(&fifo, 10).unwrap_err(),
            lock(&fifo, std::time::Duration::ZERO).unwrap_err(),
        ] {
            assert!(error.to_string().contains("is a FIFO"), "{error}");
            assert!(error.to_string().contains("log.jsonl"), "{error}");
        }
        let link = dir.path().join("meta.json");
        std::os::unix::fs::symlink("/etc/hostname", &link).unwrap();
        let error = open_own(&link).unwrap_err();
        assert!(error.to_string().contains("symbolic link"), "{error}");
        assert!(open_own(&dir.path().join("absent")).unwrap().is_none());
    }
}
