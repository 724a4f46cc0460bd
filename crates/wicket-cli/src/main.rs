//! The `wicket` command: a turn from a terminal or a script (`wicket exec`),
//! one tool call through the gate (`wicket tool`), the sessions on disk
//! (`wicket sessions`) and a session's log (`wicket log`).

mod answer;
mod exec;
mod grants;
mod import;
mod mcp;
mod policy;
mod rewind;
mod serve;
mod show;

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use wicket_core::config::Config;
use wicket_core::hooked::Caller;
use wicket_gate::{Answerer, Confinement, Policy};
use wicket_protocol::{Answer, ErrorKind, ToolCall, ToolCallRequest, WireError, result_line};
use wicket_session::{self as session, Session};
use wicket_tools::{Cancel, Tools};

#[derive(Parser)]
#[command(
    name = "wicket",
    version,
    about = "A coding agent runtime: tools behind a permission gate, sessions on disk"
)]
struct Cli {
    /// Without a command, on a terminal: `wicket chat` in the current folder.
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Clone, Copy, ValueEnum)]
#[value(rename_all = "snake_case")]
enum Answers {
    Deny,
    AllowOnce,
    AllowSession,
    AllowAlways,
    Stdin,
}

#[derive(Clone, Copy, ValueEnum)]
#[value(rename_all = "snake_case")]
enum ExecAnswers {
    Deny,
    AllowOnce,
    AllowAlways,
    Stdin,
}

#[derive(Subcommand)]
enum McpCommand {
    /// Start each configured server and list whether it started and its tools.
    List {
        /// The workspace whose config adds servers (default: the current folder).
        #[arg(long)]
        workspace: Option<PathBuf>,
        /// One JSON object per server.
        #[arg(long)]
        json: bool,
        /// How cards (a workspace server's start) are answered; default a prompt on a terminal, else deny.
        #[arg(long, value_enum)]
        answers: Option<Answers>,
    },
    /// Call one tool of one server through the gate and print its card and result as JSON lines.
    Call {
        /// The server's name in the config.
        server: String,
        /// The tool's name on the server.
        tool: String,
        /// The arguments as a JSON object, or @PATH to read them from a file.
        args: String,
        /// The workspace (default: the current folder).
        #[arg(long)]
        workspace: Option<PathBuf>,
        /// Continue this session (created when it does not exist); default a throwaway one.
        #[arg(long)]
        session: Option<String>,
        /// How cards are answered; default a prompt on a terminal, else deny.
        #[arg(long, value_enum)]
        answers: Option<Answers>,
    },
}

// `defer`: a subcommand's arguments are built only when it is the one run,
// not all thirteen at every start (0.06 ms of `wicket --version`, 0.03 ms of
// `wicket tool`; BENCHMARKS.md, 2026-12-06). Names and abouts stay eager,
// so every help text reads the same.
#[derive(Subcommand)]
#[command(defer = true)]
enum Command {
    /// Run one ask as a turn: the model works through the tools, cards are answered here.
    Exec {
        /// What to ask the model.
        ask: String,
        /// The workspace (default: the current folder, or the continued session's).
        #[arg(long)]
        workspace: Option<PathBuf>,
        /// PROVIDER:NAME: openai:gpt-4o, anthropic:claude-sonnet-4-5, ollama:qwen2.5-coder, script:PATH
        /// (default: WICKET_MODEL, then model in config.toml).
        #[arg(long)]
        model: Option<String>,
        /// Continue this session (created when it does not exist).
        #[arg(long)]
        session: Option<String>,
        /// Every event as a JSON line, the first naming the session id.
        #[arg(long)]
        json: bool,
        /// How cards are answered; default a prompt on a terminal, else deny.
        #[arg(long, value_enum)]
        answers: Option<ExecAnswers>,
        /// Exit 3 when any call of the turn was denied (by a card's answer,
        /// a rule, a hook or --answers deny), so that CI does not pass work
        /// that never happened.
        #[arg(long)]
        fail_on_deny: bool,
        /// Plan mode: the model may only read, ask and propose a plan until
        /// you approve one (a `plan` card), then every tool.
        #[arg(long)]
        plan: bool,
    },
    /// Run one tool call through the gate and print its cards and result as JSON lines.
    Tool {
        /// read_file, grep, list_dir, search_replace, write_file or run.
        name: String,
        /// The arguments as JSON, or @PATH to read them from a file.
        args: String,
        /// The workspace the tools work on (default: the current folder).
        #[arg(long)]
        workspace: Option<PathBuf>,
        /// Continue this session (created when it does not exist); default a throwaway one.
        #[arg(long)]
        session: Option<String>,
        /// How cards are answered; default a prompt on a terminal, else deny.
        #[arg(long, value_enum)]
        answers: Option<Answers>,
    },
    /// Serve the HTTP API and the web page for many sessions (127.0.0.1 only unless --listen).
    Serve {
        /// The port on 127.0.0.1 (0 = any free port).
        #[arg(long, default_value_t = serve::DEFAULT_PORT)]
        port: u16,
        /// The workspace a new session gets when the page names none.
        #[arg(long)]
        workspace: Option<PathBuf>,
        /// Listen on this address (IP:PORT) instead; every request still needs the token.
        #[arg(long)]
        listen: Option<std::net::SocketAddr>,
    },
    /// Hold a conversation in the terminal (the default on a terminal).
    Chat {
        /// The workspace of a new session (default: the current folder).
        #[arg(long)]
        workspace: Option<PathBuf>,
        /// PROVIDER:NAME (default: the session's, WICKET_MODEL, then config.toml).
        #[arg(long)]
        model: Option<String>,
        /// Go on with this session.
        #[arg(long, conflicts_with = "continue_last")]
        session: Option<String>,
        /// Go on with the newest session in this workspace.
        #[arg(long = "continue")]
        continue_last: bool,
    },
    /// Speak the Agent Client Protocol on stdin and stdout, so an editor hosts Wicket.
    Acp {
        /// PROVIDER:NAME for the sessions this editor opens (default: WICKET_MODEL, then config.toml).
        #[arg(long)]
        model: Option<String>,
    },
    /// The MCP servers of the configs: list them and their tools, or make one call through the gate.
    Mcp {
        #[command(subcommand)]
        command: McpCommand,
    },
    /// List the sessions: id, workspace, status, last update.
    Sessions {
        #[arg(long)]
        json: bool,
    },
    /// Print a session's events.
    Log {
        /// The session (or --last).
        #[arg(required_unless_present = "last", conflicts_with = "last")]
        id: Option<String>,
        /// The newest session in this workspace (--workspace, default: the current folder).
        #[arg(long)]
        last: bool,
        /// With --last: the workspace whose newest session is meant.
        #[arg(long, requires = "last")]
        workspace: Option<PathBuf>,
        /// One JSON event per line, as in log.jsonl.
        #[arg(long)]
        json: bool,
    },
    /// List the rules in force and a session's grants, with where each came from.
    Grants {
        #[command(subcommand)]
        action: Option<GrantsAction>,
        /// Also this session's grants (and its workspace's rules).
        #[arg(long)]
        session: Option<String>,
        /// One JSON object per line.
        #[arg(long)]
        json: bool,
    },
    /// Put a session's files back to how they were before an event (default:
    /// before the last turn that changed anything), after showing what changes.
    Rewind {
        /// The session (or --last).
        #[arg(required_unless_present = "last", conflicts_with = "last")]
        session: Option<String>,
        /// The newest session in this workspace (--workspace, default: the current folder).
        #[arg(long)]
        last: bool,
        /// With --last: the workspace whose newest session is meant.
        #[arg(long, requires = "last")]
        workspace: Option<PathBuf>,
        /// Before this log event (`wicket log SESSION` shows the numbers).
        #[arg(long)]
        to: Option<u64>,
        /// Take back the last rewind.
        #[arg(long, conflicts_with = "to")]
        undo: bool,
        /// Do it without asking.
        #[arg(long)]
        yes: bool,
        /// List the checkpoints instead: the event each comes before.
        #[arg(long, conflicts_with_all = ["to", "undo", "yes"])]
        list: bool,
    },
    /// Check recorded sessions against today's rules.
    Policy {
        #[command(subcommand)]
        action: PolicyAction,
    },
    /// Read your own Claude Code or Codex settings and write Wicket's
    /// (rules, hooks, MCP servers), printing what each entry became.
    Import {
        /// Whose settings: claude-code or codex.
        from: import::From,
        /// The workspace whose .mcp.json is read (default: the current folder).
        #[arg(long)]
        workspace: Option<PathBuf>,
        /// Print the table, write nothing.
        #[arg(long)]
        dry_run: bool,
    },
}

#[derive(Subcommand)]
enum GrantsAction {
    /// Take back a saved rule (rules.toml) or, with --session, a session's grant.
    Revoke {
        id: String,
        /// The session whose grant it is.
        #[arg(long)]
        session: Option<String>,
    },
}

#[derive(Subcommand)]
enum PolicyAction {
    /// Replay every call of SESSION against today's rules: card, allowed (by what) or denied.
    Check { session: String },
    /// The settings and rules in force, each with the file it came from
    /// (the managed policy, your config, rules.toml, the workspace's).
    Show {
        /// The workspace whose config is read too (default: the current folder).
        #[arg(long)]
        workspace: Option<PathBuf>,
        /// One JSON object per line, each with its `source`.
        #[arg(long)]
        json: bool,
    },
}

/// The launcher every command starts through: `wicket-launch` beside this
/// binary (small, so cheap to start twice per command), else this binary
/// itself, which runs the same stages.
fn launcher() -> PathBuf {
    std::env::current_exe()
        .ok()
        .map(|exe| exe.with_file_name("wicket-launch"))
        .filter(|path| std::fs::metadata(path).is_ok_and(|meta| meta.is_file()))
        .unwrap_or_else(|| PathBuf::from("/proc/self/exe"))
}

fn main() -> ExitCode {
    // The sandbox launcher's stages run before anything else: a user
    // namespace can only be made by a process with one thread.
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if let Some(code) = wicket_os::launch::dispatch(&args) {
        return ExitCode::from(code);
    }
    wicket_os::launch::install_launcher(launcher());
    // `$WICKET_HOME` made absolute now, against the folder wicket started
    // in, before anything reads it (a relative one broke every preview).
    session::home();
    if let Err(error) = wicket_os::process::survive_file_size_limit() {
        show::say(format!(
            "SIGXFSZ cannot be handled ({error}); a write past the file-size limit would end wicket"
        ));
    }
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(error) => {
            show::say(format!("{error:#}"));
            ExitCode::from(1)
        }
    }
}

// The table of subcommands, one arm per `wicket` command, read as one list; past 80 lines because the commands are that many.
fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let command = match cli.command {
        Some(command) => command,
        None if std::io::stdin().is_terminal() && std::io::stdout().is_terminal() => {
            Command::Chat {
                workspace: None,
                model: None,
                session: None,
                continue_last: false,
            }
        }
        None => {
            eprintln!(
                "wicket: no command; on a terminal `wicket` opens the chat. See `wicket --help` for exec, tool, serve, acp, mcp, sessions and log"
            );
            return Ok(ExitCode::from(2));
        }
    };
    match command {
        Command::Chat {
            workspace,
            model,
            session,
            continue_last,
        } => {
            let workspace = match workspace {
                Some(dir) => dir,
                None => std::env::current_dir()?,
            };
            let session = match continue_last {
                true => Some(
                    session::newest_in(&session::home(), &workspace)
                        .map_err(|why| anyhow::anyhow!(why))?,
                ),
                false => session,
            };
            let code = wicket_tui::run(wicket_tui::Options {
                home: session::home(),
                workspace,
                model,
                session: session.map(wicket_protocol::SessionId::from),
            })?;
            Ok(ExitCode::from(code))
        }
        Command::Exec {
            ask,
            workspace,
            model,
            session,
            json,
            answers,
            fail_on_deny,
            plan,
        } => exec::exec(exec::Options {
            plan,
            ask,
            workspace,
            model,
            session,
            json,
            fail_on_deny,
            mode: match answers {
                Some(ExecAnswers::AllowAlways) => {
                    allow_always_allowed()?;
                    Some(exec::Mode::Policy(Answer::AllowAlways))
                }
                other => other.map(|answers| match answers {
                    ExecAnswers::Deny => exec::Mode::Policy(Answer::Deny),
                    ExecAnswers::AllowOnce => exec::Mode::Policy(Answer::AllowOnce),
                    ExecAnswers::AllowAlways => exec::Mode::Policy(Answer::AllowAlways),
                    ExecAnswers::Stdin => exec::Mode::Stdin,
                }),
            },
        }),
        Command::Tool {
            name,
            args,
            workspace,
            session,
            answers,
        } => {
            if matches!(answers, Some(Answers::AllowAlways)) {
                allow_always_allowed()?;
            }
            tool(&name, &args, workspace, session, answers)
        }
        Command::Serve {
            port,
            workspace,
            listen,
        } => serve::serve(serve::Options {
            port,
            workspace,
            listen,
        }),
        Command::Acp { model } => acp(model),
        Command::Mcp { command } => mcp_command(command),
        Command::Sessions { json } => sessions(json),
        Command::Log {
            id,
            last,
            workspace,
            json,
        } => log(&picked(id, last, workspace)?, json),
        Command::Grants {
            action: None,
            session,
            json,
        } => grants::list(session.as_deref(), json),
        Command::Grants {
            action: Some(GrantsAction::Revoke { id, session }),
            ..
        } => grants::revoke(&id, session.as_deref()),
        Command::Policy {
            action: PolicyAction::Check { session },
        } => grants::check(&session),
        Command::Policy {
            action: PolicyAction::Show { workspace, json },
        } => policy::show(workspace, json),
        Command::Import {
            from,
            workspace,
            dry_run,
        } => import::run(from, workspace, dry_run),
        Command::Rewind {
            session,
            last,
            workspace,
            to,
            undo,
            yes,
            list,
        } => rewind::rewind(rewind::Options {
            session: picked(session, last, workspace)?,
            to,
            undo,
            yes,
            list,
        }),
    }
}

/// `wicket acp`: ACP on stdin and stdout until the editor closes it.
fn acp(model: Option<String>) -> anyhow::Result<ExitCode> {
    let home = session::home();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let manager = std::sync::Arc::new(wicket_core::manager::Manager::new(
        &home,
        runtime.handle().clone(),
        wicket_core::manager::standard_setup(&home),
    ));
    // The models the person's config names, for the editor's picker. A
    // config that does not load is reported when a session opens.
    let listed = wicket_core::config::Config::load_home(&home)
        .map(|config| {
            config
                .models
                .into_keys()
                .chain(config.prices.into_keys())
                .collect()
        })
        .unwrap_or_default();
    match runtime.block_on(wicket_acp::serve(manager, model, listed)) {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(error) => {
            show::say(format!("acp: {error}"));
            Ok(ExitCode::from(1))
        }
    }
}

/// `wicket mcp list|call`.
fn mcp_command(command: McpCommand) -> anyhow::Result<ExitCode> {
    match command {
        McpCommand::List {
            workspace,
            json,
            answers,
        } => {
            let setup = mcp::Setup::load(workspace, None)?;
            mcp::list(&setup, json, answerer_for(answers).as_mut())
        }
        McpCommand::Call {
            server,
            tool,
            args,
            workspace,
            session,
            answers,
        } => {
            let arguments = match json_arguments(&args) {
                Ok(value) => value,
                Err(message) => return usage_error(message),
            };
            let setup = mcp::Setup::load(workspace, session)?;
            mcp::call(
                &setup,
                &server,
                &tool,
                arguments,
                answerer_for(answers).as_mut(),
            )
        }
    }
}

/// `wicket sessions`: one line (or JSON object) a session, newest first.
fn sessions(json: bool) -> anyhow::Result<ExitCode> {
    let sessions = session::list(&session::home());
    let mut out = std::io::stdout().lock();
    for meta in sessions {
        if json {
            writeln!(out, "{}", serde_json::to_string(&meta)?)?;
        } else {
            writeln!(
                out,
                "{}  {:<7}  {}  {}",
                meta.id,
                meta.status.as_str(),
                meta.updated,
                wicket_protocol::text::visible_line(&meta.workspace)
            )?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `wicket log ID`: every event of a session, as a line or as JSON; each
/// sub-task's events inline after the `task` event that started it
/// (indented, or with JSON's `task` naming it).
fn log(id: &str, json: bool) -> anyhow::Result<ExitCode> {
    let home = session::home();
    let (_, loaded) = Session::load_existing(&home, id)?;
    let mut out = std::io::stdout().lock();
    for event in &loaded.events {
        if json {
            writeln!(out, "{}", serde_json::to_string(event)?)?;
        } else {
            writeln!(out, "{}", show::event_line(event))?;
        }
        if let wicket_protocol::EventBody::Task(task) = &event.body {
            log_task(&mut out, &home, task, json)?;
        }
    }
    if loaded.torn_tail.is_some() {
        eprintln!("wicket: the log's last line was torn (a crash mid-write) and was skipped");
    }
    if let Some(hole) = loaded.hole {
        eprintln!(
            "wicket: the log ends in a hole at byte {hole} (bytes never written); nothing past it was read"
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// A sub-task's events, inline in its parent's log.
fn log_task(
    out: &mut impl Write,
    home: &std::path::Path,
    task: &wicket_protocol::event::TaskEvent,
    json: bool,
) -> anyhow::Result<()> {
    let events = match Session::load_existing(home, &task.session) {
        Ok((_, loaded)) => loaded.events,
        Err(error) => {
            writeln!(out, "  │ the sub-task's log cannot be read: {error}")?;
            return Ok(());
        }
    };
    let named = wicket_protocol::TaskRef {
        session: task.session.clone(),
        description: task.description.clone(),
    };
    for event in &events {
        if json {
            let mut value = serde_json::to_value(event)?;
            value["task"] = serde_json::to_value(&named)?;
            writeln!(out, "{value}")?;
        } else {
            writeln!(out, "  │ {}", show::event_line(event))?;
        }
    }
    Ok(())
}

/// Arguments given as JSON, or as @PATH to a file of JSON; the inner error
/// is the usage message when they cannot be read or are not JSON (a file
/// that is missing or not UTF-8 is bad usage too, with its result line).
fn json_arguments(args: &str) -> Result<serde_json::Value, String> {
    let text = match args.strip_prefix('@') {
        Some(path) => arguments_file(path)?,
        None => args.to_string(),
    };
    serde_json::from_str(&text)
        .map_err(|error| format!("the arguments are not valid JSON: {error}"))
}

/// The text of `@PATH`, at most `ARGUMENTS_FILE_MAX_BYTES`.
fn arguments_file(path: &str) -> Result<String, String> {
    use std::io::Read;
    let max = wicket_protocol::limits::ARGUMENTS_FILE_MAX_BYTES;
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|file| file.take(max + 1).read_to_end(&mut bytes))
        .map_err(|error| {
            format!(
                "the arguments file {path} cannot be read: {error}; give the arguments as JSON, or @PATH to a file of JSON"
            )
        })?;
    if bytes.len() as u64 > max {
        return Err(format!(
            "the arguments file {path} is larger than {max} bytes; no tool takes that much"
        ));
    }
    String::from_utf8(bytes)
        .map_err(|_| format!("the arguments file {path} is not UTF-8 text, which JSON must be"))
}

pub(crate) fn usage_error(message: String) -> anyhow::Result<ExitCode> {
    let line = result_line(&Err(WireError {
        kind: ErrorKind::InvalidArgs,
        message: message.clone(),
    }));
    println!("{line}");
    show::say(&message);
    Ok(ExitCode::from(2))
}

fn tool(
    name: &str,
    args: &str,
    workspace: Option<PathBuf>,
    session_id: Option<String>,
    answers: Option<Answers>,
) -> anyhow::Result<ExitCode> {
    let arguments = match json_arguments(args) {
        Ok(value) => value,
        Err(message) => return usage_error(message),
    };
    if !wicket_protocol::TOOL_NAMES.contains(&name) {
        return usage_error(format!(
            "there is no tool '{name}'; the tools are {}",
            wicket_protocol::TOOL_NAMES.join(", ")
        ));
    }
    let workspace = match workspace {
        Some(dir) => dir,
        None => std::env::current_dir()?,
    };
    let tools = match Tools::open(&workspace) {
        Ok(tools) => tools,
        Err(error) => return usage_error(error.message),
    };
    let call = match ToolCall::parse(name, arguments) {
        Ok(call) => call,
        Err(error) => {
            println!("{}", result_line(&Err(error)));
            return Ok(ExitCode::from(1));
        }
    };
    let home = session::home();
    let root = tools.workspace().root().to_path_buf();
    // Every call reads the config: its hooks guard an inside read too.
    let config = Config::load(&home, &root)?;
    let rules = config.gate_rules(&home);
    let confinement = Confinement {
        sandbox: config.sandbox,
        home: home.clone(),
    };
    let session = tool_session(&home, session_id, &root)?;
    let mut answerer = answerer_for(answers);
    // The same hooks as a turn's, around the same gate.
    let caller = Caller {
        parent: None,
        tools: &tools,
        session: &session,
        hooks: &config.hooks,
        confinement: &confinement,
        rules: &rules,
        checkpoints: None,
    };
    let request = ToolCallRequest {
        id: wicket_os::ids::new_id("call").into(),
        name: name.to_string(),
        arguments: call.arguments().to_string(),
    };
    let (result, notes) = caller.call(&request, &call, answerer.as_mut(), &Cancel::default());
    session.sync()?;
    for note in notes {
        show::say(note);
    }
    println!("{}", result_line(&result));
    Ok(if result.is_ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// `wicket tool`'s session: `--session`'s, or (without it) one in memory only.
fn tool_session(home: &Path, session_id: Option<String>, root: &Path) -> anyhow::Result<Session> {
    let Some(id) = session_id else {
        return Ok(Session::in_memory(root));
    };
    let (session, loaded) = Session::open_or_create(home, &id, root, None)?;
    if loaded.torn_tail.is_some() {
        show::say(format!(
            "the last line of {} was torn (a crash mid-write); it was skipped",
            session.log_path().display()
        ));
    }
    Ok(session)
}

/// `--answers allow_always` is refused under a managed policy that sets
/// `allow_always = false`: the fourth answer is hidden everywhere.
fn allow_always_allowed() -> anyhow::Result<()> {
    let managed = wicket_core::config::Managed::load()?;
    anyhow::ensure!(
        !managed.no_allow_always,
        "--answers allow_always is not allowed: the managed policy ({}) sets allow_always = false; \
         use --answers allow_once, or stdin",
        managed.named()
    );
    Ok(())
}

/// Who answers `wicket tool`'s cards: the flag, else a prompt on a terminal, else deny.
/// The session a command names: its id, or with `--last` the newest in
/// `workspace` (default: the current folder).
fn picked(id: Option<String>, last: bool, workspace: Option<PathBuf>) -> anyhow::Result<String> {
    match (id, last) {
        (Some(id), false) => Ok(id),
        (_, true) => {
            let workspace = match workspace {
                Some(dir) => dir,
                None => std::env::current_dir()?,
            };
            session::newest_in(&session::home(), &workspace).map_err(|why| anyhow::anyhow!(why))
        }
        (None, false) => anyhow::bail!("give a session's id, or --last for the newest here"),
    }
}

fn answerer_for(answers: Option<Answers>) -> Box<dyn Answerer> {
    match answers {
        Some(Answers::Deny) => Box::new(answer::Printing::new(Policy(Answer::Deny))),
        Some(Answers::AllowOnce) => Box::new(answer::Printing::new(Policy(Answer::AllowOnce))),
        Some(Answers::AllowSession) => {
            Box::new(answer::Printing::new(Policy(Answer::AllowSession)))
        }
        Some(Answers::AllowAlways) => Box::new(answer::Printing::new(Policy(Answer::AllowAlways))),
        Some(Answers::Stdin) => Box::new(answer::Printing::new(answer::StdinLines::default())),
        None if std::io::stdin().is_terminal() => {
            Box::new(answer::Printing::new(answer::Terminal::default()))
        }
        None => Box::new(answer::Printing::new(Policy(Answer::Deny))),
    }
}
