//! Turns and the session manager against an in-process chat client that
//! replays scripted replies and records every request: the loop, the core
//! tools, Stop hooks, queueing and blocking, cancel, and resume.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wicket_chat::{ChatClient, ChatError, ChatErrorKind, ChatFuture, Message, Reply, Request};
use wicket_chat::{StreamEvent, ToolCallRequest, Usage};
use wicket_core::config::StopHook;
use wicket_core::manager::{Manager, ManagerError, Open, Sent, TurnSetup};
use wicket_core::session;
use wicket_core::turn::Settings;
use wicket_protocol::{Answer, EventBody};

/// Replies in order; records each request's messages.
#[derive(Default)]
struct Replay {
    replies: Mutex<VecDeque<Reply>>,
    requests: Mutex<Vec<Vec<Message>>>,
}

struct Client(Arc<Replay>);

impl ChatClient for Client {
    fn model(&self) -> &str {
        "test:replay"
    }

    fn complete<'a>(
        &'a self,
        req: &'a Request,
        _on_event: &'a mut (dyn FnMut(StreamEvent) + Send),
    ) -> ChatFuture<'a> {
        self.0.requests.lock().unwrap().push(req.messages.clone());
        let next = self.0.replies.lock().unwrap().pop_front();
        Box::pin(async move {
            next.ok_or(ChatError::new(
                ChatErrorKind::Script,
                "the test's replies ran out",
            ))
        })
    }
}

fn text(text: &str) -> Reply {
    Reply {
        text: text.into(),
        tool_calls: Vec::new(),
        usage: Usage {
            input_tokens: 10,
            output_tokens: 5,
        },
        stop_reason: None,
        attempts: 1,
    }
}

fn calls(calls: &[(&str, Value)]) -> Reply {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    Reply {
        tool_calls: calls
            .iter()
            .map(|(name, args)| ToolCallRequest {
                id: format!(
                    "tc{}",
                    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                ),
                name: name.to_string(),
                arguments: args.to_string(),
            })
            .collect(),
        ..text("")
    }
}

fn settings() -> Settings {
    Settings {
        step_limit: 20,
        max_stop_blocks: 3,
        stop_hooks: Vec::new(),
        max_tokens: 1000,
        skills: Vec::new(),
    }
}

struct World {
    _dir: tempfile::TempDir,
    home: std::path::PathBuf,
    ws: std::path::PathBuf,
    replay: Arc<Replay>,
    manager: Arc<Manager>,
    _runtime: tokio::runtime::Runtime,
}

fn world(replies: Vec<Reply>, settings: Settings) -> World {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let (home, ws) = (root.join("home"), root.join("ws"));
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("a.txt"), "one\ntwo\n").unwrap();
    let replay = Arc::new(Replay::default());
    replay.replies.lock().unwrap().extend(replies);
    let shared = replay.clone();
    let setup: TurnSetup = Arc::new(move |_, _| {
        Ok((
            Box::new(Client(shared.clone())) as Box<dyn ChatClient>,
            settings.clone(),
        ))
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let manager = Arc::new(Manager::new(&home, runtime.handle().clone(), setup));
    World {
        _dir: dir,
        home,
        ws,
        replay,
        manager,
        _runtime: runtime,
    }
}

impl World {
    fn open(&self, id: &str) -> String {
        self.manager.open(Some(id), &self.ws, None).unwrap()
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
    fn wait_open(&self, id: &str) -> Open {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(open) = self.manager.open_item(id).unwrap() {
                return open;
            }
            assert!(Instant::now() < deadline, "nothing opened");
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    fn answer_next(&self, id: &str, answer: Answer) -> wicket_protocol::Card {
        match self.wait_open(id) {
            Open::Card(card) => {
                self.manager.answer(id, &card.id, answer).unwrap();
                card
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
    assert_eq!(card.diff.as_deref().map(|d| d.contains("+2")), Some(true));
    let card = w.answer_next(&id, Answer::AllowOnce);
    assert_eq!(
        card.argv,
        Some(vec!["cat".to_string(), "a.txt".to_string()])
    );
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
            "result"
        ]
    );
    let EventBody::Result { text, usage } = w.events(&id).pop().unwrap() else {
        panic!()
    };
    assert_eq!(text, "changed two to 2");
    assert_eq!((usage.input_tokens, usage.output_tokens), (40, 20));
    // The model saw each result: the last request has the run's stdout.
    let requests = w.replay.requests.lock().unwrap();
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
    let requests = w.replay.requests.lock().unwrap();
    let Some(Message::ToolResult {
        content, is_error, ..
    }) = requests[1].last()
    else {
        panic!()
    };
    assert!(*is_error && content.contains("denied"), "{content}");
    assert!(
        matches!(w.events(&id).last(), Some(EventBody::Result { text, .. }) if text == "I could not write b.txt.")
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
        matches!(&refused, ManagerError::Blocked(message) if message.contains(&qid)),
        "{refused}"
    );
    assert_eq!(refused.kind(), "blocked");
    w.manager.reply(&id, &qid, "a.txt").unwrap();
    w.manager.wait_idle(&id).unwrap();
    let requests = w.replay.requests.lock().unwrap();
    assert!(
        matches!(requests[1].last(), Some(Message::ToolResult { content, .. }) if content.contains("a.txt"))
    );
    assert!(
        w.events(&id)
            .iter()
            .any(|e| matches!(e, EventBody::Reply { reply, .. } if reply == "a.txt"))
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
        matches!(&refused, ManagerError::Blocked(m) if m.contains(&card.id)),
        "{refused}"
    );
    // Session two is not blocked by one's card: it runs to its end meanwhile.
    assert_eq!(w.manager.send(&two, "hello").unwrap(), Sent::Started);
    w.manager.wait_idle(&two).unwrap();
    assert!(
        matches!(w.events(&two).last(), Some(EventBody::Result { text, .. }) if text == "other session done")
    );
    w.manager.answer(&one, &card.id, Answer::AllowOnce).unwrap();
    w.manager.wait_idle(&one).unwrap();
    assert!(
        matches!(w.events(&one).last(), Some(EventBody::Result { text, .. }) if text == "first done")
    );
}

#[test]
fn a_message_during_a_running_turn_is_queued_and_runs_after() {
    let w = world(
        vec![
            calls(&[("run", json!({"argv": ["true"]}))]),
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
    let mut events = w.manager.subscribe(&id).unwrap();
    w.manager.answer(&id, &card.id, Answer::AllowOnce).unwrap();
    // Wait until the answer is logged, so the card is closed but the turn still runs.
    loop {
        let event = events.blocking_recv().unwrap();
        if matches!(event.body, EventBody::Answer { .. }) {
            break;
        }
    }
    let sent = w.manager.send(&id, "second");
    assert_eq!(sent, Ok(Sent::Queued));
    w.manager.wait_idle(&id).unwrap();
    let bodies = w.events(&id);
    let order: Vec<String> = bodies
        .iter()
        .filter_map(|e| match e {
            EventBody::UserMessage { text } => Some(format!("user {text}")),
            EventBody::Queued { text } => Some(format!("queued {text}")),
            EventBody::Result { text, .. } => Some(format!("result {text}")),
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
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("release")).unwrap();
    std::fs::write(
        dir.path().join("release/SKILL.md"),
        "---\nname: release\ndescription: Cut a release\n---\nTag it.\n",
    )
    .unwrap();
    s.skills = wicket_core::skills::discover(&[dir.path().to_path_buf()]);
    let w = world(
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
    let requests = w.replay.requests.lock().unwrap();
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
    StopHook {
        command: vec!["sh".into(), path.display().to_string()],
        timeout_s: Some(20),
    }
}

#[test]
fn a_stop_hook_that_blocks_once_sends_the_model_back_then_passes() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("blocked-once");
    let mut s = settings();
    // Blocks the first time (stderr to the model), passes the second; it
    // also checks the JSON it is given on stdin.
    s.stop_hooks = vec![hook_script(
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
    let requests = w.replay.requests.lock().unwrap();
    assert!(
        matches!(requests[1].last(), Some(Message::ToolResult { content, is_error: true, .. }) if content.contains("tests fail: fix test_x"))
    );
    let outcomes: Vec<String> = w
        .events(&id)
        .iter()
        .filter_map(|e| match e {
            EventBody::Hook { outcome, .. } => Some(format!("{outcome:?}")),
            EventBody::Result { text, .. } => Some(text.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(outcomes, ["Block", "Pass", "second try"]);
}

#[test]
fn three_blocks_in_a_row_end_the_turn_and_a_failing_hook_counts_as_one() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = settings();
    s.stop_hooks = vec![hook_script(dir.path(), "echo 'not yet' >&2\nexit 2")];
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
    assert_eq!(w.replay.requests.lock().unwrap().len(), 3);
    let events = w.events(&id);
    assert!(
        matches!(events.last(), Some(EventBody::Error { ends_turn: true, message }) if message.contains("3 times"))
    );
    assert!(!events.iter().any(|e| matches!(e, EventBody::Result { .. })));

    // A hook that exits 1 fails closed: an error event, and no result.
    let dir = tempfile::tempdir().unwrap();
    let mut s = settings();
    s.max_stop_blocks = 1;
    s.stop_hooks = vec![hook_script(dir.path(), "exit 1")];
    let w = world(vec![calls(&[("finish", json!({"result": "x"}))])], s);
    let id = w.open("s");
    w.manager.send(&id, "work").unwrap();
    w.manager.wait_idle(&id).unwrap();
    let events = w.events(&id);
    assert!(events.iter().any(|e| matches!(e, EventBody::Error { ends_turn: false, message } if message.contains("counts as a block"))));
    assert!(!events.iter().any(|e| matches!(e, EventBody::Result { .. })));
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
    assert_eq!(w.replay.requests.lock().unwrap().len(), 3);
    assert!(
        matches!(w.events(&id).last(), Some(EventBody::Error { ends_turn: true, message }) if message.contains("step limit of 3"))
    );
}

#[test]
fn cancel_stops_a_command_that_ignores_sigterm_and_the_session_resumes() {
    let w = world(
        vec![
            calls(&[
                (
                    "run",
                    json!({"argv": ["sh", "-c", "trap '' TERM; echo started; sleep 30"]}),
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
    // Let the command start, then cancel.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !w.types(&id).contains(&"answer".to_string()) {
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(200));
    let started = Instant::now();
    assert!(w.manager.cancel(&id).unwrap());
    w.manager.wait_idle(&id).unwrap();
    let took = started.elapsed();
    eprintln!("cancel took {took:?} (SIGTERM ignored, SIGKILL after the 2 s grace)");
    let events = w.events(&id);
    assert!(matches!(events.last(), Some(EventBody::Cancelled {})));
    // Every call of the reply has a result: the run's, and a synthetic one.
    let results: Vec<(String, bool)> = events
        .iter()
        .filter_map(|e| match e {
            EventBody::ToolResult { call_id, ok, .. } => Some((call_id.clone(), *ok)),
            _ => None,
        })
        .collect();
    assert_eq!(results.len(), 2, "{results:?}");
    // Resuming: the next turn's conversation is valid — each call answered.
    w.manager.send(&id, "go on").unwrap();
    w.manager.wait_idle(&id).unwrap();
    let requests = w.replay.requests.lock().unwrap();
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
        matches!(w.events(&id).last(), Some(EventBody::Result { text, .. }) if text == "resumed fine")
    );
}
