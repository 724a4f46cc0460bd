//! The Anthropic Messages stream, event by event.

use serde_json::{Value, json};
use wicket_fake::{FakeReply, FakeServer, Step, Wire};

use crate::client::{Sse, post};
use crate::openai::{Assembled, expected, two_tools_reply};

pub(crate) const PATH: &str = "/v1/messages";

pub(crate) fn request() -> Value {
    json!({
        "model": "claude-test",
        "max_tokens": 1024,
        "stream": true,
        "messages": [{"role": "user", "content": "hi"}],
    })
}

/// Rebuilds text and tool calls from content blocks, as a client does.
pub(crate) fn assemble(events: &[Sse]) -> Assembled {
    let mut assembled = Assembled {
        text: String::new(),
        calls: Vec::new(),
    };
    for event in events {
        let data = event.json();
        match event.event.as_deref() {
            Some("content_block_start") if data["content_block"]["type"] == "tool_use" => {
                let block = &data["content_block"];
                let (id, name) = (
                    block["id"].as_str().unwrap(),
                    block["name"].as_str().unwrap(),
                );
                assembled
                    .calls
                    .push((id.to_owned(), name.to_owned(), String::new()));
            }
            Some("content_block_delta") => {
                let delta = &data["delta"];
                if delta["type"] == "text_delta" {
                    assembled.text.push_str(delta["text"].as_str().unwrap());
                } else {
                    let call = assembled.calls.last_mut().unwrap();
                    call.2.push_str(delta["partial_json"].as_str().unwrap());
                }
            }
            _ => {}
        }
    }
    assembled
}

/// Names each event by type, block index and block or delta type.
fn label(event: &Sse) -> String {
    let data = event.json();
    let name = event.event.clone().unwrap();
    assert_eq!(
        data["type"],
        name.as_str(),
        "event name and data type agree"
    );
    match name.as_str() {
        "content_block_start" => {
            format!("start {} {}", data["index"], data["content_block"]["type"])
        }
        "content_block_delta" => format!("delta {} {}", data["index"], data["delta"]["type"]),
        "content_block_stop" => format!("stop {}", data["index"]),
        _ => name,
    }
}

fn labels(events: &[Sse]) -> Vec<String> {
    events.iter().map(label).collect()
}

#[test]
fn text_and_two_tool_calls_stream_the_documented_sequence() {
    let server = FakeServer::start(Wire::Anthropic);
    let reply = two_tools_reply();
    server.push(Step::Reply(reply.clone()));
    let response = post(&server, PATH, &request());

    assert_eq!(response.status, 200);
    assert_eq!(response.header("content-type"), Some("text/event-stream"));
    assert_eq!(response.header("cache-control"), Some("no-cache"));
    assert!(response.complete);
    let events = response.events();
    assert_eq!(
        response.chunks.len(),
        events.len(),
        "one HTTP chunk per event"
    );
    #[rustfmt::skip]
    let expected_labels = [
        "message_start",
        "start 0 \"text\"", "ping",
        "delta 0 \"text_delta\"", "delta 0 \"text_delta\"", "delta 0 \"text_delta\"",
        "stop 0",
        "start 1 \"tool_use\"",
        "delta 1 \"input_json_delta\"", "delta 1 \"input_json_delta\"", "delta 1 \"input_json_delta\"",
        "delta 1 \"input_json_delta\"", "delta 1 \"input_json_delta\"",
        "stop 1",
        "start 2 \"tool_use\"",
        "delta 2 \"input_json_delta\"", "delta 2 \"input_json_delta\"", "delta 2 \"input_json_delta\"",
        "delta 2 \"input_json_delta\"",
        "stop 2",
        "message_delta", "message_stop",
    ];
    assert_eq!(labels(&events), expected_labels);

    assert_eq!(
        events[0].json(),
        json!({"type": "message_start", "message": {
            "id": "msg_fake1", "type": "message", "role": "assistant", "content": [],
            "model": "claude-test", "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": 12, "cache_creation_input_tokens": 0,
                      "cache_read_input_tokens": 0, "output_tokens": 1}}})
    );
    assert_eq!(
        events[1].json()["content_block"],
        json!({"type": "text", "text": ""})
    );
    assert!(
        response
            .text()
            .contains("event: ping\ndata: {\"type\": \"ping\"}\n\n")
    );
    assert_eq!(
        events[7].json()["content_block"],
        json!({"type": "tool_use", "id": "call_1", "name": "read_file", "input": {}})
    );
    assert_eq!(
        events[8].json()["delta"],
        json!({"type": "input_json_delta", "partial_json": ""})
    );
    assert_eq!(
        events[20].json(),
        json!({"type": "message_delta",
               "delta": {"stop_reason": "tool_use", "stop_sequence": null},
               "usage": {"output_tokens": 34}})
    );
    assert_eq!(events[21].json(), json!({"type": "message_stop"}));
    assert_eq!(assemble(&events), expected(&reply));
}

#[test]
fn tool_only_reply_pings_right_after_message_start() {
    let server = FakeServer::start(Wire::Anthropic);
    let reply = FakeReply::tool_call("toolu_1", "ls", "{}");
    server.push(Step::Reply(reply.clone()));
    let events = post(&server, PATH, &request()).events();

    #[rustfmt::skip]
    let expected_labels = [
        "message_start", "ping",
        "start 0 \"tool_use\"", "delta 0 \"input_json_delta\"", "delta 0 \"input_json_delta\"", "stop 0",
        "message_delta", "message_stop",
    ];
    assert_eq!(labels(&events), expected_labels);
    assert_eq!(events[6].json()["delta"]["stop_reason"], "tool_use");
    assert_eq!(assemble(&events), expected(&reply));
}

#[test]
fn text_only_reply_ends_the_turn() {
    let server = FakeServer::start(Wire::Anthropic);
    server.push(Step::Reply(FakeReply::text("hi")));
    let events = post(&server, PATH, &request()).events();

    let message_delta = events
        .iter()
        .find(|event| event.event.as_deref() == Some("message_delta"));
    assert_eq!(
        message_delta.unwrap().json()["delta"]["stop_reason"],
        "end_turn"
    );
}

#[test]
fn unknown_event_is_a_future_thing_event() {
    let server = FakeServer::start(Wire::Anthropic);
    let reply = FakeReply {
        unknown_event: true,
        ..FakeReply::text("hi")
    };
    server.push(Step::Reply(reply.clone()));
    let events = post(&server, PATH, &request()).events();

    let names: Vec<&str> = events
        .iter()
        .map(|event| event.event.as_deref().unwrap())
        .collect();
    #[rustfmt::skip]
    let expected_names = [
        "message_start", "content_block_start", "ping", "future_thing",
        "content_block_delta", "content_block_stop", "message_delta", "message_stop",
    ];
    assert_eq!(names, expected_names);
    assert_eq!(events[3].json(), json!({"type": "future_thing"}));
    assert_eq!(assemble(&events), expected(&reply));
}

#[test]
fn stream_error_sends_an_error_event_and_ends_cleanly() {
    let server = FakeServer::start(Wire::Anthropic);
    server.push(Step::StreamError {
        reply: FakeReply::text("Hello there"),
        events: 3,
        error_type: "overloaded_error".to_owned(),
        message: "Overloaded".to_owned(),
    });
    let response = post(&server, PATH, &request());

    assert!(response.complete);
    let events = response.events();
    assert_eq!(
        labels(&events[..3]),
        ["message_start", "start 0 \"text\"", "ping"]
    );
    assert_eq!(events.len(), 4);
    assert_eq!(events[3].event.as_deref(), Some("error"));
    assert_eq!(
        events[3].json(),
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    );
}
