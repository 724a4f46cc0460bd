use super::*;
use wicket_protocol::event::{QueuedEvent, SessionStartedEvent};

fn manager(home: &Path) -> (tokio::runtime::Runtime, Manager) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let setup: TurnSetup = Arc::new(|_, _| Err(SetupError::NoModel));
    let manager = Manager::new(home, runtime.handle().clone(), setup);
    (runtime, manager)
}

fn append(manager: &Manager, id: &SessionId, count: usize) {
    let live = manager.live(id).unwrap();
    for n in 0..count {
        live.session
            .append(EventBody::Queued(QueuedEvent {
                text: format!("message {n}"),
            }))
            .unwrap();
    }
}

/// A follower 10,000 events behind (ten times its ring) catches up from
/// the log: every seq once, in order, then the live ones.
#[test]
fn a_follower_that_lags_catches_up_with_no_gap_and_no_duplicate() {
    let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (runtime, manager) = manager(home.path());
    let id = manager.open(Some(&"s".into()), ws.path(), None).unwrap();
    let mut blocking = manager.follow(&id, 0).unwrap();
    let mut evented = manager.follow(&id, 0).unwrap();
    append(&manager, &id, 10_000);
    let total = manager.last_seq(&id).unwrap();
    assert_eq!(total, 10_001);
    let mut seen = Vec::new();
    while seen.len() < total as usize {
        seen.push(blocking.blocking_next().unwrap().unwrap().seq);
    }
    assert_eq!(seen, (1..=total).collect::<Vec<_>>());
    let mut seen = Vec::new();
    runtime.block_on(async {
        while seen.len() < total as usize {
            seen.push(evented.next().await.unwrap().unwrap().seq);
        }
    });
    assert_eq!(seen, (1..=total).collect::<Vec<_>>());
    // Then live again, from where it is.
    append(&manager, &id, 3);
    for seq in total + 1..=total + 3 {
        assert_eq!(blocking.blocking_next().unwrap().unwrap().seq, seq);
    }
    assert_eq!(blocking.last_seq(), total + 3);
}

/// Past KEPT_OPEN, idle sessions are closed (their descriptors go) and
/// open again from disk when used; a followed one stays open.
#[test]
fn idle_sessions_past_the_kept_ones_close_and_open_again() {
    let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (_runtime, manager) = manager(home.path());
    let followed = manager
        .open(Some(&"followed".into()), ws.path(), None)
        .unwrap();
    let mut follower = manager.follow(&followed, 0).unwrap();
    for n in 0..KEPT_OPEN + 20 {
        manager
            .open(Some(&format!("s{n}").into()), ws.path(), None)
            .unwrap();
    }
    let open = manager.sessions().len();
    assert!(open <= KEPT_OPEN + 1, "{open} open");
    assert!(manager.sessions().contains_key(followed.as_str()));
    // The first ones were closed; each opens again with its log.
    assert!(!manager.sessions().contains_key("s0"));
    let events = manager.events_after(&"s0".into(), 0).unwrap();
    assert!(matches!(
        events[0].body,
        EventBody::SessionStarted(SessionStartedEvent { .. })
    ));
    assert_eq!(manager.list().len(), KEPT_OPEN + 21);
    // The followed one still streams.
    append(&manager, &followed, 1);
    assert_eq!(follower.blocking_next().unwrap().unwrap().seq, 1);
    assert_eq!(follower.blocking_next().unwrap().unwrap().seq, 2);
}

/// A session nobody follows holds no ring; following makes one, and
/// the first event sent after the last follower left drops it.
#[test]
fn a_ring_exists_only_while_someone_listens() {
    let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (_runtime, manager) = manager(home.path());
    let id = manager.open(Some(&"s".into()), ws.path(), None).unwrap();
    let live = manager.live(&id).unwrap();
    assert!(live.events.sender().is_none());
    let follower = manager.follow(&id, 0).unwrap();
    assert!(live.events.sender().is_some());
    append(&manager, &id, 1);
    drop(follower);
    append(&manager, &id, 1);
    assert!(live.events.sender().is_none());
}
