//! The workspace and the six tools a turn can call: read_file, grep, list_dir,
//! search_replace, write_file and run, each with its exact limit
//! ([`limits`]). Every path goes through the resolver ([`resolve::Workspace`]);
//! start from [`Tools`]. Nothing here asks permission: the gate in
//! `wicket-core` decides whether a call may reach these functions.

pub mod error;
mod ignore_files;
pub mod limits;
pub mod resolve;
pub mod tools;
pub mod tree;

use std::path::Path;

pub use error::{Error, Result};
pub use resolve::{Location, Workspace};
pub use tools::write_file::WriteTarget;
pub use wicket_os::Cancel;
use wicket_protocol::{
    GrepArgs, GrepOutput, ListDirArgs, ListDirOutput, ReadFileArgs, ReadFileOutput, RunArgs,
    RunOutput, WriteOutput,
};

/// The tools a turn can call, held against one workspace.
#[derive(Debug)]
pub struct Tools {
    workspace: Workspace,
}

impl Tools {
    /// Opens the workspace the tools work on.
    pub fn open(workspace: &Path) -> Result<Tools> {
        Ok(Tools {
            workspace: Workspace::open(workspace)?,
        })
    }

    /// The workspace.
    pub fn workspace(&self) -> &Workspace {
        &self.workspace
    }

    /// read_file.
    pub fn read_file(&self, location: &Location, args: &ReadFileArgs) -> Result<ReadFileOutput> {
        tools::read_file::read_file(&self.workspace, location, args)
    }

    /// grep; stops early on cancel.
    pub fn grep(
        &self,
        location: Option<&Location>,
        args: &GrepArgs,
        cancel: &Cancel,
    ) -> Result<GrepOutput> {
        tools::grep::grep(&self.workspace, location, args, cancel)
    }

    /// list_dir.
    pub fn list_dir(&self, location: &Location, args: &ListDirArgs) -> Result<ListDirOutput> {
        tools::list_dir::list_dir(&self.workspace, location, args)
    }

    /// Resolves a write (write_file or search_replace) and reads what it would replace.
    pub fn plan_write(&self, location: &Location, shown: &str) -> Result<WriteTarget> {
        tools::write_file::plan_write(&self.workspace, location, shown)
    }

    /// Replaces the file, if `still_current` accepts the bytes on disk right before the rename.
    pub fn commit_write(
        &self,
        location: &Location,
        target: &WriteTarget,
        content: &[u8],
        still_current: &dyn Fn(Option<&[u8]>) -> bool,
    ) -> Result<WriteOutput> {
        tools::write_file::commit_write(
            &self.workspace,
            location,
            &target.absolute,
            content,
            still_current,
        )
    }

    /// Runs a command (after the gate allowed it) in the folder its card
    /// named, with its confinement.
    pub fn run(
        &self,
        args: &RunArgs,
        approved: &tools::run::RunDir,
        confine: wicket_os::spawn::Confine,
        egress: Option<wicket_os::egress::Egress>,
        cancel: &Cancel,
    ) -> Result<RunOutput> {
        tools::run::run(&self.workspace, args, approved, confine, egress, cancel)
    }
}
