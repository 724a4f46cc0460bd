//! Crash safety: kill -9 a real `wicket` process in the middle of writes and
//! log appends, many times; every file is old or new, never torn; the log
//! loads; meta.json parses.

use std::process::Stdio;

use serde_json::json;

use crate::*;

fn content(generation: usize) -> String {
    format!("generation {generation}\n").repeat(12_000)
}

#[test]
fn kill_9_mid_write_never_tears_a_file_or_the_session() {
    let f = Fixture::new();
    let args = f.home.join("args.json");
    let known: Vec<String> = (0..40).map(content).collect();
    std::fs::write(f.ws.join("target.txt"), &known[0]).unwrap();
    // How long one whole write takes here, so the kills land across it.
    std::fs::write(
        &args,
        json!({"path": "target.txt", "content": known[0]}).to_string(),
    )
    .unwrap();
    let started = std::time::Instant::now();
    let (out, code) = f.tool(
        "write_file",
        &format!("@{}", args.display()),
        &["--session", "crash", "--answers", "allow_once"],
    );
    assert_eq!(code, 0, "{out:?}");
    let whole_run = started.elapsed();
    eprintln!("crash test: one whole write takes {whole_run:?}");
    let mut finished = 0;
    for (generation, text) in known.iter().enumerate().skip(1) {
        std::fs::write(
            &args,
            json!({"path": "target.txt", "content": text}).to_string(),
        )
        .unwrap();
        let mut child = f
            .command(
                "write_file",
                &format!("@{}", args.display()),
                &["--session", "crash", "--answers", "allow_once"],
            )
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Kill at a different moment each time, spread over three times a whole
        // run: before the card, during the write, after it, and not at all.
        let phase = (generation as f64 * 0.618_034).fract() * 3.0;
        std::thread::sleep(whole_run.mul_f64(phase));
        let _ = child.kill();
        let status = child.wait().unwrap();
        if status.success() {
            finished += 1;
        }
        let on_disk = std::fs::read_to_string(f.ws.join("target.txt")).unwrap();
        assert!(
            known.contains(&on_disk),
            "torn file after generation {generation}"
        );
        let stray: Vec<_> = std::fs::read_dir(&f.ws)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name != "target.txt" && name != "a.txt" && !name.ends_with(".tmp"))
            .collect();
        assert!(stray.is_empty(), "{stray:?}");
        if f.home.join("sessions/crash/meta.json").exists() {
            read_meta(&f.home, "crash");
        }
        // The log loads through the binary (a torn last line is skipped, never fatal).
        if f.home.join("sessions/crash/meta.json").exists() {
            let log = wicket()
                .env("WICKET_HOME", &f.home)
                .args(["log", "crash", "--json"])
                .output()
                .unwrap();
            assert!(
                log.status.success(),
                "{}",
                String::from_utf8_lossy(&log.stderr)
            );
        }
    }
    let runs = known.len() - 1;
    eprintln!("crash test: {finished} of {runs} writes finished before the kill");
    assert!(
        finished > 0 && finished < runs,
        "the kills must land both after some writes and in the middle of others: {finished} of {runs}"
    );
    // The session still works after all of that, and the next write to the
    // same file sweeps away the temp files the killed writes left.
    let (out, code) = f.tool(
        "read_file",
        r#"{"path":"target.txt","line":1}"#,
        &["--session", "crash"],
    );
    assert_eq!(code, 0, "{out:?}");
    let left = std::fs::read_dir(&f.ws)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".tmp")
        })
        .count();
    eprintln!("crash test: the killed writes left {left} temp files");
    // A temp of a live process (this test's) for the same target must survive the sweep.
    let live = format!(
        ".target.txt.wicket-{}-0123456789abcdef.tmp",
        std::process::id()
    );
    std::fs::write(f.ws.join(&live), "in flight").unwrap();
    // And one of a process that is gone must not.
    let mut gone = std::process::Command::new("true").spawn().unwrap();
    let gone_pid = gone.id();
    gone.wait().unwrap();
    let dead = format!(".target.txt.wicket-{gone_pid}-fedcba9876543210.tmp");
    std::fs::write(f.ws.join(&dead), "abandoned").unwrap();
    let (out, code) = f.tool(
        "write_file",
        r#"{"path":"target.txt","content":"last\n"}"#,
        &["--session", "crash", "--answers", "allow_once"],
    );
    assert_eq!(code, 0, "{out:?}");
    let temps: Vec<_> = std::fs::read_dir(&f.ws)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".tmp"))
        .collect();
    assert_eq!(temps, vec![live]);
}
