//! The tests of a preview's effects: the upper layer read as changes,
//! applied as a plain run would be, and what stops an apply.

use super::*;
use std::os::unix::fs::PermissionsExt;

struct World {
    _dir: tempfile::TempDir,
    ws: std::path::PathBuf,
    upper: std::path::PathBuf,
    workspace: Workspace,
    store: Store,
}

fn world() -> World {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let ws = root.join("ws");
    let upper = root.join("upper");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::create_dir_all(&upper).unwrap();
    std::fs::write(ws.join("x.txt"), "a\n").unwrap();
    std::fs::write(ws.join("y.txt"), "gone\n").unwrap();
    std::fs::write(ws.join("run.sh"), "echo hi\n").unwrap();
    std::fs::create_dir_all(ws.join("old")).unwrap();
    std::fs::write(ws.join("old/inner"), "inner\n").unwrap();
    World {
        workspace: Workspace::open(&ws).unwrap(),
        store: Store::new(&root.join("sessions/one"), &root.join("store")),
        _dir: dir,
        ws,
        upper,
    }
}

/// What the overlay leaves for `sed -i s/a/b/ x.txt; rm y.txt; mkdir d;
/// echo n > d/new; chmod +x run.sh; ln -s /etc/passwd link`, made by
/// hand: a whiteout is a character device 0:0.
fn upper_of_a_command(w: &World) {
    let upper = &w.upper;
    std::fs::write(upper.join("x.txt"), "b\n").unwrap();
    rustix::fs::mknodat(
        rustix::fs::CWD,
        upper.join("y.txt"),
        FileType::CharacterDevice,
        Mode::empty(),
        0,
    )
    .unwrap();
    std::fs::create_dir(upper.join("d")).unwrap();
    std::fs::write(upper.join("d/new"), "n\n").unwrap();
    std::fs::write(upper.join("run.sh"), "echo hi\n").unwrap();
    std::fs::set_permissions(upper.join("run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", upper.join("link")).unwrap();
}

fn kinds(preview: &Preview) -> Vec<(String, EffectKind)> {
    preview
        .seen
        .iter()
        .map(|seen| (wicket_tools::tree::shown(&seen.path), seen.kind))
        .collect()
}

#[test]
fn the_upper_layer_reads_as_each_change_and_applies_as_a_plain_run_would() {
    let w = world();
    let settings = Settings::default();
    w.store.take(&w.workspace, &settings, 1, "run").unwrap();
    upper_of_a_command(&w);
    let preview = w
        .store
        .preview(&w.workspace, &settings, &w.upper, plain(), u64::MAX)
        .unwrap();
    assert_eq!(
        kinds(&preview),
        vec![
            ("d".into(), EffectKind::Created),
            ("d/new".into(), EffectKind::Created),
            ("link".into(), EffectKind::Link),
            ("run.sh".into(), EffectKind::Mode),
            ("x.txt".into(), EffectKind::Modified),
            ("y.txt".into(), EffectKind::Deleted),
        ]
    );
    let x = preview
        .seen
        .iter()
        .find(|seen| seen.path == b"x.txt")
        .unwrap();
    assert_eq!(
        (x.old.as_deref(), x.new.as_deref()),
        (Some(&b"a\n"[..]), Some(&b"b\n"[..]))
    );
    // Nothing in the workspace yet.
    assert_eq!(std::fs::read_to_string(w.ws.join("x.txt")).unwrap(), "a\n");
    assert!(w.ws.join("y.txt").exists() && !w.ws.join("d").exists());
    let applied = w
        .store
        .apply_preview(&w.workspace, &settings, &preview, 2, "preview")
        .unwrap();
    assert!(applied.failed.is_empty(), "{applied:?}");
    assert_eq!(std::fs::read_to_string(w.ws.join("x.txt")).unwrap(), "b\n");
    assert!(!w.ws.join("y.txt").exists());
    assert_eq!(std::fs::read_to_string(w.ws.join("d/new")).unwrap(), "n\n");
    let mode = std::fs::metadata(w.ws.join("run.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o755);
    // The link is made as a link: nothing is written through it.
    let link = std::fs::symlink_metadata(w.ws.join("link")).unwrap();
    assert!(link.file_type().is_symlink());
    assert_eq!(
        std::fs::read_link(w.ws.join("link")).unwrap(),
        std::path::Path::new("/etc/passwd")
    );
    assert_eq!(
        std::fs::read_to_string(w.ws.join("old/inner")).unwrap(),
        "inner\n",
        "what the command left alone stays"
    );
}

#[test]
fn a_file_edited_in_the_workspace_meanwhile_stops_the_apply_and_is_named() {
    let w = world();
    let settings = Settings::default();
    w.store.take(&w.workspace, &settings, 1, "run").unwrap();
    upper_of_a_command(&w);
    let preview = w
        .store
        .preview(&w.workspace, &settings, &w.upper, plain(), u64::MAX)
        .unwrap();
    std::fs::write(w.ws.join("x.txt"), "edited meanwhile\n").unwrap();
    let refused = w
        .store
        .apply_preview(&w.workspace, &settings, &preview, 2, "preview")
        .unwrap_err();
    assert!(
        matches!(&refused, Error::ChangedSincePreview(path) if path == "x.txt"),
        "{refused}"
    );
    assert_eq!(
        std::fs::read_to_string(w.ws.join("x.txt")).unwrap(),
        "edited meanwhile\n"
    );
    assert!(w.ws.join("y.txt").exists() && !w.ws.join("d").exists());
}

#[test]
fn an_opaque_folder_replaces_what_was_below_it_and_a_link_in_place_of_a_folder_carries_no_write() {
    let w = world();
    let settings = Settings::default();
    w.store.take(&w.workspace, &settings, 1, "run").unwrap();
    // `rm -rf old; mkdir old; echo fresh > old/fresh`
    std::fs::create_dir(w.upper.join("old")).unwrap();
    rustix::fs::setxattr(
        w.upper.join("old"),
        "user.overlay.opaque",
        b"y",
        rustix::fs::XattrFlags::empty(),
    )
    .unwrap();
    std::fs::write(w.upper.join("old/fresh"), "fresh\n").unwrap();
    let preview = w
        .store
        .preview(&w.workspace, &settings, &w.upper, plain(), u64::MAX)
        .unwrap();
    w.store
        .apply_preview(&w.workspace, &settings, &preview, 2, "preview")
        .unwrap();
    assert!(!w.ws.join("old/inner").exists());
    assert_eq!(
        std::fs::read_to_string(w.ws.join("old/fresh")).unwrap(),
        "fresh\n"
    );

    // A link where a folder was, and a file below the folder's name.
    let w = world();
    w.store.take(&w.workspace, &settings, 1, "run").unwrap();
    let outside = w.ws.parent().unwrap().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, w.upper.join("old")).unwrap();
    let preview = w
        .store
        .preview(&w.workspace, &settings, &w.upper, plain(), u64::MAX)
        .unwrap();
    w.store
        .apply_preview(&w.workspace, &settings, &preview, 2, "preview")
        .unwrap();
    assert!(
        std::fs::symlink_metadata(w.ws.join("old"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(
        std::fs::read_dir(&outside).unwrap().count(),
        0,
        "nothing written through it"
    );
}

/// A workspace `.git` with a ref and a hook, and an upper layer where a
/// command moved the ref, added an object and removed the hook.
fn upper_of_a_commit(w: &World) {
    std::fs::create_dir_all(w.ws.join(".git/refs/heads")).unwrap();
    std::fs::create_dir_all(w.ws.join(".git/hooks")).unwrap();
    std::fs::write(w.ws.join(".git/refs/heads/main"), "old\n").unwrap();
    std::fs::write(w.ws.join(".git/hooks/pre-commit"), "true\n").unwrap();
    std::fs::create_dir_all(w.upper.join(".git/refs/heads")).unwrap();
    std::fs::create_dir_all(w.upper.join(".git/objects/ab")).unwrap();
    std::fs::create_dir_all(w.upper.join(".git/hooks")).unwrap();
    std::fs::write(w.upper.join(".git/refs/heads/main"), "new\n").unwrap();
    std::fs::write(w.upper.join(".git/objects/ab/cdef"), "object").unwrap();
    rustix::fs::mknodat(
        rustix::fs::CWD,
        w.upper.join(".git/hooks/pre-commit"),
        FileType::CharacterDevice,
        Mode::empty(),
        0,
    )
    .unwrap();
}

/// Nanoseconds since the epoch, as a ctime says.
/// A preview of a call that may not change git, begun now.
fn plain() -> Began {
    Began {
        at: now_nanos(),
        git: false,
    }
}

/// A preview of a call that may change git, begun `at`.
fn git(at: i128) -> Began {
    Began { at, git: true }
}

fn now_nanos() -> i128 {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    since.as_nanos() as i128
}

#[test]
fn with_git_the_changes_below_git_are_effects_read_against_the_workspace_and_applied() {
    let w = world();
    let settings = Settings::default();
    w.store.take(&w.workspace, &settings, 1, "run").unwrap();
    upper_of_a_commit(&w);
    // Without git: .git is not read at all.
    let plain = w
        .store
        .preview(&w.workspace, &settings, &w.upper, plain(), u64::MAX)
        .unwrap();
    assert!(plain.is_empty(), "{:?}", plain.seen);
    let since = now_nanos();
    let preview = w
        .store
        .preview(&w.workspace, &settings, &w.upper, git(since), u64::MAX)
        .unwrap();
    assert_eq!(
        kinds(&preview),
        vec![
            (".git/hooks/pre-commit".into(), EffectKind::Deleted),
            (".git/objects".into(), EffectKind::Created),
            (".git/objects/ab".into(), EffectKind::Created),
            (".git/objects/ab/cdef".into(), EffectKind::Created),
            (".git/refs/heads/main".into(), EffectKind::Modified),
        ]
    );
    assert!(preview.seen.iter().all(|seen| seen.git));
    let main = &preview.seen[4];
    assert_eq!(
        (main.old.as_deref(), main.new.as_deref()),
        (Some(&b"old\n"[..]), Some(&b"new\n"[..]))
    );
    assert_eq!(
        std::fs::read_to_string(w.ws.join(".git/refs/heads/main")).unwrap(),
        "old\n"
    );
    let applied = w
        .store
        .apply_preview(&w.workspace, &settings, &preview, 2, "preview")
        .unwrap();
    assert!(applied.failed.is_empty(), "{applied:?}");
    assert_eq!(
        std::fs::read_to_string(w.ws.join(".git/refs/heads/main")).unwrap(),
        "new\n"
    );
    assert_eq!(
        std::fs::read_to_string(w.ws.join(".git/objects/ab/cdef")).unwrap(),
        "object"
    );
    assert!(!w.ws.join(".git/hooks/pre-commit").exists());
}

#[test]
fn a_git_file_the_workspace_changed_since_the_preview_began_stops_the_apply() {
    let w = world();
    let settings = Settings::default();
    w.store.take(&w.workspace, &settings, 1, "run").unwrap();
    upper_of_a_commit(&w);
    let since = now_nanos();
    let preview = w
        .store
        .preview(&w.workspace, &settings, &w.upper, git(since), u64::MAX)
        .unwrap();
    // Changed after it was read: the apply sees it differ.
    std::fs::write(w.ws.join(".git/refs/heads/main"), "elsewhere\n").unwrap();
    let refused = w
        .store
        .apply_preview(&w.workspace, &settings, &preview, 2, "preview");
    assert!(
        matches!(&refused, Err(Error::ChangedSincePreview(path)) if path == ".git/refs/heads/main"),
        "{refused:?}"
    );
    assert!(!w.ws.join(".git/objects").exists(), "nothing applied");
    // Changed while the command ran (before it was read): refused too.
    let before = now_nanos() - 1_000_000_000_000;
    let preview = w
        .store
        .preview(&w.workspace, &settings, &w.upper, git(before), u64::MAX)
        .unwrap();
    let refused = w
        .store
        .apply_preview(&w.workspace, &settings, &preview, 3, "preview");
    assert!(
        matches!(refused, Err(Error::ChangedSincePreview(_))),
        "{refused:?}"
    );
    assert_eq!(
        std::fs::read_to_string(w.ws.join(".git/refs/heads/main")).unwrap(),
        "elsewhere\n"
    );
}

#[test]
fn an_upper_layer_four_thousand_folders_deep_is_read_without_recursion() {
    // Deeper than a test thread's 2 MiB stack took the recursive reader
    // (the binary's test goes to 10,000).
    let w = world();
    let settings = Settings::default();
    w.store.take(&w.workspace, &settings, 1, "run").unwrap();
    // Made a level at a time, by name: the whole path is past PATH_MAX.
    let mut folder = rustix::fs::open(&w.upper, OFlags::DIRECTORY, Mode::empty()).unwrap();
    for _ in 0..4_000 {
        rustix::fs::mkdirat(&folder, "d", Mode::from_raw_mode(0o755)).unwrap();
        folder = rustix::fs::openat(&folder, "d", OFlags::DIRECTORY, Mode::empty()).unwrap();
    }
    let file = rustix::fs::openat(
        &folder,
        "f",
        OFlags::CREATE | OFlags::WRONLY,
        Mode::from_raw_mode(0o644),
    )
    .unwrap();
    rustix::io::write(&file, b"end\n").unwrap();
    let preview = w
        .store
        .preview(&w.workspace, &settings, &w.upper, plain(), u64::MAX)
        .unwrap();
    assert!(preview.unread.is_empty(), "{:?}", preview.unread);
    assert_eq!(preview.seen.len(), 4_001);
    let last = preview.seen.last().unwrap();
    assert!(last.path.ends_with(b"d/d/f") && last.kind == EffectKind::Created);
    assert!(crate::on_disk(&w.upper) > 0, "the watcher counts it all");
}

#[test]
fn a_sparse_file_past_the_bound_is_refused_and_never_stored() {
    let w = world();
    let settings = Settings::default();
    w.store.take(&w.workspace, &settings, 1, "run").unwrap();
    let stored = w.store.object_bytes();
    let sparse = std::fs::File::create(w.upper.join("sparse")).unwrap();
    sparse.set_len(1 << 40).unwrap();
    std::fs::write(w.upper.join("small"), "small\n").unwrap();
    let preview = w
        .store
        .preview(&w.workspace, &settings, &w.upper, plain(), 64 * 1024 * 1024)
        .unwrap();
    assert_eq!(
        kinds(&preview),
        vec![
            ("small".into(), EffectKind::Created),
            ("sparse".into(), EffectKind::Refused),
        ]
    );
    let why = preview.seen[1].why.as_deref().unwrap();
    assert!(why.contains("holes counted"), "{why}");
    assert!(
        w.store.object_bytes() - stored < 1024 * 1024,
        "never stored"
    );
    w.store
        .apply_preview(&w.workspace, &settings, &preview, 2, "preview")
        .unwrap();
    assert!(!w.ws.join("sparse").exists() && w.ws.join("small").exists());
}
