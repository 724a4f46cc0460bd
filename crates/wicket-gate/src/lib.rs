//! The gate: the only way a tool call reaches a tool. Inside reads, lists and
//! greps go straight through; writes, commands and outside reads raise a
//! [`Card`] and wait for an [`Answer`]. A write card carries the SHA-256 of the
//! bytes on disk; an answer that comes back to a changed file is dropped, its
//! allow_session with it, and a new card goes up. Every command — the
//! model's `run`, a workspace's Stop hook — goes through
//! [`Gate::allow_command`], so one rule keys it: the argv, its resolved
//! folder, and whether it has network.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use wicket_os::spawn::Confine;
use wicket_protocol::event::{
    AnswerEvent, CardEvent, CheckpointEvent, NoticeEvent, ToolCallEvent, ToolResultEvent,
};
use wicket_protocol::{
    Answer, CallId, Card, CardKind, ErrorKind, EventBody, GrepArgs, ListDirArgs, McpCard,
    OutsideReadCard, QuestionId, Reach, ReadFileArgs, RunSource, SearchReplaceArgs, ToolCall,
    ToolOutput, WireError, WriteCard, WriteFileArgs,
};
use wicket_tools::tools::run::{RunDir, validate};
use wicket_tools::tools::search_replace::replaced;
use wicket_tools::tools::write_file::check_content_size;
use wicket_tools::{Cancel, Location, Tools};

mod checkpoint;
pub mod commands;
mod denial;
pub mod diff;
mod git_aliases;
mod net;
mod preview;
pub mod rules;
mod run;
pub mod sandbox;
pub mod shell;
mod write;

pub use write::guarded_write;

use crate::rules::{Rules, Subject};
use crate::sandbox::SandboxSettings;
pub use checkpoint::CHECKPOINT_PROGRESS_AFTER;
use checkpoint::Pending;
pub use denial::{
    AFTER_A_DENIAL, AFTER_A_DENIAL_IN_A_TASK, AFTER_A_DENIAL_UNATTENDED, Audience, after_a_denial,
};
use denial::{Answered, denied_by_hook, denied_by_rule, fitted, withdrawn};
use wicket_protocol::guarded;
use wicket_protocol::rules::{Matcher, WriteTool};
use wicket_protocol::{AllowedBy, GrantId, Network, Rule, RuleAction, RuleId, RuleSpec};
use wicket_session::{GrantKind, McpKey, OutsideKey, Session, Status, grant_id};

/// How many times a write re-asks because the file kept changing before the gate gives up.
pub const STALE_RETRIES: usize = 8;

/// Who answers cards: a person at a terminal, a script on stdin, a fixed policy,
/// or the web page. `None` means the card was withdrawn (cancel).
pub trait Answerer {
    /// The answer to `card`, or `None` when it was withdrawn.
    fn answer(&mut self, card: &Card) -> Option<Answer>;

    /// After an `allow_always` to a run card: the first words of its argv
    /// the person widened the saved rule to (`cargo test` for `cargo test
    /// foo`), or `None` for the card's exact key.
    fn widened(&mut self) -> Option<Vec<String>> {
        None
    }

    /// The person's reply to the model's question (`ask`), or `None` when
    /// no one can reply (a policy, `wicket tool`, a process that is leaving).
    fn reply(&mut self, _id: &QuestionId, _question: &str) -> Option<String> {
        None
    }

    /// After a `deny`: why, when the person said (the model reads it).
    fn reason(&mut self) -> Option<String> {
        None
    }

    /// Whether a person stands behind the answers: false for a fixed
    /// policy, whose denials do not tell the model to ask.
    fn attended(&self) -> bool {
        true
    }

    /// Whether the model can ask the person anything: false in a
    /// sub-task, whose denials tell it to say why in its finish.
    fn asks(&self) -> bool {
        true
    }
}

/// The card's `always` rule widened to `prefix`: only ever a shorter,
/// non-empty start of the card's own argv, never another command.
pub fn widen(card: &mut Card, prefix: Vec<String>) -> Result<(), WireError> {
    let argv = match &card.kind {
        CardKind::Run(run) => &run.argv,
        _ => {
            return Err(WireError::new(
                ErrorKind::InvalidArgs,
                "only a run card's rule can be widened to an argv prefix",
            ));
        }
    };
    let short = prefix.len() < argv.len();
    if let Some(program) = prefix.first()
        && short
        && prefix.len() < 3
        && shell::runs_anything(program)
    {
        return Err(WireError::new(
            ErrorKind::InvalidArgs,
            format!(
                "argv_prefix {prefix:?} would allow any command {program} is given; keep more of the card's words"
            ),
        ));
    }
    if prefix.is_empty() || !argv.starts_with(&prefix) {
        return Err(WireError::new(
            ErrorKind::InvalidArgs,
            format!(
                "argv_prefix {prefix:?} is not the start of the card's argv {argv:?}; give its first words"
            ),
        ));
    }
    if let Some(always) = card.always.take() {
        card.always = Some(Box::new(always.widened(prefix)));
    }
    Ok(())
}

/// A fixed answer for every card (`--answers deny|allow_once|allow_session`).
pub struct Policy(pub Answer);

impl Answerer for Policy {
    fn answer(&mut self, _card: &Card) -> Option<Answer> {
        Some(self.0)
    }

    fn attended(&self) -> bool {
        false
    }
}

/// The SHA-256 of a file's bytes, or "absent".
pub fn digest(bytes: Option<&[u8]>) -> String {
    match bytes {
        None => "absent".to_string(),
        Some(bytes) => Sha256::digest(bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect(),
    }
}

/// What the PreToolUse hooks said of a call, before the gate decides.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Hooked {
    /// Nothing (no hook, or every hook passed).
    #[default]
    Nothing,
    /// A hook denied it: refused, its reason to the model.
    Deny {
        /// The hook's name.
        hook: String,
        /// Why.
        reason: String,
    },
    /// A hook asked for the card, even where a rule or a grant would pass the call.
    Ask,
    /// A hook of the person's own config let it skip the card (never the jail,
    /// never a deny rule).
    Allow {
        /// The hook's name.
        hook: String,
    },
}

/// What the gate would do with a call (see [`Gate::check`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Check {
    /// No card: an inside read, list or grep (or a call that fails before any card).
    Free,
    /// A card.
    Card,
    /// Through without a card, and why.
    Allowed(AllowedBy),
    /// Refused without a card (a deny rule), or the rules could not be read.
    Refused(String),
    /// Run over an overlay without a first card (a preview rule); the
    /// effects card asks.
    Preview(RuleId),
}

impl Check {
    fn of(pass: Option<Result<Pass, WireError>>) -> Check {
        match pass {
            None => Check::Free,
            Some(Ok(Pass::Card | Pass::Asked | Pass::Held(_))) => Check::Card,
            Some(Ok(Pass::Through(by))) => Check::Allowed(by),
            Some(Ok(Pass::Preview(rule))) => Check::Preview(rule),
            Some(Err(error)) => Check::Refused(error.message),
        }
    }
}

/// What the gate does with a call that could raise a card.
enum Pass {
    /// Ask the person: an ask rule says so (over any grant, allow or `auto_allow`).
    Asked,
    /// Ask the person: nothing lets it through.
    Card,
    /// Let it through, and say why.
    Through(AllowedBy),
    /// A command a preview rule covers: run it over an overlay, no first card.
    Preview(RuleId),
    /// Ask the person, every time, naming the managed deny this command
    /// may get past in a form the gate cannot read; nothing saves it.
    Held(RuleId),
}

/// A session-store failure as a tool call's error (the call did not run).
pub fn internal(error: wicket_session::Error) -> WireError {
    WireError::new(ErrorKind::Io, error.to_string())
}

/// Computes a write's new bytes from the bytes on disk (`None`: absent).
type NewContent<'a> = dyn Fn(Option<&[u8]>) -> Result<Vec<u8>, WireError> + 'a;

/// What confines the commands a gate lets through.
#[derive(Debug, Clone)]
pub struct Confinement {
    /// `[sandbox]` of the home config.
    pub sandbox: SandboxSettings,
    /// `$WICKET_HOME`: never readable by a command.
    pub home: PathBuf,
}

/// A command the gate let through: how to start it.
#[derive(Debug)]
pub struct Allowed {
    /// The sandbox it starts in.
    pub confine: Confine,
    /// The person answered `preview`: it runs over an overlay first.
    pub preview: bool,
}

/// A command to put through [`Gate::allow_command`].
#[derive(Debug, Clone)]
pub struct CommandRequest<'r> {
    /// The tool the card is for (`run`).
    pub tool: &'r str,
    /// The exact argv.
    pub argv: &'r [String],
    /// Where it runs, resolved.
    pub dir: &'r RunDir,
    /// The timeout, when it is not the default.
    pub timeout_s: Option<u64>,
    /// Whether it asked for the network, and how.
    pub network: Network,
    /// Whether it asked to write `.git`.
    pub git: bool,
    /// Paths outside the workspace it asked to read, as written.
    pub read: &'r [String],
    /// Who wants it run.
    pub source: RunSource,
    /// The model asked for a preview.
    pub preview: bool,
}

/// An MCP call to put through [`Gate::allow_mcp`].
#[derive(Debug, Clone)]
pub struct McpRequest<'r> {
    /// The server.
    pub server: &'r str,
    /// The tool's own name on it.
    pub tool: &'r str,
    /// The exact arguments.
    pub arguments: &'r serde_json::Map<String, serde_json::Value>,
    /// The server's hints about the tool.
    pub annotations: Option<&'r serde_json::Value>,
    /// The person's own config lets this tool skip its card.
    pub auto_allowed: bool,
}

/// The gate over one session's tools.
pub struct Gate<'a> {
    tools: &'a Tools,
    session: &'a Session,
    confinement: &'a Confinement,
    rules: &'a Rules,
    /// The rules in force, read once for this gate (a gate serves one
    /// call: its preview, its decision and any card it re-asks) — or why
    /// they could not be read.
    rules_now: std::cell::OnceCell<Result<Vec<(rules::Source, Rule)>, String>>,
    hooked: Hooked,
    checkpoints: Option<Checkpointing<'a>>,
    /// What the checkpoint before this call has no copy of: said on its card.
    no_checkpoint: std::cell::RefCell<Option<String>>,
    /// Whether a person answers this call's cards (a rule's denial says
    /// to ask only then): set from the answerer where a call comes in.
    audience: std::cell::Cell<Audience>,
    /// The checkpoint before this call, while a thread of its own takes it:
    /// settled before the call changes anything.
    pending: std::cell::RefCell<Option<Pending>>,
    /// A sub-task's gate: the parent whose grants and checkpoints it shares.
    parent: Option<Parent<'a>>,
}

/// The session a sub-task's gate shares with: one person, one trust, one
/// checkpoint store.
#[derive(Clone, Copy)]
pub struct Parent<'a> {
    /// Whose `allow_session` grants the sub-task's calls use and add to.
    pub session: &'a Session,
    /// The seq in the parent's log its checkpoints are taken at (the
    /// sub-task's start), so a rewind of the parent covers them.
    pub seq: u64,
}

/// Where a gate records a checkpoint before each write and command.
#[derive(Clone, Copy)]
pub struct Checkpointing<'a> {
    /// The session's store.
    pub store: &'a wicket_checkpoints::Store,
    /// `[checkpoints]` of the person's config.
    pub settings: &'a wicket_checkpoints::Settings,
}

impl<'a> Gate<'a> {
    /// The gate of `session` over `tools`, deciding with `rules`.
    pub fn new(
        tools: &'a Tools,
        session: &'a Session,
        confinement: &'a Confinement,
        rules: &'a Rules,
    ) -> Gate<'a> {
        Gate {
            tools,
            session,
            confinement,
            rules,
            rules_now: std::cell::OnceCell::new(),
            hooked: Hooked::Nothing,
            checkpoints: None,
            no_checkpoint: std::cell::RefCell::new(None),
            audience: std::cell::Cell::new(Audience {
                attended: true,
                asks: true,
            }),
            pending: std::cell::RefCell::new(None),
            parent: None,
        }
    }

    /// The gate of a sub-task: grants and checkpoints are `parent`'s.
    pub fn parented(mut self, parent: Option<Parent<'a>>) -> Gate<'a> {
        self.parent = parent;
        self
    }

    /// The session whose grants hold here: the parent's, for a sub-task.
    fn grants(&self) -> &'a Session {
        self.parent.map_or(self.session, |parent| parent.session)
    }

    /// The seq a checkpoint before this session's event `own` is taken at.
    pub(crate) fn checkpoint_seq(&self, own: u64) -> u64 {
        self.parent.map_or(own, |parent| parent.seq)
    }

    /// The gate records a checkpoint in `checkpointing` before each write and command.
    pub fn checkpointed(mut self, checkpointing: Option<Checkpointing<'a>>) -> Gate<'a> {
        self.checkpoints = checkpointing;
        self
    }

    /// The gate for one call, with what its PreToolUse hooks said.
    pub fn hooked(mut self, hooked: Hooked) -> Gate<'a> {
        self.hooked = hooked;
        self
    }

    /// A hook's deny, before anything else (an inside read too).
    fn hook_denied(&self) -> Result<(), WireError> {
        match &self.hooked {
            Hooked::Deny { hook, reason } => Err(denied_by_hook(hook, reason)),
            Hooked::Nothing | Hooked::Ask | Hooked::Allow { .. } => Ok(()),
        }
    }

    /// Runs one tool call through the gate, logging the call, any card and
    /// answer, and the result.
    pub fn call(
        &self,
        call_id: &CallId,
        call: &ToolCall,
        answerer: &mut dyn Answerer,
        cancel: &Cancel,
    ) -> Result<ToolOutput, WireError> {
        self.audience.set(Audience::of(answerer));
        // Why it will go through without a card, said on the call's own
        // line; the call decides again (the same way) where it is made.
        let allowed_by = match self.preview(call) {
            Some(Ok(Pass::Through(by))) => Some(by),
            _ => None,
        };
        let logged = self
            .session
            .append(EventBody::ToolCall(ToolCallEvent {
                call_id: call_id.clone(),
                name: call.name().to_string(),
                arguments: call.arguments(),
                auto_allowed: None,
                allowed_by,
            }))
            .map_err(internal)?;
        let result = self.hook_denied().and_then(|()| {
            if !call.changes_files() {
                return self.dispatch(call_id, call, answerer, cancel);
            }
            let seq = self.checkpoint_seq(logged.seq);
            let result = std::thread::scope(|scope| {
                self.start_checkpoint(scope, call_id, seq, call.name());
                let result = self.dispatch(call_id, call, answerer, cancel);
                // A call that ended before it changed anything (denied,
                // refused) still records the checkpoint's gaps.
                self.settle().and(result)
            });
            // What it left, whatever it came to: a refused call left nothing.
            self.record_after(call_id, seq, call)?;
            result
        });
        self.log_result(call_id, &result)?;
        result
    }

    /// Logs a call's result.
    pub fn log_result(
        &self,
        call_id: &CallId,
        result: &Result<ToolOutput, WireError>,
    ) -> Result<(), WireError> {
        self.session
            .append(EventBody::ToolResult(ToolResultEvent {
                call_id: call_id.clone(),
                result: result.clone(),
            }))
            .map_err(internal)?;
        Ok(())
    }

    /// What the gate will do with `call`, where it could raise a card.
    fn preview(&self, call: &ToolCall) -> Option<Result<Pass, WireError>> {
        let workspace = self.tools.workspace();
        let outside = |path: &str, reach: Reach| match workspace.classify(path).ok()? {
            Location::Outside(path) => Some(self.outside_pass(&path, reach)),
            Location::Inside(_) => None,
        };
        match call {
            ToolCall::ReadFile(args) => outside(&args.path, Reach::Read),
            ToolCall::ListDir(args) => outside(args.path.as_deref().unwrap_or("."), Reach::List),
            ToolCall::Grep(args) => outside(args.path.as_deref()?, Reach::Grep),
            ToolCall::WriteFile(WriteFileArgs { path, .. })
            | ToolCall::SearchReplace(SearchReplaceArgs { path, .. }) => {
                // Where it lands, without reading what is there: the write reads that.
                let location = workspace.classify(path).ok()?;
                let target = workspace.resolve_write(&location, false).ok()?;
                let guarded = guarded_write(workspace.root(), &target.absolute);
                Some(self.write_pass(call.name(), &target.absolute, guarded))
            }
            ToolCall::Run(args) => {
                let dir = validate(workspace, args).ok()?;
                let (access, _) = self.access(args.network, args.git, &args.read).ok()?;
                Some(self.run_pass(&args.argv, &dir, &access))
            }
        }
    }

    /// What the gate would do with `call` now, without doing it: for
    /// `wicket policy check`, which replays a session against today's rules.
    pub fn check(&self, call: &ToolCall) -> Check {
        Check::of(self.preview(call))
    }

    /// [`Gate::check`] for an MCP call.
    pub fn check_mcp(&self, request: &McpRequest<'_>) -> Check {
        Check::of(Some(self.mcp_pass(request)))
    }

    /// How an MCP call will go through without a card, for the caller's own
    /// log line, from one decision: whether the person's `auto_allow` is
    /// what lets it (no rule or hook asks or denies it, nothing else allows
    /// it first), or what else does.
    pub fn mcp_passage(&self, request: &McpRequest<'_>) -> (bool, Option<AllowedBy>) {
        match self.mcp_pass(request) {
            Ok(Pass::Card) => (request.auto_allowed, None),
            Ok(Pass::Through(by)) => (false, Some(by)),
            Ok(Pass::Asked | Pass::Preview(_) | Pass::Held(_)) | Err(_) => (false, None),
        }
    }

    /// Deny rules first, then ask rules, then the session's grant, then allow rules.
    /// The rules in force for this gate, read once.
    fn rules_in_force(&self) -> Result<&[(rules::Source, Rule)], WireError> {
        self.rules_now
            .get_or_init(|| self.rules.all().map_err(|error| error.to_string()))
            .as_deref()
            .map_err(|message| WireError::new(ErrorKind::Io, message.clone()))
    }

    fn pass(&self, subject: &Subject<'_>, grant: Option<GrantId>) -> Result<Pass, WireError> {
        let in_force = self.rules_in_force()?;
        let verdict = rules::verdict(in_force, self.tools.workspace().root(), subject);
        if let Some(rule) = verdict.deny {
            return Err(denied_by_rule(&rule, self.audience.get()));
        }
        self.hook_denied()?;
        // Before any grant, saved rule or hook's allow: none can answer for
        // what the gate could not read.
        if let Some(rule) = verdict.held {
            return Ok(Pass::Held(rule));
        }
        if verdict.ask.is_some() || self.hooked == Hooked::Ask {
            return Ok(Pass::Asked);
        }
        if let Some(rule) = verdict.preview {
            return Ok(Pass::Preview(rule));
        }
        // A hook never lets a write into .git or .wicket skip its card: only
        // a card that said "git", or a rule that names the path, may.
        if let Hooked::Allow { hook } = &self.hooked
            && !matches!(subject, Subject::Write { guarded: true, .. })
        {
            return Ok(Pass::Through(AllowedBy::Hook(hook.clone())));
        }
        if let Some(grant) = grant {
            return Ok(Pass::Through(AllowedBy::Grant(grant)));
        }
        Ok(verdict.allow.map_or(Pass::Card, Pass::Through))
    }

    /// The id of the session's grant for `key`, when `held` says the session has one.
    fn held_grant<K: serde::Serialize>(
        &self,
        kind: GrantKind,
        key: &K,
        held: impl FnOnce(&wicket_session::Allowed) -> bool,
    ) -> Option<GrantId> {
        held(&self.grants().meta().allowed).then(|| grant_id(kind, &serde_json::json!(key)))
    }

    /// `guarded`: what [`guarded_write`] says of `absolute`.
    fn write_pass(&self, tool: &str, absolute: &Path, guarded: bool) -> Result<Pass, WireError> {
        let key = absolute.display().to_string();
        let grant = self.held_grant(GrantKind::Write, &key, |allowed| {
            allowed.write.contains(&key)
        });
        self.pass(
            &Subject::Write {
                tool,
                absolute,
                guarded,
            },
            grant,
        )
    }

    fn outside_pass(&self, path: &Path, reach: Reach) -> Result<Pass, WireError> {
        let key = OutsideKey {
            path: path.display().to_string(),
            reach,
        };
        let grant = self.held_grant(GrantKind::OutsideRead, &key, |allowed| {
            allowed.outside.contains(&key)
        });
        self.pass(&Subject::ReadOutside { path, reach }, grant)
    }

    fn mcp_key(request: &McpRequest<'_>) -> McpKey {
        McpKey {
            server: request.server.to_string(),
            tool: request.tool.to_string(),
            arguments: wicket_session::canonical(&serde_json::Value::Object(
                request.arguments.clone(),
            )),
        }
    }

    fn mcp_pass(&self, request: &McpRequest<'_>) -> Result<Pass, WireError> {
        let key = Self::mcp_key(request);
        let grant = self.held_grant(GrantKind::Mcp, &key, |allowed| allowed.mcp.contains(&key));
        let arguments = serde_json::Value::Object(request.arguments.clone());
        self.pass(
            &Subject::Mcp {
                server: request.server,
                tool: request.tool,
                arguments: &arguments,
            },
            grant,
        )
    }

    /// The rule `allow_always` saves for a card: its exact key, in this workspace.
    fn always(&self, matcher: Matcher) -> RuleSpec {
        let mut spec = Rule {
            id: RuleId::default(),
            action: RuleAction::Allow,
            matcher,
            workspace: Some(self.tools.workspace().root().display().to_string()),
            origin: None,
        }
        .spec();
        spec.id = None;
        spec
    }

    fn dispatch(
        &self,
        call_id: &CallId,
        call: &ToolCall,
        answerer: &mut dyn Answerer,
        cancel: &Cancel,
    ) -> Result<ToolOutput, WireError> {
        if !matches!(call, ToolCall::Run(_)) {
            // What no command may read inside the workspace, no tool reads
            // either: as the config says now.
            let workspace = self.tools.workspace();
            let mut hidden = self.confinement.sandbox.hidden_in(workspace.root());
            if let Ok(home) = std::fs::canonicalize(&self.confinement.home)
                && home.starts_with(workspace.root())
            {
                hidden.push(home);
            }
            workspace.hide(hidden);
        }
        match call {
            ToolCall::ReadFile(args) => self.read_file(call_id, args, answerer),
            ToolCall::ListDir(args) => self.list_dir(call_id, args, answerer),
            ToolCall::Grep(args) => self.grep(call_id, args, answerer, cancel),
            ToolCall::WriteFile(args) => self.write_file(call_id, args, answerer),
            ToolCall::SearchReplace(args) => self.search_replace(call_id, args, answerer),
            ToolCall::Run(args) => self.run(call_id, args, answerer, cancel),
        }
    }

    fn read_file(
        &self,
        call_id: &CallId,
        args: &ReadFileArgs,
        answerer: &mut dyn Answerer,
    ) -> Result<ToolOutput, WireError> {
        let location = self.tools.workspace().classify(&args.path)?;
        self.outside_read(call_id, "read_file", &location, Reach::Read, answerer)?;
        Ok(ToolOutput::ReadFile(self.tools.read_file(&location, args)?))
    }

    fn list_dir(
        &self,
        call_id: &CallId,
        args: &ListDirArgs,
        answerer: &mut dyn Answerer,
    ) -> Result<ToolOutput, WireError> {
        let path = args.path.as_deref().unwrap_or(".");
        let location = self.tools.workspace().classify(path)?;
        self.outside_read(call_id, "list_dir", &location, Reach::List, answerer)?;
        Ok(ToolOutput::ListDir(self.tools.list_dir(&location, args)?))
    }

    fn grep(
        &self,
        call_id: &CallId,
        args: &GrepArgs,
        answerer: &mut dyn Answerer,
        cancel: &Cancel,
    ) -> Result<ToolOutput, WireError> {
        let location = args
            .path
            .as_deref()
            .map(|path| self.tools.workspace().classify(path))
            .transpose()?;
        if let Some(location) = &location {
            self.outside_read(call_id, "grep", location, Reach::Grep, answerer)?;
        }
        Ok(ToolOutput::Grep(self.tools.grep(
            location.as_ref(),
            args,
            cancel,
        )?))
    }

    /// Asks for one MCP call unless the person's own config lets the tool
    /// skip its card, or the same server, tool and exact arguments were
    /// allowed for the session. The server's annotations ride on the card as
    /// its claim; they never skip it.
    pub fn allow_mcp(
        &self,
        call_id: &CallId,
        request: &McpRequest<'_>,
        answerer: &mut dyn Answerer,
    ) -> Result<(), WireError> {
        self.audience.set(Audience::of(answerer));
        let arguments = serde_json::Value::Object(request.arguments.clone());
        let key = Self::mcp_key(request);
        self.hook_denied()?;
        // Deny and ask rules hold over `auto_allow` too.
        match self.mcp_pass(request)? {
            Pass::Through(_) => return Ok(()),
            Pass::Card if request.auto_allowed => return Ok(()),
            // A preview rule names only commands.
            Pass::Card | Pass::Asked | Pass::Preview(_) | Pass::Held(_) => {}
        }
        let always = self.always(Matcher::Mcp {
            server: request.server.to_string(),
            tool: Some(request.tool.to_string()),
            arguments: Some(arguments.clone()),
        });
        let shown = diff::for_card(wicket_protocol::json::pretty(&arguments));
        let card = Card {
            always: Some(Box::new(always)),
            ..Card::new(
                request.tool.to_string(),
                CardKind::Mcp(McpCard {
                    server: request.server.to_string(),
                    arguments,
                    arguments_text: shown.text,
                    arguments_truncated: shown.truncated,
                    annotations: request.annotations.cloned(),
                }),
            )
        };
        let answered = self.ask(call_id, card, answerer)?;
        match answered.answer {
            // Only a deny is left of what fits no such card (see `fitted`).
            Answer::Deny | Answer::Preview | Answer::Apply | Answer::Discard => {
                Err(answered.denied("this call; the server was never called"))
            }
            Answer::AllowOnce | Answer::AllowAlways => Ok(()),
            Answer::AllowSession => self.grant(&answered.card, GrantKind::Mcp, &key, |allowed| {
                allowed.mcp.insert(key.clone());
            }),
        }
    }

    /// A plan the model proposes in plan mode, on a `plan` card: `Ok`
    /// when the person approved it (`allow_once`), else the denial the
    /// model reads, with the person's reason.
    pub fn propose_plan(
        &self,
        call_id: &CallId,
        plan: &str,
        answerer: &mut dyn Answerer,
    ) -> Result<(), WireError> {
        self.audience.set(Audience::of(answerer));
        let card = Card::new(
            "propose_plan",
            CardKind::Plan(wicket_protocol::PlanCard {
                plan: plan.to_string(),
            }),
        );
        let answered = self.ask(call_id, card, answerer)?;
        match answered.answer {
            Answer::AllowOnce | Answer::AllowSession => Ok(()),
            _ => Err(answered.denied("the plan; plan mode goes on")),
        }
    }

    /// Logs a card (under a fresh random id), asks, logs the answer (an
    /// `allow_always` saves the card's rule first).
    fn ask(
        &self,
        call_id: &CallId,
        card: Card,
        answerer: &mut dyn Answerer,
    ) -> Result<Answered, WireError> {
        let answered = self.raise(call_id, card, None, answerer)?;
        self.log_answer(&answered, false)?;
        Ok(answered)
    }

    /// Puts a session grant on meta.json, with the card it came from.
    fn grant(
        &self,
        card: &Card,
        kind: GrantKind,
        key: &impl serde::Serialize,
        insert: impl FnOnce(&mut wicket_session::Allowed),
    ) -> Result<(), WireError> {
        let id = grant_id(kind, &serde_json::json!(key));
        self.grants()
            .update_meta(|meta| {
                insert(&mut meta.allowed);
                meta.allowed.note_origin(id, &card.id);
            })
            .map_err(internal)
    }

    /// Saves the rule an `allow_always` answer chose: the card's own.
    fn save_always(&self, card: &Card) -> Result<RuleId, WireError> {
        let Some(mut spec) = card.always.as_deref().cloned() else {
            let floor = &self.confinement.sandbox.floor;
            let why = if floor.no_allow_always {
                format!(
                    "the managed policy ({}) sets allow_always = false; answer allow_once or allow_session",
                    floor.named()
                )
            } else {
                "this card cannot be allowed always; answer allow_once or allow_session".into()
            };
            return Err(WireError::new(ErrorKind::InvalidArgs, why));
        };
        spec.origin = Some(wicket_protocol::rules::Origin {
            session: self.session.meta().id.into(),
            card: card.id.clone(),
            ts: wicket_session::now_rfc3339(),
        });
        self.rules.save(spec).map_err(|error| {
            WireError::new(
                ErrorKind::Io,
                format!("{error}; the rule was not saved and the call did not run"),
            )
        })
    }

    /// Logs a card (under a fresh random id) and waits for its answer, which
    /// the caller logs once it knows whether the answer is stale.
    fn raise(
        &self,
        call_id: &CallId,
        mut card: Card,
        proposed: Option<String>,
        answerer: &mut dyn Answerer,
    ) -> Result<Answered, WireError> {
        card.id = wicket_os::ids::new_id("card").into();
        if self.confinement.sandbox.floor.no_allow_always {
            // The managed policy hides the fourth answer everywhere.
            card.always = None;
        }
        // A checkpoint that takes longer than a second is finished while
        // the person reads the card; the card says so.
        let walking = self.settle_within(Some(CHECKPOINT_PROGRESS_AFTER))?;
        card.no_checkpoint = self.no_checkpoint.borrow().clone();
        card.checkpointing = walking.map(|met| {
            format!(
                "the checkpoint before this call is still being taken ({met} files and folders \
                 walked so far); the call waits for it after your answer"
            )
        });
        // The session reads `waiting` while the card is open, then what it was.
        let before = self.session.meta().status;
        self.session
            .update_meta(|meta| meta.status = Status::Waiting)
            .map_err(internal)?;
        let raised = self
            .session
            .append(EventBody::Card(CardEvent {
                call_id: call_id.clone(),
                card: card.clone(),
                proposed,
            }))
            .and_then(|_| self.session.sync())
            .map_err(internal);
        let answer = match raised {
            Ok(()) => self.while_walking(walking.is_some(), || answerer.answer(&card)),
            Err(_) => None,
        };
        self.session
            .update_meta(|meta| meta.status = before)
            .map_err(internal)?;
        raised?;
        let given = answer.ok_or_else(withdrawn)?;
        let answer = fitted(given, &card.kind);
        // A `preview` the card did not offer: the model reads why, not a denial.
        let unoffered = match (given, &card.kind) {
            (Answer::Preview, CardKind::Run(run)) if answer == Answer::Deny => {
                run.no_preview.clone()
            }
            _ => None,
        };
        if answer == Answer::AllowAlways
            && let Some(prefix) = answerer.widened()
        {
            widen(&mut card, prefix)?;
        }
        let reason = match answer {
            Answer::Deny => answerer
                .reason()
                .and_then(|given| wicket_protocol::card::deny_reason(&given)),
            _ => None,
        };
        Ok(Answered {
            card,
            answer,
            reason,
            unoffered,
            audience: Audience::of(answerer),
        })
    }

    /// Logs an answer; a fresh `allow_always` saves its rule first, and the
    /// answer's line names it.
    fn log_answer(&self, answered: &Answered, stale: bool) -> Result<(), WireError> {
        let rule = match answered.answer {
            Answer::AllowAlways if !stale => Some(self.save_always(&answered.card)),
            _ => None,
        };
        let saved = rule.as_ref().and_then(|saved| saved.as_ref().ok().cloned());
        self.session
            .append(EventBody::Answer(AnswerEvent {
                card: answered.card.id.clone(),
                answer: answered.answer,
                stale,
                rule: saved,
                reason: answered.reason.clone(),
            }))
            .map_err(internal)?;
        self.session.sync().map_err(internal)?;
        match rule {
            Some(Err(error)) => Err(error),
            _ => Ok(()),
        }
    }

    /// Cards an outside read unless its exact path and reach were allowed
    /// for the session: a listing is not a read of the files below, and a
    /// grep of a folder is its own key.
    fn outside_read(
        &self,
        call_id: &CallId,
        tool: &str,
        location: &Location,
        reach: Reach,
        answerer: &mut dyn Answerer,
    ) -> Result<(), WireError> {
        let Location::Outside(path) = location else {
            return Ok(());
        };
        let key = OutsideKey {
            path: path.display().to_string(),
            reach,
        };
        if let Pass::Through(_) = self.outside_pass(path, reach)? {
            return Ok(());
        }
        let always = self.always(Matcher::ReadOutside {
            path: rules::exact_glob(&key.path),
            reach: Some(reach),
        });
        let card = Card {
            always: Some(Box::new(always)),
            ..Card::new(
                tool.to_string(),
                CardKind::OutsideRead(OutsideReadCard {
                    path: key.path.clone(),
                    reach,
                }),
            )
        };
        let what = format!("{} {}", reach.as_str(), key.path);
        let answered = self.ask(call_id, card, answerer)?;
        match answered.answer {
            Answer::Deny | Answer::Preview | Answer::Apply | Answer::Discard => {
                Err(answered.denied(&what))
            }
            Answer::AllowOnce | Answer::AllowAlways => Ok(()),
            Answer::AllowSession => {
                self.grant(&answered.card, GrantKind::OutsideRead, &key, |allowed| {
                    allowed.outside.insert(key.clone());
                })
            }
        }
    }
}
