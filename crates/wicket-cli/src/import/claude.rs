//! Claude Code's settings as import items: `~/.claude/settings.json`
//! (`permissions.allow|ask|deny|additionalDirectories|defaultMode`,
//! `hooks`, `env` names, `model`, and every other key it holds, listed with
//! why it is not carried), `~/.claude.json` (`mcpServers`, and the
//! workspace's project's `projects[…].mcpServers`), and the workspace's
//! `.mcp.json` (`mcpServers`, which stay the workspace's: each asks before
//! it starts). Every key read is a row of the table.

use std::path::Path;

use anyhow::{Context, Result};
use serde_json::Value;
use wicket_core::claude::{Carried, permission};
use wicket_protocol::RuleAction;

use super::{Becomes, HookItem, Item, fetches_packages, own_file, tool_home};

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
        settings_keys(&mut items, "~/.claude/settings.json", &settings);
    }
    // ~/.claude.json sits beside ~/.claude, in the home folder.
    if let Some(user) = std::env::var_os("HOME").filter(|home| !home.is_empty()) {
        let path = Path::new(&user).join(".claude.json");
        if let Some(state) = json_of(&path)? {
            state_keys(&mut items, &state, workspace);
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
                None,
            );
        }
    }
    Ok(items)
}

/// Every key of `settings.json`, each carried or listed with why not.
fn settings_keys(items: &mut Vec<Item>, shown: &str, settings: &Value) {
    let Some(keys) = settings.as_object() else {
        items.push(Item::new(
            shown,
            "(the file)",
            Becomes::Not("not a JSON object".into()),
        ));
        return;
    };
    for (key, value) in keys {
        match key.as_str() {
            "permissions" => permissions(items, shown, value),
            "hooks" => hooks(items, shown, value),
            "env" => match value.as_object() {
                Some(env) => {
                    for name in env.keys() {
                        items.push(Item::new(
                            format!("{shown} env"),
                            name.clone(),
                            Becomes::EnvPass(name.clone()),
                        ));
                    }
                }
                None => items.push(Item::new(
                    shown,
                    "env",
                    Becomes::Not("not an object of names".into()),
                )),
            },
            "mcpServers" => servers_of(items, &format!("{shown} mcpServers"), value, false, None),
            "model" => items.push(Item::new(
                shown,
                format!("model: {}", value.as_str().unwrap_or("(not a string)")),
                model(value),
            )),
            other => items.push(Item::new(shown, other, Becomes::Not(left_key(other)))),
        }
    }
}

/// Why a settings key Wicket has nothing for is left.
fn left_key(key: &str) -> String {
    match key {
        "statusLine" => "Wicket's own status line shows the model, the context and the cost; \
                         it runs no command for one"
            .into(),
        "apiKeyHelper"
        | "awsAuthRefresh"
        | "awsCredentialExport"
        | "forceLoginMethod"
        | "forceLoginOrgUUID" => {
            "Wicket reads API keys from the environment (ANTHROPIC_API_KEY, OPENAI_API_KEY); \
             it runs no helper for one"
                .into()
        }
        "enableAllProjectMcpServers" | "enabledMcpjsonServers" | "disabledMcpjsonServers" => {
            "a workspace's servers ask before they start, each time, in Wicket; there is no \
             list of approved ones"
                .into()
        }
        "includeCoAuthoredBy"
        | "cleanupPeriodDays"
        | "outputStyle"
        | "spinnerTipsEnabled"
        | "alwaysThinkingEnabled"
        | "$schema" => {
            format!("{key} is Claude Code's own; Wicket has no setting like it")
        }
        _ => format!("{key} has no counterpart in Wicket"),
    }
}

/// `model`: a full Claude model id becomes Wicket's `anthropic:ID`; an
/// alias Claude Code resolves itself (`opus`, `sonnet`) is not carried.
fn model(value: &Value) -> Becomes {
    match value.as_str() {
        Some(id) if id.starts_with("claude-") && !id.contains(char::is_whitespace) => {
            Becomes::Model(format!("anthropic:{id}"))
        }
        Some(alias) => Becomes::Not(format!(
            "{alias:?} is a name Claude Code resolves itself; set model = \"anthropic:MODEL-ID\" \
             in $WICKET_HOME/config.toml (or pass --model)"
        )),
        None => Becomes::Not("not a string".into()),
    }
}

/// `~/.claude.json`: Claude Code's own state, where its settings hold
/// `mcpServers` (the person's, every project's) and `projects[DIR].mcpServers`
/// (one project's). The rest is listed in one row, by name.
fn state_keys(items: &mut Vec<Item>, state: &Value, workspace: &Path) {
    let shown = "~/.claude.json";
    let Some(keys) = state.as_object() else {
        return;
    };
    let mut others = Vec::new();
    for (key, value) in keys {
        match key.as_str() {
            "mcpServers" => servers_of(items, &format!("{shown} mcpServers"), value, false, None),
            "projects" => project_servers(items, value, workspace),
            other => others.push(other.to_string()),
        }
    }
    if !others.is_empty() {
        items.push(Item::new(
            shown,
            format!("{} other keys", others.len()),
            Becomes::Not(format!(
                "Claude Code's own state, not settings: {}",
                others.join(", ")
            )),
        ));
    }
}

/// `projects[DIR].mcpServers`: the servers Claude Code starts in DIR only.
/// Those of this workspace go to the home config (the person's own; Wicket
/// has no servers for one workspace, so each starts in every workspace,
/// and the row says so); another project's are listed, not carried.
fn project_servers(items: &mut Vec<Item>, projects: &Value, workspace: &Path) {
    let Some(projects) = projects.as_object() else {
        return;
    };
    let here = std::fs::canonicalize(workspace).unwrap_or_else(|_| workspace.to_path_buf());
    for (dir, project) in projects {
        let Some(servers) = project["mcpServers"].as_object().filter(|s| !s.is_empty()) else {
            continue;
        };
        let from = format!("~/.claude.json projects[{dir:?}].mcpServers");
        let same = std::fs::canonicalize(dir).is_ok_and(|dir| dir == here);
        if same {
            let note = format!(
                "Claude Code started it in {dir} only; Wicket has no servers for one workspace, so it starts in every one"
            );
            servers_of(items, &from, &project["mcpServers"], false, Some(&note));
            continue;
        }
        for name in servers.keys() {
            items.push(Item::new(
                &from,
                name.clone(),
                Becomes::Not(format!(
                    "a server of the project {dir}, not of this workspace; import from there \
                     (--workspace {dir}) to carry it"
                )),
            ));
        }
    }
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
    let Some(keys) = permissions.as_object() else {
        items.push(Item::new(
            shown,
            "permissions",
            Becomes::Not("not an object".into()),
        ));
        return;
    };
    for key in keys.keys() {
        let from = format!("{shown} permissions");
        match key.as_str() {
            "allow" | "ask" | "deny" => {}
            "additionalDirectories" => {
                additional_directories(items, &format!("{from}.{key}"), &permissions[key]);
            }
            "defaultMode" => items.push(Item::new(
                &from,
                format!("defaultMode: {}", permissions[key].as_str().unwrap_or("?")),
                Becomes::Not(default_mode(permissions[key].as_str().unwrap_or_default())),
            )),
            "disableBypassPermissionsMode" => items.push(Item::new(
                &from,
                key.clone(),
                Becomes::Not(
                    "Wicket has no mode that skips every card, so nothing to disable".into(),
                ),
            )),
            other => items.push(Item::new(
                &from,
                other,
                Becomes::Not(format!("permissions.{other} has no counterpart in Wicket")),
            )),
        }
    }
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

/// Why `defaultMode` is not carried: Wicket has no modes of the whole
/// session but plan mode, which is asked for per run.
fn default_mode(mode: &str) -> String {
    match mode {
        "default" => "nothing to carry: Wicket asks as Claude Code's default mode does".into(),
        "plan" => "plan mode is asked for per run in Wicket: `wicket exec --plan`, or /plan in the TUI".into(),
        "acceptEdits" => "each write keeps its card in Wicket; to let writes in the workspace go \
                          without one, add a rule action = \"allow\", tool = \"write\", path = \"**\""
            .into(),
        "bypassPermissions" | "dontAsk" => {
            "Wicket has no mode that skips every card; each call keeps its card unless a rule covers it".into()
        }
        other => format!("{other:?} is not a mode Wicket has"),
    }
}

/// `additionalDirectories`: folders Claude Code reads without asking, as
/// rules that let reads there (and of the folder itself) skip their card.
/// A folder given relative to a project cannot be placed, and is listed.
fn additional_directories(items: &mut Vec<Item>, from: &str, dirs: &Value) {
    for dir in dirs.as_array().map(Vec::as_slice).unwrap_or(&[]) {
        let Some(dir) = dir.as_str() else {
            items.push(Item::new(
                from,
                dir.to_string(),
                Becomes::Not("not a string".into()),
            ));
            continue;
        };
        let expanded = match dir.strip_prefix("~/") {
            Some(below) => std::env::var_os("HOME")
                .filter(|home| !home.is_empty())
                .map(|home| Path::new(&home).join(below)),
            None => Some(Path::new(dir).to_path_buf()),
        };
        let Some(absolute) = expanded.filter(|path| path.is_absolute()) else {
            items.push(Item::new(
                from,
                dir,
                Becomes::Not("a folder given relative to a project; give it absolute".into()),
            ));
            continue;
        };
        let folder = absolute.to_string_lossy();
        let folder = folder.trim_end_matches('/');
        let exact = wicket_gate::rules::exact_glob(folder);
        for path in [exact.clone(), format!("{exact}/**")] {
            let said = format!(
                "read_outside path {} (reads there go without a card)",
                serde_json::json!(path)
            );
            let mut rule = wicket_protocol::RuleSpec::new(RuleAction::Allow, "read_outside");
            rule.path = Some(path);
            items.push(Item::new(from, dir, Becomes::Rule(Box::new(rule), said)));
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
                    (Some(_), _)
                        if !hook["timeout"].is_null() && timeout(&hook["timeout"]).is_none() =>
                    {
                        Becomes::Not(format!(
                            "its timeout {} is not a number of seconds Wicket holds (1 to {})",
                            hook["timeout"],
                            i64::MAX
                        ))
                    }
                    (Some(event), _) => Becomes::Hook(HookItem {
                        event,
                        matcher: matcher.clone(),
                        command: vec!["sh".into(), "-c".into(), command.to_string()],
                        timeout_s: timeout(&hook["timeout"]),
                    }),
                };
                items.push(Item::new(&from, entry, becomes));
            }
        }
    }
}

/// A hook's `timeout` in whole seconds (rounded up), when it is a positive
/// number a config holds.
fn timeout(value: &Value) -> Option<u64> {
    let seconds = value
        .as_f64()
        .filter(|seconds| seconds.is_finite() && *seconds > 0.0)?;
    let whole = seconds.ceil();
    (whole <= i64::MAX as f64).then_some(whole as u64)
}

/// The keys of a Claude Code server Wicket reads.
const SERVER_KEYS: [&str; 6] = ["type", "command", "args", "env", "url", "headers"];

/// `mcpServers: {NAME: {command, args, env} | {type: "http", url, headers}}`;
/// a key of a server Wicket has nothing for is a row of its own.
pub(super) fn servers_of(
    items: &mut Vec<Item>,
    from: &str,
    servers: &Value,
    in_workspace: bool,
    note: Option<&str>,
) {
    let Some(servers) = servers.as_object() else {
        return;
    };
    for (name, server) in servers {
        let becomes = match server_table(server) {
            Ok(table) => Becomes::Mcp {
                name: name.clone(),
                table,
                in_workspace,
                note: note.map(str::to_string),
            },
            Err(why) => Becomes::Not(why),
        };
        items.push(Item::new(from, name.clone(), becomes));
        for key in server
            .as_object()
            .into_iter()
            .flat_map(|table| table.keys())
        {
            if !SERVER_KEYS.contains(&key.as_str()) {
                items.push(Item::new(
                    from,
                    format!("{name}.{key}"),
                    Becomes::Not(format!(
                        "{key} has no counterpart in Wicket's [mcp_servers]"
                    )),
                ));
            }
        }
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
            if fetches_packages(command, &strings(&server["args"])) {
                table.insert("network", toml_edit::value(true));
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Each item as `FROM | ENTRY | what it became`.
    fn rows(items: &[Item]) -> Vec<String> {
        items
            .iter()
            .map(|item| {
                let became = match &item.becomes {
                    Becomes::Rule(rule, said) => format!("{} {said}", rule.action.as_str()),
                    Becomes::Model(model) => format!("model {model}"),
                    Becomes::Mcp { name, note, .. } => format!("server {name} {note:?}"),
                    Becomes::Not(why) => format!("not: {why}"),
                    other => format!("{other:?}"),
                };
                format!("{} | {} | {became}", item.from, item.entry)
            })
            .collect()
    }

    #[test]
    fn every_key_of_the_settings_is_carried_or_listed_with_why() {
        let settings = serde_json::json!({
            "permissions": {
                "additionalDirectories": ["/opt/docs/", "../sibling"],
                "defaultMode": "plan",
                "disableBypassPermissionsMode": "disable"
            },
            "model": "opus",
            "statusLine": {"type": "command", "command": "x"},
            "includeCoAuthoredBy": false
        });
        let mut items = Vec::new();
        settings_keys(&mut items, "s.json", &settings);
        assert_eq!(
            rows(&items),
            [
                "s.json permissions.additionalDirectories | /opt/docs/ | allow read_outside path \
                 \"/opt/docs\" (reads there go without a card)",
                "s.json permissions.additionalDirectories | /opt/docs/ | allow read_outside path \
                 \"/opt/docs/**\" (reads there go without a card)",
                "s.json permissions.additionalDirectories | ../sibling | not: a folder given \
                 relative to a project; give it absolute",
                "s.json permissions | defaultMode: plan | not: plan mode is asked for per run in \
                 Wicket: `wicket exec --plan`, or /plan in the TUI",
                "s.json permissions | disableBypassPermissionsMode | not: Wicket has no mode that \
                 skips every card, so nothing to disable",
                "s.json | model: opus | not: \"opus\" is a name Claude Code resolves itself; set \
                 model = \"anthropic:MODEL-ID\" in $WICKET_HOME/config.toml (or pass --model)",
                "s.json | statusLine | not: Wicket's own status line shows the model, the context \
                 and the cost; it runs no command for one",
                "s.json | includeCoAuthoredBy | not: includeCoAuthoredBy is Claude Code's own; \
                 Wicket has no setting like it",
            ]
        );
    }

    #[test]
    fn a_project_s_servers_are_carried_for_this_workspace_only_and_the_rest_of_the_state_is_one_row()
     {
        let f = wicket_test_support::Fixture::new();
        let here = f.ws.display().to_string();
        let state = serde_json::json!({
            "numStartups": 3,
            "tipsHistory": {},
            "projects": {
                here.clone(): {"mcpServers": {"local": {"command": "npx", "args": ["-y", "x"], "timeout": 5}}},
                "/elsewhere": {"mcpServers": {"far": {"command": "node"}}}
            }
        });
        let mut items = Vec::new();
        state_keys(&mut items, &state, &f.ws);
        let rows = rows(&items);
        assert_eq!(rows.len(), 4, "{rows:#?}");
        assert!(
            rows[0].contains("| local | server local Some(\"Claude Code started it in"),
            "{rows:#?}"
        );
        assert!(
            rows[1].contains("| local.timeout | not: timeout has no counterpart"),
            "{rows:#?}"
        );
        assert!(
            rows[2].ends_with(
                "| far | not: a server of the project /elsewhere, not of this workspace; import \
                 from there (--workspace /elsewhere) to carry it"
            ),
            "{rows:#?}"
        );
        assert_eq!(
            rows[3],
            "~/.claude.json | 2 other keys | not: Claude Code's own state, not settings: \
             numStartups, tipsHistory"
        );
        let Becomes::Mcp { table, .. } = &items[0].becomes else {
            panic!("{rows:#?}")
        };
        assert_eq!(
            table["network"].as_bool(),
            Some(true),
            "npx fetches its package"
        );
    }
}
