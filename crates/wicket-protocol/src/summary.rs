//! An event in one line, the same words in every front end. `wicket
//! exec`'s transcript, the TUI and ACP each style a [`Summary`] (a colour,
//! a prefix, a thought or a message) and make its text visible; none of
//! them words an event of these kinds for itself. The kinds a front end
//! draws richly (messages, calls, cards, results, questions) have none.

use crate::event::{
    AnswerEvent, AssistantMessageEvent, CancelledEvent, CardEvent, CheckpointEvent, CompactedEvent,
    ErrorEvent, HookRunEvent, InterruptedEvent, McpEvent, NetEvent, NoticeEvent, QuestionEvent,
    QueuedEvent, ReplyEvent, ResultEvent, RetryEvent, RewoundEvent, SessionStartedEvent, TaskEvent,
    ToolCallEvent, ToolResultEvent, TurnEndedEvent, UnreadableEvent, UserMessageEvent,
};
use crate::event::{EventBody, Usage};
use crate::ids::{CardId, QuestionId};

/// How an event bears on the person, for the front end's colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tone {
    /// Background: what happened on the way (a hook that passed, a server
    /// that started, a compaction).
    Quiet,
    /// Worth a look: it may change what happens (a retry, a notice, a
    /// missed checkpoint, a queued message).
    Heed,
    /// Something failed or was stopped.
    Failed,
    /// The person changed the workspace (a rewind).
    Changed,
}

/// An event in one line: raw text, which the front end makes visible.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    /// How it bears on the person.
    pub tone: Tone,
    /// The words.
    pub text: String,
}

impl Summary {
    fn new(tone: Tone, text: String) -> Option<Summary> {
        Some(Summary { tone, text })
    }
}

/// A byte count as a person reads it: `512 B`, `3.4 kB`, `1.2 MB`, `2.0 GB`.
pub fn bytes(count: u64) -> String {
    const UNITS: [&str; 4] = ["kB", "MB", "GB", "TB"];
    if count < 1000 {
        return format!("{count} B");
    }
    let mut value = count as f64 / 1000.0;
    let mut unit = 0;
    while value >= 1000.0 && unit + 1 < UNITS.len() {
        value /= 1000.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

impl NetEvent {
    /// The connection in one line: `sent 1.2 MB to example.com:443
    /// (received 3.4 kB; allowed by rule r-1)`, or why it reached nothing.
    pub fn line(&self) -> String {
        let from = self
            .server
            .as_ref()
            .map(|server| format!("MCP server {server}: "))
            .unwrap_or_default();
        match &self.refused {
            Some(why) => format!("{from}{}:{} reached nothing: {why}", self.host, self.port),
            None => format!(
                "{from}sent {} to {}:{} (received {}; {})",
                bytes(self.sent),
                self.host,
                self.port,
                bytes(self.received),
                self.allowed_by
                    .as_ref()
                    .map_or("allowed".to_string(), crate::AllowedBy::describe)
            ),
        }
    }
}

impl EventBody {
    /// The event in one line, for the kinds every front end says the same
    /// way; `None` for those each draws itself, and for `turn_ended` (the
    /// result, error or cancel before it said how the turn ended).
    // One flat match with an arm per event kind, the one table of every front end's words; past 80 lines because the match is exhaustive.
    pub fn summary(&self) -> Option<Summary> {
        match self {
            EventBody::SessionStarted(SessionStartedEvent { session, workspace }) => {
                Summary::new(Tone::Quiet, format!("session {session} in {workspace}"))
            }
            EventBody::Queued(QueuedEvent { text }) => Summary::new(Tone::Heed, format!("queued: {text}")),
            EventBody::Task(TaskEvent {
                session,
                description,
                tools,
                ..
            }) => Summary::new(
                Tone::Quiet,
                format!(
                    "sub-task: {description} (session {session}, tools {})",
                    tools.as_str()
                ),
            ),
            EventBody::Hook(HookRunEvent {
                event,
                name,
                outcome,
                duration_ms,
                stderr,
                ..
            }) => Summary::new(
                Tone::Quiet,
                crate::event::hook_line(*event, name, *outcome, *duration_ms, stderr),
            ),
            EventBody::Retry(RetryEvent {
                attempt,
                delay_ms,
                reason,
            }) => Summary::new(
                Tone::Heed,
                format!("retry {attempt} in {delay_ms} ms: {reason}"),
            ),
            EventBody::Cancelled(CancelledEvent {}) => Summary::new(
                Tone::Failed,
                "cancelled: the turn ended, and a running command was stopped (TERM, then KILL 2 s later)"
                    .into(),
            ),
            EventBody::Interrupted(InterruptedEvent { card, question }) => {
                Summary::new(Tone::Failed, interrupted(card.as_ref(), question.as_ref()))
            }
            EventBody::Compacted(CompactedEvent {
                from_seq,
                to_seq,
                tokens_before,
                tokens_after,
                ..
            }) => Summary::new(
                Tone::Quiet,
                format!(
                    "the conversation up to event {to_seq} was summarised to fit the model: events {from_seq}–{to_seq}, ~{tokens_before} → ~{tokens_after} tokens"
                ),
            ),
            EventBody::Mcp(McpEvent {
                server,
                state,
                message,
            }) => Summary::new(
                Tone::Quiet,
                match message.is_empty() {
                    true => format!("MCP server {server}: {}", state.as_str()),
                    false => format!("MCP server {server}: {}: {message}", state.as_str()),
                },
            ),
            EventBody::Checkpoint(CheckpointEvent { message, .. }) => {
                Summary::new(Tone::Heed, format!("no checkpoint: {message}"))
            }
            EventBody::Net(net) => Summary::new(
                if net.refused.is_some() {
                    Tone::Heed
                } else {
                    Tone::Quiet
                },
                net.line(),
            ),
            EventBody::Rewound(RewoundEvent { to, files }) => Summary::new(Tone::Changed, files.line(*to)),
            // Progress, not something to heed.
            EventBody::Notice(notice) if notice.is_walk() => {
                Summary::new(Tone::Quiet, format!("checkpoint: {}", notice.message))
            }
            EventBody::Notice(NoticeEvent { message, .. }) => {
                Summary::new(Tone::Heed, format!("notice: {message}"))
            }
            EventBody::Error(ErrorEvent { message, .. }) => {
                Summary::new(Tone::Failed, format!("error: {message}"))
            }
            EventBody::Unreadable(UnreadableEvent { line, error }) => Summary::new(
                Tone::Failed,
                format!("log line {line} could not be read: {error}"),
            ),
            EventBody::ToolCall(ToolCallEvent { .. })
            | EventBody::ToolResult(ToolResultEvent { .. })
            | EventBody::Card(CardEvent { .. })
            | EventBody::Answer(AnswerEvent { .. })
            | EventBody::UserMessage(UserMessageEvent { .. })
            | EventBody::AssistantMessage(AssistantMessageEvent { .. })
            | EventBody::Question(QuestionEvent { .. })
            | EventBody::Reply(ReplyEvent { .. })
            | EventBody::Result(ResultEvent { .. })
            | EventBody::TurnEnded(TurnEndedEvent { .. }) => None,
        }
    }
}

fn interrupted(card: Option<&CardId>, question: Option<&QuestionId>) -> String {
    let open = match (card, question) {
        (Some(card), _) => format!("; card {card} can no longer be answered"),
        (None, Some(question)) => format!("; question {question} can no longer be answered"),
        (None, None) => String::new(),
    };
    format!("interrupted: the process running this turn ended (a crash or a kill){open}")
}

impl Usage {
    /// Tokens and cost in words, as every front end says them: `1283 tokens
    /// in, 5 out, 10 cached, $0.0123`, or `usage not reported` when the
    /// server reported none (never `0 in / 0 out`, which would be a claim).
    pub fn line(usage: Option<&Usage>) -> String {
        let Some(usage) = usage else {
            return "usage not reported".into();
        };
        let mut line = format!(
            "{} tokens in, {} out",
            usage.input_tokens, usage.output_tokens
        );
        if usage.cache_read_input_tokens > 0 {
            line.push_str(&format!(", {} cached", usage.cache_read_input_tokens));
        }
        if let Some(cost) = usage.cost_usd {
            line.push_str(&format!(", ${cost:.4}"));
        }
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{HookEvent, HookOutcome, McpState};

    #[test]
    fn each_kind_a_front_end_does_not_draw_itself_has_its_words() {
        let mcp = EventBody::Mcp(McpEvent {
            server: "files".into(),
            state: McpState::Died,
            message: String::new(),
        });
        assert_eq!(mcp.summary().unwrap().text, "MCP server files: died");
        let hook = EventBody::Hook(HookRunEvent {
            event: HookEvent::PreToolUse,
            name: "no-rm".into(),
            call_id: None,
            command: vec!["./no-rm.sh".into()],
            outcome: HookOutcome::Block,
            exit_code: Some(2),
            duration_ms: Some(12),
            stderr: "rm is not allowed here\n".into(),
            stdout: String::new(),
            context: None,
            ignored: false,
        });
        assert_eq!(
            hook.summary().unwrap().text,
            "PreToolUse hook no-rm: block (12 ms): rm is not allowed here"
        );
        let interrupted = EventBody::Interrupted(InterruptedEvent {
            card: Some("card-1".into()),
            question: None,
        });
        assert_eq!(interrupted.summary().unwrap().tone, Tone::Failed);
        assert!(
            interrupted
                .summary()
                .unwrap()
                .text
                .ends_with("card card-1 can no longer be answered")
        );
        assert_eq!(
            EventBody::UserMessage(UserMessageEvent {
                plan: Default::default(),
                text: "hi".into()
            })
            .summary(),
            None
        );
    }

    #[test]
    fn usage_not_reported_is_said_so_not_as_zero() {
        assert_eq!(Usage::line(None), "usage not reported");
        let usage = Usage {
            input_tokens: 1283,
            output_tokens: 5,
            cache_read_input_tokens: 10,
            cost_usd: Some(0.0123),
            ..Usage::default()
        };
        assert_eq!(
            Usage::line(Some(&usage)),
            "1283 tokens in, 5 out, 10 cached, $0.0123"
        );
    }
}
