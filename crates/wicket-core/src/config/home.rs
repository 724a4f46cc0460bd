//! The keys only a trusted file may set ([`HomeKeys`]), checked and
//! applied: a mistake in them stops Wicket, naming the key and the file.

use std::path::{Path, PathBuf};

use wicket_gate::sandbox::overlaps;

use super::file::{FileCheckpoints, FilePrices, FileSandbox, HomeKeys, Providers};
use super::{Config, Limits, config_error};
use crate::error::Result;
use crate::models::Prices;
use wicket_gate::sandbox::SandboxSettings;

impl Config {
    /// Every key of `keys`, over what the layers before set.
    pub(super) fn apply_home_keys(&mut self, keys: HomeKeys, path: &Path) -> Result<()> {
        // Named whole, not with `..`: a new key does not compile until it is
        // applied here.
        let HomeKeys {
            model,
            providers,
            sandbox,
            models,
            prices,
            limits,
            checkpoints,
            telemetry,
        } = keys;
        if model.is_some() {
            self.model = model;
        }
        if let Some(providers) = providers {
            self.apply_providers(providers);
        }
        if let Some(sandbox) = sandbox {
            self.sandbox = sandbox_settings(sandbox, path)?;
        }
        for (model, entry) in models.unwrap_or_default() {
            // A window of 0, or past any real model's (2^63 would overflow
            // the compaction threshold), is not a window: the model's is unknown.
            let window = entry.context_window.filter(|window| {
                (1..=wicket_protocol::limits::CONTEXT_WINDOW_MAX_TOKENS).contains(window)
            });
            self.models.insert(model, (window, entry.max_output_tokens));
        }
        for (model, entry) in prices.unwrap_or_default() {
            let prices = checked_prices(&model, entry, path)?;
            self.prices.insert(model, prices);
        }
        if let Some(limits) = limits {
            if limits.max_tasks == Some(0) {
                return Err(config_error(
                    path,
                    "[limits] max_tasks = 0 would let no sub-task run; give 1 or more (the \
                     default is 4)",
                ));
            }
            self.limits = Limits {
                max_cost_usd_per_turn: limits.max_cost_usd_per_turn,
                max_tokens_per_turn: limits.max_tokens_per_turn,
                max_tasks: limits.max_tasks,
            };
        }
        if let Some(checkpoints) = checkpoints {
            self.checkpoints = checkpoint_settings(checkpoints, path)?;
        }
        if let Some(telemetry) = telemetry {
            if let Some(endpoint) = telemetry.otlp_endpoint {
                self.telemetry.endpoint = Some(endpoint);
            }
            if let Some(log_content) = telemetry.log_content {
                self.telemetry.log_content = log_content;
            }
        }
        Ok(())
    }

    fn apply_providers(&mut self, providers: Providers) {
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
}

/// A `[prices."P:N"]` table, the cache prices defaulting to the input's;
/// an error unless every price is a finite number, 0 or more.
fn checked_prices(model: &str, entry: FilePrices, path: &Path) -> Result<Prices> {
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
            format!("[prices.\"{model}\"] prices must be USD per million tokens, 0 or more"),
        ));
    }
    Ok(prices)
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
    settings.extra_read = extra_read(file.extra_read, &settings.denied(), home.as_deref(), path)?;
    if let Some(entries) = file.home_read {
        settings.home_read = home_read(entries, path)?;
    }
    settings
        .env_pass
        .extend(env_pass(file.env_pass.unwrap_or_default(), path)?);
    process_limits(
        [
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
            (
                "preview_max_mb",
                file.preview_max_mb,
                &mut settings.preview_max_mb,
            ),
        ],
        path,
    )?;
    if let Some(required) = file.required {
        settings.required = required;
    }
    Ok(settings)
}

/// `[sandbox] extra_read`: each entry as written, refused when it would
/// show Wicket's own folder (`home`) or a `deny_read` path.
fn extra_read(
    entries: Vec<PathBuf>,
    deny_read: &[PathBuf],
    home: Option<&Path>,
    path: &Path,
) -> Result<Vec<PathBuf>> {
    // What extra_read may not reach: Wicket's folder and the denied paths,
    // where they really are (resolved once, not per entry).
    let secrets: Vec<PathBuf> = home
        .map(Path::to_path_buf)
        .into_iter()
        .chain(
            deny_read
                .iter()
                .map(|secret| std::fs::canonicalize(secret).unwrap_or_else(|_| secret.clone())),
        )
        .collect();
    let mut shown = Vec::new();
    for entry in entries {
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
        shown.push(expanded);
    }
    Ok(shown)
}

/// `[sandbox] home_read`: `~/…` (that place in every home folder) or an
/// absolute path; it replaces the default list.
pub(super) fn home_read(entries: Vec<String>, path: &Path) -> Result<Vec<PathBuf>> {
    entries
        .into_iter()
        .map(|entry| {
            if entry == "~" {
                return Ok(PathBuf::new());
            }
            match entry.strip_prefix("~/") {
                Some(rest) if !rest.is_empty() => Ok(PathBuf::from(rest)),
                _ if entry.starts_with('/') => Ok(PathBuf::from(entry)),
                _ => Err(config_error(
                    path,
                    format!(
                        "[sandbox] home_read entry '{entry}' must start with ~/ (that place in every \
                         home folder, e.g. \"~/.cargo\") or be an absolute path"
                    ),
                )),
            }
        })
        .collect()
}

/// `[sandbox] env_pass`: each a variable's name.
fn env_pass(names: Vec<String>, path: &Path) -> Result<Vec<String>> {
    let mut passed = Vec::new();
    for name in names {
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
        passed.push(name);
    }
    Ok(passed)
}

/// `[sandbox] max_processes`, `max_memory_mb` and `preview_max_mb`:
/// above 0 where given.
fn process_limits(given: [(&str, Option<u64>, &mut u64); 3], path: &Path) -> Result<()> {
    for (key, value, slot) in given {
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
    Ok(())
}
