//! Streaming chat clients with tool calls, behind one trait.
//!
//! [`ChatClient::complete`] sends the whole conversation and returns one
//! assistant reply: its text, the tool calls it asks for (arguments as the
//! raw JSON string the model wrote) and the tokens it cost. Text is passed to
//! `on_event` as it streams, and so is every retry, so a front end can show
//! both. A retry repeats the whole request and keeps nothing of the broken
//! attempt: tool calls come only from a reply that streamed to its end, so a
//! retried reply never runs a tool twice.
//!
//! Three providers: OpenAI Chat Completions (which also serves Ollama, vLLM,
//! llama.cpp's server, LM Studio and OpenRouter through its base URL),
//! Anthropic Messages, and `script:PATH`, which replays a JSON file.

mod anthropic;
mod http;
mod openai;
mod replay;
mod retry;
pub mod sse;
pub mod tls;
pub mod window;

/// Cases each property test of this crate runs: a fixed 256, so CI is the
/// same size every time and quick; a longer campaign sets `PROPTEST_CASES`.
#[cfg(test)]
pub(crate) fn proptest_cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|cases| cases.parse().ok())
        .unwrap_or(256)
}

use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::time::Duration;

use retry::Retried;
pub use retry::RetryPolicy;
pub use wicket_protocol::{StopReason, ToolCallRequest, ToolSpec, Usage};

/// One entry of the conversation, in the providers' common shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    /// What the person said (or a notice the runtime adds for the model).
    User {
        /// The text.
        text: String,
    },
    /// What the model said and the calls it made.
    Assistant {
        /// The text.
        text: String,
        /// The calls.
        tool_calls: Vec<ToolCallRequest>,
    },
    /// A call's result.
    ToolResult {
        /// The call it answers.
        call_id: wicket_protocol::CallId,
        /// The result as JSON text.
        content: String,
        /// True when the call failed.
        is_error: bool,
    },
}

impl Message {
    /// About how many bytes it adds to a request: its text, its calls'
    /// names, ids and arguments, or its result.
    pub fn bytes(&self) -> usize {
        match self {
            Message::User { text } => text.len(),
            Message::Assistant { text, tool_calls } => {
                text.len()
                    + tool_calls
                        .iter()
                        .map(|call| call.arguments.len() + call.name.len() + call.id.len())
                        .sum::<usize>()
            }
            Message::ToolResult { content, .. } => content.len(),
        }
    }
}

/// Everything one model call needs.
#[derive(Debug, Clone)]
pub struct Request {
    /// The system prompt.
    pub system: String,
    /// The conversation so far.
    pub messages: Vec<Message>,
    /// The tools the model may call.
    pub tools: Vec<ToolSpec>,
    /// The reply's output limit.
    pub max_tokens: u32,
}

impl Request {
    /// About how large it is, in bytes: the system prompt, the tools'
    /// names, descriptions and schemas, and every message. What the
    /// runtime's token estimate (and a test's expectation of it) starts from.
    pub fn bytes(&self) -> usize {
        let tools: usize = self
            .tools
            .iter()
            .map(|tool| {
                tool.name.len() + tool.description.len() + tool.parameters.to_string().len()
            })
            .sum();
        self.system.len() + tools + self.messages.iter().map(Message::bytes).sum::<usize>()
    }
}

/// One complete assistant reply: what the model said, the calls it made,
/// what it cost.
#[derive(Debug, Clone)]
pub struct Completion {
    /// Its text.
    pub text: String,
    /// The calls it made, in order.
    pub tool_calls: Vec<ToolCallRequest>,
    /// Its tokens.
    /// `None` when the server reported none (llama-cpp-python's streams,
    /// a script): unknown, never zero.
    pub usage: Option<Usage>,
    /// Why the reply ended, when the provider said.
    pub stop_reason: Option<StopReason>,
    /// Requests it took, 1 when the first one went through.
    pub attempts: u32,
}

/// What happens while a reply streams.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamEvent {
    /// A piece of the reply's text. After a `Retry` the text starts over.
    Text(String),
    /// The attempt before failed; attempt number `attempt` starts after
    /// `delay_ms`.
    Retry {
        /// The attempt about to start.
        attempt: u32,
        /// The wait before it.
        delay_ms: u64,
        /// Why the last one failed.
        reason: String,
    },
}

/// The future of one reply.
pub type ChatFuture<'a> = Pin<Box<dyn Future<Output = Result<Completion, ChatError>> + Send + 'a>>;

/// A streaming chat model with tool calls.
pub trait ChatClient: Send + Sync {
    /// The model string it was made from (`openai:gpt-4.1`, `script:demo.json`).
    fn model(&self) -> &str;

    /// One assistant reply to the conversation in `req`, retried as the
    /// client's policy says.
    fn complete<'a>(
        &'a self,
        req: &'a Request,
        on_event: &'a mut (dyn FnMut(StreamEvent) + Send),
    ) -> ChatFuture<'a>;
}

/// A model call that failed, with what to tell the person.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct ChatError {
    /// What kind of failure.
    pub kind: ChatErrorKind,
    /// What happened, for the person.
    pub message: String,
    /// How long the server asked us to wait (`Retry-After`).
    pub retry_after: Option<Duration>,
}

/// What kind of failure a [`ChatError`] is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChatErrorKind {
    /// The model string, a key or a script is wrong; nothing was sent.
    Config,
    /// The server answered with this status (or an error event that stands
    /// for it mid-stream).
    Http {
        /// The status.
        status: u16,
    },
    /// No response headers within the request timeout, or no bytes within the
    /// idle timeout.
    Timeout,
    /// The connection could not be made or broke.
    Connection,
    /// The stream ended early or broke.
    Stream,
    /// The server sent something that is not the protocol (an event that
    /// does not parse, an empty body): asking again would get the same.
    Protocol,
    /// The script provider has no reply for this point of the conversation.
    Script,
}

impl ChatError {
    /// A failure of `kind`.
    pub fn new(kind: ChatErrorKind, message: impl Into<String>) -> Self {
        ChatError {
            kind,
            message: message.into(),
            retry_after: None,
        }
    }

    /// Whether the provider said the prompt does not fit the model's context
    /// window: asking again unchanged cannot help, a smaller conversation can.
    /// [`CONTEXT_TOO_LONG`] says how each server we know puts it.
    pub fn is_context_too_long(&self) -> bool {
        let status = match self.kind {
            ChatErrorKind::Http { status } => status,
            _ => return false,
        };
        let message = self.message.to_ascii_lowercase();
        CONTEXT_TOO_LONG
            .iter()
            .any(|(_, statuses, needle)| statuses.contains(&status) && message.contains(needle))
    }

    /// Whether asking again may help: rate limits, overload, server errors,
    /// dropped connections, timeouts and cut streams.
    pub fn is_retryable(&self) -> bool {
        if self.is_context_too_long() {
            // Ollama says it with a 500; the same prompt gets the same answer.
            return false;
        }
        match self.kind {
            ChatErrorKind::Http { status } => matches!(status, 429 | 500..=504 | 529),
            ChatErrorKind::Timeout | ChatErrorKind::Connection | ChatErrorKind::Stream => true,
            ChatErrorKind::Config | ChatErrorKind::Script | ChatErrorKind::Protocol => false,
        }
    }
}

/// How each server says a prompt does not fit its window: the server, the
/// statuses it uses, and a piece of its message (lower case). One test row
/// per server's exact body keeps each honest (`tests::context_errors`).
pub const CONTEXT_TOO_LONG: [(&str, &[u16], &str); 9] = [
    ("OpenAI, vLLM", &[400], "maximum context length"),
    ("OpenAI", &[400], "context_length_exceeded"),
    ("Anthropic", &[400, 413], "prompt is too long"),
    ("llama.cpp", &[400], "exceeds the available context size"),
    ("Ollama", &[400, 500], "exceeds context length"),
    ("Ollama", &[400, 500], "exceeds the context length"),
    ("others", &[400, 413, 422], "context window"),
    ("others", &[400, 413, 422], "too many tokens"),
    ("others", &[400, 413, 422], "input is too long"),
];

/// Where the providers are and how patient to be with them.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// OpenAI-compatible base URL, up to and including `/v1`.
    pub openai_base_url: Option<String>,
    /// `OPENAI_API_KEY`.
    pub openai_api_key: Option<String>,
    /// Anthropic base URL, without `/v1`.
    pub anthropic_base_url: Option<String>,
    /// `ANTHROPIC_API_KEY`.
    pub anthropic_api_key: Option<String>,
    /// Ollama's address; its OpenAI-compatible API is under `/v1`.
    pub ollama_host: Option<String>,
    /// How long to wait for a response's headers.
    pub request_timeout: Duration,
    /// How long a stream may go without a byte.
    pub idle_timeout: Duration,
    /// How failed requests are retried.
    pub retry: RetryPolicy,
    /// `tool_choice` for `openai:` models, for servers that need it said
    /// (`[providers.openai] tool_choice`); not sent when `None`.
    pub openai_tool_choice: Option<ToolChoice>,
}

/// Whether a model must call a tool (`required`) or may (`auto`), for the
/// OpenAI-compatible servers that want it said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolChoice {
    /// The model decides.
    Auto,
    /// The model must call a tool.
    Required,
}

impl ToolChoice {
    /// The choice a wire name (as a config writes it) stands for.
    pub fn parse(word: &str) -> Option<ToolChoice> {
        [ToolChoice::Auto, ToolChoice::Required]
            .into_iter()
            .find(|choice| choice.as_str() == word)
    }

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            ToolChoice::Auto => "auto",
            ToolChoice::Required => "required",
        }
    }
}

/// OpenAI's API, when no base URL is set.
pub const OPENAI_DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
/// Anthropic's API, when no base URL is set.
pub const ANTHROPIC_DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// Ollama on this machine, when `OLLAMA_HOST` is not set.
pub const OLLAMA_DEFAULT_HOST: &str = "http://127.0.0.1:11434";
/// How long a response's headers may take.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(120);
/// How long a stream may go without a byte.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(300);

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            openai_base_url: None,
            openai_api_key: None,
            anthropic_base_url: None,
            anthropic_api_key: None,
            ollama_host: None,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            retry: RetryPolicy::default(),
            openai_tool_choice: None,
        }
    }
}

impl ClientConfig {
    /// The defaults with `OPENAI_API_KEY`, `OPENAI_BASE_URL`,
    /// `ANTHROPIC_API_KEY`, `ANTHROPIC_BASE_URL` and `OLLAMA_HOST` read from
    /// the environment; empty variables count as unset.
    pub fn from_env() -> Self {
        let var = |name: &str| {
            std::env::var(name)
                .ok()
                .filter(|value| !value.trim().is_empty())
        };
        ClientConfig {
            openai_base_url: var("OPENAI_BASE_URL"),
            openai_api_key: var("OPENAI_API_KEY"),
            anthropic_base_url: var("ANTHROPIC_BASE_URL"),
            anthropic_api_key: var("ANTHROPIC_API_KEY"),
            ollama_host: var("OLLAMA_HOST"),
            ..ClientConfig::default()
        }
    }
}

/// The forms a model string takes, for error messages.
pub const MODEL_FORMS: &str = "openai:NAME (OPENAI_API_KEY, optional OPENAI_BASE_URL for any \
OpenAI-compatible server), anthropic:NAME (ANTHROPIC_API_KEY, optional ANTHROPIC_BASE_URL), \
ollama:NAME (OLLAMA_HOST, default http://127.0.0.1:11434), or script:PATH (a JSON file of replies)";

/// The client a model string names: `openai:NAME`, `anthropic:NAME`,
/// `ollama:NAME` or `script:PATH`.
pub fn client_for(model: &str, config: &ClientConfig) -> Result<Box<dyn ChatClient>, ChatError> {
    let config_error = |message: String| ChatError::new(ChatErrorKind::Config, message);
    let Some((provider, name)) = model.split_once(':').filter(|(_, name)| !name.is_empty()) else {
        return Err(config_error(format!(
            "the model {model:?} names no provider; use {MODEL_FORMS}"
        )));
    };
    match provider {
        "openai" => {
            let base_url = config.openai_base_url.clone();
            if base_url.is_none() && config.openai_api_key.is_none() {
                return Err(config_error(format!(
                    "{model} needs OPENAI_API_KEY (or OPENAI_BASE_URL pointing at a server that needs no key)"
                )));
            }
            let base_url = base_url.unwrap_or_else(|| OPENAI_DEFAULT_BASE_URL.to_string());
            let key = config.openai_api_key.clone();
            let attempts = openai::OpenAi::new(name, &base_url, key, config)?
                .with_tool_choice(config.openai_tool_choice);
            Ok(Box::new(Retried::new(model, config, attempts)))
        }
        "ollama" => {
            let host = config.ollama_host.as_deref().unwrap_or(OLLAMA_DEFAULT_HOST);
            let base_url = format!("{}/v1", ollama_url(host).trim_end_matches('/'));
            let attempts = openai::OpenAi::new(name, &base_url, None, config)?;
            Ok(Box::new(Retried::new(model, config, attempts)))
        }
        "anthropic" => {
            let Some(key) = config.anthropic_api_key.clone() else {
                return Err(config_error(format!("{model} needs ANTHROPIC_API_KEY")));
            };
            let base_url = config
                .anthropic_base_url
                .clone()
                .unwrap_or_else(|| ANTHROPIC_DEFAULT_BASE_URL.to_string());
            let attempts = anthropic::Anthropic::new(name, &base_url, key, config)?;
            Ok(Box::new(Retried::new(model, config, attempts)))
        }
        "script" => Ok(Box::new(replay::Replay::load(model, Path::new(name))?)),
        _ => Err(config_error(format!(
            "unknown provider {provider:?} in the model {model:?}; use {MODEL_FORMS}"
        ))),
    }
}

/// `OLLAMA_HOST` may be `host:port` without a scheme, as Ollama itself accepts.
fn ollama_url(host: &str) -> String {
    if host.starts_with("http://") || host.starts_with("https://") {
        host.to_string()
    } else {
        format!("http://{host}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_reasons_read_once() {
        for (word, reason) in [
            ("stop", StopReason::EndTurn),
            ("end_turn", StopReason::EndTurn),
            ("tool_calls", StopReason::ToolUse),
            ("tool_use", StopReason::ToolUse),
            ("length", StopReason::MaxTokens),
            ("max_tokens", StopReason::MaxTokens),
            ("content_filter", StopReason::ContentFilter),
            ("pause_turn", StopReason::Other("pause_turn".into())),
        ] {
            assert_eq!(StopReason::from_provider(word), reason, "{word}");
            // The logged word reads back as the same reason.
            assert_eq!(StopReason::from_provider(reason.as_str()), reason, "{word}");
        }
    }

    /// One row per server: its status and its body. llama.cpp's is the
    /// recorded one (tests/real-servers); OpenAI's, Anthropic's and vLLM's
    /// are as their issue reports quote them; Ollama's is its runner's
    /// message ("input exceeds context length", from its logs in issue
    /// reports) in Ollama's native error shape, not a recording.
    #[test]
    fn context_errors() {
        let rows = [
            (
                400,
                r#"{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130412 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#,
            ),
            (
                400,
                r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210519 tokens > 200000 maximum"}}"#,
            ),
            (
                400,
                r#"{"error":{"code":400,"message":"request (8241 tokens) exceeds the available context size (8192 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":8241,"n_ctx":8192}}"#,
            ),
            (
                400,
                r#"{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5120 tokens (4096 in the messages, 1024 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}"#,
            ),
            (500, r#"{"error":"input exceeds context length"}"#),
        ];
        for (status, body) in rows {
            let error = ChatError::new(
                ChatErrorKind::Http { status },
                format!("{status}: {}", crate::http::server_message(body)),
            );
            assert!(error.is_context_too_long(), "{body}");
            assert!(!error.is_retryable(), "{body}");
        }
        let other = ChatError::new(ChatErrorKind::Http { status: 400 }, "400: bad tool schema");
        assert!(!other.is_context_too_long());
    }

    fn error_of(model: &str, config: &ClientConfig) -> String {
        match client_for(model, config) {
            Ok(_) => panic!("{model} made a client"),
            Err(error) => {
                assert_eq!(error.kind, ChatErrorKind::Config);
                error.message
            }
        }
    }

    #[test]
    fn model_strings_name_their_provider_and_what_they_need() {
        let config = ClientConfig::default();
        assert!(error_of("gpt-4.1", &config).contains("openai:NAME"));
        assert!(error_of("openai:", &config).contains("names no provider"));
        assert!(error_of("mistral:large", &config).contains("unknown provider \"mistral\""));
        assert!(error_of("openai:gpt-4.1", &config).contains("OPENAI_API_KEY"));
        assert!(error_of("anthropic:claude-sonnet-4-5", &config).contains("ANTHROPIC_API_KEY"));
        assert!(error_of("script:/no/such/script.json", &config).contains("/no/such/script.json"));
    }

    #[test]
    fn ollama_and_keyless_local_servers_need_no_key() {
        let mut config = ClientConfig::default();
        let client = client_for("ollama:qwen3", &config).map_err(|e| e.message);
        assert_eq!(
            client.map(|c| c.model().to_string()),
            Ok("ollama:qwen3".into())
        );
        config.openai_base_url = Some("http://127.0.0.1:8080/v1".into());
        assert!(client_for("openai:local", &config).is_ok());
    }

    #[test]
    fn ollama_host_may_omit_the_scheme() {
        assert_eq!(ollama_url("10.0.0.2:11434"), "http://10.0.0.2:11434");
        assert_eq!(ollama_url("https://ollama.lan"), "https://ollama.lan");
    }

    #[test]
    fn which_errors_are_retried() {
        let status = |status| ChatError::new(ChatErrorKind::Http { status }, "x").is_retryable();
        for retried in [429, 500, 501, 502, 503, 504, 529] {
            assert!(status(retried), "{retried}");
        }
        for final_status in [400, 401, 403, 404, 413, 422, 505] {
            assert!(!status(final_status), "{final_status}");
        }
        assert!(ChatError::new(ChatErrorKind::Stream, "cut").is_retryable());
        assert!(!ChatError::new(ChatErrorKind::Script, "out").is_retryable());
    }
}
