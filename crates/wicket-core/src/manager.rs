//! The session manager: many sessions at once, each with at most one running
//! turn. An ask sent to a running session is queued (a `queued` event) and
//! starts when the turn ends; while a card or question is open a new message
//! is refused, naming what is open; a message to another session starts at
//! once. `wicket exec` and `wicket serve` both drive sessions through this API,
//! so queueing, blocking and cancel exist once.

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use tokio::sync::broadcast;
use wicket_chat::ChatClient;
use wicket_protocol::{Answer, Card, Event, EventBody};
use wicket_tools::{Cancel, Tools};

use crate::config::Config;
use crate::session::{self, Meta, Session, Status};
use crate::turn::{Outcome, Person, Runner, Settings, find_skills};

/// How many live events a subscriber may fall behind before it must catch up
/// from the log ([`Manager::events_after`]).
pub const EVENT_BUFFER: usize = 4096;

/// What a turn needs that depends on configuration: the chat client and the settings.
pub type TurnSetup = Arc<
    dyn Fn(&Path, Option<&str>) -> Result<(Box<dyn ChatClient>, Settings), String> + Send + Sync,
>;

/// What the manager refuses, with a `kind` for the HTTP API.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ManagerError {
    /// A card or question is open; the message says which.
    #[error("{0}")]
    Blocked(String),
    #[error("session '{0}' is not open here; `wicket sessions` lists the sessions there are")]
    NoSuchSession(String),
    /// The card or question is not the open one.
    #[error("{0}")]
    NotOpen(String),
    #[error("{0}")]
    Session(String),
}

impl ManagerError {
    pub fn kind(&self) -> &'static str {
        match self {
            ManagerError::Blocked(_) => "blocked",
            ManagerError::NoSuchSession(_) => "not_found",
            ManagerError::NotOpen(_) => "not_open",
            ManagerError::Session(_) => "session",
        }
    }
}

/// What is waiting for the person in a session.
#[derive(Debug, Clone, PartialEq)]
pub enum Open {
    Card(Card),
    Question { id: String, question: String },
}

/// Where a message went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sent {
    Started,
    Queued,
}

/// A session as a list shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    pub id: String,
    pub title: String,
    pub workspace: String,
    pub status: Status,
    pub queued: usize,
    pub updated: String,
}

enum Given {
    Answer(Answer),
    Reply(String),
}

#[derive(Default)]
struct State {
    running: bool,
    queue: VecDeque<String>,
    open: Option<Open>,
    given: Option<Given>,
    /// An answer that came for a card (or question) already in the log but
    /// not yet open: the person can be quicker than the turn's thread.
    early: Option<(String, Given)>,
    cancelled: bool,
    cancel: Cancel,
}

struct Live {
    session: Session,
    tools: Tools,
    workspace: PathBuf,
    state: Mutex<State>,
    changed: Condvar,
    events: broadcast::Sender<Event>,
    /// The id of the last card or question appended to the log.
    raised: Arc<Mutex<Option<String>>>,
}

impl Open {
    fn id(&self) -> &str {
        match self {
            Open::Card(card) => &card.id,
            Open::Question { id, .. } => id,
        }
    }
}

impl Live {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Whether `id` is the card or question the running turn has just put
    /// in the log and is about to open.
    fn just_raised(&self, state: &State, id: &str) -> bool {
        state.running
            && state.open.is_none()
            && self
                .raised
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .as_deref()
                == Some(id)
    }

    /// The raised card or question has its answer; a second one is refused.
    fn spent(&self) {
        *self
            .raised
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = None;
    }

    /// Opens `open` and waits for what is given, or for cancel (`None`).
    fn wait_for(&self, open: Open) -> Option<Given> {
        let mut state = self.state();
        if state.cancelled {
            return None;
        }
        state.given = None;
        if let Some((id, given)) = state.early.take()
            && id == open.id()
        {
            self.spent();
            return Some(given);
        }
        state.open = Some(open);
        self.changed.notify_all();
        loop {
            if state.cancelled {
                state.open = None;
                return None;
            }
            if let Some(given) = state.given.take() {
                state.open = None;
                self.spent();
                return Some(given);
            }
            state = self
                .changed
                .wait(state)
                .unwrap_or_else(|poisoned| poisoned.into_inner());
        }
    }
}

struct LivePerson(Arc<Live>);

impl Person for LivePerson {
    fn card(&mut self, card: &Card) -> Option<Answer> {
        match self.0.wait_for(Open::Card(card.clone()))? {
            Given::Answer(answer) => Some(answer),
            Given::Reply(_) => None,
        }
    }

    fn question(&mut self, id: &str, question: &str) -> Option<String> {
        let open = Open::Question {
            id: id.to_string(),
            question: question.to_string(),
        };
        match self.0.wait_for(open)? {
            Given::Reply(reply) => Some(reply),
            Given::Answer(_) => None,
        }
    }
}

/// Many sessions, their turns and their event streams.
pub struct Manager {
    home: PathBuf,
    runtime: tokio::runtime::Handle,
    setup: TurnSetup,
    sessions: Mutex<HashMap<String, Arc<Live>>>,
}

impl Manager {
    pub fn new(home: &Path, runtime: tokio::runtime::Handle, setup: TurnSetup) -> Manager {
        Manager {
            home: home.to_path_buf(),
            runtime,
            setup,
            sessions: Mutex::new(HashMap::new()),
        }
    }

    pub fn home(&self) -> &Path {
        &self.home
    }

    fn sessions(&self) -> MutexGuard<'_, HashMap<String, Arc<Live>>> {
        self.sessions
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn live(&self, id: &str) -> Result<Arc<Live>, ManagerError> {
        if let Some(live) = self.sessions().get(id) {
            return Ok(live.clone());
        }
        // A session on disk that this manager has not opened yet.
        let (meta, _) = Session::load_existing(&self.home, id)
            .map_err(|_| ManagerError::NoSuchSession(id.to_string()))?;
        self.open(Some(id), Path::new(&meta.workspace), None)?;
        self.sessions()
            .get(id)
            .cloned()
            .ok_or_else(|| ManagerError::NoSuchSession(id.to_string()))
    }

    /// Opens (creating when absent) a session; `None` makes a new id.
    /// Returns the id.
    pub fn open(
        &self,
        id: Option<&str>,
        workspace: &Path,
        model: Option<&str>,
    ) -> Result<String, ManagerError> {
        let id = id.map_or_else(session::new_id, str::to_string);
        if self.sessions().contains_key(&id) {
            return Ok(id);
        }
        let workspace = std::fs::canonicalize(workspace).map_err(|error| {
            ManagerError::Session(format!(
                "the workspace {} cannot be opened: {error}",
                workspace.display()
            ))
        })?;
        let tools =
            Tools::open(&workspace).map_err(|error| ManagerError::Session(error.to_string()))?;
        let (session, _) = Session::open_or_create(&self.home, &id, &workspace, model)
            .map_err(|error| ManagerError::Session(error.to_string()))?;
        if let Some(model) = model {
            let model = model.to_string();
            let _ = session.update_meta(|meta| meta.model = Some(model));
        }
        let (events, _) = broadcast::channel(EVENT_BUFFER);
        let sender = events.clone();
        let raised = Arc::new(Mutex::new(None));
        let last_raised = raised.clone();
        session.set_listener(Box::new(move |event| {
            let id = match &event.body {
                EventBody::Card { card, .. } => Some(card.id.clone()),
                EventBody::Question { id, .. } => Some(id.clone()),
                _ => None,
            };
            if let Some(id) = id {
                *last_raised
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(id);
            }
            let _ = sender.send(event.clone());
        }));
        let live = Arc::new(Live {
            session,
            tools,
            workspace,
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
            events,
            raised,
        });
        let mut sessions = self.sessions();
        // Two opens of one id at once: the first one in wins.
        sessions.entry(id.clone()).or_insert(live);
        Ok(id)
    }

    /// Sends a message: it starts a turn, or queues behind the running one.
    /// Refused while a card or question is open.
    pub fn send(&self, id: &str, text: &str) -> Result<Sent, ManagerError> {
        let live = self.live(id)?;
        let mut state = live.state();
        if let Some(open) = &state.open {
            return Err(ManagerError::Blocked(match open {
                Open::Card(card) => format!(
                    "card {} ({} {}) is open in session {id}; answer it (allow_once, allow_session or deny) or cancel the turn first",
                    card.id,
                    card.tool,
                    card.path.clone().unwrap_or_else(|| card
                        .argv
                        .as_ref()
                        .map(|argv| argv.join(" "))
                        .unwrap_or_default())
                ),
                Open::Question { id: qid, question } => format!(
                    "question {qid} is open in session {id} (\"{question}\"); reply to it or cancel the turn first"
                ),
            }));
        }
        if state.running {
            state.queue.push_back(text.to_string());
            drop(state);
            let _ = live.session.append(EventBody::Queued { text: text.into() });
            return Ok(Sent::Queued);
        }
        state.running = true;
        state.cancelled = false;
        state.cancel = Cancel::default();
        drop(state);
        let setup = self.setup.clone();
        let runtime = self.runtime.clone();
        let text = text.to_string();
        std::thread::Builder::new()
            .name(format!("turn-{id}"))
            .spawn(move || run_turns(live, setup, runtime, text))
            .map_err(|error| ManagerError::Session(format!("starting the turn: {error}")))?;
        Ok(Sent::Started)
    }

    /// Answers the open card.
    pub fn answer(&self, id: &str, card: &str, answer: Answer) -> Result<(), ManagerError> {
        let live = self.live(id)?;
        let mut state = live.state();
        match &state.open {
            Some(Open::Card(open)) if open.id == card => {
                state.given = Some(Given::Answer(answer));
                state.open = None;
                live.changed.notify_all();
                Ok(())
            }
            _ if live.just_raised(&state, card) => {
                state.early = Some((card.to_string(), Given::Answer(answer)));
                Ok(())
            }
            _ => Err(ManagerError::NotOpen(format!(
                "card {card} is not open in session {id}"
            ))),
        }
    }

    /// Replies to the open question.
    pub fn reply(&self, id: &str, question: &str, reply: &str) -> Result<(), ManagerError> {
        let live = self.live(id)?;
        let mut state = live.state();
        match &state.open {
            Some(Open::Question { id: open, .. }) if open == question => {
                state.given = Some(Given::Reply(reply.to_string()));
                state.open = None;
                live.changed.notify_all();
                Ok(())
            }
            _ if live.just_raised(&state, question) => {
                state.early = Some((question.to_string(), Given::Reply(reply.to_string())));
                Ok(())
            }
            _ => Err(ManagerError::NotOpen(format!(
                "question {question} is not open in session {id}"
            ))),
        }
    }

    /// Cancels the running turn at its next tool boundary: an open card or
    /// question is withdrawn, a running command is stopped (SIGTERM, then
    /// SIGKILL 2 s later). Returns false when no turn was running.
    pub fn cancel(&self, id: &str) -> Result<bool, ManagerError> {
        let live = self.live(id)?;
        let mut state = live.state();
        if !state.running {
            return Ok(false);
        }
        state.cancelled = true;
        let cancel = state.cancel.clone();
        live.changed.notify_all();
        drop(state);
        cancel.cancel();
        Ok(true)
    }

    /// Live events of a session from now on.
    pub fn subscribe(&self, id: &str) -> Result<broadcast::Receiver<Event>, ManagerError> {
        Ok(self.live(id)?.events.subscribe())
    }

    /// The logged events after `seq`, for replay and for a subscriber that lagged.
    pub fn events_after(&self, id: &str, seq: u64) -> Result<Vec<Event>, ManagerError> {
        let live = self.live(id)?;
        let loaded = session::load_log(live.session.log_path())
            .map_err(|error| ManagerError::Session(error.to_string()))?;
        Ok(loaded
            .events
            .into_iter()
            .filter(|event| event.seq > seq)
            .collect())
    }

    /// What is open in a session, if anything.
    pub fn open_item(&self, id: &str) -> Result<Option<Open>, ManagerError> {
        Ok(self.live(id)?.state().open.clone())
    }

    /// Whether a turn is running (or queued) in the session.
    pub fn is_running(&self, id: &str) -> Result<bool, ManagerError> {
        Ok(self.live(id)?.state().running)
    }

    pub fn meta(&self, id: &str) -> Result<Meta, ManagerError> {
        Ok(self.live(id)?.session.meta())
    }

    pub fn workspace(&self, id: &str) -> Result<PathBuf, ManagerError> {
        Ok(self.live(id)?.workspace.clone())
    }

    /// Every session on disk, with the queue lengths of the live ones.
    pub fn list(&self) -> Vec<Summary> {
        let sessions = self.sessions();
        session::list(&self.home)
            .into_iter()
            .map(|meta| {
                let live = sessions.get(&meta.id);
                let queued = live.map_or(0, |live| live.state().queue.len());
                let meta = live.map_or(meta, |live| live.session.meta());
                Summary {
                    id: meta.id,
                    title: meta.title,
                    workspace: meta.workspace,
                    status: meta.status,
                    queued,
                    updated: meta.updated,
                }
            })
            .collect()
    }

    /// Blocks until the session has no running turn and nothing queued.
    /// The sessions with a running turn.
    pub fn running(&self) -> Vec<String> {
        self.sessions()
            .iter()
            .filter(|(_, live)| live.state().running)
            .map(|(id, _)| id.clone())
            .collect()
    }

    pub fn wait_idle(&self, id: &str) -> Result<(), ManagerError> {
        let live = self.live(id)?;
        let mut state = live.state();
        while state.running {
            state = live
                .changed
                .wait(state)
                .unwrap_or_else(|poisoned| poisoned.into_inner());
        }
        Ok(())
    }
}

/// The turn thread: runs `text`, then whatever was queued meanwhile.
fn run_turns(live: Arc<Live>, setup: TurnSetup, runtime: tokio::runtime::Handle, first: String) {
    let mut text = first;
    loop {
        let cancel = live.state().cancel.clone();
        if live.session.meta().title.is_empty() {
            let title: String = text.chars().take(80).collect();
            let _ = live.session.update_meta(|meta| meta.title = title);
        }
        let model = live.session.meta().model;
        match setup(&live.workspace, model.as_deref()) {
            Ok((chat, settings)) => {
                let runner = Runner {
                    tools: &live.tools,
                    session: &live.session,
                    chat: chat.as_ref(),
                    settings: &settings,
                    runtime: &runtime,
                };
                let outcome = runner.run(&text, &mut LivePerson(live.clone()), &cancel);
                if outcome == Outcome::Cancelled {
                    let _ = live.session.sync();
                }
            }
            Err(message) => {
                let _ = live
                    .session
                    .append(EventBody::UserMessage { text: text.clone() });
                let _ = live.session.append(EventBody::Error {
                    message,
                    ends_turn: true,
                });
                let _ = live.session.sync();
            }
        }
        let mut state = live.state();
        state.open = None;
        state.given = None;
        match state.queue.pop_front() {
            Some(next) => {
                state.cancelled = false;
                state.cancel = Cancel::default();
                text = next;
            }
            None => {
                state.running = false;
                live.changed.notify_all();
                let _ = live.session.update_meta(|meta| meta.status = Status::Idle);
                return;
            }
        }
    }
}

/// The standard [`TurnSetup`]: the config layers of `home` and the workspace,
/// the model (`model` from the session or flag, else `WICKET_MODEL`, else the
/// config's), provider URLs from the environment over the config's.
pub fn standard_setup(home: &Path) -> TurnSetup {
    let home = home.to_path_buf();
    Arc::new(move |workspace: &Path, model: Option<&str>| {
        let config = Config::load(&home, workspace).map_err(|error| error.to_string())?;
        let model = config.model_from(model).ok_or_else(no_model_message)?;
        let mut client = wicket_chat::ClientConfig::from_env();
        if client.openai_base_url.is_none() {
            client.openai_base_url = config.openai_base_url.clone();
        }
        if client.anthropic_base_url.is_none() {
            client.anthropic_base_url = config.anthropic_base_url.clone();
        }
        if client.ollama_host.is_none() {
            client.ollama_host = config.ollama_host.clone();
        }
        if let Some(seconds) = config.request_timeout_s {
            client.request_timeout = std::time::Duration::from_secs(seconds);
        }
        if let Some(seconds) = config.idle_timeout_s {
            client.idle_timeout = std::time::Duration::from_secs(seconds);
        }
        if let Some(attempts) = config.max_attempts {
            client.retry.max_attempts = attempts.max(1);
        }
        let chat = wicket_chat::client_for(&model, &client).map_err(|error| error.to_string())?;
        let settings = Settings {
            step_limit: config.step_limit,
            max_stop_blocks: config.max_stop_blocks,
            stop_hooks: config.stop_hooks.clone(),
            max_tokens: config.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
            skills: find_skills(workspace, &home, &config.skill_dirs),
        };
        Ok((chat, settings))
    })
}

/// Output tokens a reply may use when the config sets none.
pub const DEFAULT_MAX_TOKENS: u32 = 8192;

/// What to say when no model is configured.
pub fn no_model_message() -> String {
    "no model is configured. Pass --model PROVIDER:NAME (openai:gpt-4o, anthropic:claude-sonnet-4-5, \
     ollama:qwen2.5-coder, script:PATH), or set WICKET_MODEL, or put model = \"…\" in \
     $WICKET_HOME/config.toml. OpenAI reads OPENAI_API_KEY (and OPENAI_BASE_URL for compatible servers), \
     Anthropic reads ANTHROPIC_API_KEY (and ANTHROPIC_BASE_URL), Ollama needs no key and reads OLLAMA_HOST \
     (default http://127.0.0.1:11434)"
        .to_string()
}
