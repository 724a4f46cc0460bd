//! Skills in the Agent Skills format: a folder holding `SKILL.md`, whose YAML
//! front matter gives `name` and `description`. The system prompt lists every
//! skill's name and description; `use_skill(name)` returns the body.

use std::path::{Path, PathBuf};

use serde::Deserialize;

/// One skill found on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    pub name: String,
    pub description: String,
    pub path: PathBuf,
}

#[derive(Deserialize)]
struct FrontMatter {
    name: String,
    #[serde(default)]
    description: String,
}

/// The folders skills are found in, first match of a name wins:
/// `<workspace>/.wicket/skills`, `<workspace>/.claude/skills`, `$WICKET_HOME/skills`,
/// then the config's `skill_dirs`.
pub fn folders(workspace: &Path, home: &Path, extra: &[PathBuf]) -> Vec<PathBuf> {
    let mut folders = vec![
        workspace.join(".wicket").join("skills"),
        workspace.join(".claude").join("skills"),
        home.join("skills"),
    ];
    folders.extend(extra.iter().cloned());
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

fn parse(path: &Path) -> Option<(Skill, String)> {
    let text = std::fs::read_to_string(path).ok()?;
    let (front, body) = split(&text)?;
    let front: FrontMatter = serde_yaml_ng::from_str(front).ok()?;
    let skill = Skill {
        name: front.name.trim().to_string(),
        description: front.description.trim().to_string(),
        path: path.to_path_buf(),
    };
    Some((skill, body.trim_start_matches(['\r', '\n']).to_string()))
}

/// Every skill in `folders`, sorted by name; a name already found is skipped,
/// and so is a SKILL.md without valid front matter.
pub fn discover(folders: &[PathBuf]) -> Vec<Skill> {
    let mut skills: Vec<Skill> = Vec::new();
    for folder in folders {
        let Ok(entries) = std::fs::read_dir(folder) else {
            continue;
        };
        let mut paths: Vec<PathBuf> = entries
            .filter_map(|entry| entry.ok())
            .map(|entry| entry.path().join("SKILL.md"))
            .filter(|path| path.is_file())
            .collect();
        paths.sort();
        for path in paths {
            if let Some((skill, _)) = parse(&path)
                && !skill.name.is_empty()
                && !skills.iter().any(|known| known.name == skill.name)
            {
                skills.push(skill);
            }
        }
    }
    skills.sort_by(|a, b| a.name.cmp(&b.name));
    skills
}

/// The body of the named skill, or an error that lists the skills there are.
pub fn body(skills: &[Skill], name: &str) -> Result<String, String> {
    let found = skills.iter().find(|skill| skill.name == name);
    match found.and_then(|skill| parse(&skill.path)) {
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
mod tests {
    use super::*;

    #[test]
    fn front_matter_names_the_skill_and_the_first_folder_wins() {
        let Ok(dir) = tempfile::tempdir() else { return };
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        let write = |folder: &Path, skill: &str, text: &str| {
            let _ = std::fs::create_dir_all(folder.join(skill));
            let _ = std::fs::write(folder.join(skill).join("SKILL.md"), text);
        };
        write(
            &a,
            "release",
            "---\nname: release\ndescription: >\n  Cut a release:\n  tag and publish.\n---\n\n# Release\nSteps.\n",
        );
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
        let skills = discover(&[a, b, dir.path().join("missing")]);
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
            body(&skills, "release").as_deref(),
            Ok("# Release\nSteps.\n")
        );
        let missing = body(&skills, "deploy").unwrap_or_else(|e| e);
        assert!(missing.contains("release, review"), "{missing}");
    }
}
