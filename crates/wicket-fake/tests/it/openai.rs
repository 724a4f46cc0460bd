//! The OpenAI Chat Completions stream, event by event.

use serde_json::{Value, json};
use wicket_fake::{FakeReply, FakeServer, Step, Wire};

use crate::client::{Sse, post};

pub(crate) const PATH: &str = "/v1/chat/completions";

/// A chat request as a client sends it, with or without usage asked for.
pub(crate) fn request(include_usage: bool) -> Value {
    let mut request = json!({
        "model": "gpt-test",
        "stream": true,
        "messages": [{"role": "user", "content": "hi"}],
    });
    if include_usage {
        request["stream_options"] = json!({"include_usage": true});
    }
    request
}

/// The reply the sequence tests script: text and two tool calls.
pub(crate) fn two_tools_reply() -> FakeReply {
    FakeReply::text("Let me look.")
        .with_tool_call("call_1", "read_file", r#"{"path":"src/main.rs"}"#)
        .with_tool_call("call_2", "grep", r#"{"pattern":"fn main"}"#)
        .usage(12, 34)
}

/// What a client rebuilds from the stream: the text and each tool call's
/// (id, name, arguments).
#[derive(Debug, PartialEq)]
pub(crate) struct Assembled {
    pub text: String,
    pub calls: Vec<(String, String, String)>,
}

pub(crate) fn assemble(events: &[Sse]) -> Assembled {
    let mut assembled = Assembled {
        text: String::new(),
        calls: Vec::new(),
    };
    for event in events.iter().filter(|event| event.data != "[DONE]") {
        let chunk = event.json();
        let Some(choice) = chunk["choices"].get(0) else {
            continue;
        };
        let delta = &choice["delta"];
        assembled
            .text
            .push_str(delta["content"].as_str().unwrap_or(""));
        for call in delta["tool_calls"].as_array().into_iter().flatten() {
            let index = usize::try_from(call["index"].as_u64().unwrap()).unwrap();
            if let Some(id) = call["id"].as_str() {
                assert_eq!(
                    index,
                    assembled.calls.len(),
                    "tool calls start in index order"
                );
                let name = call["function"]["name"].as_str().unwrap();
                assembled
                    .calls
                    .push((id.to_owned(), name.to_owned(), String::new()));
            }
            let fragment = call["function"]["arguments"].as_str().unwrap();
            assembled.calls[index].2.push_str(fragment);
        }
    }
    assembled
}

pub(crate) fn expected(reply: &FakeReply) -> Assembled {
    Assembled {
        text: reply.text.clone(),
        calls: reply
            .tool_calls
            .iter()
            .map(|call| (call.id.clone(), call.name.clone(), call.arguments.clone()))
            .collect(),
    }
}

/// Names each event by what it carries, to compare whole sequences.
fn label(event: &Sse) -> String {
    if event.data == "[DONE]" {
        return "[DONE]".to_owned();
    }
    let chunk = event.json();
    let Some(choice) = chunk["choices"].get(0) else {
        return "usage".to_owned();
    };
    let delta = &choice["delta"];
    if let Some(reason) = choice["finish_reason"].as_str() {
        return format!("finish {reason}");
    }
    if delta.get("role").is_some() {
        return "role".to_owned();
    }
    if delta.get("content").is_some() {
        return "text".to_owned();
    }
    let call = &delta["tool_calls"][0];
    let kind = if call.get("id").is_some() {
        "tool"
    } else {
        "args"
    };
    format!("{kind} {}", call["index"])
}

fn labels(events: &[Sse]) -> Vec<String> {
    events.iter().map(label).collect()
}

#[test]
fn text_and_two_tool_calls_stream_the_documented_sequence() {
    let server = FakeServer::start(Wire::OpenAi);
    let reply = two_tools_reply();
    server.push(Step::Reply(reply.clone()));
    let response = post(&server, PATH, &request(false));

    assert_eq!(response.status, 200);
    assert_eq!(response.header("content-type"), Some("text/event-stream"));
    assert_eq!(response.header("cache-control"), Some("no-cache"));
    assert!(
        response.complete,
        "the body ends with its terminating chunk"
    );
    let events = response.events();
    assert_eq!(
        response.chunks.len(),
        events.len(),
        "one HTTP chunk per event"
    );
    #[rustfmt::skip]
    let expected_labels = [
        "role", "text", "text", "text",
        "tool 0", "args 0", "args 0", "args 0", "args 0",
        "tool 1", "args 1", "args 1", "args 1",
        "finish tool_calls", "[DONE]",
    ];
    assert_eq!(labels(&events), expected_labels);

    let chunks: Vec<Value> = events[..events.len() - 1].iter().map(Sse::json).collect();
    for chunk in &chunks {
        assert_eq!(chunk["id"], "chatcmpl-fake1");
        assert_eq!(chunk["object"], "chat.completion.chunk");
        assert_eq!(chunk["model"], "gpt-test");
        assert_eq!(chunk["system_fingerprint"], "fp_fake");
        assert!(chunk["created"].as_u64().unwrap() > 1_700_000_000);
        assert!(
            chunk.get("usage").is_none(),
            "no usage without include_usage"
        );
        assert_eq!(chunk["choices"][0]["index"], 0);
        assert_eq!(chunk["choices"][0]["logprobs"], Value::Null);
    }
    let role = &chunks[0]["choices"][0];
    assert_eq!(
        role["delta"],
        json!({"role": "assistant", "content": "", "refusal": null})
    );
    assert_eq!(role["finish_reason"], Value::Null);
    assert_eq!(chunks[1]["choices"][0]["delta"], json!({"content": "Let "}));
    assert_eq!(
        chunks[4]["choices"][0]["delta"],
        json!({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                               "function": {"name": "read_file", "arguments": ""}}]})
    );
    assert_eq!(
        chunks[5]["choices"][0]["delta"],
        json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"path\""}}]})
    );
    assert_eq!(chunks[13]["choices"][0]["delta"], json!({}));
    assert_eq!(assemble(&events), expected(&reply));
}

#[test]
fn include_usage_adds_a_usage_chunk_and_null_usage_everywhere_else() {
    let server = FakeServer::start(Wire::OpenAi);
    server.push(Step::Reply(FakeReply::text("hi").usage(12, 34)));
    let events = post(&server, PATH, &request(true)).events();

    assert_eq!(
        labels(&events),
        ["role", "text", "finish stop", "usage", "[DONE]"]
    );
    for event in &events[..3] {
        let chunk = event.json();
        assert_eq!(chunk.get("usage"), Some(&Value::Null));
    }
    let usage = events[3].json();
    assert_eq!(usage["choices"], json!([]));
    assert_eq!(usage["id"], "chatcmpl-fake1");
    assert_eq!(
        usage["usage"],
        json!({"prompt_tokens": 12, "completion_tokens": 34, "total_tokens": 46,
               "prompt_tokens_details": {"cached_tokens": 0}})
    );
}

#[test]
fn stop_reason_and_chunk_sizes_follow_the_reply() {
    let server = FakeServer::start(Wire::OpenAi);
    let reply = FakeReply {
        stop_reason: Some("length".to_owned()),
        text_chunk_chars: 2,
        args_chunk_chars: 3,
        ..FakeReply::tool_call("call_9", "ls", "{\"a\":1}").with_text("abcde")
    };
    server.push(Step::Reply(reply.clone()));
    let events = post(&server, PATH, &request(false)).events();

    #[rustfmt::skip]
    let expected_labels = [
        "role", "text", "text", "text", "tool 0", "args 0", "args 0", "args 0",
        "finish length", "[DONE]",
    ];
    assert_eq!(labels(&events), expected_labels);
    assert_eq!(assemble(&events), expected(&reply));
}

#[test]
fn unknown_event_is_a_keep_alive_comment() {
    let server = FakeServer::start(Wire::OpenAi);
    server.push(Step::Reply(FakeReply {
        unknown_event: true,
        ..FakeReply::text("hi")
    }));
    let response = post(&server, PATH, &request(false));

    assert!(response.text().contains("\n\n: keep-alive\n\n"));
    assert_eq!(response.comments(), 1);
    assert_eq!(
        labels(&response.events()),
        ["role", "text", "finish stop", "[DONE]"]
    );
}

#[test]
fn stream_error_sends_an_error_chunk_and_no_done() {
    let server = FakeServer::start(Wire::OpenAi);
    server.push(Step::StreamError {
        reply: FakeReply::text("Hello there"),
        events: 2,
        error_type: "server_error".to_owned(),
        message: "The server had an error".to_owned(),
    });
    let response = post(&server, PATH, &request(false));

    assert!(response.complete, "the body itself ends cleanly");
    let events = response.events();
    assert_eq!(events.len(), 3);
    assert_eq!(labels(&events[..2]), ["role", "text"]);
    assert_eq!(
        events[2].json(),
        json!({"error": {"message": "The server had an error", "type": "server_error"}})
    );
}

#[test]
fn response_ids_count_the_requests() {
    let server = FakeServer::start(Wire::OpenAi);
    server.push(Step::Reply(FakeReply::text("one")));
    server.push(Step::Reply(FakeReply::text("two")));
    let first = post(&server, PATH, &request(false)).events();
    let second = post(&server, PATH, &request(false)).events();

    assert_eq!(first[0].json()["id"], "chatcmpl-fake1");
    assert_eq!(second[0].json()["id"], "chatcmpl-fake2");
    assert_eq!(assemble(&first).text, "one");
    assert_eq!(assemble(&second).text, "two");
}
