//! `turn::Runner`: one ask as a tool loop against a chat client. Each reply's
//! tool calls go through the gate in order and their results go back to the
//! model; `ask` waits for the person, `finish` (or a reply with no tool call)
//! ends the turn once the Stop hooks pass. The conversation is rebuilt from
//! `log.jsonl`, so a session resumes from its log alone.

mod compact;
mod core_calls;
mod folders;
mod mcp;
mod plan;
mod prompt;
mod task;

pub(crate) use folders::FOLDER_INSTRUCTIONS;
use plan::{PLAN_TOOLS, plan_refusal};
pub use prompt::{INSTRUCTIONS_MAX_BYTES, Instructions, system_prompt};
use std::ops::ControlFlow;
pub use task::{Child, Tasks};

use std::path::Path;
use std::sync::Arc;

use wicket_chat::{ChatClient, ChatError, Completion, Message, Request, StreamEvent};
use wicket_protocol::limits::{PROMPT_FILE_MAX_BYTES, REPLY_MAX_TOOL_CALLS};
use wicket_protocol::{
    Answer, AskArgs, Call, CallId, Card, CoreCall, ErrorKind, Event, EventBody, FinishArgs,
    FinishOutput, HookOutcome, QuestionId, ReplyOutput, SkillOutput, ToolCallRequest, ToolOutput,
    ToolSpec, TurnOutcome, Usage, UseSkillArgs, WireError, tool_specs,
};
use wicket_tools::{Cancel, Tools, Workspace};

use crate::config::{Hook, Limits};
use crate::hooked::{Caller, Notifying};
use crate::models::{ModelInfo, estimate_tokens};
pub use crate::rebuild::{COMPACT_PROMPT, compaction_cut, conversation, summary_message};
use crate::rebuild::{NotTaken, hook_feedback, result_content, unreadable_notice};
use crate::skills::{self, Skill};
use wicket_gate::Answerer;
use wicket_gate::{Confinement, Gate, Hooked};
use wicket_protocol::HookEvent;
use wicket_protocol::event::{
    AssistantMessageEvent, CancelledEvent, ErrorEvent, NoticeEvent, ResultEvent, RetryEvent,
    ToolCallEvent, ToolResultEvent, TurnEndedEvent, UserMessageEvent,
};
use wicket_session::{Session, Status, load_for_conversation, load_log};

/// How the error that ends a turn at its step limit starts (its
/// `turn_ended` says `step_limit`).
pub const STEP_LIMIT_MESSAGE: &str = "the turn reached its step limit";

/// What a turn runs with.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Model replies a turn may take before it ends with an error.
    pub step_limit: usize,
    /// Stop-hook blocks that end the turn.
    pub max_stop_blocks: usize,
    /// Every hook, by event, the home config's first.
    pub hooks: Vec<Hook>,
    /// The session's first turn in this process: its SessionStart hooks run
    /// with this `source` (`startup` for a new session, `resume`).
    pub session_start: Option<&'static str>,
    /// The output limit of one reply.
    pub max_tokens: u32,
    /// The skills the system prompt lists.
    pub skills: Vec<Skill>,
    /// The person's own instruction files, each with the name it is shown
    /// by (`$WICKET_HOME/AGENTS.md`, `~/.codex/AGENTS.md`, `~/.claude/CLAUDE.md`).
    pub instructions: Vec<(String, std::path::PathBuf)>,
    /// Where the model works, relative to the workspace's root: the
    /// AGENTS.md and CLAUDE.md of each folder from the root down to it are
    /// read too (empty: the root's alone).
    pub instructions_below: std::path::PathBuf,
    /// The sandbox and the home its commands may not read.
    pub confinement: Confinement,
    /// The person's rules (and the workspace's asks and denies).
    pub rules: wicket_gate::rules::Rules,
    /// The model's window, output limit and prices.
    pub model: ModelInfo,
    /// The turn's budget.
    pub limits: Limits,
    /// `[checkpoints]` of the person's config.
    pub checkpoints: wicket_checkpoints::Settings,
    /// The MCP servers the session starts at its first turn.
    pub mcp_servers: Vec<wicket_mcp::ServerSpec>,
    /// What of the workspace's config was ignored: a `notice` each, at the turn's start.
    pub notices: Vec<crate::config::ConfigNotice>,
    /// The managed policy, for what is added after the config was read
    /// (an editor's MCP servers): held to it as the config's were.
    pub managed: crate::config::Managed,
    /// The model's window is not known to the config: the model string and
    /// the client settings to ask its server with (`manager::learn_window`).
    pub ask_window: Option<(String, wicket_chat::ClientConfig)>,
    /// Where the window of a model the config did not know came from: a
    /// `notice` at the turn's start.
    pub window_note: Option<String>,
}

/// What [`Runner::compact`] did.
enum Compaction {
    /// The older part is summarised, and the conversation rebuilt.
    Done,
    /// There was nothing older than the last exchange to summarise.
    Nothing,
}

/// How a turn ended: its `result`, ending `error` or `cancelled` is in the
/// log. Its `turn_ended` is not yet: the manager writes it ([`announce_end`])
/// once the session is idle, so that a front end that sees it may send at once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// A `result` event was appended.
    Finished(String),
    /// An error event that ends the turn was appended.
    Failed(TurnOutcome, String),
    /// A `cancelled` event was appended.
    Cancelled,
}

impl Outcome {
    /// What its `turn_ended` says.
    pub fn turn_outcome(&self) -> TurnOutcome {
        match self {
            Outcome::Finished(_) => TurnOutcome::Result,
            Outcome::Failed(outcome, _) => *outcome,
            Outcome::Cancelled => TurnOutcome::Cancelled,
        }
    }
}

/// Writes the error that ended a turn (announced to followers when the log
/// cannot take it), whether the runner or (after a failed setup or a
/// panic) the manager ends it.
pub(crate) fn record_failure(session: &Session, message: String) {
    session.append_or_announce(EventBody::Error(ErrorEvent {
        message,
        ends_turn: true,
    }));
}

/// Writes a turn's last event, `turn_ended` (announced when the log cannot
/// take it), then a sync. The manager calls it once per turn, after the
/// session's state says idle (or the next queued turn), so this one event
/// is all a front end waits for.
pub(crate) fn announce_end(session: &Session, outcome: TurnOutcome) {
    session.append_or_announce(EventBody::TurnEnded(TurnEndedEvent { outcome }));
    session.recorded().sync();
}

/// Whether `body` ends a turn, and how: the one test every front end uses.
pub fn turn_over(body: &EventBody) -> Option<TurnOutcome> {
    match body {
        EventBody::TurnEnded(TurnEndedEvent { outcome }) => Some(*outcome),
        _ => None,
    }
}

/// No one to answer: a card raised when the process is leaving is withdrawn.
struct Nobody;

impl Answerer for Nobody {
    fn answer(&mut self, _card: &Card) -> Option<Answer> {
        None
    }

    fn attended(&self) -> bool {
        false
    }
}

enum Stop {
    Chat(ChatError),
    Cancelled,
}

/// What one step of the loop decided.
enum Flow {
    /// Ask the model again.
    Continue,
    /// The turn is over.
    End(Outcome),
}

/// What a turn carries from step to step.
struct Turn {
    /// In plan mode: only [`PLAN_TOOLS`] until a plan is approved.
    plan: bool,
    /// The next request: the system prompt, the conversation and the tools,
    /// built once and grown step by step, never copied to be sent.
    request: Request,
    /// The turn's tokens and cost; `None` until a server reports any.
    usage: Option<Usage>,
    /// Stop-hook blocks in a row.
    blocks: usize,
    /// Replies not taken as the result (cut, or empty) in a row.
    not_taken: usize,
    /// The provider's count of the last request plus its reply (0: none
    /// yet, or the conversation changed shape since).
    counted: u64,
    /// Bytes added to the conversation since that count.
    added_bytes: usize,
    /// A "prompt too long" was already answered with a compaction.
    compacted_for_error: bool,
    /// The folders whose AGENTS.md and CLAUDE.md the model has (or that hold none).
    folders: std::collections::BTreeSet<std::path::PathBuf>,
}

impl Turn {
    /// Adds a message to the conversation, and to the estimate.
    fn push(&mut self, message: Message) {
        self.added_bytes += message.bytes();
        self.request.messages.push(message);
    }
}

/// Runs turns of one session.
pub struct Runner<'a> {
    /// The workspace's tools.
    pub tools: &'a Tools,
    /// The session.
    pub session: &'a Session,
    /// The model.
    pub chat: &'a dyn ChatClient,
    /// The settings.
    pub settings: &'a Settings,
    /// The runtime the chat client runs on.
    pub runtime: &'a tokio::runtime::Handle,
    /// The session's MCP servers (`None`: this turn offers no MCP tools).
    pub mcp: Option<&'a wicket_mcp::Hub>,
    /// Each piece of a reply's text as it streams in (the log gets the whole
    /// reply once it is done).
    pub on_text: Option<&'a (dyn Fn(&str) + Send + Sync)>,
    /// The session's checkpoints (`None`: this runner takes none).
    pub checkpoints: Option<&'a wicket_checkpoints::Store>,
    /// The turn starts in plan mode: only reads, ask, finish and
    /// propose_plan, until the person approves a plan.
    pub plan: bool,
    /// What starts this turn's sub-tasks (`None`: `task` is not offered).
    pub tasks: Option<&'a dyn Tasks>,
    /// This runner's turn is a sub-task's: its tools and its parent.
    pub child: Option<Child<'a>>,
}

impl Runner<'_> {
    fn log(&self, body: EventBody) {
        self.session.recorded().append(body);
    }

    /// Ends the turn when a write of the log or meta.json failed: nothing
    /// may run that the log did not record.
    fn broken(&self) -> Option<Outcome> {
        let failure = self.session.take_failure()?;
        Some(self.fail(format!(
            "the session could not be written ({failure}), so the turn stopped: nothing runs that the log does not record. \
             Free space on its disk (or fix the permissions of {}), then send the message again",
            self.session.dir().display()
        )))
    }

    fn gate(&self) -> Gate<'_> {
        self.caller().gate()
    }

    /// The session's calls with their hooks.
    pub(crate) fn caller(&self) -> Caller<'_> {
        Caller {
            tools: self.tools,
            session: self.session,
            hooks: &self.settings.hooks,
            confinement: &self.settings.confinement,
            rules: &self.settings.rules,
            checkpoints: self.checkpoints.map(|store| wicket_gate::Checkpointing {
                store,
                settings: &self.settings.checkpoints,
            }),
            parent: self.child.map(|child| child.parent),
        }
    }

    fn end(&self, outcome: Outcome) -> Outcome {
        if let Outcome::Failed(_, message) = &outcome {
            record_failure(self.session, message.clone());
        }
        outcome
    }

    fn fail(&self, message: String) -> Outcome {
        self.fail_as(TurnOutcome::Error, message)
    }

    /// Ends the turn with an error (announced when the log cannot take it).
    fn fail_as(&self, outcome: TurnOutcome, message: String) -> Outcome {
        self.end(Outcome::Failed(outcome, message))
    }

    /// Synthetic results for calls that will not run, with `why`.
    fn close_calls(&self, calls: &[ToolCallRequest], why: &str) {
        for call in calls {
            self.log(EventBody::ToolResult(ToolResultEvent {
                call_id: call.id.clone(),
                result: Err(WireError::new(ErrorKind::Cancelled, why)),
            }));
        }
    }

    fn cancelled(&self, unanswered: &[ToolCallRequest]) -> Outcome {
        self.close_calls(
            unanswered,
            "the person cancelled the turn before this call ran",
        );
        self.log(EventBody::Cancelled(CancelledEvent {}));
        self.end(Outcome::Cancelled)
    }

    /// One model reply, abandoned at once on cancel; retries go in the log.
    fn complete(&self, request: &Request, cancel: &Cancel) -> Result<Completion, Stop> {
        let notify = Arc::new(tokio::sync::Notify::new());
        let wake = notify.clone();
        let listener = cancel.on_cancel(Box::new(move || wake.notify_one()));
        let session = self.session;
        let on_text = self.on_text;
        let mut on_event = move |event: StreamEvent| match event {
            StreamEvent::Retry {
                attempt,
                delay_ms,
                reason,
            } => {
                session.recorded().append(EventBody::Retry(RetryEvent {
                    attempt,
                    delay_ms,
                    reason,
                }));
            }
            StreamEvent::Text(delta) => {
                if let Some(on_text) = on_text {
                    on_text(&delta);
                }
            }
        };
        let outcome = self.runtime.block_on(async {
            tokio::select! {
                reply = self.chat.complete(request, &mut on_event) => reply.map_err(Stop::Chat),
                () = notify.notified() => Err(Stop::Cancelled),
            }
        });
        cancel.remove(listener);
        outcome
    }

    /// The SessionStart hooks (at the session's first turn here), then the
    /// UserPromptSubmit hooks: their notes for the model, or the end of a
    /// turn whose message a hook blocked (no request is made).
    fn prompt_hooks(
        &self,
        ask: &str,
        person: &mut dyn Answerer,
        cancel: &Cancel,
    ) -> Result<Vec<String>, Outcome> {
        let mut ran = Vec::new();
        if let Some(source) = self.settings.session_start {
            let input = serde_json::json!({ "source": source });
            ran.extend(self.caller().run_hooks(
                HookEvent::SessionStart,
                None,
                None,
                || input,
                person,
                cancel,
                false,
            ));
        }
        let input = serde_json::json!({ "prompt": ask });
        let prompted = self.caller().run_hooks(
            HookEvent::UserPromptSubmit,
            None,
            None,
            || input,
            person,
            cancel,
            false,
        );
        if let Some(blocked) = prompted
            .iter()
            .find(|ran| ran.settled == HookOutcome::Block)
        {
            let why = blocked.block_reason(HookEvent::UserPromptSubmit);
            let head: String = ask.chars().take(200).collect();
            return Err(self.fail(format!(
                "the hook {} blocked the message {head:?}, so the model never saw it: {why}",
                blocked.hook.name
            )));
        }
        ran.extend(prompted);
        Ok(ran
            .iter()
            .filter_map(|ran| {
                let context = ran.run.context.as_deref()?;
                Some(crate::hooks::note(&ran.hook.name, context.trim()))
            })
            .collect())
    }

    /// Runs the Stop hooks; `Ok` when all pass, else the feedback for the
    /// model. A hook the workspace declared asks first, as a `run` card.
    fn stop_hooks(
        &self,
        call_id: Option<&CallId>,
        result: &str,
        person: &mut dyn Answerer,
        cancel: &Cancel,
    ) -> Result<(), String> {
        let input = serde_json::json!({
            "result": result,
            "stop_hook_active": true,
        });
        let mut feedback = Vec::new();
        for ran in self.caller().run_hooks(
            HookEvent::Stop,
            None,
            call_id,
            || input,
            person,
            cancel,
            false,
        ) {
            if ran.settled != HookOutcome::Block {
                continue;
            }
            if ran.run.outcome == HookOutcome::Error {
                self.log(EventBody::error(format!(
                    "the Stop hook {:?} failed ({}); it counts as a block",
                    ran.hook.command,
                    ran.run
                        .exit_code
                        .map_or(ran.run.stderr.trim().to_string(), |code| format!(
                            "exit {code}: {}",
                            ran.run.stderr.trim()
                        ))
                )));
                feedback.push(format!(
                    "the Stop hook {:?} failed: {}",
                    ran.hook.command,
                    ran.run.stderr.trim()
                ));
            } else {
                feedback.push(ran.run.stderr);
            }
        }
        if feedback.is_empty() {
            Ok(())
        } else {
            Err(feedback.join("\n"))
        }
    }

    /// The SessionEnd hooks, as the process lets the session go.
    pub fn session_end(&self, reason: &str) {
        let input = serde_json::json!({ "reason": reason });
        self.caller().run_hooks(
            HookEvent::SessionEnd,
            None,
            None,
            || input,
            &mut Nobody,
            &Cancel::default(),
            false,
        );
        self.session.recorded().sync();
    }

    /// Runs one ask to its end.
    pub fn run(&self, ask: &str, person: &mut dyn Answerer, cancel: &Cancel) -> Outcome {
        // A failure of an earlier turn is that turn's; this one finds out for itself.
        let _ = self.session.take_failure();
        self.session
            .recorded()
            .update_meta(|meta| meta.status = Status::Running);
        let (mut history, unreadable, folders) =
            match load_for_conversation(self.session.log_path()) {
                Ok(events) => (
                    conversation(&events),
                    unreadable_notice(&events),
                    folders::folders_read(&self.settings.instructions_below, &events),
                ),
                Err(error) => {
                    return self.fail(format!("the session's log cannot be read: {error}"));
                }
            };
        // The hooks first: a message a hook blocks is never the model's
        // (its words stay in the error that says so).
        let mut said = match self.prompt_hooks(ask, person, cancel) {
            Ok(notes) => notes,
            Err(outcome) => return outcome,
        };
        self.log(EventBody::UserMessage(UserMessageEvent {
            plan: self.plan,
            text: ask.into(),
        }));
        self.log_notices(unreadable);
        // As the log rebuilds it: the hooks' notes, then the message.
        said.push(ask.to_string());
        history.push(Message::User {
            text: said.join("\n\n"),
        });
        self.session.recorded().sync();
        if let Some(outcome) = self.broken() {
            return outcome;
        }
        let (system, instructions) = system_prompt(
            self.tools.workspace(),
            &self.settings.skills,
            &self.settings.confinement.sandbox.prompt_sentence(),
            person.attended(),
            &self.settings.instructions,
            &self.settings.instructions_below,
        );
        let system = match self.child {
            Some(_) => format!("{system}\n\n{}", task::CHILD_PROMPT),
            None => system,
        };
        self.tell_instructions(&instructions);
        self.start_servers(person);
        let mut turn = self.new_turn(history, system);
        turn.folders = folders;
        for _ in 0..self.settings.step_limit {
            if let Flow::End(outcome) = self.step(&mut turn, person, cancel) {
                return outcome;
            }
        }
        self.fail_as(
            TurnOutcome::StepLimit,
            format!(
                "{STEP_LIMIT_MESSAGE} of {} model replies and was stopped; raise step_limit in config.toml if the task needs more",
                self.settings.step_limit
            ),
        )
    }

    /// One model reply and what it asks for.
    fn step(&self, turn: &mut Turn, person: &mut dyn Answerer, cancel: &Cancel) -> Flow {
        if cancel.is_cancelled() {
            return Flow::End(self.cancelled(&[]));
        }
        if let Some(outcome) = self.broken() {
            return Flow::End(outcome);
        }
        let estimate = self.estimate(turn);
        let window = self.settings.model.context_window;
        // 80 % without overflow, whatever the window (a server or a config
        // can say 2^63; `models` keeps windows past any real model's out).
        let threshold = window - window / 5;
        if estimate > threshold {
            match self.compact(turn, estimate, cancel) {
                Ok(Compaction::Done) => {}
                // Nothing older to summarise: a request that still fits the
                // window goes as it is (a summary of nothing would only
                // make it longer).
                Ok(Compaction::Nothing) if estimate <= window => {}
                Ok(Compaction::Nothing) => return Flow::End(self.too_small(estimate)),
                Err(outcome) => return Flow::End(outcome),
            }
        }
        if let Some(outcome) = self.over_budget(turn, self.estimate(turn)) {
            return Flow::End(outcome);
        }
        let mut reply = match self.complete(&turn.request, cancel) {
            Ok(reply) => reply,
            Err(Stop::Cancelled) => return Flow::End(self.cancelled(&[])),
            Err(Stop::Chat(error)) if error.is_context_too_long() && !turn.compacted_for_error => {
                // Compact once and ask again; never retry the same prompt blindly.
                turn.compacted_for_error = true;
                let estimate = self.estimate(turn).max(threshold.saturating_add(1));
                return match self.compact(turn, estimate, cancel) {
                    Ok(Compaction::Done) => Flow::Continue,
                    Ok(Compaction::Nothing) => Flow::End(self.too_small(estimate)),
                    Err(outcome) => Flow::End(outcome),
                };
            }
            Err(Stop::Chat(error)) => {
                return Flow::End(
                    self.fail(format!("the model {} failed: {error}", self.chat.model())),
                );
            }
        };
        // Unreported usage stays unknown: nothing is counted, and the next
        // request's size is estimated from the whole conversation.
        let usage = reply.usage.as_ref().map(|usage| self.count(turn, usage));
        turn.counted = reply.usage.map_or(0, |usage| {
            usage.input_tokens.saturating_add(usage.output_tokens)
        });
        turn.added_bytes = 0;
        // A reply past the cap is refused whole; only the calls up to the
        // cap go into the log and the conversation, so 5,000 calls repeated
        // every step cost what 64 do.
        let asked = reply.tool_calls.len();
        reply.tool_calls.truncate(REPLY_MAX_TOOL_CALLS);
        self.log(EventBody::AssistantMessage(AssistantMessageEvent {
            text: reply.text.clone(),
            tool_calls: reply.tool_calls.clone(),
            usage,
            stop_reason: reply.stop_reason.clone(),
        }));
        turn.request.messages.push(Message::Assistant {
            text: reply.text.clone(),
            tool_calls: reply.tool_calls.clone(),
        });
        if reply.tool_calls.is_empty() {
            return self.no_calls(turn, reply, person, cancel);
        }
        turn.not_taken = 0;
        if asked > REPLY_MAX_TOOL_CALLS {
            return self.too_many_calls(turn, &reply.tool_calls, asked);
        }
        self.calls(turn, &reply.tool_calls, person, cancel)
    }

    /// A reply that asked for more calls than one may hold: none runs, each
    /// kept call's result says why, and the turn goes on so the model can
    /// ask again with fewer.
    fn too_many_calls(&self, turn: &mut Turn, calls: &[ToolCallRequest], asked: usize) -> Flow {
        let why = format!(
            "not run: the reply asked for {asked} tool calls, more than the {REPLY_MAX_TOOL_CALLS} \
             one reply may hold, so none of them ran; ask again with at most \
             {REPLY_MAX_TOOL_CALLS} calls"
        );
        self.log(EventBody::error(format!(
            "the model asked for {asked} tool calls in one reply, more than the \
             {REPLY_MAX_TOOL_CALLS} a reply may hold; none ran, and the model was told so"
        )));
        for call in calls {
            let result = Err(WireError::new(ErrorKind::InvalidArgs, why.clone()));
            self.log_result(call, &result);
            let (content, is_error) = result_content(&result);
            turn.push(Message::ToolResult {
                call_id: call.id.clone(),
                content,
                is_error,
            });
        }
        Flow::Continue
    }

    /// The next request's size in tokens: the provider's count of the last
    /// one plus an estimate of what was added since, or (with no count, or
    /// a provider that counts nothing) an estimate of all of it.
    fn estimate(&self, turn: &Turn) -> u64 {
        if turn.counted == 0 {
            return estimate_tokens(turn.request.bytes());
        }
        turn.counted
            .saturating_add(estimate_tokens(turn.added_bytes))
    }

    /// A reply's usage with its cost (when the model's prices are known)
    /// and how full the window was.
    fn priced(&self, usage: &Usage) -> Usage {
        let model = &self.settings.model;
        let mut priced = *usage;
        priced.cost_usd = model.prices.map(|prices| prices.cost(usage));
        priced.context_used_percent = Some(used_percent(usage, model.context_window));
        priced
    }

    /// Ends the turn when the next request would pass a limit of `[limits]`.
    fn over_budget(&self, turn: &Turn, next_input: u64) -> Option<Outcome> {
        let limits = &self.settings.limits;
        if let Some(max) = limits.max_tokens_per_turn {
            let used = turn.usage.map_or(0, |usage| {
                usage.input_tokens.saturating_add(usage.output_tokens)
            });
            if used.saturating_add(next_input) > max {
                return Some(self.fail_as(TurnOutcome::Budget, format!(
                    "the turn stopped before its next request: it has used {used} tokens and the next request would take about {next_input} more, past [limits] max_tokens_per_turn = {max}"
                )));
            }
        }
        if let (Some(max), Some(prices)) =
            (limits.max_cost_usd_per_turn, self.settings.model.prices)
        {
            let spent = turn.usage.and_then(|usage| usage.cost_usd).unwrap_or(0.0);
            let next = next_input as f64 * prices.input / 1_000_000.0;
            if spent + next > max {
                return Some(self.fail_as(TurnOutcome::Budget, format!(
                    "the turn stopped before its next request: it has cost ${spent:.4} and the next request would cost about ${next:.4} more, past [limits] max_cost_usd_per_turn = {max}"
                )));
            }
        }
        None
    }

    /// A reply's reported usage, priced and counted in the turn's and the
    /// session's totals.
    fn count(&self, turn: &mut Turn, reported: &Usage) -> Usage {
        let priced = self.priced(reported);
        turn.usage.get_or_insert_default().add(&priced);
        self.session.count_usage(&priced);
        priced
    }

    /// A reply with no tool call ends the turn, its text the result, once
    /// the hooks pass; unless the output limit cut it.
    fn no_calls(
        &self,
        turn: &mut Turn,
        reply: Completion,
        person: &mut dyn Answerer,
        cancel: &Cancel,
    ) -> Flow {
        let stop = reply.stop_reason.as_ref();
        if let Some(why) = NotTaken::of(&reply.text, &reply.tool_calls, stop) {
            // Cut and empty replies count together: replies not taken, in a row.
            turn.not_taken += 1;
            if turn.not_taken > 1 {
                return Flow::End(self.fail(why.twice(stop)));
            }
            turn.push(Message::User {
                text: why.notice().into(),
            });
            return Flow::Continue;
        }
        match self.stop_hooks(None, &reply.text, person, cancel) {
            Ok(()) => Flow::End(self.finished(reply.text, turn.usage)),
            Err(feedback) => {
                turn.blocks += 1;
                if turn.blocks >= self.settings.max_stop_blocks {
                    return Flow::End(self.too_many_blocks(turn.blocks));
                }
                turn.push(Message::User {
                    text: hook_feedback(&feedback),
                });
                Flow::Continue
            }
        }
    }

    /// The reply's calls, in order.
    // One arm per kind of call, each saying how the loop goes on after it; past 80 lines because the match is exhaustive.
    fn calls(
        &self,
        turn: &mut Turn,
        calls: &[ToolCallRequest],
        person: &mut dyn Answerer,
        cancel: &Cancel,
    ) -> Flow {
        let mut finished: Option<String> = None;
        let mut ran_until = 0;
        for (index, call) in calls.iter().enumerate() {
            if index < ran_until {
                // Ran with the sub-tasks of its group.
                continue;
            }
            if cancel.is_cancelled() {
                return Flow::End(self.cancelled(&calls[index..]));
            }
            // No synthetic results here: the reply itself may be what the log
            // could not take, and a rebuilt conversation closes open calls.
            if let Some(outcome) = self.broken() {
                return Flow::End(outcome);
            }
            if finished.is_some() {
                self.close_calls(
                    std::slice::from_ref(call),
                    "not run: finish ended the turn first",
                );
                continue;
            }
            if let Some(group) = self.task_group(turn, &calls[index..]) {
                ran_until = index + group.len();
                self.run_tasks(turn, group, cancel);
                if cancel.is_cancelled() {
                    return Flow::End(self.cancelled(&calls[ran_until..]));
                }
                continue;
            }
            let mcp_tool = |name: &str| {
                self.mcp
                    .and_then(|hub| hub.find(name))
                    .map(|offered| (offered.server, offered.tool))
            };
            let mut notes = Vec::new();
            let parsed = match Call::parse(&call.name, &call.arguments, &mcp_tool) {
                Err((arguments, error)) => {
                    let error = offered_instead(error, &call.name, &turn.request.tools);
                    ControlFlow::Break(self.refused(call, arguments, error))
                }
                Ok(parsed) => match self.not_offered(turn, call) {
                    Some(refusal) => ControlFlow::Break(refusal),
                    None => self.planned(turn, call, parsed, person),
                },
            };
            let result = match parsed {
                ControlFlow::Break(result) => result,
                ControlFlow::Continue(Call::Tool(tool_call)) => {
                    let (result, said) = self.caller().call(call, &tool_call, person, cancel);
                    notes = said;
                    if result.is_ok() {
                        notes.extend(self.reach_folders(turn, call, &tool_call));
                    }
                    result
                }
                ControlFlow::Continue(Call::Core(CoreCall::Ask(args))) => {
                    match self.ask(call, &args, person) {
                        Some(result) => result,
                        None => return Flow::End(self.cancelled(&calls[index..])),
                    }
                }
                ControlFlow::Continue(Call::Core(CoreCall::Finish(args))) => {
                    let result = self.finish(call, &args, person, cancel);
                    match &result {
                        Ok(_) => finished = Some(args.result.clone()),
                        Err(error) if error.kind == ErrorKind::Blocked => turn.blocks += 1,
                        Err(_) => {}
                    }
                    result
                }
                ControlFlow::Continue(Call::Core(CoreCall::UseSkill(args))) => {
                    self.use_skill(call, &args)
                }
                // Taken by `planned`, which never gives it back.
                ControlFlow::Continue(Call::Core(CoreCall::ProposePlan(_))) => {
                    Err(plan_refusal(&call.name, false))
                }
                // Taken by `task_group` where tasks are offered, refused by
                // `not_offered` where they are not.
                ControlFlow::Continue(Call::Core(CoreCall::Task(_))) => {
                    Err(task::not_here(self.child.is_some()))
                }
                ControlFlow::Continue(Call::Mcp(mcp)) => {
                    let (result, said) = self.mcp_call(call, &mcp, person, cancel);
                    notes = said;
                    result
                }
            };
            let (mut content, is_error) = result_content(&result);
            for note in notes {
                content.push_str("\n\n");
                content.push_str(&note);
            }
            turn.push(Message::ToolResult {
                call_id: call.id.clone(),
                content,
                is_error,
            });
            if turn.blocks >= self.settings.max_stop_blocks {
                self.close_calls(&calls[index + 1..], "not run: the turn ended first");
                return Flow::End(self.too_many_blocks(turn.blocks));
            }
        }
        match finished {
            Some(text) => Flow::End(self.finished(text, turn.usage)),
            None => Flow::Continue,
        }
    }

    fn too_many_blocks(&self, blocks: usize) -> Outcome {
        self.fail(format!(
            "the Stop hooks blocked the end of the turn {blocks} times in a row; the turn ends unfinished"
        ))
    }

    fn finished(&self, text: String, usage: Option<Usage>) -> Outcome {
        self.log(EventBody::Result(ResultEvent {
            text: text.clone(),
            usage,
        }));
        self.end(Outcome::Finished(text))
    }

    fn log_call(&self, call: &ToolCallRequest, arguments: serde_json::Value) {
        self.log(EventBody::ToolCall(ToolCallEvent {
            call_id: call.id.clone(),
            name: call.name.clone(),
            arguments,
            auto_allowed: None,
            allowed_by: None,
        }));
    }

    fn log_result(&self, call: &ToolCallRequest, result: &Result<ToolOutput, WireError>) {
        // A result that cannot be logged is recorded in the session; the turn ends on it before anything else runs.
        let _ = self.gate().log_result(&call.id, result);
    }

    /// A call refused at the edge: logged with its arguments as given.
    fn refused(
        &self,
        call: &ToolCallRequest,
        arguments: serde_json::Value,
        error: WireError,
    ) -> Result<ToolOutput, WireError> {
        self.log_call(call, arguments);
        let result = Err(error);
        self.log_result(call, &result);
        result
    }

    fn arguments<T: serde::Serialize>(args: &T) -> serde_json::Value {
        wicket_protocol::json::value(args)
    }

    /// A turn over `history` that has sent nothing yet.
    fn new_turn(&self, history: Vec<Message>, system: String) -> Turn {
        Turn {
            plan: self.plan,
            request: Request {
                system,
                messages: history,
                tools: self.tool_specs(self.plan),
                max_tokens: self.settings.max_tokens,
            },
            usage: None,
            blocks: 0,
            not_taken: 0,
            counted: 0,
            added_bytes: 0,
            compacted_for_error: false,
            folders: std::collections::BTreeSet::new(),
        }
    }

    /// The six tools, ask, finish, use_skill (when there is a skill to
    /// load), task (where sub-tasks may start), and the MCP servers' tools;
    /// in plan mode only [`PLAN_TOOLS`], in a sub-task what its `tools` offer.
    fn tool_specs(&self, plan: bool) -> Vec<ToolSpec> {
        let mut specs = tool_specs();
        if plan {
            specs.retain(|spec| PLAN_TOOLS.contains(&spec.name.as_str()));
            return specs;
        }
        specs.retain(|spec| spec.name != "propose_plan");
        if self.tasks.is_none() {
            specs.retain(|spec| spec.name != "task");
        }
        if let Some(child) = self.child {
            specs.retain(|spec| child.offers(&spec.name));
        }
        if self.settings.skills.is_empty() {
            specs.retain(|spec| spec.name != "use_skill");
        }
        if let Some(hub) = self.mcp {
            specs.extend(crate::mcp::tool_specs(hub));
        }
        specs
    }
}

/// How full a window of `window` tokens the reply's usage says it was, to
/// a tenth of a percent, never past 100: a server's count is its word, and
/// one that reports more than the window (or 2^64 - 1) is held to it.
fn used_percent(usage: &Usage, window: u64) -> f64 {
    let used = usage.input_tokens.saturating_add(usage.output_tokens) as f64;
    let percent = (used * 1000.0 / window.max(1) as f64).round() / 10.0;
    percent.clamp(0.0, 100.0)
}

/// The skills a session sees, from the standard folders and the config's,
/// and those skipped (their front matter past the bounds), to be said.
pub fn find_skills(
    workspace: &Workspace,
    home: &Path,
    extra: &[crate::config::SkillDir],
) -> (Vec<Skill>, Vec<skills::Skipped>) {
    skills::discover_noting(workspace, home, extra)
}

/// A call of a tool the request did not offer, answered with every tool
/// it did (its MCP tools and the turn's own among them), not only the six;
/// a refusal of an offered tool's call as it is.
fn offered_instead(error: WireError, name: &str, offered: &[ToolSpec]) -> WireError {
    if offered.is_empty() || offered.iter().any(|spec| spec.name == name) {
        return error;
    }
    let names: Vec<&str> = offered.iter().map(|spec| spec.name.as_str()).collect();
    WireError::invalid(format!(
        "there is no tool '{name}'; the tools are {}",
        names.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_s_usage_past_the_window_is_held_to_a_full_window() {
        let usage = |input_tokens, output_tokens| Usage {
            input_tokens,
            output_tokens,
            ..Usage::default()
        };
        assert_eq!(used_percent(&usage(u64::MAX, u64::MAX), 200_000), 100.0);
        assert_eq!(used_percent(&usage(u64::MAX, 0), 0), 100.0);
        assert_eq!(used_percent(&usage(300_000, 0), 200_000), 100.0);
        assert_eq!(used_percent(&usage(1_500, 500), 200_000), 1.0);
        assert_eq!(used_percent(&usage(0, 0), 200_000), 0.0);
    }
}
