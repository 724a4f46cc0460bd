//! A tool call with its hooks around it: the PreToolUse hooks, the gate,
//! the PostToolUse hooks, and the Notification hooks of every card it
//! raises. [`Caller`] is what a turn puts each call through, and what
//! `wicket tool` does for its one call, so that a hook guards a call
//! wherever it is made. Each hook gets Claude Code's input
//! ([`crate::hooks::claude_code_call`]) and runs through the one spawning
//! module, in the jail; a workspace's hook asks for its own `run` card first.

use std::path::Path;

use wicket_os::spawn::{Confine, Cwd};
use wicket_protocol::{
    Answer, CallId, Card, ErrorKind, EventBody, HookEvent, HookOutcome, Network, QuestionId,
    RunSource, ToolCall, ToolCallRequest, ToolOutput, WireError,
};
use wicket_session::Session;
use wicket_tools::{Cancel, Tools};

use crate::config::{Hook, Owner};
use crate::hooks::{HookRun, run_hook};
use wicket_gate::{Answerer, CommandRequest, Confinement, Gate, Hooked};
use wicket_protocol::event::HookRunEvent;

/// One hook's run, and what it comes to once its `on_error` is applied.
pub(crate) struct Ran<'h> {
    pub(crate) hook: &'h Hook,
    pub(crate) run: HookRun,
    pub(crate) settled: HookOutcome,
}

impl Ran<'_> {
    /// It failed, and its `on_error = "ignore"` let what it guarded go on.
    pub(crate) fn ignored(&self) -> bool {
        self.run.outcome == HookOutcome::Error && self.settled == HookOutcome::Pass
    }

    /// Why it blocked: its own reason, or that it failed and a failing
    /// `event` hook blocks.
    pub(crate) fn block_reason(&self, event: HookEvent) -> String {
        if self.run.outcome == HookOutcome::Error {
            format!(
                "it failed, and a failing {} hook blocks: {}",
                event.as_str(),
                self.run.stderr.trim()
            )
        } else {
            self.run.stderr.trim().to_string()
        }
    }
}

/// Answers a card from the person, after telling the Notification hooks
/// that it is open.
pub(crate) struct Notifying<'r, 'p> {
    pub(crate) caller: Caller<'r>,
    pub(crate) person: &'p mut dyn Answerer,
    pub(crate) cancel: &'r Cancel,
}

impl Answerer for Notifying<'_, '_> {
    fn answer(&mut self, card: &Card) -> Option<Answer> {
        let input = || {
            let kind = card.kind.as_str();
            serde_json::json!({
                "message": format!("Wicket needs your permission to use {}", card.tool),
                "notification_type": "permission_prompt",
                "card_id": card.id,
                "card_kind": kind,
                "tool_name": card.tool,
            })
        };
        self.caller
            .notify(input, &card.tool, self.person, self.cancel);
        self.person.answer(card)
    }

    fn widened(&mut self) -> Option<Vec<String>> {
        self.person.widened()
    }

    fn reply(&mut self, id: &QuestionId, question: &str) -> Option<String> {
        self.person.reply(id, question)
    }

    fn reason(&mut self) -> Option<String> {
        self.person.reason()
    }

    fn attended(&self) -> bool {
        self.person.attended()
    }

    fn asks(&self) -> bool {
        self.person.asks()
    }
}

/// One session's calls with their hooks: what a call needs of the session
/// and the person's config, and nothing of the model.
#[derive(Clone, Copy)]
pub struct Caller<'a> {
    /// The workspace's tools.
    pub tools: &'a Tools,
    /// The session.
    pub session: &'a Session,
    /// Every hook, by event, the home config's first.
    pub hooks: &'a [Hook],
    /// The sandbox and the home its commands may not read.
    pub confinement: &'a Confinement,
    /// The person's rules (and the workspace's asks and denies).
    pub rules: &'a wicket_gate::rules::Rules,
    /// Where a checkpoint goes before each write and command (`None`: none).
    pub checkpoints: Option<wicket_gate::Checkpointing<'a>>,
    /// A sub-task's parent, whose grants and checkpoints it shares.
    pub parent: Option<wicket_gate::Parent<'a>>,
}

impl<'a> Caller<'a> {
    /// The gate for one call.
    pub fn gate(&self) -> Gate<'a> {
        Gate::new(self.tools, self.session, self.confinement, self.rules)
            .checkpointed(self.checkpoints)
            .parented(self.parent)
    }

    fn log(&self, body: EventBody) {
        self.session.recorded().append(body);
    }

    /// Runs the hooks of `event` that match `tool`, each with Claude Code's
    /// stdin (`input`'s fields beside the common ones), concurrently (a
    /// workspace hook asks for its `run` card first, one card at a time),
    /// and logs each run as a `hook` event — but a `quiet` run that let the
    /// call through (an inside read, list or grep leaves nothing in the log
    /// but the model's own call).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn run_hooks(
        &self,
        event: HookEvent,
        tool: Option<&str>,
        call_id: Option<&CallId>,
        input: impl FnOnce() -> serde_json::Value,
        person: &mut dyn Answerer,
        cancel: &Cancel,
        quiet: bool,
    ) -> Vec<Ran<'a>> {
        let hooks: Vec<&'a Hook> = self
            .hooks
            .iter()
            .filter(|hook| hook.event == event && tool.is_none_or(|tool| hook.matches(tool)))
            .collect();
        if hooks.is_empty() {
            return Vec::new();
        }
        let mut stdin = serde_json::json!({
            "session_id": self.session.meta().id,
            "cwd": self.tools.workspace().root().display().to_string(),
            "hook_event_name": event.as_str(),
            "transcript_path": self.session.log_path().display().to_string(),
            "workspace": self.tools.workspace().root().display().to_string(),
            "log_path": self.session.log_path().display().to_string(),
        });
        // Built only for a hook that will read it (a call's whole result, for one).
        if let (Some(all), serde_json::Value::Object(extra)) = (stdin.as_object_mut(), input()) {
            all.extend(extra);
        }
        // The cards first, one at a time; then every allowed hook at once.
        let mut started = Vec::new();
        let mut ran = Vec::new();
        for hook in hooks {
            match self.hook_confine(hook, event, call_id, person) {
                Ok(confined) => started.push((hook, confined)),
                Err(refused) => ran.push((hook, refused)),
            }
        }
        let stdin = &stdin;
        std::thread::scope(|scope| {
            let running: Vec<_> = started
                .into_iter()
                .map(|(hook, (confine, cwd))| {
                    (
                        hook,
                        scope.spawn(move || run_hook(hook, cwd, stdin, confine, cancel)),
                    )
                })
                .collect();
            for (hook, handle) in running {
                let run = handle.join().unwrap_or_else(|_| {
                    HookRun::failed("the hook's thread stopped on an internal error".into())
                });
                ran.push((hook, run));
            }
        });
        ran.into_iter()
            .map(|(hook, run)| self.settle(event, call_id, quiet, hook, run))
            .collect()
    }

    /// A hook's run, settled (a workspace hook's allow taken as a pass, its
    /// `on_error` applied) and logged unless `quiet` and nothing to say.
    fn settle(
        &self,
        event: HookEvent,
        call_id: Option<&CallId>,
        quiet: bool,
        hook: &'a Hook,
        mut run: HookRun,
    ) -> Ran<'a> {
        if run.outcome == HookOutcome::Allow && hook.owner == Owner::Workspace {
            // A repository's hook can deny or ask, never let a call skip its card.
            run.outcome = HookOutcome::Pass;
            run.stderr =
                "its allow was ignored: a workspace hook can deny or ask, never allow".into();
        }
        let settled = crate::hooks::settled(hook, &run);
        let ran = Ran { hook, run, settled };
        let through = matches!(settled, HookOutcome::Pass | HookOutcome::Allow);
        let run = &ran.run;
        if !(quiet && through && run.context.is_none()) {
            self.log(EventBody::Hook(HookRunEvent {
                event,
                name: hook.name.clone(),
                call_id: call_id.cloned(),
                command: hook.command.clone(),
                outcome: run.outcome,
                exit_code: run.exit_code,
                duration_ms: Some(u64::try_from(run.duration.as_millis()).unwrap_or(u64::MAX)),
                stderr: run.stderr.clone(),
                stdout: crate::hooks::stdout_head(&run.stdout),
                context: run.context.clone(),
                ignored: ran.ignored(),
            }));
        }
        ran
    }

    /// Where and how a hook runs: a workspace hook asks for its `run` card
    /// first (a Notification hook cannot: a card is open then, so only the
    /// person's own run); the person's own starts with no card.
    fn hook_confine(
        &self,
        hook: &Hook,
        event: HookEvent,
        call_id: Option<&CallId>,
        person: &mut dyn Answerer,
    ) -> Result<(Confine, Cwd), HookRun> {
        let failed = |message: String| Err(HookRun::failed(message));
        let workspace = self.tools.workspace();
        let root = match wicket_tools::tools::run::validate(
            workspace,
            &wicket_protocol::RunArgs {
                argv: hook.command.clone(),
                ..wicket_protocol::RunArgs::default()
            },
        ) {
            Ok(dir) => dir,
            Err(error) => return failed(format!("the hook {:?}: {}", hook.command, error.message)),
        };
        let gate = self.gate();
        let card_id = call_id.map_or_else(
            || CallId::from(wicket_os::ids::new_id("hook")),
            CallId::clone,
        );
        let confine = match (hook.owner, event) {
            (Owner::Workspace, HookEvent::Notification | HookEvent::SessionEnd) => {
                return Err(HookRun {
                    outcome: HookOutcome::Denied,
                    ..HookRun::failed(format!(
                        "a workspace's {} hook would need its own card when none can be answered \
                         (a card is open, or the process is leaving); declare it in \
                         $WICKET_HOME/config.toml to have it",
                        event.as_str()
                    ))
                });
            }
            // The repository's own command: the person sees it first.
            (Owner::Workspace, _) => match gate.allow_command(
                &card_id,
                &CommandRequest {
                    read: &[],
                    tool: "run",
                    argv: &hook.command,
                    dir: &root,
                    timeout_s: hook.timeout_s,
                    network: Network::Off,
                    git: false,
                    source: RunSource::Hook,
                    preview: false,
                },
                person,
            ) {
                Ok(allowed) => allowed.confine,
                Err(error) if error.kind == ErrorKind::Denied => {
                    return Err(HookRun {
                        outcome: HookOutcome::Denied,
                        ..HookRun::failed(
                            "the person did not allow this workspace hook; it did not run".into(),
                        )
                    });
                }
                Err(error) => return failed(error.message),
            },
            // The person's own hook reads its own script: each path under
            // a home its command names is bound read-only into its jail.
            (Owner::Home, _) => {
                let read = self.home_paths_of(&hook.command);
                match gate.home_command(Network::Off, false, &read) {
                    Ok(confine) => confine,
                    Err(error) => return failed(error.message),
                }
            }
        };
        match workspace.open_folder(Path::new(""), ".") {
            Ok((fd, _)) => Ok((confine, Cwd::Fd(fd))),
            Err(error) => failed(error.message),
        }
    }

    /// The paths under a home that a hook's command names and that exist
    /// (its program, an argument, a word of its `sh -c` script: `~/…`,
    /// `$HOME/…`, or absolute), as `read` paths for its jail: a hook kept in
    /// `~/.claude/hooks/` then runs with the home hidden. A path the jail
    /// hides whatever is asked ($WICKET_HOME, a credential store, a
    /// `deny_read`) is left out, and the hook fails as it would have.
    fn home_paths_of(&self, command: &[String]) -> Vec<String> {
        let homes = wicket_gate::sandbox::all_homes();
        let mut words: Vec<String> = command.to_vec();
        for inner in wicket_gate::shell::commands_of(command) {
            words.extend(inner);
        }
        let mut read = Vec::new();
        for word in words {
            let Some(path) = home_path(&word) else {
                continue;
            };
            let under_a_home = homes.iter().any(|home| path.starts_with(home));
            let written = path.display().to_string();
            if under_a_home
                && path.exists()
                && !read.contains(&written)
                && self
                    .confinement
                    .sandbox
                    .read_paths(std::slice::from_ref(&written), &self.confinement.home)
                    .is_ok()
            {
                read.push(written);
            }
        }
        read
    }

    /// The PreToolUse hooks of one call: a deny from any of them wins,
    /// then an ask, then a home hook's allow.
    pub(crate) fn pre_tool_use(
        &self,
        call: &ToolCallRequest,
        tool_input: serde_json::Value,
        quiet: bool,
        person: &mut dyn Answerer,
        cancel: &Cancel,
    ) -> Hooked {
        let mut input =
            crate::hooks::claude_code_call(&call.name, &tool_input, self.tools.workspace().root());
        input.insert("tool_use_id".into(), call.id.to_string().into());
        let input = serde_json::Value::Object(input);
        let ran = self.run_hooks(
            HookEvent::PreToolUse,
            Some(&call.name),
            Some(&call.id),
            || input,
            person,
            cancel,
            quiet,
        );
        if let Some(denied) = ran.iter().find(|ran| ran.settled == HookOutcome::Block) {
            return Hooked::Deny {
                hook: denied.hook.name.clone(),
                reason: denied.block_reason(HookEvent::PreToolUse),
            };
        }
        if ran.iter().any(|ran| ran.settled == HookOutcome::Ask) {
            return Hooked::Ask;
        }
        match ran.iter().find(|ran| ran.settled == HookOutcome::Allow) {
            Some(allowed) => Hooked::Allow {
                hook: allowed.hook.name.clone(),
            },
            None => Hooked::Nothing,
        }
    }

    /// The PostToolUse hooks of one call: the notes they have for the model.
    pub(crate) fn post_tool_use(
        &self,
        call: &ToolCallRequest,
        tool_input: serde_json::Value,
        result: &Result<ToolOutput, WireError>,
        quiet: bool,
        person: &mut dyn Answerer,
        cancel: &Cancel,
    ) -> Vec<String> {
        let input = || {
            let response = match result {
                Ok(output) => wicket_protocol::json::value(output),
                Err(error) => serde_json::json!({ "error": error }),
            };
            let mut input = crate::hooks::claude_code_call(
                &call.name,
                &tool_input,
                self.tools.workspace().root(),
            );
            input.insert("tool_response".into(), response);
            input.insert("tool_use_id".into(), call.id.to_string().into());
            serde_json::Value::Object(input)
        };
        self.run_hooks(
            HookEvent::PostToolUse,
            Some(&call.name),
            Some(&call.id),
            input,
            person,
            cancel,
            quiet,
        )
        .iter()
        .filter_map(|ran| {
            crate::hooks::model_note(
                HookEvent::PostToolUse,
                &ran.hook.name,
                ran.run.outcome,
                ran.ignored(),
                &ran.run.stderr,
                ran.run.context.as_deref(),
            )
        })
        .collect()
    }

    /// Tells the Notification hooks that a card or a question is open.
    pub(crate) fn notify(
        &self,
        input: impl FnOnce() -> serde_json::Value,
        tool: &str,
        person: &mut dyn Answerer,
        cancel: &Cancel,
    ) {
        self.run_hooks(
            HookEvent::Notification,
            Some(tool),
            None,
            input,
            person,
            cancel,
            false,
        );
    }

    /// One of the six tools: its PreToolUse hooks, the gate, its
    /// PostToolUse hooks (whose notes it returns). An inside read, list or
    /// grep logs no hook run that let it through.
    pub fn call(
        &self,
        call: &ToolCallRequest,
        tool_call: &ToolCall,
        person: &mut dyn Answerer,
        cancel: &Cancel,
    ) -> (Result<ToolOutput, WireError>, Vec<String>) {
        if !self.tool_hooked(&call.name) {
            let mut answerer = Notifying {
                caller: *self,
                person,
                cancel,
            };
            let result = self.gate().call(&call.id, tool_call, &mut answerer, cancel);
            return (result, Vec::new());
        }
        let input = tool_call.arguments();
        let quiet = self.inside_read(tool_call);
        let hooked = self.pre_tool_use(call, input.clone(), quiet, person, cancel);
        let mut answerer = Notifying {
            caller: *self,
            person: &mut *person,
            cancel,
        };
        let result = self
            .gate()
            .hooked(hooked)
            .call(&call.id, tool_call, &mut answerer, cancel);
        let notes = self.post_tool_use(call, input, &result, quiet, person, cancel);
        (result, notes)
    }

    /// Whether a PreToolUse or PostToolUse hook runs for `tool`: when none
    /// does, a call pays for nothing of theirs (no input built, no result
    /// serialised, no path classified twice).
    pub(crate) fn tool_hooked(&self, tool: &str) -> bool {
        self.hooks.iter().any(|hook| {
            matches!(hook.event, HookEvent::PreToolUse | HookEvent::PostToolUse)
                && hook.matches(tool)
        })
    }

    /// Whether a call reads, lists or greps inside the workspace.
    fn inside_read(&self, call: &ToolCall) -> bool {
        let path = match call {
            ToolCall::ReadFile(args) => Some(args.path.as_str()),
            ToolCall::ListDir(args) => args.path.as_deref(),
            ToolCall::Grep(args) => args.path.as_deref(),
            ToolCall::WriteFile(_) | ToolCall::SearchReplace(_) | ToolCall::Run(_) => return false,
        };
        path.is_none_or(|path| {
            matches!(
                self.tools.workspace().classify(path),
                Ok(wicket_tools::Location::Inside(_))
            )
        })
    }
}

/// The path a word of a hook's command names, as a shell would read it:
/// `~/x`, `$HOME/x` and `${HOME}/x` in the person's home, an absolute
/// path as it is (quotes already gone); `None` for anything else.
fn home_path(word: &str) -> Option<std::path::PathBuf> {
    let home = || std::env::var_os("HOME").map(std::path::PathBuf::from);
    for prefix in ["~/", "$HOME/", "${HOME}/"] {
        if let Some(rest) = word.strip_prefix(prefix) {
            return home().map(|home| home.join(rest));
        }
    }
    word.starts_with('/')
        .then(|| std::path::PathBuf::from(word))
}
