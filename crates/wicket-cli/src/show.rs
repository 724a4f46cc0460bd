//! What a person reads: cards and log events as text.

use wicket_protocol::{Card, CardKind, Event, EventBody};

const RED: &str = "\x1b[31m";
const GREEN: &str = "\x1b[32m";
const CYAN: &str = "\x1b[36m";
const BOLD: &str = "\x1b[1m";
const RESET: &str = "\x1b[0m";

fn paint(text: &str, style: &str, color: bool) -> String {
    if color {
        format!("{style}{text}{RESET}")
    } else {
        text.to_string()
    }
}

/// A card as a person reads it; a coloured diff unless `color` is false.
pub fn card(card: &Card, color: bool) -> String {
    let mut out = String::new();
    match card.kind {
        CardKind::Write => {
            out.push_str(&paint(
                &format!(
                    "{} wants to write {}\n",
                    card.tool,
                    card.path.as_deref().unwrap_or("?")
                ),
                BOLD,
                color,
            ));
            for line in card.diff.as_deref().unwrap_or("").lines() {
                let style = if line.starts_with("+++") || line.starts_with("---") {
                    BOLD
                } else if line.starts_with('+') {
                    GREEN
                } else if line.starts_with('-') {
                    RED
                } else if line.starts_with("@@") {
                    CYAN
                } else {
                    ""
                };
                out.push_str(&if style.is_empty() {
                    line.to_string()
                } else {
                    paint(line, style, color)
                });
                out.push('\n');
            }
            if card.diff_truncated == Some(true) {
                out.push_str(&format!(
                    "[the diff is {} bytes; the card shows its first lines]\n",
                    card.diff_bytes.unwrap_or(0)
                ));
            }
        }
        CardKind::OutsideRead => {
            out.push_str(&paint(
                &format!(
                    "{} wants to read outside the workspace: {}\n",
                    card.tool,
                    card.path.as_deref().unwrap_or("?")
                ),
                BOLD,
                color,
            ));
        }
        CardKind::Run => {
            let argv = card.argv.clone().unwrap_or_default();
            let quoted: Vec<String> = argv
                .iter()
                .map(|arg| serde_json::to_string(arg).unwrap_or_default())
                .collect();
            out.push_str(&paint("run wants to start a command\n", BOLD, color));
            out.push_str(&format!("  argv: [{}]\n", quoted.join(", ")));
            if let Some(cwd) = &card.cwd {
                out.push_str(&format!("  cwd: {cwd}\n"));
            }
            if let Some(timeout) = card.timeout_s {
                out.push_str(&format!("  timeout: {timeout} s\n"));
            }
        }
    }
    out
}

/// One log event on one line.
pub fn event_line(event: &Event) -> String {
    let what = match &event.body {
        EventBody::SessionStarted { session, workspace } => {
            format!("session {session} in {workspace}")
        }
        EventBody::ToolCall {
            name, arguments, ..
        } => format!("tool_call {name} {arguments}"),
        EventBody::ToolResult {
            ok: true, output, ..
        } => {
            let text = output.as_ref().map(|o| o.to_string()).unwrap_or_default();
            let short: String = text.chars().take(160).collect();
            format!(
                "tool_result ok {short}{}",
                if short.len() < text.len() { "…" } else { "" }
            )
        }
        EventBody::ToolResult { error, .. } => match error {
            Some(error) => format!("tool_result {}: {}", error.kind.as_str(), error.message),
            None => "tool_result failed".to_string(),
        },
        EventBody::Card { card: c, .. } => {
            let detail = match c.kind {
                CardKind::Write | CardKind::OutsideRead => c.path.clone().unwrap_or_default(),
                CardKind::Run => serde_json::to_string(&c.argv).unwrap_or_default(),
            };
            format!("card {} {:?} {detail}", c.id, c.kind)
        }
        EventBody::Answer {
            card,
            answer,
            stale,
        } => {
            format!(
                "answer {card} {}{}",
                answer.as_str(),
                if *stale { " (stale)" } else { "" }
            )
        }
        EventBody::Error { message } => format!("error {message}"),
    };
    format!("{:>5} {} {what}", event.seq, event.ts)
}
