//! The turn thread of a session.

use super::*;

/// The turn thread: runs `text`, then whatever was queued meanwhile.
pub(super) fn run_turns(
    live: Arc<Live>,
    setup: TurnSetup,
    runtime: tokio::runtime::Handle,
    first: String,
    closing: Arc<AtomicBool>,
) {
    wicket_os::process::yield_to_front_ends();
    let mut text = first;
    loop {
        let cancel = live.state().cancel.clone();
        let fresh = live.session.meta().title.is_empty();
        if fresh {
            let title: String = text.chars().take(80).collect();
            // A failure is recorded in the session; the turn ends on it.
            let _ = live.session.update_meta(|meta| meta.title = title);
        }
        let model = live.session.meta().model;
        match setup(&live.workspace, model.as_deref()) {
            Ok((chat, mut settings)) => {
                live.add_extra_servers(&mut settings);
                // SessionStart: the first turn of this session in this process.
                if !live.started.swap(true, Ordering::SeqCst) {
                    settings.session_start = Some(if fresh { "startup" } else { "resume" });
                }
                learn_window(&mut settings, &runtime);
                let runner = Runner {
                    tools: &live.tools,
                    session: &live.session,
                    chat: chat.as_ref(),
                    settings: &settings,
                    runtime: &runtime,
                    mcp: Some(&live.mcp),
                    on_text: Some(&|delta: &str| live.text.send(|| delta.to_string())),
                    checkpoints: Some(&live.checkpoints),
                };
                // A bug in one session's turn ends that turn, never the
                // process that holds every other session.
                let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    runner.run(&text, &mut LivePerson(live.clone(), None), &cancel)
                }));
                if ran.is_err() {
                    record_end(
                        &live.session,
                        Some(INTERNAL_ERROR.into()),
                        TurnOutcome::Error,
                    );
                }
            }
            Err(error) => {
                live.session
                    .append_or_announce(EventBody::UserMessage { text: text.clone() });
                record_end(&live.session, Some(error.to_string()), TurnOutcome::Error);
            }
        }
        let mut state = live.state();
        state.open = None;
        state.given = None;
        if closing.load(Ordering::SeqCst) && !state.queue.is_empty() {
            // Shutting down starts nothing: the queued messages stay in the
            // log as `queued`, and the log says they did not run.
            let dropped = std::mem::take(&mut state.queue).len();
            live.session.append_or_announce(EventBody::Notice {
                message: format!(
                    "{dropped} queued message(s) did not run: wicket shut down first; send them again"
                ),
                file: None,
                key: None,
            });
        }
        match state.queue.pop_front() {
            Some(next) => {
                state.cancelled = false;
                state.cancel = Cancel::default();
                text = next;
            }
            None => {
                state.running = false;
                live.changed.notify_all();
                drop(state);
                // A meta.json that cannot be written is recorded in the
                // session; the next turn's first write finds it.
                let _ = live.session.update_meta(|meta| meta.status = Status::Idle);
                return;
            }
        }
    }
}
