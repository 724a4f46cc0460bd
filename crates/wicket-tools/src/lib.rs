//! The workspace and the six tools a turn can call: read_file, grep, list_dir,
//! search_replace, write_file and run, each with its exact limit
//! ([`limits`]). Every path goes through the resolver ([`resolve::Workspace`]);
//! start from [`Tools`]. Nothing here asks permission: the gate in
//! `wicket-core` decides whether a call may reach these functions.

pub mod error;
pub mod limits;
pub mod resolve;
pub mod tools;

use std::path::Path;
use std::sync::{Arc, Mutex};

pub use error::{Error, Result};
pub use resolve::{Location, Workspace};
pub use tools::write_file::WriteTarget;
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
    pub fn open(workspace: &Path) -> Result<Tools> {
        Ok(Tools {
            workspace: Workspace::open(workspace)?,
        })
    }

    pub fn workspace(&self) -> &Workspace {
        &self.workspace
    }

    pub fn read_file(&self, location: &Location, args: &ReadFileArgs) -> Result<ReadFileOutput> {
        tools::read_file::read_file(&self.workspace, location, args)
    }

    pub fn grep(&self, location: Option<&Location>, args: &GrepArgs) -> Result<GrepOutput> {
        tools::grep::grep(&self.workspace, location, args)
    }

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

    pub fn run(&self, args: &RunArgs, cancel: &Cancel) -> Result<RunOutput> {
        tools::run::run(&self.workspace, args, cancel)
    }
}

type Listener = Box<dyn Fn() + Send + Sync>;

/// A cancel signal shared between a turn and the tool it is running.
#[derive(Clone, Default)]
pub struct Cancel {
    inner: Arc<Mutex<CancelState>>,
}

#[derive(Default)]
struct CancelState {
    cancelled: bool,
    next_id: u64,
    listeners: Vec<(u64, Listener)>,
}

impl std::fmt::Debug for Cancel {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Cancel")
            .field("cancelled", &self.is_cancelled())
            .finish()
    }
}

impl Cancel {
    pub fn cancel(&self) {
        if let Ok(mut state) = self.inner.lock() {
            state.cancelled = true;
            for (_, listener) in &state.listeners {
                listener();
            }
        }
    }

    pub fn is_cancelled(&self) -> bool {
        self.inner
            .lock()
            .map(|state| state.cancelled)
            .unwrap_or(true)
    }

    /// Calls `listener` on cancel (at once when already cancelled); returns an id for [`Cancel::remove`].
    pub fn on_cancel(&self, listener: Listener) -> u64 {
        let Ok(mut state) = self.inner.lock() else {
            return 0;
        };
        if state.cancelled {
            listener();
        }
        state.next_id += 1;
        let id = state.next_id;
        state.listeners.push((id, listener));
        id
    }

    pub fn remove(&self, id: u64) {
        if let Ok(mut state) = self.inner.lock() {
            state
                .listeners
                .retain(|(listener_id, _)| *listener_id != id);
        }
    }
}
