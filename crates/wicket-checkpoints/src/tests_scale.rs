//! The tests of checkpoints at scale: what the tracker hears, what it
//! misses, a store shared by sessions, and packs a kill cuts short.

use super::*;
use std::os::unix::fs::PermissionsExt;

struct World {
    _dir: tempfile::TempDir,
    root: PathBuf,
    ws: PathBuf,
    workspace: Workspace,
    store: Store,
}

fn world() -> World {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let ws = root.join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    World {
        workspace: Workspace::open(&ws).unwrap(),
        store: Store::new(&root.join("sessions/one"), &root.join("store")),
        _dir: dir,
        root,
        ws,
    }
}

impl World {
    fn session(&self, name: &str) -> Store {
        Store::new(
            &self.root.join("sessions").join(name),
            &self.root.join("store"),
        )
    }

    /// Whether this filesystem gives a tracker (else every checkpoint walks whole).
    fn tracked(&self) -> bool {
        tracker::Tracker::new(self.workspace.root_fd()).is_some()
    }

    fn write(&self, path: &str, text: &str) {
        let path = self.ws.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn read(&self, path: &str) -> String {
        std::fs::read_to_string(self.ws.join(path)).unwrap()
    }
}

fn last(store: &Store) -> Info {
    store.list().unwrap().pop().unwrap()
}

fn rewind(w: &World, store: &Store, id: u64, seq: u64) -> Applied {
    let to = store
        .list()
        .unwrap()
        .into_iter()
        .find(|info| info.id == id)
        .unwrap();
    store
        .rewind(&w.workspace, &Settings::default(), &to, seq)
        .unwrap()
        .applied
}

// Past 80 lines: one table of steps, each checked the same way after it.
#[test]
fn tracked_checkpoints_hold_every_kind_of_change_as_a_full_walk_finds_it() {
    let w = world();
    let settings = Settings::default();
    w.write("a/b/f", "f\n");
    w.write("a/g", "g\n");
    w.write("top", "top\n");
    std::os::unix::fs::symlink("a/g", w.ws.join("link")).unwrap();
    let mode_of = |path: &str| {
        std::fs::metadata(w.ws.join(path))
            .unwrap()
            .permissions()
            .mode()
            & 0o7777
    };
    let g_mode = mode_of("a/g");
    let first = w.store.take(&w.workspace, &settings, 1, "run").unwrap();
    assert!(first.whole);
    type Step = (&'static str, fn(&World));
    let steps: [Step; 12] = [
        ("a file rewritten", |w| w.write("a/b/f", "changed\n")),
        ("a new nested folder", |w| w.write("n/m/o/p", "deep\n")),
        ("a folder renamed", |w| {
            std::fs::rename(w.ws.join("a/b"), w.ws.join("a/c")).unwrap()
        }),
        ("a folder moved into another", |w| {
            std::fs::rename(w.ws.join("n"), w.ws.join("a/c/n")).unwrap()
        }),
        ("a file in the moved folder", |w| {
            w.write("a/c/n/m/o/q", "q\n")
        }),
        ("a folder's mode and a file made in it", |w| {
            std::fs::set_permissions(w.ws.join("a"), std::fs::Permissions::from_mode(0o750))
                .unwrap();
            w.write("a/made", "made\n");
        }),
        ("a mode", |w| {
            std::fs::set_permissions(w.ws.join("a/g"), std::fs::Permissions::from_mode(0o751))
                .unwrap()
        }),
        ("a file made a folder", |w| {
            std::fs::remove_file(w.ws.join("top")).unwrap();
            w.write("top/inside", "inside\n");
        }),
        ("a link retargeted", |w| {
            std::fs::remove_file(w.ws.join("link")).unwrap();
            std::os::unix::fs::symlink("top/inside", w.ws.join("link")).unwrap();
        }),
        ("a folder removed", |w| {
            std::fs::remove_dir_all(w.ws.join("a/c")).unwrap()
        }),
        ("made and removed between checkpoints", |w| {
            w.write("brief", "brief\n");
            std::fs::remove_file(w.ws.join("brief")).unwrap();
        }),
        ("an ignore file", |w| {
            w.write("x.log", "log\n");
            w.write(".gitignore", "*.log\n");
        }),
    ];
    for (n, (what, step)) in steps.iter().enumerate() {
        // The step is the call before this checkpoint's: its line after it.
        step(&w);
        let seq = n as u64 + 2;
        let taken = w
            .store
            .take_after(&w.workspace, &settings, seq - 1, "run", None)
            .unwrap();
        // A changed ignore file walks whole: which paths count changed.
        let whole = *what == "an ignore file" || !w.tracked();
        assert_eq!(taken.whole, whole, "{what}: {taken:?}");
        w.store.take(&w.workspace, &settings, seq, "run").unwrap();
        let plan = w
            .store
            .plan_whole(&w.workspace, &settings, &last(&w.store))
            .unwrap();
        assert!(plan.is_empty() && plan.kept.is_empty(), "{what}: {plan:?}");
    }
    w.store
        .take_after(&w.workspace, &settings, steps.len() as u64 + 1, "run", None)
        .unwrap();
    // Back to the first, every byte.
    let applied = rewind(&w, &w.store, 1, 20);
    assert!(applied.failed.is_empty(), "{applied:?}");
    assert_eq!(w.read("a/b/f"), "f\n");
    assert_eq!(w.read("top"), "top\n");
    assert_eq!(
        std::fs::read_link(w.ws.join("link")).unwrap(),
        Path::new("a/g")
    );
    assert!(!w.ws.join("n").exists() && !w.ws.join("a/c").exists());
    assert_eq!(mode_of("a/g"), g_mode);
}

#[test]
fn a_change_the_tracker_missed_is_left_as_it_is_never_written_with_bytes_no_one_saw() {
    let w = world();
    if !w.tracked() {
        eprintln!("skipped: this filesystem gives no tracker");
        return;
    }
    let settings = Settings::default();
    w.write("f", "one\n");
    w.write("g", "g1\n");
    w.store.take(&w.workspace, &settings, 1, "run").unwrap();
    // Changed behind the tracker's back, in the first call.
    w.write("f", "two\n");
    w.store.forget_heard();
    let missed = w
        .store
        .take_after(&w.workspace, &settings, 1, "run", None)
        .unwrap();
    assert!(!missed.whole);
    w.store.take(&w.workspace, &settings, 2, "run").unwrap();
    w.write("g", "g2\n");
    w.store
        .take_after(&w.workspace, &settings, 2, "run", None)
        .unwrap();
    // A whole walk sees what was missed, and holds it in doubt.
    let plan = w
        .store
        .plan_whole(&w.workspace, &settings, &w.store.find(2).unwrap())
        .unwrap();
    assert_eq!(plan.restore, ["g"], "{plan:?}");
    assert_eq!(plan.kept.len(), 1, "{plan:?}");
    // A rewind takes back what the session's calls were heard to change:
    // never the bytes no checkpoint saw.
    // Ids: 1 before call 1, 2 after it, 3 before call 2.
    let applied = rewind(&w, &w.store, 3, 4);
    assert_eq!(w.read("g"), "g1\n");
    assert_eq!(
        w.read("f"),
        "two\n",
        "never the bytes checkpoint 2 did not see"
    );
    assert!(applied.failed.is_empty(), "{applied:?}");
    // What no call was heard to change is nobody's to take back: f stays.
    rewind(&w, &w.store, 1, 5);
    assert_eq!(w.read("f"), "two\n");
    assert_eq!(w.read("g"), "g1\n");
}

#[test]
fn an_overflowing_queue_means_a_full_walk_and_every_file_comes_back_right() {
    let w = world();
    let queue: usize = std::fs::read_to_string("/proc/sys/fs/inotify/max_queued_events")
        .ok()
        .and_then(|text| text.trim().parse().ok())
        .unwrap_or(16_384);
    if !w.tracked() || queue > 1_000_000 {
        eprintln!("skipped: no tracker, or a queue too long to overflow in a test");
        return;
    }
    let settings = Settings::default();
    w.write("f", "before\n");
    w.store.take(&w.workspace, &settings, 1, "run").unwrap();
    // Two events a write, never merged (they alternate): past the queue's length.
    for n in 0..queue / 2 + 1_000 {
        let name = if n % 2 == 0 { "churn-a" } else { "churn-b" };
        std::fs::write(w.ws.join(name), n.to_string()).unwrap();
    }
    w.write("f", "after the flood\n");
    let taken = w
        .store
        .take_after(&w.workspace, &settings, 1, "run", None)
        .unwrap();
    assert!(taken.whole, "{taken:?}");
    w.store.take(&w.workspace, &settings, 2, "run").unwrap();
    let churn = (w.read("churn-a"), w.read("churn-b"));
    w.write("f", "later\n");
    w.write("churn-a", "later\n");
    w.store
        .take_after(&w.workspace, &settings, 2, "run", None)
        .unwrap();
    // Id 3: the checkpoint before call 2 (2 is the line after call 1).
    let applied = rewind(&w, &w.store, 3, 3);
    assert!(
        applied.failed.is_empty() && applied.plan.kept.is_empty(),
        "{applied:?}"
    );
    assert_eq!(w.read("f"), "after the flood\n");
    assert_eq!((w.read("churn-a"), w.read("churn-b")), churn);
}

#[test]
fn two_sessions_share_objects_and_deleting_one_keeps_the_others_rewinds_byte_for_byte() {
    let w = world();
    let settings = Settings::default();
    for n in 0..50 {
        w.write(&format!("src/f{n}"), &format!("file {n}\n"));
    }
    let big = vec![b'b'; 100_000];
    std::fs::write(w.ws.join("big"), &big).unwrap();
    w.store.take(&w.workspace, &settings, 1, "run").unwrap();
    let stored = w.store.object_bytes();
    let other = w.session("two");
    let first = other.take(&w.workspace, &settings, 1, "run").unwrap();
    assert_eq!(first.new_bytes, 0, "{first:?}");
    assert_eq!(other.object_bytes(), stored);
    // The second session's changes, then the first session gone.
    w.write("src/f7", "seven, changed\n");
    std::fs::write(w.ws.join("big"), b"small now").unwrap();
    other
        .take_after(&w.workspace, &settings, 1, "run", None)
        .unwrap();
    other.take(&w.workspace, &settings, 2, "run").unwrap();
    w.write("src/f7", "seven, again\n");
    other
        .take_after(&w.workspace, &settings, 2, "run", None)
        .unwrap();
    std::fs::remove_dir_all(w.root.join("sessions/one")).unwrap();
    other.sweep().unwrap();
    let other = w.session("two");
    let applied = rewind(&w, &other, 1, 3);
    assert!(applied.failed.is_empty(), "{applied:?}");
    for n in 0..50 {
        assert_eq!(w.read(&format!("src/f{n}")), format!("file {n}\n"));
    }
    assert_eq!(std::fs::read(w.ws.join("big")).unwrap(), big);
    // Id 3: the checkpoint before the second call.
    let applied = rewind(&w, &other, 3, 4);
    assert!(applied.failed.is_empty(), "{applied:?}");
    assert_eq!(w.read("src/f7"), "seven, changed\n");
    assert_eq!(std::fs::read(w.ws.join("big")).unwrap(), b"small now");
}

#[test]
fn a_walk_ahead_makes_the_first_checkpoint_walk_only_what_changed_since() {
    let w = world();
    if !w.tracked() {
        eprintln!("skipped: this filesystem gives no tracker");
        return;
    }
    let settings = Settings {
        max_file_bytes: 4,
        ..Settings::default()
    };
    w.write("a", "a\n");
    w.write("big", "0123456789");
    w.store.warm(&w.workspace, &settings).unwrap();
    assert!(
        w.store.list().unwrap().is_empty(),
        "a walk ahead records nothing"
    );
    w.write("a", "new\n");
    w.write("n", "n\n");
    let taken = w.store.take(&w.workspace, &settings, 1, "run").unwrap();
    assert!(!taken.whole, "{taken:?}");
    assert_eq!((taken.entries, taken.changed), (3, 3), "{taken:?}");
    assert_eq!(taken.gaps.len(), 1, "{taken:?}");
    assert_eq!(taken.gaps[0].0, "big");
    let plan = w
        .store
        .plan_whole(&w.workspace, &settings, &last(&w.store))
        .unwrap();
    assert!(plan.is_empty(), "{plan:?}");
    w.write("a", "b\n");
    w.store
        .take_after(&w.workspace, &settings, 1, "run", None)
        .unwrap();
    let to = w.store.find(1).unwrap();
    let rewound = w.store.rewind(&w.workspace, &settings, &to, 2).unwrap();
    assert_eq!(w.read("a"), "new\n", "{rewound:?}");
}

#[test]
fn a_folder_heard_only_for_its_mode_does_not_vouch_for_what_it_holds() {
    let w = world();
    if !w.tracked() {
        eprintln!("skipped: this filesystem gives no tracker");
        return;
    }
    let settings = Settings::default();
    w.write("a/x", "one\n");
    w.store.take(&w.workspace, &settings, 1, "run").unwrap();
    w.write("a/x", "two\n");
    w.store.forget_heard();
    w.store.take(&w.workspace, &settings, 2, "run").unwrap();
    // Heard since: the folder's mode, nothing of the file below it.
    std::fs::set_permissions(w.ws.join("a"), std::fs::Permissions::from_mode(0o750)).unwrap();
    let plan = w
        .store
        .plan_whole(&w.workspace, &settings, &w.store.find(2).unwrap())
        .unwrap();
    assert_eq!(
        plan.restore,
        ["a"],
        "its mode, never the bytes checkpoint 2 did not see: {plan:?}"
    );
    assert_eq!(plan.kept.len(), 1, "{plan:?}");
    assert_eq!(plan.kept[0].0, "a/x", "{plan:?}");
}

#[test]
fn past_max_store_mb_the_other_sessions_of_the_workspace_give_way_too() {
    let w = world();
    let settings = Settings {
        max_store_bytes: 2_500_000,
        ..Settings::default()
    };
    let megabyte = |n: u8| vec![n; 1_000_000];
    for n in 0..2u8 {
        std::fs::write(w.ws.join("f"), megabyte(n)).unwrap();
        w.store
            .take(&w.workspace, &settings, u64::from(n) + 1, "run")
            .unwrap();
    }
    let other = w.session("two");
    std::fs::write(w.ws.join("g"), megabyte(9)).unwrap();
    let taken = other.take(&w.workspace, &settings, 1, "run");
    assert!(taken.is_ok(), "{taken:?}");
    assert!(
        other.object_bytes() <= 2_500_000,
        "{}",
        other.object_bytes()
    );
    // The first session keeps its newest checkpoint, whole.
    let first = w.session("one");
    assert_eq!(first.list().unwrap().len(), 1);
    std::fs::write(w.ws.join("f"), b"changed").unwrap();
    first
        .take_after(&w.workspace, &settings, 2, "run", None)
        .unwrap();
    let applied = rewind(&w, &first, 2, 3);
    assert!(applied.failed.is_empty(), "{applied:?}");
    assert_eq!(std::fs::read(w.ws.join("f")).unwrap(), megabyte(1));
}

#[test]
fn a_full_walk_tells_how_far_it_got_while_it_runs_and_nothing_after() {
    let w = world();
    for folder in 0..5 {
        for file in 0..500 {
            w.write(&format!("d{folder}/f{file}"), "x");
        }
    }
    assert_eq!(w.store.walking(), None, "no walk yet");
    w.store
        .take(&w.workspace, &Settings::default(), 1, "run")
        .unwrap();
    assert_eq!(w.store.walking(), None, "the walk is over");
    // 2,505 entries met by the walkers: each tells every 1,024th, and the rest when it ends.
    assert_eq!(
        w.store.walk.met.load(std::sync::atomic::Ordering::Relaxed),
        2505
    );
}

#[test]
fn a_first_line_of_the_whole_tree_is_one_shared_object_kept_by_every_journal_naming_it() {
    let w = world();
    let settings = Settings::default();
    for n in 0..(BASE_FROM + 200) {
        w.write(&format!("src/d{}/f{n}", n % 10), &format!("file {n}\n"));
    }
    w.store.take(&w.workspace, &settings, 1, "run").unwrap();
    let journal_of = |name: &str| {
        w.root
            .join("sessions")
            .join(name)
            .join("checkpoints/journal.jsonl")
    };
    let first_line = std::fs::read_to_string(journal_of("one")).unwrap();
    assert!(
        first_line.len() < 1024,
        "the tree is in an object, not the line: {}",
        first_line.len()
    );
    let stored = w.store.object_bytes();
    // The same tree in a second session: the same object, nothing stored, a line of its own.
    let other = w.session("two");
    let taken = other.take(&w.workspace, &settings, 1, "run").unwrap();
    assert_eq!(
        (taken.new_bytes, other.object_bytes()),
        (0, stored),
        "{taken:?}"
    );
    let second_line = std::fs::read_to_string(journal_of("two")).unwrap();
    let base =
        |line: &str| serde_json::from_str::<serde_json::Value>(line).unwrap()["base"].clone();
    assert!(
        base(&second_line)
            .as_array()
            .is_some_and(|pieces| pieces.len() > 1),
        "{second_line}"
    );
    assert_eq!(base(&second_line), base(&first_line));
    // The first session gone and a sweep made: the second's rewinds still hold every file.
    w.write("src/d3/f3", "changed\n");
    std::fs::remove_file(w.ws.join("src/d4/f4")).unwrap();
    other
        .take_after(&w.workspace, &settings, 1, "run", None)
        .unwrap();
    other.take(&w.workspace, &settings, 2, "run").unwrap();
    other
        .take_after(&w.workspace, &settings, 2, "run", None)
        .unwrap();
    std::fs::remove_dir_all(w.root.join("sessions/one")).unwrap();
    other.sweep().unwrap();
    let other = w.session("two");
    let applied = rewind(&w, &other, 1, 3);
    assert!(applied.failed.is_empty(), "{applied:?}");
    assert_eq!(w.read("src/d3/f3"), "file 3\n");
    assert_eq!(w.read("src/d4/f4"), "file 4\n");
    // A journal whose base object is gone reads as having no checkpoints, never as a wrong tree.
    let hash = base(&second_line)[0].as_str().unwrap().to_string();
    let object = w
        .root
        .join("store")
        .join(other.named_key().unwrap())
        .join("objects")
        .join(&hash[..2])
        .join(&hash[2..]);
    std::fs::remove_file(object).unwrap();
    w.write("src/d3/f3", "changed again\n");
    let fresh = w.session("two");
    assert_eq!(fresh.list().unwrap().len(), 0);
    assert!(fresh.find(1).is_err());
    assert_eq!(w.read("src/d3/f3"), "changed again\n");
}

#[test]
fn a_walk_against_the_last_state_finds_what_a_walk_from_nothing_finds() {
    let w = world();
    for (path, text) in [
        ("a.txt", "a\n"),
        ("keep.txt", "keep\n"),
        ("d/b.txt", "b\n"),
        ("d/e/c.txt", "c\n"),
        ("gone/x.txt", "x\n"),
        ("gone/y/z.txt", "z\n"),
    ] {
        w.write(path, text);
    }
    std::os::unix::fs::symlink("a.txt", w.ws.join("link")).unwrap();
    let settings = Settings::default();
    let maker = w.store.maker(&w.workspace, &settings).unwrap();
    let nothing = State::new();
    let walk = |last: &State| {
        (w.store)
            .scan_full(&w.workspace, &maker, last, None, None)
            .unwrap()
    };
    let last = walk(&nothing).state(&nothing);
    assert_eq!(last.len(), 11, "{:?}", last.keys());
    // Nothing changed: nothing new, nothing gone, every entry met.
    let again = walk(&last);
    assert!(again.changed.is_empty() && again.removed.is_empty());
    assert_eq!(again.entries, last.len());

    w.write("a.txt", "a, changed\n");
    std::fs::set_permissions(w.ws.join("keep.txt"), PermissionsExt::from_mode(0o600)).unwrap();
    std::fs::remove_dir_all(w.ws.join("gone")).unwrap();
    std::fs::remove_dir_all(w.ws.join("d/e")).unwrap();
    w.write("d/e", "a file where a folder was\n");
    w.write("new/n.txt", "n\n");
    let fresh = walk(&nothing).state(&nothing);
    let found = walk(&last);
    assert_eq!(
        found.removed,
        [
            &b"d/e/c.txt"[..],
            b"gone",
            b"gone/x.txt",
            b"gone/y",
            b"gone/y/z.txt"
        ]
    );
    assert_eq!(found.entries, fresh.len());
    let changes = |changes: Vec<Change>| serde_json::to_string(&changes).unwrap();
    assert_eq!(
        changes(found.changes(&last)),
        changes(state::delta(&last, &fresh))
    );
    assert_eq!(found.state(&last), fresh);
}

#[test]
fn max_files_counts_files_not_their_folders_in_a_walk_and_a_tracked_checkpoint() {
    let w = world();
    let settings = Settings {
        max_files: 4,
        ..Settings::default()
    };
    // Four files in four folders: eight entries, at the limit and not past it.
    for path in ["a/b/c/f1", "a/b/f2", "d/f3", "f4"] {
        w.write(path, "x\n");
    }
    w.store.take(&w.workspace, &settings, 1, "run").unwrap();
    // A file changed and a folder made, at the limit: nothing past it.
    w.write("a/b/f2", "changed\n");
    std::fs::create_dir(w.ws.join("e")).unwrap();
    w.store.take(&w.workspace, &settings, 2, "run").unwrap();
    w.write("e/g/h", "x\n");
    let error = w.store.take(&w.workspace, &settings, 3, "run").unwrap_err();
    assert!(matches!(error, Error::TooManyFiles(4)), "{error}");
    // A walk from nothing (another session's first) counts the same.
    let error = w
        .session("two")
        .take(&w.workspace, &settings, 1, "run")
        .unwrap_err();
    assert!(matches!(error, Error::TooManyFiles(4)), "{error}");
    std::fs::remove_file(w.ws.join("f4")).unwrap();
    w.store.take(&w.workspace, &settings, 4, "run").unwrap();
    w.session("two")
        .take(&w.workspace, &settings, 2, "run")
        .unwrap();
}
