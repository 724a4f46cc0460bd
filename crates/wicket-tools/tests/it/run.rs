//! run: exit codes, signals, timeouts, the head+tail cut, no process left behind.

use std::time::{Duration, Instant};

use wicket_protocol::{ErrorKind, RunArgs, RunOutput};
use wicket_tools::Cancel;
use wicket_tools::limits::{RUN_KILL_GRACE_MS, RUN_STREAM_MAX_BYTES};

use crate::*;

fn run(tools: &Tools, argv: &[&str], timeout_s: Option<u64>) -> RunOutput {
    let args = RunArgs {
        argv: argv.iter().map(|s| s.to_string()).collect(),
        cwd: None,
        timeout_s,
    };
    tools.run(&args, &Cancel::default()).unwrap()
}

fn alive(marker: &str) -> bool {
    std::process::Command::new("pgrep")
        .args(["-f", marker])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

#[test]
fn exit_codes_and_streams() {
    let f = Fixture::new();
    let out = run(
        &f.tools(),
        &["sh", "-c", "echo out; echo err >&2; exit 7"],
        None,
    );
    assert_eq!(
        (out.exit_code, out.signal, out.timed_out),
        (Some(7), None, false)
    );
    assert_eq!(
        (out.stdout.as_str(), out.stderr.as_str()),
        ("out\n", "err\n")
    );
}

#[test]
fn runs_in_the_workspace_with_no_shell_and_no_api_keys() {
    let f = Fixture::new();
    let out = run(&f.tools(), &["pwd"], None);
    assert_eq!(out.stdout.trim(), f.ws.to_str().unwrap());
    let out = run(&f.tools(), &["echo", "$HOME", "*"], None);
    assert_eq!(out.stdout, "$HOME *\n");
    // SAFETY of the test: set in this process only; the child must not see it.
    let out = run(
        &f.tools(),
        &["sh", "-c", "echo ${OPENAI_API_KEY:-none}"],
        None,
    );
    assert_eq!(out.stdout, "none\n");
}

#[test]
fn a_signal_is_reported() {
    let f = Fixture::new();
    let out = run(&f.tools(), &["sh", "-c", "kill -9 $$"], None);
    assert_eq!((out.exit_code, out.signal), (None, Some(9)));
}

#[test]
fn output_is_cut_to_head_and_tail_with_the_count() {
    let f = Fixture::new();
    let total = 1_000_000usize;
    let script = format!("head -c {total} /dev/zero | tr '\\0' 'a'; printf END");
    let out = run(&f.tools(), &["sh", "-c", &script], None);
    let kept = RUN_STREAM_MAX_BYTES as u64;
    assert_eq!(out.stdout_cut, total as u64 + 3 - kept);
    assert!(
        out.stdout
            .starts_with(&"a".repeat(RUN_STREAM_MAX_BYTES / 2))
    );
    assert!(out.stdout.ends_with("aaaEND"));
    assert!(
        out.stdout
            .contains(&format!("[… {} bytes cut …]", out.stdout_cut))
    );
    let exact = run(
        &f.tools(),
        &[
            "sh",
            "-c",
            &format!("head -c {kept} /dev/zero | tr '\\0' 'b'"),
        ],
        None,
    );
    assert_eq!(exact.stdout_cut, 0);
    assert_eq!(exact.stdout.len(), RUN_STREAM_MAX_BYTES);
}

#[test]
fn a_timeout_kills_a_term_ignoring_child_two_seconds_after_term() {
    let f = Fixture::new();
    let marker = format!("wicket-term-test-{}", std::process::id());
    let script = format!(
        "trap '' TERM; sh -c 'trap \"\" TERM; exec sleep 300' {marker} & sleep 300; : {marker}"
    );
    let started = Instant::now();
    let out = run(&f.tools(), &["sh", "-c", &script], Some(1));
    let took = started.elapsed();
    assert!(out.timed_out);
    assert_eq!(out.signal, Some(9));
    assert!(
        took >= Duration::from_millis(1000 + RUN_KILL_GRACE_MS),
        "{took:?}"
    );
    assert!(!alive(&marker), "a process of the group outlived the call");
}

#[test]
fn a_grandchild_holding_the_pipes_does_not_hang_the_call() {
    let f = Fixture::new();
    let marker = format!("wicket-grandchild-{}", std::process::id());
    let script = format!("sh -c 'sleep 300; : {marker}' & echo started");
    let out = run(&f.tools(), &["sh", "-c", &script], None);
    assert_eq!(out.exit_code, Some(0));
    assert_eq!(out.stdout, "started\n");
    assert!(!alive(&marker));
}

#[test]
fn cancel_stops_a_command() {
    let f = Fixture::new();
    let cancel = Cancel::default();
    let trigger = cancel.clone();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        trigger.cancel();
    });
    let args = RunArgs {
        argv: vec!["sleep".into(), "300".into()],
        cwd: None,
        timeout_s: None,
    };
    let out = f.tools().run(&args, &cancel).unwrap();
    assert!(!out.timed_out);
    assert_eq!(out.signal, Some(15));
}

#[test]
fn bad_run_arguments_are_invalid() {
    let f = Fixture::new();
    let t = f.tools();
    for (argv, timeout) in [
        (vec![], None),
        (vec!["".to_string()], None),
        (vec!["ls".to_string()], Some(0)),
        (vec!["ls".to_string()], Some(601)),
    ] {
        let args = RunArgs {
            argv,
            cwd: None,
            timeout_s: timeout,
        };
        assert_eq!(
            kind(t.run(&args, &Cancel::default())),
            ErrorKind::InvalidArgs
        );
    }
    let args = RunArgs {
        argv: vec!["no-such-program-xyz".into()],
        cwd: None,
        timeout_s: None,
    };
    assert_eq!(kind(t.run(&args, &Cancel::default())), ErrorKind::NotFound);
    let args = RunArgs {
        argv: vec!["ls".into()],
        cwd: None,
        timeout_s: Some(600),
    };
    assert!(t.run(&args, &Cancel::default()).is_ok());
}
