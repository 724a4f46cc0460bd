//! `wicket acp` through the binary: the Agent Client Protocol's own
//! TypeScript client drives a whole session (tests/acp/acp.test.mjs), and
//! raw JSON-RPC lines check what a client library would never send.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use wicket_test_support::process::{alive, marker};
use wicket_test_support::wait_until;

use crate::exec::script;
use crate::*;

#[test]
fn the_sdk_client_drives_wicket_acp() {
    let f = Fixture::new();
    std::fs::remove_file(f.ws.join("a.txt")).unwrap();
    let tag = marker("acp-run");
    let model = script(
        &f,
        "acp.json",
        json!([
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "one\n"}}]},
            {"tool_calls": [{"name": "finish", "arguments": {"result": "wrote a.txt"}}]},
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "two\n"}}]},
            {"text": "The write was denied; a.txt is unchanged."},
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "b.txt", "content": "same\n"}}]},
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "b.txt", "content": "same\n"}}]},
            {"tool_calls": [{"name": "finish", "arguments": {"result": "b.txt twice"}}]},
            {"tool_calls": [{"name": "ask", "arguments": {"question": "Which name?"}}]},
            {"tool_calls": [{"name": "finish", "arguments": {"result": "named Bob"}}]},
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "c.txt", "content": "c\n"}}]},
            {"text": "planned"},
            {"tool_calls": [{"name": "run", "arguments": {"argv": ["sh", "-c", format!("sleep 60; : {tag}")]}}]},
            {"text": "resumed"}
        ]),
    );
    sdk_test("acp.test.mjs", &f, &model, &[("MARKER", &tag)]);
    assert!(!alive(&tag));
    // An ordinary session: `wicket sessions` and `wicket log` show it.
    let log = f.log(&only_session(&f));
    assert!(log.iter().any(|e| e["type"] == "cancelled"));
    assert!(
        log.iter()
            .any(|e| e["type"] == "reply" && e["reply"] == "Bob")
    );
}

/// Runs `script` of tests/acp (the protocol's own TypeScript client)
/// against the binary, with the fixture's home and workspace, `model`, and
/// `env`; it must pass.
pub(crate) fn sdk_test(script: &str, f: &Fixture, model: &str, env: &[(&str, &str)]) {
    let tests = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/acp");
    assert!(
        tests.join("node_modules/@agentclientprotocol/sdk").exists(),
        "the ACP client is not installed: run `npm ci` in tests/acp (scripts/test.sh does)"
    );
    let mut command = Command::new("node");
    command
        .arg(tests.join(script))
        .current_dir(&tests)
        .env("WICKET_BIN", env!("CARGO_BIN_EXE_wicket"))
        .env("WICKET_HOME", &f.home)
        .env("WORKSPACE", &f.ws)
        .env("MODEL", model)
        .env_remove("WICKET_MODEL");
    for (name, value) in env {
        command.env(name, value);
    }
    peer_succeeds(&mut command);
}

fn only_session(f: &Fixture) -> String {
    let sessions: Vec<_> = std::fs::read_dir(f.home.join("sessions"))
        .unwrap()
        .collect();
    assert_eq!(sessions.len(), 1);
    sessions[0]
        .as_ref()
        .unwrap()
        .file_name()
        .to_string_lossy()
        .into_owned()
}

/// `wicket acp` spoken to line by line.
struct Raw {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

impl Raw {
    fn start(f: &Fixture, model: &str) -> Raw {
        Raw::start_with(f, model, &[])
    }

    /// [`Raw::start`] with `env` set too.
    fn start_with(f: &Fixture, model: &str, env: &[(&str, &std::path::Path)]) -> Raw {
        let mut command = wicket();
        for (name, value) in env {
            command.env(name, value);
        }
        let mut child = command
            .env("WICKET_HOME", &f.home)
            .env_remove("WICKET_MODEL")
            .args(["acp", "--model", model])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Raw {
            child,
            stdin,
            stdout,
        }
    }

    fn send(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
    }

    fn read(&mut self) -> Value {
        let mut line = String::new();
        assert!(
            self.stdout.read_line(&mut line).unwrap() > 0,
            "wicket acp closed stdout"
        );
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON: {line:?}: {e}"))
    }

    /// Reads until the response to `id`, answering permission requests with `option`.
    fn response(&mut self, id: u64, option: &str) -> Value {
        loop {
            let message = self.read();
            if message["method"] == "session/request_permission" {
                let answer = json!({"jsonrpc": "2.0", "id": message["id"],
                    "result": {"outcome": {"outcome": "selected", "optionId": option}}});
                self.send(&answer.to_string());
                continue;
            }
            if message["id"] == id && message.get("method").is_none() {
                return message;
            }
        }
    }

    fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(
            &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string(),
        );
        self.response(id, "allow_once")
    }

    fn initialize(&mut self) {
        let init = self.request(1, "initialize", json!({"protocolVersion": 1}));
        assert_eq!(init["result"]["protocolVersion"], 1, "{init}");
    }
}

impl Drop for Raw {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn bad_input_gets_json_rpc_errors_and_the_agent_goes_on() {
    let f = Fixture::new();
    let model = script(&f, "none.json", json!([]));
    let mut raw = Raw::start(&f, &model);
    raw.send("{this is not json");
    assert_eq!(raw.read()["error"]["code"], -32700);
    raw.initialize();
    raw.send(r#"{"jsonrpc":"2.0","id":2,"method":"no/such/method","params":{}}"#);
    assert_eq!(raw.response(2, "deny")["error"]["code"], -32601);
    let unknown = raw.request(
        3,
        "session/prompt",
        json!({"sessionId": "nope", "prompt": []}),
    );
    assert_eq!(unknown["error"]["code"], -32002, "{unknown}");
    let relative = raw.request(
        4,
        "session/new",
        json!({"cwd": "relative/ws", "mcpServers": []}),
    );
    assert_eq!(relative["error"]["code"], -32602, "{relative}");
    assert!(
        relative["error"]["data"]
            .as_str()
            .unwrap()
            .contains("absolute"),
        "{relative}"
    );
    // Still answering.
    let new = raw.request(5, "session/new", json!({"cwd": f.ws, "mcpServers": []}));
    assert!(new["result"]["sessionId"].is_string(), "{new}");
    drop(raw.stdin.take());
    assert_eq!(raw.child.wait().unwrap().code(), Some(0));
}

#[test]
fn a_client_that_disconnects_mid_turn_cancels_it_and_the_session_resumes() {
    let f = Fixture::new();
    let tag = marker("acp-gone");
    let model = script(
        &f,
        "gone.json",
        json!([
            {"tool_calls": [{"name": "run", "arguments": {"argv": ["sh", "-c", format!("sleep 60; : {tag}")]}}]},
            {"text": "picked up"}
        ]),
    );
    let mut raw = Raw::start(&f, &model);
    raw.initialize();
    let new = raw.request(2, "session/new", json!({"cwd": f.ws, "mcpServers": []}));
    let session = new["result"]["sessionId"].as_str().unwrap().to_string();
    raw.send(
        &json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
        "params": {"sessionId": session, "prompt": [{"type": "text", "text": "run"}]}})
        .to_string(),
    );
    // Answer the run's permission request, then go away while it runs.
    loop {
        let message = raw.read();
        if message["method"] == "session/request_permission" {
            raw.send(
                &json!({"jsonrpc": "2.0", "id": message["id"],
                "result": {"outcome": {"outcome": "selected", "optionId": "allow_once"}}})
                .to_string(),
            );
            break;
        }
    }
    assert!(
        wait_until(Duration::from_secs(30), || alive(&tag)),
        "the command never started"
    );
    drop(raw.stdin.take());
    assert_eq!(raw.child.wait().unwrap().code(), Some(0));
    assert!(!alive(&tag), "the command outlived the editor");
    let log = f.log(&session);
    assert_eq!(ending(&log)["type"], "cancelled", "{:#?}", log.last());
    assert_eq!(f.meta(&session)["status"], "idle");
    // Resumable: a new process goes on with it.
    let mut again = Raw::start(&f, &model);
    again.initialize();
    let loaded = again.request(
        2,
        "session/load",
        json!({"sessionId": session, "cwd": f.ws, "mcpServers": []}),
    );
    assert!(loaded.get("error").is_none(), "{loaded}");
    let prompt = again.request(
        3,
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "go on"}]}),
    );
    assert_eq!(prompt["result"]["stopReason"], "end_turn", "{prompt}");
}

#[test]
fn the_step_limit_is_max_turn_requests() {
    let f = Fixture::new();
    std::fs::write(f.home.join("config.toml"), "step_limit = 1\n").unwrap();
    let model = script(
        &f,
        "steps.json",
        json!([
            {"tool_calls": [{"name": "read_file", "arguments": {"path": "a.txt"}}]},
            {"tool_calls": [{"name": "read_file", "arguments": {"path": "a.txt"}}]}
        ]),
    );
    let mut raw = Raw::start(&f, &model);
    raw.initialize();
    let new = raw.request(2, "session/new", json!({"cwd": f.ws, "mcpServers": []}));
    let session = new["result"]["sessionId"].clone();
    let prompt = raw.request(
        3,
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "read"}]}),
    );
    assert_eq!(
        prompt["result"]["stopReason"], "max_turn_requests",
        "{prompt}"
    );
}

#[test]
fn a_line_over_16_mib_gets_an_error_and_the_agent_goes_on() {
    let f = Fixture::new();
    let model = script(&f, "none.json", json!([]));
    let mut raw = Raw::start(&f, &model);
    let huge = format!(
        r#"{{"jsonrpc":"2.0","id":9,"method":"initialize","params":{{"protocolVersion":1,"pad":"{}"}}}}"#,
        "x".repeat(20 * 1024 * 1024)
    );
    raw.send(&huge);
    let error = raw.read();
    assert_eq!(error["error"]["code"], -32700, "{error}");
    assert!(error.to_string().contains("was dropped"), "{error}");
    raw.initialize();
}

#[test]
fn rewind_is_a_slash_command_that_asks_with_the_plan() {
    let f = Fixture::new();
    let model = script(
        &f,
        "rewind.json",
        json!([
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "changed\n"}}]},
            {"tool_calls": [{"name": "finish", "arguments": {"result": "wrote a.txt"}}]}
        ]),
    );
    let mut raw = Raw::start(&f, &model);
    raw.initialize();
    raw.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": f.ws, "mcpServers": []}}).to_string());
    let new = raw.read();
    let session = new["result"]["sessionId"].clone();
    let commands = raw.read();
    assert_eq!(
        commands["params"]["update"]["sessionUpdate"], "available_commands_update",
        "{commands}"
    );
    assert_eq!(
        commands["params"]["update"]["availableCommands"][0]["name"],
        "rewind"
    );
    let prompt = raw.request(
        3,
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "change a.txt"}]}),
    );
    assert_eq!(prompt["result"]["stopReason"], "end_turn", "{prompt}");
    assert_eq!(f.read("a.txt"), "changed\n");
    raw.send(
        &json!({"jsonrpc": "2.0", "id": 4, "method": "session/prompt",
            "params": {"sessionId": session, "prompt": [{"type": "text", "text": "/rewind"}]}})
        .to_string(),
    );
    let ask = loop {
        let message = raw.read();
        if message["method"] == "session/request_permission" {
            break message;
        }
    };
    let content = ask["params"]["toolCall"]["content"][0]["content"]["text"]
        .as_str()
        .unwrap();
    assert_eq!(content, "restore a.txt", "{ask}");
    let answer = json!({"jsonrpc": "2.0", "id": ask["id"],
        "result": {"outcome": {"outcome": "selected", "optionId": "rewind"}}});
    raw.send(&answer.to_string());
    let done = raw.response(4, "deny");
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    assert_eq!(f.read("a.txt"), "alpha\nbeta\n");
}

#[test]
fn thirty_reads_arrive_in_the_logs_order() {
    let f = Fixture::new();
    let mut replies: Vec<Value> = (1..=30)
        .map(|n| {
            json!({"text": format!("step {n}"), "tool_calls": [{"name": "read_file", "arguments": {"path": "a.txt"}}]})
        })
        .collect();
    replies.push(json!({"text": "all read"}));
    let model = script(&f, "reads.json", Value::Array(replies));
    sdk_test("order.test.mjs", &f, &model, &[]);
}

/// An editor's MCP servers are held to the managed policy as the config's
/// are: one `allowed_mcp_servers` does not list never starts, and the log
/// says why.
#[test]
fn an_editors_mcp_server_the_managed_policy_does_not_list_never_starts() {
    let f = Fixture::new();
    let policy = f.root.join("managed.toml");
    std::fs::write(
        &policy,
        "allowed_mcp_servers = [{ name = \"listed\", command = \"true\" }]\n",
    )
    .unwrap();
    let started = f.root.join("evil-started");
    let model = script(&f, "mcp.json", json!([{"text": "hello"}]));
    let mut raw = Raw::start_with(&f, &model, &[("WICKET_MANAGED_CONFIG", &policy)]);
    raw.initialize();
    let new = raw.request(
        2,
        "session/new",
        json!({"cwd": f.ws, "mcpServers": [{
            "name": "evil",
            "command": "/bin/sh",
            "args": ["-c", format!("touch {}", started.display())],
            "env": []
        }]}),
    );
    let session = new["result"]["sessionId"].as_str().unwrap().to_string();
    let reply = raw.request(
        3,
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "hi"}]}),
    );
    assert_eq!(reply["result"]["stopReason"], "end_turn", "{reply}");
    assert!(!started.exists());
    let log = f.log(&session);
    assert!(
        log.iter().any(|e| e["type"] == "notice"
            && e["message"].as_str().unwrap_or("").contains("evil")
            && e["key"] == "allowed_mcp_servers"),
        "{log:#?}"
    );
}

#[test]
fn an_editor_choosing_preview_where_the_card_offered_none_hears_why_none_was_available() {
    let f = Fixture::new();
    std::fs::write(
        f.home.join("config.toml"),
        "[sandbox]\nmode = \"read-only\"\n",
    )
    .unwrap();
    let model = script(
        &f,
        "preview.json",
        json!([
            {"tool_calls": [{"name": "run", "arguments": {"argv": ["sh", "-c", "echo made > made.txt"], "preview": true}}]},
            {"text": "done"}
        ]),
    );
    let mut raw = Raw::start(&f, &model);
    raw.initialize();
    let new = raw.request(2, "session/new", json!({"cwd": f.ws, "mcpServers": []}));
    let session = new["result"]["sessionId"].clone();
    let mut offered = Vec::new();
    raw.send(
        &json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
            "params": {"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}})
        .to_string(),
    );
    let done = loop {
        let message = raw.read();
        if message["method"] == "session/request_permission" {
            offered.push(message["params"]["options"].clone());
            let answer = json!({"jsonrpc": "2.0", "id": message["id"],
                "result": {"outcome": {"outcome": "selected", "optionId": "preview"}}});
            raw.send(&answer.to_string());
            continue;
        }
        if message["id"] == 3 && message.get("method").is_none() {
            break message;
        }
    };
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    assert_eq!(offered.len(), 1, "one card");
    assert!(
        !offered[0].to_string().contains("\"preview\""),
        "the card offers no preview: {}",
        offered[0]
    );
    let log = std::fs::read_dir(f.home.join("sessions"))
        .unwrap()
        .map(|entry| std::fs::read_to_string(entry.unwrap().path().join("log.jsonl")).unwrap())
        .collect::<String>();
    let result: Value = log
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .find(|event| event["type"] == "tool_result")
        .unwrap();
    let message = result["error"]["message"].as_str().unwrap();
    assert!(
        message.contains(
            "no preview was available for this command: no preview with the sandbox read-only"
        ),
        "{message}"
    );
    assert!(!message.contains("denied this command"), "{message}");
    assert!(!f.ws.join("made.txt").exists());
}
