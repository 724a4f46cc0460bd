//! The object store of one workspace, shared by its sessions
//! (`$WICKET_HOME/checkpoints/<key>/`): each distinct content once, named
//! by its SHA-256.
//!
//! - An object of [`PACK_BELOW`] bytes or more is a file of its own,
//!   `objects/ab/cdef…`, written under a temporary name and renamed, so it
//!   is whole or absent.
//! - A smaller one is appended to a pack: `packs/<name>.pack` holds the
//!   bytes one after another, `packs/<name>.idx` a 48-byte record for each
//!   (hash, offset, length, and a check of those), written after the bytes
//!   it names. Each process appends to a pack of its own, so packs need no
//!   lock between writers; 90,000 small files cost their bytes and an
//!   index, not 90,000 disk blocks.
//!
//! Nothing is fsynced (a checkpoint before every call cannot pay for it).
//! A crash can leave a pack's tail torn: an index record cut short, or one
//! that fails its check or names bytes past the pack's end, is ignored,
//! never trusted. Every object read is checked against its hash, so a copy
//! a crash damaged is reported, never written into the workspace.
//!
//! `lock` orders writers and the sweep: a checkpoint holds it shared from
//! its first stored object to its journal line, a sweep exclusively, so a
//! sweep never removes an object a journal line is about to name. A sweep
//! that rewrites packs writes a new `generation`, and every process reads
//! its pack indexes again when it sees one.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use sha2::{Digest, Sha256};

use crate::state::Hash;

/// Objects smaller than this go into a pack.
pub(crate) const PACK_BELOW: usize = 8 * 1024;

/// One index record: hash, offset, length, check.
const RECORD: usize = 48;

/// A sweep rewrites the packs when more than this share of their bytes is
/// no longer named, or when there are more packs than [`PACKS_KEPT`].
const DEAD_SHARE: f64 = 0.5;
const PACKS_KEPT: usize = 16;

pub(crate) fn hash_of(bytes: &[u8]) -> Hash {
    Sha256::digest(bytes).into()
}

/// Reads `reader` to its end after `first` (what was read of it already),
/// handing each piece to `sink`: the whole's hash, its length, and its
/// first `keep` bytes. Never all of it in memory.
pub(crate) fn stream(
    reader: &mut dyn Read,
    mut first: Vec<u8>,
    keep: usize,
    mut sink: impl FnMut(&[u8]) -> std::io::Result<()>,
) -> std::io::Result<(Hash, u64, Vec<u8>)> {
    let mut hasher = Sha256::new();
    hasher.update(&first);
    sink(&first)?;
    let mut len = first.len() as u64;
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        let read = reader.read(&mut buffer)?;
        if read == 0 {
            break;
        }
        hasher.update(&buffer[..read]);
        sink(&buffer[..read])?;
        len += read as u64;
        let room = keep.saturating_sub(first.len());
        first.extend_from_slice(&buffer[..read.min(room)]);
    }
    first.truncate(keep);
    Ok((hasher.finalize().into(), len, first))
}

/// Where a packed object lies.
#[derive(Debug, Clone, Copy)]
struct Place {
    pack: usize,
    offset: u64,
    len: u32,
}

/// The pack this process appends to.
struct Writer {
    pack: usize,
    file: std::io::BufWriter<File>,
    idx: File,
    /// The pack's length, with what is still buffered.
    len: u64,
    /// Index records of objects whose bytes are not yet flushed.
    records: Vec<u8>,
}

#[derive(Default)]
struct Packs {
    /// The `generation` these were read at.
    generation: Option<Vec<u8>>,
    /// Pack names by number, and each one's file (`None`: gone).
    names: Vec<String>,
    files: Vec<Option<File>>,
    /// Index bytes read so far, by pack number.
    read: Vec<u64>,
    place: HashMap<Hash, Place>,
    writer: Option<Writer>,
    /// Bytes of loose objects and packs, once counted (then kept up to date).
    bytes: Option<u64>,
    /// Every pack index was read at this generation. Packs other processes
    /// start later are read when a sweep changes the generation or an
    /// object is not found: until then, what they hold may be stored again
    /// (a copy, never a loss), and a checkpoint lists no folder.
    listed: bool,
}

pub(crate) struct Objects {
    dir: PathBuf,
    /// A session's own objects from before stores were shared: read, never written.
    legacy: Option<PathBuf>,
    packs: Mutex<Packs>,
}

/// A lock on the store, let go when dropped.
pub(crate) struct Held {
    _file: File,
}

fn check_of(record: &[u8]) -> [u8; 4] {
    let digest = Sha256::digest(record);
    [digest[0], digest[1], digest[2], digest[3]]
}

fn record_of(hash: &Hash, offset: u64, len: u32) -> [u8; RECORD] {
    let mut record = [0u8; RECORD];
    record[..32].copy_from_slice(hash);
    record[32..40].copy_from_slice(&offset.to_le_bytes());
    record[40..44].copy_from_slice(&len.to_le_bytes());
    let check = check_of(&record[..44]);
    record[44..].copy_from_slice(&check);
    record
}

/// A record read back, when it is whole and passes its check.
fn parse_record(record: &[u8]) -> Option<(Hash, u64, u32)> {
    if record.len() != RECORD || check_of(&record[..44]) != record[44..] {
        return None;
    }
    let mut hash = [0u8; 32];
    hash.copy_from_slice(&record[..32]);
    let offset = u64::from_le_bytes(record[32..40].try_into().ok()?);
    let len = u32::from_le_bytes(record[40..44].try_into().ok()?);
    Some((hash, offset, len))
}

fn loose_path(dir: &Path, hash: &Hash) -> PathBuf {
    let name = hex::encode(hash);
    dir.join(&name[..2]).join(&name[2..])
}

fn read_checked(bytes: Vec<u8>, hash: &Hash) -> std::io::Result<Vec<u8>> {
    if hash_of(&bytes) != *hash {
        return Err(std::io::Error::other(
            "its saved copy is damaged (a crash while it was written?)",
        ));
    }
    Ok(bytes)
}

impl Objects {
    /// The store in `dir`; `legacy`, a session's own objects of before.
    pub(crate) fn new(dir: PathBuf, legacy: Option<PathBuf>) -> Objects {
        Objects {
            dir,
            legacy,
            packs: Mutex::new(Packs::default()),
        }
    }

    /// The store's folder.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    fn loose(&self) -> PathBuf {
        self.dir.join("objects")
    }

    fn pack_dir(&self) -> PathBuf {
        self.dir.join("packs")
    }

    fn packs(&self) -> MutexGuard<'_, Packs> {
        wicket_os::sync::lock(&self.packs)
    }

    fn lock_file(&self) -> std::io::Result<File> {
        wicket_os::files::private_dir(&self.dir)?;
        let path = self.dir.join("lock");
        std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
            .open(path)
    }

    /// Holds the store for a checkpoint (shared with other writers; waits
    /// for a sweep to end), with the pack indexes current.
    pub(crate) fn hold(&self) -> std::io::Result<Held> {
        self.hold_reading(false)
    }

    /// [`Objects::hold`], reading every pack index again when `again`.
    fn hold_reading(&self, again: bool) -> std::io::Result<Held> {
        let file = self.lock_file()?;
        rustix::fs::flock(&file, rustix::fs::FlockOperation::LockShared)?;
        self.refresh(again)?;
        Ok(Held { _file: file })
    }

    /// Holds the store alone for a sweep; `None` when another process is
    /// using it (the sweep is left for a later time).
    fn hold_alone(&self) -> std::io::Result<Option<Held>> {
        let file = self.lock_file()?;
        match rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => {}
            Err(rustix::io::Errno::WOULDBLOCK) => return Ok(None),
            Err(error) => return Err(error.into()),
        }
        // Held alone, nothing is being written: every index read whole, so the mark sees all.
        self.refresh(true)?;
        Ok(Some(Held { _file: file }))
    }

    /// Reads the pack indexes the first time, and everything again when a
    /// sweep rewrote the packs since (or `again`).
    fn refresh(&self, again: bool) -> std::io::Result<()> {
        let mut packs = self.packs();
        let generation = wicket_os::files::read_own(&self.dir.join("generation"), 64)?;
        if again || packs.generation != generation {
            // What is still buffered is written first: a journal line may name it.
            if let Some(writer) = packs.writer.as_mut() {
                writer.file.flush()?;
                writer.idx.write_all(&writer.records)?;
            }
            // A sweep may have removed this process's pack: a new one, and the bytes counted again.
            *packs = Packs {
                generation,
                ..Packs::default()
            };
        }
        if packs.listed {
            return Ok(());
        }
        packs.listed = true;
        let listed = match std::fs::read_dir(self.pack_dir()) {
            Ok(listed) => listed,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(error) => return Err(error),
        };
        let mut names: Vec<String> = listed
            .filter_map(|entry| {
                let name = entry.ok()?.file_name().into_string().ok()?;
                Some(name.strip_suffix(".idx")?.to_string())
            })
            .collect();
        names.sort();
        for name in names {
            let number = match packs.names.iter().position(|known| *known == name) {
                Some(number) => number,
                None => {
                    let Ok(file) = File::open(self.pack_dir().join(format!("{name}.pack"))) else {
                        continue;
                    };
                    packs.names.push(name.clone());
                    packs.files.push(Some(file));
                    packs.read.push(0);
                    packs.names.len() - 1
                }
            };
            if packs
                .writer
                .as_ref()
                .is_some_and(|writer| writer.pack == number)
            {
                continue;
            }
            self.read_index(&mut packs, number)?;
        }
        Ok(())
    }

    /// Reads pack `number`'s index records from where the last read ended.
    fn read_index(&self, packs: &mut Packs, number: usize) -> std::io::Result<()> {
        let name = &packs.names[number];
        let mut file = match File::open(self.pack_dir().join(format!("{name}.idx"))) {
            Ok(file) => file,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(error) => return Err(error),
        };
        let from = packs.read[number];
        let mut bytes = Vec::new();
        std::io::Seek::seek(&mut file, std::io::SeekFrom::Start(from))?;
        file.read_to_end(&mut bytes)?;
        // The pack's length after its index: a record read names bytes written before it.
        let pack_len = match &packs.files[number] {
            Some(file) => file.metadata()?.len(),
            None => return Ok(()),
        };
        let whole = bytes.len() - bytes.len() % RECORD;
        for record in bytes[..whole].chunks_exact(RECORD) {
            // A torn or damaged record, or one naming bytes the pack does not hold, is not trusted.
            let Some((hash, offset, len)) = parse_record(record) else {
                continue;
            };
            if offset.saturating_add(u64::from(len)) > pack_len {
                continue;
            }
            packs.place.insert(
                hash,
                Place {
                    pack: number,
                    offset,
                    len,
                },
            );
        }
        packs.read[number] = from + whole as u64;
        Ok(())
    }

    /// Stores `bytes` (whose hash is `hash`); true when it was not there
    /// yet. Packed bytes are written at [`Objects::flush`].
    pub(crate) fn put(&self, hash: &Hash, bytes: &[u8]) -> std::io::Result<bool> {
        if bytes.len() >= PACK_BELOW {
            return self.put_loose(hash, bytes);
        }
        let mut packs = self.packs();
        if packs.place.contains_key(hash) {
            return Ok(false);
        }
        if packs.writer.is_none() {
            packs.writer = Some(self.new_writer(&mut packs)?);
        }
        let Some(writer) = packs.writer.as_mut() else {
            return Ok(false);
        };
        let offset = writer.len;
        let len = bytes.len() as u32;
        writer.file.write_all(bytes)?;
        writer.len += u64::from(len);
        writer
            .records
            .extend_from_slice(&record_of(hash, offset, len));
        let pack = writer.pack;
        packs
            .place
            .insert(hash.to_owned(), Place { pack, offset, len });
        if let Some(total) = packs.bytes.as_mut() {
            *total += u64::from(len) + RECORD as u64;
        }
        Ok(true)
    }

    fn new_writer(&self, packs: &mut Packs) -> std::io::Result<Writer> {
        let dir = self.pack_dir();
        wicket_os::files::private_dir(&dir)?;
        let name = format!(
            "{:016x}-{:016x}",
            crate::now_secs(),
            wicket_os::ids::random_u64()
        );
        let open = |path: PathBuf| {
            std::fs::OpenOptions::new()
                .create_new(true)
                .read(true)
                .append(true)
                .mode(0o600)
                .open(path)
        };
        let pack = open(dir.join(format!("{name}.pack")))?;
        let idx = open(dir.join(format!("{name}.idx")))?;
        packs.names.push(name);
        packs.files.push(Some(pack.try_clone()?));
        packs.read.push(0);
        Ok(Writer {
            pack: packs.names.len() - 1,
            file: std::io::BufWriter::with_capacity(256 * 1024, pack),
            idx,
            len: 0,
            records: Vec::new(),
        })
    }

    /// Writes the packed bytes put since the last flush, then their index
    /// records: before a journal line names them.
    pub(crate) fn flush(&self) -> std::io::Result<()> {
        let mut packs = self.packs();
        let Some(writer) = packs.writer.as_mut() else {
            return Ok(());
        };
        let flushed = writer.file.flush().and_then(|()| {
            writer.idx.write_all(&writer.records)?;
            writer.records.clear();
            Ok(())
        });
        if flushed.is_err() {
            // What this pack holds now is unsure: the next object starts a new one.
            packs.writer = None;
            drop(packs);
            self.refresh(true)?;
        }
        flushed
    }

    fn put_loose(&self, hash: &Hash, bytes: &[u8]) -> std::io::Result<bool> {
        let path = loose_path(&self.loose(), hash);
        // A copy a crash cut short is written again.
        if std::fs::metadata(&path).is_ok_and(|meta| meta.len() == bytes.len() as u64) {
            return Ok(false);
        }
        let folder = path.parent().unwrap_or(&self.dir);
        wicket_os::files::private_dir(folder)?;
        let (temp, ()) = self.temp_in(folder, |file| file.write_all(bytes))?;
        self.settle_loose(&temp, &path, bytes.len() as u64)
    }

    /// A new private file in `folder` under a temporary name, written by
    /// `write` (and what it says); removed again when that fails.
    fn temp_in<T>(
        &self,
        folder: &Path,
        write: impl FnOnce(&mut std::fs::File) -> std::io::Result<T>,
    ) -> std::io::Result<(PathBuf, T)> {
        let temp = folder.join(format!(".{:016x}.tmp", wicket_os::ids::random_u64()));
        let written = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temp)
            .and_then(|mut file| write(&mut file));
        match written {
            Ok(said) => Ok((temp, said)),
            Err(error) => {
                // The temporary copy goes; if that fails too it is only a stray file in the store.
                std::fs::remove_file(&temp).ok();
                Err(error)
            }
        }
    }

    /// Renames a written `temp` (of `len` bytes) to the loose object at `path`.
    fn settle_loose(&self, temp: &Path, path: &Path, len: u64) -> std::io::Result<bool> {
        if let Err(error) = std::fs::rename(temp, path) {
            std::fs::remove_file(temp).ok();
            return Err(error);
        }
        if let Some(total) = self.packs().bytes.as_mut() {
            *total += len;
        }
        Ok(true)
    }

    /// Stores what `reader` gives, read as a stream: a small object is
    /// packed as [`Objects::put`] packs it; a large one is copied to a
    /// temporary file while it is hashed, never whole in memory. Its hash,
    /// its length, and its first `keep` bytes.
    pub(crate) fn put_read(
        &self,
        reader: &mut dyn std::io::Read,
        keep: usize,
    ) -> std::io::Result<(Hash, u64, Vec<u8>)> {
        let mut first = Vec::new();
        reader.take(PACK_BELOW as u64).read_to_end(&mut first)?;
        if first.len() < PACK_BELOW {
            let hash = hash_of(&first);
            self.put(&hash, &first)?;
            let len = first.len() as u64;
            first.truncate(keep);
            return Ok((hash, len, first));
        }
        let loose = self.loose();
        wicket_os::files::private_dir(&loose)?;
        let (temp, (hash, len, first)) = self.temp_in(&loose, |file| {
            stream(reader, first, keep, |piece| file.write_all(piece))
        })?;
        let path = loose_path(&loose, &hash);
        if std::fs::metadata(&path).is_ok_and(|meta| meta.len() == len) {
            std::fs::remove_file(&temp).ok();
            return Ok((hash, len, first));
        }
        let folder = path.parent().unwrap_or(&self.dir);
        if let Err(error) = wicket_os::files::private_dir(folder) {
            std::fs::remove_file(&temp).ok();
            return Err(error);
        }
        self.settle_loose(&temp, &path, len)?;
        Ok((hash, len, first))
    }

    /// Whether the store holds `hash` (not read: [`Objects::get`] checks the bytes).
    pub(crate) fn has(&self, hash: &Hash) -> bool {
        self.packs().place.contains_key(hash)
            || loose_path(&self.loose(), hash).is_file()
            || self
                .legacy
                .as_ref()
                .is_some_and(|legacy| loose_path(legacy, hash).is_file())
    }

    /// The bytes of `hash`, checked against it.
    pub(crate) fn get(&self, hash: &Hash) -> std::io::Result<Vec<u8>> {
        for again in [false, true] {
            if let Some(bytes) = self.get_packed(hash)? {
                return read_checked(bytes, hash);
            }
            for dir in std::iter::once(self.loose()).chain(self.legacy.clone()) {
                match std::fs::read(loose_path(&dir, hash)) {
                    Ok(bytes) => return read_checked(bytes, hash),
                    Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                    Err(error) => return Err(error),
                }
            }
            if !again {
                // Another process may have packed it since, or a sweep moved it:
                // read again while no sweep is under way.
                drop(self.hold_reading(true)?);
            }
        }
        Err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "its saved copy is missing from the store",
        ))
    }

    fn get_packed(&self, hash: &Hash) -> std::io::Result<Option<Vec<u8>>> {
        let mut packs = self.packs();
        let Some(place) = packs.place.get(hash).copied() else {
            return Ok(None);
        };
        if let Some(writer) = packs.writer.as_mut()
            && writer.pack == place.pack
        {
            writer.file.flush()?;
        }
        let Some(file) = &packs.files[place.pack] else {
            return Ok(None);
        };
        let mut bytes = vec![0u8; place.len as usize];
        file.read_exact_at(&mut bytes, place.offset)?;
        Ok(Some(bytes))
    }

    /// Counts the store's bytes again at the next [`Objects::bytes`] (another
    /// store's sweep removed some).
    pub(crate) fn recount(&self) {
        self.packs().bytes = None;
    }

    /// Bytes the store holds: loose objects, packs and their indexes.
    pub(crate) fn bytes(&self) -> u64 {
        if let Some(total) = self.packs().bytes {
            return total;
        }
        let total = folder_bytes(&self.loose()) + folder_bytes(&self.pack_dir());
        self.packs().bytes = Some(total);
        total
    }

    /// Removes every object not in what `mark` returns, called while the
    /// store is held alone, so no journal line can name a new object
    /// between the mark and the sweep (when another process is using the
    /// store: nothing now, and false). Packs whose bytes are mostly
    /// unnamed, or too many packs, are rewritten as one.
    pub(crate) fn sweep(
        &self,
        mark: impl FnOnce() -> std::io::Result<HashSet<Hash>>,
    ) -> std::io::Result<bool> {
        let Some(_held) = self.hold_alone()? else {
            return Ok(false);
        };
        // A journal that could not be read marks nothing: nothing is swept.
        let keep = mark()?;
        if sweep_loose(&self.loose(), &keep)? > 0 {
            // Other processes count the store's bytes again when they see it.
            self.new_generation()?;
        }
        self.repack(&keep)?;
        self.packs().bytes = None;
        Ok(true)
    }

    /// Writes a new `generation`: every process reads its pack indexes and
    /// counts the bytes again when it next holds the store.
    fn new_generation(&self) -> std::io::Result<()> {
        let generation = format!("{:016x}\n", wicket_os::ids::random_u64());
        wicket_os::files::write_atomically(
            &self.dir.join("generation"),
            generation.as_bytes(),
            false,
        )
    }

    /// Sweeps the session's own objects of before (read-only otherwise).
    pub(crate) fn sweep_legacy(&self, keep: &HashSet<Hash>) -> std::io::Result<()> {
        match &self.legacy {
            Some(legacy) => sweep_loose(legacy, keep).map(drop),
            None => Ok(()),
        }
    }

    /// Rewrites the packs' named objects into one new pack when that
    /// frees enough, then removes the old ones (held alone).
    fn repack(&self, keep: &HashSet<Hash>) -> std::io::Result<()> {
        let mut packs = self.packs();
        packs.writer = None;
        let total: u64 = packs
            .files
            .iter()
            .flatten()
            .map(|file| file.metadata().map_or(0, |meta| meta.len()))
            .sum();
        let live: Vec<(Hash, Place)> = packs
            .place
            .iter()
            .filter(|(hash, _)| keep.contains(*hash))
            .map(|(hash, place)| (*hash, *place))
            .collect();
        let live_bytes: u64 = live.iter().map(|(_, place)| u64::from(place.len)).sum();
        let dead = total.saturating_sub(live_bytes) as f64;
        let count = packs.names.len();
        if count == 0 || (dead <= DEAD_SHARE * total as f64 && count <= PACKS_KEPT) {
            return Ok(());
        }
        let old: Vec<String> = packs.names.clone();
        let mut writer = self.new_writer(&mut packs)?;
        let mut records = Vec::new();
        for (hash, place) in &live {
            let Some(file) = &packs.files[place.pack] else {
                continue;
            };
            let mut bytes = vec![0u8; place.len as usize];
            file.read_exact_at(&mut bytes, place.offset)?;
            // A damaged copy is not carried into the new pack.
            if hash_of(&bytes) != *hash {
                continue;
            }
            records.extend_from_slice(&record_of(hash, writer.len, place.len));
            writer.file.write_all(&bytes)?;
            writer.len += u64::from(place.len);
        }
        writer.file.flush()?;
        writer.idx.write_all(&records)?;
        drop(writer);
        drop(packs);
        self.new_generation()?;
        for name in old {
            for suffix in ["idx", "pack"] {
                match std::fs::remove_file(self.pack_dir().join(format!("{name}.{suffix}"))) {
                    Ok(()) => {}
                    Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                    Err(error) => return Err(error),
                }
            }
        }
        self.refresh(true)
    }
}

/// Removes the loose objects in `dir` not in `keep`; how many went.
fn sweep_loose(dir: &Path, keep: &HashSet<Hash>) -> std::io::Result<usize> {
    let mut removed = 0;
    let Ok(folders) = std::fs::read_dir(dir) else {
        return Ok(0);
    };
    for folder in folders {
        let folder = folder?.path();
        let prefix = name_of(&folder);
        for object in std::fs::read_dir(&folder)? {
            let object = object?.path();
            let mut hash = [0u8; 32];
            let named = hex::decode_to_slice(format!("{prefix}{}", name_of(&object)), &mut hash);
            if named.is_err() || !keep.contains(&hash) {
                std::fs::remove_file(&object)?;
                removed += 1;
            }
        }
    }
    Ok(removed)
}

fn folder_bytes(dir: &Path) -> u64 {
    let mut total = 0;
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let Ok(meta) = entry.metadata() else { continue };
        total += if meta.is_dir() {
            folder_bytes(&entry.path())
        } else {
            meta.len()
        };
    }
    total
}

fn name_of(path: &Path) -> String {
    path.file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small(n: u8) -> Vec<u8> {
        vec![n; 100 + usize::from(n)]
    }

    #[test]
    fn a_torn_pack_tail_is_ignored_at_every_cut_and_the_next_put_works() {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("store");
        let objects = Objects::new(store.clone(), None);
        let _held = objects.hold().unwrap();
        for n in 0..3 {
            objects.put(&hash_of(&small(n)), &small(n)).unwrap();
        }
        objects.flush().unwrap();
        let packs = store.join("packs");
        let name = |suffix: &str| {
            std::fs::read_dir(&packs)
                .unwrap()
                .flatten()
                .map(|entry| entry.path())
                .find(|path| path.extension().is_some_and(|ext| ext == suffix))
                .unwrap()
        };
        let (pack, idx) = (name("pack"), name("idx"));
        let (pack_bytes, idx_bytes) = (std::fs::read(&pack).unwrap(), std::fs::read(&idx).unwrap());
        // Every cut of the last object's bytes and of its index record.
        let last_start = pack_bytes.len() - small(2).len();
        let cuts = (last_start..pack_bytes.len())
            .map(|cut| (cut, idx_bytes.len()))
            .chain((2 * RECORD..idx_bytes.len()).map(|cut| (pack_bytes.len(), cut)));
        for (pack_cut, idx_cut) in cuts {
            std::fs::write(&pack, &pack_bytes[..pack_cut]).unwrap();
            std::fs::write(&idx, &idx_bytes[..idx_cut]).unwrap();
            let fresh = Objects::new(store.clone(), None);
            fresh.refresh(true).unwrap();
            assert_eq!(fresh.get(&hash_of(&small(0))).unwrap(), small(0));
            assert_eq!(fresh.get(&hash_of(&small(1))).unwrap(), small(1));
            assert!(!fresh.has(&hash_of(&small(2))), "{pack_cut} {idx_cut}");
            assert!(fresh.get(&hash_of(&small(2))).is_err());
            // Stored again, into a new pack of its own.
            assert!(fresh.put(&hash_of(&small(2)), &small(2)).unwrap());
            fresh.flush().unwrap();
            assert_eq!(fresh.get(&hash_of(&small(2))).unwrap(), small(2));
            let again = Objects::new(store.clone(), None);
            again.refresh(true).unwrap();
            assert_eq!(again.get(&hash_of(&small(2))).unwrap(), small(2));
            for entry in std::fs::read_dir(&packs).unwrap().flatten() {
                let path = entry.path();
                if path != pack && path != idx {
                    std::fs::remove_file(path).unwrap();
                }
            }
        }
    }

    #[test]
    fn a_damaged_packed_copy_is_refused_and_a_sweep_repacks_what_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("store");
        let objects = Objects::new(store.clone(), None);
        {
            let _held = objects.hold().unwrap();
            for n in 0..10 {
                objects.put(&hash_of(&small(n)), &small(n)).unwrap();
            }
            objects
                .put(&hash_of(&[7u8; 20_000]), &[7u8; 20_000])
                .unwrap();
            objects.flush().unwrap();
        }
        let keep: HashSet<Hash> = [hash_of(&small(3)), hash_of(&[7u8; 20_000])]
            .into_iter()
            .collect();
        assert!(objects.sweep(|| Ok(keep)).unwrap());
        let fresh = Objects::new(store.clone(), None);
        fresh.refresh(true).unwrap();
        assert_eq!(fresh.get(&hash_of(&small(3))).unwrap(), small(3));
        assert_eq!(
            fresh.get(&hash_of(&[7u8; 20_000])).unwrap(),
            vec![7u8; 20_000]
        );
        assert!(!fresh.has(&hash_of(&small(4))));
        assert!(
            fresh.bytes() < 20_000 + 200 + 2 * RECORD as u64,
            "{}",
            fresh.bytes()
        );
        // A flipped byte in the pack is found by its hash.
        let pack = std::fs::read_dir(store.join("packs"))
            .unwrap()
            .flatten()
            .map(|entry| entry.path())
            .find(|path| path.extension().is_some_and(|ext| ext == "pack"))
            .unwrap();
        let mut bytes = std::fs::read(&pack).unwrap();
        bytes[0] ^= 1;
        std::fs::write(&pack, bytes).unwrap();
        let error = fresh.get(&hash_of(&small(3))).unwrap_err();
        assert!(error.to_string().contains("damaged"), "{error}");
    }

    #[test]
    fn a_stream_is_stored_as_its_bytes_would_be_small_packed_large_loose() {
        let dir = tempfile::tempdir().unwrap();
        let objects = Objects::new(dir.path().join("store"), None);
        let large: Vec<u8> = (0..300_000u32).map(|n| (n % 251) as u8).collect();
        let small = b"a few bytes".to_vec();
        for bytes in [&large, &small] {
            let (hash, len, first) = objects.put_read(&mut bytes.as_slice(), 1000).unwrap();
            assert_eq!(hash, hash_of(bytes));
            assert_eq!(len, bytes.len() as u64);
            assert_eq!(first, bytes[..bytes.len().min(1000)]);
            objects.flush().unwrap();
            assert_eq!(&objects.get(&hash).unwrap(), bytes);
            // Stored once: a second stream of the same bytes adds nothing.
            let before = objects.bytes();
            objects.put_read(&mut bytes.as_slice(), 0).unwrap();
            objects.flush().unwrap();
            assert_eq!(objects.bytes(), before);
        }
        assert!(loose_path(&objects.loose(), &hash_of(&large)).is_file());
        let strays = std::fs::read_dir(objects.loose())
            .unwrap()
            .filter(|entry| {
                entry
                    .as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .ends_with(".tmp")
            })
            .count();
        assert_eq!(strays, 0, "no temporary copy left behind");
    }
}
