//! The `wicket` binary, driven as a script or a person would.
#![allow(
    // Tests start the binary, git and mkfifo from the outside.
    clippy::disallowed_methods,
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::new_without_default
)]

mod acp;
mod chat;
mod context;
mod crash;
mod docs;
mod egress;
mod exec;
mod first_contact;
mod harbor;
mod hooks;
mod hostile;
mod jail;
mod managed;
mod mcp;
mod output;
mod preview;
mod preview_apply;
mod prompt;
mod rewind;
mod rules;
mod sandbox;
mod serve;
mod setup;
mod tasks;
mod telemetry;
mod terminal;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

pub fn wicket() -> Command {
    Command::new(env!("CARGO_BIN_EXE_wicket"))
}

pub use wicket_test_support::Fixture;

/// Runs a command with no input, checks it exited 0 (showing its stderr
/// if not), and gives its output.
pub trait Succeeds {
    fn succeeds(&mut self) -> Output;
}

impl Succeeds for Command {
    fn succeeds(&mut self) -> Output {
        let output = self.stdin(Stdio::null()).output().unwrap();
        assert_eq!(
            output.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        output
    }
}

/// Runs `command` (a peer's script: Node, Python) to its end; it must
/// succeed, else both its outputs are shown. Its output.
pub fn peer_succeeds(command: &mut Command) -> Output {
    let output = command.output().unwrap();
    assert!(
        output.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// `wicket tool` on a fixture's workspace and home.
pub trait ToolRunner {
    /// Runs `wicket tool NAME ARGS --workspace WS EXTRA…` with no stdin;
    /// its JSON lines and exit code.
    fn tool(&self, name: &str, args: &str, extra: &[&str]) -> (Vec<Value>, i32);
    /// The command for it, to run as the test likes.
    fn command(&self, name: &str, args: &str, extra: &[&str]) -> Command;
}

impl ToolRunner for Fixture {
    fn tool(&self, name: &str, args: &str, extra: &[&str]) -> (Vec<Value>, i32) {
        let output = self
            .command(name, args, extra)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        (lines(&output), output.status.code().unwrap_or(-1))
    }

    fn command(&self, name: &str, args: &str, extra: &[&str]) -> Command {
        let mut command = wicket();
        command
            .env("WICKET_HOME", &self.home)
            .env("NO_COLOR", "1")
            .args(["tool", name, args, "--workspace"])
            .arg(&self.ws)
            .args(extra);
        command
    }
}

/// The event that ended the last turn, once the log's (or the stream's)
/// last event is checked to be its `turn_ended`, agreeing with it.
pub fn ending(events: &[Value]) -> &Value {
    let [.., before, last] = events else {
        panic!("too few events: {events:#?}");
    };
    assert_eq!(last["type"], "turn_ended", "{events:#?}");
    let expected: &[&str] = match before["type"].as_str() {
        Some("result") => &["result"],
        Some("cancelled") => &["cancelled"],
        Some("interrupted") => &["interrupted"],
        Some("error") if before["ends_turn"] == true => &["error", "step_limit", "budget"],
        _ => &[],
    };
    assert!(
        expected.contains(&last["outcome"].as_str().unwrap_or_default()),
        "turn_ended {} after {before}",
        last["outcome"]
    );
    before
}

pub fn lines(output: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| {
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON: {line:?}: {e}"))
        })
        .collect()
}

#[test]
fn an_inside_read_prints_one_result_line() {
    let f = Fixture::new();
    let (out, code) = f.tool("read_file", r#"{"path":"a.txt"}"#, &[]);
    assert_eq!(code, 0);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0]["type"], "result");
    assert_eq!(out[0]["ok"], true);
    assert_eq!(out[0]["content"], "alpha\nbeta\n");
    assert_eq!(out[0]["size"], 11);
}

#[test]
fn refusals_exit_one_and_bad_usage_exits_two() {
    let f = Fixture::new();
    let (out, code) = f.tool("read_file", r#"{"path":"../x"}"#, &[]);
    assert_eq!(
        (code, out[0]["error"]["kind"].as_str()),
        (1, Some("outside_workspace"))
    );
    let (out, code) = f.tool("write_file", r#"{"path":"b.txt","content":"b"}"#, &[]);
    assert_eq!(
        code, 1,
        "without --answers and without a terminal, cards are denied"
    );
    assert_eq!(out[0]["type"], "card");
    assert_eq!(out[1]["error"]["kind"], "denied");
    assert!(!f.ws.join("b.txt").exists());
    let (_, code) = f.tool("read_file", "{not json", &[]);
    assert_eq!(code, 2);
    let (_, code) = f.tool("rm_rf", "{}", &[]);
    assert_eq!(code, 2);
    let (out, code) = f.tool("read_file", r#"{"pth":"a.txt"}"#, &[]);
    assert_eq!(
        (code, out[0]["error"]["kind"].as_str()),
        (1, Some("invalid_args"))
    );
}

#[test]
fn a_command_that_fails_still_ran() {
    let f = Fixture::new();
    let (out, code) = f.tool(
        "run",
        r#"{"argv":["sh","-c","echo no >&2; exit 4"]}"#,
        &["--answers", "allow_once"],
    );
    assert_eq!(code, 0);
    assert_eq!(out[0]["kind"], "run");
    assert_eq!(out[0]["argv"], json!(["sh", "-c", "echo no >&2; exit 4"]));
    assert_eq!(out[1]["exit_code"], 4);
    assert_eq!(out[1]["stderr"], "no\n");
    assert_eq!(out[1]["timed_out"], false);
}

#[test]
fn arguments_can_come_from_a_file() {
    let f = Fixture::new();
    let content = "z".repeat(200 * 1024);
    let args = f.home.join("args.json");
    std::fs::write(
        &args,
        json!({"path": "big.txt", "content": content}).to_string(),
    )
    .unwrap();
    let (out, code) = f.tool(
        "write_file",
        &format!("@{}", args.display()),
        &["--answers", "allow_once"],
    );
    assert_eq!(code, 0, "{out:?}");
    assert_eq!(out[1]["bytes"], 200 * 1024);
    assert_eq!(
        std::fs::read_to_string(f.ws.join("big.txt")).unwrap(),
        content
    );
}

#[test]
fn allow_session_is_kept_in_the_named_session_only() {
    let f = Fixture::new();
    let args = r#"{"argv":["true"]}"#;
    let (out, _) = f.tool(
        "run",
        args,
        &["--session", "one", "--answers", "allow_session"],
    );
    assert_eq!(out.len(), 2);
    let (out, code) = f.tool("run", args, &["--session", "one"]);
    assert_eq!(
        (out.len(), code),
        (1, 0),
        "allowed for the session: no card"
    );
    let (out, code) = f.tool("run", args, &["--session", "two"]);
    assert_eq!(
        (out.len(), code),
        (2, 1),
        "another session asks, and is denied"
    );
    let meta: Value =
        serde_json::from_slice(&std::fs::read(f.home.join("sessions/one/meta.json")).unwrap())
            .unwrap();
    assert_eq!(
        meta["allowed"]["run"],
        json!([{"argv": ["true"], "cwd": f.ws, "network": false}])
    );
    let listing = wicket()
        .env("WICKET_HOME", &f.home)
        .arg("sessions")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&listing.stdout);
    assert!(
        text.contains("one") && text.contains("two") && text.contains(f.ws.to_str().unwrap()),
        "{text}"
    );
    let log = wicket()
        .env("WICKET_HOME", &f.home)
        .args(["log", "one", "--json"])
        .output()
        .unwrap();
    let events: Vec<Value> = lines(&log);
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        [
            "session_started",
            "tool_call",
            "card",
            "answer",
            "tool_result",
            "tool_call",
            "tool_result"
        ]
    );
    assert!(
        events
            .iter()
            .all(|e| e["seq"].is_u64() && e["ts"].is_string())
    );
    let readable = wicket()
        .env("WICKET_HOME", &f.home)
        .args(["log", "one"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&readable.stdout).contains("answer card-"));
    let missing = wicket()
        .env("WICKET_HOME", &f.home)
        .args(["log", "nope"])
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("does not exist"));
}

#[test]
fn a_bad_session_id_is_refused() {
    let f = Fixture::new();
    let output = f
        .command(
            "read_file",
            r#"{"path":"a.txt"}"#,
            &["--session", "../evil"],
        )
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("not a safe name"));
}

/// The digest race through the binary: the card goes up, the file is edited,
/// the answer comes back about bytes that are gone, and a new card asks.
#[test]
fn answers_from_stdin_and_an_edit_between_card_and_answer() {
    let f = Fixture::new();
    let mut child = f
        .command(
            "search_replace",
            r#"{"path":"a.txt","old":"beta","new":"BETA"}"#,
            &["--session", "race", "--answers", "stdin"],
        )
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    let first: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(first["kind"], "write");
    std::fs::write(f.ws.join("a.txt"), "alpha\nbeta\ngamma\n").unwrap();
    writeln!(
        stdin,
        "{}",
        json!({"card": first["id"], "answer": "allow_session"})
    )
    .unwrap();
    line.clear();
    stdout.read_line(&mut line).unwrap();
    let second: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(second["kind"], "write");
    assert_ne!(second["id"], first["id"]);
    assert_eq!(
        second["diff"],
        "--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n alpha\n-beta\n+BETA\n gamma\n"
    );
    writeln!(
        stdin,
        "{}",
        json!({"card": second["id"], "answer": "allow_once"})
    )
    .unwrap();
    line.clear();
    stdout.read_line(&mut line).unwrap();
    let result: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(result["ok"], true, "{result}");
    assert_eq!(child.wait().unwrap().code(), Some(0));
    assert_eq!(
        std::fs::read_to_string(f.ws.join("a.txt")).unwrap(),
        "alpha\nBETA\ngamma\n"
    );
    let meta: Value =
        serde_json::from_slice(&std::fs::read(f.home.join("sessions/race/meta.json")).unwrap())
            .unwrap();
    assert_eq!(
        meta["allowed"]["write"],
        json!([]),
        "the spent allow_session is not on meta.json"
    );
}

pub fn read_meta(home: &Path, id: &str) -> Value {
    serde_json::from_slice(
        &std::fs::read(home.join("sessions").join(id).join("meta.json")).unwrap(),
    )
    .unwrap()
}
