//! The gate against real sessions on disk: every row of the gate table, each
//! answer, allow_session exactness, isolation, the digest race, diff edges.
#![allow(
    // Tests start the binary, git and mkfifo from the outside.
    clippy::disallowed_methods,
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::new_without_default
)]

use std::path::Path;
use wicket_protocol::event::{AnswerEvent, CardEvent};

mod turn;

use serde_json::json;
use wicket_gate::sandbox::SandboxSettings;
use wicket_gate::{Answerer, Confinement, Gate};
use wicket_protocol::{
    Answer, Card, CardKind, ErrorKind, EventBody, OutsideReadCard, Reach, RunCard, ToolCall,
    ToolOutput, WireError, WriteCard,
};
use wicket_session::{self as session, Session};
use wicket_test_support::Fixture;
use wicket_tools::{Cancel, Tools};

fn fixture() -> Fixture {
    let f = Fixture::new();
    f.write("a.txt", "one\ntwo\n");
    std::fs::write(f.outside.join("notes"), "outside notes\n").unwrap();
    f
}

fn open(f: &Fixture, id: &str) -> (Tools, Session) {
    let tools = Tools::open(&f.ws).unwrap();
    let (session, _) = Session::open_or_create(&f.home, id, &f.ws, None).unwrap();
    (tools, session)
}

fn write_of(card: &Card) -> &WriteCard {
    match &card.kind {
        CardKind::Write(write) => write,
        other => panic!("not a write card: {other:?}"),
    }
}

fn run_of(card: &Card) -> &RunCard {
    match &card.kind {
        CardKind::Run(run) => run,
        other => panic!("not a run card: {other:?}"),
    }
}

fn outside_of(card: &Card) -> &OutsideReadCard {
    match &card.kind {
        CardKind::OutsideRead(read) => read,
        other => panic!("not an outside-read card: {other:?}"),
    }
}

/// Answers from a list, recording each card; `before` runs before each answer.
struct Scripted<'a> {
    answers: Vec<Answer>,
    cards: Vec<Card>,
    before: Box<dyn FnMut(usize) + 'a>,
}

impl<'a> Scripted<'a> {
    fn new(answers: &[Answer]) -> Scripted<'a> {
        Scripted {
            answers: answers.to_vec(),
            cards: Vec::new(),
            before: Box::new(|_| {}),
        }
    }
}

impl Answerer for Scripted<'_> {
    fn answer(&mut self, card: &Card) -> Option<Answer> {
        (self.before)(self.cards.len());
        self.cards.push(card.clone());
        if self.answers.is_empty() {
            None
        } else {
            Some(self.answers.remove(0))
        }
    }
}

fn call(
    tools: &Tools,
    session: &Session,
    name: &str,
    args: serde_json::Value,
    answerer: &mut dyn Answerer,
) -> Result<ToolOutput, WireError> {
    let call = ToolCall::parse(name, args).unwrap();
    let home = session
        .dir()
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .to_path_buf();
    let confinement = Confinement {
        sandbox: SandboxSettings {
            mode: wicket_gate::sandbox::SandboxMode::Off,
            ..SandboxSettings::default()
        },
        home: home.clone(),
    };
    let rules = wicket_gate::rules::Rules::new(Vec::new(), &home);
    Gate::new(tools, session, &confinement, &rules).call(
        &(*"call-1").into(),
        &call,
        answerer,
        &Cancel::default(),
    )
}

fn event_types(session: &Session) -> Vec<String> {
    session::load_log(session.log_path())
        .unwrap()
        .events
        .iter()
        .map(|e| {
            serde_json::to_value(e).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect()
}

#[test]
fn inside_reads_lists_and_greps_raise_no_card() {
    let f = fixture();
    let (tools, session) = open(&f, "s");
    let mut answers = Scripted::new(&[]);
    call(
        &tools,
        &session,
        "read_file",
        json!({"path": "a.txt"}),
        &mut answers,
    )
    .unwrap();
    call(&tools, &session, "list_dir", json!({}), &mut answers).unwrap();
    call(
        &tools,
        &session,
        "grep",
        json!({"pattern": "two"}),
        &mut answers,
    )
    .unwrap();
    assert!(answers.cards.is_empty());
    assert_eq!(
        event_types(&session)[1..],
        ["tool_call", "tool_result"].repeat(3)
    );
}

#[test]
fn a_write_card_carries_the_diff_and_deny_changes_nothing() {
    let f = fixture();
    let (tools, session) = open(&f, "s");
    let mut answers = Scripted::new(&[Answer::Deny]);
    let error = call(
        &tools,
        &session,
        "search_replace",
        json!({"path": "a.txt", "old": "two", "new": "2"}),
        &mut answers,
    )
    .unwrap_err();
    assert_eq!(error.kind, ErrorKind::Denied);
    let card = write_of(&answers.cards[0]);
    assert_eq!(card.path, f.ws.join("a.txt").to_str().unwrap());
    assert_eq!(
        card.diff,
        "--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+2\n"
    );
    assert_eq!(card.digest.len(), 64);
    assert_eq!(
        std::fs::read_to_string(f.ws.join("a.txt")).unwrap(),
        "one\ntwo\n"
    );
    assert_eq!(
        event_types(&session),
        [
            "session_started",
            "tool_call",
            "card",
            "answer",
            "tool_result"
        ]
    );
}

#[test]
fn allow_once_writes_and_asks_again_next_time() {
    let f = fixture();
    let (tools, session) = open(&f, "s");
    let mut answers = Scripted::new(&[Answer::AllowOnce, Answer::AllowOnce]);
    call(
        &tools,
        &session,
        "write_file",
        json!({"path": "new/b.txt", "content": "b\n"}),
        &mut answers,
    )
    .unwrap();
    call(
        &tools,
        &session,
        "write_file",
        json!({"path": "new/b.txt", "content": "bb\n"}),
        &mut answers,
    )
    .unwrap();
    assert_eq!(answers.cards.len(), 2);
    assert_eq!(write_of(&answers.cards[0]).digest, "absent");
    assert_eq!(
        std::fs::read_to_string(f.ws.join("new/b.txt")).unwrap(),
        "bb\n"
    );
    assert!(session.meta().allowed.write.is_empty());
}

#[test]
fn allow_session_is_one_exact_write_path() {
    let f = fixture();
    let (tools, session) = open(&f, "s");
    let mut answers = Scripted::new(&[Answer::AllowSession, Answer::Deny, Answer::Deny]);
    call(
        &tools,
        &session,
        "write_file",
        json!({"path": "a.txt", "content": "x\n"}),
        &mut answers,
    )
    .unwrap();
    // The same path, even spelled differently, passes without a card.
    call(
        &tools,
        &session,
        "write_file",
        json!({"path": "./a.txt", "content": "y\n"}),
        &mut answers,
    )
    .unwrap();
    call(
        &tools,
        &session,
        "search_replace",
        json!({"path": f.ws.join("a.txt"), "old": "y", "new": "z"}),
        &mut answers,
    )
    .unwrap();
    assert_eq!(answers.cards.len(), 1);
    // Another path still asks.
    assert!(
        call(
            &tools,
            &session,
            "write_file",
            json!({"path": "a.txt2", "content": "x"}),
            &mut answers
        )
        .is_err()
    );
    assert_eq!(answers.cards.len(), 2);
    let meta: serde_json::Value =
        serde_json::from_slice(&std::fs::read(session.dir().join("meta.json")).unwrap()).unwrap();
    assert_eq!(meta["allowed"]["write"], json!([f.ws.join("a.txt")]));
    assert_eq!(meta["id"], "s");
    assert_eq!(meta["workspace"], json!(f.ws));
    assert_eq!(meta["status"], "idle");
    assert_eq!(std::fs::read_to_string(f.ws.join("a.txt")).unwrap(), "z\n");
}

#[test]
fn outside_reads_and_lists_card_the_absolute_path() {
    let f = fixture();
    let (tools, session) = open(&f, "s");
    let notes = f.outside.join("notes");
    let mut answers = Scripted::new(&[Answer::Deny, Answer::AllowSession, Answer::AllowOnce]);
    let denied = call(
        &tools,
        &session,
        "read_file",
        json!({"path": notes}),
        &mut answers,
    )
    .unwrap_err();
    assert_eq!(denied.kind, ErrorKind::Denied);
    assert_eq!(outside_of(&answers.cards[0]).path, notes.to_str().unwrap());
    assert_eq!(outside_of(&answers.cards[0]).reach, Reach::Read);
    let ToolOutput::ReadFile(out) = call(
        &tools,
        &session,
        "read_file",
        json!({"path": notes}),
        &mut answers,
    )
    .unwrap() else {
        panic!()
    };
    assert_eq!(out.content, "outside notes\n");
    call(
        &tools,
        &session,
        "read_file",
        json!({"path": notes}),
        &mut answers,
    )
    .unwrap();
    assert_eq!(
        answers.cards.len(),
        2,
        "the allowed path passes without a card"
    );
    // The folder is another path: it asks.
    call(
        &tools,
        &session,
        "list_dir",
        json!({"path": f.outside}),
        &mut answers,
    )
    .unwrap();
    assert_eq!(answers.cards.len(), 3);
    assert_eq!(
        outside_of(&answers.cards[2]).path,
        f.outside.to_str().unwrap()
    );
    assert_eq!(outside_of(&answers.cards[2]).reach, Reach::List);
    assert_eq!(
        session
            .meta()
            .allowed
            .outside
            .into_iter()
            .collect::<Vec<_>>(),
        vec![session::OutsideKey {
            path: notes.display().to_string(),
            reach: Reach::Read
        }]
    );
}

#[test]
fn every_command_raises_a_run_card_and_deny_never_starts_it() {
    let f = fixture();
    let (tools, session) = open(&f, "s");
    let mut answers = Scripted::new(&[Answer::Deny, Answer::AllowOnce]);
    let error = call(
        &tools,
        &session,
        "run",
        json!({"argv": ["touch", "made"]}),
        &mut answers,
    )
    .unwrap_err();
    assert_eq!(error.kind, ErrorKind::Denied);
    assert!(!f.ws.join("made").exists());
    assert_eq!(run_of(&answers.cards[0]).argv, ["touch", "made"]);
    assert_eq!(run_of(&answers.cards[0]).cwd, ".");
    assert_eq!(
        run_of(&answers.cards[0]).timeout_s,
        None,
        "the default timeout is not on the card"
    );
    call(
        &tools,
        &session,
        "run",
        json!({"argv": ["touch", "made"], "timeout_s": 30}),
        &mut answers,
    )
    .unwrap();
    assert_eq!(run_of(&answers.cards[1]).timeout_s, Some(30));
    assert!(f.ws.join("made").exists());
}

#[test]
fn allow_session_for_a_command_is_the_exact_argv() {
    let f = fixture();
    let (tools, session) = open(&f, "s");
    let mut answers = Scripted::new(&[
        Answer::AllowSession,
        Answer::Deny,
        Answer::Deny,
        Answer::Deny,
    ]);
    call(
        &tools,
        &session,
        "run",
        json!({"argv": ["echo", "hi"]}),
        &mut answers,
    )
    .unwrap();
    call(
        &tools,
        &session,
        "run",
        json!({"argv": ["echo", "hi"]}),
        &mut answers,
    )
    .unwrap();
    assert_eq!(answers.cards.len(), 1);
    for other in [
        json!(["echo", "hi "]),
        json!(["echo", "hi", "there"]),
        json!(["echo"]),
    ] {
        assert!(
            call(
                &tools,
                &session,
                "run",
                json!({"argv": other}),
                &mut answers
            )
            .is_err()
        );
    }
    assert_eq!(answers.cards.len(), 4);
    assert_eq!(
        session.meta().allowed.run.into_iter().collect::<Vec<_>>(),
        vec![session::RunKey {
            read: Default::default(),
            argv: vec!["echo".to_string(), "hi".to_string()],
            cwd: f.ws.display().to_string(),
            network: Default::default(),
            git: false,
        }]
    );
}

#[test]
fn allow_session_keys_a_commands_read_paths_apart() {
    let f = fixture();
    let (tools, session) = open(&f, "s");
    let mut answers = Scripted::new(&[Answer::AllowSession, Answer::Deny, Answer::Deny]);
    let outside = f.outside.display().to_string();
    let reading = json!({"argv": ["echo", "hi"], "read": [outside]});
    call(&tools, &session, "run", reading.clone(), &mut answers).unwrap();
    assert_eq!(run_of(&answers.cards[0]).read, vec![outside.clone()]);
    call(&tools, &session, "run", reading, &mut answers).unwrap();
    assert_eq!(answers.cards.len(), 1, "the same reads: the grant holds");
    // Fewer or other paths are another command.
    for other in [
        json!({"argv": ["echo", "hi"]}),
        json!({"argv": ["echo", "hi"], "read": [f.ws.join("a.txt").display().to_string()]}),
    ] {
        assert!(call(&tools, &session, "run", other, &mut answers).is_err());
    }
    assert_eq!(answers.cards.len(), 3);
}

#[test]
fn one_sessions_allows_are_its_own() {
    let f = fixture();
    let (tools, first) = open(&f, "first");
    let mut answers = Scripted::new(&[Answer::AllowSession, Answer::AllowSession]);
    call(
        &tools,
        &first,
        "run",
        json!({"argv": ["true"]}),
        &mut answers,
    )
    .unwrap();
    call(
        &tools,
        &first,
        "write_file",
        json!({"path": "a.txt", "content": "x"}),
        &mut answers,
    )
    .unwrap();
    let (tools, second) = open(&f, "second");
    let mut answers = Scripted::new(&[Answer::Deny, Answer::Deny]);
    assert!(
        call(
            &tools,
            &second,
            "run",
            json!({"argv": ["true"]}),
            &mut answers
        )
        .is_err()
    );
    assert!(
        call(
            &tools,
            &second,
            "write_file",
            json!({"path": "a.txt", "content": "y"}),
            &mut answers
        )
        .is_err()
    );
    assert_eq!(answers.cards.len(), 2);
    let log = std::fs::read_to_string(second.log_path()).unwrap();
    assert!(!log.contains("allow_session"));
}

#[test]
fn an_edit_between_card_and_answer_drops_the_answer_and_asks_again() {
    let f = fixture();
    let (tools, session) = open(&f, "s");
    let path = f.ws.join("a.txt");
    let edit_path = path.clone();
    let mut answers = Scripted::new(&[Answer::AllowSession, Answer::AllowOnce]);
    answers.before = Box::new(move |index| {
        if index == 0 {
            // A person (or another program) edits the file while the card is up.
            std::fs::write(&edit_path, "one\ntwo\nthree\n").unwrap();
        }
    });
    call(
        &tools,
        &session,
        "search_replace",
        json!({"path": "a.txt", "old": "one", "new": "1"}),
        &mut answers,
    )
    .unwrap();
    assert_eq!(answers.cards.len(), 2);
    assert_ne!(
        write_of(&answers.cards[0]).digest,
        write_of(&answers.cards[1]).digest
    );
    assert_eq!(
        write_of(&answers.cards[1]).diff,
        "--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n-one\n+1\n two\n three\n"
    );
    let ids = (answers.cards[0].id.clone(), answers.cards[1].id.clone());
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "1\ntwo\nthree\n");
    assert!(
        session.meta().allowed.write.is_empty(),
        "the spent allow_session is gone"
    );
    let logged: Vec<(wicket_protocol::CardId, Answer, bool)> =
        session::load_log(session.log_path())
            .unwrap()
            .events
            .into_iter()
            .filter_map(|e| match e.body {
                EventBody::Answer(AnswerEvent {
                    card,
                    answer,
                    stale,
                    ..
                }) => Some((card, answer, stale)),
                _ => None,
            })
            .collect();
    assert_eq!(
        logged,
        vec![
            (ids.0, Answer::AllowSession, true),
            (ids.1, Answer::AllowOnce, false),
        ],
        "the log says which answer was spent, by the ids the cards carried"
    );
}

#[test]
fn a_large_diff_is_cut_on_the_card_but_whole_in_the_log() {
    let f = fixture();
    let (tools, session) = open(&f, "s");
    let content: String = (0..12_000).map(|i| format!("line number {i}\n")).collect();
    let mut answers = Scripted::new(&[Answer::Deny]);
    let _ = call(
        &tools,
        &session,
        "write_file",
        json!({"path": "big.txt", "content": content}),
        &mut answers,
    );
    let card = write_of(&answers.cards[0]);
    assert!(card.diff_truncated);
    assert_eq!(
        card.diff.lines().count(),
        wicket_gate::diff::CARD_DIFF_MAX_LINES
    );
    assert!(card.diff_bytes > wicket_gate::diff::CARD_DIFF_MAX_BYTES as u64);
    let loaded = session::load_log(session.log_path()).unwrap();
    let proposed = loaded.events.iter().find_map(|e| match &e.body {
        EventBody::Card(CardEvent { proposed, .. }) => proposed.clone(),
        _ => None,
    });
    assert_eq!(proposed.as_deref(), Some(content.as_str()));
}

#[test]
fn the_session_reads_waiting_while_a_card_is_open() {
    let f = fixture();
    let (tools, session) = open(&f, "s");
    let meta_path = f.home.join("sessions/s/meta.json");
    let seen = std::cell::RefCell::new(Vec::new());
    let mut answers = Scripted::new(&[Answer::AllowOnce]);
    answers.before = Box::new(|_| {
        let meta: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&meta_path).unwrap()).unwrap();
        seen.borrow_mut()
            .push(meta["status"].as_str().unwrap().to_string());
    });
    call(
        &tools,
        &session,
        "run",
        json!({"argv": ["true"]}),
        &mut answers,
    )
    .unwrap();
    drop(answers);
    assert_eq!(seen.into_inner(), vec!["waiting"]);
    assert_eq!(session.meta().status, session::Status::Idle);
}

#[test]
fn a_withdrawn_card_is_a_denial() {
    let f = fixture();
    let (tools, session) = open(&f, "s");
    let mut answers = Scripted::new(&[]);
    let error = call(
        &tools,
        &session,
        "write_file",
        json!({"path": "a.txt", "content": "x"}),
        &mut answers,
    )
    .unwrap_err();
    assert_eq!(error.kind, ErrorKind::Denied);
    assert_eq!(
        std::fs::read_to_string(f.ws.join("a.txt")).unwrap(),
        "one\ntwo\n"
    );
}

#[test]
fn a_session_continues_from_its_log() {
    let f = fixture();
    {
        let (tools, session) = open(&f, "s");
        call(
            &tools,
            &session,
            "read_file",
            json!({"path": "a.txt"}),
            &mut Scripted::new(&[]),
        )
        .unwrap();
    }
    let (tools, session) = open(&f, "s");
    call(
        &tools,
        &session,
        "read_file",
        json!({"path": "a.txt"}),
        &mut Scripted::new(&[]),
    )
    .unwrap();
    let seqs: Vec<u64> = session::load_log(session.log_path())
        .unwrap()
        .events
        .iter()
        .map(|e| e.seq)
        .collect();
    assert_eq!(seqs, vec![1, 2, 3, 4, 5]);
    drop(session);
    let other = Path::new("/");
    assert!(
        matches!(
            Session::open_or_create(&f.home, "s", other, None),
            Err(wicket_session::Error::WorkspaceMismatch { .. })
        ),
        "a session keeps its workspace"
    );
}

/// An outside grant names its reach: allowing a listing of a folder does not
/// let a grep read the files below it, nor a read of one of them.
#[test]
fn an_outside_grant_is_no_wider_than_its_card() {
    let f = fixture();
    let (tools, session) = open(&f, "s");
    let mut answers = Scripted::new(&[Answer::AllowSession, Answer::Deny, Answer::Deny]);
    call(
        &tools,
        &session,
        "list_dir",
        json!({"path": f.outside}),
        &mut answers,
    )
    .unwrap();
    let grep = call(
        &tools,
        &session,
        "grep",
        json!({"pattern": "SECRET", "path": f.outside}),
        &mut answers,
    );
    assert_eq!(grep.unwrap_err().kind, ErrorKind::Denied);
    assert_eq!(outside_of(&answers.cards[1]).reach, Reach::Grep);
    let read = call(
        &tools,
        &session,
        "read_file",
        json!({"path": f.outside.join("secret")}),
        &mut answers,
    );
    assert_eq!(read.unwrap_err().kind, ErrorKind::Denied);
    assert_eq!(answers.cards.len(), 3, "each reach asked");
    // The listing itself is still allowed without a card.
    call(
        &tools,
        &session,
        "list_dir",
        json!({"path": f.outside}),
        &mut answers,
    )
    .unwrap();
    assert_eq!(answers.cards.len(), 3);
}

/// A run's allow_session is the argv and the resolved folder together, and
/// a cwd that cannot work is refused before any card.
#[test]
fn a_run_grant_keys_the_folder_too_and_a_bad_cwd_raises_no_card() {
    let f = fixture();
    std::fs::create_dir_all(f.ws.join("evil")).unwrap();
    std::fs::write(f.ws.join("x.sh"), "true").unwrap();
    let (tools, session) = open(&f, "s");
    let mut answers = Scripted::new(&[Answer::AllowSession, Answer::Deny]);
    call(
        &tools,
        &session,
        "run",
        json!({"argv": ["sh", "x.sh"]}),
        &mut answers,
    )
    .unwrap();
    call(
        &tools,
        &session,
        "run",
        json!({"argv": ["sh", "x.sh"], "cwd": "."}),
        &mut answers,
    )
    .unwrap();
    assert_eq!(
        answers.cards.len(),
        1,
        "the same folder spelled another way"
    );
    let elsewhere = call(
        &tools,
        &session,
        "run",
        json!({"argv": ["sh", "x.sh"], "cwd": "evil"}),
        &mut answers,
    );
    assert_eq!(elsewhere.unwrap_err().kind, ErrorKind::Denied);
    assert_eq!(answers.cards.len(), 2);
    assert_eq!(run_of(&answers.cards[1]).cwd, "evil");
    for (cwd, kind) in [
        ("missing", ErrorKind::NotFound),
        ("a.txt", ErrorKind::InvalidArgs),
        ("..", ErrorKind::OutsideWorkspace),
    ] {
        let refused = call(
            &tools,
            &session,
            "run",
            json!({"argv": ["true"], "cwd": cwd}),
            &mut answers,
        );
        assert_eq!(refused.unwrap_err().kind, kind, "{cwd}");
    }
    assert_eq!(answers.cards.len(), 2, "no card for a call that would fail");
}

/// Card ids never repeat within a session.
#[test]
fn card_ids_are_unique_within_a_session() {
    let f = fixture();
    let (tools, session) = open(&f, "s");
    let mut answers = Scripted::new(&[Answer::Deny; 300]);
    for _ in 0..300 {
        let _ = call(
            &tools,
            &session,
            "run",
            json!({"argv": ["true"]}),
            &mut answers,
        );
    }
    let ids: std::collections::HashSet<&str> =
        answers.cards.iter().map(|card| card.id.as_str()).collect();
    assert_eq!(ids.len(), 300);
}

/// A checkpoint that takes longer than a second lets the card go up first,
/// says so on it, and is done before anything is written: here the store
/// is held by someone else until the card is answered.
#[test]
fn a_slow_checkpoint_is_taken_while_the_card_is_read_and_before_the_write() {
    let f = fixture();
    let (tools, session) = open(&f, "slow");
    let shared = f.home.join("checkpoints");
    let store = wicket_checkpoints::Store::new(session.dir(), &shared);
    let settings = wicket_checkpoints::Settings::default();
    // The first checkpoint makes the workspace's store and its lock.
    store.take(tools.workspace(), &settings, 0, "test").unwrap();
    let lock_path = std::fs::read_dir(&shared)
        .unwrap()
        .map(|entry| entry.unwrap().path().join("lock"))
        .find(|path| path.exists())
        .unwrap();
    let lock = std::fs::File::open(&lock_path).unwrap();
    lock.lock().unwrap();
    let held = std::cell::RefCell::new(Some(lock));
    let mut answers = Scripted::new(&[Answer::AllowOnce]);
    // The card is up while the checkpoint waits on the store. Answered at
    // once, the store let go a moment later: a write that did not wait
    // for the checkpoint would be in it.
    answers.before = Box::new(|_| {
        let lock = held.borrow_mut().take();
        std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(300));
            drop(lock);
        });
    });
    let home = f.home.clone();
    let confinement = Confinement {
        sandbox: SandboxSettings::default(),
        home: home.clone(),
    };
    let rules = wicket_gate::rules::Rules::new(Vec::new(), &home);
    let call = ToolCall::parse("write_file", json!({"path": "a.txt", "content": "new\n"})).unwrap();
    let written = Gate::new(&tools, &session, &confinement, &rules)
        .checkpointed(Some(wicket_gate::Checkpointing {
            store: &store,
            settings: &settings,
        }))
        .call(
            &(*"call-slow").into(),
            &call,
            &mut answers,
            &Cancel::default(),
        );
    assert!(written.is_ok(), "{written:?}");
    let walking = answers.cards[0]
        .checkpointing
        .as_deref()
        .unwrap_or_default();
    assert!(
        walking.contains("still being taken") && walking.contains("waits for it after your answer"),
        "{:?}",
        answers.cards[0]
    );
    assert_eq!(f.read("a.txt"), "new\n");
    // The checkpoint before the write holds the file as it was.
    let before = store.list().unwrap().pop().unwrap();
    let plan = store.plan(tools.workspace(), &settings, &before).unwrap();
    assert_eq!(plan.restore, vec!["a.txt".to_string()], "{plan:?}");
    store
        .rewind(tools.workspace(), &settings, &before, 99)
        .unwrap();
    assert_eq!(f.read("a.txt"), "one\ntwo\n");
}
