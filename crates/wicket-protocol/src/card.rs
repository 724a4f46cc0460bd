//! Permission cards and the answers to them.

use crate::ids::CardId;
use serde::{Deserialize, Serialize};

use crate::reach::Reach;

/// A person's answer to a card.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    /// This call only.
    AllowOnce,
    /// This exact call for the rest of the session.
    AllowSession,
    /// Saves the card's rule (its exact key, or a widened argv prefix) to
    /// `$WICKET_HOME/rules.toml`: every session, until revoked.
    AllowAlways,
    /// Not this call.
    Deny,
    /// A run card: run it first over an overlay of the workspace, and show
    /// what it changed on an `effects` card.
    Preview,
    /// An effects card: write what the preview changed into the workspace.
    Apply,
    /// An effects card: throw what the preview changed away.
    Discard,
}

impl Answer {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Answer::AllowOnce => "allow_once",
            Answer::AllowSession => "allow_session",
            Answer::AllowAlways => "allow_always",
            Answer::Deny => "deny",
            Answer::Preview => "preview",
            Answer::Apply => "apply",
            Answer::Discard => "discard",
        }
    }

    /// Whether a front end may give it to `card`: what the card offers
    /// ([`Answer::fits`]), on an effects card an allow (read as `apply`)
    /// or a deny (`discard`), as a fixed `--answers` policy gives them,
    /// and on a run card `preview` even where it offers none: the model
    /// then reads why none was available (the card's `no_preview`), and
    /// the command never starts.
    pub fn taken_by(self, card: &CardKind) -> bool {
        match card {
            CardKind::Effects(_) => self != Answer::Preview,
            CardKind::Run(_) if self == Answer::Preview => true,
            _ => self.fits(card),
        }
    }

    /// Whether it may answer `card`: `preview` only a run card that offers
    /// it, `apply` and `discard` only an effects card (and only they), the
    /// rest any other card.
    pub fn fits(self, card: &CardKind) -> bool {
        match (self, card) {
            (Answer::Apply | Answer::Discard, CardKind::Effects(_)) => true,
            (_, CardKind::Effects(_)) | (Answer::Apply | Answer::Discard, _) => false,
            (Answer::AllowOnce | Answer::AllowSession | Answer::Deny, CardKind::Plan(_)) => true,
            (_, CardKind::Plan(_)) => false,
            (Answer::Preview, CardKind::Run(run)) => run.no_preview.is_none(),
            (Answer::Preview, _) => false,
            (Answer::AllowOnce | Answer::AllowSession | Answer::AllowAlways | Answer::Deny, _) => {
                true
            }
        }
    }
}

/// The longest reason a deny carries to the model, in bytes: a person's
/// note, not a document.
pub const DENY_REASON_MAX_BYTES: usize = 2000;

/// A deny's reason as the model and the log get it: trimmed, cut at
/// [`DENY_REASON_MAX_BYTES`] on a character boundary, `None` when empty.
pub fn deny_reason(given: &str) -> Option<String> {
    let trimmed = given.trim();
    if trimmed.is_empty() {
        return None;
    }
    let mut end = trimmed.len().min(DENY_REASON_MAX_BYTES);
    while !trimmed.is_char_boundary(end) {
        end -= 1;
    }
    Some(trimmed[..end].to_string())
}

/// A permission card: what the person is asked to allow. On the wire its
/// kind's fields sit beside `id` and `tool`:
/// `{"id":…,"tool":…,"kind":"write","path":…,"diff":…}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Card {
    /// Unique for the life of the session.
    pub id: CardId,
    /// The tool call the card is for: `run` for a hook's or a server's
    /// command, the tool's own name on its server for an `mcp` card.
    pub tool: String,
    /// What is asked.
    #[serde(flatten)]
    pub kind: CardKind,
    /// The rule `allow_always` would save: the card's exact key, in this workspace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub always: Option<Box<crate::rules::RuleSpec>>,
    /// Why the checkpoint taken before this write or command holds no copy
    /// of some files (or none at all): a rewind cannot bring those back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_checkpoint: Option<String>,
    /// The checkpoint before this call is still being taken (a large
    /// workspace's first walk): how far it got when the card went up. The
    /// call waits for it after the answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpointing: Option<String>,
    /// The sub-task that raised it, shown as the parent's ("sub-task: DESCRIPTION").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<Box<TaskRef>>,
}

impl Card {
    /// A card of `kind` for `tool`, with nothing beside it yet (the gate
    /// gives it its id when it goes up).
    pub fn new(tool: impl Into<String>, kind: CardKind) -> Card {
        Card {
            id: CardId::default(),
            tool: tool.into(),
            kind,
            always: None,
            no_checkpoint: None,
            checkpointing: None,
            task: None,
        }
    }
}

/// A sub-task as its parent's log and front ends name it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskRef {
    /// The sub-task's own session.
    pub session: String,
    /// What it is for, as the model described it.
    pub description: String,
}

/// What a card asks, by kind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum CardKind {
    /// A write, with its diff.
    Write(WriteCard),
    /// A read, list or grep outside the workspace.
    OutsideRead(OutsideReadCard),
    /// A command.
    Run(RunCard),
    /// A call of an MCP server's tool.
    Mcp(McpCard),
    /// A command (or an MCP server) wants to reach a host through Wicket.
    Net(NetCard),
    /// What a previewed command changed: apply it, or discard it.
    Effects(EffectsCard),
    /// A plan the model proposes in plan mode: `allow_once` approves it.
    Plan(PlanCard),
}

/// A plan card: the model's plan, in Markdown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanCard {
    /// The plan.
    pub plan: String,
}

impl CardKind {
    /// The wire name of the kind.
    pub fn as_str(&self) -> &'static str {
        match self {
            CardKind::Write(_) => "write",
            CardKind::OutsideRead(_) => "outside_read",
            CardKind::Run(_) => "run",
            CardKind::Mcp(_) => "mcp",
            CardKind::Net(_) => "net",
            CardKind::Effects(_) => "effects",
            CardKind::Plan(_) => "plan",
        }
    }
}

/// A write card.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WriteCard {
    /// The resolved absolute path the write lands on.
    pub path: String,
    /// The unified diff, whole or cut (see `diff_truncated`).
    pub diff: String,
    /// The whole diff's size.
    pub diff_bytes: u64,
    /// True when the card shows only the diff's first lines.
    pub diff_truncated: bool,
    /// SHA-256 (hex) of the bytes on disk when the card went up, or "absent".
    pub digest: String,
    /// True when the path lies outside the workspace (every front end says so).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub outside: bool,
    /// True when the path passes through a `.git` or `.wicket` entry, or lies
    /// in a git folder: the card says [`GIT_WRITE_WARNING`] in every front end.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub git: bool,
    /// Who runs the file later, when another tool does ([`crate::guarded::runs_later`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runs_later: Option<String>,
}

/// An outside-read card.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutsideReadCard {
    /// The absolute path, as it really is (symlinks resolved).
    pub path: String,
    /// What the call would read there.
    pub reach: Reach,
}

/// Who wants the command run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunSource {
    /// The model's `run` tool.
    Tool,
    /// A Stop hook the workspace's config declares.
    Hook,
    /// An MCP server the workspace's config declares.
    Mcp,
}

/// How a command is confined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    /// Writes only to the workspace and a private temporary folder.
    WorkspaceWrite,
    /// Writes only to a private temporary folder.
    ReadOnly,
    /// The person turned the sandbox off in their own config.
    Off,
    /// This kernel cannot confine the command: it would run unconfined.
    Unavailable,
}

impl SandboxMode {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxMode::WorkspaceWrite => "workspace-write",
            SandboxMode::ReadOnly => "read-only",
            SandboxMode::Off => "off",
            SandboxMode::Unavailable => "unavailable",
        }
    }
}

/// The sandbox a command would run in, as its card states it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxSummary {
    /// The policy.
    pub mode: SandboxMode,
    /// Whether the command may use the network.
    pub network: bool,
    /// Each layer in force, in words (the environment, the mounts, Landlock, …).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub layers: Vec<String>,
    /// In words, what the person should know (why it is unavailable, what is not covered).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The sandbox in one line (`jail: no network · writes only the
    /// workspace · home hidden but toolchains`): what a front end shows
    /// instead of `layers` when `complete`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub summary: String,
    /// True when every layer of the jail is in force: `layers` then say
    /// nothing `summary` does not, and are shown only on request.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub complete: bool,
}

/// What every front end adds after a path outside the workspace.
pub const OUTSIDE_WORKSPACE: &str = " (outside the workspace)";

impl WriteCard {
    /// What every front end adds after the path: [`OUTSIDE_WORKSPACE`] for a
    /// write outside the workspace, the git warning, who runs the file later.
    pub fn path_note(&self) -> String {
        let mut note = String::new();
        if self.outside {
            note.push_str(OUTSIDE_WORKSPACE);
        }
        if self.git {
            note.push_str(&format!(" (git: {GIT_WRITE_WARNING})"));
        } else if let Some(later) = &self.runs_later {
            note.push_str(&format!(" ({later})"));
        }
        note
    }
}

/// What a run card says when the call asked to write `.git`, in every front end.
pub const GIT_WRITE_WARNING: &str =
    "may change .git: commits, branches, hooks, config that git runs later";

/// A run card.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunCard {
    /// The exact argv, with no shell.
    pub argv: Vec<String>,
    /// The folder it runs in, relative to the workspace (`.` for the root).
    pub cwd: String,
    /// The timeout, when it is not the default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_s: Option<u64>,
    /// Whether the call asked for the network: `true` through Wicket,
    /// `"direct"` around it.
    #[serde(default)]
    pub network: crate::Network,
    /// Whether the call asked to write `.git` (commits, branches, hooks, config).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub git: bool,
    /// Paths outside the workspace it asked to read, as the call wrote them
    /// (`~/notes`); where one really lies elsewhere, `→ /that/place` follows.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub read: Vec<String>,
    /// The sandbox it would run in.
    pub sandbox: SandboxSummary,
    /// Who wants it run.
    pub source: RunSource,
    /// The model asked to preview it: `preview` runs it over an overlay first.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub preview: bool,
    /// Why this card offers no `preview`, in one line (none: it does).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_preview: Option<String>,
    /// A managed deny this command may get past in a form the gate cannot
    /// read: the rule and why the card is up, in one line. Such a card is
    /// asked every time and offers no `allow_always`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub managed: Option<String>,
}

/// An effects card: what a command run over an overlay of the workspace
/// changed there. Nothing of it is in the workspace until `apply`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EffectsCard {
    /// The command, as its run card showed it.
    pub argv: Vec<String>,
    /// How it ended.
    pub exit_code: Option<i32>,
    /// stdout, head and tail (as a run result).
    pub stdout: String,
    /// stderr, head and tail.
    pub stderr: String,
    /// What it changed, a path an entry.
    pub changes: Vec<Effect>,
    /// Hosts it tried to reach (the preview has no network).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub wanted_hosts: Vec<String>,
    /// What the person should know: the preview was stopped, or what it cannot show.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// One change a preview made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Effect {
    /// The path below the workspace root.
    pub path: String,
    /// What happened to it.
    pub change: EffectKind,
    /// A file's unified diff (cut as a write card's), or a link's `→ target`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub diff: String,
    /// True when the diff is cut or not shown (`diff` says why).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub diff_truncated: bool,
    /// The new mode (octal), where it is a file's or a folder's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// For a folder shown as one entry: how many entries it stands for,
    /// and (but for removals) their bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entries: Option<u64>,
    /// Their bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    /// An ignored path (the checkpoints skip it): a rewind cannot take it
    /// back, and apply leaves one that was there before as it is.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ignored: bool,
    /// Below a `.git` (the call asked `"git": true`): git runs what is
    /// there later, and no rewind takes it back.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub git: bool,
}

impl Effect {
    /// What a card says after the change and the path: the new mode of a
    /// mode change, a grouped folder's count and size, and whether it is
    /// ignored. One wording for every front end.
    pub fn details(&self) -> String {
        let mut said = String::new();
        if self.change == EffectKind::Mode
            && let Some(mode) = &self.mode
        {
            said.push_str(&format!(" (mode {mode})"));
        }
        match (self.entries, self.bytes) {
            (Some(entries), Some(bytes)) => {
                said.push_str(&format!(" ({entries} entries, {bytes} bytes)"));
            }
            // Removals: what they free is not known.
            (Some(entries), None) => said.push_str(&format!(" ({entries} entries)")),
            (None, _) => {}
        }
        if self.ignored {
            said.push_str(" (ignored: no checkpoint holds it)");
        }
        if self.git {
            said.push_str(" (git: git runs what .git holds; no rewind takes it back)");
        }
        said
    }
}

/// What a preview did to a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EffectKind {
    /// A new file or folder.
    Created,
    /// A file whose bytes changed.
    Modified,
    /// Removed.
    Deleted,
    /// Only its mode changed.
    Mode,
    /// A symbolic link made or changed (never followed).
    Link,
    /// A special file (a device, a FIFO, a socket): never applied.
    Refused,
}

impl EffectKind {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            EffectKind::Created => "created",
            EffectKind::Modified => "modified",
            EffectKind::Deleted => "deleted",
            EffectKind::Mode => "mode",
            EffectKind::Link => "link",
            EffectKind::Refused => "refused",
        }
    }
}

/// A net card: a command running through Wicket's proxy wants to reach
/// `host:port`; the connection waits for the answer. `allow_once` lets it
/// reach that host:port for the rest of the command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetCard {
    /// The host as rules name it: lower case, a name's ASCII (punycode)
    /// form, or an IP address.
    pub host: String,
    /// The port.
    pub port: u16,
    /// The host as the command wrote it, where that differs from `host`
    /// (a name in another script: shown beside its punycode form).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shown: Option<String>,
    /// The addresses Wicket resolved it to; the connection goes to one of
    /// these, never to one a later answer names.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub addresses: Vec<String>,
    /// It resolves to a loopback, private, link-local or unspecified
    /// address: the card says "resolves to a local address".
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub local: bool,
    /// The command that asks (its argv), for a `run`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub argv: Vec<String>,
    /// The MCP server that asks, for a server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
}

impl NetCard {
    /// `host:port` as a person reads it (an IPv6 address in brackets), with
    /// the other script's form first where there is one.
    pub fn target(&self) -> String {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        match &self.shown {
            Some(shown) => format!(
                "{}:{} ({host})",
                crate::text::visible_line(shown),
                self.port
            ),
            None => format!("{host}:{}", self.port),
        }
    }
}

/// An MCP tool-call card.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpCard {
    /// The server's name in the config.
    pub server: String,
    /// The exact arguments (the tool's name on the server is the card's `tool`).
    pub arguments: serde_json::Value,
    /// The arguments as pretty JSON, cut like a diff.
    pub arguments_text: String,
    /// True when `arguments_text` is cut.
    pub arguments_truncated: bool,
    /// The server's own claims about the tool (readOnlyHint, …): hints, never permission.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<serde_json::Value>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_net_card_shows_a_name_in_another_script_beside_its_punycode_and_brackets_v6() {
        let mut net = NetCard {
            host: "xn--bcher-kva.example".into(),
            port: 443,
            shown: Some("bücher.example\u{202e}".into()),
            addresses: Vec::new(),
            local: false,
            argv: Vec::new(),
            server: None,
        };
        let target = net.target();
        assert!(target.ends_with(":443 (xn--bcher-kva.example)"), "{target}");
        assert!(target.starts_with("bücher.example"), "{target}");
        assert!(
            !target.contains('\u{202e}'),
            "a control character is made visible: {target}"
        );
        net.shown = None;
        net.host = "::1".into();
        assert_eq!(net.target(), "[::1]:443");
    }

    #[test]
    fn a_card_keeps_the_flat_wire_shape() {
        let card = Card {
            id: "card-1".into(),
            ..Card::new(
                "run",
                CardKind::Run(RunCard {
                    no_preview: Default::default(),
                    managed: None,
                    preview: Default::default(),
                    read: Default::default(),
                    argv: vec!["true".into()],
                    cwd: ".".into(),
                    timeout_s: None,
                    network: Default::default(),
                    git: false,
                    sandbox: SandboxSummary {
                        complete: Default::default(),
                        summary: Default::default(),
                        mode: SandboxMode::WorkspaceWrite,
                        network: Default::default(),
                        layers: Vec::new(),
                        note: None,
                    },
                    source: RunSource::Tool,
                }),
            )
        };
        let json = serde_json::to_value(&card).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"id":"card-1","tool":"run","kind":"run","argv":["true"],"cwd":".",
                "network":false,"sandbox":{"mode":"workspace-write","network":false},"source":"tool"})
        );
        assert_eq!(serde_json::from_value::<Card>(json).unwrap(), card);
    }
}
