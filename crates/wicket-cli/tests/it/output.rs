//! What a person reads on the command line, pinned with insta: the
//! transcript `wicket exec` prints, `wicket log`, and `wicket sessions`.
//! Times, ids and temp paths are redacted; the rest must not drift.

use serde_json::json;

use crate::*;

fn settings(f: &Fixture) -> insta::Settings {
    let root = f.root.display().to_string();
    wicket_test_support::filters::settings(&[(root.as_str(), "[ROOT]")])
}

fn scripted_turn(f: &Fixture) -> String {
    crate::exec::script(
        f,
        "output.json",
        json!([
            {"text": "Let me look.", "tool_calls": [{"name": "read_file", "arguments": {"path": "a.txt"}}]},
            {"tool_calls": [{"name": "search_replace", "arguments": {"path": "a.txt", "old": "beta", "new": "gamma"}}]},
            {"tool_calls": [{"name": "run", "arguments": {"argv": ["sh", "-c", "printf '\\033[2Jcleared?\\n'; exit 3"]}}]},
            {"tool_calls": [{"name": "grep", "arguments": {"pattern": "gamma"}}]},
            {"tool_calls": [{"name": "finish", "arguments": {"result": "beta is gamma now"}}]}
        ]),
    )
}

#[test]
fn the_transcript_log_and_session_list_read_the_same_every_time() {
    let f = Fixture::new();
    let model = scripted_turn(&f);
    let output = crate::exec::exec(
        &f,
        "change beta",
        &[
            "--model",
            &model,
            "--session",
            "shown",
            "--answers",
            "allow_once",
        ],
    )
    .stdin(std::process::Stdio::null())
    .output()
    .unwrap();
    assert_eq!(output.status.code(), Some(0));
    let transcript = String::from_utf8_lossy(&output.stdout);
    assert!(
        !transcript.contains('\x1b'),
        "an escape reached the terminal"
    );
    let log = wicket()
        .env("WICKET_HOME", &f.home)
        .args(["log", "shown"])
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&log.stdout);
    let sessions = wicket()
        .env("WICKET_HOME", &f.home)
        .arg("sessions")
        .output()
        .unwrap();
    let sessions = String::from_utf8_lossy(&sessions.stdout);
    settings(&f).bind(|| {
        insta::assert_snapshot!("exec_transcript", transcript);
        insta::assert_snapshot!("log", log);
        insta::assert_snapshot!("sessions", sessions);
    });
}
