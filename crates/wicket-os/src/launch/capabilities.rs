//! The capabilities stage 2 needs to build the jail's file tree, passed to
//! it by stage 1 ([`pass_mount_capability`]) and dropped, every one, before
//! the command starts ([`drop_capabilities`]).

type Result<T> = std::result::Result<T, String>;

/// Gives stage 2 what it needs across its `execve`, as ambient
/// capabilities in the new user namespace: `CAP_SYS_ADMIN` to mount, and
/// `CAP_SETPCAP` to empty the bounding set afterwards (a uid other than 0
/// keeps nothing else through an `execve`). [`drop_capabilities`] takes
/// both away again.
pub(super) fn pass_mount_capability() -> Result<()> {
    use rustix::thread::CapabilitySet;
    let passed = [CapabilitySet::SYS_ADMIN, CapabilitySet::SETPCAP];
    let mut sets = rustix::thread::capabilities(None)
        .map_err(|error| format!("reading capabilities: {error}"))?;
    for capability in passed {
        sets.inheritable |= capability;
    }
    rustix::thread::set_capabilities(None, sets)
        .map_err(|error| format!("setting capabilities: {error}"))?;
    for capability in passed {
        rustix::thread::configure_capability_in_ambient_set(capability, true)
            .map_err(|error| format!("PR_CAP_AMBIENT: {error}"))?;
    }
    Ok(())
}

/// No capability left, in any set, for this process or what it starts
/// (the bounding set too, so not even a root inside gets one back).
pub(super) fn drop_capabilities() -> Result<()> {
    use rustix::thread::{CapabilitySet, CapabilitySets};
    rustix::thread::clear_ambient_capability_set()
        .map_err(|error| format!("clearing the ambient capabilities: {error}"))?;
    for bit in 0..64u32 {
        let Some(capability) = CapabilitySet::from_bits(1u64 << bit) else {
            continue;
        };
        match rustix::thread::remove_capability_from_bounding_set(capability) {
            Ok(()) => {}
            // Past the kernel's last capability: nothing more to drop.
            Err(rustix::io::Errno::INVAL) => break,
            Err(error) => {
                return Err(format!(
                    "dropping {capability:?} from the bounding set: {error}"
                ));
            }
        }
    }
    rustix::thread::set_capabilities(
        None,
        CapabilitySets {
            effective: CapabilitySet::empty(),
            permitted: CapabilitySet::empty(),
            inheritable: CapabilitySet::empty(),
        },
    )
    .map_err(|error| format!("dropping capabilities: {error}"))
}
