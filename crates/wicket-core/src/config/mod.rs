//! Configuration: `$WICKET_HOME/config.toml`, then `<workspace>/.wicket/config.toml`,
//! then flags and the environment, each layer over the one before. An unknown
//! key is an error naming the key and the file.
//!
//! The two files have different owners. The home config is the person's
//! own. The workspace's arrived with the repository and is untrusted: it
//! is read through the resolver (a link out or a FIFO is refused), every
//! command it declares raises a card before it runs ([`Owner::Workspace`]),
//! its skill folders must lie inside the workspace, and it may not name
//! provider URLs or loosen the sandbox. The types keep that: a file is read
//! into the keys every file may set (`file::SharedKeys`) and those only the
//! person's own may (`file::HomeKeys`), and a file's `layer::Layer` decides
//! which it is, in one place.

mod claude_settings;
mod managed;
pub use claude_settings::CLAUDE_SETTINGS;
pub use managed::{AllowedHook, AllowedServer, MANAGED_ENV, MANAGED_FILE, Managed};
mod file;
mod home;
mod hook;
mod layer;
mod mcp_servers;

use file::{FileConfig, parse};
pub use hook::{Hook, OnError, StopHook, ToolMatcher, claude_names};
use layer::Layer;

use std::path::{Path, PathBuf};

use wicket_tools::Workspace;

use crate::error::{Error, Result};
use crate::models::{ModelInfo, Prices, UNKNOWN, built_in};
use wicket_gate::sandbox::SandboxSettings;

/// The step limit when no config sets one: model replies per turn.
pub const DEFAULT_STEP_LIMIT: usize = 200;
/// Stop-hook blocks in a row that end a turn.
pub const DEFAULT_MAX_STOP_BLOCKS: usize = 3;
/// A Stop hook's timeout when its table gives none.
pub const DEFAULT_HOOK_TIMEOUT_S: u64 = 60;
/// The most a config file may hold.
pub const CONFIG_MAX_BYTES: u64 = 1024 * 1024;

/// Who declared a command, and so whether it needs a card.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    /// `$WICKET_HOME/config.toml`: the person's own; no card.
    Home,
    /// `<workspace>/.wicket/config.toml`: arrived with the repository; a run card first.
    Workspace,
}

/// A turn's budget (`[limits]`): it ends cleanly before the next request
/// would pass either.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Limits {
    /// USD a turn may spend.
    pub max_cost_usd_per_turn: Option<f64>,
    /// Tokens (in and out) a turn may use.
    pub max_tokens_per_turn: Option<u64>,
    /// Sub-tasks a turn runs at once (`None`: [`DEFAULT_MAX_TASKS`]).
    pub max_tasks: Option<usize>,
}

impl Limits {
    /// Sub-tasks a turn runs at once.
    pub fn max_tasks(&self) -> usize {
        self.max_tasks
            .unwrap_or(wicket_protocol::limits::DEFAULT_MAX_TASKS)
    }
}

/// The settings a session runs with, all layers applied.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// The model string.
    pub model: Option<String>,
    /// Model replies per turn.
    pub step_limit: usize,
    /// Stop-hook blocks in a row that end a turn.
    pub max_stop_blocks: usize,
    /// Extra skill folders, searched after the standard ones: absolute from
    /// the home config, workspace-relative from the workspace's.
    pub skill_dirs: Vec<SkillDir>,
    /// Stop hooks, the home config's first.
    pub hooks: Vec<Hook>,
    /// `[providers.openai] base_url` (home only).
    pub openai_base_url: Option<String>,
    /// `[providers.openai] tool_choice` (home only).
    pub openai_tool_choice: Option<wicket_chat::ToolChoice>,
    /// `[providers.anthropic] base_url` (home only).
    pub anthropic_base_url: Option<String>,
    /// `[providers.ollama] host` (home only).
    pub ollama_host: Option<String>,
    /// `[chat] request_timeout_s`.
    pub request_timeout_s: Option<u64>,
    /// `[chat] idle_timeout_s`.
    pub idle_timeout_s: Option<u64>,
    /// `[chat] max_attempts`.
    pub max_attempts: Option<u32>,
    /// `[chat] max_tokens`.
    pub max_tokens: Option<u32>,
    /// `[sandbox]` (home only).
    pub sandbox: SandboxSettings,
    /// `[models."P:N"]` (home only): windows and output limits.
    pub models: std::collections::BTreeMap<String, (Option<u64>, Option<u32>)>,
    /// `[prices."P:N"]` (home only), USD per million tokens.
    pub prices: std::collections::BTreeMap<String, Prices>,
    /// `[limits]` (home only).
    pub limits: Limits,
    /// `[telemetry]` (home only): where OTLP goes, and whether content may.
    pub telemetry: wicket_telemetry::Settings,
    /// `[checkpoints]`: what they skip, how long they are kept.
    pub checkpoints: wicket_checkpoints::Settings,
    /// `[mcp_servers.NAME]`: the home config's, then the workspace's
    /// (untrusted; a name the home config uses stays the home's).
    pub mcp_servers: Vec<wicket_mcp::ServerSpec>,
    /// `[[rules]]`: the home config's, then the workspace's (ask and deny
    /// only; the rules' own `Source` says which). rules.toml is read by the
    /// gate at each decision, not here.
    pub rules: Vec<(wicket_gate::rules::Source, wicket_protocol::Rule)>,
    /// What of the workspace's config was ignored, and why: a repository's
    /// config never stops Wicket, it is only not obeyed.
    pub notices: Vec<ConfigNotice>,
    /// The managed policy over it all (empty when there is none).
    pub managed: Managed,
}

/// A part of a workspace's config that was ignored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigNotice {
    /// The file.
    pub file: String,
    /// The key or table (`model`, `[sandbox]`), or `None` for the whole file.
    pub key: Option<String>,
    /// What was ignored, why, and how to have it if the person wants it.
    pub message: String,
}

/// A skill folder from a config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkillDir {
    /// From the home config: anywhere.
    Home(PathBuf),
    /// From the workspace's: relative, inside the workspace, read through the resolver.
    Workspace(PathBuf),
}

impl Default for Config {
    fn default() -> Config {
        Config {
            model: None,
            step_limit: DEFAULT_STEP_LIMIT,
            max_stop_blocks: DEFAULT_MAX_STOP_BLOCKS,
            skill_dirs: Vec::new(),
            hooks: Vec::new(),
            openai_base_url: None,
            openai_tool_choice: None,
            anthropic_base_url: None,
            ollama_host: None,
            request_timeout_s: None,
            idle_timeout_s: None,
            max_attempts: None,
            max_tokens: None,
            sandbox: SandboxSettings::default(),
            models: Default::default(),
            prices: Default::default(),
            limits: Limits::default(),
            telemetry: wicket_telemetry::Settings::default(),
            checkpoints: wicket_checkpoints::Settings::default(),
            mcp_servers: Vec::new(),
            rules: Vec::new(),
            notices: Vec::new(),
            managed: Managed::default(),
        }
    }
}

fn config_error(path: &Path, message: impl Into<String>) -> Error {
    Error::Config {
        path: path.display().to_string(),
        message: message.into(),
    }
}

/// `$WICKET_HOME/config.toml`: a file of the person's home, never of a
/// workspace, so it is read directly, not through the resolver; opened
/// without waiting (a FIFO there is refused, never waited on) and bounded.
fn read_home(path: &Path) -> Result<Option<FileConfig>> {
    match wicket_os::files::read_regular(path, CONFIG_MAX_BYTES) {
        Ok(Some(bytes)) => parse(path, &bytes).map(Some),
        Ok(None) => Ok(None),
        Err(error) => Err(config_error(path, error.to_string())),
    }
}

/// The workspace's config file, relative to its root.
pub const WORKSPACE_CONFIG: &str = ".wicket/config.toml";

fn read_workspace(workspace: &Path) -> Result<Option<FileConfig>> {
    let shown = workspace.join(WORKSPACE_CONFIG);
    let Ok(opened) = Workspace::open(workspace) else {
        return Ok(None);
    };
    match opened.read_runtime_file(Path::new(WORKSPACE_CONFIG), CONFIG_MAX_BYTES) {
        Ok(Some(bytes)) => parse(&shown, &bytes).map(Some),
        Ok(None) => Ok(None),
        Err(error) => Err(config_error(&shown, error.message)),
    }
}

/// What the loader makes of a config file's `text` (for `wicket import`,
/// before it writes one): the notices it would give, or its error. `home`:
/// read as `$WICKET_HOME/config.toml`, whose mistakes stop Wicket; else as a
/// workspace's, whose mistakes are notices.
pub fn check_text(path: &Path, text: &str, home: bool) -> Result<Vec<ConfigNotice>> {
    let file = parse(path, text.as_bytes())?;
    let layer = if home { Layer::Home } else { Layer::Workspace };
    let mut config = Config::default();
    config.layer(layer, path, Ok(Some(file)))?;
    Ok(config.notices)
}

impl Config {
    /// The home config alone (for what holds in every workspace), under
    /// the managed policy.
    pub fn load_home(home: &Path) -> Result<Config> {
        let managed = Managed::load()?;
        let mut config = Config::home_layer(home)?;
        config.apply_managed(&managed, home);
        config.managed = managed;
        Ok(config)
    }

    fn home_layer(home: &Path) -> Result<Config> {
        let mut config = Config::default();
        let path = home.join("config.toml");
        config.layer(Layer::Home, &path, read_home(&path))?;
        Ok(config)
    }

    /// The home config, then the workspace's, then the managed policy over both.
    pub fn load(home: &Path, workspace: &Path) -> Result<Config> {
        let managed = Managed::load()?;
        let mut config = Config::home_layer(home)?;
        let path = workspace.join(WORKSPACE_CONFIG);
        config.layer(Layer::Workspace, &path, read_workspace(workspace))?;
        config.apply_claude_settings(workspace);
        config.apply_managed(&managed, home);
        config.managed = managed;
        Ok(config)
    }

    /// Whether the model's window is known here (built in, or set in
    /// `[models]`); else the turn asks the model's server.
    pub fn window_known(&self, model: &str) -> bool {
        built_in(model).is_some()
            || model.starts_with("script:")
            || self
                .models
                .get(model)
                .is_some_and(|(window, _)| window.is_some())
    }

    /// What Wicket knows of `model`: the built-in table under the config's entries.
    pub fn model_info(&self, model: &str) -> ModelInfo {
        let mut info = built_in(model).unwrap_or(UNKNOWN);
        if let Some((window, output)) = self.models.get(model) {
            if let Some(window) = window {
                info.context_window = *window;
            }
            if let Some(output) = output {
                info.max_output_tokens = *output;
            }
        }
        if let Some(prices) = self.prices.get(model) {
            info.prices = Some(*prices);
        }
        info
    }

    /// The rules a gate decides with: these and `$WICKET_HOME/rules.toml`.
    pub fn gate_rules(&self, home: &Path) -> wicket_gate::rules::Rules {
        wicket_gate::rules::Rules::new(self.rules.clone(), home)
    }

    /// The chat clients' settings: the environment's provider URLs
    /// (`OPENAI_BASE_URL`, `ANTHROPIC_BASE_URL`, `OLLAMA_HOST`) over the
    /// config's, then the config's timeouts, retries and tool choice.
    pub fn client(&self) -> wicket_chat::ClientConfig {
        let mut client = wicket_chat::ClientConfig::from_env();
        if client.openai_base_url.is_none() {
            client.openai_base_url = self.openai_base_url.clone();
        }
        if client.anthropic_base_url.is_none() {
            client.anthropic_base_url = self.anthropic_base_url.clone();
        }
        if client.ollama_host.is_none() {
            client.ollama_host = self.ollama_host.clone();
        }
        if let Some(seconds) = self.request_timeout_s {
            client.request_timeout = std::time::Duration::from_secs(seconds);
        }
        if let Some(seconds) = self.idle_timeout_s {
            client.idle_timeout = std::time::Duration::from_secs(seconds);
        }
        client.openai_tool_choice = self.openai_tool_choice;
        if let Some(attempts) = self.max_attempts {
            client.retry.max_attempts = attempts.max(1);
        }
        client
    }

    /// The model to use: the flag, else `WICKET_MODEL`, else the config's.
    pub fn model_from(&self, flag: Option<&str>) -> Option<String> {
        flag.map(str::to_string)
            .or_else(|| {
                std::env::var("WICKET_MODEL")
                    .ok()
                    .filter(|model| !model.is_empty())
            })
            .or_else(|| self.model.clone())
    }
}

#[cfg(test)]
// Tests write their fixtures (a home's config, a workspace's) directly.
#[allow(clippy::disallowed_methods)]
mod tests;
