//! Skills in the Agent Skills format: a folder holding `SKILL.md`, whose YAML
//! front matter gives `name` and `description`. The system prompt lists every
//! skill's name and description; `use_skill(name)` returns the body. A
//! skill inside the workspace is read through the resolver (a link out or
//! a FIFO is not a skill); every SKILL.md is capped, and its front matter
//! is bounded before the YAML parser sees it (a parser's time can grow with
//! the square of its nesting): a skill past the bound is skipped, said.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use wicket_protocol::limits::PROMPT_FILE_MAX_BYTES;
use wicket_tools::Workspace;

use crate::config::SkillDir;

/// Where a SKILL.md is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkillFile {
    /// Inside the workspace, relative to its root.
    Workspace(PathBuf),
    /// In the person's own folders.
    Home(PathBuf),
}

/// One skill found on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    /// Its name.
    pub name: String,
    /// What it is for.
    pub description: String,
    /// Its SKILL.md.
    pub file: SkillFile,
}

/// The most a SKILL.md's front matter may hold: far more than a name and
/// a description need.
pub const FRONT_MATTER_MAX_BYTES: usize = 16 * 1024;
/// How deep its flow lists and maps may nest: `[` and `{` are counted
/// wherever they stand (one inside a string too, which errs only toward
/// skipping).
pub const FRONT_MATTER_MAX_DEPTH: usize = 32;

/// A skill skipped, and why: its SKILL.md as shown, and the reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// The SKILL.md.
    pub file: String,
    /// Why it was skipped.
    pub why: String,
}

/// Why a front matter is past the bounds, if it is: counted before any
/// YAML is parsed.
fn past_bounds(front: &str) -> Option<String> {
    if front.len() > FRONT_MATTER_MAX_BYTES {
        return Some(format!(
            "its front matter is {} bytes, more than the {FRONT_MATTER_MAX_BYTES} a skill's may be",
            front.len()
        ));
    }
    let mut depth = 0usize;
    let mut deepest = 0usize;
    for byte in front.bytes() {
        match byte {
            b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    (deepest > FRONT_MATTER_MAX_DEPTH).then(|| {
        format!(
            "its front matter nests {deepest} deep, more than the {FRONT_MATTER_MAX_DEPTH} a skill's may"
        )
    })
}

#[derive(Deserialize)]
struct FrontMatter {
    name: String,
    #[serde(default)]
    description: String,
}

/// A folder skills are found in.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Folder {
    Workspace(PathBuf),
    Home(PathBuf),
}

/// The folders skills are found in, first match of a name wins:
/// `<workspace>/.wicket/skills`, `<workspace>/.claude/skills`, `$WICKET_HOME/skills`,
/// the person's Claude Code skills (`~/.claude/skills`), then the config's `skill_dirs`.
fn folders(home: &Path, extra: &[SkillDir]) -> Vec<Folder> {
    let mut folders = vec![
        Folder::Workspace(PathBuf::from(".wicket/skills")),
        Folder::Workspace(PathBuf::from(".claude/skills")),
        Folder::Home(home.join("skills")),
    ];
    if let Some(user) = std::env::var_os("HOME").filter(|user| !user.is_empty()) {
        folders.push(Folder::Home(PathBuf::from(user).join(".claude/skills")));
    }
    folders.extend(extra.iter().map(|dir| match dir {
        SkillDir::Home(path) => Folder::Home(path.clone()),
        SkillDir::Workspace(path) => Folder::Workspace(path.clone()),
    }));
    folders
}

/// Splits `SKILL.md` into its front matter and its body.
fn split(text: &str) -> Option<(&str, &str)> {
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))?;
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            return Some((&rest[..offset], &rest[offset + line.len()..]));
        }
        offset += line.len();
    }
    None
}

fn read(workspace: &Workspace, file: &SkillFile) -> Option<String> {
    let bytes = match file {
        SkillFile::Workspace(relative) => workspace
            .read_runtime_file(relative, PROMPT_FILE_MAX_BYTES)
            .ok()??,
        SkillFile::Home(path) => {
            wicket_os::files::read_regular(path, PROMPT_FILE_MAX_BYTES).ok()??
        }
    };
    String::from_utf8(bytes).ok()
}

/// What reading a SKILL.md found.
enum Parsed {
    /// A skill, and its body.
    Skill(Skill, String),
    /// A file that is no skill (absent, unreadable, no front matter).
    Not,
    /// Front matter past the bounds: skipped, and why.
    Past(String),
}

fn parse(workspace: &Workspace, file: SkillFile) -> Option<(Skill, String)> {
    match parsed(workspace, file) {
        Parsed::Skill(skill, body) => Some((skill, body)),
        Parsed::Not | Parsed::Past(_) => None,
    }
}

fn parsed(workspace: &Workspace, file: SkillFile) -> Parsed {
    let Some(text) = read(workspace, &file) else {
        return Parsed::Not;
    };
    let Some((front, body)) = split(&text) else {
        return Parsed::Not;
    };
    if let Some(why) = past_bounds(front) {
        return Parsed::Past(why);
    }
    let Ok(front) = serde_yaml_ng::from_str::<FrontMatter>(front) else {
        return Parsed::Not;
    };
    let skill = Skill {
        name: front.name.trim().to_string(),
        description: front.description.trim().to_string(),
        file,
    };
    Parsed::Skill(skill, body.trim_start_matches(['\r', '\n']).to_string())
}

/// The SKILL.md files of one folder, sorted.
fn files_in(workspace: &Workspace, folder: &Folder) -> Vec<SkillFile> {
    match folder {
        Folder::Workspace(relative) => workspace
            .runtime_subfolders(relative)
            .unwrap_or_default()
            .into_iter()
            .map(|name| SkillFile::Workspace(relative.join(name).join("SKILL.md")))
            .collect(),
        Folder::Home(path) => {
            let Ok(entries) = std::fs::read_dir(path) else {
                return Vec::new();
            };
            let mut files: Vec<PathBuf> = entries
                .filter_map(|entry| entry.ok())
                .map(|entry| entry.path().join("SKILL.md"))
                .collect();
            files.sort();
            files.into_iter().map(SkillFile::Home).collect()
        }
    }
}

/// Every skill the session sees, sorted by name; a name already found is
/// skipped, and so is a SKILL.md without valid front matter.
pub fn discover(workspace: &Workspace, home: &Path, extra: &[SkillDir]) -> Vec<Skill> {
    discover_noting(workspace, home, extra).0
}

/// As [`discover`], with the skills skipped because their front matter is
/// past the bounds, to be said.
pub fn discover_noting(
    workspace: &Workspace,
    home: &Path,
    extra: &[SkillDir],
) -> (Vec<Skill>, Vec<Skipped>) {
    let mut skills: Vec<Skill> = Vec::new();
    let mut skipped = Vec::new();
    for folder in folders(home, extra) {
        for file in files_in(workspace, &folder) {
            let shown = match &file {
                SkillFile::Workspace(relative) => relative.display().to_string(),
                SkillFile::Home(path) => path.display().to_string(),
            };
            match parsed(workspace, file) {
                Parsed::Skill(skill, _)
                    if !skill.name.is_empty()
                        && !skills.iter().any(|known| known.name == skill.name) =>
                {
                    skills.push(skill);
                }
                Parsed::Skill(..) | Parsed::Not => {}
                Parsed::Past(why) => skipped.push(Skipped { file: shown, why }),
            }
        }
    }
    skills.sort_by(|a, b| a.name.cmp(&b.name));
    (skills, skipped)
}

/// The body of the named skill, or an error that lists the skills there are.
pub fn body(workspace: &Workspace, skills: &[Skill], name: &str) -> Result<String, String> {
    let found = skills.iter().find(|skill| skill.name == name);
    match found.and_then(|skill| parse(workspace, skill.file.clone())) {
        Some((_, body)) => Ok(body),
        None => {
            let names: Vec<&str> = skills.iter().map(|skill| skill.name.as_str()).collect();
            Err(if names.is_empty() {
                format!("there is no skill '{name}'; this session has no skills")
            } else {
                format!(
                    "there is no skill '{name}'; the skills are: {}",
                    names.join(", ")
                )
            })
        }
    }
}

#[cfg(test)]
// A test makes a FIFO with mkfifo, from outside: no child of Wicket's.
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;

    fn write(folder: &Path, skill: &str, text: &str) {
        std::fs::create_dir_all(folder.join(skill)).unwrap();
        std::fs::write(folder.join(skill).join("SKILL.md"), text).unwrap();
    }

    #[test]
    fn front_matter_names_the_skill_and_the_first_folder_wins() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        let home = dir.path().join("home");
        let a = ws.join(".wicket/skills");
        write(
            &a,
            "release",
            "---\nname: release\ndescription: >\n  Cut a release:\n  tag and publish.\n---\n\n# Release\nSteps.\n",
        );
        let b = home.join("skills");
        write(
            &b,
            "release",
            "---\nname: release\ndescription: other\n---\nNo.\n",
        );
        write(
            &b,
            "review",
            "---\nname: review\ndescription: \"Review a diff\"\n---\nLook.\n",
        );
        write(&b, "broken", "no front matter\n");
        let workspace = Workspace::open(&ws).unwrap();
        let skills = discover(&workspace, &home, &[]);
        let names: Vec<(&str, &str)> = skills
            .iter()
            .map(|s| (s.name.as_str(), s.description.as_str()))
            .collect();
        assert_eq!(
            names,
            vec![
                ("release", "Cut a release: tag and publish."),
                ("review", "Review a diff")
            ]
        );
        assert_eq!(
            body(&workspace, &skills, "release").as_deref(),
            Ok("# Release\nSteps.\n")
        );
        let missing = body(&workspace, &skills, "deploy").unwrap_err();
        assert!(missing.contains("release, review"), "{missing}");
    }

    #[test]
    fn a_front_matter_past_its_bounds_is_skipped_and_said_before_any_yaml_is_parsed() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        let skills = ws.join(".wicket/skills");
        // Before the bound, parsing this took minutes (the parser's time
        // grows with the square of the nesting).
        write(
            &skills,
            "deep",
            &format!(
                "---\nname: deep\ndescription: {}\n---\nbody\n",
                "[".repeat(60_000)
            ),
        );
        write(
            &skills,
            "nested",
            &format!(
                "---\nname: nested\ndescription: x\nmeta: {}{}\n---\nbody\n",
                "[".repeat(FRONT_MATTER_MAX_DEPTH + 1),
                "]".repeat(FRONT_MATTER_MAX_DEPTH + 1)
            ),
        );
        write(
            &skills,
            "fine",
            &format!(
                "---\nname: fine\ndescription: x\nmeta: {}{}\n---\nbody\n",
                "[".repeat(FRONT_MATTER_MAX_DEPTH),
                "]".repeat(FRONT_MATTER_MAX_DEPTH)
            ),
        );
        let workspace = Workspace::open(&ws).unwrap();
        let (found, skipped) = discover_noting(&workspace, &dir.path().join("home"), &[]);
        let names: Vec<&str> = found.iter().map(|skill| skill.name.as_str()).collect();
        assert_eq!(names, ["fine"]);
        assert_eq!(skipped.len(), 2, "{skipped:?}");
        assert!(skipped[0].file.ends_with("deep/SKILL.md"), "{skipped:?}");
        assert!(skipped[0].why.contains("bytes"), "{skipped:?}");
        assert!(skipped[1].file.ends_with("nested/SKILL.md"), "{skipped:?}");
        assert!(skipped[1].why.contains("nests 33 deep"), "{skipped:?}");
    }

    #[test]
    fn a_workspace_skill_is_not_read_through_a_link_out_or_a_fifo() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        let outside = dir.path().join("outside");
        write(
            &outside,
            "secret",
            "---\nname: secret\ndescription: leaked\n---\nSECRET\n",
        );
        std::fs::create_dir_all(ws.join(".wicket/skills/linked")).unwrap();
        std::os::unix::fs::symlink(
            outside.join("secret/SKILL.md"),
            ws.join(".wicket/skills/linked/SKILL.md"),
        )
        .unwrap();
        std::os::unix::fs::symlink(outside.join("secret"), ws.join(".wicket/skills/folder"))
            .unwrap();
        std::fs::create_dir_all(ws.join(".wicket/skills/fifo")).unwrap();
        let fifo = ws.join(".wicket/skills/fifo/SKILL.md");
        assert!(
            std::process::Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap()
                .success()
        );
        let workspace = Workspace::open(&ws).unwrap();
        let skills = discover(&workspace, &dir.path().join("home"), &[]);
        assert!(skills.is_empty(), "{skills:?}");
    }
}
