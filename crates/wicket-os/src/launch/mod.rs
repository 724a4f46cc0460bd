//! The sandbox launcher, one module per layer under a small contract
//! ([`contract`]: the arguments and the JSON that cross the process boundary).

pub(crate) mod contract;

pub use contract::{
    INIT_ARG, LAUNCH_ARG, Launch, PROBE_ARG, Policy, SETUP_FAILED, install_launcher, launcher,
};
