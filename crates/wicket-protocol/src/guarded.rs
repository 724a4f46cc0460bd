//! Files that something runs later, under another tool: the one table the
//! gate (a write's card), the jail (what a command may create) and the run's
//! result (what a command changed) all read.
//!
//! Two kinds:
//! - [`git_or_wicket`]: an entry named `.git` or `.wicket`, at any depth.
//!   git runs what a `.git` holds (hooks, `core.fsmonitor`, aliases) the next
//!   time the person types `git status`; Wicket reads `.wicket/config.toml`.
//!   No write reaches one unless a card said "git" in plain words.
//! - [`runs_later`]: files other tools run (husky's hooks, direnv's
//!   `.envrc`, an editor's tasks, CI workflows, build scripts). A write to
//!   one is allowed as any write is, but its card and its result say so.

use std::path::{Component, Path};

/// The names no write reaches without a card that said "git".
pub const GUARDED_NAMES: [&str; 2] = [".git", ".wicket"];

/// Whether `path` (relative to the workspace, or absolute) passes through
/// an entry named `.git` or `.wicket`.
pub fn git_or_wicket(path: &Path) -> bool {
    path.components().any(|component| match component {
        Component::Normal(name) => GUARDED_NAMES.iter().any(|guarded| name == *guarded),
        Component::Prefix(_) | Component::RootDir | Component::CurDir | Component::ParentDir => {
            false
        }
    })
}

/// How a file that runs later is matched: its path below the workspace.
#[derive(Debug, Clone, Copy)]
enum Shape<'a> {
    /// Exactly this path, at the root.
    Root(&'a str),
    /// This file name, in any folder.
    Named(&'a str),
    /// Anything below this folder, at the root.
    Under(&'a str),
}

impl Shape<'_> {
    fn matches(self, relative: &str) -> bool {
        match self {
            Shape::Root(path) => relative == path,
            Shape::Named(name) => relative
                .strip_suffix(name)
                .is_some_and(|folder| folder.is_empty() || folder.ends_with('/')),
            Shape::Under(folder) => relative
                .strip_prefix(folder)
                .is_some_and(|rest| rest.starts_with('/') && rest.len() > 1),
        }
    }
}

/// The files other tools run later, and who runs them. Extend it here:
/// the gate's cards, the run results and the tests all read this table.
const RUNS_LATER: &[(Shape<'static>, &str)] = &[
    (
        Shape::Under(".husky"),
        "git runs husky's hooks at commits and pushes",
    ),
    (
        Shape::Under(".githooks"),
        "git runs these hooks when core.hooksPath names the folder",
    ),
    (
        Shape::Root(".envrc"),
        "direnv runs it when a shell enters the folder",
    ),
    (
        Shape::Root(".vscode/tasks.json"),
        "VS Code runs its tasks, some when the folder opens",
    ),
    (
        Shape::Root(".vscode/settings.json"),
        "VS Code and its extensions run the programs it names",
    ),
    (
        Shape::Under(".github/workflows"),
        "GitHub Actions runs it on the next push",
    ),
    (
        Shape::Named("package.json"),
        "npm runs its scripts at install, test and build",
    ),
    (Shape::Named("Makefile"), "make runs it"),
    (Shape::Named("build.rs"), "cargo runs it at every build"),
    (
        Shape::Root(".cargo/config.toml"),
        "cargo runs the programs it names at every build",
    ),
    (
        Shape::Named("pyproject.toml"),
        "pip runs its build backend and hooks at install",
    ),
    (Shape::Named("setup.py"), "pip runs it at install"),
    (
        Shape::Root(".pre-commit-config.yaml"),
        "pre-commit runs its hooks at every commit",
    ),
];

/// Whether the file `name` in the folder at `folder` (below the workspace,
/// `/`-separated, empty for its root; never inside a `.git` or
/// `.wicket`) can be one [`runs_later`] names: by its name, in any folder,
/// or by its place (the root, or a folder a tool reads below the root). A
/// walk of every file asks this first and makes the file's path only then.
pub fn may_run_later(folder: &str, name: &[u8]) -> bool {
    let top = folder.split('/').next().unwrap_or_default();
    RUNS_LATER.iter().any(|(shape, _)| match shape {
        Shape::Named(named) => name == named.as_bytes(),
        Shape::Root(path) | Shape::Under(path) => {
            folder.is_empty() || path.split('/').next() == Some(top)
        }
    })
}

/// Who runs `relative` (a path below the workspace, `/`-separated) later,
/// when something does: "runs later: cargo runs it at every build".
pub fn runs_later(relative: &str) -> Option<String> {
    let relative = relative.trim_start_matches("./");
    // The words first: most paths name neither, and that costs no walk of their parts.
    let may_be_guarded = GUARDED_NAMES.iter().any(|name| relative.contains(name));
    if may_be_guarded && git_or_wicket(Path::new(relative)) {
        return Some(if relative.split('/').any(|part| part == ".wicket") {
            "runs later: Wicket reads its config from .wicket".to_string()
        } else {
            "runs later: git runs the hooks and config a .git holds".to_string()
        });
    }
    RUNS_LATER
        .iter()
        .find(|(shape, _)| shape.matches(relative))
        .map(|(_, who)| format!("runs later: {who}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn git_and_wicket_entries_are_found_at_any_depth() {
        for path in [
            ".git/config",
            "sub/.git",
            "a/b/.git/hooks/post-checkout",
            ".wicket/config.toml",
            "pkg/.wicket",
            "/abs/ws/sub/.git/config",
        ] {
            assert!(git_or_wicket(Path::new(path)), "{path}");
        }
        for path in [
            "src/git.rs",
            ".gitignore",
            "x.git/HEAD",
            "wicket/a",
            ".github/x",
        ] {
            assert!(!git_or_wicket(Path::new(path)), "{path}");
        }
    }

    #[test]
    fn files_that_run_later_say_who_runs_them() {
        let said = |path: &str| runs_later(path).unwrap_or_default();
        assert!(said(".husky/pre-commit").contains("husky"));
        assert!(said("crates/x/build.rs").contains("cargo"));
        assert!(said("package.json").contains("npm"));
        assert!(said("web/package.json").contains("npm"));
        assert!(said(".github/workflows/ci.yml").contains("GitHub"));
        assert!(said("sub/.git/config").contains("git"));
        assert_eq!(runs_later("src/main.rs"), None);
        assert_eq!(runs_later(".husky"), None);
        assert_eq!(runs_later("my.envrc"), None);
        assert_eq!(runs_later("src/notbuild.rs"), None);
        assert_eq!(runs_later("xMakefile"), None);
    }

    #[test]
    fn a_file_runs_later_names_is_one_may_run_later_lets_through() {
        let mut paths = vec![
            "src/main.rs".to_string(),
            "a/b/c/d.txt".to_string(),
            "Makefilex".to_string(),
        ];
        for (shape, _) in RUNS_LATER {
            let (Shape::Root(path) | Shape::Named(path) | Shape::Under(path)) = shape;
            for at in ["", "x/", "x/y/", ".github/", ".vscode/"] {
                paths.push(format!("{at}{path}"));
                paths.push(format!("{at}{path}/inner/file"));
                paths.push(format!("{at}{path}/f"));
            }
        }
        let mut named = 0;
        for path in &paths {
            let (folder, name) = path.rsplit_once('/').unwrap_or(("", path));
            if runs_later(path).is_some() {
                named += 1;
                assert!(may_run_later(folder, name.as_bytes()), "{path}");
            }
        }
        assert!(named >= 30, "{named}");
        // Deep in a tree, only a name a tool reads in any folder.
        assert!(!may_run_later("src/g001/m00001", b"f0000001.rs"));
        assert!(may_run_later("src/g001/m00001", b"Makefile"));
    }
}
