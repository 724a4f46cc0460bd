//! `wicket acp`: Wicket as an agent an editor hosts over the Agent Client
//! Protocol (v1, JSON-RPC on stdin and stdout), on the official SDK and over
//! the same [`Manager`] the server and `wicket exec` use. A session made here
//! is an ordinary Wicket session: its log, meta.json and cards are the same.
//!
//! Each card becomes a `session/request_permission` ([`map::options`]); a
//! question ends the prompt turn, and the editor's next prompt is the reply.
//! Stdout is the protocol's: everything else goes to stderr.

pub mod map;
pub mod transport;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, CancelNotification, ContentBlock, ContentChunk, EmbeddedResourceResource,
    Implementation, InitializeRequest, InitializeResponse, LoadSessionRequest, LoadSessionResponse,
    McpCapabilities, McpServer, NewSessionRequest, NewSessionResponse, PromptCapabilities,
    PromptRequest, PromptResponse, RequestPermissionOutcome, SessionConfigOption,
    SessionConfigOptionCategory, SessionConfigSelectOption, SessionId, SessionMode,
    SessionModeState, SessionNotification, SessionUpdate, SetSessionConfigOptionRequest,
    SetSessionConfigOptionResponse, SetSessionModeRequest, SetSessionModeResponse, StopReason,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Agent, Client, Error};
use wicket_core::manager::{Manager, ManagerError, Open, RewindTo, Sent};
use wicket_mcp::{ServerSpec, Transport};
use wicket_protocol::limits::WRITE_EXISTING_MAX_BYTES;
use wicket_protocol::text::visible_line;
use wicket_protocol::{Answer, Card, CardKind, EventBody, SessionId as Id, TurnOutcome};

use crate::map::Mapper;
use wicket_protocol::event::{CardEvent, ErrorEvent, QuestionEvent};

/// A session opened over this connection.
#[derive(Clone)]
struct Known {
    workspace: PathBuf,
    /// The last event the editor was shown.
    seen: u64,
    /// Wakes a prompt waiting on a permission request when the editor cancels.
    cancelled: Arc<tokio::sync::Notify>,
    /// The editor's mode picker chose `plan`: prompts start in plan mode.
    plan: bool,
}

/// The session modes an editor's picker offers: `default` and `plan`.
const DEFAULT_MODE: &str = "default";
/// See [`DEFAULT_MODE`].
const PLAN_MODE: &str = "plan";

/// The one session option: the model, as Harbor and editors pick it.
const MODEL_OPTION: &str = "model";

/// A harness's `provider/name` as Wicket's `provider:name` (a name that is
/// already `provider:name` is kept as it is).
fn model_string(value: &str) -> String {
    match value.split_once('/') {
        Some((provider, name)) if !provider.contains(':') => format!("{provider}:{name}"),
        _ => value.to_string(),
    }
}

/// Wicket's `provider:name` as the `provider/name` a harness asks for
/// (Harbor's `-m` matches the picker's values by that form).
fn model_value(model: &str) -> String {
    match model.split_once(':') {
        Some((provider, name)) => format!("{provider}/{name}"),
        None => model.to_string(),
    }
}

/// The session's options: its model, picked from the session's own, those
/// the person's config names, and the built-in table's (Harbor picks only
/// among the listed).
fn model_options(model: Option<&str>, listed: &[String]) -> Vec<SessionConfigOption> {
    let current = model.unwrap_or("none");
    let mut names = vec![current];
    for name in listed
        .iter()
        .map(String::as_str)
        .chain(wicket_core::models::BUILT_IN.iter().map(|(name, _)| *name))
    {
        if !names.contains(&name) {
            names.push(name);
        }
    }
    let choices = names
        .iter()
        .map(|name| SessionConfigSelectOption::new(model_value(name), name.to_string()))
        .collect::<Vec<_>>();
    vec![
        SessionConfigOption::select(MODEL_OPTION, "Model", model_value(current), choices)
            .category(SessionConfigOptionCategory::Model),
    ]
}

/// The modes, the current one first named.
fn modes(plan: bool) -> SessionModeState {
    SessionModeState::new(
        if plan { PLAN_MODE } else { DEFAULT_MODE },
        vec![
            SessionMode::new(DEFAULT_MODE, "Default")
                .description("Every tool; each write and command asks you first."),
            SessionMode::new(PLAN_MODE, "Plan").description(
                "The model reads and proposes a plan; once you approve it, every tool.",
            ),
        ],
    )
}

/// The agent's state: the manager and the sessions this editor opened.
struct Acp {
    manager: Arc<Manager>,
    model: Option<String>,
    /// The models the person's config names, offered beside the built-in ones.
    listed: Vec<String>,
    sessions: Mutex<HashMap<String, Known>>,
}

fn session_not_found(id: &SessionId) -> Error {
    agent_client_protocol::v1::schema::Error::session_not_found(id.clone()).into()
}

fn invalid(message: impl Into<String>) -> Error {
    Error::invalid_params().data(serde_json::Value::String(message.into()))
}

fn failed(error: ManagerError) -> Error {
    Error::internal_error().data(serde_json::Value::String(error.to_string()))
}

/// A blocking task that panicked.
fn joined(error: tokio::task::JoinError) -> Error {
    Error::internal_error().data(serde_json::Value::String(error.to_string()))
}

impl Acp {
    fn known(&self) -> std::sync::MutexGuard<'_, HashMap<String, Known>> {
        self.sessions
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn remember(&self, id: &str, workspace: PathBuf, seen: u64) {
        self.known().insert(
            id.to_string(),
            Known {
                workspace,
                seen,
                cancelled: Arc::new(tokio::sync::Notify::new()),
                plan: false,
            },
        );
    }

    /// `session/set_mode`: `plan` or `default`, for the session's next prompts.
    fn set_mode(&self, request: &SetSessionModeRequest) -> Result<(), Error> {
        let plan = match &*request.mode_id.0 {
            PLAN_MODE => true,
            DEFAULT_MODE => false,
            other => {
                return Err(invalid(format!(
                    "there is no mode '{other}'; the modes are {DEFAULT_MODE} and {PLAN_MODE}"
                )));
            }
        };
        match self.known().get_mut(&*request.session_id.0) {
            Some(known) => {
                known.plan = plan;
                Ok(())
            }
            None => Err(session_not_found(&request.session_id)),
        }
    }

    /// The model a session runs with (its own, else `--model`'s).
    fn model_of(&self, id: &SessionId) -> Option<String> {
        let id = Id::from(&*id.0);
        self.manager
            .meta(&id)
            .ok()
            .and_then(|meta| meta.model)
            .or_else(|| self.model.clone())
    }

    /// `session/set_config_option`: `model` (`provider:name`, or a harness's
    /// `provider/name`), for the session's next prompts; the options as they are now.
    fn set_config(
        &self,
        request: &SetSessionConfigOptionRequest,
    ) -> Result<Vec<SessionConfigOption>, Error> {
        if &*request.config_id.0 != MODEL_OPTION {
            return Err(invalid(format!(
                "there is no option '{}'; the one option is {MODEL_OPTION}",
                request.config_id.0
            )));
        }
        let Some(value) = request.value.as_value_id() else {
            return Err(invalid(
                "the model is a name, like anthropic:claude-sonnet-4-5",
            ));
        };
        let model = model_string(&value.0);
        // A model no client can be made for is refused now, not at the next prompt.
        let id = Id::from(&*request.session_id.0);
        self.manager
            .set_model(&id, &model)
            .map_err(|error| invalid(error.to_string()))?;
        Ok(model_options(Some(&model), &self.listed))
    }

    fn new_session(&self, request: &NewSessionRequest) -> Result<SessionId, Error> {
        if !request.cwd.is_absolute() {
            return Err(invalid(format!(
                "cwd '{}' must be an absolute path (the workspace)",
                request.cwd.display()
            )));
        }
        let servers = servers_of(&request.mcp_servers)?;
        let id = self
            .manager
            .open(None, &request.cwd, self.model.as_deref())
            .map_err(|error| invalid(error.to_string()))?;
        self.manager.add_mcp_servers(&id, servers).map_err(failed)?;
        let workspace = PathBuf::from(self.manager.meta(&id).map_err(failed)?.workspace);
        let seen = self
            .manager
            .events_after(&id, 0)
            .map_err(failed)?
            .last()
            .map_or(0, |event| event.seq);
        self.remember(&id, workspace, seen);
        Ok(SessionId::new(id.as_str()))
    }

    /// The session's history as updates, for `session/load`.
    fn load(&self, request: &LoadSessionRequest) -> Result<Vec<SessionNotification>, Error> {
        let id = Id::from(&*request.session_id.0);
        let meta = match self.manager.meta(&id) {
            Ok(meta) => meta,
            Err(ManagerError::NoSuchSession(_)) => {
                return Err(session_not_found(&request.session_id));
            }
            Err(error) => return Err(failed(error)),
        };
        if let Some(model) = &self.model {
            let model = model.clone();
            self.manager
                .open(Some(&id), Path::new(&meta.workspace), Some(&model))
                .map_err(failed)?;
        }
        self.manager
            .add_mcp_servers(&id, servers_of(&request.mcp_servers)?)
            .map_err(failed)?;
        let workspace = PathBuf::from(&meta.workspace);
        let events = self.manager.events_after(&id, 0).map_err(failed)?;
        let mut mapper = Mapper::new(&workspace, true);
        let updates = events
            .iter()
            .flat_map(|event| mapper.updates(event))
            .map(|update| SessionNotification::new(request.session_id.clone(), update))
            .collect();
        self.remember(&id, workspace, events.last().map_or(0, |event| event.seq));
        Ok(updates)
    }

    fn cancel(&self, id: &SessionId) {
        let id = Id::from(&*id.0);
        if let Some(known) = self.known().get(id.as_str()) {
            known.cancelled.notify_waiters();
        }
        // Err only when the session is gone: nothing left to cancel.
        let _ = self.manager.cancel(&id);
    }
}

/// The editor's MCP servers, which join the session's: the editor is the
/// person's own tool, so they start like the home config's (no run card,
/// sandboxed, no provider keys), and no tool of theirs skips its card.
fn servers_of(servers: &[McpServer]) -> Result<Vec<ServerSpec>, Error> {
    let mut specs = Vec::new();
    for server in servers {
        let (name, transport) = match server {
            McpServer::Stdio(stdio) => (
                stdio.name.clone(),
                Transport::Stdio {
                    read: Default::default(),
                    argv: std::iter::once(stdio.command.display().to_string())
                        .chain(stdio.args.iter().cloned())
                        .collect(),
                    env: stdio
                        .env
                        .iter()
                        .map(|var| (var.name.clone(), var.value.clone()))
                        .collect(),
                    cwd: None,
                    network: wicket_protocol::Network::Off,
                    write_git: false,
                },
            ),
            McpServer::Http(http) => (
                http.name.clone(),
                Transport::Http {
                    url: http.url.clone(),
                    headers: http
                        .headers
                        .iter()
                        .map(|header| (header.name.clone(), header.value.clone()))
                        .collect(),
                },
            ),
            _ => {
                return Err(invalid(
                    "only stdio and HTTP MCP servers are supported (initialize says so: mcpCapabilities.sse is false)",
                ));
            }
        };
        if !wicket_mcp::names::valid_server_name(&name) {
            return Err(invalid(format!(
                "the MCP server name '{name}' is not usable: use up to 32 letters, digits, '-' and single '_'s"
            )));
        }
        specs.push(ServerSpec {
            name,
            transport,
            enabled: true,
            enabled_tools: None,
            disabled_tools: Default::default(),
            auto_allow: Default::default(),
            startup_timeout: Duration::from_secs(wicket_mcp::server::DEFAULT_STARTUP_TIMEOUT_S),
            tool_timeout: Duration::from_secs(wicket_mcp::server::DEFAULT_TOOL_TIMEOUT_S),
            from_workspace: false,
            fails: None,
        });
    }
    Ok(specs)
}

/// The prompt as the text of one message: text blocks, linked and embedded
/// resources named (an embedded text resource's content included).
fn prompt_text(prompt: &[ContentBlock]) -> String {
    let mut parts = Vec::new();
    for block in prompt {
        match block {
            ContentBlock::Text(text) => parts.push(text.text.clone()),
            ContentBlock::ResourceLink(link) => {
                parts.push(format!("[{}]({})", link.name, link.uri))
            }
            ContentBlock::Resource(embedded) => match &embedded.resource {
                EmbeddedResourceResource::TextResourceContents(resource) => parts.push(format!(
                    "<context uri=\"{}\">\n{}\n</context>",
                    resource.uri, resource.text
                )),
                _ => parts.push("[an embedded binary resource, not shown]".into()),
            },
            _ => parts.push("[content this agent does not take, not shown]".into()),
        }
    }
    parts.join("\n")
}

/// The file a write card would change, as it is now (the write waits for the
/// answer), read through the resolver like every runtime read of the workspace.
fn current_text(workspace: &Path, card: &Card) -> Option<String> {
    let CardKind::Write(write) = &card.kind else {
        return None;
    };
    let relative = Path::new(&write.path).strip_prefix(workspace).ok()?;
    let opened = wicket_tools::Workspace::open(workspace).ok()?;
    let bytes = opened
        .read_runtime_file(relative, WRITE_EXISTING_MAX_BYTES)
        .ok()??;
    String::from_utf8(bytes).ok()
}

/// Hands a prompt's text to the session: the reply to its open question,
/// or a new message. An open card or a running prompt refuses it.
fn begin(manager: &Manager, id: &Id, text: &str, plan: bool) -> Result<(), Error> {
    let refuse =
        |message: String| Err(Error::invalid_request().data(serde_json::Value::String(message)));
    match manager.open_item(id).map_err(failed)? {
        Some(Open::Question { id: question, .. }) => {
            manager.reply(id, &question, text).map_err(failed)
        }
        Some(Open::Card(card)) => refuse(format!(
            "the card {} is still open; answer its permission request first",
            card.id
        )),
        None if manager.is_running(id).map_err(failed)? => refuse(
            "a prompt is already running in this session; wait for its end, or cancel it".into(),
        ),
        None => match manager.send_with(id, text, plan) {
            Ok(Sent::Started | Sent::Queued) => Ok(()),
            Err(error @ ManagerError::Blocked { .. }) => refuse(error.to_string()),
            Err(error) => Err(failed(error)),
        },
    }
}

/// How the prompt ends, when `body` ends it: at the turn's `turn_ended`
/// (`last_error` is the error that ended it, for the JSON-RPC error), or
/// at a question, since the turn waits for the reply, which is the
/// editor's next prompt.
fn stop_at(body: &EventBody, last_error: &str) -> Option<Result<StopReason, String>> {
    if let EventBody::Question(QuestionEvent { .. }) = body {
        return Some(Ok(StopReason::EndTurn));
    }
    Some(match wicket_core::turn::turn_over(body)? {
        TurnOutcome::Result => Ok(StopReason::EndTurn),
        TurnOutcome::Cancelled => Ok(StopReason::Cancelled),
        TurnOutcome::StepLimit => Ok(StopReason::MaxTurnRequests),
        TurnOutcome::Error | TurnOutcome::Budget | TurnOutcome::Interrupted => {
            Err(last_error.to_string())
        }
    })
}

/// What `/rewind`'s argument asks for, or what it should have been.
fn rewind_to(argument: &str) -> Result<RewindTo, String> {
    match argument {
        "" => Ok(RewindTo::LastTurn),
        "undo" => Ok(RewindTo::Undo),
        seq => seq.parse().map(RewindTo::Seq).map_err(|_| {
            format!(
                "/rewind takes nothing (before the last turn), SEQ (before event SEQ) or undo; not {}",
                visible_line(seq)
            )
        }),
    }
}

/// `/rewind [SEQ|undo]`: the plan as a permission request, then the rewind.
async fn rewind(
    acp: Arc<Acp>,
    cx: ConnectionTo<Client>,
    session: SessionId,
    id: Id,
    argument: &str,
) -> Result<StopReason, Error> {
    let say = |text: String| {
        cx.send_notification(SessionNotification::new(
            session.clone(),
            SessionUpdate::AgentMessageChunk(ContentChunk::new(text.into())),
        ))
    };
    let to = match rewind_to(argument) {
        Ok(to) => to,
        Err(why) => {
            say(why)?;
            return Ok(StopReason::EndTurn);
        }
    };
    let manager = acp.manager.clone();
    let planned = {
        let (manager, id) = (manager.clone(), id.clone());
        tokio::task::spawn_blocking(move || manager.rewind_plan(&id, to))
            .await
            .map_err(joined)?
    };
    let (target, plan) = match planned {
        Ok(planned) => planned,
        Err(error) => {
            say(error.to_string())?;
            return Ok(StopReason::EndTurn);
        }
    };
    if plan.is_empty() {
        say(format!(
            "Nothing to rewind: the files are as they were before event {}.",
            target.seq
        ))?;
        return Ok(StopReason::EndTurn);
    }
    let ask = map::rewind_request(&session, target.seq, &plan.lines());
    let chosen = match cx.send_request(ask).block_task().await {
        Ok(response) => matches!(
            &response.outcome,
            RequestPermissionOutcome::Selected(selected) if &*selected.option_id.0 == map::REWIND
        ),
        Err(_) => false,
    };
    if !chosen {
        say("Nothing changed.".into())?;
        return Ok(StopReason::EndTurn);
    }
    let rewound = {
        let id = id.clone();
        tokio::task::spawn_blocking(move || manager.rewind(&id, RewindTo::Seq(target.seq)))
            .await
            .map_err(joined)?
    };
    match rewound {
        Ok(event) => {
            if let Some(known) = acp.known().get_mut(id.as_str()) {
                known.seen = event.seq;
            }
            let mut mapper = Mapper::new(Path::new(""), false);
            for update in mapper.updates(&event) {
                cx.send_notification(SessionNotification::new(session.clone(), update))?;
            }
            say(" `/rewind undo` takes it back.".into())?;
        }
        Err(error) => say(error.to_string())?,
    }
    Ok(StopReason::EndTurn)
}

/// A reply's pieces were all streamed before it was logged: those not sent
/// yet go now (and no further: the next ones are the next reply's), so its
/// text comes once.
fn rest_of_reply(
    text: &str,
    pieces: &mut tokio::sync::broadcast::Receiver<String>,
    mapper: &mut Mapper,
    cx: &ConnectionTo<Client>,
    session: &SessionId,
) -> Result<(), Error> {
    while mapper.streamed_bytes() < text.len() {
        let Ok(delta) = pieces.try_recv() else {
            break;
        };
        cx.send_notification(SessionNotification::new(
            session.clone(),
            mapper.delta(&delta),
        ))?;
    }
    Ok(())
}

/// The editor's answer to a card: a deny when it cannot say, or when the
/// turn was cancelled first.
async fn ask_editor(
    cx: &ConnectionTo<Client>,
    ask: agent_client_protocol::v1::schema::RequestPermissionRequest,
    cancelled: &tokio::sync::Notify,
) -> Answer {
    tokio::select! {
        response = cx.send_request(ask).block_task() => match response {
            Ok(response) => map::answer(&response.outcome),
            Err(_) => Answer::Deny,
        },
        () = cancelled.notified() => Answer::Deny,
    }
}

/// Gives the editor's `answer` to the card. One the card does not take
/// (an editor that sent an option it was not offered) is a deny that says
/// so, for the model and the log: the card never stays open with no one
/// left to answer it. A card no longer open (the turn was cancelled) takes
/// nothing.
fn answer_card(manager: &Manager, id: &Id, card: &wicket_protocol::CardId, answer: Answer) {
    let Err(ManagerError::BadAnswer(why)) = manager.answer(id, card, answer) else {
        return;
    };
    let denied = wicket_core::manager::Answered {
        answer: Answer::Deny,
        widened: None,
        reason: Some(format!(
            "the editor answered {}, which this card does not take ({why}); denied",
            answer.as_str()
        )),
    };
    match manager.answer_with(id, card, denied) {
        // Closed meanwhile (the turn was cancelled): nothing is left to answer.
        Ok(()) | Err(ManagerError::NotOpen { .. } | ManagerError::NoSuchSession(_)) => {}
        Err(error) => eprintln!("wicket acp: the card {card} could not be denied: {error}"),
    }
}

/// One `session/prompt`, to the end of its turn (or of the turn's part that
/// ends with a question).
/// The prompt's response to a turn that ended `end`: its stop reason and
/// tokens, or the error it ended with.
fn response(end: Result<StopReason, String>, mapper: &Mapper) -> Result<PromptResponse, Error> {
    end.map(|stop| PromptResponse::new(stop).usage(mapper.turn_usage()))
        .map_err(|message| Error::internal_error().data(serde_json::Value::String(message)))
}

async fn prompt(
    acp: Arc<Acp>,
    cx: ConnectionTo<Client>,
    request: PromptRequest,
) -> Result<PromptResponse, Error> {
    let session = request.session_id.clone();
    let id = Id::from(&*session.0);
    let Some(known) = acp.known().get(id.as_str()).cloned() else {
        return Err(session_not_found(&session));
    };
    let (cancelled, mut seen) = (known.cancelled, known.seen);
    let text = prompt_text(&request.prompt);
    if let Some(argument) = text.trim().strip_prefix("/rewind")
        && (argument.is_empty() || argument.starts_with(char::is_whitespace))
    {
        return rewind(acp, cx, session, id, argument.trim())
            .await
            .map(PromptResponse::new);
    }
    let manager = acp.manager.clone();
    let mut events = manager.follow(&id, seen).map_err(failed)?;
    let mut pieces = manager.subscribe_text(&id).map_err(failed)?;
    begin(&manager, &id, &text, known.plan)?;
    let mut mapper = Mapper::new(&known.workspace, false);
    let mut last_error = String::new();
    loop {
        // The log's events first: those of a reply's calls were logged
        // before the next reply's first piece was streamed, so a piece
        // never overtakes them (text, call, call's end, next text).
        let next = tokio::select! {
            biased;
            next = events.next() => next,
            Ok(delta) = pieces.recv() => {
                cx.send_notification(SessionNotification::new(session.clone(), mapper.delta(&delta)))?;
                continue;
            }
        };
        let Some(event) = next.map_err(failed)? else {
            return Err(Error::internal_error().data(serde_json::Value::String(
                "the session's event stream ended".into(),
            )));
        };
        {
            seen = event.seq;
            if let Some(known) = acp.known().get_mut(id.as_str()) {
                known.seen = seen;
            }
            if let EventBody::AssistantMessage(reply) = &event.body {
                rest_of_reply(&reply.text, &mut pieces, &mut mapper, &cx, &session)?;
            }
            for update in mapper.updates(&event) {
                cx.send_notification(SessionNotification::new(session.clone(), update))?;
            }
            if let EventBody::Error(ErrorEvent {
                message,
                ends_turn: true,
            }) = &event.body
            {
                last_error.clone_from(message);
            }
            if let EventBody::Card(CardEvent {
                call_id,
                card,
                proposed,
            }) = &event.body
            {
                let old = current_text(&known.workspace, card);
                let ask = mapper.permission(&session, call_id, card, old, proposed.as_deref());
                let answer = ask_editor(&cx, ask, &cancelled).await;
                answer_card(&manager, &id, &card.id, answer);
            } else if let Some(end) = stop_at(&event.body, &last_error) {
                // `turn_ended` is written once the session is idle: the
                // editor's next prompt finds it free.
                return response(end, &mapper);
            }
        }
    }
}

/// Serves ACP on stdin and stdout until the editor closes stdin; then every
/// running turn is cancelled (its session stays resumable) and the MCP
/// servers stop.
// The routing table of ACP: one handler per request, in one builder chain (as a
// router is read); past 80 lines because the chain is one expression.
pub async fn serve(
    manager: Arc<Manager>,
    model: Option<String>,
    listed: Vec<String>,
) -> Result<(), Error> {
    let acp = Arc::new(Acp {
        manager: manager.clone(),
        model,
        listed,
        sessions: Mutex::new(HashMap::new()),
    });
    let (for_new, for_load, for_prompt, for_cancel, for_mode, for_config) = (
        acp.clone(),
        acp.clone(),
        acp.clone(),
        acp.clone(),
        acp.clone(),
        acp.clone(),
    );
    let served = Agent
        .v1()
        .name("wicket")
        .on_receive_request(
            async move |_request: InitializeRequest,
                        responder: Responder<InitializeResponse>,
                        _cx: ConnectionTo<Client>| { responder.respond(initialized()) },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: NewSessionRequest,
                        responder: Responder<NewSessionResponse>,
                        cx: ConnectionTo<Client>| {
                match for_new.new_session(&request) {
                    Ok(id) => {
                        responder.respond(
                            NewSessionResponse::new(id.clone())
                                .modes(modes(false))
                                .config_options(model_options(
                                    for_new.model_of(&id).as_deref(),
                                    &for_new.listed,
                                )),
                        )?;
                        cx.send_notification(SessionNotification::new(id, map::commands()))
                    }
                    Err(error) => responder.respond_with_error(error),
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: LoadSessionRequest,
                        responder: Responder<LoadSessionResponse>,
                        cx: ConnectionTo<Client>| {
                match for_load.load(&request) {
                    Ok(updates) => {
                        // The same queue as the response: the history arrives first.
                        for update in updates {
                            cx.send_notification(update)?;
                        }
                        cx.send_notification(SessionNotification::new(
                            request.session_id.clone(),
                            map::commands(),
                        ))?;
                        responder.respond(LoadSessionResponse::new().modes(modes(false)))
                    }
                    Err(error) => responder.respond_with_error(error),
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: PromptRequest,
                        responder: Responder<PromptResponse>,
                        cx: ConnectionTo<Client>| {
                // Never in the handler: the loop must stay free to take the
                // answers to our permission requests, and session/cancel.
                let acp = for_prompt.clone();
                tokio::spawn(async move {
                    // The editor gone: no one is left to take the response.
                    let _ = match prompt(acp, cx, request).await {
                        Ok(response) => responder.respond(response),
                        Err(error) => responder.respond_with_error(error),
                    };
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: SetSessionModeRequest,
                        responder: Responder<SetSessionModeResponse>,
                        _cx: ConnectionTo<Client>| {
                match for_mode.set_mode(&request) {
                    Ok(()) => responder.respond(SetSessionModeResponse::new()),
                    Err(error) => responder.respond_with_error(error),
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: SetSessionConfigOptionRequest,
                        responder: Responder<SetSessionConfigOptionResponse>,
                        _cx: ConnectionTo<Client>| {
                match for_config.set_config(&request) {
                    Ok(options) => responder.respond(SetSessionConfigOptionResponse::new(options)),
                    Err(error) => responder.respond_with_error(error),
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |notification: CancelNotification, _cx: ConnectionTo<Client>| {
                for_cancel.cancel(&notification.session_id);
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_to(transport::stdio())
        .await;
    end_all(manager).await;
    served
}

/// What Wicket can do, as `initialize` answers.
fn initialized() -> InitializeResponse {
    InitializeResponse::new(ProtocolVersion::V1)
        .agent_capabilities(
            AgentCapabilities::new()
                .load_session(true)
                .prompt_capabilities(PromptCapabilities::new().embedded_context(true))
                .mcp_capabilities(McpCapabilities::new().http(true)),
        )
        .agent_info(Implementation::new("wicket", env!("CARGO_PKG_VERSION")))
}

/// The editor is gone: end what runs, keep what was logged, stop the MCP
/// servers.
async fn end_all(manager: Arc<Manager>) {
    let running = manager.running();
    for id in &running {
        // Err only when the session is gone: nothing left to cancel.
        let _ = manager.cancel(id);
    }
    // A panicked wait leaves the servers to the process's exit, which stops them too.
    let _ = tokio::task::spawn_blocking(move || {
        for id in &running {
            // Err only when the session is gone: nothing left to wait for.
            let _ = manager.wait_idle(id);
        }
        manager.shutdown();
    })
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shared table: a prompt ends at the turn's `turn_ended`, never
    /// before (not at its `result`, error or cancel), and says how.
    #[test]
    fn a_prompt_ends_where_the_turn_does() {
        for ending in wicket_test_support::endings::turn_endings() {
            let mut last_error = String::new();
            let (body_end, events) = ending.events.split_last().unwrap();
            for event in events {
                if let EventBody::Error(ErrorEvent {
                    message,
                    ends_turn: true,
                }) = &event.body
                {
                    last_error.clone_from(message);
                }
                assert!(
                    stop_at(&event.body, &last_error).is_none(),
                    "{}: ended at {:?}",
                    ending.name,
                    event.body
                );
            }
            let stop = stop_at(&body_end.body, &last_error)
                .unwrap_or_else(|| panic!("{}: not ended", ending.name));
            let expected = match ending.outcome {
                TurnOutcome::Result => Ok(StopReason::EndTurn),
                TurnOutcome::Cancelled => Ok(StopReason::Cancelled),
                TurnOutcome::StepLimit => Ok(StopReason::MaxTurnRequests),
                TurnOutcome::Error | TurnOutcome::Budget | TurnOutcome::Interrupted => {
                    Err(ending.error.clone().unwrap_or_default())
                }
            };
            assert_eq!(stop, expected, "{}", ending.name);
        }
    }
}
