//! Crash safety: kill -9 a real `wicket` process in the middle of writes and
//! log appends, many times; every file is old or new, never torn; the log
//! loads; meta.json parses.

use std::process::Stdio;
use std::time::Duration;

use serde_json::json;
use wicket_test_support::process::alive;
use wicket_test_support::wait_until;

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

/// Kills a process with SIGKILL.
fn kill_9(pid: u32) {
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(pid as i32).unwrap(),
        rustix::process::Signal::KILL,
    )
    .unwrap();
}

fn serve_on(f: &Fixture, env: &[(&str, String)]) -> crate::serve::Served {
    crate::serve::serve_with(f, env)
}

/// `kill -9` of `wicket serve` while an approved command runs: the
/// command dies with it (PR_SET_PDEATHSIG in the launcher, and the PID
/// namespace whose init it kills), descendants included.
#[test]
fn an_approved_command_dies_with_a_killed_server() {
    let f = Fixture::new();
    let marker = wicket_test_support::process::marker("orphan");
    let model = crate::exec::script(
        &f,
        "orphan.json",
        json!([{"tool_calls": [{"name": "run", "arguments": {"argv": ["sh", "-c", format!("setsid sh -c 'sleep 37; : {marker}' & touch started; sleep 37; : {marker}")]}}]}]),
    );
    let served = serve_on(&f, &[]);
    let api = &served.api;
    let id = api
        .post("/api/sessions", json!({"workspace": f.ws, "model": model}))
        .body["id"]
        .as_str()
        .unwrap()
        .to_string();
    api.post(
        &format!("/api/sessions/{id}/messages"),
        json!({"text": "go"}),
    );
    let card = api
        .events(&id, 0, None)
        .find(|event| event["type"] == "card")
        .unwrap();
    api.post(
        &format!("/api/sessions/{id}/cards/{}", card["id"].as_str().unwrap()),
        json!({"answer": "allow_once"}),
    );
    assert!(wait_until(Duration::from_secs(20), || f
        .ws
        .join("started")
        .exists()));
    assert!(alive(&marker));
    kill_9(served.child.id());
    drop(served);
    assert!(
        wait_until(Duration::from_secs(10), || !alive(&marker)),
        "the approved command outlived the server"
    );
}

/// `kill -9` while a card is open, then a restart: the session reads idle,
/// the log says the turn was interrupted, the old card cannot be answered,
/// and the next turn's request gives the model a result for the call.
#[test]
fn a_server_killed_on_an_open_card_restarts_clean() {
    use wicket_fake::{FakeReply, FakeServer, Step, Wire};
    let f = Fixture::new();
    let fake = FakeServer::start(Wire::OpenAi);
    fake.push(Step::Reply(FakeReply::tool_call(
        "call_w",
        "write_file",
        r#"{"path": "b.txt", "content": "b"}"#,
    )));
    fake.push(Step::Reply(FakeReply::text("picked up")));
    let env = [
        ("OPENAI_BASE_URL", fake.base_url()),
        ("OPENAI_API_KEY", "test-key".to_string()),
    ];
    let served = serve_on(&f, &env);
    let id = served
        .api
        .post(
            "/api/sessions",
            json!({"workspace": f.ws, "model": "openai:gpt-test"}),
        )
        .body["id"]
        .as_str()
        .unwrap()
        .to_string();
    served.api.post(
        &format!("/api/sessions/{id}/messages"),
        json!({"text": "write b"}),
    );
    let card = served
        .api
        .events(&id, 0, None)
        .find(|event| event["type"] == "card")
        .unwrap();
    let card_id = card["id"].as_str().unwrap().to_string();
    assert_eq!(f.meta(&id)["status"], "waiting");
    kill_9(served.child.id());
    drop(served);

    let served = serve_on(&f, &env);
    let api = &served.api;
    let row = api.get("/api/sessions").body[0].clone();
    assert_eq!(row["status"], "idle", "{row}");
    let log = f.log(&id);
    let interrupted = log
        .iter()
        .find(|e| e["type"] == "interrupted")
        .expect("an interrupted event");
    assert_eq!(interrupted["card"], card_id.as_str());
    let stale = api.post(
        &format!("/api/sessions/{id}/cards/{card_id}"),
        json!({"answer": "allow_once"}),
    );
    assert_eq!(stale.status, 409, "{:?}", stale.body);
    assert_eq!(stale.body["error"]["kind"], "not_open");
    let sent = api.post(
        &format!("/api/sessions/{id}/messages"),
        json!({"text": "go on"}),
    );
    assert_eq!(sent.body["state"], "started");
    api.events(&id, 0, None)
        .find(|event| event["type"] == "result")
        .unwrap();
    assert!(!f.ws.join("b.txt").exists());
    let requests = fake.requests();
    let messages = requests.last().unwrap().body["messages"]
        .as_array()
        .unwrap()
        .clone();
    let synthetic = messages
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == "call_w")
        .expect("a result for the interrupted call");
    assert!(
        synthetic["content"].as_str().unwrap().contains("cancelled"),
        "{synthetic}"
    );
}

/// The same for `wicket exec` killed on an open card, resumed with --session.
#[test]
fn an_exec_killed_on_an_open_card_resumes_clean() {
    use wicket_fake::{FakeReply, FakeServer, Step, Wire};
    let f = Fixture::new();
    let fake = FakeServer::start(Wire::OpenAi);
    fake.push(Step::Reply(FakeReply::tool_call(
        "call_w",
        "write_file",
        r#"{"path": "b.txt", "content": "b"}"#,
    )));
    fake.push(Step::Reply(FakeReply::text("picked up")));
    let mut child = crate::exec::exec(
        &f,
        "write b",
        &[
            "--model",
            "openai:gpt-test",
            "--session",
            "k",
            "--json",
            "--answers",
            "stdin",
        ],
    )
    .env("OPENAI_BASE_URL", fake.base_url())
    .env("OPENAI_API_KEY", "test-key")
    .stdin(Stdio::piped())
    .stdout(Stdio::piped())
    .spawn()
    .unwrap();
    let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    use std::io::BufRead;
    for line in stdout.lines() {
        let event: serde_json::Value = serde_json::from_str(&line.unwrap()).unwrap();
        if event["type"] == "card" {
            break;
        }
    }
    kill_9(child.id());
    let _ = child.wait();
    crate::exec::exec(
        &f,
        "go on",
        &[
            "--model",
            "openai:gpt-test",
            "--session",
            "k",
            "--json",
            "--answers",
            "deny",
        ],
    )
    .env("OPENAI_BASE_URL", fake.base_url())
    .env("OPENAI_API_KEY", "test-key")
    .succeeds();
    let log = f.log("k");
    assert!(log.iter().any(|e| e["type"] == "interrupted"), "{log:#?}");
    let messages = fake.requests().last().unwrap().body["messages"]
        .as_array()
        .unwrap()
        .clone();
    assert!(
        messages
            .iter()
            .any(|m| m["role"] == "tool" && m["tool_call_id"] == "call_w")
    );
    assert_eq!(f.meta("k")["status"], "idle");
}

/// A stale `server.json` (its pid dead) is replaced without a word; a live
/// server makes a second one exit 1 naming its pid.
#[test]
fn a_stale_server_file_is_replaced_and_a_live_one_refuses() {
    let f = Fixture::new();
    let mut gone = std::process::Command::new("true").spawn().unwrap();
    let dead = gone.id();
    gone.wait().unwrap();
    std::fs::write(
        f.home.join("server.json"),
        json!({"url": "http://127.0.0.1:1", "port": 1, "token": "old", "pid": dead}).to_string(),
    )
    .unwrap();
    let served = serve_on(&f, &[]);
    let file: serde_json::Value =
        serde_json::from_slice(&std::fs::read(f.home.join("server.json")).unwrap()).unwrap();
    assert_eq!(file["pid"], served.child.id());
    let second = wicket()
        .env("WICKET_HOME", &f.home)
        .args(["serve", "--port", "0"])
        .output()
        .unwrap();
    assert_eq!(second.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&second.stderr).contains(&format!("pid {}", served.child.id())),
        "{}",
        String::from_utf8_lossy(&second.stderr)
    );
}

/// Each launcher stage asks to die with its parent and then checks the
/// parent is the one it was started by: a stage whose parent died before
/// it asked would otherwise run its command as an orphan. Stage 2 is PID 1
/// of its namespace, where `getppid()` says 0, so its check must read the
/// outer pid; here each stage is told a parent it does not have.
#[test]
fn a_launcher_stage_whose_parent_is_gone_runs_nothing() {
    let f = Fixture::new();
    let ran = f.ws.join("ran");
    let script = format!("touch {}", ran.display());
    for stage in ["__wicket-launch", "__wicket-init"] {
        for (parent, runs) in [(std::process::id(), true), (1, false)] {
            let _ = std::fs::remove_file(&ran);
            let launch = json!({"parent": parent, "policy": null, "isolate": false});
            let out = wicket()
                .args([stage, &launch.to_string(), "--", "sh", "-c", &script])
                .stdin(Stdio::null())
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(ran.exists(), runs, "{stage} told parent {parent}: {stderr}");
            if !runs {
                assert!(!out.status.success(), "{stage}: {stderr}");
                assert!(stderr.contains("Wicket ended before"), "{stage}: {stderr}");
            }
        }
    }
}
