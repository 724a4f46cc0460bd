//! A chat client in the test's own process: it plays the replies it is
//! given, in order, and records every request.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use wicket_chat::{
    ChatClient, ChatError, ChatErrorKind, ChatFuture, Completion, Message, Request, StreamEvent,
};
use wicket_protocol::{ToolCallRequest, Usage};

/// Replies in order; records each request. Its usage counts a request's
/// bytes (four a token), as a provider would count its tokens; when told
/// the summarising prompt, it answers requests ending with it with a summary
/// of its own, outside the script.
#[derive(Default)]
pub struct ScriptedClient {
    replies: Mutex<VecDeque<Result<Completion, ChatError>>>,
    requests: Mutex<Vec<Request>>,
    summarising: Mutex<Option<String>>,
}

impl ScriptedClient {
    /// A client that plays `replies`.
    pub fn new(replies: Vec<Completion>) -> Arc<ScriptedClient> {
        Arc::new(ScriptedClient {
            replies: Mutex::new(replies.into_iter().map(Ok).collect()),
            requests: Mutex::new(Vec::new()),
            summarising: Mutex::new(None),
        })
    }

    /// Answers every request whose last message is `prompt` with a summary.
    pub fn summarising(self: Arc<Self>, prompt: &str) -> Arc<Self> {
        *self.summarising.lock().unwrap() = Some(prompt.to_string());
        self
    }

    /// Adds a reply (or a failure) at the end.
    pub fn push(&self, reply: Result<Completion, ChatError>) {
        self.replies.lock().unwrap().push_back(reply);
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }

    /// A boxed client sharing this one's script and record.
    pub fn boxed(self: &Arc<Self>) -> Box<dyn ChatClient> {
        Box::new(Shared(self.clone()))
    }
}

struct Shared(Arc<ScriptedClient>);

impl ChatClient for Shared {
    fn model(&self) -> &str {
        "test:scripted"
    }

    fn complete<'a>(
        &'a self,
        req: &'a Request,
        _on_event: &'a mut (dyn FnMut(StreamEvent) + Send),
    ) -> ChatFuture<'a> {
        self.0.requests.lock().unwrap().push(req.clone());
        let bytes = req.bytes();
        let summarise = self.0.summarising.lock().unwrap().as_ref().is_some_and(
            |prompt| matches!(req.messages.last(), Some(Message::User { text }) if text == prompt),
        );
        let next = if summarise {
            let count = self.0.requests.lock().unwrap().len();
            Some(Ok(text(&format!("summary #{count}: the work so far"))))
        } else {
            self.0.replies.lock().unwrap().pop_front()
        };
        Box::pin(async move {
            let mut reply = next.unwrap_or(Err(ChatError::new(
                ChatErrorKind::Script,
                "the test's replies ran out",
            )))?;
            if let Some(usage) = reply.usage.as_mut() {
                usage.input_tokens = bytes.div_ceil(4) as u64;
            }
            Ok(reply)
        })
    }
}

/// A reply with text and no call.
pub fn text(text: &str) -> Completion {
    Completion {
        text: text.into(),
        tool_calls: Vec::new(),
        usage: Some(Usage {
            input_tokens: 10,
            output_tokens: 5,
            ..Usage::default()
        }),
        stop_reason: Some(wicket_chat::StopReason::EndTurn),
        attempts: 1,
    }
}

/// A reply that calls tools, each with a unique id.
pub fn calls(calls: &[(&str, serde_json::Value)]) -> Completion {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    Completion {
        tool_calls: calls
            .iter()
            .map(|(name, args)| ToolCallRequest {
                id: format!(
                    "tc{}",
                    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                )
                .into(),
                name: name.to_string(),
                arguments: args.to_string(),
            })
            .collect(),
        stop_reason: Some(wicket_chat::StopReason::ToolUse),
        ..text("")
    }
}
