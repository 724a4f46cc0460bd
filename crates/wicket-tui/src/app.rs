//! The UI's state and what each key does; no terminal here, so every screen
//! can be drawn on a test backend. The run loop feeds it the session's
//! events, keys and text pieces, and carries out the [`Action`]s it returns
//! through the session manager.

mod card;

use card::render_card;

use ratatui::Frame;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseEventKind};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};
use wicket_protocol::text::{mark_blank_runs, visible, visible_line};
use wicket_protocol::{
    Answer, Card, CardId, CardKind, Event, EventBody, McpCard, RunCard, SessionId, WriteCard,
};

use crate::composer::Composer;
use crate::transcript::{Transcript, card_summary};
use wicket_core::manager::RewindTo;
use wicket_protocol::event::{
    AnswerEvent, AssistantMessageEvent, CancelledEvent, CardEvent, CheckpointEvent, CompactedEvent,
    ErrorEvent, HookRunEvent, InterruptedEvent, McpEvent, NetEvent, NoticeEvent, QuestionEvent,
    QueuedEvent, ReplyEvent, ResultEvent, RetryEvent, RewoundEvent, SessionStartedEvent,
    ToolCallEvent, ToolResultEvent, TurnEndedEvent, UnreadableEvent, UserMessageEvent,
};

/// What the run loop must do for a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Nothing.
    None,
    /// Send a message (starts a turn, or queues behind the running one).
    Send(String),
    /// Answer the open card.
    Answer {
        /// The card.
        card: CardId,
        /// The answer.
        answer: Answer,
        /// With `allow_always` on a run card: the argv prefix its rule was widened to.
        widened: Option<Vec<String>>,
        /// With `deny`: why, when the person wrote it (the model reads it).
        reason: Option<String>,
    },
    /// List the rules in force and the session's grants (`/grants`).
    Grants,
    /// Take back a session grant or a saved rule (`/grants revoke ID`).
    Revoke(String),
    /// Reply to the open question.
    Reply {
        /// The question.
        question: wicket_protocol::QuestionId,
        /// The reply.
        text: String,
    },
    /// Cancel the running turn.
    Cancel,
    /// Leave (exit 0).
    Quit,
    /// Start a new session in the same workspace.
    NewSession,
    /// Show the session picker.
    ListSessions,
    /// Open this session.
    OpenSession(SessionId),
    /// Use this model from the next turn on.
    SetModel(String),
    /// Compact the conversation now.
    Compact,
    /// Show the turns and checkpoints to rewind to (`/rewind`).
    RewindList,
    /// Show what a rewind would change, and ask (`/rewind undo`, or a pick).
    RewindPlan(RewindTo),
    /// Rewind (confirmed).
    Rewind(RewindTo),
}

/// What a line of the picker stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pick {
    /// A session to open.
    Session(String),
    /// A point to rewind to: its plan is shown next.
    Rewind(RewindTo),
    /// The rewind shown: do it.
    Confirm(RewindTo),
    /// Nothing.
    Cancel,
}

/// A card on screen.
#[derive(Debug, Clone)]
pub struct CardView {
    card: Card,
    /// Keys count only once this is true: after the card was drawn and
    /// everything typed before it was thrown away.
    armed: bool,
    /// The flush that arms it, once asked for.
    epoch: Option<u64>,
    scroll: u16,
    /// How many of a run card's argv words `[a]lways` saves as a prefix
    /// (`<` and `>` change it); `None` saves the exact argv.
    prefix: Option<usize>,
    /// A run card lists every layer of its sandbox (`?`), not only its one line.
    details: bool,
}

impl CardView {
    /// The rule `[a]lways` would save now, as the person widened it.
    fn always(&self) -> Option<wicket_protocol::RuleSpec> {
        let always = self.card.always.as_deref()?.clone();
        Some(match self.widened() {
            Some(prefix) => always.widened(prefix),
            None => always,
        })
    }

    fn widened(&self) -> Option<Vec<String>> {
        let (CardKind::Run(run), Some(words)) = (&self.card.kind, self.prefix) else {
            return None;
        };
        Some(run.argv[..words.min(run.argv.len())].to_vec())
    }

    /// `<` widens the rule by a word (to the argv's first word at most),
    /// `>` narrows it back, to the exact argv at the end.
    fn widen(&mut self, wider: bool) {
        let CardKind::Run(run) = &self.card.kind else {
            return;
        };
        let words = run.argv.len();
        // exact argv → its every word as a prefix (more arguments allowed)
        // → one word fewer … → the program alone.
        self.prefix = match (self.prefix, wider) {
            (None, true) => Some(words),
            (Some(kept), true) => Some(kept.saturating_sub(1).max(1)),
            (Some(kept), false) if kept >= words => None,
            (Some(kept), false) => Some(kept + 1),
            (None, false) => None,
        };
    }
}

/// What has the keyboard.
#[derive(Debug, Clone)]
enum Focus {
    Input,
    Card(Box<CardView>),
    Question {
        id: wicket_protocol::QuestionId,
    },
    /// The person writes why they deny the card (`r` on it): Enter denies
    /// with it, Esc goes back to the card.
    Reason {
        view: Box<CardView>,
        /// What the message box held before: it comes back after.
        stashed: String,
    },
    Picker {
        items: Vec<(Pick, String)>,
        selected: usize,
        title: &'static str,
    },
}

/// Totals for the status line.
#[derive(Debug, Default, Clone, Copy)]
struct Totals {
    input: u64,
    output: u64,
    cost: Option<f64>,
    context: Option<f64>,
    /// The last reply's server reported no usage.
    unreported: bool,
}

/// The whole UI.
pub struct App {
    session: String,
    workspace: String,
    model: Option<String>,
    /// Why no turn can run (no model): said on the first screen.
    model_problem: Option<String>,
    transcript: Transcript,
    composer: Composer,
    history: Vec<String>,
    recall: Option<usize>,
    focus: Focus,
    running: bool,
    queued: usize,
    /// `/plan`: the next messages start their turns in plan mode.
    plan: bool,
    totals: Totals,
    streaming: String,
    spinner: usize,
    next_epoch: u64,
    /// Rows and columns of the transcript when last drawn.
    view: (u16, u16),
    /// Whether the terminal reports Shift+Enter apart from Enter.
    enhanced_keys: bool,
}

const SPINNER: [&str; 4] = ["⠋", "⠙", "⠸", "⠴"];
const HELP: &str = "Enter sends · Shift+Enter, Alt+Enter or Ctrl+J: new line · Up/Down: earlier messages · PgUp/PgDn, Home/End, wheel: scroll · Ctrl+O: expand calls · Esc or Ctrl+C: cancel the turn · Ctrl+D on an empty line, or /quit: leave\n/new · /sessions · /model PROVIDER:NAME · /compact · /plan · /grants · /grants revoke ID · /rewind · /rewind undo · /help · /quit\nOn a card: o once · s session · a always (saves a rule; < widens a command to fewer words, > narrows it) · d deny · r deny with a reason the model reads";

impl App {
    /// Whether `/plan` is on: a message sent now starts its turn in plan mode.
    pub fn plan(&self) -> bool {
        self.plan
    }

    /// The UI for `session` in `workspace`.
    pub fn new(
        session: &str,
        workspace: &str,
        model: Option<String>,
        model_problem: Option<String>,
        enhanced_keys: bool,
    ) -> App {
        let mut app = App {
            session: session.to_string(),
            workspace: workspace.to_string(),
            model,
            model_problem,
            transcript: Transcript::default(),
            composer: Composer::default(),
            history: Vec::new(),
            recall: None,
            focus: Focus::Input,
            running: false,
            queued: 0,
            plan: false,
            totals: Totals::default(),
            streaming: String::new(),
            spinner: 0,
            next_epoch: 0,
            view: (80, 20),
            enhanced_keys,
        };
        app.welcome();
        app
    }

    fn welcome(&mut self) {
        let bold = Style::new().add_modifier(Modifier::BOLD);
        let mut lines = vec![
            Line::from(vec![
                Span::styled("wicket", bold),
                Span::raw(" — a conversation with the gate"),
            ]),
            Line::from(format!("workspace  {}", visible_line(&self.workspace))),
            Line::from(format!("session    {}", visible_line(&self.session))),
            Line::from(format!(
                "model      {}",
                self.model
                    .as_deref()
                    .map_or("none".to_string(), visible_line)
            )),
        ];
        if let Some(problem) = &self.model_problem {
            lines.push(Line::styled(
                format!("no model: {}", visible_line(problem)),
                Style::new().fg(Color::Red),
            ));
            lines.push(Line::styled(
                "fix it with: /model openai:gpt-4o (or anthropic:…, ollama:…), or model = \"…\" in $WICKET_HOME/config.toml",
                Style::new().fg(Color::Yellow),
            ));
        }
        lines.push(Line::styled(
            "/help for keys and commands",
            Style::new().fg(Color::DarkGray),
        ));
        lines.push(Line::default());
        self.transcript.note(lines);
    }

    /// Whether the terminal tells Shift+Enter from Enter (the input's hint).
    pub fn set_enhanced_keys(&mut self, enhanced: bool) {
        self.enhanced_keys = enhanced;
    }

    /// Takes one event of the session.
    pub fn on_event(&mut self, event: &Event) {
        self.transcript.add(event);
        match &event.body {
            EventBody::UserMessage(UserMessageEvent { .. }) => {
                self.running = true;
                self.queued = self.queued.saturating_sub(1);
            }
            EventBody::Queued(QueuedEvent { .. }) => self.queued += 1,
            // Its cards come as cards, marked with it; the transcript says it started.
            EventBody::Task(_) => {}
            EventBody::AssistantMessage(AssistantMessageEvent { usage, .. }) => {
                self.streaming.clear();
                self.totals.unreported = usage.is_none();
                if let Some(usage) = usage {
                    self.totals.input += usage.input_tokens;
                    self.totals.output += usage.output_tokens;
                    if let Some(cost) = usage.cost_usd {
                        *self.totals.cost.get_or_insert(0.0) += cost;
                    }
                    if let Some(context) = usage.context_used_percent {
                        self.totals.context = Some(context);
                    }
                }
            }
            EventBody::Card(CardEvent { card, .. }) => {
                self.focus = Focus::Card(Box::new(CardView {
                    card: card.clone(),
                    armed: false,
                    epoch: None,
                    scroll: 0,
                    prefix: None,
                    details: false,
                }));
            }
            EventBody::Question(QuestionEvent { id, .. }) => {
                self.focus = Focus::Question { id: id.clone() }
            }
            EventBody::Answer(AnswerEvent { .. }) | EventBody::Reply(ReplyEvent { .. }) => {
                self.leave_reason(false);
                self.focus = Focus::Input
            }
            EventBody::TurnEnded(TurnEndedEvent { .. }) => self.end_of_turn(),
            // How far the checkpoint the open card waits on got: the card's count moves.
            EventBody::Notice(notice) if notice.is_walk() => {
                if let Focus::Card(view) = &mut self.focus
                    && view.card.checkpointing.is_some()
                {
                    view.card.checkpointing = Some(notice.message.clone());
                }
            }
            EventBody::SessionStarted(SessionStartedEvent { .. })
            | EventBody::Result(ResultEvent { .. })
            | EventBody::Cancelled(CancelledEvent {})
            | EventBody::Interrupted(InterruptedEvent { .. })
            | EventBody::ToolCall(ToolCallEvent { .. })
            | EventBody::ToolResult(ToolResultEvent { .. })
            | EventBody::Hook(HookRunEvent { .. })
            | EventBody::Retry(RetryEvent { .. })
            | EventBody::Compacted(CompactedEvent { .. })
            | EventBody::Notice(NoticeEvent { .. })
            | EventBody::Checkpoint(CheckpointEvent { .. })
            | EventBody::Net(NetEvent { .. })
            | EventBody::Rewound(RewoundEvent { .. })
            | EventBody::Mcp(McpEvent { .. })
            | EventBody::Error(ErrorEvent { .. })
            | EventBody::Unreadable(UnreadableEvent { .. }) => {}
        }
    }

    fn end_of_turn(&mut self) {
        self.streaming.clear();
        if self.queued == 0 {
            self.running = false;
        }
        self.leave_reason(false);
        if matches!(self.focus, Focus::Card(_) | Focus::Question { .. }) {
            self.focus = Focus::Input;
        }
    }

    /// A piece of the reply as it streams in.
    pub fn on_text(&mut self, piece: &str) {
        self.streaming.push_str(piece);
    }

    /// The spinner moves on.
    pub fn tick(&mut self) -> bool {
        if self.running {
            self.spinner = (self.spinner + 1) % SPINNER.len();
            return true;
        }
        false
    }

    /// A card that is drawn and not armed yet needs the typed-ahead input
    /// thrown away: the flush to ask for, once.
    pub fn flush_needed(&mut self) -> Option<u64> {
        let Focus::Card(view) = &mut self.focus else {
            return None;
        };
        if view.armed || view.epoch.is_some() {
            return None;
        }
        self.next_epoch += 1;
        view.epoch = Some(self.next_epoch);
        Some(self.next_epoch)
    }

    /// The flush `epoch` is done: the card takes keys from now on.
    pub fn flushed(&mut self, epoch: u64) {
        if let Focus::Card(view) = &mut self.focus
            && view.epoch == Some(epoch)
        {
            view.armed = true;
        }
    }

    /// Shows the session picker.
    pub fn pick_session(&mut self, sessions: Vec<(String, String)>) {
        if sessions.is_empty() {
            self.transcript
                .note(vec![Line::from("there are no sessions yet")]);
            return;
        }
        let items = sessions
            .into_iter()
            .map(|(id, label)| (Pick::Session(id), label))
            .collect();
        self.pick(items, " sessions: Enter opens, Esc closes ");
    }

    /// Shows a picker of `items` (the last one selected: the latest point).
    pub fn pick(&mut self, items: Vec<(Pick, String)>, title: &'static str) {
        if items.is_empty() {
            return;
        }
        self.focus = Focus::Picker {
            selected: match items.first() {
                Some((Pick::Session(_), _)) => 0,
                _ => items.len() - 1,
            },
            items,
            title,
        };
    }

    /// Says something of the UI's own in the transcript.
    pub fn say(&mut self, text: &str, color: Color) {
        self.transcript.note(
            visible(text)
                .lines()
                .map(|line| Line::styled(line.to_string(), Style::new().fg(color)))
                .collect(),
        );
        self.transcript.end();
    }

    /// The model the next turn uses.
    pub fn set_model(&mut self, model: &str) {
        self.model = Some(model.to_string());
        self.model_problem = None;
    }

    /// A paste: into the input, never sent.
    pub fn on_paste(&mut self, text: &str) {
        if matches!(
            self.focus,
            Focus::Input | Focus::Question { .. } | Focus::Reason { .. }
        ) {
            self.composer
                .insert(&text.replace("\r\n", "\n").replace('\r', "\n"));
        }
    }

    /// The mouse wheel scrolls the transcript (or the card's diff).
    pub fn on_mouse(&mut self, kind: MouseEventKind) {
        let rows = match kind {
            MouseEventKind::ScrollUp => -3,
            MouseEventKind::ScrollDown => 3,
            _ => return,
        };
        if let Focus::Card(view) = &mut self.focus {
            view.scroll = view.scroll.saturating_add_signed(rows as i16);
            return;
        }
        self.transcript.scroll_by(rows, self.view.1, self.view.0);
    }

    /// One key.
    // The key table of the TUI, one arm per key in one place (as /help lists them); past 80 lines because the keys are that many.
    pub fn on_key(&mut self, key: KeyEvent) -> Action {
        if key.kind == KeyEventKind::Release {
            return Action::None;
        }
        let control = key.modifiers.contains(KeyModifiers::CONTROL);
        // Keys that work whatever has focus.
        match key.code {
            KeyCode::Char('c') if control => return self.cancel_or_nothing(),
            KeyCode::Esc if !matches!(self.focus, Focus::Picker { .. } | Focus::Reason { .. }) => {
                return self.cancel_or_nothing();
            }
            KeyCode::PageUp => {
                return self.scroll(-i32::from(self.view.0.saturating_sub(2).max(1)));
            }
            KeyCode::PageDown => {
                return self.scroll(i32::from(self.view.0.saturating_sub(2).max(1)));
            }
            KeyCode::Home if !control => {
                self.transcript.home();
                return Action::None;
            }
            KeyCode::End if !control => {
                self.transcript.end();
                return Action::None;
            }
            KeyCode::Char('o') if control => {
                self.transcript.expanded = !self.transcript.expanded;
                return Action::None;
            }
            _ => {}
        }
        match &mut self.focus {
            Focus::Card(view) => {
                // Nothing typed before the card was drawn answers it.
                if !view.armed {
                    return Action::None;
                }
                // An effects card takes a and d, and scrolls; nothing else.
                let effects = matches!(view.card.kind, CardKind::Effects(_));
                let answer = match key.code {
                    KeyCode::Char('a') if effects => Answer::Apply,
                    KeyCode::Char('d') if effects => Answer::Discard,
                    KeyCode::Up | KeyCode::Down | KeyCode::Char('k' | 'j') => {
                        let up = matches!(key.code, KeyCode::Up | KeyCode::Char('k'));
                        view.scroll = if up {
                            view.scroll.saturating_sub(1)
                        } else {
                            view.scroll.saturating_add(1)
                        };
                        return Action::None;
                    }
                    _ if effects => return Action::None,
                    KeyCode::Char('p') if Answer::Preview.fits(&view.card.kind) => Answer::Preview,
                    KeyCode::Char('o') => Answer::AllowOnce,
                    KeyCode::Char('s') => Answer::AllowSession,
                    KeyCode::Char('a') if view.card.always.is_some() => Answer::AllowAlways,
                    KeyCode::Char('d') => Answer::Deny,
                    KeyCode::Char('r') => {
                        let view = view.clone();
                        let stashed = self.composer.take();
                        self.focus = Focus::Reason { view, stashed };
                        return Action::None;
                    }
                    KeyCode::Char(key @ ('<' | '>')) => {
                        view.widen(key == '<');
                        return Action::None;
                    }
                    KeyCode::Char('?') => {
                        view.details = !view.details;
                        return Action::None;
                    }
                    _ => return Action::None,
                };
                Action::Answer {
                    card: view.card.id.clone(),
                    answer,
                    widened: (answer == Answer::AllowAlways)
                        .then(|| view.widened())
                        .flatten(),
                    reason: None,
                }
            }
            Focus::Reason { .. } => match key.code {
                KeyCode::Esc => {
                    self.leave_reason(true);
                    Action::None
                }
                KeyCode::Enter
                    if !key.modifiers.intersects(
                        KeyModifiers::SHIFT | KeyModifiers::ALT | KeyModifiers::CONTROL,
                    ) =>
                {
                    let reason = self.composer.text().trim().to_string();
                    let card = match &self.focus {
                        Focus::Reason { view, .. } => view.card.id.clone(),
                        _ => return Action::None,
                    };
                    self.leave_reason(false);
                    Action::Answer {
                        card,
                        answer: Answer::Deny,
                        widened: None,
                        reason: (!reason.is_empty()).then_some(reason),
                    }
                }
                _ => self.edit(key),
            },
            Focus::Picker {
                items, selected, ..
            } => match key.code {
                KeyCode::Up => {
                    *selected = selected.saturating_sub(1);
                    Action::None
                }
                KeyCode::Down => {
                    *selected = (*selected + 1).min(items.len().saturating_sub(1));
                    Action::None
                }
                KeyCode::Enter => {
                    let picked = items.get(*selected).map(|(pick, _)| pick.clone());
                    self.focus = Focus::Input;
                    match picked {
                        Some(Pick::Session(id)) => Action::OpenSession(SessionId::from(id)),
                        Some(Pick::Rewind(to)) => Action::RewindPlan(to),
                        Some(Pick::Confirm(to)) => Action::Rewind(to),
                        Some(Pick::Cancel) | None => Action::None,
                    }
                }
                KeyCode::Esc => {
                    self.focus = Focus::Input;
                    Action::None
                }
                _ => Action::None,
            },
            Focus::Input | Focus::Question { .. } => self.edit(key),
        }
    }

    /// Leaves the reason box: back to the card (`to_card`) or to the
    /// message box, which gets back what it held.
    fn leave_reason(&mut self, to_card: bool) {
        let Focus::Reason { view, stashed } = std::mem::replace(&mut self.focus, Focus::Input)
        else {
            return;
        };
        self.composer.set(&stashed);
        if to_card {
            self.focus = Focus::Card(view);
        }
    }

    fn cancel_or_nothing(&mut self) -> Action {
        if self.running {
            Action::Cancel
        } else {
            Action::None
        }
    }

    fn scroll(&mut self, rows: i32) -> Action {
        if let Focus::Card(view) = &mut self.focus {
            view.scroll = view
                .scroll
                .saturating_add_signed(rows.clamp(-1000, 1000) as i16);
        } else {
            self.transcript.scroll_by(rows, self.view.1, self.view.0);
        }
        Action::None
    }

    fn edit(&mut self, key: KeyEvent) -> Action {
        let control = key.modifiers.contains(KeyModifiers::CONTROL);
        let newline = key
            .modifiers
            .intersects(KeyModifiers::SHIFT | KeyModifiers::ALT | KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Enter if newline => self.composer.insert("\n"),
            KeyCode::Char('j') if control => self.composer.insert("\n"),
            KeyCode::Enter => return self.submit(),
            KeyCode::Char('d') if control => {
                if self.composer.is_empty() {
                    return Action::Quit;
                }
                self.composer.delete();
            }
            KeyCode::Char('a') if control => self.composer.line_start(),
            KeyCode::Char('e') if control => self.composer.line_end(),
            KeyCode::Char('u') if control => self.composer.kill_to_start(),
            KeyCode::Char(c) if !control => self.composer.insert(c.encode_utf8(&mut [0; 4])),
            KeyCode::Backspace => self.composer.backspace(),
            KeyCode::Delete => self.composer.delete(),
            KeyCode::Left => self.composer.left(),
            KeyCode::Right => self.composer.right(),
            KeyCode::Up => self.recall(-1),
            KeyCode::Down => self.recall(1),
            KeyCode::Tab => self.composer.insert("    "),
            _ => {}
        }
        Action::None
    }

    /// Up/Down walk the messages sent before.
    fn recall(&mut self, step: i32) {
        if self.history.is_empty() {
            return;
        }
        let next = match (self.recall, step < 0) {
            (None, true) => Some(self.history.len() - 1),
            (None, false) => None,
            (Some(at), true) => Some(at.saturating_sub(1)),
            (Some(at), false) if at + 1 < self.history.len() => Some(at + 1),
            (Some(_), false) => None,
        };
        self.recall = next;
        match next {
            Some(at) => {
                let text = self.history[at].clone();
                self.composer.set(&text);
            }
            None => {
                self.composer.take();
            }
        }
    }

    fn submit(&mut self) -> Action {
        let text = self.composer.text().trim_end().to_string();
        if text.is_empty() {
            return Action::None;
        }
        self.composer.take();
        self.recall = None;
        if self.history.last() != Some(&text) {
            self.history.push(text.clone());
        }
        self.transcript.end();
        if let Focus::Question { id } = &self.focus {
            return Action::Reply {
                question: id.clone(),
                text,
            };
        }
        if let Some(command) = text.strip_prefix('/') {
            let mut words = command.split_whitespace();
            return match (words.next(), words.next()) {
                (Some("quit" | "exit"), _) => Action::Quit,
                (Some("new"), _) => Action::NewSession,
                (Some("sessions"), _) => Action::ListSessions,
                (Some("compact"), _) => Action::Compact,
                (Some("plan"), _) => {
                    self.plan = !self.plan;
                    let said = if self.plan {
                        "plan mode: the next turns may only read, ask and propose a plan until you approve one; /plan again to leave it"
                    } else {
                        "plan mode is off: every tool"
                    };
                    self.say(said, Color::Gray);
                    Action::None
                }
                (Some("rewind"), None) => Action::RewindList,
                (Some("rewind"), Some("undo")) => Action::RewindPlan(RewindTo::Undo),
                (Some("rewind"), Some(seq)) => match seq.parse() {
                    Ok(seq) => Action::RewindPlan(RewindTo::Seq(seq)),
                    Err(_) => {
                        self.say(
                            "/rewind lists the points to go back to; /rewind SEQ goes to before event SEQ; /rewind undo takes the last rewind back",
                            Color::Yellow,
                        );
                        Action::None
                    }
                },
                (Some("grants"), None) => Action::Grants,
                (Some("grants"), Some("revoke")) => match words.next() {
                    Some(id) => Action::Revoke(id.to_string()),
                    None => {
                        self.say(
                            "give the id: /grants revoke ID (/grants lists them)",
                            Color::Yellow,
                        );
                        Action::None
                    }
                },
                (Some("model"), Some(model)) => Action::SetModel(model.to_string()),
                (Some("model"), None) => {
                    self.say("give the model: /model PROVIDER:NAME, e.g. /model anthropic:claude-sonnet-4-5", Color::Yellow);
                    Action::None
                }
                (Some("help"), _) => {
                    self.say(HELP, Color::Gray);
                    Action::None
                }
                _ => {
                    self.say(
                        &format!("there is no command /{command}; /help lists them"),
                        Color::Yellow,
                    );
                    Action::None
                }
            };
        }
        Action::Send(text)
    }

    fn state(&self) -> String {
        match &self.focus {
            Focus::Card(_) => "waiting on a card".into(),
            Focus::Question { .. } => "waiting on your reply".into(),
            Focus::Reason { .. } => "writing why you deny the card".into(),
            _ if self.running && self.queued > 0 => format!("running, queued {}", self.queued),
            _ if self.running => "running".into(),
            _ => "idle".into(),
        }
    }

    fn status_line(&self) -> Line<'static> {
        // No count at all is no claim of zero: said as exec and the page say it.
        let nothing_reported =
            self.totals.unreported && self.totals.input == 0 && self.totals.output == 0;
        let tokens = match nothing_reported {
            true => wicket_protocol::Usage::line(None),
            false => format!("{} in / {} out", self.totals.input, self.totals.output),
        };
        let mut text = format!(
            " {} · {} · {}{} · {tokens}",
            visible_line(&self.session),
            self.model
                .as_deref()
                .map_or("no model".to_string(), visible_line),
            self.state(),
            if self.plan { " · plan mode" } else { "" },
        );
        if let Some(cost) = self.totals.cost {
            text.push_str(&format!(" · ${cost:.4}"));
        }
        if self.totals.unreported && !nothing_reported {
            text.push_str(" · usage not reported");
        } else if let Some(context) = self.totals.context {
            text.push_str(&format!(" · context {context:.0}%"));
        }
        let mut spans = Vec::new();
        if self.running {
            spans.push(Span::styled(
                format!(" {}", SPINNER[self.spinner]),
                Style::new().fg(Color::Cyan),
            ));
        }
        spans.push(Span::raw(text));
        Line::from(spans).style(Style::new().bg(Color::DarkGray).fg(Color::White))
    }

    /// Draws everything.
    pub fn render(&mut self, frame: &mut Frame<'_>) {
        let area = frame.area();
        let input_rows = match &self.focus {
            Focus::Card(_) => 0,
            _ => (self.composer.lines() as u16).clamp(1, 6) + 2,
        };
        let card_rows = match &self.focus {
            Focus::Card(_) | Focus::Reason { .. } => (area.height * 3 / 5)
                .max(8)
                .min(area.height.saturating_sub(2)),
            Focus::Picker { items, .. } => (items.len() as u16 + 2).min(area.height / 2),
            _ => 0,
        };
        let [transcript, streaming, panel, input, status] = Layout::vertical([
            Constraint::Min(1),
            Constraint::Length(u16::from(!self.streaming.is_empty()) * 3),
            Constraint::Length(card_rows),
            Constraint::Length(input_rows),
            Constraint::Length(1),
        ])
        .areas(area);
        self.view = (transcript.height, transcript.width);
        self.transcript.render(transcript, frame.buffer_mut());
        if !self.streaming.is_empty() {
            let tail: Vec<&str> = self.streaming.lines().collect();
            let shown = tail[tail.len().saturating_sub(3)..].join("\n");
            frame.render_widget(
                Paragraph::new(visible(&shown))
                    .style(Style::new().fg(Color::Gray))
                    .wrap(Wrap { trim: false }),
                streaming,
            );
        }
        match &mut self.focus {
            Focus::Card(view) => {
                let most = render_card(frame, panel, view);
                view.scroll = view.scroll.min(most);
            }
            Focus::Picker {
                items,
                selected,
                title,
            } => render_picker(frame, panel, items, *selected, title),
            Focus::Reason { view, .. } => {
                // The card stays in view, its keys quiet while the reason is written.
                let mut quiet = (**view).clone();
                quiet.armed = false;
                render_card(frame, panel, &quiet);
            }
            Focus::Input | Focus::Question { .. } => {}
        }
        if input_rows > 0 {
            self.render_input(frame, input);
        }
        frame.render_widget(Paragraph::new(self.status_line()), status);
    }

    fn render_input(&self, frame: &mut Frame<'_>, area: Rect) {
        let newline = if self.enhanced_keys {
            "Shift+Enter"
        } else {
            "Alt+Enter"
        };
        let title = match &self.focus {
            Focus::Question { .. } => " your reply to the question: Enter sends ".to_string(),
            Focus::Reason { .. } => {
                " why you deny it (the model reads it): Enter denies · Esc back to the card "
                    .to_string()
            }
            _ if self.running => format!(
                " a message now is queued behind the turn · Esc cancels the turn · {newline}: new line "
            ),
            _ => format!(" message · Enter sends · {newline}: new line · /help "),
        };
        let block = Block::default()
            .borders(Borders::ALL)
            .title(title)
            .border_style(Style::new().fg(Color::DarkGray));
        let inner = block.inner(area);
        frame.render_widget(
            Paragraph::new(visible(self.composer.text())).block(block),
            area,
        );
        let (line, column) = self.composer.position();
        let x = inner.x + (column as u16).min(inner.width.saturating_sub(1));
        let y = inner.y + (line as u16).min(inner.height.saturating_sub(1));
        frame.set_cursor_position((x, y));
    }
}

#[cfg(test)]
mod tests;

/// A picker's list in `panel`: the selected line stays in view in a long
/// list, and a line wider than the panel is cut with a `…`.
fn render_picker(
    frame: &mut Frame,
    panel: Rect,
    items: &[(Pick, String)],
    selected: usize,
    title: &'static str,
) {
    let rows = usize::from(panel.height.saturating_sub(2)).max(1);
    let room = usize::from(panel.width.saturating_sub(2));
    let skip = selected.saturating_sub(rows - 1);
    let lines: Vec<Line<'static>> = items
        .iter()
        .skip(skip)
        .enumerate()
        .map(|(i, (_, label))| {
            let style = if i + skip == selected {
                Style::new().add_modifier(Modifier::REVERSED)
            } else {
                Style::new()
            };
            Line::styled(card::fit_width(&visible_line(label), room), style)
        })
        .collect();
    frame.render_widget(Clear, panel);
    frame.render_widget(
        Paragraph::new(lines).block(Block::default().borders(Borders::ALL).title(title)),
        panel,
    );
}
