//! The two providers' wire formats, behind one enum.

use serde_json::Value;

use crate::steps::FakeReply;
use crate::{anthropic, openai};

/// Which provider's API the server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    /// OpenAI Chat Completions: `POST /v1/chat/completions`.
    OpenAi,
    /// Anthropic Messages: `POST /v1/messages`.
    Anthropic,
}

/// What a reply's stream takes from the request it answers.
pub(crate) struct Exchange {
    /// 1-based arrival number of the request, used in response ids.
    pub number: usize,
    /// The request's `model`, echoed back as the providers do.
    pub model: String,
    /// OpenAI's `stream_options.include_usage`; Anthropic always reports usage.
    pub include_usage: bool,
}

impl Exchange {
    /// Reads what the stream needs from a request body.
    pub(crate) fn new(number: usize, body: &Value) -> Exchange {
        Exchange {
            number,
            model: body["model"].as_str().unwrap_or("fake-model").to_owned(),
            include_usage: body["stream_options"]["include_usage"] == Value::Bool(true),
        }
    }
}

impl Wire {
    /// The base URL a client is configured with, as each provider's SDKs
    /// expect it: OpenAI's includes `/v1`, Anthropic's does not.
    pub(crate) fn base_path(self) -> &'static str {
        match self {
            Wire::OpenAi => "/v1",
            Wire::Anthropic => "",
        }
    }

    /// The only path that consumes scripted steps.
    pub(crate) fn endpoint(self) -> &'static str {
        match self {
            Wire::OpenAi => "/v1/chat/completions",
            Wire::Anthropic => "/v1/messages",
        }
    }

    /// The provider's JSON error body for an HTTP `status`, with the error
    /// type the provider uses for that status.
    ///
    /// OpenAI: `{"error":{"message","type","param","code"}}`.
    /// Anthropic: `{"type":"error","error":{"type","message"}}`.
    pub fn error_body(self, status: u16, message: &str) -> Value {
        match self {
            Wire::OpenAi => openai::error_body(status, message),
            Wire::Anthropic => anthropic::error_body(status, message),
        }
    }

    /// Every SSE event of a complete reply, each already framed.
    pub(crate) fn events(self, reply: &FakeReply, exchange: &Exchange) -> Vec<String> {
        match self {
            Wire::OpenAi => openai::events(reply, exchange),
            Wire::Anthropic => anthropic::events(reply, exchange),
        }
    }

    /// The framed event a provider sends when a stream fails after it began.
    pub(crate) fn stream_error_event(self, error_type: &str, message: &str) -> String {
        match self {
            Wire::OpenAi => openai::stream_error_event(error_type, message),
            Wire::Anthropic => anthropic::stream_error_event(error_type, message),
        }
    }
}
