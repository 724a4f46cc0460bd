//! Whole replies: fragmented arguments, parallel calls, text with calls,
//! usage, split characters, and what each provider is sent.

use serde_json::json;
use wicket_chat::{Message, Request, StopReason, StreamEvent, ToolCallRequest, Usage};
use wicket_fake::{FakeReply, FakeServer, Recorded, Step, Wire};

use crate::*;

fn call(id: &str, name: &str, arguments: &str) -> ToolCallRequest {
    ToolCallRequest {
        id: id.into(),
        name: name.into(),
        arguments: arguments.into(),
    }
}

#[tokio::test]
async fn text_and_two_calls_with_fragmented_arguments_and_usage() {
    for wire in WIRES {
        let server = FakeServer::start(wire);
        let read = r#"{"path":"src/main.rs","start_line":10}"#;
        let grep = r#"{"pattern":"fn \"main\"","path":"."}"#;
        server.push(Step::Reply(FakeReply {
            args_chunk_chars: 3,
            ..FakeReply::text("Let me look at both.")
                .with_tool_call("call_a", "read_file", read)
                .with_tool_call("call_b", "grep", grep)
                .usage(120, 34)
        }));
        let client = client(&server, wire);
        let (reply, events) = complete(client.as_ref(), &ask("look")).await;
        let reply = reply.unwrap();
        assert_eq!(reply.text, "Let me look at both.", "{wire:?}");
        assert_eq!(
            reply.tool_calls,
            [
                call("call_a", "read_file", read),
                call("call_b", "grep", grep)
            ],
            "{wire:?}"
        );
        assert_eq!(
            reply.usage,
            Some(Usage {
                input_tokens: 120,
                output_tokens: 34,
                ..Usage::default()
            }),
            "{wire:?}"
        );
        // `tool_calls` and `tool_use`: one reason, whichever wire said it.
        assert_eq!(reply.stop_reason, Some(StopReason::ToolUse), "{wire:?}");
        assert_eq!(reply.attempts, 1);
        // The text streamed in pieces, as it arrived.
        let pieces = events
            .iter()
            .filter(|event| matches!(event, StreamEvent::Text(_)))
            .count();
        assert!(pieces > 1, "{wire:?}: {events:?}");
        assert_eq!(streamed_text(&events), reply.text);
        assert_eq!(server.request_count(), 1);
    }
}

#[tokio::test]
async fn a_reply_without_text_and_one_with_only_text() {
    for wire in WIRES {
        let server = FakeServer::start(wire);
        server.push(Step::Reply(FakeReply::tool_call(
            "only",
            "list_dir",
            r#"{"path":"."}"#,
        )));
        server.push(Step::Reply(FakeReply::text("All done.")));
        let client = client(&server, wire);
        let first = complete(client.as_ref(), &ask("go")).await.0.unwrap();
        assert_eq!(first.text, "", "{wire:?}");
        assert_eq!(
            first.tool_calls,
            [call("only", "list_dir", r#"{"path":"."}"#)]
        );
        let second = complete(client.as_ref(), &ask("go")).await.0.unwrap();
        assert_eq!(second.text, "All done.", "{wire:?}");
        assert!(second.tool_calls.is_empty(), "{wire:?}");
        assert_eq!(second.stop_reason, Some(StopReason::EndTurn), "{wire:?}");
    }
}

/// Characters of two, three and four bytes cut at every byte: the body
/// arrives one byte per HTTP chunk, and then three.
#[tokio::test]
async fn non_ascii_text_and_arguments_split_across_chunks() {
    let text = "héllo wörld — 日本語のテキスト 🦀 naïve café";
    let args = r#"{"path":"dösseldorf/日本.txt","note":"🦀"}"#;
    for wire in WIRES {
        for pieces in [1, 3] {
            let server = FakeServer::start(wire);
            server.push(Step::Reply(FakeReply {
                byte_pieces: Some(pieces),
                unknown_event: true,
                ..FakeReply::text(text).with_tool_call("call_ü", "read_file", args)
            }));
            let client = client(&server, wire);
            let (reply, events) = complete(client.as_ref(), &ask("read")).await;
            let reply = reply.unwrap();
            assert_eq!(reply.text, text, "{wire:?} in {pieces}-byte pieces");
            assert_eq!(reply.tool_calls, [call("call_ü", "read_file", args)]);
            assert_eq!(streamed_text(&events), text);
        }
    }
}

/// A conversation with a turn of tool calls, their results (one an error)
/// and the person's next words.
fn conversation() -> Request {
    Request {
        system: "You work in /ws.".into(),
        messages: vec![
            Message::User {
                text: "What is in main.rs and lib.rs?".into(),
            },
            Message::Assistant {
                text: "Reading both.".into(),
                tool_calls: vec![
                    call("call_1", "read_file", r#"{"path":"main.rs"}"#),
                    call("call_2", "read_file", r#"{"path":"lib.rs"}"#),
                ],
            },
            Message::ToolResult {
                call_id: "call_1".into(),
                content: "fn main() {}".into(),
                is_error: false,
            },
            Message::ToolResult {
                call_id: "call_2".into(),
                content: "not_found: lib.rs does not exist".into(),
                is_error: true,
            },
            Message::User {
                text: "Then make lib.rs.".into(),
            },
        ],
        tools: vec![read_file_tool()],
        max_tokens: 2048,
    }
}

/// What the `wire` server received for `req`, answered with a short text.
async fn sent_for(wire: Wire, req: &Request) -> Recorded {
    let server = FakeServer::start(wire);
    server.push(Step::Reply(FakeReply::text("ok")));
    let client = client(&server, wire);
    complete(client.as_ref(), req).await.0.unwrap();
    server.requests().remove(0)
}

#[tokio::test]
async fn openai_is_sent_the_conversation_in_its_roles() {
    let sent = &sent_for(Wire::OpenAi, &conversation()).await;
    assert_eq!(
        (sent.method.as_str(), sent.path.as_str()),
        ("POST", "/v1/chat/completions")
    );
    assert_eq!(sent.header("authorization"), Some("Bearer sk-test"));
    let body = &sent.body;
    assert_eq!(body["model"], "gpt-test");
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    assert_eq!(
        body["messages"],
        json!([
            {"role": "system", "content": "You work in /ws."},
            {"role": "user", "content": "What is in main.rs and lib.rs?"},
            {"role": "assistant", "content": "Reading both.", "tool_calls": [
                {"id": "call_1", "type": "function",
                 "function": {"name": "read_file", "arguments": r#"{"path":"main.rs"}"#}},
                {"id": "call_2", "type": "function",
                 "function": {"name": "read_file", "arguments": r#"{"path":"lib.rs"}"#}},
            ]},
            {"role": "tool", "tool_call_id": "call_1", "content": "fn main() {}"},
            {"role": "tool", "tool_call_id": "call_2",
             "content": "not_found: lib.rs does not exist"},
            {"role": "user", "content": "Then make lib.rs."},
        ])
    );
    assert_eq!(
        body["tools"],
        json!([{"type": "function", "function": {
            "name": "read_file",
            "description": "Read a file of the workspace",
            "parameters": read_file_tool().parameters,
        }}])
    );
}

#[tokio::test]
async fn anthropic_is_sent_blocks_with_the_tool_results_in_one_user_message() {
    let sent = &sent_for(Wire::Anthropic, &conversation()).await;
    assert_eq!(
        (sent.method.as_str(), sent.path.as_str()),
        ("POST", "/v1/messages")
    );
    assert_eq!(sent.header("x-api-key"), Some("sk-ant-test"));
    assert!(sent.header("anthropic-version").is_some());
    assert_eq!(sent.header("authorization"), None);
    let body = &sent.body;
    assert_eq!(body["model"], "claude-test");
    assert_eq!(body["max_tokens"], 2048);
    assert_eq!(body["stream"], true);
    assert_eq!(
        body["system"],
        json!([{"type": "text", "text": "You work in /ws.", "cache_control": {"type": "ephemeral"}}])
    );
    assert_eq!(
        body["messages"],
        json!([
            {"role": "user", "content": [
                {"type": "text", "text": "What is in main.rs and lib.rs?"}]},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Reading both."},
                {"type": "tool_use", "id": "call_1", "name": "read_file",
                 "input": {"path": "main.rs"}},
                {"type": "tool_use", "id": "call_2", "name": "read_file",
                 "input": {"path": "lib.rs"}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "call_1", "content": "fn main() {}"},
                {"type": "tool_result", "tool_use_id": "call_2",
                 "content": "not_found: lib.rs does not exist", "is_error": true},
                {"type": "text", "text": "Then make lib.rs.", "cache_control": {"type": "ephemeral"}},
            ]},
        ])
    );
    assert_eq!(
        body["tools"],
        json!([{
            "name": "read_file",
            "description": "Read a file of the workspace",
            "input_schema": read_file_tool().parameters,
        }])
    );
}

/// A 2 MiB tool result (a big file read back) goes out byte for byte.
#[tokio::test]
async fn a_large_tool_result_goes_out_whole() {
    let line = "let x = \"größe 日本\"; // 🦀 padding padding padding\n";
    let content = line.repeat(2 * 1024 * 1024 / line.len() + 1);
    for wire in WIRES {
        let server = FakeServer::start(wire);
        server.push(Step::Reply(FakeReply::text("seen")));
        let mut req = ask("read it");
        req.messages.push(Message::Assistant {
            text: String::new(),
            tool_calls: vec![call("big", "read_file", r#"{"path":"big.rs"}"#)],
        });
        req.messages.push(Message::ToolResult {
            call_id: "big".into(),
            content: content.clone(),
            is_error: false,
        });
        let client = client(&server, wire);
        let reply = complete(client.as_ref(), &req).await.0.unwrap();
        assert_eq!(reply.text, "seen");
        let body = &server.requests()[0].body;
        let sent = match wire {
            Wire::OpenAi => &body["messages"][3]["content"],
            Wire::Anthropic => &body["messages"][2]["content"][0]["content"],
        };
        assert_eq!(sent.as_str().map(str::len), Some(content.len()), "{wire:?}");
        assert!(sent.as_str() == Some(content.as_str()), "{wire:?}");
    }
}
