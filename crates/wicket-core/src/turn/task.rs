//! Sub-tasks. From the parent's side: a reply's consecutive `task` calls
//! run at once, at most [`Tasks::max`] at a time, the rest starting in
//! their order as slots free; each is a session of its own that the
//! manager starts ([`Tasks`]), and its finish is the call's result. From
//! the child's side ([`Child`]): the tools it is offered, and the parent
//! whose grants and checkpoints it shares.

use std::sync::{Condvar, Mutex};

use super::*;
use wicket_protocol::{TaskArgs, TaskTools};

/// A sub-task's turn: what it is offered, and whose grants and checkpoints it uses.
#[derive(Clone, Copy)]
pub struct Child<'a> {
    /// `read` or `all`.
    pub tools: TaskTools,
    /// The parent session and where in its log the sub-task started.
    pub parent: wicket_gate::Parent<'a>,
}

/// What a `read` sub-task is offered.
const READ_TOOLS: [&str; 4] = ["read_file", "grep", "list_dir", "finish"];

/// What no sub-task is offered: it starts no task of its own, asks the
/// person nothing (its cards are its only word with them), plans nothing.
const NEVER_IN_A_CHILD: [&str; 3] = ["task", "ask", "propose_plan"];

impl Child<'_> {
    /// Whether it is offered the tool `name`.
    pub(super) fn offers(&self, name: &str) -> bool {
        match self.tools {
            TaskTools::Read => READ_TOOLS.contains(&name),
            TaskTools::All => !NEVER_IN_A_CHILD.contains(&name),
        }
    }
}

/// What a sub-task's model reads beside the system prompt.
pub(super) const CHILD_PROMPT: &str = "You are a sub-task: another session gave you the message below as \
    your whole task. Do only that, then call finish with what you found or did; that text is all \
    the other session reads. You cannot ask the person anything; your writes and commands raise \
    cards as any other.";

/// Starts sub-tasks: the manager's, which opens a session for each.
pub trait Tasks: Sync {
    /// How many run at once (`[limits] max_tasks`).
    fn max(&self) -> usize;

    /// Runs one sub-task to its end; what its call returns.
    fn run(
        &self,
        call: &ToolCallRequest,
        args: &TaskArgs,
        cancel: &Cancel,
    ) -> Result<ToolOutput, WireError>;
}

/// Why a `task` call is refused where no sub-task may start.
pub(super) fn not_here(in_a_child: bool) -> WireError {
    if in_a_child {
        WireError::new(
            ErrorKind::Denied,
            "a sub-task cannot start a task of its own; nothing ran. Do the work here, or finish \
             and say what is left",
        )
    } else {
        WireError::invalid("task is not offered here; do the work with the other tools")
    }
}

/// The slots of one group of sub-tasks: they start in their calls' order,
/// at most `max` at once.
struct Slots {
    max: usize,
    /// The next call to start, and how many run.
    state: Mutex<(usize, usize)>,
    changed: Condvar,
}

/// A running sub-task's slot, given back when it drops.
struct Slot<'s>(&'s Slots);

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        wicket_os::sync::lock(&self.0.state).1 -= 1;
        self.0.changed.notify_all();
    }
}

impl Slots {
    /// Waits until call `index` may start; `None` when the turn was cancelled first.
    fn take(&self, index: usize, cancel: &Cancel) -> Option<Slot<'_>> {
        let mut state = wicket_os::sync::lock(&self.state);
        loop {
            if cancel.is_cancelled() {
                return None;
            }
            if state.0 == index && state.1 < self.max {
                state.0 += 1;
                state.1 += 1;
                self.changed.notify_all();
                return Some(Slot(self));
            }
            state = wicket_os::sync::wait(&self.changed, state);
        }
    }

    /// Wakes every waiter (to see a cancel).
    fn wake(&self) {
        let _held = wicket_os::sync::lock(&self.state);
        self.changed.notify_all();
    }
}

/// A call of a group: refused as it was parsed, or running.
enum Started<'scope> {
    Refused(Result<ToolOutput, WireError>),
    Running(std::thread::ScopedJoinHandle<'scope, Result<ToolOutput, WireError>>),
}

impl Runner<'_> {
    /// The `task` calls `calls` starts with, when this turn may start
    /// sub-tasks: they run together.
    pub(super) fn task_group<'c>(
        &self,
        turn: &Turn,
        calls: &'c [ToolCallRequest],
    ) -> Option<&'c [ToolCallRequest]> {
        if self.tasks.is_none() || turn.plan {
            return None;
        }
        let count = calls.iter().take_while(|call| call.name == "task").count();
        (count > 0).then(|| &calls[..count])
    }

    /// Runs a group of `task` calls, each on a thread of its own once a
    /// slot is free; each result is logged as it ends, and the model reads
    /// them in the calls' order. Each sub-task's usage is added to the turn's.
    pub(super) fn run_tasks(&self, turn: &mut Turn, group: &[ToolCallRequest], cancel: &Cancel) {
        let Some(tasks) = self.tasks else {
            return;
        };
        let slots = Arc::new(Slots {
            max: tasks.max().max(1),
            state: Mutex::new((0, 0)),
            changed: Condvar::new(),
        });
        let waker = slots.clone();
        let listener = cancel.on_cancel(Box::new(move || waker.wake()));
        let results: Vec<Result<ToolOutput, WireError>> = std::thread::scope(|scope| {
            let mut next = 0;
            let started: Vec<Started<'_>> = group
                .iter()
                .map(|call| {
                    let args = match Call::parse(&call.name, &call.arguments, &|_| None) {
                        Ok(Call::Core(CoreCall::Task(args))) => args,
                        // A call named task parses as one or not at all.
                        Ok(_) => {
                            return Started::Refused(self.refused(
                                call,
                                serde_json::Value::String(call.arguments.clone()),
                                not_here(false),
                            ));
                        }
                        Err((arguments, error)) => {
                            return Started::Refused(self.refused(call, arguments, error));
                        }
                    };
                    self.log_call(call, Self::arguments(&args));
                    let index = next;
                    next += 1;
                    let slots = &slots;
                    Started::Running(scope.spawn(move || {
                        let result = match slots.take(index, cancel) {
                            Some(_slot) => tasks.run(call, &args, cancel),
                            None => Err(WireError::new(
                                ErrorKind::Cancelled,
                                "the person cancelled the turn before this sub-task started",
                            )),
                        };
                        self.log_result(call, &result);
                        result
                    }))
                })
                .collect();
            started
                .into_iter()
                .map(|started| match started {
                    Started::Refused(result) => result,
                    Started::Running(handle) => handle.join().unwrap_or_else(|_| {
                        Err(WireError::new(
                            ErrorKind::Io,
                            "the sub-task's thread failed; its session's log says how far it got",
                        ))
                    }),
                })
                .collect()
        });
        cancel.remove(listener);
        for (call, result) in group.iter().zip(results) {
            if let Ok(ToolOutput::Task(output)) = &result
                && let Some(usage) = &output.usage
            {
                turn.usage.get_or_insert_default().add(usage);
            }
            let (content, is_error) = result_content(&result);
            turn.push(Message::ToolResult {
                call_id: call.id.clone(),
                content,
                is_error,
            });
        }
    }

    /// A call of a tool a sub-task is not offered: refused before the gate.
    pub(super) fn not_offered(
        &self,
        turn: &Turn,
        call: &ToolCallRequest,
    ) -> Option<Result<ToolOutput, WireError>> {
        let child = self.child?;
        if child.offers(&call.name)
            && (turn.request.tools.iter().any(|spec| spec.name == call.name)
                || !call.name.starts_with(wicket_protocol::MCP_PREFIX))
        {
            return None;
        }
        let error = if call.name == "task" {
            not_here(true)
        } else {
            let names: Vec<&str> = turn
                .request
                .tools
                .iter()
                .map(|spec| spec.name.as_str())
                .collect();
            WireError::new(
                ErrorKind::Denied,
                format!(
                    "this sub-task (tools \"{}\") is offered only {}; {} did not run",
                    child.tools.as_str(),
                    names.join(", "),
                    call.name
                ),
            )
        };
        let arguments = serde_json::from_str(&call.arguments)
            .unwrap_or_else(|_| serde_json::Value::String(call.arguments.clone()));
        Some(self.refused(call, arguments, error))
    }
}
