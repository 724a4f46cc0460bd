//! The docs cannot drift from the code: every Rust path (`Gate::call`,
//! `turn::turn_over`), every `file.rs` and every type-like name
//! (`EventBody`) that README.md or ARCHITECTURE.md puts in backticks must
//! name something the source defines. A rename that leaves the docs behind
//! fails here, with the line of the doc that says the old name.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

const DOCS: [&str; 2] = ["README.md", "ARCHITECTURE.md"];

/// Files the docs name that are not Wicket's: a repository's (`build.rs`
/// runs when cargo builds it) and ripgrep's (a model for one of ours).
const NOT_OURS: [&str; 2] = ["build.rs", "hiargs.rs"];

/// Crates outside the workspace whose paths the docs may name.
const EXTERNAL: [&str; 5] = ["std", "core", "ratatui", "rmcp", "tokio"];

/// The workspace's root (two folders above this crate).
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every `.rs` file under `crates/`, as a path relative to the root, with its text.
fn sources() -> Vec<(String, String)> {
    let mut found = Vec::new();
    let mut folders = vec![root().join("crates")];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            if path.is_dir() && name != "target" && name != "node_modules" {
                folders.push(path);
            } else if name.ends_with(".rs") {
                let relative = path
                    .strip_prefix(root())
                    .unwrap()
                    .to_string_lossy()
                    .to_string();
                found.push((relative, std::fs::read_to_string(&path).unwrap()));
            }
        }
    }
    found
}

/// What the source defines, by name.
struct Defined {
    /// Items: fn, struct, enum, trait, type, const, static, mod, macro, and
    /// enum variants and fields (a word at a line's start followed by `(`,
    /// `{`, `,` or `:`).
    items: BTreeSet<String>,
    /// Types, traits and enums only.
    types: BTreeSet<String>,
    /// Every file's path below the root.
    files: Vec<String>,
    /// Crate names as Rust spells them (`wicket_core`).
    crates: BTreeSet<String>,
}

impl Defined {
    fn read() -> Defined {
        let item = regex::Regex::new(
            r"(?m)^\s*(?:pub(?:\([a-z]+\))?\s+)?(?:unsafe\s+|async\s+|const\s+)*(fn|struct|enum|trait|type|const|static|mod|macro_rules!)\s+([A-Za-z_][A-Za-z0-9_]*)",
        )
        .unwrap();
        let member = regex::Regex::new(
            r"(?m)^\s*(?:pub(?:\([a-z]+\))?\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*(?:\(|\{|,|:[^:])",
        )
        .unwrap();
        let macro_made =
            regex::Regex::new(r"(?m)^\s*[a-z_]+!\(\s*(?:///[^\n]*\n\s*)*([A-Z][A-Za-z0-9]*)")
                .unwrap();
        let mut defined = Defined {
            items: BTreeSet::new(),
            types: BTreeSet::new(),
            files: Vec::new(),
            crates: BTreeSet::new(),
        };
        for (path, text) in sources() {
            for found in item.captures_iter(&text) {
                defined.items.insert(found[2].to_string());
                if matches!(&found[1], "struct" | "enum" | "trait" | "type") {
                    defined.types.insert(found[2].to_string());
                }
            }
            for found in member.captures_iter(&text) {
                defined.items.insert(found[1].to_string());
            }
            // Types a macro makes (`id!(CallId)`).
            for found in macro_made.captures_iter(&text) {
                defined.items.insert(found[1].to_string());
                defined.types.insert(found[1].to_string());
            }
            if let Some(name) = path
                .strip_prefix("crates/")
                .and_then(|p| p.split('/').next())
            {
                defined.crates.insert(name.replace('-', "_"));
            }
            defined.files.push(path);
        }
        defined
    }

    fn has_file(&self, name: &str) -> bool {
        self.files
            .iter()
            .any(|path| path == name || path.ends_with(&format!("/{name}")))
    }

    fn has_module(&self, name: &str) -> bool {
        self.crates.contains(name)
            || self.crates.contains(&format!("wicket_{name}"))
            || self.items.contains(name)
            || self.has_file(&format!("{name}.rs"))
            || self.has_file(&format!("{name}/mod.rs"))
    }

    /// Why `path` (`a::b::C`, `Type::method`) names nothing, if it does not.
    fn check_path(&self, path: &str) -> Option<String> {
        let segments: Vec<&str> = path.split("::").collect();
        if EXTERNAL.contains(segments.first()?) {
            return None;
        }
        let last = *segments.last()?;
        if !self.items.contains(last) {
            return Some(format!("`{last}` is defined nowhere in crates/"));
        }
        for segment in &segments[..segments.len() - 1] {
            let known = if segment.starts_with(char::is_uppercase) {
                self.types.contains(*segment) || self.items.contains(*segment)
            } else {
                *segment == "crate"
                    || *segment == "std"
                    || *segment == "self"
                    || self.has_module(segment)
            };
            if !known {
                return Some(format!("`{segment}` is no module or type in crates/"));
            }
        }
        None
    }
}

/// The backticked spans of a markdown text outside fenced blocks, with their line numbers.
fn spans(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let mut fenced = false;
    for (number, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let mut parts = line.split('`');
        parts.next();
        while let (Some(inside), Some(_)) = (parts.next(), parts.next()) {
            found.push((number + 1, inside.to_string()));
        }
    }
    found
}

/// What in a span the check holds the source to: a Rust path, a file, a type-like name.
enum Claim {
    Path(String),
    File(String),
    Type(String),
}

fn claim(span: &str) -> Option<Claim> {
    let rust_path =
        regex::Regex::new(r"^([A-Za-z_][A-Za-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)+)(?:\(\))?$")
            .unwrap();
    let file = regex::Regex::new(r"^([A-Za-z0-9_./-]+\.rs)$").unwrap();
    // Two humps at least (`EventBody`, not `Stop`), so words of prose are left alone.
    let type_like = regex::Regex::new(r"^([A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*)(?:\(\))?$").unwrap();
    if let Some(found) = rust_path.captures(span) {
        return Some(Claim::Path(found[1].to_string()));
    }
    if let Some(found) = file.captures(span) {
        return Some(Claim::File(found[1].to_string()));
    }
    type_like
        .captures(span)
        .map(|found| Claim::Type(found[1].to_string()))
}

/// Every claim of `text` that the source does not bear out, as `line: span: why`.
fn wrong_claims(text: &str, defined: &Defined) -> Vec<String> {
    let mut wrong = Vec::new();
    for (line, span) in spans(text) {
        let why = match claim(&span) {
            Some(Claim::Path(path)) => defined.check_path(&path),
            Some(Claim::File(file)) => (!NOT_OURS.contains(&file.as_str())
                && !defined.has_file(&file))
            .then(|| "no such file in crates/".to_string()),
            Some(Claim::Type(name)) => (!defined.items.contains(&name))
                .then(|| format!("`{name}` is defined nowhere in crates/")),
            None => None,
        };
        if let Some(why) = why {
            wrong.push(format!("{line}: `{span}`: {why}"));
        }
    }
    wrong
}

#[test]
fn every_rust_path_file_and_type_the_docs_name_is_in_the_source() {
    let defined = Defined::read();
    let mut wrong = Vec::new();
    for doc in DOCS {
        let text = std::fs::read_to_string(root().join(doc)).unwrap();
        wrong.extend(
            wrong_claims(&text, &defined)
                .into_iter()
                .map(|claim| format!("{doc}:{claim}")),
        );
    }
    assert!(
        wrong.is_empty(),
        "the docs name what the source does not have (rename it in the doc, or drop the claim):\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_check_fails_on_a_renamed_symbol_and_passes_on_a_real_one() {
    let defined = Defined::read();
    let doc = "The gate asks `Gate::mcp_allowed_by` and `rules::restricts`.\n\
               The log is `EventBody` in `event.rs`; `turn::turn_over` ends a turn.\n\
               ```\n`Ignored::inside_fences`\n```\n";
    let wrong = wrong_claims(doc, &defined);
    assert_eq!(wrong.len(), 2, "{wrong:?}");
    assert!(wrong[0].contains("mcp_allowed_by"), "{wrong:?}");
    assert!(wrong[1].contains("restricts"), "{wrong:?}");
    assert!(wrong_claims("`nosuchfile.rs`", &defined)[0].contains("no such file"));
}

/// The production code of every crate, by file, as lines: not tests (a
/// test file, or a file's `#[cfg(test)]` module and what follows it), not
/// the bench, the fake servers or the test support.
fn production() -> Vec<(String, Vec<String>)> {
    sources()
        .into_iter()
        .filter(|(path, _)| {
            !path.contains("/tests/")
                && !path.ends_with("tests.rs")
                && !path.contains("wicket-bench")
                && !path.contains("wicket-fake")
                && !path.contains("wicket-test-support")
        })
        .map(|(path, text)| {
            let lines = text
                .lines()
                .take_while(|line| !line.trim_start().starts_with("#[cfg(test)]"))
                .map(str::to_string)
                .collect();
            (path, lines)
        })
        .collect()
}

/// ARCHITECTURE.md says no `Result` is dropped (`let _ =`) in production
/// code without a comment saying why: on the line, just above it, or just
/// above the run of `let _` lines it is in. This keeps that true.
#[test]
fn every_dropped_result_in_production_says_why() {
    let mut silent = Vec::new();
    for (path, lines) in production() {
        for (index, line) in lines.iter().enumerate() {
            if !line.contains("let _ =") || line.contains("//") {
                continue;
            }
            let above = lines[..index]
                .iter()
                .rev()
                .find(|line| !line.contains("let _ ="))
                .map_or("", |line| line.trim_start());
            if !above.starts_with("//") {
                silent.push(format!("{path}:{}: {}", index + 1, line.trim()));
            }
        }
    }
    assert!(
        silent.is_empty(),
        "a dropped Result with no comment saying why:\n{}",
        silent.join("\n")
    );
}

/// STYLE.md: no function over 80 lines, or a comment just above it (its
/// doc or a `//` line) that says why it is past 80 lines. This keeps that true
/// for production code (tests and the bench are exempt).
#[test]
fn every_function_past_80_lines_says_why() {
    let signature = regex::Regex::new(
        r"^(\s*)(?:pub(?:\([^)]*\))?\s+)?(?:const\s+|async\s+|unsafe\s+)*fn\s+(\w+)",
    )
    .unwrap();
    let mut long = Vec::new();
    for (path, lines) in production() {
        let end = lines.len();
        for (start, line) in lines.iter().enumerate() {
            let Some(found) = signature.captures(line) else {
                continue;
            };
            let closing = format!("{}}}", &found[1]);
            let Some(length) = lines[start..end]
                .iter()
                .position(|line| line.trim_end() == closing)
                .map(|last| last + 1)
            else {
                continue;
            };
            let said = lines[..start]
                .iter()
                .rev()
                .take_while(|line| {
                    let line = line.trim_start();
                    line.starts_with("//") || line.starts_with("#[")
                })
                .any(|line| line.contains("80 lines"));
            if length > 80 && !said {
                long.push(format!(
                    "{path}:{}: {} ({length} lines)",
                    start + 1,
                    &found[2]
                ));
            }
        }
    }
    assert!(
        long.is_empty(),
        "functions past 80 lines with no comment saying why (split them, or say why above them):\n{}",
        long.join("\n")
    );
}
