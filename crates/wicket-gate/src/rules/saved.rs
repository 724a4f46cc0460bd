//! The rules files: `[[rules]]` tables read and checked, and
//! `$WICKET_HOME/rules.toml`, where `allow_always` saves a rule and `wicket
//! grants revoke` takes one back, under a lock and replaced whole.

use std::path::Path;

use wicket_protocol::{Rule, RuleId, RuleSpec};

use super::{Error, Result};

/// The rules in `text` (a file with `[[rules]]` tables), numbered
/// `PREFIX-N` where a rule has no id.
pub fn parse(text: &str, prefix: &str) -> std::result::Result<Vec<Rule>, String> {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct File {
        #[serde(default)]
        rules: Vec<RuleSpec>,
    }
    let file: File =
        toml::from_str(text).map_err(|error| error.to_string().trim_end().to_string())?;
    checked(file.rules, prefix)
}

/// `specs` checked, numbered `PREFIX-N` where one has no id.
pub fn checked(specs: Vec<RuleSpec>, prefix: &str) -> std::result::Result<Vec<Rule>, String> {
    specs
        .iter()
        .enumerate()
        .map(|(index, spec)| spec.check(&format!("{prefix}-{}", index + 1)))
        .collect()
}

/// The most a rules file may hold: thousands of rules.
const RULES_FILE_MAX_BYTES: u64 = 4 * 1024 * 1024;

/// The text of `$WICKET_HOME/rules.toml`: a file of the person's home,
/// never of a workspace, so it is read directly, not through the resolver;
/// opened without waiting (a FIFO there is refused, never waited on).
fn rules_text(path: &Path) -> std::io::Result<String> {
    match wicket_os::files::read_regular(path, RULES_FILE_MAX_BYTES)? {
        Some(bytes) => String::from_utf8(bytes).map_err(|_| {
            std::io::Error::new(std::io::ErrorKind::InvalidData, "it is not UTF-8 text")
        }),
        None => Err(std::io::ErrorKind::NotFound.into()),
    }
}

/// The rules saved in `path` (none when it does not exist).
pub fn read_saved(path: &Path) -> Result<Vec<Rule>> {
    let text = match rules_text(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(file_error(path, error.to_string())),
    };
    parse(&text, "saved").map_err(|message| file_error(path, message))
}

fn file_error(path: &Path, message: String) -> Error {
    Error::File {
        path: path.display().to_string(),
        message,
    }
}

/// Serialises writers of rules.toml (two sessions saving at once).
/// The folder is made first (0700): on a fresh install `$WICKET_HOME` is
/// not there yet.
fn locked(path: &Path) -> Result<wicket_os::files::Locked> {
    if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
        wicket_os::files::private_dir(dir).map_err(|error| file_error(dir, error.to_string()))?;
    }
    let lock = path.with_extension("lock");
    wicket_os::files::lock(&lock, std::time::Duration::from_secs(5))
        .map_err(|error| file_error(&lock, error.to_string()))
}

/// Appends `spec` to the rules file at `path` under a fresh id. The file is
/// replaced whole (never a torn append), keeping what the person wrote.
pub fn save(path: &Path, mut spec: RuleSpec) -> Result<RuleId> {
    let _lock = locked(path)?;
    let existing = read_saved(path)?;
    let id = loop {
        let id = RuleId::from(format!(
            "r-{}",
            wicket_os::ids::random_hex(8).get(..8).unwrap_or("0")
        ));
        if !existing.iter().any(|rule| rule.id == id) {
            break id;
        }
    };
    spec.id = Some(id.clone());
    spec.check(&id)
        .map_err(|message| file_error(path, message))?;
    #[derive(serde::Serialize)]
    struct File<'a> {
        rules: [&'a RuleSpec; 1],
    }
    let block = toml::to_string(&File { rules: [&spec] })
        .map_err(|error| file_error(path, error.to_string()))?;
    let mut text = match rules_text(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            "# Rules saved by `allow_always` (and your own). `wicket grants` lists them,\n\
             # `wicket grants revoke ID` takes one back.\n"
                .to_string()
        }
        Err(error) => return Err(file_error(path, error.to_string())),
    };
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push('\n');
    text.push_str(&block);
    // The file must read back with the rule in it (a person's `rules = []`
    // would not), or nothing is written.
    let read_back = parse(&text, "saved").map_err(|message| file_error(path, message))?;
    if !read_back.iter().any(|rule| rule.id == id) {
        return Err(file_error(
            path,
            "the rule could not be added to the file as it is written".into(),
        ));
    }
    wicket_os::files::write_atomically(path, text.as_bytes(), true)
        .map_err(|error| file_error(path, error.to_string()))?;
    Ok(id)
}

/// Appends each rule of `specs` (each with its own id, and a comment line
/// saying where it came from) whose id the file at `path` does not hold
/// yet, in one replacement of the file, under the lock: importing the same
/// rules twice adds nothing the second time. Which were added.
pub fn save_named(path: &Path, specs: &[(RuleSpec, String)]) -> Result<Vec<bool>> {
    let _lock = locked(path)?;
    let existing = read_saved(path)?;
    let mut text = match rules_text(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(error) => return Err(file_error(path, error.to_string())),
    };
    let added = fresh(&existing, specs);
    for ((spec, comment), fresh) in specs.iter().zip(&added) {
        let Some(id) = spec.id.clone() else {
            return Err(file_error(path, "an imported rule has no id".into()));
        };
        if !fresh {
            continue;
        }
        spec.check(&id)
            .map_err(|message| file_error(path, message))?;
        #[derive(serde::Serialize)]
        struct File<'a> {
            rules: [&'a RuleSpec; 1],
        }
        let block = toml::to_string(&File { rules: [spec] })
            .map_err(|error| file_error(path, error.to_string()))?;
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push('\n');
        for line in comment.lines() {
            text.push_str(&format!("# {line}\n"));
        }
        text.push_str(&block);
    }
    if !added.contains(&true) {
        return Ok(added);
    }
    parse(&text, "saved").map_err(|message| file_error(path, message))?;
    wicket_os::files::write_atomically(path, text.as_bytes(), true)
        .map_err(|error| file_error(path, error.to_string()))?;
    Ok(added)
}

/// Which rules of `specs` [`save_named`] adds to a file holding `existing`:
/// each whose id neither the file nor an earlier rule of `specs` holds. A
/// dry run asks this too, so it lists what the import would write.
pub fn fresh(existing: &[Rule], specs: &[(RuleSpec, String)]) -> Vec<bool> {
    let mut seen: std::collections::BTreeSet<&RuleId> =
        existing.iter().map(|rule| &rule.id).collect();
    specs
        .iter()
        .map(|(spec, _)| spec.id.as_ref().is_some_and(|id| seen.insert(id)))
        .collect()
}

/// Takes the saved rule `id` out of the file at `path`, keeping the rest of
/// the file (comments included) as it was.
pub fn revoke(path: &Path, id: &str) -> Result<Rule> {
    let _lock = locked(path)?;
    let rules = read_saved(path)?;
    let Some(index) = rules.iter().position(|rule| rule.id == id) else {
        return Err(Error::NoSuchRule(id.to_string()));
    };
    let text = rules_text(path).map_err(|error| file_error(path, error.to_string()))?;
    let mut document: toml_edit::DocumentMut = text
        .parse()
        .map_err(|error: toml_edit::TomlError| file_error(path, error.to_string()))?;
    let Some(tables) = document
        .get_mut("rules")
        .and_then(|item| item.as_array_of_tables_mut())
    else {
        return Err(Error::NoSuchRule(id.to_string()));
    };
    tables.remove(index);
    if tables.is_empty() {
        document.remove("rules");
    }
    wicket_os::files::write_atomically(path, document.to_string().as_bytes(), true)
        .map_err(|error| file_error(path, error.to_string()))?;
    Ok(rules[index].clone())
}
