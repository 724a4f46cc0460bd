//! A temp folder holding `ws/` (the workspace), `outside/` (with a secret)
//! and `home/` (`$WICKET_HOME`), all by their canonical paths.

use std::path::{Path, PathBuf};

/// The folders of one test.
pub struct Fixture {
    /// Removed when the fixture is dropped.
    pub dir: tempfile::TempDir,
    /// The temp folder, canonical.
    pub root: PathBuf,
    /// The workspace.
    pub ws: PathBuf,
    /// A folder outside it, holding `secret`.
    pub outside: PathBuf,
    /// `$WICKET_HOME`.
    pub home: PathBuf,
}

impl Default for Fixture {
    fn default() -> Self {
        Fixture::new()
    }
}

impl Fixture {
    /// Makes the folders, with `ws/a.txt` ("alpha\nbeta\n") and `outside/secret`.
    pub fn new() -> Fixture {
        let dir = tempfile::tempdir().expect("a temp folder");
        let root = std::fs::canonicalize(dir.path()).expect("its canonical path");
        let (ws, outside, home) = (root.join("ws"), root.join("outside"), root.join("home"));
        for folder in [&ws, &outside, &home] {
            std::fs::create_dir_all(folder).expect("the fixture's folders");
        }
        std::fs::write(ws.join("a.txt"), "alpha\nbeta\n").expect("ws/a.txt");
        std::fs::write(outside.join("secret"), "SECRET\n").expect("outside/secret");
        Fixture {
            dir,
            root,
            ws,
            outside,
            home,
        }
    }

    /// Writes `ws/relative`, making its folders.
    pub fn write(&self, relative: &str, content: &str) -> PathBuf {
        let path = self.ws.join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, content).unwrap();
        path
    }

    /// Makes `ws/relative` a symlink to `target`.
    pub fn link(&self, relative: &str, target: impl AsRef<Path>) {
        let path = self.ws.join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(target, path).unwrap();
    }

    /// Reads `ws/relative`.
    pub fn read(&self, relative: &str) -> String {
        std::fs::read_to_string(self.ws.join(relative)).unwrap()
    }

    /// `home/sessions/ID/meta.json`, parsed.
    pub fn meta(&self, id: &str) -> serde_json::Value {
        let path = self.home.join("sessions").join(id).join("meta.json");
        serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
    }

    /// `home/sessions/ID/log.jsonl`, parsed line by line.
    pub fn log(&self, id: &str) -> Vec<serde_json::Value> {
        let path = self.home.join("sessions").join(id).join("log.jsonl");
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }
}
