//! What a scan read of each folder, kept from one command to the next
//! ([`super::Found::kept`], [`super::scan_kept`]), as bytes: stage 2 is a
//! new process for every command, so what it read last time reaches it in
//! the report file Wicket hands it ([`crate::launch::Report`]), which only
//! Wicket and stage 2 write.
//!
//! Nothing read back is trusted as the workspace is: each folder is taken
//! as it was read only where it is the same inode with the same ctime,
//! older than the scan that read it ([`super::Scan::unchanged`]). Bytes
//! that do not read back whole are no record at all, and the scan lists
//! every folder.
//!
//! A format of our own, length-prefixed: paths are bytes (a folder's name
//! need not be UTF-8, which JSON and serde's `PathBuf` refuse), and the
//! one crate that does this for serde (bincode 1) is no longer kept up.

use std::ffi::{CString, OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::PathBuf;
use std::sync::Arc;

use super::{Kept, Kind, Listed};

/// The first bytes of what a scan kept; another version is read as nothing kept.
const MAGIC: &[u8; 8] = b"wkscan1\n";

/// At most this many bytes of what a scan kept are written or read: past
/// it (a tree of millions of folders), nothing is kept and the next scan
/// lists every folder.
pub const KEPT_MAX_BYTES: usize = 64 * 1024 * 1024;

/// The folders as bytes; empty when they would pass [`KEPT_MAX_BYTES`].
pub(super) fn encode(listed: &Kept) -> Vec<u8> {
    let mut out = Writer(Vec::with_capacity(64 * listed.len() + MAGIC.len()));
    out.0.extend_from_slice(MAGIC);
    out.number(listed.len() as u64);
    for (path, folder) in listed {
        out.bytes(path.as_os_str().as_bytes());
        out.number(folder.ino);
        out.0.extend_from_slice(&folder.ctime.to_le_bytes());
        out.number(folder.names as u64);
        out.0.push(u8::from(folder.git_folder));
        out.number(folder.guarded.len() as u64);
        for (name, kind) in &folder.guarded {
            out.bytes(name.as_bytes());
            match kind {
                Kind::Folder => out.0.push(0),
                Kind::File => out.0.push(1),
                Kind::Link(target) => {
                    out.0.push(2);
                    out.bytes(target.as_os_str().as_bytes());
                }
                Kind::Other => out.0.push(3),
            }
        }
        out.number(folder.folders.len() as u64);
        for name in &folder.folders {
            out.bytes(name.as_bytes());
        }
        out.number(folder.later.len() as u64);
        for (name, path, who) in &folder.later {
            out.bytes(name);
            out.bytes(path.as_bytes());
            out.bytes(who.as_bytes());
        }
        if out.0.len() > KEPT_MAX_BYTES {
            return Vec::new();
        }
    }
    out.0
}

/// The folders `bytes` holds; nothing when they do not read back whole.
pub(super) fn decode(bytes: &[u8]) -> Option<Kept> {
    let mut input = Reader(bytes.strip_prefix(MAGIC)?);
    let mut listed = Kept::new();
    for _ in 0..input.number()? {
        let path = PathBuf::from(OsString::from_vec(input.bytes()?.to_vec()));
        let ino = input.number()?;
        let ctime = i128::from_le_bytes(input.take(16)?.try_into().ok()?);
        let names = usize::try_from(input.number()?).ok()?;
        let git_folder = match input.take(1)? {
            [0] => false,
            [1] => true,
            _ => return None,
        };
        let mut guarded = Vec::new();
        for _ in 0..input.number()? {
            let name = OsStr::from_bytes(input.bytes()?).to_owned();
            let kind = match input.take(1)? {
                [0] => Kind::Folder,
                [1] => Kind::File,
                [2] => Kind::Link(PathBuf::from(OsStr::from_bytes(input.bytes()?))),
                [3] => Kind::Other,
                _ => return None,
            };
            guarded.push((name, kind));
        }
        let mut folders = Vec::new();
        for _ in 0..input.number()? {
            folders.push(CString::new(input.bytes()?).ok()?);
        }
        let mut later = Vec::new();
        for _ in 0..input.number()? {
            let name = input.bytes()?.to_vec();
            let path = std::str::from_utf8(input.bytes()?).ok()?.to_string();
            let who = std::str::from_utf8(input.bytes()?).ok()?.to_string();
            later.push((name, path, who));
        }
        let folder = Listed {
            ino,
            ctime,
            names,
            guarded,
            folders,
            later,
            git_folder,
        };
        listed.insert(path, Arc::new(folder));
    }
    input.0.is_empty().then_some(listed)
}

struct Writer(Vec<u8>);

impl Writer {
    fn number(&mut self, n: u64) {
        self.0.extend_from_slice(&n.to_le_bytes());
    }

    fn bytes(&mut self, bytes: &[u8]) {
        self.number(bytes.len() as u64);
        self.0.extend_from_slice(bytes);
    }
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if n > self.0.len() {
            return None;
        }
        let (taken, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(taken)
    }

    fn number(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = usize::try_from(self.number()?).ok()?;
        self.take(n)
    }
}
