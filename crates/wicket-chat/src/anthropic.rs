//! Anthropic Messages, streamed, with tool use.
//!
//! A reply streams as `message_start` (input tokens), then per content block
//! `content_block_start`, `content_block_delta`s (`text_delta` or
//! `input_json_delta`) and `content_block_stop`, then `message_delta`
//! (stop_reason, output tokens so far) and `message_stop`. `ping` and event
//! types this client does not know are skipped, as the API's versioning
//! policy asks; an `error` event fails the attempt.

use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde::Deserialize;
use serde_json::{Value, json};
use wicket_protocol::limits::REPLY_MAX_BLOCKS;

use crate::http::Http;
use crate::retry::Attempt;
use crate::{
    ChatError, ChatErrorKind, ClientConfig, Completion, Message, Request, StreamEvent,
    ToolCallRequest, Usage,
};

pub(crate) const ANTHROPIC_VERSION: &str = "2023-06-01";

pub(crate) struct Anthropic {
    name: String,
    url: String,
    headers: HeaderMap,
    http: Http,
}

impl Anthropic {
    pub(crate) fn new(
        name: &str,
        base_url: &str,
        key: String,
        config: &ClientConfig,
    ) -> Result<Self, ChatError> {
        let key = HeaderValue::from_str(&key).map_err(|_| {
            ChatError::new(
                ChatErrorKind::Config,
                "ANTHROPIC_API_KEY holds characters a header cannot carry",
            )
        })?;
        let mut headers = HeaderMap::new();
        headers.insert(HeaderName::from_static("x-api-key"), key);
        headers.insert(
            HeaderName::from_static("anthropic-version"),
            HeaderValue::from_static(ANTHROPIC_VERSION),
        );
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        Ok(Anthropic {
            name: name.to_string(),
            url: format!("{}/v1/messages", base_url.trim_end_matches('/')),
            headers,
            http: Http::new("anthropic", config)?,
        })
    }
}

impl Attempt for Anthropic {
    async fn attempt(
        &self,
        req: &Request,
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
    ) -> Result<Completion, ChatError> {
        let body = request_body(&self.name, req);
        let mut events = self
            .http
            .post_events(&self.url, self.headers.clone(), &body)
            .await?;
        let mut reply = Assembly::default();
        while let Some(event) = events.next().await? {
            let parsed: StreamMessage = crate::http::parse_event(&event.data)
                .map_err(|error| events.bad_event(&event.data, &error))?;
            if reply.add(parsed, on_event)? {
                return Ok(reply.finish());
            }
        }
        Err(events.ended_early())
    }
}

/// The request body. Roles must alternate, so consecutive messages of one
/// role (tool results, then the person's next words) become one message of
/// several blocks; an assistant message with nothing in it is left out.
fn request_body(name: &str, req: &Request) -> Value {
    let mut messages: Vec<(&str, Vec<Value>)> = Vec::new();
    for message in &req.messages {
        let (role, blocks) = match message {
            Message::User { text } => ("user", vec![json!({"type": "text", "text": text})]),
            Message::Assistant { text, tool_calls } => {
                let mut blocks = Vec::new();
                if !text.is_empty() {
                    blocks.push(json!({"type": "text", "text": text}));
                }
                for call in tool_calls {
                    blocks.push(json!({
                        "type": "tool_use",
                        "id": call.id,
                        "name": call.name,
                        "input": tool_input(&call.arguments),
                    }));
                }
                ("assistant", blocks)
            }
            Message::ToolResult {
                call_id,
                content,
                is_error,
            } => {
                let mut block =
                    json!({"type": "tool_result", "tool_use_id": call_id, "content": content});
                if *is_error {
                    block["is_error"] = json!(true);
                }
                ("user", vec![block])
            }
        };
        if blocks.is_empty() {
            continue;
        }
        match messages.last_mut() {
            Some((last, content)) if *last == role => content.extend(blocks),
            _ => messages.push((role, blocks)),
        }
    }
    // Prompt caching: a breakpoint on the last message, so the next
    // request (the same prefix plus what followed) reads it from the cache.
    if let Some((_, content)) = messages.last_mut()
        && let Some(last) = content.last_mut()
    {
        last["cache_control"] = cache_control();
    }
    let messages: Vec<Value> = messages
        .into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect();
    let mut body = json!({
        "model": name,
        "max_tokens": req.max_tokens,
        "messages": messages,
        "stream": true,
    });
    if !req.system.is_empty() {
        // A breakpoint after the system prompt: the tools come before it in
        // the prompt, so tools and system prompt are cached together.
        body["system"] =
            json!([{"type": "text", "text": req.system, "cache_control": cache_control()}]);
    }
    if !req.tools.is_empty() {
        body["tools"] = Value::Array(tools(req));
    }
    body
}

/// The tools, in the request's order; with no system prompt, the cache
/// breakpoint goes on the last of them.
fn tools(req: &Request) -> Vec<Value> {
    let mut tools: Vec<Value> = req
        .tools
        .iter()
        .map(|tool| {
            json!({
                "name": tool.name,
                "description": tool.description,
                "input_schema": tool.parameters,
            })
        })
        .collect();
    if req.system.is_empty()
        && let Some(last) = tools.last_mut()
    {
        last["cache_control"] = cache_control();
    }
    tools
}

/// An ephemeral prompt-cache breakpoint (Anthropic allows four a request;
/// Wicket sets two: after the tools and system prompt, and on the last message).
fn cache_control() -> Value {
    json!({"type": "ephemeral"})
}

/// A tool call's arguments as the object `tool_use.input` must be. The
/// model's text is kept as it was when it is not an object (the tool then
/// reports the bad arguments; the conversation stays sendable).
fn tool_input(arguments: &str) -> Value {
    match serde_json::from_str::<Value>(arguments) {
        Ok(value @ Value::Object(_)) => value,
        _ if arguments.trim().is_empty() => json!({}),
        _ => json!({ "arguments": arguments }),
    }
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum StreamMessage {
    MessageStart {
        message: StartMessage,
    },
    ContentBlockStart {
        index: usize,
        content_block: Value,
    },
    ContentBlockDelta {
        index: usize,
        delta: Value,
    },
    ContentBlockStop {},
    MessageDelta {
        #[serde(default)]
        delta: Value,
        usage: Option<DeltaUsage>,
    },
    MessageStop {},
    Ping {},
    Error {
        error: ErrorBody,
    },
    #[serde(other)]
    Unknown,
}

#[derive(Deserialize)]
struct StartMessage {
    usage: Option<StartUsage>,
}

#[derive(Deserialize)]
struct StartUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    cache_creation_input_tokens: u64,
    #[serde(default)]
    cache_read_input_tokens: u64,
}

/// Usage in `message_delta`: each count present is the total so far, and
/// overrides `message_start`'s (LiteLLM sends zeros there and the real
/// counts, cache reads included, only here).
#[derive(Deserialize)]
struct DeltaUsage {
    output_tokens: Option<u64>,
    input_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct ErrorBody {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    message: String,
}

/// One content block as it streams in.
enum Block {
    Text,
    ToolUse(ToolCallRequest),
    /// Thinking and other blocks: not part of the reply.
    Other,
}

#[derive(Default)]
struct Assembly {
    text: String,
    blocks: Vec<(usize, Block)>,
    usage: Usage,
    /// `input_tokens` as the server counts it: without the cached part.
    uncached_input: u64,
    /// Whether the server reported any usage.
    reported: bool,
    stop_reason: Option<crate::StopReason>,
}

impl Assembly {
    /// Takes one event; `true` once the message is complete.
    // One flat match with an arm per server-sent event type of the Messages API, read in one place; past 80 lines because the stream has that many kinds.
    fn add(
        &mut self,
        message: StreamMessage,
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
    ) -> Result<bool, ChatError> {
        match message {
            StreamMessage::MessageStart { message } => {
                if let Some(usage) = message.usage {
                    self.usage = Usage {
                        output_tokens: usage.output_tokens,
                        cache_creation_input_tokens: usage.cache_creation_input_tokens,
                        cache_read_input_tokens: usage.cache_read_input_tokens,
                        ..Usage::default()
                    };
                    self.uncached_input = usage.input_tokens;
                    self.reported = true;
                }
            }
            StreamMessage::ContentBlockStart {
                index,
                content_block,
            } => {
                let block = match content_block["type"].as_str() {
                    Some("text") => {
                        self.text_delta(content_block["text"].as_str(), on_event);
                        Block::Text
                    }
                    Some("tool_use") => Block::ToolUse(ToolCallRequest {
                        id: content_block["id"].as_str().unwrap_or_default().into(),
                        name: content_block["name"]
                            .as_str()
                            .unwrap_or_default()
                            .to_string(),
                        arguments: String::new(),
                    }),
                    _ => Block::Other,
                };
                self.bounded()?;
                self.blocks.push((index, block));
            }
            StreamMessage::ContentBlockDelta { index, delta } => match delta["type"].as_str() {
                Some("text_delta") => self.text_delta(delta["text"].as_str(), on_event),
                Some("input_json_delta") => {
                    let fragment = delta["partial_json"].as_str().unwrap_or_default();
                    let block = self.blocks.iter_mut().rev().find(|(at, _)| *at == index);
                    if let Some((_, Block::ToolUse(call))) = block {
                        call.arguments.push_str(fragment);
                    }
                }
                _ => {}
            },
            StreamMessage::MessageDelta { delta, usage } => {
                if let Some(reason) = delta["stop_reason"].as_str() {
                    self.stop_reason = Some(crate::StopReason::from_provider(reason));
                }
                if let Some(usage) = usage {
                    // Counts here are totals so far, not increments; each
                    // one present is taken, field by field.
                    if let Some(output) = usage.output_tokens {
                        self.usage.output_tokens = output;
                    }
                    if let Some(input) = usage.input_tokens.filter(|&input| input > 0) {
                        self.uncached_input = input;
                    }
                    if let Some(created) = usage.cache_creation_input_tokens {
                        self.usage.cache_creation_input_tokens = created;
                    }
                    if let Some(read) = usage.cache_read_input_tokens {
                        self.usage.cache_read_input_tokens = read;
                    }
                    self.reported = true;
                }
            }
            StreamMessage::MessageStop {} => return Ok(true),
            StreamMessage::Error { error } => return Err(stream_error(&error)),
            StreamMessage::ContentBlockStop {}
            | StreamMessage::Ping {}
            | StreamMessage::Unknown => {}
        }
        Ok(false)
    }

    /// Refuses a block past what a reply may hold: the count is the
    /// server's to choose, and every block is kept until the reply ends.
    fn bounded(&self) -> Result<(), ChatError> {
        if self.blocks.len() < REPLY_MAX_BLOCKS {
            return Ok(());
        }
        Err(ChatError::new(
            ChatErrorKind::Protocol,
            format!(
                "anthropic: the stream started more than the {REPLY_MAX_BLOCKS} content blocks \
                 a reply may hold; the server (or a proxy before it) sent a broken stream, \
                 check its log"
            ),
        ))
    }

    fn text_delta(&mut self, text: Option<&str>, on_event: &mut (dyn FnMut(StreamEvent) + Send)) {
        if let Some(text) = text.filter(|text| !text.is_empty()) {
            self.text.push_str(text);
            on_event(StreamEvent::Text(text.to_string()));
        }
    }

    fn finish(self) -> Completion {
        let tool_calls = self
            .blocks
            .into_iter()
            .filter_map(|(_, block)| match block {
                Block::ToolUse(mut call) => {
                    if call.arguments.trim().is_empty() {
                        call.arguments = "{}".into();
                    }
                    Some(call)
                }
                Block::Text | Block::Other => None,
            })
            .collect();
        // Wicket's input count is all of it: Anthropic counts cached input
        // apart from `input_tokens`.
        let usage = Usage {
            // The counts are the server's: added without overflow.
            input_tokens: self
                .uncached_input
                .saturating_add(self.usage.cache_creation_input_tokens)
                .saturating_add(self.usage.cache_read_input_tokens),
            ..self.usage
        };
        Completion {
            text: self.text,
            tool_calls,
            usage: self.reported.then_some(usage),
            stop_reason: self.stop_reason,
            attempts: 1,
        }
    }
}

/// An `error` event, as the status its type stands for, so overload and
/// rate limits mid-stream are retried like their HTTP forms.
fn stream_error(error: &ErrorBody) -> ChatError {
    let status = match error.kind.as_str() {
        "overloaded_error" => Some(529),
        "rate_limit_error" => Some(429),
        "api_error" => Some(500),
        "timeout_error" => Some(504),
        "invalid_request_error" => Some(400),
        "authentication_error" => Some(401),
        "permission_error" => Some(403),
        "not_found_error" => Some(404),
        "request_too_large" => Some(413),
        _ => None,
    };
    let message = format!("anthropic: {}: {}", error.kind, error.message);
    match status {
        Some(status) => ChatError::new(ChatErrorKind::Http { status }, message),
        None => ChatError::new(ChatErrorKind::Stream, message),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_results_and_the_next_words_share_one_user_message() {
        let call = |id: &str| ToolCallRequest {
            id: id.into(),
            name: "read_file".into(),
            arguments: r#"{"path":"a"}"#.into(),
        };
        let result = |id: &str, is_error| Message::ToolResult {
            call_id: id.into(),
            content: "out".into(),
            is_error,
        };
        let req = Request {
            system: "sys".into(),
            messages: vec![
                Message::User { text: "go".into() },
                Message::Assistant {
                    text: "reading".into(),
                    tool_calls: vec![call("toolu_1"), call("toolu_2")],
                },
                result("toolu_1", false),
                result("toolu_2", true),
                Message::User {
                    text: "and then?".into(),
                },
            ],
            tools: Vec::new(),
            max_tokens: 512,
        };
        let body = request_body("claude-x", &req);
        assert_eq!(body["max_tokens"], 512);
        assert_eq!(
            body["system"],
            json!([{"type": "text", "text": "sys", "cache_control": {"type": "ephemeral"}}])
        );
        assert_eq!(
            body["messages"],
            json!([
                {"role": "user", "content": [{"type": "text", "text": "go"}]},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "reading"},
                    {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a"}},
                    {"type": "tool_use", "id": "toolu_2", "name": "read_file", "input": {"path": "a"}},
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "out"},
                    {"type": "tool_result", "tool_use_id": "toolu_2", "content": "out", "is_error": true},
                    {"type": "text", "text": "and then?", "cache_control": {"type": "ephemeral"}},
                ]},
            ])
        );
    }

    #[test]
    fn arguments_that_are_not_an_object_still_make_an_object() {
        assert_eq!(tool_input(""), json!({}));
        assert_eq!(tool_input("[1]"), json!({"arguments": "[1]"}));
        assert_eq!(tool_input(r#"{"a":1}"#), json!({"a": 1}));
    }

    #[test]
    fn error_events_map_to_the_status_they_stand_for() {
        let error = |kind: &str| ErrorBody {
            kind: kind.into(),
            message: "m".into(),
        };
        assert!(stream_error(&error("overloaded_error")).is_retryable());
        assert_eq!(
            stream_error(&error("overloaded_error")).kind,
            ChatErrorKind::Http { status: 529 }
        );
        assert!(!stream_error(&error("invalid_request_error")).is_retryable());
    }

    mod hostile {
        use proptest::prelude::*;

        use super::*;

        /// An event as a broken or hostile server might send it: blocks at
        /// any index and of any type, deltas for blocks that never started,
        /// usage at any size, and bytes that are not JSON.
        fn event() -> impl Strategy<Value = String> {
            let index = prop_oneof![0u64..8, Just(u64::MAX), any::<u64>()];
            let kind = prop_oneof![
                Just("text"),
                Just("tool_use"),
                Just("thinking"),
                Just("server_tool_use")
            ];
            let piece = "[a-z_{}\":]{0,12}";
            prop_oneof![
                (index.clone(), kind, piece, piece).prop_map(|(index, kind, id, text)| {
                    json!({"type": "content_block_start", "index": index,
                        "content_block": {"type": kind, "id": id, "name": "read_file", "text": text}})
                    .to_string()
                }),
                (index, prop::bool::ANY, piece).prop_map(|(index, json, text)| {
                    let delta = if json {
                        json!({"type": "input_json_delta", "partial_json": text})
                    } else {
                        json!({"type": "text_delta", "text": text})
                    };
                    json!({"type": "content_block_delta", "index": index, "delta": delta}).to_string()
                }),
                (any::<u64>(), any::<u64>(), any::<u64>()).prop_map(|(input, created, read)| {
                    json!({"type": "message_start", "message": {"usage": {"input_tokens": input,
                        "cache_creation_input_tokens": created, "cache_read_input_tokens": read}}})
                    .to_string()
                }),
                (any::<u64>(), any::<u64>()).prop_map(|(output, read)| {
                    json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"},
                        "usage": {"output_tokens": output, "cache_read_input_tokens": read}})
                    .to_string()
                }),
                Just(r#"{"type":"content_block_stop","index":0}"#.to_string()),
                Just(r#"{"type":"message_stop"}"#.to_string()),
                any::<String>(),
            ]
        }

        fn held(reply: &Assembly) -> usize {
            reply.blocks.capacity() * std::mem::size_of::<(usize, Block)>()
                + reply.text.capacity()
                + reply
                    .blocks
                    .iter()
                    .map(|(_, block)| match block {
                        Block::ToolUse(call) => {
                            call.id.len() + call.name.capacity() + call.arguments.capacity()
                        }
                        Block::Text | Block::Other => 0,
                    })
                    .sum::<usize>()
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(crate::proptest_cases()))]

            /// Whatever the events, the assembly never panics (usage that
            /// would overflow included), a block past the bound ends the
            /// reply as a protocol error, and what it holds stays within a
            /// fixed part plus twice the bytes received.
            #[test]
            fn any_events_never_panic_and_memory_follows_the_bytes(events in proptest::collection::vec(event(), 0..60)) {
                let mut reply = Assembly::default();
                let mut received = 0usize;
                for data in &events {
                    received += data.len();
                    let Ok(message) = crate::http::parse_event::<StreamMessage>(data) else {
                        continue;
                    };
                    let starts = matches!(message, StreamMessage::ContentBlockStart { .. });
                    let full = reply.blocks.len() >= REPLY_MAX_BLOCKS;
                    match reply.add(message, &mut |_| {}) {
                        Ok(true) => break,
                        Ok(false) => prop_assert!(!(starts && full)),
                        Err(error) => {
                            if error.kind == ChatErrorKind::Protocol {
                                prop_assert!(starts && full);
                            }
                            break;
                        }
                    }
                    let bound = 2 * REPLY_MAX_BLOCKS * std::mem::size_of::<(usize, Block)>()
                        + 2 * received;
                    prop_assert!(held(&reply) <= bound, "{} held past {bound}", held(&reply));
                }
                let completion = reply.finish();
                prop_assert!(completion.tool_calls.len() <= REPLY_MAX_BLOCKS);
            }

            /// More blocks than a reply may hold: the stream is refused at
            /// the first one past the bound.
            #[test]
            fn blocks_past_the_bound_are_a_protocol_error(extra in 1usize..4) {
                let mut reply = Assembly::default();
                let mut refused = None;
                for index in 0..REPLY_MAX_BLOCKS + extra {
                    let message = StreamMessage::ContentBlockStart {
                        index,
                        content_block: json!({"type": "tool_use", "id": "t", "name": "read_file"}),
                    };
                    if let Err(error) = reply.add(message, &mut |_| {}) {
                        refused = Some((index, error));
                        break;
                    }
                }
                let (index, error) = refused.expect("refused");
                prop_assert_eq!(index, REPLY_MAX_BLOCKS);
                prop_assert_eq!(error.kind, ChatErrorKind::Protocol);
            }
        }
    }
}
