//! The object store: each distinct content once, named by its SHA-256
//! (`objects/ab/cdef…`), written under a temporary name and renamed, so an
//! object is whole or absent. Objects are not fsynced (a checkpoint before
//! every call cannot pay for it): a copy a crash damaged is found by its
//! hash when a rewind reads it, and that file is reported, not written.

use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::state::Hash;

pub(crate) struct Objects {
    dir: PathBuf,
}

pub(crate) fn hash_of(bytes: &[u8]) -> Hash {
    Sha256::digest(bytes).into()
}

impl Objects {
    pub(crate) fn new(dir: PathBuf) -> Objects {
        Objects { dir }
    }

    fn path_of(&self, hash: &Hash) -> PathBuf {
        let name = hex::encode(hash);
        self.dir.join(&name[..2]).join(&name[2..])
    }

    /// Stores `bytes` (whose hash is `hash`); true when it was not there yet.
    pub(crate) fn put(&self, hash: &Hash, bytes: &[u8]) -> std::io::Result<bool> {
        let path = self.path_of(hash);
        // A copy a crash cut short is written again.
        if std::fs::metadata(&path).is_ok_and(|meta| meta.len() == bytes.len() as u64) {
            return Ok(false);
        }
        let folder = path.parent().unwrap_or(&self.dir);
        std::fs::create_dir_all(folder)?;
        let temp = folder.join(format!(".{:016x}.tmp", wicket_os::ids::random_u64()));
        let written = (|| {
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&temp)?;
            file.write_all(bytes)?;
            std::fs::rename(&temp, &path)
        })();
        if written.is_err() {
            // The temporary copy goes; if that fails too it is only a stray file in the store.
            let _ = std::fs::remove_file(&temp);
        }
        written.map(|()| true)
    }

    /// Whether the store holds `hash` (not read: [`Objects::get`] checks the bytes).
    pub(crate) fn has(&self, hash: &Hash) -> bool {
        self.path_of(hash).is_file()
    }

    /// The bytes of `hash`, checked against it.
    pub(crate) fn get(&self, hash: &Hash) -> std::io::Result<Vec<u8>> {
        let bytes = std::fs::read(self.path_of(hash))?;
        if hash_of(&bytes) != *hash {
            return Err(std::io::Error::other(
                "its saved copy is damaged (a crash while it was written?)",
            ));
        }
        Ok(bytes)
    }

    /// Removes every object not in `keep`; returns how many went.
    pub(crate) fn sweep(&self, keep: &HashSet<Hash>) -> std::io::Result<u64> {
        let mut removed = 0;
        let Ok(folders) = std::fs::read_dir(&self.dir) else {
            return Ok(0);
        };
        for folder in folders {
            let folder = folder?.path();
            let prefix = name_of(&folder);
            for object in std::fs::read_dir(&folder)? {
                let object = object?.path();
                let mut hash = [0u8; 32];
                let named =
                    hex::decode_to_slice(format!("{prefix}{}", name_of(&object)), &mut hash);
                if named.is_err() || !keep.contains(&hash) {
                    std::fs::remove_file(&object)?;
                    removed += 1;
                }
            }
        }
        Ok(removed)
    }

    /// Bytes the store holds (for the benchmark and the tests).
    pub(crate) fn bytes(&self) -> u64 {
        let mut total = 0;
        let Ok(folders) = std::fs::read_dir(&self.dir) else {
            return 0;
        };
        for folder in folders.flatten() {
            for object in std::fs::read_dir(folder.path())
                .into_iter()
                .flatten()
                .flatten()
            {
                total += object.metadata().map_or(0, |meta| meta.len());
            }
        }
        total
    }
}

fn name_of(path: &Path) -> String {
    path.file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default()
}
