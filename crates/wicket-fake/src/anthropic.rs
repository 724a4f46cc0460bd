//! Anthropic Messages streaming, as in the "Streaming Messages" tool use
//! example: named events (`event: TYPE` + `data: {json}`), one content block
//! per text or tool call, usage in `message_start` and `message_delta`.

use serde_json::{Value, json};

use crate::steps::FakeReply;
use crate::wire::Exchange;

/// Written by hand rather than through serde_json so it keeps the space the
/// docs' example has: the fake sends what the API sends, byte for byte.
const PING: &str = "event: ping\ndata: {\"type\": \"ping\"}\n\n";

/// Every framed event of `reply`, in the order Anthropic sends them.
pub(crate) fn events(reply: &FakeReply, exchange: &Exchange) -> Vec<String> {
    let mut events = vec![message_start(reply, exchange)];
    let has_text = !reply.text.is_empty();
    if has_text {
        events.push(block_start(0, json!({"type": "text", "text": ""})));
    }
    events.push(PING.to_owned());
    if reply.unknown_event {
        events.push(event("future_thing", &json!({"type": "future_thing"})));
    }
    if has_text {
        events.extend(
            reply
                .text_pieces()
                .map(|piece| block_delta(0, json!({"type": "text_delta", "text": piece}))),
        );
        events.push(block_stop(0));
    }
    let first_tool = usize::from(has_text);
    for (index, call) in (first_tool..).zip(&reply.tool_calls) {
        let block = json!({"type": "tool_use", "id": call.id, "name": call.name, "input": {}});
        events.push(block_start(index, block));
        let fragments = std::iter::once("").chain(reply.args_pieces(call));
        events.extend(fragments.map(|fragment| {
            block_delta(
                index,
                json!({"type": "input_json_delta", "partial_json": fragment}),
            )
        }));
        events.push(block_stop(index));
    }
    events.push(event(
        "message_delta",
        &json!({
            "type": "message_delta",
            "delta": {"stop_reason": reply.stop_reason_or("tool_use", "end_turn"), "stop_sequence": null},
            "usage": {"output_tokens": reply.output_tokens},
        }),
    ));
    events.push(event("message_stop", &json!({"type": "message_stop"})));
    events
}

/// The `error` event Anthropic sends when a stream fails after it began,
/// e.g. `overloaded_error`.
pub(crate) fn stream_error_event(error_type: &str, message: &str) -> String {
    event("error", &error(error_type, message))
}

/// Anthropic's error body, with the error type its docs list per status.
pub(crate) fn error_body(status: u16, message: &str) -> Value {
    let kind = match status {
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        529 => "overloaded_error",
        500.. => "api_error",
        _ => "invalid_request_error",
    };
    error(kind, message)
}

fn error(kind: &str, message: &str) -> Value {
    json!({"type": "error", "error": {"type": kind, "message": message}})
}

/// `message_start` reports the input tokens and, as the API does, an output
/// count of 1; the real output count comes in `message_delta`.
fn message_start(reply: &FakeReply, exchange: &Exchange) -> String {
    let message = json!({
        "id": format!("msg_fake{}", exchange.number),
        "type": "message",
        "role": "assistant",
        "content": [],
        "model": exchange.model,
        "stop_reason": null,
        "stop_sequence": null,
        "usage": {
            "input_tokens": reply.input_tokens,
            "cache_creation_input_tokens": reply.cache_creation_input_tokens,
            "cache_read_input_tokens": reply.cache_read_input_tokens,
            "output_tokens": 1,
        },
    });
    event(
        "message_start",
        &json!({"type": "message_start", "message": message}),
    )
}

fn block_start(index: usize, content_block: Value) -> String {
    let start =
        json!({"type": "content_block_start", "index": index, "content_block": content_block});
    event("content_block_start", &start)
}

fn block_delta(index: usize, delta: Value) -> String {
    let delta = json!({"type": "content_block_delta", "index": index, "delta": delta});
    event("content_block_delta", &delta)
}

fn block_stop(index: usize) -> String {
    event(
        "content_block_stop",
        &json!({"type": "content_block_stop", "index": index}),
    )
}

fn event(name: &str, data: &Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}
