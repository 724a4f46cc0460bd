//! Markdown as terminal lines: headings, emphasis, inline code, lists,
//! quotes and fenced code blocks highlighted with syntect (pure-Rust
//! regexes). Every piece of text goes through the control-character filter
//! before it becomes a span.

use std::sync::LazyLock;

use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use syntect::easy::HighlightLines;
use syntect::highlighting::{FontStyle, Theme, ThemeSet};
use syntect::parsing::SyntaxSet;
use syntect::util::LinesWithEndings;
use wicket_protocol::text::visible_line;

/// Code blocks longer than this are shown plain.
const HIGHLIGHT_MAX_BYTES: usize = 256 * 1024;

static SYNTAXES: LazyLock<SyntaxSet> = LazyLock::new(SyntaxSet::load_defaults_newlines);
static THEME: LazyLock<Theme> = LazyLock::new(|| {
    ThemeSet::load_defaults()
        .themes
        .remove("base16-ocean.dark")
        .unwrap_or_default()
});

/// A code block's lines, coloured when its language is known.
pub fn highlight(code: &str, language: &str) -> Vec<Line<'static>> {
    let plain = || {
        code.lines()
            .map(|line| Line::styled(visible_line(line), Style::new().fg(Color::Gray)))
            .collect()
    };
    if code.len() > HIGHLIGHT_MAX_BYTES || language.is_empty() {
        return plain();
    }
    let Some(syntax) = SYNTAXES
        .find_syntax_by_token(language)
        .or_else(|| SYNTAXES.find_syntax_by_extension(language))
    else {
        return plain();
    };
    let mut highlighter = HighlightLines::new(syntax, &THEME);
    let mut lines = Vec::new();
    for line in LinesWithEndings::from(code) {
        let Ok(ranges) = highlighter.highlight_line(line, &SYNTAXES) else {
            return plain();
        };
        let spans: Vec<Span<'static>> = ranges
            .into_iter()
            .filter_map(|(style, text)| {
                let text = text.trim_end_matches(['\n', '\r']);
                (!text.is_empty()).then(|| Span::styled(visible_line(text), to_style(style)))
            })
            .collect();
        lines.push(Line::from(spans));
    }
    lines
}

fn to_style(style: syntect::highlighting::Style) -> Style {
    let mut out = Style::new();
    if style.foreground.a > 0 {
        out = out.fg(Color::Rgb(
            style.foreground.r,
            style.foreground.g,
            style.foreground.b,
        ));
    }
    if style.font_style.contains(FontStyle::BOLD) {
        out = out.add_modifier(Modifier::BOLD);
    }
    out
}

/// Builds lines from the parser's events.
struct Writer {
    lines: Vec<Line<'static>>,
    current: Vec<Span<'static>>,
    styles: Vec<Style>,
    /// `> ` for quotes, list indents.
    prefixes: Vec<String>,
    /// The number of the next item of each open list (`None`: bullets).
    lists: Vec<Option<u64>>,
    code: Option<(String, String)>,
}

impl Writer {
    fn style(&self) -> Style {
        self.styles.last().copied().unwrap_or_default()
    }

    fn push_text(&mut self, text: &str) {
        let style = self.style();
        let mut first = true;
        for piece in text.split('\n') {
            if !first {
                self.end_line();
            }
            first = false;
            if !piece.is_empty() {
                self.current.push(Span::styled(visible_line(piece), style));
            }
        }
    }

    fn end_line(&mut self) {
        let mut spans = Vec::new();
        let prefix: String = self.prefixes.concat();
        if !prefix.is_empty() {
            spans.push(Span::styled(prefix, Style::new().fg(Color::DarkGray)));
        }
        spans.append(&mut self.current);
        self.lines.push(Line::from(spans));
    }

    fn flush(&mut self) {
        if !self.current.is_empty() {
            self.end_line();
        }
    }

    fn blank(&mut self) {
        self.flush();
        if self.lines.last().is_some_and(|line| !line.spans.is_empty()) {
            self.lines.push(Line::default());
        }
    }
}

/// `text` as markdown lines.
pub fn render(text: &str) -> Vec<Line<'static>> {
    let mut writer = Writer {
        lines: Vec::new(),
        current: Vec::new(),
        styles: Vec::new(),
        prefixes: Vec::new(),
        lists: Vec::new(),
        code: None,
    };
    let parser = Parser::new_ext(text, Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TABLES);
    for event in parser {
        writer.event(event);
    }
    writer.flush();
    while writer
        .lines
        .last()
        .is_some_and(|line| line.spans.is_empty())
    {
        writer.lines.pop();
    }
    writer.lines
}

impl Writer {
    /// Takes one event of the parser.
    fn event(&mut self, event: Event<'_>) {
        if let Some((language, code)) = &mut self.code {
            match event {
                Event::Text(text) => code.push_str(&text),
                Event::End(TagEnd::CodeBlock) => {
                    let (language, code) = (std::mem::take(language), std::mem::take(code));
                    self.code = None;
                    self.flush();
                    for line in highlight(&code, &language) {
                        let mut spans = vec![Span::styled("  ", Style::new())];
                        spans.extend(line.spans);
                        self.lines.push(Line::from(spans));
                    }
                    self.blank();
                }
                _ => {}
            }
            return;
        }
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Code(code) => {
                let style = self.style().fg(Color::Cyan);
                self.current.push(Span::styled(visible_line(&code), style));
            }
            Event::Text(text) => self.push_text(&text),
            Event::SoftBreak => self.push_text(" "),
            Event::HardBreak => self.end_line(),
            Event::Rule => {
                self.blank();
                self.lines
                    .push(Line::styled("———", Style::new().fg(Color::DarkGray)));
                self.blank();
            }
            Event::Html(html) | Event::InlineHtml(html) => self.push_text(&html),
            _ => {}
        }
    }

    /// A tag opens: a style, a prefix, a list or a code block begins.
    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Heading { level, .. } => {
                self.blank();
                let marks = match level {
                    HeadingLevel::H1 => "# ",
                    HeadingLevel::H2 => "## ",
                    _ => "### ",
                };
                let style = Style::new().add_modifier(Modifier::BOLD);
                self.styles.push(style);
                self.current.push(Span::styled(marks, style));
            }
            Tag::Emphasis => self
                .styles
                .push(self.style().add_modifier(Modifier::ITALIC)),
            Tag::Strong => self.styles.push(self.style().add_modifier(Modifier::BOLD)),
            Tag::Strikethrough => self
                .styles
                .push(self.style().add_modifier(Modifier::CROSSED_OUT)),
            Tag::Link { .. } => {
                let style = self
                    .style()
                    .fg(Color::Cyan)
                    .add_modifier(Modifier::UNDERLINED);
                self.styles.push(style);
            }
            Tag::BlockQuote(_) => self.prefixes.push("> ".into()),
            Tag::List(start) => {
                self.flush();
                self.lists.push(start);
            }
            Tag::Item => {
                self.flush();
                let depth = self.lists.len().saturating_sub(1);
                let marker = match self.lists.last_mut() {
                    Some(Some(number)) => {
                        *number += 1;
                        format!("{}. ", *number - 1)
                    }
                    _ => "• ".to_string(),
                };
                self.current
                    .push(Span::raw(format!("{}{marker}", "  ".repeat(depth))));
            }
            Tag::CodeBlock(kind) => {
                let language = match kind {
                    CodeBlockKind::Fenced(info) => info
                        .split_whitespace()
                        .next()
                        .unwrap_or_default()
                        .to_string(),
                    CodeBlockKind::Indented => String::new(),
                };
                self.code = Some((language, String::new()));
            }
            Tag::TableCell => self.push_text("| "),
            _ => {}
        }
    }

    /// A tag closes: its style, prefix or list ends.
    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Heading(_) => {
                self.styles.pop();
                self.blank();
            }
            TagEnd::Paragraph => self.blank(),
            TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough | TagEnd::Link => {
                self.styles.pop();
            }
            TagEnd::BlockQuote(_) => {
                self.flush();
                self.prefixes.pop();
            }
            TagEnd::List(_) => {
                self.flush();
                self.lists.pop();
                if self.lists.is_empty() {
                    self.blank();
                }
            }
            TagEnd::Item | TagEnd::TableRow | TagEnd::TableHead => self.flush(),
            TagEnd::TableCell => self.push_text(" "),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text_of(lines: &[Line<'_>]) -> String {
        lines
            .iter()
            .map(|line| {
                line.spans
                    .iter()
                    .map(|span| span.content.as_ref())
                    .collect::<String>()
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn markdown_reads_as_text_with_its_structure() {
        let lines = render(
            "# Title\n\nSome *words* and `code`.\n\n- one\n- two\n\n1. first\n2. second\n\n> quoted\n\n```rust\nfn main() {}\n```\n",
        );
        assert_eq!(
            text_of(&lines),
            "# Title\n\nSome words and code.\n\n• one\n• two\n\n1. first\n2. second\n\n> quoted\n\n  fn main() {}"
        );
    }

    #[test]
    fn code_is_coloured_and_controls_are_visible() {
        let lines = highlight("fn main() {}\n", "rust");
        assert!(lines[0].spans.len() > 1, "{lines:?}");
        let shown = text_of(&render("hi \u{1b}[2J there\u{202e}"));
        assert!(
            !shown.contains('\u{1b}') && !shown.contains('\u{202e}'),
            "{shown:?}"
        );
    }
}
