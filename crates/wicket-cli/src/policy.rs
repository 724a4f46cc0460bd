//! `wicket policy show [--json]`: the settings and rules in force for a
//! workspace, each with the file it came from: the managed policy, the
//! person's config.toml or rules.toml, the workspace's config or Claude Code
//! settings, or Wicket's default.

use std::path::{Path, PathBuf};

use anyhow::Result;
use serde_json::{Value, json};
use wicket_core::config::{CLAUDE_SETTINGS, Config, WORKSPACE_CONFIG};
use wicket_gate::rules::Source;

use crate::show;

/// One line of the listing: a setting or a rule, and where it came from.
struct Line {
    kind: &'static str,
    key: String,
    value: Value,
    source: String,
}

/// The person's config.toml as written (`None`: absent or unreadable),
/// read once for every setting's source.
fn written(home: &Path) -> Option<toml::Table> {
    let bytes = wicket_os::files::read_regular(
        &home.join("config.toml"),
        wicket_core::config::CONFIG_MAX_BYTES,
    )
    .ok()??;
    String::from_utf8(bytes).ok()?.parse().ok()
}

/// Whether `written` sets `[table] key` (`table` empty: a top-level key).
fn sets(written: Option<&toml::Table>, table: &str, key: &str) -> bool {
    let table = match table {
        "" => written,
        table => written.and_then(|written| written.get(table)?.as_table()),
    };
    table.is_some_and(|table| table.contains_key(key))
}

pub(crate) fn show(workspace: Option<PathBuf>, json: bool) -> Result<std::process::ExitCode> {
    let home = wicket_session::home();
    let workspace = match workspace {
        Some(workspace) => workspace,
        None => std::env::current_dir()?,
    };
    let config = Config::load(&home, &workspace)?;
    let mut lines = settings(&config, &home, &workspace);
    lines.extend(rules(&config, &home, &workspace)?);
    print(&lines, json);
    Ok(std::process::ExitCode::SUCCESS)
}

/// The settings in force, each with where it came from.
// One entry per setting, a flat list; past 80 lines because each names its source.
fn settings(config: &Config, home: &Path, workspace: &Path) -> Vec<Line> {
    let managed = &config.managed;
    let policy = managed.named();
    let home_config = home.join("config.toml").display().to_string();
    let written = written(home);
    let from = |managed_sets: bool, table: &str, key: &str| -> String {
        if managed_sets {
            policy.clone()
        } else if sets(written.as_ref(), table, key) {
            home_config.clone()
        } else {
            "default".into()
        }
    };
    let sandbox = &config.sandbox;
    let written_mode = written
        .as_ref()
        .and_then(|written| written.get("sandbox")?.get("mode")?.as_str());
    let mode_source = match written_mode {
        Some(mode) if mode == sandbox.mode.as_str() => home_config.clone(),
        // The person's mode, or the default, the managed policy forbade.
        Some(_) => policy.clone(),
        None if sandbox.mode != wicket_protocol::card::SandboxMode::WorkspaceWrite => {
            policy.clone()
        }
        None => "default".into(),
    };
    let mut lines = vec![
        Line {
            kind: "setting",
            key: "model".into(),
            value: json!(config.model),
            source: from(false, "", "model"),
        },
        Line {
            kind: "setting",
            key: "sandbox.mode".into(),
            value: json!(sandbox.mode.as_str()),
            source: mode_source,
        },
        Line {
            kind: "setting",
            key: "sandbox.required".into(),
            value: json!(sandbox.required),
            source: from(managed.required, "sandbox", "required"),
        },
        Line {
            kind: "setting",
            key: "sandbox.home_read".into(),
            value: json!(sandbox.home_read),
            source: from(managed.home_read.is_some(), "sandbox", "home_read"),
        },
        Line {
            kind: "setting",
            key: "sandbox.forbid_modes".into(),
            value: json!(
                managed
                    .forbid_modes
                    .iter()
                    .map(|mode| mode.as_str())
                    .collect::<Vec<_>>()
            ),
            source: from(!managed.forbid_modes.is_empty(), "-", "-"),
        },
        Line {
            kind: "setting",
            key: "sandbox.forbid_direct_network".into(),
            value: json!(managed.forbid_direct_network),
            source: from(managed.forbid_direct_network, "-", "-"),
        },
        Line {
            kind: "setting",
            key: "sandbox.allow_always".into(),
            value: json!(!managed.no_allow_always),
            source: from(managed.no_allow_always, "-", "-"),
        },
        Line {
            kind: "setting",
            key: "sandbox.env_pass".into(),
            value: json!(sandbox.env_pass),
            source: from(false, "sandbox", "env_pass"),
        },
    ];
    for server in &config.mcp_servers {
        let file = if server.from_workspace {
            workspace.join(WORKSPACE_CONFIG).display().to_string()
        } else {
            home_config.clone()
        };
        lines.push(Line {
            kind: "mcp_server",
            key: server.name.clone(),
            value: json!(server.name),
            source: file,
        });
    }
    for hook in &config.hooks {
        lines.push(Line {
            kind: "hook",
            key: format!("{:?} {}", hook.event, hook.name),
            value: json!(hook.command),
            source: match hook.owner {
                wicket_core::config::Owner::Home => home_config.clone(),
                wicket_core::config::Owner::Workspace => {
                    workspace.join(WORKSPACE_CONFIG).display().to_string()
                }
            },
        });
    }
    lines
}

/// The rules in force, in the order the gate reads them, each with its file.
fn rules(config: &Config, home: &Path, workspace: &Path) -> Result<Vec<Line>> {
    let managed = &config.managed;
    let policy = managed.named();
    let home_config = home.join("config.toml").display().to_string();
    let mut lines = Vec::new();
    let managed_files: std::collections::HashMap<String, String> = managed
        .rules
        .iter()
        .map(|(file, rule)| (rule.id.to_string(), file.display().to_string()))
        .collect();
    for (source, rule) in config.gate_rules(home).all()? {
        let file = match source {
            Source::Managed => managed_files
                .get(rule.id.as_str())
                .cloned()
                .unwrap_or_else(|| policy.clone()),
            Source::HomeConfig => home_config.clone(),
            Source::Saved => home
                .join(wicket_gate::rules::RULES_FILE)
                .display()
                .to_string(),
            Source::Workspace => {
                let claude = CLAUDE_SETTINGS
                    .iter()
                    .find(|file| rule.id.as_str().contains(&file.replace('/', "_")));
                workspace
                    .join(claude.copied().unwrap_or(WORKSPACE_CONFIG))
                    .display()
                    .to_string()
            }
        };
        lines.push(Line {
            kind: "rule",
            key: rule.id.to_string(),
            value: json!(rule.spec().describe()),
            source: file,
        });
    }
    Ok(lines)
}

fn print(lines: &[Line], json: bool) {
    for line in lines {
        if json {
            show::line_out(
                &json!({"kind": line.kind, "key": line.key, "value": line.value, "source": line.source})
                    .to_string(),
            );
        } else {
            let value = match &line.value {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            show::line_out(&wicket_protocol::text::visible_line(&format!(
                "{:<10} {:<32} {:<40} ({})",
                line.kind, line.key, value, line.source
            )));
        }
    }
}
