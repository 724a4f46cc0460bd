//! Integration tests for the resolver and the six tools, on real filesystem fixtures.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::new_without_default)]

mod limits;
mod resolver;
mod run;

use std::path::{Path, PathBuf};

use wicket_protocol::{ErrorKind, ListDirArgs, ReadFileArgs};
use wicket_tools::{Location, Tools};

/// A temp folder holding `ws/` (the workspace) and `outside/` (with a secret).
pub struct Fixture {
    pub _dir: tempfile::TempDir,
    pub root: PathBuf,
    pub ws: PathBuf,
    pub outside: PathBuf,
}

impl Fixture {
    pub fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let ws = root.join("ws");
        let outside = root.join("outside");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("secret"), "SECRET\n").unwrap();
        std::fs::write(ws.join("real.txt"), "inside\n").unwrap();
        Fixture {
            _dir: dir,
            root,
            ws,
            outside,
        }
    }

    pub fn tools(&self) -> Tools {
        Tools::open(&self.ws).unwrap()
    }

    pub fn write(&self, relative: &str, content: &str) {
        let path = self.ws.join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }

    pub fn link(&self, relative: &str, target: impl AsRef<Path>) {
        let path = self.ws.join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(target, path).unwrap();
    }
}

pub fn read(tools: &Tools, path: &str) -> Result<String, wicket_tools::Error> {
    let location = tools.workspace().classify(path)?;
    let args = ReadFileArgs {
        path: path.into(),
        offset: None,
        line: None,
    };
    tools.read_file(&location, &args).map(|out| out.content)
}

pub fn list(tools: &Tools, path: &str) -> Result<Vec<String>, wicket_tools::Error> {
    let location = tools.workspace().classify(path)?;
    let args = ListDirArgs {
        path: Some(path.into()),
    };
    tools.list_dir(&location, &args).map(|out| out.entries)
}

/// A write with no card in between: plan, then commit.
pub fn write(tools: &Tools, path: &str, content: &str) -> Result<(), wicket_tools::Error> {
    let location = tools.workspace().classify(path)?;
    let target = tools.plan_write(&location, path)?;
    tools
        .commit_write(&location, &target, content.as_bytes(), &|_| true)
        .map(|_| ())
}

pub fn kind<T: std::fmt::Debug>(result: Result<T, wicket_tools::Error>) -> ErrorKind {
    match result {
        Ok(value) => panic!("expected an error, got {value:?}"),
        Err(error) => {
            assert!(!error.message.is_empty());
            error.kind
        }
    }
}

pub fn is_outside(tools: &Tools, path: &str) -> bool {
    matches!(tools.workspace().classify(path), Ok(Location::Outside(_)))
}
