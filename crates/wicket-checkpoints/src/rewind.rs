//! A rewind: what differs between a checkpoint and the workspace now, and
//! the changes that make the workspace what it was, each through the
//! workspace's no-link path ([`wicket_tools::tree`]).

use std::collections::BTreeSet;

use wicket_tools::Workspace;
use wicket_tools::tree::Kind;

use crate::objects::Objects;
use crate::scan::heard_at;
use crate::state::{self, Content, Entry, State};
use crate::{Error, Info, Keep, Record, Result, Rewound, Settings, Store, Taking, scan};

/// What a rewind will change (paths below the workspace root, as text).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Plan {
    /// There now, different then: written back.
    pub restore: Vec<String>,
    /// Not there now: made again.
    pub create: Vec<String>,
    /// Not there then: removed.
    pub delete: Vec<String>,
    /// Left as they are, and why (no copy of them was saved).
    pub kept: Vec<(String, String)>,
    #[serde(skip)]
    steps: Steps,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Steps {
    /// Removed first, deepest first.
    remove: Vec<(Vec<u8>, Kind)>,
    /// Then folders made, shallowest first.
    dirs: Vec<Vec<u8>>,
    /// Then files and links written (true: over what is there now).
    put: Vec<(Vec<u8>, Entry, bool)>,
    /// Then folders' modes, deepest first.
    modes: Vec<(Vec<u8>, u32)>,
    /// First of all, folders a step is in that their owner may not change
    /// now (`chmod 555`): opened up, and given their mode again at the end.
    open_up: Vec<(Vec<u8>, u32)>,
}

/// What a rewind did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Applied {
    /// The plan it carried out.
    pub plan: Plan,
    /// Paths it could not change, and why.
    pub failed: Vec<(String, String)>,
}

/// Why a path in doubt is left as it is.
const DOUBT: &str = "it changed with no change heard (written through a mapping, or on a \
     filesystem that does not say), so what it held at that checkpoint is not known; left as it is";

fn text(path: &[u8]) -> String {
    wicket_tools::tree::shown(path)
}

/// The nearest folder at or above `path` that one of the states has no
/// record of inside (it could not be read), with why.
fn missed_above<'s>(path: &[u8], states: [&'s State; 2]) -> Option<&'s str> {
    let mut end = path.len();
    loop {
        for state in states {
            if let Some(Entry {
                content: Content::Missed(why),
                ..
            }) = state.get(&path[..end])
            {
                return Some(why);
            }
        }
        end = path[..end].iter().rposition(|byte| *byte == b'/')?;
    }
}

/// A path through a `.git` or `.wicket` entry: no rewind writes or removes
/// one (only a card that said "git" may), even where an older journal
/// holds it.
fn guarded(path: &[u8]) -> bool {
    use std::os::unix::ffi::OsStrExt;
    wicket_protocol::guarded::git_or_wicket(std::path::Path::new(std::ffi::OsStr::from_bytes(path)))
}

/// A path through a `.wicket` entry: nothing writes one, not even a
/// preview whose card said "git".
pub(crate) fn in_wicket(path: &[u8]) -> bool {
    path.split(|byte| *byte == b'/')
        .any(|name| name == b".wicket")
}

impl Plan {
    /// What takes the workspace from `now` back to `then`; what `then`
    /// may not hold as it was (`doubts`, and what lies below them) is left
    /// as it is.
    pub(crate) fn between(then: &State, now: &State, doubts: &BTreeSet<Vec<u8>>) -> Plan {
        Plan::between_with(then, now, doubts, false)
    }

    /// [`Plan::between`]; with `git`, paths through `.git` too (a
    /// preview's apply, whose card said so), never through `.wicket`.
    pub(crate) fn between_with(
        then: &State,
        now: &State,
        doubts: &BTreeSet<Vec<u8>>,
        git: bool,
    ) -> Plan {
        let guarded = |path: &[u8]| match git {
            true => in_wicket(path),
            false => guarded(path),
        };
        let mut plan = Plan::default();
        for (path, old) in then.iter().filter(|(path, _)| !guarded(path)) {
            let current = now.get(path);
            if current.is_some_and(|current| current.same_as(old)) {
                continue;
            }
            if heard_at(doubts, path) {
                plan.kept.push((text(path), DOUBT.to_string()));
                continue;
            }
            if let Some(why) = missed_above(path, [then, now]) {
                plan.kept.push((text(path), why.to_string()));
                continue;
            }
            let Some(old_kind) = old.kind() else { continue };
            match current.and_then(Entry::kind) {
                None => plan.create.push(text(path)),
                Some(now_kind) => {
                    if now_kind != old_kind {
                        plan.steps.remove.push((path.clone(), now_kind));
                    }
                    plan.restore.push(text(path));
                }
            }
            match old_kind {
                Kind::Dir => {
                    if current.and_then(Entry::kind) != Some(Kind::Dir) {
                        plan.steps.dirs.push(path.clone());
                    }
                    plan.steps.modes.push((path.clone(), old.mode));
                }
                Kind::File | Kind::Link => {
                    let replace = current.is_some();
                    plan.steps.put.push((path.clone(), old.clone(), replace));
                }
            }
        }
        for (path, current) in now.iter().filter(|(path, _)| !guarded(path)) {
            if then.contains_key(path) {
                continue;
            }
            if heard_at(doubts, path) {
                plan.kept.push((text(path), DOUBT.to_string()));
                continue;
            }
            if let Some(why) = missed_above(path, [then, now]) {
                plan.kept.push((
                    text(path),
                    format!("{why}; a file with no saved copy is never deleted, since no rewind could bring it back"),
                ));
                continue;
            }
            if let Some(now_kind) = current.kind() {
                plan.steps.remove.push((path.clone(), now_kind));
                plan.delete.push(text(path));
            }
        }
        plan.open_up(then, now);
        // Children sort after their folder: reversed, they go first.
        plan.steps.remove.sort_by(|a, b| b.0.cmp(&a.0));
        plan.steps.modes.sort_by(|a, b| b.0.cmp(&a.0));
        plan.steps.modes.dedup_by(|a, b| a.0 == b.0);
        plan
    }

    /// The folders now in the way of a step (no write or search for their
    /// owner), to open up first; those kept get their mode back at the end.
    fn open_up(&mut self, then: &State, now: &State) {
        let mut touched: Vec<&[u8]> = Vec::new();
        touched.extend(self.steps.remove.iter().map(|(path, _)| path.as_slice()));
        touched.extend(self.steps.dirs.iter().map(Vec::as_slice));
        touched.extend(self.steps.put.iter().map(|(path, _, _)| path.as_slice()));
        let mut folders = std::collections::BTreeSet::new();
        for path in touched {
            let mut end = path.len();
            while let Some(slash) = path[..end].iter().rposition(|byte| *byte == b'/') {
                end = slash;
                folders.insert(&path[..end]);
            }
        }
        for folder in folders {
            let Some(Entry {
                content: Content::Dir,
                mode,
                ..
            }) = now.get(folder)
            else {
                continue;
            };
            if mode & 0o300 == 0o300 {
                continue;
            }
            self.steps.open_up.push((folder.to_vec(), mode | 0o700));
            if let Some(Entry {
                content: Content::Dir,
                mode,
                ..
            }) = then.get(folder)
            {
                self.steps.modes.push((folder.to_vec(), *mode));
            }
        }
    }

    /// The plan as a person reads it, one path a line (`restore a.txt`,
    /// `keep big.iso: why`), control characters made visible.
    pub fn lines(&self) -> Vec<String> {
        use wicket_protocol::text::visible_line;
        let mut lines = Vec::new();
        // A file the session changed or removed is restored; one it made is removed.
        for (verb, paths) in [
            ("restore", &self.restore),
            ("restore", &self.create),
            ("remove ", &self.delete),
        ] {
            lines.extend(
                paths
                    .iter()
                    .map(|path| format!("{verb} {}", visible_line(path))),
            );
        }
        lines.extend(
            self.kept.iter().map(|(path, why)| {
                format!("keep    {}: {}", visible_line(path), visible_line(why))
            }),
        );
        lines
    }

    /// Nothing to change.
    pub fn is_empty(&self) -> bool {
        self.restore.is_empty() && self.create.is_empty() && self.delete.is_empty()
    }

    /// Carries the plan out: every step is tried; what fails is said.
    pub(crate) fn apply(mut self, workspace: &Workspace, objects: &Objects) -> Applied {
        let mut failed = Vec::new();
        // A copy missing from the store: its path is left as it is, not
        // removed to make room for what cannot be written.
        let missing: Vec<Vec<u8>> = self
            .steps
            .put
            .iter()
            .filter(|(_, entry, _)| match &entry.content {
                Content::File(hash) | Content::Link(hash) => !objects.has(hash),
                Content::Dir | Content::Missed(_) => false,
            })
            .map(|(path, _, _)| path.clone())
            .collect();
        for path in &missing {
            failed.push((
                text(path),
                "its saved copy is missing from the store".to_string(),
            ));
        }
        let shown: Vec<String> = missing.iter().map(|path| text(path)).collect();
        self.restore.retain(|path| !shown.contains(path));
        self.create.retain(|path| !shown.contains(path));
        self.steps
            .put
            .retain(|(path, _, _)| !missing.contains(path));
        self.steps
            .remove
            .retain(|(path, _)| !missing.contains(path));
        let mut fail =
            |path: &[u8], error: std::io::Error| failed.push((text(path), error.to_string()));
        for (path, mode) in &self.steps.open_up {
            if let Err(error) = workspace.set_dir_mode(path, *mode) {
                fail(path, error);
            }
        }
        for (path, kind) in &self.steps.remove {
            if let Err(error) = workspace.remove(path, *kind) {
                fail(path, error);
            }
        }
        for path in &self.steps.dirs {
            if let Err(error) = workspace.make_dir(path) {
                fail(path, error);
            }
        }
        for (path, entry, replace) in &self.steps.put {
            let put = match &entry.content {
                Content::File(hash) => objects
                    .get(hash)
                    .and_then(|bytes| workspace.put_file(path, &bytes, entry.mode, *replace)),
                Content::Link(hash) => objects
                    .get(hash)
                    .and_then(|target| workspace.put_link(path, &target, *replace)),
                Content::Dir | Content::Missed(_) => Ok(()),
            };
            if let Err(error) = put {
                fail(path, error);
            }
        }
        for (path, mode) in &self.steps.modes {
            if let Err(error) = workspace.set_dir_mode(path, *mode) {
                fail(path, error);
            }
        }
        // What failed is said once, as not done.
        let failed_paths: Vec<&String> = failed.iter().map(|(path, _)| path).collect();
        for list in [&mut self.restore, &mut self.create, &mut self.delete] {
            list.retain(|path| !failed_paths.contains(&path));
        }
        Applied { plan: self, failed }
    }
}

/// Reading the journal back: what each checkpoint held, the list, and a
/// rewind to one of them.
impl Store {
    /// The state at checkpoint `id`.
    pub(crate) fn state_at(records: &[Record], id: u64) -> Result<State> {
        let mut state = State::new();
        for record in records {
            state::apply(&mut state, &record.changes);
            if record.info.id == id {
                return Ok(state);
            }
        }
        Err(Error::Gone)
    }

    /// What takes back this session's calls from checkpoint `to` on, and
    /// nothing else, against the workspace `now`: the target state is `now`
    /// with each path a call of this session changed put back as it was
    /// before the first of them, where it still holds what the last of them
    /// left. A path changed since by anyone else is kept, and named
    /// ([`Scoped::kept`]); a folder this session made that now holds what
    /// it did not make is kept too. Refused when a call in the range has no
    /// line after it (what it did is not known).
    pub(crate) fn scoped(
        records: &[Record],
        to: &Info,
        now: &State,
        others: &[(String, Vec<Record>)],
    ) -> Result<Scoped> {
        let touched = Touched::from(records, to)?;
        let mut then = now.clone();
        let mut kept = Vec::new();
        for (path, was) in &touched.before {
            let current = now.get(path);
            let (left, tool) = touched.left.get(path).cloned().unwrap_or_default();
            if !same(left.as_ref(), current) {
                let why = match who(others, path, current, Claims::Any) {
                    Some(by) => format!(
                        "changed since by {by}: what this session left there is not what is \
                         there now, so it stays as it is"
                    ),
                    None => CHANGED_SINCE.to_string(),
                };
                kept.push((path.clone(), why));
                continue;
            }
            // Another session's call left the same there (at the same time,
            // or after): it may be theirs, and it stays. A write's line names
            // what it wrote, give or take a moment; a command's, all that
            // changed while it ran: a write is not held back by a command's.
            let claims = match WRITES.contains(&tool.as_str()) {
                true => Claims::Writes,
                false => Claims::Any,
            };
            if let Some(by) = who(others, path, current, claims) {
                kept.push((
                    path.clone(),
                    format!("{by} left it as it is too, so it may be theirs; it stays as it is"),
                ));
                continue;
            }
            match was {
                Some(entry) => then.insert(path.clone(), entry.clone()),
                None => then.remove(path),
            };
        }
        keep_folders_that_hold_others(&touched, now, &mut then, &mut kept);
        Ok(Scoped { then, kept })
    }

    /// The journals of the other sessions of this workspace, for a
    /// rewind's plan to name who changed what (none when they cannot be
    /// read: a change is then said to be someone else's).
    fn others(&self) -> Vec<(String, Vec<Record>)> {
        let key = self.named_key().unwrap_or_default();
        self.other_sessions(&key).unwrap_or_default()
    }

    /// The paths checkpoint `id` may not hold as they were: what a full
    /// walk after it found changed with nothing heard of it. Each doubt is
    /// the last full walk before it, its paths, and its line's id.
    pub(crate) fn doubts<'d>(
        found: impl IntoIterator<Item = (u64, &'d [Vec<u8>], u64)>,
        id: u64,
    ) -> BTreeSet<Vec<u8>> {
        found
            .into_iter()
            .filter(|(since, _, line)| *since < id && id < *line)
            .flat_map(|(_, paths, _)| paths.iter().cloned())
            .collect()
    }

    /// The doubts the journal's lines carry, for [`Store::doubts`].
    pub(crate) fn recorded(records: &[Record]) -> impl Iterator<Item = (u64, &[Vec<u8>], u64)> {
        records.iter().filter_map(|record| {
            let (since, paths) = record.doubt.as_ref()?;
            Some((*since, paths.as_slice(), record.info.id))
        })
    }

    /// Every checkpoint, oldest first.
    pub fn list(&self) -> Result<Vec<Info>> {
        let _guard = self.lock();
        Ok(listed(self.records()?))
    }

    /// The first checkpoint at or after event `seq`: the files as they
    /// were just before that event.
    pub fn find(&self, seq: u64) -> Result<Info> {
        first_at(&self.list()?, seq).cloned()
    }

    /// What a rewind to the checkpoint `to` would change now (nothing is
    /// recorded, stored or changed; what the tracker heard is kept for the
    /// next checkpoint).
    pub fn plan(&self, workspace: &Workspace, settings: &Settings, to: &Info) -> Result<Plan> {
        let mut guard = self.lock();
        let cache = self.cache(&mut guard, settings)?;
        let records = self.records()?;
        let mut doubts = Self::doubts(Self::recorded(&records), to.id);
        let home = self.home_below(workspace);
        let mut maker = self.maker(workspace, settings)?;
        maker.home = home.as_deref();
        maker.keep = Keep::HashOnly;
        let now = self.scan_full(workspace, &maker, &cache.journaled, None, None)?;
        self.doubts_heard(cache, &now, to, &mut doubts);
        let now = now.state(&cache.journaled);
        let scoped = Self::scoped(&records, to, &now, &self.others())?;
        Ok(scoped.plan(&now, &doubts))
    }

    /// The paths a full walk (`now`) found changed that the tracker did not
    /// hear since its last full walk, where that was before `to`: in doubt.
    /// What the tracker heard is kept for the next checkpoint.
    fn doubts_heard(
        &self,
        cache: &mut crate::Cache,
        now: &scan::Scanned,
        to: &Info,
        doubts: &mut BTreeSet<Vec<u8>>,
    ) {
        if let Some(tracker) = cache.tracker.as_mut() {
            let heard = tracker.drain();
            if let Some(since) = cache.walked.filter(|_| !heard.lost && cache.tracked_since)
                && since < to.id
            {
                let missed = scan::unheard(&cache.journaled, now, &heard.paths, tracker);
                doubts.extend(missed);
            }
            tracker.keep(heard);
        }
    }

    /// What would take the whole workspace back to checkpoint `to`, every
    /// path whoever changed it: for the tests that check a tracked
    /// checkpoint holds what a full walk finds.
    #[cfg(test)]
    pub(crate) fn plan_whole(
        &self,
        workspace: &Workspace,
        settings: &Settings,
        to: &Info,
    ) -> Result<Plan> {
        let mut guard = self.lock();
        let cache = self.cache(&mut guard, settings)?;
        let records = self.records()?;
        let then = Self::state_at(&records, to.id)?;
        let mut maker = self.maker(workspace, settings)?;
        let home = self.home_below(workspace);
        maker.home = home.as_deref();
        maker.keep = Keep::HashOnly;
        let now = self.scan_full(workspace, &maker, &cache.journaled, None, None)?;
        let mut doubts = Self::doubts(Self::recorded(&records), to.id);
        self.doubts_heard(cache, &now, to, &mut doubts);
        Ok(Plan::between(&then, &now.state(&cache.journaled), &doubts))
    }

    /// Rewinds the workspace to the checkpoint `to`: records the files as
    /// they are (before event `seq`, the `rewound` to come) with a full
    /// walk, then changes what differs. Refused, with nothing changed,
    /// when that record cannot be written: a rewind that could not be
    /// undone is not made. What that record has no copy of, and what the
    /// checkpoint may not hold as it was, is left as it is (the plan's `kept`).
    pub fn rewind(
        &self,
        workspace: &Workspace,
        settings: &Settings,
        to: &Info,
        seq: u64,
    ) -> Result<Rewound> {
        let mut guard = self.lock();
        let cache = self.cache(&mut guard, settings)?;
        let records = self.records()?;
        // Refused before anything is recorded: a checkpoint gone, or a call
        // whose changes are not known.
        Self::scoped(&records, to, &cache.journaled, &[])?;
        let before = self.take_in(cache, workspace, settings, seq, "rewind", Taking::Walked);
        let before = match before {
            Ok(before) => before,
            Err(error) => {
                *guard = None;
                return Err(error);
            }
        };
        // The walk just made may have found doubts of its own.
        let made =
            (before.doubt.as_ref()).map(|(since, paths)| (*since, paths.as_slice(), before.id));
        let doubts = Self::doubts(Self::recorded(&records).chain(made), to.id);
        let scoped = Self::scoped(&records, to, &cache.journaled, &self.others())?;
        let plan = scoped.plan(&cache.journaled, &doubts);
        let Some(objects) = self.objects(Some(workspace))? else {
            return Err(Error::Gone);
        };
        let applied = plan.apply(workspace, objects);
        // What the rewind itself did, as any call's: a rewind of it (`--undo`)
        // takes back that and nothing else.
        if let Err(error) = self.take_in(
            cache,
            workspace,
            settings,
            seq,
            "rewind",
            Taking::After(None),
        ) {
            *guard = None;
            return Err(error);
        }
        Ok(Rewound {
            to: to.clone(),
            before,
            applied,
        })
    }
}

/// In a list of checkpoints, the first at or after event `seq`.
pub fn first_at(checkpoints: &[Info], seq: u64) -> Result<&Info> {
    checkpoints
        .iter()
        .find(|info| info.seq >= seq)
        .ok_or(Error::NoCheckpoint(seq))
}

/// The tool a preview's apply records its line before under.
pub(crate) const PREVIEW_APPLY: &str = "preview";

/// Why a path a call of this session changed is left as it is, when no
/// session of Wicket's wrote what is there now.
const CHANGED_SINCE: &str = "changed since by someone else, not Wicket (you or another tool): \
     what this session left there is not what is there now, so it stays as it is";

/// Why a folder this session made is left in place.
const HOLDS_OTHERS: &str =
    "this session made it, but it holds files this session did not make, so it stays";

/// A rewind of this session's calls: the workspace as it will be, and the
/// paths left as they are, with why.
pub(crate) struct Scoped {
    then: State,
    kept: Vec<(Vec<u8>, String)>,
}

/// The write tools: a line after one of them names what it wrote, with
/// at most what else changed in the same moment.
const WRITES: [&str; 2] = ["write_file", "search_replace"];

/// Which other sessions' lines may claim a path.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Claims {
    /// Any call's.
    Any,
    /// Only a write's.
    Writes,
}

/// What this session's calls from a checkpoint on touched: each path as
/// it was before the first of them, and as the last of them left it (with
/// that call's tool).
struct Touched {
    before: std::collections::BTreeMap<Vec<u8>, Option<Entry>>,
    left: std::collections::BTreeMap<Vec<u8>, (Option<Entry>, String)>,
}

impl Touched {
    /// From the journal's lines from checkpoint `to` on. Refused when a
    /// call there has no line after it, and when `to` is no longer kept.
    fn from(records: &[Record], to: &Info) -> Result<Touched> {
        let Some(start) = records.iter().position(|record| record.info.id == to.id) else {
            return Err(Error::Gone);
        };
        let range = &records[start..];
        // Every call from `to` on says what it left; a preview's apply is
        // part of its call (its line before, the call's after).
        if let Some(unknown) = range
            .iter()
            .filter(|record| !record.after && record.info.tool != PREVIEW_APPLY)
            .map(|record| record.info.seq)
            .find(|seq| {
                !range
                    .iter()
                    .any(|after| after.after && after.info.seq == *seq)
            })
        {
            return Err(unattributed(records, unknown));
        }
        let mut state = State::new();
        for record in &records[..=start] {
            state::apply(&mut state, &record.changes);
        }
        let mut touched = Touched {
            before: Default::default(),
            left: Default::default(),
        };
        for record in &range[1..] {
            for (path, _) in record.changes.iter().filter(|(path, _)| record.did(path)) {
                touched
                    .before
                    .entry(path.clone())
                    .or_insert_with(|| state.get(path).cloned());
            }
            state::apply(&mut state, &record.changes);
            for (path, _) in record.changes.iter().filter(|(path, _)| record.did(path)) {
                let left = (state.get(path).cloned(), record.info.tool.clone());
                touched.left.insert(path.clone(), left);
            }
        }
        Ok(touched)
    }
}

impl Record {
    /// Whether this line says its call changed `path`: a line after a
    /// call, and after a write only for the path it wrote and the folders
    /// above it (made for it); what else was heard in that moment is not
    /// the write's.
    fn did(&self, path: &[u8]) -> bool {
        self.after
            && self.wrote.as_deref().is_none_or(|wrote| {
                wrote == path || (wrote.starts_with(path) && wrote.get(path.len()) == Some(&b'/'))
            })
    }
}

/// A folder the session made, to be removed, that still holds what stays
/// keeps its place, and is named.
fn keep_folders_that_hold_others(
    touched: &Touched,
    now: &State,
    then: &mut State,
    kept: &mut Vec<(Vec<u8>, String)>,
) {
    let removed: Vec<Vec<u8>> = touched
        .before
        .iter()
        .filter(|(path, was)| was.is_none() && !then.contains_key(*path))
        .map(|(path, _)| path.clone())
        .collect();
    for folder in removed.iter().rev() {
        let mut inside = folder.clone();
        inside.push(b'/');
        let holds = then
            .range(inside.clone()..)
            .next()
            .is_some_and(|(path, _)| path.starts_with(&inside));
        if holds && let Some(current) = now.get(folder) {
            then.insert(folder.clone(), current.clone());
            kept.push((folder.clone(), HOLDS_OTHERS.to_string()));
        }
    }
}

/// Whether two entries (or their absence) are the same.
fn same(one: Option<&Entry>, other: Option<&Entry>) -> bool {
    match (one, other) {
        (None, None) => true,
        (Some(one), Some(other)) => one.same_as(other),
        _ => false,
    }
}

/// The other session whose newest call left `path` as `entry` is, as a
/// person reads it (`session b (its run at event 7)`), as far as the
/// journals say.
fn who(
    others: &[(String, Vec<Record>)],
    path: &[u8],
    entry: Option<&Entry>,
    claims: Claims,
) -> Option<String> {
    others
        .iter()
        .flat_map(|(session, records)| {
            records
                .iter()
                .filter(|record| record.after)
                .filter(move |record| {
                    claims == Claims::Any || WRITES.contains(&record.info.tool.as_str())
                })
                .filter(|record| {
                    record.did(path)
                        && record
                            .changes
                            .iter()
                            .any(|(changed, left)| changed == path && same(left.as_ref(), entry))
                })
                .map(move |record| (record.info.at, session, record))
        })
        .max_by_key(|(at, _, _)| *at)
        .map(|(_, session, record)| {
            format!(
                "session {session} (its {} at event {})",
                record.info.tool, record.info.seq
            )
        })
}

impl Scoped {
    /// The steps from `now`, with what is kept said.
    pub(crate) fn plan(&self, now: &State, doubts: &BTreeSet<Vec<u8>>) -> Plan {
        let mut plan = Plan::between(&self.then, now, doubts);
        plan.kept.extend(
            self.kept
                .iter()
                .map(|(path, why)| (text(path), why.clone())),
        );
        plan
    }
}

/// The error for a rewind past `unknown`, a call with no line after it:
/// names the earliest point from which every call is known.
fn unattributed(records: &[Record], unknown: u64) -> Error {
    let nearest = records
        .iter()
        .filter(|record| !record.after && record.info.seq > unknown)
        .find(|record| {
            records
                .iter()
                .any(|after| after.after && after.info.seq == record.info.seq)
        })
        .map_or(0, |record| record.info.seq);
    Error::Unattributed { unknown, nearest }
}

/// The checkpoints as a person picks one: a line before each call, with
/// what that call changed where a line after it says (`scoped`).
pub(crate) fn listed(records: Vec<Record>) -> Vec<Info> {
    let mut listed: Vec<Info> = Vec::new();
    for record in records {
        if record.after {
            if let Some(info) = listed
                .iter_mut()
                .rev()
                .find(|info| info.seq == record.info.seq)
            {
                info.changed = record
                    .changes
                    .iter()
                    .filter(|(path, _)| record.did(path))
                    .count();
                info.scoped = true;
            }
            continue;
        }
        // A preview's apply is part of its run call, listed before it.
        if record.info.tool == PREVIEW_APPLY {
            continue;
        }
        listed.push(record.info);
    }
    listed
}
