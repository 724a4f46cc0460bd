//! Turns and the session manager against an in-process chat client that
//! replays scripted replies and records every request: the loop, the core
//! tools, Stop hooks, queueing and blocking, cancel, and resume.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use wicket_chat::{ChatClient, Completion, Message};
use wicket_core::config::{Owner, StopHook};
use wicket_core::manager::{Manager, ManagerError, Open, Sent, TurnSetup};
use wicket_core::turn::Settings;
use wicket_gate::Confinement;
use wicket_gate::sandbox::{SandboxMode, SandboxSettings};
use wicket_protocol::event::{
    AnswerEvent, AssistantMessageEvent, CancelledEvent, CardEvent, CompactedEvent, ErrorEvent,
    HookRunEvent, InterruptedEvent, NoticeEvent, QueuedEvent, ReplyEvent, ResultEvent,
    ToolResultEvent, TurnEndedEvent, UserMessageEvent,
};
use wicket_protocol::{Answer, CardKind, EventBody, HookEvent, RunSource, SessionId, TurnOutcome};
use wicket_session as session;
use wicket_test_support::scripted::{calls, text};
use wicket_test_support::{Fixture, ScriptedClient, wait_until};

fn settings() -> Settings {
    Settings {
        managed: Default::default(),
        instructions_below: Default::default(),
        instructions: Default::default(),
        step_limit: 20,
        max_stop_blocks: 3,
        hooks: Vec::new(),
        session_start: None,
        max_tokens: 1000,
        skills: Vec::new(),
        confinement: Confinement {
            sandbox: SandboxSettings {
                mode: SandboxMode::Off,
                ..SandboxSettings::default()
            },
            home: std::path::PathBuf::from("/nonexistent-home"),
        },
        model: wicket_core::models::ModelInfo {
            context_window: 1_000_000,
            ..wicket_core::models::UNKNOWN
        },
        limits: wicket_core::config::Limits::default(),
        checkpoints: Default::default(),
        mcp_servers: Vec::new(),
        notices: Vec::new(),
        ask_window: None,
        window_note: None,
        rules: Default::default(),
    }
}

struct World {
    f: Fixture,
    home: std::path::PathBuf,
    ws: std::path::PathBuf,
    replay: Arc<ScriptedClient>,
    manager: Arc<Manager>,
    _runtime: tokio::runtime::Runtime,
}

fn world(replies: Vec<Completion>, settings: Settings) -> World {
    let f = Fixture::new();
    f.write("a.txt", "one\ntwo\n");
    world_in(f, replies, settings)
}

fn world_in(f: Fixture, replies: Vec<Completion>, settings: Settings) -> World {
    let replay = ScriptedClient::new(replies);
    let shared = replay.clone();
    let setup: TurnSetup =
        Arc::new(move |_, _| Ok((shared.boxed() as Box<dyn ChatClient>, settings.clone())));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let manager = Arc::new(Manager::new(&f.home, runtime.handle().clone(), setup));
    World {
        home: f.home.clone(),
        ws: f.ws.clone(),
        f,
        replay,
        manager,
        _runtime: runtime,
    }
}

impl World {
    /// The messages of every request so far.
    fn requests(&self) -> Vec<Vec<Message>> {
        self.replay
            .requests()
            .into_iter()
            .map(|request| request.messages)
            .collect()
    }
}

/// The event that ended the session's last turn, once its `turn_ended`
/// (the log's last event) is checked against it.
fn ending(events: &[EventBody]) -> Option<&EventBody> {
    let [.., before, EventBody::TurnEnded(TurnEndedEvent { outcome })] = events else {
        panic!("the log does not end with turn_ended: {events:#?}");
    };
    let agrees = match before {
        EventBody::Result(ResultEvent { .. }) => *outcome == TurnOutcome::Result,
        EventBody::Cancelled(CancelledEvent {}) => *outcome == TurnOutcome::Cancelled,
        EventBody::Interrupted(InterruptedEvent { .. }) => *outcome == TurnOutcome::Interrupted,
        EventBody::Error(ErrorEvent {
            ends_turn: true, ..
        }) => matches!(
            outcome,
            TurnOutcome::Error | TurnOutcome::StepLimit | TurnOutcome::Budget
        ),
        _ => false,
    };
    assert!(agrees, "turn_ended {outcome:?} after {before:?}");
    Some(before)
}

impl World {
    fn open(&self, id: &str) -> SessionId {
        self.manager
            .open(Some(&SessionId::from(id)), &self.ws, None)
            .unwrap()
    }

    fn events(&self, id: &str) -> Vec<EventBody> {
        session::load_log(&self.home.join("sessions").join(id).join("log.jsonl"))
            .unwrap()
            .events
            .into_iter()
            .map(|e| e.body)
            .collect()
    }

    fn types(&self, id: &str) -> Vec<String> {
        self.events(id)
            .iter()
            .map(|body| {
                serde_json::to_value(body).unwrap()["type"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect()
    }

    /// Waits until something is open in the session.
    fn wait_open(&self, id: &SessionId) -> Open {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(open) = self.manager.open_item(id).unwrap() {
                return open;
            }
            assert!(Instant::now() < deadline, "nothing opened");
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    fn answer_next(&self, id: &SessionId, answer: Answer) -> wicket_protocol::Card {
        match self.wait_open(id) {
            Open::Card(card) => {
                self.manager.answer(id, &card.id, answer).unwrap();
                *card
            }
            other => panic!("expected a card, got {other:?}"),
        }
    }
}

#[test]
fn a_full_turn_reads_writes_runs_and_finishes() {
    let w = world(
        vec![
            calls(&[("read_file", json!({"path": "a.txt"}))]),
            calls(&[(
                "search_replace",
                json!({"path": "a.txt", "old": "two", "new": "2"}),
            )]),
            calls(&[("run", json!({"argv": ["cat", "a.txt"]}))]),
            calls(&[("finish", json!({"result": "changed two to 2"}))]),
        ],
        settings(),
    );
    let id = w.open("s");
    assert_eq!(w.manager.send(&id, "change two").unwrap(), Sent::Started);
    let card = w.answer_next(&id, Answer::AllowOnce);
    assert!(matches!(&card.kind, CardKind::Write(write) if write.diff.contains("+2")));
    let card = w.answer_next(&id, Answer::AllowOnce);
    assert!(matches!(&card.kind, CardKind::Run(run) if run.argv == ["cat", "a.txt"]));
    w.manager.wait_idle(&id).unwrap();
    assert_eq!(
        std::fs::read_to_string(w.ws.join("a.txt")).unwrap(),
        "one\n2\n"
    );
    assert_eq!(
        w.types(&id),
        [
            "session_started",
            "user_message",
            "assistant_message",
            "tool_call",
            "tool_result",
            "assistant_message",
            "tool_call",
            "card",
            "answer",
            "tool_result",
            "assistant_message",
            "tool_call",
            "card",
            "answer",
            "tool_result",
            "assistant_message",
            "tool_call",
            "tool_result",
            "result",
            "turn_ended"
        ]
    );
    let Some(EventBody::Result(ResultEvent { text, usage })) = ending(&w.events(&id)).cloned()
    else {
        panic!()
    };
    assert_eq!(text, "changed two to 2");
    let input: u64 = w
        .replay
        .requests()
        .iter()
        .map(|r| r.bytes().div_ceil(4) as u64)
        .sum();
    let usage = usage.unwrap();
    assert_eq!((usage.input_tokens, usage.output_tokens), (input, 20));
    // The model saw each result: the last request has the run's stdout.
    let requests = w.requests();
    let Some(Message::ToolResult { content, .. }) = requests[3].last() else {
        panic!("{:?}", requests[3])
    };
    assert!(content.contains(r#""stdout":"one\n2\n""#), "{content}");
    assert_eq!(w.manager.meta(&id).unwrap().status, session::Status::Idle);
}

#[test]
fn a_reply_with_no_tool_call_finishes_and_a_denied_write_is_the_result() {
    let w = world(
        vec![
            calls(&[("write_file", json!({"path": "b.txt", "content": "x"}))]),
            text("I could not write b.txt."),
        ],
        settings(),
    );
    let id = w.open("s");
    w.manager.send(&id, "write b").unwrap();
    w.answer_next(&id, Answer::Deny);
    w.manager.wait_idle(&id).unwrap();
    assert!(!w.ws.join("b.txt").exists());
    let requests = w.requests();
    let Some(Message::ToolResult {
        content, is_error, ..
    }) = requests[1].last()
    else {
        panic!()
    };
    assert!(*is_error && content.contains("denied"), "{content}");
    assert!(
        matches!(ending(&w.events(&id)), Some(EventBody::Result(ResultEvent { text, .. })) if text == "I could not write b.txt.")
    );
}

#[test]
fn ask_waits_for_the_reply_and_blocks_new_messages_meanwhile() {
    let w = world(
        vec![
            calls(&[("ask", json!({"question": "Which file?"}))]),
            text("done"),
        ],
        settings(),
    );
    let id = w.open("s");
    w.manager.send(&id, "do it").unwrap();
    let Open::Question { id: qid, question } = w.wait_open(&id) else {
        panic!()
    };
    assert_eq!(question, "Which file?");
    assert_eq!(
        w.manager.meta(&id).unwrap().status,
        session::Status::Waiting
    );
    let refused = w.manager.send(&id, "another thing").unwrap_err();
    assert!(
        matches!(&refused, ManagerError::Blocked { open, .. } if matches!(&**open, Open::Question { id, .. } if *id == qid)),
        "{refused}"
    );
    assert!(refused.to_string().contains(qid.as_str()), "{refused}");
    w.manager.reply(&id, &qid, "a.txt").unwrap();
    w.manager.wait_idle(&id).unwrap();
    let requests = w.requests();
    assert!(
        matches!(requests[1].last(), Some(Message::ToolResult { content, .. }) if content.contains("a.txt"))
    );
    assert!(
        w.events(&id)
            .iter()
            .any(|e| matches!(e, EventBody::Reply(ReplyEvent { reply, .. }) if reply == "a.txt"))
    );
}

#[test]
fn an_open_card_blocks_messages_and_another_session_starts_at_once() {
    let w = world(
        vec![
            calls(&[("run", json!({"argv": ["true"]}))]),
            text("other session done"),
            text("first done"),
        ],
        settings(),
    );
    let one = w.open("one");
    let two = w.open("two");
    w.manager.send(&one, "run true").unwrap();
    let Open::Card(card) = w.wait_open(&one) else {
        panic!()
    };
    let refused = w.manager.send(&one, "more").unwrap_err();
    assert!(
        matches!(&refused, ManagerError::Blocked { open, .. } if open.id() == card.id.as_str()),
        "{refused}"
    );
    // Session two is not blocked by one's card: it runs to its end meanwhile.
    assert_eq!(w.manager.send(&two, "hello").unwrap(), Sent::Started);
    w.manager.wait_idle(&two).unwrap();
    assert!(
        matches!(ending(&w.events(&two)), Some(EventBody::Result(ResultEvent { text, .. })) if text == "other session done")
    );
    w.manager.answer(&one, &card.id, Answer::AllowOnce).unwrap();
    w.manager.wait_idle(&one).unwrap();
    assert!(
        matches!(ending(&w.events(&one)), Some(EventBody::Result(ResultEvent { text, .. })) if text == "first done")
    );
}

#[test]
fn turn_ended_is_the_one_signal_a_front_end_waits_for() {
    let w = world(vec![text("first done"), text("second done")], settings());
    let id = w.open("s");
    let mut events = w.manager.follow(&id, 0).unwrap();
    for (message, sent) in [("first", Sent::Started), ("second", Sent::Started)] {
        // With no wait_idle: the turn before is over when its `turn_ended` is seen.
        assert_eq!(w.manager.send(&id, message).unwrap(), sent);
        loop {
            let event = events.blocking_next().unwrap().unwrap();
            if let EventBody::TurnEnded(TurnEndedEvent { outcome }) = event.body {
                assert_eq!(outcome, TurnOutcome::Result);
                break;
            }
        }
        assert!(w.manager.running().is_empty());
        let on_disk = session::Session::meta_of(&w.home, &id).unwrap();
        assert_eq!(on_disk.status, session::Status::Idle);
    }
    // One `turn_ended` per turn, each the turn's last event.
    let types = w.types(&id);
    assert_eq!(
        types.iter().filter(|kind| *kind == "turn_ended").count(),
        2,
        "{types:?}"
    );
    assert_eq!(types.last().map(String::as_str), Some("turn_ended"));
}

#[test]
fn a_message_during_a_running_turn_is_queued_and_runs_after() {
    let w = world(
        vec![
            // The command waits for a file the test makes after the second
            // message is sent: the turn is surely still running then.
            calls(&[(
                "run",
                json!({"argv": ["sh", "-c", "while [ ! -e go ]; do sleep 0.01; done"]}),
            )]),
            text("first done"),
            text("second done"),
        ],
        settings(),
    );
    let id = w.open("s");
    w.manager.send(&id, "first").unwrap();
    // While the card is open the session is blocked; once answered it runs,
    // and a message sent while it runs is queued.
    let Open::Card(card) = w.wait_open(&id) else {
        panic!()
    };
    let mut events = w
        .manager
        .follow(&id, w.manager.last_seq(&id).unwrap())
        .unwrap();
    w.manager.answer(&id, &card.id, Answer::AllowOnce).unwrap();
    // Wait until the answer is logged, so the card is closed but the turn still runs.
    loop {
        let event = events.blocking_next().unwrap().unwrap();
        if matches!(event.body, EventBody::Answer(AnswerEvent { .. })) {
            break;
        }
    }
    let sent = w.manager.send(&id, "second").unwrap();
    assert_eq!(sent, Sent::Queued);
    std::fs::write(w.ws.join("go"), "").unwrap();
    w.manager.wait_idle(&id).unwrap();
    let bodies = w.events(&id);
    let order: Vec<String> = bodies
        .iter()
        .filter_map(|e| match e {
            EventBody::UserMessage(UserMessageEvent { text, .. }) => Some(format!("user {text}")),
            EventBody::Queued(QueuedEvent { text }) => Some(format!("queued {text}")),
            EventBody::Result(ResultEvent { text, .. }) => Some(format!("result {text}")),
            _ => None,
        })
        .collect();
    assert_eq!(
        order,
        [
            "user first",
            "queued second",
            "result first done",
            "user second",
            "result second done"
        ]
    );
}

#[test]
fn use_skill_returns_the_body_and_a_missing_one_lists_the_skills() {
    let mut s = settings();
    let f = Fixture::new();
    f.write(
        ".wicket/skills/release/SKILL.md",
        "---\nname: release\ndescription: Cut a release\n---\nTag it.\n",
    );
    s.skills =
        wicket_core::skills::discover(&wicket_tools::Workspace::open(&f.ws).unwrap(), &f.home, &[]);
    let w = world_in(
        f,
        vec![
            calls(&[
                ("use_skill", json!({"name": "release"})),
                ("use_skill", json!({"name": "deploy"})),
            ]),
            text("ok"),
        ],
        s,
    );
    let id = w.open("s");
    w.manager.send(&id, "release").unwrap();
    w.manager.wait_idle(&id).unwrap();
    let requests = w.requests();
    let results: Vec<&str> = requests[1]
        .iter()
        .filter_map(|m| match m {
            Message::ToolResult { content, .. } => Some(content.as_str()),
            _ => None,
        })
        .collect();
    assert!(results[0].contains("Tag it."), "{}", results[0]);
    assert!(
        results[1].contains("the skills are: release"),
        "{}",
        results[1]
    );
}

fn hook_script(dir: &std::path::Path, body: &str) -> StopHook {
    let path = dir.join("hook.sh");
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    StopHook::new(
        HookEvent::Stop,
        vec!["sh".into(), path.display().to_string()],
        Some(20),
        Owner::Home,
    )
}

#[test]
fn a_stop_hook_that_blocks_once_sends_the_model_back_then_passes() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("blocked-once");
    let mut s = settings();
    // Blocks the first time (stderr to the model), passes the second; it
    // also checks the JSON it is given on stdin.
    s.hooks = vec![hook_script(
        dir.path(),
        &format!(
            "input=$(cat)\ncase \"$input\" in *'\"stop_hook_active\":true'*) ;; *) echo bad input >&2; exit 1;; esac\nif [ -e {m} ]; then exit 0; fi\ntouch {m}\necho 'tests fail: fix test_x' >&2\nexit 2",
            m = marker.display()
        ),
    )];
    let w = world(
        vec![
            calls(&[("finish", json!({"result": "first try"}))]),
            calls(&[("finish", json!({"result": "second try"}))]),
        ],
        s,
    );
    let id = w.open("s");
    w.manager.send(&id, "work").unwrap();
    w.manager.wait_idle(&id).unwrap();
    let requests = w.requests();
    assert!(
        matches!(requests[1].last(), Some(Message::ToolResult { content, is_error: true, .. }) if content.contains("tests fail: fix test_x"))
    );
    let outcomes: Vec<String> = w
        .events(&id)
        .iter()
        .filter_map(|e| match e {
            EventBody::Hook(HookRunEvent { outcome, .. }) => Some(format!("{outcome:?}")),
            EventBody::Result(ResultEvent { text, .. }) => Some(text.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(outcomes, ["Block", "Pass", "second try"]);
}

#[test]
fn three_blocks_in_a_row_end_the_turn_and_a_failing_hook_counts_as_one() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = settings();
    s.hooks = vec![hook_script(dir.path(), "echo 'not yet' >&2\nexit 2")];
    let w = world(
        vec![
            calls(&[("finish", json!({"result": "1"}))]),
            text("2 (no tool call: also judged by the hooks)"),
            calls(&[("finish", json!({"result": "3"}))]),
            calls(&[("finish", json!({"result": "never asked"}))]),
        ],
        s,
    );
    let id = w.open("s");
    w.manager.send(&id, "work").unwrap();
    w.manager.wait_idle(&id).unwrap();
    assert_eq!(w.requests().len(), 3);
    let events = w.events(&id);
    assert!(
        matches!(ending(&events), Some(EventBody::Error(ErrorEvent { ends_turn: true, message })) if message.contains("3 times"))
    );
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, EventBody::Result(ResultEvent { .. })))
    );

    // A hook that exits 1 fails closed: an error event, and no result.
    let dir = tempfile::tempdir().unwrap();
    let mut s = settings();
    s.max_stop_blocks = 1;
    s.hooks = vec![hook_script(dir.path(), "exit 1")];
    let w = world(vec![calls(&[("finish", json!({"result": "x"}))])], s);
    let id = w.open("s");
    w.manager.send(&id, "work").unwrap();
    w.manager.wait_idle(&id).unwrap();
    let events = w.events(&id);
    assert!(events.iter().any(|e| matches!(e, EventBody::Error(ErrorEvent { ends_turn: false, message }) if message.contains("counts as a block"))));
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, EventBody::Result(ResultEvent { .. })))
    );
}

#[test]
fn the_step_limit_ends_a_runaway_turn() {
    let mut s = settings();
    s.step_limit = 3;
    let replies = (0..5).map(|_| calls(&[("list_dir", json!({}))])).collect();
    let w = world(replies, s);
    let id = w.open("s");
    w.manager.send(&id, "loop").unwrap();
    w.manager.wait_idle(&id).unwrap();
    assert_eq!(w.requests().len(), 3);
    assert!(
        matches!(ending(&w.events(&id)), Some(EventBody::Error(ErrorEvent { ends_turn: true, message })) if message.contains("step limit of 3"))
    );
    assert!(matches!(
        w.events(&id).last(),
        Some(EventBody::TurnEnded(TurnEndedEvent {
            outcome: TurnOutcome::StepLimit
        }))
    ));
}

#[test]
fn cancel_stops_a_command_that_ignores_sigterm_and_the_session_resumes() {
    let w = world(
        vec![
            calls(&[
                (
                    "run",
                    // It ignores TERM, then says so by making a file.
                    json!({"argv": ["sh", "-c", "trap '' TERM; touch ignoring; sleep 30"]}),
                ),
                ("list_dir", json!({})),
            ]),
            text("resumed fine"),
        ],
        settings(),
    );
    let id = w.open("s");
    w.manager.send(&id, "run it").unwrap();
    w.answer_next(&id, Answer::AllowOnce);
    assert!(
        wait_until(Duration::from_secs(20), || w.ws.join("ignoring").exists()),
        "the command started"
    );
    let started = Instant::now();
    assert!(w.manager.cancel(&id).unwrap());
    w.manager.wait_idle(&id).unwrap();
    let took = started.elapsed();
    assert!(
        took >= Duration::from_secs(2) && took < Duration::from_secs(10),
        "TERM is ignored, so KILL comes 2 s later: {took:?}"
    );
    let events = w.events(&id);
    assert!(matches!(
        ending(&events),
        Some(EventBody::Cancelled(CancelledEvent {}))
    ));
    let run_signal = events.iter().find_map(|e| match e {
        EventBody::ToolResult(ToolResultEvent {
            result: Ok(wicket_protocol::ToolOutput::Run(run)),
            ..
        }) => Some(run.signal),
        _ => None,
    });
    assert_eq!(run_signal, Some(Some(9)), "{events:?}");
    // Every call of the reply has a result: the run's, and a synthetic one.
    let results: Vec<(wicket_protocol::CallId, bool)> = events
        .iter()
        .filter_map(|e| match e {
            EventBody::ToolResult(ToolResultEvent { call_id, result }) => {
                Some((call_id.clone(), result.is_ok()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(results.len(), 2, "{results:?}");
    // Resuming: the next turn's conversation is valid — each call answered.
    w.manager.send(&id, "go on").unwrap();
    w.manager.wait_idle(&id).unwrap();
    let requests = w.requests();
    let last = requests.last().unwrap();
    let asked: Vec<&str> = last
        .iter()
        .flat_map(|m| match m {
            Message::Assistant { tool_calls, .. } => {
                tool_calls.iter().map(|c| c.id.as_str()).collect::<Vec<_>>()
            }
            _ => Vec::new(),
        })
        .collect();
    let answered: Vec<&str> = last
        .iter()
        .filter_map(|m| match m {
            Message::ToolResult { call_id, .. } => Some(call_id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(asked, answered);
    assert!(matches!(last.last(), Some(Message::User { text }) if text == "go on"));
    assert!(
        matches!(ending(&w.events(&id)), Some(EventBody::Result(ResultEvent { text, .. })) if text == "resumed fine")
    );
}

/// A Stop hook the workspace's config declares raises a run card (source
/// hook, its exact argv) before it runs; the home config's does not; a deny
/// skips it; allow_session keys it exactly.
#[test]
fn a_workspace_hook_asks_first_and_a_home_hook_does_not() {
    let f = Fixture::new();
    let ran = f.root.join("ran");
    let hook = |owner| {
        StopHook::new(
            HookEvent::Stop,
            vec![
                "sh".into(),
                "-c".into(),
                format!("echo x >> {}", ran.display()),
            ],
            Some(20),
            owner,
        )
    };
    let mut s = settings();
    s.hooks = vec![hook(Owner::Workspace)];
    let w = world_in(
        f,
        vec![text("one"), text("two"), text("three"), text("four")],
        s,
    );
    let id = w.open("s");
    let ran_count = || {
        std::fs::read_to_string(&ran)
            .map(|text| text.lines().count())
            .unwrap_or(0)
    };
    // Deny: the hook never runs, and the turn still ends.
    w.manager.send(&id, "1").unwrap();
    let card = w.answer_next(&id, Answer::Deny);
    let CardKind::Run(run) = &card.kind else {
        panic!("{card:?}")
    };
    assert_eq!(run.source, RunSource::Hook);
    assert_eq!(run.argv, hook(Owner::Workspace).command);
    w.manager.wait_idle(&id).unwrap();
    assert_eq!(ran_count(), 0);
    // allow_session: it runs, and the next time it runs without a card.
    w.manager.send(&id, "2").unwrap();
    w.answer_next(&id, Answer::AllowSession);
    w.manager.wait_idle(&id).unwrap();
    assert_eq!(ran_count(), 1);
    w.manager.send(&id, "3").unwrap();
    w.manager.wait_idle(&id).unwrap();
    assert_eq!(ran_count(), 2);
    let cards = w
        .events(&id)
        .iter()
        .filter(|e| matches!(e, EventBody::Card(CardEvent { .. })))
        .count();
    assert_eq!(cards, 2);
    assert!(w.f.meta("s")["allowed"]["run"][0]["argv"] == json!(hook(Owner::Workspace).command));

    // The person's own hook runs with no card at all.
    let f = Fixture::new();
    let mut s = settings();
    let mine = f.root.join("mine");
    s.hooks = vec![StopHook::new(
        HookEvent::Stop,
        vec!["touch".into(), mine.display().to_string()],
        Some(20),
        Owner::Home,
    )];
    let w = world_in(f, vec![text("done")], s);
    let id = w.open("s");
    w.manager.send(&id, "go").unwrap();
    w.manager.wait_idle(&id).unwrap();
    assert!(mine.exists());
    assert!(
        !w.events(&id)
            .iter()
            .any(|e| matches!(e, EventBody::Card(CardEvent { .. })))
    );
}

fn cut(text_: &str) -> Completion {
    Completion {
        stop_reason: Some(wicket_chat::StopReason::MaxTokens),
        ..text(text_)
    }
}

/// A reply cut by the output limit is never the turn's result: the model
/// is told and goes on once; a second cut in a row ends the turn.
/// A reply that is not taken (`first`, then `second` in a row): once, the
/// model is told (`told`, in the live request and in the conversation
/// rebuilt from the log) and answers; twice, the turn ends with an error
/// that says `why`.
fn a_reply_not_taken(first: Completion, second: Completion, told: &str, why: &str) {
    let w = world(vec![first.clone(), text("The answer is 42.")], settings());
    let id = w.open("s");
    w.manager.send(&id, "what is it").unwrap();
    w.manager.wait_idle(&id).unwrap();
    assert!(
        matches!(ending(&w.events(&id)), Some(EventBody::Result(ResultEvent { text, .. })) if text == "The answer is 42.")
    );
    let asked = &w.requests()[1];
    assert!(
        matches!(asked.last(), Some(Message::User { text }) if text.contains(told)),
        "{asked:?}"
    );
    let loaded = session::load_log(&w.home.join("sessions/s/log.jsonl")).unwrap();
    let rebuilt = wicket_core::turn::conversation(&loaded.events);
    assert!(
        rebuilt
            .iter()
            .any(|m| matches!(m, Message::User { text } if text.contains(told)))
    );

    let w = world(vec![first, second, text("never")], settings());
    let id = w.open("s");
    w.manager.send(&id, "what is it").unwrap();
    w.manager.wait_idle(&id).unwrap();
    let events = w.events(&id);
    assert!(
        matches!(ending(&events), Some(EventBody::Error(ErrorEvent { ends_turn: true, message })) if message.contains(why)),
        "{events:?}"
    );
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, EventBody::Result(ResultEvent { .. })))
    );
}

#[test]
fn a_reply_cut_by_the_output_limit_is_not_the_result() {
    a_reply_not_taken(
        cut("The answer is"),
        cut("b"),
        "cut off",
        "output-token limit",
    );
}

/// An empty reply (no text, no call: what LiteLLM sends after an upstream
/// crash) is never the result either.
#[test]
fn an_empty_reply_is_not_the_result() {
    a_reply_not_taken(text(""), text(" "), "was empty", "empty twice");
}

/// AGENTS.md is read through the resolver: a link out of the workspace is
/// not followed (nothing of it reaches the provider) and a FIFO does not
/// hang the turn.
#[test]
fn agents_md_through_a_link_out_or_a_fifo_is_not_read() {
    for kind in ["link", "fifo"] {
        let f = Fixture::new();
        if kind == "link" {
            f.link("AGENTS.md", f.outside.join("secret"));
        } else {
            let fifo = f.ws.join("AGENTS.md");
            assert!(
                std::process::Command::new("mkfifo")
                    .arg(&fifo)
                    .status()
                    .unwrap()
                    .success()
            );
        }
        let w = world_in(f, vec![text("done")], settings());
        let id = w.open("s");
        w.manager.send(&id, "hi").unwrap();
        w.manager.wait_idle(&id).unwrap();
        let system = &w.replay.requests()[0].system;
        assert!(
            !system.contains("SECRET") && !system.contains("AGENTS.md:"),
            "{kind}: {system}"
        );
        assert!(
            w.events(&id).iter().any(|e| matches!(e, EventBody::Error(ErrorEvent { message, .. }) if message.contains("AGENTS.md was not read"))),
            "{kind}"
        );
        assert!(matches!(
            ending(&w.events(&id)),
            Some(EventBody::Result(ResultEvent { .. }))
        ));
    }
    // A plain AGENTS.md is read.
    let f = Fixture::new();
    f.write("AGENTS.md", "Use tabs.\n");
    let w = world_in(f, vec![text("done")], settings());
    let id = w.open("s");
    w.manager.send(&id, "hi").unwrap();
    w.manager.wait_idle(&id).unwrap();
    assert!(w.replay.requests()[0].system.contains("Use tabs."));
}

/// A client that posts a message the moment it sees a card on the event
/// stream is always refused: the card is open before its event is seen.
#[test]
fn a_card_blocks_messages_from_the_moment_its_event_is_seen() {
    const ROUNDS: usize = 200;
    let replies = (0..ROUNDS)
        .flat_map(|_| [calls(&[("run", json!({"argv": ["true"]}))]), text("ok")])
        .collect();
    let w = world(replies, settings());
    let id = w.open("s");
    let mut events = w
        .manager
        .follow(&id, w.manager.last_seq(&id).unwrap())
        .unwrap();
    let mut queued = 0;
    for round in 0..ROUNDS {
        w.manager.send(&id, &format!("round {round}")).unwrap();
        let card = loop {
            let event = events.blocking_next().unwrap().unwrap();
            if let EventBody::Card(CardEvent { card, .. }) = event.body {
                break card;
            }
        };
        match w.manager.send(&id, "too soon") {
            Err(ManagerError::Blocked { .. }) => {}
            Ok(_) => queued += 1,
            Err(other) => panic!("{other}"),
        }
        w.manager.answer(&id, &card.id, Answer::Deny).unwrap();
        w.manager.wait_idle(&id).unwrap();
    }
    assert_eq!(queued, 0, "a message got past an open card");
}

fn small_window(window: u64) -> Settings {
    let mut s = settings();
    s.model.context_window = window;
    s
}

/// 500 turns, each reading a 2 KB file, in a 4,000-token window: the
/// conversation is compacted again and again, and no request the model
/// gets is ever over the window.
#[test]
fn a_500_turn_session_stays_under_the_window_for_its_whole_life() {
    const TURNS: usize = 500;
    let f = Fixture::new();
    f.write(
        "page.txt",
        &"the quick brown fox jumps over the lazy dog\n".repeat(48),
    );
    let mut replies = Vec::new();
    for turn in 0..TURNS {
        replies.push(calls(&[("read_file", json!({"path": "page.txt"}))]));
        replies.push(text(&format!("done {turn}")));
    }
    let w = world_in(f, replies, small_window(4000));
    let replay = w
        .replay
        .clone()
        .summarising(wicket_core::turn::COMPACT_PROMPT);
    let id = w.open("s");
    for turn in 0..TURNS {
        w.manager.send(&id, &format!("turn {turn}")).unwrap();
        w.manager.wait_idle(&id).unwrap();
    }
    let events = w.events(&id);
    let results = events
        .iter()
        .filter(|e| matches!(e, EventBody::Result(ResultEvent { .. })))
        .count();
    assert_eq!(results, TURNS, "every turn finished");
    let compactions = events
        .iter()
        .filter(|e| matches!(e, EventBody::Compacted(CompactedEvent { .. })))
        .count();
    assert!(compactions > 10, "{compactions} compactions");
    // Measured apart from the runtime's estimator (which a copy of it would
    // only agree with): every byte of the request as written out in full,
    // structure and escapes included, at the usual 4 bytes a token. That
    // counts more than any provider would, so it is a bound, not a guess.
    let largest = replay
        .requests()
        .iter()
        .map(|r| format!("{r:?}").len().div_ceil(4))
        .max()
        .unwrap();
    assert!(largest <= 4000, "a request of about {largest} tokens");
    // The log keeps every event: each turn's read result is there.
    let reads = events
        .iter()
        .filter(|e| {
            matches!(
                e,
                EventBody::ToolResult(ToolResultEvent { result: Ok(_), .. })
            )
        })
        .count();
    assert!(reads >= TURNS);
}

/// A fresh session in a small window: the system prompt and the tools
/// alone pass 80 % of it. There is nothing to summarise, so no summary is
/// asked for (it would only make the prompt longer): a request that fits
/// goes as it is, and one that does not ends the turn with an error that
/// says why.
#[test]
fn a_fresh_session_is_never_compacted() {
    let sized = world(vec![text("sized")], settings());
    let id = sized.open("s");
    sized.manager.send(&id, "hi").unwrap();
    sized.manager.wait_idle(&id).unwrap();
    let first = &sized.replay.requests()[0];
    let tools: usize = first
        .tools
        .iter()
        .map(|tool| tool.name.len() + tool.description.len() + tool.parameters.to_string().len())
        .sum();
    let estimate = (first.system.len() + tools + "hi".len()).div_ceil(4) as u64;

    let fits = world(vec![text("fits")], small_window(estimate * 10 / 9));
    let id = fits.open("s");
    fits.manager.send(&id, "hi").unwrap();
    fits.manager.wait_idle(&id).unwrap();
    let events = fits.events(&id);
    assert_eq!(
        fits.replay.requests().len(),
        1,
        "no summary request: {events:#?}"
    );
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, EventBody::Compacted(CompactedEvent { .. })))
    );
    assert!(
        matches!(ending(&events), Some(EventBody::Result(ResultEvent { text, .. })) if text == "fits")
    );

    let too_small = world(vec![text("never")], small_window(estimate / 2));
    let id = too_small.open("s");
    too_small.manager.send(&id, "hi").unwrap();
    too_small.manager.wait_idle(&id).unwrap();
    let events = too_small.events(&id);
    assert!(too_small.replay.requests().is_empty(), "{events:#?}");
    assert!(
        matches!(ending(&events), Some(EventBody::Error(ErrorEvent { ends_turn: true, message })) if message.contains("the system prompt, the tools")),
        "{events:#?}"
    );
}

/// A provider's "prompt is too long" compacts once and asks again once.
#[test]
fn prompt_too_long_compacts_and_retries_exactly_once() {
    let w = world(vec![text("early")], small_window(100_000));
    let replay = w
        .replay
        .clone()
        .summarising(wicket_core::turn::COMPACT_PROMPT);
    let id = w.open("s");
    w.manager.send(&id, "first").unwrap();
    w.manager.wait_idle(&id).unwrap();
    replay.push(Err(wicket_chat::ChatError::new(
        wicket_chat::ChatErrorKind::Http { status: 400 },
        "prompt is too long: 210000 tokens > 200000 maximum",
    )));
    replay.push(Ok(text("answered after compacting")));
    w.manager.send(&id, "second").unwrap();
    w.manager.wait_idle(&id).unwrap();
    let events = w.events(&id);
    let compactions = events
        .iter()
        .filter(|e| matches!(e, EventBody::Compacted(CompactedEvent { .. })))
        .count();
    assert_eq!(compactions, 1, "{events:#?}");
    // first turn, then: the refused request, the summary, the retry.
    assert_eq!(replay.requests().len(), 1 + 3);
    assert!(
        matches!(ending(&events), Some(EventBody::Result(ResultEvent { text, .. })) if text == "answered after compacting")
    );
    // A second refusal in the same turn is not retried blindly.
    replay.push(Err(wicket_chat::ChatError::new(
        wicket_chat::ChatErrorKind::Http { status: 400 },
        "prompt is too long",
    )));
    replay.push(Err(wicket_chat::ChatError::new(
        wicket_chat::ChatErrorKind::Http { status: 400 },
        "prompt is too long",
    )));
    w.manager.send(&id, "third").unwrap();
    w.manager.wait_idle(&id).unwrap();
    assert!(matches!(
        ending(&w.events(&id)),
        Some(EventBody::Error(ErrorEvent {
            ends_turn: true,
            ..
        }))
    ));
    assert_eq!(
        replay.requests().len(),
        4 + 3,
        "refused, summary, refused: then it stops"
    );
}

/// `[limits]` ends a turn before the request that would pass it.
#[test]
fn budget_limits_stop_a_turn_before_the_request_that_would_pass_them() {
    let mut s = settings();
    s.limits.max_tokens_per_turn = Some(6_000);
    let replies = (0..10).map(|_| calls(&[("list_dir", json!({}))])).collect();
    let w = world(replies, s);
    let id = w.open("s");
    w.manager.send(&id, "loop").unwrap();
    w.manager.wait_idle(&id).unwrap();
    let events = w.events(&id);
    let Some(EventBody::Error(ErrorEvent {
        ends_turn: true,
        message,
    })) = ending(&events)
    else {
        panic!("{events:?}")
    };
    assert!(message.contains("max_tokens_per_turn = 6000"), "{message}");
    assert_eq!(
        events.last(),
        Some(&EventBody::TurnEnded(TurnEndedEvent {
            outcome: TurnOutcome::Budget
        }))
    );
    let used: u64 = events
        .iter()
        .filter_map(|e| match e {
            EventBody::AssistantMessage(AssistantMessageEvent { usage, .. }) => {
                usage.map(|usage| usage.input_tokens + usage.output_tokens)
            }
            _ => None,
        })
        .sum();
    assert!(used <= 6_000, "the limit was passed: {used}");
    assert!(w.requests().len() < 10);

    let mut s = settings();
    s.model.prices = Some(wicket_core::models::Prices {
        input: 3.0,
        output: 15.0,
        cached_input: 0.3,
        cache_write: 3.75,
    });
    s.limits.max_cost_usd_per_turn = Some(0.02);
    let replies = (0..10).map(|_| calls(&[("list_dir", json!({}))])).collect();
    let w = world(replies, s);
    let id = w.open("s");
    w.manager.send(&id, "loop").unwrap();
    w.manager.wait_idle(&id).unwrap();
    let events = w.events(&id);
    let Some(EventBody::Error(ErrorEvent {
        ends_turn: true,
        message,
    })) = ending(&events)
    else {
        panic!("{events:?}")
    };
    assert!(
        message.contains("max_cost_usd_per_turn = 0.02"),
        "{message}"
    );
    let spent: f64 = events
        .iter()
        .filter_map(|e| match e {
            EventBody::AssistantMessage(AssistantMessageEvent { usage, .. }) => {
                usage.and_then(|usage| usage.cost_usd)
            }
            _ => None,
        })
        .sum();
    assert!(spent > 0.0 && spent <= 0.02, "{spent}");
}

/// A compaction is taken only from a reply with text: a reply with a tool
/// call and no text is asked once more with no tools, and when that has no
/// text either the turn ends with an error and the conversation is left
/// as it was (no `compacted`).
#[test]
fn a_compaction_reply_with_no_text_is_not_taken() {
    let too_long = || {
        Err(wicket_chat::ChatError::new(
            wicket_chat::ChatErrorKind::Http { status: 400 },
            "prompt is too long: 210000 tokens > 200000 maximum",
        ))
    };
    let w = world(vec![text("early")], small_window(100_000));
    let id = w.open("s");
    w.manager.send(&id, "first").unwrap();
    w.manager.wait_idle(&id).unwrap();
    // No summary twice: a call instead, then nothing.
    w.replay.push(too_long());
    w.replay.push(Ok(calls(&[("list_dir", json!({}))])));
    w.replay.push(Ok(text("  ")));
    w.manager.send(&id, "second").unwrap();
    w.manager.wait_idle(&id).unwrap();
    let events = w.events(&id);
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, EventBody::Compacted(CompactedEvent { .. }))),
        "{events:#?}"
    );
    assert!(
        matches!(ending(&events), Some(EventBody::Error(ErrorEvent { ends_turn: true, message })) if message.contains("gave no summary")),
        "{events:#?}"
    );
    let requests = w.replay.requests();
    assert_eq!(requests.len(), 1 + 3);
    // The retry offered no tools; the first summary request did.
    assert!(!requests[2].tools.is_empty());
    assert!(requests[3].tools.is_empty());
    // Then a summary on the retry is taken.
    w.replay.push(too_long());
    w.replay.push(Ok(calls(&[("list_dir", json!({}))])));
    w.replay
        .push(Ok(text("SUMMARY: the first turn said early")));
    w.replay.push(Ok(text("answered after compacting")));
    w.manager.send(&id, "third").unwrap();
    w.manager.wait_idle(&id).unwrap();
    let events = w.events(&id);
    assert!(events.iter().any(
        |e| matches!(e, EventBody::Compacted(CompactedEvent { summary, .. }) if summary.starts_with("SUMMARY"))
    ));
    assert!(
        matches!(ending(&events), Some(EventBody::Result(ResultEvent { text, .. })) if text == "answered after compacting")
    );
}

/// A turn's thread runs nicer than the process (so the threads that answer
/// the person come first), but a command it starts runs at the process's
/// own priority: the keeper that forks it is started before the turn's
/// thread lowers itself.
#[test]
fn a_command_runs_at_the_processs_priority_not_the_turns() {
    let w = world(
        vec![calls(&[("run", json!({"argv": ["nice"]}))]), text("ran")],
        settings(),
    );
    let id = w.open("s");
    w.manager.send(&id, "how nice").unwrap();
    w.answer_next(&id, Answer::AllowOnce);
    w.manager.wait_idle(&id).unwrap();
    let ours = std::process::Command::new("nice").output().unwrap().stdout;
    let ran = w
        .events(&id)
        .into_iter()
        .find_map(|event| match event {
            EventBody::ToolResult(ToolResultEvent {
                result: Ok(wicket_protocol::ToolOutput::Run(run)),
                ..
            }) => Some(run.stdout),
            _ => None,
        })
        .unwrap();
    assert_eq!(ran, String::from_utf8(ours).unwrap());
}

/// CLAUDE.md beside AGENTS.md, its `@path` imports two levels down (inside
/// the workspace only), and the person's own file first; the first turn's
/// notice names every file read.
#[test]
fn claude_md_and_its_imports_and_the_persons_own_file_are_read_and_named() {
    let f = Fixture::new();
    f.write(
        "CLAUDE.md",
        "Read @docs/style.md and @../escape.md. Not `@docs/code.md`.\n",
    );
    f.write("docs/style.md", "Style: tabs. See @docs/deep.md\n");
    f.write("docs/deep.md", "Deep rule. @docs/deeper.md\n");
    f.write("docs/deeper.md", "TOO DEEP\n");
    f.write("docs/code.md", "IN CODE\n");
    std::fs::write(f.root.join("escape.md"), "ESCAPED\n").unwrap();
    let mine = f.root.join("my-claude.md");
    std::fs::write(&mine, "MY RULE\n").unwrap();
    let mut with_mine = settings();
    with_mine.instructions = vec![("~/.claude/CLAUDE.md".into(), mine)];
    let w = world_in(f, vec![text("done")], with_mine);
    let id = w.open("s");
    w.manager.send(&id, "hi").unwrap();
    w.manager.wait_idle(&id).unwrap();
    let system = &w.replay.requests()[0].system;
    for read in ["MY RULE", "Style: tabs", "Deep rule"] {
        assert!(system.contains(read), "{read}: {system}");
    }
    for not in ["TOO DEEP", "ESCAPED", "IN CODE"] {
        assert!(!system.contains(not), "{not}: {system}");
    }
    let events = w.events(&id);
    let named = events
        .iter()
        .find_map(|e| match e {
            EventBody::Notice(NoticeEvent { message, .. })
                if message.starts_with("instructions read") =>
            {
                Some(message.clone())
            }
            _ => None,
        })
        .unwrap();
    assert_eq!(
        named,
        "instructions read: ~/.claude/CLAUDE.md, CLAUDE.md, docs/style.md (imported by CLAUDE.md), docs/deep.md (imported by docs/style.md); \
         refused: @../escape.md (imported by CLAUDE.md) was not read: imports are read inside the workspace only"
    );
    assert!(events.iter().any(|e| matches!(e, EventBody::Error(ErrorEvent { message, .. })
        if message.contains("@../escape.md (imported by CLAUDE.md) was not read: imports are read inside the workspace only"))));
}

/// Where the model works below the root (`instructions_below`), the
/// AGENTS.md and CLAUDE.md of each folder down to it are read after the
/// root's, and a nested CLAUDE.md's imports are relative to its folder.
#[test]
fn the_instructions_of_each_folder_down_to_where_the_model_works_are_read() {
    let f = Fixture::new();
    f.write("CLAUDE.md", "ROOT RULE\n");
    f.write("api/AGENTS.md", "API RULE\n");
    f.write("api/v2/CLAUDE.md", "V2 RULE, see @notes.md\n");
    f.write("api/v2/notes.md", "V2 NOTES\n");
    f.write("web/AGENTS.md", "WEB RULE\n");
    let mut below = settings();
    below.instructions_below = "api/v2".into();
    let w = world_in(f, vec![text("done")], below);
    let id = w.open("s");
    w.manager.send(&id, "hi").unwrap();
    w.manager.wait_idle(&id).unwrap();
    let system = &w.replay.requests()[0].system;
    let at = |rule: &str| {
        system
            .find(rule)
            .unwrap_or_else(|| panic!("{rule}: {system}"))
    };
    assert!(at("ROOT RULE") < at("API RULE") && at("API RULE") < at("V2 RULE"));
    assert!(system.contains("V2 NOTES"), "{system}");
    assert!(
        system.contains("api/v2/CLAUDE.md (it applies to api/v2/ and below)"),
        "{system}"
    );
    assert!(
        !system.contains("WEB RULE"),
        "a folder off the way is not read: {system}"
    );
}

/// The first call that reaches a folder below the root brings the
/// instructions of each folder down to it, beside its result (once), and a
/// later turn's rebuilt conversation holds them in the same place.
#[test]
fn a_call_into_a_subfolder_brings_its_instructions_beside_its_result_once() {
    let f = Fixture::new();
    f.write("CLAUDE.md", "ROOT RULE\n");
    f.write("api/AGENTS.md", "API RULE\n");
    f.write("api/v2/x.txt", "x\n");
    let w = world_in(
        f,
        vec![
            calls(&[("read_file", json!({"path": "api/v2/x.txt"}))]),
            calls(&[("list_dir", json!({"path": "api"}))]),
            text("done"),
            text("again"),
        ],
        settings(),
    );
    let id = w.open("s");
    w.manager.send(&id, "look").unwrap();
    w.manager.wait_idle(&id).unwrap();
    let requests = w.replay.requests();
    assert!(
        !requests[0].system.contains("API RULE"),
        "{}",
        requests[0].system
    );
    let results = |request: &wicket_chat::Request| -> Vec<String> {
        request
            .messages
            .iter()
            .filter_map(|message| match message {
                Message::ToolResult { content, .. } => Some(content.clone()),
                _ => None,
            })
            .collect()
    };
    let second = results(&requests[1]);
    assert!(
        second[0].contains("api/AGENTS.md (it applies to api/ and below):\n\nAPI RULE"),
        "{second:?}"
    );
    let third = results(&requests[2]);
    assert!(!third[1].contains("API RULE"), "once: {third:?}");
    let events = w.events(&id);
    assert!(events.iter().any(
        |e| matches!(e, EventBody::Notice(NoticeEvent { message, .. })
        if message == "instructions read: api/AGENTS.md")
    ));
    w.manager.send(&id, "more").unwrap();
    w.manager.wait_idle(&id).unwrap();
    let rebuilt = results(&w.replay.requests()[3]);
    assert!(
        rebuilt[0].contains("API RULE"),
        "the log holds it: {rebuilt:?}"
    );
}
