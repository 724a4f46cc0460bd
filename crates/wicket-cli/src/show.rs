//! What a person reads: cards and log events as text. Every string that
//! came from the model, a file or a command goes through
//! `wicket_protocol::text::visible` here, so no escape sequence, carriage
//! return or bidi override in it can redraw what the card says.

use wicket_protocol::Usage;
use wicket_protocol::event::{
    AnswerEvent, AssistantMessageEvent, CancelledEvent, CardEvent, CheckpointEvent, CompactedEvent,
    ErrorEvent, HookRunEvent, InterruptedEvent, McpEvent, NetEvent, NoticeEvent, QuestionEvent,
    QueuedEvent, ReplyEvent, ResultEvent, RetryEvent, RewoundEvent, SessionStartedEvent, TaskEvent,
    ToolCallEvent, ToolResultEvent, TurnEndedEvent, UnreadableEvent, UserMessageEvent,
};
use wicket_protocol::summary::Tone;
use wicket_protocol::text::{mark_blank_runs, visible, visible_line};
use wicket_protocol::{
    Card, CardKind, Event, EventBody, GIT_WRITE_WARNING, McpCard, NetCard, Network,
    OutsideReadCard, Reach, RunCard, RunSource, SandboxMode, SandboxSummary, ToolOutput, WriteCard,
};

const RED: &str = "\x1b[31m";
const GREEN: &str = "\x1b[32m";
const CYAN: &str = "\x1b[36m";
const YELLOW: &str = "\x1b[33m";
const BOLD: &str = "\x1b[1m";
const DIM: &str = "\x1b[2m";
const RESET: &str = "\x1b[0m";

fn paint(text: &str, style: &str, color: bool) -> String {
    if color && !style.is_empty() {
        format!("{style}{text}{RESET}")
    } else {
        text.to_string()
    }
}

/// Whether the terminal gets colour: not when `NO_COLOR` is set.
pub(crate) fn colour() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// A card as a person reads it; a coloured diff unless `color` is false.
pub(crate) fn card(card: &Card, color: bool) -> String {
    let tool = visible_line(&card.tool);
    let mut shown = match &card.kind {
        CardKind::Write(write) => write_card(&tool, write, color),
        CardKind::OutsideRead(read) => outside_card(&tool, read, color),
        CardKind::Run(run) => run_card(run, color),
        CardKind::Mcp(mcp) => mcp_card(&tool, mcp, color),
        CardKind::Net(net) => net_card(net, color),
        CardKind::Effects(effects) => effects_card(effects, color),
        CardKind::Plan(plan) => {
            let mut out = paint(
                "the model proposes this plan (approve it once, and every tool is offered):",
                BOLD,
                color,
            );
            out.push('\n');
            for line in plan.plan.lines() {
                out.push_str(&format!("  {}\n", visible_line(line)));
            }
            out
        }
    };
    if let Some(walking) = &card.checkpointing {
        if !shown.ends_with('\n') {
            shown.push('\n');
        }
        shown.push_str(&paint(&visible_line(walking), YELLOW, color));
        shown.push('\n');
    }
    if let Some(missed) = &card.no_checkpoint {
        if !shown.ends_with('\n') {
            shown.push('\n');
        }
        shown.push_str(&paint(
            &format!("no checkpoint: {}", visible_line(missed)),
            YELLOW,
            color,
        ));
        shown.push('\n');
    }
    if let Some(always) = &card.always {
        if !shown.ends_with('\n') {
            shown.push('\n');
        }
        shown.push_str(&paint(
            &format!("always would save: {}", visible_line(&always.describe())),
            DIM,
            color,
        ));
        shown.push('\n');
    }
    match &card.task {
        Some(task) => under_task(task, &shown, color),
        None => shown,
    }
}

/// A sub-task's card, shown under its parent: a line naming it, then the
/// card indented.
fn under_task(task: &wicket_protocol::TaskRef, shown: &str, color: bool) -> String {
    let mut out = paint(
        &format!(
            "sub-task: {} (session {})",
            visible_line(&task.description),
            visible_line(&task.session)
        ),
        CYAN,
        color,
    );
    out.push('\n');
    for line in shown.lines() {
        out.push_str("  ");
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// A diff's lines, coloured, each made visible.
fn diff_text(diff: &str, color: bool) -> String {
    let mut out = String::new();
    for line in diff.lines() {
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
        out.push_str(&paint(&mark_blank_runs(&visible_line(line)), style, color));
        out.push('\n');
    }
    out
}

/// An effects card: how the previewed command ended, and each change.
fn effects_card(effects: &wicket_protocol::EffectsCard, color: bool) -> String {
    let argv: Vec<String> = effects
        .argv
        .iter()
        .map(|arg| visible_line(&wicket_protocol::json::text(arg)))
        .collect();
    let end = effects.exit_code.map_or_else(
        || "a signal ended it".to_string(),
        |code| format!("exit {code}"),
    );
    let mut out = paint(
        &format!(
            "the preview of [{}] changed {} path(s) ({end}); nothing is in the workspace yet",
            argv.join(", "),
            effects.changes.len()
        ),
        BOLD,
        color,
    );
    out.push('\n');
    for effect in &effects.changes {
        let head = format!(
            "{:<8} {}{}",
            effect.change.as_str(),
            visible_line(&effect.path),
            effect.details()
        );
        out.push_str(&paint(&head, YELLOW, color));
        out.push('\n');
        out.push_str(&diff_text(&effect.diff, color));
    }
    for (name, text) in [("stdout", &effects.stdout), ("stderr", &effects.stderr)] {
        if !text.is_empty() {
            out.push_str(&format!("{name}:\n"));
            for line in text.lines() {
                out.push_str(&format!("  {}\n", visible_line(line)));
            }
        }
    }
    if !effects.wanted_hosts.is_empty() {
        out.push_str(&paint(
            &format!(
                "it wanted to reach (a preview has no network): {}",
                visible_line(&effects.wanted_hosts.join(", "))
            ),
            YELLOW,
            color,
        ));
        out.push('\n');
    }
    if let Some(note) = &effects.note {
        out.push_str(&format!("{}\n", visible_line(note)));
    }
    out
}

fn write_card(tool: &str, write: &WriteCard, color: bool) -> String {
    let mut out = paint(
        &format!(
            "{tool} wants to write {}{}",
            visible_line(&write.path),
            write.path_note()
        ),
        BOLD,
        color,
    );
    out.push('\n');
    out.push_str(&diff_text(&write.diff, color));
    if write.diff_truncated {
        out.push_str(&format!(
            "[the whole diff is {} bytes; the card shows its first {} lines]\n",
            write.diff_bytes,
            write.diff.lines().count()
        ));
    }
    out
}

fn outside_card(tool: &str, read: &OutsideReadCard, color: bool) -> String {
    let what = match read.reach {
        Reach::Read => "read a file outside the workspace",
        Reach::List => "list the names in a folder outside the workspace",
        Reach::Grep => "search every file below a path outside the workspace",
    };
    let mut out = paint(
        &format!("{tool} wants to {what}: {}", visible_line(&read.path)),
        BOLD,
        color,
    );
    out.push('\n');
    out
}

/// The sandbox line of a run card, in words.
pub(crate) fn sandbox_line(sandbox: &SandboxSummary) -> String {
    let network = if sandbox.network {
        "with network"
    } else {
        "no network"
    };
    let mode = match sandbox.mode {
        SandboxMode::WorkspaceWrite => {
            format!("workspace-write: writes only in the workspace and its own TMPDIR, {network}")
        }
        SandboxMode::ReadOnly => format!("read-only: writes only in its own TMPDIR, {network}"),
        SandboxMode::Off => "OFF in your config: it runs unconfined".to_string(),
        SandboxMode::Unavailable => "UNAVAILABLE".to_string(),
    };
    match &sandbox.note {
        Some(note) => format!("{mode} ({})", visible_line(note)),
        None => mode,
    }
}

fn run_card(run: &RunCard, color: bool) -> String {
    let quoted: Vec<String> = run
        .argv
        .iter()
        .map(|arg| mark_blank_runs(&visible_line(&wicket_protocol::json::text(arg))))
        .collect();
    let who = match run.source {
        RunSource::Tool => "run wants to start a command",
        RunSource::Hook => "a hook of the workspace's (.wicket/config.toml) wants to run",
        RunSource::Mcp => "the workspace's MCP server (.wicket/config.toml) wants to start",
    };
    let mut out = paint(who, BOLD, color);
    out.push('\n');
    out.push_str(&format!("  argv: [{}]\n", quoted.join(", ")));
    out.push_str(&format!("  cwd: {}\n", visible_line(&run.cwd)));
    if let Some(timeout) = run.timeout_s {
        out.push_str(&format!("  timeout: {timeout} s\n"));
    }
    match run.network {
        Network::Off => {}
        Network::Proxied => out.push_str(&paint(
            "  network: through Wicket, host by host (each new host is a card)\n",
            BOLD,
            color,
        )),
        Network::Direct => out.push_str(&paint(
            "  DIRECT network: any host, not through Wicket\n",
            RED,
            color,
        )),
    }
    if run.git {
        out.push_str(&paint(
            &format!("  git: {GIT_WRITE_WARNING}\n"),
            BOLD,
            color,
        ));
    }
    if !run.read.is_empty() {
        let read: Vec<String> = run
            .read
            .iter()
            .map(|path| mark_blank_runs(&visible_line(path)))
            .collect();
        out.push_str(&paint(
            &format!("  also reads: {}\n", read.join(", ")),
            BOLD,
            color,
        ));
    }
    if let Some(managed) = &run.managed {
        out.push_str(&paint(
            &format!("  managed: {}\n", visible_line(managed)),
            RED,
            color,
        ));
    }
    // Every layer in force: the one line says it all (the JSON keeps each layer).
    if run.sandbox.complete {
        out.push_str(&format!("  sandbox: {}\n", run.sandbox.summary));
        return out;
    }
    let line = format!("  sandbox: {}\n", sandbox_line(&run.sandbox));
    let warn = matches!(
        run.sandbox.mode,
        SandboxMode::Off | SandboxMode::Unavailable
    );
    out.push_str(&paint(&line, if warn { RED } else { "" }, color));
    for layer in &run.sandbox.layers {
        out.push_str(&format!("    · {}\n", visible_line(layer)));
    }
    out
}

/// A net card: who wants to reach which host, and what the person should
/// know of it (a local address, the command).
fn net_card(net: &NetCard, color: bool) -> String {
    let who = match &net.server {
        Some(server) => format!("the MCP server {}", visible_line(server)),
        None => "a command".to_string(),
    };
    let mut out = paint(
        &format!(
            "{who} wants to reach {}",
            mark_blank_runs(&visible_line(&net.target()))
        ),
        BOLD,
        color,
    );
    out.push('\n');
    if net.local {
        out.push_str(&paint(
            "  it resolves to a local address (this machine or your network)\n",
            YELLOW,
            color,
        ));
    }
    if !net.addresses.is_empty() {
        out.push_str(&format!(
            "  address: {}\n",
            visible_line(&net.addresses.join(", "))
        ));
    }
    if !net.argv.is_empty() {
        let argv: Vec<String> = net
            .argv
            .iter()
            .map(|arg| mark_blank_runs(&visible_line(&wicket_protocol::json::text(arg))))
            .collect();
        out.push_str(&format!("  command: [{}]\n", argv.join(", ")));
    }
    out.push_str("  allow once lets this host for the rest of the command; the connection waits\n");
    out
}

fn mcp_card(tool: &str, mcp: &McpCard, color: bool) -> String {
    let mut out = paint(
        &format!(
            "the MCP server {} wants to run its tool {tool}",
            visible_line(&mcp.server)
        ),
        BOLD,
        color,
    );
    out.push('\n');
    for line in mcp.arguments_text.lines() {
        out.push_str("  ");
        out.push_str(&visible_line(line));
        out.push('\n');
    }
    if mcp.arguments_truncated {
        out.push_str("  [the arguments are longer; the card shows their start]\n");
    }
    if let Some(annotations) = &mcp.annotations {
        out.push_str(&format!(
            "  the server says (a claim, not a permission): {}\n",
            visible_line(&annotations.to_string())
        ));
    }
    out
}

fn short(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or("");
    let cut: String = line.chars().take(max).collect();
    let shown = visible_line(&cut);
    if cut.len() < text.len() {
        format!("{shown}…")
    } else {
        shown
    }
}

/// A result in a few words.
fn output_summary(output: &ToolOutput) -> String {
    match output {
        ToolOutput::ReadFile(read) if read.binary => format!("binary, {} bytes", read.size),
        ToolOutput::ReadFile(read) => format!("{} bytes", read.size),
        ToolOutput::Grep(grep) => format!("{} matches", grep.matches.len()),
        ToolOutput::ListDir(list) => format!("{} entries", list.entries.len()),
        ToolOutput::Write(write) => format!("wrote {} bytes", write.bytes),
        ToolOutput::Run(run) => {
            let mut ended = match (run.exit_code, run.signal) {
                (Some(code), _) => format!("exit {code} in {} ms", run.duration_ms),
                (None, Some(signal)) => {
                    format!("killed by signal {signal} after {} ms", run.duration_ms)
                }
                (None, None) => "ended".to_string(),
            };
            for line in run.net_lines() {
                ended.push_str(&format!("; {}", visible_line(&line)));
            }
            ended
        }
        ToolOutput::Reply(reply) => format!("reply: {}", short(&reply.reply, 100)),
        ToolOutput::Finish(_) => "finished".to_string(),
        ToolOutput::Task(task) => format!(
            "sub-task {} finished: {} ({})",
            visible_line(&task.task.session),
            short(&task.result, 200),
            Usage::line(task.usage.as_ref())
        ),
        ToolOutput::Skill(skill) => format!("skill {}", visible_line(&skill.name)),
        ToolOutput::Mcp(mcp) => format!(
            "{} item(s) from {}",
            mcp.content.len(),
            visible_line(&mcp.server)
        ),
        ToolOutput::Plan(_) => "plan approved".to_string(),
        ToolOutput::Preview(preview) => format!(
            "previewed, exit {}, {} change(s) {}",
            preview
                .exit_code
                .map_or_else(|| "by a signal".to_string(), |code| code.to_string()),
            preview.changes.len(),
            match preview.preview {
                wicket_protocol::tools::PreviewOutcome::Applied => "applied",
                wicket_protocol::tools::PreviewOutcome::Discarded => "discarded",
            }
        ),
    }
}

/// A card in a few words, for transcripts.
pub(crate) fn card_summary(card: &Card) -> String {
    let what = kind_summary(card);
    match &card.task {
        Some(task) => format!("sub-task: {}: {what}", visible_line(&task.description)),
        None => what,
    }
}

fn kind_summary(card: &Card) -> String {
    match &card.kind {
        CardKind::Write(write) => format!("write {}", visible_line(&write.path)),
        CardKind::OutsideRead(read) => {
            format!(
                "{} outside {}",
                read.reach.as_str(),
                visible_line(&read.path)
            )
        }
        CardKind::Run(run) => format!(
            "run {}{}",
            visible_line(&run.argv.join(" ")),
            match run.source {
                RunSource::Tool => "",
                RunSource::Hook => " (workspace hook)",
                RunSource::Mcp => " (workspace MCP server)",
            }
        ),
        CardKind::Mcp(mcp) => format!(
            "mcp {} {}",
            visible_line(&mcp.server),
            visible_line(&card.tool)
        ),
        CardKind::Net(net) => format!("net {}", net.target()),
        CardKind::Plan(_) => "a plan".to_string(),
        CardKind::Effects(effects) => format!(
            "effects of {}: {} change(s)",
            visible_line(&effects.argv.join(" ")),
            effects.changes.len()
        ),
    }
}

/// Says `message` on stderr as `wicket: …`, its control and format
/// characters made visible: every message of Wicket's to a terminal goes
/// through here (an error can quote a config line, a server's name, a path).
pub(crate) fn say(message: impl std::fmt::Display) {
    eprintln!("wicket: {}", visible(&message.to_string()));
}

/// Writes `line` and a newline to stdout, at once: the one place a line
/// for a script (an event, a card, exec's last word) or a transcript goes.
pub(crate) fn line_out(line: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    // Stdout closed (a pipe gone): there is no one left to tell; the exit code still says how it ended.
    let _ = writeln!(out, "{line}").and_then(|()| out.flush());
}

/// Shows `prompt` on stderr at once, then reads a line from the terminal
/// (`None` at end of input): every question exec and `wicket tool` put to
/// a person goes through here.
pub(crate) fn ask_line(prompt: &str) -> Option<String> {
    use std::io::Write;
    eprint!("{prompt}");
    // Stderr closed: the prompt cannot be shown, and the read that follows finds no terminal either.
    let _ = std::io::stderr().flush();
    crate::answer::read_terminal_line()
}

/// One event as a line of the readable transcript of `wicket exec`; `None`
/// for events a person need not see there.
pub(crate) fn transcript_line(event: &Event) -> Option<String> {
    Some(match &event.body {
        EventBody::UserMessage(UserMessageEvent { text, plan }) => format!(
            "> {}{}",
            if *plan { "(plan mode) " } else { "" },
            visible(text)
        ),
        EventBody::AssistantMessage(AssistantMessageEvent { text, .. })
            if !text.trim().is_empty() =>
        {
            visible(text.trim_end())
        }
        EventBody::AssistantMessage(AssistantMessageEvent { .. }) => return None,
        EventBody::ToolCall(ToolCallEvent {
            name, arguments, ..
        }) => format!(
            "→ {} {}",
            visible_line(name),
            short(&wicket_protocol::call_summary(name, arguments), 200)
        ),
        EventBody::ToolResult(ToolResultEvent {
            result: Ok(output), ..
        }) => format!("  ✓ {}", output_summary(output)),
        EventBody::ToolResult(ToolResultEvent {
            result: Err(error), ..
        }) => format!(
            "  ✗ {}: {}",
            error.kind.as_str(),
            short(&error.message, 160)
        ),
        EventBody::Card(CardEvent { card, .. }) => {
            format!("  ? card {}: {}", card.id, card_summary(card))
        }
        EventBody::Answer(AnswerEvent { answer, stale, .. }) => format!(
            "  {}{}",
            answer.as_str(),
            if *stale {
                " (stale: the file changed, asking again)"
            } else {
                ""
            }
        ),
        EventBody::Question(QuestionEvent { question, .. }) => format!("? {}", visible(question)),
        EventBody::Reply(ReplyEvent { reply, .. }) => format!("  reply: {}", visible(reply)),
        EventBody::Result(ResultEvent { text, usage }) => {
            format!(
                "✔ {}\n  ({})",
                visible(text.trim_end()),
                Usage::line(usage.as_ref())
            )
        }
        // The result, error or cancel before it said how the turn ended.
        EventBody::TurnEnded(TurnEndedEvent { .. }) => return None,
        body => {
            let summary = body.summary()?;
            // What happened on the way sits under the turn's own lines.
            let on_the_way =
                summary.tone == Tone::Quiet && !matches!(body, EventBody::SessionStarted(_));
            let indent = if on_the_way { "  " } else { "" };
            format!("{indent}{}", visible(&summary.text))
        }
    })
}

/// An event's one line ([`EventBody::summary`]), made visible.
fn body_summary(body: &EventBody) -> String {
    body.summary()
        .map_or_else(String::new, |summary| visible_line(&summary.text))
}

/// One log event on one line.
// One flat match with an arm per event kind, the one table of `wicket log`'s line for each; past 80 lines because the match is exhaustive.
pub(crate) fn event_line(event: &Event) -> String {
    let what = match &event.body {
        EventBody::SessionStarted(SessionStartedEvent { session, workspace }) => {
            format!("session {session} in {}", visible_line(workspace))
        }
        EventBody::ToolCall(ToolCallEvent {
            name,
            arguments,
            auto_allowed,
            allowed_by,
            ..
        }) => format!(
            "tool_call {} {}{}{}",
            visible_line(name),
            short(&arguments.to_string(), 400),
            auto_allowed
                .as_ref()
                .map(|rule| format!(" (allowed by {})", visible_line(rule)))
                .unwrap_or_default(),
            allowed_by
                .as_ref()
                .map(|by| format!(" ({})", visible_line(&by.describe())))
                .unwrap_or_default()
        ),
        EventBody::ToolResult(ToolResultEvent {
            result: Ok(output), ..
        }) => {
            let text = serde_json::to_string(output)
                .unwrap_or_else(|error| format!("(the output could not be shown: {error})"));
            format!("tool_result ok {}", short(&text, 160))
        }
        EventBody::ToolResult(ToolResultEvent {
            result: Err(error), ..
        }) => format!(
            "tool_result {}: {}",
            error.kind.as_str(),
            short(&error.message, 400)
        ),
        EventBody::Card(CardEvent { card, .. }) => {
            format!("card {} {}", card.id, card_summary(card))
        }
        EventBody::Answer(AnswerEvent {
            card,
            answer,
            stale,
            rule,
            reason,
        }) => format!(
            "answer {card} {}{}{}{}",
            answer.as_str(),
            if *stale { " (stale)" } else { "" },
            rule.as_ref()
                .map(|rule| format!(" (saved rule {})", visible_line(rule)))
                .unwrap_or_default(),
            reason
                .as_ref()
                .map(|reason| format!(": {}", short(reason, 400)))
                .unwrap_or_default()
        ),
        EventBody::UserMessage(UserMessageEvent { text, plan }) => format!(
            "user {}{}",
            if *plan { "(plan mode) " } else { "" },
            short(text, 400)
        ),
        EventBody::AssistantMessage(AssistantMessageEvent {
            text,
            tool_calls,
            usage,
            ..
        }) => {
            let names: Vec<String> = tool_calls
                .iter()
                .map(|call| visible_line(&call.name))
                .collect();
            let unreported = if usage.is_none() {
                " (usage not reported)"
            } else {
                ""
            };
            if names.is_empty() {
                format!("assistant {}{unreported}", short(text, 400))
            } else {
                format!(
                    "assistant {} [calls {}]{unreported}",
                    short(text, 400),
                    names.join(", ")
                )
            }
        }
        EventBody::Question(QuestionEvent { id, question, .. }) => {
            format!("question {id} {}", short(question, 400))
        }
        EventBody::Reply(ReplyEvent { question, reply }) => {
            format!("reply {question} {}", short(reply, 400))
        }
        EventBody::Result(ResultEvent { text, usage }) => {
            format!(
                "result {} ({})",
                short(text, 400),
                Usage::line(usage.as_ref())
            )
        }
        EventBody::Hook(HookRunEvent {
            event,
            command,
            outcome,
            exit_code,
            stderr,
            ..
        }) => format!(
            "hook {} {} {} exit {} {}",
            event.as_str(),
            visible_line(&command.join(" ")),
            outcome.as_str(),
            exit_code.map_or("-".to_string(), |code| code.to_string()),
            short(stderr.trim(), 400)
        ),
        EventBody::Queued(QueuedEvent { text }) => format!("queued {}", short(text, 400)),
        EventBody::Task(TaskEvent { .. }) => format!("task {}", body_summary(&event.body)),
        EventBody::Retry(RetryEvent {
            attempt,
            delay_ms,
            reason,
        }) => format!("retry {attempt} in {delay_ms} ms: {}", visible_line(reason)),
        EventBody::Cancelled(CancelledEvent {}) => "cancelled".to_string(),
        EventBody::Interrupted(InterruptedEvent { .. }) => body_summary(&event.body),
        EventBody::Compacted(CompactedEvent {
            summary,
            from_seq,
            to_seq,
            tokens_before,
            tokens_after,
            usage,
        }) => format!(
            "compacted events {from_seq}–{to_seq} (~{tokens_before} → ~{tokens_after} tokens; {}): {}",
            Usage::line(Some(usage)),
            short(summary, 200)
        ),
        EventBody::Mcp(McpEvent {
            server,
            state,
            message,
        }) => format!(
            "mcp {} {state:?} {}",
            visible_line(server),
            short(message, 400)
        ),
        EventBody::Net(NetEvent { .. }) => format!("net {}", body_summary(&event.body)),
        EventBody::Checkpoint(CheckpointEvent { call_id, message }) => {
            format!(
                "checkpoint {} missed: {}",
                visible_line(call_id),
                short(message, 400)
            )
        }
        EventBody::Rewound(RewoundEvent { to, files }) => visible_line(&files.line(*to)),
        EventBody::Notice(NoticeEvent { message, .. }) => format!("notice {}", short(message, 400)),
        EventBody::Error(ErrorEvent { message, .. }) => format!("error {}", short(message, 400)),
        EventBody::TurnEnded(TurnEndedEvent { outcome }) => {
            format!("turn_ended {}", outcome.as_str())
        }
        EventBody::Unreadable(UnreadableEvent { line, error }) => {
            format!("unreadable line {line}: {}", visible_line(error))
        }
    };
    format!("{:>5} {} {what}", event.seq, event.ts)
}

#[cfg(test)]
mod tests;
