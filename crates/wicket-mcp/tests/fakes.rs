//! The hub against in-process fake servers for the ways a server fails:
//! one that never answers `initialize`, one that dies mid-call, one that
//! answers with bytes that are not JSON, one with 500 tools, one whose tool
//! names collide. Each fake speaks newline-delimited JSON-RPC over an
//! in-memory pipe, as a stdio server does over its pipes.
#![allow(clippy::unwrap_used, missing_docs)]

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use wicket_mcp::connection::Connection;
use wicket_mcp::hub::Connector;
use wicket_mcp::{Approval, Hub, ServerSpec, Transport};
use wicket_os::Cancel;
use wicket_protocol::{ErrorKind, McpContent, McpState};

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    /// Answers everything; `echo` echoes.
    Good,
    /// Reads, never answers.
    Silent,
    /// Exits (closes its pipe) when a tool is called.
    DiesOnCall,
    /// Answers a call with a line that is not JSON.
    NotJson,
    /// Never answers a call (for cancel).
    Hangs,
}

/// What a fake saw.
#[derive(Default)]
struct Seen {
    starts: usize,
    cancelled: Vec<Value>,
}

struct Fake {
    mode: Mode,
    tools: Vec<String>,
    seen: Arc<Mutex<Seen>>,
}

fn reply(id: &Value, result: Value) -> String {
    format!(
        "{}\n",
        json!({"jsonrpc": "2.0", "id": id, "result": result})
    )
}

async fn serve(fake: Arc<Fake>, stream: tokio::io::DuplexStream) {
    let (read, mut write) = tokio::io::split(stream);
    let mut lines = BufReader::new(read).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let Ok(message) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let id = message.get("id").cloned().unwrap_or(Value::Null);
        let method = message["method"].as_str().unwrap_or_default();
        let out = match method {
            "initialize" if fake.mode == Mode::Silent => continue,
            "initialize" => reply(
                &id,
                json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                       "serverInfo": {"name": "fake", "version": "1.0"}}),
            ),
            "tools/list" => {
                // Pages of 100, so the client must follow the cursor.
                let start: usize = message["params"]["cursor"]
                    .as_str()
                    .and_then(|cursor| cursor.parse().ok())
                    .unwrap_or(0);
                let page: Vec<Value> = fake.tools[start..]
                    .iter()
                    .take(100)
                    .map(|name| {
                        json!({"name": name, "description": format!("{name} {}", "d".repeat(3000)),
                               "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}},
                               "annotations": {"readOnlyHint": true}})
                    })
                    .collect();
                let mut result = json!({ "tools": page });
                if start + 100 < fake.tools.len() {
                    result["nextCursor"] = json!((start + 100).to_string());
                }
                reply(&id, result)
            }
            "tools/call" => match fake.mode {
                Mode::DiesOnCall => return,
                Mode::NotJson => "{this is not json\n".to_string(),
                Mode::Hangs => continue,
                Mode::Good | Mode::Silent => {
                    let text = message["params"]["arguments"]["message"]
                        .as_str()
                        .unwrap_or_default();
                    reply(
                        &id,
                        json!({"content": [{"type": "text", "text": format!("Echo: {text}")}]}),
                    )
                }
            },
            "notifications/cancelled" => {
                fake.seen
                    .lock()
                    .unwrap()
                    .cancelled
                    .push(message["params"].clone());
                continue;
            }
            _ if message.get("id").is_some() => reply(&id, json!({})),
            _ => continue,
        };
        if write.write_all(out.as_bytes()).await.is_err() {
            return;
        }
    }
}

fn connector(fakes: Vec<(&str, Arc<Fake>)>) -> Connector {
    let fakes: Vec<(String, Arc<Fake>)> = fakes
        .into_iter()
        .map(|(name, fake)| (name.to_string(), fake))
        .collect();
    Arc::new(move |spec: ServerSpec, _launch| {
        let fake = fakes
            .iter()
            .find(|(name, _)| *name == spec.name)
            .map(|(_, fake)| fake.clone())
            .unwrap();
        Box::pin(async move {
            fake.seen.lock().unwrap().starts += 1;
            let (client, server) = tokio::io::duplex(1 << 20);
            tokio::spawn(serve(fake, server));
            let (read, write) = tokio::io::split(client);
            Connection::over(read, write, spec.startup_timeout).await
        })
    })
}

fn fake(mode: Mode, tools: &[&str]) -> Arc<Fake> {
    Arc::new(Fake {
        mode,
        tools: tools.iter().map(|tool| tool.to_string()).collect(),
        seen: Arc::default(),
    })
}

fn spec(name: &str) -> ServerSpec {
    ServerSpec {
        name: name.into(),
        transport: Transport::Http {
            url: "http://127.0.0.1:9/mcp".into(),
            headers: Vec::new(),
        },
        enabled: true,
        enabled_tools: None,
        disabled_tools: BTreeSet::new(),
        auto_allow: BTreeSet::new(),
        startup_timeout: Duration::from_secs(1),
        tool_timeout: Duration::from_secs(1),
        from_workspace: false,
        fails: None,
    }
}

struct Setup {
    _runtime: tokio::runtime::Runtime,
    hub: Hub,
}

fn hub(specs: Vec<ServerSpec>, fakes: Vec<(&str, Arc<Fake>)>) -> (Setup, Vec<wicket_mcp::Report>) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let hub = Hub::with_connector(runtime.handle().clone(), connector(fakes));
    let names: Vec<String> = specs.iter().map(|spec| spec.name.clone()).collect();
    hub.configure(specs);
    hub.begin_turn();
    let reports = hub.start(
        names
            .into_iter()
            .map(|name| (name, Approval::Connect))
            .collect(),
    );
    (
        Setup {
            _runtime: runtime,
            hub,
        },
        reports,
    )
}

fn args(message: &str) -> serde_json::Map<String, Value> {
    json!({ "message": message }).as_object().unwrap().clone()
}

#[test]
fn a_server_that_never_answers_initialize_fails_alone() {
    let (setup, reports) = hub(
        vec![spec("silent"), spec("good")],
        vec![
            ("silent", fake(Mode::Silent, &[])),
            ("good", fake(Mode::Good, &["echo"])),
        ],
    );
    let silent = reports.iter().find(|r| r.server == "silent").unwrap();
    assert_eq!(silent.state, McpState::Failed);
    assert!(
        silent
            .message
            .contains("did not answer `initialize` within 1 s"),
        "{}",
        silent.message
    );
    let good = reports.iter().find(|r| r.server == "good").unwrap();
    assert_eq!(good.state, McpState::Started, "{}", good.message);
    assert!(
        good.message.contains("protocol 2025-11-25"),
        "{}",
        good.message
    );
    let offered: Vec<String> = setup.hub.offered().into_iter().map(|o| o.name).collect();
    assert_eq!(offered, ["mcp__good__echo"]);
    let (result, _) = setup
        .hub
        .call("good", "echo", args("hi"), &Cancel::default());
    assert_eq!(
        result.unwrap().content,
        vec![McpContent::Text {
            text: "Echo: hi".into()
        }]
    );
    let (result, _) = setup
        .hub
        .call("silent", "echo", args("hi"), &Cancel::default());
    assert_eq!(result.unwrap_err().kind, ErrorKind::Mcp);
}

#[test]
fn a_server_that_dies_mid_call_is_restarted_once_per_turn() {
    let dies = fake(Mode::DiesOnCall, &["echo"]);
    let (setup, reports) = hub(vec![spec("flaky")], vec![("flaky", dies.clone())]);
    assert_eq!(reports[0].state, McpState::Started);

    let (result, reports) = setup
        .hub
        .call("flaky", "echo", args("1"), &Cancel::default());
    let error = result.unwrap_err();
    assert_eq!(error.kind, ErrorKind::Mcp);
    assert!(
        error.message.contains("stopped during the call to echo"),
        "{}",
        error.message
    );
    assert!(error.message.contains("started again"), "{}", error.message);
    let states: Vec<McpState> = reports.iter().map(|r| r.state).collect();
    assert_eq!(states, [McpState::Died, McpState::Restarted]);
    assert_eq!(dies.seen.lock().unwrap().starts, 2);

    // Dies again in the same turn: it stays down.
    let (result, reports) = setup
        .hub
        .call("flaky", "echo", args("2"), &Cancel::default());
    assert!(result.unwrap_err().message.contains("stays down"));
    let states: Vec<McpState> = reports.iter().map(|r| r.state).collect();
    assert_eq!(states, [McpState::Died]);
    let (result, reports) = setup
        .hub
        .call("flaky", "echo", args("3"), &Cancel::default());
    assert!(result.is_err());
    assert!(reports.is_empty());
    assert_eq!(dies.seen.lock().unwrap().starts, 2);

    // The next turn may bring it back once more.
    setup.hub.begin_turn();
    let (_, reports) = setup
        .hub
        .call("flaky", "echo", args("4"), &Cancel::default());
    assert_eq!(reports[0].state, McpState::Restarted);
    assert_eq!(dies.seen.lock().unwrap().starts, 3);
}

#[test]
fn a_reply_that_is_not_json_ends_in_the_tool_timeout_and_the_server_stays_usable() {
    let (setup, _) = hub(
        vec![spec("garbled")],
        vec![("garbled", fake(Mode::NotJson, &["echo"]))],
    );
    let (result, reports) = setup
        .hub
        .call("garbled", "echo", args("x"), &Cancel::default());
    let error = result.unwrap_err();
    assert!(
        error
            .message
            .contains("did not answer within 1 s (tool_timeout_s)"),
        "{}",
        error.message
    );
    assert!(reports.is_empty());
    assert_eq!(setup.hub.running().len(), 1);
}

#[test]
fn five_hundred_tools_are_all_offered_with_short_descriptions() {
    let names: Vec<String> = (0..500).map(|i| format!("tool{i}")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let (setup, reports) = hub(vec![spec("big")], vec![("big", fake(Mode::Good, &names))]);
    assert!(
        reports[0]
            .message
            .starts_with("500 tools offered of 500 listed"),
        "{}",
        reports[0].message
    );
    let offered = setup.hub.offered();
    assert_eq!(offered.len(), 500);
    let unique: BTreeSet<&str> = offered.iter().map(|o| o.name.as_str()).collect();
    assert_eq!(unique.len(), 500);
    assert!(
        offered
            .iter()
            .all(|o| o.description.len() <= 1024 + '…'.len_utf8())
    );
    assert_eq!(offered[0].annotations, Some(json!({"readOnlyHint": true})));
    assert_eq!(setup.hub.find("mcp__big__tool499").unwrap().tool, "tool499");
}

#[test]
fn tools_whose_names_collide_are_refused_naming_both() {
    let (setup, reports) = hub(
        vec![spec("clash")],
        vec![(
            "clash",
            fake(Mode::Good, &["read.file", "read_file", "other"]),
        )],
    );
    let message = &reports[0].message;
    assert!(
        message.contains("'read.file' and 'read_file' would both be named mcp__clash__read_file"),
        "{message}"
    );
    let offered: Vec<String> = setup.hub.offered().into_iter().map(|o| o.tool).collect();
    assert_eq!(offered, ["read.file", "other"]);
}

#[test]
fn enabled_and_disabled_tools_filter_what_is_offered() {
    let mut only = spec("only");
    only.enabled_tools = Some(["a".to_string(), "b".to_string()].into());
    only.disabled_tools = ["b".to_string()].into();
    let (setup, _) = hub(
        vec![only],
        vec![("only", fake(Mode::Good, &["a", "b", "c"]))],
    );
    let offered: Vec<String> = setup.hub.offered().into_iter().map(|o| o.tool).collect();
    assert_eq!(offered, ["a"]);
}

#[test]
fn a_disabled_server_is_never_started_and_offers_nothing() {
    let off = fake(Mode::Good, &["a"]);
    let on = fake(Mode::Good, &["b"]);
    let mut disabled = spec("off");
    disabled.enabled = false;
    let (setup, reports) = hub(
        vec![disabled, spec("on")],
        vec![("off", off.clone()), ("on", on.clone())],
    );
    assert_eq!(off.seen.lock().unwrap().starts, 0, "{reports:?}");
    assert_eq!(on.seen.lock().unwrap().starts, 1, "{reports:?}");
    assert!(setup.hub.pending().is_empty());
    let offered: Vec<String> = setup.hub.offered().into_iter().map(|o| o.tool).collect();
    assert_eq!(offered, ["b"]);
}

#[test]
fn cancel_stops_waiting_and_tells_the_server() {
    let hangs = fake(Mode::Hangs, &["echo"]);
    let mut slow = spec("slow");
    slow.tool_timeout = Duration::from_secs(600);
    let (setup, _) = hub(vec![slow], vec![("slow", hangs.clone())]);
    let cancel = Cancel::default();
    let trigger = cancel.clone();
    let canceller = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        trigger.cancel();
    });
    let (result, _) = setup.hub.call("slow", "echo", args("x"), &cancel);
    canceller.join().unwrap();
    assert_eq!(result.unwrap_err().kind, ErrorKind::Cancelled);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while hangs.seen.lock().unwrap().cancelled.is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let cancelled = hangs.seen.lock().unwrap().cancelled.clone();
    assert_eq!(cancelled.len(), 1, "{cancelled:?}");
    assert!(cancelled[0].get("requestId").is_some(), "{cancelled:?}");
}
