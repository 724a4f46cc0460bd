use super::*;
use crate::log::read_log;
use wicket_protocol::event::{
    AssistantMessageEvent, CancelledEvent, CardEvent, UnreadableEvent, UserMessageEvent,
};

#[test]
fn canonical_json_sorts_keys_at_every_level() {
    let a: serde_json::Value =
        serde_json::from_str(r#"{"b":1,"a":{"d":[{"y":1,"x":2}],"c":0}}"#).unwrap();
    assert_eq!(canonical(&a), r#"{"a":{"c":0,"d":[{"x":2,"y":1}]},"b":1}"#);
}
use std::fs::OpenOptions;

use proptest::strategy::Strategy as _;

#[test]
fn ids_must_be_safe_names() {
    for bad in ["", "../x", "a/b", ".hidden", "a b", &"x".repeat(65)] {
        assert!(validate_id(bad).is_err(), "{bad:?}");
    }
    for good in ["abc", "2026-12-02_x.1", &new_id()] {
        assert!(validate_id(good).is_ok(), "{good:?}");
    }
}

#[test]
fn a_torn_last_line_is_skipped_and_cut_off() {
    let home = tempfile::tempdir().unwrap();
    let workspace = home.path();
    {
        let (session, _) = Session::open_or_create(home.path(), "s1", workspace, None).unwrap();
        session.append(EventBody::error("one")).unwrap();
        session.append(EventBody::error("two")).unwrap();
    }
    let log = Session::dir_of(home.path(), "s1").join("log.jsonl");
    let mut file = OpenOptions::new().append(true).open(&log).unwrap();
    file.write_all(br#"{"seq":4,"ts":"x","type":"err"#).unwrap();
    drop(file);
    let (session, loaded) = Session::open_or_create(home.path(), "s1", workspace, None).unwrap();
    assert_eq!(loaded.events.len(), 3, "session_started, one, two");
    assert!(loaded.torn_tail.is_some());
    let event = session.append(EventBody::error("three")).unwrap();
    assert_eq!(event.seq, 4);
    let again = load_log(&log).unwrap();
    assert_eq!(again.events.len(), 4);
    assert!(again.torn_tail.is_none());
}

#[test]
fn a_sparse_tail_is_not_read_and_a_session_opened_to_append_cuts_it_off() {
    let home = tempfile::tempdir().unwrap();
    let workspace = home.path();
    {
        let (session, _) = Session::open_or_create(home.path(), "s1", workspace, None).unwrap();
        session.append(EventBody::error("one")).unwrap();
    }
    let log = Session::dir_of(home.path(), "s1").join("log.jsonl");
    let written = std::fs::metadata(&log).unwrap().len();
    // 64 GiB never written: read through, it took minutes.
    OpenOptions::new()
        .write(true)
        .open(&log)
        .unwrap()
        .set_len(64 << 30)
        .unwrap();
    let loaded = load_log(&log).unwrap();
    assert_eq!(loaded.events.len(), 2, "session_started, one");
    let hole = loaded.hole.expect("the hole is found");
    assert!(hole >= written && hole < 64 << 30, "{hole}");
    let (session, loaded) = Session::open_or_create(home.path(), "s1", workspace, None).unwrap();
    assert_eq!(loaded.events.len(), 2);
    assert_eq!(
        std::fs::metadata(&log).unwrap().len(),
        written,
        "the tail is cut off"
    );
    assert_eq!(session.append(EventBody::error("two")).unwrap().seq, 3);
    let again = load_log(&log).unwrap();
    assert_eq!((again.events.len(), again.hole), (3, None));
}

#[test]
fn a_log_with_data_past_a_hole_skips_the_hole_and_reads_on() {
    let home = tempfile::tempdir().unwrap();
    let log = home.path().join("log.jsonl");
    let mut file = OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .open(&log)
        .unwrap();
    file.write_all(b"{\"seq\":1,\"ts\":\"x\",\"type\":\"error\",\"message\":\"a\"}\n")
        .unwrap();
    file.seek(SeekFrom::Start(8 << 30)).unwrap();
    file.write_all(b"{\"seq\":2,\"ts\":\"x\",\"type\":\"error\",\"message\":\"b\"}\n")
        .unwrap();
    drop(file);
    let loaded = load_log(&log).unwrap();
    assert_eq!(loaded.events.len(), 3, "{:?}", loaded.events);
    assert_eq!(loaded.events[0].seq, 1);
    assert!(
        matches!(&loaded.events[1].body, EventBody::Unreadable(unreadable) if unreadable.error.contains("never written")),
        "{:?}",
        loaded.events[1]
    );
    assert_eq!(loaded.events[2].seq, 2);
    assert_eq!((loaded.hole, loaded.torn_tail), (None, None));
}

#[test]
fn a_complete_last_line_that_does_not_parse_is_kept_and_appended_after() {
    let deep = format!(
        "{{\"seq\":4,\"ts\":\"x\",\"type\":\"error\",\"message\":{}1{}}}\n",
        "[".repeat(200),
        "]".repeat(200)
    );
    for line in [
        "{\"seq\":4,\"ts\":\"x\",\"type\":\"from_a_newer_wicket\",\"what\":1}\n".to_string(),
        "{\"seq\":4,\"ts\":\"x\",\"type\":\"error\"}\n".to_string(),
        deep,
    ] {
        let home = tempfile::tempdir().unwrap();
        let workspace = home.path();
        drop(Session::open_or_create(home.path(), "s1", workspace, None).unwrap());
        let log = Session::dir_of(home.path(), "s1").join("log.jsonl");
        {
            let (session, _) = Session::open_or_create(home.path(), "s1", workspace, None).unwrap();
            session.append(EventBody::error("two")).unwrap();
            session.append(EventBody::error("three")).unwrap();
        }
        OpenOptions::new()
            .append(true)
            .open(&log)
            .unwrap()
            .write_all(line.as_bytes())
            .unwrap();
        let (session, loaded) =
            Session::open_or_create(home.path(), "s1", workspace, None).unwrap();
        assert!(loaded.torn_tail.is_none(), "{line}");
        let last = loaded.events.last().unwrap();
        assert!(
            matches!(
                last.body,
                EventBody::Unreadable(UnreadableEvent { line: 4, .. })
            ),
            "{last:?}"
        );
        assert_eq!(last.seq, 4);
        let event = session.append(EventBody::error("five")).unwrap();
        assert_eq!(event.seq, 5);
        let text = std::fs::read_to_string(&log).unwrap();
        assert!(text.contains(line.as_str()), "the line is still there");
        assert!(text.ends_with("\"message\":\"five\"}\n"), "{text}");
    }
}

#[test]
fn a_seq_that_cannot_grow_is_an_error_naming_the_session_never_a_wrap() {
    for seq in [u64::MAX, LOG_SEQ_MAX] {
        let home = tempfile::tempdir().unwrap();
        let workspace = home.path();
        drop(Session::open_or_create(home.path(), "s1", workspace, None).unwrap());
        let log = Session::dir_of(home.path(), "s1").join("log.jsonl");
        let line = format!("{{\"seq\":{seq},\"ts\":\"x\",\"type\":\"error\",\"message\":\"m\"}}\n");
        OpenOptions::new()
            .append(true)
            .open(&log)
            .unwrap()
            .write_all(line.as_bytes())
            .unwrap();
        let error = Session::open_or_create(home.path(), "s1", workspace, None).unwrap_err();
        assert!(matches!(error, Error::SeqExhausted { .. }), "{error}");
        assert!(error.to_string().contains("session 's1'"), "{error}");
        assert!(std::fs::read_to_string(&log).unwrap().ends_with(&line));
    }
}

#[test]
fn a_line_past_the_bound_is_read_past_not_held() {
    let mut bytes = b"{\"seq\":1,\"ts\":\"x\",\"type\":\"error\",\"message\":\"a\"}\n".to_vec();
    bytes.extend(std::iter::repeat_n(0u8, 1000));
    bytes.push(b'\n');
    bytes.extend_from_slice(b"{\"seq\":3,\"ts\":\"x\",\"type\":\"error\",\"message\":\"c\"}\n");
    bytes.extend(std::iter::repeat_n(0u8, 1000));
    let loaded = read_log(&bytes[..], 0, 100).unwrap();
    assert_eq!(loaded.events.len(), 3);
    assert!(matches!(
        &loaded.events[1].body,
        EventBody::Unreadable(UnreadableEvent { line: 2, error }) if error.contains("1001 bytes")
    ));
    assert_eq!(loaded.torn_tail, Some(1000));
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(crate::proptest_cases()))]

    /// Any mix of good lines, damaged ones and bytes: the reader never
    /// panics, every complete line is an event (read or unreadable), only
    /// a tail without a newline is torn, and seqs only grow.
    #[test]
    fn the_log_reader_keeps_every_complete_line(
        pieces in proptest::collection::vec(
            proptest::prop_oneof![
                (0u64..20).prop_map(|seq| format!("{{\"seq\":{seq},\"ts\":\"x\",\"type\":\"error\",\"message\":\"m\"}}\n").into_bytes()),
                proptest::prelude::Just(b"{\"seq\":7,\"ts\":\"x\",\"type\":\"unknown_kind\"}\n".to_vec()),
                proptest::prelude::Just(b"{\"seq\":18446744073709551615,\"ts\":\"x\",\"type\":\"error\",\"message\":\"m\"}\n".to_vec()),
                proptest::collection::vec(proptest::prelude::any::<u8>(), 0..40),
            ],
            0..30,
        ),
        after in 0u64..10,
    ) {
        let bytes = pieces.concat();
        let loaded = read_log(&bytes[..], 0, 64).unwrap();
        let newlines = bytes.iter().filter(|byte| **byte == b'\n').count();
        proptest::prop_assert_eq!(loaded.events.len(), newlines);
        proptest::prop_assert_eq!(loaded.torn_tail.is_some(), !bytes.is_empty() && !bytes.ends_with(b"\n"));
        let after_loaded = read_log(&bytes[..], after, 64).unwrap();
        proptest::prop_assert!(after_loaded.events.len() <= loaded.events.len());
    }
}

#[test]
fn a_session_has_one_writer_at_a_time_and_names_it() {
    let home = tempfile::tempdir().unwrap();
    let first = Session::open_or_create(home.path(), "s", home.path(), None).unwrap();
    let second = Session::open_or_create(home.path(), "s", home.path(), None);
    match second {
        Err(Error::InUse { pid, .. }) => assert_eq!(pid, Some(std::process::id())),
        other => panic!("{other:?}"),
    }
    drop(first);
    Session::open_or_create(home.path(), "s", home.path(), None).unwrap();
}

#[test]
fn a_bad_line_in_the_middle_is_shown_as_unreadable_and_the_rest_loads() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log.jsonl");
    std::fs::write(
        &log,
        "{\"seq\":1,\"ts\":\"t\",\"type\":\"error\",\"message\":\"a\"}\ngarbage\n{\"seq\":3,\"ts\":\"t\",\"type\":\"error\",\"message\":\"m\"}\n",
    )
    .unwrap();
    let loaded = load_log(&log).unwrap();
    assert_eq!(loaded.events.len(), 3);
    assert!(matches!(
        loaded.events[1].body,
        EventBody::Unreadable(UnreadableEvent { line: 2, .. })
    ));
    assert_eq!(loaded.events[1].seq, 2);
    assert_eq!(loaded.events[2].seq, 3);
    // From any point, the events after it are the same as a whole load's.
    for after in 0..=3 {
        let whole: Vec<Event> = loaded
            .events
            .iter()
            .filter(|event| event.seq > after)
            .cloned()
            .collect();
        assert_eq!(load_log_after(&log, after).unwrap(), whole, "after {after}");
    }
}

#[test]
fn folders_and_files_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let (session, _) = Session::open_or_create(&home, "s", dir.path(), None).unwrap();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&home), 0o700);
    assert_eq!(mode(session.dir()), 0o700);
    assert_eq!(mode(session.log_path()), 0o600);
    assert_eq!(mode(&session.dir().join("meta.json")), 0o600);
    assert_eq!(mode(&session.dir().join("lock")), 0o600);
}

#[test]
fn an_open_turn_left_by_a_dead_process_is_closed_on_open() {
    use wicket_protocol::{Card, CardKind, OutsideReadCard};
    let home = tempfile::tempdir().unwrap();
    {
        let (session, _) = Session::open_or_create(home.path(), "s", home.path(), None).unwrap();
        session
            .append(EventBody::UserMessage(UserMessageEvent {
                plan: Default::default(),
                text: "go".into(),
            }))
            .unwrap();
        session
            .append(EventBody::AssistantMessage(AssistantMessageEvent {
                text: String::new(),
                tool_calls: vec![wicket_protocol::ToolCallRequest {
                    id: "c1".into(),
                    name: "read_file".into(),
                    arguments: "{}".into(),
                }],
                usage: None,
                stop_reason: None,
            }))
            .unwrap();
        session
            .append(EventBody::Card(CardEvent {
                call_id: "c1".into(),
                card: Card {
                    id: "card-1".into(),
                    ..Card::new(
                        "read_file",
                        CardKind::OutsideRead(OutsideReadCard {
                            path: "/etc/hosts".into(),
                            reach: Reach::Read,
                        }),
                    )
                },
                proposed: None,
            }))
            .unwrap();
        session
            .update_meta(|meta| meta.status = Status::Waiting)
            .unwrap();
    }
    let metas = list(home.path());
    assert_eq!(metas[0].status, Status::Idle);
    let (_, loaded) = Session::load_existing(home.path(), "s").unwrap();
    let tail: Vec<&EventBody> = loaded
        .events
        .iter()
        .rev()
        .take(3)
        .map(|e| &e.body)
        .collect();
    assert_eq!(
        tail[0],
        &EventBody::TurnEnded(TurnEndedEvent {
            outcome: TurnOutcome::Interrupted
        })
    );
    assert!(
        matches!(tail[1], EventBody::Interrupted(InterruptedEvent { card: Some(card), .. }) if card == "card-1"),
        "{tail:?}"
    );
    assert!(
        matches!(tail[2], EventBody::ToolResult(ToolResultEvent { call_id, result: Err(_) }) if call_id == "c1")
    );
    assert_eq!(Unfinished::of(&loaded.events), Unfinished::default());
}

/// A process that died between a turn's end and its `turn_ended`:
/// the next one to open the session says the turn is over.
#[test]
fn a_turn_ended_but_not_announced_is_announced_on_open() {
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    {
        let (session, _) = Session::open_or_create(home.path(), "s", ws.path(), None).unwrap();
        session
            .append(EventBody::UserMessage(UserMessageEvent {
                plan: Default::default(),
                text: "hi".into(),
            }))
            .unwrap();
        session
            .append(EventBody::Cancelled(CancelledEvent {}))
            .unwrap();
    }
    let (session, loaded) = Session::open_or_create(home.path(), "s", ws.path(), None).unwrap();
    assert!(matches!(
        loaded.events.last().map(|event| &event.body),
        Some(EventBody::Cancelled(CancelledEvent {}))
    ));
    drop(session);
    let (_, loaded) = Session::load_existing(home.path(), "s").unwrap();
    let bodies: Vec<&EventBody> = loaded.events.iter().map(|e| &e.body).collect();
    assert_eq!(
        bodies[bodies.len() - 2..],
        [
            &EventBody::Cancelled(CancelledEvent {}),
            &EventBody::TurnEnded(TurnEndedEvent {
                outcome: TurnOutcome::Cancelled
            })
        ]
    );
    // Once is enough: opening again adds nothing.
    drop(Session::open_or_create(home.path(), "s", ws.path(), None).unwrap());
    let (_, again) = Session::load_existing(home.path(), "s").unwrap();
    assert_eq!(again.events.len(), loaded.events.len());
}
