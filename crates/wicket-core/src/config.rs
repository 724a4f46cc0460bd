//! Configuration: `$WICKET_HOME/config.toml`, then `<workspace>/.wicket/config.toml`,
//! then flags and the environment, each layer over the one before. An unknown
//! key is an error naming the key and the file.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::error::{Error, Result};

/// The step limit when no config sets one: model replies per turn.
pub const DEFAULT_STEP_LIMIT: usize = 200;
/// Stop-hook blocks in a row that end a turn.
pub const DEFAULT_MAX_STOP_BLOCKS: usize = 3;
/// A Stop hook's timeout when its table gives none.
pub const DEFAULT_HOOK_TIMEOUT_S: u64 = 60;

/// One `[[hooks.stop]]` table.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StopHook {
    /// The argv, run with no shell, in the workspace.
    pub command: Vec<String>,
    pub timeout_s: Option<u64>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Hooks {
    #[serde(default)]
    stop: Vec<StopHook>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Provider {
    base_url: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Ollama {
    host: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Providers {
    openai: Option<Provider>,
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
}

/// The settings a session runs with, all layers applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub model: Option<String>,
    pub step_limit: usize,
    pub max_stop_blocks: usize,
    /// Extra skill folders, searched after the standard ones.
    pub skill_dirs: Vec<PathBuf>,
    pub stop_hooks: Vec<StopHook>,
    pub openai_base_url: Option<String>,
    pub anthropic_base_url: Option<String>,
    pub ollama_host: Option<String>,
    pub request_timeout_s: Option<u64>,
    pub idle_timeout_s: Option<u64>,
    pub max_attempts: Option<u32>,
    pub max_tokens: Option<u32>,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            model: None,
            step_limit: DEFAULT_STEP_LIMIT,
            max_stop_blocks: DEFAULT_MAX_STOP_BLOCKS,
            skill_dirs: Vec::new(),
            stop_hooks: Vec::new(),
            openai_base_url: None,
            anthropic_base_url: None,
            ollama_host: None,
            request_timeout_s: None,
            idle_timeout_s: None,
            max_attempts: None,
            max_tokens: None,
        }
    }
}

fn read_file(path: &Path) -> Result<Option<FileConfig>> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => {
            return Err(Error::Config {
                path: path.display().to_string(),
                message: error.to_string(),
            });
        }
    };
    toml::from_str(&text)
        .map(Some)
        .map_err(|error| Error::Config {
            path: path.display().to_string(),
            message: error.to_string().trim_end().to_string(),
        })
}

impl Config {
    /// The home config, then the workspace's. The workspace's may not name
    /// provider URLs: a repository could otherwise send your API key elsewhere.
    pub fn load(home: &Path, workspace: &Path) -> Result<Config> {
        let mut config = Config::default();
        if let Some(file) = read_file(&home.join("config.toml"))? {
            config.apply(file, home);
        }
        let local = workspace.join(".wicket").join("config.toml");
        if let Some(file) = read_file(&local)? {
            if file.providers.is_some() {
                return Err(Error::Config {
                    path: local.display().to_string(),
                    message: "[providers] may be set only in $WICKET_HOME/config.toml: a workspace's config could send your API key to another host".into(),
                });
            }
            config.apply(file, workspace);
        }
        Ok(config)
    }

    /// Lays one file over this config; relative skill folders are relative to `base`.
    fn apply(&mut self, file: FileConfig, base: &Path) {
        if file.model.is_some() {
            self.model = file.model;
        }
        if let Some(limit) = file.step_limit {
            self.step_limit = limit.max(1);
        }
        if let Some(blocks) = file.max_stop_blocks {
            self.max_stop_blocks = blocks.max(1);
        }
        self.skill_dirs
            .extend(file.skill_dirs.into_iter().map(|dir| base.join(dir)));
        self.stop_hooks.extend(file.hooks.stop);
        if let Some(providers) = file.providers {
            if let Some(url) = providers.openai.and_then(|p| p.base_url) {
                self.openai_base_url = Some(url);
            }
            if let Some(url) = providers.anthropic.and_then(|p| p.base_url) {
                self.anthropic_base_url = Some(url);
            }
            if let Some(host) = providers.ollama.and_then(|p| p.host) {
                self.ollama_host = Some(host);
            }
        }
        if let Some(chat) = file.chat {
            self.request_timeout_s = chat.request_timeout_s.or(self.request_timeout_s);
            self.idle_timeout_s = chat.idle_timeout_s.or(self.idle_timeout_s);
            self.max_attempts = chat.max_attempts.or(self.max_attempts);
            self.max_tokens = chat.max_tokens.or(self.max_tokens);
        }
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
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        if let Some(parent) = path.parent() {
            let _ = std::fs::create_dir_all(parent);
        }
        let _ = std::fs::write(path, text);
    }

    #[test]
    fn layers_apply_in_order_and_hooks_add_up() -> Result<()> {
        let dir = tempfile::tempdir().map_err(|e| Error::Other(e.to_string()))?;
        let (home, ws) = (dir.path().join("home"), dir.path().join("ws"));
        write(
            &home.join("config.toml"),
            r#"
model = "openai:gpt-4o"
step_limit = 10
[providers.openai]
base_url = "http://127.0.0.1:9/v1"
[[hooks.stop]]
command = ["make", "check"]
"#,
        );
        write(
            &ws.join(".wicket/config.toml"),
            r#"
model = "anthropic:claude-sonnet-4-5"
skill_dirs = ["more-skills"]
[[hooks.stop]]
command = ["cargo", "test"]
timeout_s = 300
"#,
        );
        let config = Config::load(&home, &ws)?;
        assert_eq!(config.model.as_deref(), Some("anthropic:claude-sonnet-4-5"));
        assert_eq!(config.step_limit, 10);
        assert_eq!(
            config.openai_base_url.as_deref(),
            Some("http://127.0.0.1:9/v1")
        );
        assert_eq!(config.skill_dirs, vec![ws.join("more-skills")]);
        assert_eq!(
            config.stop_hooks,
            vec![
                StopHook {
                    command: vec!["make".into(), "check".into()],
                    timeout_s: None
                },
                StopHook {
                    command: vec!["cargo".into(), "test".into()],
                    timeout_s: Some(300)
                },
            ]
        );
        Ok(())
    }

    #[test]
    fn an_unknown_key_names_the_key_and_the_file() {
        let dir = tempfile::tempdir().ok();
        let Some(dir) = dir else { return };
        let home = dir.path().to_path_buf();
        write(&home.join("config.toml"), "modle = \"openai:gpt-4o\"\n");
        let error = Config::load(&home, dir.path()).err().map(|e| e.to_string());
        let error = error.unwrap_or_default();
        assert!(error.contains("modle"), "{error}");
        assert!(error.contains("config.toml"), "{error}");
        write(
            &home.join("config.toml"),
            "[[hooks.stop]]\ncommand = [\"x\"]\ntimeout = 3\n",
        );
        let error = Config::load(&home, dir.path()).err().map(|e| e.to_string());
        assert!(error.unwrap_or_default().contains("timeout"));
    }

    #[test]
    fn a_workspace_may_not_redirect_providers() {
        let dir = tempfile::tempdir().ok();
        let Some(dir) = dir else { return };
        let ws = dir.path().join("ws");
        write(
            &ws.join(".wicket/config.toml"),
            "[providers.openai]\nbase_url = \"https://elsewhere.example\"\n",
        );
        let error = Config::load(&dir.path().join("home"), &ws)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(error.contains("API key"), "{error}");
    }
}
