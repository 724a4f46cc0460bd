//! The ways around the resolver that the hardening review found, each
//! closed: ignore files that hang or exhaust grep, grep that cannot be
//! cancelled, names that are not UTF-8, ignore files above the workspace,
//! and a trailing slash on a file.

use std::os::unix::ffi::OsStrExt;
use std::sync::mpsc;
use std::time::Duration;

use wicket_protocol::{ErrorKind, GrepArgs, GrepOutput};
use wicket_tools::Cancel;

use crate::*;

fn grep_args(pattern: &str) -> GrepArgs {
    GrepArgs {
        pattern: pattern.into(),
        path: None,
        glob: None,
        case_insensitive: false,
    }
}

/// Runs a grep on its own thread; a hang fails the test instead of hanging it.
fn grep_within(
    f: &Fixture,
    pattern: &str,
    cancel: Cancel,
) -> Result<GrepOutput, wicket_tools::Error> {
    let tools = f.tools();
    let args = grep_args(pattern);
    let (done, result) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(tools.grep(None, &args, &cancel));
    });
    result
        .recv_timeout(Duration::from_secs(30))
        .expect("grep came back instead of hanging")
}

#[test]
fn a_fifo_named_gitignore_does_not_hang_grep() {
    let f = fixture();
    f.write("sub/a.txt", "needle\n");
    let fifo = f.ws.join("sub/.gitignore");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let out = grep_within(&f, "needle", Cancel::default()).unwrap();
    assert_eq!(out.matches, vec!["sub/a.txt:1:needle"]);
}

#[test]
fn a_gitignore_linked_to_dev_zero_or_out_of_the_workspace_is_not_read() {
    let f = fixture();
    f.write("sub/a.txt", "needle\n");
    f.write("other/b.txt", "needle\n");
    f.link("sub/.gitignore", "/dev/zero");
    std::fs::write(f.outside.join("ignore-all"), "*\n").unwrap();
    f.link("other/.gitignore", f.outside.join("ignore-all"));
    let out = grep_within(&f, "needle", Cancel::default()).unwrap();
    assert_eq!(
        out.matches,
        vec!["other/b.txt:1:needle", "sub/a.txt:1:needle"]
    );
}

#[test]
fn an_ignore_file_over_the_cap_is_not_read() {
    let f = fixture();
    f.write("a.txt", "needle\n");
    let mut big = "*.txt\n".to_string();
    big.push_str(&"#\n".repeat(600 * 1024));
    f.write(".gitignore", &big);
    let out = grep_within(&f, "needle", Cancel::default()).unwrap();
    assert_eq!(out.matches, vec!["a.txt:1:needle"]);
}

#[test]
fn grep_stops_on_cancel() {
    let f = fixture();
    for i in 0..200 {
        f.write(&format!("d{}/f{i}.txt", i % 10), "needle\n");
    }
    let cancel = Cancel::default();
    cancel.cancel();
    let error = grep_within(&f, "needle", cancel).unwrap_err();
    assert_eq!(error.kind, ErrorKind::Cancelled);
}

#[test]
fn a_file_whose_name_is_not_utf8_is_searched_and_shown() {
    let f = fixture();
    let name = std::ffi::OsStr::from_bytes(b"caf\xe9.txt");
    std::fs::write(f.ws.join(name), "needle\n").unwrap();
    let out = grep_within(&f, "needle", Cancel::default()).unwrap();
    assert_eq!(out.matches, vec!["caf\u{FFFD}.txt:1:needle"]);
}

#[test]
fn an_ignore_file_above_the_workspace_applies_only_inside_a_git_repository() {
    let f = fixture();
    f.write("a.txt", "needle\n");
    f.write("b.log", "needle\n");
    // /tmp/.gitignore with `*` must not hide a workspace that is no repository.
    std::fs::write(f.root.join(".gitignore"), "*\n").unwrap();
    let out = grep_within(&f, "needle", Cancel::default()).unwrap();
    assert_eq!(out.matches, vec!["a.txt:1:needle", "b.log:1:needle"]);
    // Inside a repository whose root is above the workspace, git's rules apply.
    std::fs::write(f.root.join(".gitignore"), "*.log\n").unwrap();
    std::fs::create_dir_all(f.root.join(".git")).unwrap();
    let out = grep_within(&f, "needle", Cancel::default()).unwrap();
    assert_eq!(out.matches, vec!["a.txt:1:needle"]);
}

#[test]
fn a_trailing_slash_on_a_file_is_not_found() {
    let f = fixture();
    let t = f.tools();
    assert_eq!(kind(read(&t, "real.txt/")), ErrorKind::NotFound);
    assert_eq!(kind(write(&t, "real.txt/", "x")), ErrorKind::NotFound);
    assert_eq!(f.read("real.txt"), "inside\n");
    f.write("d/x", "");
    assert_eq!(list(&t, "d/").unwrap(), vec!["x"]);
}
