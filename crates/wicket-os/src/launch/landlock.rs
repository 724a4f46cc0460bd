//! Landlock: what a confined command may read, write and reach ([`apply`]),
//! applied by stage 2 after the mounts (or by stage 1 where namespaces
//! cannot be made).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, NetPort, PathBeneath,
    Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope,
};
use rustix::fs::{FileType, Mode, OFlags};

use wicket_protocol::Network;

use super::contract::Policy;
use super::mounts::{DEVICES, canonical};

/// The Landlock ABI Wicket's rules are written for; older kernels get the
/// part they support (best effort), and the card says what is missing.
const LANDLOCK_ABI: ABI = ABI::V7;

/// Restricts this process (and all it starts) to the policy.
/// `proxy_port`: the jail's proxy listener, the one TCP port a command
/// with a network through Wicket may connect to.
pub(super) fn apply(policy: &Policy, proxy_port: Option<u16>) -> Result<(), String> {
    let abi = LANDLOCK_ABI;
    let error = |e: landlock::RulesetError| format!("Landlock: {e}");
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(abi))
        .map_err(error)?;
    let direct = policy.network == Network::Direct;
    if !direct {
        ruleset = ruleset
            .handle_access(AccessNet::from_all(abi))
            .map_err(error)?;
    }
    let mut created = ruleset
        .scope(Scope::from_all(abi))
        .map_err(error)?
        .create()
        .map_err(error)?;
    // A hidden home is unreadable as a denied path is, but for what is shown
    // of it (`visible`: its toolchains, a call's `read`).
    // of it (`visible`: its toolchains, a call's `read`), and a denied path
    // stays denied inside what is shown.
    let denied: BTreeSet<PathBuf> = canonical(&policy.deny_read).into_iter().collect();
    let unreadable: BTreeSet<PathBuf> = denied
        .iter()
        .cloned()
        .chain(canonical(&policy.hidden))
        .collect();
    let mut seen = vec![readable(Path::new("/"), &unreadable)];
    seen.extend(
        canonical(&policy.visible)
            .iter()
            .map(|shown| readable(shown, &denied)),
    );
    let read = AccessFs::from_read(abi);
    let mut rules: Vec<PathBeneath<std::os::fd::OwnedFd>> = Vec::new();
    for (readable, listable) in &seen {
        rules.extend(readable.iter().filter_map(|path| rule(path, read)));
        rules.extend(
            listable
                .iter()
                .filter_map(|path| rule(path, BitFlags::from(AccessFs::ReadDir))),
        );
    }
    let mut writable: Vec<&PathBuf> = policy.writable.iter().collect();
    if !policy.read_only {
        writable.push(&policy.workspace);
    } else {
        rules.extend(rule(&policy.workspace, read));
    }
    rules.extend(
        writable
            .into_iter()
            .filter_map(|path| rule(path, AccessFs::from_all(abi))),
    );
    let device = AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::Truncate | AccessFs::IoctlDev;
    // The jail's devices, which every program expects to write (never
    // `/dev/tty`: a command has no terminal).
    rules.extend(
        DEVICES
            .iter()
            .filter_map(|name| rule(&Path::new("/dev").join(name), device)),
    );
    for rule in rules {
        created = created.add_rule(rule).map_err(error)?;
    }
    if let Some(port) = proxy_port.filter(|_| !direct) {
        created = created
            .add_rule(NetPort::new(port, AccessNet::ConnectTcp))
            .map_err(error)?;
    }
    let status = created.restrict_self().map_err(error)?;
    if status.ruleset == RulesetStatus::NotEnforced {
        return Err("Landlock could not be enforced on this kernel".into());
    }
    Ok(())
}

/// What may be read below `root`: all of it, except the denied paths.
/// Landlock only adds rights, so "all but" is every sibling along the way
/// down to each denied path; the folders on the way get only their listing.
fn readable(root: &Path, deny: &BTreeSet<PathBuf>) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let inside: Vec<&PathBuf> = deny
        .iter()
        .filter(|denied| denied.starts_with(root))
        .collect();
    if inside.iter().any(|denied| root.starts_with(denied)) {
        return (Vec::new(), Vec::new());
    }
    if inside.is_empty() {
        return (vec![root.to_path_buf()], Vec::new());
    }
    let ancestors: BTreeSet<PathBuf> = inside
        .iter()
        .flat_map(|denied| denied.ancestors().skip(1).map(Path::to_path_buf))
        .filter(|ancestor| ancestor.starts_with(root))
        .filter(|ancestor| !deny.iter().any(|denied| ancestor.starts_with(denied)))
        .collect();
    let mut allowed = Vec::new();
    for dir in &ancestors {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let link = entry.file_type().map(|t| t.is_symlink()).unwrap_or(true);
            // A link is judged where it leads, by that place's own rule.
            if link || ancestors.contains(&path) || deny.contains(&path) {
                continue;
            }
            allowed.push(path);
        }
    }
    (allowed, ancestors.into_iter().collect())
}

/// A rule granting `access` on `path`, narrowed to the rights a file can
/// have when it is not a folder (wider rights would make the whole
/// ruleset only partly enforced).
fn rule(path: &Path, access: BitFlags<AccessFs>) -> Option<PathBeneath<std::os::fd::OwnedFd>> {
    let directory = is_dir(path)?;
    let fd = rustix::fs::open(path, OFlags::PATH | OFlags::CLOEXEC, Mode::empty()).ok()?;
    let access = if directory {
        access
    } else {
        access & AccessFs::from_file(LANDLOCK_ABI)
    };
    Some(PathBeneath::new(fd, access))
}

fn is_dir(path: &Path) -> Option<bool> {
    let fd = rustix::fs::open(path, OFlags::PATH | OFlags::CLOEXEC, Mode::empty()).ok()?;
    let stat = rustix::fs::fstat(&fd).ok()?;
    Some(FileType::from_raw_mode(stat.st_mode) == FileType::Directory)
}
