//! Crash safety: kill -9 a real `wicket` process in the middle of writes and
//! log appends, many times; every file is old or new, never torn; the log
//! loads; meta.json parses.

use std::process::Stdio;
use std::time::Duration;

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
        // Kill at a different moment each time: before, during and after the write.
        std::thread::sleep(Duration::from_micros((generation as u64 * 397) % 6000));
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
    eprintln!(
        "crash test: {finished} of {} writes finished before the kill",
        known.len() - 1
    );
    // The session still works after all of that.
    let (out, code) = f.tool(
        "read_file",
        r#"{"path":"target.txt","line":1}"#,
        &["--session", "crash"],
    );
    assert_eq!(code, 0, "{out:?}");
}
