//! `wicket exec "ASK"`: one turn from a terminal or a script, through the
//! session manager. The main thread prints the session's events as they are
//! appended; a second thread answers cards and questions (a fixed policy,
//! JSON lines on stdin, or a prompt on the terminal), so printing never waits
//! on input. SIGINT cancels the turn and exits 130.

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::time::Duration;

use wicket_core::manager::{Manager, standard_setup};
use wicket_protocol::{Answer, Card, Event, EventBody, SessionId, ToolOutput, TurnOutcome};
use wicket_session::{self as session, Session};

use crate::answer::{prompt_card, prompt_reply};
use crate::show;
use wicket_protocol::event::{
    CardEvent, QuestionEvent, ReplyEvent, RetryEvent, SessionStartedEvent, ToolResultEvent,
    UserMessageEvent,
};

/// How cards (and questions) are answered.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// The same answer for every card; questions get [`NO_ONE_TO_ASK`].
    Policy(Answer),
    /// JSON lines on stdin.
    Stdin,
    /// A prompt on the terminal.
    Terminal,
}

/// What the person is asked.
enum Ask {
    Card(Box<Card>),
    Question {
        id: wicket_protocol::QuestionId,
        question: String,
    },
}

/// The reply a fixed policy gives a question: nobody is there to answer.
const NO_ONE_TO_ASK: &str = "No one can answer: this turn runs with a fixed --answers policy. Decide for yourself, and say what you assumed.";

/// `wicket exec`'s options.
pub(crate) struct Options {
    pub ask: String,
    pub workspace: Option<PathBuf>,
    pub model: Option<String>,
    pub session: Option<String>,
    pub json: bool,
    pub mode: Option<Mode>,
    /// Exit 3 when any call of the turn was denied.
    pub fail_on_deny: bool,
    /// The turn starts in plan mode.
    pub plan: bool,
}

/// `exec`'s exit code when `--fail-on-deny` is given and a call was denied.
pub(crate) const DENIED_EXIT: u8 = 3;

/// The workspace and model of a run: the flags, else the continued session's.
fn resolve(options: &Options, home: &std::path::Path) -> anyhow::Result<(PathBuf, Option<String>)> {
    let existing = options
        .session
        .as_ref()
        .and_then(|id| Session::meta_of(home, id).ok());
    let workspace = match (&options.workspace, &existing) {
        (Some(dir), _) => dir.clone(),
        (None, Some(meta)) => PathBuf::from(&meta.workspace),
        (None, None) => std::env::current_dir()?,
    };
    let model = options
        .model
        .clone()
        .or_else(|| existing.and_then(|meta| meta.model));
    Ok((workspace, model))
}

pub(crate) fn exec(options: Options) -> anyhow::Result<ExitCode> {
    let home = session::home();
    let (workspace, model) = resolve(&options, &home)?;
    let setup = standard_setup(&home);
    // A missing model or key is said before any session is made.
    if let Err(error) = setup(&workspace, model.as_deref()) {
        show::say(error);
        return Ok(ExitCode::from(1));
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let manager = Arc::new(Manager::new(&home, runtime.handle().clone(), setup));
    let id = manager.open(
        options.session.map(SessionId::from).as_ref(),
        &workspace,
        options.model.as_deref(),
    )?;
    let interrupted = cancel_on_ctrl_c(&runtime, &manager, &id);
    let mode = options.mode.unwrap_or(if std::io::stdin().is_terminal() {
        Mode::Terminal
    } else {
        Mode::Policy(Answer::Deny)
    });
    if let Mode::Policy(_) = mode {
        // Its denials must not tell the model to ask: no one would answer.
        manager.set_unattended(&id, true)?;
    }
    let (asks, asked) = mpsc::channel::<Ask>();
    {
        let (manager, id) = (manager.clone(), id.clone());
        std::thread::spawn(move || answer_loop(&manager, &id, mode, asked));
    }
    let mut printer = Printer::new(options.json);
    let backlog = manager.events_after(&id, 0)?;
    printer.print(&first_event(&backlog, &id, &workspace));
    let mut events = manager.follow(&id, backlog.last().map_or(0, |event| event.seq))?;
    drop(backlog);

    manager.send_with(&id, &options.ask, options.plan)?;
    let mut denials = Denials::default();
    while let Some(event) = events.blocking_next()? {
        printer.print(&event);
        denials.see(&event.body);
        if let Some(code) = react(&event, &asks, &interrupted) {
            // A Ctrl-C stays 130; a result or a failure after a denial is 3.
            let code = match code {
                0 | 1 if !denials.calls.is_empty() && options.fail_on_deny => {
                    denials.tell(options.json);
                    DENIED_EXIT
                }
                code => code,
            };
            // `turn_ended` is written once the session is idle: nothing
            // of the turn is left to wait for.
            manager.shutdown();
            // Stdout gone (a closed pipe) leaves nothing to tell; the exit code says how it ended.
            let _ = std::io::stdout().flush();
            return Ok(ExitCode::from(code));
        }
    }
    anyhow::bail!("the session's event stream ended before its turn did")
}

/// The session's first event (`session_started`), which names its id.
fn first_event(backlog: &[Event], id: &str, workspace: &std::path::Path) -> Event {
    match backlog.first() {
        Some(
            event @ Event {
                body: EventBody::SessionStarted(SessionStartedEvent { .. }),
                ..
            },
        ) => event.clone(),
        _ => Event {
            seq: 0,
            ts: String::new(),
            body: EventBody::SessionStarted(SessionStartedEvent {
                session: id.to_string(),
                workspace: workspace.display().to_string(),
            }),
        },
    }
}

/// SIGINT cancels the turn; the flag says it happened.
fn cancel_on_ctrl_c(
    runtime: &tokio::runtime::Runtime,
    manager: &Arc<Manager>,
    id: &SessionId,
) -> Arc<AtomicBool> {
    let interrupted = Arc::new(AtomicBool::new(false));
    let (manager, id, flag) = (manager.clone(), id.clone(), interrupted.clone());
    runtime.spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            flag.store(true, Ordering::SeqCst);
            // Err only when the session is gone: nothing left to cancel.
            let _ = manager.cancel(&id);
        }
    });
    interrupted
}

/// Hands cards and questions to the answer thread; the exit code once the turn ended.
fn react(event: &Event, asks: &mpsc::Sender<Ask>, interrupted: &AtomicBool) -> Option<u8> {
    match &event.body {
        EventBody::Card(CardEvent { card, .. }) => {
            // The UI loop has ended: no one is left to tell.
            let _ = asks.send(Ask::Card(Box::new(card.clone())));
            None
        }
        EventBody::Question(QuestionEvent { id, question, .. }) => {
            // The UI loop has ended: no one is left to tell.
            let _ = asks.send(Ask::Question {
                id: id.clone(),
                question: question.clone(),
            });
            None
        }
        body => exit_code(wicket_core::turn::turn_over(body)?, interrupted),
    }
}

/// The calls of the turn that were denied: by the person or a fixed policy
/// at a card, by a rule, or by a hook (a withdrawn card is a cancel, not a
/// denial).
#[derive(Default)]
struct Denials {
    /// Each card's call.
    cards: std::collections::HashMap<String, String>,
    /// Each denied call once, with why (a sub-task's named
    /// `SESSION/CALL`: its ids are its own session's).
    calls: Vec<(String, String)>,
}

impl Denials {
    fn see(&mut self, body: &EventBody) {
        let (call, why) = match body {
            EventBody::Card(CardEvent { call_id, card, .. }) => {
                self.cards.insert(card.id.to_string(), call_id.to_string());
                return;
            }
            EventBody::Answer(answer) if answer.answer == Answer::Deny => {
                let Some(call) = self.cards.get(answer.card.as_str()) else {
                    return;
                };
                (call.clone(), format!("card {} denied", answer.card))
            }
            EventBody::ToolResult(ToolResultEvent {
                call_id,
                result: Err(error),
            }) if error.kind == wicket_protocol::ErrorKind::Denied
                && !error.message.starts_with("the card was withdrawn") =>
            {
                (call_id.to_string(), error.message.clone())
            }
            // A sub-task's own denials (a rule's or a hook's never reach
            // this stream as cards do).
            EventBody::ToolResult(ToolResultEvent {
                result: Ok(ToolOutput::Task(task)),
                ..
            }) => {
                for denial in &task.denied {
                    self.note(
                        format!("{}/{}", task.task.session, denial.call_id),
                        denial.why.clone(),
                    );
                }
                return;
            }
            _ => return,
        };
        self.note(call, why);
    }

    fn note(&mut self, call: String, why: String) {
        match self.calls.iter_mut().find(|(seen, _)| *seen == call) {
            // The result says more than the answer did.
            Some(seen) => seen.1 = why,
            None => self.calls.push((call, why)),
        }
    }

    /// The last line: which calls were denied (`{"type": "denied", "calls":
    /// [{"call_id", "why"}]}` with `--json`, a line on stderr without).
    fn tell(&self, json: bool) {
        if json {
            let calls: Vec<serde_json::Value> = self
                .calls
                .iter()
                .map(|(call, why)| serde_json::json!({"call_id": call, "why": why}))
                .collect();
            let line = serde_json::json!({"type": "denied", "calls": calls});
            show::line_out(&line.to_string());
        } else {
            let calls: Vec<&str> = self.calls.iter().map(|(call, _)| call.as_str()).collect();
            show::say(format!(
                "exit {DENIED_EXIT}: denied calls (--fail-on-deny): {}",
                calls.join(", ")
            ));
        }
    }
}

/// `exec`'s exit code for a turn that ended so: 0 for a result, 130 when
/// Ctrl-C cancelled it, 1 otherwise.
fn exit_code(outcome: TurnOutcome, interrupted: &AtomicBool) -> Option<u8> {
    Some(match outcome {
        TurnOutcome::Result => 0,
        TurnOutcome::Cancelled if interrupted.load(Ordering::SeqCst) => 130,
        TurnOutcome::Cancelled
        | TurnOutcome::Error
        | TurnOutcome::StepLimit
        | TurnOutcome::Budget
        | TurnOutcome::Interrupted => 1,
    })
}

/// Answers what the turn asks, one at a time.
fn answer_loop(manager: &Manager, id: &SessionId, mode: Mode, asked: mpsc::Receiver<Ask>) {
    let mut early: Vec<serde_json::Value> = Vec::new();
    for ask in asked {
        match (mode, ask) {
            (Mode::Policy(answer), Ask::Card(card)) => {
                // Refused only when the card or question is no longer open (the turn was cancelled meanwhile): nothing to answer.
                let _ = manager.answer(id, &card.id, answer);
            }
            (Mode::Policy(_), Ask::Question { id: qid, .. }) => {
                // Refused only when the card or question is no longer open (the turn was cancelled meanwhile): nothing to answer.
                let _ = manager.reply(id, &qid, NO_ONE_TO_ASK);
            }
            (Mode::Stdin, ask) => {
                if !stdin_answer(manager, id, &ask, &mut early) {
                    return;
                }
            }
            (Mode::Terminal, Ask::Card(card)) => {
                if let Some(answered) = prompt_card(&card) {
                    // Refused only when the card or question is no longer open (the turn was cancelled meanwhile): nothing to answer.
                    let _ = manager.answer_with(id, &card.id, answered);
                }
            }
            (Mode::Terminal, Ask::Question { id: qid, question }) => {
                if let Some(reply) = prompt_reply(&question) {
                    // Refused only when the card or question is no longer open (the turn was cancelled meanwhile): nothing to answer.
                    let _ = manager.reply(id, &qid, &reply);
                }
            }
        }
    }
}

/// Reads JSON lines until one answers `ask`; lines for things not open yet
/// wait in `early`. False at the end of stdin.
fn stdin_answer(
    manager: &Manager,
    id: &SessionId,
    ask: &Ask,
    early: &mut Vec<serde_json::Value>,
) -> bool {
    let matches = |value: &serde_json::Value| match ask {
        Ask::Card(card) => value["card"].as_str() == Some(card.id.as_str()),
        Ask::Question { id: qid, .. } => value["question"].as_str() == Some(qid.as_str()),
    };
    let apply = |value: &serde_json::Value| -> bool {
        match ask {
            Ask::Card(card) => match crate::answer::answer_line(value) {
                Ok(answered) => manager.answer_with(id, &card.id, answered).is_ok(),
                Err(error) => {
                    show::say(format!("the answer for card {}: {error}", card.id));
                    false
                }
            },
            Ask::Question { id: qid, .. } => match value["reply"].as_str() {
                Some(reply) => manager.reply(id, qid, reply).is_ok(),
                None => {
                    show::say(format!(
                        "a reply line is {{\"question\":\"{qid}\",\"reply\":\"…\"}}"
                    ));
                    false
                }
            },
        }
    };
    if let Some(index) = early.iter().position(matches) {
        let value = early.remove(index);
        if apply(&value) {
            return true;
        }
    }
    let stdin = std::io::stdin();
    let mut line = String::new();
    loop {
        line.clear();
        match stdin.lock().read_line(&mut line) {
            Ok(0) | Err(_) => return false,
            Ok(_) => {}
        }
        if line.trim().is_empty() {
            continue;
        }
        let Ok(value) = serde_json::from_str::<serde_json::Value>(&line) else {
            eprintln!(
                "wicket: an answer line is not JSON; send {{\"card\":ID,\"answer\":\"allow_once|allow_session|deny\"}} or {{\"question\":ID,\"reply\":\"…\"}}"
            );
            continue;
        };
        if matches(&value) {
            if apply(&value) {
                return true;
            }
        } else {
            early.push(value);
        }
    }
}

/// Prints events: JSON lines, or a readable transcript with a spinner on
/// stderr while the model is working.
struct Printer {
    json: bool,
    spinner: Option<Spinner>,
    /// When word on a checkpoint's walk was last said on stderr.
    walk_said: Option<std::time::Instant>,
}

/// Word on a checkpoint's walk comes every second while a card is up
/// (the card's count moves in the TUI and the page); stderr says it this often.
const WALK_SAID_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

impl Printer {
    fn new(json: bool) -> Printer {
        let spinner = (!json && std::io::stderr().is_terminal()).then(Spinner::start);
        Printer {
            json,
            spinner,
            walk_said: None,
        }
    }

    fn print(&mut self, event: &Event) {
        if let EventBody::Notice(notice) = &event.body {
            let walk = notice.is_walk();
            if !walk
                || self
                    .walk_said
                    .is_none_or(|at| at.elapsed() >= WALK_SAID_EVERY)
            {
                // On stderr in every mode: a script reading --json sees it in the
                // stream, and the person sees it either way.
                show::say(format!("notice: {}", notice.message));
                if walk {
                    self.walk_said = Some(std::time::Instant::now());
                }
            }
        }
        if self.json {
            if let Ok(line) = serde_json::to_string(event) {
                show::line_out(&line);
            }
            return;
        }
        if let Some(spinner) = &self.spinner {
            let thinking = matches!(
                event.body,
                EventBody::UserMessage(UserMessageEvent { .. })
                    | EventBody::ToolResult(ToolResultEvent { .. })
                    | EventBody::Reply(ReplyEvent { .. })
                    | EventBody::Retry(RetryEvent { .. })
            );
            spinner.set(thinking);
        }
        if let Some(text) = show::transcript_line(event) {
            show::line_out(&text);
        }
    }
}

/// A spinner on stderr while the model streams.
struct Spinner {
    on: Arc<AtomicBool>,
}

impl Spinner {
    fn start() -> Spinner {
        let on = Arc::new(AtomicBool::new(false));
        let flag = on.clone();
        std::thread::spawn(move || {
            let frames = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
            let mut shown = false;
            for frame in frames.iter().cycle() {
                if flag.load(Ordering::Relaxed) {
                    eprint!("\r{frame} working…");
                    shown = true;
                } else if shown {
                    eprint!("\r\x1b[K");
                    shown = false;
                }
                // Stderr closed: no one sees the spinner any more.
                if std::io::stderr().flush().is_err() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        Spinner { on }
    }

    fn set(&self, on: bool) {
        self.on.store(on, Ordering::Relaxed);
        if !on {
            eprint!("\r\x1b[K");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shared table: exec exits at the turn's `turn_ended`, never
    /// before, with 0 for a result, 130 for a Ctrl-C cancel, 1 otherwise.
    #[test]
    fn exec_ends_where_the_turn_does() {
        for ctrl_c in [false, true] {
            let interrupted = AtomicBool::new(ctrl_c);
            for ending in wicket_test_support::endings::turn_endings() {
                let (asks, _asked) = mpsc::channel();
                let (last, events) = ending.events.split_last().unwrap();
                for event in events {
                    assert_eq!(react(event, &asks, &interrupted), None, "{}", ending.name);
                }
                let expected = match ending.outcome {
                    TurnOutcome::Result => 0,
                    TurnOutcome::Cancelled if ctrl_c => 130,
                    _ => 1,
                };
                assert_eq!(
                    react(last, &asks, &interrupted),
                    Some(expected),
                    "{}",
                    ending.name
                );
            }
        }
    }
}
