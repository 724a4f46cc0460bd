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
                    "{} wants to write {}",
                    card.tool,
                    card.path.as_deref().unwrap_or("?")
                ),
                BOLD,
                color,
            ));
            out.push('\n');
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
                    "[the whole diff is {} bytes; the card shows its first {} lines]\n",
                    card.diff_bytes.unwrap_or(0),
                    card.diff.as_deref().unwrap_or("").lines().count()
                ));
            }
        }
        CardKind::OutsideRead => {
            out.push_str(&paint(
                &format!(
                    "{} wants to read outside the workspace: {}",
                    card.tool,
                    card.path.as_deref().unwrap_or("?")
                ),
                BOLD,
                color,
            ));
            out.push('\n');
        }
        CardKind::Run => {
            let argv = card.argv.clone().unwrap_or_default();
            let quoted: Vec<String> = argv
                .iter()
                .map(|arg| serde_json::to_string(arg).unwrap_or_default())
                .collect();
            out.push_str(&paint("run wants to start a command", BOLD, color));
            out.push('\n');
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

fn short(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or("");
    let cut: String = line.chars().take(max).collect();
    if cut.len() < text.len() {
        format!("{cut}…")
    } else {
        cut
    }
}

/// What a tool call is about, in a few words: its path, argv or pattern.
fn call_summary(name: &str, arguments: &serde_json::Value) -> String {
    let field = |key: &str| arguments.get(key).and_then(|v| v.as_str());
    match name {
        "run" => arguments
            .get("argv")
            .and_then(|argv| argv.as_array())
            .map(|argv| {
                argv.iter()
                    .map(|arg| arg.as_str().unwrap_or("?").to_string())
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .unwrap_or_default(),
        "grep" => format!(
            "{:?} {}",
            field("pattern").unwrap_or(""),
            field("path").unwrap_or("")
        ),
        "ask" => field("question").unwrap_or("").to_string(),
        "finish" => String::new(),
        "use_skill" => field("name").unwrap_or("").to_string(),
        _ => field("path").unwrap_or(".").to_string(),
    }
}

/// One event as a line of the readable transcript of `wicket exec`; `None`
/// for events a person need not see there.
pub fn transcript_line(event: &Event) -> Option<String> {
    Some(match &event.body {
        EventBody::SessionStarted { session, workspace } => {
            format!("session {session} in {workspace}")
        }
        EventBody::UserMessage { text } => format!("> {text}"),
        EventBody::AssistantMessage { text, .. } if !text.trim().is_empty() => {
            text.trim_end().to_string()
        }
        EventBody::AssistantMessage { .. } => return None,
        EventBody::ToolCall {
            name, arguments, ..
        } => format!("→ {name} {}", call_summary(name, arguments)),
        EventBody::ToolResult {
            ok: true, output, ..
        } => {
            let output = output.clone().unwrap_or_default();
            let detail = if let Some(code) = output.get("exit_code") {
                format!("exit {code}")
            } else if let Some(matches) = output.get("matches").and_then(|m| m.as_array()) {
                format!("{} matches", matches.len())
            } else if let Some(entries) = output.get("entries").and_then(|e| e.as_array()) {
                format!("{} entries", entries.len())
            } else if let Some(size) = output.get("size") {
                format!("{size} bytes")
            } else if let Some(bytes) = output.get("bytes") {
                format!("wrote {bytes} bytes")
            } else {
                short(&output.to_string(), 100)
            };
            format!("  ✓ {detail}")
        }
        EventBody::ToolResult { error, .. } => match error {
            Some(error) => format!(
                "  ✗ {}: {}",
                error.kind.as_str(),
                short(&error.message, 160)
            ),
            None => "  ✗ failed".to_string(),
        },
        EventBody::Card { card, .. } => {
            let what = match card.kind {
                CardKind::Write => format!("write {}", card.path.as_deref().unwrap_or("?")),
                CardKind::OutsideRead => {
                    format!("read outside {}", card.path.as_deref().unwrap_or("?"))
                }
                CardKind::Run => format!("run {}", card.argv.clone().unwrap_or_default().join(" ")),
            };
            format!("  ? card {}: {what}", card.id)
        }
        EventBody::Answer { answer, stale, .. } => format!(
            "  {}{}",
            answer.as_str(),
            if *stale {
                " (stale: the file changed, asking again)"
            } else {
                ""
            }
        ),
        EventBody::Question { question, .. } => format!("? {question}"),
        EventBody::Reply { reply, .. } => format!("  reply: {reply}"),
        EventBody::Result { text, usage } => format!(
            "✔ {}\n  ({} tokens in, {} out)",
            text.trim_end(),
            usage.input_tokens,
            usage.output_tokens
        ),
        EventBody::Hook {
            command, outcome, ..
        } => format!("  hook {} → {outcome:?}", command.join(" ")),
        EventBody::Queued { text } => format!("queued: {text}"),
        EventBody::Retry {
            attempt,
            delay_ms,
            reason,
        } => format!("  retry {attempt} in {delay_ms} ms: {reason}"),
        EventBody::Cancelled {} => "cancelled".to_string(),
        EventBody::Error { message, .. } => format!("error: {message}"),
    })
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
        EventBody::UserMessage { text } => format!("user {text}"),
        EventBody::AssistantMessage {
            text, tool_calls, ..
        } => {
            let names: Vec<&str> = tool_calls.iter().map(|call| call.name.as_str()).collect();
            if names.is_empty() {
                format!("assistant {text}")
            } else {
                format!("assistant {text} [calls {}]", names.join(", "))
            }
        }
        EventBody::Question { id, question, .. } => format!("question {id} {question}"),
        EventBody::Reply { question, reply } => format!("reply {question} {reply}"),
        EventBody::Result { text, usage } => format!(
            "result {text} ({} tokens in, {} out)",
            usage.input_tokens, usage.output_tokens
        ),
        EventBody::Hook {
            command,
            outcome,
            exit_code,
            stderr,
            ..
        } => format!(
            "hook {} {outcome:?} exit {} {}",
            command.join(" "),
            exit_code.map_or("-".to_string(), |code| code.to_string()),
            stderr.trim()
        ),
        EventBody::Queued { text } => format!("queued {text}"),
        EventBody::Retry {
            attempt,
            delay_ms,
            reason,
        } => format!("retry {attempt} in {delay_ms} ms: {reason}"),
        EventBody::Cancelled {} => "cancelled".to_string(),
        EventBody::Error { message, .. } => format!("error {message}"),
    };
    format!("{:>5} {} {what}", event.seq, event.ts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blank(kind: CardKind, tool: &str) -> Card {
        Card {
            id: "card-1".into(),
            kind,
            tool: tool.into(),
            path: None,
            argv: None,
            cwd: None,
            timeout_s: None,
            diff: None,
            diff_bytes: None,
            diff_truncated: None,
            digest: None,
        }
    }

    fn write_card() -> Card {
        let before = b"fn main() {\n    println!(\"hello\");\n}\n";
        let after = b"fn main() {\n    println!(\"hello, world\");\n}\n";
        let diff = wicket_core::diff::unified("src/main.rs", Some(before), after);
        Card {
            path: Some("/home/me/project/src/main.rs".into()),
            diff_bytes: Some(diff.len() as u64),
            diff: Some(diff),
            diff_truncated: Some(false),
            digest: Some(wicket_core::gate::digest(Some(before))),
            ..blank(CardKind::Write, "search_replace")
        }
    }

    #[test]
    fn a_write_card() {
        insta::assert_snapshot!(card(&write_card(), false));
    }

    #[test]
    fn a_write_card_in_colour() {
        insta::assert_snapshot!(card(&write_card(), true).replace('\x1b', "<ESC>"));
    }

    #[test]
    fn a_cut_write_card_says_how_big_the_diff_is() {
        let text: String = (0..3).map(|i| format!("+line {i}\n")).collect();
        let cut = Card {
            path: Some("/home/me/project/big.txt".into()),
            diff: Some(format!(
                "--- /dev/null\n+++ b/big.txt\n@@ -1,0 +1,9000 @@\n{text}"
            )),
            diff_bytes: Some(120_345),
            diff_truncated: Some(true),
            ..blank(CardKind::Write, "write_file")
        };
        insta::assert_snapshot!(card(&cut, false));
    }

    #[test]
    fn a_run_card_with_a_timeout() {
        let run = Card {
            argv: Some(vec![
                "cargo".into(),
                "test".into(),
                "--".into(),
                "a b".into(),
            ]),
            cwd: Some("crates/core".into()),
            timeout_s: Some(300),
            ..blank(CardKind::Run, "run")
        };
        insta::assert_snapshot!(card(&run, false));
    }

    #[test]
    fn an_outside_read_card() {
        let read = Card {
            path: Some("/etc/hosts".into()),
            ..blank(CardKind::OutsideRead, "read_file")
        };
        insta::assert_snapshot!(card(&read, false));
    }
}
