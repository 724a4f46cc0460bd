//! The one table of programs that run other commands or write files their
//! words name, read by allow and deny rules alike: `find -exec rm`,
//! `find -delete`, `git -c alias.p=push p`, `git log --output=build.rs`,
//! `sort -o`, `tar --to-command`, `rg --pre`. A deny sees the commands
//! they run ([`run_by`]); an allow never covers a call that uses one of
//! these words ([`plain`]), so the person sees it on a card. Extend
//! [`TABLE`] (and, for git's aliases, [`git_alias`]); wrappers that run the
//! rest of their argv (`env`, `sudo`, `xargs`) are in
//! [`crate::shell::unwrapped`].

/// The program's name without its folder: `/usr/bin/git` → `git`.
pub fn program_name(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// How an option gives the command it runs.
#[derive(Debug, Clone, Copy)]
enum Given {
    /// The words after it, up to one of these (`find -exec rm {} ;`).
    ArgvUntil(&'static [&'static str]),
    /// Its value is a shell script (`git rebase --exec 'make test'`).
    Script,
    /// Its value is a program (`rg --pre ./decode`).
    Program,
    /// It runs this command itself (`find -delete` is `rm`).
    Implied(&'static [&'static str]),
}

/// One program's words that run or write.
struct Entry {
    program: &'static str,
    /// Options after which it runs a command.
    runs: &'static [(&'static str, Given)],
    /// Options that write the file they name.
    writes: &'static [&'static str],
    /// Options that change what it runs in ways no rule can read.
    hides: &'static [&'static str],
}

const FIND_END: &[&str] = &[";", "+"];

/// The table. A word matches an option when it is the option, or a long
/// option with `=` and its value.
const TABLE: &[Entry] = &[
    Entry {
        program: "find",
        runs: &[
            ("-exec", Given::ArgvUntil(FIND_END)),
            ("-execdir", Given::ArgvUntil(FIND_END)),
            ("-ok", Given::ArgvUntil(FIND_END)),
            ("-okdir", Given::ArgvUntil(FIND_END)),
            ("-delete", Given::Implied(&["rm"])),
        ],
        writes: &["-fprint", "-fprint0", "-fprintf", "-fls"],
        hides: &[],
    },
    Entry {
        program: "git",
        // Aliases (`-c alias.X=…`) are read by [`git_alias`].
        runs: &[("--exec", Given::Script), ("-x", Given::Script)],
        writes: &["--output"],
        hides: &["-c", "--config-env", "--exec-path"],
    },
    Entry {
        program: "sort",
        runs: &[("--compress-program", Given::Program)],
        writes: &["-o", "--output"],
        hides: &[],
    },
    Entry {
        program: "tar",
        runs: &[
            ("--to-command", Given::Script),
            ("--use-compress-program", Given::Script),
            ("-I", Given::Script),
            ("--info-script", Given::Script),
            ("--new-volume-script", Given::Script),
            ("-F", Given::Script),
        ],
        writes: &[],
        hides: &["--checkpoint-action"],
    },
    Entry {
        program: "rg",
        runs: &[("--pre", Given::Program)],
        writes: &[],
        hides: &[],
    },
    Entry {
        program: "rsync",
        runs: &[("-e", Given::Script), ("--rsh", Given::Script)],
        writes: &[],
        hides: &[],
    },
];

fn entry(argv: &[String]) -> Option<&'static Entry> {
    let program = program_name(argv.first()?);
    TABLE.iter().find(|entry| entry.program == program)
}

/// Whether `word` is `option`, `--long=value` for a long option, or
/// `-xvalue` for a one-letter one (`sort -oout`); the value when inline.
fn option<'w>(word: &'w str, option: &str) -> Option<Option<&'w str>> {
    if word == option {
        return Some(None);
    }
    let inline = if option.starts_with("--") {
        word.strip_prefix(option)?.strip_prefix('=')?
    } else if option.len() == 2 {
        word.strip_prefix(option)?
    } else {
        return None;
    };
    Some(Some(inline))
}

/// The commands `argv` runs besides itself, as a deny reads them: what
/// [`TABLE`]'s options give, and a git alias's expansion. A script is
/// returned as `sh -c SCRIPT`, which the caller reads as any shell call.
pub fn run_by(argv: &[String]) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    if let Some(bare) = git_subcommand(argv) {
        found.push(bare);
    }
    if let Some(expanded) = git_alias(argv) {
        found.push(expanded);
    }
    let Some(entry) = entry(argv) else {
        return found;
    };
    let mut index = 1;
    while index < argv.len() {
        let word = &argv[index];
        index += 1;
        for (name, given) in entry.runs {
            let Some(inline) = option(word, name) else {
                continue;
            };
            let value = || {
                inline
                    .map(str::to_string)
                    .or_else(|| argv.get(index).cloned())
            };
            match given {
                Given::ArgvUntil(ends) => {
                    let command: Vec<String> = argv[index..]
                        .iter()
                        .take_while(|word| !ends.contains(&word.as_str()))
                        .cloned()
                        .collect();
                    if !command.is_empty() {
                        found.push(command);
                    }
                }
                Given::Script => {
                    if let Some(script) = value() {
                        found.push(vec!["sh".into(), "-c".into(), script]);
                    }
                }
                Given::Program => {
                    if let Some(program) = value() {
                        found.push(vec![program]);
                    }
                }
                Given::Implied(command) => {
                    found.push(command.iter().map(|word| word.to_string()).collect());
                }
            }
        }
    }
    found
}

/// Whether an allow may cover `argv` as it is: none of [`TABLE`]'s words
/// for its program (a command it runs, a file it writes, a config it
/// takes from the command line) is in it.
pub fn plain(argv: &[String]) -> bool {
    let Some(entry) = entry(argv) else {
        return true;
    };
    let words = entry
        .runs
        .iter()
        .map(|(name, _)| *name)
        .chain(entry.writes.iter().copied())
        .chain(entry.hides.iter().copied());
    let words: Vec<&str> = words.collect();
    !argv[1..]
        .iter()
        .any(|word| words.iter().any(|name| option(word, name).is_some()))
}

/// Whether a deny on `argv`'s program cannot tell what it runs: git given
/// its config or programs from outside (`--config-env`, `--exec-path`),
/// where an alias's expansion cannot be read. Such a call gets its card.
pub fn unreadable(argv: &[String]) -> bool {
    argv.first()
        .is_some_and(|program| program_name(program) == "git")
        && argv[1..].iter().any(|word| {
            option(word, "--config-env").is_some() || option(word, "--exec-path").is_some()
        })
}

/// git's options before its subcommand that take the next word as their value
/// (git 2.47's list, and `--super-prefix` of older ones).
const GIT_VALUED: &[&str] = &[
    "-c",
    "-C",
    "--git-dir",
    "--work-tree",
    "--namespace",
    "--super-prefix",
    "--config-env",
    "--list-cmds",
    "--attr-source",
    "--shallow-file",
];

/// `git GLOBAL-OPTIONS… SUBCOMMAND ARGS` as `git SUBCOMMAND ARGS`: what
/// it does, whatever options come before (`git -c x.y=1 push`, `git -C .
/// push`, `git --no-pager push` are `git push` to a deny). `None` when
/// there are no such options, or no subcommand.
pub fn git_subcommand(argv: &[String]) -> Option<Vec<String>> {
    let (program, rest) = argv.split_first()?;
    if program_name(program) != "git" {
        return None;
    }
    let mut at = 0;
    while let Some(word) = rest.get(at) {
        if word == "--" {
            at += 1;
            break;
        }
        if !word.starts_with('-') {
            break;
        }
        at += if GIT_VALUED.contains(&word.as_str()) {
            2
        } else {
            1
        };
    }
    if at == 0 || at >= rest.len() {
        return None;
    }
    let mut bare = vec![program.clone()];
    bare.extend(rest[at..].iter().cloned());
    Some(bare)
}

/// What `git -c alias.NAME=VALUE … NAME ARGS` runs: `git VALUE ARGS`, or,
/// for `!VALUE`, the shell script `VALUE ARGS`.
pub fn git_alias(argv: &[String]) -> Option<Vec<String>> {
    let (program, rest) = argv.split_first()?;
    if program_name(program) != "git" {
        return None;
    }
    let mut aliases: Vec<(String, String)> = Vec::new();
    let mut words = rest.iter().enumerate();
    let (at, subcommand) = loop {
        let (at, word) = words.next()?;
        if word == "-c" {
            let (_, setting) = words.next()?;
            if let Some((key, value)) = setting.split_once('=')
                && let Some(name) = key
                    .strip_prefix("alias.")
                    .or_else(|| key.strip_prefix("Alias."))
            {
                aliases.push((name.to_ascii_lowercase(), value.to_string()));
            }
            continue;
        }
        if GIT_VALUED.contains(&word.as_str()) {
            words.next();
            continue;
        }
        if word.starts_with('-') {
            continue;
        }
        break (at, word);
    };
    let (_, value) = aliases
        .iter()
        .rev()
        .find(|(name, _)| *name == subcommand.to_ascii_lowercase())?;
    git_alias_expansion(program, value, &rest[at + 1..])
}

/// What `git ALIAS ARGUMENTS` runs when the alias is `value`: `git VALUE
/// ARGUMENTS`, or, for `!VALUE`, the shell script `VALUE ARGUMENTS`.
pub fn git_alias_expansion(
    program: &str,
    value: &str,
    arguments: &[String],
) -> Option<Vec<String>> {
    match value.strip_prefix('!') {
        Some(script) => {
            let mut script = script.to_string();
            for argument in arguments {
                script.push(' ');
                script.push_str(&shlex::try_quote(argument).unwrap_or_default());
            }
            Some(vec!["sh".into(), "-c".into(), script])
        }
        None => {
            let mut expanded = vec![program.to_string()];
            expanded.extend(shlex::split(value)?);
            expanded.extend(arguments.iter().cloned());
            Some(expanded)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(words: &[&str]) -> Vec<String> {
        words.iter().map(|word| word.to_string()).collect()
    }

    #[test]
    fn gits_global_options_are_read_through_to_its_subcommand() {
        let push = Some(argv(&["git", "push", "origin"]));
        for called in [
            &["git", "-c", "x.y=1", "push", "origin"][..],
            &["git", "-C", ".", "push", "origin"],
            &["/usr/bin/git", "--no-pager", "-C", "sub", "push", "origin"],
            &[
                "git",
                "--git-dir=.git",
                "--work-tree",
                ".",
                "push",
                "origin",
            ],
            &["git", "-P", "--literal-pathspecs", "push", "origin"],
            &["git", "--", "push", "origin"],
        ] {
            let bare = git_subcommand(&argv(called)).map(|mut bare| {
                bare[0] = "git".into();
                bare
            });
            assert_eq!(bare, push, "{called:?}");
        }
        assert_eq!(git_subcommand(&argv(&["git", "push"])), None);
        assert_eq!(git_subcommand(&argv(&["git", "--version"])), None);
        assert_eq!(git_subcommand(&argv(&["gitk", "-C", ".", "push"])), None);
    }

    #[test]
    fn find_runs_what_follows_exec_and_delete_is_rm() {
        assert_eq!(
            run_by(&argv(&[
                "find", ".", "-name", "x", "-exec", "rm", "-f", "{}", ";"
            ])),
            vec![argv(&["rm", "-f", "{}"])]
        );
        assert_eq!(
            run_by(&argv(&[
                "find", ".", "-execdir", "sh", "-c", "rm x", "{}", "+"
            ])),
            vec![argv(&["sh", "-c", "rm x", "{}"])]
        );
        assert_eq!(
            run_by(&argv(&["find", ".", "-delete"])),
            vec![argv(&["rm"])]
        );
        assert!(run_by(&argv(&["find", ".", "-name", "-exec"])).is_empty());
        assert!(!plain(&argv(&["find", ".", "-fprint", "out"])));
        assert!(!plain(&argv(&["find", ".", "-delete"])));
        assert!(plain(&argv(&["find", ".", "-name", "*.rs"])));
    }

    #[test]
    fn a_git_alias_is_read_as_what_it_runs() {
        assert_eq!(
            run_by(&argv(&["git", "-c", "alias.p=push", "p", "origin", "main"])),
            vec![
                argv(&["git", "p", "origin", "main"]),
                argv(&["git", "push", "origin", "main"])
            ]
        );
        assert_eq!(
            run_by(&argv(&["git", "-c", "alias.x=!rm -f f", "x"])),
            vec![argv(&["git", "x"]), argv(&["sh", "-c", "rm -f f"])]
        );
        assert_eq!(
            git_alias(&argv(&[
                "/usr/bin/git",
                "-C",
                ".",
                "-c",
                "Alias.LG=log --oneline",
                "lg"
            ])),
            Some(argv(&["/usr/bin/git", "log", "--oneline"]))
        );
        assert_eq!(
            git_alias(&argv(&["git", "-c", "user.name=x", "commit"])),
            None
        );
        assert!(!plain(&argv(&["git", "-c", "core.pager=x", "log"])));
        assert!(!plain(&argv(&["git", "log", "--output=build.rs"])));
        assert!(!plain(&argv(&["git", "diff", "--output", "x"])));
        assert!(plain(&argv(&["git", "log", "--oneline"])));
        assert!(unreadable(&argv(&["git", "--config-env=alias.p=P", "p"])));
        assert!(!unreadable(&argv(&["git", "push"])));
    }

    #[test]
    fn options_that_write_or_run_are_found_inline_too() {
        assert!(!plain(&argv(&["sort", "-o", "out", "in"])));
        assert!(!plain(&argv(&["sort", "-oout", "in"])));
        assert!(!plain(&argv(&["tar", "xf", "a.tar", "--to-command=sh"])));
        assert!(!plain(&argv(&["rg", "--pre", "./x", "pat"])));
        assert_eq!(
            run_by(&argv(&["rg", "--pre=./decode", "pat"])),
            vec![argv(&["./decode"])]
        );
        assert!(plain(&argv(&["sort", "in"])));
        assert!(plain(&argv(&["cargo", "test", "-o"])));
    }
}
