//! grep: a Rust regex over the workspace with ripgrep's walker and searcher,
//! .gitignore honoured, `.git/` and binary files skipped, results in path order,
//! at most [`GREP_MAX_MATCHES`].

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use grep_regex::RegexMatcherBuilder;
use grep_searcher::{BinaryDetection, SearcherBuilder, Sink, SinkMatch};
use ignore::WalkBuilder;
use ignore::overrides::OverrideBuilder;
use wicket_protocol::{GrepArgs, GrepOutput};

use crate::error::{Error, Result};
use crate::limits::{GREP_LINE_MAX_BYTES, GREP_MAX_MATCHES};
use crate::resolve::{Location, Workspace};

/// Files searched ahead of the first unfinished one; bounds wasted work after
/// the 200th match while keeping every core busy.
const SEARCH_WINDOW: usize = 256;

struct Collect<'a> {
    shown: &'a str,
    lines: Vec<String>,
}

impl Sink for Collect<'_> {
    type Error = std::io::Error;

    fn matched(
        &mut self,
        _: &grep_searcher::Searcher,
        found: &SinkMatch<'_>,
    ) -> Result<bool, std::io::Error> {
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
        self.lines.push(format!(
            "{}:{}:{}",
            self.shown,
            found.line_number().unwrap_or(0),
            line
        ));
        Ok(self.lines.len() <= GREP_MAX_MATCHES)
    }
}

/// Paths in walk order, shared between the walking thread and the searchers.
#[derive(Default)]
struct Feed {
    state: Mutex<(Vec<PathBuf>, bool)>,
    grown: std::sync::Condvar,
}

impl Feed {
    fn push(&self, path: PathBuf) {
        if let Ok(mut state) = self.state.lock() {
            state.0.push(path);
            self.grown.notify_all();
        }
    }

    fn finish(&self) {
        if let Ok(mut state) = self.state.lock() {
            state.1 = true;
            self.grown.notify_all();
        }
    }

    fn finish_if(&self, stopped: bool) {
        if stopped {
            self.finish();
        }
    }

    /// The path at `index`, waiting for the walk to reach it; `None` past the end.
    fn get(&self, index: usize) -> Option<PathBuf> {
        let mut state = self.state.lock().ok()?;
        loop {
            if let Some(path) = state.0.get(index) {
                return Some(path.clone());
            }
            if state.1 {
                return None;
            }
            state = self.grown.wait(state).ok()?;
        }
    }
}

/// The part of `path` below `root`, as bytes: the walk builds every path by
/// appending names to the root it was given, so a byte prefix is enough
/// (no component parsing per file).
fn below<'a>(root: &Path, path: &'a Path) -> Option<&'a [u8]> {
    let rest = path
        .as_os_str()
        .as_bytes()
        .strip_prefix(root.as_os_str().as_bytes())?;
    match rest {
        [] => Some(rest),
        [b'/', tail @ ..] => Some(tail),
        // The root ends with a slash, or the path only shares its first letters.
        _ if root.as_os_str().as_bytes().ends_with(b"/") => Some(rest),
        _ => None,
    }
}

fn relative_display(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

pub fn grep(
    workspace: &Workspace,
    location: Option<&Location>,
    args: &GrepArgs,
) -> Result<GrepOutput> {
    let matcher = RegexMatcherBuilder::new()
        .case_insensitive(args.case_insensitive)
        .line_terminator(Some(b'\n'))
        .build(&args.pattern)
        .map_err(|error| {
            Error::invalid(format!("the pattern is not a valid Rust regex: {error}"))
        })?;

    // The walk goes by path; each file is then opened through the resolver, so a
    // folder swapped for a symlink mid-walk never lets outside bytes through.
    let (walk_root, base) = match location {
        None => (workspace.root().to_path_buf(), Some(PathBuf::new())),
        Some(Location::Inside(relative)) => {
            let resolved = workspace.walk(relative, false)?;
            if resolved.stat.is_none() {
                return Err(Error::new(
                    wicket_protocol::ErrorKind::NotFound,
                    format!("'{}' does not exist", relative.display()),
                ));
            }
            let inside = resolved
                .absolute
                .strip_prefix(workspace.root())
                .map(Path::to_path_buf)
                .ok();
            (resolved.absolute, inside)
        }
        Some(Location::Outside(path)) => (path.clone(), None),
    };

    let mut builder = WalkBuilder::new(&walk_root);
    builder
        .hidden(false)
        .git_ignore(true)
        .git_global(false)
        .git_exclude(true)
        .ignore(true)
        .parents(true)
        .require_git(false)
        .follow_links(false)
        // Siblings share their parent's bytes, so comparing whole paths as
        // bytes orders them by name, without the component parsing that
        // `sort_by_file_name` repeats in every comparison.
        .sort_by_file_path(|a, b| a.as_os_str().as_bytes().cmp(b.as_os_str().as_bytes()))
        .filter_entry(|entry| !entry.path().as_os_str().as_bytes().ends_with(b"/.git"));
    if let Some(glob) = &args.glob {
        let mut overrides = OverrideBuilder::new(&walk_root);
        overrides
            .add(glob)
            .map_err(|error| Error::invalid(format!("the glob '{glob}' is not valid: {error}")))?;
        let overrides = overrides
            .build()
            .map_err(|error| Error::invalid(format!("the glob '{glob}' is not valid: {error}")))?;
        builder.overrides(overrides);
    }
    // One thread walks in path order and streams the paths; the others search
    // them as they come, so the first matches need not wait for the whole
    // walk, and a full scan overlaps the walk with the search.
    let walker = builder.build();
    let workers = std::thread::available_parallelism()
        .map_or(2, usize::from)
        .max(1);
    let feed = Feed::default();
    let results: Mutex<Vec<Option<Vec<String>>>> = Mutex::new(Vec::new());
    let next = AtomicUsize::new(0);
    // The index of the first file whose results, with all before it, reach the limit.
    let stop_at = AtomicUsize::new(usize::MAX);
    let done_prefix = Mutex::new((0usize, 0usize)); // (files settled in order, matches in them)

    std::thread::scope(|scope| {
        scope.spawn(|| {
            for entry in walker.filter_map(|entry| entry.ok()) {
                if stop_at.load(Ordering::Relaxed) != usize::MAX {
                    break;
                }
                if entry.file_type().is_some_and(|kind| kind.is_file()) {
                    feed.push(entry.into_path());
                }
            }
            feed.finish();
        });
        for _ in 0..workers {
            scope.spawn(|| {
                let mut searcher = SearcherBuilder::new()
                    .binary_detection(BinaryDetection::quit(0))
                    .line_number(true)
                    .build();
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    if index > stop_at.load(Ordering::Relaxed) {
                        break;
                    }
                    let Some(path) = feed.get(index) else { break };
                    // Stay within a window of the first unsettled file.
                    loop {
                        let settled = done_prefix.lock().map(|guard| guard.0).unwrap_or(0);
                        if index < settled + SEARCH_WINDOW
                            || index > stop_at.load(Ordering::Relaxed)
                        {
                            break;
                        }
                        std::thread::yield_now();
                    }
                    if index > stop_at.load(Ordering::Relaxed) {
                        break;
                    }
                    let shown = match &base {
                        Some(base) => match below(&walk_root, &path) {
                            Some([]) => relative_display(base),
                            Some(rest) if base.as_os_str().is_empty() => {
                                String::from_utf8_lossy(rest).into_owned()
                            }
                            Some(rest) => relative_display(&base.join(OsStr::from_bytes(rest))),
                            None => relative_display(&path),
                        },
                        None => relative_display(&path),
                    };
                    let mut collect = Collect {
                        shown: &shown,
                        lines: Vec::new(),
                    };
                    let location = match &base {
                        Some(_) => Location::Inside(PathBuf::from(&shown)),
                        None => Location::Outside(path.clone()),
                    };
                    if let Ok((file, _)) = workspace.open_file(&location, &shown) {
                        let _ = searcher.search_file(&matcher, &file, &mut collect);
                    }
                    let Ok(mut slots) = results.lock() else { break };
                    if slots.len() <= index {
                        slots.resize_with(index + 1, || None);
                    }
                    slots[index] = Some(collect.lines);
                    // Settle the files done in order, counting their matches.
                    if let Ok(mut prefix) = done_prefix.lock() {
                        while let Some(Some(lines)) = slots.get(prefix.0) {
                            prefix.1 += lines.len();
                            let settled_index = prefix.0;
                            prefix.0 += 1;
                            if prefix.1 > GREP_MAX_MATCHES {
                                stop_at.fetch_min(settled_index, Ordering::Relaxed);
                                break;
                            }
                        }
                    }
                }
                // Wake any worker waiting on the feed after a stop.
                feed.finish_if(stop_at.load(Ordering::Relaxed) != usize::MAX);
            });
        }
    });

    let results = results.into_inner().unwrap_or_default();
    let mut matches = Vec::new();
    let mut truncated = false;
    for slot in results {
        let Some(lines) = slot else {
            // Not searched: beyond the stop, or the limit was already reached.
            if matches.len() >= GREP_MAX_MATCHES {
                break;
            }
            continue;
        };
        for line in lines {
            if matches.len() == GREP_MAX_MATCHES {
                truncated = true;
                break;
            }
            matches.push(line);
        }
        if truncated {
            break;
        }
    }
    let note = truncated.then(|| {
        format!("stopped at {GREP_MAX_MATCHES} matches; narrow the pattern, the path or the glob to see the rest")
    });
    Ok(GrepOutput {
        matches,
        truncated,
        note,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn below_strips_the_root_by_bytes_and_only_at_a_separator() {
        let root = Path::new("/ws/proj");
        assert_eq!(
            below(root, Path::new("/ws/proj/src/a.rs")),
            Some(&b"src/a.rs"[..])
        );
        assert_eq!(below(root, Path::new("/ws/proj")), Some(&b""[..]));
        assert_eq!(below(root, Path::new("/ws/project/a.rs")), None);
        assert_eq!(below(root, Path::new("/elsewhere/a.rs")), None);
        assert_eq!(below(Path::new("/"), Path::new("/a/b")), Some(&b"a/b"[..]));
        assert_eq!(
            below(Path::new("/ws/"), Path::new("/ws/a")),
            Some(&b"a"[..])
        );
    }
}
