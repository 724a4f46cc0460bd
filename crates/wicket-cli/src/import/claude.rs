//! Claude Code's settings as import items: `~/.claude/settings.json`
//! (`permissions.allow|ask|deny`, `hooks`, `env` names), `~/.claude.json`
//! (`mcpServers`), and the workspace's `.mcp.json` (`mcpServers`, which
//! stay the workspace's: each asks before it starts).

use std::path::Path;

use anyhow::{Context, Result};
use serde_json::Value;
use wicket_core::claude::{Carried, permission};
use wicket_protocol::RuleAction;

use super::{Becomes, HookItem, Item, own_file, tool_home};

/// Claude Code's hook events and Wicket's names for them.
const EVENTS: [(&str, &str); 7] = [
    ("PreToolUse", "pre_tool_use"),
    ("PostToolUse", "post_tool_use"),
    ("UserPromptSubmit", "user_prompt_submit"),
    ("Stop", "stop"),
    ("SessionStart", "session_start"),
    ("SessionEnd", "session_end"),
    ("Notification", "notification"),
];

/// Every item of the person's Claude Code settings, in the files' order.
pub(crate) fn items(workspace: &Path) -> Result<Vec<Item>> {
    let mut items = Vec::new();
    let Some(dir) = tool_home("CLAUDE_CONFIG_DIR", ".claude") else {
        return Ok(items);
    };
    let settings_path = dir.join("settings.json");
    if let Some(settings) = json_of(&settings_path)? {
        let shown = "~/.claude/settings.json";
        permissions(&mut items, shown, &settings["permissions"]);
        hooks(&mut items, shown, &settings["hooks"]);
        if let Some(env) = settings["env"].as_object() {
            for name in env.keys() {
                items.push(Item::new(
                    format!("{shown} env"),
                    name.clone(),
                    Becomes::EnvPass(name.clone()),
                ));
            }
        }
        if let Some(servers) = settings.get("mcpServers") {
            servers_of(&mut items, &format!("{shown} mcpServers"), servers, false);
        }
    }
    // ~/.claude.json sits beside ~/.claude, in the home folder.
    if let Some(user) = std::env::var_os("HOME").filter(|home| !home.is_empty()) {
        let path = Path::new(&user).join(".claude.json");
        if let Some(state) = json_of(&path)? {
            servers_of(
                &mut items,
                "~/.claude.json mcpServers",
                &state["mcpServers"],
                false,
            );
        }
    }
    if let Ok(opened) = wicket_tools::Workspace::open(workspace) {
        let bytes = opened
            .read_runtime_file(
                Path::new(".mcp.json"),
                wicket_core::config::CONFIG_MAX_BYTES,
            )
            .map_err(|error| anyhow::anyhow!(".mcp.json: {}", error.message))?;
        if let Some(bytes) = bytes {
            let project: Value =
                serde_json::from_slice(&bytes).context("the workspace's .mcp.json is not JSON")?;
            servers_of(
                &mut items,
                ".mcp.json mcpServers",
                &project["mcpServers"],
                true,
            );
        }
    }
    Ok(items)
}

fn json_of(path: &Path) -> Result<Option<Value>> {
    let Some(text) = own_file(path)? else {
        return Ok(None);
    };
    serde_json::from_str(&text)
        .with_context(|| format!("{} is not JSON", path.display()))
        .map(Some)
}

fn permissions(items: &mut Vec<Item>, shown: &str, permissions: &Value) {
    for (key, action) in [
        ("allow", RuleAction::Allow),
        ("ask", RuleAction::Ask),
        ("deny", RuleAction::Deny),
    ] {
        let from = format!("{shown} permissions.{key}");
        for entry in permissions[key]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or(&[])
        {
            let Some(entry) = entry.as_str() else {
                items.push(Item::new(
                    &from,
                    entry.to_string(),
                    Becomes::Not("not a string".into()),
                ));
                continue;
            };
            let becomes = match permission(entry, action) {
                Carried::Rule(rule, said) => Becomes::Rule(rule, said),
                Carried::Not(why) => Becomes::Not(why),
            };
            items.push(Item::new(&from, entry, becomes));
        }
    }
}

/// `hooks: {EVENT: [{matcher, hooks: [{type: "command", command, timeout}]}]}`:
/// each command a `[[hooks.EVENT]]` running it with `sh -c`, as Claude Code does.
fn hooks(items: &mut Vec<Item>, shown: &str, hooks: &Value) {
    let Some(events) = hooks.as_object() else {
        return;
    };
    for (event, groups) in events {
        let from = format!("{shown} hooks.{event}");
        let wicket = EVENTS
            .iter()
            .find(|(name, _)| name == event)
            .map(|(_, ours)| *ours);
        for group in groups.as_array().map(Vec::as_slice).unwrap_or(&[]) {
            let matcher = group["matcher"]
                .as_str()
                .filter(|matcher| !matcher.is_empty() && *matcher != "*")
                .map(str::to_string);
            for hook in group["hooks"].as_array().map(Vec::as_slice).unwrap_or(&[]) {
                let command = hook["command"].as_str().unwrap_or_default();
                let entry = match &matcher {
                    Some(matcher) => format!("{matcher}: {command}"),
                    None => command.to_string(),
                };
                let becomes = match (wicket, hook["type"].as_str()) {
                    (None, _) => Becomes::Not(format!("the {event} event has no counterpart")),
                    (Some(_), Some(kind)) if kind != "command" => Becomes::Not(format!(
                        "a {kind} hook has no counterpart; only commands run"
                    )),
                    (Some(_), _) if command.trim().is_empty() => {
                        Becomes::Not("a hook with no command".into())
                    }
                    (Some(event), _) => Becomes::Hook(HookItem {
                        event,
                        matcher: matcher.clone(),
                        command: vec!["sh".into(), "-c".into(), command.to_string()],
                        timeout_s: hook["timeout"].as_u64(),
                    }),
                };
                items.push(Item::new(&from, entry, becomes));
            }
        }
    }
}

/// `mcpServers: {NAME: {command, args, env} | {type: "http", url, headers}}`.
pub(super) fn servers_of(items: &mut Vec<Item>, from: &str, servers: &Value, in_workspace: bool) {
    let Some(servers) = servers.as_object() else {
        return;
    };
    for (name, server) in servers {
        let becomes = match server_table(server) {
            Ok(table) => Becomes::Mcp {
                name: name.clone(),
                table,
                in_workspace,
            },
            Err(why) => Becomes::Not(why),
        };
        items.push(Item::new(from, name.clone(), becomes));
    }
}

fn server_table(server: &Value) -> std::result::Result<toml_edit::Table, String> {
    let mut table = toml_edit::Table::new();
    let strings = |value: &Value| -> Vec<String> {
        value
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    };
    let map = |value: &Value| -> toml_edit::InlineTable {
        value
            .as_object()
            .map(|map| {
                map.iter()
                    .filter_map(|(key, value)| Some((key.as_str(), value.as_str()?)))
                    .collect()
            })
            .unwrap_or_default()
    };
    match (server["command"].as_str(), server["url"].as_str()) {
        (Some(command), _) => {
            table.insert("command", toml_edit::value(command));
            let args: toml_edit::Array = strings(&server["args"])
                .iter()
                .map(String::as_str)
                .collect();
            table.insert("args", toml_edit::value(args));
            let env = map(&server["env"]);
            if !env.is_empty() {
                table.insert("env", toml_edit::value(env));
            }
        }
        (None, Some(_)) if server["type"] == "sse" => {
            return Err("an SSE server has no counterpart: Wicket speaks Streamable HTTP".into());
        }
        (None, Some(url)) => {
            table.insert("url", toml_edit::value(url));
            let headers = map(&server["headers"]);
            if !headers.is_empty() {
                table.insert("headers", toml_edit::value(headers));
            }
        }
        (None, None) => return Err("a server with neither command nor url".into()),
    }
    Ok(table)
}
