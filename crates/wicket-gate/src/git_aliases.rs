//! The git aliases a command in the workspace would run with: `[alias]`
//! of the repository's own config (a repository is untrusted: `alias.st =
//! push` makes `git st` a push), of the person's `~/.gitconfig` and
//! `~/.config/git/config`, and of every file they include (`include.path`,
//! `includeIf.*.path`, each condition taken as met), so that a deny on
//! `git push` reads `git st` as what it is. Read for deny and ask rules
//! only; an allow never covers a call because of what an alias says. A
//! config that cannot be read whole (past [`CONFIG_MAX_BYTES`], a FIFO,
//! includes past [`MAX_INCLUDE_DEPTH`]) may hide one: [`Aliases::unread`]
//! says so, and a git call under a managed deny is then held.

use std::path::{Path, PathBuf};

use crate::commands::{git_alias_expansion, git_subcommand, program_name};

/// The largest config file that is read: git's own configs are a few KiB;
/// a larger one's aliases are not seen (a limit a repository could use to
/// hide one: it is set far past any real config).
const CONFIG_MAX_BYTES: u64 = 4 * 1024 * 1024;

/// How many aliases deep an expansion is followed (git stops at a loop).
const MAX_DEPTH: usize = 8;

/// How many includes deep a config is read (git's own limit is 10).
const MAX_INCLUDE_DEPTH: usize = 10;

/// The aliases in force for commands in a workspace.
#[derive(Debug, Default)]
pub(crate) struct Aliases {
    /// `(name, value)`, names lower case, the repository's first.
    pub(crate) found: Vec<(String, String)>,
    /// Whether a config or a file one includes could not be read whole:
    /// an alias may be there that no one here has seen.
    pub(crate) unread: bool,
}

/// The aliases in force for commands in `workspace`, later files first
/// (the repository's over the person's, as git reads them).
pub(crate) fn aliases(workspace: &Path) -> Aliases {
    let mut files: Vec<PathBuf> = Vec::new();
    if let Some(git_dir) = git_dir(workspace) {
        files.push(git_dir.join("config"));
    }
    if let Some(home) = std::env::var_os("HOME").map(PathBuf::from) {
        files.push(home.join(".gitconfig"));
        files.push(home.join(".config/git/config"));
    }
    let mut aliases = Aliases::default();
    for file in &files {
        read_config(file, 0, &mut aliases);
    }
    aliases
}

/// The aliases of the config at `path` and of what it includes, `depth`
/// includes down, into `aliases`. A file that is not there is no config
/// (as git reads it); one that is there and cannot be read whole is `unread`.
fn read_config(path: &Path, depth: usize, aliases: &mut Aliases) {
    if depth > MAX_INCLUDE_DEPTH {
        aliases.unread = true;
        return;
    }
    let text = match read_small(path) {
        Read::Text(text) => text,
        Read::Absent => return,
        Read::Unread => {
            aliases.unread = true;
            return;
        }
    };
    let config = parse(&text);
    aliases.found.extend(config.aliases);
    let folder = path.parent().unwrap_or(Path::new("/"));
    for include in config.includes {
        let included = match include.strip_prefix("~/") {
            Some(rest) => match std::env::var_os("HOME") {
                Some(home) => PathBuf::from(home).join(rest),
                None => continue,
            },
            None => folder.join(include),
        };
        read_config(&included, depth + 1, aliases);
    }
}

/// What `command` runs through aliases, as a deny reads it: each expansion
/// in turn (`git st` with `st = push -f` is `git push -f`; a `!` alias is
/// `sh -c SCRIPT`).
pub(crate) fn expansions(command: &[String], aliases: &[(String, String)]) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    let mut current = git_subcommand(command).unwrap_or_else(|| command.to_vec());
    for _ in 0..MAX_DEPTH {
        let Some(program) = current.first() else {
            break;
        };
        if program_name(program) != "git" {
            break;
        }
        let Some(subcommand) = current.get(1) else {
            break;
        };
        let wanted = subcommand.to_ascii_lowercase();
        let Some((_, value)) = aliases.iter().find(|(name, _)| *name == wanted) else {
            break;
        };
        let Some(expanded) = git_alias_expansion(program, value, &current[2..]) else {
            break;
        };
        found.push(expanded.clone());
        current = git_subcommand(&expanded).unwrap_or(expanded);
    }
    found
}

/// The repository's git folder: `.git` itself, or where a `.git` file
/// points (`gitdir: …`, a worktree or submodule).
fn git_dir(workspace: &Path) -> Option<PathBuf> {
    let dot_git = workspace.join(".git");
    let meta = std::fs::symlink_metadata(&dot_git).ok()?;
    if meta.is_dir() {
        return Some(dot_git);
    }
    let Read::Text(text) = read_small(&dot_git) else {
        return None;
    };
    let pointed = text.lines().next()?.strip_prefix("gitdir:")?.trim();
    let path = Path::new(pointed);
    Some(if path.is_absolute() {
        path.to_path_buf()
    } else {
        workspace.join(path)
    })
}

/// What reading one config file gave.
enum Read {
    Text(String),
    /// Not there (a link to nothing too): no config, as git reads it.
    Absent,
    /// There, and not read whole: a FIFO or a device (never waited on),
    /// a folder, a file past [`CONFIG_MAX_BYTES`], one this process may
    /// not read.
    Unread,
}

/// A regular file's text (a link followed, as git does), of at most
/// [`CONFIG_MAX_BYTES`] (see [`Read`]).
fn read_small(path: &Path) -> Read {
    match wicket_os::files::read_regular(path, CONFIG_MAX_BYTES) {
        Ok(Some(bytes)) => Read::Text(String::from_utf8_lossy(&bytes).into_owned()),
        Ok(None) => Read::Absent,
        Err(_) => Read::Unread,
    }
}

/// What one config file says of aliases.
#[derive(Debug, Default, PartialEq, Eq)]
struct Config {
    /// Its `[alias]` entries, as `(name, value)`, names lower case.
    aliases: Vec<(String, String)>,
    /// The files it includes (`include.path`, `includeIf "…".path`), as written.
    includes: Vec<String>,
}

/// What one config file's text says of aliases. git's syntax as far as
/// aliases need it: sections by `[name]` or `[name "sub"]`
/// (case-insensitive), `key = value`, comments from `#` or `;` outside
/// quotes, double quotes and their escapes.
fn parse(text: &str) -> Config {
    let mut config = Config::default();
    let mut section = String::new();
    for line in text.lines() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix('[') {
            let name = rest
                .split([']', ' ', '"'])
                .next()
                .unwrap_or_default()
                .trim();
            section = name.to_ascii_lowercase();
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let key = key.trim();
        if key.is_empty() || key.starts_with(['#', ';']) {
            continue;
        }
        match section.as_str() {
            "alias" => config
                .aliases
                .push((key.to_ascii_lowercase(), value_of(value))),
            "include" | "includeif" if key.eq_ignore_ascii_case("path") => {
                config.includes.push(value_of(value));
            }
            _ => {}
        }
    }
    config
}

/// A config value: quotes removed, escapes read, a comment cut.
fn value_of(raw: &str) -> String {
    let mut value = String::new();
    let mut quoted = false;
    let mut chars = raw.trim().chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => quoted = !quoted,
            '\\' => match chars.next() {
                Some('n') => value.push('\n'),
                Some('t') => value.push('\t'),
                Some(other) => value.push(other),
                None => {}
            },
            '#' | ';' if !quoted => break,
            other => value.push(other),
        }
    }
    value.trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(words: &[&str]) -> Vec<String> {
        words.iter().map(|word| word.to_string()).collect()
    }

    #[test]
    fn a_repositorys_alias_is_read_as_what_it_runs() {
        let aliases = parse(
            "[core]\n\tbare = false\n[Alias]\n\tst = push # not a comment of git's\n\
             \tp = \"push --force\"\n\tx = !rm -rf ~\n[user]\n\tname = x\n",
        )
        .aliases;
        assert_eq!(
            aliases,
            vec![
                ("st".into(), "push".into()),
                ("p".into(), "push --force".into()),
                ("x".into(), "!rm -rf ~".into()),
            ]
        );
        assert_eq!(
            expansions(&argv(&["git", "-C", ".", "st", "origin"]), &aliases),
            vec![argv(&["git", "push", "origin"])]
        );
        assert_eq!(
            expansions(&argv(&["git", "p"]), &aliases),
            vec![argv(&["git", "push", "--force"])]
        );
        assert_eq!(
            expansions(&argv(&["git", "x"]), &aliases),
            vec![argv(&["sh", "-c", "rm -rf ~"])]
        );
        assert!(expansions(&argv(&["git", "status"]), &aliases).is_empty());
    }

    #[test]
    // A test writes its own scratch configs, not a workspace's files.
    #[allow(clippy::disallowed_methods)]
    fn an_included_configs_aliases_are_read_and_one_that_cannot_be_is_said() {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("config");
        std::fs::write(
            &config,
            "[include]\n\tpath = more.gitconfig\n[includeIf \"gitdir:/x/\"]\n\tpath = cond\n\
             [include]\n\tpath = absent\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("more.gitconfig"), "[alias]\n\tst = push\n").unwrap();
        std::fs::write(dir.path().join("cond"), "[ALIAS]\n\tsy = push -f\n").unwrap();
        let mut aliases = Aliases::default();
        read_config(&config, 0, &mut aliases);
        assert_eq!(
            aliases.found,
            vec![
                ("st".to_string(), "push".to_string()),
                ("sy".to_string(), "push -f".to_string())
            ]
        );
        assert!(
            !aliases.unread,
            "a missing include is no config, as for git"
        );
        // Past the size read, or an include loop past git's depth: unread.
        let big = dir.path().join("big");
        std::fs::write(&big, vec![b'#'; CONFIG_MAX_BYTES as usize + 1]).unwrap();
        std::fs::write(dir.path().join("loop"), "[include]\n\tpath = loop\n").unwrap();
        for file in ["big", "loop"] {
            let mut aliases = Aliases::default();
            read_config(&dir.path().join(file), 0, &mut aliases);
            assert!(aliases.unread, "{file}");
        }
    }

    #[test]
    fn an_alias_of_an_alias_is_followed_and_a_loop_ends() {
        let aliases = vec![
            ("a".to_string(), "b".to_string()),
            ("b".to_string(), "push".to_string()),
            ("l".to_string(), "l".to_string()),
        ];
        assert_eq!(
            expansions(&argv(&["git", "a"]), &aliases),
            vec![argv(&["git", "b"]), argv(&["git", "push"])]
        );
        assert_eq!(expansions(&argv(&["git", "l"]), &aliases).len(), MAX_DEPTH);
    }
}
