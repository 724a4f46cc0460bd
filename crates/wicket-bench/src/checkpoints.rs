//! Checkpoints of large workspaces (10,000 and 100,000 files by default;
//! `WICKET_BENCH_FILES=10000,100000,1000000` for a million): the first
//! one, one after a one-file change, a second session's first, a full
//! rescan, the store's size and a rewind; each beside git doing the same
//! on the same tree in the same run (`git status` with a real index: what
//! a person's own tool pays to know what changed).

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use wicket_checkpoints::{Settings, Store};
use wicket_tools::Workspace;

use crate::{Row, median, ms};

/// Files in a folder of the generated tree.
const PER_FOLDER: usize = 100;

/// The calls of the session whose rewind is planned.
const CALLS: u64 = 1000;

/// `files` small source-like files (30–200 bytes), 100 a folder, two deep.
pub(crate) fn workspace(root: &Path, files: usize) -> Result<u64> {
    let mut bytes = 0;
    for n in 0..files {
        let folder = n / PER_FOLDER;
        let dir = root.join(format!("src/g{:03}/m{folder:05}", folder % 1000));
        if n % PER_FOLDER == 0 {
            std::fs::create_dir_all(&dir)?;
        }
        let text = format!("pub fn f{n}() -> u32 {{ {n} }}\n").repeat(1 + n % 5);
        bytes += text.len() as u64;
        std::fs::write(dir.join(format!("f{n:07}.rs")), text)?;
    }
    Ok(bytes)
}

fn git(ws: &Path, args: &[&str]) -> Result<Duration> {
    let started = Instant::now();
    let out = Command::new("git")
        .current_dir(ws)
        .args(args)
        .output()
        .context("running git")?;
    anyhow::ensure!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(started.elapsed())
}

fn folder_bytes(dir: &Path) -> u64 {
    let mut total = 0;
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let Ok(meta) = entry.metadata() else { continue };
        total += if meta.is_dir() {
            folder_bytes(&entry.path())
        } else {
            meta.len()
        };
    }
    total
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / 1048576.0)
}

fn ratio(a: Duration, b: Duration) -> Option<f64> {
    Some(a.as_secs_f64() / b.as_secs_f64())
}

pub(crate) fn checkpoint_rows(rows: &mut Vec<Row>) -> Result<()> {
    let sizes = std::env::var("WICKET_BENCH_FILES").unwrap_or_else(|_| "10000,100000".into());
    for size in sizes.split(',') {
        let files: usize = size.trim().parse().context("WICKET_BENCH_FILES")?;
        rows_at(rows, files)?;
    }
    Ok(())
}

fn rows_at(rows: &mut Vec<Row>, files: usize) -> Result<()> {
    let dir = tempfile::tempdir()?;
    let home = dir.path().join("home");
    let ws = dir.path().join("ws");
    eprintln!("  {files} files: writing the tree and its git index…");
    let tree_bytes = workspace(&ws, files)?;
    git(&ws, &["init", "-q"])?;
    git(&ws, &["add", "-A"])?;
    git(
        &ws,
        &[
            "-c",
            "user.name=b",
            "-c",
            "user.email=b@b",
            "commit",
            "-qm",
            "tree",
        ],
    )?;
    // On disk before anything is timed: a million new files are still
    // being written back for minutes, and every row would pay for it.
    anyhow::ensure!(Command::new("sync").status()?.success(), "sync failed");
    let workspace = Workspace::open(&ws).map_err(|error| anyhow::anyhow!(error.message))?;
    // A million files fit the default `max_files` (their folders are not counted).
    let settings = Settings::default();
    let shared = home.join("checkpoints");
    let session = |name: &str| Store::new(&home.join("sessions").join(name), &shared);
    let status = || git(&ws, &["status", "--porcelain"]);
    status()?;
    let git_status = {
        let mut times = (0..5).map(|_| status()).collect::<Result<Vec<_>>>()?;
        times.sort();
        times[2]
    };

    // The first checkpoint: a walk of everything, every file read and stored.
    let first_store = session("first");
    let started = Instant::now();
    let taken = first_store.take(&workspace, &settings, 1, "run")?;
    let first = started.elapsed();
    anyhow::ensure!(taken.whole, "{taken:?}");
    rows.push(Row {
        name: format!("checkpoint, {files} files: the first ({})", mib(tree_bytes)),
        wicket: ms(first),
        reference: format!("git status {}", ms(git_status)),
        ratio: ratio(first, git_status),
    });

    // After a one-file change: what the tracker heard, against git status.
    let changed = ws.join("src/g007/m00007/f0000700.rs");
    let mut took = Vec::new();
    let mut took_git = Vec::new();
    // Each round a call, as the gate records one: its checkpoint before,
    // the change, and its line after, which is the one timed (what the
    // tracker heard of the one file).
    for round in 0..15u64 {
        first_store.take(&workspace, &settings, round + 2, "run")?;
        std::fs::write(&changed, format!("pub fn changed() -> u64 {{ {round} }}\n"))?;
        let started = Instant::now();
        let taken = first_store.take_after(&workspace, &settings, round + 2, "run", None)?;
        took.push(started.elapsed());
        anyhow::ensure!(taken.changed == 1, "{taken:?}");
        took_git.push(status()?);
    }
    took.sort();
    took_git.sort();
    let (incremental, incremental_git) = (took[7], took_git[7]);
    let tracked = !first_store.take(&workspace, &settings, 100, "run")?.whole;
    first_store.take_after(&workspace, &settings, 100, "run", None)?;
    rows.push(Row {
        name: format!(
            "checkpoint, {files} files: after a one-file change ({})",
            if tracked {
                "tracked"
            } else {
                "no tracker: walked"
            }
        ),
        wicket: ms(incremental),
        reference: format!("git status {}", ms(incremental_git)),
        ratio: ratio(incremental, incremental_git),
    });

    // The store beside the tree: the files' copies, and the listing of
    // the tree (the first journal line's pieces, objects of the store too).
    let objects = first_store.object_bytes();
    let journal = folder_bytes(&home.join("sessions/first"));
    let listing = first_store.listing_bytes()?;
    let copies = objects.saturating_sub(listing);
    rows.push(Row {
        name: format!("checkpoint, {files} files: store size / tree bytes"),
        wicket: format!(
            "{} copies + {} listing, {} journal",
            mib(copies),
            mib(listing),
            mib(journal)
        ),
        reference: format!(
            "tree {}, .git/objects {}",
            mib(tree_bytes),
            mib(folder_bytes(&ws.join(".git/objects")))
        ),
        ratio: Some(copies as f64 / tree_bytes as f64),
    });

    // A second session's first checkpoint of the unchanged tree.
    let second = session("second");
    let before = second.object_bytes().max(objects);
    let started = Instant::now();
    let taken = second.take(&workspace, &settings, 1, "run")?;
    let second_first = started.elapsed();
    let growth = second.object_bytes().saturating_sub(before);
    rows.push(Row {
        name: format!("checkpoint, {files} files: a second session's first"),
        wicket: format!(
            "{} (+{} B objects, {} new)",
            ms(second_first),
            growth,
            taken.new_bytes
        ),
        reference: format!("git status {}", ms(git_status)),
        ratio: ratio(second_first, git_status),
    });

    // A full rescan: what a checkpoint walks when the tracker lost count.
    let mut seq = 300;
    let rescan = median(5, || {
        seq += 1;
        first_store.take_walked(&workspace, &settings, seq, "run")?;
        // Its line after (nothing heard: a few microseconds), so that a
        // rewind's plan knows what each call did.
        first_store.take_after(&workspace, &settings, seq, "run", None)?;
        Ok(())
    })?;
    rows.push(Row {
        name: format!("checkpoint, {files} files: a full rescan (the tracker lost count)"),
        wicket: ms(rescan),
        reference: format!("git status {}", ms(git_status)),
        ratio: ratio(rescan, git_status),
    });
    // A rewind's plan: that walk, and the journal read to find the checkpoint's files.
    let to = first_store.find(2)?;
    let plan = median(3, || {
        first_store.plan(&workspace, &settings, &to)?;
        Ok(())
    })?;
    rows.push(Row {
        name: format!("rewind, {files} files: the plan (a walk and the journal read)"),
        wicket: ms(plan),
        reference: format!("git status {}", ms(git_status)),
        ratio: ratio(plan, git_status),
    });

    // A rewind of the one file (with its full walk first).
    let started = Instant::now();
    let rewound = first_store.rewind(&workspace, &settings, &to, 400)?;
    let rewind = started.elapsed();
    anyhow::ensure!(
        rewound.applied.plan.restore.len() == 1,
        "{:?}",
        rewound.applied
    );
    rows.push(Row {
        name: format!("rewind, {files} files: one file back"),
        wicket: ms(rewind),
        reference: format!("git status {}", ms(git_status)),
        ratio: ratio(rewind, git_status),
    });

    // A session of 1,000 calls (half rewrite a file of the tree, half make
    // one), each with its checkpoint before and its line after, as the
    // gate records them; then the plan back to before the first, which
    // reads the whole journal to find what this session changed.
    let calls = session("thousand");
    let made = ws.join("made");
    std::fs::create_dir_all(&made)?;
    for call in 0..CALLS {
        let seq = 2 * call + 1;
        calls.take(&workspace, &settings, seq, "write_file")?;
        let wrote = if call % 2 == 0 {
            let n = (call as usize * 97) % files;
            let folder = n / PER_FOLDER;
            format!("src/g{:03}/m{folder:05}/f{n:07}.rs", folder % 1000)
        } else {
            format!("made/c{call:04}.rs")
        };
        std::fs::write(ws.join(&wrote), format!("pub fn call{call}() {{}}\n"))?;
        calls.take_after(
            &workspace,
            &settings,
            seq,
            "write_file",
            Some(wrote.as_bytes()),
        )?;
    }
    let to = calls.find(1)?;
    let mut planned = 0;
    let thousand = median(3, || {
        let plan = calls.plan(&workspace, &settings, &to)?;
        planned = plan.restore.len() + plan.delete.len();
        Ok(())
    })?;
    anyhow::ensure!(planned as u64 >= CALLS / 2, "{planned} paths in the plan");
    rows.push(Row {
        name: format!(
            "rewind, {files} files: the plan for a session of {CALLS} calls ({planned} paths)"
        ),
        wicket: ms(thousand),
        reference: format!("git status {}", ms(git_status)),
        ratio: ratio(thousand, git_status),
    });
    std::fs::remove_dir_all(&made)?;

    // The jail's scan for what git and Wicket run later, before and after each command.
    let scan = median(5, || {
        let found = wicket_os::guard::scan(&ws);
        anyhow::ensure!(found.entries.len() == 1, "{found:?}");
        Ok(())
    })?;
    rows.push(Row {
        name: format!("jail, {files} files: the scan for .git and .wicket at any depth"),
        wicket: ms(scan),
        reference: format!("git status {}", ms(git_status)),
        ratio: ratio(scan, git_status),
    });

    // The scan before a later command: what the last scan kept, read
    // back, and each folder opened to see it is as it was.
    let kept = wicket_os::guard::scan(&ws).kept();
    let again = median(5, || {
        let found = wicket_os::guard::scan_kept(&ws, &kept);
        anyhow::ensure!(found.entries.len() == 1 && found.reused > 0, "{found:?}");
        Ok(())
    })?;
    rows.push(Row {
        name: format!(
            "jail, {files} files: the scan before a later command ({} KiB kept)",
            kept.len() / 1024
        ),
        wicket: ms(again),
        reference: format!("git status {}", ms(git_status)),
        ratio: ratio(again, git_status),
    });

    // Through the binary: a turn of `run ["true"]` calls, each allowed once.
    let (first_run, later_run) = exec_runs(&ws)?;
    rows.push(Row {
        name: format!("run, {files} files: a session's first `run true`, call to result"),
        wicket: ms(first_run),
        reference: format!("git status {}", ms(git_status)),
        ratio: ratio(first_run, git_status),
    });
    rows.push(Row {
        name: format!("run, {files} files: each later `run true` (median of {EXEC_RUNS})"),
        wicket: ms(later_run),
        reference: format!("git status {}", ms(git_status)),
        ratio: ratio(later_run, git_status),
    });
    Ok(())
}

/// The later `run` calls of [`exec_runs`]'s turn.
const EXEC_RUNS: usize = 19;

/// `wicket exec` of a scripted turn of `run ["true"]` calls on `ws`, each
/// allowed once, in a new home (so the first is a session's first): the
/// time from each call's event to its result's, as they are printed; the
/// first call's, and the median of the others.
fn exec_runs(ws: &Path) -> Result<(Duration, Duration)> {
    use std::io::BufRead;
    let wicket = crate::wicket_binary()?;
    let dir = tempfile::tempdir()?;
    let script = dir.path().join("script.json");
    let mut replies: Vec<serde_json::Value> = (0..=EXEC_RUNS)
        .map(|_| serde_json::json!({"tool_calls": [{"name": "run", "arguments": {"argv": ["true"]}}]}))
        .collect();
    replies.push(serde_json::json!({"text": "done"}));
    std::fs::write(&script, serde_json::Value::Array(replies).to_string())?;
    let mut child = Command::new(wicket)
        .env("WICKET_HOME", dir.path().join("home"))
        .args(["exec", "go", "--json", "--answers", "allow_once", "--model"])
        .arg(format!("script:{}", script.display()))
        .arg("--workspace")
        .arg(ws)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()?;
    let stdout = child.stdout.take().context("wicket exec's stdout")?;
    let mut called = None;
    let mut took = Vec::new();
    for line in std::io::BufReader::new(stdout).lines() {
        let event: serde_json::Value = serde_json::from_str(&line?)?;
        match event["type"].as_str() {
            Some("tool_call") => called = Some(Instant::now()),
            Some("tool_result") => {
                anyhow::ensure!(event["ok"] == true, "{event}");
                took.extend(called.take().map(|at| at.elapsed()));
            }
            _ => {}
        }
    }
    anyhow::ensure!(child.wait()?.success(), "wicket exec failed");
    anyhow::ensure!(took.len() == EXEC_RUNS + 1, "{} results", took.len());
    let first = took.remove(0);
    took.sort();
    Ok((first, took[EXEC_RUNS / 2]))
}
