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

/// Where a tool looks for a file it runs later: the file's folder below
/// the workspace (`/`-separated, empty for its root) and its name.
#[derive(Debug, Clone, Copy)]
enum Shape {
    /// A file of this name in any folder: the tool reads it where it runs,
    /// or in each folder above that.
    Named(&'static str),
    /// As [`Shape::Named`], the name in any case (`JustFile`).
    AnyCase(&'static str),
    /// A file of this name in a folder whose path ends with this one, in
    /// any folder (`.cargo/config.toml`, `sub/.cargo/config.toml`).
    NamedIn(&'static str, &'static str),
    /// This file in this folder, from the root (`""`: the root itself).
    Root(&'static str, &'static str),
    /// A file of this name in any folder just below this one, from the root.
    OneBelow(&'static str, &'static str),
    /// Anything below this folder, from the root.
    Under(&'static str),
}

impl Shape {
    /// Whether the file `name` in the folder at `folder` is this one. The
    /// name is compared first: most files fail there, before any folder.
    fn matches(self, folder: &str, name: &[u8]) -> bool {
        match self {
            Shape::Named(named) => name == named.as_bytes(),
            Shape::AnyCase(named) => name.eq_ignore_ascii_case(named.as_bytes()),
            Shape::NamedIn(parent, named) => {
                name == named.as_bytes()
                    && folder
                        .strip_suffix(parent)
                        .is_some_and(|above| above.is_empty() || above.ends_with('/'))
            }
            Shape::Root(parent, named) => name == named.as_bytes() && folder == parent,
            Shape::OneBelow(parent, named) => {
                name == named.as_bytes()
                    && folder
                        .strip_prefix(parent)
                        .and_then(|rest| rest.strip_prefix('/'))
                        .is_some_and(|child| !child.is_empty() && !child.contains('/'))
            }
            Shape::Under(parent) => folder
                .strip_prefix(parent)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/')),
        }
    }

    /// The file name the shape asks for, if it asks for one.
    const fn name(self) -> Option<&'static str> {
        match self {
            Shape::Named(name)
            | Shape::AnyCase(name)
            | Shape::NamedIn(_, name)
            | Shape::Root(_, name)
            | Shape::OneBelow(_, name) => Some(name),
            Shape::Under(_) => None,
        }
    }
}

/// The files other tools run later (or that make a tool run something),
/// each where that tool itself looks for it, and who runs it. Extend it
/// here: the gate's cards, the write's result, the jail's scan after a
/// command (and so the run's result) and the tests all read this table.
/// Not here: what only git's own config makes run (`.gitattributes`
/// filters, `.gitmodules`): a `.git` is guarded whole.
const RUNS_LATER: &[(Shape, &str)] = &[
    // git runs these from its hooks.
    (
        Shape::Under(".husky"),
        "git runs husky's hooks at commits and pushes",
    ),
    (
        Shape::Under(".githooks"),
        "git runs these hooks when core.hooksPath names the folder",
    ),
    // pre-commit reads it at the top of each repository.
    (
        Shape::Named(".pre-commit-config.yaml"),
        "pre-commit runs its hooks at every commit",
    ),
    // direnv reads the .envrc of every folder a shell enters.
    (
        Shape::Named(".envrc"),
        "direnv runs it when a shell enters the folder",
    ),
    // Editors read these in the folder they open.
    (
        Shape::Root(".vscode", "tasks.json"),
        "VS Code runs its tasks, some when the folder opens",
    ),
    (
        Shape::Root(".vscode", "settings.json"),
        "VS Code and its extensions run the programs it names",
    ),
    (
        Shape::Root(".vscode", "launch.json"),
        "VS Code runs the programs and tasks it names when debugging starts",
    ),
    (
        Shape::Root("", ".devcontainer.json"),
        "VS Code and the devcontainer CLI run its commands, initializeCommand on the host",
    ),
    (
        Shape::Root(".devcontainer", "devcontainer.json"),
        "VS Code and the devcontainer CLI run its commands, initializeCommand on the host",
    ),
    (
        Shape::OneBelow(".devcontainer", "devcontainer.json"),
        "VS Code and the devcontainer CLI run its commands, initializeCommand on the host",
    ),
    (
        Shape::Under(".idea/runConfigurations"),
        "JetBrains IDEs run the programs its run configurations name",
    ),
    (
        Shape::Under(".run"),
        "JetBrains IDEs run the programs its run configurations name",
    ),
    // CI runs these on the next push.
    (
        Shape::Under(".github/workflows"),
        "GitHub Actions runs it on the next push",
    ),
    (
        Shape::Under(".github/actions"),
        "GitHub Actions runs the actions its workflows name here",
    ),
    (
        Shape::Root("", ".gitlab-ci.yml"),
        "GitLab CI runs it on the next push",
    ),
    // make reads the first of these in the folder it runs in (-C, recursive make).
    (Shape::Named("GNUmakefile"), "make runs it"),
    (Shape::Named("makefile"), "make runs it"),
    (Shape::Named("Makefile"), "make runs it"),
    // just looks upward from where it runs, in any case.
    (Shape::AnyCase("justfile"), "just runs its recipes"),
    (Shape::AnyCase(".justfile"), "just runs its recipes"),
    // Task looks upward from where it runs.
    (Shape::Named("Taskfile.yml"), "Task runs its tasks"),
    (Shape::Named("taskfile.yml"), "Task runs its tasks"),
    (Shape::Named("Taskfile.yaml"), "Task runs its tasks"),
    (Shape::Named("taskfile.yaml"), "Task runs its tasks"),
    (Shape::Named("Taskfile.dist.yml"), "Task runs its tasks"),
    (Shape::Named("taskfile.dist.yml"), "Task runs its tasks"),
    (Shape::Named("Taskfile.dist.yaml"), "Task runs its tasks"),
    (Shape::Named("taskfile.dist.yaml"), "Task runs its tasks"),
    // rake looks upward from where it runs.
    (Shape::Named("Rakefile"), "rake runs it"),
    (Shape::Named("rakefile"), "rake runs it"),
    (Shape::Named("Rakefile.rb"), "rake runs it"),
    (Shape::Named("rakefile.rb"), "rake runs it"),
    (
        Shape::Named("Gemfile"),
        "bundler runs it (Ruby) at every bundle install and exec",
    ),
    // cargo: a package's files, and the config of the folder it runs in and of each above.
    (Shape::Named("build.rs"), "cargo runs it at every build"),
    (
        Shape::Named("Cargo.toml"),
        "cargo runs the build script and builds the dependencies it names at every build",
    ),
    (
        Shape::NamedIn(".cargo", "config.toml"),
        "cargo runs the programs it names at every build",
    ),
    (
        Shape::NamedIn(".cargo", "config"),
        "cargo runs the programs it names at every build",
    ),
    // rustup: the folder cargo or rustc runs in, and each above.
    (
        Shape::Named("rust-toolchain.toml"),
        "rustup runs the toolchain it names (a path too) for cargo and rustc",
    ),
    (
        Shape::Named("rust-toolchain"),
        "rustup runs the toolchain it names (a path too) for cargo and rustc",
    ),
    // Node's package managers, in each package's folder.
    (
        Shape::Named("package.json"),
        "npm runs its scripts at install, test and build",
    ),
    (
        Shape::Named(".npmrc"),
        "npm runs the shell and node options it names",
    ),
    (
        Shape::Named(".yarnrc.yml"),
        "yarn runs the yarnPath and plugins it names at every yarn command",
    ),
    (
        Shape::Named(".yarnrc"),
        "yarn runs the yarn-path it names at every yarn command",
    ),
    (
        Shape::Named(".pnpmfile.cjs"),
        "pnpm runs its hooks at every install",
    ),
    (
        Shape::Named("bunfig.toml"),
        "bun runs the preload scripts it names",
    ),
    // Python: a package's build files, and what pytest, tox and nox read.
    (
        Shape::Named("pyproject.toml"),
        "pip runs its build backend and hooks at install",
    ),
    (Shape::Named("setup.py"), "pip runs it at install"),
    (
        Shape::Named("setup.cfg"),
        "pytest loads the plugins it names; setuptools its commands",
    ),
    // pytest collects a conftest.py from every folder it passes.
    (Shape::Named("conftest.py"), "pytest runs it"),
    (
        Shape::Named("pytest.ini"),
        "pytest loads the plugins it names",
    ),
    (
        Shape::Named(".pytest.ini"),
        "pytest loads the plugins it names",
    ),
    (
        Shape::Named("tox.ini"),
        "tox runs its commands; pytest loads the plugins it names",
    ),
    (Shape::Named("tox.toml"), "tox runs its commands"),
    (Shape::Named("noxfile.py"), "nox runs it"),
    // Gradle and Maven: a project's build files and wrappers.
    (
        Shape::Named("build.gradle"),
        "Gradle runs it at every build",
    ),
    (
        Shape::Named("build.gradle.kts"),
        "Gradle runs it at every build",
    ),
    (
        Shape::Named("settings.gradle"),
        "Gradle runs it at every build",
    ),
    (
        Shape::Named("settings.gradle.kts"),
        "Gradle runs it at every build",
    ),
    (Shape::Named("gradlew"), "the Gradle wrapper: people run it"),
    (
        Shape::NamedIn("gradle/wrapper", "gradle-wrapper.properties"),
        "gradlew runs the Gradle it names",
    ),
    (
        Shape::Named("pom.xml"),
        "Maven runs the plugins it names at every build",
    ),
    (Shape::Named("mvnw"), "the Maven wrapper: people run it"),
    // Version managers: where a shell or a command runs, and each folder above.
    (
        Shape::Named(".tool-versions"),
        "asdf and mise run the versions it names (a path too)",
    ),
    (
        Shape::Named("mise.toml"),
        "mise runs its hooks and env scripts when a shell enters the folder",
    ),
    (
        Shape::Named(".mise.toml"),
        "mise runs its hooks and env scripts when a shell enters the folder",
    ),
    (
        Shape::Named("mise.local.toml"),
        "mise runs its hooks and env scripts when a shell enters the folder",
    ),
    (
        Shape::Named(".mise.local.toml"),
        "mise runs its hooks and env scripts when a shell enters the folder",
    ),
    // Nix: the folder nix develop, nix-shell or nix-build runs in.
    (
        Shape::Named("flake.nix"),
        "nix runs it, and its shellHook at nix develop",
    ),
    (
        Shape::Named("shell.nix"),
        "nix-shell runs it and its shellHook",
    ),
    (
        Shape::Named("default.nix"),
        "nix-build and nix-shell run it",
    ),
    // Docker Compose: the folder it runs in.
    (
        Shape::Named("compose.yaml"),
        "docker compose runs the containers it names, with the host folders they mount",
    ),
    (
        Shape::Named("compose.yml"),
        "docker compose runs the containers it names, with the host folders they mount",
    ),
    (
        Shape::Named("docker-compose.yml"),
        "docker compose runs the containers it names, with the host folders they mount",
    ),
    (
        Shape::Named("docker-compose.yaml"),
        "docker compose runs the containers it names, with the host folders they mount",
    ),
];

/// Bit `n` for a name of `n` bytes; bit 63 for every longer one.
const fn length_bit(length: usize) -> u64 {
    1 << if length < 63 { length } else { 63 }
}

/// For each first byte of a name [`RUNS_LATER`] asks for, the lengths of
/// those names: one look tells most files apart from every name there.
const NAMES: [u64; 256] = {
    let mut index = [0u64; 256];
    let mut at = 0;
    while at < RUNS_LATER.len() {
        let shape = RUNS_LATER[at].0;
        if let Some(name) = shape.name()
            && let Some(&first) = name.as_bytes().first()
        {
            let bit = length_bit(name.len());
            index[first as usize] |= bit;
            if let Shape::AnyCase(_) = shape {
                index[first.to_ascii_uppercase() as usize] |= bit;
                index[first.to_ascii_lowercase() as usize] |= bit;
            }
        }
        at += 1;
    }
    index
};

/// The first bytes of the folders whose every file [`RUNS_LATER`] names.
const UNDER: [bool; 256] = {
    let mut index = [false; 256];
    let mut at = 0;
    while at < RUNS_LATER.len() {
        if let Shape::Under(folder) = RUNS_LATER[at].0
            && let Some(&first) = folder.as_bytes().first()
        {
            index[first as usize] = true;
        }
        at += 1;
    }
    index
};

/// Whether the file `name` in the folder at `folder` (below the workspace,
/// `/`-separated, empty for its root; never inside a `.git` or `.wicket`)
/// is one [`runs_later`] names. A walk of every file asks this first, with
/// no allocation, and makes the file's path only then: most files are
/// told apart by their name's first byte and length alone.
pub fn may_run_later(folder: &str, name: &[u8]) -> bool {
    let named = name
        .first()
        .is_some_and(|first| NAMES[usize::from(*first)] & length_bit(name.len()) != 0);
    let under = folder
        .as_bytes()
        .first()
        .is_some_and(|first| UNDER[usize::from(*first)]);
    (named || under) && who_runs(folder, name).is_some()
}

/// Who runs the file `name` in the folder at `folder`, from the table.
fn who_runs(folder: &str, name: &[u8]) -> Option<&'static str> {
    RUNS_LATER
        .iter()
        .find(|(shape, _)| shape.matches(folder, name))
        .map(|(_, who)| *who)
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
    let (folder, name) = relative.rsplit_once('/').unwrap_or(("", relative));
    who_runs(folder, name.as_bytes()).map(|who| format!("runs later: {who}"))
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
        assert!(said("./Makefile").contains("make"));
        assert_eq!(runs_later("src/main.rs"), None);
        assert_eq!(runs_later(".husky"), None);
        assert_eq!(runs_later("my.envrc"), None);
        assert_eq!(runs_later("src/notbuild.rs"), None);
        assert_eq!(runs_later("xMakefile"), None);
    }

    /// Each tool's own lookup: (path, a word of who runs it).
    const NAMED: &[(&str, &str)] = &[
        // make: the three names it tries, in any folder (-C, recursive make).
        ("GNUmakefile", "make"),
        ("makefile", "make"),
        ("Makefile", "make"),
        ("src/lib/GNUmakefile", "make"),
        ("sub/Makefile", "make"),
        // cargo: .cargo/config[.toml] in every folder above where it runs.
        (".cargo/config", "cargo"),
        (".cargo/config.toml", "cargo"),
        ("sub/.cargo/config.toml", "cargo"),
        ("a/b/.cargo/config", "cargo"),
        ("Cargo.toml", "cargo"),
        ("crates/x/Cargo.toml", "cargo"),
        ("build.rs", "cargo"),
        // rustup: rust-toolchain[.toml] in every folder above.
        ("rust-toolchain.toml", "rustup"),
        ("rust-toolchain", "rustup"),
        ("sub/rust-toolchain.toml", "rustup"),
        // direnv: any folder a shell enters.
        (".envrc", "direnv"),
        ("sub/.envrc", "direnv"),
        ("a/b/c/.envrc", "direnv"),
        // pytest: conftest.py wherever it collects, and its config files.
        ("conftest.py", "pytest"),
        ("tests/conftest.py", "pytest"),
        ("a/b/tests/conftest.py", "pytest"),
        ("pytest.ini", "pytest"),
        (".pytest.ini", "pytest"),
        ("tox.ini", "tox"),
        ("tox.toml", "tox"),
        ("setup.cfg", "pytest"),
        ("pkg/setup.cfg", "pytest"),
        ("noxfile.py", "nox"),
        ("pyproject.toml", "pip"),
        ("setup.py", "pip"),
        // Editors, at the folder they open.
        (".devcontainer.json", "devcontainer"),
        (".devcontainer/devcontainer.json", "devcontainer"),
        (".devcontainer/python/devcontainer.json", "devcontainer"),
        (".vscode/launch.json", "VS Code"),
        (".vscode/tasks.json", "VS Code"),
        (".vscode/settings.json", "VS Code"),
        (".idea/runConfigurations/App.xml", "JetBrains"),
        (".run/App.run.xml", "JetBrains"),
        // CI.
        (".github/workflows/ci.yml", "GitHub"),
        (".github/actions/setup/action.yml", "GitHub"),
        (".gitlab-ci.yml", "GitLab"),
        // Task runners.
        ("justfile", "just"),
        ("Justfile", "just"),
        ("JUSTFILE", "just"),
        ("sub/.justfile", "just"),
        ("Taskfile.yml", "Task"),
        ("taskfile.yml", "Task"),
        ("Taskfile.yaml", "Task"),
        ("sub/taskfile.yaml", "Task"),
        ("Taskfile.dist.yml", "Task"),
        ("taskfile.dist.yml", "Task"),
        ("Taskfile.dist.yaml", "Task"),
        ("taskfile.dist.yaml", "Task"),
        ("Rakefile", "rake"),
        ("rakefile", "rake"),
        ("Rakefile.rb", "rake"),
        ("lib/rakefile.rb", "rake"),
        ("Gemfile", "bundler"),
        // Node's package managers.
        ("package.json", "npm"),
        ("web/package.json", "npm"),
        (".npmrc", "npm"),
        ("web/.npmrc", "npm"),
        (".yarnrc.yml", "yarn"),
        (".yarnrc", "yarn"),
        (".pnpmfile.cjs", "pnpm"),
        ("bunfig.toml", "bun"),
        // Git hooks' own tools.
        (".husky/pre-commit", "husky"),
        (".githooks/pre-push", "hooks"),
        (".pre-commit-config.yaml", "pre-commit"),
        ("vendored/repo/.pre-commit-config.yaml", "pre-commit"),
        // Version managers, Nix, Compose, Gradle, Maven.
        (".tool-versions", "asdf"),
        ("mise.toml", "mise"),
        (".mise.toml", "mise"),
        ("mise.local.toml", "mise"),
        ("sub/.mise.local.toml", "mise"),
        ("flake.nix", "nix"),
        ("shell.nix", "nix-shell"),
        ("default.nix", "nix-build"),
        ("compose.yaml", "docker compose"),
        ("compose.yml", "docker compose"),
        ("deploy/docker-compose.yml", "docker compose"),
        ("docker-compose.yaml", "docker compose"),
        ("build.gradle.kts", "Gradle"),
        ("app/build.gradle", "Gradle"),
        ("settings.gradle", "Gradle"),
        ("settings.gradle.kts", "Gradle"),
        ("gradlew", "Gradle"),
        ("gradle/wrapper/gradle-wrapper.properties", "gradlew"),
        ("pom.xml", "Maven"),
        ("mvnw", "Maven"),
    ];

    /// Near misses: a name a tool reads, but not as the tool looks for it.
    const NOT_NAMED: &[&str] = &[
        "src/Makefile.bak",
        "Makefile.in",
        "Makefile.am",
        "xMakefile",
        "GNUmakefile~",
        "MAKEFILE",
        "makefile.old",
        ".cargo/config.bak",
        ".cargo/configs",
        ".cargo/config.toml.orig",
        "cargo/config.toml",
        "x.cargo/config.toml",
        ".cargo/sub/config.toml",
        "config.toml",
        "config",
        "rust-toolchain.toml.bak",
        "rust-toolchains",
        ".envrc.example",
        "sub/my.envrc",
        "envrc",
        "conftest.pyc",
        "tests/conftest.py.orig",
        "tests/my_conftest.py",
        "conftest_test.py",
        ".devcontainer/devcontainer.json.bak",
        ".devcontainer/a/b/devcontainer.json",
        ".devcontainer/Dockerfile",
        "devcontainer.json",
        "sub/.devcontainer/devcontainer.json",
        "sub/.devcontainer.json",
        ".vscode/launch.json.bak",
        ".vscode/extensions.json",
        "sub/.vscode/launch.json",
        "vscode/launch.json",
        ".vscode",
        ".husky",
        "sub/.husky/pre-commit",
        ".github/workflows",
        ".github/workflowsx/ci.yml",
        ".github/CODEOWNERS",
        "justfile.txt",
        "Taskfile.yml.bak",
        "Gemfile.lock",
        "Cargo.lock",
        "package-lock.json",
        ".npmrc.bak",
        "tox.ini.orig",
        "noxfile.pyc",
        "src/main.rs",
        "src/notbuild.rs",
        "",
        "/",
        "sub/",
    ];

    #[test]
    fn each_tool_is_asked_where_it_looks() {
        for (path, who) in NAMED {
            let said = runs_later(path).unwrap_or_default();
            assert!(said.contains(who), "{path}: {said:?}, not {who}");
            let (folder, name) = path.rsplit_once('/').unwrap_or(("", path));
            assert!(may_run_later(folder, name.as_bytes()), "{path}");
        }
        for path in NOT_NAMED {
            assert_eq!(runs_later(path), None, "{path}");
            let (folder, name) = path.rsplit_once('/').unwrap_or(("", path));
            assert!(!may_run_later(folder, name.as_bytes()), "{path}");
        }
    }

    #[test]
    fn every_entry_of_the_table_is_tested() {
        let untested: Vec<&Shape> = RUNS_LATER
            .iter()
            .map(|(shape, _)| shape)
            .filter(|shape| {
                !NAMED.iter().any(|(path, _)| {
                    let (folder, name) = path.rsplit_once('/').unwrap_or(("", path));
                    shape.matches(folder, name.as_bytes())
                })
            })
            .collect();
        assert!(untested.is_empty(), "{untested:?}");
    }

    #[test]
    fn a_file_runs_later_names_is_one_may_run_later_lets_through() {
        let mut paths = vec![
            "src/main.rs".to_string(),
            "a/b/c/d.txt".to_string(),
            "Makefilex".to_string(),
        ];
        for (shape, _) in RUNS_LATER {
            let path = match *shape {
                Shape::Named(name) | Shape::AnyCase(name) | Shape::Under(name) => name.to_string(),
                Shape::NamedIn(folder, name) | Shape::Root(folder, name) => {
                    format!("{folder}/{name}")
                }
                Shape::OneBelow(folder, name) => format!("{folder}/x/{name}"),
            };
            for at in ["", "x/", "x/y/", ".github/", ".vscode/", ".devcontainer/"] {
                paths.push(format!("{at}{path}"));
                paths.push(format!("{at}{path}/inner/file"));
                paths.push(format!("{at}{path}/f"));
                paths.push(format!("{at}{}", path.to_uppercase()));
            }
        }
        let mut named = 0;
        for path in &paths {
            let (folder, name) = path.rsplit_once('/').unwrap_or(("", path));
            let said = runs_later(path).is_some();
            named += usize::from(said);
            assert_eq!(may_run_later(folder, name.as_bytes()), said, "{path}");
        }
        assert!(named >= 200, "{named}");
        // Deep in a tree, only a name a tool reads in any folder.
        assert!(!may_run_later("src/g001/m00001", b"f0000001.rs"));
        assert!(may_run_later("src/g001/m00001", b"Makefile"));
        assert!(may_run_later("src/g001/m00001", b"conftest.py"));
    }
}
