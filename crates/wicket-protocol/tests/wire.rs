//! The log's wire shape does not drift: every line in
//! `log_written_before.jsonl` was written by Wicket before the protocol's
//! types changed (most by real runs of the page's test, the rest kept from
//! the version that wrote them), and each still reads, and writes back
//! byte for byte.

use wicket_protocol::event::{
    AnswerEvent, AssistantMessageEvent, CancelledEvent, CardEvent, CheckpointEvent, CompactedEvent,
    ErrorEvent, HookRunEvent, InterruptedEvent, McpEvent, NetEvent, NoticeEvent, QuestionEvent,
    QueuedEvent, ReplyEvent, ResultEvent, RetryEvent, RewoundEvent, SessionStartedEvent, TaskEvent,
    ToolCallEvent, ToolResultEvent, TurnEndedEvent, UnreadableEvent, UserMessageEvent,
};
use wicket_protocol::{Event, EventBody};

const LOG: &str = include_str!("log_written_before.jsonl");

#[test]
fn every_line_written_before_reads_and_writes_back_byte_for_byte() {
    for (number, line) in LOG.lines().enumerate() {
        let event: Event = serde_json::from_str(line)
            .unwrap_or_else(|error| panic!("line {}: {error}: {line}", number + 1));
        assert!(
            !matches!(event.body, EventBody::Unreadable(UnreadableEvent { .. })),
            "line {} is not a real event",
            number + 1
        );
        let again = serde_json::to_string(&event).unwrap();
        assert_eq!(again, line, "line {} changed on the way back", number + 1);
    }
}

/// The kind of every event the log can hold, numbered; a new kind fails to
/// compile here until it has a line in the file.
fn kind(body: &EventBody) -> usize {
    match body {
        EventBody::SessionStarted(SessionStartedEvent { .. }) => 0,
        EventBody::ToolCall(ToolCallEvent { .. }) => 1,
        EventBody::ToolResult(ToolResultEvent { .. }) => 2,
        EventBody::Card(CardEvent { .. }) => 3,
        EventBody::Answer(AnswerEvent { .. }) => 4,
        EventBody::UserMessage(UserMessageEvent { .. }) => 5,
        EventBody::AssistantMessage(AssistantMessageEvent { .. }) => 6,
        EventBody::Question(QuestionEvent { .. }) => 7,
        EventBody::Reply(ReplyEvent { .. }) => 8,
        EventBody::Result(ResultEvent { .. }) => 9,
        EventBody::Hook(HookRunEvent { .. }) => 10,
        EventBody::Queued(QueuedEvent { .. }) => 11,
        EventBody::Retry(RetryEvent { .. }) => 12,
        EventBody::Cancelled(CancelledEvent { .. }) => 13,
        EventBody::Interrupted(InterruptedEvent { .. }) => 14,
        EventBody::Compacted(CompactedEvent { .. }) => 15,
        EventBody::Mcp(McpEvent { .. }) => 16,
        EventBody::Checkpoint(CheckpointEvent { .. }) => 17,
        EventBody::Net(NetEvent { .. }) => 18,
        EventBody::Rewound(RewoundEvent { .. }) => 19,
        EventBody::Notice(NoticeEvent { .. }) => 20,
        EventBody::Error(ErrorEvent { .. }) => 21,
        EventBody::TurnEnded(TurnEndedEvent { .. }) => 22,
        // Never written: the loader makes it in place of a line it cannot read.
        EventBody::Unreadable(UnreadableEvent { .. }) => 23,
        EventBody::Task(TaskEvent { .. }) => 24,
    }
}

#[test]
fn each_line_names_its_kind_as_the_protocol_does() {
    for line in LOG.lines() {
        let event: Event = serde_json::from_str(line).unwrap();
        let value: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(value["type"], event.body.kind(), "{line}");
        assert_eq!(EventBody::KINDS[kind(&event.body)], event.body.kind());
    }
    assert_eq!(EventBody::KINDS[23], "unreadable");
}

#[test]
fn the_file_holds_every_kind_of_event_but_unreadable() {
    let mut seen = [false; EventBody::KINDS.len()];
    seen[23] = true;
    for line in LOG.lines() {
        let event: Event = serde_json::from_str(line).unwrap();
        seen[kind(&event.body)] = true;
    }
    let missing: Vec<usize> = (0..seen.len()).filter(|&k| !seen[k]).collect();
    assert!(missing.is_empty(), "no line of kinds {missing:?}");
}
