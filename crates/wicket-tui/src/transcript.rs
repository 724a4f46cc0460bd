//! The transcript: one item per thing that happened, built from the
//! session's events. Items keep their unwrapped lines and a height cached
//! per width, and only the items on screen are wrapped and drawn, so a
//! session of 10,000 events scrolls as fast as one of ten.

use std::cell::Cell;
use std::collections::HashMap;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget, Wrap};
use wicket_protocol::summary::{Summary, Tone};
use wicket_protocol::text::{visible, visible_line};
use wicket_protocol::{
    Answer, Card, CardId, CardKind, Event, EventBody, ToolOutput, Usage, WireError,
};

use crate::markdown;
use wicket_protocol::event::{
    AnswerEvent, AssistantMessageEvent, CardEvent, QuestionEvent, ReplyEvent, ResultEvent,
    ToolCallEvent, ToolResultEvent, TurnEndedEvent, UserMessageEvent,
};

/// Lines of a run's output shown under its one line.
const RUN_HEAD_LINES: usize = 3;
/// Lines of a result shown when a call is expanded.
const EXPANDED_LINES: usize = 40;

/// One thing in the transcript.
pub struct Item {
    lines: Vec<Line<'static>>,
    /// Lines shown only when calls are expanded.
    more: Vec<Line<'static>>,
    height: Cell<Option<(u16, bool, u16)>>,
}

impl Item {
    fn new(lines: Vec<Line<'static>>) -> Item {
        Item {
            lines,
            more: Vec::new(),
            height: Cell::new(None),
        }
    }

    fn shown(&self, expanded: bool) -> Vec<Line<'static>> {
        let mut lines = self.lines.clone();
        if expanded {
            lines.extend(self.more.iter().cloned());
        }
        lines
    }

    /// Rows at `width`, cached.
    fn rows(&self, width: u16, expanded: bool) -> u16 {
        if let Some((cached_width, cached_expanded, rows)) = self.height.get()
            && cached_width == width
            && cached_expanded == expanded
        {
            return rows;
        }
        let rows = Paragraph::new(self.shown(expanded))
            .wrap(Wrap { trim: false })
            .line_count(width);
        let rows = u16::try_from(rows).unwrap_or(u16::MAX);
        self.height.set(Some((width, expanded, rows)));
        rows
    }
}

/// Where the view is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Scroll {
    /// The end, following what comes.
    #[default]
    Follow,
    /// This item's row is the first on screen.
    At {
        /// The item.
        item: usize,
        /// Rows of it above the screen.
        row: u16,
    },
}

fn dim() -> Style {
    Style::new().fg(Color::DarkGray)
}

fn first_line(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or_default();
    let mut cut: String = line.chars().take(max).collect();
    if cut.len() < line.len() || text.lines().nth(1).is_some() {
        cut.push('…');
    }
    visible_line(&cut)
}

fn plain_lines(text: &str, style: Style, max: usize) -> Vec<Line<'static>> {
    let mut lines: Vec<Line<'static>> = visible(text)
        .lines()
        .take(max)
        .map(|line| Line::styled(format!("    {line}"), style))
        .collect();
    let total = text.lines().count();
    if total > max {
        lines.push(Line::styled(
            format!("    … {} more lines", total - max),
            dim(),
        ));
    }
    lines
}

/// A call's one-line summary of what its arguments name.
pub fn call_title(name: &str, arguments: &serde_json::Value) -> String {
    let what = wicket_protocol::call_summary(name, arguments);
    if what.is_empty() {
        return visible_line(name);
    }
    format!("{} {}", visible_line(name), first_line(&what, 100))
}

/// The transcript of one session.
#[derive(Default)]
pub struct Transcript {
    items: Vec<Item>,
    /// The item of each call, to fold its result into.
    calls: HashMap<wicket_protocol::CallId, usize>,
    /// The item of each card, for its answer.
    cards: HashMap<CardId, usize>,
    /// The item of the last word on a checkpoint's walk: the next one,
    /// straight after it, takes its place.
    walk: Option<usize>,
    /// Results shown in full.
    pub expanded: bool,
    /// Where the view is.
    pub scroll: Scroll,
}

impl Transcript {
    /// How many items there are.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Adds lines of the UI's own (help, a notice).
    pub fn note(&mut self, lines: Vec<Line<'static>>) {
        self.items.push(Item::new(lines));
    }

    fn push(&mut self, lines: Vec<Line<'static>>) -> usize {
        self.items.push(Item::new(lines));
        self.items.len() - 1
    }

    /// Takes one event of the session.
    // One flat match with an arm per event kind, the chat's item for each; past 80 lines because the match is exhaustive.
    pub fn add(&mut self, event: &Event) {
        match &event.body {
            EventBody::UserMessage(UserMessageEvent { text, plan }) => {
                let mut lines = vec![Line::from(Span::styled(
                    if *plan { "you (plan mode)" } else { "you" },
                    Style::new().fg(Color::Green).add_modifier(Modifier::BOLD),
                ))];
                lines.extend(markdown::render(text));
                lines.push(Line::default());
                self.push(lines);
            }
            EventBody::AssistantMessage(AssistantMessageEvent { text, .. }) => {
                if !text.trim().is_empty() {
                    let mut lines = markdown::render(text);
                    lines.push(Line::default());
                    self.push(lines);
                }
            }
            EventBody::ToolCall(ToolCallEvent {
                call_id,
                name,
                arguments,
                auto_allowed,
                allowed_by,
            }) => {
                if matches!(name.as_str(), "ask" | "finish") {
                    return;
                }
                let mut spans = vec![
                    Span::styled("▸ ", Style::new().fg(Color::Blue)),
                    Span::raw(call_title(name, arguments)),
                ];
                if auto_allowed.is_some() {
                    spans.push(Span::styled(" (auto_allow)", dim()));
                }
                if let Some(by) = allowed_by {
                    spans.push(Span::styled(
                        format!(" ({})", wicket_protocol::text::visible_line(&by.describe())),
                        dim(),
                    ));
                }
                let index = self.push(vec![Line::from(spans)]);
                self.calls.insert(call_id.clone(), index);
            }
            EventBody::Card(CardEvent { call_id, card, .. }) => {
                let index = match self.calls.get(call_id) {
                    Some(&index) => index,
                    None => self.push(Vec::new()),
                };
                self.extend(
                    index,
                    Line::styled(
                        format!("  card: {}", card_summary(card)),
                        Style::new().fg(Color::Yellow),
                    ),
                );
                self.cards.insert(card.id.clone(), index);
            }
            EventBody::Answer(AnswerEvent {
                card,
                answer,
                stale,
                reason,
                ..
            }) => {
                if let Some(&index) = self.cards.get(card) {
                    self.extend(index, answer_line(*answer, *stale, reason.as_deref()));
                }
            }
            EventBody::ToolResult(ToolResultEvent { call_id, result }) => {
                if let Some(&index) = self.calls.get(call_id) {
                    let (head, more) = result_lines(result);
                    let item = &mut self.items[index];
                    if let Some(first) = item.lines.first_mut() {
                        first.spans.extend(head.spans);
                    }
                    item.more = more.1;
                    item.lines.extend(more.0);
                    item.height.set(None);
                }
            }
            EventBody::Question(QuestionEvent { question, .. }) => {
                let mut lines = vec![Line::styled(
                    "question",
                    Style::new().fg(Color::Magenta).add_modifier(Modifier::BOLD),
                )];
                lines.extend(markdown::render(question));
                self.push(lines);
            }
            EventBody::Reply(ReplyEvent { reply, .. }) => {
                self.push(vec![Line::styled(
                    format!("you: {}", first_line(reply, 500)),
                    Style::new().fg(Color::Green),
                )]);
            }
            EventBody::Result(ResultEvent { text, usage }) => {
                self.push(done_lines(text, usage));
            }
            // Said already by the result, error or cancel before it.
            EventBody::TurnEnded(TurnEndedEvent { .. }) => {}
            EventBody::Notice(notice) if notice.is_walk() => {
                let lines = event.body.summary().map(|summary| summary_lines(&summary));
                let lines = lines.unwrap_or_default();
                match self.walk.filter(|walk| walk + 1 == self.items.len()) {
                    Some(walk) => {
                        self.items[walk].lines = lines;
                        self.items[walk].height.set(None);
                    }
                    None => self.walk = Some(self.push(lines)),
                }
            }
            body => {
                if let Some(summary) = body.summary() {
                    self.push(summary_lines(&summary));
                }
            }
        }
    }

    /// Adds a line under an item already shown (a call's card or answer).
    fn extend(&mut self, index: usize, line: Line<'static>) {
        self.items[index].lines.push(line);
        self.items[index].height.set(None);
    }

    /// Rows from the top of item `item` to the end, at most `limit`.
    fn rows_from(&self, item: usize, width: u16, limit: u32) -> u32 {
        let mut rows = 0u32;
        for index in item..self.items.len() {
            rows += u32::from(self.items[index].rows(width, self.expanded));
            if rows >= limit {
                break;
            }
        }
        rows
    }

    /// The first row on screen for a view `height` rows tall.
    fn top(&self, width: u16, height: u16) -> (usize, u16) {
        match self.scroll {
            Scroll::At { item, row } => (item.min(self.items.len()), row),
            Scroll::Follow => {
                let mut need = height;
                let mut index = self.items.len();
                while index > 0 && need > 0 {
                    index -= 1;
                    let rows = self.items[index].rows(width, self.expanded);
                    if rows >= need {
                        return (index, rows - need);
                    }
                    need -= rows;
                }
                (index, 0)
            }
        }
    }

    /// Moves the view by `rows` (up when negative); past the end it follows.
    pub fn scroll_by(&mut self, rows: i32, width: u16, height: u16) {
        let (mut item, mut row) = self.top(width, height);
        if rows < 0 {
            let mut up = rows.unsigned_abs();
            while up > 0 {
                if u32::from(row) >= up {
                    row -= up as u16;
                    up = 0;
                } else if item == 0 {
                    row = 0;
                    up = 0;
                } else {
                    up -= u32::from(row);
                    item -= 1;
                    row = self.items[item].rows(width, self.expanded);
                }
            }
        } else {
            let mut down = rows as u32;
            while down > 0 && item < self.items.len() {
                let left = u32::from(
                    self.items[item].rows(width, self.expanded)
                        - row.min(self.items[item].rows(width, self.expanded)),
                );
                if left > down {
                    row += down as u16;
                    down = 0;
                } else {
                    down -= left;
                    item += 1;
                    row = 0;
                }
            }
        }
        // Nothing but the end would be below: follow it.
        let rest = self.rows_from(item, width, u32::from(height) + u32::from(row) + 1);
        self.scroll = if rest <= u32::from(height) + u32::from(row) {
            Scroll::Follow
        } else {
            Scroll::At { item, row }
        };
    }

    /// To the first line.
    pub fn home(&mut self) {
        self.scroll = Scroll::At { item: 0, row: 0 };
    }

    /// To the end, following it.
    pub fn end(&mut self) {
        self.scroll = Scroll::Follow;
    }

    /// Draws the items on screen, and only those.
    pub fn render(&self, area: Rect, buffer: &mut Buffer) {
        if area.height == 0 || area.width == 0 {
            return;
        }
        let (mut index, mut skip) = self.top(area.width, area.height);
        let mut y = area.y;
        while y < area.bottom() && index < self.items.len() {
            let item = &self.items[index];
            let rows = item.rows(area.width, self.expanded).saturating_sub(skip);
            let height = rows.min(area.bottom() - y);
            if height > 0 {
                Paragraph::new(item.shown(self.expanded))
                    .wrap(Wrap { trim: false })
                    .scroll((skip, 0))
                    .render(Rect { y, height, ..area }, buffer);
            }
            y += height;
            skip = 0;
            index += 1;
        }
    }
}

/// What a card is about, in a few words (a sub-task's named first).
pub fn card_summary(card: &Card) -> String {
    let what = kind_summary(card);
    match &card.task {
        Some(task) => format!("sub-task: {}: {what}", visible_line(&task.description)),
        None => what,
    }
}

fn kind_summary(card: &Card) -> String {
    match &card.kind {
        CardKind::Write(write) => format!("{} {}", card.tool, visible_line(&write.path)),
        CardKind::OutsideRead(read) => format!(
            "{} outside the workspace: {}",
            card.tool,
            visible_line(&read.path)
        ),
        CardKind::Run(run) => format!("run {}", first_line(&run.argv.join(" "), 120)),
        CardKind::Mcp(mcp) => format!(
            "MCP {} {}",
            visible_line(&mcp.server),
            visible_line(&card.tool)
        ),
        CardKind::Net(net) => format!("net {}", net.target()),
        CardKind::Plan(_) => "a plan to approve".to_string(),
        CardKind::Effects(effects) => format!(
            "preview of {}: {} change(s)",
            first_line(&effects.argv.join(" "), 120),
            effects.changes.len()
        ),
    }
}

/// A result: what joins the call's line, lines always shown under it, and
/// How a card was answered, under its call.
fn answer_line(answer: Answer, stale: bool, reason: Option<&str>) -> Line<'static> {
    let (word, color) = match answer {
        Answer::AllowOnce => ("allowed once", Color::Green),
        Answer::AllowSession => ("allowed for the session", Color::Green),
        Answer::AllowAlways => ("allowed always (a rule was saved)", Color::Green),
        Answer::Deny => ("denied", Color::Red),
        Answer::Preview => ("previewed (run over a copy first)", Color::Yellow),
        Answer::Apply => ("applied", Color::Green),
        Answer::Discard => ("discarded", Color::Red),
    };
    let note = if stale {
        " (stale: the file changed; asked again)"
    } else {
        ""
    };
    let why = reason
        .map(|reason| format!(": {}", first_line(reason, 300)))
        .unwrap_or_default();
    Line::styled(format!("  → {word}{note}{why}"), Style::new().fg(color))
}

/// A finished turn: its result, and what it cost when the price is known.
/// An event every front end says in one line ([`EventBody::summary`]),
/// coloured by its tone; a message of several lines keeps them, indented.
fn summary_lines(summary: &Summary) -> Vec<Line<'static>> {
    let style = match summary.tone {
        Tone::Quiet => dim(),
        Tone::Heed => Style::new().fg(Color::Yellow),
        Tone::Failed => Style::new().fg(Color::Red),
        Tone::Changed => Style::new().fg(Color::Magenta),
    };
    visible(&summary.text)
        .lines()
        .enumerate()
        .map(|(index, line)| {
            let indent = if index == 0 { "" } else { "  " };
            Line::styled(format!("{indent}{line}"), style)
        })
        .collect()
}

fn done_lines(text: &str, usage: &Option<Usage>) -> Vec<Line<'static>> {
    let mut lines = vec![Line::styled(
        "✓ done",
        Style::new().fg(Color::Green).add_modifier(Modifier::BOLD),
    )];
    lines.extend(markdown::render(text));
    if let Some(usage) = usage
        && let Some(cost) = usage.cost_usd
    {
        lines.push(Line::styled(
            format!(
                "  {} in, {} out, ${cost:.4}",
                usage.input_tokens, usage.output_tokens
            ),
            dim(),
        ));
    }
    lines.push(Line::default());
    lines
}

/// lines shown when calls are expanded.
// One flat match with an arm per `ToolOutput` kind, the folded lines of each; past 80 lines because the match is exhaustive.
fn result_lines(
    result: &Result<ToolOutput, WireError>,
) -> (Line<'static>, (Vec<Line<'static>>, Vec<Line<'static>>)) {
    let tail = |text: String, color: Color| Line::from(Span::styled(text, Style::new().fg(color)));
    match result {
        Err(error) => (
            tail(format!(" — {}", error.kind.as_str()), Color::Red),
            (
                plain_lines(&error.message, Style::new().fg(Color::Red), 3),
                Vec::new(),
            ),
        ),
        Ok(ToolOutput::Run(run)) => {
            let end = match (run.exit_code, run.signal, run.timed_out) {
                (_, _, true) => "timed out".to_string(),
                (Some(code), _, _) => format!("exit {code}"),
                (None, Some(signal), _) => format!("signal {signal}"),
                (None, None, false) => "ended".to_string(),
            };
            let color = if run.exit_code == Some(0) {
                Color::Green
            } else {
                Color::Red
            };
            let output = format!("{}{}", run.stdout, run.stderr);
            let mut shown = plain_lines(&run.net_lines().join("\n"), dim(), run.net.len());
            shown.extend(plain_lines(&output, dim(), RUN_HEAD_LINES));
            (
                tail(
                    format!(" — {end}, {:.1} s", run.duration_ms as f64 / 1000.0),
                    color,
                ),
                (shown, Vec::new()),
            )
        }
        Ok(ToolOutput::ReadFile(read)) => (
            tail(format!(" — {} bytes", read.content.len()), Color::DarkGray),
            (
                Vec::new(),
                plain_lines(&read.content, dim(), EXPANDED_LINES),
            ),
        ),
        Ok(ToolOutput::Grep(grep)) => (
            tail(
                format!(" — {} matches", grep.matches.len()),
                Color::DarkGray,
            ),
            (
                Vec::new(),
                plain_lines(&grep.matches.join("\n"), dim(), EXPANDED_LINES),
            ),
        ),
        Ok(ToolOutput::ListDir(list)) => {
            let names = wicket_protocol::json::text(&list.entries);
            (
                tail(" — listed".into(), Color::DarkGray),
                (Vec::new(), plain_lines(&names, dim(), EXPANDED_LINES)),
            )
        }
        Ok(ToolOutput::Write(write)) => (
            tail(
                format!(
                    " — wrote {} byte{}",
                    write.bytes,
                    if write.bytes == 1 { "" } else { "s" }
                ),
                Color::Green,
            ),
            (Vec::new(), Vec::new()),
        ),
        Ok(ToolOutput::Mcp(mcp)) => (
            tail(" — done".into(), Color::Green),
            (
                Vec::new(),
                plain_lines(&mcp.model_text(), dim(), EXPANDED_LINES),
            ),
        ),
        Ok(ToolOutput::Skill(skill)) => (
            tail(
                format!(" — {} loaded", visible_line(&skill.name)),
                Color::DarkGray,
            ),
            (Vec::new(), Vec::new()),
        ),
        Ok(ToolOutput::Preview(preview)) => {
            let (word, color) = match preview.preview {
                wicket_protocol::tools::PreviewOutcome::Applied => ("applied", Color::Green),
                wicket_protocol::tools::PreviewOutcome::Discarded => ("discarded", Color::Red),
            };
            let changes: Vec<String> = preview
                .changes
                .iter()
                .map(|effect| format!("{} {}", effect.change.as_str(), effect.path))
                .collect();
            (
                tail(
                    format!(" — previewed, {} change(s) {word}", preview.changes.len()),
                    color,
                ),
                (
                    plain_lines(&changes.join("\n"), dim(), RUN_HEAD_LINES),
                    Vec::new(),
                ),
            )
        }
        Ok(ToolOutput::Plan(_)) => (
            tail(
                " — approved: every tool is offered now".into(),
                Color::Green,
            ),
            (Vec::new(), Vec::new()),
        ),
        Ok(ToolOutput::Task(task)) => (
            tail(
                format!(
                    " — sub-task {} finished ({})",
                    visible_line(&task.task.session),
                    wicket_protocol::Usage::line(task.usage.as_ref())
                ),
                Color::Green,
            ),
            (plain_lines(&task.result, dim(), RUN_HEAD_LINES), Vec::new()),
        ),
        Ok(ToolOutput::Reply(_) | ToolOutput::Finish(_)) => {
            (Line::default(), (Vec::new(), Vec::new()))
        }
    }
}
