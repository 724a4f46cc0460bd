//! Reading `log.jsonl`: streaming, one bounded line at a time; only a tail
//! without a final newline is torn; what a log leaves open ([`Unfinished`]).

use super::*;
use std::io::Read;
use wicket_protocol::event::{
    AnswerEvent, AssistantMessageEvent, CancelledEvent, CardEvent, CheckpointEvent, CompactedEvent,
    ErrorEvent, HookRunEvent, InterruptedEvent, McpEvent, NetEvent, NoticeEvent, QuestionEvent,
    QueuedEvent, ReplyEvent, ResultEvent, RetryEvent, RewoundEvent, SessionStartedEvent, TaskEvent,
    ToolCallEvent, ToolResultEvent, TurnEndedEvent, UnreadableEvent, UserMessageEvent,
};

/// What loading a log found.
#[derive(Debug, Default)]
pub struct Loaded {
    /// The events, an unreadable line as [`EventBody::Unreadable`].
    pub events: Vec<Event>,
    /// A torn last line (a crash mid-write) that was skipped, with its byte length.
    pub torn_tail: Option<usize>,
    /// Where a hole begins that ends the log: a sparse tail, never written
    /// (Wicket only appends, so nothing it wrote is there). Nothing past it
    /// is read, and a session opened to append cuts it off.
    pub hole: Option<u64>,
}

/// Reads a `log.jsonl`. A torn last line (no final newline) is skipped and
/// reported; every complete line that does not parse (damaged, too deep, too
/// long, or an event from a newer Wicket) is kept as an `unreadable` event,
/// so a session always loads and resumes, and nothing after it is lost.
pub fn load_log(path: &Path) -> Result<Loaded> {
    load_from(path, 0)
}

/// The events of a `log.jsonl` after `after`, as [`load_log`] reads them;
/// the lines before are skipped by their `seq` without being parsed, so a
/// follower catching up on a long log pays for what it missed only.
pub fn load_log_after(path: &Path, after: u64) -> Result<Vec<Event>> {
    Ok(load_from(path, after)?
        .events
        .into_iter()
        .filter(|event| event.seq > after)
        .collect())
}

/// The log opened for reading, up to where its data ends (see
/// [`Loaded::hole`]), and that end when it is a hole; with data past a
/// hole (never Wicket's: it only appends), the offset where that data
/// begins, to be read after the hole is skipped. `None` when there is no
/// log yet. A FIFO or anything else that is not a regular file is
/// refused, never waited on.
fn open_log_file(path: &Path) -> Result<Option<Opened>> {
    let Some(mut file) = files::open_own(path).map_err(io(path))? else {
        return Ok(None);
    };
    let size = file.metadata().map_err(io(path))?.len();
    let hole = files::hole_from(&file, 0).map_err(io(path))?;
    let data_after = match hole < size {
        true => files::data_from(&file, hole).map_err(io(path))?,
        false => None,
    };
    // Looking for holes moved the file's offset: read from the start.
    file.seek(SeekFrom::Start(0)).map_err(io(path))?;
    if hole >= size {
        return Ok(Some(Opened {
            first: file.take(size),
            hole: None,
            rest: None,
        }));
    }
    let rest = match data_after {
        Some(data) => {
            let mut rest = files::open_own(path)
                .map_err(io(path))?
                .ok_or_else(|| io(path)(std::io::ErrorKind::NotFound.into()))?;
            rest.seek(SeekFrom::Start(data)).map_err(io(path))?;
            Some((data, rest.take(size - data)))
        }
        None => None,
    };
    Ok(Some(Opened {
        first: file.take(hole),
        hole: Some(hole),
        rest,
    }))
}

/// A log opened to be read: its bytes up to its first hole, where that
/// hole begins, and the data past it (where it begins, and the rest).
struct Opened {
    first: std::io::Take<File>,
    hole: Option<u64>,
    rest: Option<(u64, std::io::Take<File>)>,
}

fn load_from(path: &Path, after: u64) -> Result<Loaded> {
    let Some(opened) = open_log_file(path)? else {
        return Ok(Loaded::default());
    };
    let reader = |file| BufReader::with_capacity(256 * 1024, file);
    let mut loaded = read_log(reader(opened.first), after, LOG_LINE_MAX_BYTES).map_err(io(path))?;
    let (Some(hole), Some((data, rest))) = (opened.hole, opened.rest) else {
        loaded.hole = opened.hole;
        return Ok(loaded);
    };
    // Data past a hole: the hole (and a line cut short before it) is one
    // unreadable line, never read byte by byte; what follows is read on.
    // Nothing is cut off when the session appends: it is kept as it is.
    loaded.torn_tail = None;
    let last = loaded.events.last().map_or(0, |event| event.seq);
    loaded.events.push(Event {
        seq: last.saturating_add(1),
        ts: String::new(),
        body: EventBody::Unreadable(UnreadableEvent {
            line: 0,
            error: format!(
                "bytes {hole} to {data} of the log were never written (a hole, which Wicket \
                 never leaves); skipped, and the lines after it read on"
            ),
        }),
    });
    let more = read_log(reader(rest), after, LOG_LINE_MAX_BYTES).map_err(io(path))?;
    loaded.events.extend(more.events);
    loaded.torn_tail = more.torn_tail;
    Ok(loaded)
}

/// The log's events from `reader`, line by line (see [`load_log`]); lines
/// whose seq is at most `after` are skipped unparsed.
pub(crate) fn read_log(reader: impl BufRead, after: u64, max: usize) -> std::io::Result<Loaded> {
    let mut lines = lines::Lines::new(reader, max);
    let mut loaded = Loaded::default();
    let mut number = 0u64;
    // The seq of the last line read, loaded or skipped: an unreadable line
    // without a seq of its own is numbered after it.
    let mut last = 0u64;
    while let Some(line) = lines.next_line()? {
        number += 1;
        let (seq, error) = match line {
            Line::Torn(length) => {
                loaded.torn_tail = Some(usize::try_from(length).unwrap_or(usize::MAX));
                break;
            }
            Line::Whole(bytes) => {
                let seq = seq_of(&bytes);
                // `after` 0 asks for every line, a seq of 0 included.
                if let Some(seq) = seq.filter(|&seq| after > 0 && seq <= after) {
                    last = seq;
                    continue;
                }
                match serde_json::from_slice::<Event>(&bytes) {
                    Ok(event) => {
                        last = event.seq;
                        loaded.events.push(event);
                        continue;
                    }
                    Err(error) => (seq, error.to_string()),
                }
            }
            Line::TooLong(length) => (
                None,
                format!("the line is {length} bytes, longer than the {max} a log line may be"),
            ),
        };
        let seq = seq
            .filter(|&seq| seq > last)
            .unwrap_or(last.saturating_add(1));
        last = seq;
        loaded.events.push(Event {
            seq,
            ts: String::new(),
            body: EventBody::Unreadable(UnreadableEvent {
                line: number,
                error,
            }),
        });
    }
    Ok(loaded)
}

/// The events a conversation is rebuilt from: those after the last
/// compaction's `to_seq` and the compaction itself, or the whole log when
/// there is none. The log is read streaming twice (to find the compaction,
/// then from it), and only the tail past `to_seq` is parsed: a long
/// session's turn does not start by reading 100,000 events it will never
/// send, nor by holding the file.
pub fn load_for_conversation(path: &Path) -> Result<Vec<Event>> {
    let Some(opened) = open_log_file(path)? else {
        return Ok(Vec::new());
    };
    // Past a hole, the data after it is searched too (the hole skipped).
    let rest: Box<dyn Read> = match opened.rest {
        Some((_, rest)) => Box::new(rest),
        None => Box::new(std::io::empty()),
    };
    let mut lines = lines::Lines::new(
        BufReader::with_capacity(256 * 1024, opened.first.chain(rest)),
        LOG_LINE_MAX_BYTES,
    );
    let mut to_seq = 0;
    while let Some(line) = lines.next_line().map_err(io(path))? {
        let Line::Whole(bytes) = line else {
            continue;
        };
        if memchr::memmem::find(&bytes, br#""type":"compacted""#).is_none() {
            continue;
        }
        if let Ok(Event {
            body: EventBody::Compacted(CompactedEvent { to_seq: to, .. }),
            ..
        }) = serde_json::from_slice::<Event>(&bytes)
        {
            to_seq = to;
        }
    }
    load_log_after(path, to_seq)
}

/// The `seq` a log line starts with (`{"seq":N,`), without parsing the rest.
fn seq_of(line: &[u8]) -> Option<u64> {
    let rest = line.strip_prefix(br#"{"seq":"#)?;
    let digits = rest.iter().take_while(|byte| byte.is_ascii_digit()).count();
    std::str::from_utf8(&rest[..digits]).ok()?.parse().ok()
}

/// What a log says is unfinished: a turn, a card, a question, calls
/// without results.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Unfinished {
    /// A turn started and did not end.
    pub turn: bool,
    /// The card left open.
    pub card: Option<CardId>,
    /// The question left open.
    pub question: Option<QuestionId>,
    /// Calls of the last reply that have no result.
    pub calls: Vec<CallId>,
    /// The turn ended (its `result`, `error`, `cancelled` or `interrupted`
    /// is there) but its `turn_ended` is not: how it ended.
    pub unannounced: Option<TurnOutcome>,
}

impl Unfinished {
    /// Reads the log's end.
    pub fn of(events: &[Event]) -> Unfinished {
        let mut state = Unfinished::default();
        for event in events {
            match &event.body {
                EventBody::UserMessage(UserMessageEvent { .. }) => {
                    state = Unfinished {
                        turn: true,
                        ..Unfinished::default()
                    };
                }
                EventBody::AssistantMessage(AssistantMessageEvent { tool_calls, .. }) => {
                    state.calls = tool_calls.iter().map(|call| call.id.clone()).collect();
                }
                EventBody::ToolCall(ToolCallEvent { call_id, .. }) => {
                    if !state.turn && !state.calls.contains(call_id) {
                        // A call of `wicket tool`: no reply made it.
                        state.calls.push(call_id.clone());
                    }
                }
                EventBody::ToolResult(ToolResultEvent { call_id, .. }) => {
                    state.calls.retain(|id| id != call_id);
                }
                EventBody::Card(CardEvent { card, .. }) => state.card = Some(card.id.clone()),
                EventBody::Answer(AnswerEvent { card, .. }) => {
                    if state.card.as_deref() == Some(card) {
                        state.card = None;
                    }
                }
                EventBody::Question(QuestionEvent { id, .. }) => state.question = Some(id.clone()),
                EventBody::Reply(ReplyEvent { question, .. }) => {
                    if state.question.as_deref() == Some(question) {
                        state.question = None;
                    }
                }
                EventBody::Result(ResultEvent { .. }) => {
                    state = Unfinished::ended(TurnOutcome::Result)
                }
                EventBody::Cancelled(CancelledEvent {}) => {
                    state = Unfinished::ended(TurnOutcome::Cancelled)
                }
                EventBody::Interrupted(InterruptedEvent { .. }) => {
                    state = Unfinished::ended(TurnOutcome::Interrupted);
                }
                EventBody::Error(ErrorEvent {
                    ends_turn: true, ..
                }) => state = Unfinished::ended(TurnOutcome::Error),
                EventBody::TurnEnded(TurnEndedEvent { .. }) => state = Unfinished::default(),
                EventBody::SessionStarted(SessionStartedEvent { .. })
                | EventBody::Hook(HookRunEvent { .. })
                | EventBody::Queued(QueuedEvent { .. })
                | EventBody::Task(TaskEvent { .. })
                | EventBody::Retry(RetryEvent { .. })
                | EventBody::Compacted(CompactedEvent { .. })
                | EventBody::Mcp(McpEvent { .. })
                | EventBody::Notice(NoticeEvent { .. })
                | EventBody::Checkpoint(CheckpointEvent { .. })
                | EventBody::Net(NetEvent { .. })
                | EventBody::Rewound(RewoundEvent { .. })
                | EventBody::Error(ErrorEvent {
                    ends_turn: false, ..
                })
                | EventBody::Unreadable(UnreadableEvent { .. }) => {}
            }
        }
        state
    }

    fn ended(outcome: TurnOutcome) -> Unfinished {
        Unfinished {
            unannounced: Some(outcome),
            ..Unfinished::default()
        }
    }

    /// Whether anything is left open.
    pub fn any(&self) -> bool {
        self.turn || self.card.is_some() || self.question.is_some() || !self.calls.is_empty()
    }
}
