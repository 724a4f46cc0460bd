//! Configuration: `$WICKET_HOME/config.toml`, then `<workspace>/.wicket/config.toml`,
//! then flags and the environment, each layer over the one before. An unknown
//! key is an error naming the key and the file.
//!
//! The two files have different owners. The home config is the person's
//! own. The workspace's arrived with the repository and is untrusted: it
//! is read through the resolver (a link out or a FIFO is refused), every
//! command it declares raises a card before it runs ([`Owner::Workspace`]),
//! its skill folders must lie inside the workspace, and it may not name
//! provider URLs or loosen the sandbox.

mod hook;
mod mcp_servers;

use hook::Hooks;
pub use hook::{Hook, OnError, StopHook, ToolMatcher, claude_names};

use std::path::{Path, PathBuf};

use serde::Deserialize;
use wicket_tools::Workspace;

use crate::error::{Error, Result};
use crate::models::{ModelInfo, Prices, UNKNOWN, built_in};
use wicket_gate::sandbox::{SandboxMode, SandboxSettings};

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

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Provider {
    base_url: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct OpenAiProvider {
    base_url: Option<String>,
    #[serde(default, deserialize_with = "tool_choice")]
    tool_choice: Option<FileToolChoice>,
}

/// `[providers.openai] tool_choice` as written.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "lowercase")]
enum FileToolChoice {
    Auto,
    Required,
}

impl From<FileToolChoice> for wicket_chat::ToolChoice {
    fn from(choice: FileToolChoice) -> wicket_chat::ToolChoice {
        match choice {
            FileToolChoice::Auto => wicket_chat::ToolChoice::Auto,
            FileToolChoice::Required => wicket_chat::ToolChoice::Required,
        }
    }
}

fn tool_choice<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> std::result::Result<Option<FileToolChoice>, D::Error> {
    one_of(deserializer, |word| {
        format!(
            "[providers.openai] tool_choice = \"{word}\" is not a choice; use \"auto\" or \"required\", or leave it out"
        )
    })
}

/// `[sandbox] mode` as written: the modes a person may choose, not
/// `unavailable`, which only the kernel decides.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum FileMode {
    WorkspaceWrite,
    ReadOnly,
    Off,
}

impl From<FileMode> for SandboxMode {
    fn from(mode: FileMode) -> SandboxMode {
        match mode {
            FileMode::WorkspaceWrite => SandboxMode::WorkspaceWrite,
            FileMode::ReadOnly => SandboxMode::ReadOnly,
            FileMode::Off => SandboxMode::Off,
        }
    }
}

fn sandbox_mode<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> std::result::Result<Option<FileMode>, D::Error> {
    one_of(deserializer, |word| {
        format!(
            "[sandbox] mode = \"{word}\" is not a mode; use \"workspace-write\", \"read-only\" or \"off\""
        )
    })
}

/// A word that must name one of `T`'s variants. Any other is refused with
/// `wrong(word)`, which names the key and the words to use, where serde's
/// own "unknown variant" would name neither in the config's terms.
fn one_of<'de, D, T>(
    deserializer: D,
    wrong: fn(&str) -> String,
) -> std::result::Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::de::DeserializeOwned,
{
    use serde::de::{Error as _, IntoDeserializer};
    let word = String::deserialize(deserializer)?;
    let value: std::result::Result<T, serde::de::value::Error> =
        T::deserialize(word.as_str().into_deserializer());
    value.map(Some).map_err(|_| D::Error::custom(wrong(&word)))
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Ollama {
    host: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Providers {
    openai: Option<OpenAiProvider>,
    anthropic: Option<Provider>,
    ollama: Option<Ollama>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Chat {
    request_timeout_s: Option<u64>,
    idle_timeout_s: Option<u64>,
    max_attempts: Option<u32>,
    max_tokens: Option<u32>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileSandbox {
    #[serde(default, deserialize_with = "sandbox_mode")]
    mode: Option<FileMode>,
    deny_read: Option<Vec<PathBuf>>,
    #[serde(default)]
    extra_write: Vec<PathBuf>,
    #[serde(default)]
    extra_read: Vec<PathBuf>,
    required: Option<bool>,
    env_pass: Option<Vec<String>>,
    max_processes: Option<u64>,
    max_memory_mb: Option<u64>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileModel {
    context_window: Option<u64>,
    max_output_tokens: Option<u32>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct FilePrices {
    input: f64,
    output: f64,
    cached_input: Option<f64>,
    cache_write: Option<f64>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileCheckpoints {
    #[serde(default)]
    ignore: Vec<String>,
    keep_days: Option<u64>,
    max_file_mb: Option<u64>,
    max_files: Option<usize>,
    max_store_mb: Option<u64>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileLimits {
    max_cost_usd_per_turn: Option<f64>,
    max_tokens_per_turn: Option<u64>,
}

/// A turn's budget (`[limits]`): it ends cleanly before the next request
/// would pass either.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Limits {
    /// USD a turn may spend.
    pub max_cost_usd_per_turn: Option<f64>,
    /// Tokens (in and out) a turn may use.
    pub max_tokens_per_turn: Option<u64>,
}

/// One config file as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    model: Option<String>,
    step_limit: Option<usize>,
    max_stop_blocks: Option<usize>,
    #[serde(default)]
    skill_dirs: Vec<PathBuf>,
    #[serde(default)]
    hooks: Hooks,
    providers: Option<Providers>,
    chat: Option<Chat>,
    sandbox: Option<FileSandbox>,
    models: Option<std::collections::BTreeMap<String, FileModel>>,
    prices: Option<std::collections::BTreeMap<String, FilePrices>>,
    limits: Option<FileLimits>,
    checkpoints: Option<FileCheckpoints>,
    mcp_servers: Option<std::collections::BTreeMap<String, mcp_servers::FileServer>>,
    #[serde(default)]
    rules: Vec<wicket_protocol::RuleSpec>,
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
            checkpoints: wicket_checkpoints::Settings::default(),
            mcp_servers: Vec::new(),
            rules: Vec::new(),
            notices: Vec::new(),
        }
    }
}

fn config_error(path: &Path, message: impl Into<String>) -> Error {
    Error::Config {
        path: path.display().to_string(),
        message: message.into(),
    }
}

fn parse(path: &Path, bytes: &[u8]) -> Result<FileConfig> {
    let text = std::str::from_utf8(bytes).map_err(|_| config_error(path, "it is not UTF-8"))?;
    toml::from_str(text).map_err(|error| config_error(path, error.to_string().trim_end()))
}

fn read_home(path: &Path) -> Result<Option<FileConfig>> {
    match std::fs::read(path) {
        Ok(bytes) => parse(path, &bytes).map(Some),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
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

impl Config {
    /// The home config alone (for what holds in every workspace).
    pub fn load_home(home: &Path) -> Result<Config> {
        let mut config = Config::default();
        let home_path = home.join("config.toml");
        if let Some(file) = read_home(&home_path)? {
            config.apply_home(file, &home_path)?;
        }
        Ok(config)
    }

    /// The home config, then the workspace's.
    pub fn load(home: &Path, workspace: &Path) -> Result<Config> {
        let mut config = Config::default();
        let home_path = home.join("config.toml");
        if let Some(file) = read_home(&home_path)? {
            config.apply_home(file, &home_path)?;
        }
        let path = workspace.join(WORKSPACE_CONFIG);
        match read_workspace(workspace) {
            Ok(Some(file)) => config.apply_workspace(file, &path),
            Ok(None) => {}
            Err(error) => config.notices.push(ConfigNotice {
                file: path.display().to_string(),
                key: None,
                message: format!(
                    "ignored the workspace's config: {error}. Wicket runs with your own config alone"
                ),
            }),
        }
        Ok(config)
    }

    fn apply_home(&mut self, mut file: FileConfig, path: &Path) -> Result<()> {
        let base = path.parent().unwrap_or(Path::new("/"));
        self.skill_dirs.extend(
            std::mem::take(&mut file.skill_dirs)
                .into_iter()
                .map(|dir| SkillDir::Home(base.join(dir))),
        );
        if let Some(providers) = file.providers.take() {
            if let Some(openai) = providers.openai {
                if let Some(url) = openai.base_url {
                    self.openai_base_url = Some(url);
                }
                if let Some(choice) = openai.tool_choice {
                    self.openai_tool_choice = Some(choice.into());
                }
            }
            if let Some(url) = providers.anthropic.and_then(|p| p.base_url) {
                self.anthropic_base_url = Some(url);
            }
            if let Some(host) = providers.ollama.and_then(|p| p.host) {
                self.ollama_host = Some(host);
            }
        }
        if let Some(sandbox) = file.sandbox.take() {
            self.sandbox = sandbox_settings(sandbox, path)?;
        }
        for (model, entry) in file.models.take().unwrap_or_default() {
            // A window of 0, or past any real model's (2^63 would overflow
            // the compaction threshold), is not a window: the model's is unknown.
            let window = entry.context_window.filter(|window| {
                (1..=wicket_protocol::limits::CONTEXT_WINDOW_MAX_TOKENS).contains(window)
            });
            self.models.insert(model, (window, entry.max_output_tokens));
        }
        for (model, entry) in file.prices.take().unwrap_or_default() {
            let prices = Prices {
                input: entry.input,
                output: entry.output,
                cached_input: entry.cached_input.unwrap_or(entry.input),
                cache_write: entry.cache_write.unwrap_or(entry.input),
            };
            if [
                prices.input,
                prices.output,
                prices.cached_input,
                prices.cache_write,
            ]
            .iter()
            .any(|price| !price.is_finite() || *price < 0.0)
            {
                return Err(config_error(
                    path,
                    format!(
                        "[prices.\"{model}\"] prices must be USD per million tokens, 0 or more"
                    ),
                ));
            }
            self.prices.insert(model, prices);
        }
        if let Some(limits) = file.limits.take() {
            self.limits = Limits {
                max_cost_usd_per_turn: limits.max_cost_usd_per_turn,
                max_tokens_per_turn: limits.max_tokens_per_turn,
            };
        }
        if let Some(checkpoints) = file.checkpoints.take() {
            self.checkpoints = checkpoint_settings(checkpoints, path)?;
        }
        if let Some(servers) = file.mcp_servers.take() {
            self.mcp_servers = mcp_servers::server_specs(servers, Owner::Home, path)?;
        }
        let rules = wicket_gate::rules::checked(std::mem::take(&mut file.rules), "config")
            .map_err(|message| config_error(path, format!("[[rules]]: {message}")))?;
        let hooks = std::mem::take(&mut file.hooks)
            .checked(Owner::Home)
            .map_err(|message| config_error(path, message))?;
        self.hooks.extend(hooks);
        self.rules.extend(
            rules
                .into_iter()
                .map(|rule| (wicket_gate::rules::Source::HomeConfig, rule)),
        );
        self.apply_common(file);
        Ok(())
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

    fn apply_workspace(&mut self, mut file: FileConfig, path: &Path) {
        let mut ignore = |key: &str, why: &str, instead: &str| {
            self.notices.push(ConfigNotice {
                file: path.display().to_string(),
                key: Some(key.to_string()),
                message: format!("ignored {key} in {}: {why}. {instead}", path.display()),
            });
        };
        if let Some(model) = file.model.take() {
            ignore(
                "model",
                "a repository's config cannot choose the model (who receives your code, and what it costs)",
                &format!(
                    "To use it, pass --model {} or set model in $WICKET_HOME/config.toml",
                    wicket_protocol::text::visible_line(&model)
                ),
            );
        }
        if file.providers.take().is_some() {
            ignore(
                "[providers]",
                "a repository's config could send your API key to another host",
                "Set providers in $WICKET_HOME/config.toml",
            );
        }
        if file.checkpoints.take().is_some() {
            ignore(
                "[checkpoints]",
                "a repository's config could leave its own changes out of your checkpoints",
                "Set it in $WICKET_HOME/config.toml",
            );
        }
        if file.sandbox.take().is_some() {
            ignore(
                "[sandbox]",
                "a repository's config can never loosen (or change) the sandbox",
                "Set it in $WICKET_HOME/config.toml",
            );
        }
        for (key, present) in [
            ("[models]", file.models.take().is_some()),
            ("[prices]", file.prices.take().is_some()),
            ("[limits]", file.limits.take().is_some()),
        ] {
            if present {
                ignore(
                    key,
                    "it decides what you pay, so only your own config may set it",
                    "Set it in $WICKET_HOME/config.toml",
                );
            }
        }
        for dir in std::mem::take(&mut file.skill_dirs) {
            let escapes = dir.is_absolute()
                || dir
                    .components()
                    .any(|c| matches!(c, std::path::Component::ParentDir));
            if escapes {
                ignore(
                    "skill_dirs",
                    &format!(
                        "the entry '{}' is not a folder inside the workspace, given relative to it",
                        dir.display()
                    ),
                    "Give it relative to the workspace",
                );
                continue;
            }
            self.skill_dirs.push(SkillDir::Workspace(dir));
        }
        if let Some(servers) = file.mcp_servers.take() {
            match mcp_servers::server_specs(servers, Owner::Workspace, path) {
                Ok(specs) => {
                    for spec in specs {
                        if !self.mcp_servers.iter().any(|home| home.name == spec.name) {
                            self.mcp_servers.push(spec);
                        }
                    }
                }
                Err(error) => ignore(
                    "[mcp_servers]",
                    &error.to_string(),
                    "Fix the table, or declare the server in $WICKET_HOME/config.toml",
                ),
            }
        }
        match std::mem::take(&mut file.hooks).checked(Owner::Workspace) {
            Ok(hooks) => self.hooks.extend(hooks),
            Err(message) => ignore(
                "[hooks]",
                &message,
                "Fix the table; the workspace's hooks do not run until then",
            ),
        }
        match wicket_gate::rules::checked(std::mem::take(&mut file.rules), "workspace") {
            Ok(rules) => {
                for mut rule in rules {
                    // A repository names its rules in its own words: only
                    // as a marked, plain id (it reaches the model and the screen).
                    let plain: String = rule
                        .id
                        .chars()
                        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
                        .take(40)
                        .collect();
                    rule.id = format!("workspace:{plain}");
                    if rule.action == wicket_protocol::RuleAction::Allow {
                        ignore(
                            "[[rules]]",
                            &format!(
                                "rule {} would let calls skip their card, and a repository's config can only ask or deny",
                                rule.id
                            ),
                            "Put allow rules in $WICKET_HOME/config.toml or rules.toml",
                        );
                        continue;
                    }
                    self.rules
                        .push((wicket_gate::rules::Source::Workspace, rule));
                }
            }
            Err(message) => ignore(
                "[[rules]]",
                &message,
                "Fix the rule; the workspace's other rules are ignored until then",
            ),
        }
        self.apply_common(file);
    }

    /// The rules a gate decides with: these and `$WICKET_HOME/rules.toml`.
    pub fn gate_rules(&self, home: &Path) -> wicket_gate::rules::Rules {
        wicket_gate::rules::Rules::new(self.rules.clone(), home)
    }

    /// The keys both files may set.
    fn apply_common(&mut self, file: FileConfig) {
        if file.model.is_some() {
            self.model = file.model;
        }
        if let Some(limit) = file.step_limit {
            self.step_limit = limit.max(1);
        }
        if let Some(blocks) = file.max_stop_blocks {
            self.max_stop_blocks = blocks.max(1);
        }
        if let Some(chat) = file.chat {
            self.request_timeout_s = chat.request_timeout_s.or(self.request_timeout_s);
            self.idle_timeout_s = chat.idle_timeout_s.or(self.idle_timeout_s);
            self.max_attempts = chat.max_attempts.or(self.max_attempts);
            self.max_tokens = chat.max_tokens.or(self.max_tokens);
        }
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

/// `~/x` in a policy path is the person's home folder.
fn expand_home(path: &Path) -> PathBuf {
    match path.strip_prefix("~") {
        Ok(rest) => std::env::var_os("HOME")
            .map(PathBuf::from)
            .unwrap_or_default()
            .join(rest),
        Err(_) => path.to_path_buf(),
    }
}

/// An `[sandbox] key` entry with `~/` expanded, and where it really is; an
/// error naming the key unless it is an existing absolute path.
fn existing(path: &Path, key: &str, entry: &Path) -> Result<(PathBuf, PathBuf)> {
    let expanded = expand_home(entry);
    match std::fs::canonicalize(&expanded) {
        Ok(real) if expanded.is_absolute() => Ok((expanded, real)),
        _ => Err(config_error(
            path,
            format!(
                "[sandbox] {key} entry '{}' must be an existing absolute path (or start with ~/)",
                entry.display()
            ),
        )),
    }
}

/// Whether one path lies in the other.
fn overlaps(a: &Path, b: &Path) -> bool {
    a.starts_with(b) || b.starts_with(a)
}

fn checkpoint_settings(file: FileCheckpoints, path: &Path) -> Result<wicket_checkpoints::Settings> {
    let mut settings = wicket_checkpoints::Settings::default();
    for (key, value) in [
        ("keep_days", file.keep_days),
        ("max_file_mb", file.max_file_mb),
        ("max_files", file.max_files.map(|n| n as u64)),
        ("max_store_mb", file.max_store_mb),
    ] {
        if value == Some(0) {
            return Err(config_error(
                path,
                format!(
                    "[checkpoints] {key} = 0 would keep no checkpoint; give a number above 0, or leave it out for the default"
                ),
            ));
        }
    }
    settings.keep_days = file.keep_days.unwrap_or(settings.keep_days);
    settings.max_file_bytes = file
        .max_file_mb
        .map_or(settings.max_file_bytes, |mb| mb.saturating_mul(1024 * 1024));
    settings.max_files = file.max_files.unwrap_or(settings.max_files);
    settings.max_store_bytes = file.max_store_mb.map_or(settings.max_store_bytes, |mb| {
        mb.saturating_mul(1024 * 1024)
    });
    settings
        .with_ignore(file.ignore)
        .map_err(|error| config_error(path, error.to_string()))
}

fn sandbox_settings(file: FileSandbox, path: &Path) -> Result<SandboxSettings> {
    let mut settings = SandboxSettings::default();
    if let Some(mode) = file.mode {
        settings.mode = mode.into();
    }
    let home = path
        .parent()
        .and_then(|home| std::fs::canonicalize(home).ok());
    if let Some(deny_read) = file.deny_read {
        settings.deny_read = Vec::new();
        for entry in deny_read {
            settings
                .deny_read
                .push(existing(path, "deny_read", &entry)?.0);
        }
    }
    for entry in file.extra_write {
        let (expanded, real) = existing(path, "extra_write", &entry)?;
        if let Some(home) = home.as_deref().filter(|home| overlaps(&real, home)) {
            return Err(config_error(
                path,
                format!(
                    "[sandbox] extra_write entry '{}' would let a command write Wicket's own folder {} \
                     (its config, sessions and grants); choose a folder outside it",
                    entry.display(),
                    home.display()
                ),
            ));
        }
        settings.extra_write.push(expanded);
    }
    // What extra_read may not reach: Wicket's folder and the denied paths,
    // where they really are (resolved once, not per entry).
    let secrets: Vec<PathBuf> = home
        .iter()
        .cloned()
        .chain(
            settings
                .deny_read
                .iter()
                .map(|secret| std::fs::canonicalize(secret).unwrap_or_else(|_| secret.clone())),
        )
        .collect();
    for entry in file.extra_read {
        let (expanded, real) = existing(path, "extra_read", &entry)?;
        let hidden = secrets.iter().any(|secret| overlaps(&real, secret));
        if hidden {
            return Err(config_error(
                path,
                format!(
                    "[sandbox] extra_read entry '{}' would show a command what the sandbox hides \
                     ($WICKET_HOME or a deny_read path); choose a folder that holds neither",
                    entry.display()
                ),
            ));
        }
        settings.extra_read.push(expanded);
    }
    for name in file.env_pass.unwrap_or_default() {
        let valid = name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(config_error(
                path,
                format!(
                    "[sandbox] env_pass entry {name:?} is not a variable name; \
                     use names like \"GOPATH\" (letters, digits and _, not starting with a digit)"
                ),
            ));
        }
        settings.env_pass.push(name);
    }
    for (key, value, slot) in [
        (
            "max_processes",
            file.max_processes,
            &mut settings.max_processes,
        ),
        (
            "max_memory_mb",
            file.max_memory_mb,
            &mut settings.max_memory_mb,
        ),
    ] {
        match value {
            Some(0) => {
                return Err(config_error(
                    path,
                    format!(
                        "[sandbox] {key} = 0 would let no command run; give a number above 0, or leave it out for the default"
                    ),
                ));
            }
            Some(limit) => *slot = limit,
            None => {}
        }
    }
    if let Some(required) = file.required {
        settings.required = required;
    }
    Ok(settings)
}

#[cfg(test)]
mod tests;
