//! The one table of how turns end, which every front end's test walks:
//! exec, ACP and the TUI must each decide that a turn is over at its
//! `turn_ended` and nowhere before it, whatever came first (a `result`,
//! an error that ends the turn, a cancel). The page reads the same event.

use wicket_protocol::event::{
    AssistantMessageEvent, CancelledEvent, ErrorEvent, InterruptedEvent, ResultEvent,
    TurnEndedEvent, UserMessageEvent,
};
use wicket_protocol::{Event, EventBody, TurnOutcome};

/// One turn's events, the last its `turn_ended`.
pub struct Ending {
    /// What the row is.
    pub name: &'static str,
    /// The events, in order (seqs from 1).
    pub events: Vec<Event>,
    /// How it ended.
    pub outcome: TurnOutcome,
    /// The message of the error that ended it, if one did.
    pub error: Option<String>,
}

fn turn(name: &'static str, middle: Vec<EventBody>, outcome: TurnOutcome) -> Ending {
    let error = middle.iter().find_map(|body| match body {
        EventBody::Error(ErrorEvent {
            message,
            ends_turn: true,
        }) => Some(message.clone()),
        _ => None,
    });
    let mut bodies = vec![EventBody::UserMessage(UserMessageEvent {
        plan: Default::default(),
        text: "do it".into(),
    })];
    bodies.extend(middle);
    bodies.push(EventBody::TurnEnded(TurnEndedEvent { outcome }));
    Ending {
        name,
        events: bodies
            .into_iter()
            .zip(1..)
            .map(|(body, seq)| Event {
                seq,
                ts: "2026-12-04T00:00:00Z".into(),
                body,
            })
            .collect(),
        outcome,
        error,
    }
}

fn ends_turn(message: &str) -> EventBody {
    EventBody::Error(ErrorEvent {
        message: message.into(),
        ends_turn: true,
    })
}

/// Every way a turn ends.
pub fn turn_endings() -> Vec<Ending> {
    let reply = || {
        EventBody::AssistantMessage(AssistantMessageEvent {
            text: "done".into(),
            tool_calls: Vec::new(),
            usage: None,
            stop_reason: None,
        })
    };
    vec![
        turn(
            "a result",
            vec![
                reply(),
                EventBody::Result(ResultEvent {
                    text: "done".into(),
                    usage: None,
                }),
            ],
            TurnOutcome::Result,
        ),
        turn(
            "an error that ends the turn",
            vec![ends_turn("the model openai:x failed: 500")],
            TurnOutcome::Error,
        ),
        turn(
            "an error that does not end it, then a result",
            vec![
                EventBody::error("AGENTS.md was not read"),
                reply(),
                EventBody::Result(ResultEvent {
                    text: "done".into(),
                    usage: None,
                }),
            ],
            TurnOutcome::Result,
        ),
        turn(
            "a cancel",
            vec![EventBody::Cancelled(CancelledEvent {})],
            TurnOutcome::Cancelled,
        ),
        turn(
            "the step limit",
            vec![
                reply(),
                ends_turn("the turn reached its step limit of 3 model replies"),
            ],
            TurnOutcome::StepLimit,
        ),
        turn(
            "a budget",
            vec![ends_turn(
                "the turn stopped before its next request: past [limits] max_tokens_per_turn",
            )],
            TurnOutcome::Budget,
        ),
        turn(
            "a dead process",
            vec![EventBody::Interrupted(InterruptedEvent {
                card: None,
                question: None,
            })],
            TurnOutcome::Interrupted,
        ),
    ]
}
