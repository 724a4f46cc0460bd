//! Codex's settings as import items: `~/.codex/config.toml`
//! (`model`, `[mcp_servers]`, each with its `cwd`, `enabled`, tool filter,
//! headers and timeouts; every other key listed with why it is left) and
//! `~/.codex/rules/*.rules`, whose
//! `prefix_rule(pattern = [...], decision = "allow"|"prompt"|"forbidden")`
//! calls are read as the Starlark subset those files use: string and list
//! literals as keyword arguments. Each alternative of a pattern is a rule
//! of its own; a missing decision is `allow`, as Codex reads it. Anything
//! else is listed as not carried over, except what might be a deny or ask:
//! a forbidden or prompt rule Wicket cannot carry whole, or a statement it
//! cannot read, stops the import (see [`Becomes::Refused`]).

use anyhow::{Context, Result};
use wicket_protocol::{RuleAction, RuleSpec};

use super::{Becomes, Item, fetches_packages, own_file, tool_home};

/// A rule's alternatives multiply; past this many rules one call is not
/// carried (counted before any is made, so a huge one costs nothing).
const EXPANDED_MAX: usize = 64;

/// Every item of the person's Codex settings.
pub(crate) fn items() -> Result<Vec<Item>> {
    let mut items = Vec::new();
    let Some(dir) = tool_home("CODEX_HOME", ".codex") else {
        return Ok(items);
    };
    if let Some(text) = own_file(&dir.join("config.toml"))? {
        let config: toml::Table =
            toml::from_str(&text).context("~/.codex/config.toml is not valid TOML")?;
        config_keys(&mut items, &config);
    }
    let rules = dir.join("rules");
    let mut files: Vec<std::path::PathBuf> = match std::fs::read_dir(&rules) {
        Ok(entries) => entries
            .filter_map(|entry| entry.ok().map(|entry| entry.path()))
            .filter(|path| path.extension().is_some_and(|ext| ext == "rules"))
            .collect(),
        Err(_) => Vec::new(),
    };
    files.sort();
    for file in files {
        let shown = format!(
            "~/.codex/rules/{}",
            file.file_name().unwrap_or_default().to_string_lossy()
        );
        if let Some(text) = own_file(&file)? {
            rules_of(&mut items, &shown, &text);
        }
    }
    Ok(items)
}

/// Every key of `config.toml`, each carried or listed with why not.
fn config_keys(items: &mut Vec<Item>, config: &toml::Table) {
    let shown = "~/.codex/config.toml";
    for (key, value) in config {
        match key.as_str() {
            "mcp_servers" => {
                for (name, server) in value.as_table().into_iter().flatten() {
                    servers(items, name, server);
                }
            }
            "model" => items.push(Item::new(
                shown,
                format!("model: {}", value.as_str().unwrap_or("(not a string)")),
                model(value, config.get("model_provider")),
            )),
            "model_provider" => items.push(Item::new(
                shown,
                key.clone(),
                Becomes::Not(
                    "read with model: OpenAI's is Wicket's openai:; another provider's model is \
                     not carried"
                        .into(),
                ),
            )),
            "approval_policy" | "sandbox_mode" | "sandbox_workspace_write" => items.push(Item::new(
                shown,
                key.clone(),
                Becomes::Not(
                    "Wicket's cards and jail decide each call; rules in rules.toml and [sandbox] in \
                     config.toml set them"
                        .into(),
                ),
            )),
            other => items.push(Item::new(
                shown,
                other,
                Becomes::Not(format!("{other} has no counterpart in Wicket")),
            )),
        }
    }
}

/// `model`: OpenAI's (the default provider) becomes `openai:NAME`.
fn model(value: &toml::Value, provider: Option<&toml::Value>) -> Becomes {
    let openai = provider.is_none_or(|provider| provider.as_str() == Some("openai"));
    match value.as_str() {
        Some(name) if openai && !name.is_empty() && !name.contains(char::is_whitespace) => {
            Becomes::Model(format!("openai:{name}"))
        }
        Some(_) if !openai => Becomes::Not(
            "a model of another provider than OpenAI; set model in $WICKET_HOME/config.toml as \
             PROVIDER:NAME"
                .into(),
        ),
        _ => Becomes::Not("not a model name".into()),
    }
}

/// The keys of a Codex server Wicket reads.
const SERVER_KEYS: [&str; 14] = [
    "command",
    "args",
    "env",
    "cwd",
    "url",
    "bearer_token_env_var",
    "http_headers",
    "env_http_headers",
    "enabled",
    "enabled_tools",
    "disabled_tools",
    "startup_timeout_sec",
    "startup_timeout_ms",
    "tool_timeout_sec",
];

/// One `[mcp_servers.NAME]`: its table, and a row for each key left.
fn servers(items: &mut Vec<Item>, name: &str, server: &toml::Value) {
    let from = "~/.codex/config.toml mcp_servers";
    let becomes = match server_table(server) {
        Ok(table) => Becomes::Mcp {
            name: name.to_string(),
            table,
            in_workspace: false,
            note: None,
        },
        Err(why) => Becomes::Not(why),
    };
    items.push(Item::new(from, name, becomes));
    for key in server.as_table().into_iter().flat_map(|table| table.keys()) {
        let why = match key.as_str() {
            known if SERVER_KEYS.contains(&known) => continue,
            "env_vars" => "Wicket passes a server no variable of yours by name; give its value in \
                           env = { NAME = \"…\" } of [mcp_servers] (never your API keys)"
                .to_string(),
            other => format!("{other} has no counterpart in Wicket's [mcp_servers]"),
        };
        items.push(Item::new(from, format!("{name}.{key}"), Becomes::Not(why)));
    }
}

fn server_table(server: &toml::Value) -> std::result::Result<toml_edit::Table, String> {
    let mut table = transport_table(server)?;
    // Codex's keys for what Wicket has under the same name, or near it.
    match server.get("enabled") {
        None => {}
        Some(toml::Value::Boolean(enabled)) => {
            table.insert("enabled", toml_edit::value(*enabled));
        }
        Some(_) => return Err("enabled is not true or false".into()),
    }
    for key in ["enabled_tools", "disabled_tools"] {
        let Some(value) = server.get(key) else {
            continue;
        };
        let tools: Option<toml_edit::Array> = value
            .as_array()
            .and_then(|tools| tools.iter().map(toml::Value::as_str).collect());
        let Some(tools) = tools else {
            return Err(format!("{key} is not a list of tool names"));
        };
        table.insert(key, toml_edit::value(tools));
    }
    let seconds = [
        ("startup_timeout_sec", 1.0, "startup_timeout_s"),
        ("startup_timeout_ms", 1000.0, "startup_timeout_s"),
        ("tool_timeout_sec", 1.0, "tool_timeout_s"),
    ];
    for (key, per_second, ours) in seconds {
        let Some(value) = server.get(key) else {
            continue;
        };
        let Some(given) = value
            .as_float()
            .or_else(|| value.as_integer().map(|whole| whole as f64))
            .filter(|given| given.is_finite() && *given > 0.0)
        else {
            return Err(format!("{key} is not a positive number"));
        };
        // Whole seconds, never shorter than Codex waited.
        let whole = (given / per_second).ceil().min(i64::MAX as f64) as i64;
        if !table.contains_key(ours) {
            table.insert(ours, toml_edit::value(whole.max(1)));
        }
    }
    Ok(table)
}

/// How the server is reached: `command`, `args`, `env`, or `url` and its token.
fn transport_table(server: &toml::Value) -> std::result::Result<toml_edit::Table, String> {
    let mut table = toml_edit::Table::new();
    let strings = |key: &str| -> Vec<String> {
        server
            .get(key)
            .and_then(toml::Value::as_array)
            .map(|items| {
                items
                    .iter()
                    .filter_map(|item| item.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    let strings_of = |key: &str| -> Option<Vec<(String, String)>> {
        let map = server.get(key)?.as_table()?;
        Some(
            map.iter()
                .filter_map(|(key, value)| Some((key.clone(), value.as_str()?.to_string())))
                .collect(),
        )
    };
    if let Some(command) = server.get("command").and_then(toml::Value::as_str) {
        table.insert("command", toml_edit::value(command));
        let args: toml_edit::Array = strings("args").iter().map(String::as_str).collect();
        table.insert("args", toml_edit::value(args));
        if let Some(env) = strings_of("env").filter(|env| !env.is_empty()) {
            let env: toml_edit::InlineTable = env
                .iter()
                .map(|(key, value)| (key.as_str(), toml_edit::Value::from(value.as_str())))
                .collect();
            table.insert("env", toml_edit::value(env));
        }
        if let Some(cwd) = server.get("cwd") {
            let Some(cwd) = cwd.as_str().filter(|cwd| cwd.starts_with('/')) else {
                return Err("cwd is not an absolute folder".into());
            };
            table.insert("cwd", toml_edit::value(cwd));
        }
        if fetches_packages(command, &strings("args")) {
            table.insert("network", toml_edit::value(true));
        }
        return Ok(table);
    }
    let Some(url) = server.get("url").and_then(toml::Value::as_str) else {
        return Err("a server with neither command nor url".into());
    };
    table.insert("url", toml_edit::value(url));
    let mut headers = toml_edit::InlineTable::new();
    for (header, value) in strings_of("http_headers").unwrap_or_default() {
        headers.insert(&header, value.into());
    }
    // A header whose value is a variable of yours, read when Wicket starts.
    for (header, var) in strings_of("env_http_headers").unwrap_or_default() {
        headers.insert(&header, format!("${{{var}}}").into());
    }
    if let Some(var) = server
        .get("bearer_token_env_var")
        .and_then(toml::Value::as_str)
    {
        headers.insert("Authorization", format!("Bearer ${{{var}}}").into());
    }
    if !headers.is_empty() {
        table.insert("headers", toml_edit::value(headers));
    }
    Ok(table)
}

/// A Starlark value of the subset: a string, or a list of values.
#[derive(Debug, Clone, PartialEq)]
enum Literal {
    Text(String),
    List(Vec<Literal>),
}

/// One top-level call: its name and keyword arguments, or why it is not one.
type Call = std::result::Result<(String, Vec<(String, Literal)>), String>;

fn rules_of(items: &mut Vec<Item>, shown: &str, text: &str) {
    let mut parser = Parser {
        chars: text.chars().collect(),
        at: 0,
    };
    while parser.more() {
        let start = parser.at;
        let call = parser.call();
        let entry: String = parser.chars[start..parser.at.min(parser.chars.len())]
            .iter()
            .collect::<String>()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        match call {
            Ok((name, args)) if name == "prefix_rule" => {
                for becomes in prefix_rule(&args) {
                    items.push(Item::new(shown, &entry, becomes));
                }
            }
            Ok((name, _)) => items.push(Item::new(
                shown,
                &entry,
                Becomes::Not(format!(
                    "{name}() has no counterpart; only prefix_rule is read"
                )),
            )),
            Err(why) => {
                // It may be a forbidden rule, and nothing after it can be
                // read with trust: the import stops on it.
                items.push(Item::new(
                    shown,
                    &entry,
                    Becomes::Refused(format!(
                        "{why}; a statement Wicket cannot read may be a forbidden rule, and the \
                         rest of the file is not read after it"
                    )),
                ));
                return;
            }
        }
    }
}

/// A `prefix_rule`'s rules: one for each choice of its alternatives. One
/// that cannot be carried whole is not carried when it allows, and stops
/// the import when it is forbidden or prompt.
fn prefix_rule(args: &[(String, Literal)]) -> Vec<Becomes> {
    let get = |key: &str| {
        args.iter()
            .find(|(name, _)| name == key)
            .map(|(_, value)| value)
    };
    let (action, decision) = match get("decision") {
        // Codex reads a rule with no decision as an allow.
        None => (RuleAction::Allow, "allow"),
        Some(Literal::Text(decision)) if decision == "allow" => (RuleAction::Allow, "allow"),
        Some(Literal::Text(decision)) if decision == "prompt" => (RuleAction::Ask, "prompt"),
        Some(Literal::Text(decision)) if decision == "forbidden" => (RuleAction::Deny, "forbidden"),
        Some(other) => {
            return vec![Becomes::Not(format!(
                "decision {other:?} is not allow, prompt or forbidden"
            ))];
        }
    };
    let rules = prefixes(get("pattern")).and_then(|prefixes| {
        prefixes
            .into_iter()
            .map(|prefix| {
                let said = format!(
                    "argv_prefix {}",
                    wicket_protocol::rules::words_text(&prefix)
                );
                let mut rule = RuleSpec::new(action, "run");
                rule.argv_prefix = Some(prefix);
                rule.check("import")
                    .map_err(|why| format!("{said}: {why}"))?;
                Ok(Becomes::Rule(Box::new(rule), said))
            })
            .collect::<std::result::Result<Vec<Becomes>, String>>()
    });
    match (rules, action) {
        (Ok(rules), _) => rules,
        (Err(why), RuleAction::Allow | RuleAction::Preview) => vec![Becomes::Not(why)],
        (Err(why), RuleAction::Ask | RuleAction::Deny) => vec![Becomes::Refused(format!(
            "a {decision} rule Wicket cannot carry whole: {why}"
        ))],
    }
}

/// Every argv prefix a pattern stands for, in its order, each once: a part
/// is a word or a list of alternative words.
fn prefixes(pattern: Option<&Literal>) -> std::result::Result<Vec<Vec<String>>, String> {
    let Some(Literal::List(pattern)) = pattern else {
        return Err("a prefix_rule with no pattern list".into());
    };
    if pattern.is_empty() {
        return Err("an empty pattern".into());
    }
    let mut parts: Vec<Vec<&str>> = Vec::new();
    let mut count: usize = 1;
    for part in pattern {
        let choices: Vec<&str> = match part {
            Literal::Text(word) => vec![word.as_str()],
            Literal::List(words) => words
                .iter()
                .map(|word| match word {
                    Literal::Text(word) => Ok(word.as_str()),
                    Literal::List(_) => Err(
                        "an alternative that is itself a list; alternatives are words".to_string(),
                    ),
                })
                .collect::<std::result::Result<_, _>>()?,
        };
        if choices.is_empty() {
            return Err("a pattern part with no words".into());
        }
        count = count.saturating_mul(choices.len());
        if count > EXPANDED_MAX {
            return Err(format!(
                "its alternatives make more than {EXPANDED_MAX} rules; split it into smaller rules"
            ));
        }
        parts.push(choices);
    }
    let mut prefixes: Vec<Vec<String>> = vec![Vec::new()];
    for choices in parts {
        prefixes = prefixes
            .into_iter()
            .flat_map(|prefix| {
                choices.iter().map(move |choice| {
                    let mut longer = prefix.clone();
                    longer.push(choice.to_string());
                    longer
                })
            })
            .collect();
    }
    let mut once = Vec::with_capacity(prefixes.len());
    for prefix in prefixes {
        if !once.contains(&prefix) {
            once.push(prefix);
        }
    }
    Ok(once)
}

/// A reader of the subset: `NAME(KEY = VALUE, …)` statements, `#` comments.
struct Parser {
    chars: Vec<char>,
    at: usize,
}

impl Parser {
    fn skip(&mut self) {
        while let Some(c) = self.chars.get(self.at) {
            if c.is_whitespace() {
                self.at += 1;
            } else if *c == '#' {
                while self.chars.get(self.at).is_some_and(|c| *c != '\n') {
                    self.at += 1;
                }
            } else {
                break;
            }
        }
    }

    fn more(&mut self) -> bool {
        self.skip();
        self.at < self.chars.len()
    }

    fn peek(&mut self) -> Option<char> {
        self.skip();
        self.chars.get(self.at).copied()
    }

    fn expect(&mut self, wanted: char) -> std::result::Result<(), String> {
        match self.peek() {
            Some(c) if c == wanted => {
                self.at += 1;
                Ok(())
            }
            other => Err(format!(
                "expected {wanted:?}, found {other:?}: not the subset Wicket reads"
            )),
        }
    }

    fn name(&mut self) -> std::result::Result<String, String> {
        self.skip();
        let start = self.at;
        while self
            .chars
            .get(self.at)
            .is_some_and(|c| c.is_ascii_alphanumeric() || *c == '_')
        {
            self.at += 1;
        }
        if start == self.at {
            self.at = (self.at + 1).min(self.chars.len());
            return Err("a statement that is not a call: not the subset Wicket reads".into());
        }
        Ok(self.chars[start..self.at].iter().collect())
    }

    fn call(&mut self) -> Call {
        let name = self.name()?;
        self.expect('(')?;
        let mut args = Vec::new();
        loop {
            if self.peek() == Some(')') {
                self.at += 1;
                return Ok((name, args));
            }
            let key = self.name()?;
            self.expect('=')?;
            let value = self.literal(0)?;
            args.push((key, value));
            match self.peek() {
                Some(',') => self.at += 1,
                Some(')') => {}
                other => return Err(format!("expected , or ) in {name}(), found {other:?}")),
            }
        }
    }

    fn literal(&mut self, depth: usize) -> std::result::Result<Literal, String> {
        if depth > 4 {
            return Err("lists nested too deep".into());
        }
        match self.peek() {
            Some(quote @ ('"' | '\'')) => {
                self.at += 1;
                let mut text = String::new();
                loop {
                    match self.chars.get(self.at).copied() {
                        None | Some('\n') => return Err("a string that does not end".into()),
                        Some('\\') => {
                            let escaped = self
                                .chars
                                .get(self.at + 1)
                                .copied()
                                .ok_or("a string that does not end")?;
                            text.push(match escaped {
                                'n' => '\n',
                                't' => '\t',
                                other => other,
                            });
                            self.at += 2;
                        }
                        Some(c) if c == quote => {
                            self.at += 1;
                            return Ok(Literal::Text(text));
                        }
                        Some(c) => {
                            text.push(c);
                            self.at += 1;
                        }
                    }
                }
            }
            Some('[') => {
                self.at += 1;
                let mut items = Vec::new();
                loop {
                    if self.peek() == Some(']') {
                        self.at += 1;
                        return Ok(Literal::List(items));
                    }
                    items.push(self.literal(depth + 1)?);
                    match self.peek() {
                        Some(',') => self.at += 1,
                        Some(']') => {}
                        other => return Err(format!("expected , or ] in a list, found {other:?}")),
                    }
                }
            }
            other => Err(format!(
                "a value Wicket does not read ({other:?}); only strings and lists"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What each item became, as a line: `deny argv_prefix [...]`,
    /// `not: why`, `refused: why`.
    fn said(items: &[Item]) -> Vec<String> {
        items
            .iter()
            .map(|item| match &item.becomes {
                Becomes::Rule(rule, said) => format!("{} {said}", rule.action.as_str()),
                Becomes::Not(why) => format!("not: {why}"),
                Becomes::Refused(why) => format!("refused: {why}"),
                Becomes::Hook(_)
                | Becomes::Mcp { .. }
                | Becomes::EnvPass(_)
                | Becomes::Model(_) => "other".into(),
            })
            .collect()
    }

    fn read(text: &str) -> Vec<String> {
        let mut items = Vec::new();
        rules_of(&mut items, "x.rules", text);
        said(&items)
    }

    #[test]
    fn prefix_rules_are_read_and_anything_else_is_listed() {
        let text = r#"
# Codex rules
prefix_rule(
    pattern = ["git", ["status", "diff"]],
    decision = "allow",
    justification = "read-only git",
)
prefix_rule(pattern = ["git", "push"], decision = "prompt")
prefix_rule(pattern = ["rm", "-rf"], decision = "forbidden")
host_rule(host = "x")
prefix_rule(pattern = ["curl"], decision = "maybe")
"#;
        assert_eq!(
            read(text),
            vec![
                "allow argv_prefix [\"git\", \"status\"]",
                "allow argv_prefix [\"git\", \"diff\"]",
                "ask argv_prefix [\"git\", \"push\"]",
                "deny argv_prefix [\"rm\", \"-rf\"]",
                "not: host_rule() has no counterpart; only prefix_rule is read",
                "not: decision Text(\"maybe\") is not allow, prompt or forbidden",
            ]
        );
    }

    #[test]
    fn every_alternative_of_every_decision_is_a_rule_and_no_decision_is_allow() {
        let text = r#"
prefix_rule(pattern = ["rm", ["-rf", "-fr"]], decision = "forbidden")
prefix_rule(pattern = [["cp", "mv"], "keep", ["a", "b"]], decision = "prompt")
prefix_rule(pattern = ["mkdir", ["d1", "d2", "d1"]])
"#;
        assert_eq!(
            read(text),
            vec![
                "deny argv_prefix [\"rm\", \"-rf\"]",
                "deny argv_prefix [\"rm\", \"-fr\"]",
                "ask argv_prefix [\"cp\", \"keep\", \"a\"]",
                "ask argv_prefix [\"cp\", \"keep\", \"b\"]",
                "ask argv_prefix [\"mv\", \"keep\", \"a\"]",
                "ask argv_prefix [\"mv\", \"keep\", \"b\"]",
                "allow argv_prefix [\"mkdir\", \"d1\"]",
                "allow argv_prefix [\"mkdir\", \"d2\"]",
            ]
        );
    }

    #[test]
    fn a_deny_or_ask_that_cannot_be_carried_whole_is_refused_and_an_allow_is_left_out() {
        for (decision, becomes) in [
            (
                "forbidden",
                "refused: a forbidden rule Wicket cannot carry whole",
            ),
            ("prompt", "refused: a prompt rule Wicket cannot carry whole"),
            ("allow", "not: "),
        ] {
            for (pattern, why) in [
                (r#"["rm", ["-rf", ["-fr"]]]"#, "itself a list"),
                (r#"["rm", []]"#, "no words"),
                ("[]", "an empty pattern"),
                (r#""rm -rf""#, "no pattern list"),
            ] {
                let got = read(&format!(
                    "prefix_rule(pattern = {pattern}, decision = \"{decision}\")"
                ));
                assert_eq!(got.len(), 1, "{pattern}: {got:?}");
                assert!(
                    got[0].starts_with(becomes) && got[0].contains(why),
                    "{decision} {pattern}: {got:?}"
                );
            }
        }
    }

    #[test]
    fn alternatives_are_counted_before_any_rule_is_made() {
        // 20 parts of 20 alternatives: 20^20 rules if they were made.
        let part = format!(
            "[{}]",
            (0..20)
                .map(|n| format!("\"w{n}\""))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let pattern = vec![part; 20].join(", ");
        let started = std::time::Instant::now();
        let got = read(&format!(
            "prefix_rule(pattern = [{pattern}], decision = \"forbidden\")"
        ));
        assert!(
            started.elapsed() < std::time::Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        assert_eq!(got.len(), 1);
        assert!(got[0].contains("more than 64 rules"), "{got:?}");
    }

    #[test]
    fn a_statement_that_cannot_be_read_stops_the_import_and_nothing_after_it_is_read() {
        let got = read(
            "prefix_rule(pattern = some_var, decision = \"allow\")\nprefix_rule(pattern = [\"ls\"], decision = \"allow\")",
        );
        assert_eq!(
            got.len(),
            1,
            "nothing after a statement that cannot be read"
        );
        assert!(
            got[0].starts_with("refused: ") && got[0].contains("only strings and lists"),
            "{got:?}"
        );
    }

    /// Each item as `entry: what it became`.
    fn rows(items: &[Item]) -> Vec<String> {
        items
            .iter()
            .map(|item| {
                let became = match &item.becomes {
                    Becomes::Mcp { table, .. } => table.to_string().replace('\n', "; "),
                    Becomes::Model(model) => format!("model {model}"),
                    Becomes::Not(why) => format!("not: {why}"),
                    other => format!("{other:?}"),
                };
                format!("{}: {became}", item.entry)
            })
            .collect()
    }

    #[test]
    fn every_key_of_the_config_is_carried_or_listed_with_why() {
        let config: toml::Table = toml::from_str(
            r#"
model = "gpt-5-codex"
approval_policy = "on-request"
hide_agent_reasoning = true

[mcp_servers.docs]
command = "uvx"
args = ["mcp-server-fetch"]
cwd = "/srv/docs"
env_vars = ["DOCS_TOKEN"]
oauth = { client = "x" }

[mcp_servers.sentry]
url = "https://mcp.sentry.dev/mcp"
http_headers = { "X-Team" = "core" }
env_http_headers = { "X-Key" = "SENTRY_KEY" }
bearer_token_env_var = "SENTRY_TOKEN"
"#,
        )
        .unwrap();
        let mut items = Vec::new();
        config_keys(&mut items, &config);
        assert_eq!(
            rows(&items),
            [
                "approval_policy: not: Wicket's cards and jail decide each call; rules in \
                 rules.toml and [sandbox] in config.toml set them",
                "hide_agent_reasoning: not: hide_agent_reasoning has no counterpart in Wicket",
                "docs: command = \"uvx\"; args = [\"mcp-server-fetch\"]; cwd = \"/srv/docs\"; \
                 network = true; ",
                "docs.env_vars: not: Wicket passes a server no variable of yours by name; give its \
                 value in env = { NAME = \"…\" } of [mcp_servers] (never your API keys)",
                "docs.oauth: not: oauth has no counterpart in Wicket's [mcp_servers]",
                "sentry: url = \"https://mcp.sentry.dev/mcp\"; headers = { X-Team = \"core\", \
                 X-Key = \"${SENTRY_KEY}\", Authorization = \"Bearer ${SENTRY_TOKEN}\" }; ",
                "model: gpt-5-codex: model openai:gpt-5-codex",
            ]
        );
        let other: toml::Table =
            toml::from_str("model = \"llama3\"\nmodel_provider = \"ollama\"\n").unwrap();
        let mut items = Vec::new();
        config_keys(&mut items, &other);
        let rows = rows(&items);
        assert!(
            rows[0].starts_with("model: llama3: not: a model of another provider"),
            "{rows:?}"
        );
        assert!(rows[1].starts_with("model_provider: not: "), "{rows:?}");
    }

    #[test]
    fn a_server_keeps_enabled_its_tool_filter_and_its_timeouts() {
        let config: toml::Table = toml::from_str(
            r#"
[off]
command = "node"
args = ["x.js"]
enabled = false
enabled_tools = ["note_read", "note_write"]
disabled_tools = ["note_write"]
startup_timeout_sec = 2.5
tool_timeout_sec = 30

[legacy]
url = "https://h/mcp"
startup_timeout_ms = 1500

[wrong]
command = "node"
tool_timeout_sec = "soon"
"#,
        )
        .unwrap();
        let table = server_table(&config["off"]).unwrap();
        assert_eq!(
            table.to_string(),
            "command = \"node\"\nargs = [\"x.js\"]\nenabled = false\n\
             enabled_tools = [\"note_read\", \"note_write\"]\ndisabled_tools = [\"note_write\"]\n\
             startup_timeout_s = 3\ntool_timeout_s = 30\n"
        );
        let legacy = server_table(&config["legacy"]).unwrap();
        assert_eq!(legacy["startup_timeout_s"].as_integer(), Some(2));
        let wrong = server_table(&config["wrong"]).unwrap_err();
        assert!(wrong.contains("tool_timeout_sec"), "{wrong}");
    }
}
