//! The instructions of the folders a turn's calls reach: the first call
//! that reads, lists, searches, writes or runs in a folder below the root
//! brings the AGENTS.md and CLAUDE.md of each folder from the root down to
//! it that the system prompt did not hold, beside its result (as Codex and
//! Claude Code read a nested folder's). Each is a `notice` with the text
//! the model read, so a rebuilt conversation holds it in the same place.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::*;
use prompt::{folder_instructions, folders_down_to};

/// The key of the notice that carries a folder's instructions.
pub(crate) const FOLDER_INSTRUCTIONS: &str = "folder_instructions";

/// The folders whose instructions the model has: those down to where it
/// was started, and those an earlier call of the session brought.
pub(super) fn folders_read(below: &Path, events: &[Event]) -> BTreeSet<PathBuf> {
    let mut read: BTreeSet<PathBuf> = folders_down_to(below).into_iter().collect();
    for event in events {
        if let EventBody::Notice(NoticeEvent {
            key: Some(key),
            file: Some(file),
            ..
        }) = &event.body
            && key == FOLDER_INSTRUCTIONS
            && let Some(folder) = Path::new(file).parent()
        {
            read.insert(folder.to_path_buf());
        }
    }
    read
}

/// The folder a call works in, relative to the workspace's root, when it
/// names one inside it.
fn folder_of(workspace: &Workspace, call: &wicket_protocol::ToolCall) -> Option<PathBuf> {
    use wicket_protocol::ToolCall;
    // The typed arguments, never the call serialised: a write's content can be a MiB.
    let (path, is_folder) = match call {
        ToolCall::ReadFile(args) => (args.path.as_str(), false),
        ToolCall::WriteFile(args) => (args.path.as_str(), false),
        ToolCall::SearchReplace(args) => (args.path.as_str(), false),
        ToolCall::ListDir(args) => (args.path.as_deref().unwrap_or("."), true),
        ToolCall::Grep(args) => (args.path.as_deref().unwrap_or("."), true),
        ToolCall::Run(args) => (args.cwd.as_deref().unwrap_or("."), true),
    };
    let root = workspace.root();
    let path = Path::new(path);
    let relative = match path.strip_prefix(root) {
        Ok(inside) => inside.to_path_buf(),
        Err(_) if path.is_absolute() => return None,
        Err(_) => path.to_path_buf(),
    };
    // A grep or list of one file works in the file's folder.
    let folder = if is_folder && root.join(&relative).is_dir() {
        relative
    } else {
        relative.parent().map(Path::to_path_buf).unwrap_or_default()
    };
    // `./api` is `api`; a folder out (`../x`) reaches no folder below the
    // root (`folders_down_to` reads it as the root alone).
    Some(
        folder
            .components()
            .filter(|part| !matches!(part, std::path::Component::CurDir))
            .collect(),
    )
}

impl Runner<'_> {
    /// The instructions of each folder from the root down to where `tool`
    /// works that the model does not have yet: logged, and returned to go
    /// beside the call's result.
    pub(super) fn reach_folders(
        &self,
        turn: &mut Turn,
        call: &ToolCallRequest,
        tool: &wicket_protocol::ToolCall,
    ) -> Vec<String> {
        let workspace = self.tools.workspace();
        let Some(folder) = folder_of(workspace, tool) else {
            return Vec::new();
        };
        let mut notes = Vec::new();
        for folder in folders_down_to(&folder) {
            if !turn.folders.insert(folder.clone()) {
                continue;
            }
            let (text, found) = folder_instructions(workspace, &folder);
            if let Some(refused) = found.refusals() {
                self.log(EventBody::error(refused));
            }
            let Some(first) = found.read.first() else {
                continue;
            };
            self.log(EventBody::Notice(NoticeEvent {
                message: format!("instructions read: {}", found.read.join(", ")),
                file: Some(first.split(' ').next().unwrap_or(first).to_string()),
                key: Some(FOLDER_INSTRUCTIONS.into()),
                call_id: Some(call.id.clone()),
                text: Some(text.clone()),
            }));
            notes.push(text);
        }
        notes
    }
}
