//! The chat clients against the fake provider servers of `wicket-fake`:
//! real HTTP on 127.0.0.1, the providers' real SSE wire formats, and the
//! faults real networks produce, each counted by the requests it took.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

mod conversation;
mod faults;
mod real_servers;

use std::time::Duration;

use wicket_chat::{
    ChatClient, ChatError, ClientConfig, Completion, Message, Request, RetryPolicy, StreamEvent,
    ToolSpec, client_for,
};
use wicket_fake::{FakeServer, Wire};

pub const WIRES: [Wire; 2] = [Wire::OpenAi, Wire::Anthropic];

/// Retries without the real waits, so fault tests stay fast; the policy's
/// arithmetic has its own unit tests.
pub fn quick_config() -> ClientConfig {
    ClientConfig {
        request_timeout: Duration::from_secs(10),
        idle_timeout: Duration::from_secs(10),
        retry: RetryPolicy {
            max_attempts: 5,
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(4),
        },
        ..ClientConfig::default()
    }
}

/// The client a person would configure for a `wire` server at `base_url`,
/// with `config`'s timeouts and retries.
pub fn client_at(base_url: String, wire: Wire, config: ClientConfig) -> Box<dyn ChatClient> {
    let config = match wire {
        Wire::OpenAi => ClientConfig {
            openai_base_url: Some(base_url),
            openai_api_key: Some("sk-test".into()),
            ..config
        },
        Wire::Anthropic => ClientConfig {
            anthropic_base_url: Some(base_url),
            anthropic_api_key: Some("sk-ant-test".into()),
            ..config
        },
    };
    client_for(model_of(wire), &config).unwrap()
}

pub fn client_with(server: &FakeServer, wire: Wire, config: ClientConfig) -> Box<dyn ChatClient> {
    client_at(server.base_url(), wire, config)
}

/// A config whose retry policy stops after `max_attempts` requests.
pub fn attempts(max_attempts: u32) -> ClientConfig {
    let config = quick_config();
    ClientConfig {
        retry: RetryPolicy {
            max_attempts,
            ..config.retry
        },
        ..config
    }
}

pub fn client(server: &FakeServer, wire: Wire) -> Box<dyn ChatClient> {
    client_with(server, wire, quick_config())
}

pub fn model_of(wire: Wire) -> &'static str {
    match wire {
        Wire::OpenAi => "openai:gpt-test",
        Wire::Anthropic => "anthropic:claude-test",
    }
}

/// A one-message request with one tool.
pub fn ask(text: &str) -> Request {
    Request {
        system: "You are a test.".into(),
        messages: vec![Message::User { text: text.into() }],
        tools: vec![read_file_tool()],
        max_tokens: 1024,
    }
}

pub fn read_file_tool() -> ToolSpec {
    ToolSpec {
        name: "read_file".into(),
        description: "Read a file of the workspace".into(),
        parameters: serde_json::json!({
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
        }),
    }
}

/// One reply and every event that streamed on the way.
pub async fn complete(
    client: &dyn ChatClient,
    req: &Request,
) -> (Result<Completion, ChatError>, Vec<StreamEvent>) {
    let mut events = Vec::new();
    let result = client.complete(req, &mut |event| events.push(event)).await;
    (result, events)
}

/// The `Retry` events, as (attempt, reason).
pub fn retries(events: &[StreamEvent]) -> Vec<(u32, String)> {
    events
        .iter()
        .filter_map(|event| match event {
            StreamEvent::Retry {
                attempt, reason, ..
            } => Some((*attempt, reason.clone())),
            StreamEvent::Text(_) => None,
        })
        .collect()
}

/// The text the events streamed after the last retry.
pub fn streamed_text(events: &[StreamEvent]) -> String {
    let start = events
        .iter()
        .rposition(|event| matches!(event, StreamEvent::Retry { .. }))
        .map_or(0, |at| at + 1);
    events[start..]
        .iter()
        .filter_map(|event| match event {
            StreamEvent::Text(text) => Some(text.as_str()),
            StreamEvent::Retry { .. } => None,
        })
        .collect()
}
