//! Wicket's events as ACP: each log event becomes the `session/update`s an
//! editor shows, and each card a `session/request_permission`. The same
//! mapping serves a live turn and the replay of `session/load`, so an
//! editor sees a loaded session as it saw it happen.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use agent_client_protocol::v1::schema::Cost;
use agent_client_protocol::v1::schema::{
    AvailableCommand, AvailableCommandInput, AvailableCommandsUpdate, ContentChunk, Diff,
    PermissionOption, PermissionOptionKind, RequestPermissionOutcome, RequestPermissionRequest,
    SessionId, SessionUpdate, ToolCall, ToolCallContent, ToolCallLocation, ToolCallStatus,
    ToolCallUpdate, ToolCallUpdateFields, ToolKind, UnstructuredCommandInput, UsageUpdate,
};
use wicket_protocol::event::{
    AnswerEvent, AssistantMessageEvent, CancelledEvent, CardEvent, ErrorEvent, QuestionEvent,
    QueuedEvent, ReplyEvent, ResultEvent, RetryEvent, SessionStartedEvent, ToolCallEvent,
    ToolResultEvent, TurnEndedEvent, UserMessageEvent,
};
use wicket_protocol::summary::Tone;
use wicket_protocol::text::{shell_words, visible, visible_line};
use wicket_protocol::{
    Answer, CallId, Card, CardId, CardKind, Event, EventBody, NetCard, RunCard, RunSource,
    ToolOutput, WireError,
};

/// The option ids a permission request offers, one per answer.
pub const ALLOW_ONCE: &str = "allow_once";
/// See [`ALLOW_ONCE`].
pub const ALLOW_SESSION: &str = "allow_session";
/// See [`ALLOW_ONCE`].
pub const ALLOW_ALWAYS: &str = "allow_always";
/// See [`ALLOW_ONCE`].
pub const DENY: &str = "deny";
/// See [`ALLOW_ONCE`]: a run card's preview.
pub const PREVIEW: &str = "preview";
/// See [`ALLOW_ONCE`]: an effects card's answers.
pub const APPLY: &str = "apply";
/// See [`ALLOW_ONCE`].
pub const DISCARD: &str = "discard";

/// The options a card offers. Wicket's allow_session ends with the session,
/// so its option says so; "Always allow" saves the card's rule (and says which).
pub fn options(card: &wicket_protocol::Card) -> Vec<PermissionOption> {
    if let CardKind::Effects(_) = card.kind {
        return vec![
            PermissionOption::new(
                APPLY,
                "Apply these changes",
                PermissionOptionKind::AllowOnce,
            ),
            PermissionOption::new(DISCARD, "Discard them", PermissionOptionKind::RejectOnce),
        ];
    }
    let mut options = vec![
        PermissionOption::new(ALLOW_ONCE, "Allow once", PermissionOptionKind::AllowOnce),
        PermissionOption::new(
            ALLOW_SESSION,
            "Allow for this session",
            PermissionOptionKind::AllowAlways,
        ),
    ];
    if card.always.is_some() {
        options.push(PermissionOption::new(
            ALLOW_ALWAYS,
            "Always allow",
            PermissionOptionKind::AllowAlways,
        ));
    }
    if Answer::Preview.fits(&card.kind) {
        options.push(PermissionOption::new(
            PREVIEW,
            "Preview: run it over a copy, then apply or discard",
            PermissionOptionKind::AllowOnce,
        ));
    }
    options.push(PermissionOption::new(
        DENY,
        "Deny",
        PermissionOptionKind::RejectOnce,
    ));
    options
}

/// The answer a permission outcome gives: the chosen option's, and deny for
/// a cancelled request or an option Wicket did not offer.
pub fn answer(outcome: &RequestPermissionOutcome) -> Answer {
    match outcome {
        RequestPermissionOutcome::Selected(selected) => match &*selected.option_id.0 {
            ALLOW_ONCE => Answer::AllowOnce,
            ALLOW_SESSION => Answer::AllowSession,
            ALLOW_ALWAYS => Answer::AllowAlways,
            PREVIEW => Answer::Preview,
            APPLY => Answer::Apply,
            DISCARD => Answer::Discard,
            _ => Answer::Deny,
        },
        // Cancelled, and whatever a later schema adds: never an allow.
        _ => Answer::Deny,
    }
}

/// The kind of tool an editor shows for a call.
pub fn tool_kind(name: &str) -> ToolKind {
    match name {
        "read_file" | "list_dir" | "use_skill" => ToolKind::Read,
        "grep" => ToolKind::Search,
        "write_file" | "search_replace" => ToolKind::Edit,
        "run" => ToolKind::Execute,
        _ => ToolKind::Other,
    }
}

/// Calls that are not shown as tool calls: `ask` is a message and the end
/// of the prompt, `finish` is the turn's result.
fn shown_as_tool(name: &str) -> bool {
    !matches!(name, "ask" | "finish")
}

fn text_of(arguments: &serde_json::Value, key: &str) -> Option<String> {
    arguments.get(key)?.as_str().map(str::to_string)
}

/// A one-line title: the tool and what it works on.
pub fn title(name: &str, arguments: &serde_json::Value) -> String {
    let what = wicket_protocol::call_summary(name, arguments);
    if what.is_empty() {
        visible_line(name)
    } else {
        visible_line(&format!("{name} {what}"))
    }
}

/// What one session's events have shown so far.
pub struct Mapper {
    workspace: PathBuf,
    replay: bool,
    /// The calls shown as tool calls (not ask or finish).
    calls: HashSet<CallId>,
    /// What a write card showed, for the call's final update: the old and
    /// new text live, the card's diff in a replay (the old text is gone).
    diffs: HashMap<CallId, ToolCallContent>,
    last_text: String,
    /// How much of the reply being streamed was sent in pieces.
    streamed: usize,
    /// The turn's replies so far: their tokens, and their cost where every
    /// one's price is known.
    turn: wicket_protocol::Usage,
    /// The call each open card is for.
    cards: HashMap<CardId, CallId>,
}

impl Mapper {
    /// A mapper for a session in `workspace`; `replay` for `session/load`,
    /// which also shows what the person said.
    pub fn new(workspace: &Path, replay: bool) -> Mapper {
        Mapper {
            workspace: workspace.to_path_buf(),
            replay,
            calls: HashSet::new(),
            diffs: HashMap::new(),
            last_text: String::new(),
            streamed: 0,
            turn: wicket_protocol::Usage::default(),
            cards: HashMap::new(),
        }
    }

    /// A path as the editor wants it: absolute.
    fn absolute(&self, path: &str) -> PathBuf {
        let path = Path::new(path);
        if path.is_absolute() {
            path.to_path_buf()
        } else {
            self.workspace.join(path)
        }
    }

    fn location(&self, name: &str, arguments: &serde_json::Value) -> Option<PathBuf> {
        let key = match name {
            "read_file" | "write_file" | "search_replace" | "grep" | "list_dir" => "path",
            "run" => "cwd",
            _ => return None,
        };
        match text_of(arguments, key) {
            Some(path) => Some(self.absolute(&path)),
            None if matches!(name, "run" | "list_dir") => Some(self.workspace.clone()),
            None => None,
        }
    }

    /// A piece of the reply as it streams in; the reply's whole text is
    /// then not sent again.
    pub fn delta(&mut self, text: &str) -> SessionUpdate {
        self.streamed += text.len();
        SessionUpdate::AgentMessageChunk(ContentChunk::new(text.to_string().into()))
    }

    /// The window's use after a reply, and what the session has cost so
    /// far (where prices are known): `None` when the window is not known.
    fn usage_update(&mut self, usage: &wicket_protocol::Usage) -> Option<SessionUpdate> {
        self.turn.add(usage);
        let used = usage.input_tokens.saturating_add(usage.output_tokens);
        let percent = usage
            .context_used_percent
            .filter(|percent| *percent > 0.0)?;
        let size = (used as f64 * 100.0 / percent).round() as u64;
        let mut update = UsageUpdate::new(used, size);
        if let Some(spent) = self.turn.cost_usd {
            update = update.cost(Cost::new(spent, "USD"));
        }
        Some(SessionUpdate::UsageUpdate(update))
    }

    /// The turn's tokens, for the prompt's response (Harbor records them).
    pub fn turn_usage(&self) -> agent_client_protocol::v1::schema::Usage {
        let turn = &self.turn;
        agent_client_protocol::v1::schema::Usage::new(
            turn.input_tokens.saturating_add(turn.output_tokens),
            turn.uncached_input_tokens(),
            turn.output_tokens,
        )
        .cached_read_tokens(Some(turn.cache_read_input_tokens))
        .cached_write_tokens(Some(turn.cache_creation_input_tokens))
    }

    /// How many bytes of the reply being streamed were sent in pieces.
    pub fn streamed_bytes(&self) -> usize {
        self.streamed
    }

    /// The updates `event` becomes.
    // One flat match with an arm per event kind, the one table of what ACP sends for each; past 80 lines because the match is exhaustive (a new kind is a compile error here).
    pub fn updates(&mut self, event: &Event) -> Vec<SessionUpdate> {
        let message =
            |text: String| SessionUpdate::AgentMessageChunk(ContentChunk::new(text.into()));
        let thought =
            |text: String| SessionUpdate::AgentThoughtChunk(ContentChunk::new(text.into()));
        match &event.body {
            EventBody::SessionStarted(SessionStartedEvent { .. }) => Vec::new(),
            EventBody::Answer(AnswerEvent { card, answer, .. }) => {
                // Allowed: the call is under way.
                match (self.cards.remove(card), answer) {
                    (
                        Some(call_id),
                        Answer::AllowOnce | Answer::AllowSession | Answer::AllowAlways,
                    ) => {
                        vec![SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                            call_id.to_string(),
                            ToolCallUpdateFields::new().status(ToolCallStatus::InProgress),
                        ))]
                    }
                    _ => Vec::new(),
                }
            }
            EventBody::UserMessage(UserMessageEvent { text, .. })
            | EventBody::Queued(QueuedEvent { text })
                if self.replay =>
            {
                vec![SessionUpdate::UserMessageChunk(ContentChunk::new(
                    text.clone().into(),
                ))]
            }
            EventBody::UserMessage(UserMessageEvent { .. })
            | EventBody::Queued(QueuedEvent { .. }) => Vec::new(),
            EventBody::AssistantMessage(AssistantMessageEvent { text, usage, .. }) => {
                let streamed = std::mem::take(&mut self.streamed);
                let mut updates: Vec<SessionUpdate> = usage
                    .as_ref()
                    .and_then(|usage| self.usage_update(usage))
                    .into_iter()
                    .collect();
                if text.is_empty() {
                    return updates;
                }
                self.last_text = text.clone();
                // What the pieces did not bring (a piece lost to a slow
                // reader), else nothing: the text comes once.
                if let Some(rest) = text.get(streamed..).filter(|rest| !rest.is_empty()) {
                    updates.insert(0, message(rest.to_string()));
                }
                updates
            }
            EventBody::ToolCall(ToolCallEvent {
                call_id,
                name,
                arguments,
                ..
            }) => {
                if !shown_as_tool(name) {
                    return Vec::new();
                }
                let path = self.location(name, arguments);
                let mut call = ToolCall::new(call_id.to_string(), title(name, arguments))
                    .kind(tool_kind(name))
                    .status(ToolCallStatus::Pending)
                    .raw_input(arguments.clone());
                if let Some(path) = &path {
                    call = call.locations(vec![ToolCallLocation::new(path.clone())]);
                }
                self.calls.insert(call_id.clone());
                vec![SessionUpdate::ToolCall(call)]
            }
            EventBody::Card(CardEvent { call_id, card, .. }) => {
                // A live card becomes a permission request (the agent sends
                // it); in a replay the result says what became of it. A
                // write card's text is kept for the call's final update.
                if let CardKind::Write(write) = &card.kind
                    && self.replay
                {
                    self.diffs
                        .insert(call_id.clone(), write.diff.clone().into());
                }
                if self.calls.contains(call_id) {
                    self.cards.insert(card.id.clone(), call_id.clone());
                }
                Vec::new()
            }
            EventBody::ToolResult(ToolResultEvent { call_id, result }) => {
                self.result(call_id, result)
            }
            EventBody::Question(QuestionEvent { question, .. }) => {
                self.last_text = question.clone();
                vec![message(question.clone())]
            }
            EventBody::Reply(ReplyEvent { reply, .. }) if self.replay => {
                vec![SessionUpdate::UserMessageChunk(ContentChunk::new(
                    reply.clone().into(),
                ))]
            }
            EventBody::Reply(ReplyEvent { .. }) => Vec::new(),
            EventBody::Result(ResultEvent { text, .. }) => {
                if text.is_empty() || *text == self.last_text {
                    return Vec::new();
                }
                self.last_text = text.clone();
                vec![message(text.clone())]
            }
            EventBody::Cancelled(CancelledEvent {}) if !self.replay => Vec::new(),
            EventBody::Error(ErrorEvent { ends_turn, .. }) if *ends_turn && !self.replay => {
                // A live turn's last error is the prompt's JSON-RPC error.
                Vec::new()
            }
            // The prompt's response says how it ended.
            EventBody::TurnEnded(TurnEndedEvent { .. }) => Vec::new(),
            // What the person must read is a message; what happened on the
            // way is a thought. The words are the protocol's, as in every front end.
            body => match body.summary() {
                Some(summary)
                    if summary.tone == Tone::Quiet
                        || matches!(body, EventBody::Retry(RetryEvent { .. })) =>
                {
                    vec![thought(visible(&summary.text))]
                }
                Some(summary) => vec![message(visible(&summary.text))],
                None => Vec::new(),
            },
        }
    }

    fn result(
        &mut self,
        call_id: &CallId,
        result: &Result<ToolOutput, WireError>,
    ) -> Vec<SessionUpdate> {
        if !self.calls.contains(call_id) {
            return Vec::new();
        }
        let diff = self.diffs.remove(call_id);
        let content: Vec<ToolCallContent> = match (result, diff) {
            (Ok(ToolOutput::Write(_)), Some(shown)) => vec![shown],
            (Ok(output), _) => vec![output_text(output).into()],
            (Err(error), _) => {
                vec![format!("{}: {}", error.kind.as_str(), error.message).into()]
            }
        };
        let mut fields = ToolCallUpdateFields::new()
            .status(match result {
                Ok(_) => ToolCallStatus::Completed,
                Err(_) => ToolCallStatus::Failed,
            })
            .content(content);
        // The raw output is a courtesy beside the text above: a value that
        // cannot be encoded is left out, never sent as `null`.
        if let Ok(Ok(raw)) = result.as_ref().map(serde_json::to_value) {
            fields = fields.raw_output(raw);
        }
        vec![SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
            call_id.to_string(),
            fields,
        ))]
    }

    /// The permission request for a live card on `call_id`. For a write,
    /// `old_text` is the file as it is now (the write waits for the answer),
    /// and the request and the call's final update carry the diff.
    pub fn permission(
        &mut self,
        session: &SessionId,
        call_id: &CallId,
        card: &Card,
        old_text: Option<String>,
        proposed: Option<&str>,
    ) -> RequestPermissionRequest {
        let mut fields = ToolCallUpdateFields::new()
            .status(ToolCallStatus::Pending)
            .kind(tool_kind(&card.tool));
        let mut content: Vec<ToolCallContent> = Vec::new();
        match &card.kind {
            CardKind::Write(write) => {
                let path = self.absolute(&write.path);
                fields = fields.title(visible_line(&format!(
                    "{} {}{}",
                    card.tool,
                    write.path,
                    write.path_note()
                )));
                let shown = &mut content;
                let content = match proposed {
                    Some(proposed) => {
                        let diff = ToolCallContent::Diff(
                            Diff::new(path.clone(), proposed.to_string()).old_text(old_text),
                        );
                        self.diffs.insert(call_id.clone(), diff.clone());
                        diff
                    }
                    None => write.diff.clone().into(),
                };
                shown.push(content);
                fields = fields.locations(vec![ToolCallLocation::new(path)]);
            }
            CardKind::OutsideRead(read) => {
                fields = fields
                    .title(visible_line(&format!(
                        "{} {}{}",
                        card.tool,
                        read.path,
                        wicket_protocol::OUTSIDE_WORKSPACE
                    )))
                    .locations(vec![ToolCallLocation::new(PathBuf::from(&read.path))]);
            }
            CardKind::Run(run) => fields = run_fields(run, fields, &mut content),
            CardKind::Mcp(mcp) => {
                let mut said = mcp.arguments_text.clone();
                if let Some(annotations) = &mcp.annotations {
                    said.push_str(&format!(
                        "\nThe server says (a claim, not a permission): {annotations}"
                    ));
                }
                content.push(said.into());
                fields = fields
                    .title(visible_line(&format!("MCP {} {}", mcp.server, card.tool)))
                    .raw_input(mcp.arguments.clone());
            }
            CardKind::Net(net) => fields = net_fields(net, fields, &mut content),
            CardKind::Effects(effects) => fields = effects_fields(effects, fields, &mut content),
            CardKind::Plan(plan) => {
                content.push(visible(&plan.plan).into());
                fields = fields.title("Approve this plan (then every tool is offered)");
            }
        }
        card_notes(card, &mut content);
        fields = task_title(card, fields);
        if !content.is_empty() {
            fields = fields.content(content);
        }
        RequestPermissionRequest::new(
            session.clone(),
            ToolCallUpdate::new(call_id.to_string(), fields),
            options(card),
        )
    }
}

/// A sub-task's card comes as its parent session's request, its title
/// naming the sub-task first.
fn task_title(card: &Card, mut fields: ToolCallUpdateFields) -> ToolCallUpdateFields {
    let Some(task) = &card.task else {
        return fields;
    };
    let title = fields.title.take().unwrap_or_else(|| card.tool.clone());
    fields.title(visible_line(&format!(
        "sub-task: {}: {title}",
        task.description
    )))
}

/// An effects card's title (what ran, how many changes) and each change with its diff.
fn effects_fields(
    effects: &wicket_protocol::EffectsCard,
    fields: ToolCallUpdateFields,
    content: &mut Vec<ToolCallContent>,
) -> ToolCallUpdateFields {
    for effect in &effects.changes {
        content.push(
            visible(&format!(
                "{} {}{}\n{}",
                effect.change.as_str(),
                effect.path,
                effect.details(),
                effect.diff
            ))
            .into(),
        );
    }
    if !effects.wanted_hosts.is_empty() {
        content.push(
            visible_line(&format!(
                "it wanted to reach (a preview has no network): {}",
                effects.wanted_hosts.join(", ")
            ))
            .into(),
        );
    }
    fields.title(visible_line(&format!(
        "preview of {}: {} change(s), not applied yet",
        shell_words(&effects.argv),
        effects.changes.len()
    )))
}

/// What every card says below its own text: a checkpoint still being
/// taken, what a rewind could not bring back, and what "Always allow" saves.
fn card_notes(card: &Card, content: &mut Vec<ToolCallContent>) {
    // What a rewind could not bring back, or a checkpoint still being taken.
    if let Some(walking) = &card.checkpointing {
        content.push(visible_line(walking).into());
    }
    if let Some(missed) = &card.no_checkpoint {
        content.push(visible_line(&format!("no checkpoint: {missed}")).into());
    }
    // What "Always allow" would save, where the editor shows the call.
    if let Some(always) = &card.always {
        content.push(
            visible_line(&format!(
                "Always allow saves the rule: {}",
                always.describe()
            ))
            .into(),
        );
    }
}

/// A run card's title, kind, raw input and text (where it runs, in what sandbox).
fn run_fields(
    run: &RunCard,
    fields: ToolCallUpdateFields,
    content: &mut Vec<ToolCallContent>,
) -> ToolCallUpdateFields {
    let mut said = format!("in {}; sandbox: {}", run.cwd, run.sandbox.mode.as_str());
    match run.network {
        wicket_protocol::Network::Off => {}
        wicket_protocol::Network::Proxied => {
            said.push_str("; network: through Wicket, host by host")
        }
        wicket_protocol::Network::Direct => {
            said.push_str("; DIRECT network: any host, not through Wicket")
        }
    }
    if run.git {
        said.push_str(&format!("; git: {}", wicket_protocol::GIT_WRITE_WARNING));
    }
    if !run.read.is_empty() {
        said.push_str(&format!("; also reads: {}", run.read.join(", ")));
    }
    if let Some(managed) = &run.managed {
        said.push_str(&format!("; {managed}"));
    }
    if run.sandbox.complete {
        said.push_str(&format!("\n{}", run.sandbox.summary));
    } else {
        if let Some(note) = &run.sandbox.note {
            said.push_str(&format!("; {note}"));
        }
        for layer in &run.sandbox.layers {
            said.push_str(&format!("\n· {layer}"));
        }
    }
    let who = match run.source {
        RunSource::Tool => "run",
        RunSource::Hook => "a hook of the workspace's:",
        RunSource::Mcp => "start the workspace's MCP server:",
    };
    content.push(said.into());
    let mut raw = serde_json::json!({ "argv": run.argv, "cwd": run.cwd });
    if !run.read.is_empty() {
        raw["read"] = serde_json::json!(run.read);
    }
    fields
        .title(format!("{who} {}", shell_words(&run.argv)))
        .kind(ToolKind::Execute)
        .raw_input(raw)
}

/// A net card's title (the host), kind and text (who asks, and whether the
/// name is a local address).
fn net_fields(
    net: &NetCard,
    fields: ToolCallUpdateFields,
    content: &mut Vec<ToolCallContent>,
) -> ToolCallUpdateFields {
    let mut said = match &net.server {
        Some(server) => format!("the MCP server {server} wants to reach {}", net.target()),
        None => format!(
            "`{}` wants to reach {}",
            shell_words(&net.argv),
            net.target()
        ),
    };
    if net.local {
        said.push_str("; it resolves to a local address (this machine or your network)");
    }
    if !net.addresses.is_empty() {
        said.push_str(&format!(" ({})", net.addresses.join(", ")));
    }
    content.push(visible_line(&said).into());
    fields
        .title(visible_line(&format!("reach {}", net.target())))
        .kind(ToolKind::Fetch)
        .raw_input(serde_json::json!({ "host": net.host, "port": net.port }))
}

/// The slash commands Wicket offers an editor.
pub fn commands() -> SessionUpdate {
    SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(vec![
        AvailableCommand::new(
            "rewind",
            "Put the workspace's files back to how they were before the last turn that changed them \
             (or before event SEQ); shows what changes and asks first. `undo` takes the last rewind back",
        )
        .input(AvailableCommandInput::Unstructured(
            UnstructuredCommandInput::new("empty, SEQ or undo"),
        )),
    ]))
}

/// The option of a rewind's permission request that rewinds.
pub const REWIND: &str = "rewind";

/// A rewind asked as a permission request: the plan is its content.
pub fn rewind_request(session: &SessionId, seq: u64, plan: &[String]) -> RequestPermissionRequest {
    let fields = ToolCallUpdateFields::new()
        .status(ToolCallStatus::Pending)
        .kind(ToolKind::Edit)
        .title(format!("Rewind the files to before event {seq}"))
        .content(vec![plan.join("\n").into()]);
    RequestPermissionRequest::new(
        session.clone(),
        ToolCallUpdate::new(format!("rewind-{seq}"), fields),
        vec![
            PermissionOption::new(
                REWIND,
                "Rewind these files",
                PermissionOptionKind::AllowOnce,
            ),
            PermissionOption::new(
                DENY,
                "Keep the files as they are",
                PermissionOptionKind::RejectOnce,
            ),
        ],
    )
}

/// What a call's output says in an editor: a read's text, a run's output.
fn output_text(output: &ToolOutput) -> String {
    match output {
        ToolOutput::ReadFile(read) => read.content.clone(),
        ToolOutput::Run(run) => {
            let mut text = String::new();
            for stream in [&run.stdout, &run.stderr] {
                text.push_str(stream);
                if !text.is_empty() && !text.ends_with('\n') {
                    text.push('\n');
                }
            }
            let end = match (run.exit_code, run.signal, run.timed_out) {
                (_, _, true) => "timed out".to_string(),
                (Some(code), _, _) => format!("exit code {code}"),
                (None, Some(signal), _) => format!("killed by signal {signal}"),
                (None, None, false) => "ended".to_string(),
            };
            for line in run.net_lines() {
                text.push_str(&format!("[{line}]\n"));
            }
            format!("{text}[{end}, {} ms]", run.duration_ms)
        }
        ToolOutput::Mcp(mcp) => mcp.model_text(),
        ToolOutput::Task(task) => format!(
            "{}\n[sub-task {}: {}]",
            task.result,
            task.task.session,
            wicket_protocol::Usage::line(task.usage.as_ref())
        ),
        ToolOutput::Preview(_)
        | ToolOutput::Plan(_)
        | ToolOutput::Grep(_)
        | ToolOutput::ListDir(_)
        | ToolOutput::Write(_)
        | ToolOutput::Reply(_)
        | ToolOutput::Finish(_)
        | ToolOutput::Skill(_) => serde_json::to_string_pretty(output)
            .unwrap_or_else(|error| format!("(the result could not be shown: {error})")),
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod usage_tests {
    use super::*;

    fn reply(usage: wicket_protocol::Usage) -> Event {
        Event {
            seq: 1,
            ts: String::new(),
            body: EventBody::AssistantMessage(AssistantMessageEvent {
                text: "hi".into(),
                tool_calls: Vec::new(),
                usage: Some(usage),
                stop_reason: None,
            }),
        }
    }

    #[test]
    fn each_reply_says_how_full_the_window_is_and_what_the_session_cost() {
        let mut mapper = Mapper::new(Path::new("/ws"), false);
        let usage = wicket_protocol::Usage {
            input_tokens: 900,
            output_tokens: 100,
            cost_usd: Some(0.01),
            context_used_percent: Some(10.0),
            ..wicket_protocol::Usage::default()
        };
        let first = serde_json::to_value(mapper.updates(&reply(usage))).unwrap();
        assert_eq!(first[0]["sessionUpdate"], "agent_message_chunk", "{first}");
        assert_eq!(first[1]["sessionUpdate"], "usage_update", "{first}");
        assert_eq!(first[1]["used"], 1000);
        assert_eq!(first[1]["size"], 10000);
        assert_eq!(first[1]["cost"]["currency"], "USD");
        let second = serde_json::to_value(mapper.updates(&reply(usage))).unwrap();
        let spent = second[1]["cost"]["amount"].as_f64().unwrap();
        assert!(
            (spent - 0.02).abs() < 1e-9,
            "the cost is the session's so far: {second}"
        );
        let unknown = wicket_protocol::Usage {
            context_used_percent: None,
            ..usage
        };
        let quiet = serde_json::to_value(mapper.updates(&reply(unknown))).unwrap();
        assert_eq!(
            quiet.as_array().unwrap().len(),
            1,
            "no window, no usage update: {quiet}"
        );
    }
}
