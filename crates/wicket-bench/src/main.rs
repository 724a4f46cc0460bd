//! `cargo run --release -p wicket-bench [-- FILTER]`: each workload, Wicket's
//! figure beside the reference a person would otherwise use, and the ratio.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use wicket_core::diff;
use wicket_core::session::Session;
use wicket_protocol::EventBody;

/// One row of the table.
struct Row {
    name: String,
    wicket: String,
    reference: String,
    ratio: Option<f64>,
}

/// The median of `runs` timings of `f`, after one warm-up.
fn median(runs: usize, mut f: impl FnMut() -> Result<()>) -> Result<Duration> {
    f()?;
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let started = Instant::now();
        f()?;
        times.push(started.elapsed());
    }
    times.sort();
    Ok(times[runs / 2])
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

/// A file of `bytes` bytes of source-like lines; `salt` changes every line.
fn lines_of(bytes: usize, salt: &str) -> String {
    let mut out = String::with_capacity(bytes + 64);
    let mut i = 0;
    while out.len() < bytes {
        out.push_str(&format!("    let value_{i} = compute({i}, \"{salt}\");\n"));
        i += 1;
    }
    out
}

/// `diff -u A B` on the same pair, for the reference column.
fn gnu_diff(dir: &Path, before: &str, after: &str) -> Result<Duration> {
    let (a, b) = (dir.join("before"), dir.join("after"));
    std::fs::write(&a, before)?;
    std::fs::write(&b, after)?;
    median(15, || {
        let status = Command::new("diff")
            .arg("-u")
            .arg(&a)
            .arg(&b)
            .stdout(std::process::Stdio::null())
            .status()
            .context("running diff -u")?;
        anyhow::ensure!(status.code() == Some(1), "diff -u found no difference");
        Ok(())
    })
}

fn card_rows(rows: &mut Vec<Row>) -> Result<()> {
    let dir = tempfile::tempdir()?;
    let before = lines_of(256 * 1024, "old");
    let cases = [
        (
            "card: 256 KiB rewrite, every line new",
            lines_of(256 * 1024, "new"),
        ),
        ("card: 256 KiB, every 7th line changed", {
            before
                .lines()
                .enumerate()
                .map(|(i, line)| {
                    if i % 7 == 0 {
                        format!("{line} // changed\n")
                    } else {
                        format!("{line}\n")
                    }
                })
                .collect()
        }),
    ];
    for (name, after) in cases {
        let mut bytes = 0;
        let wicket = median(15, || {
            let card = diff::for_card(diff::unified(
                "src/lib.rs",
                Some(before.as_bytes()),
                after.as_bytes(),
            ));
            bytes = card.bytes;
            Ok(())
        })?;
        let reference = gnu_diff(dir.path(), &before, &after)?;
        rows.push(Row {
            name: format!("{name} ({bytes} diff bytes)"),
            wicket: ms(wicket),
            reference: format!("diff -u {}", ms(reference)),
            ratio: Some(wicket.as_secs_f64() / reference.as_secs_f64()),
        });
    }
    Ok(())
}

/// A typical event: a tool result of a small read.
fn sample_event(i: u64) -> EventBody {
    EventBody::ToolResult {
        call_id: format!("call-{i}"),
        ok: true,
        output: Some(serde_json::json!({"content": "fn main() {}\n", "size": 13})),
        error: None,
    }
}

fn log_rows(rows: &mut Vec<Row>) -> Result<()> {
    const EVENTS: u64 = 10_000;
    let home = tempfile::tempdir()?;
    let ws = tempfile::tempdir()?;
    let rate = |id: &str, sync_every: Option<u64>| -> Result<f64> {
        let (session, _) = Session::open_or_create(home.path(), id, ws.path(), None)?;
        let started = Instant::now();
        for i in 0..EVENTS {
            session.append(sample_event(i))?;
            if sync_every.is_some_and(|n| (i + 1) % n == 0) {
                session.sync()?;
            }
        }
        session.sync()?;
        Ok(EVENTS as f64 / started.elapsed().as_secs_f64())
    };
    let unsynced = rate("no-fsync", None)?;
    for (name, every) in [
        ("log: append, fsync every 10 events (turn boundaries)", 10),
        ("log: append, fsync after every event", 1),
    ] {
        let synced = rate(&format!("fsync-{every}"), Some(every))?;
        rows.push(Row {
            name: name.into(),
            wicket: format!("{synced:.0} events/s"),
            reference: format!("no fsync {unsynced:.0} events/s"),
            ratio: Some(unsynced / synced),
        });
    }
    Ok(())
}

fn main() -> Result<()> {
    let filter = std::env::args().nth(1).unwrap_or_default();
    let mut rows = Vec::new();
    type Workload = fn(&mut Vec<Row>) -> Result<()>;
    let workloads: [(&str, Workload); 2] = [("card", card_rows), ("log", log_rows)];
    for (name, workload) in workloads {
        if name.contains(&filter) {
            workload(&mut rows).with_context(|| format!("the {name} benchmark"))?;
        }
    }
    let width = rows.iter().map(|row| row.name.len()).max().unwrap_or(0);
    println!(
        "{:width$}  {:>20}  {:>28}  ratio",
        "workload", "wicket", "reference"
    );
    for row in &rows {
        let ratio = row.ratio.map_or("-".to_string(), |r| format!("{r:.2}x"));
        println!(
            "{:width$}  {:>20}  {:>28}  {ratio}",
            row.name, row.wicket, row.reference
        );
    }
    Ok(())
}
