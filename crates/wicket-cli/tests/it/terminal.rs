//! The terminal prompt, on a real pseudo-terminal: util-linux `script` runs
//! `wicket` with a pty as its stdin, so `is_terminal()` is true and the
//! readable card and `[o]nce / [s]ession / [a]lways / [d]eny` prompt are what a person
//! sees. The test reads the screen before it types, as a person does; a
//! key typed before a card is drawn must never answer it.

use wicket_test_support::pty::Pty;

use crate::*;

fn tool_on_a_terminal(f: &Fixture, session: &str, tool: &str, args: serde_json::Value) -> Pty {
    let file = f.root.join(format!(
        "args-{}.json",
        wicket_test_support::process::marker("a")
    ));
    std::fs::write(&file, args.to_string()).unwrap();
    let command = format!(
        "{} tool {tool} @{} --workspace {} --session {session}",
        env!("CARGO_BIN_EXE_wicket"),
        file.display(),
        f.ws.display()
    );
    Pty::spawn(
        &command,
        &[
            ("WICKET_HOME", f.home.as_os_str()),
            ("NO_COLOR", std::ffi::OsStr::new("1")),
        ],
    )
}

fn write_on_a_terminal(f: &Fixture, session: &str, content: &str) -> Pty {
    tool_on_a_terminal(
        f,
        session,
        "write_file",
        serde_json::json!({"path": "a.txt", "content": content}),
    )
}

#[test]
fn the_prompt_shows_the_card_and_takes_once_after_a_wrong_key() {
    let f = Fixture::new();
    let mut pty = write_on_a_terminal(&f, "tty", "alpha\ngamma\n");
    pty.expect("[o]nce / [s]ession / [a]lways / [d]eny / [r]eason, deny: ");
    pty.send("x\n");
    pty.expect("type o, s, a, d or r");
    pty.send("o\n");
    let (code, shown) = pty.finish();
    assert_eq!(code, Some(0), "{shown}");
    assert!(shown.contains("write_file wants to write "), "{shown}");
    assert!(shown.contains("-beta\n+gamma\n"), "{shown}");
    assert!(shown.contains(r#""ok":true"#), "{shown}");
    assert_eq!(f.read("a.txt"), "alpha\ngamma\n");
    assert!(
        f.meta("tty")["allowed"]["write"]
            .as_array()
            .unwrap()
            .is_empty()
    );
}

#[test]
fn the_prompt_denies_and_allows_for_the_session() {
    let f = Fixture::new();
    let mut pty = write_on_a_terminal(&f, "tty", "denied\n");
    pty.expect("[o]nce / [s]ession / [a]lways / [d]eny / [r]eason, deny: ");
    pty.send("d\n");
    let (_, shown) = pty.finish();
    assert!(shown.contains(r#""kind":"denied""#), "{shown}");
    assert_eq!(f.read("a.txt"), "alpha\nbeta\n");
    let mut pty = write_on_a_terminal(&f, "tty", "kept\n");
    pty.expect("[o]nce / [s]ession / [a]lways / [d]eny / [r]eason, deny: ");
    pty.send("session\n");
    let (_, shown) = pty.finish();
    assert!(shown.contains(r#""ok":true"#), "{shown}");
    let path = f.ws.join("a.txt").display().to_string();
    assert_eq!(f.meta("tty")["allowed"]["write"], serde_json::json!([path]));
    // Allowed for the session: the next write to the same file shows no prompt.
    let (_, shown) = write_on_a_terminal(&f, "tty", "again\n").finish();
    assert!(!shown.contains("[o]nce"), "{shown}");
    assert_eq!(f.read("a.txt"), "again\n");
}

#[test]
fn r_at_the_prompt_denies_with_a_reason_the_model_reads() {
    let f = Fixture::new();
    let mut pty = write_on_a_terminal(&f, "tty", "denied\n");
    pty.expect("[o]nce / [s]ession / [a]lways / [d]eny / [r]eason, deny: ");
    pty.send("r\n");
    pty.expect("why you deny it (the model reads it): ");
    pty.send("keep a.txt as it is\n");
    let (_, shown) = pty.finish();
    assert!(shown.contains(r#""kind":"denied""#), "{shown}");
    assert!(
        shown.contains(r#"Their reason: \"keep a.txt as it is\"."#),
        "{shown}"
    );
    assert_eq!(f.read("a.txt"), "alpha\nbeta\n");
    let answer = f
        .log("tty")
        .into_iter()
        .find(|event| event["type"] == "answer")
        .unwrap();
    assert_eq!(answer["reason"], "keep a.txt as it is");
}

/// A write whose content would redraw the card (cursor up, erase line,
/// carriage return) shows its control characters instead of obeying them:
/// what the terminal shows is the real write.
#[test]
fn a_card_cannot_be_redrawn_by_what_it_shows() {
    let f = Fixture::new();
    let spoof = "echo pwned > ~/.bashrc\n\x1b[2A\x1b[2K\r+# just a comment\n";
    let mut pty = tool_on_a_terminal(
        &f,
        "spoof",
        "write_file",
        serde_json::json!({"path": "notes.sh", "content": spoof}),
    );
    pty.expect("[o]nce / [s]ession / [a]lways / [d]eny / [r]eason, deny: ");
    pty.send("d\n");
    let (_, screen) = pty.finish();
    let card = screen
        .split("[o]nce")
        .next()
        .unwrap()
        .lines()
        .filter(|line| !line.starts_with('{'))
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        !screen.contains("\x1b[2A") && !screen.contains("\x1b[2K"),
        "{screen:?}"
    );
    insta::assert_snapshot!(card.replace(&f.ws.display().to_string(), "[WS]"), @r#"
    write_file wants to write [WS]/notes.sh
    --- /dev/null
    +++ b/notes.sh
    @@ -1,0 +1,2 @@
    +echo pwned > ~/.bashrc
    +␛[2A␛[2K␍+# just a comment
    always would save: allow write path "notes.sh" in [WS]
    "#);
}

/// Text pasted at a question's prompt can carry the next card's answer.
/// It must not: keys typed before a card is drawn are dropped.
#[test]
fn keys_typed_before_a_card_is_drawn_do_not_answer_it() {
    let f = Fixture::new();
    let model = crate::exec::script(
        &f,
        "ahead.json",
        serde_json::json!([
            {"tool_calls": [{"name": "ask", "arguments": {"question": "Which colour?"}}]},
            {"tool_calls": [{"name": "run", "arguments": {"argv": ["touch", "ran"]}}]},
            {"text": "done"}
        ]),
    );
    let command = format!(
        "{} exec 'paint it' --workspace {} --model {model}",
        env!("CARGO_BIN_EXE_wicket"),
        f.ws.display()
    );
    let mut pty = Pty::spawn(
        &command,
        &[
            ("WICKET_HOME", f.home.as_os_str()),
            ("NO_COLOR", std::ffi::OsStr::new("1")),
        ],
    );
    pty.expect("reply: ");
    // The reply, and an `o` meant for nothing yet, pasted at once.
    pty.send("blue\no\n");
    pty.expect("[o]nce / [s]ession / [a]lways / [p]review / [d]eny / [r]eason, deny: ");
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(
        !f.ws.join("ran").exists(),
        "the pasted `o` answered the card"
    );
    pty.send("d\n");
    let (code, screen) = pty.finish();
    assert_eq!(code, Some(0), "{screen}");
    assert!(!f.ws.join("ran").exists(), "{screen}");
    assert!(screen.contains("deny"), "{screen}");
}
