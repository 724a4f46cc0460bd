//! Fake OpenAI Chat Completions and Anthropic Messages servers for tests.
//!
//! A [`FakeServer`] listens on 127.0.0.1 and answers each POST with the next
//! scripted [`Step`]: a full streamed [`FakeReply`] in the provider's real SSE
//! wire format, an error status, or one of the broken streams real networks
//! produce (cut mid-body, slow, stalled, an in-stream error). Every request is
//! recorded so a test can check what the client sent.
//!
//! # The streams
//!
//! Each SSE event is its own HTTP chunk (unless [`FakeReply::byte_pieces`]).
//!
//! OpenAI (`POST /v1/chat/completions`), each event `data: {chunk}`: the
//! role chunk, the text deltas, per tool call its start chunk (id, name,
//! empty arguments) and its argument fragments, the chunk with
//! `finish_reason`, the usage chunk when the request asked for
//! `stream_options.include_usage`, and `data: [DONE]`.
//!
//! Anthropic (`POST /v1/messages`), each event `event: TYPE` + `data: {json}`:
//! `message_start`, the text block (`content_block_start`, `ping`, its
//! `text_delta`s, `content_block_stop`; without text the `ping` follows
//! `message_start`), per tool call a `tool_use` block whose
//! `input_json_delta`s begin with an empty fragment, `message_delta` with
//! the stop reason and output tokens, and `message_stop`.
//!
//! JSON keys come out in serde_json's order (alphabetical), not the docs'
//! order; JSON does not give key order a meaning.
//!
//! The server runs on its own thread with its own tokio runtime, so it serves
//! synchronous tests, async tests and separately spawned binaries alike.

mod anthropic;
mod openai;
mod playback;
mod server;
mod steps;
mod wire;

pub use server::{FakeServer, Recorded};
pub use steps::{FakeReply, FakeToolCall, Step};
pub use wire::Wire;
