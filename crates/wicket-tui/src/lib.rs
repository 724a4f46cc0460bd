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
use wicket_core::manager::{Manager, ManagerError, TurnSetup, standard_setup};
use wicket_protocol::Event;

use crate::app::{Action, App};
use crate::terminal::Input;

/// What the loop waits for.
pub enum Message {
    /// From the keyboard thread.
    Input(Input),
    /// An event of the session with this id.
    Event(String, Box<Event>),
    /// A piece of a reply of the session with this id.
    Text(String, String),
    /// Events of the session with this id were dropped; read them from the log.
    Lagged(String),
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
    pub session: Option<String>,
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
    id: String,
    workspace: PathBuf,
    last_seq: u64,
}

fn follow(manager: &Manager, id: &str, to: &mpsc::Sender<Message>) -> Result<(), ManagerError> {
    let mut events = manager.subscribe(id)?;
    let mut pieces = manager.subscribe_text(id)?;
    let (to_events, to_text) = (to.clone(), to.clone());
    let (events_id, text_id) = (id.to_string(), id.to_string());
    std::thread::spawn(move || {
        loop {
            let message = match events.blocking_recv() {
                Ok(event) => Message::Event(events_id.clone(), Box::new(event)),
                Err(RecvError::Lagged(_)) => Message::Lagged(events_id.clone()),
                Err(RecvError::Closed) => return,
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
    id: Option<&str>,
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
    follow(manager, &id, to)?;
    let history = manager.events_after(&id, 0)?;
    for event in &history {
        app.on_event(event);
    }
    let last_seq = history.last().map_or(0, |event| event.seq);
    Ok((
        Shown {
            id,
            workspace,
            last_seq,
        },
        app,
    ))
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
    let (mut shown, mut app) = match show(
        &manager,
        &setup,
        &options,
        options.session.as_deref(),
        &options.workspace,
        false,
        &to,
    ) {
        Ok(opened) => opened,
        Err(error) => {
            eprintln!("wicket: {error}");
            return Ok(1);
        }
    };
    let signals_to = to.clone();
    let mut signals = signal_hook::iterator::Signals::new([
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ])?;
    std::thread::spawn(move || {
        if signals.forever().next().is_some() {
            let _ = signals_to.send(Message::Signal);
        }
    });
    let (mut terminal, enhanced) = terminal::enter()?;
    let _guard = terminal::Guard;
    app.set_enhanced_keys(enhanced);
    let (flush_to, flushes) = mpsc::channel::<u64>();
    terminal::input_thread(to.clone(), flushes)?;
    let mut dirty = true;
    let code = loop {
        if dirty {
            terminal.draw(|frame| app.render(frame))?;
            if let Some(epoch) = app.flush_needed() {
                let _ = flush_to.send(epoch);
            }
        }
        let message = match from.recv_timeout(Duration::from_millis(120)) {
            Ok(message) => message,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                dirty = app.tick();
                continue;
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break 0,
        };
        dirty = true;
        let action = match message {
            Message::Input(Input::Event(TermEvent::Key(key))) => app.on_key(key),
            Message::Input(Input::Event(TermEvent::Paste(text))) => {
                app.on_paste(&text);
                Action::None
            }
            Message::Input(Input::Event(TermEvent::Mouse(mouse))) => {
                app.on_mouse(mouse.kind);
                Action::None
            }
            Message::Input(Input::Event(_)) => Action::None,
            Message::Input(Input::Flushed(epoch)) => {
                app.flushed(epoch);
                Action::None
            }
            Message::Input(Input::Closed) => break 0,
            Message::Event(id, event) => {
                if id == shown.id && event.seq > shown.last_seq {
                    shown.last_seq = event.seq;
                    app.on_event(&event);
                }
                Action::None
            }
            Message::Text(id, piece) => {
                if id == shown.id {
                    app.on_text(&piece);
                }
                Action::None
            }
            Message::Lagged(id) => {
                if id == shown.id
                    && let Ok(events) = manager.events_after(&shown.id, shown.last_seq)
                {
                    for event in events {
                        shown.last_seq = event.seq;
                        app.on_event(&event);
                    }
                }
                Action::None
            }
            Message::Signal => break 143,
        };
        match action {
            Action::None => {}
            Action::Quit => break 0,
            Action::Send(text) => {
                if let Err(error) = manager.send(&shown.id, &text) {
                    app.say(&error.to_string(), Color::Yellow);
                }
            }
            Action::Answer { card, answer } => {
                if let Err(error) = manager.answer(&shown.id, &card, answer) {
                    app.say(&error.to_string(), Color::Yellow);
                }
            }
            Action::Reply { question, text } => {
                if let Err(error) = manager.reply(&shown.id, &question, &text) {
                    app.say(&error.to_string(), Color::Yellow);
                }
            }
            Action::Cancel => {
                let _ = manager.cancel(&shown.id);
            }
            Action::Compact => {
                if let Err(error) = manager.compact(&shown.id) {
                    app.say(&error.to_string(), Color::Yellow);
                }
            }
            Action::SetModel(model) => match setup(&shown.workspace, Some(&model)) {
                Err(error) => app.say(&format!("{model}: {error}"), Color::Yellow),
                Ok(_) => match manager.open(Some(&shown.id), &shown.workspace, Some(&model)) {
                    Ok(_) => {
                        app.set_model(&model);
                        app.say(&format!("the next turn uses {model}"), Color::Green);
                    }
                    Err(error) => app.say(&error.to_string(), Color::Yellow),
                },
            },
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
                app.pick_session(sessions);
            }
            Action::NewSession | Action::OpenSession(_) => {
                let (id, workspace) = match &action {
                    Action::OpenSession(id) => match manager.meta(id) {
                        Ok(meta) => (Some(id.clone()), PathBuf::from(meta.workspace)),
                        Err(error) => {
                            app.say(&error.to_string(), Color::Yellow);
                            continue;
                        }
                    },
                    _ => (None, shown.workspace.clone()),
                };
                match show(
                    &manager,
                    &setup,
                    &options,
                    id.as_deref(),
                    &workspace,
                    enhanced,
                    &to,
                ) {
                    Ok((next, next_app)) => {
                        shown = next;
                        app = next_app;
                    }
                    Err(error) => app.say(&error.to_string(), Color::Yellow),
                }
            }
        }
    };
    // What runs ends with the UI; the session stays resumable.
    for id in manager.running() {
        let _ = manager.cancel(&id);
        let _ = manager.wait_idle(&id);
    }
    manager.shutdown();
    terminal::restore();
    Ok(code)
}
