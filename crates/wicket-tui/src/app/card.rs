//! A card as the TUI draws it: its title fitted to the width, its argv,
//! diff or arguments wrapped whole, a long one scrollable.

use super::*;

/// A sub-task's card, nested under a line that names it (any other as it is).
fn under_task(
    task: Option<&wicket_protocol::TaskRef>,
    lines: Vec<Line<'static>>,
) -> Vec<Line<'static>> {
    let Some(task) = task else {
        return lines;
    };
    let mut nested = vec![Line::styled(
        format!(
            "sub-task: {} (session {})",
            visible_line(&task.description),
            visible_line(&task.session)
        ),
        Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD),
    )];
    nested.extend(lines.into_iter().map(|mut line| {
        line.spans.insert(0, Span::raw("  "));
        line
    }));
    nested
}

/// Draws a card; the furthest it can scroll.
pub(super) fn render_card(frame: &mut Frame<'_>, area: Rect, view: &CardView) -> u16 {
    let card = &view.card;
    let bold = Style::new().add_modifier(Modifier::BOLD);
    let tool = outside(&card.tool);
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
                Line::from(outside(&read.path)),
            ]
        }
        CardKind::Run(run) => run_lines(run, bold, view.details),
        CardKind::Mcp(mcp) => mcp_lines(&tool, mcp, bold),
        CardKind::Net(net) => net_lines(net, bold),
        CardKind::Effects(effects) => effects_lines(effects, bold),
        CardKind::Plan(plan) => {
            let mut lines = vec![Line::styled(
                "the model proposes this plan: [o]nce approves it (then every tool is offered)",
                bold,
            )];
            lines.extend(crate::markdown::render(&plan.plan));
            lines
        }
    };
    let warn = Style::new().fg(Color::Yellow);
    if let Some(walking) = &card.checkpointing {
        lines.push(Line::styled(visible_line(walking), warn));
    }
    if let Some(missed) = &card.no_checkpoint {
        lines.push(Line::styled(
            format!("no checkpoint: {}", visible_line(missed)),
            warn,
        ));
    }
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
    lines.extend(preview_lines(card));
    let lines = under_task(card.task.as_deref(), lines);
    let keys = keys_line(view);
    // Every line whole: what does not fit the panel's width wraps onto the
    // next rows, never off the edge.
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
    let fitted = fit_width(&title, usize::from(width.saturating_sub(6)));
    match fitted == title {
        true => title,
        false => format!("{fitted} "),
    }
}

/// `text` as it fits in `room` columns: whole, or cut with a `…` at its end.
pub(super) fn fit_width(text: &str, room: usize) -> String {
    if Line::from(text).width() <= room {
        return text.to_string();
    }
    let mut cut = String::new();
    let mut used = 0;
    for c in text.chars() {
        let width = Line::from(c.to_string()).width();
        if used + width + 1 > room {
            break;
        }
        used += width;
        cut.push(c);
    }
    format!("{cut}…")
}

/// Text that came from outside (argv, paths, diffs, arguments), as a card
/// shows it: control characters made visible, and a long run of blanks as
/// `␠×N`, so 150 spaces cannot push the rest of a line out of sight.
/// Wicket's own words and indents are never marked.
fn outside(text: &str) -> String {
    mark_blank_runs(&visible_line(text))
}

/// A write card: the path, then the diff whole, in colour.
/// What a run card says of a preview: the model asked for one, or why none is offered.
fn preview_lines(card: &Card) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    if let CardKind::Run(run) = &card.kind {
        if run.preview {
            lines.push(Line::styled(
                "the model asks to preview it: [p]review runs it over a copy first",
                Style::new().fg(Color::Yellow),
            ));
        }
        if let Some(why) = &run.no_preview {
            lines.push(Line::styled(
                visible_line(why),
                Style::new().fg(Color::DarkGray),
            ));
        }
        if let Some(managed) = &run.managed {
            lines.push(Line::styled(
                visible_line(managed),
                Style::new().fg(Color::Red),
            ));
        }
    }
    lines
}

/// The keys a card takes, on its frame (none until it is armed).
fn keys_line(view: &CardView) -> &'static str {
    let card = &view.card;
    let offers_preview = matches!(&card.kind, CardKind::Run(run) if run.no_preview.is_none());
    match (view.armed, card.always.is_some()) {
        (true, _) if matches!(card.kind, CardKind::Effects(_)) => {
            " [a]pply · [d]iscard · ↑↓ scroll · Esc cancels the turn "
        }
        (true, true) if offers_preview => {
            " [o]nce · [s]ession · [a]lways · [p]review · [d]eny · [r]eason · ↑↓ "
        }
        (true, false) if offers_preview => {
            " [o]nce · [s]ession · [p]review · [d]eny · [r]eason · ↑↓ · Esc cancels "
        }
        (true, true) => {
            " [o]nce · [s]ession · [a]lways · [d]eny · [r]eason · ↑↓ · Esc cancels turn "
        }
        (true, false) => {
            " [o]nce · [s]ession · [d]eny · [r]eason · ↑↓ scroll · Esc cancels the turn "
        }
        (false, _) => " … ",
    }
}

/// A diff's lines, coloured.
fn diff_lines(diff: &str) -> Vec<Line<'static>> {
    visible(diff)
        .lines()
        .map(mark_blank_runs)
        .map(|line| {
            let color = if line.starts_with('+') && !line.starts_with("+++") {
                Color::Green
            } else if line.starts_with('-') && !line.starts_with("---") {
                Color::Red
            } else if line.starts_with("@@") {
                Color::Cyan
            } else {
                Color::Reset
            };
            Line::styled(line, Style::new().fg(color))
        })
        .collect()
}

/// An effects card: how the previewed command ended, then each change.
fn effects_lines(effects: &wicket_protocol::EffectsCard, bold: Style) -> Vec<Line<'static>> {
    let argv: Vec<String> = effects.argv.iter().map(|arg| outside(arg)).collect();
    let end = match effects.exit_code {
        Some(code) => format!("exit {code}"),
        None => "ended by a signal".to_string(),
    };
    let mut lines = vec![Line::styled(
        format!(
            "the preview of {} changed {} path(s) ({end}); nothing is in the workspace yet",
            wicket_protocol::json::text(&argv),
            effects.changes.len()
        ),
        bold,
    )];
    for effect in &effects.changes {
        let head = format!(
            "{:<8} {}{}",
            effect.change.as_str(),
            outside(&effect.path),
            effect.details()
        );
        lines.push(Line::styled(head, Style::new().fg(Color::Yellow)));
        lines.extend(diff_lines(&effect.diff));
    }
    for (name, text) in [("stdout", &effects.stdout), ("stderr", &effects.stderr)] {
        if !text.is_empty() {
            lines.push(Line::styled(
                name.to_string(),
                Style::new().fg(Color::DarkGray),
            ));
            lines.extend(
                visible(text)
                    .lines()
                    .map(|line| Line::from(line.to_string())),
            );
        }
    }
    if !effects.wanted_hosts.is_empty() {
        lines.push(Line::styled(
            format!(
                "it wanted to reach (a preview has no network): {}",
                visible_line(&effects.wanted_hosts.join(", "))
            ),
            Style::new().fg(Color::Yellow),
        ));
    }
    if let Some(note) = &effects.note {
        lines.push(Line::styled(
            visible_line(note),
            Style::new().fg(Color::DarkGray),
        ));
    }
    lines
}

fn write_lines(tool: &str, write: &WriteCard, bold: Style) -> Vec<Line<'static>> {
    let mut lines = vec![Line::styled(
        format!(
            "{tool} wants to write {}{}",
            outside(&write.path),
            write.path_note()
        ),
        bold,
    )];
    lines.extend(diff_lines(&write.diff));
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

/// A run card: who asks, the argv, cwd, timeout and the sandbox: its one
/// line when every layer is in force, each layer when one is missing or
/// weaker, or when the person asked (`?`).
fn run_lines(run: &RunCard, bold: Style, details: bool) -> Vec<Line<'static>> {
    let who = match run.source {
        wicket_protocol::RunSource::Tool => "run wants to start a command",
        wicket_protocol::RunSource::Hook => "a hook of the workspace's wants to run",
        wicket_protocol::RunSource::Mcp => "the workspace's MCP server wants to start",
    };
    let argv: Vec<String> = run.argv.iter().map(|arg| outside(arg)).collect();
    let mut lines = vec![
        Line::styled(who, bold),
        Line::from(format!("argv     {}", wicket_protocol::json::text(&argv))),
        Line::from(format!("cwd      {}", outside(&run.cwd))),
    ];
    if let Some(timeout) = run.timeout_s {
        lines.push(Line::from(format!("timeout  {timeout} s")));
    }
    if run.git {
        lines.push(Line::styled(
            format!("git      {}", wicket_protocol::GIT_WRITE_WARNING),
            Style::new().fg(Color::Yellow),
        ));
    }
    if !run.read.is_empty() {
        let read: Vec<String> = run.read.iter().map(|path| outside(path)).collect();
        lines.push(Line::styled(
            format!("reads    {}", read.join(", ")),
            Style::new().fg(Color::Yellow),
        ));
    }
    let sandbox = &run.sandbox;
    if sandbox.complete {
        lines.push(Line::from(format!("sandbox  {}", sandbox.summary)));
        if details {
            lines.extend(layer_lines(sandbox));
        } else {
            lines.push(Line::styled(
                "         ? lists each layer",
                Style::new().fg(Color::DarkGray),
            ));
        }
        return lines;
    }
    let mode = sandbox.mode;
    let warn = matches!(
        mode,
        wicket_protocol::SandboxMode::Off | wicket_protocol::SandboxMode::Unavailable
    );
    let mut line = format!("sandbox  {}", mode.as_str());
    line.push_str(network_words(run.network));
    if let Some(note) = &sandbox.note {
        line.push_str(&format!(" ({})", visible_line(note)));
    }
    lines.push(Line::styled(
        line,
        Style::new().fg(if warn { Color::Red } else { Color::Reset }),
    ));
    lines.extend(layer_lines(sandbox));
    lines
}

/// What a run card says of the network the call asked for.
fn network_words(network: wicket_protocol::Network) -> &'static str {
    match network {
        wicket_protocol::Network::Off => ", no network",
        wicket_protocol::Network::Proxied => ", network: through Wicket, host by host",
        wicket_protocol::Network::Direct => ", DIRECT network: any host, not through Wicket",
    }
}

/// A net card: the host (in both forms where one is in another script),
/// whether it is local, and the command that asks.
fn net_lines(net: &wicket_protocol::NetCard, bold: Style) -> Vec<Line<'static>> {
    let who = match &net.server {
        Some(server) => format!("the MCP server {}", outside(server)),
        None => "a command".to_string(),
    };
    let mut lines = vec![Line::styled(
        format!("{who} wants to reach {}", outside(&net.target())),
        bold,
    )];
    if net.local {
        lines.push(Line::styled(
            "it resolves to a local address (this machine or your network)",
            Style::new().fg(Color::Yellow),
        ));
    }
    if !net.addresses.is_empty() {
        lines.push(Line::from(format!(
            "address  {}",
            outside(&net.addresses.join(", "))
        )));
    }
    if !net.argv.is_empty() {
        let argv: Vec<String> = net.argv.iter().map(|arg| outside(arg)).collect();
        lines.push(Line::from(format!(
            "command  {}",
            wicket_protocol::json::text(&argv)
        )));
    }
    lines.push(Line::styled(
        "[o]nce lets this host for the rest of the command; the connection waits",
        Style::new().fg(Color::DarkGray),
    ));
    lines
}

/// Each layer of a run card's sandbox, under its line.
fn layer_lines(sandbox: &wicket_protocol::SandboxSummary) -> Vec<Line<'static>> {
    sandbox
        .layers
        .iter()
        .map(|layer| Line::from(format!("         · {}", visible_line(layer))))
        .collect()
}

/// An MCP card: the server, the tool, its arguments and the server's claims.
fn mcp_lines(tool: &str, mcp: &McpCard, bold: Style) -> Vec<Line<'static>> {
    let mut lines = vec![Line::styled(
        format!(
            "the MCP server {} wants to run its tool {tool}",
            outside(&mcp.server)
        ),
        bold,
    )];
    for line in visible(&mcp.arguments_text).lines() {
        lines.push(Line::from(format!("  {}", mark_blank_runs(line))));
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
