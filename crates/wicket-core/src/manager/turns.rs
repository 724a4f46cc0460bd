//! The turn thread of a session, and the one place a turn ends: the state
//! goes idle (or on to the next queued message), then `turn_ended` is
//! written. A front end that sees `turn_ended` may send at once.

use super::*;
use wicket_protocol::event::{NoticeEvent, UserMessageEvent};

/// What a turn thread runs first.
pub(super) enum First {
    /// A message (and whether it starts in plan mode): a turn, then
    /// whatever was queued meanwhile.
    Message(String, bool),
    /// A compaction asked for by the person, then whatever was queued.
    Compaction,
}

/// The turn thread: runs `first`, then whatever was queued meanwhile.
pub(super) fn run_turns(
    live: Arc<Live>,
    setup: TurnSetup,
    lives: Arc<Lives>,
    first: First,
    closing: Arc<AtomicBool>,
) {
    wicket_os::process::yield_to_front_ends();
    let runtime = lives.runtime.clone();
    let mut next = first;
    loop {
        let cancel = live.state().cancel.clone();
        let outcome = match next {
            First::Message(text, plan) => {
                let around = Around {
                    setup: &setup,
                    lives: &lives,
                    closing: &closing,
                };
                turn(&live, &around, (&text, plan), &cancel)
            }
            First::Compaction => compaction(&live, &setup, &runtime, &cancel),
        };
        match end_turn(&live, outcome, &closing) {
            Some((text, plan)) => next = First::Message(text, plan),
            None => return,
        }
    }
}

/// Starts the walk of the session's first checkpoint in this process
/// while the model thinks ([`wicket_checkpoints::Store::warm`]); the first
/// write or command then waits only for what is left of it.
fn warm_checkpoints(live: &Arc<Live>, settings: &wicket_checkpoints::Settings) {
    let (live, settings) = (live.clone(), settings.clone());
    let spawned = std::thread::Builder::new()
        .name("checkpoint-walk".into())
        .spawn(move || {
            // A walk that fails is made again, and said, by the first checkpoint itself.
            let _ = live.checkpoints.warm(live.tools.workspace(), &settings);
        });
    // No thread: the first checkpoint walks when it comes.
    drop(spawned);
}

/// What a turn runs within: its setup, the sessions open beside it (for
/// its sub-tasks), and whether the process is closing.
struct Around<'a> {
    setup: &'a TurnSetup,
    lives: &'a Arc<Lives>,
    closing: &'a Arc<AtomicBool>,
}

/// One turn on `text`; how it ended (its `turn_ended` is not written yet).
fn turn(
    live: &Arc<Live>,
    around: &Around<'_>,
    (text, plan): (&str, bool),
    cancel: &Cancel,
) -> TurnOutcome {
    let (setup, runtime) = (around.setup, &around.lives.runtime);
    let fresh = live.session.meta().title.is_empty();
    if fresh {
        let title: String = text.chars().take(80).collect();
        live.session
            .recorded()
            .update_meta(|meta| meta.title = title);
    }
    let model = live.session.meta().model;
    let (chat, mut settings) = match setup(&live.workspace, model.as_deref()) {
        Ok(set) => set,
        Err(error) => {
            live.session
                .append_or_announce(EventBody::UserMessage(UserMessageEvent {
                    plan,
                    text: text.to_string(),
                }));
            record_failure(&live.session, error.to_string());
            return TurnOutcome::Error;
        }
    };
    live.add_extra_servers(&mut settings);
    if let Some(telemetry) = &around.lives.telemetry {
        telemetry.model(&live.session.meta().id, chat.model());
    }
    // SessionStart: the first turn of this session in this process.
    if !live.started.swap(true, Ordering::SeqCst) {
        settings.session_start = Some(if fresh { "startup" } else { "resume" });
    }
    learn_window(&mut settings, runtime);
    warm_checkpoints(live, &settings.checkpoints);
    let spawner = super::tasks::Spawner {
        parent: live,
        lives: around.lives,
        chat: chat.as_ref(),
        settings: &settings,
        setup,
        closing: around.closing,
    };
    // A sub-task's session, sent a message of its own later, still starts no task.
    let is_child = live.session.meta().parent.is_some();
    let runner = Runner {
        on_text: Some(&|delta: &str| live.text.send(|| delta.to_string())),
        checkpoints: Some(&live.checkpoints),
        plan,
        tasks: (!is_child).then_some(&spawner as &dyn crate::turn::Tasks),
        ..live.runner(chat.as_ref(), &settings, runtime)
    };
    let outcome = guarded(live, || {
        runner
            .run(text, &mut LivePerson::new(live.clone()), cancel)
            .turn_outcome()
    });
    if let Some(telemetry) = &around.lives.telemetry {
        telemetry_notice(&live.session, telemetry);
    }
    outcome
}

/// Says once, in `session`'s log, that telemetry dropped spans (a
/// collector down or slow): the turns went on without them.
pub(super) fn telemetry_notice(session: &Session, telemetry: &wicket_telemetry::Telemetry) {
    if let Some(dropped) = telemetry.unreported_drops() {
        session.append_or_announce(EventBody::Notice(NoticeEvent {
            message: format!(
                "telemetry: {dropped} span(s) or event(s) could not be sent to {}; turns went on without them (said once)",
                telemetry.endpoint()
            ),
            file: None,
            key: Some("telemetry".into()),
            call_id: None,
            text: None,
        }));
    }
}

/// A compaction the person asked for; how it ended.
fn compaction(
    live: &Arc<Live>,
    setup: &TurnSetup,
    runtime: &tokio::runtime::Handle,
    cancel: &Cancel,
) -> TurnOutcome {
    let model = live.session.meta().model;
    let (chat, settings) = match setup(&live.workspace, model.as_deref()) {
        Ok(set) => set,
        Err(error) => {
            record_failure(&live.session, error.to_string());
            return TurnOutcome::Error;
        }
    };
    let runner = live.runner(chat.as_ref(), &settings, runtime);
    guarded(live, || runner.compact_now(cancel).turn_outcome())
}

impl Live {
    /// A runner of this session's turns: its tools, log and MCP servers,
    /// with no streamed text and no checkpoints (a turn adds both).
    fn runner<'a>(
        &'a self,
        chat: &'a dyn ChatClient,
        settings: &'a Settings,
        runtime: &'a tokio::runtime::Handle,
    ) -> Runner<'a> {
        Runner {
            plan: false,
            tools: &self.tools,
            session: &self.session,
            chat,
            settings,
            runtime,
            mcp: Some(&self.mcp),
            on_text: None,
            checkpoints: None,
            tasks: None,
            child: None,
        }
    }
}

/// Runs `body`; a bug in one session's turn ends that turn with an error,
/// never the process that holds every other session.
fn guarded(live: &Live, body: impl FnOnce() -> TurnOutcome) -> TurnOutcome {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)).unwrap_or_else(|_| {
        record_failure(&live.session, INTERNAL_ERROR.into());
        TurnOutcome::Error
    })
}

/// Ends a turn that ended `outcome`: the state idle (meta.json too) or on
/// to the next queued message, which is returned; then `turn_ended`,
/// written under the state's lock so that no next turn's first event can
/// come before it.
pub(super) fn end_turn(
    live: &Live,
    outcome: TurnOutcome,
    closing: &AtomicBool,
) -> Option<(String, bool)> {
    let mut state = live.state();
    state.open = None;
    state.given = None;
    if closing.load(Ordering::SeqCst) && !state.queue.is_empty() {
        // Shutting down starts nothing: the queued messages stay in the
        // log as `queued`, and the log says they did not run.
        let dropped = std::mem::take(&mut state.queue).len();
        live.session.append_or_announce(EventBody::Notice(NoticeEvent { call_id: None, text: None,
            message: format!(
                "{dropped} queued message(s) did not run: wicket shut down first; send them again"
            ),
            file: None,
            key: None,
        }));
    }
    let next = state.queue.pop_front();
    match &next {
        Some(_) => {
            state.cancelled = false;
            state.cancel = Cancel::default();
        }
        None => {
            state.running = false;
            live.session
                .recorded()
                .update_meta(|meta| meta.status = Status::Idle);
        }
    }
    announce_end(&live.session, outcome);
    live.changed.notify_all();
    next
}
