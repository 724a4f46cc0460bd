//! Integration tests for the resolver and the six tools, on real filesystem fixtures.
#![allow(
    // Tests start the binary, git and mkfifo from the outside.
    clippy::disallowed_methods,
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::new_without_default
)]

mod hardening;
mod limits;
mod resolver;
mod run;

use wicket_protocol::{ErrorKind, ListDirArgs, ReadFileArgs};
pub use wicket_test_support::Fixture;
use wicket_tools::{Location, Tools};

/// The shared fixture with `ws/real.txt` ("inside") as the one inside file.
pub fn fixture() -> Fixture {
    let f = Fixture::new();
    std::fs::remove_file(f.ws.join("a.txt")).unwrap();
    f.write("real.txt", "inside\n");
    f
}

/// The tools on a fixture's workspace.
pub trait Tooled {
    fn tools(&self) -> Tools;
}

impl Tooled for Fixture {
    fn tools(&self) -> Tools {
        Tools::open(&self.ws).unwrap()
    }
}

pub fn read(tools: &Tools, path: &str) -> Result<String, wicket_tools::Error> {
    let location = tools.workspace().classify(path)?;
    let args = ReadFileArgs {
        limit: Default::default(),
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
