//! How one config file applies over the ones before it: by its [`Layer`],
//! which decides whether it may set [`HomeKeys`](super::file::HomeKeys)
//! and whether its mistakes
//! stop Wicket. The keys every file may set ([`SharedKeys`]) are applied
//! here, each by its layer's rule.

use std::path::{Path, PathBuf};

use super::file::{FileConfig, Refusal, SharedKeys};
use super::hook::Hooks;
use super::mcp_servers::{self, FileServer};
use super::{Config, ConfigNotice, Owner, SkillDir, config_error};
use crate::error::{Error, Result};
use wicket_gate::rules::Source;

/// Which config file a layer is, and so what of it is obeyed. Layers apply
/// in order, each over the ones before: [`Layer::Home`] in
/// [`Config::load_home`], then [`Layer::Workspace`] in [`Config::load`].
///
/// A managed policy (an administrator's file over both, a later issue)
/// would be a third variant, trusted, applied by one more
/// [`Config::layer`] call after the workspace's in both loaders; the
/// compiler then asks for its [`Owner`] and its rules' [`Source`]. What it
/// must pin against the person's own config (a sandbox they may not loosen)
/// needs more than coming last.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Layer {
    /// `$WICKET_HOME/config.toml`: the person's own.
    Home,
    /// `<workspace>/.wicket/config.toml`: arrived with the repository.
    Workspace,
}

impl Layer {
    /// Whether the file may set [`HomeKeys`](super::file::HomeKeys), and
    /// whether a mistake in it stops Wicket: the one place trust is
    /// decided. An untrusted file's home-only keys are each ignored with a
    /// notice, and so is any part of it that is wrong: a repository's
    /// config never stops Wicket.
    fn trusted(self) -> bool {
        match self {
            Layer::Home => true,
            Layer::Workspace => false,
        }
    }

    /// Who declared the commands (hooks, MCP servers) the file holds, and
    /// so whether they ask first.
    fn owner(self) -> Owner {
        match self {
            Layer::Home => Owner::Home,
            Layer::Workspace => Owner::Workspace,
        }
    }
}

impl Config {
    /// One layer over the ones before. A file that cannot be read or
    /// parsed stops Wicket if it is trusted; else it is ignored whole.
    pub(super) fn layer(
        &mut self,
        layer: Layer,
        path: &Path,
        read: Result<Option<FileConfig>>,
    ) -> Result<()> {
        match read {
            Ok(Some(file)) => self.apply(layer, file, path),
            Ok(None) => Ok(()),
            Err(error) if layer.trusted() => Err(error),
            Err(error) => {
                self.notices.push(ConfigNotice {
                    file: path.display().to_string(),
                    key: None,
                    message: format!(
                        "ignored the workspace's config: {error}. Wicket runs with your own config alone"
                    ),
                });
                Ok(())
            }
        }
    }

    fn apply(&mut self, layer: Layer, file: FileConfig, path: &Path) -> Result<()> {
        let FileConfig { home, shared } = file;
        if layer.trusted() {
            self.apply_home_keys(home, path)?;
        } else {
            for refusal in home.refusals() {
                self.notice(path, refusal);
            }
        }
        self.apply_shared(layer, shared, path)
    }

    fn notice(&mut self, path: &Path, refusal: Refusal) {
        let Refusal { key, why, instead } = refusal;
        self.notices.push(ConfigNotice {
            file: path.display().to_string(),
            key: Some(key.to_string()),
            message: format!("ignored {key} in {}: {why}. {instead}", path.display()),
        });
    }

    /// A part of a file that is wrong: `error` from a trusted file, a
    /// notice (the part ignored) from an untrusted one.
    fn wrong(&mut self, layer: Layer, path: &Path, error: Error, refusal: Refusal) -> Result<()> {
        if layer.trusted() {
            return Err(error);
        }
        self.notice(path, refusal);
        Ok(())
    }

    /// The keys every file may set, over what the layers before set.
    fn apply_shared(&mut self, layer: Layer, keys: SharedKeys, path: &Path) -> Result<()> {
        // Named whole, not with `..`: a new key does not compile until it
        // is applied here.
        let SharedKeys {
            step_limit,
            max_stop_blocks,
            skill_dirs,
            hooks,
            chat,
            mcp_servers,
            rules,
        } = keys;
        self.apply_skill_dirs(layer, skill_dirs, path);
        if let Some(servers) = mcp_servers {
            self.apply_mcp_servers(layer, servers, path)?;
        }
        self.apply_hooks(layer, hooks, path)?;
        self.apply_rules(layer, rules, path)?;
        if let Some(limit) = step_limit {
            self.step_limit = limit.max(1);
        }
        if let Some(blocks) = max_stop_blocks {
            self.max_stop_blocks = blocks.max(1);
        }
        if let Some(chat) = chat {
            self.request_timeout_s = chat.request_timeout_s.or(self.request_timeout_s);
            self.idle_timeout_s = chat.idle_timeout_s.or(self.idle_timeout_s);
            self.max_attempts = chat.max_attempts.or(self.max_attempts);
            self.max_tokens = chat.max_tokens.or(self.max_tokens);
        }
        Ok(())
    }

    /// A trusted file's folders may be anywhere, relative to its own
    /// folder; an untrusted one's must lie inside the workspace.
    fn apply_skill_dirs(&mut self, layer: Layer, dirs: Vec<PathBuf>, path: &Path) {
        if layer.trusted() {
            let base = path.parent().unwrap_or(Path::new("/"));
            self.skill_dirs
                .extend(dirs.into_iter().map(|dir| SkillDir::Home(base.join(dir))));
            return;
        }
        for dir in dirs {
            let escapes = dir.is_absolute()
                || dir
                    .components()
                    .any(|c| matches!(c, std::path::Component::ParentDir));
            if escapes {
                let why = format!(
                    "the entry '{}' is not a folder inside the workspace, given relative to it",
                    dir.display()
                );
                let refusal = Refusal::new("skill_dirs", why, "Give it relative to the workspace");
                self.notice(path, refusal);
                continue;
            }
            self.skill_dirs.push(SkillDir::Workspace(dir));
        }
    }

    /// The file's servers; a name an earlier layer declared stays that
    /// layer's (a repository cannot replace the person's server).
    fn apply_mcp_servers(
        &mut self,
        layer: Layer,
        servers: std::collections::BTreeMap<String, FileServer>,
        path: &Path,
    ) -> Result<()> {
        let specs = match mcp_servers::server_specs(servers, layer.owner(), path) {
            Ok(specs) => specs,
            Err(error) => {
                let refusal = Refusal::new(
                    "[mcp_servers]",
                    error.to_string(),
                    "Fix the table, or declare the server in $WICKET_HOME/config.toml",
                );
                return self.wrong(layer, path, error, refusal);
            }
        };
        for spec in specs {
            if self
                .mcp_servers
                .iter()
                .any(|earlier| earlier.name == spec.name)
            {
                continue;
            }
            // A server that cannot start fails alone: said here, and
            // again as the turn finds it failed.
            if let Some(why) = &spec.fails {
                self.notices.push(ConfigNotice {
                    file: path.display().to_string(),
                    key: Some(format!("[mcp_servers.{}]", spec.name)),
                    message: why.clone(),
                });
            }
            self.mcp_servers.push(spec);
        }
        Ok(())
    }

    fn apply_hooks(&mut self, layer: Layer, hooks: Hooks, path: &Path) -> Result<()> {
        match hooks.checked(layer.owner()) {
            Ok(hooks) => {
                self.hooks.extend(hooks);
                Ok(())
            }
            Err(message) => {
                let error = config_error(path, message.clone());
                let refusal = Refusal::new(
                    "[hooks]",
                    message,
                    "Fix the table; the workspace's hooks do not run until then",
                );
                self.wrong(layer, path, error, refusal)
            }
        }
    }

    /// The file's rules, named by their source. An untrusted file's may
    /// only ask or deny, under a marked, plain id.
    fn apply_rules(
        &mut self,
        layer: Layer,
        rules: Vec<wicket_protocol::RuleSpec>,
        path: &Path,
    ) -> Result<()> {
        let (source, label) = match layer {
            Layer::Home => (Source::HomeConfig, "config"),
            Layer::Workspace => (Source::Workspace, "workspace"),
        };
        let rules = match wicket_gate::rules::checked(rules, label) {
            Ok(rules) => rules,
            Err(message) => {
                let error = config_error(path, format!("[[rules]]: {message}"));
                let refusal = Refusal::new(
                    "[[rules]]",
                    message,
                    "Fix the rule; the workspace's other rules are ignored until then",
                );
                return self.wrong(layer, path, error, refusal);
            }
        };
        for rule in rules {
            if layer.trusted() {
                self.rules.push((source, rule));
            } else if let Some(rule) = self.untrusted_rule(rule, path) {
                self.rules.push((source, rule));
            }
        }
        Ok(())
    }

    /// A repository's rule under its marked, plain id (it reaches the model
    /// and the screen), unless it would allow: a notice then.
    fn untrusted_rule(
        &mut self,
        mut rule: wicket_protocol::Rule,
        path: &Path,
    ) -> Option<wicket_protocol::Rule> {
        let plain: String = rule
            .id
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            .take(40)
            .collect();
        rule.id = format!("workspace:{plain}").into();
        if matches!(
            rule.action,
            wicket_protocol::RuleAction::Allow | wicket_protocol::RuleAction::Preview
        ) {
            let why = format!(
                "rule {} would let calls skip their card, and a repository's config can only ask or deny",
                rule.id
            );
            let refusal = Refusal::new(
                "[[rules]]",
                why,
                "Put allow rules in $WICKET_HOME/config.toml or rules.toml",
            );
            self.notice(path, refusal);
            return None;
        }
        Some(rule)
    }
}
