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
        if let Some((language, code)) = &mut writer.code {
            match event {
                Event::Text(text) => code.push_str(&text),
                Event::End(TagEnd::CodeBlock) => {
                    let (language, code) = (language.clone(), code.clone());
                    writer.code = None;
                    writer.flush();
                    for line in highlight(&code, &language) {
                        let mut spans = vec![Span::styled("  ", Style::new())];
                        spans.extend(line.spans);
                        writer.lines.push(Line::from(spans));
                    }
                    writer.blank();
                }
                _ => {}
            }
            continue;
        }
        match event {
            Event::Start(Tag::Heading { level, .. }) => {
                writer.blank();
                let marks = match level {
                    HeadingLevel::H1 => "# ",
                    HeadingLevel::H2 => "## ",
                    _ => "### ",
                };
                let style = Style::new().add_modifier(Modifier::BOLD);
                writer.styles.push(style);
                writer.current.push(Span::styled(marks, style));
            }
            Event::End(TagEnd::Heading(_)) => {
                writer.styles.pop();
                writer.blank();
            }
            Event::Start(Tag::Paragraph) => {}
            Event::End(TagEnd::Paragraph) => writer.blank(),
            Event::Start(Tag::Emphasis) => {
                let style = writer.style().add_modifier(Modifier::ITALIC);
                writer.styles.push(style);
            }
            Event::Start(Tag::Strong) => {
                let style = writer.style().add_modifier(Modifier::BOLD);
                writer.styles.push(style);
            }
            Event::Start(Tag::Strikethrough) => {
                let style = writer.style().add_modifier(Modifier::CROSSED_OUT);
                writer.styles.push(style);
            }
            Event::Start(Tag::Link { .. }) => {
                let style = writer
                    .style()
                    .fg(Color::Cyan)
                    .add_modifier(Modifier::UNDERLINED);
                writer.styles.push(style);
            }
            Event::End(
                TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough | TagEnd::Link,
            ) => {
                writer.styles.pop();
            }
            Event::Start(Tag::BlockQuote(_)) => writer.prefixes.push("> ".into()),
            Event::End(TagEnd::BlockQuote(_)) => {
                writer.flush();
                writer.prefixes.pop();
            }
            Event::Start(Tag::List(start)) => {
                writer.flush();
                writer.lists.push(start);
            }
            Event::End(TagEnd::List(_)) => {
                writer.flush();
                writer.lists.pop();
                if writer.lists.is_empty() {
                    writer.blank();
                }
            }
            Event::Start(Tag::Item) => {
                writer.flush();
                let depth = writer.lists.len().saturating_sub(1);
                let marker = match writer.lists.last_mut() {
                    Some(Some(number)) => {
                        *number += 1;
                        format!("{}. ", *number - 1)
                    }
                    _ => "• ".to_string(),
                };
                writer
                    .current
                    .push(Span::raw(format!("{}{marker}", "  ".repeat(depth))));
            }
            Event::End(TagEnd::Item) => writer.flush(),
            Event::Start(Tag::CodeBlock(kind)) => {
                let language = match kind {
                    CodeBlockKind::Fenced(info) => info
                        .split_whitespace()
                        .next()
                        .unwrap_or_default()
                        .to_string(),
                    CodeBlockKind::Indented => String::new(),
                };
                writer.code = Some((language, String::new()));
            }
            Event::Code(code) => {
                let style = writer.style().fg(Color::Cyan);
                writer
                    .current
                    .push(Span::styled(visible_line(&code), style));
            }
            Event::Text(text) => writer.push_text(&text),
            Event::SoftBreak => writer.push_text(" "),
            Event::HardBreak => writer.end_line(),
            Event::Rule => {
                writer.blank();
                writer
                    .lines
                    .push(Line::styled("———", Style::new().fg(Color::DarkGray)));
                writer.blank();
            }
            Event::Start(Tag::TableCell) => writer.push_text("| "),
            Event::End(TagEnd::TableCell) => writer.push_text(" "),
            Event::End(TagEnd::TableRow | TagEnd::TableHead) => writer.flush(),
            Event::Html(html) | Event::InlineHtml(html) => writer.push_text(&html),
            _ => {}
        }
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
