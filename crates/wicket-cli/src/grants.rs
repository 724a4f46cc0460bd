//! `wicket grants` (the rules in force and a session's grants, with where
//! each came from), `wicket grants revoke ID`, and `wicket policy check
//! SESSION` (a recorded session's calls replayed against today's rules).

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use wicket_core::config::Config;
use wicket_gate::rules::{self, Source};
use wicket_gate::{Check, Confinement, Gate, McpRequest};
use wicket_protocol::event::ToolCallEvent;
use wicket_protocol::text::visible_line;
use wicket_protocol::{EventBody, MCP_PREFIX, Rule, ToolCall, call_summary};
use wicket_session::{self as session, Grant, Session};
use wicket_tools::Tools;

/// One line of `wicket grants --json`.
fn rule_json(source: Source, rule: &Rule) -> serde_json::Value {
    let mut spec = wicket_protocol::json::value(&rule.spec());
    let origin = spec
        .as_object_mut()
        .and_then(|fields| {
            for key in ["id", "action"] {
                fields.shift_remove(key);
            }
            fields.shift_remove("origin")
        })
        .unwrap_or(serde_json::Value::Null);
    serde_json::json!({
        "id": rule.id,
        "kind": "rule",
        "source": source.as_str(),
        "action": rule.action.as_str(),
        "match": spec,
        "origin": origin,
    })
}

fn grant_json(session: &str, grant: &Grant) -> serde_json::Value {
    serde_json::json!({
        "id": grant.id,
        "kind": "session_grant",
        "action": "allow",
        "match": {"tool": grant.kind, "key": grant.key},
        "origin": grant.origin.as_ref().map(|origin| serde_json::json!({
            "session": session,
            "card": origin.card,
            "ts": origin.ts,
        })),
    })
}

/// `wicket grants [--session ID] [--json]`: the rules in force (the home
/// config's, rules.toml's, and with a session its workspace's), then the
/// session's grants.
pub(crate) fn list(session_id: Option<&str>, json: bool) -> anyhow::Result<ExitCode> {
    let home = session::home();
    let (workspace, grants) = match session_id {
        Some(id) => {
            let meta = Session::meta_of(&home, id)?;
            (
                Some(meta.workspace.clone()),
                Some((id.to_string(), meta.allowed.grants())),
            )
        }
        None => (None, None),
    };
    let config = match &workspace {
        Some(workspace) => Config::load(&home, Path::new(workspace))?,
        None => Config::load_home(&home)?,
    };
    let rules = config.gate_rules(&home).all()?;
    let mut out = std::io::stdout().lock();
    for (source, rule) in &rules {
        if json {
            writeln!(out, "{}", rule_json(*source, rule))?;
        } else {
            let origin = rule
                .origin
                .as_ref()
                .map(|origin| {
                    format!(
                        " (saved from card {} of session {}, {})",
                        origin.card, origin.session, origin.ts
                    )
                })
                .unwrap_or_default();
            writeln!(
                out,
                "{}",
                visible_line(&format!("{}{origin}", source.listed(rule)))
            )?;
        }
    }
    if let Some((id, grants)) = &grants {
        for grant in grants {
            if json {
                writeln!(out, "{}", grant_json(id, grant))?;
            } else {
                let origin = grant
                    .origin
                    .as_ref()
                    .map(|origin| format!(" (card {}, {})", origin.card, origin.ts))
                    .unwrap_or_default();
                writeln!(
                    out,
                    "{}",
                    visible_line(&format!("{}{origin}", grant.listed()))
                )?;
            }
        }
    }
    if !json && rules.is_empty() && grants.as_ref().is_none_or(|(_, g)| g.is_empty()) {
        eprintln!(
            "no rules{}; add [[rules]] to $WICKET_HOME/config.toml, or answer a card allow_always",
            if grants.is_some() {
                " and no session grants"
            } else {
                ""
            }
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `wicket grants revoke ID [--session SID]`: a session's grant, or a rule
/// saved in rules.toml. The next matching call asks again.
pub(crate) fn revoke(id: &str, session_id: Option<&str>) -> anyhow::Result<ExitCode> {
    let home = session::home();
    if let Some(session_id) = session_id {
        let meta = Session::meta_of(&home, session_id)?;
        let (session, _) = Session::open_or_create(
            &home,
            session_id,
            Path::new(&meta.workspace),
            meta.model.as_deref(),
        )
        .with_context(|| format!("opening session {session_id} to revoke its grant (while `wicket serve` holds it, revoke it there: DELETE /api/sessions/{session_id}/grants/{id})"))?;
        let mut revoked = None;
        session.update_meta(|meta| revoked = meta.allowed.revoke(id))?;
        return match revoked {
            Some(grant) => {
                println!(
                    "revoked {} (allow {} {})",
                    grant.id,
                    grant.kind.as_str(),
                    visible_line(&grant.key.to_string())
                );
                Ok(ExitCode::SUCCESS)
            }
            None => {
                eprintln!(
                    "wicket: session {session_id} has no grant {id}; `wicket grants --session {session_id}` lists them"
                );
                Ok(ExitCode::from(1))
            }
        };
    }
    match rules::revoke(&home.join(rules::RULES_FILE), id) {
        Ok(rule) => {
            println!(
                "revoked rule {} ({})",
                rule.id,
                visible_line(&rule.spec().describe())
            );
            Ok(ExitCode::SUCCESS)
        }
        Err(rules::Error::NoSuchRule(_)) => {
            eprintln!(
                "wicket: no rule {id} in {}; rules in config.toml are edited there, and a session's grant needs --session",
                home.join(rules::RULES_FILE).display()
            );
            Ok(ExitCode::from(1))
        }
        Err(error) => Err(error.into()),
    }
}

/// What today's gate does with a logged call; `None` for a call no gate
/// decides (ask, finish, use_skill, arguments that never parsed).
fn checked(gate: &Gate<'_>, name: &str, arguments: &serde_json::Value) -> Option<Check> {
    if let Some(rest) = name.strip_prefix(MCP_PREFIX) {
        let (server, tool) = rest.split_once("__")?;
        let arguments = arguments.as_object()?;
        return Some(gate.check_mcp(&McpRequest {
            server,
            tool,
            arguments,
            annotations: None,
            auto_allowed: false,
        }));
    }
    ToolCall::parse(name, arguments.clone())
        .ok()
        .map(|call| gate.check(&call))
}

/// How many calls today's rules decide each way.
#[derive(Default)]
struct Counts {
    free: usize,
    cards: usize,
    allowed: usize,
    denied: usize,
    previewed: usize,
}

impl Counts {
    /// Counts `check`; what it says, in words.
    fn count(&mut self, check: &Check) -> String {
        match check {
            Check::Free => {
                self.free += 1;
                "free (inside the workspace)".to_string()
            }
            Check::Card => {
                self.cards += 1;
                "card".to_string()
            }
            Check::Allowed(by) => {
                self.allowed += 1;
                by.describe()
            }
            Check::Refused(message) => {
                self.denied += 1;
                format!("denied: {message}")
            }
            Check::Preview(rule) => {
                self.previewed += 1;
                format!("previewed by rule {rule} (the effects card asks)")
            }
        }
    }

    /// The last line: `N calls: …`.
    fn summary(&self) -> String {
        let previews = if self.previewed > 0 {
            format!(", {} previewed", self.previewed)
        } else {
            String::new()
        };
        format!(
            "{} calls: {} card, {} allowed, {} denied, {} free{previews}",
            self.cards + self.allowed + self.denied + self.free + self.previewed,
            self.cards,
            self.allowed,
            self.denied,
            self.free
        )
    }
}

/// `wicket policy check SESSION`: every call of the session, decided by
/// today's rules (not by the session's own grants), and a count of each.
pub(crate) fn check(session_id: &str) -> anyhow::Result<ExitCode> {
    let home = session::home();
    let (meta, loaded) = Session::load_existing(&home, session_id)?;
    let workspace = Path::new(&meta.workspace);
    let tools = Tools::open(workspace).map_err(|error| {
        anyhow::anyhow!(
            "the session's workspace {} cannot be opened: {}",
            workspace.display(),
            error.message
        )
    })?;
    let config = Config::load(&home, tools.workspace().root())?;
    let rules = config.gate_rules(&home);
    let confinement = Confinement {
        sandbox: config.sandbox.clone(),
        home: home.clone(),
    };
    let scratch = Session::in_memory(tools.workspace().root());
    let gate = Gate::new(&tools, &scratch, &confinement, &rules);
    let mut counts = Counts::default();
    let mut out = std::io::stdout().lock();
    for event in &loaded.events {
        let (name, what, check) = match &event.body {
            EventBody::ToolCall(ToolCallEvent {
                name, arguments, ..
            }) => {
                let Some(check) = checked(&gate, name, arguments) else {
                    continue;
                };
                (name.clone(), call_summary(name, arguments), check)
            }
            EventBody::Net(net) => (
                "net".to_string(),
                format!("{}:{}", net.host, net.port),
                gate.check_net(&net.host, net.port, net.local),
            ),
            _ => continue,
        };
        let verdict = counts.count(&check);
        writeln!(
            out,
            "{:>6}  {} {}  ->  {}",
            event.seq,
            visible_line(&name),
            visible_line(&what),
            visible_line(&verdict)
        )?;
    }
    writeln!(out, "{}", counts.summary())?;
    Ok(ExitCode::SUCCESS)
}
