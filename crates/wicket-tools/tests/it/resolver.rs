//! The attack corpus: each case a real fixture; none may read or write outside.

use std::os::unix::fs::PermissionsExt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use wicket_protocol::{ErrorKind, GrepArgs};

use crate::*;
use wicket_tools::Cancel;

#[test]
fn dotdot_walks_out_are_refused() {
    let f = fixture();
    f.write("sub/x", "");
    let t = f.tools();
    assert_eq!(
        kind(read(&t, "../outside/secret")),
        ErrorKind::OutsideWorkspace
    );
    assert_eq!(
        kind(read(&t, "sub/../../outside/secret")),
        ErrorKind::OutsideWorkspace
    );
    assert_eq!(kind(read(&t, "..")), ErrorKind::OutsideWorkspace);
    assert_eq!(kind(list(&t, "..")), ErrorKind::OutsideWorkspace);
}

#[test]
fn dotdot_that_stays_inside_works() {
    let f = fixture();
    f.write("a/b.txt", "b\n");
    let t = f.tools();
    assert_eq!(read(&t, "a/../real.txt").unwrap(), "inside\n");
    assert_eq!(read(&t, "./a/./b.txt").unwrap(), "b\n");
}

#[test]
fn symlinked_file_out_absolute_is_refused() {
    let f = fixture();
    f.link("lnk", f.outside.join("secret"));
    assert_eq!(kind(read(&f.tools(), "lnk")), ErrorKind::OutsideWorkspace);
}

#[test]
fn symlinked_file_out_relative_is_refused() {
    let f = fixture();
    f.link("lnk", "../outside/secret");
    assert_eq!(kind(read(&f.tools(), "lnk")), ErrorKind::OutsideWorkspace);
}

#[test]
fn symlinked_folder_out_is_refused() {
    let f = fixture();
    f.link("dirlink", "../outside");
    let t = f.tools();
    assert_eq!(
        kind(read(&t, "dirlink/secret")),
        ErrorKind::OutsideWorkspace
    );
    assert_eq!(kind(list(&t, "dirlink")), ErrorKind::OutsideWorkspace);
}

#[test]
fn chain_out_is_refused() {
    let f = fixture();
    f.link("a", "b");
    f.link("b", "sub/c");
    f.link("sub/c", "../../outside/secret");
    assert_eq!(kind(read(&f.tools(), "a")), ErrorKind::OutsideWorkspace);
}

#[test]
fn chain_inside_is_followed() {
    let f = fixture();
    f.link("a", "b");
    f.link("b", "real.txt");
    assert_eq!(read(&f.tools(), "a").unwrap(), "inside\n");
}

#[test]
fn absolute_link_to_an_inside_file_is_followed() {
    let f = fixture();
    f.link("abs", f.ws.join("real.txt"));
    assert_eq!(read(&f.tools(), "abs").unwrap(), "inside\n");
}

#[test]
fn relative_link_out_and_back_in_is_followed() {
    let f = fixture();
    f.link("back", "../ws/real.txt");
    assert_eq!(read(&f.tools(), "back").unwrap(), "inside\n");
}

#[test]
fn link_loops_are_invalid() {
    let f = fixture();
    f.link("a", "b");
    f.link("b", "a");
    f.link("self", "self");
    let t = f.tools();
    assert_eq!(kind(read(&t, "a")), ErrorKind::InvalidArgs);
    assert_eq!(kind(read(&t, "self")), ErrorKind::InvalidArgs);
}

#[test]
fn dangling_link_out_is_not_written() {
    let f = fixture();
    f.link("dang", "../outside/new.txt");
    assert_eq!(
        kind(write(&f.tools(), "dang", "x")),
        ErrorKind::OutsideWorkspace
    );
    assert!(!f.outside.join("new.txt").exists());
}

#[test]
fn dangling_absolute_link_out_is_not_written() {
    let f = fixture();
    f.link("dang", f.outside.join("new2.txt"));
    assert_eq!(
        kind(write(&f.tools(), "dang", "x")),
        ErrorKind::OutsideWorkspace
    );
    assert!(!f.outside.join("new2.txt").exists());
}

#[test]
fn dangling_link_inside_writes_its_target() {
    let f = fixture();
    f.link("dang", "created.txt");
    write(&f.tools(), "dang", "made\n").unwrap();
    assert_eq!(
        std::fs::read_to_string(f.ws.join("created.txt")).unwrap(),
        "made\n"
    );
    assert!(
        f.ws.join("dang")
            .symlink_metadata()
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

#[test]
fn writing_through_a_link_replaces_the_target_not_the_link() {
    let f = fixture();
    f.link("alias", "real.txt");
    write(&f.tools(), "alias", "new\n").unwrap();
    assert_eq!(
        std::fs::read_to_string(f.ws.join("real.txt")).unwrap(),
        "new\n"
    );
    assert!(
        f.ws.join("alias")
            .symlink_metadata()
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

#[test]
fn proc_self_root_links_are_refused() {
    let f = fixture();
    f.link("pw", "/proc/self/root/etc/passwd");
    f.link("procroot", "/proc/self/root");
    f.link("fdlink", "/proc/self/cwd");
    let t = f.tools();
    assert_eq!(kind(read(&t, "pw")), ErrorKind::OutsideWorkspace);
    assert_eq!(
        kind(read(&t, "procroot/etc/passwd")),
        ErrorKind::OutsideWorkspace
    );
    assert_eq!(kind(list(&t, "fdlink")), ErrorKind::OutsideWorkspace);
}

#[test]
fn dev_zero_link_is_refused_and_dev_zero_is_special() {
    let f = fixture();
    f.link("zero", "/dev/zero");
    let t = f.tools();
    assert_eq!(kind(read(&t, "zero")), ErrorKind::OutsideWorkspace);
    // Asked for by its absolute name it is an outside reach, and then a special file.
    assert!(is_outside(&t, "/dev/zero"));
    assert_eq!(kind(read(&t, "/dev/zero")), ErrorKind::SpecialFile);
}

#[test]
fn fifos_are_refused_without_blocking() {
    let f = fixture();
    rustix::fs::mknodat(
        rustix::fs::CWD,
        f.ws.join("fifo"),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o644),
        0,
    )
    .unwrap();
    let t = f.tools();
    assert_eq!(kind(read(&t, "fifo")), ErrorKind::SpecialFile);
    assert_eq!(kind(write(&t, "fifo", "x")), ErrorKind::SpecialFile);
    // grep skips it rather than hanging on it.
    let out = t
        .grep(
            None,
            &GrepArgs {
                pattern: "inside".into(),
                path: None,
                glob: None,
                case_insensitive: false,
            },
            &Cancel::default(),
        )
        .unwrap();
    assert_eq!(out.matches, vec!["real.txt:1:inside"]);
}

#[test]
fn unix_sockets_are_refused() {
    let f = fixture();
    let _listener = std::os::unix::net::UnixListener::bind(f.ws.join("sock")).unwrap();
    assert_eq!(kind(read(&f.tools(), "sock")), ErrorKind::SpecialFile);
}

#[test]
fn a_hard_link_to_an_outside_inode_is_replaced_not_written_through() {
    let f = fixture();
    std::fs::hard_link(f.outside.join("secret"), f.ws.join("hard")).unwrap();
    let t = f.tools();
    write(&t, "hard", "replaced\n").unwrap();
    assert_eq!(
        std::fs::read_to_string(f.outside.join("secret")).unwrap(),
        "SECRET\n"
    );
    assert_eq!(
        std::fs::read_to_string(f.ws.join("hard")).unwrap(),
        "replaced\n"
    );
}

#[test]
fn a_workspace_reached_through_a_symlink_works() {
    let f = fixture();
    let via = f.root.join("via");
    std::os::unix::fs::symlink(&f.ws, &via).unwrap();
    let t = Tools::open(&via).unwrap();
    assert_eq!(read(&t, "real.txt").unwrap(), "inside\n");
    let through_link = via.join("real.txt");
    assert!(!is_outside(&t, through_link.to_str().unwrap()));
    assert_eq!(
        read(&t, through_link.to_str().unwrap()).unwrap(),
        "inside\n"
    );
    assert_eq!(
        kind(read(&t, "../outside/secret")),
        ErrorKind::OutsideWorkspace
    );
}

#[test]
fn nul_bytes_and_absurd_lengths_are_invalid() {
    let f = fixture();
    let t = f.tools();
    assert_eq!(kind(read(&t, "real\0.txt")), ErrorKind::InvalidArgs);
    assert_eq!(kind(read(&t, &"a/".repeat(3000))), ErrorKind::InvalidArgs);
    assert_eq!(
        kind(write(&t, &"x".repeat(5000), "x")),
        ErrorKind::InvalidArgs
    );
}

#[test]
fn tilde_and_variables_are_literal_names() {
    let f = fixture();
    let t = f.tools();
    assert_eq!(kind(read(&t, "~/.bashrc")), ErrorKind::NotFound);
    assert_eq!(kind(read(&t, "$HOME/.bashrc")), ErrorKind::NotFound);
    f.write("~/x", "tilde\n");
    assert_eq!(read(&t, "~/x").unwrap(), "tilde\n");
}

#[test]
fn dotdot_after_a_link_out_is_not_collapsed() {
    let f = fixture();
    std::fs::create_dir_all(f.outside.join("deep")).unwrap();
    f.link("out", "../outside/deep");
    // `out/..` is the outside folder, not the workspace.
    assert_eq!(
        kind(list(&f.tools(), "out/..")),
        ErrorKind::OutsideWorkspace
    );
    assert_eq!(
        kind(read(&f.tools(), "out/../secret")),
        ErrorKind::OutsideWorkspace
    );
}

#[test]
fn a_sibling_with_a_common_prefix_is_outside() {
    let f = fixture();
    let evil = f.root.join("ws-evil");
    std::fs::create_dir_all(&evil).unwrap();
    std::fs::write(evil.join("x"), "evil\n").unwrap();
    let t = f.tools();
    assert!(is_outside(&t, evil.join("x").to_str().unwrap()));
}

#[test]
fn an_absolute_path_inside_is_an_inside_path() {
    let f = fixture();
    let t = f.tools();
    let absolute = f.ws.join("real.txt");
    assert!(!is_outside(&t, absolute.to_str().unwrap()));
    assert_eq!(read(&t, absolute.to_str().unwrap()).unwrap(), "inside\n");
    // An absolute path that starts inside but walks out is refused, not carded.
    let escape = format!("{}/../outside/secret", f.ws.display());
    assert_eq!(kind(read(&t, &escape)), ErrorKind::OutsideWorkspace);
}

#[test]
fn an_absolute_outside_path_is_an_outside_reach() {
    let f = fixture();
    let t = f.tools();
    let secret = f.outside.join("secret");
    assert!(is_outside(&t, secret.to_str().unwrap()));
    assert_eq!(read(&t, secret.to_str().unwrap()).unwrap(), "SECRET\n");
}

#[test]
fn list_dir_names_links_without_following_them() {
    let f = fixture();
    f.link("out", "../outside");
    f.write("d/x", "");
    let entries = list(&f.tools(), ".").unwrap();
    assert_eq!(entries, vec!["d/", "out -> ../outside", "real.txt"]);
}

#[test]
fn writes_through_a_linked_folder_out_are_refused() {
    let f = fixture();
    f.link("out", "../outside");
    let t = f.tools();
    assert_eq!(
        kind(write(&t, "out/new.txt", "x")),
        ErrorKind::OutsideWorkspace
    );
    assert_eq!(
        kind(write(&t, "out/sub/new.txt", "x")),
        ErrorKind::OutsideWorkspace
    );
    assert!(!f.outside.join("new.txt").exists());
    assert!(!f.outside.join("sub").exists());
}

#[test]
fn grep_refuses_a_linked_folder_out() {
    let f = fixture();
    f.link("out", "../outside");
    let t = f.tools();
    let location = t.workspace().classify("out").unwrap();
    let args = GrepArgs {
        pattern: "SECRET".into(),
        path: Some("out".into()),
        glob: None,
        case_insensitive: false,
    };
    assert_eq!(
        kind(t.grep(Some(&location), &args, &Cancel::default())),
        ErrorKind::OutsideWorkspace
    );
    // And a whole-workspace grep does not follow the link.
    let args = GrepArgs {
        pattern: "SECRET".into(),
        path: None,
        glob: None,
        case_insensitive: false,
    };
    assert!(
        t.grep(None, &args, &Cancel::default())
            .unwrap()
            .matches
            .is_empty()
    );
}

#[test]
fn a_file_used_as_a_folder_is_not_found() {
    let f = fixture();
    assert_eq!(kind(read(&f.tools(), "real.txt/x")), ErrorKind::NotFound);
}

#[test]
fn a_folder_is_not_read_as_a_file() {
    let f = fixture();
    f.write("d/x", "");
    assert_eq!(kind(read(&f.tools(), "d")), ErrorKind::InvalidArgs);
    assert_eq!(kind(write(&f.tools(), "d", "x")), ErrorKind::InvalidArgs);
}

#[test]
fn write_creates_missing_folders_only_when_it_commits() {
    let f = fixture();
    let t = f.tools();
    let location = t.workspace().classify("n1/n2/file.txt").unwrap();
    let target = t.plan_write(&location, "n1/n2/file.txt").unwrap();
    assert!(!f.ws.join("n1").exists(), "planning must change nothing");
    assert_eq!(target.absolute, f.ws.join("n1/n2/file.txt"));
    t.commit_write(&location, &target, b"deep\n", &|_| true)
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(f.ws.join("n1/n2/file.txt")).unwrap(),
        "deep\n"
    );
}

#[test]
fn write_keeps_the_old_mode_and_leaves_no_temp_file() {
    let f = fixture();
    f.write("script.sh", "#!/bin/sh\n");
    std::fs::set_permissions(
        f.ws.join("script.sh"),
        std::fs::Permissions::from_mode(0o751),
    )
    .unwrap();
    write(&f.tools(), "script.sh", "#!/bin/sh\necho hi\n").unwrap();
    let mode = std::fs::metadata(f.ws.join("script.sh"))
        .unwrap()
        .permissions()
        .mode()
        & 0o7777;
    assert_eq!(mode, 0o751);
    let names: Vec<_> = std::fs::read_dir(&f.ws)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
}

#[test]
fn a_stale_precondition_replaces_nothing() {
    let f = fixture();
    let t = f.tools();
    let location = t.workspace().classify("real.txt").unwrap();
    let target = t.plan_write(&location, "real.txt").unwrap();
    assert_eq!(
        kind(t.commit_write(&location, &target, b"x", &|_| false)),
        ErrorKind::Stale
    );
    assert_eq!(
        std::fs::read_to_string(f.ws.join("real.txt")).unwrap(),
        "inside\n"
    );
    assert_eq!(std::fs::read_dir(&f.ws).unwrap().count(), 1);
}

#[test]
fn run_cwd_through_a_link_out_is_refused() {
    let f = fixture();
    f.link("out", "../outside");
    let args = wicket_protocol::RunArgs {
        preview: Default::default(),
        read: Default::default(),
        argv: vec!["pwd".into()],
        cwd: Some("out".into()),
        timeout_s: None,
        network: Default::default(),
        git: false,
    };
    assert_eq!(
        kind(wicket_tools::tools::run::validate(
            f.tools().workspace(),
            &args
        )),
        ErrorKind::OutsideWorkspace
    );
}

/// Swaps `ws/sw` between a real folder and a symlink to outside, as fast as
/// it can, while reading and writing through it. Nothing outside may leak.
#[test]
fn a_folder_swapped_for_a_symlink_never_lets_a_read_or_write_through() {
    let f = fixture();
    std::fs::create_dir_all(f.ws.join("sw")).unwrap();
    std::fs::write(f.ws.join("sw/f"), "inside\n").unwrap();
    std::fs::write(f.outside.join("f"), "SECRET\n").unwrap();
    std::os::unix::fs::symlink(&f.outside, f.ws.join("swap_link")).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let swaps = Arc::new(AtomicU64::new(0));
    let swapper = {
        let ws = f.ws.clone();
        let stop = stop.clone();
        let swaps = swaps.clone();
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                rustix::fs::renameat_with(
                    rustix::fs::CWD,
                    ws.join("sw"),
                    rustix::fs::CWD,
                    ws.join("swap_link"),
                    rustix::fs::RenameFlags::EXCHANGE,
                )
                .unwrap();
                swaps.fetch_add(1, Ordering::Relaxed);
            }
        })
    };
    let tools = f.tools();
    let deadline = Instant::now() + Duration::from_secs(3);
    let (mut reads, mut writes, mut leaks) = (0u64, 0u64, 0u64);
    let (mut inside_reads, mut written) = (0u64, 0u64);
    while Instant::now() < deadline {
        match read(&tools, "sw/f") {
            Ok(text) if text.contains("SECRET") => leaks += 1,
            Ok(text) if text == "inside\n" => inside_reads += 1,
            _ => {}
        }
        reads += 1;
        if write(&tools, "sw/w", "written\n").is_ok() {
            written += 1;
        }
        writes += 1;
        if f.outside.join("w").exists() {
            leaks += 1;
            let _ = std::fs::remove_file(f.outside.join("w"));
        }
    }
    stop.store(true, Ordering::Relaxed);
    swapper.join().unwrap();
    eprintln!(
        "race: {reads} reads ({inside_reads} inside), {writes} writes ({written} written), {} swaps, {leaks} leaks",
        swaps.load(Ordering::Relaxed)
    );
    assert_eq!(leaks, 0);
    assert!(swaps.load(Ordering::Relaxed) > 100);
    // A resolver that refused everything would pass the above: some reads
    // must have returned the inside file and some writes must have landed.
    assert!(inside_reads > 0, "no read of the inside file got through");
    assert!(written > 0, "no write got through");
    assert_eq!(
        std::fs::read_to_string(f.outside.join("secret")).unwrap(),
        "SECRET\n"
    );
}
