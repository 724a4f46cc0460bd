//! OpenAI Chat Completions, streamed, with function tools. The same wire
//! format serves Ollama, vLLM, llama.cpp's server, LM Studio and OpenRouter.
//!
//! A reply streams as `chat.completion.chunk` objects: text in
//! `delta.content`, each tool call announced by its `index` with its `id` and
//! `function.name`, its `function.arguments` in fragments over later chunks,
//! `finish_reason` on the last choice chunk, then (with
//! `stream_options.include_usage`) a chunk with empty `choices` and the
//! usage, then `data: [DONE]`.

use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderValue};
use serde::Deserialize;
use serde_json::{Value, json};
use wicket_protocol::limits::REPLY_MAX_BLOCKS;

use crate::http::Http;
use crate::retry::Attempt;
use crate::{
    ChatError, ChatErrorKind, ClientConfig, Completion, Message, Request, StreamEvent,
    ToolCallRequest, ToolChoice, Usage,
};

pub(crate) struct OpenAi {
    name: String,
    url: String,
    key: Option<String>,
    http: Http,
    /// The server refused `max_tokens` and asked for `max_completion_tokens`
    /// (OpenAI's newer models); from then on the limit goes under that name.
    completion_tokens: std::sync::atomic::AtomicBool,
    /// Sent with the tools when the person's config says so.
    tool_choice: Option<ToolChoice>,
}

impl OpenAi {
    /// The client with `tool_choice` sent beside the tools.
    pub(crate) fn with_tool_choice(mut self, tool_choice: Option<ToolChoice>) -> Self {
        self.tool_choice = tool_choice;
        self
    }

    pub(crate) fn new(
        name: &str,
        base_url: &str,
        key: Option<String>,
        config: &ClientConfig,
    ) -> Result<Self, ChatError> {
        Ok(OpenAi {
            name: name.to_string(),
            url: format!("{}/chat/completions", base_url.trim_end_matches('/')),
            key,
            http: Http::new("openai", config)?,
            completion_tokens: std::sync::atomic::AtomicBool::new(false),
            tool_choice: None,
        })
    }

    fn body(&self, req: &Request, renamed: bool) -> Value {
        let mut body = request_body(&self.name, req, limit_name(renamed));
        if let Some(choice) = self.tool_choice.filter(|_| !req.tools.is_empty()) {
            body["tool_choice"] = json!(choice.as_str());
        }
        body
    }

    fn headers(&self) -> Result<HeaderMap, ChatError> {
        let mut headers = HeaderMap::new();
        if let Some(key) = &self.key {
            let value = HeaderValue::from_str(&format!("Bearer {key}")).map_err(|_| {
                ChatError::new(
                    ChatErrorKind::Config,
                    "OPENAI_API_KEY holds characters a header cannot carry",
                )
            })?;
            headers.insert(AUTHORIZATION, value);
        }
        Ok(headers)
    }
}

impl Attempt for OpenAi {
    async fn attempt(
        &self,
        req: &Request,
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
    ) -> Result<Completion, ChatError> {
        use std::sync::atomic::Ordering;
        let renamed = self.completion_tokens.load(Ordering::Relaxed);
        let body = self.body(req, renamed);
        let posted = self
            .http
            .post_events(&self.url, self.headers()?, &body)
            .await;
        let mut events = match posted {
            Err(error) if !renamed && asks_for_completion_tokens(&error) => {
                self.completion_tokens.store(true, Ordering::Relaxed);
                let body = self.body(req, true);
                self.http
                    .post_events(&self.url, self.headers()?, &body)
                    .await?
            }
            posted => posted?,
        };
        let mut reply = Assembly::default();
        let mut seen = 0usize;
        while let Some(event) = events.next().await? {
            seen += 1;
            if event.data.trim() == "[DONE]" {
                return Ok(reply.finish());
            }
            let chunk: Chunk = crate::http::parse_event(&event.data)
                .map_err(|error| events.bad_event(&event.data, &error))?;
            reply.add(chunk, on_event)?;
        }
        if reply.stop_reason.is_some() {
            // Some compatible servers end the body without `[DONE]` once the
            // last choice chunk is out; the reply is whole.
            return Ok(reply.finish());
        }
        if seen == 0 {
            // A whole, empty 200: llama-cpp-python's answer when it cannot
            // stream `tool_choice: "auto"`, or when the prompt passes its
            // window. Asking again gets the same.
            return Err(ChatError::new(
                ChatErrorKind::Protocol,
                "openai: the server answered 200 OK with an empty body: no reply and no error. \
                 Some servers do this when the prompt is longer than their context window, \
                 or when they cannot stream tool calls; check the server's log",
            ));
        }
        Err(events.ended_early())
    }
}

/// The name the output limit goes under: `max_tokens`, which every
/// OpenAI-compatible server knows, or `max_completion_tokens` once the
/// server asked for it.
fn limit_name(renamed: bool) -> &'static str {
    if renamed {
        "max_completion_tokens"
    } else {
        "max_tokens"
    }
}

/// OpenAI's 400 for a model that takes only `max_completion_tokens`.
fn asks_for_completion_tokens(error: &ChatError) -> bool {
    error.kind == ChatErrorKind::Http { status: 400 }
        && error.message.contains("max_completion_tokens")
}

/// The request body. The output limit is always sent (`limit` names it):
/// local servers default to none, and a rambling model then fills its
/// whole window.
fn request_body(name: &str, req: &Request, limit: &str) -> Value {
    let mut messages = vec![json!({"role": "system", "content": req.system})];
    for message in &req.messages {
        messages.push(match message {
            Message::User { text } => json!({"role": "user", "content": text}),
            Message::Assistant { text, tool_calls } => {
                let mut entry = json!({
                    "role": "assistant",
                    "content": if text.is_empty() { Value::Null } else { json!(text) },
                });
                if !tool_calls.is_empty() {
                    entry["tool_calls"] = tool_calls
                        .iter()
                        .map(|call| {
                            json!({
                                "id": call.id,
                                "type": "function",
                                "function": {"name": call.name, "arguments": call.arguments},
                            })
                        })
                        .collect();
                }
                entry
            }
            Message::ToolResult {
                call_id, content, ..
            } => json!({"role": "tool", "tool_call_id": call_id, "content": content}),
        });
    }
    let mut body = json!({
        "model": name,
        "messages": messages,
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    body[limit] = json!(req.max_tokens);
    if !req.tools.is_empty() {
        body["tools"] = req
            .tools
            .iter()
            .map(|tool| {
                json!({
                    "type": "function",
                    "function": {
                        "name": tool.name,
                        "description": tool.description,
                        "parameters": tool.parameters,
                    },
                })
            })
            .collect();
    }
    body
}

/// `null` read as the field's default: real servers send `"tool_calls":
/// null` (llama-cpp-python) where the field means "none".
fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

#[derive(Deserialize)]
struct Chunk {
    #[serde(default, deserialize_with = "null_as_default")]
    choices: Vec<Choice>,
    usage: Option<ChunkUsage>,
    /// Some servers report a failure inside the stream.
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default, deserialize_with = "null_as_default")]
    delta: Delta,
    finish_reason: Option<String>,
}

#[derive(Deserialize, Default)]
struct Delta {
    content: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    tool_calls: Vec<ToolCallDelta>,
}

#[derive(Deserialize)]
struct ToolCallDelta {
    #[serde(default, deserialize_with = "null_as_default")]
    index: usize,
    id: Option<String>,
    function: Option<FunctionDelta>,
}

#[derive(Deserialize)]
struct FunctionDelta {
    name: Option<String>,
    arguments: Option<String>,
}

#[derive(Deserialize)]
struct ChunkUsage {
    #[serde(default, deserialize_with = "null_as_default")]
    prompt_tokens: u64,
    #[serde(default, deserialize_with = "null_as_default")]
    completion_tokens: u64,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
}

#[derive(Deserialize)]
struct PromptDetails {
    #[serde(default, deserialize_with = "null_as_default")]
    cached_tokens: u64,
}

/// A reply being put together from its chunks.
#[derive(Default)]
struct Assembly {
    text: String,
    /// By the `index` the stream gave each call.
    calls: Vec<Option<ToolCallRequest>>,
    usage: Option<Usage>,
    stop_reason: Option<crate::StopReason>,
}

impl Assembly {
    fn add(
        &mut self,
        chunk: Chunk,
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
    ) -> Result<(), ChatError> {
        if let Some(error) = chunk.error {
            let message = error
                .get("message")
                .and_then(Value::as_str)
                .map_or_else(|| error.to_string(), str::to_string);
            return Err(ChatError::new(
                ChatErrorKind::Stream,
                format!("openai: the stream reported an error: {message}"),
            ));
        }
        if let Some(usage) = chunk.usage {
            self.usage = Some(Usage {
                input_tokens: usage.prompt_tokens,
                output_tokens: usage.completion_tokens,
                cache_read_input_tokens: usage
                    .prompt_tokens_details
                    .map_or(0, |details| details.cached_tokens),
                ..Usage::default()
            });
        }
        for choice in chunk.choices {
            if let Some(text) = choice.delta.content.filter(|text| !text.is_empty()) {
                self.text.push_str(&text);
                on_event(StreamEvent::Text(text));
            }
            for delta in choice.delta.tool_calls {
                self.add_call(delta)?;
            }
            if let Some(reason) = &choice.finish_reason {
                self.stop_reason = Some(crate::StopReason::from_provider(reason));
            }
        }
        Ok(())
    }

    fn add_call(&mut self, delta: ToolCallDelta) -> Result<(), ChatError> {
        // The index is the server's word, and the calls are kept by it: it
        // is bounded before it sizes anything (an index of 2^32 would ask
        // for a vector of 150 GB and abort the process).
        if delta.index >= REPLY_MAX_BLOCKS {
            return Err(ChatError::new(
                ChatErrorKind::Protocol,
                format!(
                    "openai: the stream numbered a tool call {}, past the {REPLY_MAX_BLOCKS} \
                     calls a streamed reply may hold; the server (or a proxy before it) sent a \
                     broken stream, check its log",
                    delta.index
                ),
            ));
        }
        if self.calls.len() <= delta.index {
            self.calls.resize_with(delta.index + 1, || None);
        }
        let Some(slot) = self.calls.get_mut(delta.index) else {
            return Ok(());
        };
        let call = slot.get_or_insert_with(|| ToolCallRequest {
            id: Default::default(),
            name: String::new(),
            arguments: String::new(),
        });
        if let Some(id) = delta.id.filter(|id| !id.is_empty()) {
            call.id = id.into();
        }
        if let Some(function) = delta.function {
            // A name repeated in every chunk (llama-cpp-python, and LiteLLM
            // passing it on) is the same name, not more of it.
            if let Some(name) = function.name.filter(|name| *name != call.name) {
                call.name.push_str(&name);
            }
            if let Some(arguments) = function.arguments {
                call.arguments.push_str(&arguments);
            }
        }
        Ok(())
    }

    /// The reply; a call the server sent without an id gets one, so its
    /// result can be matched to it.
    fn finish(self) -> Completion {
        let tool_calls = self
            .calls
            .into_iter()
            .flatten()
            .enumerate()
            .map(|(n, mut call)| {
                if call.id.is_empty() {
                    call.id = format!("call_{n}").into();
                }
                call
            })
            .collect();
        Completion {
            text: self.text,
            tool_calls,
            usage: self.usage,
            stop_reason: self.stop_reason,
            attempts: 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ToolSpec;

    #[test]
    fn the_body_carries_the_conversation_in_openai_roles() {
        let req = Request {
            system: "be brief".into(),
            messages: vec![
                Message::User { text: "hi".into() },
                Message::Assistant {
                    text: String::new(),
                    tool_calls: vec![ToolCallRequest {
                        id: "call_1".into(),
                        name: "read_file".into(),
                        arguments: r#"{"path":"a"}"#.into(),
                    }],
                },
                Message::ToolResult {
                    call_id: "call_1".into(),
                    content: "{}".into(),
                    is_error: false,
                },
                Message::Assistant {
                    text: "done".into(),
                    tool_calls: Vec::new(),
                },
            ],
            tools: vec![ToolSpec {
                name: "read_file".into(),
                description: "reads".into(),
                parameters: json!({"type": "object"}),
            }],
            max_tokens: 100,
        };
        let body = request_body("gpt-x", &req, limit_name(false));
        assert_eq!(body["max_tokens"], 100);
        assert_eq!(
            request_body("gpt-x", &req, limit_name(true))["max_completion_tokens"],
            100
        );
        assert_eq!(
            body["messages"],
            json!([
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"a\"}"}}
                ]},
                {"role": "tool", "tool_call_id": "call_1", "content": "{}"},
                {"role": "assistant", "content": "done"},
            ])
        );
        assert_eq!(body["tools"][0]["function"]["name"], "read_file");
        assert_eq!(body["stream_options"], json!({"include_usage": true}));
        assert_eq!(body["model"], "gpt-x");
    }

    mod hostile {
        use proptest::prelude::*;

        use super::*;

        /// A chunk as a broken or hostile server might send it: calls at any
        /// index, text, usage at any size, and bytes that are not JSON.
        fn chunk() -> impl Strategy<Value = String> {
            let index = prop_oneof![
                0u64..8,
                0u64..(2 * REPLY_MAX_BLOCKS as u64),
                Just(1u64 << 31),
                Just(1u64 << 32),
                Just((1u64 << 63) - 1),
                Just(u64::MAX),
                any::<u64>(),
            ];
            let piece = || proptest::option::of("[a-z_{}\":]{0,12}");
            prop_oneof![
                (index, piece(), piece(), piece()).prop_map(|(index, id, name, arguments)| {
                    json!({"choices": [{"delta": {"tool_calls": [
                        {"index": index, "id": id, "function": {"name": name, "arguments": arguments}}
                    ]}}]})
                    .to_string()
                }),
                ".{0,16}".prop_map(|text| json!({"choices": [{"delta": {"content": text}}]}).to_string()),
                (any::<u64>(), any::<u64>()).prop_map(|(prompt, completion)| {
                    json!({"choices": [], "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                        "prompt_tokens_details": {"cached_tokens": prompt}}})
                    .to_string()
                }),
                Just(r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#.to_string()),
                any::<String>(),
            ]
        }

        /// What the assembly holds on the heap.
        fn held(reply: &Assembly) -> usize {
            reply.calls.capacity() * std::mem::size_of::<Option<ToolCallRequest>>()
                + reply.text.capacity()
                + reply
                    .calls
                    .iter()
                    .flatten()
                    .map(|call| call.id.len() + call.name.capacity() + call.arguments.capacity())
                    .sum::<usize>()
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(crate::proptest_cases()))]

            /// Whatever the chunks, the assembly never panics, an index past
            /// the bound ends the reply as a protocol error, and what it
            /// holds stays within a fixed part plus twice the bytes received.
            #[test]
            fn any_chunks_never_panic_and_memory_follows_the_bytes(chunks in proptest::collection::vec(chunk(), 0..40)) {
                let mut reply = Assembly::default();
                let mut received = 0usize;
                for data in &chunks {
                    received += data.len();
                    let Ok(chunk) = crate::http::parse_event::<Chunk>(data) else {
                        continue;
                    };
                    let past = chunk.choices.iter().flat_map(|choice| &choice.delta.tool_calls)
                        .any(|call| call.index >= REPLY_MAX_BLOCKS);
                    match reply.add(chunk, &mut |_| {}) {
                        Ok(()) => prop_assert!(!past),
                        Err(error) => {
                            prop_assert!(past);
                            prop_assert_eq!(error.kind, ChatErrorKind::Protocol);
                            break;
                        }
                    }
                    let bound = 2 * REPLY_MAX_BLOCKS * std::mem::size_of::<Option<ToolCallRequest>>()
                        + 2 * received;
                    prop_assert!(held(&reply) <= bound, "{} held past {bound}", held(&reply));
                }
                let completion = reply.finish();
                prop_assert!(completion.tool_calls.len() <= REPLY_MAX_BLOCKS);
                prop_assert!(completion.tool_calls.iter().all(|call| !call.id.is_empty()));
            }
        }
    }
}
