//! The sandbox launcher, one module per layer under a small contract
//! ([`contract`]: the arguments and the JSON that cross the process boundary).

pub(crate) mod capabilities;
pub(crate) mod contract;
pub(crate) mod mounts;
pub(crate) mod namespaces;
pub(crate) mod seccomp;

pub use contract::{
    INIT_ARG, LAUNCH_ARG, Launch, PROBE_ARG, Policy, SETUP_FAILED, install_launcher, launcher,
};
