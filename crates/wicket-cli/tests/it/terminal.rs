//! The terminal prompt, on a real pseudo-terminal: util-linux `script` runs
//! `wicket` with a pty as its stdin, so `is_terminal()` is true and the
//! readable card and `[o]nce / [s]ession / [d]eny` prompt are what a person sees.

use std::io::Write;
use std::process::{Command, Stdio};

use crate::*;

/// Runs `wicket tool write_file` on a pty, typing `keys`; returns what the
/// terminal showed.
fn on_a_terminal(f: &Fixture, session: &str, content: &str, keys: &str) -> String {
    let args = f.home.join("args.json");
    std::fs::write(
        &args,
        serde_json::json!({"path": "a.txt", "content": content}).to_string(),
    )
    .unwrap();
    let command = format!(
        "{} tool write_file @{} --workspace {} --session {session}",
        env!("CARGO_BIN_EXE_wicket"),
        args.display(),
        f.ws.display()
    );
    let mut child = Command::new("script")
        .args(["-q", "-e", "-c", &command, "/dev/null"])
        .env("WICKET_HOME", &f.home)
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("util-linux `script` runs the prompt on a pty");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(keys.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    String::from_utf8_lossy(&output.stdout).replace("\r\n", "\n")
}

#[test]
fn the_prompt_shows_the_card_and_takes_once_after_a_wrong_key() {
    let f = Fixture::new();
    let shown = on_a_terminal(&f, "tty", "alpha\ngamma\n", "x\no\n");
    assert!(shown.contains("write_file wants to write "), "{shown}");
    assert!(shown.contains("-beta\n+gamma\n"), "{shown}");
    assert!(shown.contains("type o, s or d"), "{shown}");
    assert!(shown.contains(r#""ok":true"#), "{shown}");
    assert_eq!(
        std::fs::read_to_string(f.ws.join("a.txt")).unwrap(),
        "alpha\ngamma\n"
    );
    assert!(
        read_meta(&f.home, "tty")["allowed"]["write"]
            .as_array()
            .unwrap()
            .is_empty()
    );
}

#[test]
fn the_prompt_denies_and_allows_for_the_session() {
    let f = Fixture::new();
    let shown = on_a_terminal(&f, "tty", "denied\n", "d\n");
    assert!(shown.contains(r#""kind":"denied""#), "{shown}");
    assert_eq!(
        std::fs::read_to_string(f.ws.join("a.txt")).unwrap(),
        "alpha\nbeta\n"
    );
    let shown = on_a_terminal(&f, "tty", "kept\n", "session\n");
    assert!(shown.contains(r#""ok":true"#), "{shown}");
    let path = f.ws.join("a.txt").display().to_string();
    assert_eq!(
        read_meta(&f.home, "tty")["allowed"]["write"],
        serde_json::json!([path])
    );
    // Allowed for the session: the next write to the same file shows no prompt.
    let shown = on_a_terminal(&f, "tty", "again\n", "");
    assert!(!shown.contains("[o]nce"), "{shown}");
    assert_eq!(
        std::fs::read_to_string(f.ws.join("a.txt")).unwrap(),
        "again\n"
    );
}
