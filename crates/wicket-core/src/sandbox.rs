//! The sandbox a command runs in, as the person's home config sets it
//! (`[sandbox]`), stated on every run card and handed to the spawning
//! module as a [`Confine`]. A command that cannot be confined is never
//! started unconfined silently: its card says so, and with `required` it
//! is refused.

use std::path::{Path, PathBuf};

use wicket_os::sandbox::{Availability, Policy, availability};
use wicket_os::spawn::Confine;
pub use wicket_protocol::SandboxMode;
use wicket_protocol::{ErrorKind, SandboxSummary, WireError};

/// `[sandbox]` of the home config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxSettings {
    /// `workspace-write` (the default), `read-only` or `off`.
    pub mode: SandboxMode,
    /// Paths a command may not read, besides `$WICKET_HOME`.
    pub deny_read: Vec<PathBuf>,
    /// Paths a command may write besides the workspace and its TMPDIR.
    pub extra_write: Vec<PathBuf>,
    /// Refuse a command that cannot be confined.
    pub required: bool,
}

/// The secret stores a command may not read unless the config says otherwise.
pub const DEFAULT_DENY_READ: [&str; 7] = [
    ".ssh",
    ".aws",
    ".gnupg",
    ".config/gcloud",
    ".netrc",
    ".docker",
    ".kube",
];

impl Default for SandboxSettings {
    fn default() -> SandboxSettings {
        let home = std::env::var_os("HOME").map(PathBuf::from);
        SandboxSettings {
            mode: SandboxMode::WorkspaceWrite,
            deny_read: home
                .map(|home| DEFAULT_DENY_READ.iter().map(|p| home.join(p)).collect())
                .unwrap_or_default(),
            extra_write: Vec::new(),
            required: false,
        }
    }
}

impl SandboxSettings {
    /// What a card says about a command with or without network, on this kernel.
    pub fn summary(&self, network: bool) -> SandboxSummary {
        self.summary_with(availability(), network)
    }

    /// [`SandboxSettings::summary`] for a kernel that can do `available`.
    pub fn summary_with(&self, available: &Availability, network: bool) -> SandboxSummary {
        match self.mode {
            SandboxMode::Off => SandboxSummary {
                mode: SandboxMode::Off,
                network: true,
                note: Some("the sandbox is off in your config: the command runs unconfined".into()),
            },
            SandboxMode::WorkspaceWrite | SandboxMode::ReadOnly => match available.missing() {
                None => SandboxSummary {
                    mode: self.mode,
                    network,
                    note: available.note(),
                },
                Some(why) => SandboxSummary {
                    mode: SandboxMode::Unavailable,
                    network: true,
                    note: Some(if self.required {
                        format!("{why}; [sandbox] required is set, so it will not run")
                    } else {
                        format!("{why}: the command would run unconfined, with your full access")
                    }),
                },
            },
            SandboxMode::Unavailable => SandboxSummary {
                mode: SandboxMode::Unavailable,
                network: true,
                note: None,
            },
        }
    }

    /// How a command allowed with this summary starts. `home` is never readable.
    pub fn confine(
        &self,
        workspace: &Path,
        home: &Path,
        summary: &SandboxSummary,
    ) -> Result<Confine, WireError> {
        match summary.mode {
            SandboxMode::Off => Ok(Confine::None),
            SandboxMode::Unavailable if self.required => Err(WireError::new(
                ErrorKind::Unsandboxed,
                format!(
                    "the command cannot run sandboxed ({}), and [sandbox] required = true in your config; \
                     fix the kernel support or set required = false",
                    summary.note.as_deref().unwrap_or("no sandbox")
                ),
            )),
            SandboxMode::Unavailable => Ok(Confine::None),
            SandboxMode::WorkspaceWrite | SandboxMode::ReadOnly => {
                let mut deny_read = vec![home.to_path_buf()];
                deny_read.extend(self.deny_read.iter().cloned());
                Ok(Confine::Sandbox(Policy {
                    workspace: workspace.to_path_buf(),
                    read_only: summary.mode == SandboxMode::ReadOnly,
                    writable: self.extra_write.clone(),
                    deny_read,
                    network: summary.network,
                }))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kernel_that_cannot_confine_is_said_on_the_card_and_required_refuses() {
        let none = Availability::default();
        let mut settings = SandboxSettings::default();
        let summary = settings.summary_with(&none, false);
        assert_eq!(summary.mode, SandboxMode::Unavailable);
        assert!(
            summary.note.as_deref().unwrap_or("").contains("unconfined"),
            "{summary:?}"
        );
        let workspace = Path::new("/ws");
        assert!(matches!(
            settings.confine(workspace, Path::new("/home"), &summary),
            Ok(Confine::None)
        ));
        settings.required = true;
        let summary = settings.summary_with(&none, false);
        assert!(summary.note.as_deref().unwrap_or("").contains("required"));
        let refused = settings.confine(workspace, Path::new("/home"), &summary);
        assert_eq!(refused.err().map(|e| e.kind), Some(ErrorKind::Unsandboxed));
        let full = Availability {
            launcher: true,
            landlock_abi: Some(9),
            namespaces: true,
        };
        let summary = settings.summary_with(&full, true);
        assert_eq!(
            (summary.mode, summary.network, summary.note.clone()),
            (SandboxMode::WorkspaceWrite, true, None)
        );
        let Ok(Confine::Sandbox(policy)) =
            settings.confine(workspace, Path::new("/home"), &summary)
        else {
            panic!("a sandbox");
        };
        assert!(policy.network && !policy.read_only);
        assert_eq!(policy.deny_read[0], Path::new("/home"));
    }
}
