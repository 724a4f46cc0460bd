//! Preview through the binary: a run card answered `preview` runs the
//! command over an overlay of the workspace, an effects card shows what it
//! changed, and `apply` makes the workspace what a plain run makes it,
//! `discard` leaves it as it was.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use crate::*;

/// The spec's command: a change of each kind.
const COMMAND: &str = "sed -i s/a/b/ x.txt; rm y.txt; mkdir d; echo n > d/new; chmod +x run.sh";

pub(crate) fn fixture() -> Fixture {
    let f = Fixture::new();
    f.write("x.txt", "a\n");
    f.write("y.txt", "y\n");
    f.write("run.sh", "echo hi\n");
    f.write("keep/inner.txt", "kept\n");
    f
}

/// Every entry below `root` (but `.git`): its kind, mode and bytes (a
/// link's target).
pub(crate) fn tree(root: &Path) -> BTreeMap<String, (String, u32, Vec<u8>)> {
    let mut found = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(folder) = stack.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            let name = path.strip_prefix(root).unwrap().display().to_string();
            if name == ".git" {
                continue;
            }
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let mode = meta.permissions().mode() & 0o7777;
            let seen = if meta.file_type().is_symlink() {
                (
                    "link".into(),
                    0,
                    std::fs::read_link(&path)
                        .unwrap()
                        .into_os_string()
                        .into_encoded_bytes(),
                )
            } else if meta.is_dir() {
                stack.push(path.clone());
                ("dir".into(), mode, Vec::new())
            } else {
                ("file".into(), mode, std::fs::read(&path).unwrap())
            };
            found.insert(name, seen);
        }
    }
    found
}

/// Runs one previewed `sh -c COMMAND` turn, answering the run card
/// `preview`; at the effects card `during` sees it first, then `answer`
/// answers it. The events, and the exit code.
pub(crate) fn previewed(
    f: &Fixture,
    command: &str,
    answer: &str,
    during: impl FnMut(&Value),
) -> Vec<Value> {
    let arguments = json!({"argv": ["sh", "-c", command], "preview": true});
    previewed_call(f, arguments, answer, during)
}

/// [`previewed`] of a `run` with `arguments` as they are.
pub(crate) fn previewed_call(
    f: &Fixture,
    arguments: Value,
    answer: &str,
    during: impl FnMut(&Value),
) -> Vec<Value> {
    previewed_by(f, arguments, answer, during, |_| {})
}

/// [`previewed_call`] with the binary's command changed by `adjust` first
/// (its environment, its folder).
pub(crate) fn previewed_by(
    f: &Fixture,
    arguments: Value,
    answer: &str,
    mut during: impl FnMut(&Value),
    adjust: impl FnOnce(&mut Command),
) -> Vec<Value> {
    let model = crate::exec::script(
        f,
        "preview.json",
        json!([
            {"tool_calls": [{"name": "run", "arguments": arguments}]},
            {"text": "done"}
        ]),
    );
    let mut command = crate::exec::exec(f, "go", &["--model", &model]);
    adjust(&mut command);
    let mut child = command
        .args(["--json", "--answers", "stdin"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let mut events = Vec::new();
    for line in stdout.lines() {
        let event: Value = serde_json::from_str(&line.unwrap()).unwrap();
        if event["type"] == "card" {
            let given = match event["kind"].as_str() {
                Some("run") => {
                    assert_eq!(
                        event["preview"], true,
                        "the card says the model asked: {event}"
                    );
                    assert!(
                        event.get("no_preview").is_none(),
                        "preview is offered here: {event}"
                    );
                    "preview"
                }
                Some("effects") => {
                    during(&event);
                    answer
                }
                _ => panic!("a card the test did not expect: {event}"),
            };
            writeln!(stdin, "{}", json!({"card": event["id"], "answer": given})).unwrap();
        }
        events.push(event);
    }
    assert_eq!(child.wait().unwrap().code(), Some(0), "{events:#?}");
    events
}

pub(crate) fn result(events: &[Value]) -> &Value {
    events
        .iter()
        .find(|event| event["type"] == "tool_result")
        .unwrap()
}

#[test]
fn a_preview_shows_each_change_touches_nothing_and_applies_as_a_plain_run_would() {
    let f = fixture();
    let before = tree(&f.ws);
    let events = previewed(&f, COMMAND, "apply", |card| {
        assert_eq!(
            tree(&f.ws),
            before,
            "the workspace is untouched until apply"
        );
        let changes: Vec<(String, String)> = card["changes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|change| {
                (
                    change["path"].as_str().unwrap().to_string(),
                    change["change"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        assert_eq!(
            changes,
            [
                ("d", "created"),
                ("d/new", "created"),
                ("run.sh", "mode"),
                ("x.txt", "modified"),
                ("y.txt", "deleted"),
            ]
            .map(|(path, change)| (path.to_string(), change.to_string()))
            .to_vec(),
            "{card}"
        );
        let x = &card["changes"][3]["diff"];
        assert!(x.as_str().unwrap().contains("-a\n+b\n"), "{card}");
        // A deletion's diff ends at /dev/null, as git writes it.
        let y = card["changes"][4]["diff"].as_str().unwrap();
        assert!(y.starts_with("--- a/y.txt\n+++ /dev/null\n"), "{card}");
        assert_eq!(card["exit_code"], 0);
    });
    let result = result(&events);
    assert_eq!(result["output"]["preview"], "applied", "{result}");
    // The same command, run plainly in a copy of the workspace as it was.
    let plain = f.root.join("plain");
    std::fs::create_dir(&plain).unwrap();
    for (name, (kind, mode, bytes)) in &before {
        let path = plain.join(name);
        if kind == "dir" {
            std::fs::create_dir_all(&path).unwrap();
        } else {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, bytes).unwrap();
        }
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(*mode)).unwrap();
    }
    let ran = Command::new("sh")
        .args(["-c", COMMAND])
        .current_dir(&plain)
        .status()
        .unwrap();
    assert!(ran.success());
    assert_eq!(tree(&f.ws), tree(&plain), "applied as a plain run makes it");
}

#[test]
fn a_discarded_preview_leaves_the_workspace_as_it_was() {
    let f = fixture();
    let before = tree(&f.ws);
    let events = previewed(&f, COMMAND, "discard", |_| {});
    assert_eq!(result(&events)["output"]["preview"], "discarded");
    assert_eq!(tree(&f.ws), before);
    let previews = f.home.join("sessions");
    let left: Vec<_> = walk_names(&previews)
        .into_iter()
        .filter(|name| name.contains("/preview/") && name.contains("upper"))
        .collect();
    assert!(left.is_empty(), "the preview's layer is removed: {left:?}");
}

#[test]
fn an_edit_made_in_the_workspace_during_the_preview_stops_the_apply_and_names_the_file() {
    let f = fixture();
    let events = previewed(&f, COMMAND, "apply", |_| {
        std::fs::write(f.ws.join("x.txt"), "edited by the person\n").unwrap();
    });
    let result = result(&events);
    assert_eq!(result["ok"], false, "{result}");
    let message = result["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("x.txt changed in the workspace since the preview started"),
        "{result}"
    );
    assert_eq!(f.read("x.txt"), "edited by the person\n");
    assert!(
        f.ws.join("y.txt").exists() && !f.ws.join("d").exists(),
        "nothing was applied"
    );
}

#[test]
fn a_link_the_command_made_is_applied_as_a_link_and_nothing_is_written_through_it() {
    let f = fixture();
    let target = f.root.join("outside.txt");
    std::fs::write(&target, "outside\n").unwrap();
    let command = format!(
        "ln -s {} link; rm -r keep; ln -s {} keep",
        target.display(),
        f.root.display()
    );
    let events = previewed(&f, &command, "apply", |card| {
        let link = card["changes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|change| change["path"] == "link")
            .unwrap();
        assert_eq!(link["change"], "link");
        assert_eq!(link["diff"], format!("→ {}", target.display()));
    });
    assert_eq!(result(&events)["output"]["preview"], "applied");
    let made = std::fs::symlink_metadata(f.ws.join("link")).unwrap();
    assert!(made.file_type().is_symlink());
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "outside\n");
    // A link in place of a folder: the folder's files are not written through it.
    assert!(
        std::fs::symlink_metadata(f.ws.join("keep"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert!(!f.root.join("inner.txt").exists());
}

fn walk_names(root: &Path) -> Vec<String> {
    let mut names = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(folder) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            names.push(path.display().to_string());
            if std::fs::symlink_metadata(&path).unwrap().is_dir() {
                stack.push(path);
            }
        }
    }
    names
}

#[test]
fn a_preview_rule_previews_without_the_first_card() {
    let f = fixture();
    std::fs::write(
        f.home.join("config.toml"),
        "[[rules]]\naction = \"preview\"\ntool = \"run\"\nargv_prefix = [\"sh\", \"-c\"]\n",
    )
    .unwrap();
    let model = crate::exec::script(
        &f,
        "ruled.json",
        json!([
            {"tool_calls": [{"name": "run", "arguments": {"argv": ["sh", "-c", "echo made > made.txt"]}}]},
            {"text": "done"}
        ]),
    );
    let (events, code) = crate::exec::converse(
        crate::exec::exec(&f, "go", &["--model", &model]),
        &["apply"],
        &[],
    );
    assert_eq!(code, 0, "{events:#?}");
    let cards: Vec<&str> = events
        .iter()
        .filter(|event| event["type"] == "card")
        .map(|event| event["kind"].as_str().unwrap())
        .collect();
    assert_eq!(cards, ["effects"], "no run card first");
    assert_eq!(f.read("made.txt"), "made\n");
}

#[test]
fn a_preview_that_writes_past_its_limit_is_stopped_and_its_card_says_so() {
    let f = fixture();
    std::fs::write(
        f.home.join("config.toml"),
        "[sandbox]\npreview_max_mb = 4\n",
    )
    .unwrap();
    let events = previewed(
        &f,
        "dd if=/dev/zero of=big bs=1M count=2000 2>/dev/null; echo survived > after.txt",
        "discard",
        |card| {
            let note = card["note"].as_str().unwrap_or_default();
            assert!(
                note.contains(
                    "it was stopped: it wrote more than [sandbox] preview_max_mb (4 MiB)"
                ),
                "{card}"
            );
            let big = card["changes"]
                .as_array()
                .unwrap()
                .iter()
                .find(|change| change["path"] == "big")
                .unwrap();
            assert!(big["change"] == "created", "{card}");
        },
    );
    assert_eq!(result(&events)["output"]["preview"], "discarded");
    assert!(!f.ws.join("big").exists());
}

/// Previews `argv` with the network asked for, discards it: the events,
/// and the effects card (checked to be the second of two: no net card,
/// the preview refuses every host itself).
fn previewed_online(f: &Fixture, argv: Value) -> Value {
    let model = crate::exec::script(
        f,
        "online.json",
        json!([
            {"tool_calls": [{"name": "run", "arguments": {
                "argv": argv, "network": true, "preview": true
            }}]},
            {"text": "done"}
        ]),
    );
    let (events, code) = crate::exec::converse(
        crate::exec::exec(f, "go", &["--model", &model]),
        &["preview", "discard"],
        &[],
    );
    assert_eq!(code, 0, "{events:#?}");
    let cards: Vec<&Value> = events
        .iter()
        .filter(|event| event["type"] == "card")
        .collect();
    assert_eq!(cards.len(), 2, "no net card: {events:#?}");
    assert_eq!(cards[1]["kind"], "effects", "{events:#?}");
    cards[1].clone()
}

#[test]
fn a_preview_has_no_network_and_its_card_names_the_hosts_the_command_wanted() {
    let f = fixture();
    let card = previewed_online(
        &f,
        json!([
            "curl",
            "-fsS",
            "-o",
            "fetched",
            "http://127.0.0.1:9/package.tgz"
        ]),
    );
    assert_eq!(card["wanted_hosts"], json!(["127.0.0.1:9"]), "{card}");
    assert_ne!(card["exit_code"], 0, "the fetch failed: {card}");
}

/// `npm install` from a local registry, previewed: the preview refuses
/// every host, so the install fails, and the card names the registry as a
/// host it wanted; nothing of it reaches the workspace.
#[test]
fn a_previewed_npm_install_fails_without_the_network_and_names_the_registry() {
    let f = fixture();
    let card = previewed_online(
        &f,
        json!([
            "npm",
            "install",
            "--registry",
            "http://127.0.0.1:9/",
            "--cache",
            "npm-cache",
            "--fetch-retries",
            "0",
            "--no-audit",
            "--no-fund",
            "--no-update-notifier",
            "left-pad"
        ]),
    );
    assert_eq!(card["wanted_hosts"], json!(["127.0.0.1:9"]), "{card:#}");
    assert_ne!(card["exit_code"], 0, "the install failed: {card:#}");
    assert!(!f.ws.join("node_modules").exists() && !f.ws.join("npm-cache").exists());
}

/// Ignored paths (a build folder) are grouped as a new folder is, marked
/// ignored, and one that was there before is said as modified, with its
/// diff read from the workspace (no checkpoint holds it): apply writes
/// them all, so the workspace is what the command made, as an install into
/// an existing `node_modules` needs.
#[test]
fn ignored_paths_are_grouped_marked_and_applied_whole() {
    let f = fixture();
    f.write(".gitignore", "build/\n");
    f.write("build/out.txt", "old\n");
    let command = "echo more >> build/out.txt; mkdir build/gen; \
                   for i in $(seq 30); do echo $i > build/gen/f$i; done; echo b > x.txt";
    let events = previewed(&f, command, "apply", |card| {
        let changes = card["changes"].as_array().unwrap();
        let built = changes.iter().find(|c| c["path"] == "build/gen").unwrap();
        assert_eq!(built["change"], "created", "{card:#}");
        assert_eq!(built["ignored"], true);
        assert_eq!(built["entries"], 30);
        let old = changes
            .iter()
            .find(|c| c["path"] == "build/out.txt")
            .unwrap();
        assert_eq!(old["change"], "modified", "{card:#}");
        assert_eq!(old["ignored"], true);
        assert!(old["diff"].as_str().unwrap().contains("+more"), "{card:#}");
        assert_eq!(changes.len(), 3, "{card:#}");
        let x = changes.iter().find(|c| c["path"] == "x.txt").unwrap();
        assert!(x.get("ignored").is_none());
        assert!(
            card["note"]
                .as_str()
                .unwrap()
                .contains("apply writes them all"),
            "{card:#}"
        );
    });
    assert_eq!(f.read("x.txt"), "b\n");
    assert_eq!(f.read("build/gen/f30"), "30\n");
    assert_eq!(f.read("build/out.txt"), "old\nmore\n");
    let output = &result(&events)["output"];
    assert!(output.get("failed").is_none(), "{output:#}");
}

/// An ignored file the command rewrote in place, changed in the workspace
/// while the effects card is open: apply refuses, naming it, and writes
/// nothing.
#[test]
fn an_ignored_file_changed_while_the_card_is_open_stops_the_apply() {
    let f = fixture();
    f.write(".gitignore", "node_modules/\n");
    f.write("node_modules/pkg/index.js", "module.exports = 1;\n");
    let command = "echo 'module.exports = 2;' > node_modules/pkg/index.js; echo b > x.txt";
    let events = previewed(&f, command, "apply", |_| {
        f.write("node_modules/pkg/index.js", "module.exports = 'mine';\n");
    });
    assert_eq!(
        f.read("node_modules/pkg/index.js"),
        "module.exports = 'mine';\n"
    );
    let text = result(&events).to_string();
    assert_eq!(f.read("x.txt"), "a\n", "{text}");
    assert!(text.contains("node_modules/pkg/index.js"), "{text}");
}

/// Runs git in the workspace (outside Wicket), its stdout.
fn git(f: &Fixture, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.com",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(&f.ws)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// A repository with one commit, and a previewed call (`"git": true`)
/// that commits a change: the effects card lists the `.git` changes
/// marked `git`; the workspace's history is untouched until apply.
fn previewed_commit(answer: &str) -> (Fixture, Vec<Value>) {
    let f = fixture();
    git(&f, &["init", "-q"]);
    git(&f, &["add", "-A"]);
    git(&f, &["commit", "-qm", "first"]);
    let arguments = json!({
        "argv": ["sh", "-c", "echo b > x.txt && git -c user.name=t -c user.email=t@example.com commit -qam second"],
        "preview": true,
        "git": true
    });
    let events = previewed_call(&f, arguments, answer, |card| {
        let changes = card["changes"].as_array().unwrap();
        let marked = |path: &str| {
            changes
                .iter()
                .find(|change| change["path"] == path)
                .unwrap_or_else(|| panic!("no {path}: {card:#}"))
                .get("git")
                .cloned()
        };
        assert_eq!(marked("x.txt"), None, "{card:#}");
        assert_eq!(
            marked(".git/refs/heads/main"),
            Some(json!(true)),
            "{card:#}"
        );
        assert_eq!(marked(".git/index"), Some(json!(true)), "{card:#}");
        assert!(card["note"].as_str().unwrap().contains(".git"), "{card:#}");
        // Nothing of it in the workspace yet.
        assert_eq!(git(&f, &["rev-list", "--count", "HEAD"]).trim(), "1");
        assert_eq!(f.read("x.txt"), "a\n");
    });
    (f, events)
}

#[test]
fn a_preview_of_a_commit_shows_git_changes_and_apply_makes_the_commit() {
    let (f, events) = previewed_commit("apply");
    assert_eq!(
        result(&events)["output"]["preview"],
        "applied",
        "{events:#?}"
    );
    assert_eq!(git(&f, &["rev-list", "--count", "HEAD"]).trim(), "2");
    assert_eq!(git(&f, &["log", "-1", "--format=%s"]).trim(), "second");
    assert_eq!(
        git(&f, &["status", "--porcelain"]),
        "",
        "the index and the tree agree"
    );
    git(&f, &["fsck", "--strict"]);
    assert_eq!(f.read("x.txt"), "b\n");
}

#[test]
fn a_discarded_preview_of_a_commit_leaves_git_as_it_was() {
    let (f, events) = previewed_commit("discard");
    assert_eq!(
        result(&events)["output"]["preview"],
        "discarded",
        "{events:#?}"
    );
    assert_eq!(git(&f, &["rev-list", "--count", "HEAD"]).trim(), "1");
    assert_eq!(git(&f, &["status", "--porcelain"]), "");
    assert_eq!(f.read("x.txt"), "a\n");
}
