//! run: exit codes, signals, timeouts, the head+tail cut, no process left
//! behind. (Commands start directly here: the sandbox launcher is the
//! binary's, and its tests are the binary's; see wicket-cli's tests.)

use std::time::{Duration, Instant};

use wicket_os::spawn::Confine;
use wicket_protocol::{ErrorKind, RunArgs, RunOutput};
use wicket_test_support::process::{alive, marker};
use wicket_test_support::wait_until;
use wicket_tools::Cancel;
use wicket_tools::limits::{RUN_KILL_GRACE_MS, RUN_STREAM_MAX_BYTES};
use wicket_tools::tools::run::validate;

use crate::*;

fn args(argv: &[&str], timeout_s: Option<u64>) -> RunArgs {
    RunArgs {
        preview: Default::default(),
        read: Default::default(),
        argv: argv.iter().map(|s| s.to_string()).collect(),
        cwd: None,
        timeout_s,
        network: Default::default(),
        git: false,
    }
}

fn run_with(
    tools: &Tools,
    args: &RunArgs,
    cancel: &Cancel,
) -> Result<RunOutput, wicket_tools::Error> {
    let dir = validate(tools.workspace(), args)?;
    tools.run(args, &dir, Confine::none(), None, cancel)
}

fn run(tools: &Tools, argv: &[&str], timeout_s: Option<u64>) -> RunOutput {
    run_with(tools, &args(argv, timeout_s), &Cancel::default()).unwrap()
}

#[test]
fn exit_codes_and_streams() {
    let f = fixture();
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
fn runs_in_the_workspace_with_no_shell() {
    let f = fixture();
    let out = run(&f.tools(), &["pwd"], None);
    assert_eq!(out.stdout.trim(), f.ws.to_str().unwrap());
    let out = run(&f.tools(), &["echo", "$HOME", "*"], None);
    assert_eq!(out.stdout, "$HOME *\n");
}

#[test]
fn a_signal_is_reported() {
    let f = fixture();
    let out = run(&f.tools(), &["sh", "-c", "kill -9 $$"], None);
    assert_eq!((out.exit_code, out.signal), (None, Some(9)));
}

#[test]
fn output_is_cut_to_head_and_tail_with_the_count() {
    let f = fixture();
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
    assert!(out.stdout.contains(&format!(
        "[… {} bytes cut; redirect the output to a file in the workspace and grep it …]",
        out.stdout_cut
    )));
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

/// The grandchild (not `exec`ed into, so it keeps the marker in its own
/// command line) ignores TERM too; KILL 2 s later takes the whole group.
#[test]
fn a_timeout_kills_a_term_ignoring_group_two_seconds_after_term() {
    let f = fixture();
    let marker = marker("term");
    // The first grandchild leaves a file when TERM reaches it (it starts
    // before the shell ignores TERM: an ignored signal cannot be trapped
    // again); the second ignores TERM and keeps the marker.
    let script = format!(
        "sh -c 'trap \"touch termed; exit 0\" TERM; sleep 300 & wait' & \
         trap '' TERM; sh -c 'trap \"\" TERM; sleep 300; : {marker}' & sleep 300; : {marker}"
    );
    let started = Instant::now();
    let out = run(&f.tools(), &["sh", "-c", &script], Some(1));
    let took = started.elapsed();
    assert!(out.timed_out);
    assert_eq!(out.signal, Some(9));
    assert!(
        took >= Duration::from_millis(1000 + RUN_KILL_GRACE_MS) && took < Duration::from_secs(10),
        "{took:?}"
    );
    assert!(!alive(&marker), "a process of the group outlived the call");
    assert!(
        f.ws.join("termed").exists(),
        "TERM went to the command alone, not to its group"
    );
}

#[test]
fn a_grandchild_holding_the_pipes_does_not_hang_the_call() {
    let f = fixture();
    let marker = marker("grandchild");
    let script = format!("sh -c 'sleep 300; : {marker}' & echo started");
    let out = run(&f.tools(), &["sh", "-c", &script], None);
    assert_eq!(out.exit_code, Some(0));
    assert_eq!(out.stdout, "started\n");
    assert!(!alive(&marker));
}

#[test]
fn cancel_stops_a_command() {
    let f = fixture();
    let cancel = Cancel::default();
    let trigger = cancel.clone();
    let ws = f.ws.clone();
    std::thread::spawn(move || {
        if wait_until(Duration::from_secs(20), || ws.join("started").exists()) {
            trigger.cancel();
        }
    });
    let started = Instant::now();
    let out = run_with(
        &f.tools(),
        &args(&["sh", "-c", "touch started; exec sleep 300"], None),
        &cancel,
    )
    .unwrap();
    assert!(!out.timed_out);
    assert_eq!(out.signal, Some(15));
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[test]
fn bad_run_arguments_are_invalid() {
    let f = fixture();
    let t = f.tools();
    for (argv, timeout) in [
        (vec![], None),
        (vec![""], None),
        (vec!["ls"], Some(0)),
        (vec!["ls"], Some(601)),
    ] {
        assert_eq!(
            kind(run_with(&t, &args(&argv, timeout), &Cancel::default())),
            ErrorKind::InvalidArgs
        );
    }
    assert_eq!(
        kind(run_with(
            &t,
            &args(&["no-such-program-xyz"], None),
            &Cancel::default()
        )),
        ErrorKind::NotFound
    );
    assert!(run_with(&t, &args(&["ls"], Some(600)), &Cancel::default()).is_ok());
}

#[test]
fn a_failure_the_jail_likely_caused_carries_a_note_that_names_the_flag() {
    let f = Fixture::new();
    let tools = Tools::open(&f.ws).unwrap();
    let failed = |script: &str, network: wicket_protocol::Network, git: bool| {
        let args = RunArgs {
            network,
            git,
            ..args(&["sh", "-c", script], None)
        };
        run_with(&tools, &args, &Cancel::default()).unwrap()
    };
    let offline = "echo 'curl: (6) Could not resolve host: example.com' >&2; exit 6";
    let note = failed(offline, wicket_protocol::Network::Off, false).note;
    assert!(
        note.as_deref().unwrap_or("").contains("\"network\": true"),
        "{note:?}"
    );
    // With the network asked for, the note would be wrong.
    assert_eq!(
        failed(offline, wicket_protocol::Network::Proxied, false).note,
        None
    );
    let git = "echo 'fatal: cannot lock ref: .git/refs/heads/main.lock: Read-only file system' >&2; exit 128";
    let note = failed(git, wicket_protocol::Network::Off, false).note;
    assert!(
        note.as_deref().unwrap_or("").contains("\"git\": true"),
        "{note:?}"
    );
    assert_eq!(
        failed("exit 1", wicket_protocol::Network::Off, false).note,
        None
    );
    assert_eq!(
        failed(
            offline.replace("exit 6", "exit 0").as_str(),
            wicket_protocol::Network::Off,
            false
        )
        .note,
        None
    );
    let slow = run(&tools, &["sleep", "30"], Some(1));
    assert!(slow.timed_out);
    let note = slow.note.unwrap_or_default();
    assert!(
        note.contains("timeout of 1 s") && note.contains("600"),
        "{note}"
    );
}
