//! Rules as the person writes them (`[[rules]]` in the home config or
//! `$WICKET_HOME/rules.toml`), as `allow_always` saves them, and as the API
//! lists them: one flat table a rule, checked into a typed [`Rule`] before
//! anything matches against it. A misspelt key is an error, never a rule
//! that matches more than it says.

use serde::{Deserialize, Serialize};

use crate::ids::{GrantId, RuleId};
use crate::reach::Reach;

/// What a rule does to the calls it matches. Any matching deny wins, then
/// ask, then allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RuleAction {
    /// The call goes through without a card (never without the jail).
    Allow,
    /// The call always raises a card, even where a grant or an allow would pass it.
    Ask,
    /// The call is refused without a card.
    Deny,
    /// A command runs over an overlay of the workspace with no first card;
    /// the effects card asks whether to apply what it changed (`run` only).
    Preview,
}

impl RuleAction {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            RuleAction::Allow => "allow",
            RuleAction::Ask => "ask",
            RuleAction::Deny => "deny",
            RuleAction::Preview => "preview",
        }
    }
}

/// Where a saved rule came from: the card whose `allow_always` saved it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Origin {
    /// The session the card was in.
    pub session: crate::SessionId,
    /// The card.
    pub card: crate::CardId,
    /// When (RFC 3339).
    pub ts: String,
}

/// One rule as written: a flat table. [`RuleSpec::check`] makes it a [`Rule`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleSpec {
    /// Its id (saved rules have one; others are numbered where they are read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<RuleId>,
    /// allow, ask or deny.
    pub action: RuleAction,
    /// `run`, `write_file`, `search_replace`, `write` (both), `read_outside`, `mcp`.
    pub tool: String,
    /// run: the exact argv.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argv: Option<Vec<String>>,
    /// run: the argv's first words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argv_prefix: Option<Vec<String>>,
    /// run: the start of the command line, as text (Claude Code's
    /// `Bash(npm run test:*)` is `"npm run test"`, which `npm run
    /// test:unit` starts with): see [`Argv::Line`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command_prefix: Option<String>,
    /// run: the folder, a glob relative to the workspace (`.` is its root).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// run: an allow covers a call with network only when this is true; an
    /// ask or deny without it matches either.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<crate::Network>,
    /// run: as `network`, for a call that asks to write `.git`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git: Option<bool>,
    /// run: an allow covers a call that asks to read paths outside the
    /// workspace (`read`) only when each lies in one of these (absolute or
    /// `~/…`); an ask or deny matches either.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read: Option<Vec<String>>,
    /// Writes and outside reads: a glob; relative means inside the workspace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// read_outside: read, list or grep (any when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reach: Option<Reach>,
    /// mcp: the server's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// mcp: the tool's name on the server (any when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp_tool: Option<String>,
    /// mcp: the exact arguments (any when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<serde_json::Value>,
    /// net: the host, a glob (`*.crates.io` also matches `crates.io`), or
    /// an IP address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// net: the port (any when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// Only in this workspace (absolute); every workspace when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
    /// The card that saved it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<Origin>,
}

/// Which argvs a run rule matches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Argv {
    /// Exactly this argv.
    Exact(Vec<String>),
    /// Every argv that starts with these words.
    Prefix(Vec<String>),
    /// Every argv whose command line starts with this text, as Claude Code
    /// reads `Bash(npm run test:*)`: the words joined by single spaces. An
    /// allow reads the line as written, a word quoted as a shell would
    /// where it holds a space or a quote (so `["npm run test"]` is not
    /// `npm run test`), and its program whole (`ls` covers `ls -la`, never
    /// `lsof`); a deny or ask reads the program by its name and no word
    /// quoted, so it covers at least what Claude Code's did (`rm` denies
    /// `rmdir` too).
    Line(String),
}

/// Which write tools a write rule matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteTool {
    /// write_file.
    WriteFile,
    /// search_replace.
    SearchReplace,
    /// Both.
    Any,
}

/// What a rule matches, by tool.
#[derive(Debug, Clone, PartialEq)]
pub enum Matcher {
    /// A command.
    Run {
        /// Its argv.
        argv: Argv,
        /// Its folder, a glob relative to the workspace.
        cwd: Option<String>,
        /// See [`RuleSpec::network`].
        network: Option<crate::Network>,
        /// See [`RuleSpec::git`].
        git: Option<bool>,
        /// See [`RuleSpec::read`].
        read: Option<Vec<String>>,
    },
    /// A write.
    Write {
        /// Which tools.
        tool: WriteTool,
        /// A glob; relative means inside the workspace.
        path: String,
    },
    /// A read, list or grep outside the workspace.
    ReadOutside {
        /// An absolute glob.
        path: String,
        /// Which reach, or any.
        reach: Option<Reach>,
    },
    /// A connection through Wicket's proxy.
    Net {
        /// A host glob, lower case: see [`host_matches`].
        host: String,
        /// The port, or any.
        port: Option<u16>,
    },
    /// An MCP call.
    Mcp {
        /// The server.
        server: String,
        /// The tool, or any.
        tool: Option<String>,
        /// The exact arguments, or any.
        arguments: Option<serde_json::Value>,
    },
}

/// A rule, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    /// Its id.
    pub id: RuleId,
    /// What it does.
    pub action: RuleAction,
    /// What it matches.
    pub matcher: Matcher,
    /// Only in this workspace.
    pub workspace: Option<String>,
    /// The card that saved it.
    pub origin: Option<Origin>,
}

impl RuleSpec {
    /// The typed rule, under `id` when the spec has none; an error names the
    /// key that is wrong and what would be right.
    // The table of which keys each rule tool takes and what each must hold, read as one list; past 80 lines because a rule has that many keys.
    pub fn check(&self, id: &str) -> Result<Rule, String> {
        let id = self.id.clone().unwrap_or_else(|| RuleId::from(id));
        if self.action == RuleAction::Preview && self.tool != "run" {
            return Err(format!(
                "rule {id}: action = \"preview\" is for tool = \"run\" only (a preview runs a command over a copy of the workspace)"
            ));
        }
        let misplaced = |keys: &[(&str, bool)]| -> Result<(), String> {
            match keys.iter().find(|(_, present)| *present) {
                Some((key, _)) => Err(format!(
                    "rule {id}: `{key}` does not apply to tool = \"{}\"",
                    self.tool
                )),
                None => Ok(()),
            }
        };
        let run_keys = [
            ("argv", self.argv.is_some()),
            ("argv_prefix", self.argv_prefix.is_some()),
            ("command_prefix", self.command_prefix.is_some()),
            ("cwd", self.cwd.is_some()),
            ("network", self.network.is_some()),
            ("git", self.git.is_some()),
            ("read", self.read.is_some()),
        ];
        let path_keys = [
            ("path", self.path.is_some()),
            ("reach", self.reach.is_some()),
        ];
        let mcp_keys = [
            ("server", self.server.is_some()),
            ("mcp_tool", self.mcp_tool.is_some()),
            ("arguments", self.arguments.is_some()),
        ];
        let net_keys = [("host", self.host.is_some()), ("port", self.port.is_some())];
        if self.tool != "net" {
            misplaced(&net_keys)?;
        }
        let path = || match &self.path {
            Some(path) if !path.is_empty() => Ok(path.clone()),
            _ => Err(format!(
                "rule {id}: tool = \"{}\" needs `path` (a glob; relative means inside the workspace)",
                self.tool
            )),
        };
        let matcher = match self.tool.as_str() {
            "run" => {
                misplaced(&path_keys)?;
                misplaced(&mcp_keys)?;
                let argv = match (&self.argv, &self.argv_prefix, &self.command_prefix) {
                    (Some(argv), None, None) if !argv.is_empty() => Argv::Exact(argv.clone()),
                    (None, Some(prefix), None) if !prefix.is_empty() => {
                        Argv::Prefix(prefix.clone())
                    }
                    (None, None, Some(line)) if line.starts_with(|c: char| !c.is_whitespace()) => {
                        Argv::Line(line.clone())
                    }
                    (None, None, Some(line)) => {
                        return Err(format!(
                            "rule {id}: command_prefix {line:?} must start with the program's \
                             name (\"npm run test\")"
                        ));
                    }
                    (Some(_), Some(_), _) | (Some(_), _, Some(_)) | (_, Some(_), Some(_)) => {
                        return Err(format!(
                            "rule {id}: give one of `argv` (exact), `argv_prefix` or \
                             `command_prefix`, not more"
                        ));
                    }
                    _ => {
                        return Err(format!(
                            "rule {id}: tool = \"run\" needs a non-empty `argv` (the exact command), \
                             `argv_prefix` (its first words) or `command_prefix` (the start of its line)"
                        ));
                    }
                };
                if let Some(bad) = self
                    .read
                    .iter()
                    .flatten()
                    .find(|path| !(path.starts_with('/') || path.starts_with("~/")))
                {
                    return Err(format!(
                        "rule {id}: a `read` path is absolute or starts with ~/ (it is outside the workspace): {bad}"
                    ));
                }
                Matcher::Run {
                    argv,
                    cwd: self.cwd.clone(),
                    network: self.network,
                    git: self.git,
                    read: self.read.clone(),
                }
            }
            "write_file" | "search_replace" | "write" => {
                misplaced(&run_keys)?;
                misplaced(&mcp_keys)?;
                misplaced(&[("reach", self.reach.is_some())])?;
                let tool = match self.tool.as_str() {
                    "write_file" => WriteTool::WriteFile,
                    "search_replace" => WriteTool::SearchReplace,
                    _ => WriteTool::Any,
                };
                Matcher::Write {
                    tool,
                    path: path()?,
                }
            }
            "read_outside" => {
                misplaced(&run_keys)?;
                misplaced(&mcp_keys)?;
                let path = path()?;
                if !path.starts_with('/') {
                    return Err(format!(
                        "rule {id}: a read_outside path is absolute (it is outside the workspace): {path}"
                    ));
                }
                Matcher::ReadOutside {
                    path,
                    reach: self.reach,
                }
            }
            "net" => {
                misplaced(&run_keys)?;
                misplaced(&path_keys)?;
                misplaced(&mcp_keys)?;
                let Some(host) = self.host.as_deref() else {
                    return Err(format!(
                        "rule {id}: tool = \"net\" needs `host` (a name such as \"pypi.org\", a glob \
                         such as \"*.crates.io\", or an IP address)"
                    ));
                };
                if let Some(why) = host_pattern_error(host) {
                    return Err(format!(
                        "rule {id}: host = {host:?} is not a host pattern: {why}"
                    ));
                }
                if self.port == Some(0) {
                    return Err(format!(
                        "rule {id}: port = 0 is no port; give 1 to 65535, or leave it out for any"
                    ));
                }
                Matcher::Net {
                    host: host.to_ascii_lowercase(),
                    port: self.port,
                }
            }
            "mcp" => {
                misplaced(&run_keys)?;
                misplaced(&path_keys)?;
                let Some(server) = self.server.clone().filter(|server| !server.is_empty()) else {
                    return Err(format!("rule {id}: tool = \"mcp\" needs `server`"));
                };
                Matcher::Mcp {
                    server,
                    tool: self.mcp_tool.clone(),
                    arguments: self.arguments.clone(),
                }
            }
            other => {
                return Err(format!(
                    "rule {id}: unknown tool \"{other}\"; use run, write_file, search_replace, \
                     write, read_outside, mcp or net"
                ));
            }
        };
        if let Some(workspace) = &self.workspace
            && !workspace.starts_with('/')
        {
            return Err(format!(
                "rule {id}: `workspace` is an absolute path: {workspace}"
            ));
        }
        Ok(Rule {
            id,
            action: self.action,
            matcher,
            workspace: self.workspace.clone(),
            origin: self.origin.clone(),
        })
    }
}

impl RuleSpec {
    /// The same run rule covering every argv that starts with `prefix`
    /// (the caller checks that `prefix` is the card's own first words).
    pub fn widened(mut self, prefix: Vec<String>) -> RuleSpec {
        self.argv = None;
        self.command_prefix = None;
        self.argv_prefix = Some(prefix);
        self
    }

    /// The rule in one line, as every front end shows it:
    /// `allow run argv_prefix ["cargo", "test"] cwd "." in /w`.
    pub fn describe(&self) -> String {
        let quoted = |words: &[String]| words_text(words);
        let mut out = format!("{} {}", self.action.as_str(), self.tool);
        let mut add = |key: &str, value: String| out.push_str(&format!(" {key} {value}"));
        if let Some(argv) = &self.argv {
            add("argv", quoted(argv));
        }
        if let Some(prefix) = &self.argv_prefix {
            add("argv_prefix", quoted(prefix));
        }
        if let Some(line) = &self.command_prefix {
            add("command_prefix", crate::json::text(&line));
        }
        if let Some(cwd) = &self.cwd {
            add("cwd", format!("{cwd:?}"));
        }
        if let Some(network) = self.network.filter(|network| network.any()) {
            add("network", network.as_str().into());
        }
        if self.git == Some(true) {
            add("git", "true".into());
        }
        if let Some(read) = &self.read {
            add("read", quoted(read));
        }
        if let Some(path) = &self.path {
            add("path", format!("{path:?}"));
        }
        if let Some(reach) = self.reach {
            add("reach", reach.as_str().into());
        }
        if let Some(server) = &self.server {
            add("server", server.clone());
        }
        if let Some(tool) = &self.mcp_tool {
            add("mcp_tool", tool.clone());
        }
        if let Some(arguments) = &self.arguments {
            add("arguments", arguments.to_string());
        }
        if let Some(host) = &self.host {
            add("host", host.clone());
        }
        if let Some(port) = self.port {
            add("port", port.to_string());
        }
        match &self.workspace {
            Some(workspace) => out.push_str(&format!(" in {workspace}")),
            None => out.push_str(" in every workspace"),
        }
        out
    }
}

/// An argv as a rule's description shows it: `["cargo", "test"]`.
pub fn words_text(words: &[String]) -> String {
    crate::json::text(&words).replace("\",\"", "\", \"")
}

impl RuleSpec {
    /// A rule of `action` for `tool` with nothing else set yet.
    pub fn new(action: RuleAction, tool: &str) -> RuleSpec {
        RuleSpec {
            id: None,
            action,
            tool: tool.to_string(),
            argv: None,
            argv_prefix: None,
            command_prefix: None,
            cwd: None,
            network: None,
            git: None,
            read: None,
            path: None,
            reach: None,
            server: None,
            mcp_tool: None,
            arguments: None,
            host: None,
            port: None,
            workspace: None,
            origin: None,
        }
    }
}

impl Rule {
    /// The rule as written.
    pub fn spec(&self) -> RuleSpec {
        let mut spec = RuleSpec {
            id: Some(self.id.clone()),
            workspace: self.workspace.clone(),
            origin: self.origin.clone(),
            ..RuleSpec::new(self.action, "")
        };
        match &self.matcher {
            Matcher::Run {
                argv,
                cwd,
                network,
                git,
                read,
            } => {
                spec.tool = "run".into();
                spec.read = read.clone();
                match argv {
                    Argv::Exact(argv) => spec.argv = Some(argv.clone()),
                    Argv::Prefix(prefix) => spec.argv_prefix = Some(prefix.clone()),
                    Argv::Line(line) => spec.command_prefix = Some(line.clone()),
                }
                spec.cwd = cwd.clone();
                spec.network = *network;
                spec.git = *git;
            }
            Matcher::Write { tool, path } => {
                spec.tool = match tool {
                    WriteTool::WriteFile => "write_file",
                    WriteTool::SearchReplace => "search_replace",
                    WriteTool::Any => "write",
                }
                .into();
                spec.path = Some(path.clone());
            }
            Matcher::ReadOutside { path, reach } => {
                spec.tool = "read_outside".into();
                spec.path = Some(path.clone());
                spec.reach = *reach;
            }
            Matcher::Net { host, port } => {
                spec.tool = "net".into();
                spec.host = Some(host.clone());
                spec.port = *port;
            }
            Matcher::Mcp {
                server,
                tool,
                arguments,
            } => {
                spec.tool = "mcp".into();
                spec.server = Some(server.clone());
                spec.mcp_tool = tool.clone();
                spec.arguments = arguments.clone();
            }
        }
        spec
    }
}

/// Why `host` is not a host pattern, if it is not: a name of letters,
/// digits, `-` and `_` in dot-separated labels, whose first label alone may
/// be `*` (or `*` alone, every host), or an IP address.
pub fn host_pattern_error(host: &str) -> Option<String> {
    if host.is_empty() {
        return Some("it is empty".into());
    }
    if host.parse::<std::net::IpAddr>().is_ok() || host == "*" {
        return None;
    }
    if host.len() > 253 {
        return Some("a host name is at most 253 characters".into());
    }
    for (index, label) in host.split('.').enumerate() {
        if label == "*" && index == 0 {
            continue;
        }
        if label.is_empty() {
            return Some("it has an empty label (two dots, or a dot at an end)".into());
        }
        if label.len() > 63 {
            return Some(format!("the label {label:?} is over 63 characters"));
        }
        if let Some(bad) = label
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || *c == '-' || *c == '_'))
        {
            return Some(match bad {
                '*' => "`*` may only stand alone as the first label, as in *.example.com".into(),
                '/' | ':' | '@' => format!(
                    "{bad:?} belongs to a URL, not a host; give the host alone (and `port` apart)"
                ),
                _ => format!(
                    "{bad:?} is not in a host name (a name in another script goes in its punycode form)"
                ),
            });
        }
    }
    None
}

/// Whether the host glob `pattern` matches `host` (both lower case):
/// `*` every host, `*.example.com` every name below example.com and
/// example.com itself, anything else that host exactly.
pub fn host_matches(pattern: &str, host: &str) -> bool {
    if pattern == "*" {
        return true;
    }
    match pattern.strip_prefix("*.") {
        Some(apex) => {
            host == apex
                || host
                    .strip_suffix(apex)
                    .is_some_and(|below| below.ends_with('.'))
        }
        None => pattern == host,
    }
}

/// Why a call went through without a card, on its `tool_call` event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AllowedBy {
    /// A rule's id.
    Rule(RuleId),
    /// Every simple command of a shell script was allowed: the rules' ids.
    Rules(Vec<RuleId>),
    /// A session grant's id.
    Grant(GrantId),
    /// A hook's name.
    Hook(String),
    /// A card the person answered (a connection through Wicket: its
    /// `allow_once` lets the host for the rest of the command).
    Card(crate::CardId),
}

impl AllowedBy {
    /// In words, for every front end: `allowed by rule r-1a2b`.
    pub fn describe(&self) -> String {
        match self {
            AllowedBy::Rule(id) => format!("allowed by rule {id}"),
            AllowedBy::Rules(ids) => format!("allowed by rules {}", ids.join(", ")),
            AllowedBy::Grant(id) => format!("allowed for the session ({id})"),
            AllowedBy::Hook(name) => format!("allowed by hook {name}"),
            AllowedBy::Card(id) => format!("allowed at card {id}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(text: &str) -> Result<Rule, String> {
        let spec: RuleSpec = toml::from_str(text).map_err(|error| error.to_string())?;
        spec.check("r1")
    }

    #[test]
    fn a_host_glob_matches_its_apex_and_names_below_and_nothing_else() {
        assert!(host_matches("*.crates.io", "crates.io"));
        assert!(host_matches("*.crates.io", "static.crates.io"));
        assert!(host_matches("*.crates.io", "a.b.crates.io"));
        assert!(!host_matches("*.crates.io", "evilcrates.io"));
        assert!(!host_matches("*.crates.io", "crates.io.evil.com"));
        assert!(host_matches("pypi.org", "pypi.org"));
        assert!(!host_matches("pypi.org", "files.pypi.org"));
        assert!(host_matches("*", "anything.example"));
        for good in [
            "pypi.org",
            "*.crates.io",
            "*",
            "127.0.0.1",
            "::1",
            "my_host.internal",
        ] {
            assert_eq!(host_pattern_error(good), None, "{good}");
        }
        for bad in [
            "",
            "https://pypi.org",
            "pypi.org:443",
            "a*b.io",
            "x.*.io",
            "a..b",
            "user@host",
            "bü.de",
        ] {
            assert!(host_pattern_error(bad).is_some(), "{bad}");
        }
        let rule =
            spec("action = \"allow\"\ntool = \"net\"\nhost = \"Pypi.ORG\"\nport = 443\n").unwrap();
        assert_eq!(
            rule.matcher,
            Matcher::Net {
                host: "pypi.org".into(),
                port: Some(443)
            }
        );
        assert!(
            spec("action = \"allow\"\ntool = \"net\"\n")
                .unwrap_err()
                .contains("needs `host`")
        );
        assert!(
            spec("action = \"allow\"\ntool = \"run\"\nargv = [\"x\"]\nhost = \"a.b\"\n")
                .unwrap_err()
                .contains("`host` does not apply")
        );
    }

    #[test]
    fn a_rule_names_what_is_wrong_with_it() {
        assert!(
            spec("action = \"allow\"\ntool = \"run\"\nargv_prefx = [\"x\"]\n")
                .unwrap_err()
                .contains("argv_prefx")
        );
        assert!(
            spec("action = \"allow\"\ntool = \"run\"\n")
                .unwrap_err()
                .contains("needs a non-empty `argv`")
        );
        assert!(spec("action = \"allow\"\ntool = \"run\"\nargv_prefix = []\n").is_err());
        assert!(
            spec("action = \"deny\"\ntool = \"write_file\"\nargv = [\"x\"]\n")
                .unwrap_err()
                .contains("`argv` does not apply")
        );
        assert!(
            spec("action = \"deny\"\ntool = \"read_outside\"\npath = \"etc/*\"\n")
                .unwrap_err()
                .contains("absolute")
        );
        assert!(spec("action = \"maybe\"\ntool = \"run\"\nargv = [\"x\"]\n").is_err());
        assert!(
            spec("action = \"allow\"\ntool = \"shell\"\n")
                .unwrap_err()
                .contains("unknown tool")
        );
    }

    #[test]
    fn a_rule_reads_back_as_it_was_written() {
        for text in [
            "action = \"allow\"\ntool = \"run\"\nargv_prefix = [\"cargo\", \"test\"]\ncwd = \".\"\nnetwork = false\n",
            "action = \"deny\"\ntool = \"write\"\npath = \"**/*.lock\"\n",
            "action = \"ask\"\ntool = \"read_outside\"\npath = \"/etc/**\"\nreach = \"list\"\n",
            "action = \"allow\"\ntool = \"mcp\"\nserver = \"git\"\nmcp_tool = \"git_status\"\n",
        ] {
            let rule = spec(text).unwrap();
            assert_eq!(rule.spec().check("other").unwrap(), rule, "{text}");
        }
    }
}
