//! The sandbox a command runs in, as the person's home config sets it
//! (`[sandbox]`), stated on every run card and handed to the spawning
//! module as a [`Confine`]. A command that cannot be confined is never
//! started unconfined silently: its card says so, and with `required` it
//! is refused.

use std::path::{Path, PathBuf};

use wicket_os::launch::{Availability, Policy, ResourceLimits, availability, half_the_memory_mb};
use wicket_os::spawn::{Confine, PASSED_ENV};
pub use wicket_protocol::SandboxMode;
use wicket_protocol::{ErrorKind, Network, SandboxSummary, WireError};

/// `[sandbox]` of the home config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxSettings {
    /// `workspace-write` (the default), `read-only` or `off`.
    pub mode: SandboxMode,
    /// Paths a command may not read, besides `$WICKET_HOME`.
    pub deny_read: Vec<PathBuf>,
    /// Paths a command may write besides the workspace and its TMPDIR.
    pub extra_write: Vec<PathBuf>,
    /// Paths shown read-only even under the jail's private `/tmp` or `/run`.
    pub extra_read: Vec<PathBuf>,
    /// What a command sees of the home folders: each relative entry
    /// (`~/.cargo` as written) in every home, each absolute one as it is.
    pub home_read: Vec<PathBuf>,
    /// Refuse a command that cannot be confined.
    pub required: bool,
    /// Variables of Wicket's environment a command gets besides the allowlist.
    pub env_pass: Vec<String>,
    /// Processes a command may have at once.
    pub max_processes: u64,
    /// Memory a command may use, in MiB.
    pub max_memory_mb: u64,
    /// How much a preview may write into its layer, in MiB: past it the
    /// command is stopped and its effects card says so.
    pub preview_max_mb: u64,
    /// What a managed policy holds beyond these settings.
    pub floor: Floor,
}

/// What a managed policy (`/etc/wicket/managed.toml`) holds the gate to,
/// beyond the sandbox's settings, which no other config can lower.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Floor {
    /// The managed files: every command sees them read-only, and a refusal names them.
    pub files: Vec<PathBuf>,
    /// No command may ask for the machine's own network (`"network": "direct"`).
    pub forbid_direct_network: bool,
    /// No card offers `allow_always`.
    pub no_allow_always: bool,
}

impl Floor {
    /// The managed files, for a message: `/etc/wicket/managed.toml`.
    pub fn named(&self) -> String {
        named(&self.files)
    }
}

/// Files for a message: `/etc/wicket/managed.toml and /tmp/more.toml`.
pub fn named(files: &[PathBuf]) -> String {
    let names: Vec<String> = files
        .iter()
        .map(|file| file.display().to_string())
        .collect();
    names.join(" and ")
}

/// The default `[sandbox] preview_max_mb`: 1 GiB.
pub const DEFAULT_PREVIEW_MAX_MB: u64 = 1024;

/// The default `[sandbox] max_processes`.
pub const DEFAULT_MAX_PROCESSES: u64 = 1024;

/// What one command may ask for beyond the defaults, as its card shows it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Access {
    /// The network: none, through Wicket, or direct.
    pub network: Network,
    /// A writable `.git` (commits, branches, hooks, config).
    pub git: bool,
    /// Paths shown read-only besides the toolchains (a call's `read`, an
    /// MCP server's `read`), where they really are.
    pub read: Vec<PathBuf>,
}

/// The credential stores of a home, relative to it: hidden from every
/// command in every home (`/root`, each of `/home`, `$HOME`), inside the
/// toolchains a command sees (`~/.cargo/credentials.toml` in `~/.cargo`)
/// and inside the workspace where a home lies there. A person's
/// `deny_read` adds to these; nothing takes one away. Exact paths, as
/// each tool names its own (cargo's `credentials*` is its two names).
pub const DEFAULT_DENY_READ: [&str; 39] = [
    // Keys and cloud logins.
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".kube",
    ".docker/config.json",
    ".config/gcloud",
    ".config/gh",
    ".config/hub",
    ".netrc",
    // Git's credential stores (credential.helper store).
    ".git-credentials",
    ".config/git/credentials",
    // Package registries' tokens.
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".npmrc",
    ".yarnrc",
    ".pypirc",
    ".gem/credentials",
    ".m2/settings.xml",
    ".m2/settings-security.xml",
    ".gradle/gradle.properties",
    ".cache/huggingface/token",
    ".cache/huggingface/stored_tokens",
    ".huggingface/token",
    ".config/composer/auth.json",
    ".composer/auth.json",
    ".terraform.d/credentials.tfrc.json",
    // Shell and REPL histories: what was typed, passwords included.
    ".bash_history",
    ".zsh_history",
    ".sh_history",
    ".history",
    ".python_history",
    ".node_repl_history",
    ".psql_history",
    ".mysql_history",
    ".sqlite_history",
    ".lesshst",
    ".local/share/fish/fish_history",
    ".config/fish/fish_history",
];

/// Every home's credential files and folders ([`DEFAULT_DENY_READ`]) that
/// exist, where they are: `homes` is [`all_homes`], those in the workspace
/// included.
pub fn known_secrets(homes: &[PathBuf]) -> Vec<PathBuf> {
    homes
        .iter()
        .flat_map(|home| {
            DEFAULT_DENY_READ
                .iter()
                .map(move |secret| home.join(secret))
        })
        .filter(|path| std::fs::symlink_metadata(path).is_ok())
        .collect()
}

/// The toolchains of every home a command sees (`[sandbox] home_read`'s
/// default): where compilers, package managers and their caches live, and
/// git's own config. The rest of every home is an empty folder.
pub const DEFAULT_HOME_READ: [&str; 19] = [
    ".cargo",
    ".rustup",
    ".npm",
    ".nvm",
    ".volta",
    ".bun",
    ".deno",
    ".pyenv",
    ".local/bin",
    ".local/lib",
    ".cache",
    ".gitconfig",
    ".config/git",
    "go",
    ".m2",
    ".gradle",
    ".rbenv",
    ".gem",
    ".sdkman",
];

impl Default for SandboxSettings {
    fn default() -> SandboxSettings {
        SandboxSettings {
            mode: SandboxMode::WorkspaceWrite,
            deny_read: Vec::new(),
            extra_write: Vec::new(),
            extra_read: Vec::new(),
            home_read: DEFAULT_HOME_READ.iter().map(PathBuf::from).collect(),
            required: false,
            env_pass: Vec::new(),
            max_processes: DEFAULT_MAX_PROCESSES,
            max_memory_mb: half_the_memory_mb(),
            preview_max_mb: DEFAULT_PREVIEW_MAX_MB,
            floor: Floor::default(),
        }
    }
}

impl SandboxSettings {
    /// What a card says about a command with `access` in `workspace`, on
    /// this kernel.
    pub fn summary(&self, workspace: &Path, access: &Access) -> SandboxSummary {
        self.summary_with(availability(), workspace, access)
    }

    /// [`SandboxSettings::summary`] for a kernel that can do `available`.
    pub fn summary_with(
        &self,
        available: &Availability,
        workspace: &Path,
        access: &Access,
    ) -> SandboxSummary {
        let routed = routed(available, access);
        let access = &routed;
        match self.mode {
            SandboxMode::Off => SandboxSummary {
                mode: SandboxMode::Off,
                network: true,
                layers: self.hygiene(available),
                note: Some("the sandbox is off in your config: the command runs unconfined".into()),
                summary: "no jail: the sandbox is off in your config".into(),
                complete: false,
            },
            // With `required`, a layer the kernel cannot give is as good
            // as no sandbox: the command does not start without all of them.
            SandboxMode::WorkspaceWrite | SandboxMode::ReadOnly => match available
                .missing()
                .or_else(|| available.note().filter(|_| self.required))
            {
                None => SandboxSummary {
                    mode: self.mode,
                    network: access.network.any(),
                    layers: self.layers(available, access),
                    note: available.note(),
                    summary: self.line(workspace, access),
                    complete: available.note().is_none(),
                },
                Some(why) => SandboxSummary {
                    mode: SandboxMode::Unavailable,
                    network: true,
                    layers: self.hygiene(available),
                    note: Some(if self.required {
                        format!("{why}; [sandbox] required is set, so it will not run")
                    } else {
                        format!("{why}: the command would run unconfined, with your full access")
                    }),
                    summary: "no jail: this machine cannot confine the command".into(),
                    complete: false,
                },
            },
            SandboxMode::Unavailable => SandboxSummary {
                mode: SandboxMode::Unavailable,
                network: true,
                layers: self.hygiene(available),
                note: None,
                summary: "no jail: this machine cannot confine the command".into(),
                complete: false,
            },
        }
    }

    /// What the system prompt says of the sandbox, on this kernel: one
    /// sentence, true in every mode.
    pub fn prompt_sentence(&self) -> String {
        self.prompt_sentence_with(availability())
    }

    /// [`SandboxSettings::prompt_sentence`] for a kernel that can do `available`.
    pub fn prompt_sentence_with(&self, available: &Availability) -> String {
        let jailed = match self
            .summary_with(available, Path::new("/"), &Access::default())
            .mode
        {
            SandboxMode::Off => {
                return "The sandbox is off: commands run with the person's own access to \
                        files and network."
                    .into();
            }
            SandboxMode::Unavailable => {
                return "This machine cannot confine commands: they run with the person's own \
                        access to files and network."
                    .into();
            }
            SandboxMode::ReadOnly => "Each runs in a jail that writes nothing",
            SandboxMode::WorkspaceWrite => "Each runs in a jail that writes only the workspace",
        };
        let tmp = match available.mounts {
            true => " and a private /tmp that is gone when the command ends",
            false => "",
        };
        format!(
            "{jailed}{tmp}. .git is read-only unless you set \"git\": true; there is no network \
             unless you set \"network\": true (the person then approves each host); of the home \
             folders it sees only the toolchains unless you list paths in \"read\"."
        )
    }

    /// The card's one line for a jailed command: what it may reach, and
    /// what the call adds (`sandbox.summary`).
    fn line(&self, workspace: &Path, access: &Access) -> String {
        let network = match access.network {
            Network::Off => "no network",
            Network::Proxied => "network through Wicket, host by host",
            Network::Direct => "direct network: any host, not through Wicket",
        };
        let writes = match (self.mode, access.git) {
            (SandboxMode::ReadOnly, _) => "writes nothing but its /tmp",
            (_, false) => "writes only the workspace",
            (_, true) => "writes only the workspace, .git too",
        };
        let mut line = format!("jail: {network} · {writes} · {}", homes_line(workspace));
        if let Some(read) = read_list(access) {
            line.push_str(&format!(" · also reads: {read}"));
        }
        line
    }

    /// The environment line every command's card carries.
    fn environment(&self) -> String {
        let mut names: Vec<&str> = PASSED_ENV.to_vec();
        names.push("LC_*");
        names.extend(self.env_pass.iter().map(String::as_str));
        format!(
            "its own session: no terminal, no descriptor of Wicket's, and only {} from your environment",
            names.join(" ")
        )
    }

    /// What an unconfined command still gets.
    fn hygiene(&self, available: &Availability) -> Vec<String> {
        let mut layers = vec![self.environment()];
        if available.mounts {
            layers.push(
                "$WICKET_HOME read-only, the known credential stores (~/.ssh, ~/.aws, registry \
                 tokens, shell histories …) and the deny_read paths hidden (in a user namespace: \
                 sudo and other setuid programs do not work)"
                    .into(),
            );
        } else {
            layers.push(
                "nothing hidden: this machine cannot make a mount namespace, so the command can \
                 read your credential stores"
                    .into(),
            );
        }
        layers
    }

    /// Each layer in force, in words a person understands.
    fn layers(&self, available: &Availability, access: &Access) -> Vec<String> {
        let mut layers = vec![self.environment()];
        if available.jail_tree() {
            let workspace = match (self.mode, access.git) {
                (SandboxMode::ReadOnly, _) => "the workspace read-only",
                (_, false) => {
                    "the workspace writable except every .git and .wicket at any depth (and the \
                     git folders, hooks folders and config they name; one it makes is removed after it)"
                }
                (_, true) => "the workspace writable, .git too; every .wicket read-only",
            };
            layers.push(format!(
                "mount namespace: the system read-only, {workspace}, private /tmp, /run and /dev/shm \
                 (sized within the memory limit), a /dev with only null, zero, full, random and \
                 urandom (read-only nodes), its own /proc, $WICKET_HOME, the known credential stores and the deny_read paths hidden, \
                 every home folder empty but its toolchains (home_read){}",
                also_reads(access)
            ));
        }
        if let Some(abi) = available.landlock_abi {
            let tcp = match access.network {
                _ if abi < 4 => "",
                Network::Off => ", no TCP",
                Network::Proxied => ", TCP only to Wicket's proxy",
                Network::Direct => "",
            };
            layers.push(format!(
                "Landlock (ABI {abi}): writes only where the mounts allow, no reads of $WICKET_HOME, \
                 the deny_read paths or the homes but their toolchains, no signals or abstract \
                 sockets out{tcp}"
            ));
        }
        if available.seccomp {
            layers.push(if access.network == Network::Direct {
                "seccomp: no setuid or setgid files, no keyring, no sockets but internet, UNIX and \
                 netlink, no io_uring, no mounts, no typing into a terminal"
                    .into()
            } else {
                "seccomp: no UNIX sockets (tmux, docker, agents) and none but internet and netlink, \
                 no setuid or setgid files, no keyring, no io_uring, no mounts, no typing into a terminal"
                    .into()
            });
        }
        if available.namespaces {
            layers.push(
                "PID namespace: nothing it starts outlives it, no other process is visible".into(),
            );
            match access.network {
                Network::Off => layers.push("network namespace: no network".into()),
                Network::Proxied => layers.push(
                    "network namespace: only loopback, where HTTP_PROXY, HTTPS_PROXY and ALL_PROXY \
                     lead to Wicket, which asks for each new host and counts every byte"
                        .into(),
                ),
                Network::Direct => {}
            }
        }
        let enforcer = if available.cgroup_limits() {
            "a cgroup"
        } else if available.root {
            "rlimits (the process count does not hold for root)"
        } else {
            "rlimits"
        };
        layers.push(format!(
            "at most {} processes and {} MB of memory (the private /tmp, /run and /dev/shm \
             included), by {enforcer}",
            self.max_processes, self.max_memory_mb
        ));
        layers
    }

    /// What a command sees of the home folders besides the workspace: each
    /// `home_read` entry in each home, where it exists, and `read`.
    fn shown(&self, homes: &[PathBuf], access: &Access) -> Vec<PathBuf> {
        let mut shown = self.extra_read.clone();
        for entry in &self.home_read {
            if entry.is_absolute() {
                shown.push(entry.clone());
            } else {
                shown.extend(homes.iter().map(|home| home.join(entry)));
            }
        }
        shown.retain(|path| path.symlink_metadata().is_ok());
        shown.extend(access.read.iter().cloned());
        shown
    }

    /// How a command allowed with this summary starts. `home` is never
    /// readable in the sandbox, and never writable in any mode.
    pub fn confine(
        &self,
        workspace: &Path,
        home: &Path,
        summary: &SandboxSummary,
        access: &Access,
    ) -> Result<Confine, WireError> {
        self.confine_with(availability(), workspace, home, summary, access)
    }

    /// [`SandboxSettings::confine`] on a kernel that can do `available`.
    pub fn confine_with(
        &self,
        available: &Availability,
        workspace: &Path,
        home: &Path,
        summary: &SandboxSummary,
        access: &Access,
    ) -> Result<Confine, WireError> {
        // The managed policy is read-only to every command, sandboxed or not.
        let mut protect = vec![home.to_path_buf()];
        protect.extend(self.floor.files.iter().cloned());
        let unconfined = Confine {
            env_pass: self.env_pass.clone(),
            protect,
            mask: self.denied(),
            sandbox: None,
        };
        match summary.mode {
            SandboxMode::Off => Ok(unconfined),
            SandboxMode::Unavailable if self.required => Err(WireError::new(
                ErrorKind::Unsandboxed,
                format!(
                    "the command cannot run sandboxed ({}), and [sandbox] required = true in your config; \
                     fix the kernel support or set required = false",
                    summary.note.as_deref().unwrap_or("no sandbox")
                ),
            )),
            SandboxMode::Unavailable => Ok(unconfined),
            SandboxMode::WorkspaceWrite | SandboxMode::ReadOnly => {
                let access = &routed(available, access);
                let mut deny_read = vec![home.to_path_buf()];
                deny_read.extend(self.denied());
                let hidden = home_folders(workspace);
                Ok(Confine {
                    mask: Vec::new(),
                    sandbox: Some(Policy {
                        overlay: Default::default(),
                        workspace: workspace.to_path_buf(),
                        read_only: summary.mode == SandboxMode::ReadOnly,
                        writable: self.extra_write.clone(),
                        visible: self.shown(&hidden, access),
                        deny_read,
                        hidden,
                        network: access.network,
                        write_git: access.git,
                        limits: ResourceLimits {
                            max_processes: self.max_processes,
                            max_memory_mb: self.max_memory_mb,
                        },
                    }),
                    ..unconfined
                })
            }
        }
    }
}

/// The network a command really gets: through Wicket only where the
/// launcher can give it a network namespace of its own; else the host's,
/// which its card then says.
fn routed(available: &Availability, access: &Access) -> Access {
    let mut routed = access.clone();
    if routed.network == Network::Proxied && !available.namespaces {
        routed.network = Network::Direct;
    }
    routed
}

/// One path a call asked to read (`read`): as written, and where it really is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadPath {
    /// As the call wrote it (`~/notes`).
    pub written: String,
    /// Where it really lies (links followed).
    pub real: PathBuf,
}

impl ReadPath {
    /// What a card shows: the path as written, and where it really lies
    /// when that is somewhere else.
    pub fn shown(&self) -> String {
        let expanded = expand_home(&self.written);
        if expanded.as_deref() == Some(self.real.as_path()) {
            self.written.clone()
        } else {
            format!("{} → {}", self.written, self.real.display())
        }
    }
}

/// `~/rest` under `$HOME`, an absolute path as it is; else nothing.
pub fn expand_home(path: &str) -> Option<PathBuf> {
    if let Some(rest) = path.strip_prefix("~/") {
        return std::env::var_os("HOME").map(|home| PathBuf::from(home).join(rest));
    }
    path.starts_with('/').then(|| PathBuf::from(path))
}

/// Whether one path lies in the other.
pub fn overlaps(one: &Path, other: &Path) -> bool {
    one.starts_with(other) || other.starts_with(one)
}

impl SandboxSettings {
    /// The paths a call asked to read (`run`'s `read`), checked before any
    /// card: each absolute or `~/…`, existing, and holding nothing the
    /// sandbox hides ($WICKET_HOME, `deny_read`).
    pub fn read_paths(
        &self,
        written: &[String],
        wicket_home: &Path,
    ) -> Result<Vec<ReadPath>, WireError> {
        if written.is_empty() {
            return Ok(Vec::new());
        }
        let invalid = |message: String| WireError::new(ErrorKind::InvalidArgs, message);
        let secrets: Vec<PathBuf> = std::iter::once(wicket_home.to_path_buf())
            .chain(self.denied())
            .map(|secret| std::fs::canonicalize(&secret).unwrap_or(secret))
            .collect();
        let mut paths = Vec::new();
        for path in written {
            let Some(expanded) = expand_home(path) else {
                return Err(invalid(format!(
                    "read path '{path}' is neither absolute nor ~/…; give the file or folder outside \
                     the workspace the command needs to read, e.g. \"~/notes\" or \"/srv/data\""
                )));
            };
            let real = std::fs::canonicalize(&expanded).map_err(|error| {
                invalid(format!(
                    "read path '{path}' ({}) cannot be shown to the command: {error}",
                    expanded.display()
                ))
            })?;
            if secrets.iter().any(|secret| overlaps(&real, secret)) {
                return Err(invalid(format!(
                    "read path '{path}' would show the command what the sandbox hides \
                     ($WICKET_HOME, a credential store, or a deny_read path of your config); no \
                     command may read it"
                )));
            }
            paths.push(ReadPath {
                written: path.clone(),
                real,
            });
        }
        Ok(paths)
    }
}

/// A call's added reads, for the mount layer's words.
fn also_reads(access: &Access) -> String {
    read_list(access).map_or_else(String::new, |read| {
        format!("; also shown read-only: {read}")
    })
}

/// A call's added reads as a person writes them (`~/notes, /srv/data`), if any.
fn read_list(access: &Access) -> Option<String> {
    let read: Vec<String> = access.read.iter().map(|path| tilde(path)).collect();
    (!read.is_empty()).then(|| read.join(", "))
}

/// A path under `$HOME` as `~/…`, as a person writes it.
fn tilde(path: &Path) -> String {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    match home.and_then(|home| path.strip_prefix(home).ok().map(Path::to_path_buf)) {
        Some(rest) if !rest.as_os_str().is_empty() => format!("~/{}", rest.display()),
        _ => path.display().to_string(),
    }
}

/// Every home folder, where it really is: `/root`, each folder of
/// `/home`, and `$HOME` wherever it lies; one that lies inside another is
/// left to the outer one.
pub fn all_homes() -> Vec<PathBuf> {
    let mut homes = vec![PathBuf::from("/root")];
    if let Ok(entries) = std::fs::read_dir("/home") {
        homes.extend(entries.flatten().map(|entry| entry.path()));
    }
    homes.extend(std::env::var_os("HOME").map(PathBuf::from));
    let mut real: Vec<PathBuf> = homes
        .iter()
        .filter_map(|home| std::fs::canonicalize(home).ok())
        .filter(|home| home.is_dir() && home != Path::new("/"))
        .collect();
    real.sort();
    real.dedup();
    let outer = real.clone();
    real.retain(|home| {
        !outer
            .iter()
            .any(|other| other != home && home.starts_with(other))
    });
    real
}

/// Every home folder a command must not see ([`all_homes`]); never one
/// that is the workspace or lies inside it (a workspace inside a home is
/// bound back into the empty folder instead).
pub fn home_folders(workspace: &Path) -> Vec<PathBuf> {
    let mut homes = all_homes();
    homes.retain(|home| !home.starts_with(workspace));
    homes
}

/// What the card's line says of the homes: hidden, or, where one is the
/// workspace or lies in it (so its files are the workspace's), that its
/// dotfiles' secrets are hidden.
fn homes_line(workspace: &Path) -> &'static str {
    let homes = all_homes();
    if homes.iter().any(|home| home == workspace) {
        "the home is the workspace: its dotfiles' secrets hidden"
    } else if homes.iter().any(|home| home.starts_with(workspace)) {
        "a home is in the workspace: its dotfiles' secrets hidden"
    } else {
        "home hidden but toolchains"
    }
}

impl SandboxSettings {
    /// Every path no command may read, for every home: the known credential
    /// stores that exist ([`known_secrets`]), then the config's `deny_read`.
    pub fn denied(&self) -> Vec<PathBuf> {
        let mut denied = known_secrets(&all_homes());
        denied.extend(self.deny_read.iter().cloned());
        denied
    }

    /// Of [`SandboxSettings::denied`], those inside the workspace at `root`
    /// (canonical), where they are: hidden from the six tools too. A home's
    /// credential stores are looked for only in a home the workspace holds
    /// (`cd ~ && wicket`), so a call in any other workspace pays for no stat
    /// of them.
    pub fn hidden_in(&self, root: &Path) -> Vec<PathBuf> {
        let homes: Vec<PathBuf> = all_homes()
            .into_iter()
            .filter(|home| std::fs::canonicalize(home).is_ok_and(|home| home.starts_with(root)))
            .collect();
        let mut hidden = known_secrets(&homes);
        hidden.extend(self.deny_read.iter().cloned());
        let mut inside: Vec<PathBuf> = hidden
            .into_iter()
            .filter_map(|path| std::fs::canonicalize(path).ok())
            .filter(|path| path.starts_with(root) && path != root)
            .collect();
        inside.sort();
        inside.dedup();
        inside
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kernel_that_cannot_confine_is_said_on_the_card_and_required_refuses() {
        let none = Availability::default();
        let mut settings = SandboxSettings::default();
        let summary = settings.summary_with(
            &none,
            Path::new("/nonexistent-workspace"),
            &Access::default(),
        );
        assert_eq!(summary.mode, SandboxMode::Unavailable);
        assert!(
            summary.note.as_deref().unwrap_or("").contains("unconfined"),
            "{summary:?}"
        );
        let workspace = Path::new("/ws");
        let unconfined = settings
            .confine(workspace, Path::new("/home"), &summary, &Access::default())
            .unwrap();
        assert!(unconfined.sandbox.is_none());
        assert_eq!(unconfined.protect, vec![PathBuf::from("/home")]);
        settings.required = true;
        let summary = settings.summary_with(
            &none,
            Path::new("/nonexistent-workspace"),
            &Access::default(),
        );
        assert!(summary.note.as_deref().unwrap_or("").contains("required"));
        let refused = settings.confine(workspace, Path::new("/home"), &summary, &Access::default());
        assert_eq!(refused.err().map(|e| e.kind), Some(ErrorKind::Unsandboxed));
        let full = Availability {
            overlay: Default::default(),
            launcher: true,
            landlock_abi: Some(9),
            namespaces: true,
            mounts: true,
            seccomp: true,
            cgroup: true,
            root: false,
        };
        let access = Access {
            read: Default::default(),
            network: Network::Proxied,
            git: true,
        };
        let summary = settings.summary_with(&full, Path::new("/nonexistent-workspace"), &access);
        assert_eq!(
            (summary.mode, summary.network, summary.note.clone()),
            (SandboxMode::WorkspaceWrite, true, None)
        );
        let Ok(Confine {
            sandbox: Some(policy),
            ..
        }) = settings.confine_with(&full, workspace, Path::new("/home"), &summary, &access)
        else {
            panic!("a sandbox");
        };
        assert!(policy.network == Network::Proxied && !policy.read_only && policy.write_git);
        assert_eq!(policy.deny_read[0], Path::new("/home"));
    }
}

#[cfg(test)]
mod layers {
    use super::*;

    fn layers_on(available: &Availability) -> (SandboxSummary, String) {
        let summary = SandboxSettings::default().summary_with(
            available,
            Path::new("/nonexistent-workspace"),
            &Access::default(),
        );
        let text = summary.layers.join("\n");
        (summary, text)
    }

    #[test]
    fn a_kernel_without_namespaces_says_what_is_missing_in_words() {
        let landlock_only = Availability {
            overlay: Default::default(),
            launcher: true,
            landlock_abi: Some(3),
            namespaces: false,
            mounts: false,
            seccomp: false,
            cgroup: false,
            root: true,
        };
        let (summary, text) = layers_on(&landlock_only);
        assert_eq!(summary.mode, SandboxMode::WorkspaceWrite);
        // `required` refuses a command without every layer, and says which are missing.
        let required = SandboxSettings {
            required: true,
            ..SandboxSettings::default()
        };
        let refused = required.summary_with(
            &landlock_only,
            Path::new("/nonexistent-workspace"),
            &Access::default(),
        );
        assert_eq!(refused.mode, SandboxMode::Unavailable);
        let why = refused.note.clone().unwrap_or_default();
        assert!(
            why.contains("no seccomp") && why.contains("required is set"),
            "{why}"
        );
        assert!(
            required
                .confine(
                    Path::new("/ws"),
                    Path::new("/home"),
                    &refused,
                    &Access::default()
                )
                .is_err()
        );
        assert!(
            !text.contains("mount namespace") && !text.contains("PID namespace"),
            "{text}"
        );
        assert!(
            text.contains("the process count does not hold for root"),
            "{text}"
        );
        let note = summary.note.unwrap_or_default();
        for gap in [
            "no PID or network namespace",
            "cannot block TCP",
            "no seccomp",
            "no process limit",
        ] {
            assert!(note.contains(gap), "{gap}: {note}");
        }
    }

    #[test]
    fn without_namespaces_a_network_through_wicket_is_the_direct_one_and_the_card_says_so() {
        let landlock_only = Availability {
            overlay: Default::default(),
            launcher: true,
            landlock_abi: Some(7),
            namespaces: false,
            mounts: false,
            seccomp: true,
            cgroup: false,
            root: false,
        };
        let access = Access {
            network: Network::Proxied,
            ..Access::default()
        };
        let settings = SandboxSettings::default();
        let summary =
            settings.summary_with(&landlock_only, Path::new("/nonexistent-workspace"), &access);
        assert!(summary.summary.contains("direct network"), "{summary:?}");
        assert!(!summary.complete);
        let Ok(Confine {
            sandbox: Some(policy),
            ..
        }) = settings.confine_with(
            &landlock_only,
            Path::new("/ws"),
            Path::new("/h"),
            &summary,
            &access,
        )
        else {
            panic!("a sandbox");
        };
        assert_eq!(policy.network, Network::Direct);
    }

    #[test]
    fn every_layer_in_force_is_named() {
        let full = Availability {
            overlay: Default::default(),
            launcher: true,
            landlock_abi: Some(7),
            namespaces: true,
            mounts: true,
            seccomp: true,
            cgroup: true,
            root: false,
        };
        let (summary, text) = layers_on(&full);
        assert_eq!(summary.note, None);
        for layer in [
            "no terminal",
            "mount namespace",
            "except every .git and .wicket at any depth",
            "sized within the memory limit",
            "read-only nodes",
            "Landlock (ABI 7)",
            "no UNIX sockets",
            "no setuid or setgid files",
            "no keyring",
            "PID namespace",
            "network namespace",
            "by a cgroup",
        ] {
            assert!(text.contains(layer), "{layer}: {text}");
        }
        // The person turned it off: what still holds is said too.
        let off = SandboxSettings {
            mode: SandboxMode::Off,
            ..SandboxSettings::default()
        }
        .summary_with(
            &full,
            Path::new("/nonexistent-workspace"),
            &Access::default(),
        );
        assert!(
            off.layers.join("\n").contains("$WICKET_HOME read-only"),
            "{off:?}"
        );
    }
}
