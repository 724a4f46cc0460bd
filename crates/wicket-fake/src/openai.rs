//! OpenAI Chat Completions streaming, as in the "Streaming" and streamed
//! function calling examples: every event is `data: {chunk}`, the stream
//! ends with `data: [DONE]`.

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use crate::steps::FakeReply;
use crate::wire::Exchange;

/// Every framed event of `reply`, in the order OpenAI sends them.
pub(crate) fn events(reply: &FakeReply, exchange: &Exchange) -> Vec<String> {
    let chunks = Chunks::new(exchange);
    let mut events = vec![chunks.choice(
        json!({"role": "assistant", "content": "", "refusal": null}),
        None,
    )];
    if reply.unknown_event {
        events.push(": keep-alive\n\n".to_owned());
    }
    events.extend(
        reply
            .text_pieces()
            .map(|piece| chunks.choice(json!({"content": piece}), None)),
    );
    for (index, call) in reply.tool_calls.iter().enumerate() {
        let start = json!({
            "index": index,
            "id": call.id,
            "type": "function",
            "function": {"name": call.name, "arguments": ""},
        });
        events.push(chunks.choice(json!({"tool_calls": [start]}), None));
        events.extend(reply.args_pieces(call).map(|fragment| {
            let delta = json!({"index": index, "function": {"arguments": fragment}});
            chunks.choice(json!({"tool_calls": [delta]}), None)
        }));
    }
    let finish = reply.stop_reason_or("tool_calls", "stop");
    events.push(chunks.choice(json!({}), Some(finish)));
    if exchange.include_usage {
        events.push(chunks.usage(reply));
    }
    events.push("data: [DONE]\n\n".to_owned());
    events
}

/// The error OpenAI puts in the stream when generation fails mid-way.
pub(crate) fn stream_error_event(error_type: &str, message: &str) -> String {
    data(&json!({"error": {"message": message, "type": error_type}}))
}

/// OpenAI's error body. The type and code follow what the API returns for
/// each status, so clients that branch on them see real values.
pub(crate) fn error_body(status: u16, message: &str) -> Value {
    let (kind, code) = match status {
        401 => ("invalid_request_error", json!("invalid_api_key")),
        429 => ("requests", json!("rate_limit_exceeded")),
        500.. => ("server_error", Value::Null),
        _ => ("invalid_request_error", Value::Null),
    };
    json!({"error": {"message": message, "type": kind, "param": null, "code": code}})
}

/// Builds the `chat.completion.chunk` objects of one response, which share
/// id, timestamp and model.
struct Chunks {
    id: String,
    created: u64,
    model: String,
    /// With `include_usage`, OpenAI adds `"usage": null` to every chunk
    /// but the last one.
    include_usage: bool,
}

impl Chunks {
    fn new(exchange: &Exchange) -> Chunks {
        Chunks {
            id: format!("chatcmpl-fake{}", exchange.number),
            created: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |since| since.as_secs()),
            model: exchange.model.clone(),
            include_usage: exchange.include_usage,
        }
    }

    /// A chunk with one choice carrying `delta`.
    fn choice(&self, delta: Value, finish_reason: Option<&str>) -> String {
        let choice = json!({
            "index": 0,
            "delta": delta,
            "logprobs": null,
            "finish_reason": finish_reason,
        });
        let mut chunk = self.chunk(vec![choice]);
        if self.include_usage {
            chunk["usage"] = Value::Null;
        }
        data(&chunk)
    }

    /// The trailing chunk `include_usage` asks for: no choices, the counts.
    fn usage(&self, reply: &FakeReply) -> String {
        let mut chunk = self.chunk(Vec::new());
        chunk["usage"] = json!({
            "prompt_tokens": reply.input_tokens,
            "completion_tokens": reply.output_tokens,
            "total_tokens": reply.input_tokens + reply.output_tokens,
            "prompt_tokens_details": {"cached_tokens": reply.cache_read_input_tokens},
        });
        data(&chunk)
    }

    fn chunk(&self, choices: Vec<Value>) -> Value {
        json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "system_fingerprint": "fp_fake",
            "choices": choices,
        })
    }
}

fn data(json: &Value) -> String {
    format!("data: {json}\n\n")
}
