//! Keeping the store small: checkpoints older than `keep_days` pruned
//! ([`Store::prune`]), the store held below `max_store_mb` after a
//! checkpoint (`bound`), and the objects no kept checkpoint names swept.

use super::*;

impl Store {
    /// Drops checkpoints older than `keep_days`: the oldest one kept is
    /// written whole as the journal's first line, and objects no kept
    /// checkpoint names are removed. (Done when a process first uses the
    /// store; the caller holds the session's lock.)
    pub fn prune(&self, keep_days: u64) -> Result<()> {
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
            return self.sweep(&HashSet::new());
        };
        self.keep_from(&records, kept)
    }

    /// Keeps the checkpoints from `records[kept]` on: that one written whole
    /// as the journal's first line, the later ones as they were, and the
    /// objects none of them names removed.
    pub(crate) fn keep_from(&self, records: &[Record], kept: usize) -> Result<()> {
        let base_state = Self::state_at(records, records[kept].info.id)?;
        let mut keep: HashSet<state::Hash> = state::hashes(&base_state).copied().collect();
        let mut text = String::new();
        for (offset, record) in records[kept..].iter().enumerate() {
            let changes = if offset == 0 {
                state::delta(&State::new(), &base_state)
            } else {
                let mut later = State::new();
                state::apply(&mut later, &record.changes);
                keep.extend(state::hashes(&later).copied());
                record
                    .changes
                    .iter()
                    .map(|(path, entry)| match entry {
                        Some(entry) => Change::of(path, entry, false),
                        None => Change::gone(path),
                    })
                    .collect()
            };
            text.push_str(&line_text(&Line {
                id: record.info.id,
                seq: record.info.seq,
                at: record.info.at,
                tool: record.info.tool.clone(),
                changes,
            })?);
        }
        let journal = self.journal();
        wicket_os::files::write_atomically(&journal, text.as_bytes(), false)
            .map_err(self.io(&journal, "written"))?;
        // The index stands for the last line, which is unchanged: its place moved.
        let index = self.index();
        if let Some(mut read) = wicket_os::files::read_own(&index, u64::MAX)
            .ok()
            .flatten()
            .and_then(|bytes| serde_json::from_slice::<Index>(&bytes).ok())
            .filter(|read| {
                records
                    .last()
                    .is_some_and(|last| last.end == read.journal_len)
            })
        {
            read.journal_len = text.len() as u64;
            self.put_index(&read)?;
        }
        self.sweep(&keep)
    }

    pub(crate) fn sweep(&self, keep: &HashSet<state::Hash>) -> Result<()> {
        let objects = self.dir.join("objects");
        self.objects
            .sweep(keep)
            .map(|_| ())
            .map_err(self.io(&objects, "written"))
    }

    /// Brings the objects below `max` bytes: the older half of the
    /// checkpoints pruned, again while they are past it; when the newest
    /// alone is past it, none is kept ([`Error::StoreFull`]), and the next
    /// checkpoint starts whole.
    pub(crate) fn bound(&self, max: u64) -> Result<()> {
        loop {
            let records = self.records()?;
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
                self.sweep(&HashSet::new())?;
                return Err(Error::StoreFull(max / (1024 * 1024)));
            }
            self.keep_from(&records, (records.len() / 2).max(1))?;
            if self.objects.bytes() <= max {
                return Ok(());
            }
        }
    }
}
