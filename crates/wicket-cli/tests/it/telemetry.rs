//! OpenTelemetry through the binary: `wicket exec` exports to a test OTLP
//! receiver (tests/telemetry/receiver.py) that decodes each request with
//! the official opentelemetry-proto messages.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};

use crate::exec::{converse, exec, script};
use crate::*;

/// The receiver, stopped when dropped.
struct Receiver {
    child: Child,
    port: u16,
    out: PathBuf,
}

impl Receiver {
    fn start(f: &Fixture, hang: bool) -> Receiver {
        let tests = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/telemetry");
        let python = tests.join(".venv/bin/python");
        assert!(
            python.exists(),
            "the OTLP receiver's venv is missing: scripts/test.sh makes tests/telemetry/.venv"
        );
        let out = f.root.join("otlp.jsonl");
        let mut command = Command::new(python);
        command.arg(tests.join("receiver.py")).arg(&out);
        if hang {
            command.arg("hang");
        }
        let mut child = command.stdout(Stdio::piped()).spawn().unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line.trim().parse().unwrap();
        Receiver { child, port, out }
    }

    fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// What it decoded so far.
    fn got(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.out)
            .unwrap_or_default()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        // Already gone is as good.
        self.child.kill().ok();
        self.child.wait().ok();
    }
}

const PROMPT: &str = "PROMPT-MARK-7f3 please";
const REPLY: &str = "REPLY-MARK-9c1";
const ARGV: &str = "ARGV-MARK-4d2";

/// A turn with a card, a command and a hook: `run` answered allow_once,
/// a PreToolUse hook that passes, then a reply. Its exit code.
fn turn_with_a_card(f: &Fixture, endpoint: &str, log_content: bool) -> i32 {
    std::fs::write(
        f.home.join("config.toml"),
        format!(
            "[telemetry]\notlp_endpoint = \"{endpoint}\"\nlog_content = {log_content}\n\n[[hooks.pre_tool_use]]\nname = \"check\"\nmatcher = \"Bash\"\ncommand = [\"sh\", \"-c\", \"exit 0\"]\n"
        ),
    )
    .unwrap();
    let model = script(
        f,
        "otel.json",
        json!([
            {"tool_calls": [{"name": "run", "arguments": {"argv": ["echo", ARGV]}}]},
            {"text": REPLY}
        ]),
    );
    let (events, code) = converse(exec(f, PROMPT, &["--model", &model]), &["allow_once"], &[]);
    assert_eq!(code, 0, "{events:#?}");
    code
}

fn spans(got: &[Value]) -> Vec<&Value> {
    got.iter().filter(|item| item["kind"] == "span").collect()
}

fn named<'a>(spans: &[&'a Value], prefix: &str) -> &'a Value {
    spans
        .iter()
        .find(|span| span["name"].as_str().unwrap_or("").starts_with(prefix))
        .unwrap_or_else(|| panic!("no span {prefix}: {spans:#?}"))
}

#[test]
fn a_turn_is_one_trace_of_model_tool_command_and_hook_spans_without_content() {
    let f = Fixture::new();
    let receiver = Receiver::start(&f, false);
    turn_with_a_card(&f, &receiver.endpoint(), false);
    let got = receiver.got();
    let spans = spans(&got);
    let turn = named(&spans, "wicket.turn");
    let trace = turn["trace_id"].as_str().unwrap();
    assert!(
        spans.iter().all(|span| span["trace_id"] == trace),
        "{spans:#?}"
    );
    assert_eq!(turn["parent_span_id"], "");
    assert_eq!(turn["resource"]["service.name"], "wicket");
    assert_eq!(turn["attributes"]["wicket.outcome"], "result");

    // Two model requests, each with the GenAI attributes.
    let chats: Vec<_> = spans
        .iter()
        .filter(|span| span["name"].as_str().unwrap().starts_with("chat "))
        .collect();
    assert_eq!(chats.len(), 2, "{spans:#?}");
    for chat in &chats {
        assert_eq!(chat["parent_span_id"], turn["span_id"]);
        assert_eq!(chat["attributes"]["gen_ai.system"], "script");
        assert_eq!(chat["attributes"]["gen_ai.operation.name"], "chat");
        assert!(chat["attributes"]["gen_ai.request.model"].is_string());
        assert!(chat["start"].as_u64() <= chat["end"].as_u64());
    }

    // The call: decided by a card, answered allow_once, with the person's time.
    let tool = named(&spans, "wicket.tool run");
    assert_eq!(tool["parent_span_id"], turn["span_id"]);
    assert_eq!(tool["attributes"]["wicket.tool"], "run");
    assert_eq!(tool["attributes"]["wicket.decision"], "card");
    assert_eq!(tool["attributes"]["wicket.answer"], "allow_once");
    assert!(
        tool["attributes"]["wicket.person_ms"].is_i64()
            || tool["attributes"]["wicket.person_ms"].is_u64(),
        "{tool:#}"
    );

    // Its command and its hook, under it.
    let command = named(&spans, "wicket.command");
    assert_eq!(command["parent_span_id"], tool["span_id"]);
    assert_eq!(command["attributes"]["process.exit.code"], 0);
    assert!(
        command["attributes"]["wicket.sandbox.layers"].is_string(),
        "{command:#}"
    );
    let hook = named(&spans, "wicket.hook check");
    assert_eq!(hook["parent_span_id"], tool["span_id"]);
    assert_eq!(hook["attributes"]["wicket.hook.outcome"], "pass");

    // The metrics: the card by kind and answer, the command by exit status.
    let metric = |name: &str| -> Vec<&Value> {
        got.iter()
            .filter(|item| item["kind"] == "metric" && item["name"] == name)
            .collect()
    };
    let cards = metric("wicket.cards");
    assert_eq!(cards.len(), 1, "{got:#?}");
    assert_eq!(
        cards[0]["attributes"],
        json!({"kind": "run", "answer": "allow_once"})
    );
    assert_eq!(cards[0]["value"], 1);
    let commands = metric("wicket.commands");
    assert_eq!(commands[0]["attributes"]["exit_status"], "0");

    // No content left: not the prompt, the reply or the command's argv.
    let text = std::fs::read_to_string(&receiver.out).unwrap();
    for mark in [PROMPT, REPLY, ARGV] {
        assert!(!text.contains(mark), "{mark} was exported: {text}");
    }
}

#[test]
fn log_content_exports_the_prompt_reply_and_arguments() {
    let f = Fixture::new();
    let receiver = Receiver::start(&f, false);
    turn_with_a_card(&f, &receiver.endpoint(), true);
    let text = std::fs::read_to_string(&receiver.out).unwrap();
    for mark in [PROMPT, REPLY, ARGV] {
        assert!(text.contains(mark), "{mark} was not exported: {text}");
    }
}

/// A collector that is down, and one that never answers: the turn ends as
/// it would without them; the down one's lost spans are said once in the log.
#[test]
fn a_collector_down_or_stuck_never_fails_a_turn() {
    let f = Fixture::new();
    // A port nothing listens on: bound, then closed.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    turn_with_a_card(&f, &format!("http://127.0.0.1:{port}"), false);
    let sessions: Vec<_> = std::fs::read_dir(f.home.join("sessions"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let log = f.log(&sessions[0]);
    let notices: Vec<_> = log
        .iter()
        .filter(|event| event["type"] == "notice" && event["key"] == "telemetry")
        .collect();
    assert_eq!(notices.len(), 1, "{log:#?}");
    assert!(
        notices[0]["message"]
            .as_str()
            .unwrap()
            .contains("could not be sent"),
        "{notices:#?}"
    );

    let stuck = Fixture::new();
    let receiver = Receiver::start(&stuck, true);
    turn_with_a_card(&stuck, &receiver.endpoint(), false);
}

/// A sub-task's turn is a child span of the parent's `task` call, in the
/// parent's trace.
#[test]
fn a_sub_tasks_turn_is_a_child_of_its_task_call() {
    let f = Fixture::new();
    let receiver = Receiver::start(&f, false);
    std::fs::write(
        f.home.join("config.toml"),
        format!("[telemetry]\notlp_endpoint = \"{}\"\n", receiver.endpoint()),
    )
    .unwrap();
    let model = script(
        &f,
        "task.json",
        json!({
            "replies": [
                {"tool_calls": [{"name": "task", "arguments": {"description": "look", "prompt": "TASK-A"}}]},
                {"text": "done"}
            ],
            "tasks": {"TASK-A": [
                {"tool_calls": [{"name": "read_file", "arguments": {"path": "a.txt"}}]},
                {"tool_calls": [{"name": "finish", "arguments": {"result": "alpha"}}]}
            ]}
        }),
    );
    let (events, code) = converse(exec(&f, "go", &["--model", &model]), &[], &[]);
    assert_eq!(code, 0, "{events:#?}");
    let got = receiver.got();
    let spans = spans(&got);
    let task = named(&spans, "wicket.tool task");
    let turns: Vec<_> = spans
        .iter()
        .filter(|span| span["name"] == "wicket.turn")
        .collect();
    assert_eq!(turns.len(), 2, "{spans:#?}");
    let child = turns
        .iter()
        .find(|turn| turn["parent_span_id"] != "")
        .unwrap();
    assert_eq!(child["parent_span_id"], task["span_id"]);
    assert_eq!(child["trace_id"], task["trace_id"]);
    let read = named(&spans, "wicket.tool read_file");
    assert_eq!(read["parent_span_id"], child["span_id"]);
    assert_eq!(read["attributes"]["wicket.decision"], "free");
}

const TOOL_MARK: &str = "TOOLNAME-MARK-1b5";
const HOST_MARK: &str = "host-mark-3e8.invalid";

/// What the model writes and a command asks for are content: a tool name
/// of the model's own and the hosts a command asked for leave only with
/// `log_content`.
#[test]
fn a_tool_name_the_model_made_up_and_the_hosts_a_command_asked_for_are_content() {
    if !wicket_test_support::net::have("curl") {
        return;
    }
    for log_content in [false, true] {
        let f = Fixture::new();
        let receiver = Receiver::start(&f, false);
        std::fs::write(
            f.home.join("config.toml"),
            format!(
                "[telemetry]\notlp_endpoint = \"{}\"\nlog_content = {log_content}\n",
                receiver.endpoint()
            ),
        )
        .unwrap();
        let model = script(
            &f,
            "content.json",
            json!([
                {"tool_calls": [
                    {"name": TOOL_MARK, "arguments": {}},
                    {"name": "run", "arguments": {
                        "argv": ["curl", "-s", "-m", "5", format!("http://{HOST_MARK}/")],
                        "network": true
                    }}
                ]},
                {"text": "done"}
            ]),
        );
        // The run card allowed, the host's card denied: the host is still
        // what the command asked for.
        let (events, code) = converse(
            exec(&f, "go", &["--model", &model]),
            &["allow_once", "deny"],
            &[],
        );
        assert_eq!(code, 0, "{events:#?}");
        let command = named(&spans(&receiver.got()), "wicket.command").clone();
        let text = std::fs::read_to_string(&receiver.out).unwrap();
        for mark in [TOOL_MARK, HOST_MARK] {
            assert_eq!(
                text.contains(mark),
                log_content,
                "{mark} with log_content = {log_content}: {text}"
            );
        }
        if !log_content {
            let unknown = named(&spans(&receiver.got()), "wicket.tool unknown").clone();
            assert_eq!(unknown["attributes"]["wicket.tool"], "unknown");
            assert!(command["attributes"].get("wicket.net.hosts").is_none());
        }
    }
}

/// A collector whose answer never ends costs a bounded read: Wicket stops
/// reading at 64 KiB and lets the connection go.
#[test]
fn a_collector_that_answers_without_end_is_read_64_kib_at_most() {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    let written = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let most = written.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let most = most.clone();
            std::thread::spawn(move || {
                let mut head = [0; 65536];
                // The request, then an endless 200 (no length: to the close).
                let _ = stream.read(&mut head);
                if stream
                    .write_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\nConnection: close\r\n\r\n")
                    .is_err()
                {
                    return;
                }
                let chunk = vec![0u8; 64 * 1024];
                let mut sent = 0u64;
                while stream.write_all(&chunk).is_ok() {
                    sent += chunk.len() as u64;
                    most.fetch_max(sent, std::sync::atomic::Ordering::SeqCst);
                }
            });
        }
    });
    let f = Fixture::new();
    turn_with_a_card(&f, &endpoint, false);
    let sent = written.load(std::sync::atomic::Ordering::SeqCst);
    // What the kernel's buffers hold on both sides comes on top of the 64 KiB read.
    assert!(
        sent < 64 * 1024 * 1024,
        "the collector wrote {sent} bytes into one answer"
    );
}
