//! The walk of a checkpoint: each entry compared with the last
//! checkpoint by its stat key, and what changed read, hashed and stored.

use super::*;

/// A file's bytes for its copy, or why it gets none: past `max_file_mb`,
/// sparse (a large file mostly holes), or unreadable.
fn file_bytes(
    found: &wicket_tools::tree::Found<'_>,
    settings: &Settings,
) -> std::result::Result<Vec<u8>, String> {
    let size = found.stat.st_size as u64;
    if size > settings.max_file_bytes {
        return Err(format!(
            "no copy: it is {}, over [checkpoints] max_file_mb ({})",
            mib(size),
            mib(settings.max_file_bytes)
        ));
    }
    let on_disk = (found.stat.st_blocks as u64).saturating_mul(512);
    if size > SPARSE_FROM && on_disk < size / 2 {
        return Err(format!(
            "no copy: it is sparse ({} written of {})",
            mib(on_disk),
            mib(size)
        ));
    }
    found
        .read(settings.max_file_bytes)
        .map(|(bytes, _)| bytes)
        .map_err(|error| format!("no copy: it could not be read: {error}"))
}

/// Whether the walk leaves `path` out: `$WICKET_HOME` inside the
/// workspace, or what `[checkpoints] ignore` names.
fn skipped(path: &[u8], home: Option<&[u8]>, settings: &Settings) -> bool {
    home == Some(path)
        || (!settings.ignore.is_empty()
            && settings.ignore.is_match(Path::new(
                <std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(path),
            )))
}

/// The entry of what could not be read: no copy, and why.
fn unreadable(error: &std::io::Error) -> Entry {
    Entry {
        content: Content::Missed(format!("no copy: it could not be read: {error}")),
        mode: 0,
        key: StatKey::default(),
    }
}

/// The gap `entry` adds to this checkpoint's list (its path shown, and
/// why it has no copy), unless the last checkpoint missed it the same way.
fn new_gap(last: &State, path: &[u8], entry: &Entry) -> Option<(String, String)> {
    let Content::Missed(why) = &entry.content else {
        return None;
    };
    let known = last
        .get(path)
        .is_some_and(|before| before.content == entry.content);
    (!known).then(|| (wicket_tools::tree::shown(path), why.clone()))
}

impl Store {
    /// Walks the workspace: an entry whose stat matches the last checkpoint
    /// keeps its object; any other file or link is read, hashed and stored.
    pub(crate) fn scan(
        &self,
        workspace: &Workspace,
        settings: &Settings,
        last: &State,
        keep: Keep,
    ) -> Result<Scanned> {
        let mut scanned = Scanned {
            state: State::new(),
            gaps: Vec::new(),
            new_bytes: 0,
            keys_changed: false,
        };
        let started = now_secs() as i64;
        let home = self.home_below(workspace);
        let mut failure = None;
        let skip = |path: &[u8], _is_dir: bool| skipped(path, home.as_deref(), settings);
        let mut visit = |met: Met<'_>| {
            if scanned.state.len() >= settings.max_files {
                failure = Some(Error::TooManyFiles(settings.max_files));
                return Go::Stop;
            }
            let (path, entry) = match met {
                Met::Entry(found) => {
                    let key = StatKey::of(found.stat);
                    let mode = found.stat.st_mode & 0o7777;
                    let before = last.get(found.path);
                    let kept = before
                        .filter(|before| before.key == key && before.kind() == Some(found.kind));
                    let content = match (kept, found.kind) {
                        (Some(before), _) => before.content.clone(),
                        (None, Kind::Dir) => Content::Dir,
                        (None, Kind::File) => self.copy(
                            &mut scanned.new_bytes,
                            settings,
                            keep,
                            || file_bytes(&found, settings),
                            Content::File,
                        ),
                        (None, Kind::Link) => self.copy(
                            &mut scanned.new_bytes,
                            settings,
                            keep,
                            || {
                                found.link_target().map_err(|error| {
                                    format!("no copy: the link could not be read: {error}")
                                })
                            },
                            Content::Link,
                        ),
                    };
                    // A file changed in the last tick may change again unseen: read it next time.
                    let key = match found.kind != Kind::Dir && key.racy(started, RACY_SECONDS) {
                        true => StatKey::default(),
                        false => key,
                    };
                    scanned.keys_changed |= before.is_none_or(|before| before.key != key);
                    (found.path.to_vec(), Entry { content, mode, key })
                }
                Met::Unreadable { path, error } => (path.to_vec(), unreadable(&error)),
            };
            if let Some(gap) = new_gap(last, &path, &entry) {
                scanned.gaps.push(gap);
            }
            scanned.state.insert(path, entry);
            if failure.is_some() { Go::Stop } else { Go::On }
        };
        workspace
            .scan(&skip, &mut visit)
            .map_err(Error::Workspace)?;
        match failure {
            Some(error) => Err(error),
            None => Ok(scanned),
        }
    }

    /// Reads an entry's bytes and stores them; a read that fails (or a
    /// file too big, or past what one checkpoint may store) is an entry
    /// with no copy.
    pub(crate) fn copy(
        &self,
        new_bytes: &mut u64,
        settings: &Settings,
        keep: Keep,
        read: impl FnOnce() -> std::result::Result<Vec<u8>, String>,
        content: fn(state::Hash) -> Content,
    ) -> Content {
        if *new_bytes >= CHECKPOINT_MAX_NEW_BYTES {
            return Content::Missed(format!(
                "no copy: this checkpoint already stored {} of new copies (the most one may)",
                mib(CHECKPOINT_MAX_NEW_BYTES)
            ));
        }
        let bytes = match read() {
            Ok(bytes) if bytes.len() as u64 > settings.max_file_bytes => {
                return Content::Missed(format!(
                    "no copy: it grew past [checkpoints] max_file_mb ({}) while it was read",
                    mib(settings.max_file_bytes)
                ));
            }
            Ok(bytes) => bytes,
            Err(why) => return Content::Missed(why),
        };
        let hash = hash_of(&bytes);
        if keep == Keep::HashOnly {
            return content(hash);
        }
        match self.objects.put(&hash, &bytes) {
            Ok(true) => *new_bytes += bytes.len() as u64,
            Ok(false) => {}
            Err(error) => {
                return Content::Missed(format!(
                    "no copy: the store could not be written: {error}"
                ));
            }
        }
        content(hash)
    }
}
