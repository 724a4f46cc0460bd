//! `wicket chat`: a full-screen conversation with the gate, over the same
//! [`Manager`] the server and `wicket exec` use, so the terminal and the page
//! can never disagree about what a card means. [`app::App`] is the state and
//! the keys (drawn on a test backend in the tests); this module is the loop
//! that feeds it the session's events and carries out what it asks for.

pub mod app;
pub mod composer;
pub mod markdown;
pub mod terminal;
pub mod transcript;

use std::path::{Path, PathBuf};
use std::sync::{Arc, mpsc};
use std::time::Duration;

use ratatui::crossterm::event::Event as TermEvent;
use ratatui::style::Color;
use tokio::sync::broadcast::error::RecvError;
use wicket_core::config::Config;
use wicket_core::manager::{Manager, ManagerError, RewindTo, TurnSetup, standard_setup};
use wicket_protocol::text::visible_line;
use wicket_protocol::{Event, EventBody, SessionId};

use crate::app::{Action, App, Pick};
use crate::terminal::Input;
use wicket_protocol::event::{RewoundEvent, ToolCallEvent, UserMessageEvent};

/// What the loop waits for.
pub enum Message {
    /// From the keyboard thread.
    Input(Input),
    /// An event of the session with this id.
    Event(SessionId, Box<Event>),
    /// A piece of a reply of the session with this id.
    Text(SessionId, String),
    /// The session's events could not be read (its log, after a lag).
    Failed(SessionId, String),
    /// SIGTERM or SIGHUP.
    Signal,
}

/// How `wicket chat` starts.
#[derive(Debug, Clone)]
pub struct Options {
    /// `$WICKET_HOME`.
    pub home: PathBuf,
    /// The workspace of a new session.
    pub workspace: PathBuf,
    /// The model (else the session's, `WICKET_MODEL`, the config's).
    pub model: Option<String>,
    /// Go on with this session.
    pub session: Option<SessionId>,
}

/// The model a session's next turn uses, and what is wrong when there is none.
fn model_of(
    setup: &TurnSetup,
    home: &Path,
    workspace: &Path,
    model: Option<&str>,
) -> (Option<String>, Option<String>) {
    let chosen = Config::load(home, workspace)
        .ok()
        .and_then(|config| config.model_from(model));
    match setup(workspace, chosen.as_deref()) {
        Ok(_) => (chosen, None),
        Err(error) => (chosen, Some(error.to_string())),
    }
}

/// The session on screen, and the threads that bring its events.
struct Shown {
    id: SessionId,
    workspace: PathBuf,
    last_seq: u64,
}

/// Follows the session from `after` on two threads: its events (a lag is
/// caught up from the log by the follower) and the pieces of its replies.
fn follow(
    manager: &Manager,
    id: &SessionId,
    after: u64,
    to: &mpsc::Sender<Message>,
) -> Result<(), ManagerError> {
    let mut events = manager.follow(id, after)?;
    let mut pieces = manager.subscribe_text(id)?;
    let (to_events, to_text) = (to.clone(), to.clone());
    let (events_id, text_id) = (id.clone(), id.clone());
    std::thread::spawn(move || {
        loop {
            let message = match events.blocking_next() {
                Ok(Some(event)) => Message::Event(events_id.clone(), Box::new(event)),
                Ok(None) => return,
                Err(error) => Message::Failed(events_id.clone(), error.to_string()),
            };
            if to_events.send(message).is_err() {
                return;
            }
        }
    });
    std::thread::spawn(move || {
        loop {
            match pieces.blocking_recv() {
                Ok(piece) => {
                    if to_text.send(Message::Text(text_id.clone(), piece)).is_err() {
                        return;
                    }
                }
                // Pieces are not logged: the reply's event brings its whole text.
                Err(RecvError::Lagged(_)) => {}
                Err(RecvError::Closed) => return,
            }
        }
    });
    Ok(())
}

/// Opens `id` (or a new session) and a fresh UI for it, its history loaded.
fn show(
    manager: &Manager,
    setup: &TurnSetup,
    options: &Options,
    id: Option<&SessionId>,
    workspace: &Path,
    enhanced: bool,
    to: &mpsc::Sender<Message>,
) -> Result<(Shown, App), ManagerError> {
    let id = manager.open(id, workspace, options.model.as_deref())?;
    let meta = manager.meta(&id)?;
    let workspace = PathBuf::from(&meta.workspace);
    let (model, problem) = model_of(
        setup,
        &options.home,
        &workspace,
        meta.model.as_deref().or(options.model.as_deref()),
    );
    let mut app = App::new(&id, &meta.workspace, model, problem, enhanced);
    let history = manager.events_after(&id, 0)?;
    for event in &history {
        app.on_event(event);
    }
    let last_seq = history.last().map_or(0, |event| event.seq);
    follow(manager, &id, last_seq, to)?;
    Ok((
        Shown {
            id,
            workspace,
            last_seq,
        },
        app,
    ))
}

/// The loop's state: the session on screen, its UI, and what opens others.
struct Ui {
    manager: Arc<Manager>,
    setup: TurnSetup,
    options: Options,
    to: mpsc::Sender<Message>,
    enhanced: bool,
    shown: Shown,
    app: App,
}

impl Ui {
    /// Takes one message; the exit code when it ends the UI.
    fn handle(&mut self, message: Message) -> Option<u8> {
        let action = match message {
            Message::Input(Input::Event(TermEvent::Key(key))) => self.app.on_key(key),
            Message::Input(Input::Event(TermEvent::Paste(text))) => {
                self.app.on_paste(&text);
                Action::None
            }
            Message::Input(Input::Event(TermEvent::Mouse(mouse))) => {
                self.app.on_mouse(mouse.kind);
                Action::None
            }
            Message::Input(Input::Event(_)) => Action::None,
            Message::Input(Input::Flushed(epoch)) => {
                self.app.flushed(epoch);
                Action::None
            }
            Message::Input(Input::Closed) => return Some(0),
            Message::Event(id, event) => {
                if id == self.shown.id && event.seq > self.shown.last_seq {
                    self.shown.last_seq = event.seq;
                    self.app.on_event(&event);
                }
                Action::None
            }
            Message::Text(id, piece) => {
                if id == self.shown.id {
                    self.app.on_text(&piece);
                }
                Action::None
            }
            Message::Failed(id, error) => {
                if id == self.shown.id {
                    self.app.say(
                        &format!(
                            "the session's events stopped: {error}; open it again (/sessions)"
                        ),
                        Color::Red,
                    );
                }
                Action::None
            }
            Message::Signal => return Some(143),
        };
        self.perform(action)
    }

    /// Carries out what the UI asked for; the exit code when it is to leave.
    // One arm per `Action` the UI asks for, the one table of what each does; past 80 lines because the match is exhaustive.
    fn perform(&mut self, action: Action) -> Option<u8> {
        let (manager, id) = (&self.manager, &self.shown.id);
        let done = match action {
            Action::None => Ok(()),
            Action::Quit => return Some(0),
            Action::Send(text) => manager.send_with(id, &text, self.app.plan()).map(drop),
            Action::Answer {
                card,
                answer,
                widened,
                reason,
            } => manager.answer_with(
                id,
                &card,
                wicket_core::manager::Answered {
                    answer,
                    widened,
                    reason,
                },
            ),
            Action::Grants => {
                let listed = grants(manager, id);
                self.app.say(&listed, Color::Gray);
                Ok(())
            }
            Action::Revoke(grant) => {
                let said = match manager.revoke_grant(id, &grant) {
                    Ok(revoked) => Ok(format!("revoked the session's grant {}", revoked.id)),
                    Err(ManagerError::NoSuchGrant(_)) => manager.revoke_rule(&grant).map(|rule| {
                        format!("revoked rule {} ({})", rule.id, rule.spec().describe())
                    }),
                    Err(error) => Err(error),
                };
                match said {
                    Ok(said) => self.app.say(&said, Color::Gray),
                    Err(error) => self.app.say(&error.to_string(), Color::Yellow),
                }
                Ok(())
            }
            Action::Reply { question, text } => manager.reply(id, &question, &text),
            Action::Cancel => {
                // Err only when the session is gone: nothing left to cancel.
                let _ = manager.cancel(id);
                Ok(())
            }
            Action::Compact => manager.compact(id),
            Action::RewindList => {
                match rewind_points(manager, id) {
                    Ok(points) if points.is_empty() => self.app.say(
                        "nothing to rewind yet: a checkpoint is taken before each write and command",
                        Color::Gray,
                    ),
                    Ok(points) => self.app.pick(
                        points,
                        " rewind the files to before: Enter shows what changes, Esc closes ",
                    ),
                    Err(error) => self.app.say(&error.to_string(), Color::Yellow),
                }
                Ok(())
            }
            Action::RewindPlan(to) => {
                match manager.rewind_plan(id, to) {
                    Ok((target, plan)) if plan.is_empty() => self.app.say(
                        &format!(
                            "nothing to rewind: the files are as they were before event {}",
                            target.seq
                        ),
                        Color::Gray,
                    ),
                    Ok((target, plan)) => {
                        let mut lines =
                            vec![format!("rewind to before event {} would:", target.seq)];
                        lines.extend(plan.lines().into_iter().map(|line| format!("  {line}")));
                        self.app.say(&lines.join("\n"), Color::Gray);
                        let to = RewindTo::Seq(target.seq);
                        self.app.pick(
                            vec![
                                (Pick::Cancel, "keep the files as they are".into()),
                                (
                                    Pick::Confirm(to),
                                    "rewind them (/rewind undo takes it back)".into(),
                                ),
                            ],
                            " rewind? Enter chooses, Esc closes ",
                        );
                    }
                    Err(error) => self.app.say(&error.to_string(), Color::Yellow),
                }
                Ok(())
            }
            Action::Rewind(to) => {
                if let Err(error) = manager.rewind(id, to) {
                    self.app.say(&error.to_string(), Color::Yellow);
                }
                Ok(())
            }
            Action::SetModel(model) => {
                self.set_model(&model);
                Ok(())
            }
            Action::ListSessions => {
                let sessions = manager
                    .list()
                    .into_iter()
                    .map(|summary| {
                        let label = format!(
                            "{}  {:<7}  {}  {}",
                            summary.id,
                            summary.status.as_str(),
                            summary.title,
                            summary.workspace
                        );
                        (summary.id, label)
                    })
                    .collect();
                self.app.pick_session(sessions);
                Ok(())
            }
            Action::NewSession => self.open(None, self.shown.workspace.clone()),
            Action::OpenSession(id) => match manager.meta(&id) {
                Ok(meta) => self.open(Some(&id), PathBuf::from(meta.workspace)),
                Err(error) => Err(error),
            },
        };
        if let Err(error) = done {
            self.app.say(&error.to_string(), Color::Yellow);
        }
        None
    }

    /// `/model P:N`: the next turn uses `model`, if it can be set up.
    fn set_model(&mut self, model: &str) {
        if let Err(error) = (self.setup)(&self.shown.workspace, Some(model)) {
            self.app.say(&format!("{model}: {error}"), Color::Yellow);
            return;
        }
        match self
            .manager
            .open(Some(&self.shown.id), &self.shown.workspace, Some(model))
        {
            Ok(_) => {
                self.app.set_model(model);
                self.app
                    .say(&format!("the next turn uses {model}"), Color::Green);
            }
            Err(error) => self.app.say(&error.to_string(), Color::Yellow),
        }
    }

    /// Puts session `id` (or a new one in `workspace`) on screen.
    fn open(&mut self, id: Option<&SessionId>, workspace: PathBuf) -> Result<(), ManagerError> {
        let (shown, app) = show(
            &self.manager,
            &self.setup,
            &self.options,
            id,
            &workspace,
            self.enhanced,
            &self.to,
        )?;
        self.shown = shown;
        self.app = app;
        Ok(())
    }
}

/// SIGTERM or SIGHUP becomes a message: the loop ends and the terminal is
/// restored before the process exits.
fn on_signal(to: mpsc::Sender<Message>) -> std::io::Result<()> {
    let mut signals = signal_hook::iterator::Signals::new([
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ])?;
    std::thread::spawn(move || {
        if signals.forever().next().is_some() {
            // The UI loop has ended: no one is left to tell.
            let _ = to.send(Message::Signal);
        }
    });
    Ok(())
}

/// Runs the UI until the person leaves; the exit code.
pub fn run(options: Options) -> anyhow::Result<u8> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let setup = standard_setup(&options.home);
    let manager = Arc::new(Manager::new(
        &options.home,
        runtime.handle().clone(),
        setup.clone(),
    ));
    let (to, from) = mpsc::channel::<Message>();
    // A session another process holds is refused here, before the screen
    // is taken, with the holder's pid.
    let (shown, app) = match show(
        &manager,
        &setup,
        &options,
        options.session.as_ref(),
        &options.workspace,
        false,
        &to,
    ) {
        Ok(opened) => opened,
        Err(error) => {
            eprintln!(
                "wicket: {}",
                wicket_protocol::text::visible(&error.to_string())
            );
            return Ok(1);
        }
    };
    on_signal(to.clone())?;
    let (mut terminal, enhanced) = terminal::enter()?;
    let _guard = terminal::Guard;
    let (flush_to, flushes) = mpsc::channel::<u64>();
    terminal::input_thread(to.clone(), flushes)?;
    let mut ui = Ui {
        manager: manager.clone(),
        setup,
        options,
        to,
        enhanced,
        shown,
        app,
    };
    ui.app.set_enhanced_keys(enhanced);
    let mut dirty = true;
    let code = loop {
        if dirty {
            terminal.draw(|frame| ui.app.render(frame))?;
            if let Some(epoch) = ui.app.flush_needed() {
                // The UI loop has ended: no one is left to tell.
                let _ = flush_to.send(epoch);
            }
        }
        match from.recv_timeout(Duration::from_millis(120)) {
            Ok(message) => {
                dirty = true;
                if let Some(code) = ui.handle(message) {
                    break code;
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => dirty = ui.app.tick(),
            Err(mpsc::RecvTimeoutError::Disconnected) => break 0,
        }
    };
    // What runs ends with the UI; the session stays resumable.
    for id in manager.running() {
        // Err only when the session is gone: nothing left to cancel or wait for.
        let _ = manager.cancel(&id);
        let _ = manager.wait_idle(&id);
    }
    manager.shutdown();
    terminal::restore();
    Ok(code)
}

/// `/grants`: the rules in force, then the session's grants, one a line.
/// The points `/rewind` offers, oldest first: each turn that wrote or ran
/// something, then each write and command in it.
fn rewind_points(manager: &Manager, id: &SessionId) -> Result<Vec<(Pick, String)>, ManagerError> {
    let checkpoints = manager.checkpoints(id)?;
    let events = manager.events_after(id, 0)?;
    let mut points = Vec::new();
    let mut turn: Option<(u64, String)> = None;
    let mut checkpoint = checkpoints.iter().peekable();
    for event in &events {
        if let EventBody::UserMessage(UserMessageEvent { text, .. }) = &event.body {
            // Its first line whole: the picker cuts it where the width ends.
            turn = Some((event.seq, text.lines().next().unwrap_or("").to_string()));
        }
        while let Some(info) = checkpoint.next_if(|info| info.seq == event.seq) {
            if let Some((seq, text)) = turn.take() {
                points.push((
                    Pick::Rewind(RewindTo::Seq(seq)),
                    format!("{seq:>5}  turn: {}", visible_line(&text)),
                ));
            }
            let what = match &event.body {
                EventBody::ToolCall(ToolCallEvent {
                    name, arguments, ..
                }) => format!("{name} {}", wicket_protocol::call_summary(name, arguments)),
                EventBody::Rewound(RewoundEvent { .. }) => "the rewind".to_string(),
                _ => info.tool.clone(),
            };
            // What it changed first, the call's words after it: a long
            // command is what the width cuts.
            points.push((
                Pick::Rewind(RewindTo::Seq(info.seq)),
                format!(
                    "{:>5}    {}: before {}",
                    info.seq,
                    info.changed_line(),
                    visible_line(&what)
                ),
            ));
        }
    }
    Ok(points)
}

fn grants(manager: &Manager, id: &SessionId) -> String {
    let mut lines = Vec::new();
    match manager.rules() {
        Ok(rules) => {
            for (source, rule) in rules {
                lines.push(source.listed(&rule));
            }
        }
        Err(error) => lines.push(format!("the rules cannot be read: {error}")),
    }
    match manager.grants(id) {
        Ok(grants) => {
            for grant in grants {
                lines.push(grant.listed());
            }
        }
        Err(error) => lines.push(format!("the session's grants cannot be read: {error}")),
    }
    if lines.is_empty() {
        lines.push("no rules and no grants; a card's [a]lways saves a rule".into());
    } else {
        lines.push("/grants revoke ID takes one back".into());
    }
    lines.join("\n")
}
