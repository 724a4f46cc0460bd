//! Long sessions against the fake providers, through the binary: the
//! context window, compaction, prompt caching, cost and its sums.

use serde_json::Value;
use wicket_fake::{FakeReply, FakeServer, Step, Wire};

use crate::*;

fn config(f: &Fixture, text: &str) {
    std::fs::write(f.home.join("config.toml"), text).unwrap();
}

fn exec_against(
    f: &Fixture,
    fake: &FakeServer,
    model: &str,
    ask: &str,
    session: &str,
) -> (Vec<Value>, i32) {
    let (base, key) = if model.starts_with("openai:") {
        ("OPENAI_BASE_URL", "OPENAI_API_KEY")
    } else {
        ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY")
    };
    let output = crate::exec::exec(
        f,
        ask,
        &[
            "--model",
            model,
            "--session",
            session,
            "--json",
            "--answers",
            "deny",
        ],
    )
    .env(base, fake.base_url())
    .env(key, "test-key")
    .stdin(std::process::Stdio::null())
    .output()
    .unwrap();
    (lines(&output), output.status.code().unwrap_or(-1))
}

fn body_tokens(body: &Value) -> usize {
    body.to_string().len().div_ceil(4)
}

/// With a 4,000-token window and tool results that fill it, the turn
/// compacts: a `compacted` event, the next request is under the window,
/// the turn finishes, the log keeps every event, and the session resumed
/// later starts from the summary.
#[test]
fn a_turn_compacts_when_the_window_fills_and_resumes_from_the_summary() {
    let f = Fixture::new();
    config(&f, "[models.\"openai:gpt-test\"]\ncontext_window = 4000\n");
    f.write("a.txt", &"alpha alpha alpha alpha\n".repeat(120));
    f.write("b.txt", &"bravo bravo bravo bravo\n".repeat(120));
    let fake = FakeServer::start(Wire::OpenAi);
    fake.push(Step::Reply(
        FakeReply::tool_call("c1", "read_file", r#"{"path": "a.txt"}"#).usage(1000, 10),
    ));
    fake.push(Step::Reply(
        FakeReply::tool_call("c2", "read_file", r#"{"path": "b.txt"}"#).usage(3000, 10),
    ));
    fake.push(Step::Reply(
        FakeReply::text("SUMMARY: read a.txt (alphas) and b.txt (bravos).").usage(3500, 20),
    ));
    fake.push(Step::Reply(
        FakeReply::text("Both files read.").usage(900, 5),
    ));
    let (events, code) = exec_against(&f, &fake, "openai:gpt-test", "read both", "long");
    assert_eq!(code, 0, "{events:#?}");
    let compacted = events
        .iter()
        .find(|e| e["type"] == "compacted")
        .expect("a compacted event");
    assert!(
        compacted["summary"]
            .as_str()
            .unwrap()
            .starts_with("SUMMARY")
    );
    assert!(
        compacted["tokens_after"].as_u64().unwrap() < compacted["tokens_before"].as_u64().unwrap()
    );
    assert_eq!(ending(&events)["type"], "result");
    let requests = fake.requests();
    assert_eq!(requests.len(), 4);
    let summary_request = &requests[2].body;
    let last_message = summary_request["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert!(
        last_message["content"]
            .as_str()
            .unwrap()
            .contains("summary"),
        "{last_message}"
    );
    let after = &requests[3].body;
    assert!(body_tokens(after) < 4000, "{} tokens", body_tokens(after));
    let after_text = after.to_string();
    assert!(after_text.contains("SUMMARY: read a.txt"));
    assert!(
        !after_text.contains("alpha alpha alpha"),
        "the summarised read is gone from the request"
    );
    // The log keeps every event, compaction or not.
    let log = f.log("long");
    assert!(log.iter().any(|e| {
        e["type"] == "tool_result"
            && e["output"]["content"]
                .as_str()
                .is_some_and(|c| c.contains("alpha"))
    }));
    let readable = wicket()
        .env("WICKET_HOME", &f.home)
        .args(["log", "long"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&readable.stdout).contains("compacted events 1–"));
    // Resumed, the session starts from the summary.
    fake.push(Step::Reply(FakeReply::text("Still here.").usage(900, 5)));
    let (events, code) = exec_against(&f, &fake, "openai:gpt-test", "and now?", "long");
    assert_eq!(code, 0, "{events:#?}");
    let resumed = fake.requests().last().unwrap().body.to_string();
    assert!(resumed.contains("SUMMARY: read a.txt"));
    assert!(!resumed.contains("alpha alpha alpha"));
}

/// Anthropic requests carry cache breakpoints after the tools and system
/// prompt and on the last message; two consecutive requests share their
/// prefix byte for byte; reported cache tokens give exact usage and cost sums.
#[test]
fn anthropic_caching_usage_and_cost_add_up_exactly() {
    let f = Fixture::new();
    config(
        &f,
        "[prices.\"anthropic:claude-test\"]\ninput = 3.0\noutput = 15.0\ncached_input = 0.3\ncache_write = 3.75\n",
    );
    let fake = FakeServer::start(Wire::Anthropic);
    fake.push(Step::Reply(
        FakeReply::tool_call("t1", "list_dir", "{}")
            .usage(100, 20)
            .cache(0, 4000),
    ));
    fake.push(Step::Reply(
        FakeReply::text("done").usage(50, 10).cache(4000, 120),
    ));
    let (events, code) = exec_against(&f, &fake, "anthropic:claude-test", "look", "cached");
    assert_eq!(code, 0, "{events:#?}");
    let requests = fake.requests();
    let (first, second) = (&requests[0].body, &requests[1].body);
    // The breakpoints, pinned.
    let marks = |body: &Value| -> Vec<String> {
        let mut found = Vec::new();
        if body["system"][0]["cache_control"].is_object() {
            found.push("system".to_string());
        }
        for (i, message) in body["messages"].as_array().unwrap().iter().enumerate() {
            for block in message["content"].as_array().unwrap() {
                if block["cache_control"].is_object() {
                    found.push(format!("messages[{i}].{}", block["type"].as_str().unwrap()));
                }
            }
        }
        found
    };
    insta::assert_snapshot!(format!("{:?}\n{:?}", marks(first), marks(second)), @r#"
    ["system", "messages[0].text"]
    ["system", "messages[2].tool_result"]
    "#);
    // Tools and system prompt: the same bytes.
    assert_eq!(first["tools"].to_string(), second["tools"].to_string());
    assert_eq!(first["system"].to_string(), second["system"].to_string());
    // The first request's messages begin the second's, but for where the
    // last breakpoint sits.
    let strip = |message: &Value| {
        let mut message = message.clone();
        for block in message["content"].as_array_mut().unwrap() {
            block.as_object_mut().unwrap().remove("cache_control");
        }
        message.to_string()
    };
    let before: Vec<String> = first["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(strip)
        .collect();
    let after: Vec<String> = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(strip)
        .collect();
    assert_eq!(before[..], after[..before.len()]);
    // Usage: Anthropic's input excludes cached tokens; Wicket's includes them.
    let replies: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "assistant_message")
        .collect();
    assert_eq!(replies[0]["usage"]["input_tokens"], 4100);
    assert_eq!(replies[0]["usage"]["cache_creation_input_tokens"], 4000);
    assert_eq!(replies[1]["usage"]["input_tokens"], 4170);
    assert_eq!(replies[1]["usage"]["cache_read_input_tokens"], 4000);
    let first_cost = (100.0 * 3.0 + 4000.0 * 3.75 + 20.0 * 15.0) / 1e6;
    let second_cost = (50.0 * 3.0 + 4000.0 * 0.3 + 120.0 * 3.75 + 10.0 * 15.0) / 1e6;
    let cost = |v: &Value| v.as_f64().unwrap();
    assert!((cost(&replies[0]["usage"]["cost_usd"]) - first_cost).abs() < 1e-12);
    assert!((cost(&replies[1]["usage"]["cost_usd"]) - second_cost).abs() < 1e-12);
    let result = ending(&events);
    assert_eq!(result["usage"]["input_tokens"], 8270);
    assert_eq!(result["usage"]["output_tokens"], 30);
    assert!((cost(&result["usage"]["cost_usd"]) - (first_cost + second_cost)).abs() < 1e-12);
    let meta = f.meta("cached");
    assert!((cost(&meta["usage"]["cost_usd"]) - (first_cost + second_cost)).abs() < 1e-12);
    assert!(replies[1]["usage"]["context_used_percent"].is_number());
}

/// A model with no known price shows tokens only, never a made-up cost.
#[test]
fn an_unknown_model_has_tokens_and_no_cost() {
    let f = Fixture::new();
    let fake = FakeServer::start(Wire::OpenAi);
    fake.push(Step::Reply(FakeReply::text("hi").usage(10, 2)));
    let (events, code) = exec_against(&f, &fake, "openai:gpt-unknown-test", "hi", "free");
    assert_eq!(code, 0);
    let result = ending(&events);
    assert_eq!(result["usage"]["input_tokens"], 10);
    assert!(result["usage"].get("cost_usd").is_none(), "{result}");
}

/// A model the config does not know, on a server that can say its window
/// (llama-server's `/props`): the turn asks, uses the answer, and says so;
/// a reply is held to a quarter of it. The chat reply is the bytes
/// llama-server sent.
#[test]
fn an_unknown_models_window_is_asked_of_its_server() {
    use std::io::{BufRead, BufReader, Read, Write};
    let f = Fixture::new();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let reply =
        std::fs::read(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(
            "../wicket-chat/tests/real-servers/llamaserver_wicket_text_reply_with_usage.http",
        ))
        .unwrap();
    let asked = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let seen = asked.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let mut stream = stream.unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            let mut length = 0;
            loop {
                let mut header = String::new();
                reader.read_line(&mut header).unwrap();
                if let Some(value) = header.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = value.trim().parse().unwrap();
                }
                if header == "\r\n" {
                    break;
                }
            }
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            seen.lock().unwrap().push(line.trim().to_string());
            if line.starts_with("GET /props") {
                let props = r#"{"default_generation_settings":{"n_ctx":8192},"total_slots":1}"#;
                write!(
                    stream,
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{props}",
                    props.len()
                )
                .unwrap();
            } else {
                let body: Value = serde_json::from_slice(&body).unwrap();
                seen.lock()
                    .unwrap()
                    .push(format!("max_tokens {}", body["max_tokens"]));
                stream.write_all(&reply).unwrap();
            }
        }
    });
    let output = crate::exec::exec(
        &f,
        "hello",
        &["--model", "openai:smollm2", "--json", "--answers", "deny"],
    )
    .env("OPENAI_BASE_URL", format!("http://127.0.0.1:{port}/v1"))
    .env_remove("OPENAI_API_KEY")
    .stdin(std::process::Stdio::null())
    .output()
    .unwrap();
    let events = lines(&output);
    assert_eq!(output.status.code(), Some(0), "{events:#?}");
    let notice = events
        .iter()
        .find(|e| e["type"] == "notice" && e["key"] == "context_window")
        .unwrap_or_else(|| panic!("{events:#?}"));
    let message = notice["message"].as_str().unwrap();
    assert!(
        message.contains("8192 tokens, as llama-server's /props"),
        "{message}"
    );
    // The window in use is the server's: 1,747 of 8,192 tokens.
    let reply = events
        .iter()
        .find(|e| e["type"] == "assistant_message")
        .unwrap();
    assert_eq!(reply["usage"]["context_used_percent"], 21.3);
    let asked = asked.lock().unwrap().clone();
    assert_eq!(asked[0], "GET /props HTTP/1.1", "{asked:?}");
    assert!(asked.contains(&"max_tokens 2048".to_string()), "{asked:?}");
    assert_eq!(ending(&events)["type"], "result");
}

#[test]
fn a_tool_that_is_not_there_is_answered_with_every_tool_the_request_offered() {
    let f = Fixture::new();
    let fake = FakeServer::start(Wire::OpenAi);
    fake.push(Step::Reply(FakeReply::tool_call(
        "b1",
        "Bash",
        r#"{"command": "ls"}"#,
    )));
    fake.push(Step::Reply(FakeReply::text("done")));
    let (events, code) = exec_against(&f, &fake, "openai:gpt-test", "look", "unknown");
    assert_eq!(code, 0, "{events:#?}");
    let requests = fake.requests();
    let body = requests.last().unwrap().body.to_string();
    assert!(body.contains("there is no tool 'Bash'"), "{body}");
    assert!(
        body.contains("read_file, grep, list_dir, search_replace, write_file, run, ask, finish"),
        "{body}"
    );
}
