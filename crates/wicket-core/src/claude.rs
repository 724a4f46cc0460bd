//! Claude Code's permission rules read as Wicket's: `Bash(npm run test:*)`,
//! `Read(//**/.env)`, `Edit(src/**)`, `WebFetch(domain:HOST)`, `mcp__S__T`.
//! Used by `wicket import claude-code` (the person's own settings) and for
//! a repository's `.claude/settings.json` (its ask and deny rules only).
//!
//! Never wider: an allow that Wicket would read as covering more than
//! Claude Code did is refused (the call keeps its card); a deny that
//! Wicket cannot read as covering at least as much says so.

use wicket_protocol::rules::words_text;
use wicket_protocol::{RuleAction, RuleSpec};

/// What a Claude Code permission entry became: Wicket's rule and a few
/// words on it, or why it could not be carried over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Carried {
    /// The rule, and what to say of it (`argv_prefix ["npm", "run", "test"]`).
    Rule(Box<RuleSpec>, String),
    /// Why not (`WebSearch has no counterpart`).
    Not(String),
}

fn not(why: impl Into<String>) -> Carried {
    Carried::Not(why.into())
}

/// `entry` of `permissions.allow|ask|deny` (`action`) as Wicket's rule.
pub fn permission(entry: &str, action: RuleAction) -> Carried {
    let entry = entry.trim();
    let (tool, inner) = match entry.split_once('(') {
        Some((tool, rest)) => match rest.strip_suffix(')') {
            Some(inner) => (tool.trim(), Some(inner.trim())),
            None => return not(format!("`{entry}` is not a rule Claude Code reads")),
        },
        None => (entry, None),
    };
    match (tool, inner) {
        ("Bash", Some(pattern)) => bash(pattern, action),
        ("Bash", None) => not(
            "Bash alone is every command; Wicket has no rule for every command, so each keeps its card",
        ),
        ("Edit" | "Write" | "MultiEdit" | "NotebookEdit", Some(path)) => write(tool, path, action),
        ("Read", Some(path)) => read(path, action),
        ("WebFetch", Some(domain)) => web_fetch(domain, action),
        (name, _) if name.starts_with("mcp__") => mcp(name, action),
        ("Read" | "Glob" | "Grep" | "LS", None) => not(format!(
            "{tool} inside the workspace needs no card in Wicket; outside it, each read keeps its card"
        )),
        ("Edit" | "Write" | "MultiEdit" | "NotebookEdit", None) => not(format!(
            "{tool} alone is every write; each write keeps its card"
        )),
        ("WebFetch", None) => not("WebFetch alone is every host; each new host keeps its card"),
        _ => not(format!("{tool} has no counterpart in Wicket")),
    }
}

/// `Bash(PATTERN)`: `npm run test:*` is a string prefix of the command
/// line, as Claude Code reads it (`npm run test:unit` matches), `git diff *`
/// an argv prefix, a pattern without `*` one exact command.
fn bash(pattern: &str, action: RuleAction) -> Carried {
    let words = |text: &str| shlex::split(text).filter(|words| !words.is_empty());
    if let Some(line) = pattern.strip_suffix(":*")
        && !line.contains('*')
    {
        if line.trim().is_empty() || line.starts_with(char::is_whitespace) {
            return not(format!("`Bash({pattern})`: no command before `:*`"));
        }
        let said = format!(
            "command_prefix {} (a string prefix, as Claude Code reads `:*`)",
            quoted(line)
        );
        let mut rule = RuleSpec::new(action, "run");
        rule.command_prefix = Some(line.to_string());
        return Carried::Rule(Box::new(rule), said);
    }
    let prefix = pattern
        .strip_suffix(":*")
        .or_else(|| pattern.strip_suffix(" *"));
    match prefix {
        Some(prefix) if !prefix.contains('*') => {
            let Some(argv) = words(prefix) else {
                return not(format!("`Bash({pattern})`: its words cannot be read"));
            };
            let said = format!("argv_prefix {}", words_text(&argv));
            let mut rule = RuleSpec::new(action, "run");
            rule.argv_prefix = Some(argv);
            Carried::Rule(Box::new(rule), said)
        }
        _ if pattern.starts_with('*') => not(format!(
            "`Bash({pattern})`: a pattern with a leading wildcard cannot be an argv prefix; kept as a card"
        )),
        _ if pattern.contains('*') => {
            let before = &pattern[..pattern.find('*').unwrap_or(pattern.len())];
            match (action, words(before)) {
                // A deny of every command that starts so: more than
                // Claude Code denied, never less.
                (RuleAction::Deny, Some(argv)) if before.ends_with(' ') => {
                    let said = format!(
                        "argv_prefix {} (wider than Claude Code's: the words before the wildcard)",
                        words_text(&argv)
                    );
                    let mut rule = RuleSpec::new(action, "run");
                    rule.argv_prefix = Some(argv);
                    Carried::Rule(Box::new(rule), said)
                }
                _ => not(format!(
                    "`Bash({pattern})`: a wildcard inside a command has no argv prefix that covers no more; kept as a card"
                )),
            }
        }
        _ => {
            let Some(argv) = words(pattern) else {
                return not(format!("`Bash({pattern})`: its words cannot be read"));
            };
            let said = format!("argv {}", words_text(&argv));
            let mut rule = RuleSpec::new(action, "run");
            rule.argv = Some(argv);
            Carried::Rule(Box::new(rule), said)
        }
    }
}

/// A Claude Code path: `//abs` is absolute, `~/x` the home folder, `/x` and
/// `./x` and `x` the project's (the workspace's); `None` for what Wicket
/// cannot place.
enum Place {
    Inside(String),
    Outside(String),
}

fn place(path: &str) -> Option<Place> {
    if let Some(absolute) = path.strip_prefix("//") {
        return Some(Place::Outside(format!("/{absolute}")));
    }
    if let Some(below) = path.strip_prefix("~/") {
        let home = std::env::var_os("HOME").filter(|home| !home.is_empty())?;
        let home = std::path::PathBuf::from(home);
        return Some(Place::Outside(
            home.join(below).to_string_lossy().into_owned(),
        ));
    }
    let relative = path
        .strip_prefix("./")
        .or_else(|| path.strip_prefix('/'))
        .unwrap_or(path);
    if relative.is_empty() || relative.split('/').any(|part| part == "..") {
        return None;
    }
    Some(Place::Inside(relative.to_string()))
}

fn write(tool: &str, path: &str, action: RuleAction) -> Carried {
    match place(path) {
        Some(Place::Inside(glob) | Place::Outside(glob)) => {
            let said = format!("write path {}", quoted(&glob));
            let mut rule = RuleSpec::new(action, "write");
            rule.path = Some(glob);
            Carried::Rule(Box::new(rule), said)
        }
        None => not(format!("`{tool}({path})`: a path Wicket cannot place")),
    }
}

fn read(path: &str, action: RuleAction) -> Carried {
    match place(path) {
        Some(Place::Outside(glob)) => {
            let said = format!("read_outside path {}", quoted(&glob));
            let mut rule = RuleSpec::new(action, "read_outside");
            rule.path = Some(glob);
            Carried::Rule(Box::new(rule), said)
        }
        Some(Place::Inside(_)) if action == RuleAction::Deny => not(format!(
            "`Read({path})`: Wicket does not gate reads inside the workspace, so this deny has no \
             counterpart and the model can read it; keep secrets outside the workspace (or hide them \
             from commands with [sandbox] deny_read)"
        )),
        Some(Place::Inside(_)) => not(format!(
            "`Read({path})`: reads inside the workspace need no card in Wicket, so there is nothing to {}",
            action.as_str()
        )),
        None => not(format!("`Read({path})`: a path Wicket cannot place")),
    }
}

fn web_fetch(domain: &str, action: RuleAction) -> Carried {
    let Some(host) = domain.strip_prefix("domain:").map(str::trim) else {
        return not(format!(
            "`WebFetch({domain})`: only domain: rules have a counterpart (a host)"
        ));
    };
    if host.is_empty() || host.contains(['/', ' ']) {
        return not(format!("`WebFetch({domain})`: not a host"));
    }
    let host = host.to_ascii_lowercase();
    let said = format!("net host {}", quoted(&host));
    let mut rule = RuleSpec::new(action, "net");
    rule.host = Some(host);
    Carried::Rule(Box::new(rule), said)
}

fn mcp(name: &str, action: RuleAction) -> Carried {
    let rest = name.strip_prefix("mcp__").unwrap_or(name);
    let (server, tool) = match rest.split_once("__") {
        Some((server, "*")) => (server, None),
        Some((server, tool)) => (server, Some(tool)),
        None => (rest, None),
    };
    if server.is_empty() || tool.is_some_and(|tool| tool.contains('*')) {
        return not(format!("`{name}`: an MCP rule Wicket cannot read"));
    }
    let said = match tool {
        Some(tool) => format!("mcp server {} tool {}", quoted(server), quoted(tool)),
        None => format!("mcp server {} (every tool)", quoted(server)),
    };
    let mut rule = RuleSpec::new(action, "mcp");
    rule.server = Some(server.to_string());
    rule.mcp_tool = tool.map(str::to_string);
    Carried::Rule(Box::new(rule), said)
}

fn quoted(text: &str) -> String {
    serde_json::json!(text).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn said(entry: &str, action: RuleAction) -> String {
        match permission(entry, action) {
            Carried::Rule(rule, said) => {
                rule.check("t").expect("a rule Wicket reads");
                said
            }
            Carried::Not(why) => format!("not: {why}"),
        }
    }

    #[test]
    fn each_kind_of_claude_code_rule_reads_as_wicket_s_or_says_why_not() {
        use RuleAction::{Allow, Ask, Deny};
        let table = [
            (
                "Bash(npm run test:*)",
                Allow,
                "command_prefix \"npm run test\" (a string prefix, as Claude Code reads `:*`)",
            ),
            (
                "Bash(rm -rf:*)",
                Deny,
                "command_prefix \"rm -rf\" (a string prefix, as Claude Code reads `:*`)",
            ),
            ("Bash(git diff *)", Allow, "argv_prefix [\"git\", \"diff\"]"),
            ("Bash(git push)", Ask, "argv [\"git\", \"push\"]"),
            ("Bash(cat .env)", Deny, "argv [\"cat\", \".env\"]"),
            ("Read(//**/.env)", Deny, "read_outside path \"/**/.env\""),
            ("Edit(src/**)", Allow, "write path \"src/**\""),
            ("Write(./docs/*.md)", Allow, "write path \"docs/*.md\""),
            ("WebFetch(domain:docs.rs)", Allow, "net host \"docs.rs\""),
            (
                "mcp__github__create_issue",
                Ask,
                "mcp server \"github\" tool \"create_issue\"",
            ),
            ("mcp__github", Deny, "mcp server \"github\" (every tool)"),
            ("Bash(rm -rf *)", Deny, "argv_prefix [\"rm\", \"-rf\"]"),
        ];
        for (entry, action, expected) in table {
            assert_eq!(said(entry, action), expected, "{entry}");
        }
        let home = said("Read(~/.ssh/**)", Deny);
        assert!(
            home.starts_with("read_outside path \"/") && home.ends_with("/.ssh/**\""),
            "{home}"
        );
        for (entry, action, why) in [
            ("Bash(* --version)", Allow, "leading wildcard"),
            ("Bash(git * main)", Allow, "wildcard inside"),
            ("WebSearch", Allow, "no counterpart"),
            ("Read(./docs/**)", Allow, "need no card"),
            ("Bash", Allow, "every command"),
            ("Edit(../x)", Allow, "cannot place"),
        ] {
            let got = said(entry, action);
            assert!(
                got.starts_with("not: ") && got.contains(why),
                "{entry}: {got}"
            );
        }
    }
}
