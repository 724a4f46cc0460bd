//! What a command really runs, read rather than trusted: the simple commands
//! of an `sh -c` / `bash -c` script (parsed by brush-parser, a real shell
//! parser), and the command under a wrapper (`env`, `sudo`, `timeout`, …).
//!
//! An allow rule may cover a script only when the script is [`Script::plain`]:
//! lists, pipelines, subshells and brace groups of simple commands whose every
//! word is literal, with no assignment, no substitution of any kind, no
//! `eval`, and no redirection but to a relative path below the command's
//! folder or to `/dev/null`. A deny rule matches any command found anywhere
//! in it, nested scripts and substitutions included.

use crate::commands::program_name;
use brush_parser::ast::{
    self, Command, CommandPrefixOrSuffixItem, CompoundCommand, CompoundList, IoFileRedirectTarget,
    IoRedirect, Pipeline,
};
use brush_parser::word::WordPiece;

/// Scripts nest (`sh -c "bash -c '…'"`) at most this deep before the
/// reading gives up (and the call gets its card).
const MAX_DEPTH: usize = 8;

/// A script longer than this is not read: the call gets its card.
const MAX_SCRIPT_BYTES: usize = 64 * 1024;

/// What a script runs.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Script {
    /// Each simple command whose program is literal, as far as its words are
    /// literal (a word that is not cuts the argv there), from every depth.
    pub commands: Vec<Vec<String>>,
    /// The files its redirections write, relative to its folder: each a
    /// write that a write rule must cover before an allow covers the script.
    pub writes: Vec<String>,
    /// True when an allow may cover it: see the module's doc.
    pub plain: bool,
}

/// The shells whose `-c` script is read.
const SHELLS: &[&str] = &[
    "sh",
    "bash",
    "dash",
    "zsh",
    "ksh",
    "mksh",
    "ash",
    "busybox-sh",
];

/// The script of `sh -c SCRIPT` (`bash -ec SCRIPT`, `/bin/sh -c …`) as an
/// allow reads it: a system shell (a bare name found on PATH, or one in
/// /bin or /usr/bin: a repository's own `./sh` is not a shell), a flags word
/// of known flags with `c`, the script, and nothing after.
pub fn script_of(argv: &[String]) -> Option<&str> {
    let [shell, flags, script] = argv else {
        return None;
    };
    let system = !shell.contains('/')
        || ["/bin/", "/usr/bin/"].iter().any(|folder| {
            shell
                .strip_prefix(folder)
                .is_some_and(|name| !name.contains('/'))
        });
    let flags = flags.strip_prefix('-')?;
    let known = flags.contains('c') && flags.chars().all(|flag| "cefuxlo".contains(flag));
    (system && SHELLS.contains(&program_name(shell)) && known).then_some(script.as_str())
}

/// The script of any shell's `-c` as a deny reads it: wherever the shell
/// is, whatever other flags come with `c`, whatever arguments follow.
fn any_script_of(argv: &[String]) -> Option<&str> {
    let (shell, rest) = argv.split_first()?;
    if !SHELLS.contains(&program_name(shell)) {
        return None;
    }
    let at = rest.iter().position(|word| {
        word.strip_prefix('-')
            .is_some_and(|flags| !flags.starts_with('-') && flags.contains('c'))
    })?;
    rest.get(at + 1).map(String::as_str)
}

/// Reads `script`. An unreadable script runs nothing an allow could cover:
/// it is not plain, and it has no commands a deny could match — the call
/// gets its card.
pub fn read(script: &str) -> Script {
    let mut reader = Reader::default();
    reader.script(script, 0);
    Script {
        commands: reader.commands,
        writes: reader.writes,
        plain: reader.plain,
    }
}

/// The commands `argv` runs, as deny and ask rules see them: itself, what it
/// wraps, and every command of its script, at every depth.
pub fn commands_of(argv: &[String]) -> Vec<Vec<String>> {
    let mut reader = Reader::default();
    reader.command(argv.to_vec(), 0);
    reader.commands
}

/// Whether `argv` may run a command the gate cannot read from its words:
/// a program or argument that is a variable or a substitution (`$g push`),
/// a shell reading a script from its input or a file (`… | sh`, `sh
/// x.sh`), `eval` or `source`, an interpreter given code (`python3 -c`,
/// `perl -e`, `node -e`, or its input), or `xargs` building a command
/// from its input. A deny cannot match what it cannot read: under a
/// managed deny, such a call gets a card that names the rule.
pub fn opaque(argv: &[String]) -> bool {
    let mut reader = Reader::default();
    reader.command(argv.to_vec(), 0);
    reader.cut || reader.commands.iter().any(|command| runs_unread(command))
}

/// The interpreters that take code in an argument or on their input, with
/// the options that give it.
const INTERPRETERS: &[(&str, &[&str])] = &[
    ("python", &["-c"]),
    ("perl", &["-e", "-E"]),
    ("ruby", &["-e"]),
    ("node", &["-e", "--eval", "-p", "--print"]),
    ("nodejs", &["-e", "--eval", "-p", "--print"]),
    ("bun", &["-e", "--eval", "-p", "--print"]),
    ("deno", &["eval"]),
    ("php", &["-r"]),
    ("lua", &["-e"]),
    ("tclsh", &[]),
    ("osascript", &["-e"]),
];

/// Whether one command runs what its words do not say (see [`opaque`]).
fn runs_unread(command: &[String]) -> bool {
    let Some(program) = command.first() else {
        return false;
    };
    let name = program_name(program);
    // python3, python3.11, perl5.36: the family's name.
    let family = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    if SHELLS.contains(&name) {
        return any_script_of(command).is_none();
    }
    if ["eval", "source", ".", "xargs", "parallel", "exec"].contains(&name) {
        return true;
    }
    INTERPRETERS
        .iter()
        .find(|(interpreter, _)| *interpreter == family)
        .is_some_and(|(_, options)| {
            let arguments = &command[1..];
            // Code on its input (no script named), or given inline.
            arguments.iter().all(|word| word.starts_with('-'))
                || arguments.iter().any(|word| {
                    options
                        .iter()
                        .any(|option| word == option || word.starts_with(&format!("{option}=")))
                })
        })
}

struct Reader {
    commands: Vec<Vec<String>>,
    writes: Vec<String>,
    plain: bool,
    /// A command's words were cut at one that is not literal.
    cut: bool,
}

impl Default for Reader {
    fn default() -> Reader {
        Reader {
            commands: Vec::new(),
            writes: Vec::new(),
            plain: true,
            cut: false,
        }
    }
}

/// Builtins that change what the rest of a script is: where it runs, or
/// what its words mean.
const STEERING: &[&str] = &[
    "cd", "pushd", "popd", "alias", "unalias", "set", "shopt", "export", "unset", "source", ".",
    "trap", "hash", "enable", "builtin", "declare", "typeset", "readonly", "local",
];

impl Reader {
    fn not_plain(&mut self) {
        self.plain = false;
    }

    fn script(&mut self, script: &str, depth: usize) {
        if depth > MAX_DEPTH || script.len() > MAX_SCRIPT_BYTES {
            self.not_plain();
            return;
        }
        let options = brush_parser::ParserOptions::default();
        // The parser is another crate's code over the model's text: a panic
        // in it is an unreadable script (a card), never a dead turn.
        let parsed = std::panic::catch_unwind(|| {
            brush_parser::Parser::new(std::io::Cursor::new(script.as_bytes()), &options)
                .parse_program()
        });
        match parsed {
            Ok(Ok(program)) => {
                for list in &program.complete_commands {
                    self.list(list, depth);
                }
            }
            _ => self.not_plain(),
        }
    }

    fn list(&mut self, list: &CompoundList, depth: usize) {
        for item in &list.0 {
            self.pipeline(&item.0.first, depth);
            for next in &item.0.additional {
                match next {
                    ast::AndOr::And(pipeline) | ast::AndOr::Or(pipeline) => {
                        self.pipeline(pipeline, depth)
                    }
                }
            }
        }
    }

    fn pipeline(&mut self, pipeline: &Pipeline, depth: usize) {
        if pipeline.timed.is_some() {
            self.not_plain();
        }
        for command in &pipeline.seq {
            self.shell_command(command, depth);
        }
    }

    fn shell_command(&mut self, command: &Command, depth: usize) {
        match command {
            Command::Simple(simple) => self.simple(simple, depth),
            Command::Compound(compound, redirects) => {
                if let Some(redirects) = redirects {
                    for redirect in &redirects.0 {
                        self.redirect(redirect, depth);
                    }
                }
                self.compound(compound, depth);
            }
            Command::Function(function) => {
                self.not_plain();
                self.compound(&function.body.0, depth);
            }
            Command::ExtendedTest(..) => self.not_plain(),
        }
    }

    fn compound(&mut self, compound: &CompoundCommand, depth: usize) {
        match compound {
            CompoundCommand::BraceGroup(group) => self.list(&group.list, depth),
            CompoundCommand::Subshell(subshell) => self.list(&subshell.list, depth),
            CompoundCommand::ForClause(clause) => {
                self.not_plain();
                for word in clause.values.iter().flatten() {
                    self.word(&word.value, depth);
                }
                self.list(&clause.body.list, depth);
            }
            CompoundCommand::IfClause(clause) => {
                self.not_plain();
                self.list(&clause.condition, depth);
                self.list(&clause.then, depth);
                for other in clause.elses.iter().flatten() {
                    if let Some(condition) = &other.condition {
                        self.list(condition, depth);
                    }
                    self.list(&other.body, depth);
                }
            }
            CompoundCommand::WhileClause(clause) | CompoundCommand::UntilClause(clause) => {
                self.not_plain();
                self.list(&clause.0, depth);
                self.list(&clause.1.list, depth);
            }
            CompoundCommand::CaseClause(clause) => {
                self.not_plain();
                self.word(&clause.value.value, depth);
                for case in &clause.cases {
                    if let Some(list) = &case.cmd {
                        self.list(list, depth);
                    }
                }
            }
            CompoundCommand::ArithmeticForClause(clause) => {
                self.not_plain();
                self.list(&clause.body.list, depth);
            }
            CompoundCommand::Arithmetic(_) | CompoundCommand::Coprocess(_) => self.not_plain(),
        }
    }

    fn simple(&mut self, simple: &ast::SimpleCommand, depth: usize) {
        let prefix = simple.prefix.iter().flat_map(|prefix| prefix.0.iter());
        let suffix = simple.suffix.iter().flat_map(|suffix| suffix.0.iter());
        let mut words = simple
            .word_or_name
            .iter()
            .map(|word| word.value.as_str())
            .collect::<Vec<_>>();
        for item in prefix.chain(suffix) {
            match item {
                CommandPrefixOrSuffixItem::Word(word) => words.push(&word.value),
                CommandPrefixOrSuffixItem::IoRedirect(redirect) => self.redirect(redirect, depth),
                CommandPrefixOrSuffixItem::AssignmentWord(_, word) => {
                    // `RUSTC_WRAPPER=./x cargo test` runs ./x: never covered by an allow.
                    self.not_plain();
                    self.word(&word.value, depth);
                }
                CommandPrefixOrSuffixItem::ProcessSubstitution(_, subshell) => {
                    self.not_plain();
                    self.list(&subshell.list, depth);
                }
            }
        }
        // Every word is read (a substitution anywhere is found); the argv
        // stops at the first word that is not literal, since what follows
        // it is not known.
        let mut argv = Vec::new();
        let mut cut = false;
        for word in words {
            match self.word(word, depth) {
                Some(literal) if !cut => argv.push(literal),
                _ => {
                    cut = true;
                    self.cut = true;
                    self.not_plain();
                }
            }
        }
        if argv
            .first()
            .is_some_and(|program| STEERING.contains(&program.as_str()))
        {
            self.not_plain();
        }
        if !argv.is_empty() {
            self.command(argv, depth);
        }
    }

    /// A command found: kept, and what it wraps or runs as a script read too.
    fn command(&mut self, argv: Vec<String>, depth: usize) {
        if depth > MAX_DEPTH {
            self.not_plain();
            return;
        }
        if let Some(script) = any_script_of(&argv) {
            self.script(script, depth + 1);
        }
        if argv
            .first()
            .is_some_and(|program| program_name(program) == "eval")
        {
            self.not_plain();
            let script = argv[1..].join(" ");
            self.script(&script, depth + 1);
        }
        if let Some(inner) = unwrapped(&argv) {
            self.command(inner, depth + 1);
        }
        // find -exec, git's aliases, …: what the table says it runs.
        for inner in crate::commands::run_by(&argv) {
            self.command(inner, depth + 1);
        }
        if !crate::commands::plain(&argv) {
            self.not_plain();
        }
        self.commands.push(argv);
    }

    fn redirect(&mut self, redirect: &IoRedirect, depth: usize) {
        match redirect {
            IoRedirect::File(_, kind, target) => match target {
                IoFileRedirectTarget::Filename(word) => {
                    let reads = matches!(kind, ast::IoFileRedirectKind::Read);
                    match self.word(&word.value, depth) {
                        Some(path) if is_device(&path) => {}
                        Some(path) if reads && below(&path) => {}
                        Some(path) if below(&path) => self.writes.push(path),
                        _ => self.not_plain(),
                    }
                }
                IoFileRedirectTarget::Fd(_) => {}
                IoFileRedirectTarget::ProcessSubstitution(_, subshell) => {
                    self.not_plain();
                    self.list(&subshell.list, depth);
                }
                IoFileRedirectTarget::Duplicate(word) => {
                    // `2>&1` is plain; `>&file` writes a file.
                    match self.word(&word.value, depth) {
                        Some(fd) if fd.chars().all(|c| c.is_ascii_digit() || c == '-') => {}
                        _ => self.not_plain(),
                    }
                }
            },
            IoRedirect::OutputAndError(word, _) => match self.word(&word.value, depth) {
                Some(path) if is_device(&path) => {}
                Some(path) if below(&path) => self.writes.push(path),
                _ => self.not_plain(),
            },
            // A here-document's body may expand anything: its card is shown.
            IoRedirect::HereDocument(..) | IoRedirect::HereString(..) => self.not_plain(),
        }
    }

    /// The literal text of a word, or `None` when the shell would expand it
    /// (a parameter, a tilde, a glob, a brace list, arithmetic, a
    /// substitution — whose script is read for deny rules).
    fn word(&mut self, raw: &str, depth: usize) -> Option<String> {
        let options = brush_parser::ParserOptions::default();
        let pieces = brush_parser::word::parse(raw, &options).ok()?;
        let mut text = String::new();
        let mut literal = true;
        for piece in &pieces {
            literal &= self.piece(&piece.piece, false, &mut text, depth);
        }
        literal.then_some(text)
    }

    fn piece(&mut self, piece: &WordPiece, quoted: bool, text: &mut String, depth: usize) -> bool {
        match piece {
            WordPiece::Text(part) => {
                text.push_str(part);
                quoted || !part.contains(['*', '?', '[', '{', '~'])
            }
            WordPiece::SingleQuotedText(part) => {
                text.push_str(part);
                true
            }
            WordPiece::EscapeSequence(part) => {
                text.push_str(part.strip_prefix('\\').unwrap_or(part));
                true
            }
            WordPiece::DoubleQuotedSequence(pieces)
            | WordPiece::GettextDoubleQuotedSequence(pieces) => {
                let mut literal = true;
                for inner in pieces {
                    literal &= self.piece(&inner.piece, true, text, depth);
                }
                literal
            }
            WordPiece::CommandSubstitution(script)
            | WordPiece::BackquotedCommandSubstitution(script) => {
                self.not_plain();
                self.script(script, depth + 1);
                false
            }
            WordPiece::AnsiCQuotedText(_)
            | WordPiece::TildeExpansion(_)
            | WordPiece::ParameterExpansion(_)
            | WordPiece::ArithmeticExpression(_) => false,
        }
    }
}

/// A redirection to or from nothing that is a file.
fn is_device(path: &str) -> bool {
    matches!(path, "/dev/null" | "/dev/stdout" | "/dev/stderr")
}

/// A path below the command's folder (no `..`, not absolute), and not in
/// `.git` or `.wicket`, which no rule may let a script write.
fn below(path: &str) -> bool {
    let parts: Vec<_> = std::path::Path::new(path).components().collect();
    !path.is_empty()
        && !path.starts_with('/')
        && parts.iter().all(|part| {
            matches!(
                part,
                std::path::Component::Normal(_) | std::path::Component::CurDir
            )
        })
        && !wicket_protocol::guarded::git_or_wicket(std::path::Path::new(path))
}

/// Whether a command that starts with `program` may run any other command
/// it is given (a shell, `env`, `sudo`, `xargs`, …): an argv prefix of it
/// alone allows anything.
pub fn runs_anything(program: &str) -> bool {
    let name = program_name(program);
    SHELLS.contains(&name)
        || name == "eval"
        || unwrapped(&[program.to_string(), "x".to_string()]).is_some()
}

/// The command a wrapper runs: `env A=1 git push` → `git push`,
/// `sudo -u x git push`, `timeout 5 git push`, `nice -n 5 …`, `xargs …`.
/// For deny and ask rules only: an allow never looks through a wrapper.
pub fn unwrapped(argv: &[String]) -> Option<Vec<String>> {
    let (program, rest) = argv.split_first()?;
    // Options of each wrapper that take the next word as their value.
    let (with_value, positionals): (&[&str], usize) = match program_name(program) {
        "env" => (&["-u", "--unset", "-C", "--chdir"], 0),
        "sudo" | "doas" => (
            &[
                "-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T", "--user", "--group",
            ],
            0,
        ),
        "nice" => (&["-n", "--adjustment"], 0),
        "time" => (&["-f", "-o", "--format", "--output"], 0),
        "ionice" => (&["-c", "-n", "-p", "-P", "-u", "--class", "--classdata"], 0),
        "timeout" => (&["-s", "-k", "--signal", "--kill-after"], 1),
        "stdbuf" => (&["-i", "-o", "-e", "--input", "--output", "--error"], 0),
        "xargs" => (
            &[
                "-I",
                "-L",
                "-n",
                "-P",
                "-s",
                "-d",
                "-E",
                "-a",
                "--arg-file",
                "--delimiter",
                "--max-args",
                "--max-lines",
                "--max-procs",
                "--max-chars",
                "--replace",
                "--eof",
            ],
            0,
        ),
        "nohup" | "command" | "builtin" | "setsid" | "exec" | "chronic" => (&["-a"], 0),
        _ => return None,
    };
    let env = program_name(program) == "env";
    let mut words = rest.iter();
    let mut skip = positionals;
    let mut inner: Vec<String> = Vec::new();
    while let Some(word) = words.next() {
        if word == "--" {
            inner.extend(words.by_ref().cloned());
            break;
        }
        let split = word == "--split-string"
            || (word.starts_with('-') && !word.starts_with("--") && word.ends_with('S'));
        if env && split {
            let line = words.next()?;
            inner.extend(shlex::split(line)?);
            inner.extend(words.by_ref().cloned());
            break;
        }
        if with_value.contains(&word.as_str()) {
            words.next();
            continue;
        }
        if word.starts_with('-') || (env && word.contains('=')) {
            continue;
        }
        if skip > 0 {
            skip -= 1;
            continue;
        }
        inner.push(word.clone());
        inner.extend(words.by_ref().cloned());
        break;
    }
    (!inner.is_empty()).then_some(inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(words: &[&str]) -> Vec<String> {
        words.iter().map(|word| word.to_string()).collect()
    }

    #[test]
    fn a_plain_script_lists_its_simple_commands() {
        let script = read("cargo test && cargo fmt --check; ls | wc -l 2>/dev/null > out.txt");
        assert!(script.plain);
        assert_eq!(
            script.commands,
            vec![
                argv(&["cargo", "test"]),
                argv(&["cargo", "fmt", "--check"]),
                argv(&["ls"]),
                argv(&["wc", "-l"]),
            ]
        );
        let quoted = read("echo 'a b' \"c d\" e\\ f");
        assert!(quoted.plain);
        assert_eq!(quoted.commands, vec![argv(&["echo", "a b", "c d", "e f"])]);
    }

    #[test]
    fn what_the_shell_would_expand_is_never_plain() {
        for script in [
            "$(echo git) push",
            "git `echo push`",
            "echo \"$(id)\"",
            "git push $REMOTE",
            "RUSTC_WRAPPER=./x cargo test",
            "eval git push",
            "cargo test > /etc/passwd",
            "cargo test > ../out",
            "cat <<EOF\n$(id)\nEOF\n",
            "for x in a; do git push; done",
            "f() { git push; }; f",
            "ls *.rs",
            "cat < <(id)",
            "if true; then echo; fi",
            "cargo test >& out",
        ] {
            assert!(!read(script).plain, "{script}");
        }
    }

    #[test]
    fn a_command_is_found_wherever_it_hides() {
        for script in [
            "git push",
            "echo x; git push origin",
            "true && (git push)",
            "{ git push; }",
            "echo $(git push)",
            "if true; then git push; fi",
            "sh -c 'bash -c \"git push\"'",
            "env A=1 git push",
            "eval 'git push'",
            "sudo -u me git push",
            "timeout 5 git push",
            "cat <(git push)",
        ] {
            let found = read(script).commands;
            assert!(
                found.iter().any(|command| command.len() >= 2
                    && program_name(&command[0]) == "git"
                    && command[1] == "push"),
                "{script}: {found:?}"
            );
        }
    }

    #[test]
    fn a_shell_call_is_its_script_and_a_wrapper_its_command() {
        assert_eq!(script_of(&argv(&["/bin/bash", "-ec", "x"])), Some("x"));
        assert_eq!(script_of(&argv(&["sh", "-c", "x", "extra"])), None);
        assert_eq!(script_of(&argv(&["python3", "-c", "x"])), None);
        assert_eq!(
            unwrapped(&argv(&["env", "-u", "X", "A=1", "git", "push"])),
            Some(argv(&["git", "push"]))
        );
        assert_eq!(
            unwrapped(&argv(&["env", "-S", "git push", "origin"])),
            Some(argv(&["git", "push", "origin"]))
        );
        assert_eq!(
            unwrapped(&argv(&["timeout", "-s", "KILL", "5", "git", "push"])),
            Some(argv(&["git", "push"]))
        );
        assert_eq!(unwrapped(&argv(&["git", "push"])), None);
        let all = commands_of(&argv(&["nice", "-n", "5", "sh", "-c", "git push"]));
        assert!(all.contains(&argv(&["git", "push"])), "{all:?}");
    }

    #[test]
    fn an_unreadable_script_is_not_plain() {
        assert!(!read("echo 'unterminated").plain);
        assert!(!read("((").plain);
    }
}
