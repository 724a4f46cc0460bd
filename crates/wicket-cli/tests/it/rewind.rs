//! Checkpoints and rewind through the real binary: a turn writes a file,
//! runs a command that appends, deletes and makes a folder, and edits the
//! file again; `wicket rewind --to` each of those points gives back the
//! exact tree (bytes and modes), a rewind can be undone, ignored files and
//! `.git` are never touched, a rewind is refused while the turn runs, and a
//! checkpoint of 10,000 files after a one-file change stores that one file.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use crate::exec::{exec, script};
use crate::{Fixture, wicket};
use serde_json::{Value, json};

/// Every entry below `root` but `.git` and `build.log`: its kind, mode and bytes.
type Manifest = BTreeMap<String, (char, u32, Vec<u8>)>;

fn manifest(root: &Path) -> Manifest {
    fn walk(root: &Path, dir: &Path, into: &mut Manifest) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            let name = path.strip_prefix(root).unwrap().display().to_string();
            if name == ".git" || name == "build.log" {
                continue;
            }
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let mode = meta.permissions().mode() & 0o7777;
            if meta.is_dir() {
                into.insert(name, ('d', mode, Vec::new()));
                walk(root, &path, into);
            } else if meta.file_type().is_symlink() {
                let target = std::fs::read_link(&path).unwrap();
                into.insert(name, ('l', 0, target.display().to_string().into_bytes()));
            } else {
                into.insert(name, ('f', mode, std::fs::read(&path).unwrap()));
            }
        }
    }
    let mut into = Manifest::new();
    walk(root, root, &mut into);
    into
}

fn rewind(f: &Fixture, args: &[&str]) -> Output {
    wicket()
        .env("WICKET_HOME", &f.home)
        .env("NO_COLOR", "1")
        .arg("rewind")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn git(ws: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .current_dir(ws)
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .output()
        .unwrap();
    assert!(output.status.success(), "git {args:?}: {}", text(&output));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Runs `wicket exec` answering every card `allow_once`; before each
/// answer `at_card` sees the card (the calls before it are done).
fn turn(f: &Fixture, model: &str, session: &str, mut at_card: impl FnMut(&Value)) -> Vec<Value> {
    let mut child = exec(f, "go", &["--model", model, "--session", session])
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
            at_card(&event);
            writeln!(
                stdin,
                "{}",
                json!({"card": event["id"], "answer": "allow_once"})
            )
            .unwrap();
        }
        events.push(event);
    }
    assert_eq!(child.wait().unwrap().code(), Some(0), "{events:#?}");
    events
}

/// Every object of the workspace store a session names: loose ones, and
/// packed ones read through their packs' 48-byte index records (hash,
/// offset, length, check).
fn objects(home: &Path, session: &str) -> Vec<Vec<u8>> {
    let named = home
        .join("sessions")
        .join(session)
        .join("checkpoints")
        .join("store");
    let key = std::fs::read_to_string(named).unwrap();
    let store = home.join("checkpoints").join(key.trim());
    let mut all = Vec::new();
    for folder in std::fs::read_dir(store.join("objects"))
        .into_iter()
        .flatten()
    {
        for object in std::fs::read_dir(folder.unwrap().path()).unwrap() {
            all.push(std::fs::read(object.unwrap().path()).unwrap());
        }
    }
    for entry in std::fs::read_dir(store.join("packs")).into_iter().flatten() {
        let idx = entry.unwrap().path();
        if idx.extension().is_none_or(|ext| ext != "idx") {
            continue;
        }
        let pack = std::fs::read(idx.with_extension("pack")).unwrap();
        for record in std::fs::read(&idx).unwrap().chunks_exact(48) {
            let offset = u64::from_le_bytes(record[32..40].try_into().unwrap()) as usize;
            let len = u32::from_le_bytes(record[40..44].try_into().unwrap()) as usize;
            all.push(pack[offset..offset + len].to_vec());
        }
    }
    all
}

#[test]
fn rewind_restores_each_point_of_a_turn_byte_for_byte_and_can_be_undone() {
    let f = Fixture::new();
    std::fs::remove_file(f.ws.join("a.txt")).unwrap();
    f.write("c.txt", "c\n");
    std::fs::set_permissions(f.ws.join("c.txt"), std::fs::Permissions::from_mode(0o640)).unwrap();
    f.write("tool.sh", "#!/bin/sh\n");
    std::fs::set_permissions(f.ws.join("tool.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    f.write(".gitignore", "build.log\n");
    f.write("build.log", "first build\n");
    git(&f.ws, &["init", "-q"]);
    git(&f.ws, &["add", "."]);
    git(&f.ws, &["commit", "-qm", "start"]);
    // A stash the rewind must leave alone.
    f.write("tool.sh", "#!/bin/sh\necho stashed\n");
    git(&f.ws, &["stash", "-q"]);
    let git_before = (
        git(&f.ws, &["status", "--porcelain"]),
        git(&f.ws, &["stash", "list"]),
    );

    let model = script(
        &f,
        "turn.json",
        json!([
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "one\n"}}]},
            {"tool_calls": [{"name": "run", "arguments": {"argv": ["sh", "-c", "echo x >> b.txt; rm c.txt; mkdir d && echo y > d/e"]}}]},
            {"tool_calls": [{"name": "search_replace", "arguments": {"path": "a.txt", "old": "one", "new": "two"}}]},
            {"text": "done"}
        ]),
    );
    let mut points = Vec::new();
    let mut refused = None;
    let events = turn(&f, &model, "rw", |card| {
        points.push(manifest(&f.ws));
        assert!(card.get("no_checkpoint").is_none(), "{card}");
        // The turn is running (waiting on this card): a rewind is refused.
        if points.len() == 2 {
            refused = Some(rewind(&f, &["rw", "--yes"]));
        }
    });
    let refused = refused.unwrap();
    assert_ne!(refused.status.code(), Some(0), "{}", text(&refused));
    assert!(
        text(&refused).contains("open in another wicket process"),
        "{}",
        text(&refused)
    );
    let end = manifest(&f.ws);
    assert_eq!(points.len(), 3);
    assert_eq!(end["a.txt"].2, b"two\n");
    assert_eq!(end["b.txt"].2, b"x\n");
    assert!(!end.contains_key("c.txt"));
    assert_eq!(end["d/e"].2, b"y\n");
    let calls: Vec<u64> = events
        .iter()
        .filter(|event| event["type"] == "tool_call")
        .map(|event| event["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(calls.len(), 3);
    std::fs::write(f.ws.join("build.log"), "later build\n").unwrap();

    // Back to before each call, the last first.
    for (seq, expected) in calls.iter().zip(&points).rev() {
        let output = rewind(&f, &["rw", "--to", &seq.to_string(), "--yes"]);
        assert_eq!(output.status.code(), Some(0), "{}", text(&output));
        assert_eq!(
            &manifest(&f.ws),
            expected,
            "rewind --to {seq}: {}",
            text(&output)
        );
    }
    assert_eq!(points[0]["c.txt"], ('f', 0o640, b"c\n".to_vec()));
    assert_eq!(points[0]["tool.sh"].1, 0o755);
    // The files are as before the turn: so is git, its stash untouched.
    assert_eq!(
        (
            git(&f.ws, &["status", "--porcelain"]),
            git(&f.ws, &["stash", "list"])
        ),
        git_before
    );

    // A rewind of the rewind: back to how they were before it.
    let output = rewind(&f, &["rw", "--undo", "--yes"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert_eq!(manifest(&f.ws), points[1]);

    // The state at the end of the turn is a checkpoint too: the one the first rewind took.
    let log = wicket()
        .env("WICKET_HOME", &f.home)
        .args(["log", "rw", "--json"])
        .output()
        .unwrap();
    let rewound: Vec<Value> = String::from_utf8_lossy(&log.stdout)
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|event| event["type"] == "rewound")
        .collect();
    assert_eq!(rewound.len(), 4);
    assert_eq!(rewound[0]["to"], calls[2]);
    assert_eq!(rewound[0]["restored"], json!(["a.txt"]));
    let first = rewound[0]["seq"].as_u64().unwrap().to_string();
    let output = rewind(&f, &["rw", "--to", &first, "--yes"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert_eq!(manifest(&f.ws), end);

    // The ignored file was never copied, and no rewind put it back.
    assert_eq!(
        std::fs::read(f.ws.join("build.log")).unwrap(),
        b"later build\n"
    );
    let stored = objects(&f.home, "rw");
    assert!(stored.iter().all(|object| !object.ends_with(b" build\n")));
    assert!(stored.contains(&b"one\n".to_vec()));
}

#[test]
fn rewind_shows_what_it_will_change_and_asks() {
    let f = Fixture::new();
    let model = script(
        &f,
        "turn.json",
        json!([
            {"tool_calls": [{"name": "run", "arguments": {"argv": ["sh", "-c", "echo new > n.txt; rm a.txt"]}}]},
            {"text": "done"}
        ]),
    );
    turn(&f, &model, "ask", |_| {});
    // No terminal to ask on: nothing changes.
    let output = rewind(&f, &["ask"]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    let shown = text(&output);
    assert!(shown.contains("  restore a.txt"), "{shown}");
    assert!(shown.contains("  remove  n.txt"), "{shown}");
    assert!(shown.contains("add --yes"), "{shown}");
    assert!(f.ws.join("n.txt").exists());
    // The default is before the last turn.
    let output = rewind(&f, &["ask", "--yes"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert_eq!(
        std::fs::read_to_string(f.ws.join("a.txt")).unwrap(),
        "alpha\nbeta\n"
    );
    assert!(!f.ws.join("n.txt").exists());
    let output = rewind(&f, &["ask", "--yes"]);
    assert!(
        text(&output).contains("nothing to rewind"),
        "{}",
        text(&output)
    );
}

#[test]
fn a_checkpoint_after_a_one_file_change_stores_that_file_alone() {
    let f = Fixture::new();
    for n in 0..10_000 {
        f.write(
            &format!("src/m{}/f{n:05}.txt", n % 100),
            &format!("file {n} {}\n", "x".repeat(60)),
        );
    }
    let model = script(
        &f,
        "turn.json",
        json!([
            {"tool_calls": [{"name": "run", "arguments": {"argv": ["sh", "-c", "echo changed > src/m7/f00007.txt"]}}]},
            {"tool_calls": [{"name": "run", "arguments": {"argv": ["true"]}}]},
            {"text": "done"}
        ]),
    );
    let store = f.home.join("sessions").join("big").join("checkpoints");
    let size = |name: &str| -> u64 {
        let path = store.join(name);
        if name == "objects" {
            objects(&f.home, "big")
                .iter()
                .map(|object| object.len() as u64)
                .sum()
        } else {
            std::fs::metadata(path).unwrap().len()
        }
    };
    let mut seen = Vec::new();
    turn(&f, &model, "big", |_| {
        // A card waits a second at most for its checkpoint (on a slow or
        // busy machine it goes up first): wait for this card's journal line.
        let lines = seen.len() + 1;
        let written = || {
            std::fs::read_to_string(store.join("journal.jsonl"))
                .is_ok_and(|text| text.lines().count() >= lines)
        };
        let waited = std::time::Instant::now();
        while !written() {
            assert!(
                waited.elapsed() < Duration::from_secs(60),
                "checkpoint {lines} never came"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        seen.push((size("objects"), size("journal.jsonl")))
    });
    let (first, second) = (seen[0], seen[1]);
    // The first checkpoint holds every file; the second only the changed one.
    assert!(first.0 > 10_000 * 60, "{seen:?}");
    assert_eq!(second.0 - first.0, b"changed\n".len() as u64, "{seen:?}");
    assert!(second.1 - first.1 < 512, "{seen:?}");
}

#[test]
fn a_file_the_checkpoint_cannot_copy_is_said_on_the_card_and_in_the_log() {
    let f = Fixture::new();
    std::fs::write(
        f.home.join("config.toml"),
        "[checkpoints]\nmax_file_mb = 1\nignore = [\"cache\"]\n",
    )
    .unwrap();
    f.write("big.bin", &"b".repeat(2 * 1024 * 1024));
    f.write("cache/blob", "skipped by the config's glob\n");
    let model = script(
        &f,
        "turn.json",
        json!([
            {"tool_calls": [{"name": "run", "arguments": {"argv": ["true"]}}]},
            {"text": "done"}
        ]),
    );
    let mut cards = Vec::new();
    let events = turn(&f, &model, "gap", |card| cards.push(card.clone()));
    let said = cards[0]["no_checkpoint"].as_str().unwrap();
    assert!(
        said.contains("big.bin") && said.contains("max_file_mb"),
        "{said}"
    );
    let logged: Vec<&Value> = events
        .iter()
        .filter(|event| event["type"] == "checkpoint")
        .collect();
    assert_eq!(logged.len(), 1, "{events:#?}");
    assert_eq!(logged[0]["message"], said);
    let stored = objects(&f.home, "gap");
    assert!(stored.contains(&b"alpha\nbeta\n".to_vec()));
    assert!(!stored.contains(&b"skipped by the config's glob\n".to_vec()));
}

#[test]
fn a_rewind_past_a_call_whose_checkpoint_failed_is_refused() {
    let f = Fixture::new();
    std::fs::write(f.home.join("config.toml"), "[checkpoints]\nmax_files = 3\n").unwrap();
    for n in 1..=4 {
        f.write(&format!("f{n}"), "x\n");
    }
    let model = script(
        &f,
        "turn.json",
        json!([
            {"tool_calls": [{"name": "run", "arguments": {"argv": ["rm", "f1", "f2"]}}]},
            {"tool_calls": [{"name": "run", "arguments": {"argv": ["true"]}}]},
            {"text": "done"}
        ]),
    );
    let mut cards = Vec::new();
    let events = turn(&f, &model, "missed", |card| cards.push(card.clone()));
    let said = cards[0]["no_checkpoint"].as_str().unwrap();
    assert!(said.contains("more than 3 files"), "{said}");
    assert!(cards[1].get("no_checkpoint").is_none(), "{}", cards[1]);
    let first = events
        .iter()
        .find(|event| event["type"] == "tool_call")
        .unwrap()["seq"]
        .to_string();
    let output = rewind(&f, &["missed", "--to", &first, "--yes"]);
    assert_ne!(output.status.code(), Some(0), "{}", text(&output));
    assert!(text(&output).contains("was not taken"), "{}", text(&output));
    assert!(!f.ws.join("f1").exists());
}

/// The `tool_call` event's seq of the first call of session `id`.
fn first_call(f: &Fixture, id: &str) -> u64 {
    f.log(id)
        .iter()
        .find(|event| event["type"] == "tool_call")
        .and_then(|event| event["seq"].as_u64())
        .unwrap()
}

/// A turn of session `session` that makes the calls `calls`, every card allowed once.
fn calls(f: &Fixture, session: &str, calls: Value) {
    let mut replies: Vec<Value> = calls
        .as_array()
        .unwrap()
        .iter()
        .map(|call| json!({"tool_calls": [call]}))
        .collect();
    replies.push(json!({"text": "done"}));
    let model = script(f, &format!("{session}.json"), Value::Array(replies));
    turn(f, &model, session, |_| {});
}

#[test]
fn a_rewind_takes_back_its_own_sessions_work_and_nothing_else() {
    let f = Fixture::new();
    f.write("shared.txt", "as it was\n");
    calls(
        &f,
        "a",
        json!([
            {"name": "write_file", "arguments": {"path": "made-by-a.txt", "content": "A's\n"}},
            {"name": "write_file", "arguments": {"path": "shared.txt", "content": "A's edit\n"}}
        ]),
    );
    calls(
        &f,
        "b",
        json!([{"name": "write_file", "arguments": {"path": "b.txt", "content": "B's\n"}}]),
    );
    // The person's own work, by hand: a new file, and an edit of what A wrote.
    f.write("mine.txt", "mine\n");
    f.write("shared.txt", "the person's edit\n");
    let before = manifest(&f.ws);
    let to = first_call(&f, "a").to_string();
    let output = rewind(&f, &["a", "--to", &to]);
    let shown = text(&output);
    assert!(shown.contains("  remove  made-by-a.txt"), "{shown}");
    assert!(
        shown.contains("keep    shared.txt: changed since by someone else, not Wicket"),
        "{shown}"
    );
    for never in ["b.txt", "mine.txt"] {
        assert!(!shown.contains(never), "{never} is not A's: {shown}");
    }
    let output = rewind(&f, &["a", "--to", &to, "--yes"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert!(!f.ws.join("made-by-a.txt").exists());
    assert_eq!(f.read("b.txt"), "B's\n");
    assert_eq!(f.read("mine.txt"), "mine\n");
    assert_eq!(f.read("shared.txt"), "the person's edit\n");
    // And back, byte for byte.
    let output = rewind(&f, &["a", "--undo", "--yes"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert_eq!(manifest(&f.ws), before);
    // The list says what each call changed.
    let output = rewind(&f, &["a", "--list"]);
    let listed = text(&output);
    assert!(
        listed.contains("write_file made-by-a.txt: changed 1 entry"),
        "{listed}"
    );
}

#[test]
fn a_rewind_keeps_what_another_sessions_command_wrote_over_its_own() {
    let f = Fixture::new();
    calls(
        &f,
        "a",
        json!([{"name": "run", "arguments": {"argv": ["sh", "-c", "echo x > gen.txt"]}}]),
    );
    calls(
        &f,
        "b",
        json!([{"name": "run", "arguments": {"argv": ["sh", "-c", "echo y >> gen.txt"]}}]),
    );
    let to = first_call(&f, "a").to_string();
    let output = rewind(&f, &["a", "--to", &to, "--yes"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert!(
        text(&output).contains("keep    gen.txt: changed since by session b (its run at event"),
        "{}",
        text(&output)
    );
    assert_eq!(f.read("gen.txt"), "x\ny\n", "B's bytes are kept");
    // B's own rewind takes back its line, and only that.
    let to = first_call(&f, "b").to_string();
    let output = rewind(&f, &["b", "--to", &to, "--yes"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert_eq!(f.read("gen.txt"), "x\n");
}

#[test]
fn two_sessions_at_once_in_one_workspace_each_rewind_their_own() {
    let f = Fixture::new();
    // A's command runs while B writes: the store cannot tell whose bytes a
    // change in that time is, and a rewind of A never takes B's.
    let b_model = script(
        &f,
        "b.json",
        json!([
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "b.txt", "content": "B's\n"}}]},
            {"text": "done"}
        ]),
    );
    let a_model = script(
        &f,
        "a.json",
        json!([
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "a1.txt", "content": "A's first\n"}}]},
            {"tool_calls": [{"name": "run", "arguments": {"argv": ["sh", "-c",
                "echo A > a2.txt; n=0; while [ ! -e go ] && [ $n -lt 600 ]; do sleep 0.05; n=$((n+1)); done; rm -f go"]}}]},
            {"text": "done"}
        ]),
    );
    std::thread::scope(|scope| {
        scope.spawn(|| {
            // Once A's command has started, B's whole turn, then A's command ends.
            while !f.ws.join("a2.txt").exists() {
                std::thread::sleep(Duration::from_millis(20));
            }
            turn(&f, &b_model, "b", |_| {});
            f.write("go", "");
        });
        turn(&f, &a_model, "a", |_| {});
    });
    assert_eq!(f.read("b.txt"), "B's\n");
    let to = first_call(&f, "a").to_string();
    let output = rewind(&f, &["a", "--to", &to, "--yes"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert!(!f.ws.join("a1.txt").exists() && !f.ws.join("a2.txt").exists());
    assert_eq!(f.read("b.txt"), "B's\n", "{}", text(&output));
    // B's rewind takes back B's file.
    let to = first_call(&f, "b").to_string();
    let output = rewind(&f, &["b", "--to", &to, "--yes"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert!(!f.ws.join("b.txt").exists());
}

#[test]
fn last_picks_the_newest_session_of_the_workspace() {
    let f = Fixture::new();
    calls(
        &f,
        "older",
        json!([{"name": "write_file", "arguments": {"path": "o.txt", "content": "o\n"}}]),
    );
    calls(
        &f,
        "newer",
        json!([{"name": "write_file", "arguments": {"path": "n.txt", "content": "n\n"}}]),
    );
    // From inside the workspace, as a person runs it.
    let run = |args: &[&str]| {
        wicket()
            .env("WICKET_HOME", &f.home)
            .env("NO_COLOR", "1")
            .current_dir(&f.ws)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let output = run(&["log", "--last", "--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert!(text(&output).contains("n.txt") && !text(&output).contains("o.txt"));
    let output = run(&["rewind", "--last", "--yes"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert!(!f.ws.join("n.txt").exists());
    assert_eq!(f.read("o.txt"), "o\n");
    // Elsewhere, nothing to pick: the folder is named.
    let output = run(&["log", "--last", "--workspace", f.outside.to_str().unwrap()]);
    assert_ne!(output.status.code(), Some(0));
    assert!(
        text(&output).contains("no session has worked in"),
        "{}",
        text(&output)
    );
}

#[test]
fn a_previewed_command_applied_is_rewound_as_its_call() {
    let f = Fixture::new();
    let model = script(
        &f,
        "preview.json",
        json!([
            {"tool_calls": [{"name": "run", "arguments": {
                "argv": ["sh", "-c", "mkdir gen && echo hi > gen/out.txt && echo more >> a.txt"],
                "preview": true
            }}]},
            {"text": "done"}
        ]),
    );
    let (events, code) = crate::exec::converse(
        exec(&f, "go", &["--model", &model, "--session", "p"]),
        &["preview", "apply"],
        &[],
    );
    assert_eq!(code, 0, "{events:#?}");
    assert_eq!(f.read("gen/out.txt"), "hi\n");
    // One point to go back to: the call, with what it changed.
    let output = rewind(&f, &["p", "--list"]);
    let listed = text(&output);
    assert_eq!(listed.lines().count(), 1, "{listed}");
    assert!(listed.contains("run "), "{listed}");
    assert!(listed.contains(": changed 3 entries"), "{listed}");
    let output = rewind(&f, &["p", "--yes"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert!(!f.ws.join("gen").exists());
    assert_eq!(f.read("a.txt"), "alpha\nbeta\n");
}
