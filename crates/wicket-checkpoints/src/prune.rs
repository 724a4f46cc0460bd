//! Keeping the store small: checkpoints older than `keep_days` pruned
//! ([`Store::prune`]), the store held below `max_store_mb` after a
//! checkpoint (`bound`), and the objects no kept checkpoint of any session
//! of the workspace names swept (a mark and sweep over their journals, so
//! deleting one session's folder never loses another's objects).

use super::*;

/// `keep`, with every object `records` name: their entries' contents,
/// and the objects their changes are kept in (`base`).
fn named_by(records: &[Record], mut keep: HashSet<state::Hash>) -> HashSet<state::Hash> {
    for record in records {
        keep.extend(record.base.iter().copied());
        keep.extend(
            record
                .changes
                .iter()
                .filter_map(|(_, entry)| entry.as_ref())
                .filter_map(state::hash_of_entry),
        );
    }
    keep
}

impl Store {
    /// Drops checkpoints older than `keep_days`: the oldest one kept is
    /// written whole as the journal's first line, and objects no kept
    /// checkpoint names are removed. (Done when a process first uses the
    /// store; the caller holds the session's lock.)
    pub fn prune(&self, keep_days: u64) -> Result<()> {
        self.objects(None)?;
        let records = self.records()?;
        let cutoff = now_secs().saturating_sub(keep_days.saturating_mul(86_400));
        if records.first().is_none_or(|first| first.info.at >= cutoff) {
            return Ok(());
        }
        let Some(kept) = records.iter().position(|record| record.info.at >= cutoff) else {
            for path in [self.journal(), self.index()] {
                match std::fs::remove_file(&path) {
                    Ok(()) => {}
                    Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                    Err(error) => return Err(self.io(&path, "written")(error)),
                }
            }
            return self.sweep();
        };
        self.keep_from(&records, kept)
    }

    /// Keeps the checkpoints from `records[kept]` on: that one written whole
    /// as the journal's first line, the later ones as they were, and the
    /// objects none of them names removed.
    pub(crate) fn keep_from(&self, records: &[Record], kept: usize) -> Result<()> {
        let base_state = Self::state_at(records, records[kept].info.id)?;
        // Held while a line's changes go into an object and the journal
        // comes to name it: no sweep meanwhile takes it for unnamed.
        let held = match self.objects.get() {
            Some(objects) => Some(objects.hold().map_err(self.io(objects.dir(), "read"))?),
            None => None,
        };
        let mut text = String::new();
        for (offset, record) in records[kept..].iter().enumerate() {
            let changes = if offset == 0 {
                state::delta(&State::new(), &base_state)
            } else {
                record
                    .changes
                    .iter()
                    .map(|(path, entry)| match entry {
                        Some(entry) => Change::of(path, entry, false),
                        None => Change::gone(path),
                    })
                    .collect()
            };
            let line = Line {
                id: record.info.id,
                seq: record.info.seq,
                at: record.info.at,
                tool: record.info.tool.clone(),
                changes,
                base: Vec::new(),
                doubt: record.doubt.as_ref().map(|(since, paths)| Doubt {
                    since: *since,
                    paths: paths.iter().map(|path| state::Named::of(path)).collect(),
                }),
                // The first line holds the whole tree: never what one call did.
                after: record.after && offset > 0,
                wrote: record.wrote.as_deref().map(state::Named::of),
            };
            text.push_str(&line_text(line, self.objects.get())?);
        }
        let journal = self.journal();
        wicket_os::files::write_atomically(&journal, text.as_bytes(), false)
            .map_err(self.io(&journal, "written"))?;
        drop(held);
        self.sweep()
    }

    /// Removes the objects no session of this workspace names any more
    /// (left for later when another process is using the store).
    pub(crate) fn sweep(&self) -> Result<()> {
        let own = named_by(&self.records()?, HashSet::new());
        if let Some(objects) = self.objects.get() {
            objects
                .sweep_legacy(&own)
                .map_err(self.io(&self.dir, "written"))?;
            let key = self.named_key().unwrap_or_default();
            objects
                .sweep(|| self.marked(&key, own))
                .map_err(self.io(objects.dir(), "written"))?;
        } else if let Some(legacy) = self.legacy() {
            objects::Objects::new(legacy.clone(), Some(legacy))
                .sweep_legacy(&own)
                .map_err(self.io(&self.dir, "written"))?;
        }
        Ok(())
    }

    /// Every object the journals of the other sessions on the store `key`
    /// name, with `own`. Any error but a file that is not there is the
    /// sweep's end: a session not read is a session whose objects would go.
    fn marked(
        &self,
        key: &str,
        mut keep: HashSet<state::Hash>,
    ) -> std::io::Result<HashSet<state::Hash>> {
        for (_, records) in self.other_sessions(key)? {
            keep = named_by(&records, keep);
        }
        Ok(keep)
    }

    /// The journals of the other sessions on the store `key`, each with its
    /// session's folder name. Another session's journal is only read: a
    /// torn tail is its own process's to cut, and a line whose base is
    /// missing ends what is read of it.
    pub(crate) fn other_sessions(&self, key: &str) -> std::io::Result<Vec<(String, Vec<Record>)>> {
        let mut others = Vec::new();
        let Some(sessions) = self.dir.parent().and_then(Path::parent) else {
            return Ok(others);
        };
        let own = self.dir.parent();
        for entry in std::fs::read_dir(sessions)? {
            let session = entry?.path();
            if Some(session.as_path()) == own {
                continue;
            }
            let dir = session.join("checkpoints");
            let named = match wicket_os::files::read_own(&dir.join("store"), 256) {
                Ok(named) => named.is_some_and(|bytes| bytes.trim_ascii() == key.as_bytes()),
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => false,
                // Not a folder of a session (a file among them): it names no store.
                Err(error)
                    if error.raw_os_error() == Some(rustix::io::Errno::NOTDIR.raw_os_error()) =>
                {
                    false
                }
                Err(error) => return Err(error),
            };
            if !named {
                continue;
            }
            let Some(bytes) = wicket_os::files::read_own(&dir.join("journal.jsonl"), u64::MAX)?
            else {
                continue;
            };
            let name = session
                .file_name()
                .map(|name| name.to_string_lossy().into_owned())
                .unwrap_or_default();
            others.push((name, parse_records(&bytes, self.objects.get()).0));
        }
        Ok(others)
    }

    /// Brings the objects below `max` bytes: the older half of the
    /// checkpoints pruned, again while they are past it; when the newest
    /// alone is past it, none is kept ([`Error::StoreFull`]), and the next
    /// checkpoint starts whole.
    pub(crate) fn bound(&self, max: u64) -> Result<()> {
        loop {
            let records = self.records()?;
            if records.len() <= 1 && self.prune_others(max)? {
                return Ok(());
            }
            if records.len() <= 1 {
                let next_id = records.last().map_or(1, |record| record.info.id + 1);
                self.put_index(&Index {
                    journal_len: 0,
                    next_id,
                    entries: Vec::new(),
                })?;
                let journal = self.journal();
                match std::fs::remove_file(&journal) {
                    Ok(()) => {}
                    Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                    Err(error) => return Err(self.io(&journal, "written")(error)),
                }
                self.sweep()?;
                return Err(Error::StoreFull(max / (1024 * 1024)));
            }
            self.keep_from(&records, (records.len() / 2).max(1))?;
            if self.object_bytes() <= max {
                return Ok(());
            }
        }
    }

    /// Prunes the other sessions of this workspace that no process has
    /// open (their `lock` taken without waiting) to their newest
    /// checkpoint, the least recently used first, until the store is below
    /// `max`; true when it is.
    fn prune_others(&self, max: u64) -> Result<bool> {
        let (Some(key), Some(sessions)) =
            (self.named_key(), self.dir.parent().and_then(Path::parent))
        else {
            return Ok(false);
        };
        let own = self.dir.parent();
        let mut others: Vec<(std::time::SystemTime, PathBuf)> = Vec::new();
        for entry in std::fs::read_dir(sessions).into_iter().flatten().flatten() {
            let session = entry.path();
            let dir = session.join("checkpoints");
            let named = wicket_os::files::read_own(&dir.join("store"), 256)
                .ok()
                .flatten()
                .is_some_and(|bytes| bytes.trim_ascii() == key.as_bytes());
            if !named || Some(session.as_path()) == own {
                continue;
            }
            let used = std::fs::metadata(dir.join("journal.jsonl"))
                .and_then(|meta| meta.modified())
                .unwrap_or(std::time::UNIX_EPOCH);
            others.push((used, session));
        }
        others.sort();
        for (_, session) in others {
            let Ok(wicket_os::files::Locked::Held(_lock)) =
                wicket_os::files::lock(&session.join("lock"), std::time::Duration::ZERO)
            else {
                continue;
            };
            let other = Store::new(&session, &self.shared);
            other.objects(None)?;
            let records = other.records()?;
            if records.len() > 1 {
                other.keep_from(&records, records.len() - 1)?;
            }
            if let Some(objects) = self.objects.get() {
                objects.recount();
            }
            if self.object_bytes() <= max {
                return Ok(true);
            }
        }
        Ok(false)
    }
}
