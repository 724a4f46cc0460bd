//! What a checkpoint holds: every entry of the workspace by path, and how
//! that is written in the journal and the index.

use std::collections::BTreeMap;

use rustix::fs::Stat;
use serde::{Deserialize, Serialize};
use wicket_tools::tree::Kind;

/// A SHA-256 of the bytes (a file's, or a link's target's).
pub(crate) type Hash = [u8; 32];

/// What an entry is, with the name of its bytes in the object store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Content {
    /// A regular file.
    File(Hash),
    /// A link, its target's bytes in the store.
    Link(Hash),
    /// A folder.
    Dir,
    /// Something the checkpoint has no copy of, and why (too big, unreadable).
    Missed(String),
}

/// The metadata that says a file is unchanged since it was copied: a
/// stat, not a read. A write changes the size or the times (`ctime` too,
/// which no command can set back), a replacement the inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct StatKey {
    size: i64,
    mtime: (i64, i64),
    ctime: (i64, i64),
    ino: u64,
}

impl StatKey {
    pub(crate) fn of(stat: &Stat) -> StatKey {
        StatKey {
            size: stat.st_size,
            mtime: (stat.st_mtime, stat.st_mtime_nsec as i64),
            ctime: (stat.st_ctime, stat.st_ctime_nsec as i64),
            ino: stat.st_ino,
        }
    }

    /// The size it was seen at, in bytes (a key made by [`StatKey::of`];
    /// one read back from a journal may not carry it).
    pub(crate) fn size(&self) -> u64 {
        u64::try_from(self.size).unwrap_or(0)
    }

    /// The inode it was seen at.
    pub(crate) fn ino(&self) -> u64 {
        self.ino
    }

    /// Whether the entry was changed so recently (within `slack` seconds of
    /// `now`) that a change in the same clock tick could hide behind the
    /// same key: such a file is read again next time (git's racy check).
    pub(crate) fn racy(&self, now: i64, slack: i64) -> bool {
        self.mtime.0 >= now - slack || self.ctime.0 >= now - slack
    }

    fn encode(self) -> [i64; 6] {
        [
            self.size,
            self.mtime.0,
            self.mtime.1,
            self.ctime.0,
            self.ctime.1,
            self.ino as i64,
        ]
    }

    fn decode(raw: [i64; 6]) -> StatKey {
        StatKey {
            size: raw[0],
            mtime: (raw[1], raw[2]),
            ctime: (raw[3], raw[4]),
            ino: raw[5] as u64,
        }
    }
}

/// One entry of the workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    pub content: Content,
    /// Permission bits (`0o7777`).
    pub mode: u32,
    /// When it was seen (a default key matches no file: it is read again).
    pub key: StatKey,
}

impl Entry {
    /// What kind of entry it is (`None`: no copy, so not known).
    pub(crate) fn kind(&self) -> Option<Kind> {
        match self.content {
            Content::File(_) => Some(Kind::File),
            Content::Link(_) => Some(Kind::Link),
            Content::Dir => Some(Kind::Dir),
            Content::Missed(_) => None,
        }
    }

    /// The same entry for a rewind: same kind, bytes and mode (a link's mode means nothing).
    pub(crate) fn same_as(&self, other: &Entry) -> bool {
        match (&self.content, &other.content) {
            (Content::Link(a), Content::Link(b)) => a == b,
            (a, b) => a == b && self.mode == other.mode,
        }
    }
}

/// The workspace at one checkpoint: paths below the root (bytes, `/`
/// between names) in byte order, so a folder comes before what it holds.
pub(crate) type State = BTreeMap<Vec<u8>, Entry>;

/// One entry as the journal and the index write it. A path is a string
/// when it is UTF-8 (`p`), its bytes when not (`pb`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct Change {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    p: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pb: Option<Vec<u8>>,
    /// A file's bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    f: Option<String>,
    /// A link's target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    l: Option<String>,
    /// A folder.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    d: bool,
    /// Not copied, and why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    u: Option<String>,
    /// Gone since the checkpoint before.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    x: bool,
    #[serde(default)]
    m: u32,
    /// The stat key (the index only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    s: Option<[i64; 6]>,
}

fn decode_hash(text: &str) -> Option<Hash> {
    let mut hash = [0u8; 32];
    hex::decode_to_slice(text, &mut hash).ok()?;
    Some(hash)
}

impl Change {
    /// Whether a run of changes may end after this one: a choice made by
    /// its path alone (about one path in `every`), so the same paths cut a
    /// long list at the same places whatever their contents.
    pub(crate) fn ends_piece(&self, every: u64) -> bool {
        let path: &[u8] = match (&self.p, &self.pb) {
            (Some(text), _) => text.as_bytes(),
            (None, Some(bytes)) => bytes,
            (None, None) => b"",
        };
        // FNV-1a: stable across builds and machines.
        let hash = path.iter().fold(0xcbf2_9ce4_8422_2325u64, |hash, byte| {
            (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3)
        });
        hash % every == 0
    }

    fn path_of(path: &[u8]) -> (Option<String>, Option<Vec<u8>>) {
        match std::str::from_utf8(path) {
            Ok(text) => (Some(text.to_string()), None),
            Err(_) => (None, Some(path.to_vec())),
        }
    }

    /// An entry as it is now; `with_key` for the index.
    pub(crate) fn of(path: &[u8], entry: &Entry, with_key: bool) -> Change {
        let (p, pb) = Self::path_of(path);
        let mut change = Change {
            p,
            pb,
            m: entry.mode,
            s: with_key.then(|| entry.key.encode()),
            ..Change::default()
        };
        match &entry.content {
            Content::File(hash) => change.f = Some(hex::encode(hash)),
            Content::Link(hash) => change.l = Some(hex::encode(hash)),
            Content::Dir => change.d = true,
            Content::Missed(why) => change.u = Some(why.clone()),
        }
        change
    }

    /// A path gone.
    pub(crate) fn gone(path: &[u8]) -> Change {
        let (p, pb) = Self::path_of(path);
        Change {
            p,
            pb,
            x: true,
            ..Change::default()
        }
    }

    /// The path and its entry (`None`: gone); `None` when the change is damaged.
    pub(crate) fn decode(self) -> Option<Decoded> {
        let path = match (self.p, self.pb) {
            (Some(text), None) => text.into_bytes(),
            (None, Some(bytes)) => bytes,
            _ => return None,
        };
        if self.x {
            return Some((path, None));
        }
        let content = match (self.f, self.l, self.d, self.u) {
            (Some(hash), None, false, None) => Content::File(decode_hash(&hash)?),
            (None, Some(hash), false, None) => Content::Link(decode_hash(&hash)?),
            (None, None, true, None) => Content::Dir,
            (None, None, false, Some(why)) => Content::Missed(why),
            _ => return None,
        };
        let key = self.s.map(StatKey::decode).unwrap_or_default();
        let entry = Entry {
            content,
            mode: self.m,
            key,
        };
        Some((path, Some(entry)))
    }
}

/// A path alone, as the journal writes it (`p` when UTF-8, `pb` when not).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Named {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    p: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pb: Option<Vec<u8>>,
}

impl Named {
    pub(crate) fn of(path: &[u8]) -> Named {
        let (p, pb) = Change::path_of(path);
        Named { p, pb }
    }

    pub(crate) fn decode(self) -> Option<Vec<u8>> {
        match (self.p, self.pb) {
            (Some(text), None) => Some(text.into_bytes()),
            (None, Some(bytes)) => Some(bytes),
            _ => None,
        }
    }
}

/// A decoded change: a path and what it is (`None`: gone).
pub(crate) type Decoded = (Vec<u8>, Option<Entry>);

/// Applies decoded changes to `state`.
pub(crate) fn apply<'c>(state: &mut State, changes: impl IntoIterator<Item = &'c Decoded>) {
    for (path, entry) in changes {
        match entry {
            Some(entry) => state.insert(path.clone(), entry.clone()),
            None => state.remove(path),
        };
    }
}

/// What changed from `before` to `after`, as journal changes: one pass
/// over both, as both are in path order.
pub(crate) fn delta(before: &State, after: &State) -> Vec<Change> {
    let mut changes = Vec::new();
    let mut old = before.iter().peekable();
    for (path, entry) in after {
        while let Some((gone, _)) = old.next_if(|(old_path, _)| *old_path < path) {
            changes.push(Change::gone(gone));
        }
        match old.next_if(|(old_path, _)| *old_path == path) {
            Some((_, was)) if was.content == entry.content && was.mode == entry.mode => {}
            _ => changes.push(Change::of(path, entry, false)),
        }
    }
    changes.extend(old.map(|(gone, _)| Change::gone(gone)));
    changes
}

/// The object an entry names, if it names one.
pub(crate) fn hash_of_entry(entry: &Entry) -> Option<Hash> {
    match &entry.content {
        Content::File(hash) | Content::Link(hash) => Some(*hash),
        Content::Dir | Content::Missed(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(content: Content, mode: u32) -> Entry {
        Entry {
            content,
            mode,
            key: StatKey::default(),
        }
    }

    #[test]
    fn a_delta_replayed_gives_the_later_state_with_paths_that_are_not_utf8() {
        let mut before = State::new();
        before.insert(b"a.txt".to_vec(), entry(Content::File([1; 32]), 0o644));
        before.insert(b"gone".to_vec(), entry(Content::Dir, 0o755));
        let mut after = before.clone();
        after.remove(b"gone".as_slice());
        after.insert(b"a.txt".to_vec(), entry(Content::File([2; 32]), 0o755));
        after.insert(b"\xffname".to_vec(), entry(Content::Link([3; 32]), 0o777));
        after.insert(
            b"big".to_vec(),
            entry(Content::Missed("too big".into()), 0o644),
        );
        let changes = delta(&before, &after);
        assert_eq!(changes.len(), 4);
        let line = serde_json::to_string(&changes).unwrap();
        let read: Vec<Change> = serde_json::from_str(&line).unwrap();
        let mut replayed = before.clone();
        let decoded: Vec<Decoded> = read.into_iter().map(|c| c.decode().unwrap()).collect();
        apply(&mut replayed, &decoded);
        assert_eq!(replayed, after);
    }

    #[test]
    fn a_damaged_change_is_refused() {
        let change: Change = serde_json::from_str(r#"{"p":"a","f":"zz","m":420}"#).unwrap();
        assert!(change.decode().is_none());
        let change: Change = serde_json::from_str(r#"{"m":420,"d":true}"#).unwrap();
        assert!(change.decode().is_none());
    }
}
