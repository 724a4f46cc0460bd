//! The store's tests: checkpoints, rewinds, pruning and bounds.

use super::*;
use std::os::unix::fs::PermissionsExt;

struct World {
    _dir: tempfile::TempDir,
    ws: PathBuf,
    outside: PathBuf,
    workspace: Workspace,
    store: Store,
}

fn world() -> World {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let (ws, outside, session) = (root.join("ws"), root.join("outside"), root.join("session"));
    for folder in [&ws, &outside, &session] {
        std::fs::create_dir_all(folder).unwrap();
    }
    World {
        workspace: Workspace::open(&ws).unwrap(),
        store: Store::new(&session, &root.join("store")),
        _dir: dir,
        ws,
        outside,
    }
}

/// What the call at `seq` left, recorded as the gate records it after a call.
fn after(world: &World, settings: &Settings, seq: u64) -> Taken {
    world
        .store
        .take_after(&world.workspace, settings, seq, "run", None)
        .unwrap()
}

fn rewind_to(world: &World, id: u64, seq: u64) -> Applied {
    let to = world
        .store
        .list()
        .unwrap()
        .into_iter()
        .find(|info| info.id == id)
        .unwrap();
    world
        .store
        .rewind(&world.workspace, &Settings::default(), &to, seq)
        .unwrap()
        .applied
}

#[test]
fn a_link_a_command_left_in_place_of_a_folder_carries_no_restore_out() {
    let w = world();
    std::fs::create_dir(w.ws.join("d")).unwrap();
    std::fs::write(w.ws.join("d/e"), "kept\n").unwrap();
    let settings = Settings::default();
    w.store.take(&w.workspace, &settings, 1, "run").unwrap();
    // The command swapped the folder for a link out of the workspace.
    std::fs::remove_dir_all(w.ws.join("d")).unwrap();
    std::os::unix::fs::symlink(&w.outside, w.ws.join("d")).unwrap();
    after(&w, &settings, 1);
    let applied = rewind_to(&w, 1, 2);
    assert!(applied.failed.is_empty(), "{applied:?}");
    assert_eq!(applied.plan.restore, ["d"]);
    assert_eq!(applied.plan.create, ["d/e"]);
    assert!(std::fs::symlink_metadata(w.ws.join("d")).unwrap().is_dir());
    assert_eq!(std::fs::read_to_string(w.ws.join("d/e")).unwrap(), "kept\n");
    assert!(!w.outside.join("e").exists());
}

#[test]
fn a_file_over_the_limit_is_a_gap_said_once_and_never_deleted() {
    let w = world();
    std::fs::write(w.ws.join("small"), "s\n").unwrap();
    let settings = Settings {
        max_file_bytes: 4,
        ..Settings::default()
    };
    w.store.take(&w.workspace, &settings, 1, "run").unwrap();
    std::fs::write(w.ws.join("big"), "0123456789").unwrap();
    let taken = after(&w, &settings, 1);
    assert_eq!(taken.gaps.len(), 1, "{taken:?}");
    assert!(taken.gaps[0].1.contains("max_file_mb"), "{taken:?}");
    let again = w.store.take(&w.workspace, &settings, 3, "run").unwrap();
    assert!(again.gaps.is_empty(), "{again:?}");
    after(&w, &settings, 3);
    let to = w.store.find(1).unwrap();
    let plan = w.store.plan(&w.workspace, &settings, &to).unwrap();
    assert!(plan.delete.is_empty(), "{plan:?}");
    assert_eq!(plan.kept.len(), 1, "{plan:?}");
    assert!(plan.kept[0].1.contains("never deleted"), "{plan:?}");
}

#[test]
fn modes_links_and_emptied_folders_come_back_and_a_fresh_process_reads_the_index() {
    let w = world();
    std::fs::create_dir(w.ws.join("ro")).unwrap();
    std::fs::write(w.ws.join("ro/x"), "x\n").unwrap();
    std::fs::write(w.ws.join("run.sh"), "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(w.ws.join("run.sh"), std::fs::Permissions::from_mode(0o750)).unwrap();
    std::os::unix::fs::symlink("run.sh", w.ws.join("link")).unwrap();
    std::fs::set_permissions(w.ws.join("ro"), std::fs::Permissions::from_mode(0o555)).unwrap();
    let settings = Settings::default();
    w.store.take(&w.workspace, &settings, 1, "run").unwrap();
    std::fs::set_permissions(w.ws.join("ro"), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::remove_dir_all(w.ws.join("ro")).unwrap();
    std::fs::set_permissions(w.ws.join("run.sh"), std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::remove_file(w.ws.join("link")).unwrap();
    std::fs::write(w.ws.join("link"), "not a link\n").unwrap();
    after(&w, &settings, 1);
    // Another process: the store is read from disk.
    let session = w.store.dir.parent().unwrap().to_path_buf();
    let w = World {
        store: Store::new(&session, &w.store.shared),
        ..w
    };
    let applied = rewind_to(&w, 1, 2);
    assert!(applied.failed.is_empty(), "{applied:?}");
    let mode = |path: &str| {
        std::fs::symlink_metadata(w.ws.join(path))
            .unwrap()
            .permissions()
            .mode()
            & 0o7777
    };
    assert_eq!(mode("ro"), 0o555);
    assert_eq!(mode("run.sh"), 0o750);
    assert_eq!(
        std::fs::read_link(w.ws.join("link")).unwrap(),
        Path::new("run.sh")
    );
    assert_eq!(std::fs::read_to_string(w.ws.join("ro/x")).unwrap(), "x\n");
    std::fs::set_permissions(w.ws.join("ro"), std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn old_checkpoints_are_pruned_and_their_objects_go() {
    let w = world();
    let settings = Settings::default();
    // Loose objects, and packed ones.
    let (old_big, new_big) = (vec![b'o'; 20_000], vec![b'n'; 20_000]);
    std::fs::write(w.ws.join("big"), &old_big).unwrap();
    std::fs::write(w.ws.join("f"), "old\n").unwrap();
    w.store.take(&w.workspace, &settings, 1, "run").unwrap();
    std::fs::write(w.ws.join("f"), "new\n").unwrap();
    std::fs::write(w.ws.join("big"), &new_big).unwrap();
    after(&w, &settings, 1);
    w.store.take(&w.workspace, &settings, 2, "run").unwrap();
    // Make the first call's lines (before and after it) 40 days old.
    let journal = w.store.journal();
    let text = std::fs::read_to_string(&journal).unwrap();
    let old = (now_secs() - 40 * 86_400).to_string();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    for line in &mut lines[..2] {
        let mut first: serde_json::Value = serde_json::from_str(line).unwrap();
        first["at"] = serde_json::json!(old.parse::<u64>().unwrap());
        *line = first.to_string();
    }
    std::fs::write(&journal, lines.join("\n") + "\n").unwrap();
    let fresh = Store::new(w.store.dir.parent().unwrap(), &w.store.shared);
    std::fs::write(w.ws.join("f"), "newer\n").unwrap();
    fresh
        .take_after(&w.workspace, &settings, 2, "run", None)
        .unwrap();
    fresh.take(&w.workspace, &settings, 3, "run").unwrap();
    fresh
        .take_after(&w.workspace, &settings, 3, "run", None)
        .unwrap();
    let list = fresh.list().unwrap();
    assert_eq!(list.iter().map(|info| info.seq).collect::<Vec<_>>(), [2, 3]);
    let objects = fresh.objects.get().unwrap();
    assert!(objects.get(&hash_of(&old_big)).is_err());
    assert!(objects.get(&hash_of(&new_big)).is_ok());
    assert!(objects.get(&hash_of(b"new\n")).is_ok());
    let to = fresh.find(2).unwrap();
    let rewound = fresh.rewind(&w.workspace, &settings, &to, 4).unwrap();
    assert!(rewound.applied.failed.is_empty());
    assert_eq!(std::fs::read_to_string(w.ws.join("f")).unwrap(), "new\n");
    assert_eq!(std::fs::read(w.ws.join("big")).unwrap(), new_big);
}

#[test]
fn the_store_stays_below_max_store_mb_oldest_first_and_a_checkpoint_past_it_alone_is_a_gap() {
    let w = world();
    let settings = Settings {
        max_store_bytes: 2_500_000,
        ..Settings::default()
    };
    let megabyte = |n: u8| vec![n; 1_000_000];
    for n in 0..4u8 {
        std::fs::write(w.ws.join("f"), megabyte(n)).unwrap();
        w.store
            .take(&w.workspace, &settings, u64::from(n) + 1, "run")
            .unwrap();
        assert!(w.store.object_bytes() <= 2_500_000, "after {n}");
    }
    let seqs: Vec<u64> = w
        .store
        .list()
        .unwrap()
        .iter()
        .map(|info| info.seq)
        .collect();
    assert_eq!(seqs.last(), Some(&4));
    assert!(seqs.len() < 4, "{seqs:?}");
    assert!(
        w.store
            .objects
            .get()
            .unwrap()
            .get(&hash_of(&megabyte(0)))
            .is_err()
    );
    // The newest is whole and rewinds.
    std::fs::write(w.ws.join("f"), "changed").unwrap();
    after(&w, &settings, 4);
    let to = w.store.find(4).unwrap();
    w.store.rewind(&w.workspace, &settings, &to, 5).unwrap();
    assert_eq!(std::fs::read(w.ws.join("f")).unwrap(), megabyte(3));
    // One checkpoint alone past the bound keeps nothing, and says so.
    std::fs::write(w.ws.join("g"), vec![9u8; 3_000_000]).unwrap();
    let full = w.store.take(&w.workspace, &settings, 6, "run");
    assert!(matches!(full, Err(Error::StoreFull(_))), "{full:?}");
    assert_eq!(w.store.object_bytes(), 0);
    assert!(w.store.list().unwrap().is_empty());
    // The next checkpoint starts whole, with an id never used before.
    std::fs::remove_file(w.ws.join("g")).unwrap();
    let taken = w.store.take(&w.workspace, &settings, 7, "run").unwrap();
    assert!(taken.id > to.id + 1, "{taken:?}");
}

fn age_journal(store: &Store, days: u64, lines: usize) {
    let journal = store.journal();
    let text = std::fs::read_to_string(&journal).unwrap();
    let old = now_secs() - days * 86_400;
    let aged: Vec<String> = text
        .lines()
        .enumerate()
        .map(|(n, line)| {
            let mut value: serde_json::Value = serde_json::from_str(line).unwrap();
            if n < lines {
                value["at"] = serde_json::json!(old);
            }
            value.to_string()
        })
        .collect();
    std::fs::write(&journal, aged.join("\n") + "\n").unwrap();
}

#[test]
fn a_rewind_to_a_pruned_checkpoint_is_refused_and_deletes_nothing() {
    let w = world();
    let settings = Settings::default();
    std::fs::write(w.ws.join("f"), "f\n").unwrap();
    w.store.take(&w.workspace, &settings, 1, "run").unwrap();
    let to = w.store.find(1).unwrap();
    age_journal(&w.store, 40, 1);
    let fresh = Store::new(w.store.dir.parent().unwrap(), &w.store.shared);
    let refused = fresh.rewind(&w.workspace, &settings, &to, 2);
    assert!(matches!(refused, Err(Error::Gone)), "{refused:?}");
    assert_eq!(std::fs::read_to_string(w.ws.join("f")).unwrap(), "f\n");
    assert!(matches!(fresh.find(1), Err(Error::NoCheckpoint(1))));
}

#[test]
fn a_damaged_line_loses_that_checkpoint_and_what_follows_not_the_store() {
    let w = world();
    let settings = Settings::default();
    std::fs::write(w.ws.join("f"), "one\n").unwrap();
    w.store.take(&w.workspace, &settings, 1, "run").unwrap();
    after(&w, &settings, 1);
    let journal = w.store.journal();
    let mut text = std::fs::read_to_string(&journal).unwrap();
    text.push_str("{\"id\": 2, \"seq\": 2, torn\n{\"id\":3}\n");
    std::fs::write(&journal, text).unwrap();
    let fresh = Store::new(w.store.dir.parent().unwrap(), &w.store.shared);
    fresh.take(&w.workspace, &settings, 5, "run").unwrap();
    std::fs::write(w.ws.join("f"), "two\n").unwrap();
    fresh
        .take_after(&w.workspace, &settings, 5, "run", None)
        .unwrap();
    let seqs: Vec<u64> = fresh.list().unwrap().iter().map(|info| info.seq).collect();
    assert_eq!(seqs, [1, 5]);
    let to = fresh.find(1).unwrap();
    let rewound = fresh.rewind(&w.workspace, &settings, &to, 6).unwrap();
    assert!(rewound.applied.failed.is_empty(), "{rewound:?}");
    assert_eq!(std::fs::read_to_string(w.ws.join("f")).unwrap(), "one\n");
}

#[test]
fn a_file_that_is_ignored_now_is_never_written_over() {
    let w = world();
    let settings = Settings::default();
    std::fs::write(w.ws.join("x.log"), "old\n").unwrap();
    w.store.take(&w.workspace, &settings, 1, "run").unwrap();
    // The model hides the file from later checkpoints, then changes it.
    std::fs::write(w.ws.join(".gitignore"), "x.log\n").unwrap();
    std::fs::write(w.ws.join("x.log"), "precious\n").unwrap();
    after(&w, &settings, 1);
    let applied = rewind_to(&w, 1, 2);
    assert_eq!(
        std::fs::read_to_string(w.ws.join("x.log")).unwrap(),
        "precious\n"
    );
    assert_eq!(applied.failed.len(), 1, "{applied:?}");
    assert!(applied.failed[0].1.contains("left as it is"), "{applied:?}");
    assert!(applied.plan.create.is_empty(), "{applied:?}");
    assert!(!w.ws.join(".gitignore").exists());
}

#[test]
fn wickets_own_home_inside_the_workspace_is_never_checkpointed() {
    let dir = tempfile::tempdir().unwrap();
    let ws = std::fs::canonicalize(dir.path()).unwrap();
    let session = ws.join("home/sessions/s");
    std::fs::create_dir_all(&session).unwrap();
    std::fs::write(session.join("log.jsonl"), "{}\n").unwrap();
    std::fs::write(ws.join("a"), "a\n").unwrap();
    let store = Store::new(&session, &ws.join("home/checkpoints"));
    let workspace = Workspace::open(&ws).unwrap();
    let taken = store
        .take(&workspace, &Settings::default(), 1, "run")
        .unwrap();
    assert_eq!(taken.entries, 1, "{taken:?}");
    let again = store
        .take(&workspace, &Settings::default(), 2, "run")
        .unwrap();
    assert_eq!(again.changed, 0, "{again:?}");
}

#[test]
fn a_plan_stores_nothing() {
    let w = world();
    let settings = Settings::default();
    std::fs::write(w.ws.join("f"), "one\n").unwrap();
    w.store.take(&w.workspace, &settings, 1, "run").unwrap();
    std::fs::write(w.ws.join("f"), "the call's change\n").unwrap();
    after(&w, &settings, 1);
    let stored = w.store.object_bytes();
    let to = w.store.find(1).unwrap();
    let plan = w.store.plan(&w.workspace, &settings, &to).unwrap();
    assert_eq!(plan.restore, ["f"]);
    assert_eq!(w.store.object_bytes(), stored);
}

#[test]
fn a_writes_line_after_names_only_what_it_wrote_and_the_folders_made_for_it() {
    let w = world();
    let settings = Settings::default();
    std::fs::write(w.ws.join("theirs.txt"), "as it was\n").unwrap();
    w.store
        .take(&w.workspace, &settings, 1, "write_file")
        .unwrap();
    // In the same moment as the write: someone else's change, heard too.
    std::fs::write(w.ws.join("theirs.txt"), "someone else's\n").unwrap();
    std::fs::create_dir_all(w.ws.join("new/deep")).unwrap();
    std::fs::write(w.ws.join("new/deep/mine.txt"), "mine\n").unwrap();
    let taken = w
        .store
        .take_after(
            &w.workspace,
            &settings,
            1,
            "write_file",
            Some(b"new/deep/mine.txt"),
        )
        .unwrap();
    assert_eq!(taken.changed, 4, "{taken:?}");
    let listed = w.store.list().unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(
        listed[0].changed, 3,
        "the write, and the two folders made for it"
    );
    let to = w.store.find(1).unwrap();
    let plan = w.store.plan(&w.workspace, &settings, &to).unwrap();
    assert!(plan.restore.is_empty(), "{plan:?}");
    assert_eq!(
        plan.delete,
        ["new", "new/deep", "new/deep/mine.txt"],
        "{plan:?}"
    );
    rewind_to(&w, to.id, 2);
    assert_eq!(
        std::fs::read_to_string(w.ws.join("theirs.txt")).unwrap(),
        "someone else's\n"
    );
    assert!(!w.ws.join("new").exists());
}
