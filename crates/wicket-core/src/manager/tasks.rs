//! Sub-tasks from the manager's side. A `task` call opens a session of its
//! own (its meta.json names `parent` and `parent_call`) in the same
//! workspace, and runs one turn in it with the parent's model, settings
//! (rules, hooks, jail), grants and checkpoint store. Its cards are shown
//! in the parent as well, marked with the sub-task, one at a time in the
//! order they opened ([`Turnstile`]), and answered there; its finish is
//! the call's result, its usage the parent turn's too.

use super::*;
use crate::turn::{Child, Outcome, Tasks};
use wicket_protocol::event::{AnswerEvent, TaskEvent, ToolResultEvent};
use wicket_protocol::{
    CallId, ErrorKind, TaskArgs, TaskDenial, TaskOutput, TaskRef, TaskTools, ToolCallRequest,
    ToolOutput, Usage, WireError,
};

/// Sub-tasks' cards waiting to be shown in their parent, first come first shown.
#[derive(Default)]
pub(super) struct Turnstile {
    /// The tickets waiting, the one shown first.
    queue: Mutex<VecDeque<u64>>,
    next: AtomicU64,
    changed: Condvar,
}

/// A card's turn in the parent: the next one's comes when it drops.
struct Pass<'t> {
    turnstile: &'t Turnstile,
    ticket: u64,
}

impl Drop for Pass<'_> {
    fn drop(&mut self) {
        self.turnstile.leave(self.ticket);
    }
}

impl Turnstile {
    /// Waits for a card's turn; `None` when `stop` was cancelled first.
    fn enter(&self, stop: &Cancel) -> Option<Pass<'_>> {
        let ticket = self.next.fetch_add(1, Ordering::SeqCst);
        let mut queue = wicket_os::sync::lock(&self.queue);
        queue.push_back(ticket);
        loop {
            if stop.is_cancelled() {
                drop(queue);
                self.leave(ticket);
                return None;
            }
            if queue.front() == Some(&ticket) {
                return Some(Pass {
                    turnstile: self,
                    ticket,
                });
            }
            queue = wicket_os::sync::wait(&self.changed, queue);
        }
    }

    fn leave(&self, ticket: u64) {
        wicket_os::sync::lock(&self.queue).retain(|waiting| *waiting != ticket);
        self.changed.notify_all();
    }

    /// Wakes every waiter (to see a cancel).
    fn wake(&self) {
        let _held = wicket_os::sync::lock(&self.queue);
        self.changed.notify_all();
    }
}

/// What a parent's turn starts its sub-tasks with.
pub(super) struct Spawner<'a> {
    pub(super) parent: &'a Arc<Live>,
    pub(super) lives: &'a Arc<Lives>,
    pub(super) chat: &'a dyn ChatClient,
    pub(super) settings: &'a Settings,
    pub(super) setup: &'a TurnSetup,
    pub(super) closing: &'a Arc<AtomicBool>,
}

/// A session store's failure as a call's result.
fn store_error(what: &str, error: impl std::fmt::Display) -> WireError {
    WireError::new(
        ErrorKind::Io,
        format!("the sub-task's {what} could not be written ({error}); nothing of it ran"),
    )
}

impl Tasks for Spawner<'_> {
    fn max(&self) -> usize {
        self.settings.limits.max_tasks()
    }

    fn run(
        &self,
        call: &ToolCallRequest,
        args: &TaskArgs,
        cancel: &Cancel,
    ) -> Result<ToolOutput, WireError> {
        let (child, seq) = self.open_child(call, args)?;
        let task = TaskRef {
            session: child.session.meta().id,
            description: args.description.clone(),
        };
        // Cancelling the parent cancels the child; cancelling the child
        // alone withdraws its card here.
        let (stop, _link) = cancel.linked();
        let parent = self.parent.clone();
        let waking = stop.on_cancel(Box::new(move || {
            parent.cards.wake();
            let _held = parent.state();
            parent.changed.notify_all();
        }));
        let unattended = self.parent.state().unattended;
        {
            let mut state = child.state();
            state.running = true;
            state.cancelled = false;
            state.cancel = stop.clone();
            state.unattended = unattended;
        }
        let mut person = TaskPerson {
            parent: self.parent.clone(),
            child: child.clone(),
            task: task.clone(),
            call_id: call.id.clone(),
            stop: stop.clone(),
            last: None,
        };
        let outcome = self.run_child(&child, seq, args, &mut person);
        stop.remove(waking);
        self.end_child(&child, &outcome);
        match outcome {
            Outcome::Finished(result) => Ok(ToolOutput::Task(TaskOutput {
                usage: usage_of(&child),
                denied: denied_in(&child),
                task,
                result,
            })),
            Outcome::Cancelled => Err(WireError::new(
                ErrorKind::Cancelled,
                format!(
                    "the sub-task {} was cancelled before it finished; its log says how far it got",
                    task.session
                ),
            )),
            Outcome::Failed(_, message) => Err(WireError::new(
                ErrorKind::Io,
                format!("the sub-task {} failed: {message}", task.session),
            )),
        }
    }
}

impl Spawner<'_> {
    /// The child's one turn on its prompt, with the parent's model and
    /// settings (no SessionStart of its own, the config's notices said in
    /// the parent already), its grants and its checkpoint store.
    fn run_child(
        &self,
        child: &Arc<Live>,
        seq: u64,
        args: &TaskArgs,
        person: &mut TaskPerson,
    ) -> Outcome {
        let mut settings = self.settings.clone();
        settings.session_start = None;
        settings.notices = Vec::new();
        settings.window_note = None;
        if let Some(telemetry) = &self.lives.telemetry {
            telemetry.model(&child.session.meta().id, self.chat.model());
        }
        let runner = Runner {
            tools: &child.tools,
            session: &child.session,
            chat: self.chat,
            settings: &settings,
            runtime: &self.lives.runtime,
            mcp: (args.tools == TaskTools::All).then_some(&self.parent.mcp),
            on_text: None,
            checkpoints: Some(&self.parent.checkpoints),
            plan: false,
            tasks: None,
            child: Some(Child {
                tools: args.tools,
                parent: wicket_gate::Parent {
                    session: &self.parent.session,
                    seq,
                },
            }),
        };
        let stop = person.stop.clone();
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            runner.run(&args.prompt, person, &stop)
        }))
        .unwrap_or_else(|_| {
            record_failure(&child.session, INTERNAL_ERROR.into());
            Outcome::Failed(TurnOutcome::Error, INTERNAL_ERROR.into())
        })
    }

    /// The child's session, opened and named in the parent's log; the seq
    /// of that `task` event (where its checkpoints go in the parent's store).
    fn open_child(
        &self,
        call: &ToolCallRequest,
        args: &TaskArgs,
    ) -> Result<(Arc<Live>, u64), WireError> {
        let id = session::new_id();
        let model = self.parent.session.meta().model;
        let child = self
            .lives
            .open_live(id.clone(), &self.parent.workspace, model.as_deref())
            .map_err(|error| store_error("session", error))?;
        let parent = self.parent.session.meta().id;
        let title: String = args.description.chars().take(80).collect();
        child
            .session
            .update_meta(|meta| {
                meta.parent = Some(parent);
                meta.parent_call = Some(call.id.to_string());
                meta.title = title;
            })
            .map_err(|error| store_error("meta.json", error))?;
        let logged = self
            .parent
            .session
            .append(EventBody::Task(TaskEvent {
                call_id: call.id.clone(),
                session: id,
                description: args.description.clone(),
                tools: args.tools,
            }))
            .map_err(|error| store_error("start in the parent's log", error))?;
        Ok((child, logged.seq))
    }

    /// The child's turn is over: `turn_ended` in its log, and whatever was
    /// sent to it meanwhile runs as in any session.
    fn end_child(&self, child: &Arc<Live>, outcome: &Outcome) {
        child.state().open = None;
        let Some(next) = turns::end_turn(child, outcome.turn_outcome(), self.closing) else {
            return;
        };
        let (live, setup, lives) = (child.clone(), self.setup.clone(), self.lives.clone());
        let closing = self.closing.clone();
        let spawned = std::thread::Builder::new()
            .name("turn-subtask".into())
            .spawn(move || {
                turns::run_turns(live, setup, lives, First::Message(next.0, next.1), closing)
            });
        if spawned.is_err() {
            child.state().running = false;
            record_failure(
                &child.session,
                "the turn of a message queued for this sub-task could not start; send it again"
                    .into(),
            );
        }
    }
}

/// What the child's turn used, when its server reported any.
fn usage_of(child: &Live) -> Option<Usage> {
    let usage = child.session.meta().usage;
    (usage != Usage::default()).then_some(usage)
}

/// The child's calls that were denied (by the person, a rule, a hook or a
/// policy), as its model read them.
fn denied_in(child: &Live) -> Vec<TaskDenial> {
    let Ok(loaded) = session::load_log(child.session.log_path()) else {
        return Vec::new();
    };
    loaded
        .events
        .into_iter()
        .filter_map(|event| match event.body {
            EventBody::ToolResult(ToolResultEvent {
                call_id,
                result: Err(error),
            }) if error.kind == ErrorKind::Denied => Some(TaskDenial {
                call_id,
                why: error.message,
            }),
            _ => None,
        })
        .collect()
}

/// The person as a sub-task meets them: each card is shown in the parent,
/// marked with the sub-task, when its turn comes, and answered there.
struct TaskPerson {
    parent: Arc<Live>,
    child: Arc<Live>,
    task: TaskRef,
    /// The parent's `task` call.
    call_id: CallId,
    /// The sub-task's cancel (the parent's reaches it).
    stop: Cancel,
    last: Option<Answered>,
}

impl Answerer for TaskPerson {
    fn answer(&mut self, card: &Card) -> Option<Answer> {
        let pass = self.parent.cards.enter(&self.stop)?;
        let shown = Card {
            task: Some(Box::new(self.task.clone())),
            ..card.clone()
        };
        let parent = &self.parent.session;
        let before = parent.meta().status;
        parent
            .recorded()
            .update_meta(|meta| meta.status = Status::Waiting);
        let raised = parent.append(EventBody::Card(CardEvent {
            call_id: self.call_id.clone(),
            card: shown,
            proposed: None,
        }));
        let given = match raised {
            Ok(_) => self.parent.wait_for_unless(&card.id, Some(&self.stop)),
            Err(_) => None,
        };
        self.child.state().open = None;
        parent.recorded().update_meta(|meta| meta.status = before);
        let Some(Given::Answer(answered)) = given else {
            return None;
        };
        parent.recorded().append(EventBody::Answer(AnswerEvent {
            card: card.id.clone(),
            answer: answered.answer,
            stale: false,
            rule: None,
            reason: answered.reason.clone(),
        }));
        drop(pass);
        let answer = answered.answer;
        self.last = Some(answered);
        Some(answer)
    }

    fn widened(&mut self) -> Option<Vec<String>> {
        self.last.as_mut()?.widened.take()
    }

    fn reason(&mut self) -> Option<String> {
        self.last.as_mut()?.reason.take()
    }

    fn attended(&self) -> bool {
        !self.parent.state().unattended
    }

    fn asks(&self) -> bool {
        false
    }
}
