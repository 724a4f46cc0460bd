//! grep: a Rust regex over the workspace with ripgrep's matcher and
//! searcher, results in path order, at most [`GREP_MAX_MATCHES`].
//!
//! The walk is Wicket's own, so confinement costs nothing per file: it goes
//! down from a held folder one `openat(O_NOFOLLOW)` at a time, never
//! follows a symlink, and opens each file relative to its folder's fd, so
//! no path is resolved twice and none can be swapped out from under it.
//! `.git/` is skipped, binary files are skipped, ignore files are honoured
//! as [`crate::ignore_files`] describes, and a cancel stops it.
//!
//! [`OrderedSearch`] owns the order: one thread walks in path order and
//! feeds the files; the others search them as they come; each file's
//! matches are settled in walk order, and the walk stops once the settled
//! files hold more than the limit.

use std::ffi::OsStr;
use std::fs::File;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkMatch};
use ignore::Match;
use ignore::overrides::{Override, OverrideBuilder};
use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use wicket_protocol::{ErrorKind, GrepArgs, GrepOutput};

use crate::Cancel;
use crate::error::{Error, Result};
use crate::ignore_files::{Level, Rules};
use crate::limits::{GREP_LINE_MAX_BYTES, GREP_MAX_MATCHES};
use crate::resolve::{Location, Workspace, file_type};

/// Files fed ahead of the first one whose matches are not settled: bounds
/// the work wasted after the limit, and the folders held open.
const FEED_AHEAD: usize = 1024;

/// How often a waiting thread looks for a cancel.
const CANCEL_POLL: std::time::Duration = std::time::Duration::from_millis(25);

/// A file's matches; its shown name is made only once it has one.
struct Collect<'a> {
    name: Name<'a>,
    shown: Option<String>,
    lines: Vec<String>,
}

/// How a file is shown: a whole name, or a folder's shown name and the file's own.
#[derive(Clone, Copy)]
enum Name<'a> {
    Whole(&'a str),
    In(&'a str, &'a OsStr),
}

impl Name<'_> {
    fn shown(self) -> String {
        match self {
            Name::Whole(shown) => shown.to_string(),
            Name::In(prefix, name) => join_shown(prefix, &name.to_string_lossy()),
        }
    }
}

impl Sink for Collect<'_> {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, found: &SinkMatch<'_>) -> Result<bool, std::io::Error> {
        let mut text = found.bytes();
        while let Some(stripped) = text
            .strip_suffix(b"\n")
            .or_else(|| text.strip_suffix(b"\r"))
        {
            text = stripped;
        }
        let cut = text.len() > GREP_LINE_MAX_BYTES;
        let mut line =
            String::from_utf8_lossy(&text[..text.len().min(GREP_LINE_MAX_BYTES)]).into_owned();
        if cut {
            line.push_str(" […]");
        }
        let name = self.name;
        let shown = self.shown.get_or_insert_with(|| name.shown());
        self.lines.push(format!(
            "{}:{}:{}",
            shown,
            found.line_number().unwrap_or(0),
            line
        ));
        Ok(self.lines.len() <= GREP_MAX_MATCHES)
    }
}

fn searcher() -> Searcher {
    SearcherBuilder::new()
        .binary_detection(BinaryDetection::quit(0))
        .line_number(true)
        .build()
}

fn search_one(matcher: &RegexMatcher, file: File, shown: &str) -> Vec<String> {
    let mut collect = Collect {
        name: Name::Whole(shown),
        shown: None,
        lines: Vec::new(),
    };
    search_file(
        &mut searcher(),
        matcher,
        file,
        &mut Vec::new(),
        &mut collect,
    );
    collect.lines
}

fn cancelled() -> Error {
    Error::new(
        ErrorKind::Cancelled,
        "the search was cancelled (the turn was cancelled)",
    )
}

/// Files up to this size are read whole in one go and searched as a
/// slice: no second read to sniff a byte-order mark, no line buffer.
const WHOLE_FILE_MAX_BYTES: u64 = 1024 * 1024;

/// Searches one file: small ones as a slice read in one go (unless they
/// start with a UTF-16 byte-order mark, which the streaming search
/// transcodes), larger ones streamed.
fn search_file(
    searcher: &mut Searcher,
    matcher: &RegexMatcher,
    mut file: File,
    buffer: &mut Vec<u8>,
    collect: &mut Collect<'_>,
) {
    use std::io::{Read, Seek};
    let size = file.metadata().map_or(u64::MAX, |metadata| metadata.len());
    if size <= WHOLE_FILE_MAX_BYTES {
        buffer.clear();
        if (&mut file)
            .take(WHOLE_FILE_MAX_BYTES)
            .read_to_end(buffer)
            .is_ok()
            && !buffer.starts_with(&[0xFF, 0xFE])
            && !buffer.starts_with(&[0xFE, 0xFF])
        {
            // The collector records what it found, and a read error leaves the file out of the results, like ripgrep; the search has nothing else to report.
            let _ = searcher.search_slice(matcher, buffer, collect);
            return;
        }
        if file.rewind().is_err() {
            return;
        }
    }
    // The collector records what it found, and a read error leaves the file out of the results, like ripgrep; the search has nothing else to report.
    let _ = searcher.search_file(matcher, &file, collect);
}

/// Opens a regular file in a held folder without following a link; special
/// files and links are `None` (a walk skips them).
fn open_regular(dir: impl AsFd, name: &OsStr) -> Option<File> {
    let fd = rustix::fs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .ok()?;
    let stat = rustix::fs::fstat(&fd).ok()?;
    (file_type(&stat) == FileType::RegularFile).then(|| File::from(fd))
}

fn open_folder_at(dir: impl AsFd, name: &OsStr) -> Option<OwnedFd> {
    rustix::fs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .ok()
}

/// Where a search starts.
enum Start {
    /// One file: it is searched even if an ignore file names it, as ripgrep does.
    File { file: File, shown: String },
    /// A folder, held open, with the rules that apply above it.
    Folder(Tree),
}

/// A folder to walk.
struct Tree {
    fd: OwnedFd,
    /// Its absolute path (for the ignore rules).
    absolute: PathBuf,
    /// What its files' names are shown under: workspace-relative, or absolute outside.
    prefix: String,
    rules: Rules,
}

fn join_shown(prefix: &str, rest: &str) -> String {
    match prefix {
        "" => rest.to_string(),
        "/" => format!("/{rest}"),
        _ => format!("{prefix}/{rest}"),
    }
}

impl Start {
    fn of(workspace: &Workspace, location: Option<&Location>) -> Result<Start> {
        match location {
            None => Ok(Start::inside(workspace, Path::new(""))?),
            Some(Location::Inside(relative)) => Start::inside(workspace, relative),
            Some(Location::Outside(path)) => Start::outside(workspace, path),
        }
    }

    /// An inside path: resolved by the workspace's rules, with the rules of
    /// every folder from the root down to it.
    fn inside(workspace: &Workspace, relative: &Path) -> Result<Start> {
        let shown = relative.display().to_string();
        let resolved = workspace.walk(relative, false)?;
        let Some(stat) = resolved.stat else {
            return Err(Error::new(
                ErrorKind::NotFound,
                format!("'{shown}' does not exist"),
            ));
        };
        let root = workspace.root();
        let below = resolved
            .absolute
            .strip_prefix(root)
            .map(Path::to_path_buf)
            .unwrap_or_default();
        let prefix = below.to_string_lossy().into_owned();
        if file_type(&stat) == FileType::RegularFile {
            let (file, _) =
                workspace.open_file(&Location::Inside(relative.to_path_buf()), &shown)?;
            return Ok(Start::File {
                file,
                shown: prefix,
            });
        }
        if file_type(&stat) != FileType::Directory {
            return Err(Error::new(
                ErrorKind::SpecialFile,
                format!("'{shown}' is a special file; grep searches files and folders"),
            ));
        }
        let mut rules = Rules::above(root);
        // The rules of the root and of each folder down to the start, read
        // through the same held fds the start is reached by.
        let mut fd = workspace.open_folder(Path::new(""), ".")?.0;
        let mut absolute = root.to_path_buf();
        for component in below.components() {
            rules.push(Level::read(&fd, &absolute));
            let name = component.as_os_str();
            fd = open_folder_at(&fd, name)
                .ok_or_else(|| Error::io(&shown, "the folder changed during the search"))?;
            absolute.push(name);
        }
        Ok(Start::Folder(Tree {
            fd,
            absolute,
            prefix,
            rules,
        }))
    }

    /// An outside path the person allowed: its own tree, no rules from above it.
    fn outside(workspace: &Workspace, path: &Path) -> Result<Start> {
        let shown = path.display().to_string();
        let location = Location::Outside(path.to_path_buf());
        match workspace.open_dir(&location, &shown) {
            Ok(fd) => Ok(Start::Folder(Tree {
                fd,
                absolute: path.to_path_buf(),
                prefix: shown,
                rules: Rules::default(),
            })),
            Err(error) if error.kind == ErrorKind::InvalidArgs => {
                let (file, _) = workspace.open_file(&location, &shown)?;
                Ok(Start::File { file, shown })
            }
            Err(error) => Err(error),
        }
    }
}

/// grep.
pub fn grep(
    workspace: &Workspace,
    location: Option<&Location>,
    args: &GrepArgs,
    cancel: &Cancel,
) -> Result<GrepOutput> {
    let matcher = RegexMatcherBuilder::new()
        .case_insensitive(args.case_insensitive)
        .line_terminator(Some(b'\n'))
        .build(&args.pattern)
        .map_err(|error| {
            // The regex crate's own words quote the pattern as written;
            // grep's quote it inside the group it wraps it in.
            let said = regex::Regex::new(&args.pattern)
                .err()
                .map_or_else(|| error.to_string(), |error| error.to_string());
            Error::invalid(format!(
                "the pattern is not a valid Rust regex (escape a literal ( [ . * + ? {{ | \\ with \\): {said}"
            ))
        })?;
    let start = Start::of(workspace, location)?;
    let (lines, truncated, hidden) = match start {
        Start::File { file, shown } => (search_one(&matcher, file, &shown), false, 0),
        Start::Folder(tree) => {
            let overrides = overrides_for(&tree.absolute, args.glob.as_deref())?;
            OrderedSearch::new(&matcher, overrides, workspace.hidden(), cancel).run(tree)?
        }
    };
    let mut matches = lines;
    let truncated = truncated || matches.len() > GREP_MAX_MATCHES;
    matches.truncate(GREP_MAX_MATCHES);
    let note = truncated.then(|| {
        format!("stopped at {GREP_MAX_MATCHES} matches; narrow the pattern, the path or the glob to see the rest")
    });
    Ok(GrepOutput {
        matches,
        truncated,
        note,
        hidden,
    })
}

fn overrides_for(root: &Path, glob: Option<&str>) -> Result<Override> {
    let mut builder = OverrideBuilder::new(root);
    if let Some(glob) = glob {
        builder
            .add(glob)
            .map_err(|error| Error::invalid(format!("the glob '{glob}' is not valid: {error}")))?;
    }
    builder
        .build()
        .map_err(|error| Error::invalid(format!("the glob is not valid: {error}")))
}

/// A folder the walk holds open while any of its files waits to be
/// searched, and how its files' names are shown.
struct HeldDir {
    fd: OwnedFd,
    shown: String,
}

/// One file to search: its folder (held open, with its shown name) and
/// its name there.
struct Item {
    dir: Arc<HeldDir>,
    name: Box<OsStr>,
}

#[derive(Default)]
struct Shared {
    items: Vec<Option<Item>>,
    walk_done: bool,
    next: usize,
    results: Vec<Option<Vec<String>>>,
    /// Files settled in order, and the matches in them.
    settled: usize,
    settled_matches: usize,
    /// Set once the settled files hold more than the limit.
    full: bool,
    /// Searchers waiting for the feed, and whether the walk waits for
    /// settling: a wakeup is a system call, made only for a waiter.
    idle_searchers: usize,
    walk_waiting: bool,
}

/// Files a searcher takes at once.
const BATCH: usize = 8;

/// The feed and the ordering of one search.
struct OrderedSearch<'a> {
    matcher: &'a RegexMatcher,
    overrides: Override,
    /// Paths hidden from the tools: not searched, counted.
    hidden: std::sync::Arc<Vec<PathBuf>>,
    left_out: std::sync::atomic::AtomicU64,
    cancel: &'a Cancel,
    shared: Mutex<Shared>,
    /// Signalled when the feed grows or ends.
    grown: Condvar,
    /// Signalled when files are settled.
    settled: Condvar,
}

impl<'a> OrderedSearch<'a> {
    fn new(
        matcher: &'a RegexMatcher,
        overrides: Override,
        hidden: std::sync::Arc<Vec<PathBuf>>,
        cancel: &'a Cancel,
    ) -> Self {
        OrderedSearch {
            matcher,
            overrides,
            hidden,
            left_out: Default::default(),
            cancel,
            shared: Mutex::new(Shared::default()),
            grown: Condvar::new(),
            settled: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Shared> {
        wicket_os::sync::lock(&self.shared)
    }

    /// Walks and searches; the matches in path order (possibly a few past
    /// the limit), whether the limit was reached, and how many paths it
    /// left out as hidden.
    fn run(self, tree: Tree) -> Result<(Vec<String>, bool, u64)> {
        let workers = std::thread::available_parallelism()
            .map_or(2, usize::from)
            .max(1);
        std::thread::scope(|scope| {
            scope.spawn(|| {
                self.walk(tree);
                self.lock().walk_done = true;
                self.grown.notify_all();
            });
            for _ in 0..workers {
                scope.spawn(|| self.search());
            }
        });
        let state = wicket_os::sync::into_inner(self.shared);
        if self.cancel.is_cancelled() {
            return Err(cancelled());
        }
        let hidden = self.left_out.into_inner();
        let mut matches = Vec::new();
        for lines in state.results.into_iter().take(state.settled).flatten() {
            matches.extend(lines);
            if matches.len() > GREP_MAX_MATCHES {
                break;
            }
        }
        Ok((matches, state.full, hidden))
    }

    /// Waits on `condvar`, waking now and then to see a cancel (which
    /// signals nothing).
    fn wait<'g>(&self, condvar: &Condvar, state: MutexGuard<'g, Shared>) -> MutexGuard<'g, Shared> {
        wicket_os::sync::wait_timeout(condvar, state, CANCEL_POLL)
    }

    /// True when the walk should stop: the limit is reached or a cancel came.
    fn stopping(&self, state: &Shared) -> bool {
        state.full || self.cancel.is_cancelled()
    }

    /// Whether `name` in the folder at `absolute` is hidden from the
    /// tools: then it is left out unsearched, and counted.
    fn left_out_as_hidden(&self, absolute: &Path, name: &OsStr) -> bool {
        if self.hidden.is_empty() {
            return false;
        }
        let path = absolute.join(name);
        let hidden = self.hidden.iter().any(|hidden| path.starts_with(hidden));
        if hidden {
            self.left_out
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        hidden
    }

    fn feed(&self, item: Item) -> bool {
        let mut state = self.lock();
        while !self.stopping(&state) && state.items.len() >= state.settled + FEED_AHEAD {
            state.walk_waiting = true;
            state = self.wait(&self.settled, state);
            state.walk_waiting = false;
        }
        if self.stopping(&state) {
            return false;
        }
        state.items.push(Some(item));
        let wake = state.idle_searchers > 0;
        drop(state);
        if wake {
            self.grown.notify_one();
        }
        true
    }

    /// The walk, depth first, siblings by name: every regular file that no
    /// rule excludes, fed in order.
    fn walk(&self, tree: Tree) {
        let Tree {
            fd,
            absolute,
            prefix,
            mut rules,
        } = tree;
        struct Frame {
            dir: Arc<HeldDir>,
            entries: std::vec::IntoIter<(Box<OsStr>, FileType)>,
            absolute: PathBuf,
        }
        let open = |fd: OwnedFd, absolute: PathBuf, shown: String, rules: &mut Rules| {
            rules.push(Level::read(&fd, &absolute));
            let entries = sorted_entries(&fd);
            Frame {
                dir: Arc::new(HeldDir { fd, shown }),
                entries: entries.into_iter(),
                absolute,
            }
        };
        let globbed = !self.overrides.is_empty();
        let mut stack = vec![open(fd, absolute, prefix, &mut rules)];
        while let Some(frame) = stack.last_mut() {
            let Some((name, kind)) = frame.entries.next() else {
                stack.pop();
                rules.pop();
                continue;
            };
            if name.as_bytes() == b".git" || self.left_out_as_hidden(&frame.absolute, &name) {
                continue;
            }
            let kind = match kind {
                FileType::Unknown => {
                    match rustix::fs::statat(&frame.dir.fd, &*name, AtFlags::SYMLINK_NOFOLLOW) {
                        Ok(stat) => file_type(&stat),
                        Err(_) => continue,
                    }
                }
                kind => kind,
            };
            let is_dir = match kind {
                FileType::Directory => true,
                FileType::RegularFile => false,
                // Links are not followed; special files are not searched.
                _ => continue,
            };
            // Paths are made only when a rule or a glob needs them.
            if rules.any() && rules.ignored(&frame.absolute.join(&*name), is_dir) {
                continue;
            }
            if globbed {
                let shown = join_shown(&frame.dir.shown, &name.to_string_lossy());
                if let Match::Ignore(_) = self.overrides.matched(Path::new(&shown), is_dir) {
                    continue;
                }
            }
            if is_dir {
                if self.stopping(&self.lock()) {
                    return;
                }
                if let Some(fd) = open_folder_at(&frame.dir.fd, &name) {
                    let shown = join_shown(&frame.dir.shown, &name.to_string_lossy());
                    let absolute = frame.absolute.join(&*name);
                    let child = open(fd, absolute, shown, &mut rules);
                    stack.push(child);
                }
                continue;
            }
            let item = Item {
                dir: frame.dir.clone(),
                name,
            };
            if !self.feed(item) {
                return;
            }
        }
    }

    /// A searcher: takes the next few files, searches them, settles what it can.
    fn search(&self) {
        let mut searcher = searcher();
        let mut buffer = Vec::with_capacity(64 * 1024);
        loop {
            let Some((first, batch)) = self.take() else {
                return;
            };
            let found: Vec<Vec<String>> = batch
                .into_iter()
                .map(|item| {
                    let mut collect = Collect {
                        name: Name::In(&item.dir.shown, &item.name),
                        shown: None,
                        lines: Vec::new(),
                    };
                    if let Some(file) = open_regular(&item.dir.fd, &item.name) {
                        search_file(&mut searcher, self.matcher, file, &mut buffer, &mut collect);
                    }
                    collect.lines
                })
                .collect();
            if self.settle(first, found) {
                return;
            }
        }
    }

    /// The next files in walk order, and the index of the first; `None`
    /// when the search is over.
    fn take(&self) -> Option<(usize, Vec<Item>)> {
        let mut state = self.lock();
        loop {
            if self.stopping(&state) {
                return None;
            }
            if state.next < state.items.len() {
                let first = state.next;
                let end = state.items.len().min(first + BATCH);
                state.next = end;
                let batch = state.items[first..end]
                    .iter_mut()
                    .filter_map(Option::take)
                    .collect();
                return Some((first, batch));
            }
            if state.walk_done {
                return None;
            }
            state.idle_searchers += 1;
            state = self.wait(&self.grown, state);
            state.idle_searchers -= 1;
        }
    }

    /// Records the matches of the files from `first` on and settles those
    /// now in order; true once the limit is reached.
    fn settle(&self, first: usize, found: Vec<Vec<String>>) -> bool {
        let mut state = self.lock();
        let end = first + found.len();
        if state.results.len() < end {
            state.results.resize_with(end, || None);
        }
        for (offset, lines) in found.into_iter().enumerate() {
            state.results[first + offset] = Some(lines);
        }
        let mut progressed = false;
        while let Some(Some(lines)) = state.results.get(state.settled) {
            let count = lines.len();
            state.settled_matches += count;
            state.settled += 1;
            progressed = true;
            if state.settled_matches > GREP_MAX_MATCHES {
                state.full = true;
                break;
            }
        }
        let full = state.full;
        let wake_walk = progressed && state.walk_waiting;
        let wake_searchers = full && state.idle_searchers > 0;
        drop(state);
        if wake_walk || full {
            self.settled.notify_all();
        }
        if wake_searchers {
            self.grown.notify_all();
        }
        full
    }
}

/// A folder's entries (not `.` and `..`), sorted by name as bytes.
fn sorted_entries(fd: &OwnedFd) -> Vec<(Box<OsStr>, FileType)> {
    let mut entries = Vec::new();
    // Dropping the error is right here: grep searches what it can read, as
    // it skips a folder it cannot open, and a listing that fails part-way
    // keeps the names read before the failure (as `Dir` did).
    let _ = wicket_os::walk::list(fd, |name, kind| {
        entries.push((Box::<OsStr>::from(OsStr::from_bytes(name)), kind));
    });
    entries.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    entries
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shown_names_join_their_prefix() {
        assert_eq!(join_shown("", "a.rs"), "a.rs");
        assert_eq!(join_shown("src", "a.rs"), "src/a.rs");
        assert_eq!(join_shown("/", "etc"), "/etc");
    }
}
