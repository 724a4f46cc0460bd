//! `wicket import claude-code|codex [--dry-run]`: a person's own Claude
//! Code or Codex settings written as Wicket's, each item with its origin:
//! permission rules into `$WICKET_HOME/rules.toml`, hooks, MCP servers and
//! environment names into `$WICKET_HOME/config.toml` (a workspace's
//! `.mcp.json` into its `.wicket/config.toml`, where each server asks before
//! it starts), with `toml_edit`, keeping what is there and its comments.
//! A table says what each entry became, or why it could not be carried
//! over. An import never widens (see [`wicket_core::claude`]), `--dry-run`
//! writes nothing, and importing twice changes nothing the second time.

mod claude;
mod codex;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use sha2::Digest;
use wicket_protocol::{RuleAction, RuleSpec};

use crate::show;

/// Whose settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum From {
    /// Claude Code: ~/.claude/settings.json, ~/.claude.json, the workspace's .mcp.json.
    ClaudeCode,
    /// Codex: ~/.codex/config.toml and ~/.codex/rules/*.rules.
    Codex,
}

/// A hook as `[[hooks.EVENT]]` holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HookItem {
    event: &'static str,
    matcher: Option<String>,
    command: Vec<String>,
    timeout_s: Option<u64>,
}

/// What one source entry becomes.
#[derive(Debug, Clone)]
pub(crate) enum Becomes {
    /// A rule of rules.toml, and a few words on it.
    Rule(Box<RuleSpec>, String),
    /// A `[[hooks.EVENT]]` table of config.toml.
    Hook(HookItem),
    /// An `[mcp_servers.NAME]` table, in the home's config or (`in_workspace`) the workspace's;
    /// `note`: what the table's row adds (where Claude Code started it).
    Mcp {
        name: String,
        table: toml_edit::Table,
        in_workspace: bool,
        note: Option<String>,
    },
    /// A name for `[sandbox] env_pass`.
    EnvPass(String),
    /// `model` of the home config (`anthropic:claude-…`).
    Model(String),
    /// Nothing, and why.
    Not(String),
    /// A deny or ask that cannot be carried over whole, and why: while one
    /// is listed the import writes nothing, since a deny left out (or one
    /// of its alternatives) would let run what the person forbade.
    Refused(String),
}

/// One entry of the person's settings.
#[derive(Debug, Clone)]
pub(crate) struct Item {
    /// Where: `~/.claude/settings.json permissions.allow`.
    from: String,
    /// The entry as written: `Bash(npm run test:*)`.
    entry: String,
    becomes: Becomes,
}

impl Item {
    pub(crate) fn new(from: impl Into<String>, entry: impl Into<String>, becomes: Becomes) -> Item {
        Item {
            from: from.into(),
            entry: entry.into(),
            becomes,
        }
    }
}

/// Whether a server started by `command` with `args` fetches what it runs
/// first (`npx -y @scope/server`, `uvx`, `pipx run`, `bunx`, `docker run`,
/// and their kin): it needs the network, through Wicket's net cards.
pub(crate) fn fetches_packages(command: &str, args: &[String]) -> bool {
    let program = command.rsplit('/').next().unwrap_or(command);
    let first = args.first().map(String::as_str);
    match program {
        "npx" | "uvx" | "bunx" | "pnpx" => true,
        "pipx" | "docker" | "podman" => first == Some("run"),
        "pnpm" | "yarn" => first == Some("dlx"),
        "npm" => matches!(first, Some("exec" | "x")),
        "bun" => first == Some("x"),
        "uv" => first == Some("tool") && args.get(1).is_some_and(|word| word == "run"),
        _ => false,
    }
}

/// The folder a tool keeps its settings in: `$VAR`, else `~/NAME`.
pub(crate) fn tool_home(var: &str, name: &str) -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os(var).filter(|dir| !dir.is_empty()) {
        return Some(PathBuf::from(dir));
    }
    let user = std::env::var_os("HOME").filter(|home| !home.is_empty())?;
    Some(PathBuf::from(user).join(name))
}

/// The text of one of the person's own files (not a workspace's: read
/// directly, bounded); `None` when it is not there.
#[allow(clippy::disallowed_methods)]
pub(crate) fn own_file(path: &Path) -> Result<Option<String>> {
    match wicket_os::files::read_regular(path, wicket_core::config::CONFIG_MAX_BYTES) {
        Ok(Some(bytes)) => {
            Ok(Some(String::from_utf8(bytes).with_context(|| {
                format!("{} is not UTF-8", path.display())
            })?))
        }
        Ok(None) => Ok(None),
        Err(error) => Err(anyhow::anyhow!(
            "{} cannot be read: {error}",
            path.display()
        )),
    }
}

/// An id for an imported rule that is the same each time the same entry
/// is imported: `imp-` and the first hex of a hash of its origin and the
/// rule's own words, so that each rule an entry expands to (a Codex
/// rule's alternatives) has its own.
fn rule_id(item: &Item, spec: &RuleSpec) -> Result<String> {
    let mut words = spec.clone();
    words.id = None;
    let mut hash = sha2::Sha256::new();
    hash.update(item.from.as_bytes());
    hash.update([0]);
    hash.update(item.entry.as_bytes());
    hash.update([0]);
    hash.update(serde_json::to_vec(&words).context("an imported rule as JSON")?);
    let digest = hash.finalize();
    let hex: String = digest[..5]
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    Ok(format!("imp-{hex}"))
}

/// `wicket import`.
pub(crate) fn run(
    from: From,
    workspace: Option<PathBuf>,
    dry_run: bool,
) -> Result<std::process::ExitCode> {
    let home = wicket_session::home();
    let workspace = match workspace {
        Some(workspace) => workspace,
        None => std::env::current_dir()?,
    };
    let items = match from {
        From::ClaudeCode => claude::items(&workspace)?,
        From::Codex => codex::items()?,
    };
    let items = rules_checked(items);
    let stops = refused(&items);
    if !stops.is_empty() {
        anyhow::bail!(
            "nothing was imported: Wicket does not carry a deny or ask of yours in part, and \
             these cannot be carried whole:\n{}\nChange each so it reads as plain strings and \
             lists (or move it out of the file while importing), then import again",
            stops.join("\n")
        );
    }
    if items.is_empty() {
        show::say(format!(
            "found nothing to import from {}; its settings files are not there",
            match from {
                From::ClaudeCode => "Claude Code",
                From::Codex => "Codex",
            }
        ));
        return Ok(std::process::ExitCode::SUCCESS);
    }
    if !dry_run {
        // A fresh install has no $WICKET_HOME yet.
        wicket_os::files::private_dir(&home)
            .with_context(|| format!("making {}", home.display()))?;
    }
    let results = write(&home, &workspace, &items, dry_run)?;
    print_table(&items, &results, dry_run);
    Ok(std::process::ExitCode::SUCCESS)
}

/// Each rule checked as the loader checks it: one it would refuse is not
/// written; an allow is left out, a deny or ask stops the import (see
/// [`Becomes::Refused`]).
fn rules_checked(items: Vec<Item>) -> Vec<Item> {
    items
        .into_iter()
        .map(|mut item| {
            if let Becomes::Rule(spec, _) = &item.becomes
                && let Err(why) = spec.check("import")
            {
                let why = format!("Wicket's loader refuses the rule it would be: {why}");
                item.becomes = match spec.action {
                    RuleAction::Allow | RuleAction::Preview => Becomes::Not(why),
                    RuleAction::Ask | RuleAction::Deny => Becomes::Refused(why),
                };
            }
            item
        })
        .collect()
}

/// The items that stop the import, each as `FROM: ENTRY: why`: every
/// refused one, and an entry that became a deny or ask rule beside a part
/// that could not be carried (its rules would be written without it).
fn refused(items: &[Item]) -> Vec<String> {
    let mut stops = Vec::new();
    for item in items {
        let why = match &item.becomes {
            Becomes::Refused(why) => why,
            Becomes::Not(why)
                if items.iter().any(|sibling| {
                    sibling.from == item.from
                        && sibling.entry == item.entry
                        && matches!(&sibling.becomes, Becomes::Rule(rule, _)
                            if matches!(rule.action, RuleAction::Ask | RuleAction::Deny))
                }) =>
            {
                why
            }
            Becomes::Rule(..)
            | Becomes::Hook(_)
            | Becomes::Mcp { .. }
            | Becomes::EnvPass(_)
            | Becomes::Model(_)
            | Becomes::Not(_) => continue,
        };
        stops.push(format!("  {}: {}: {why}", item.from, one_line(&item.entry)));
    }
    stops
}

/// What became of each item: the words of the table's last column.
fn write(home: &Path, workspace: &Path, items: &[Item], dry_run: bool) -> Result<Vec<String>> {
    let mut results = vec![String::new(); items.len()];
    // Rules: rules.toml, each under its own id.
    let mut rules = Vec::new();
    let mut rule_rows = Vec::new();
    for (row, item) in items.iter().enumerate() {
        if let Becomes::Rule(spec, said) = &item.becomes {
            let mut spec = (**spec).clone();
            let id = rule_id(item, &spec)?;
            spec.id = Some(id.clone().into());
            let comment = format!("imported from {}: {}", item.from, item.entry);
            results[row] = format!("rule {id}: {} {said}", spec.action.as_str());
            rules.push((spec, comment));
            rule_rows.push(row);
        }
    }
    // Hooks, MCP servers, env names and the model: config.toml, the home's
    // or the workspace's, each edit checked by the loader before the next;
    // done before rules.toml is written, so a config the loader already
    // refuses stops the import with nothing written.
    let mut configs = Configs::default();
    for (row, item) in items.iter().enumerate() {
        let said = match &item.becomes {
            Becomes::Rule(..) => continue,
            Becomes::Not(why) => format!("not carried over: {why}"),
            Becomes::Refused(why) => format!("refused: {why}"),
            Becomes::Hook(hook) => configs.home(home)?.hook(hook, item)?,
            Becomes::Mcp {
                name,
                table,
                in_workspace: false,
                note,
            } => configs
                .home(home)?
                .mcp(name, table, note.as_deref(), item)?,
            Becomes::Mcp {
                name,
                table,
                in_workspace: true,
                note,
            } => configs
                .workspace(workspace)?
                .mcp(name, table, note.as_deref(), item)?,
            Becomes::EnvPass(name) => configs.home(home)?.env_pass(name, item)?,
            Becomes::Model(model) => configs.home(home)?.model(model)?,
        };
        results[row] = said;
    }
    let rules_file = home.join(wicket_gate::rules::RULES_FILE);
    let added = if dry_run {
        wicket_gate::rules::fresh(&wicket_gate::rules::read_saved(&rules_file)?, &rules)
    } else {
        wicket_gate::rules::save_named(&rules_file, &rules)?
    };
    for (row, fresh) in rule_rows.into_iter().zip(added) {
        if !fresh {
            results[row].push_str(" (already imported)");
        }
    }
    if !dry_run {
        configs.save()?;
    }
    Ok(results)
}

/// The config files an import edits, each read once and written once.
#[derive(Default)]
struct Configs {
    home: Option<Edited>,
    workspace: Option<Edited>,
}

impl Configs {
    fn home(&mut self, home: &Path) -> Result<&mut Edited> {
        if self.home.is_none() {
            self.home = Some(Edited::open(
                home.join("config.toml"),
                "$WICKET_HOME/config.toml",
            )?);
        }
        self.home.as_mut().context("the home config was not opened")
    }

    fn workspace(&mut self, workspace: &Path) -> Result<&mut Edited> {
        if self.workspace.is_none() {
            self.workspace = Some(Edited::open_in(workspace)?);
        }
        self.workspace
            .as_mut()
            .context("the workspace config was not opened")
    }

    fn save(self) -> Result<()> {
        for edited in [self.home, self.workspace].into_iter().flatten() {
            edited.save()?;
        }
        Ok(())
    }
}

/// Where a config file being edited lives.
enum Target {
    /// The person's own: written directly.
    Own(PathBuf),
    /// A workspace's `.wicket/config.toml`: read and written through the
    /// resolver (a `.wicket` that is a link out is refused), and not
    /// replaced if it changed meanwhile.
    Workspace(Box<wicket_tools::Workspace>, Option<Vec<u8>>),
}

/// One config file being edited.
struct Edited {
    target: Target,
    shown: &'static str,
    /// Where it is, as the loader names it.
    path: PathBuf,
    document: toml_edit::DocumentMut,
    changed: bool,
    /// What the loader says of it before the import's edits: its notices,
    /// or why it would not take it (a workspace's config, then ignored).
    before: std::result::Result<Vec<String>, String>,
}

impl Edited {
    fn open(path: PathBuf, shown: &'static str) -> Result<Edited> {
        let text = own_file(&path)?.unwrap_or_default();
        let edited = Edited::parsed(Target::Own(path.clone()), path, shown, &text)?;
        if let Err(why) = &edited.before {
            anyhow::bail!(
                "nothing was imported: Wicket does not load your {shown} as it is ({why}); fix it, then import again"
            );
        }
        Ok(edited)
    }

    fn open_in(workspace: &Path) -> Result<Edited> {
        let opened = wicket_tools::Workspace::open(workspace)
            .map_err(|error| anyhow::anyhow!("{}", error.message))?;
        let relative = Path::new(wicket_core::config::WORKSPACE_CONFIG);
        let bytes = opened
            .read_runtime_file(relative, wicket_core::config::CONFIG_MAX_BYTES)
            .map_err(|error| anyhow::anyhow!("{}", error.message))?;
        let text = String::from_utf8(bytes.clone().unwrap_or_default())
            .context(".wicket/config.toml is not UTF-8")?;
        Edited::parsed(
            Target::Workspace(Box::new(opened), bytes),
            workspace.join(relative),
            ".wicket/config.toml",
            &text,
        )
    }

    fn parsed(target: Target, path: PathBuf, shown: &'static str, text: &str) -> Result<Edited> {
        let document = text
            .parse::<toml_edit::DocumentMut>()
            .with_context(|| format!("{shown} is not valid TOML"))?;
        let mut edited = Edited {
            target,
            shown,
            path,
            document,
            changed: false,
            before: Ok(Vec::new()),
        };
        edited.before = edited.loads();
        Ok(edited)
    }

    fn trusted(&self) -> bool {
        match self.target {
            Target::Own(_) => true,
            Target::Workspace(..) => false,
        }
    }

    /// What the loader makes of the file as it is now: its notices, or why
    /// it refuses it.
    fn loads(&self) -> std::result::Result<Vec<String>, String> {
        wicket_core::config::check_text(&self.path, &self.document.to_string(), self.trusted())
            .map(|notices| notices.into_iter().map(|notice| notice.message).collect())
            .map_err(|error| error.to_string())
    }

    /// The edit just made (`before` is the file without it), kept when the
    /// loader takes the file with it: `said`, with what the loader notes of
    /// it. Else the file is as it was, and the row says why: an import
    /// never writes what its own loader refuses, and a workspace's config
    /// never holds what the loader would ignore.
    fn verified(&mut self, before: toml_edit::DocumentMut, said: String) -> String {
        let earlier = match &self.before {
            Ok(notices) => notices.clone(),
            Err(why) => {
                self.document = before;
                return format!(
                    "not carried over: Wicket ignores {} as it is ({why}); fix it, then import again",
                    self.shown
                );
            }
        };
        let fresh = |notices: Vec<String>| -> Vec<String> {
            notices
                .into_iter()
                .filter(|notice| !earlier.contains(notice))
                .collect()
        };
        let now = self.loads();
        match now.clone().map(fresh) {
            Ok(notes) if notes.is_empty() => {
                self.changed = true;
                said
            }
            Ok(notes) if self.trusted() => {
                // Said once, on the row that brought it.
                self.before = now;
                self.changed = true;
                format!("{said}; note: {}", notes.join("; "))
            }
            Ok(notes) => {
                self.document = before;
                format!(
                    "not carried over: Wicket would ignore it in {}: {}",
                    self.shown,
                    notes.join("; ")
                )
            }
            Err(why) => {
                self.document = before;
                format!("not carried over: Wicket's loader refuses it: {why}")
            }
        }
    }

    fn hook(&mut self, hook: &HookItem, item: &Item) -> Result<String> {
        let command: toml_edit::Array = hook.command.iter().map(String::as_str).collect();
        let said = format!(
            "[[hooks.{}]] command {}",
            hook.event,
            command.to_string().trim()
        );
        let Some(timeout) = hook.timeout_s.map(i64::try_from).transpose().ok() else {
            return Ok(format!(
                "not carried over: a timeout of {} seconds is more than a config holds",
                hook.timeout_s.unwrap_or_default()
            ));
        };
        let before = self.document.clone();
        let hooks = table_in(self.document.as_table_mut(), "hooks")?;
        let list = hooks
            .entry(hook.event)
            .or_insert_with(|| toml_edit::Item::ArrayOfTables(toml_edit::ArrayOfTables::new()))
            .as_array_of_tables_mut()
            .with_context(|| {
                format!(
                    "[hooks] {} in {} is not a list of tables",
                    hook.event, self.shown
                )
            })?;
        let same = list.iter().any(|table| {
            let words: Option<Vec<&str>> = table
                .get("command")
                .and_then(|command| command.as_array())
                .map(|command| command.iter().filter_map(|word| word.as_str()).collect());
            words.is_some_and(|words| words == hook.command)
                && table.get("matcher").and_then(|m| m.as_str()) == hook.matcher.as_deref()
        });
        if same {
            self.document = before;
            return Ok(format!("{said} in {} (already there)", self.shown));
        }
        let mut table = toml_edit::Table::new();
        table.decor_mut().set_prefix(format!(
            "\n# imported from {}: {}\n",
            item.from,
            one_line(&item.entry)
        ));
        if let Some(matcher) = &hook.matcher {
            table.insert("matcher", toml_edit::value(matcher.as_str()));
        }
        table.insert("command", toml_edit::value(command));
        if let Some(timeout) = timeout {
            table.insert("timeout_s", toml_edit::value(timeout));
        }
        list.push(table);
        let said = format!("{said} in {}", self.shown);
        Ok(self.verified(before, said))
    }

    fn mcp(
        &mut self,
        name: &str,
        server: &toml_edit::Table,
        note: Option<&str>,
        item: &Item,
    ) -> Result<String> {
        let before = self.document.clone();
        let servers = table_in(self.document.as_table_mut(), "mcp_servers")?;
        if let Some(existing) = servers.get(name) {
            let same = existing.as_table().map(|table| strip(table).to_string())
                == Some(strip(server).to_string());
            return Ok(if same {
                format!("[mcp_servers.{name}] in {} (already there)", self.shown)
            } else {
                format!(
                    "not carried over: {} already has a server named {name}; yours is kept as it is",
                    self.shown
                )
            });
        }
        let mut table = server.clone();
        table
            .decor_mut()
            .set_prefix(format!("\n# imported from {}\n", item.from));
        servers.insert(name, toml_edit::Item::Table(table));
        let off = server
            .get("enabled")
            .and_then(toml_edit::Item::as_bool)
            .is_some_and(|enabled| !enabled);
        let networked = server.get("network").and_then(toml_edit::Item::as_bool) == Some(true);
        let mut said = format!("[mcp_servers.{name}] in {}", self.shown);
        if off {
            said.push_str(" (disabled, as it was: enabled = false; it does not start)");
        }
        if networked {
            said.push_str(
                " (network = true: it fetches what it runs first, each host through a net card)",
            );
        }
        if let Some(note) = note {
            said.push_str(&format!(" ({note})"));
        }
        Ok(self.verified(before, said))
    }

    /// `model`, unless the file names one already (the person's own choice stays).
    fn model(&mut self, model: &str) -> Result<String> {
        match self.document.get("model").map(|set| set.as_str()) {
            Some(Some(set)) if set == model => {
                return Ok(format!("model {model:?} in {} (already there)", self.shown));
            }
            Some(set) => {
                return Ok(format!(
                    "not carried over: {} sets model {} already; yours is kept",
                    self.shown,
                    set.map_or("(not a string)".to_string(), |set| format!("{set:?}"))
                ));
            }
            None => {}
        }
        let before = self.document.clone();
        self.document.insert("model", toml_edit::value(model));
        let said = format!("model {model:?} in {}", self.shown);
        Ok(self.verified(before, said))
    }

    fn env_pass(&mut self, name: &str, _item: &Item) -> Result<String> {
        let before = self.document.clone();
        let sandbox = table_in(self.document.as_table_mut(), "sandbox")?;
        let list = sandbox
            .entry("env_pass")
            .or_insert_with(|| toml_edit::value(toml_edit::Array::new()))
            .as_array_mut()
            .with_context(|| format!("[sandbox] env_pass in {} is not a list", self.shown))?;
        if list.iter().any(|value| value.as_str() == Some(name)) {
            return Ok(format!("[sandbox] env_pass {name:?} (already there)"));
        }
        list.push(name);
        let said = format!(
            "[sandbox] env_pass {name:?} in {} (its value comes from your environment)",
            self.shown
        );
        Ok(self.verified(before, said))
    }

    fn save(self) -> Result<()> {
        if !self.changed {
            return Ok(());
        }
        let text = self.document.to_string();
        match self.target {
            Target::Own(path) => {
                if let Some(dir) = path.parent() {
                    wicket_os::files::private_dir(dir)
                        .with_context(|| format!("making {}", dir.display()))?;
                }
                wicket_os::files::write_atomically(&path, text.as_bytes(), true)
                    .with_context(|| format!("writing {}", path.display()))
            }
            Target::Workspace(workspace, read) => {
                let location = wicket_tools::Location::Inside(PathBuf::from(
                    wicket_core::config::WORKSPACE_CONFIG,
                ));
                let refused = |error: wicket_tools::Error| {
                    anyhow::anyhow!("{} was not written: {}", self.shown, error.message)
                };
                let planned =
                    wicket_tools::tools::write_file::plan_write(&workspace, &location, self.shown)
                        .map_err(refused)?;
                wicket_tools::tools::write_file::commit_write(
                    &workspace,
                    &location,
                    &planned.absolute,
                    text.as_bytes(),
                    &|now| now == read.as_deref(),
                )
                .map(drop)
                .map_err(refused)
            }
        }
    }
}

/// A table of `table` (made when absent, implicit so it adds no empty header).
fn table_in<'t>(table: &'t mut toml_edit::Table, key: &str) -> Result<&'t mut toml_edit::Table> {
    let item = table.entry(key).or_insert_with(|| {
        let mut made = toml_edit::Table::new();
        made.set_implicit(true);
        toml_edit::Item::Table(made)
    });
    item.as_table_mut()
        .with_context(|| format!("{key} in the config is not a table"))
}

/// A table without its comments, to compare.
fn strip(table: &toml_edit::Table) -> toml_edit::Table {
    let mut bare = table.clone();
    bare.decor_mut().clear();
    bare
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The table: each source entry, and what became of it.
fn print_table(items: &[Item], results: &[String], dry_run: bool) {
    let wide = items
        .iter()
        .map(|item| item.entry.chars().count().min(48))
        .max()
        .unwrap_or(0);
    let mut from = "";
    for (item, result) in items.iter().zip(results) {
        if item.from != from {
            from = &item.from;
            show::line_out(&wicket_protocol::text::visible_line(from));
        }
        let entry: String = item.entry.chars().take(48).collect();
        show::line_out(&format!(
            "  {:wide$}  →  {}",
            wicket_protocol::text::visible_line(&entry),
            wicket_protocol::text::visible_line(result)
        ));
    }
    if dry_run {
        show::line_out("dry run: nothing was written");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(action: RuleAction, words: &[&str]) -> Becomes {
        let mut spec = RuleSpec::new(action, "run");
        spec.argv_prefix = Some(words.iter().map(|word| word.to_string()).collect());
        Becomes::Rule(Box::new(spec), format!("argv_prefix {words:?}"))
    }

    fn ids_in(rules_file: &Path) -> Vec<String> {
        wicket_gate::rules::read_saved(rules_file)
            .unwrap()
            .iter()
            .map(|rule| rule.id.to_string())
            .collect()
    }

    /// The ids a table's rows name, in order.
    fn ids_said(results: &[String]) -> Vec<String> {
        results
            .iter()
            .filter_map(|said| said.strip_prefix("rule "))
            .filter_map(|said| said.split(':').next())
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn each_rule_of_an_entry_has_its_own_id_and_the_dry_run_lists_what_is_written() {
        let f = wicket_test_support::Fixture::new();
        let entry = "prefix_rule(pattern = [\"rm\", [\"-rf\", \"-fr\"]], decision = \"forbidden\")";
        let items = vec![
            Item::new("x.rules", entry, rule(RuleAction::Deny, &["rm", "-rf"])),
            Item::new("x.rules", entry, rule(RuleAction::Deny, &["rm", "-fr"])),
            Item::new(
                "settings.json permissions.allow",
                "Bash(git diff *)",
                rule(RuleAction::Allow, &["git", "diff"]),
            ),
        ];
        let dry = write(&f.home, &f.ws, &items, true).unwrap();
        assert!(
            !f.home.join("rules.toml").exists(),
            "a dry run writes nothing"
        );
        let written = write(&f.home, &f.ws, &items, false).unwrap();
        assert_eq!(dry, written, "the dry run says what the import does");
        let said = ids_said(&written);
        assert_eq!(said.len(), 3, "{written:?}");
        assert_eq!(said, ids_in(&f.home.join("rules.toml")));
        assert_ne!(said[0], said[1], "two alternatives, two ids");
        // Twice is once, and the second dry run says so too.
        let again = write(&f.home, &f.ws, &items, true).unwrap();
        assert!(
            again
                .iter()
                .all(|said| said.ends_with("(already imported)")),
            "{again:?}"
        );
        assert_eq!(write(&f.home, &f.ws, &items, false).unwrap(), again);
        assert_eq!(ids_in(&f.home.join("rules.toml")).len(), 3);
    }

    #[test]
    fn a_deny_or_ask_with_a_part_left_out_stops_the_import_and_an_allow_does_not() {
        let not = || Becomes::Not("a part Wicket cannot read".into());
        for (action, stops) in [
            (RuleAction::Deny, true),
            (RuleAction::Ask, true),
            (RuleAction::Allow, false),
        ] {
            let items = vec![
                Item::new("settings.json", "Bash(x)", rule(action, &["x"])),
                Item::new("settings.json", "Bash(x)", not()),
                Item::new("settings.json", "Bash(y)", not()),
            ];
            let got = refused(&items);
            assert_eq!(!got.is_empty(), stops, "{action:?}: {got:?}");
            if stops {
                assert_eq!(got, ["  settings.json: Bash(x): a part Wicket cannot read"]);
            }
        }
        let items = vec![Item::new(
            "x.rules",
            "prefix_rule(pattern = v)",
            Becomes::Refused("cannot be read".into()),
        )];
        assert_eq!(
            refused(&items),
            ["  x.rules: prefix_rule(pattern = v): cannot be read"]
        );
    }
}
