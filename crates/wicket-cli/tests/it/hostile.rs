//! Hostile input (issue 36): what a broken or hostile model server, a
//! damaged session folder or a careless argument does to the real binary.
//! Each test asserts the outcome (the turn ends with an error, the line is
//! still there, the process exits), not only that nothing panicked.

use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wicket_fake::{FakeReply, FakeServer, Step, Wire};

use crate::exec::{exec, script};
use crate::{Fixture, ToolRunner, ending, lines, wicket};

/// Far past anything these commands take: only a hang reaches it.
const HANG: Duration = Duration::from_secs(60);

/// Runs `command` with no stdin; its output, or a failure naming the hang.
fn within(mut command: Command, patience: Duration) -> Output {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + patience;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("{command:?} was still running after {patience:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A session made by one scripted turn; its id and log path.
fn session(f: &Fixture) -> (String, PathBuf) {
    let model = script(f, "hello.json", json!([{"text": "hello"}]));
    let output = exec(f, "hi", &["--model", &model, "--json", "--answers", "deny"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let id = lines(&output)[0]["session"].as_str().unwrap().to_string();
    let log = f.home.join("sessions").join(&id).join("log.jsonl");
    (id, log)
}

fn last_seq(log: &std::path::Path) -> u64 {
    let text = std::fs::read_to_string(log).unwrap();
    let last: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    last["seq"].as_u64().unwrap()
}

fn append(path: &std::path::Path, bytes: &[u8]) {
    std::fs::OpenOptions::new()
        .append(true)
        .open(path)
        .unwrap()
        .write_all(bytes)
        .unwrap();
}

/// Finding 1: a `tool_calls[].index` from the server sized a vector; 2^32
/// aborted the process (and every session of `wicket serve`). Now each
/// index past the bound ends the turn with a protocol error, and the
/// process exits as any failed turn does.
#[test]
fn a_tool_call_index_past_the_bound_ends_the_turn_never_the_process() {
    let f = Fixture::new();
    let fake = FakeServer::start(Wire::OpenAi);
    let indices = [u64::MAX, (1 << 63) - 1, 1 << 32, 1 << 31, 100_000_000, 256];
    for index in indices {
        fake.push(Step::raw_data([
            json!({"choices": [{"delta": {"tool_calls": [{"index": index, "id": "c",
                "function": {"name": "read_file", "arguments": "{}"}}]}}]})
            .to_string(),
            "[DONE]".to_string(),
        ]));
    }
    for index in indices {
        let mut command = exec(
            &f,
            "go",
            &["--model", "openai:gpt-test", "--json", "--answers", "deny"],
        );
        command
            .env("OPENAI_BASE_URL", fake.base_url())
            .env("OPENAI_API_KEY", "test-key");
        let output = within(command, HANG);
        assert_eq!(output.status.signal(), None, "index {index}: killed");
        assert_eq!(output.status.code(), Some(1), "index {index}");
        let events = lines(&output);
        let error = ending(&events);
        assert_eq!(error["type"], "error", "{events:#?}");
        let message = error["message"].as_str().unwrap();
        assert!(
            message.contains(&format!("numbered a tool call {index}")),
            "{message}"
        );
    }
}

/// The same against Anthropic's stream: more content blocks than a reply
/// may hold end the turn with a protocol error.
#[test]
fn an_anthropic_stream_of_endless_blocks_ends_the_turn() {
    let f = Fixture::new();
    let fake = FakeServer::start(Wire::Anthropic);
    let mut events = vec![
        json!({"type": "message_start", "message": {"usage": {"input_tokens": 1}}}).to_string(),
    ];
    events.extend((0..1000).map(|index| {
        json!({"type": "content_block_start", "index": index,
            "content_block": {"type": "tool_use", "id": format!("t{index}"), "name": "read_file"}})
        .to_string()
    }));
    events.push(json!({"type": "message_stop"}).to_string());
    fake.push(Step::raw_data(events));
    let mut command = exec(
        &f,
        "go",
        &[
            "--model",
            "anthropic:claude-test",
            "--json",
            "--answers",
            "deny",
        ],
    );
    command
        .env("ANTHROPIC_BASE_URL", fake.base_url())
        .env("ANTHROPIC_API_KEY", "test-key");
    let output = within(command, HANG);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let events = lines(&output);
    let error = ending(&events);
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("content blocks a reply may hold"),
        "{error}"
    );
    assert!(!events.iter().any(|event| event["type"] == "tool_call"));
}

/// Under `wicket serve`, the broken stream ends its own turn; the server
/// stays up and another session's turn runs to its result.
#[test]
fn a_broken_stream_under_serve_ends_one_turn_and_the_server_stays_up() {
    let f = Fixture::new();
    let fake = FakeServer::start(Wire::OpenAi);
    fake.push(Step::raw_data([
        json!({"choices": [{"delta": {"tool_calls": [{"index": 1u64 << 32}]}}]}).to_string(),
        "[DONE]".to_string(),
    ]));
    fake.push(Step::Reply(FakeReply::text("still here")));
    let env = [
        ("OPENAI_BASE_URL", fake.base_url()),
        ("OPENAI_API_KEY", "test-key".to_string()),
    ];
    let served = crate::serve::serve_with(&f, &env);
    let api = &served.api;
    let open = || {
        api.post(
            "/api/sessions",
            json!({"workspace": f.ws, "model": "openai:gpt-test"}),
        )
        .body["id"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let (first, second) = (open(), open());
    api.post(
        &format!("/api/sessions/{first}/messages"),
        json!({"text": "go"}),
    );
    let ended = api
        .events(&first, 0, None)
        .find(|event| event["type"] == "turn_ended")
        .unwrap();
    assert_eq!(ended["outcome"], "error");
    let sent = api.post(
        &format!("/api/sessions/{second}/messages"),
        json!({"text": "go"}),
    );
    assert_eq!(sent.body["state"], "started", "{:?}", sent.body);
    let result = api
        .events(&second, 0, None)
        .find(|event| event["type"] == "result")
        .unwrap();
    assert_eq!(result["text"], "still here");
    assert_eq!(api.get("/api/sessions").status, 200);
}

/// Finding 2: a complete last line Wicket cannot read (an event from a
/// newer Wicket, a missing field, JSON nested past 128) was taken for a
/// torn one and overwritten. Now it is kept: `wicket log` shows it,
/// `rewind --list` and the next turn leave it, and appends go after it.
#[test]
fn a_complete_line_wicket_cannot_read_is_never_overwritten() {
    let deep = format!("{}1{}", "[".repeat(200), "]".repeat(200));
    let kinds = [
        r#""type":"from_a_newer_wicket","what":1"#.to_string(),
        r#""type":"error""#.to_string(),
        format!(r#""type":"error","message":{deep}"#),
    ];
    for kind in kinds {
        let f = Fixture::new();
        let (id, log) = session(&f);
        let seq = last_seq(&log) + 1;
        let line = format!("{{\"seq\":{seq},\"ts\":\"2026-12-06T00:00:00Z\",{kind}}}\n");
        append(&log, line.as_bytes());

        let mut shown = wicket();
        shown.env("WICKET_HOME", &f.home).args(["log", &id]);
        let output = within(shown, HANG);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        let text = String::from_utf8_lossy(&output.stdout);
        assert!(text.contains("unreadable line"), "{text}");

        let mut list = wicket();
        list.env("WICKET_HOME", &f.home)
            .args(["rewind", &id, "--list"]);
        within(list, HANG);
        assert!(std::fs::read_to_string(&log).unwrap().ends_with(&line));

        let model = script(
            &f,
            "again.json",
            json!([{"text": "hello"}, {"text": "again"}]),
        );
        let output = within(
            {
                let mut command = exec(
                    &f,
                    "more",
                    &[
                        "--model",
                        &model,
                        "--session",
                        &id,
                        "--json",
                        "--answers",
                        "deny",
                    ],
                );
                command.env_remove("WICKET_MODEL");
                command
            },
            HANG,
        );
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        let events = lines(&output);
        assert_eq!(ending(&events)["type"], "result");
        let notice = events
            .iter()
            .find(|event| event["type"] == "notice")
            .expect("a notice that a line was left out");
        assert!(
            notice["message"]
                .as_str()
                .unwrap()
                .contains("could not be read"),
            "{notice}"
        );
        let after = std::fs::read_to_string(&log).unwrap();
        let at = after.find(&line).expect("the line is still there");
        let rest = &after[at + line.len()..];
        let first: Value = serde_json::from_str(rest.lines().next().unwrap()).unwrap();
        assert!(first["seq"].as_u64().unwrap() > seq, "{first}");
    }
}

/// Finding 3: a seq at u64::MAX wrapped to 0, and `exec --session` never
/// returned. Now the session is refused at once with an error naming it,
/// and the log is left as it was.
#[test]
fn a_seq_that_cannot_grow_is_an_error_naming_the_session() {
    let f = Fixture::new();
    let (id, log) = session(&f);
    let line = format!(
        "{{\"seq\":{},\"ts\":\"2026-12-06T00:00:00Z\",\"type\":\"error\",\"message\":\"m\"}}\n",
        u64::MAX
    );
    append(&log, line.as_bytes());
    let before = std::fs::read(&log).unwrap();
    let model = script(
        &f,
        "again.json",
        json!([{"text": "hello"}, {"text": "again"}]),
    );
    let output = within(
        exec(
            &f,
            "more",
            &["--model", &model, "--session", &id, "--answers", "deny"],
        ),
        HANG,
    );
    assert_ne!(output.status.code(), Some(0));
    let said = stderr(&output);
    assert!(said.contains(&format!("session '{id}'")), "{said}");
    assert!(said.contains("cannot take another event"), "{said}");
    assert_eq!(std::fs::read(&log).unwrap(), before);
}

/// Finding 5: a FIFO in place of `log.jsonl` or `meta.json` blocked every
/// command that read it. Now each refuses it at once, naming the file.
#[test]
fn a_fifo_in_place_of_a_session_file_is_refused_never_waited_on() {
    for name in ["log.jsonl", "meta.json"] {
        let f = Fixture::new();
        let (id, log) = session(&f);
        let file = log.with_file_name(name);
        std::fs::remove_file(&file).unwrap();
        rustix::fs::mkfifoat(
            rustix::fs::CWD,
            &file,
            rustix::fs::Mode::from_raw_mode(0o600),
        )
        .unwrap();
        let model = script(
            &f,
            "again.json",
            json!([{"text": "hello"}, {"text": "again"}]),
        );
        let home = |args: &[&str]| {
            let mut command = wicket();
            command
                .env("WICKET_HOME", &f.home)
                .env("NO_COLOR", "1")
                .args(args);
            command
        };
        let mut commands = vec![
            home(&["log", &id]),
            home(&["policy", "check", &id]),
            home(&["rewind", &id, "--list"]),
            exec(
                &f,
                "more",
                &["--model", &model, "--session", &id, "--answers", "deny"],
            ),
            f.command("read_file", r#"{"path":"a.txt"}"#, &["--session", &id]),
        ];
        if name == "meta.json" {
            commands.push(home(&["grants", "--session", &id]));
        }
        for command in commands {
            let shown = format!("{command:?}");
            let output = within(command, HANG);
            assert_ne!(output.status.code(), Some(0), "{shown}");
            let said = format!(
                "{}{}",
                stderr(&output),
                String::from_utf8_lossy(&output.stdout)
            );
            assert!(said.contains("is a FIFO"), "{shown}: {said}");
            assert_eq!(said.matches("is a FIFO").count(), 1, "said once: {said}");
            assert!(said.contains(name), "{shown}: {said}");
        }
        // `wicket sessions` lists what it can read, and returns.
        let output = within(home(&["sessions"]), HANG);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    }
}

/// Finding 6: a 1 GiB sparse log was read whole (about 1 GB of memory).
/// Now it is read streaming: under a 1 GiB address-space limit `wicket log`
/// shows the line as unreadable, and the next turn appends after it.
#[test]
fn a_one_gib_sparse_log_is_read_in_bounded_memory() {
    let f = Fixture::new();
    let (id, log) = session(&f);
    let file = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
    let length = file.metadata().unwrap().len();
    file.set_len(length + (1 << 30)).unwrap();
    append(&log, b"\n");
    let bounded = |args: &str| {
        let mut command = Command::new("sh");
        command
            .env("WICKET_HOME", &f.home)
            .env("NO_COLOR", "1")
            .env_remove("WICKET_MODEL")
            .args(["-c", &format!("ulimit -v 1048576 && exec \"$0\" {args}")])
            .arg(env!("CARGO_BIN_EXE_wicket"));
        command
    };
    let output = within(bounded(&format!("log {id}")), HANG);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("never written"), "{text}");

    let model = script(
        &f,
        "again.json",
        json!([{"text": "hello"}, {"text": "again"}]),
    );
    let output = within(
        bounded(&format!(
            "exec more --model {model} --session {id} --answers deny --workspace {}",
            f.ws.display()
        )),
        HANG,
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(std::fs::metadata(&log).unwrap().len() > length + (1 << 30));
}

/// Finding 7: a context window of 2^63 overflowed the 80 % threshold to 0,
/// so every step compacted first. Now such a window is unknown, and a
/// small conversation goes to the model once, uncompacted.
#[test]
fn a_window_past_any_real_model_is_unknown_not_an_overflow() {
    let f = Fixture::new();
    std::fs::write(
        f.home.join("config.toml"),
        "[models.\"openai:gpt-test\"]\ncontext_window = 9223372036854775808\n",
    )
    .unwrap();
    let fake = FakeServer::start(Wire::OpenAi);
    fake.push(Step::Reply(FakeReply::text("fits")));
    let mut command = exec(
        &f,
        "hi",
        &["--model", "openai:gpt-test", "--json", "--answers", "deny"],
    );
    command
        .env("OPENAI_BASE_URL", fake.base_url())
        .env("OPENAI_API_KEY", "test-key");
    let output = within(command, HANG);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let events = lines(&output);
    assert_eq!(ending(&events)["text"], "fits");
    assert!(!events.iter().any(|event| event["type"] == "compacted"));
    let posts = fake
        .requests()
        .into_iter()
        .filter(|request| request.method == "POST")
        .count();
    assert_eq!(posts, 1);
}

/// Finding 8: `wicket tool NAME @FILE` with a missing or non-UTF-8 file
/// printed no result line and exited 1. Now it is bad usage: one result
/// line with `invalid_args`, and exit 2.
#[test]
fn a_missing_or_non_utf8_arguments_file_is_bad_usage_with_a_result_line() {
    let f = Fixture::new();
    let binary = f.home.join("binary.json");
    std::fs::write(&binary, b"{\"path\": \"a\xff.txt\"}").unwrap();
    for (file, says) in [
        (f.home.join("absent.json"), "cannot be read"),
        (binary, "not UTF-8"),
    ] {
        let (out, code) = f.tool("read_file", &format!("@{}", file.display()), &[]);
        assert_eq!(code, 2, "{out:?}");
        assert_eq!(out.len(), 1, "{out:?}");
        assert_eq!(out[0]["type"], "result");
        assert_eq!(out[0]["ok"], false);
        assert_eq!(out[0]["error"]["kind"], "invalid_args");
        assert!(
            out[0]["error"]["message"].as_str().unwrap().contains(says),
            "{out:?}"
        );
    }
}

/// Finding 9: a reply of 2,000 calls ran them all, every step. Now the
/// reply is refused whole: none runs, the model reads why in each kept
/// call's result, the log keeps 64 of them, and the turn goes on.
#[test]
fn a_reply_past_the_call_cap_is_refused_and_the_turn_goes_on() {
    let f = Fixture::new();
    let calls: Vec<Value> = (0..2000)
        .map(|_| json!({"name": "write_file", "arguments": {"path": "x.txt", "content": "x"}}))
        .collect();
    let model = script(
        &f,
        "many.json",
        json!([{"tool_calls": calls}, {"text": "fewer then"}]),
    );
    let output = within(
        exec(
            &f,
            "go",
            &["--model", &model, "--json", "--answers", "allow_once"],
        ),
        HANG,
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let events = lines(&output);
    assert_eq!(ending(&events)["text"], "fewer then");
    let reply = events
        .iter()
        .find(|event| event["type"] == "assistant_message")
        .unwrap();
    assert_eq!(reply["tool_calls"].as_array().unwrap().len(), 64);
    let results: Vec<&Value> = events
        .iter()
        .filter(|event| event["type"] == "tool_result")
        .collect();
    assert_eq!(results.len(), 64);
    for result in results {
        assert_eq!(result["error"]["kind"], "invalid_args");
        assert!(
            result["error"]["message"]
                .as_str()
                .unwrap()
                .contains("asked for 2000 tool calls"),
            "{result}"
        );
    }
    assert!(!events.iter().any(|event| event["type"] == "card"));
    assert!(!f.ws.join("x.txt").exists());
    assert!(events.iter().any(|event| {
        event["type"] == "error"
            && event["message"]
                .as_str()
                .unwrap()
                .contains("2000 tool calls")
    }));
}

/// Finding 4: SIGTERM to `wicket serve` with a queued message started the
/// queued turn during shutdown, and the server never exited. Now it starts
/// nothing: it exits within 5 s, the model saw one request, and the log
/// closes the turn and says the queued message did not run.
#[test]
fn sigterm_with_a_queued_message_starts_nothing_and_exits_within_5_s() {
    let f = Fixture::new();
    let fake = FakeServer::start(Wire::OpenAi);
    fake.push(Step::Stall {
        reply: FakeReply::text("never finished"),
        events: 1,
    });
    fake.push(Step::Reply(FakeReply::text("must not be asked")));
    let env = [
        ("OPENAI_BASE_URL", fake.base_url()),
        ("OPENAI_API_KEY", "test-key".to_string()),
    ];
    let mut served = crate::serve::serve_with(&f, &env);
    let api = &served.api;
    let id = api
        .post(
            "/api/sessions",
            json!({"workspace": f.ws, "model": "openai:gpt-test"}),
        )
        .body["id"]
        .as_str()
        .unwrap()
        .to_string();
    let first = api.post(
        &format!("/api/sessions/{id}/messages"),
        json!({"text": "one"}),
    );
    assert_eq!(first.body["state"], "started");
    assert!(wicket_test_support::process::wait_until(
        Duration::from_secs(20),
        || fake
            .requests()
            .iter()
            .any(|request| request.method == "POST")
    ));
    let second = api.post(
        &format!("/api/sessions/{id}/messages"),
        json!({"text": "two"}),
    );
    assert_eq!(second.body["state"], "queued");
    let asked = Instant::now();
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(served.child.id() as i32).unwrap(),
        rustix::process::Signal::TERM,
    )
    .unwrap();
    let status = loop {
        if let Some(status) = served.child.try_wait().unwrap() {
            break status;
        }
        assert!(
            asked.elapsed() < Duration::from_secs(5),
            "wicket serve still runs 5 s after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(0));
    let posts = fake
        .requests()
        .into_iter()
        .filter(|request| request.method == "POST")
        .count();
    assert_eq!(posts, 1, "the queued message started a turn");
    let log = f.log(&id);
    let types: Vec<&str> = log.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert!(types.contains(&"queued"), "{types:?}");
    let ended = log.iter().rposition(|e| e["type"] == "turn_ended").unwrap();
    assert_eq!(log[ended]["outcome"], "cancelled", "{log:#?}");
    assert_eq!(
        log.iter().filter(|e| e["type"] == "user_message").count(),
        1,
        "{types:?}"
    );
    let notice = log
        .iter()
        .rposition(|e| {
            e["type"] == "notice" && e["message"].as_str().unwrap().contains("did not run")
        })
        .expect("a notice that the queued message did not run");
    // The turn's `turn_ended` stays its last event: the notice comes before it.
    assert!(notice < ended, "{log:#?}");
    assert_eq!(f.meta(&id)["status"], "idle");
}
