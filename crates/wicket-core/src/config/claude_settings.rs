//! A repository's own Claude Code settings (`.claude/settings.json` and
//! `settings.local.json`), read as repository config, like
//! `.wicket/config.toml`: their `ask` and `deny` permission rules become
//! the workspace's rules, so a team's shared deny list protects Wicket's
//! users too; their allows, hooks and MCP servers are ignored with a
//! notice that says why, so a hostile repository can allow nothing.

use std::path::Path;

use wicket_gate::rules::Source;
use wicket_protocol::RuleAction;
use wicket_tools::Workspace;

use super::{CONFIG_MAX_BYTES, Config, ConfigNotice};
use crate::claude::{Carried, permission};

/// The repository's Claude Code settings files, in the order read.
pub const CLAUDE_SETTINGS: [&str; 2] = [".claude/settings.json", ".claude/settings.local.json"];

impl Config {
    /// The ask and deny rules of the workspace's Claude Code settings, and
    /// a notice for what of them is not obeyed.
    pub(super) fn apply_claude_settings(&mut self, workspace: &Path) {
        let Ok(opened) = Workspace::open(workspace) else {
            return;
        };
        for relative in CLAUDE_SETTINGS {
            let shown = workspace.join(relative);
            let bytes = match opened.read_runtime_file(Path::new(relative), CONFIG_MAX_BYTES) {
                Ok(Some(bytes)) => bytes,
                Ok(None) => continue,
                Err(error) => {
                    self.claude_notice(&shown, format!("ignored it: {}", error.message));
                    continue;
                }
            };
            match serde_json::from_slice::<serde_json::Value>(&bytes) {
                Ok(settings) => self.apply_claude_file(&shown, relative, &settings),
                Err(error) => {
                    self.claude_notice(&shown, format!("ignored it: it is not JSON ({error})"));
                }
            }
        }
    }

    fn apply_claude_file(&mut self, shown: &Path, relative: &str, settings: &serde_json::Value) {
        let permissions = &settings["permissions"];
        for (key, action) in [("ask", RuleAction::Ask), ("deny", RuleAction::Deny)] {
            let entries = permissions[key]
                .as_array()
                .map(Vec::as_slice)
                .unwrap_or(&[]);
            for (index, entry) in entries.iter().enumerate() {
                let Some(entry) = entry.as_str() else {
                    continue;
                };
                let id = format!("workspace:{relative}:{key}:{index}").replace(['/', ' '], "_");
                let why = match permission(entry, action) {
                    Carried::Rule(spec, _) => match spec.check(&id) {
                        Ok(rule) => {
                            self.rules.push((Source::Workspace, rule));
                            continue;
                        }
                        Err(why) => why,
                    },
                    Carried::Not(why) => why,
                };
                self.claude_notice(shown, format!("ignored permissions.{key} {entry:?}: {why}"));
            }
        }
        let allows = permissions["allow"].as_array().map_or(0, Vec::len);
        if allows > 0 {
            self.claude_notice(
                shown,
                format!(
                    "ignored its {allows} permissions.allow rule(s): a repository's settings can only ask or \
                     deny. Put allow rules in $WICKET_HOME/rules.toml, or run `wicket import claude-code` \
                     for your own ~/.claude/settings.json"
                ),
            );
        }
        for (key, what) in [("hooks", "hooks"), ("mcpServers", "MCP servers")] {
            if settings.get(key).is_some_and(|value| !value.is_null()) {
                self.claude_notice(
                    shown,
                    format!(
                        "ignored its {what}: a repository's Claude Code settings do not start commands in \
                         Wicket. Declare them in .wicket/config.toml (each asks first) or your own config"
                    ),
                );
            }
        }
    }

    fn claude_notice(&mut self, file: &Path, message: String) {
        self.notices.push(ConfigNotice {
            file: file.display().to_string(),
            key: Some("claude_settings".into()),
            message,
        });
    }
}
