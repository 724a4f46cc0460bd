//! A checkpoint killed mid-append: the child is this test binary itself,
//! taking checkpoints of new small files until it is sent SIGKILL; then the
//! next checkpoint and every rewind must still work, byte for byte.
#![allow(
    // The child is this test's own binary, killed on purpose: no jail, no limits to apply.
    clippy::disallowed_methods,
    clippy::unwrap_used
)]

use std::path::Path;

use wicket_checkpoints::{Settings, Store};
use wicket_tools::Workspace;

const CHILD: &str = "WICKET_TEST_CHECKPOINT_CHILD";

/// The files of round `n` of the killed child.
fn round(ws: &Path, n: u64) {
    for file in 0..300 {
        let dir = ws.join(format!("d{}", file % 10));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join(format!("f{file}")),
            format!("{file} in round {n}\n"),
        )
        .unwrap();
    }
}

fn store_in(root: &Path) -> Store {
    Store::new(&root.join("sessions/one"), &root.join("store"))
}

/// The child: checkpoints of new small files until it is killed.
fn child(root: &Path) {
    let workspace = Workspace::open(&root.join("ws")).unwrap();
    let store = store_in(root);
    for n in 1.. {
        // Round n is the call before checkpoint n: its line after it.
        round(&root.join("ws"), n);
        if n > 1 {
            store
                .take_after(&workspace, &Settings::default(), n - 1, "run", None)
                .unwrap();
        }
        store
            .take(&workspace, &Settings::default(), n, "run")
            .unwrap();
        println!("took {n}");
    }
}

#[test]
fn a_kill_mid_append_leaves_the_next_checkpoint_and_every_rewind_working() {
    if let Ok(dir) = std::env::var(CHILD) {
        return child(Path::new(&dir));
    }
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let ws = root.join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "a_kill_mid_append_leaves_the_next_checkpoint_and_every_rewind_working",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, &root)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(child.stdout.take().unwrap()));
    while let Some(Ok(line)) = lines.next() {
        if line.trim() == "took 3" {
            break;
        }
    }
    // Somewhere in the fourth round or later: its pack is being appended to.
    std::thread::sleep(std::time::Duration::from_millis(u64::from(
        std::process::id() % 7,
    )));
    child.kill().unwrap();
    child.wait().unwrap();
    let workspace = Workspace::open(&ws).unwrap();
    let store = store_in(&root);
    let kept = store.list().unwrap();
    assert!(kept.len() >= 3, "{kept:?}");
    // The call the kill cut short ends here (its line after it).
    round(&ws, 1_000);
    let last = kept.last().unwrap().seq;
    let next = store
        .take_after(&workspace, &Settings::default(), last, "run", None)
        .unwrap();
    assert!(next.gaps.is_empty(), "{next:?}");
    store
        .take(&workspace, &Settings::default(), 1_000, "run")
        .unwrap();
    store
        .take_after(&workspace, &Settings::default(), 1_000, "run", None)
        .unwrap();
    for info in kept.iter().rev().take(3).chain(kept.first()) {
        let applied = store
            .rewind(&workspace, &Settings::default(), info, 2_000 + info.id)
            .unwrap()
            .applied;
        assert!(
            applied.failed.is_empty() && applied.plan.kept.is_empty(),
            "{applied:?}"
        );
        for file in 0..300 {
            let text = std::fs::read_to_string(ws.join(format!("d{}/f{file}", file % 10))).unwrap();
            assert_eq!(text, format!("{file} in round {}\n", info.seq));
        }
    }
}
