//! `turn::Runner`: one ask as a tool loop against a chat client. Each reply's
//! tool calls go through the gate in order and their results go back to the
//! model; `ask` waits for the person, `finish` (or a reply with no tool call)
//! ends the turn once the Stop hooks pass. The conversation is rebuilt from
//! `log.jsonl`, so a session resumes from its log alone.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use wicket_chat::{ChatClient, ChatError, Message, Reply, Request, StreamEvent, ToolSpec};
use wicket_protocol::{
    Answer, AskArgs, AssistantToolCall, Card, ErrorKind, Event, EventBody, FinishArgs, HookOutcome,
    ToolCall, Usage, UseSkillArgs, WireError, tool_schemas,
};
use wicket_tools::{Cancel, Tools};

use crate::config::StopHook;
use crate::gate::{Answerer, Gate};
use crate::hooks::run_stop_hook;
use crate::session::{Session, Status, load_log};
use crate::skills::{self, Skill};

/// What a turn runs with.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Model replies a turn may take before it ends with an error.
    pub step_limit: usize,
    /// Stop-hook blocks that end the turn.
    pub max_stop_blocks: usize,
    pub stop_hooks: Vec<StopHook>,
    pub max_tokens: u32,
    pub skills: Vec<Skill>,
}

/// Who answers for the person: cards and questions. `None` is a withdrawal
/// (the turn was cancelled).
pub trait Person {
    fn card(&mut self, card: &Card) -> Option<Answer>;
    fn question(&mut self, id: &str, question: &str) -> Option<String>;
}

/// How a turn ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// A `result` event was appended.
    Finished(String),
    /// An error event that ends the turn was appended.
    Failed(String),
    /// A `cancelled` event was appended.
    Cancelled,
}

struct Asker<'a>(&'a mut dyn Person);

impl Answerer for Asker<'_> {
    fn answer(&mut self, card: &Card) -> Option<Answer> {
        self.0.card(card)
    }
}

/// The text a tool result gives the model.
fn result_content(result: &Result<serde_json::Value, WireError>) -> (String, bool) {
    match result {
        Ok(output) => (output.to_string(), false),
        Err(error) => (serde_json::json!({ "error": error }).to_string(), true),
    }
}

/// The conversation a chat client sees, rebuilt from the log. Tool results
/// of calls no reply made (`wicket tool`) are left out; a call a crash left
/// without a result gets one, so the conversation stays valid for every
/// provider; consecutive user messages are joined.
pub fn conversation(events: &[Event]) -> Vec<Message> {
    let mut messages: Vec<Message> = Vec::new();
    let mut pending: Vec<String> = Vec::new();
    let close_pending = |messages: &mut Vec<Message>, pending: &mut Vec<String>| {
        for call_id in pending.drain(..) {
            messages.push(Message::ToolResult {
                call_id,
                content: serde_json::json!({"error": {"kind": "cancelled", "message": "the turn stopped before this call finished"}}).to_string(),
                is_error: true,
            });
        }
    };
    let push_user = |messages: &mut Vec<Message>, text: String| {
        if let Some(Message::User { text: last }) = messages.last_mut() {
            last.push_str("\n\n");
            last.push_str(&text);
        } else {
            messages.push(Message::User { text });
        }
    };
    for event in events {
        match &event.body {
            EventBody::UserMessage { text } => {
                close_pending(&mut messages, &mut pending);
                push_user(&mut messages, text.clone());
            }
            EventBody::AssistantMessage {
                text, tool_calls, ..
            } => {
                close_pending(&mut messages, &mut pending);
                pending = tool_calls.iter().map(|call| call.id.clone()).collect();
                messages.push(Message::Assistant {
                    text: text.clone(),
                    tool_calls: tool_calls
                        .iter()
                        .map(|call| wicket_chat::ToolCallRequest {
                            id: call.id.clone(),
                            name: call.name.clone(),
                            arguments: call.arguments.clone(),
                        })
                        .collect(),
                });
            }
            EventBody::ToolResult {
                call_id,
                ok,
                output,
                error,
            } => {
                let Some(index) = pending.iter().position(|id| id == call_id) else {
                    continue;
                };
                pending.remove(index);
                let result = if *ok {
                    Ok(output.clone().unwrap_or_default())
                } else {
                    Err(error.clone().unwrap_or(WireError {
                        kind: ErrorKind::Io,
                        message: "failed".into(),
                    }))
                };
                let (content, is_error) = result_content(&result);
                messages.push(Message::ToolResult {
                    call_id: call_id.clone(),
                    content,
                    is_error,
                });
            }
            EventBody::Hook {
                call_id: None,
                outcome: HookOutcome::Block | HookOutcome::Error,
                stderr,
                ..
            } => {
                close_pending(&mut messages, &mut pending);
                push_user(&mut messages, hook_feedback(stderr));
            }
            _ => {}
        }
    }
    close_pending(&mut messages, &mut pending);
    messages
}

fn hook_feedback(stderr: &str) -> String {
    format!(
        "A Stop hook did not let the turn end yet. Its output:\n{}",
        stderr.trim_end()
    )
}

/// The system prompt: the tools, the workspace, the skills, and AGENTS.md.
pub fn system_prompt(workspace: &Path, skills: &[Skill]) -> String {
    let mut prompt = format!(
        "You are a coding agent working in the workspace {}. Relative paths are relative to it.\n\
         Use the tools to read, search and change it. Reads, searches and listings inside the workspace run at once; \
         every write, every command and every read outside the workspace waits for the person to allow it, \
         and a denial is final for that call: do not retry it unchanged, ask instead.\n\
         Commands run with no shell. When the work is done, call finish with a short summary of what you did.\n",
        workspace.display()
    );
    if !skills.is_empty() {
        prompt.push_str("\nSkills (load one with use_skill when it fits the task):\n");
        for skill in skills {
            prompt.push_str(&format!("- {}: {}\n", skill.name, skill.description));
        }
    }
    if let Ok(agents) = std::fs::read_to_string(workspace.join("AGENTS.md")) {
        prompt.push_str("\nThe workspace's AGENTS.md:\n\n");
        prompt.push_str(agents.trim_end());
        prompt.push('\n');
    }
    prompt
}

/// The tools a model is offered, from the protocol's schemas.
pub fn tool_specs() -> Vec<ToolSpec> {
    tool_schemas()
        .into_iter()
        .map(|schema| ToolSpec {
            name: schema.name.to_string(),
            description: schema.description.to_string(),
            parameters: schema.parameters,
        })
        .collect()
}

enum Stop {
    Chat(ChatError),
    Cancelled,
}

/// Runs turns of one session.
pub struct Runner<'a> {
    pub tools: &'a Tools,
    pub session: &'a Session,
    pub chat: &'a dyn ChatClient,
    pub settings: &'a Settings,
    pub runtime: &'a tokio::runtime::Handle,
}

/// The question ids of a session: unique within it.
fn new_question_id() -> String {
    format!("q-{:x}{:04x}", std::process::id(), fastrand::u16(..))
}

impl Runner<'_> {
    fn log(&self, body: EventBody) {
        // The log is the turn's record; if it cannot be written the next
        // append reports it, and the conversation is rebuilt from what is there.
        let _ = self.session.append(body);
    }

    fn end(&self, outcome: Outcome) -> Outcome {
        let _ = self.session.sync();
        let _ = self.session.update_meta(|meta| meta.status = Status::Idle);
        outcome
    }

    fn fail(&self, message: String) -> Outcome {
        self.log(EventBody::Error {
            message: message.clone(),
            ends_turn: true,
        });
        self.end(Outcome::Failed(message))
    }

    fn cancelled(&self, unanswered: &[AssistantToolCall]) -> Outcome {
        for call in unanswered {
            self.log(EventBody::ToolResult {
                call_id: call.id.clone(),
                ok: false,
                output: None,
                error: Some(WireError {
                    kind: ErrorKind::Cancelled,
                    message: "the person cancelled the turn before this call ran".into(),
                }),
            });
        }
        self.log(EventBody::Cancelled {});
        self.end(Outcome::Cancelled)
    }

    /// One model reply, abandoned at once on cancel; retries go in the log.
    fn complete(&self, request: &Request, cancel: &Cancel) -> Result<Reply, Stop> {
        let notify = Arc::new(tokio::sync::Notify::new());
        let wake = notify.clone();
        let listener = cancel.on_cancel(Box::new(move || wake.notify_one()));
        let session = self.session;
        let mut on_event = move |event: StreamEvent| {
            if let StreamEvent::Retry {
                attempt,
                delay_ms,
                reason,
            } = event
            {
                let _ = session.append(EventBody::Retry {
                    attempt,
                    delay_ms,
                    reason,
                });
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

    /// Runs the Stop hooks; `Ok` when all pass, else the feedback for the model.
    fn stop_hooks(&self, call_id: Option<&str>, result: &str) -> Result<(), String> {
        let input = serde_json::json!({
            "session_id": self.session.meta().id,
            "workspace": self.tools.workspace().root().display().to_string(),
            "result": result,
            "stop_hook_active": true,
            "log_path": self.session.log_path().display().to_string(),
        });
        let mut feedback = Vec::new();
        for hook in &self.settings.stop_hooks {
            let run = run_stop_hook(hook, self.tools.workspace().root(), &input);
            self.log(EventBody::Hook {
                call_id: call_id.map(str::to_string),
                command: hook.command.clone(),
                outcome: run.outcome,
                exit_code: run.exit_code,
                stderr: run.stderr.clone(),
            });
            match run.outcome {
                HookOutcome::Pass => {}
                HookOutcome::Block => feedback.push(run.stderr),
                HookOutcome::Error => {
                    self.log(EventBody::error(format!(
                        "the Stop hook {:?} failed ({}); it counts as a block",
                        hook.command,
                        run.exit_code
                            .map_or(run.stderr.trim().to_string(), |code| format!(
                                "exit {code}: {}",
                                run.stderr.trim()
                            ))
                    )));
                    feedback.push(format!(
                        "the Stop hook {:?} failed: {}",
                        hook.command,
                        run.stderr.trim()
                    ));
                }
            }
        }
        if feedback.is_empty() {
            Ok(())
        } else {
            Err(feedback.join("\n"))
        }
    }

    /// Runs one ask to its end.
    pub fn run(&self, ask: &str, person: &mut dyn Person, cancel: &Cancel) -> Outcome {
        let _ = self
            .session
            .update_meta(|meta| meta.status = Status::Running);
        let mut history = match load_log(self.session.log_path()) {
            Ok(loaded) => conversation(&loaded.events),
            Err(error) => return self.fail(format!("the session's log cannot be read: {error}")),
        };
        self.log(EventBody::UserMessage { text: ask.into() });
        history.push(Message::User { text: ask.into() });
        let _ = self.session.sync();
        let workspace = self.tools.workspace().root().to_path_buf();
        let system = system_prompt(&workspace, &self.settings.skills);
        let specs = tool_specs();
        let mut usage = Usage::default();
        let mut blocks = 0;
        for _ in 0..self.settings.step_limit {
            if cancel.is_cancelled() {
                return self.cancelled(&[]);
            }
            let request = Request {
                system: system.clone(),
                messages: history.clone(),
                tools: specs
                    .iter()
                    .map(|spec| ToolSpec {
                        name: spec.name.clone(),
                        description: spec.description.clone(),
                        parameters: spec.parameters.clone(),
                    })
                    .collect(),
                max_tokens: self.settings.max_tokens,
            };
            let reply = match self.complete(&request, cancel) {
                Ok(reply) => reply,
                Err(Stop::Cancelled) => return self.cancelled(&[]),
                Err(Stop::Chat(error)) => {
                    return self.fail(format!("the model {} failed: {error}", self.chat.model()));
                }
            };
            let reply_usage = Usage {
                input_tokens: reply.usage.input_tokens,
                output_tokens: reply.usage.output_tokens,
            };
            usage.add(&reply_usage);
            self.session.count_usage(&reply_usage);
            let calls: Vec<AssistantToolCall> = reply
                .tool_calls
                .iter()
                .map(|call| AssistantToolCall {
                    id: call.id.clone(),
                    name: call.name.clone(),
                    arguments: call.arguments.clone(),
                })
                .collect();
            self.log(EventBody::AssistantMessage {
                text: reply.text.clone(),
                tool_calls: calls.clone(),
                usage: reply_usage,
            });
            history.push(Message::Assistant {
                text: reply.text.clone(),
                tool_calls: reply.tool_calls.clone(),
            });
            if calls.is_empty() {
                match self.stop_hooks(None, &reply.text) {
                    Ok(()) => return self.finished(reply.text, usage),
                    Err(feedback) => {
                        blocks += 1;
                        if blocks >= self.settings.max_stop_blocks {
                            return self.too_many_blocks(blocks);
                        }
                        history.push(Message::User {
                            text: hook_feedback(&feedback),
                        });
                        continue;
                    }
                }
            }
            let mut finished: Option<String> = None;
            for (index, call) in calls.iter().enumerate() {
                if cancel.is_cancelled() {
                    return self.cancelled(&calls[index..]);
                }
                if finished.is_some() {
                    self.log(EventBody::ToolResult {
                        call_id: call.id.clone(),
                        ok: false,
                        output: None,
                        error: Some(WireError {
                            kind: ErrorKind::Cancelled,
                            message: "not run: finish ended the turn first".into(),
                        }),
                    });
                    continue;
                }
                let result = match call.name.as_str() {
                    "ask" => match self.ask(call, person) {
                        Some(result) => result,
                        None => return self.cancelled(&calls[index..]),
                    },
                    "finish" => {
                        let result = self.finish(call);
                        match &result {
                            Ok(output) => {
                                finished = output["result"].as_str().map(str::to_string);
                            }
                            Err(error) if error.kind == ErrorKind::Blocked => {
                                blocks += 1;
                            }
                            Err(_) => {}
                        }
                        result
                    }
                    "use_skill" => self.use_skill(call),
                    _ => self.tool(call, person, cancel),
                };
                let (content, is_error) = result_content(&result);
                history.push(Message::ToolResult {
                    call_id: call.id.clone(),
                    content,
                    is_error,
                });
                if blocks >= self.settings.max_stop_blocks {
                    self.close_rest(&calls[index + 1..]);
                    return self.too_many_blocks(blocks);
                }
            }
            if let Some(text) = finished {
                return self.finished(text, usage);
            }
        }
        self.fail(format!(
            "the turn reached its step limit of {} model replies and was stopped; raise step_limit in config.toml if the task needs more",
            self.settings.step_limit
        ))
    }

    fn close_rest(&self, rest: &[AssistantToolCall]) {
        for call in rest {
            self.log(EventBody::ToolResult {
                call_id: call.id.clone(),
                ok: false,
                output: None,
                error: Some(WireError {
                    kind: ErrorKind::Cancelled,
                    message: "not run: the turn ended first".into(),
                }),
            });
        }
    }

    fn too_many_blocks(&self, blocks: usize) -> Outcome {
        self.fail(format!(
            "the Stop hooks blocked the end of the turn {blocks} times in a row; the turn ends unfinished"
        ))
    }

    fn finished(&self, text: String, usage: Usage) -> Outcome {
        self.log(EventBody::Result {
            text: text.clone(),
            usage,
        });
        self.end(Outcome::Finished(text))
    }

    /// Logs a core tool's call and result, returning the result.
    fn logged(
        &self,
        call: &AssistantToolCall,
        arguments: serde_json::Value,
        result: Result<serde_json::Value, WireError>,
    ) -> Result<serde_json::Value, WireError> {
        self.log_result(call, &result, Some(arguments));
        result
    }

    fn log_result(
        &self,
        call: &AssistantToolCall,
        result: &Result<serde_json::Value, WireError>,
        arguments: Option<serde_json::Value>,
    ) {
        if let Some(arguments) = arguments {
            self.log(EventBody::ToolCall {
                call_id: call.id.clone(),
                name: call.name.clone(),
                arguments,
            });
        }
        let (ok, output, error) = match result {
            Ok(output) => (true, Some(output.clone()), None),
            Err(error) => (false, None, Some(error.clone())),
        };
        self.log(EventBody::ToolResult {
            call_id: call.id.clone(),
            ok,
            output,
            error,
        });
    }

    /// The model's arguments as JSON; text that is not JSON is kept as a string.
    fn arguments(call: &AssistantToolCall) -> Result<serde_json::Value, serde_json::Value> {
        let text = if call.arguments.trim().is_empty() {
            "{}"
        } else {
            &call.arguments
        };
        serde_json::from_str(text).map_err(|_| serde_json::Value::String(call.arguments.clone()))
    }

    fn parse<T: serde::de::DeserializeOwned>(
        call: &AssistantToolCall,
    ) -> (serde_json::Value, Result<T, WireError>) {
        match Self::arguments(call) {
            Ok(value) => {
                let parsed = serde_json::from_value(value.clone()).map_err(|error| WireError {
                    kind: ErrorKind::InvalidArgs,
                    message: format!("bad arguments for {}: {error}", call.name),
                });
                (value, parsed)
            }
            Err(raw) => (
                raw,
                Err(WireError {
                    kind: ErrorKind::InvalidArgs,
                    message: format!("the arguments for {} are not valid JSON", call.name),
                }),
            ),
        }
    }

    fn ask(
        &self,
        call: &AssistantToolCall,
        person: &mut dyn Person,
    ) -> Option<Result<serde_json::Value, WireError>> {
        let (arguments, parsed) = Self::parse::<AskArgs>(call);
        let args = match parsed {
            Ok(args) => args,
            Err(error) => return Some(self.logged(call, arguments, Err(error))),
        };
        self.log(EventBody::ToolCall {
            call_id: call.id.clone(),
            name: call.name.clone(),
            arguments,
        });
        let id = new_question_id();
        self.log(EventBody::Question {
            id: id.clone(),
            call_id: call.id.clone(),
            question: args.question.clone(),
        });
        let _ = self.session.sync();
        let _ = self
            .session
            .update_meta(|meta| meta.status = Status::Waiting);
        let reply = person.question(&id, &args.question);
        let _ = self
            .session
            .update_meta(|meta| meta.status = Status::Running);
        let reply = reply?;
        self.log(EventBody::Reply {
            question: id,
            reply: reply.clone(),
        });
        let result = Ok(serde_json::json!({ "reply": reply }));
        self.log_result(call, &result, None);
        let _ = self.session.sync();
        Some(result)
    }

    fn finish(&self, call: &AssistantToolCall) -> Result<serde_json::Value, WireError> {
        let (arguments, parsed) = Self::parse::<FinishArgs>(call);
        let args = match parsed {
            Ok(args) => args,
            Err(error) => return self.logged(call, arguments, Err(error)),
        };
        self.log(EventBody::ToolCall {
            call_id: call.id.clone(),
            name: call.name.clone(),
            arguments,
        });
        let result = match self.stop_hooks(Some(&call.id), &args.result) {
            Ok(()) => Ok(serde_json::json!({ "result": args.result })),
            Err(feedback) => Err(WireError {
                kind: ErrorKind::Blocked,
                message: format!(
                    "a Stop hook did not let the turn end yet; fix what it says, then call finish again:\n{feedback}"
                ),
            }),
        };
        self.log_result(call, &result, None);
        result
    }

    fn use_skill(&self, call: &AssistantToolCall) -> Result<serde_json::Value, WireError> {
        let (arguments, parsed) = Self::parse::<UseSkillArgs>(call);
        let result = parsed.and_then(|args| {
            skills::body(&self.settings.skills, &args.name)
                .map(|body| serde_json::json!({ "name": args.name, "instructions": body }))
                .map_err(|message| WireError {
                    kind: ErrorKind::NotFound,
                    message,
                })
        });
        self.logged(call, arguments, result)
    }

    /// One of the six tools, through the gate.
    fn tool(
        &self,
        call: &AssistantToolCall,
        person: &mut dyn Person,
        cancel: &Cancel,
    ) -> Result<serde_json::Value, WireError> {
        let parsed = Self::arguments(call)
            .map_err(|raw| {
                (
                    raw,
                    WireError {
                        kind: ErrorKind::InvalidArgs,
                        message: format!("the arguments for {} are not valid JSON", call.name),
                    },
                )
            })
            .and_then(|value| {
                ToolCall::parse(&call.name, value.clone()).map_err(|error| (value, error))
            });
        match parsed {
            Ok(tool_call) => Gate::new(self.tools, self.session)
                .call(&call.id, &tool_call, &mut Asker(person), cancel)
                .map(|output| serde_json::to_value(output).unwrap_or_default()),
            Err((arguments, error)) => self.logged(call, arguments, Err(error)),
        }
    }
}

/// The skills a session sees, from the standard folders and the config's.
pub fn find_skills(workspace: &Path, home: &Path, extra: &[PathBuf]) -> Vec<Skill> {
    skills::discover(&skills::folders(workspace, home, extra))
}
