//! Codex's settings as import items: `~/.codex/config.toml`
//! (`[mcp_servers]`) and `~/.codex/rules/*.rules`, whose
//! `prefix_rule(pattern = [...], decision = "allow"|"prompt"|"forbidden")`
//! calls are read as the Starlark subset those files use: string and list
//! literals as keyword arguments. Anything else is listed as not carried over.

use anyhow::{Context, Result};
use wicket_protocol::{RuleAction, RuleSpec};

use super::{Becomes, Item, own_file, tool_home};

/// A rule's alternatives multiply; past this many rules one call is refused.
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
        if let Some(servers) = config
            .get("mcp_servers")
            .and_then(|servers| servers.as_table())
        {
            for (name, server) in servers {
                let becomes = match server_table(server) {
                    Ok(table) => Becomes::Mcp {
                        name: name.clone(),
                        table,
                        in_workspace: false,
                    },
                    Err(why) => Becomes::Not(why),
                };
                items.push(Item::new(
                    "~/.codex/config.toml mcp_servers",
                    name.clone(),
                    becomes,
                ));
            }
        }
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

fn server_table(server: &toml::Value) -> std::result::Result<toml_edit::Table, String> {
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
    if let Some(command) = server.get("command").and_then(toml::Value::as_str) {
        table.insert("command", toml_edit::value(command));
        let args: toml_edit::Array = strings("args").iter().map(String::as_str).collect();
        table.insert("args", toml_edit::value(args));
        if let Some(env) = server.get("env").and_then(toml::Value::as_table) {
            let env: toml_edit::InlineTable = env
                .iter()
                .filter_map(|(key, value)| Some((key.as_str(), value.as_str()?)))
                .collect();
            if !env.is_empty() {
                table.insert("env", toml_edit::value(env));
            }
        }
        return Ok(table);
    }
    let Some(url) = server.get("url").and_then(toml::Value::as_str) else {
        return Err("a server with neither command nor url".into());
    };
    table.insert("url", toml_edit::value(url));
    if let Some(var) = server
        .get("bearer_token_env_var")
        .and_then(toml::Value::as_str)
    {
        let mut headers = toml_edit::InlineTable::new();
        headers.insert("Authorization", format!("Bearer ${{{var}}}").into());
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
                items.push(Item::new(shown, &entry, Becomes::Not(why)));
                // Nothing after a statement that cannot be read is trusted.
                return;
            }
        }
    }
}

/// A `prefix_rule`'s rules: one for each choice of its alternatives.
fn prefix_rule(args: &[(String, Literal)]) -> Vec<Becomes> {
    let get = |key: &str| {
        args.iter()
            .find(|(name, _)| name == key)
            .map(|(_, value)| value)
    };
    let action = match get("decision") {
        Some(Literal::Text(decision)) if decision == "allow" => RuleAction::Allow,
        Some(Literal::Text(decision)) if decision == "prompt" => RuleAction::Ask,
        Some(Literal::Text(decision)) if decision == "forbidden" => RuleAction::Deny,
        Some(other) => {
            return vec![Becomes::Not(format!(
                "decision {other:?} is not allow, prompt or forbidden"
            ))];
        }
        None => return vec![Becomes::Not("a prefix_rule with no decision".into())],
    };
    let Some(Literal::List(pattern)) = get("pattern") else {
        return vec![Becomes::Not("a prefix_rule with no pattern list".into())];
    };
    let mut prefixes: Vec<Vec<String>> = vec![Vec::new()];
    for part in pattern {
        let choices: Vec<&str> = match part {
            Literal::Text(word) => vec![word.as_str()],
            Literal::List(words) => words
                .iter()
                .filter_map(|word| match word {
                    Literal::Text(word) => Some(word.as_str()),
                    Literal::List(_) => None,
                })
                .collect(),
        };
        if choices.is_empty() {
            return vec![Becomes::Not("a pattern part with no words".into())];
        }
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
        if prefixes.len() > EXPANDED_MAX {
            return vec![Becomes::Not(format!(
                "its alternatives make more than {EXPANDED_MAX} rules"
            ))];
        }
    }
    prefixes
        .into_iter()
        .filter(|prefix| !prefix.is_empty())
        .map(|prefix| {
            let said = format!(
                "argv_prefix {}",
                wicket_protocol::rules::words_text(&prefix)
            );
            let mut rule = RuleSpec::new(action, "run");
            rule.argv_prefix = Some(prefix);
            Becomes::Rule(Box::new(rule), said)
        })
        .collect()
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
        let mut items = Vec::new();
        rules_of(&mut items, "x.rules", text);
        let said: Vec<String> = items
            .iter()
            .map(|item| match &item.becomes {
                Becomes::Rule(rule, said) => format!("{} {said}", rule.action.as_str()),
                Becomes::Not(why) => format!("not: {why}"),
                _ => "other".into(),
            })
            .collect();
        assert_eq!(
            said,
            vec![
                "allow argv_prefix [\"git\", \"status\"]",
                "allow argv_prefix [\"git\", \"diff\"]",
                "ask argv_prefix [\"git\", \"push\"]",
                "deny argv_prefix [\"rm\", \"-rf\"]",
                "not: host_rule() has no counterpart; only prefix_rule is read",
                "not: decision Text(\"maybe\") is not allow, prompt or forbidden",
            ]
        );
        let mut broken = Vec::new();
        rules_of(
            &mut broken,
            "y.rules",
            "prefix_rule(pattern = some_var, decision = \"allow\")\nprefix_rule(pattern = [\"ls\"], decision = \"allow\")",
        );
        assert_eq!(
            broken.len(),
            1,
            "nothing after a statement that cannot be read"
        );
        assert!(
            matches!(&broken[0].becomes, Becomes::Not(why) if why.contains("only strings and lists"))
        );
    }
}
