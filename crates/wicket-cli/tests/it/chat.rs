//! `wicket chat` on a real pseudo-terminal (util-linux `script`, 30 x 100),
//! driven with the script provider as a person would: read the screen,
//! then type. The screen is what a vt100 parser makes of the bytes.

use serde_json::json;
use wicket_test_support::process::{alive, marker};
use wicket_test_support::pty::Pty;

use crate::exec::script;
use crate::*;

const ROWS: u16 = 30;
const COLUMNS: u16 = 100;

fn chat(f: &Fixture, model: &str, extra: &str) -> Pty {
    let command = format!(
        "stty rows {ROWS} cols {COLUMNS}; exec {} chat --workspace {} --model {model} {extra}",
        env!("CARGO_BIN_EXE_wicket"),
        f.ws.display()
    );
    Pty::spawn(
        &command,
        &[
            ("WICKET_HOME", f.home.as_os_str()),
            ("TERM", std::ffi::OsStr::new("xterm-256color")),
        ],
    )
}

fn write_model(f: &Fixture) -> String {
    script(
        f,
        "write.json",
        json!([
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "alpha\ngamma\n"}}]},
            {"tool_calls": [{"name": "finish", "arguments": {"result": "a.txt says gamma now"}}]}
        ]),
    )
}

/// Empties the input (Ctrl+U) and leaves with Ctrl+D; the exit code and
/// the raw bytes shown.
fn leave(mut pty: Pty) -> (Option<i32>, String) {
    pty.send("\x15\x04");
    pty.finish()
}

fn restored(raw: &str) {
    // The alternate screen, raw mode's mouse and paste modes are all undone.
    assert!(
        raw.contains("\x1b[?1049l"),
        "the alternate screen was not left"
    );
    assert!(raw.contains("\x1b[?1000l"), "the mouse was not given back");
    assert!(
        raw.contains("\x1b[?2004l"),
        "bracketed paste was not turned off"
    );
}

#[test]
fn a_write_card_shows_its_diff_and_o_writes_the_file() {
    let f = Fixture::new();
    let model = write_model(&f);
    let mut pty = chat(&f, &model, "");
    pty.expect_drawn(ROWS, COLUMNS, "workspace");
    pty.send("make it gamma\r");
    pty.expect_drawn(ROWS, COLUMNS, "write_file wants to write");
    pty.expect_drawn(ROWS, COLUMNS, "+gamma");
    assert!(
        pty.grid(ROWS, COLUMNS).contains("-beta"),
        "{}",
        pty.grid(ROWS, COLUMNS)
    );
    pty.expect_drawn(ROWS, COLUMNS, "[o]nce");
    pty.send("o");
    pty.expect_drawn(ROWS, COLUMNS, "a.txt says gamma now");
    assert_eq!(f.read("a.txt"), "alpha\ngamma\n");
    let (code, raw) = leave(pty);
    assert_eq!(code, Some(0));
    restored(&raw);
}

#[test]
fn d_denies_and_the_workspace_is_unchanged() {
    let f = Fixture::new();
    let model = script(
        &f,
        "deny.json",
        json!([
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "gone\n"}}]},
            {"text": "Left as it was."}
        ]),
    );
    let mut pty = chat(&f, &model, "");
    pty.expect_drawn(ROWS, COLUMNS, "workspace");
    // Typed before the card exists: it must not answer it.
    pty.send("overwrite it\ro");
    pty.expect_drawn(ROWS, COLUMNS, "[o]nce");
    assert_eq!(
        f.read("a.txt"),
        "alpha\nbeta\n",
        "a key typed before the card answered it"
    );
    pty.send("d");
    pty.expect_drawn(ROWS, COLUMNS, "Left as it was.");
    assert!(pty.grid(ROWS, COLUMNS).contains("denied"));
    assert_eq!(f.read("a.txt"), "alpha\nbeta\n");
    let (code, _) = leave(pty);
    assert_eq!(code, Some(0));
}

#[test]
fn esc_cancels_a_running_command() {
    let f = Fixture::new();
    let tag = marker("chat-run");
    let model = script(
        &f,
        "run.json",
        json!([
            {"tool_calls": [{"name": "run", "arguments": {"argv": ["sh", "-c", format!("trap '' TERM; touch started; sleep 60; : {tag}")]}}]},
            {"text": "after the cancel"}
        ]),
    );
    let mut pty = chat(&f, &model, "");
    pty.expect_drawn(ROWS, COLUMNS, "workspace");
    pty.send("run it\r");
    pty.expect_drawn(ROWS, COLUMNS, "run wants to start a command");
    pty.expect_drawn(ROWS, COLUMNS, "[o]nce");
    pty.send("o");
    assert!(
        wicket_test_support::wait_until(std::time::Duration::from_secs(20), || f
            .ws
            .join("started")
            .exists()),
        "the command never started"
    );
    pty.send("\x1b");
    pty.expect_drawn(ROWS, COLUMNS, "cancelled");
    assert!(!alive(&tag), "the command outlived the cancel");
    assert!(
        pty.grid(ROWS, COLUMNS).contains("signal 9"),
        "{}",
        pty.grid(ROWS, COLUMNS)
    );
    let (code, raw) = leave(pty);
    assert_eq!(code, Some(0));
    restored(&raw);
}

#[test]
fn a_question_takes_a_typed_reply_and_history_comes_back() {
    let f = Fixture::new();
    let model = script(
        &f,
        "ask.json",
        json!([
            {"tool_calls": [{"name": "ask", "arguments": {"question": "Which name?"}}]},
            {"tool_calls": [{"name": "finish", "arguments": {"result": "named it"}}]}
        ]),
    );
    let mut pty = chat(&f, &model, "--session asked");
    pty.expect_drawn(ROWS, COLUMNS, "workspace");
    pty.send("name it\r");
    pty.expect_drawn(ROWS, COLUMNS, "your reply to the question");
    pty.send("Bob\r");
    pty.expect_drawn(ROWS, COLUMNS, "named it");
    let log = f.log("asked");
    assert!(
        log.iter()
            .any(|e| e["type"] == "reply" && e["reply"] == "Bob")
    );
    // Up brings back what was sent.
    pty.send("\x1b[A");
    pty.expect_drawn(ROWS, COLUMNS, "│Bob");
    let (code, _) = leave(pty);
    assert_eq!(code, Some(0));
}

#[test]
fn a_session_another_process_holds_is_refused_naming_its_pid() {
    let f = Fixture::new();
    let model = script(&f, "none.json", json!([]));
    let holder = chat(&f, &model, "--session held");
    holder.expect_drawn(ROWS, COLUMNS, "workspace");
    let before = std::fs::read(f.home.join("sessions/held/log.jsonl")).unwrap();
    let output = wicket()
        .env("WICKET_HOME", &f.home)
        .args(["chat", "--session", "held", "--workspace"])
        .arg(&f.ws)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(
        said.contains("is open in another wicket process (pid "),
        "{said}"
    );
    assert_eq!(
        std::fs::read(f.home.join("sessions/held/log.jsonl")).unwrap(),
        before
    );
    let (code, _) = leave(holder);
    assert_eq!(code, Some(0));
}

#[test]
fn without_a_model_the_first_screen_says_how_to_set_one() {
    let f = Fixture::new();
    let command = format!(
        "stty rows {ROWS} cols {COLUMNS}; exec {} chat --workspace {}",
        env!("CARGO_BIN_EXE_wicket"),
        f.ws.display()
    );
    let pty = Pty::spawn(&command, &[("WICKET_HOME", f.home.as_os_str())]);
    pty.expect_drawn(ROWS, COLUMNS, "no model");
    pty.expect_drawn(ROWS, COLUMNS, "/model openai:gpt-4o");
    let (code, raw) = leave(pty);
    assert_eq!(code, Some(0));
    restored(&raw);
}

#[test]
fn sigterm_leaves_the_terminal_as_it_was() {
    let f = Fixture::new();
    let model = script(&f, "none.json", json!([]));
    let pty = chat(&f, &model, "--session termed");
    pty.expect_drawn(ROWS, COLUMNS, "workspace");
    let pids = wicket_test_support::process::processes_with("chat --workspace")
        .into_iter()
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/cmdline"))
                .map(|line| line.contains("termed") && !line.contains("stty"))
                .unwrap_or(false)
        })
        .collect::<Vec<_>>();
    assert_eq!(pids.len(), 1, "{pids:?}");
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(pids[0] as i32).unwrap(),
        rustix::process::Signal::TERM,
    )
    .unwrap();
    let (code, raw) = pty.finish();
    assert_eq!(code, Some(143));
    restored(&raw);
}

/// A run card whose argv is longer than the screen is wide: the person
/// reads it to its end (it wraps, nothing is cut) before pressing `o`.
#[test]
fn a_long_run_card_wraps_and_o_comes_after_its_tail_is_on_screen() {
    let f = Fixture::new();
    let script_text = format!(
        "echo running the unit tests {}; echo ran > tail_was_seen.txt",
        "x".repeat(400)
    );
    let model = script(
        &f,
        "long.json",
        json!([
            {"tool_calls": [{"name": "run", "arguments": {"argv": ["sh", "-c", script_text]}}]},
            {"tool_calls": [{"name": "finish", "arguments": {"result": "the tests ran"}}]}
        ]),
    );
    let mut pty = chat(&f, &model, "");
    pty.expect_drawn(ROWS, COLUMNS, "workspace");
    pty.send("run the tests\r");
    pty.expect_drawn(ROWS, COLUMNS, "run wants to start a command");
    // The tail of the script, on screen, before any key.
    pty.expect_drawn(ROWS, COLUMNS, "tail_was_seen.txt");
    pty.expect_drawn(ROWS, COLUMNS, "[o]nce");
    pty.send("o");
    pty.expect_drawn(ROWS, COLUMNS, "the tests ran");
    assert_eq!(f.read("tail_was_seen.txt"), "ran\n");
    let (code, _) = leave(pty);
    assert_eq!(code, Some(0));
}

#[test]
fn rewind_lists_the_points_shows_what_changes_and_puts_the_file_back() {
    let f = Fixture::new();
    let model = write_model(&f);
    let mut pty = chat(&f, &model, "");
    pty.expect_drawn(ROWS, COLUMNS, "workspace");
    pty.send("make it gamma\r");
    pty.expect_drawn(ROWS, COLUMNS, "[o]nce");
    pty.send("o");
    pty.expect_drawn(ROWS, COLUMNS, "a.txt says gamma now");
    // The reply is drawn before the turn has ended: the list is asked for after.
    pty.expect_drawn(ROWS, COLUMNS, "· idle ·");
    pty.send("/rewind\r");
    pty.expect_drawn(ROWS, COLUMNS, "turn: make it gamma");
    pty.expect_drawn(ROWS, COLUMNS, "before write_file a.txt");
    // The latest point is selected; Enter shows what it would change.
    pty.send("\r");
    pty.expect_drawn(ROWS, COLUMNS, "restore a.txt");
    pty.expect_drawn(ROWS, COLUMNS, "rewind them");
    assert_eq!(f.read("a.txt"), "alpha\ngamma\n");
    pty.send("\r");
    pty.expect_drawn(ROWS, COLUMNS, "rewound to before event");
    assert_eq!(f.read("a.txt"), "alpha\nbeta\n");
    let (code, raw) = leave(pty);
    assert_eq!(code, Some(0));
    restored(&raw);
}
