//! The system prompt a turn starts from.

use super::*;

/// The system prompt: the tools, the workspace, the skills, and AGENTS.md
/// (read through the resolver: a link out or a FIFO is not read). The
/// same bytes for the same files, so a provider's prompt cache holds. The
/// second value says why AGENTS.md was not read, when it was there but refused.
/// `attended`: a person answers the cards (not a fixed `--answers` policy),
/// so a denial can be followed by `ask`.
pub fn system_prompt(
    workspace: &Workspace,
    skills: &[Skill],
    sandbox: &str,
    attended: bool,
) -> (String, Option<String>) {
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
    let mut warning = None;
    match workspace.read_runtime_file(Path::new("AGENTS.md"), PROMPT_FILE_MAX_BYTES) {
        Ok(Some(bytes)) => {
            prompt.push_str("\nThe workspace's AGENTS.md (it applies to the whole workspace):\n\n");
            prompt.push_str(String::from_utf8_lossy(&bytes).trim_end());
            prompt.push('\n');
        }
        Ok(None) => {}
        Err(error) => warning = Some(format!("AGENTS.md was not read: {}", error.message)),
    }
    (prompt, warning)
}
