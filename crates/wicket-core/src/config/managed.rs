//! The managed policy: `/etc/wicket/managed.toml`, and the file
//! `WICKET_MANAGED_CONFIG` names (added to it, never read instead of it).
//! An administrator's floor no person or repository can lower:
//! - its `[[rules]]` come before every other rule, and no answer, grant,
//!   hook or config overrides them (the gate checks every deny first, and
//!   an ask before any hook's allow or grant);
//! - `[sandbox] forbid_modes`, `forbid_direct_network`, `allow_always =
//!   false`, `home_read` (replacing the person's list) and `required`;
//! - `allowed_mcp_servers` (by name, and command or url) and
//!   `allowed_hooks` (by command): only those start.
//!
//! A managed file must be owned by root and writable by no one else, or
//! Wicket stops with an error naming it: a floor that cannot be trusted is
//! never skipped. A person's config that tries to loosen it gets a notice
//! naming both files, never an error.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use wicket_gate::rules::Source;
use wicket_protocol::card::SandboxMode;

use super::file::FileMode;
use super::{Config, ConfigNotice, config_error};
use crate::error::Result;

/// Where an administrator puts the policy.
pub const MANAGED_FILE: &str = "/etc/wicket/managed.toml";

/// A variable naming one more managed file (read after [`MANAGED_FILE`]).
pub const MANAGED_ENV: &str = "WICKET_MANAGED_CONFIG";

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ManagedFile {
    #[serde(default)]
    rules: Vec<wicket_protocol::RuleSpec>,
    #[serde(default)]
    sandbox: ManagedSandbox,
    allowed_mcp_servers: Option<Vec<AllowedServer>>,
    allowed_hooks: Option<Vec<AllowedHook>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ManagedSandbox {
    #[serde(default)]
    forbid_modes: Vec<FileMode>,
    #[serde(default)]
    forbid_direct_network: bool,
    allow_always: Option<bool>,
    home_read: Option<Vec<String>>,
    #[serde(default)]
    required: bool,
}

/// An MCP server the policy lets start: its name, and its command or url
/// when given (the server must match both).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AllowedServer {
    /// Its name in the config.
    pub name: String,
    /// Its command (the argv's first word), when the policy names one.
    pub command: Option<String>,
    /// Its url, when the policy names one.
    pub url: Option<String>,
}

/// A hook the policy lets run: its exact argv.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AllowedHook {
    /// The argv, as the config writes it.
    pub command: Vec<String>,
}

/// The managed policy in force (empty when there is none).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Managed {
    /// The files it was read from.
    pub files: Vec<PathBuf>,
    /// Its rules, checked, each with the file it came from.
    pub rules: Vec<(PathBuf, wicket_protocol::Rule)>,
    /// Sandbox modes no config may choose.
    pub forbid_modes: Vec<SandboxMode>,
    /// No command may ask for the machine's own network.
    pub forbid_direct_network: bool,
    /// No card offers allow_always.
    pub no_allow_always: bool,
    /// What commands see of the home folders, replacing the person's list.
    pub home_read: Option<Vec<PathBuf>>,
    /// A command that cannot be confined is refused.
    pub required: bool,
    /// Only these MCP servers start (`None`: the policy says nothing).
    pub allowed_mcp_servers: Option<Vec<AllowedServer>>,
    /// Only these hooks run (`None`: the policy says nothing).
    pub allowed_hooks: Option<Vec<AllowedHook>>,
}

/// The managed files there are: [`MANAGED_FILE`], then `$WICKET_MANAGED_CONFIG`.
fn managed_files() -> Vec<PathBuf> {
    let mut files = vec![PathBuf::from(MANAGED_FILE)];
    if let Some(extra) = std::env::var_os(MANAGED_ENV).filter(|extra| !extra.is_empty()) {
        files.push(PathBuf::from(extra));
    }
    files
}

/// A managed file must be root's and writable by no one else.
fn trusted(path: &Path, metadata: &std::fs::Metadata) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    if !metadata.is_file() {
        return Err(config_error(
            path,
            "the managed policy is not a regular file; Wicket does not run under a policy it cannot read",
        ));
    }
    let writable_by_others = metadata.mode() & 0o022 != 0;
    if metadata.uid() != 0 || writable_by_others {
        let shown = path.display();
        return Err(config_error(
            path,
            format!(
                "the managed policy must be owned by root and writable by no one else (it is owned by \
                 uid {} with mode {:o}); Wicket does not run under a floor anyone could lower. Run \
                 `chown root:root {shown}` and `chmod 644 {shown}`",
                metadata.uid(),
                metadata.mode() & 0o7777,
            ),
        ));
    }
    Ok(())
}

impl Managed {
    /// The policy of every managed file there is; an untrusted or wrong one
    /// stops Wicket with an error naming it.
    pub fn load() -> Result<Managed> {
        let mut managed = Managed::default();
        for path in managed_files() {
            let metadata = match std::fs::metadata(&path) {
                Ok(metadata) => metadata,
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => continue,
                Err(error) => return Err(config_error(&path, error.to_string())),
            };
            trusted(&path, &metadata)?;
            let bytes = wicket_os::files::read_regular(&path, super::CONFIG_MAX_BYTES)
                .map_err(|error| config_error(&path, error.to_string()))?
                .unwrap_or_default();
            let text =
                String::from_utf8(bytes).map_err(|_| config_error(&path, "it is not UTF-8"))?;
            let file: ManagedFile = toml::from_str(&text)
                .map_err(|error| config_error(&path, error.to_string().trim_end()))?;
            managed.add(&path, file)?;
        }
        Ok(managed)
    }

    /// One file's policy over the ones before: every floor is the stricter.
    fn add(&mut self, path: &Path, file: ManagedFile) -> Result<()> {
        let number = self.files.len() + 1;
        let rules = wicket_gate::rules::checked(file.rules, &format!("managed{number}"))
            .map_err(|message| config_error(path, format!("[[rules]]: {message}")))?;
        self.rules.extend(rules.into_iter().map(|mut rule| {
            rule.id = format!("managed:{}", rule.id).into();
            (path.to_path_buf(), rule)
        }));
        let sandbox = file.sandbox;
        for mode in sandbox.forbid_modes {
            let mode = SandboxMode::from(mode);
            if !self.forbid_modes.contains(&mode) {
                self.forbid_modes.push(mode);
            }
        }
        self.forbid_direct_network |= sandbox.forbid_direct_network;
        // Mode "off" runs every command with the host's network, around
        // Wicket's proxy: the direct network under another name.
        if self.forbid_direct_network && !self.forbid_modes.contains(&SandboxMode::Off) {
            self.forbid_modes.push(SandboxMode::Off);
        }
        self.no_allow_always |= sandbox.allow_always == Some(false);
        self.required |= sandbox.required;
        if let Some(entries) = sandbox.home_read {
            self.home_read = Some(super::home::home_read(entries, path)?);
        }
        if let Some(servers) = file.allowed_mcp_servers {
            self.allowed_mcp_servers = Some(match self.allowed_mcp_servers.take() {
                // Two lists: only what both allow.
                Some(before) => before
                    .into_iter()
                    .filter(|server| servers.contains(server))
                    .collect(),
                None => servers,
            });
        }
        if let Some(hooks) = file.allowed_hooks {
            self.allowed_hooks = Some(match self.allowed_hooks.take() {
                Some(before) => before
                    .into_iter()
                    .filter(|hook| hooks.contains(hook))
                    .collect(),
                None => hooks,
            });
        }
        self.files.push(path.to_path_buf());
        Ok(())
    }

    /// Holds `servers` to the policy: only those `allowed_mcp_servers`
    /// lists are kept, and one that would reach the network directly goes
    /// through Wicket's proxy under `forbid_direct_network`; a notice for
    /// each. The config's servers and those an editor adds (ACP) alike.
    pub fn admit_servers(&self, servers: &mut Vec<wicket_mcp::ServerSpec>) -> Vec<ConfigNotice> {
        if self.files.is_empty() {
            return Vec::new();
        }
        let policy = self.named();
        let mut notices = Vec::new();
        servers.retain_mut(|server| {
            let (command, url) = match &server.transport {
                wicket_mcp::Transport::Stdio { argv, .. } => (argv.first().cloned(), None),
                wicket_mcp::Transport::Http { url, .. } => (None, Some(url.to_string())),
            };
            let allowed = self.allowed_mcp_servers.as_ref().is_none_or(|allowed| {
                allowed.iter().any(|entry| {
                    entry.name == server.name
                        && entry.command.as_ref().is_none_or(|wanted| Some(wanted) == command.as_ref())
                        && entry.url.as_ref().is_none_or(|wanted| Some(wanted) == url.as_ref())
                })
            });
            if !allowed {
                notices.push(format!(
                    "the MCP server {} does not start: the managed policy {policy} does not list it in \
                     allowed_mcp_servers",
                    server.name
                ));
                return false;
            }
            if let wicket_mcp::Transport::Stdio { network, .. } = &mut server.transport
                && *network == wicket_protocol::Network::Direct
                && self.forbid_direct_network
            {
                *network = wicket_protocol::Network::Proxied;
                notices.push(format!(
                    "the MCP server {} reaches the network through Wicket's proxy, not directly: the \
                     managed policy {policy} sets forbid_direct_network",
                    server.name
                ));
            }
            true
        });
        notices
            .into_iter()
            .map(|message| ConfigNotice {
                file: policy.clone(),
                key: Some("allowed_mcp_servers".into()),
                message,
            })
            .collect()
    }

    /// The files, for a message.
    pub fn named(&self) -> String {
        wicket_gate::sandbox::named(&self.files)
    }
}

impl Config {
    /// The managed policy over everything the other layers set: its rules
    /// first, and each floor held, with a notice naming both files where
    /// a person's or a repository's config asked for less.
    pub(super) fn apply_managed(&mut self, managed: &Managed, home: &Path) {
        if managed.files.is_empty() {
            return;
        }
        let policy = managed.named();
        let person = home.join("config.toml").display().to_string();
        let mut rules: Vec<(Source, wicket_protocol::Rule)> = managed
            .rules
            .iter()
            .map(|(_, rule)| (Source::Managed, rule.clone()))
            .collect();
        rules.append(&mut self.rules);
        self.rules = rules;
        let sandbox = &mut self.sandbox;
        if managed.forbid_modes.contains(&sandbox.mode) {
            let chosen = sandbox.mode;
            let instead = [SandboxMode::WorkspaceWrite, SandboxMode::ReadOnly]
                .into_iter()
                .find(|mode| !managed.forbid_modes.contains(mode))
                .unwrap_or(SandboxMode::ReadOnly);
            sandbox.mode = instead;
            self.notices.push(ConfigNotice {
                file: person.clone(),
                key: Some("[sandbox] mode".into()),
                message: format!(
                    "ignored [sandbox] mode = \"{}\" in {person}: the managed policy {policy} forbids it; \
                     commands run {}",
                    chosen.as_str(),
                    instead.as_str()
                ),
            });
        }
        let sandbox = &mut self.sandbox;
        sandbox.required |= managed.required;
        if let Some(home_read) = &managed.home_read {
            sandbox.home_read = home_read.clone();
        }
        sandbox.floor = wicket_gate::sandbox::Floor {
            files: managed.files.clone(),
            forbid_direct_network: managed.forbid_direct_network,
            no_allow_always: managed.no_allow_always,
        };
        self.hold_servers(managed);
        self.hold_hooks(managed, &policy);
    }

    /// Only the MCP servers the policy lists start; a server whose own
    /// network the policy forbids goes through Wicket's proxy.
    fn hold_servers(&mut self, managed: &Managed) {
        let notices = managed.admit_servers(&mut self.mcp_servers);
        self.notices.extend(notices);
    }

    /// Only the hooks the policy lists run.
    fn hold_hooks(&mut self, managed: &Managed, policy: &str) {
        let Some(allowed) = &managed.allowed_hooks else {
            return;
        };
        let mut dropped = Vec::new();
        self.hooks.retain(|hook| {
            let listed = allowed.iter().any(|entry| entry.command == hook.command);
            if !listed {
                dropped.push(hook.name.clone());
            }
            listed
        });
        for name in dropped {
            self.notices.push(ConfigNotice {
                file: policy.to_string(),
                key: Some("allowed_hooks".into()),
                message: format!(
                    "the hook {name} does not run: the managed policy {policy} does not list its command \
                     in allowed_hooks"
                ),
            });
        }
    }
}
