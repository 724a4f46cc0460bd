//! What a test scripts: the steps the server plays, one per request.

use std::borrow::Borrow;
use std::time::Duration;

use crate::wire::Wire;

/// Text deltas carry this many characters unless [`FakeReply::text_chunk_chars`]
/// says otherwise: small enough that every reply arrives in several pieces.
const DEFAULT_TEXT_CHUNK_CHARS: usize = 4;

/// Tool call arguments arrive in fragments of this many characters unless
/// [`FakeReply::args_chunk_chars`] says otherwise; 7 cuts JSON tokens mid-way.
const DEFAULT_ARGS_CHUNK_CHARS: usize = 7;

/// How the server answers one incoming POST. Steps are consumed in the order
/// they were pushed.
///
/// Where a step counts `events`, it counts the SSE events of the reply's
/// stream as the crate docs list them, the `unknown_event` extra included;
/// a count past the end sends the whole stream first.
#[derive(Debug, Clone)]
pub enum Step {
    /// 200 with the full SSE stream of the reply.
    Reply(FakeReply),
    /// A non-200 JSON error response, with a `Retry-After` header when set.
    /// A status outside 100..=999 is answered as 500.
    Status {
        /// The status.
        status: u16,
        /// The JSON body.
        body: serde_json::Value,
        /// The `Retry-After` header, if any.
        retry_after: Option<String>,
    },
    /// Sends the first `events` SSE events, then aborts the connection
    /// mid-body: no terminating chunk, no `[DONE]` or `message_stop`.
    CutAfter {
        /// The reply whose stream is cut.
        reply: FakeReply,
        /// The events sent before the cut.
        events: usize,
    },
    /// Sleeps `delay` before every SSE event.
    Slow {
        /// The reply.
        reply: FakeReply,
        /// The sleep before each event.
        delay: Duration,
    },
    /// Sends `events` SSE events, then keeps the connection open without
    /// sending anything until the client goes away.
    Stall {
        /// The reply whose stream stalls.
        reply: FakeReply,
        /// The events sent before the silence.
        events: usize,
    },
    /// Sends `events` SSE events, then the provider's in-stream error event,
    /// then ends the body cleanly.
    StreamError {
        /// The reply the stream starts with.
        reply: FakeReply,
        /// The events sent before the error.
        events: usize,
        /// The provider's error type (`overloaded_error`, …).
        error_type: String,
        /// Its message.
        message: String,
    },
    /// 200 with exactly these SSE events (each already framed, as
    /// `data: …\n\n`), then a clean end: the bytes a broken or hostile
    /// server sends, which no [`FakeReply`] would.
    Raw {
        /// The framed events.
        events: Vec<String>,
    },
}

impl Step {
    /// A `Raw` step of one `data:` event per string, as given.
    pub fn raw_data<S: Into<String>>(data: impl IntoIterator<Item = S>) -> Step {
        Step::Raw {
            events: data
                .into_iter()
                .map(|data| format!("data: {}\n\n", data.into()))
                .collect(),
        }
    }

    /// A `Status` step whose body is the provider's own error shape for
    /// `status` (see [`Wire::error_body`]), without `Retry-After`.
    /// Takes `Wire` or `&Wire`.
    pub fn status(wire: impl Borrow<Wire>, status: u16, message: impl Into<String>) -> Step {
        Step::Status {
            status,
            body: wire.borrow().error_body(status, &message.into()),
            retry_after: None,
        }
    }
}

/// One assistant reply as the server streams it. Zero or default fields mean
/// "as the provider would", so `FakeReply::text("hi")` is a complete reply.
#[derive(Debug, Clone, Default)]
pub struct FakeReply {
    /// The reply's text.
    pub text: String,
    /// Its tool calls.
    pub tool_calls: Vec<FakeToolCall>,
    /// The input tokens its usage reports.
    pub input_tokens: u64,
    /// The output tokens its usage reports.
    pub output_tokens: u64,
    /// Input tokens read from the prompt cache (Anthropic:
    /// `cache_read_input_tokens`; OpenAI: `prompt_tokens_details.cached_tokens`).
    pub cache_read_input_tokens: u64,
    /// Input tokens written to the prompt cache (Anthropic only).
    pub cache_creation_input_tokens: u64,
    /// `None` is the natural one: `tool_calls`/`stop` for OpenAI,
    /// `tool_use`/`end_turn` for Anthropic.
    pub stop_reason: Option<String>,
    /// Characters per text delta; 0 means 4.
    pub text_chunk_chars: usize,
    /// Characters per tool call arguments fragment; 0 means 7.
    pub args_chunk_chars: usize,
    /// When set, the body is written in pieces of this many bytes, each its
    /// own HTTP chunk, so multi-byte characters and SSE lines are split
    /// across reads. `Some(0)` is the same as `None`.
    pub byte_pieces: Option<usize>,
    /// Anthropic: an event of an unknown type (`future_thing`) mid-stream,
    /// which clients must ignore. OpenAI: an SSE comment `: keep-alive`.
    pub unknown_event: bool,
}

/// A tool call in a scripted reply; `arguments` is the JSON text streamed
/// verbatim, so a test can also send malformed arguments.
#[derive(Debug, Clone)]
pub struct FakeToolCall {
    /// The call's id.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments' JSON text.
    pub arguments: String,
}

impl FakeReply {
    /// A reply that only says `text`.
    pub fn text(text: impl Into<String>) -> FakeReply {
        FakeReply::default().with_text(text)
    }

    /// A reply that only asks for one tool call.
    pub fn tool_call(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments_json: impl Into<String>,
    ) -> FakeReply {
        FakeReply::default().with_tool_call(id, name, arguments_json)
    }

    /// Replaces the reply's text.
    pub fn with_text(self, text: impl Into<String>) -> FakeReply {
        FakeReply {
            text: text.into(),
            ..self
        }
    }

    /// Appends a tool call after the ones already there.
    pub fn with_tool_call(
        mut self,
        id: impl Into<String>,
        name: impl Into<String>,
        arguments_json: impl Into<String>,
    ) -> FakeReply {
        self.tool_calls.push(FakeToolCall {
            id: id.into(),
            name: name.into(),
            arguments: arguments_json.into(),
        });
        self
    }

    /// Sets the token counts the stream reports.
    pub fn usage(self, input_tokens: u64, output_tokens: u64) -> FakeReply {
        FakeReply {
            input_tokens,
            output_tokens,
            ..self
        }
    }

    /// Sets the prompt-cache counts its usage reports.
    pub fn cache(self, read: u64, creation: u64) -> FakeReply {
        FakeReply {
            cache_read_input_tokens: read,
            cache_creation_input_tokens: creation,
            ..self
        }
    }

    /// The text split into the deltas the stream sends.
    pub(crate) fn text_pieces(&self) -> impl Iterator<Item = &str> {
        split_chars(
            &self.text,
            chunk_or(self.text_chunk_chars, DEFAULT_TEXT_CHUNK_CHARS),
        )
    }

    /// One tool call's arguments split into the fragments the stream sends.
    pub(crate) fn args_pieces<'a>(&self, call: &'a FakeToolCall) -> impl Iterator<Item = &'a str> {
        split_chars(
            &call.arguments,
            chunk_or(self.args_chunk_chars, DEFAULT_ARGS_CHUNK_CHARS),
        )
    }

    /// The stop reason to report, given the provider's natural ones for a
    /// reply with and without tool calls.
    pub(crate) fn stop_reason_or<'a>(&'a self, with_tools: &'a str, without: &'a str) -> &'a str {
        match (&self.stop_reason, self.tool_calls.is_empty()) {
            (Some(reason), _) => reason,
            (None, false) => with_tools,
            (None, true) => without,
        }
    }
}

fn chunk_or(chars: usize, default: usize) -> usize {
    if chars == 0 { default } else { chars }
}

/// Splits `text` into pieces of `size` characters (never inside a
/// character); the last piece may be shorter. `size` must be at least 1.
fn split_chars(text: &str, size: usize) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let end = rest
            .char_indices()
            .nth(size)
            .map_or(rest.len(), |(at, _)| at);
        let (piece, tail) = rest.split_at(end);
        rest = tail;
        Some(piece)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_chars_counts_characters_not_bytes() {
        let pieces: Vec<&str> = split_chars("héllo 日本語", 4).collect();
        assert_eq!(pieces, ["héll", "o 日本", "語"]);
    }

    #[test]
    fn zero_chunk_sizes_fall_back_to_the_defaults() {
        let reply = FakeReply::tool_call("c", "f", "{\"path\":\"a\"}").with_text("abcdefghij");
        let text: Vec<&str> = reply.text_pieces().collect();
        assert_eq!(text, ["abcd", "efgh", "ij"]);
        let args: Vec<&str> = reply.args_pieces(&reply.tool_calls[0]).collect();
        assert_eq!(args, ["{\"path\"", ":\"a\"}"]);
    }

    #[test]
    fn stop_reason_defaults_depend_on_tool_calls() {
        assert_eq!(FakeReply::text("x").stop_reason_or("tools", "stop"), "stop");
        assert_eq!(
            FakeReply::tool_call("c", "f", "{}").stop_reason_or("tools", "stop"),
            "tools"
        );
        let forced = FakeReply {
            stop_reason: Some("length".into()),
            ..FakeReply::text("x")
        };
        assert_eq!(forced.stop_reason_or("tools", "stop"), "length");
    }
}
