//! The person's rules: which calls go through without a card, which always
//! ask, which are refused. They come from the home config's `[[rules]]`,
//! from `$WICKET_HOME/rules.toml` (where `allow_always` saves them; read
//! again for every call, so a revoke counts at the next one), and from
//! the workspace's config, whose rules can only ask or deny.
//!
//! Any matching deny wins, then ask, then (after the session's grants) allow.
//! A rule decides cards, never confinement: an allowed command runs in the
//! same jail as one a person allowed on its card.

use std::path::{Path, PathBuf};

use globset::GlobBuilder;
use wicket_protocol::rules::{Argv, Matcher, WriteTool};
use wicket_protocol::{AllowedBy, Reach, Rule, RuleAction, RuleId, RuleSpec};

use crate::{commands, shell};

mod saved;
pub use saved::{checked, fresh, parse, read_saved, revoke, save, save_named};

/// The file `allow_always` saves rules to, in `$WICKET_HOME`.
pub const RULES_FILE: &str = "rules.toml";

/// What went wrong reading or writing rules.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A rules file that cannot be read or is not valid.
    #[error("{path}: {message}; fix or remove it (rules decide which calls skip their card)")]
    File {
        /// The file.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// No rule has that id.
    #[error("no saved rule has the id {0}; `wicket grants` lists them")]
    NoSuchRule(String),
}

/// `Result` with this module's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A call as the rules see it.
#[derive(Debug, Clone, Copy)]
pub enum Subject<'s> {
    /// A command.
    Run {
        /// The exact argv.
        argv: &'s [String],
        /// Its folder relative to the workspace (`.` for the root).
        cwd: &'s str,
        /// It asked for the network.
        network: wicket_protocol::Network,
        /// It asked to write `.git`.
        git: bool,
        /// The paths outside the workspace it asked to read, where they really are.
        read: &'s [PathBuf],
    },
    /// A write.
    Write {
        /// write_file or search_replace.
        tool: &'s str,
        /// The resolved absolute target.
        absolute: &'s Path,
        /// It reaches a `.git` or `.wicket` entry or a git folder: only a
        /// rule that names it covers it (see [`names_guarded`]).
        guarded: bool,
    },
    /// A read, list or grep outside the workspace.
    ReadOutside {
        /// The absolute path.
        path: &'s Path,
        /// Which reach.
        reach: Reach,
    },
    /// A connection a command makes through Wicket's proxy.
    Net {
        /// The host, as rules name it (lower case, ASCII).
        host: &'s str,
        /// The port.
        port: u16,
        /// It resolves to a local address: an allow of every host (`*`)
        /// does not cover it.
        local: bool,
    },
    /// An MCP call.
    Mcp {
        /// The server.
        server: &'s str,
        /// The tool on it.
        tool: &'s str,
        /// The exact arguments.
        arguments: &'s serde_json::Value,
    },
}

/// What the rules say of one call, before the session's grants are asked.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Verdict {
    /// The first deny rule that matched.
    pub deny: Option<RuleId>,
    /// The first ask rule that matched.
    pub ask: Option<RuleId>,
    /// The allow that covers it.
    pub allow: Option<AllowedBy>,
    /// The first preview rule that covers a command (the person's own config only).
    pub preview: Option<RuleId>,
    /// The first managed deny that a command may run in a form the gate
    /// cannot read (`$g push`, `… | sh`, `python3 -c`), or with words
    /// between the rule's (`git -C . push`, when not read through): the call
    /// gets a card that names the rule, asked every time, never saved.
    pub held: Option<RuleId>,
}

/// Where a rule was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// `[[rules]]` of the managed policy (`/etc/wicket/managed.toml`):
    /// first, and final.
    Managed,
    /// `[[rules]]` of `$WICKET_HOME/config.toml`.
    HomeConfig,
    /// `$WICKET_HOME/rules.toml`: saved by `allow_always`, revocable.
    Saved,
    /// `[[rules]]` of the workspace's `.wicket/config.toml` (ask and deny only).
    Workspace,
}

impl Source {
    /// `rule`, read from here, in one line of a listing (`wicket grants`,
    /// the TUI's `/grants`).
    pub fn listed(self, rule: &Rule) -> String {
        format!(
            "{}  rule [{}]  {}",
            rule.id,
            self.as_str(),
            rule.spec().describe()
        )
    }

    /// How listings name it.
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Managed => "managed",
            Source::HomeConfig => "config",
            Source::Saved => "rules.toml",
            Source::Workspace => "workspace",
        }
    }
}

/// The rules one gate decides with.
#[derive(Debug, Clone, Default)]
pub struct Rules {
    /// The home config's and the workspace's, read with the config.
    config: Vec<(Source, Rule)>,
    /// `$WICKET_HOME/rules.toml`, read for each call (once, by the gate that serves it).
    saved: Option<PathBuf>,
}

impl Rules {
    /// The config's rules (each with its source) and the saved ones in `home`.
    pub fn new(config: Vec<(Source, Rule)>, home: &Path) -> Rules {
        Rules {
            config,
            saved: Some(home.join(RULES_FILE)),
        }
    }

    /// Every rule in force now: the config's, then the saved ones.
    pub fn all(&self) -> Result<Vec<(Source, Rule)>> {
        let mut all = self.config.clone();
        if let Some(path) = &self.saved {
            all.extend(
                read_saved(path)?
                    .into_iter()
                    .map(|rule| (Source::Saved, rule)),
            );
        }
        Ok(all)
    }

    /// Saves `spec` to rules.toml under a fresh id, which it returns.
    pub fn save(&self, spec: RuleSpec) -> Result<RuleId> {
        let Some(path) = &self.saved else {
            return Err(Error::File {
                path: RULES_FILE.into(),
                message: "this gate has no home to save rules in".into(),
            });
        };
        save(path, spec)
    }
}

/// What `rules` say of `subject`.
pub fn verdict(rules: &[(Source, Rule)], workspace: &Path, subject: &Subject<'_>) -> Verdict {
    let here = |rule: &Rule| {
        rule.workspace
            .as_deref()
            .is_none_or(|only| Path::new(only) == workspace)
    };
    let mut verdict = Verdict::default();
    let first = |action: RuleAction, reading: Reading| {
        rules
            .iter()
            .map(|(_, rule)| rule)
            .filter(|rule| rule.action == action && here(rule))
            .find(|rule| matches_as(rule, workspace, subject, reading))
            .map(|rule| rule.id.clone())
    };
    verdict.deny = first(RuleAction::Deny, Reading::Restrict);
    if verdict.deny.is_none()
        && let Subject::Run { argv, .. } = subject
    {
        let opaque = std::cell::OnceCell::new();
        verdict.held = rules
            .iter()
            .filter(|(source, rule)| {
                *source == Source::Managed
                    && rule.action == RuleAction::Deny
                    && here(rule)
                    && matches!(rule.matcher, Matcher::Run { .. })
            })
            .find(|(_, rule)| {
                matches_as(rule, workspace, subject, Reading::Loose)
                    || *opaque.get_or_init(|| shell::opaque(argv) || aliases_hide(argv, workspace))
            })
            .map(|(_, rule)| rule.id.clone());
    }
    // A deny whose words stand in the command with others between them
    // (`git -C . push` for `git push`) may or may not be that command: the
    // person decides, on a card.
    verdict.ask = first(RuleAction::Ask, Reading::Restrict)
        .or_else(|| first(RuleAction::Ask, Reading::Loose))
        .or_else(|| first(RuleAction::Deny, Reading::Loose));
    let allows: Vec<&Rule> = rules
        .iter()
        .filter(|(source, rule)| {
            // A repository's config can never let a call skip its card.
            rule.action == RuleAction::Allow && *source != Source::Workspace && here(rule)
        })
        .map(|(_, rule)| rule)
        .collect();
    verdict.allow = allow(&allows, workspace, subject);
    // A repository's config can never let a command skip its first card, even to a preview.
    verdict.preview = rules
        .iter()
        .filter(|(source, rule)| {
            rule.action == RuleAction::Preview && *source != Source::Workspace && here(rule)
        })
        .find(|(_, rule)| covers(rule, workspace, subject))
        .map(|(_, rule)| rule.id.clone());
    verdict
}

/// How a run rule is read: a deny or ask restricts, an allow covers.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Reading {
    /// The call itself, what it wraps, and every command of its script, by
    /// program name (`/usr/bin/git` is `git`); a flag the rule leaves out matches either.
    Restrict,
    /// As `Restrict`, but the rule's words after the program may stand with
    /// other words between them: `git -c x=y push` for `git push`.
    Loose,
    /// The call exactly as it is: the program word as written (`./git` is
    /// not `git`), the network and `.git` only when the rule gives them.
    Cover,
}

/// Whether an allow rule covers the call.
fn covers(rule: &Rule, workspace: &Path, subject: &Subject<'_>) -> bool {
    matches_as(rule, workspace, subject, Reading::Cover)
}

fn matches_as(rule: &Rule, workspace: &Path, subject: &Subject<'_>, reading: Reading) -> bool {
    match (&rule.matcher, subject) {
        (
            Matcher::Run {
                argv,
                cwd,
                network,
                git,
                read,
            },
            Subject::Run {
                argv: called,
                cwd: called_cwd,
                network: called_network,
                git: called_git,
                read: called_read,
            },
        ) => {
            let flag = |wanted: &Option<bool>, called: bool| match reading {
                Reading::Restrict | Reading::Loose => wanted.is_none_or(|wanted| wanted == called),
                Reading::Cover => !called || *wanted == Some(true),
            };
            // An allow gives the network it names, or less: `"direct"`
            // covers a call through Wicket, never the other way round.
            let networked = match reading {
                Reading::Restrict | Reading::Loose => {
                    network.is_none_or(|wanted| wanted == *called_network)
                }
                Reading::Cover => *called_network <= network.unwrap_or_default(),
            };
            let argv_matches = match reading {
                Reading::Restrict => restricted_reading(called, workspace)
                    .iter()
                    .any(|command| argv_matches(argv, command, true)),
                Reading::Loose => restricted_reading(called, workspace)
                    .iter()
                    .any(|command| words_among(argv, command) || unreadable_by(argv, command)),
                // A call that runs or writes what its words hide (`git -c
                // alias…`, `find -exec`, `--output=`) is covered only by a
                // rule with its exact argv, saved from a card that showed it.
                Reading::Cover => {
                    argv_matches(argv, called, false)
                        && (matches!(argv, Argv::Exact(_)) || commands::plain(called))
                }
            };
            // An allow gives a path to read only where it names it; a
            // deny or ask matches whatever the call reads.
            let reads = reading != Reading::Cover || reads_within(read.as_deref(), called_read);
            networked
                && flag(git, *called_git)
                && reads
                && cwd_matches(cwd.as_deref(), called_cwd)
                && argv_matches
        }
        (matcher, subject) => same_call(matcher, workspace, subject),
    }
}

/// The commands a deny or ask reads in `called`: itself, what it wraps and
/// runs, every command of its scripts ([`shell::commands_of`]), and what a
/// git command runs through the aliases of the workspace's repository and
/// the person's git config ([`git_aliases`]).
fn restricted_reading(called: &[String], workspace: &Path) -> Vec<Vec<String>> {
    let mut commands = shell::commands_of(called);
    let git = |command: &Vec<String>| runs_git(command);
    if !commands.iter().any(git) {
        return commands;
    }
    let aliases = crate::git_aliases::aliases(workspace).found;
    if aliases.is_empty() {
        return commands;
    }
    let expanded: Vec<Vec<String>> = commands
        .iter()
        .filter(|command| git(command))
        .flat_map(|command| crate::git_aliases::expansions(command, &aliases))
        .collect();
    for command in expanded {
        commands.extend(shell::commands_of(&command));
    }
    commands
}

/// Whether `command`'s program is git.
fn runs_git(command: &[String]) -> bool {
    command
        .first()
        .is_some_and(|program| commands::program_name(program) == "git")
}

/// Whether a git command of `called` may run what no one here can read
/// through an alias: the aliases could not all be read (a config past
/// the size read, includes too deep), or one it runs is a script that
/// runs what its words do not say ([`shell::opaque`]).
fn aliases_hide(called: &[String], workspace: &Path) -> bool {
    let git_commands: Vec<Vec<String>> = shell::commands_of(called)
        .into_iter()
        .filter(|command| runs_git(command))
        .collect();
    if git_commands.is_empty() {
        return false;
    }
    let aliases = crate::git_aliases::aliases(workspace);
    aliases.unread
        || git_commands.iter().any(|command| {
            crate::git_aliases::expansions(command, &aliases.found)
                .iter()
                .any(|expanded| shell::opaque(expanded))
        })
}

/// Whether every path a call reads lies in one a rule names (`~/…` is the
/// person's home; each is judged where it really is).
fn reads_within(named: Option<&[String]>, called: &[PathBuf]) -> bool {
    let named: Vec<PathBuf> = named
        .unwrap_or_default()
        .iter()
        .filter_map(|path| crate::sandbox::expand_home(path))
        .map(|path| std::fs::canonicalize(&path).unwrap_or(path))
        .collect();
    called
        .iter()
        .all(|path| named.iter().any(|named| path.starts_with(named)))
}

/// The allow that covers `subject`: one rule for the call, or, for a plain
/// shell script, one for each of its simple commands.
fn allow(rules: &[&Rule], workspace: &Path, subject: &Subject<'_>) -> Option<AllowedBy> {
    let covering = |subject: &Subject<'_>| {
        rules
            .iter()
            .filter(|rule| {
                !matches!(subject, Subject::Write { guarded: true, .. }) || names_guarded(rule)
            })
            .find(|rule| covers(rule, workspace, subject))
            .map(|rule| rule.id.clone())
    };
    if let Some(id) = covering(subject) {
        return Some(AllowedBy::Rule(id));
    }
    let Subject::Run {
        argv,
        cwd,
        network,
        git,
        read,
    } = *subject
    else {
        return None;
    };
    let script = shell::read(shell::script_of(argv)?);
    if !script.plain || (script.commands.is_empty() && script.writes.is_empty()) {
        return None;
    }
    let mut ids = Vec::new();
    for command in &script.commands {
        let id = covering(&Subject::Run {
            argv: command,
            cwd,
            network,
            git,
            read,
        })?;
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    // What its redirections write is a write, which a write rule must cover.
    for path in &script.writes {
        let absolute = workspace.join(cwd).join(path);
        let id = covering(&Subject::Write {
            tool: "write_file",
            absolute: &absolute,
            guarded: wicket_protocol::guarded::git_or_wicket(&absolute),
        })?;
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    Some(AllowedBy::Rules(ids))
}

/// Whether a write rule names a guarded path in plain words, so that it
/// may cover a write there: its glob names a `.git` or `.wicket` entry, or
/// it is one exact path (what `allow_always` saves from a card that said
/// "git"). `path = "**"` never covers `.git/hooks/post-checkout`.
pub fn names_guarded(rule: &Rule) -> bool {
    let Matcher::Write { path, .. } = &rule.matcher else {
        return false;
    };
    *path == exact_glob(&unescaped(path))
        || path
            .split('/')
            .any(|part| wicket_protocol::guarded::GUARDED_NAMES.contains(&part))
}

/// An exact glob's path again (`globset::escape` puts each special character in brackets).
fn unescaped(glob: &str) -> String {
    let mut out = String::new();
    let mut rest = glob;
    while let Some(index) = rest.find('[') {
        out.push_str(&rest[..index]);
        let tail = &rest[index..];
        match tail.get(1..).and_then(|after| after.split_once(']')) {
            Some((inner, after)) if inner.chars().count() == 1 => {
                out.push_str(inner);
                rest = after;
            }
            _ => {
                out.push_str(tail);
                return out;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The matchers that read the same for every action: writes, outside reads, MCP.
fn same_call(matcher: &Matcher, workspace: &Path, subject: &Subject<'_>) -> bool {
    match (matcher, subject) {
        (
            Matcher::Write { tool, path },
            Subject::Write {
                tool: called,
                absolute,
                guarded: _,
            },
        ) => {
            let tool_matches = match tool {
                WriteTool::Any => true,
                WriteTool::WriteFile => *called == "write_file",
                WriteTool::SearchReplace => *called == "search_replace",
            };
            tool_matches && path_matches(path, workspace, absolute)
        }
        (
            Matcher::ReadOutside { path, reach },
            Subject::ReadOutside {
                path: called,
                reach: called_reach,
            },
        ) => {
            reach.is_none_or(|reach| reach == *called_reach)
                && glob_matches(path, &called.to_string_lossy())
        }
        (
            Matcher::Mcp {
                server,
                tool,
                arguments,
            },
            Subject::Mcp {
                server: called_server,
                tool: called_tool,
                arguments: called_arguments,
            },
        ) => {
            server == called_server
                && tool.as_deref().is_none_or(|tool| tool == *called_tool)
                && arguments.as_ref().is_none_or(|arguments| {
                    wicket_session::canonical(arguments)
                        == wicket_session::canonical(called_arguments)
                })
        }
        (
            Matcher::Net { host, port },
            Subject::Net {
                host: called_host,
                port: called_port,
                local,
            },
        ) => {
            // A name that resolves to a local address is opened only by
            // a rule that names hosts, never by one for every host.
            port.is_none_or(|port| port == *called_port)
                && wicket_protocol::rules::host_matches(host, called_host)
                && !(*local && host == "*")
        }
        _ => false,
    }
}

fn argv_matches(rule: &Argv, argv: &[String], by_name: bool) -> bool {
    let word_matches = |index: usize, wanted: &String, called: &String| {
        if index == 0 && by_name {
            commands::program_name(wanted) == commands::program_name(called)
        } else {
            wanted == called
        }
    };
    let prefix_matches = |wanted: &[String]| {
        argv.len() >= wanted.len()
            && wanted
                .iter()
                .zip(argv)
                .enumerate()
                .all(|(index, (wanted, called))| word_matches(index, wanted, called))
    };
    match rule {
        Argv::Exact(wanted) => wanted.len() == argv.len() && prefix_matches(wanted),
        Argv::Prefix(wanted) => prefix_matches(wanted),
        Argv::Line(prefix) if by_name => restricted_line(argv).starts_with(&plain_line(prefix)),
        Argv::Line(prefix) => {
            let whole_program = prefix.contains(char::is_whitespace)
                || argv.first().is_some_and(|program| program == prefix);
            whole_program && written_line(argv).starts_with(prefix.as_str())
        }
    }
}

/// A command line as an allow reads it ([`Argv::Line`]): the words as
/// written, joined by spaces, each that holds a space, a quote or a
/// backslash (or is empty) quoted as a shell would, so no word passes for
/// two and two never pass for one.
fn written_line(argv: &[String]) -> String {
    let plain = |word: &str| {
        !word.is_empty()
            && !word.contains(|c: char| {
                c.is_whitespace() || c.is_control() || matches!(c, '\'' | '"' | '\\')
            })
    };
    argv.iter()
        .map(|word| match plain(word) {
            true => word.clone(),
            false => shlex::try_quote(word)
                .map(|quoted| quoted.into_owned())
                // A word shlex will not quote (a NUL) cannot be a line's.
                .unwrap_or_else(|_| "\u{0}".into()),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A command line as a deny or ask reads it: the program by its name, the
/// other words as they are, joined by single spaces (nothing quoted, so it
/// reads as wide as the words allow).
fn restricted_line(argv: &[String]) -> String {
    named_line(argv.iter().map(String::as_str))
}

/// `words` joined by single spaces, the first (the program) by its name.
fn named_line<'w>(mut words: impl Iterator<Item = &'w str>) -> String {
    let mut line = words
        .next()
        .map(|program| commands::program_name(program).to_string())
        .unwrap_or_default();
    for word in words {
        line.push(' ');
        line.push_str(word);
    }
    line
}

/// A rule's line as a deny or ask reads it: the program by its name, each
/// run of blanks one space (a space kept at the end: `"git "` names `git`
/// whole).
fn plain_line(prefix: &str) -> String {
    let mut line = named_line(prefix.split_whitespace());
    if prefix.ends_with(char::is_whitespace) {
        line.push(' ');
    }
    line
}

/// A deny on the command's program, where what the command runs cannot be
/// read (`git --config-env=alias.p=…`): the person decides on a card.
fn unreadable_by(rule: &Argv, argv: &[String]) -> bool {
    let Some(called) = argv.first() else {
        return false;
    };
    program_is(rule, called) && commands::unreadable(argv)
}

/// Whether `called` is the rule's program, by name: a line's first word
/// with nothing after it may be cut short (`"rm"` is `rmdir` too).
fn program_is(rule: &Argv, called: &str) -> bool {
    let called = commands::program_name(called);
    match rule {
        Argv::Exact(wanted) | Argv::Prefix(wanted) => wanted
            .first()
            .is_some_and(|program| commands::program_name(program) == called),
        Argv::Line(line) => match line.split_once(char::is_whitespace) {
            Some((program, _)) => commands::program_name(program) == called,
            None => called.starts_with(commands::program_name(line)),
        },
    }
}

/// The rule's program is the command's (by name), and the rule's other
/// words stand in the rest of the command in order, others between them.
fn words_among(rule: &Argv, argv: &[String]) -> bool {
    let Some((called, rest)) = argv.split_first() else {
        return false;
    };
    if !program_is(rule, called) {
        return false;
    }
    let mut rest = rest.iter();
    match rule {
        Argv::Exact(wanted) | Argv::Prefix(wanted) => wanted
            .iter()
            .skip(1)
            .all(|word| rest.any(|called| called == word)),
        // A line's last word may be cut short (`test` of `test:unit`)
        // unless a blank ends the line.
        Argv::Line(line) => {
            let words: Vec<&str> = line.split_whitespace().skip(1).collect();
            let cut = !line.ends_with(char::is_whitespace);
            words.iter().enumerate().all(|(index, word)| {
                if cut && index + 1 == words.len() {
                    rest.any(|called| called.starts_with(word))
                } else {
                    rest.any(|called| called == word)
                }
            })
        }
    }
}

fn cwd_matches(rule: Option<&str>, called: &str) -> bool {
    rule.is_none_or(|glob| glob == called || glob_matches(glob, called))
}

/// A relative glob matches inside the workspace, against the path below its
/// root; an absolute one against the absolute path.
fn path_matches(glob: &str, workspace: &Path, absolute: &Path) -> bool {
    if glob.starts_with('/') {
        return glob_matches(glob, &absolute.to_string_lossy());
    }
    match absolute.strip_prefix(workspace) {
        Ok(relative) => glob_matches(glob, &relative.to_string_lossy()),
        Err(_) => false,
    }
}

/// `*` stays within one folder, `**` crosses them; a bad glob matches nothing.
fn glob_matches(glob: &str, text: &str) -> bool {
    GlobBuilder::new(glob)
        .literal_separator(true)
        // A backslash is a character of a path, never an escape: an exact
        // rule escapes with brackets.
        .backslash_escape(false)
        .build()
        .map(|glob| glob.compile_matcher().is_match(text))
        .unwrap_or(false)
}

/// A path as a glob that matches only itself.
pub fn exact_glob(path: &str) -> String {
    globset::escape(path)
}

#[cfg(test)]
// Tests write their fixtures, a home's rules.toml among them, directly.
#[allow(clippy::disallowed_methods)]
mod tests;
