//! How many processes and how much memory a sandboxed command may use:
//! a cgroup of its own where one can be made ([`Cgroup`], cgroup v2 or the
//! v1 `pids` and `memory` hierarchies), else rlimits ([`set_rlimits`]).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The limits of one command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResourceLimits {
    /// Processes (and threads) at once.
    pub max_processes: u64,
    /// Memory, in MiB.
    pub max_memory_mb: u64,
}

impl ResourceLimits {
    fn memory_bytes(&self) -> u64 {
        self.max_memory_mb.saturating_mul(1024 * 1024)
    }
}

/// Half the machine's memory, in MiB: the default `max_memory_mb`.
///
/// From `sysinfo(2)`: the number `/proc/meminfo` prints as `MemTotal`, in
/// one system call instead of eleven and the kernel formatting the whole
/// file; every config load pays it, `wicket tool` included (~10 µs,
/// BENCHMARKS.md 2026-12-06).
pub fn half_the_memory_mb() -> u64 {
    let info = rustix::system::sysinfo();
    let bytes = (info.totalram as u64).saturating_mul(u64::from(info.mem_unit));
    (bytes / 1024 / 1024 / 2).max(256)
}

/// The prefix of every cgroup Wicket makes, followed by the launcher's pid.
const PREFIX: &str = "wicket-";

/// One command's cgroup folders (one for v2; `pids` and `memory` for v1).
#[derive(Debug)]
pub(super) struct Cgroup {
    folders: Vec<PathBuf>,
}

/// Where this process's cgroups are: (the folder, its controllers' files).
fn parents() -> Vec<(PathBuf, Version)> {
    let Ok(text) = std::fs::read_to_string("/proc/self/cgroup") else {
        return Vec::new();
    };
    let root = Path::new("/sys/fs/cgroup");
    let mut v1 = Vec::new();
    for line in text.lines() {
        let mut fields = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) =
            (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        let relative = path.trim_start_matches('/');
        if controllers.is_empty() {
            // v2: the unified hierarchy, at the root or (hybrid) under unified/.
            for base in [root.to_path_buf(), root.join("unified")] {
                let folder = base.join(relative);
                let delegated = std::fs::read_to_string(folder.join("cgroup.subtree_control"))
                    .is_ok_and(|control| control.split_whitespace().any(|c| c == "pids"));
                if delegated && base.join("cgroup.controllers").exists() {
                    return vec![(folder, Version::Two)];
                }
            }
            continue;
        }
        for controller in controllers.split(',') {
            if controller == "pids" || controller == "memory" {
                let version = if controller == "pids" {
                    Version::OnePids
                } else {
                    Version::OneMemory
                };
                v1.push((root.join(controller).join(relative), version));
            }
        }
    }
    if v1.iter().any(|(_, version)| *version == Version::OnePids) {
        v1
    } else {
        Vec::new()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Version {
    Two,
    OnePids,
    OneMemory,
}

impl Cgroup {
    /// Makes a cgroup for the launcher `pid` with `limits`, or says why it cannot.
    pub(super) fn make(pid: u32, limits: &ResourceLimits) -> Result<Cgroup, String> {
        let parents = parents();
        if parents.is_empty() {
            return Err("no cgroup hierarchy with a pids controller this user may write".into());
        }
        let mut made = Cgroup {
            folders: Vec::new(),
        };
        for (parent, version) in parents {
            let folder = parent.join(format!("{PREFIX}{pid}"));
            std::fs::create_dir(&folder)
                .map_err(|error| format!("making {}: {error}", folder.display()))?;
            made.folders.push(folder.clone());
            let memory = limits.memory_bytes().to_string();
            let processes = limits.max_processes.to_string();
            let writes: Vec<(&str, &str)> = match version {
                Version::Two => vec![("pids.max", &processes), ("memory.max", &memory)],
                Version::OnePids => vec![("pids.max", &processes)],
                Version::OneMemory => vec![("memory.limit_in_bytes", &memory)],
            };
            for (file, value) in writes {
                let path = folder.join(file);
                // memory.max is absent when the memory controller is not delegated.
                if file.starts_with("memory") && !path.exists() {
                    continue;
                }
                std::fs::write(&path, value)
                    .map_err(|error| format!("writing {}: {error}", path.display()))?;
            }
        }
        Ok(made)
    }

    /// Moves this process (and so all it starts) into the cgroup.
    pub(super) fn join(&self) -> Result<(), String> {
        let me = std::process::id().to_string();
        for folder in &self.folders {
            let procs = folder.join("cgroup.procs");
            std::fs::write(&procs, &me)
                .map_err(|error| format!("joining {}: {error}", folder.display()))?;
        }
        Ok(())
    }

    /// Leaves the cgroup (back to its parent) and removes it. Every process
    /// in it is gone by now: the command's PID namespace ended with it.
    pub(super) fn remove(&self) {
        let me = std::process::id().to_string();
        let leave_and_remove = |folder: &Path| -> std::io::Result<()> {
            if let Some(parent) = folder.parent() {
                std::fs::write(parent.join("cgroup.procs"), &me)?;
            }
            std::fs::remove_dir(folder)
        };
        for folder in &self.folders {
            // Best effort: this runs as the launcher ends, with no one to
            // tell, and a cgroup left behind is removed by the next probe's
            // `sweep`.
            let _ = leave_and_remove(folder);
        }
    }

    /// Whether a cgroup can be made here: tried, then removed.
    pub(super) fn can_make() -> bool {
        let limits = ResourceLimits {
            max_processes: 1,
            max_memory_mb: 16,
        };
        match Cgroup::make(std::process::id(), &limits) {
            Ok(made) => {
                made.remove();
                true
            }
            Err(_) => false,
        }
    }

    /// Removes the empty cgroups of launchers that died before cleaning up.
    pub(super) fn sweep() {
        for (parent, _) in parents() {
            let Ok(entries) = std::fs::read_dir(&parent) else {
                continue;
            };
            for entry in entries.flatten() {
                let name = entry.file_name();
                let Some(pid) = name
                    .to_str()
                    .and_then(|name| name.strip_prefix(PREFIX))
                    .and_then(|pid| pid.parse::<u32>().ok())
                else {
                    continue;
                };
                if !crate::process::alive(pid) {
                    // Fails while a process is still in it, which is right.
                    let _ = std::fs::remove_dir(entry.path());
                }
            }
        }
    }
}

/// The rlimits for `limits`. Set in stage 2, inside the command's own user
/// namespace, where `RLIMIT_NPROC` counts only that namespace's processes.
pub(super) fn set_rlimits(limits: &ResourceLimits) -> Result<(), String> {
    use rustix::process::{Resource, Rlimit, setrlimit};
    let processes = Some(limits.max_processes);
    setrlimit(
        Resource::Nproc,
        Rlimit {
            current: processes,
            maximum: processes,
        },
    )
    .map_err(|error| format!("RLIMIT_NPROC: {error}"))?;
    let memory = Some(limits.memory_bytes());
    setrlimit(
        Resource::Data,
        Rlimit {
            current: memory,
            maximum: memory,
        },
    )
    .map_err(|error| format!("RLIMIT_DATA: {error}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_the_memory_is_a_sane_number() {
        let half = half_the_memory_mb();
        assert!((256..1 << 30).contains(&half), "{half}");
    }

    #[test]
    fn half_the_memory_is_half_of_proc_meminfo_mem_total() {
        let text = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let kib: u64 = text
            .lines()
            .find_map(|line| line.strip_prefix("MemTotal:"))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or_default();
        assert!(kib > 0, "no MemTotal in /proc/meminfo: {text}");
        assert_eq!(half_the_memory_mb(), (kib / 1024 / 2).max(256));
    }
}
