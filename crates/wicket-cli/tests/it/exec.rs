//! `wicket exec` through the binary with the script provider: a whole turn
//! answered from stdin, policies, a missing model, SIGINT during a command
//! that ignores SIGTERM, and resuming the cancelled session.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use wicket_test_support::process::alive as marker_running;
use wicket_test_support::wait_until;

use crate::*;

pub(crate) fn exec(f: &Fixture, ask: &str, extra: &[&str]) -> Command {
    let mut command = wicket();
    command
        .env("WICKET_HOME", &f.home)
        .env("NO_COLOR", "1")
        .env_remove("WICKET_MODEL")
        .args(["exec", ask, "--workspace"])
        .arg(&f.ws)
        .args(extra);
    command
}

/// `wicket exec --json --answers deny` with no stdin, which must exit 0;
/// its events.
fn exec_denying(f: &Fixture, ask: &str, model: &str) -> Vec<Value> {
    let output = exec(f, ask, &["--model", model, "--json", "--answers", "deny"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    lines(&output)
}

pub(crate) fn script(f: &Fixture, name: &str, replies: Value) -> String {
    let path = f.home.join(name);
    std::fs::write(&path, replies.to_string()).unwrap();
    format!("script:{}", path.display())
}

/// Runs exec with `--json --answers stdin`, answering each card with the
/// next of `answers` and each question with the next of `replies`.
pub(crate) fn converse(
    mut command: Command,
    answers: &[&str],
    replies: &[&str],
) -> (Vec<Value>, i32) {
    let mut child = command
        .args(["--json", "--answers", "stdin"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let (mut answers, mut replies) = (answers.iter(), replies.iter());
    let mut events = Vec::new();
    for line in stdout.lines() {
        let event: Value = serde_json::from_str(&line.unwrap()).unwrap();
        match event["type"].as_str() {
            Some("card") => {
                let answer = answers.next().expect("a card the test did not expect");
                // An answer with more than its word is given as its JSON line, less the card.
                let mut line: Value = if answer.starts_with('{') {
                    serde_json::from_str(answer).unwrap()
                } else {
                    json!({"answer": answer})
                };
                line["card"] = event["id"].clone();
                writeln!(stdin, "{line}").unwrap();
            }
            Some("question") => {
                let reply = replies.next().expect("a question the test did not expect");
                writeln!(
                    stdin,
                    "{}",
                    json!({"question": event["id"], "reply": reply})
                )
                .unwrap();
            }
            _ => {}
        }
        events.push(event);
    }
    let code = child.wait().unwrap().code().unwrap_or(-1);
    (events, code)
}

fn types(events: &[Value]) -> Vec<&str> {
    events.iter().map(|e| e["type"].as_str().unwrap()).collect()
}

#[test]
fn a_scripted_turn_reads_writes_runs_asks_and_finishes() {
    let f = Fixture::new();
    let model = script(
        &f,
        "turn.json",
        json!([
            {"text": "Let me look.", "tool_calls": [{"name": "read_file", "arguments": {"path": "a.txt"}}]},
            {"tool_calls": [{"name": "ask", "arguments": {"question": "New second line?"}}]},
            {"tool_calls": [{"name": "search_replace", "arguments": {"path": "a.txt", "old": "beta", "new": "gamma"}}]},
            {"tool_calls": [{"name": "run", "arguments": {"argv": ["cat", "a.txt"], "timeout_s": 30}}]},
            {"tool_calls": [{"name": "finish", "arguments": {"result": "beta is gamma now"}}]}
        ]),
    );
    let (events, code) = converse(
        exec(&f, "change beta", &["--model", &model, "--session", "demo"]),
        &["allow_once", "allow_once"],
        &["gamma"],
    );
    assert_eq!(code, 0, "{events:#?}");
    assert_eq!(events[0]["type"], "session_started");
    assert_eq!(events[0]["session"], "demo");
    assert_eq!(
        std::fs::read_to_string(f.ws.join("a.txt")).unwrap(),
        "alpha\ngamma\n"
    );
    let cards: Vec<&Value> = events.iter().filter(|e| e["type"] == "card").collect();
    assert_eq!(cards[0]["kind"], "write");
    assert!(
        cards[0]["diff"]
            .as_str()
            .unwrap()
            .contains("-beta\n+gamma\n")
    );
    assert_eq!(cards[1]["kind"], "run");
    assert_eq!(cards[1]["timeout_s"], 30);
    let run = events
        .iter()
        .find(|e| e["type"] == "tool_result" && e["output"]["exit_code"] == 0)
        .unwrap();
    assert_eq!(run["output"]["stdout"], "alpha\ngamma\n");
    assert_eq!(ending(&events)["type"], "result");
    assert_eq!(ending(&events)["text"], "beta is gamma now");
    // The JSON lines are the log's own events.
    let log = wicket()
        .env("WICKET_HOME", &f.home)
        .args(["log", "demo", "--json"])
        .output()
        .unwrap();
    assert_eq!(lines(&log), events);
    assert_eq!(read_meta(&f.home, "demo")["status"], "idle");
}

#[test]
fn a_fixed_deny_policy_denies_and_the_turn_still_ends() {
    let f = Fixture::new();
    let model = script(
        &f,
        "deny.json",
        json!([
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "gone"}}]},
            {"text": "The write was denied; nothing changed."}
        ]),
    );
    let events = exec_denying(&f, "overwrite", &model);
    let denied = events.iter().find(|e| e["type"] == "tool_result").unwrap();
    assert_eq!(denied["error"]["kind"], "denied");
    assert_eq!(
        std::fs::read_to_string(f.ws.join("a.txt")).unwrap(),
        "alpha\nbeta\n"
    );
    assert_eq!(
        types(&events),
        [
            "session_started",
            "user_message",
            "assistant_message",
            "tool_call",
            "card",
            "answer",
            "tool_result",
            "assistant_message",
            "result",
            "turn_ended"
        ]
    );
}

#[test]
fn a_missing_model_says_how_to_configure_one() {
    let f = Fixture::new();
    let output = exec(&f, "hi", &[]).stdin(Stdio::null()).output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    for needle in [
        "--model",
        "WICKET_MODEL",
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "ollama",
    ] {
        assert!(stderr.contains(needle), "{needle} missing from: {stderr}");
    }
    assert!(
        !f.home.join("sessions").exists(),
        "no session for a turn that cannot run"
    );
    // A script that runs out is an error that ends the turn, exit 1.
    let model = script(&f, "empty.json", json!([]));
    let output = exec(&f, "hi", &["--model", &model, "--json"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let events = lines(&output);
    assert_eq!(ending(&events)["type"], "error");
    assert_eq!(ending(&events)["ends_turn"], true);
}

#[test]
fn sigint_cancels_a_command_that_ignores_sigterm_and_the_session_resumes() {
    let f = Fixture::new();
    let marker = format!("wicket-cancel-test-{}", std::process::id());
    let model = script(
        &f,
        "cancel.json",
        json!([
            {"tool_calls": [
                {"name": "run", "arguments": {"argv": ["sh", "-c", format!("trap '' TERM; touch ignoring; sleep 60; : {marker}")]}},
                {"name": "read_file", "arguments": {"path": "a.txt"}}
            ]},
            {"text": "Picked up after the cancel."}
        ]),
    );
    let mut child: Child = exec(
        &f,
        "run forever",
        &[
            "--model",
            &model,
            "--session",
            "c",
            "--json",
            "--answers",
            "allow_once",
        ],
    )
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .spawn()
    .unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let reader = std::thread::spawn(move || {
        stdout
            .lines()
            .map(|line| serde_json::from_str::<Value>(&line.unwrap()).unwrap())
            .collect::<Vec<Value>>()
    });
    // Wait until the command runs and ignores TERM, then press Ctrl-C.
    assert!(
        wait_until(Duration::from_secs(30), || f.ws.join("ignoring").exists()),
        "the command never started"
    );
    assert!(marker_running(&marker));
    let sent = Instant::now();
    rustix::process::kill_process(
        rustix::process::Pid::from_child(&child),
        rustix::process::Signal::INT,
    )
    .unwrap();
    let events = reader.join().unwrap();
    let code = child.wait().unwrap().code();
    let took = sent.elapsed();
    assert!(
        took >= Duration::from_secs(2) && took < Duration::from_secs(10),
        "TERM is ignored, so KILL comes 2 s later: {took:?}"
    );
    assert_eq!(code, Some(130));
    assert!(!marker_running(&marker), "the command is still running");
    assert_eq!(ending(&events)["type"], "cancelled");
    let results: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "tool_result")
        .collect();
    assert_eq!(
        results.len(),
        2,
        "the run's result and a synthetic one: {results:#?}"
    );
    assert_eq!(results[0]["output"]["signal"], 9, "{:#?}", results[0]);
    assert_eq!(results[1]["error"]["kind"], "cancelled");
    // Resuming the cancelled session: the script goes on where it was.
    let output = exec(
        &f,
        "go on",
        &["--model", &model, "--session", "c", "--json"],
    )
    .succeeds();
    let events = lines(&output);
    assert_eq!(ending(&events)["text"], "Picked up after the cancel.");
}

/// A whole turn against a fake provider server: a read, a rate limit that
/// is retried, a write card answered from stdin, then a reply with no tool
/// call that ends the turn. The fake records what the client sent.
fn turn_against(wire: wicket_fake::Wire) {
    use wicket_fake::{FakeReply, FakeServer, Step};
    let f = Fixture::new();
    let fake = FakeServer::start(wire);
    fake.push(Step::Reply(
        FakeReply::text("Reading first.")
            .with_tool_call("call_r1", "read_file", r#"{"path": "a.txt"}"#)
            .usage(100, 10),
    ));
    fake.push(Step::Status {
        status: 429,
        body: wire.error_body(429, "slow down"),
        retry_after: Some("0".into()),
    });
    fake.push(Step::Reply(
        FakeReply::tool_call(
            "call_w1",
            "write_file",
            r#"{"path": "b.txt", "content": "née\n"}"#,
        )
        .usage(200, 20),
    ));
    fake.push(Step::Reply(FakeReply::text("Wrote b.txt.").usage(300, 30)));
    let (provider, base_var, key_var) = match wire {
        wicket_fake::Wire::OpenAi => ("openai:gpt-test", "OPENAI_BASE_URL", "OPENAI_API_KEY"),
        wicket_fake::Wire::Anthropic => (
            "anthropic:claude-test",
            "ANTHROPIC_BASE_URL",
            "ANTHROPIC_API_KEY",
        ),
    };
    let mut command = exec(&f, "copy a to b", &["--model", provider]);
    command
        .env(base_var, fake.base_url())
        .env(key_var, "test-key");
    let (events, code) = converse(command, &["allow_once"], &[]);
    assert_eq!(code, 0, "{events:#?}");
    assert_eq!(
        std::fs::read_to_string(f.ws.join("b.txt")).unwrap(),
        "née\n"
    );
    let retry = events.iter().find(|e| e["type"] == "retry").unwrap();
    assert_eq!(retry["attempt"], 2);
    let result = ending(&events);
    assert_eq!(result["type"], "result");
    assert_eq!(result["text"], "Wrote b.txt.");
    assert_eq!(result["usage"]["input_tokens"], 600);
    assert_eq!(result["usage"]["output_tokens"], 60);
    // The chat requests (an unknown model's window was asked with a GET first).
    let requests: Vec<_> = fake
        .requests()
        .into_iter()
        .filter(|request| request.method == "POST")
        .collect();
    assert_eq!(requests.len(), 4);
    // The last request carries both tool results under the model's ids.
    let last = requests[3].body.to_string();
    for id in ["call_r1", "call_w1"] {
        assert!(last.contains(id), "{id} missing from {last}");
    }
    assert!(
        last.contains("alpha"),
        "the read's content goes back: {last}"
    );
    // A second turn in the same session: its own usage on its result, and
    // the session's total in meta.json.
    fake.push(Step::Reply(FakeReply::text("Still there.").usage(50, 5)));
    let id = events[0]["session"].as_str().unwrap();
    let mut command = exec(&f, "check", &["--model", provider, "--session", id]);
    command
        .env(base_var, fake.base_url())
        .env(key_var, "test-key");
    let (events, code) = converse(command, &[], &[]);
    assert_eq!(code, 0, "{events:#?}");
    let result = ending(&events);
    assert_eq!(
        (
            &result["usage"]["input_tokens"],
            &result["usage"]["output_tokens"]
        ),
        (&json!(50), &json!(5))
    );
    assert!(
        result["usage"].get("cost_usd").is_none(),
        "a test model has no price: {result}"
    );
    let meta: Value = serde_json::from_slice(
        &std::fs::read(f.home.join("sessions").join(id).join("meta.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        (
            &meta["usage"]["input_tokens"],
            &meta["usage"]["output_tokens"]
        ),
        (&json!(650), &json!(65))
    );
}

#[test]
fn a_turn_against_a_fake_openai_server() {
    turn_against(wicket_fake::Wire::OpenAi);
}

#[test]
fn a_turn_against_a_fake_anthropic_server() {
    turn_against(wicket_fake::Wire::Anthropic);
}

#[test]
fn a_skill_and_a_stop_hook_that_blocks_once_through_the_binary() {
    let f = Fixture::new();
    let skill = f.ws.join(".wicket/skills/release");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: release\ndescription: How to cut a release\n---\nBump the version, then tag.\n",
    )
    .unwrap();
    std::fs::write(
        f.home.join("config.toml"),
        r#"[[hooks.stop]]
command = ["sh", "-c", "if [ -e .hooked ]; then exit 0; fi; touch .hooked; echo 'run the tests first' >&2; exit 2"]
"#,
    )
    .unwrap();
    let model = script(
        &f,
        "skill.json",
        json!([
            {"tool_calls": [{"name": "use_skill", "arguments": {"name": "release"}}]},
            {"tool_calls": [{"name": "finish", "arguments": {"result": "too early"}}]},
            {"tool_calls": [{"name": "finish", "arguments": {"result": "released"}}]}
        ]),
    );
    let events = exec_denying(&f, "release it", &model);
    let skill_result = events
        .iter()
        .find(|e| e["type"] == "tool_result" && e["call_id"] == "script-1-1")
        .unwrap();
    assert!(
        skill_result
            .to_string()
            .contains("Bump the version, then tag.")
    );
    let hooks: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "hook")
        .map(|e| e["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(hooks, ["block", "pass"]);
    let blocked = events
        .iter()
        .find(|e| e["type"] == "tool_result" && e["call_id"] == "script-2-1")
        .unwrap();
    assert!(
        blocked.to_string().contains("run the tests first"),
        "{blocked}"
    );
    assert_eq!(ending(&events)["text"], "released");
}

/// A log that cannot take the next event (here a file-size limit that the
/// model's long reply passes; a full disk is the same `write` failing)
/// ends the turn with an error: nothing the reply asked for runs, and the
/// log stays whole, with the error and `turn_ended` after the last line
/// that fit.
#[test]
fn a_log_that_cannot_be_written_ends_the_turn_and_nothing_runs_after() {
    let f = Fixture::new();
    let model = script(
        &f,
        "big.json",
        json!([
            {"tool_calls": [
                {"name": "write_file", "arguments": {"path": "big.txt", "content": "x".repeat(40_000)}},
                {"name": "run", "arguments": {"argv": ["touch", "ran"]}}
            ]},
            {"text": "done"}
        ]),
    );
    // 64 blocks of 512 bytes: the reply's 40 kB do not fit in the log.
    let output = Command::new("sh")
        .args(["-c", "ulimit -f 64 && exec \"$@\"", "sh"])
        .arg(env!("CARGO_BIN_EXE_wicket"))
        .args(["exec", "write it", "--workspace"])
        .arg(&f.ws)
        .args([
            "--model",
            &model,
            "--session",
            "full",
            "--json",
            "--answers",
            "allow_once",
        ])
        .env("WICKET_HOME", &f.home)
        .env_remove("WICKET_MODEL")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let events = lines(&output);
    let error = ending(&events);
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("could not be written"),
        "{error}"
    );
    assert!(!f.ws.join("ran").exists(), "a command ran unlogged");
    assert!(!f.ws.join("big.txt").exists(), "a write ran unlogged");
    // The log is whole: every line reads back, and it ends as the stream did.
    let log = f.log("full");
    assert!(log.iter().all(|e| e["type"] != "unreadable"), "{log:#?}");
    assert_eq!(
        log.iter().map(|e| e["type"].clone()).collect::<Vec<_>>(),
        ["session_started", "user_message", "error", "turn_ended"]
    );
    assert_eq!(ending(&log)["message"], error["message"]);
}

/// `exec --fail-on-deny`'s exit code for a turn of `replies`, cards answered by `answers`.
fn fail_on_deny_code(f: &Fixture, replies: Value, answers: &str) -> i32 {
    let model = script(f, "denied.json", replies);
    let output = exec(
        f,
        "go",
        &[
            "--model",
            &model,
            "--json",
            "--answers",
            answers,
            "--fail-on-deny",
        ],
    )
    .stdin(Stdio::null())
    .output()
    .unwrap();
    output.status.code().unwrap_or(-1)
}

#[test]
fn fail_on_deny_exits_3_when_a_card_or_a_rule_denied_a_call_and_0_otherwise() {
    let f = Fixture::new();
    let write = json!([
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "n.txt", "content": "n\n"}}]},
        {"text": "done"}
    ]);
    assert_eq!(
        fail_on_deny_code(&f, write.clone(), "deny"),
        3,
        "--answers deny"
    );
    assert_eq!(
        fail_on_deny_code(&f, write, "allow_once"),
        0,
        "nothing denied"
    );
    // Without the flag a denied turn that ends in a result still exits 0.
    let model = script(
        &f,
        "plain.json",
        json!([
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "m.txt", "content": "m\n"}}]},
            {"text": "done"}
        ]),
    );
    let plain = exec(
        &f,
        "go",
        &["--model", &model, "--json", "--answers", "deny"],
    )
    .stdin(Stdio::null())
    .output()
    .unwrap();
    assert_eq!(plain.status.code(), Some(0));
    // A rule's denial counts, with every card allowed.
    std::fs::write(
        f.home.join("config.toml"),
        "[[rules]]\naction = \"deny\"\ntool = \"run\"\nargv_prefix = [\"rm\"]\n",
    )
    .unwrap();
    let removal = json!([
        {"tool_calls": [{"name": "run", "arguments": {"argv": ["rm", "-rf", "src"]}}]},
        {"text": "done"}
    ]);
    assert_eq!(
        fail_on_deny_code(&f, removal, "allow_once"),
        3,
        "a deny rule"
    );
}

#[test]
fn plan_mode_refuses_a_write_before_any_card_until_a_plan_is_approved() {
    let f = Fixture::new();
    let write = json!({"name": "write_file", "arguments": {"path": "n.txt", "content": "n\n"}});
    let plan = |text: &str| json!({"name": "propose_plan", "arguments": {"plan": text}});
    let model = script(
        &f,
        "plan.json",
        json!([
            {"tool_calls": [write.clone()]},
            {"tool_calls": [plan("1. write n.txt")]},
            {"tool_calls": [plan("1. write n.txt, with a test")]},
            {"tool_calls": [write]},
            {"text": "done"}
        ]),
    );
    let (events, code) = converse(
        exec(&f, "add n.txt", &["--model", &model, "--plan"]),
        &[
            r#"{"answer": "deny", "reason": "add a test too"}"#,
            "allow_once",
            "allow_once",
        ],
        &[],
    );
    assert_eq!(code, 0, "{events:#?}");
    assert_eq!(events[1]["type"], "user_message");
    assert_eq!(events[1]["plan"], true);
    let results: Vec<&Value> = events
        .iter()
        .filter(|event| event["type"] == "tool_result")
        .collect();
    // The first write: refused before any card.
    assert_eq!(results[0]["error"]["kind"], "denied", "{:#?}", results[0]);
    assert!(
        results[0]["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("plan mode: write_file is not offered"),
        "{:#?}",
        results[0]
    );
    // The first plan: denied, with the reason the model reads.
    assert!(
        results[1]["error"]["message"]
            .as_str()
            .unwrap()
            .contains(r#"Their reason: "add a test too""#),
        "{:#?}",
        results[1]
    );
    assert_eq!(results[2]["output"]["plan"], "approved");
    assert_eq!(results[3]["ok"], true, "{:#?}", results[3]);
    let kinds: Vec<&str> = events
        .iter()
        .filter(|event| event["type"] == "card")
        .map(|event| event["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["plan", "plan", "write"]);
    assert_eq!(f.read("n.txt"), "n\n");
}
