//! The session manager: many sessions at once, each with at most one running
//! turn. An ask sent to a running session is queued (a `queued` event) and
//! starts when the turn ends; while a card or question is open a new message
//! is refused, naming what is open; a message to another session starts at
//! once. `wicket exec` and `wicket serve` both drive sessions through this API,
//! so queueing, blocking and cancel exist once.
//!
//! A card or question is open from the moment its event is appended: the
//! session's listener records it before the event is broadcast, so no client
//! can see a card and still get a message queued behind it.

mod answers;
mod follow;
mod refusal;
mod rewind;
mod setup;
mod tasks;
mod turns;

pub use answers::Answered;
use answers::{Given, LivePerson};
pub use follow::Follower;
use follow::Ring;
pub use refusal::Refusal;
pub use setup::{DEFAULT_MAX_TOKENS, no_model_message, standard_setup};
use setup::{INTERNAL_ERROR, learn_window};
use turns::{First, run_turns};

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use tokio::sync::broadcast;
use tokio::sync::broadcast::error::RecvError;
use wicket_chat::{ChatClient, ChatError};
use wicket_protocol::limits::REWOUND_MAX_PATHS;
use wicket_protocol::{
    Answer, Card, CardId, CardKind, Event, EventBody, QuestionId, SessionId, TurnOutcome,
};
use wicket_tools::{Cancel, Tools};

use crate::config::{Config, ConfigNotice};
use crate::turn::{Runner, Settings, announce_end, find_skills, record_failure};
use wicket_gate::{Answerer, Confinement};
use wicket_protocol::event::{CardEvent, QuestionEvent, QueuedEvent};
use wicket_session::{self as session, Meta, Session, Status};

/// How many live events a follower may fall behind before it catches up
/// from the log (the ring holds shared events: pointers, not copies, and
/// exists only while someone follows).
pub const EVENT_BUFFER: usize = 1024;

/// How many sessions stay open when idle; past this, idle ones are closed
/// (and opened again from disk when next used).
pub const KEPT_OPEN: usize = 256;

/// How many pieces of streamed text a listener may fall behind; pieces
/// are not logged, so one that falls further loses them (the reply's
/// whole text still comes in its event).
pub const TEXT_BUFFER: usize = 1024;

/// Why a turn could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// A config file is wrong.
    #[error(transparent)]
    Config(#[from] crate::Error),
    /// No model is configured.
    #[error("{}", no_model_message())]
    NoModel,
    /// The model string, a key or a script is wrong.
    #[error(transparent)]
    Chat(#[from] ChatError),
}

/// What a turn needs that depends on configuration: the chat client and the settings.
pub type TurnSetup = Arc<
    dyn Fn(&Path, Option<&str>) -> Result<(Box<dyn ChatClient>, Settings), SetupError>
        + Send
        + Sync,
>;

/// A session held for a rewind (no turn may start); let go on drop.
struct RewindHold(Arc<Live>);

impl Drop for RewindHold {
    fn drop(&mut self) {
        self.0.state().rewinding = false;
    }
}

/// Where a rewind goes back to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RewindTo {
    /// Before this log event (the first checkpoint at or after it).
    Seq(u64),
    /// Before the last turn that wrote or ran anything.
    LastTurn,
    /// Back to before the last rewind.
    Undo,
}

/// What the manager refuses.
#[derive(Debug, thiserror::Error)]
pub enum ManagerError {
    /// A card or question is open.
    #[error("{} is open in session {session}; {}", open.describe(), open.what_to_do())]
    Blocked {
        /// The session.
        session: String,
        /// What is open.
        open: Box<Open>,
    },
    /// No such session on disk.
    #[error("session '{0}' does not exist; `wicket sessions` lists the sessions there are")]
    NoSuchSession(String),
    /// The card or question is not the open one.
    #[error("{item} is not open in session {session}")]
    NotOpen {
        /// The session.
        session: String,
        /// The card or question named.
        item: String,
    },
    /// The session could not be opened or written.
    #[error(transparent)]
    Session(#[from] wicket_session::Error),
    /// A config file is wrong.
    #[error(transparent)]
    Config(#[from] crate::Error),
    /// The workspace cannot be opened.
    #[error(transparent)]
    Workspace(#[from] wicket_protocol::WireError),
    /// The turn's thread could not start.
    #[error("starting the turn: {0}")]
    Thread(std::io::Error),
    /// A turn runs; what was asked needs the session idle.
    #[error("a turn is running in session {0}; try again when it ends")]
    Busy(String),
    /// A rewind is changing the files.
    #[error("a rewind is changing the files of session {0}; try again when it is done")]
    Rewinding(String),
    /// The process is shutting down: nothing new starts or queues.
    #[error(
        "wicket is shutting down, so the message to session {0} was neither started nor queued; send it again once wicket runs again"
    )]
    Closing(String),
    /// A checkpoint or rewind failed.
    #[error(transparent)]
    Checkpoints(#[from] wicket_checkpoints::Error),
    /// An answer that cannot be given as it is (a widening that is not the
    /// card's own argv prefix).
    #[error("{0}")]
    BadAnswer(String),
    /// No grant or rule has that id.
    #[error("{0}")]
    NoSuchGrant(String),
    /// A model no chat client can be made for.
    #[error("{0}")]
    BadModel(String),
    /// The rules file cannot be read or written.
    #[error(transparent)]
    Rules(#[from] wicket_gate::rules::Error),
}

/// What is waiting for the person in a session.
#[derive(Debug, Clone, PartialEq)]
pub enum Open {
    /// A card.
    Card(Box<Card>),
    /// A question.
    Question {
        /// Its id.
        id: QuestionId,
        /// The question.
        question: String,
    },
}

impl Open {
    /// Its id.
    pub fn id(&self) -> &str {
        match self {
            Open::Card(card) => &card.id,
            Open::Question { id, .. } => id,
        }
    }

    /// In words: `card ID (write /path)`, `question ID ("…")`.
    pub fn describe(&self) -> String {
        match self {
            Open::Card(card) => {
                let what = match &card.kind {
                    CardKind::Write(write) => write.path.clone(),
                    CardKind::OutsideRead(read) => read.path.clone(),
                    CardKind::Run(run) => run.argv.join(" "),
                    CardKind::Mcp(mcp) => format!("{} {}", mcp.server, card.tool),
                    CardKind::Net(net) => net.target(),
                    CardKind::Effects(effects) => format!("preview of {}", effects.argv.join(" ")),
                    CardKind::Plan(_) => "a plan".to_string(),
                };
                format!("card {} ({} {what})", card.id, card.tool)
            }
            Open::Question { id, question } => format!("question {id} (\"{question}\")"),
        }
    }

    fn what_to_do(&self) -> &'static str {
        match self {
            Open::Card(_) => {
                "answer it (allow_once, allow_session or deny) or cancel the turn first"
            }
            Open::Question { .. } => "reply to it or cancel the turn first",
        }
    }
}

/// Where a message went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sent {
    /// A turn started.
    Started,
    /// It waits behind the running turn.
    Queued,
}

/// A session as a list shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// Its id.
    pub id: String,
    /// Its title.
    pub title: String,
    /// Its workspace.
    pub workspace: String,
    /// Where it stands.
    pub status: Status,
    /// Messages waiting behind the running turn.
    pub queued: usize,
    /// When it last changed.
    pub updated: String,
}

#[derive(Default)]
struct State {
    running: bool,
    /// A rewind is changing the files: no turn may start.
    rewinding: bool,
    /// Messages waiting behind the running turn, each with whether it starts in plan mode.
    queue: VecDeque<(String, bool)>,
    open: Option<Open>,
    given: Option<Given>,
    cancelled: bool,
    cancel: Cancel,
    /// No person answers its cards (a fixed `--answers` policy): a denial
    /// does not tell the model to ask.
    unattended: bool,
}

struct Live {
    session: Session,
    tools: Tools,
    /// The session's MCP servers, started at its first turn.
    mcp: wicket_mcp::Hub,
    /// Servers a front end added (an editor's, over ACP), beside the configs'.
    extra_mcp: Mutex<Vec<wicket_mcp::ServerSpec>>,
    workspace: PathBuf,
    state: Arc<Mutex<State>>,
    changed: Arc<Condvar>,
    events: Arc<Ring<Arc<Event>>>,
    /// Pieces of the reply's text as they stream in; not logged.
    text: Ring<String>,
    /// When it was last used, on the manager's clock: the least recently
    /// used idle sessions are closed first.
    used: AtomicU64,
    /// Its SessionStart hooks ran in this process.
    started: AtomicBool,
    /// Its checkpoints.
    checkpoints: wicket_checkpoints::Store,
    /// Its sub-tasks' cards, waiting to be shown one at a time.
    cards: tasks::Turnstile,
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    wicket_os::sync::lock(state)
}

impl Live {
    fn state(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// Whether closing it loses nothing: no turn, nothing open or queued, no
    /// one following it, no MCP server (started or configured), and no
    /// reference held anywhere but the manager's map.
    fn idle(self: &Arc<Self>) -> bool {
        if Arc::strong_count(self) > 1 || self.events.listened() || self.text.listened() {
            return false;
        }
        let state = self.state();
        let quiet = !state.running
            && state.open.is_none()
            && state.queue.is_empty()
            && state.given.is_none();
        drop(state);
        quiet && self.mcp.is_empty() && wicket_os::sync::lock(&self.extra_mcp).is_empty()
    }

    /// The front end's servers after the configs' (whose names win).
    fn add_extra_servers(&self, settings: &mut crate::turn::Settings) {
        let mut extra: Vec<wicket_mcp::ServerSpec> = wicket_os::sync::lock(&self.extra_mcp)
            .iter()
            .filter(|server| {
                !settings
                    .mcp_servers
                    .iter()
                    .any(|known| known.name == server.name)
            })
            .cloned()
            .collect();
        // An editor's servers start only where the managed policy lets the config's.
        let notices = settings.managed.admit_servers(&mut extra);
        settings.notices.extend(notices);
        settings.mcp_servers.extend(extra);
    }

    /// Waits for what is given for the open card or question (the session's
    /// listener opened it when its event was appended), or for cancel (`None`).
    fn wait_for(&self, id: &str) -> Option<Given> {
        self.wait_for_unless(id, None)
    }

    /// [`Live::wait_for`], giving up also when `stop` is cancelled (a
    /// sub-task's card shown here, whose sub-task was cancelled alone).
    fn wait_for_unless(&self, id: &str, stop: Option<&Cancel>) -> Option<Given> {
        let mut state = self.state();
        loop {
            if state.cancelled || stop.is_some_and(Cancel::is_cancelled) {
                state.open = None;
                return None;
            }
            if let Some(given) = state.given.take() {
                state.open = None;
                return Some(given);
            }
            if state.open.as_ref().map(Open::id) != Some(id) {
                // Not open (its append failed): nothing will ever answer it.
                return None;
            }
            state = wicket_os::sync::wait(&self.changed, state);
        }
    }
}

/// The sessions open in this process: the manager's, and a turn's that
/// opens sub-tasks.
struct Lives {
    home: PathBuf,
    runtime: tokio::runtime::Handle,
    sessions: Mutex<HashMap<String, Arc<Live>>>,
    /// Ticks once per use of a session.
    clock: AtomicU64,
    /// Spans and metrics of every session's turns, when `[telemetry]` (or
    /// `OTEL_EXPORTER_OTLP_ENDPOINT`) names a collector.
    telemetry: Option<wicket_telemetry::Telemetry>,
}

impl Drop for Lives {
    fn drop(&mut self) {
        self.flush_telemetry();
    }
}

/// The process's telemetry, from the person's config and the environment;
/// none when neither names a collector, or when the config does not load
/// (a turn says why it does not).
fn start_telemetry(home: &Path) -> Option<wicket_telemetry::Telemetry> {
    let settings = crate::config::Config::load_home(home)
        .map(|config| config.telemetry)
        .unwrap_or_default();
    // Its client speaks TLS to an https collector with the chat's provider.
    wicket_chat::tls::install();
    match wicket_telemetry::Telemetry::start(&settings) {
        Ok(telemetry) => telemetry,
        Err(error) => {
            eprintln!("wicket: {error}; turns run without it");
            None
        }
    }
}

/// Many sessions, their turns and their event streams.
pub struct Manager {
    setup: TurnSetup,
    lives: Arc<Lives>,
    /// Set by [`Manager::close`]: no turn starts, queued or new.
    closing: Arc<AtomicBool>,
}

impl Lives {
    /// Sends what telemetry has left (at most [`wicket_telemetry::FLUSH`];
    /// a second call sends nothing); what could not be sent is said in
    /// each open session's log.
    fn flush_telemetry(&self) {
        let Some(telemetry) = &self.telemetry else {
            return;
        };
        telemetry.shutdown();
        for live in self.sessions().values() {
            turns::telemetry_notice(&live.session, telemetry);
        }
    }

    fn sessions(&self) -> MutexGuard<'_, HashMap<String, Arc<Live>>> {
        wicket_os::sync::lock(&self.sessions)
    }

    fn used(&self, live: &Arc<Live>) -> Arc<Live> {
        live.used.store(
            self.clock.fetch_add(1, Ordering::Relaxed),
            Ordering::Relaxed,
        );
        live.clone()
    }

    /// Closes idle sessions past the first [`KEPT_OPEN`] (their log, lock
    /// and workspace descriptors go; the next call opens them again from
    /// disk), so that 10,000 sessions cost neither 30,000 descriptors nor
    /// their memory. `keep` stays.
    fn close_idle(sessions: &mut HashMap<String, Arc<Live>>, keep: &str) {
        if sessions.len() <= KEPT_OPEN {
            return;
        }
        let mut idle: Vec<(u64, String)> = sessions
            .iter()
            .filter(|(id, live)| id.as_str() != keep && live.idle())
            .map(|(id, live)| (live.used.load(Ordering::Relaxed), id.clone()))
            .collect();
        idle.sort_unstable();
        for (_, id) in idle.into_iter().take(sessions.len() - KEPT_OPEN) {
            sessions.remove(&id);
        }
    }

    fn open_live(
        &self,
        id: String,
        workspace: &Path,
        model: Option<&str>,
    ) -> Result<Arc<Live>, ManagerError> {
        if let Some(live) = self.sessions().get(&id) {
            return Ok(self.used(live));
        }
        let tools = Tools::open(workspace)?;
        let workspace = tools.workspace().root().to_path_buf();
        let (session, _) = Session::open_or_create(&self.home, &id, &workspace, model)?;
        if let Some(model) = model {
            let model = model.to_string();
            session.update_meta(|meta| meta.model = Some(model))?;
        }
        let events = Arc::new(Ring::new(EVENT_BUFFER));
        let text = Ring::new(TEXT_BUFFER);
        let state = Arc::new(Mutex::new(State::default()));
        let changed = Arc::new(Condvar::new());
        {
            let (sender, state, changed) = (events.clone(), state.clone(), changed.clone());
            let telemetry = self
                .telemetry
                .clone()
                .map(|telemetry| (telemetry, id.clone()));
            session.set_listener(Box::new(move |event| {
                // Open before anyone can see it.
                let open = match &event.body {
                    EventBody::Card(CardEvent { card, .. }) => {
                        Some(Open::Card(Box::new(card.clone())))
                    }
                    EventBody::Question(QuestionEvent { id, question, .. }) => {
                        Some(Open::Question {
                            id: id.clone(),
                            question: question.clone(),
                        })
                    }
                    _ => None,
                };
                if let Some(open) = open {
                    let mut state = lock(&state);
                    state.open = Some(open);
                    state.given = None;
                    changed.notify_all();
                }
                match &telemetry {
                    Some((telemetry, id)) => {
                        let event = Arc::new(event.clone());
                        telemetry.observe(id, &event);
                        sender.send(|| event);
                    }
                    None => sender.send(|| Arc::new(event.clone())),
                }
            }));
        }
        let checkpoints =
            wicket_checkpoints::Store::new(session.dir(), &self.home.join("checkpoints"));
        let live = Arc::new(Live {
            session,
            tools,
            mcp: wicket_mcp::Hub::new(self.runtime.clone()),
            extra_mcp: Mutex::new(Vec::new()),
            workspace,
            state,
            changed,
            events,
            text,
            used: AtomicU64::new(0),
            started: AtomicBool::new(false),
            checkpoints,
            cards: tasks::Turnstile::default(),
        });
        let mut sessions = self.sessions();
        // Two opens of one id at once: the first one in wins.
        let live = self.used(sessions.entry(id.clone()).or_insert(live));
        Self::close_idle(&mut sessions, &id);
        Ok(live)
    }
}

impl Manager {
    /// A manager of the sessions in `home`; turns run their chat clients on `runtime`.
    pub fn new(home: &Path, runtime: tokio::runtime::Handle, setup: TurnSetup) -> Manager {
        Manager {
            setup,
            lives: Arc::new(Lives {
                home: home.to_path_buf(),
                runtime,
                sessions: Mutex::new(HashMap::new()),
                clock: AtomicU64::new(0),
                telemetry: start_telemetry(home),
            }),
            closing: Arc::new(AtomicBool::new(false)),
        }
    }

    fn sessions(&self) -> MutexGuard<'_, HashMap<String, Arc<Live>>> {
        self.lives.sessions()
    }

    fn used(&self, live: &Arc<Live>) -> Arc<Live> {
        self.lives.used(live)
    }

    fn open_live(
        &self,
        id: String,
        workspace: &Path,
        model: Option<&str>,
    ) -> Result<Arc<Live>, ManagerError> {
        self.lives.open_live(id, workspace, model)
    }

    /// The meta.json of a session on disk (open here or not).
    fn on_disk(&self, id: &str) -> Result<Meta, ManagerError> {
        Session::meta_of(&self.lives.home, id).map_err(|error| match error {
            wicket_session::Error::NoSuchSession(_) | wicket_session::Error::BadSessionId(_) => {
                ManagerError::NoSuchSession(id.to_string())
            }
            other => ManagerError::Session(other),
        })
    }

    fn live(&self, id: &str) -> Result<Arc<Live>, ManagerError> {
        if let Some(live) = self.sessions().get(id) {
            return Ok(self.used(live));
        }
        // A session on disk that this manager has not opened yet (or closed
        // while it was idle).
        let meta = self.on_disk(id)?;
        self.open_live(id.to_string(), Path::new(&meta.workspace), None)
    }

    /// Opens (creating when absent) a session; `None` makes a new id.
    /// Returns the id.
    pub fn open(
        &self,
        id: Option<&SessionId>,
        workspace: &Path,
        model: Option<&str>,
    ) -> Result<SessionId, ManagerError> {
        let id = id.map_or_else(session::new_id, SessionId::to_string);
        self.open_live(id.clone(), workspace, model)?;
        Ok(SessionId::from(id))
    }

    /// Sends a message: it starts a turn, or queues behind the running one.
    /// Refused while a card or question is open.
    pub fn send(&self, id: &SessionId, text: &str) -> Result<Sent, ManagerError> {
        self.send_with(id, text, false)
    }

    /// Sends `text` as [`Manager::send`] does; `plan`: its turn starts in
    /// plan mode (only reads, ask, finish and propose_plan until the person
    /// approves a plan).
    pub fn send_with(&self, id: &SessionId, text: &str, plan: bool) -> Result<Sent, ManagerError> {
        let live = self.live(id)?;
        let mut state = live.state();
        if let Some(open) = &state.open {
            return Err(ManagerError::Blocked {
                session: id.to_string(),
                open: Box::new(open.clone()),
            });
        }
        if state.rewinding {
            return Err(ManagerError::Rewinding(id.to_string()));
        }
        if self.closing.load(Ordering::SeqCst) {
            return Err(ManagerError::Closing(id.to_string()));
        }
        if state.running {
            // Logged before it is queued: a message the log does not have
            // is refused, never run unrecorded.
            live.session
                .append(EventBody::Queued(QueuedEvent { text: text.into() }))?;
            state.queue.push_back((text.to_string(), plan));
            return Ok(Sent::Queued);
        }
        state.running = true;
        state.cancelled = false;
        state.cancel = Cancel::default();
        drop(state);
        let setup = self.setup.clone();
        let lives = self.lives.clone();
        let text = text.to_string();
        let turn_live = live.clone();
        let closing = self.closing.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("turn-{id}"))
            .spawn(move || run_turns(turn_live, setup, lives, First::Message(text, plan), closing));
        if let Err(error) = spawned {
            live.state().running = false;
            return Err(ManagerError::Thread(error));
        }
        Ok(Sent::Started)
    }

    /// Compacts the session's conversation now: the model summarises its
    /// older part (a `compacted` event). Refused while a turn runs.
    pub fn compact(&self, id: &SessionId) -> Result<(), ManagerError> {
        let live = self.live(id)?;
        let mut state = live.state();
        if state.running || state.rewinding {
            return Err(ManagerError::Busy(id.to_string()));
        }
        state.running = true;
        state.cancelled = false;
        state.cancel = Cancel::default();
        drop(state);
        let (setup, lives, turn_live) = (self.setup.clone(), self.lives.clone(), live.clone());
        let closing = self.closing.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("compact-{id}"))
            .spawn(move || run_turns(turn_live, setup, lives, First::Compaction, closing));
        if let Err(error) = spawned {
            live.state().running = false;
            return Err(ManagerError::Thread(error));
        }
        Ok(())
    }

    /// Cancels the running turn at its next tool boundary: an open card or
    /// question is withdrawn, a running command is stopped (SIGTERM, then
    /// SIGKILL 2 s later). Returns false when no turn was running.
    pub fn cancel(&self, id: &SessionId) -> Result<bool, ManagerError> {
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

    /// The pieces of a session's replies as they stream in, from now on.
    pub fn subscribe_text(
        &self,
        id: &SessionId,
    ) -> Result<broadcast::Receiver<String>, ManagerError> {
        Ok(self.live(id)?.text.subscribe())
    }

    /// The session's events after `after_seq`: the logged ones, then each
    /// live one as it comes (blocking: it reads the log).
    pub fn follow(&self, id: &SessionId, after_seq: u64) -> Result<Follower, ManagerError> {
        let live = self.live(id)?;
        // Listen first, then read the log: nothing falls between the two,
        // and what is in both is handed out once.
        let receiver = live.events.subscribe();
        let log_path = live.session.log_path().to_path_buf();
        let backlog = Follower::caught_up(&log_path, after_seq)?;
        Ok(Follower {
            live: receiver,
            queue: backlog.into(),
            last: after_seq,
            log_path,
            reading: None,
        })
    }

    /// The seq of the session's last event.
    pub fn last_seq(&self, id: &SessionId) -> Result<u64, ManagerError> {
        Ok(self.live(id)?.session.last_seq())
    }

    /// The logged events after `seq`, for replay and for a subscriber that lagged.
    pub fn events_after(&self, id: &SessionId, seq: u64) -> Result<Vec<Event>, ManagerError> {
        let live = self.live(id)?;
        Ok(session::load_log_after(live.session.log_path(), seq)?)
    }

    /// What is open in a session, if anything.
    pub fn open_item(&self, id: &SessionId) -> Result<Option<Open>, ManagerError> {
        Ok(self.live(id)?.state().open.clone())
    }

    /// Whether a turn is running (or queued) in the session.
    pub fn is_running(&self, id: &SessionId) -> Result<bool, ManagerError> {
        Ok(self.live(id)?.state().running)
    }

    /// The session's meta.json as it is now.
    pub fn meta(&self, id: &SessionId) -> Result<Meta, ManagerError> {
        Ok(self.live(id)?.session.meta())
    }

    /// The model the session's next turns run with; one no client can be
    /// made for (an unknown provider, a missing key or script) is refused.
    pub fn set_model(&self, id: &SessionId, model: &str) -> Result<(), ManagerError> {
        let live = self.live(id)?;
        (self.setup)(&live.workspace, Some(model))
            .map_err(|error| ManagerError::BadModel(error.to_string()))?;
        let model = model.to_string();
        live.session.update_meta(|meta| meta.model = Some(model))?;
        Ok(())
    }

    /// The session's grants, each with its id and the card it came from.
    pub fn grants(&self, id: &SessionId) -> Result<Vec<wicket_session::Grant>, ManagerError> {
        Ok(self.meta(id)?.allowed.grants())
    }

    /// Takes back one of the session's grants: the next matching call asks again.
    pub fn revoke_grant(
        &self,
        id: &SessionId,
        grant: &str,
    ) -> Result<wicket_session::Grant, ManagerError> {
        let live = self.live(id)?;
        let mut revoked = None;
        live.session
            .update_meta(|meta| revoked = meta.allowed.revoke(grant))?;
        revoked.ok_or_else(|| {
            ManagerError::NoSuchGrant(format!(
                "session {id} has no grant {grant}; GET /api/sessions/{id}/grants lists them"
            ))
        })
    }

    /// The person's rules in force in every workspace: the home config's
    /// and rules.toml's, each with where it came from.
    pub fn rules(
        &self,
    ) -> Result<Vec<(wicket_gate::rules::Source, wicket_protocol::Rule)>, ManagerError> {
        Ok(Config::load_home(&self.lives.home)?
            .gate_rules(&self.lives.home)
            .all()?)
    }

    /// Saves a rule of the person's to rules.toml; its id.
    pub fn save_rule(
        &self,
        spec: wicket_protocol::RuleSpec,
    ) -> Result<wicket_protocol::RuleId, ManagerError> {
        Ok(wicket_gate::rules::save(
            &self.lives.home.join(wicket_gate::rules::RULES_FILE),
            spec,
        )?)
    }

    /// Takes a saved rule out of rules.toml.
    pub fn revoke_rule(&self, id: &str) -> Result<wicket_protocol::Rule, ManagerError> {
        Ok(wicket_gate::rules::revoke(
            &self.lives.home.join(wicket_gate::rules::RULES_FILE),
            id,
        )?)
    }

    /// Every session on disk, with the queue lengths of the live ones.
    pub fn list(&self) -> Vec<Summary> {
        let live: HashMap<String, Arc<Live>> = self.sessions().clone();
        session::list(&self.lives.home)
            .into_iter()
            .map(|meta| {
                let live = live.get(&meta.id);
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

    /// The sessions with a running turn.
    pub fn running(&self) -> Vec<SessionId> {
        self.sessions()
            .iter()
            .filter(|(_, live)| live.state().running)
            .map(|(id, _)| SessionId::from(id.as_str()))
            .collect()
    }

    /// Adds MCP servers a front end was given for the session (an editor's,
    /// over ACP); they start with the configs' at its first turn. A name the
    /// configs use stays theirs.
    pub fn add_mcp_servers(
        &self,
        id: &SessionId,
        servers: Vec<wicket_mcp::ServerSpec>,
    ) -> Result<(), ManagerError> {
        let live = self.live(id)?;
        let mut extra = wicket_os::sync::lock(&live.extra_mcp);
        for server in servers {
            if !extra.iter().any(|known| known.name == server.name) {
                extra.push(server);
            }
        }
        Ok(())
    }

    /// The process is exiting (`wicket serve` on SIGTERM): from now on no
    /// turn starts, neither a new message nor a queued one; every running
    /// turn is cancelled and given until `patience` runs out to end, then
    /// every MCP server stops. Returns the sessions whose turn had not
    /// ended by then (their log is closed by the next process to open
    /// them, as after a crash).
    pub fn close(&self, patience: std::time::Duration) -> Vec<SessionId> {
        self.closing.store(true, Ordering::SeqCst);
        let deadline = std::time::Instant::now() + patience;
        let running = self.running();
        for id in &running {
            // Err only when the session is gone: nothing left to cancel.
            let _ = self.cancel(id);
        }
        let left: Vec<SessionId> = running
            .into_iter()
            .filter(|id| !self.wait_idle_until(id, deadline))
            .collect();
        self.shutdown();
        left
    }

    /// Waits until the session is idle or `deadline` passes; true when idle
    /// (or gone).
    fn wait_idle_until(&self, id: &SessionId, deadline: std::time::Instant) -> bool {
        let Some(live) = self.sessions().get(id.as_str()).cloned() else {
            return true;
        };
        let mut state = live.state();
        while state.running {
            let Some(left) = deadline.checked_duration_since(std::time::Instant::now()) else {
                return false;
            };
            state = wicket_os::sync::wait_timeout(&live.changed, state, left);
        }
        true
    }

    /// Stops every session's MCP servers (`wicket serve` or `exec` is
    /// exiting): each gets its session closed, then TERM, then KILL; then
    /// telemetry sends what it has left.
    pub fn shutdown(&self) {
        let lives: Vec<Arc<Live>> = self.sessions().values().cloned().collect();
        for live in lives {
            live.mcp.stop();
            if live.started.load(Ordering::SeqCst) {
                self.end_session(&live, "exit");
            }
        }
        self.lives.flush_telemetry();
    }

    /// The SessionEnd hooks of a session this process ran (the person's
    /// own: a workspace's cannot ask for its card as the process leaves).
    fn end_session(&self, live: &Arc<Live>, reason: &str) {
        let model = live.session.meta().model;
        // A session that cannot be set up now (its model gone from the
        // config) has no hooks to run either.
        let Ok((chat, settings)) = (self.setup)(&live.workspace, model.as_deref()) else {
            return;
        };
        if !settings
            .hooks
            .iter()
            .any(|hook| hook.event == wicket_protocol::HookEvent::SessionEnd)
        {
            return;
        }
        let runner = Runner {
            plan: false,
            tools: &live.tools,
            session: &live.session,
            chat: chat.as_ref(),
            settings: &settings,
            runtime: &self.lives.runtime,
            mcp: None,
            on_text: None,
            checkpoints: None,
            tasks: None,
            child: None,
        };
        runner.session_end(reason);
    }

    /// Blocks until the session has no running turn and nothing queued.
    pub fn wait_idle(&self, id: &SessionId) -> Result<(), ManagerError> {
        let live = self.live(id)?;
        let mut state = live.state();
        while state.running {
            state = wicket_os::sync::wait(&live.changed, state);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
