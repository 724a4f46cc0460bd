//! Wicket's seam with the operating system, one module per concern so that
//! each exists once: [`spawn`] starts every process Wicket runs for a person
//! (a `run`, a Stop hook, an MCP server) through the sandbox launcher,
//! [`launch`] (its stages and layers, under the launch contract that
//! [`spawn`] writes and the launcher reads), [`guard`] finds the `.git` and
//! `.wicket` entries a command may not change, [`files`] writes files
//! atomically and privately and takes locks, [`process`] tells whether a pid
//! is alive, [`ids`] makes ids, [`walk`] shares one tree's walk between
//! threads, and [`Cancel`] is the signal a running call listens to. Start from [`spawn::Spec`].

pub mod cancel;
pub mod egress;
pub mod files;
pub mod guard;
pub mod ids;
mod keeper;
pub mod launch;
pub mod process;
pub mod spawn;
pub mod sync;
pub mod walk;

pub use cancel::Cancel;
