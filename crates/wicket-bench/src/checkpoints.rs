//! Checkpoints of a 10,000-file workspace: the first, one after a one-file
//! change, and what the store grows by; beside git doing the same with a
//! repository of its own (`git add -A && git write-tree` with a separate
//! git dir and index: opencode's snapshot, and what a person would script).

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result};
use wicket_checkpoints::{Settings, Store};
use wicket_tools::Workspace;

use crate::{Row, median, ms};

const FILES: usize = 10_000;

/// 100 folders of 100 source-like files, 1–4 KiB each.
fn workspace(root: &Path) -> Result<u64> {
    let mut bytes = 0;
    for n in 0..FILES {
        let dir = root.join(format!("src/m{:02}", n % 100));
        std::fs::create_dir_all(&dir)?;
        let size = 1024 + (n * 7919) % 3072;
        let mut text = String::with_capacity(size + 64);
        let mut line = 0;
        while text.len() < size {
            text.push_str(&format!("    let value_{line} = compute({n}, {line});\n"));
            line += 1;
        }
        bytes += text.len() as u64;
        std::fs::write(dir.join(format!("f{n:05}.rs")), text)?;
    }
    Ok(bytes)
}

fn git(git_dir: &Path, ws: &Path, args: &[&str]) -> Result<()> {
    let out = Command::new("git")
        .arg("--git-dir")
        .arg(git_dir)
        .arg("--work-tree")
        .arg(ws)
        .args(args)
        .output()
        .context("running git")?;
    anyhow::ensure!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(())
}

fn git_snapshot(git_dir: &Path, ws: &Path) -> Result<()> {
    git(git_dir, ws, &["add", "-A", "."])?;
    git(git_dir, ws, &["write-tree"])
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

pub(crate) fn checkpoint_rows(rows: &mut Vec<Row>) -> Result<()> {
    let dir = tempfile::tempdir()?;
    let ws = dir.path().join("ws");
    let tree_bytes = workspace(&ws)?;
    let workspace = Workspace::open(&ws).map_err(|error| anyhow::anyhow!(error.message))?;
    let settings = Settings::default();

    // The first checkpoint, into a new store each time.
    let mut fresh = 0;
    let first = median(5, || {
        fresh += 1;
        let store = Store::new(&dir.path().join(format!("session-{fresh}")));
        store.take(&workspace, &settings, 1, "run")?;
        Ok(())
    })?;
    let mut fresh_git = 0;
    let first_git = median(5, || {
        fresh_git += 1;
        let git_dir = dir.path().join(format!("git-{fresh_git}"));
        Command::new("git")
            .args(["init", "-q", "--bare"])
            .arg(&git_dir)
            .status()?;
        git_snapshot(&git_dir, &ws)
    })?;
    rows.push(Row {
        name: format!(
            "checkpoint: the first of {FILES} files ({:.1} MiB)",
            tree_bytes as f64 / 1048576.0
        ),
        wicket: ms(first),
        reference: format!("git add -A + write-tree {}", ms(first_git)),
        ratio: Some(first.as_secs_f64() / first_git.as_secs_f64()),
    });

    // After a one-file change: the same store, one file changed each time.
    let session = dir.path().join("session-1");
    let store = Store::new(&session);
    let git_dir = dir.path().join("git-1");
    let changed = ws.join("src/m07/f00007.rs");
    let mut round = 0;
    let mut change = || -> Result<()> {
        round += 1;
        std::fs::write(
            &changed,
            format!("fn changed() -> u32 {{ {round} }}\n").repeat(40),
        )?;
        Ok(())
    };
    let mut seq = 1;
    let mut took = Vec::new();
    let mut took_git = Vec::new();
    for _ in 0..15 {
        change()?;
        seq += 1;
        let started = Instant::now();
        store.take(&workspace, &settings, seq, "run")?;
        took.push(started.elapsed());
        let started = Instant::now();
        git_snapshot(&git_dir, &ws)?;
        took_git.push(started.elapsed());
    }
    took.sort();
    took_git.sort();
    let (incremental, incremental_git) = (took[took.len() / 2], took_git[took_git.len() / 2]);
    rows.push(Row {
        name: format!("checkpoint: {FILES} files after a one-file change"),
        wicket: ms(incremental),
        reference: format!("git add -A + write-tree {}", ms(incremental_git)),
        ratio: Some(incremental.as_secs_f64() / incremental_git.as_secs_f64()),
    });

    // The jail's scan for what git and Wicket run later (every `.git` and
    // `.wicket` at any depth), before and after each command, beside `find`.
    std::fs::create_dir_all(ws.join("src/m42/vendored/.git"))?;
    let scan = median(15, || {
        let found = wicket_os::guard::scan(&ws);
        anyhow::ensure!(found.entries.len() == 1, "{found:?}");
        Ok(())
    })?;
    let find = median(15, || {
        let out = Command::new("find")
            .arg(&ws)
            .args(["-name", ".git", "-prune"])
            .output()?;
        anyhow::ensure!(out.status.success(), "find failed");
        Ok(())
    })?;
    std::fs::remove_dir_all(ws.join("src/m42/vendored"))?;
    rows.push(Row {
        name: format!("jail: the scan for .git and .wicket at any depth, {FILES} files"),
        wicket: ms(scan),
        reference: format!("find -name .git -prune {}", ms(find)),
        ratio: Some(scan.as_secs_f64() / find.as_secs_f64()),
    });

    // What one more change costs the store.
    change()?;
    let file = std::fs::metadata(&changed)?.len();
    let journal = session.join("checkpoints/journal.jsonl");
    let before = (store.object_bytes(), std::fs::metadata(&journal)?.len());
    let git_before = folder_bytes(&git_dir.join("objects"));
    store.take(&workspace, &settings, seq + 1, "run")?;
    git_snapshot(&git_dir, &ws)?;
    let after = (store.object_bytes(), std::fs::metadata(&journal)?.len());
    let git_after = folder_bytes(&git_dir.join("objects"));
    rows.push(Row {
        name: format!("checkpoint: store growth for a one-file change ({file} B file)"),
        wicket: format!(
            "{} B objects + {} B journal",
            after.0 - before.0,
            after.1 - before.1
        ),
        reference: format!("git objects {} B", git_after - git_before),
        ratio: Some((after.0 - before.0 + after.1 - before.1) as f64 / file as f64),
    });

    // A rewind of that one file (its checkpoint of the files as they are first).
    let to = store.find(seq)?;
    let started = Instant::now();
    let rewound = store.rewind(&workspace, &settings, &to, seq + 2)?;
    let rewind = started.elapsed();
    anyhow::ensure!(
        rewound.applied.plan.restore.len() == 1,
        "{:?}",
        rewound.applied
    );
    rows.push(Row {
        name: format!("rewind: one file back in {FILES}"),
        wicket: ms(rewind),
        reference: "-".into(),
        ratio: None,
    });
    Ok(())
}
