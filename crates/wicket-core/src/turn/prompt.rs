//! The system prompt a turn starts from.

use super::*;

/// The instruction files a prompt read, and those it refused, with why.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Instructions {
    /// As the notice names them: `AGENTS.md`, `docs/style.md (imported by CLAUDE.md)`, `~/.claude/CLAUDE.md`.
    pub read: Vec<String>,
    /// `NAME was not read: why`.
    pub refused: Vec<String>,
}

/// How many refused files one message names before it counts the rest.
const REFUSALS_NAMED: usize = 5;

impl Instructions {
    /// Every refusal in one message (a CLAUDE.md naming thousands of
    /// missing imports is one error, not thousands): each named when they
    /// are few, else the first few and how many more; `None` when none.
    pub fn refusals(&self) -> Option<String> {
        let count = self.refused.len();
        if count <= 1 {
            return self.refused.first().cloned();
        }
        let named: Vec<&str> = self
            .refused
            .iter()
            .take(REFUSALS_NAMED)
            .map(String::as_str)
            .collect();
        let mut message = format!(
            "{count} instruction files were not read: {}",
            named.join("; ")
        );
        if count > REFUSALS_NAMED {
            message.push_str(&format!("; and {} more", count - REFUSALS_NAMED));
        }
        Some(message)
    }
}

/// All the instruction files of one prompt together read at most this much.
pub const INSTRUCTIONS_MAX_BYTES: usize = 4 * PROMPT_FILE_MAX_BYTES as usize;

/// How deep `@path` imports of a CLAUDE.md are followed.
const IMPORT_DEPTH: usize = 2;

/// The system prompt: the tools, the workspace, the skills, the person's
/// own instruction files (`personal`, each with the name it is shown by),
/// and the workspace's AGENTS.md and CLAUDE.md at its root, then in each
/// folder from the root down to `below` (where the model works, relative to
/// the root, as Codex reads AGENTS.md), with the files each CLAUDE.md
/// imports (read through the resolver: a link out or a FIFO is not read).
/// The same bytes for the same files, so a provider's prompt cache holds.
/// `attended`: a person answers the cards (not a fixed `--answers` policy),
/// so a denial can be followed by `ask`.
pub fn system_prompt(
    workspace: &Workspace,
    skills: &[Skill],
    sandbox: &str,
    attended: bool,
    personal: &[(String, std::path::PathBuf)],
    below: &Path,
) -> (String, Instructions) {
    let gate = if attended {
        "every write, every command and every read outside the workspace waits for the person to allow it, \
         and a denial is final: do not repeat the call or get the same effect another way; \
         if you still need it, say why with ask."
    } else {
        "every write, every command and every read outside the workspace needs an approval, and no person \
         answers in this run: a fixed policy answers each one, and ask gets no reply. A denial is final: \
         do not repeat the call or get the same effect another way; carry on without it."
    };
    let mut prompt = format!(
        "You are a coding agent working in the workspace {}. Relative paths are relative to it.\n\
         Use the tools to read, search and change it. read_file, grep and list_dir inside the workspace run at once; \
         {gate}\n\
         Commands run with no shell. {sandbox}\n\
         To find where a name is used, grep for it; list_dir shows one folder (call it again on a subfolder to go down).\n\
         When the work is done, call finish with a short summary of what you did.\n",
        workspace.root().display()
    );
    if !skills.is_empty() {
        prompt.push_str("\nSkills (load one with use_skill when it fits the task):\n");
        for skill in skills {
            prompt.push_str(&format!("- {}: {}\n", skill.name, skill.description));
        }
    }
    let mut reader = Reader {
        prompt,
        found: Instructions::default(),
        budget: INSTRUCTIONS_MAX_BYTES,
    };
    for (shown, path) in personal {
        match wicket_os::files::read_regular(path, PROMPT_FILE_MAX_BYTES) {
            Ok(Some(bytes)) => {
                reader.add(
                    &format!("Your own instructions ({shown}; they apply everywhere)"),
                    shown,
                    &bytes,
                );
            }
            Ok(None) => {}
            Err(error) => reader
                .found
                .refused
                .push(format!("{shown} was not read: {error}")),
        }
    }
    for folder in folders_down_to(below) {
        for name in ["AGENTS.md", "CLAUDE.md"] {
            let relative = folder.join(name).to_string_lossy().into_owned();
            reader.workspace_file(workspace, &relative, None, 0);
        }
    }
    (reader.prompt, reader.found)
}

/// The AGENTS.md and CLAUDE.md of one folder below the root (with what its
/// CLAUDE.md imports), as the model reads them beside the result of the
/// call that first reached the folder: the text, and what was read or refused.
pub(super) fn folder_instructions(workspace: &Workspace, folder: &Path) -> (String, Instructions) {
    let mut reader = Reader {
        prompt: String::new(),
        found: Instructions::default(),
        budget: INSTRUCTIONS_MAX_BYTES,
    };
    for name in ["AGENTS.md", "CLAUDE.md"] {
        let relative = folder.join(name).to_string_lossy().into_owned();
        reader.workspace_file(workspace, &relative, None, 0);
    }
    (reader.prompt.trim_start().to_string(), reader.found)
}

/// The root (empty), then each folder from it down to `below`; a `below`
/// that is not a plain relative path (`..`, absolute) is the root alone.
pub(super) fn folders_down_to(below: &Path) -> Vec<std::path::PathBuf> {
    let mut folders = vec![std::path::PathBuf::new()];
    let plain = below
        .components()
        .all(|part| matches!(part, std::path::Component::Normal(_)));
    if !plain {
        return folders;
    }
    let mut folder = std::path::PathBuf::new();
    for part in below.components() {
        folder.push(part);
        folders.push(folder.clone());
    }
    folders
}

/// Reads instruction files into the prompt, within [`INSTRUCTIONS_MAX_BYTES`].
struct Reader {
    prompt: String,
    found: Instructions,
    budget: usize,
}

impl Reader {
    /// `bytes` under `heading`, if the budget holds them.
    fn add(&mut self, heading: &str, shown: &str, bytes: &[u8]) -> bool {
        if bytes.len() > self.budget {
            self.found.refused.push(format!(
                "{shown} was not read: the instruction files together are past {INSTRUCTIONS_MAX_BYTES} bytes"
            ));
            return false;
        }
        self.budget -= bytes.len();
        self.prompt.push_str(&format!("\n{heading}:\n\n"));
        self.prompt
            .push_str(String::from_utf8_lossy(bytes).trim_end());
        self.prompt.push('\n');
        self.found.read.push(shown.to_string());
        true
    }

    /// A workspace file (`relative` to the root), and, for a CLAUDE.md or
    /// what it imports, the `@path` files it names, `depth` imports down.
    fn workspace_file(
        &mut self,
        workspace: &Workspace,
        relative: &str,
        imported_by: Option<&str>,
        depth: usize,
    ) {
        let bytes = match workspace.read_runtime_file(Path::new(relative), PROMPT_FILE_MAX_BYTES) {
            Ok(Some(bytes)) => bytes,
            Ok(None) if imported_by.is_none() => return,
            Ok(None) => {
                self.found
                    .refused
                    .push(format!("{relative} was not read: it does not exist"));
                return;
            }
            Err(error) => {
                self.found
                    .refused
                    .push(format!("{relative} was not read: {}", error.message));
                return;
            }
        };
        let folder = Path::new(relative).parent().unwrap_or(Path::new(""));
        let (heading, shown) = match imported_by {
            None if folder.as_os_str().is_empty() => (
                format!("The workspace's {relative} (it applies to the whole workspace)"),
                relative.to_string(),
            ),
            None => (
                format!(
                    "The workspace's {relative} (it applies to {}/ and below)",
                    folder.display()
                ),
                relative.to_string(),
            ),
            Some(by) => (
                format!("{relative}, which {by} imports"),
                format!("{relative} (imported by {by})"),
            ),
        };
        if !self.add(&heading, &shown, &bytes) {
            return;
        }
        let follows = relative.ends_with("CLAUDE.md") || imported_by.is_some();
        if !follows || depth >= IMPORT_DEPTH {
            return;
        }
        for target in imports(&String::from_utf8_lossy(&bytes)) {
            let relative_target = !target.starts_with('/') && !target.starts_with('~');
            // Relative to the file that names it, as Claude Code reads
            // them (`@../conventions.md` included, while it stays inside
            // the workspace); a plain path that is not there is read from
            // the root.
            let beside = relative_target
                .then(|| within(&folder.join(&target)))
                .flatten();
            let Some(beside) = beside else {
                self.found.refused.push(format!(
                    "@{target} (imported by {relative}) was not read: imports are read inside the workspace only"
                ));
                continue;
            };
            let climbs = Path::new(&target)
                .components()
                .any(|part| part == std::path::Component::ParentDir);
            let absent = matches!(
                workspace.read_runtime_file(&beside, PROMPT_FILE_MAX_BYTES),
                Ok(None)
            );
            let target = if absent && !climbs {
                target
            } else {
                beside.to_string_lossy().into_owned()
            };
            self.workspace_file(workspace, &target, Some(relative), depth + 1);
        }
    }
}

/// `path` (relative to the workspace's root) with its `.` and `..` taken
/// out, when it stays inside the root; `None` when a `..` climbs above it.
/// Links are the resolver's to judge, as the file is read.
fn within(path: &Path) -> Option<std::path::PathBuf> {
    let mut kept: Vec<&std::ffi::OsStr> = Vec::new();
    for part in path.components() {
        match part {
            std::path::Component::Normal(name) => kept.push(name),
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                kept.pop()?;
            }
            std::path::Component::RootDir | std::path::Component::Prefix(_) => return None,
        }
    }
    Some(kept.iter().collect())
}

/// The `@path` imports a CLAUDE.md names: a word starting with `@` and
/// holding a `/` or a `.`, outside code spans and fences, each once.
fn imports(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        for (index, part) in line.split('`').enumerate() {
            // Odd parts are inside `code`.
            if index % 2 == 1 {
                continue;
            }
            for word in part.split_whitespace() {
                let Some(target) = word.strip_prefix('@') else {
                    continue;
                };
                let target = target.trim_end_matches(['.', ',', ';', ':', ')']);
                let plausible = !target.is_empty()
                    && (target.contains('/') || target.contains('.'))
                    && !target.contains('@');
                if plausible && !found.iter().any(|seen| seen == target) {
                    found.push(target.to_string());
                }
            }
        }
    }
    found
}

/// What the person reads as a turn starts: the notices of the config and
/// the log, and the instruction files read.
impl Runner<'_> {
    /// The config's notices, the log's unreadable lines, the window's source:
    /// what the person should know as the turn starts.
    pub(super) fn log_notices(&self, unreadable: Option<String>) {
        for notice in &self.settings.notices {
            self.log(EventBody::Notice(NoticeEvent {
                call_id: None,
                text: None,
                message: notice.message.clone(),
                file: Some(notice.file.clone()),
                key: notice.key.clone(),
            }));
        }
        if let Some(message) = unreadable {
            self.log(EventBody::Notice(NoticeEvent {
                call_id: None,
                text: None,
                message,
                file: Some(self.session.log_path().display().to_string()),
                key: None,
            }));
        }
        if let Some(note) = &self.settings.window_note {
            self.log(EventBody::Notice(NoticeEvent {
                call_id: None,
                text: None,
                message: note.clone(),
                file: None,
                key: Some("context_window".into()),
            }));
        }
    }

    /// Each instruction file refused, as an error; on the session's first
    /// turn in this process, a notice naming every file read.
    pub(super) fn tell_instructions(&self, instructions: &Instructions) {
        if let Some(refused) = instructions.refusals() {
            self.log(EventBody::error(refused));
        }
        let told = !instructions.read.is_empty() || !instructions.refused.is_empty();
        if self.settings.session_start.is_some() && told {
            let mut message = format!("instructions read: {}", instructions.read.join(", "));
            if instructions.read.is_empty() {
                message = "instructions read: none".into();
            }
            if let Some(refused) = instructions.refusals() {
                message.push_str(&format!("; refused: {refused}"));
            }
            self.log(EventBody::Notice(NoticeEvent {
                call_id: None,
                text: None,
                message,
                file: None,
                key: Some("instructions".into()),
            }));
        }
    }
}
