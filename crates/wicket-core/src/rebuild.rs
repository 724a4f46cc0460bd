//! The conversation a chat client sees, rebuilt from the log alone
//! ([`conversation`], exhaustive over `EventBody`): only what follows the
//! last compaction, each tool result beside its call, a call with no
//! result given one; and what compaction needs to choose its cut
//! ([`compaction_cut`], [`summary_message`], [`COMPACT_PROMPT`]).

use wicket_chat::{Message, StopReason};
use wicket_protocol::limits::RUN_STREAM_MAX_BYTES;
use wicket_protocol::{
    CallId, ErrorKind, Event, EventBody, HookEvent, HookOutcome, ToolCallRequest, ToolOutput,
    WireError,
};

use crate::models::estimate_tokens;
use wicket_protocol::event::{
    AnswerEvent, AssistantMessageEvent, CancelledEvent, CardEvent, CheckpointEvent, CompactedEvent,
    ErrorEvent, HookRunEvent, InterruptedEvent, McpEvent, NetEvent, NoticeEvent, QuestionEvent,
    QueuedEvent, ReplyEvent, ResultEvent, RetryEvent, RewoundEvent, SessionStartedEvent, TaskEvent,
    ToolCallEvent, ToolResultEvent, TurnEndedEvent, UnreadableEvent, UserMessageEvent,
};

/// The message a Stop hook's block becomes when the turn ended without `finish`.
pub(crate) fn hook_feedback(stderr: &str) -> String {
    format!(
        "A Stop hook did not let the turn end yet. Its output:\n{}",
        stderr.trim_end()
    )
}

/// The conversation as a chat client sees it, rebuilt from the log. Tool
/// results of calls no reply made (`wicket tool`) are left out; a call
/// that has no result (a crash, a cancel) gets one, so the conversation
/// stays valid for every provider; consecutive user messages are joined.
pub fn conversation(events: &[Event]) -> Vec<Message> {
    // Only what follows the last compaction is rebuilt: its summary stands
    // for everything up to its `to_seq`.
    let last = events
        .iter()
        .rposition(|event| matches!(event.body, EventBody::Compacted(CompactedEvent { .. })));
    let Some(at) = last else {
        return Rebuild::default().run(events);
    };
    let EventBody::Compacted(CompactedEvent {
        summary, to_seq, ..
    }) = &events[at].body
    else {
        return Rebuild::default().run(events);
    };
    let mut rebuild = Rebuild::default();
    rebuild.user(summary_message(summary));
    let first = events
        .iter()
        .position(|event| event.seq > *to_seq)
        .unwrap_or(events.len());
    for (index, event) in events.iter().enumerate().skip(first) {
        if index != at {
            rebuild.event(&event.body);
        }
    }
    rebuild.close_pending();
    rebuild.messages
}

/// What the model is asked when the conversation is compacted.
pub const COMPACT_PROMPT: &str = "The conversation is about to be shortened to fit your context window. \
Write a summary of everything above that you will need to carry on: what the person asked for and decided, \
what you have done (files read or changed, commands run and what they printed), what you found out, \
what is still open and what you were about to do next. Keep exact paths, names, numbers and error messages. \
Plain text, no more than 800 words. Do not call any tool.";

/// How a summary is handed back to the model.
pub fn summary_message(summary: &str) -> String {
    format!(
        "[The conversation before this point was summarised to fit the context window. The summary:]\n\n{summary}"
    )
}

/// Where to cut for compaction: every event up to the returned seq is
/// summarised; the rest (the last few exchanges, within a quarter of the
/// window) stays verbatim. An exchange starts with a person's message or a
/// model reply, so no reply is cut from its calls' results. `None` when
/// there is nothing older to summarise. The last three exchanges are kept
/// when there is something before them; else only the last one.
pub fn compaction_cut(events: &[Event], window: u64) -> Option<(u64, u64)> {
    cut_keeping(events, window, 3).or_else(|| cut_keeping(events, window, 1))
}

fn cut_keeping(events: &[Event], window: u64, keep_exchanges: usize) -> Option<(u64, u64)> {
    let floor = events
        .iter()
        .rposition(|event| matches!(event.body, EventBody::Compacted(CompactedEvent { .. })))
        .and_then(|at| match &events[at].body {
            EventBody::Compacted(CompactedEvent { to_seq, .. }) => Some(*to_seq),
            _ => None,
        })
        .unwrap_or(0);
    let budget = window / 4;
    let mut kept_tokens = 0u64;
    let mut boundaries = 0usize;
    let mut cut: Option<u64> = None;
    for event in events.iter().rev() {
        if event.seq <= floor {
            break;
        }
        kept_tokens += estimate_tokens(event_bytes(&event.body));
        let boundary = matches!(
            event.body,
            EventBody::UserMessage(UserMessageEvent { .. })
                | EventBody::AssistantMessage(AssistantMessageEvent { .. })
        );
        if boundary {
            if kept_tokens > budget && cut.is_some() {
                break;
            }
            cut = Some(event.seq);
            boundaries += 1;
            if boundaries >= keep_exchanges {
                break;
            }
        }
    }
    let keep_from = cut?;
    let to_seq = events
        .iter()
        .rev()
        .find(|event| event.seq < keep_from)
        .map(|event| event.seq)?;
    // Something of the conversation must be there to summarise: a session's
    // first event alone is not.
    let conversation = events.iter().any(|event| {
        event.seq > floor
            && event.seq <= to_seq
            && matches!(
                event.body,
                EventBody::UserMessage(UserMessageEvent { .. })
                    | EventBody::AssistantMessage(AssistantMessageEvent { .. })
                    | EventBody::ToolResult(ToolResultEvent { .. })
            )
    });
    (to_seq > floor && conversation).then_some((1, to_seq))
}

/// About how much of a request an event becomes.
fn event_bytes(body: &EventBody) -> usize {
    match body {
        EventBody::UserMessage(UserMessageEvent { text, .. }) => text.len(),
        EventBody::AssistantMessage(AssistantMessageEvent {
            text, tool_calls, ..
        }) => {
            text.len()
                + tool_calls
                    .iter()
                    .map(|call| call.arguments.len() + call.name.len() + call.id.len())
                    .sum::<usize>()
        }
        EventBody::ToolResult(ToolResultEvent { result, .. }) => match result {
            Ok(output) => serde_json::to_string(output).map_or(0, |text| text.len()),
            Err(error) => error.message.len(),
        },
        EventBody::Hook(HookRunEvent { stderr, .. }) => stderr.len(),
        _ => 0,
    }
}

#[derive(Default)]
struct Rebuild {
    messages: Vec<Message>,
    /// Calls of the last reply still waiting for a result.
    pending: Vec<CallId>,
}

impl Rebuild {
    fn run(mut self, events: &[Event]) -> Vec<Message> {
        for event in events {
            self.event(&event.body);
        }
        self.close_pending();
        self.messages
    }

    fn close_pending(&mut self) {
        for call_id in std::mem::take(&mut self.pending) {
            self.messages.push(Message::ToolResult {
                call_id,
                content: serde_json::json!({"error": {"kind": "cancelled", "message": "the turn stopped before this call finished"}}).to_string(),
                is_error: true,
            });
        }
    }

    fn user(&mut self, text: String) {
        self.close_pending();
        if let Some(Message::User { text: last }) = self.messages.last_mut() {
            last.push_str("\n\n");
            last.push_str(&text);
        } else {
            self.messages.push(Message::User { text });
        }
    }

    /// `note` after the result of call `call_id`, as the model read it then.
    fn add_to_result(&mut self, call_id: &CallId, note: &str) {
        let result = self
            .messages
            .iter_mut()
            .rev()
            .find_map(|message| match message {
                Message::ToolResult {
                    call_id: id,
                    content,
                    ..
                } if id == call_id => Some(content),
                _ => None,
            });
        if let Some(content) = result {
            content.push_str("\n\n");
            content.push_str(note);
        }
    }

    // One flat match with an arm per event kind, what each puts in the model's conversation; past 80 lines because the match is exhaustive.
    fn event(&mut self, body: &EventBody) {
        match body {
            EventBody::UserMessage(UserMessageEvent { text, .. }) => self.user(text.clone()),
            EventBody::AssistantMessage(AssistantMessageEvent {
                text,
                tool_calls,
                stop_reason,
                ..
            }) => {
                self.close_pending();
                self.pending = tool_calls.iter().map(|call| call.id.clone()).collect();
                self.messages.push(Message::Assistant {
                    text: text.clone(),
                    tool_calls: tool_calls.clone(),
                });
                if let Some(why) = NotTaken::of(text, tool_calls, stop_reason.as_ref()) {
                    self.user(why.notice().to_string());
                }
            }
            EventBody::ToolResult(ToolResultEvent { call_id, result }) => {
                let Some(index) = self.pending.iter().position(|id| id == call_id) else {
                    return;
                };
                self.pending.remove(index);
                let (content, is_error) = result_content(result);
                self.messages.push(Message::ToolResult {
                    call_id: call_id.clone(),
                    content,
                    is_error,
                });
            }
            EventBody::Hook(HookRunEvent {
                event: HookEvent::Stop,
                call_id: None,
                outcome: HookOutcome::Block | HookOutcome::Error,
                ignored: false,
                stderr,
                ..
            }) => self.user(hook_feedback(stderr)),
            EventBody::Hook(HookRunEvent {
                event: HookEvent::UserPromptSubmit | HookEvent::SessionStart,
                name,
                context: Some(context),
                ..
            }) => self.user(crate::hooks::note(name, context.trim())),
            EventBody::Hook(HookRunEvent {
                event: event @ HookEvent::PostToolUse,
                name,
                call_id: Some(call_id),
                outcome,
                ignored,
                stderr,
                context,
                ..
            }) => {
                let note = crate::hooks::model_note(
                    *event,
                    name,
                    *outcome,
                    *ignored,
                    stderr,
                    context.as_deref(),
                );
                if let Some(note) = note {
                    self.add_to_result(call_id, &note);
                }
            }
            EventBody::Notice(NoticeEvent {
                key: Some(key),
                call_id: Some(call_id),
                text: Some(text),
                ..
            }) if key == crate::turn::FOLDER_INSTRUCTIONS => self.add_to_result(call_id, text),
            EventBody::Rewound(RewoundEvent { to, files }) => self.user(rewound_note(*to, files)),
            EventBody::Hook(HookRunEvent { .. })
            | EventBody::Checkpoint(CheckpointEvent { .. })
            | EventBody::Net(NetEvent { .. })
            | EventBody::SessionStarted(SessionStartedEvent { .. })
            | EventBody::ToolCall(ToolCallEvent { .. })
            | EventBody::Card(CardEvent { .. })
            | EventBody::Answer(AnswerEvent { .. })
            | EventBody::Question(QuestionEvent { .. })
            | EventBody::Reply(ReplyEvent { .. })
            | EventBody::Result(ResultEvent { .. })
            | EventBody::Queued(QueuedEvent { .. })
            | EventBody::Task(TaskEvent { .. })
            | EventBody::Retry(RetryEvent { .. })
            | EventBody::Cancelled(CancelledEvent {})
            | EventBody::Interrupted(InterruptedEvent { .. })
            | EventBody::Compacted(CompactedEvent { .. })
            | EventBody::Mcp(McpEvent { .. })
            | EventBody::Notice(NoticeEvent { .. })
            | EventBody::Error(ErrorEvent { .. })
            | EventBody::TurnEnded(TurnEndedEvent { .. })
            | EventBody::Unreadable(UnreadableEvent { .. }) => {}
        }
    }
}

/// What the person is told when the conversation was rebuilt without some
/// lines of the log (kept in the file, shown by `wicket log`, never sent).
pub(crate) fn unreadable_notice(events: &[Event]) -> Option<String> {
    let lines: Vec<(u64, &str)> = events
        .iter()
        .filter_map(|event| {
            if let EventBody::Unreadable(UnreadableEvent { line, error }) = &event.body {
                Some((*line, error.as_str()))
            } else {
                None
            }
        })
        .collect();
    let (first, error) = lines.first()?;
    Some(format!(
        "{} line(s) of this session's log could not be read and are left out of the conversation \
         (line {first}: {error}); they are kept in the file, and `wicket log` shows them. \
         A newer Wicket may have written them",
        lines.len()
    ))
}

/// What the model is told of a rewind, before the person's next message:
/// its earlier reads and writes no longer describe the files.
fn rewound_note(to: u64, files: &wicket_protocol::event::RewoundFiles) -> String {
    let mut note = format!(
        "[Wicket] The person rewound the workspace's files to how they were before event {to} \
         (the files only: this conversation is as it was). Read a file again before you edit it."
    );
    for (label, paths) in files.lists() {
        if !paths.is_empty() {
            note.push_str(&format!("\n{label}: {}", paths.join(", ")));
        }
    }
    if files.more > 0 {
        note.push_str(&format!("\n(and {} more paths)", files.more));
    }
    note
}

/// The text a tool result gives the model.
/// The same for a live call and for one rebuilt from the log. An MCP
/// result (and an MCP error, which carries the server's text) is cut to
/// `run`'s 64 KiB; the log keeps every byte.
pub(crate) fn result_content(result: &Result<ToolOutput, WireError>) -> (String, bool) {
    match result {
        Ok(ToolOutput::Mcp(mcp)) => (mcp.model_text(), false),
        Ok(output) => (wicket_protocol::json::text(output), false),
        Err(error) if error.kind == ErrorKind::Mcp => {
            let cut = WireError::new(
                ErrorKind::Mcp,
                wicket_protocol::text::head_tail(&error.message, RUN_STREAM_MAX_BYTES),
            );
            (serde_json::json!({ "error": cut }).to_string(), true)
        }
        Err(error) => (serde_json::json!({ "error": error }).to_string(), true),
    }
}

/// Whether the output limit cut a reply.
pub fn cut_by_output_limit(stop_reason: Option<&StopReason>) -> bool {
    stop_reason == Some(&StopReason::MaxTokens)
}

/// What the model is told after a reply that hit the output limit.
pub const CUT_NOTICE: &str = "Your last reply was cut off at the output-token limit, so it is not taken as the result. \
Continue: finish the work with tool calls, or give a shorter final answer.";

/// What the model is told after a reply with no text and no tool call
/// (LiteLLM's answer after an upstream crash, among others).
pub const EMPTY_NOTICE: &str = "Your last reply was empty: no text and no tool call, so it is not taken as the result. \
Continue: finish the work with tool calls, or give your final answer.";

/// Whether a reply says nothing at all.
pub fn empty_reply(text: &str, tool_calls: &[ToolCallRequest]) -> bool {
    tool_calls.is_empty() && text.trim().is_empty()
}

/// Why a reply with no tool call is not taken as the turn's result: the
/// live turn and the rebuild from the log both ask here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NotTaken {
    /// The output limit cut it.
    Cut,
    /// It has no text and no call.
    Empty,
}

impl NotTaken {
    pub(crate) fn of(
        text: &str,
        tool_calls: &[ToolCallRequest],
        stop: Option<&StopReason>,
    ) -> Option<NotTaken> {
        if tool_calls.is_empty() && cut_by_output_limit(stop) {
            Some(NotTaken::Cut)
        } else if empty_reply(text, tool_calls) {
            Some(NotTaken::Empty)
        } else {
            None
        }
    }

    /// What the model is told.
    pub(crate) fn notice(self) -> &'static str {
        match self {
            NotTaken::Cut => CUT_NOTICE,
            NotTaken::Empty => EMPTY_NOTICE,
        }
    }

    /// What the turn ends with when it happens twice in a row.
    pub(crate) fn twice(self, stop: Option<&StopReason>) -> String {
        match self {
            NotTaken::Cut => "the model's reply was cut off at the output-token limit twice in a row, so the turn has no result; \
                 raise [chat] max_tokens in config.toml, or ask for less at once"
                .into(),
            NotTaken::Empty => format!(
                "the model's reply was empty twice in a row (no text, no tool call; the server's stop reason: {}), \
                 so the turn has no result. The server may have failed upstream: check its log",
                stop.map_or("none", StopReason::as_str)
            ),
        }
    }
}
