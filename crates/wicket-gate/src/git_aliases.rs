//! The git aliases a command in the workspace would run with: `[alias]`
//! of the repository's own config (a repository is untrusted: `alias.st =
//! push` makes `git st` a push), of the person's `~/.gitconfig` and
//! `~/.config/git/config`, so that a deny on `git push` reads `git st` as
//! what it is. Read for deny and ask rules only; an allow never covers a
//! call because of what an alias says.

use std::path::{Path, PathBuf};

use crate::commands::{git_alias_expansion, git_subcommand, program_name};

/// The largest config file that is read: git's own configs are a few KiB;
/// a larger one's aliases are not seen (a limit a repository could use to
/// hide one: it is set far past any real config).
const CONFIG_MAX_BYTES: u64 = 4 * 1024 * 1024;

/// How many aliases deep an expansion is followed (git stops at a loop).
const MAX_DEPTH: usize = 8;

/// The aliases in force for commands in `workspace`, later files first
/// (the repository's over the person's, as git reads them).
pub(crate) fn aliases(workspace: &Path) -> Vec<(String, String)> {
    let mut files: Vec<PathBuf> = Vec::new();
    if let Some(git_dir) = git_dir(workspace) {
        files.push(git_dir.join("config"));
    }
    if let Some(home) = std::env::var_os("HOME").map(PathBuf::from) {
        files.push(home.join(".gitconfig"));
        files.push(home.join(".config/git/config"));
    }
    files
        .iter()
        .filter_map(|file| read_small(file))
        .flat_map(|text| parse(&text))
        .collect()
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
    let text = read_small(&dot_git)?;
    let pointed = text.lines().next()?.strip_prefix("gitdir:")?.trim();
    let path = Path::new(pointed);
    Some(if path.is_absolute() {
        path.to_path_buf()
    } else {
        workspace.join(path)
    })
}

/// A regular file's text, of at most [`CONFIG_MAX_BYTES`]; nothing for a
/// link, a FIFO or a device (never waited on), or a larger file.
fn read_small(path: &Path) -> Option<String> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    if !meta.is_file() {
        return None;
    }
    let bytes = wicket_os::files::read_regular(path, CONFIG_MAX_BYTES).ok()??;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// The `[alias]` entries of one config file's text, as `(name, value)`,
/// names lower case. git's syntax as far as aliases need it: sections by
/// `[name]` (case-insensitive), `key = value`, comments from `#` or `;`
/// outside quotes, double quotes and their escapes.
fn parse(text: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    let mut in_alias = false;
    for line in text.lines() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix('[') {
            let section = rest.split(']').next().unwrap_or_default().trim();
            in_alias = section.eq_ignore_ascii_case("alias");
            continue;
        }
        if !in_alias {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let key = key.trim();
        if key.is_empty() || key.starts_with(['#', ';']) {
            continue;
        }
        found.push((key.to_ascii_lowercase(), value_of(value)));
    }
    found
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
        );
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
