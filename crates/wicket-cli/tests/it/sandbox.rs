//! The sandbox, through the binary: each command is a real one, run
//! through the gate with allow_once, as the model's `run` would be. What the
//! card allowed is all it can do: write the workspace and its own TMPDIR,
//! read everything but `$WICKET_HOME` and the denied paths, no network
//! unless asked, nothing left running after it.

use std::io::{Read, Write};
use std::net::{TcpListener, UdpSocket};
use std::time::Duration;

use serde_json::{Value, json};
use wicket_test_support::process::{alive, marker};
use wicket_test_support::wait_until;

use crate::*;

/// Runs `sh -c SCRIPT` through `wicket tool run` with allow_once; the result line.
fn sandboxed(f: &Fixture, script: &str, extra: &[(&str, Value)]) -> Value {
    let mut args = json!({"argv": ["sh", "-c", script]});
    for (key, value) in extra {
        args[key] = value.clone();
    }
    let (out, code) = f.tool("run", &args.to_string(), &["--answers", "allow_once"]);
    assert_eq!(code, 0, "{out:#?}");
    let card = &out[0];
    assert_eq!(card["kind"], "run");
    assert_eq!(card["sandbox"]["mode"], "workspace-write", "{card}");
    out.last().unwrap().clone()
}

fn user_home(f: &Fixture) -> std::path::PathBuf {
    let home = f.root.join("userhome");
    std::fs::create_dir_all(&home).unwrap();
    home
}

#[test]
fn a_command_writes_only_the_workspace_and_its_own_tmpdir() {
    let f = Fixture::new();
    let home = user_home(&f);
    let outside_tmp = std::env::temp_dir().join(marker("outside-tmp"));
    f.link("link-out", &f.outside);
    let script = format!(
        "echo in > inside.txt; echo t > \"$TMPDIR/t\" && echo tmpdir-ok; \
         echo x > {home}/x; echo x > {tmp}; echo x > /etc/{name}; echo x > link-out/x; true",
        home = home.display(),
        tmp = outside_tmp.display(),
        name = marker("etc"),
    );
    let result = sandboxed(&f, &script, &[]);
    let stdout = result["stdout"].as_str().unwrap();
    let stderr = result["stderr"].as_str().unwrap();
    assert!(stdout.contains("tmpdir-ok"), "{result:#}");
    assert_eq!(f.read("inside.txt"), "in\n");
    assert!(!home.join("x").exists());
    assert!(!outside_tmp.exists());
    assert!(!f.outside.join("x").exists());
    assert_eq!(stderr.matches("Permission denied").count(), 4, "{stderr}");
    // The private TMPDIR is gone with the command.
    let tmpdir = stdout.lines().next().unwrap_or_default();
    assert!(!tmpdir.is_empty());
}

#[test]
fn wicket_home_and_denied_paths_cannot_be_read() {
    let f = Fixture::new();
    std::fs::write(f.home.join("server.json"), "{\"token\":\"t0p-secret\"}").unwrap();
    std::fs::write(
        f.home.join("config.toml"),
        format!("[sandbox]\ndeny_read = [\"{}\"]\n", f.outside.display()),
    )
    .unwrap();
    let result = sandboxed(
        &f,
        &format!(
            "cat {}/server.json; cat {}/secret; cat a.txt",
            f.home.display(),
            f.outside.display()
        ),
        &[],
    );
    let stdout = result["stdout"].as_str().unwrap();
    assert!(
        !stdout.contains("t0p-secret") && !stdout.contains("SECRET"),
        "{result:#}"
    );
    assert!(
        stdout.contains("alpha"),
        "the workspace is readable: {result:#}"
    );
    assert_eq!(
        result["stderr"]
            .as_str()
            .unwrap()
            .matches("Permission denied")
            .count(),
        2,
        "{result:#}"
    );
}

fn python(code: &str) -> String {
    format!("python3 -c '{code}'")
}

#[test]
fn no_network_unless_asked_and_the_card_says_so() {
    let f = Fixture::new();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
    udp.set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let udp_port = udp.local_addr().unwrap().port();
    let connect = python(&format!(
        "import socket\ntry:\n  socket.create_connection((\"127.0.0.1\", {port}), 5); print(\"tcp-connected\")\nexcept OSError as e: print(\"tcp-refused\", e)\n\
try:\n  s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b\"leak\", (\"127.0.0.1\", {udp_port})); print(\"udp-sent\")\nexcept OSError as e: print(\"udp-refused\", e)"
    ));
    let result = sandboxed(&f, &connect, &[]);
    let stdout = result["stdout"].as_str().unwrap();
    assert!(stdout.contains("tcp-refused"), "{result:#}");
    let mut buffer = [0u8; 16];
    assert!(
        udp.recv_from(&mut buffer).is_err(),
        "a UDP datagram got out: {result:#}"
    );
    listener.set_nonblocking(true).unwrap();
    assert!(listener.accept().is_err(), "a TCP connection got through");
    // With network asked for (and shown on the card), the same connect works.
    let (out, code) = f.tool(
        "run",
        &json!({"argv": ["sh", "-c", connect], "network": true}).to_string(),
        &["--answers", "allow_once"],
    );
    assert_eq!(code, 0, "{out:#?}");
    assert_eq!(out[0]["network"], true);
    assert_eq!(out[0]["sandbox"]["network"], true);
    let stdout = out[1]["stdout"].as_str().unwrap();
    assert!(stdout.contains("tcp-connected"), "{out:#?}");
}

#[test]
fn network_is_its_own_allow_session_key() {
    let f = Fixture::new();
    let ask = |network: bool, answer: &str| {
        f.tool(
            "run",
            &json!({"argv": ["true"], "network": network}).to_string(),
            &["--session", "net", "--answers", answer],
        )
        .0
    };
    assert_eq!(
        ask(false, "allow_session").len(),
        2,
        "a card, then the result"
    );
    assert_eq!(
        ask(false, "deny").len(),
        1,
        "allowed for the session: no card"
    );
    let with_network = ask(true, "deny");
    assert_eq!(
        with_network.len(),
        2,
        "the same argv with network asks again"
    );
    assert_eq!(with_network[1]["error"]["kind"], "denied");
}

#[test]
fn nothing_a_command_starts_outlives_its_cancel_or_timeout() {
    let f = Fixture::new();
    let marker = marker("setsid");
    let script = format!(
        "setsid sh -c 'sleep 300; : {marker}' & setsid sh -c 'sleep 301; : {marker}' & sleep 1"
    );
    let result = sandboxed(&f, &script, &[("timeout_s", json!(30))]);
    assert_eq!(result["exit_code"], 0, "{result:#}");
    assert!(!alive(&marker), "a setsid descendant outlived the command");
    // A timeout, with the descendants still running.
    let script = format!("setsid sh -c 'sleep 300; : {marker}' & sleep 300");
    let result = sandboxed(&f, &script, &[("timeout_s", json!(1))]);
    assert_eq!(result["timed_out"], true, "{result:#}");
    assert!(!alive(&marker), "a setsid descendant outlived the timeout");
}

#[test]
fn a_command_cannot_approve_its_own_card() {
    let f = Fixture::new();
    let served = crate::serve::serve(&f);
    let port = served.port;
    let token_path = f.home.join("server.json");
    // The command tries what a malicious build script would: read the
    // token, then answer its own next card over the API.
    let attack = python(&format!(
        "import json, socket\ntry:\n  token = json.load(open(\"{token}\"))[\"token\"]; print(\"token-read\")\nexcept OSError as e: print(\"token-refused\", e); token = \"guess\"\n\
try:\n  s = socket.create_connection((\"127.0.0.1\", {port}), 5); s.sendall(b\"POST /api/sessions/x/cards/y HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\nAuthorization: Bearer \" + token.encode() + b\"\\r\\nContent-Length: 29\\r\\n\\r\\n{{\\\"answer\\\":\\\"allow_session\\\"}}\"); print(\"posted\", s.recv(100))\nexcept OSError as e: print(\"post-refused\", e)",
        token = token_path.display()
    ));
    let result = sandboxed(&f, &attack, &[]);
    let stdout = result["stdout"].as_str().unwrap();
    assert!(stdout.contains("token-refused"), "{result:#}");
    assert!(stdout.contains("post-refused"), "{result:#}");
    drop(served);
}

#[test]
fn a_stop_hook_runs_under_the_same_sandbox_and_without_provider_keys() {
    let f = Fixture::new();
    let home = user_home(&f);
    let seen = f.ws.join("hook-saw.txt");
    std::fs::write(
        f.home.join("config.toml"),
        format!(
            "[[hooks.stop]]\ncommand = [\"sh\", \"-c\", \"env > {seen}; echo x > {home}/hooked; cat {wh}/config.toml > /dev/null || echo home-refused >> {seen}\"]\n",
            seen = seen.display(),
            home = home.display(),
            wh = f.home.display(),
        ),
    )
    .unwrap();
    let model = crate::exec::script(&f, "hook.json", json!([{"text": "done"}]));
    crate::exec::exec(
        &f,
        "finish",
        &["--model", &model, "--json", "--answers", "deny"],
    )
    .env("OPENAI_API_KEY", "sk-openai-SECRET")
    .env("ANTHROPIC_API_KEY", "sk-ant-SECRET")
    .env("OPENROUTER_API_KEY", "sk-or-SECRET")
    .succeeds();
    let env = std::fs::read_to_string(&seen).unwrap();
    assert!(
        !env.contains("SECRET"),
        "a provider key reached the hook:\n{env}"
    );
    assert!(env.contains("home-refused"), "{env}");
    assert!(
        !home.join("hooked").exists(),
        "the hook wrote outside the workspace"
    );
}

#[test]
fn no_provider_key_reaches_a_command() {
    let f = Fixture::new();
    let output = f
        .command("run", r#"{"argv":["env"]}"#, &["--answers", "allow_once"])
        .env("OPENAI_API_KEY", "sk-openai-SECRET")
        .env("ANTHROPIC_API_KEY", "sk-ant-SECRET")
        .env("OPENROUTER_API_KEY", "sk-or-SECRET")
        .env("WICKET_TEST_VISIBLE", "yes")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let out = lines(&output);
    let env = out[1]["stdout"].as_str().unwrap();
    assert!(
        env.contains("WICKET_TEST_VISIBLE=yes"),
        "the environment is passed on: {env}"
    );
    assert!(!env.contains("SECRET"), "{env}");
}

#[test]
fn the_private_tmpdir_is_removed_afterwards() {
    let f = Fixture::new();
    let result = sandboxed(&f, "echo \"$TMPDIR\"; touch \"$TMPDIR/left\"", &[]);
    let tmpdir = result["stdout"].as_str().unwrap().trim().to_string();
    assert!(tmpdir.contains("wicket-run-"), "{result:#}");
    assert!(
        wait_until(Duration::from_secs(5), || !std::path::Path::new(&tmpdir)
            .exists()),
        "{tmpdir} is still there"
    );
}

/// The kernel must give what the tests above rely on; if this fails, the
/// others' passes would prove nothing.
#[test]
fn this_kernel_sandboxes_commands() {
    let f = Fixture::new();
    let (out, _) = f.tool("run", r#"{"argv":["true"]}"#, &["--answers", "deny"]);
    let sandbox = &out[0]["sandbox"];
    assert_eq!(sandbox["mode"], "workspace-write", "{sandbox}");
    let note = sandbox["note"].as_str().unwrap_or("");
    assert!(
        !note.contains("namespace"),
        "no PID or network namespace here: {note}"
    );
    let mut probe = wicket()
        .arg("__wicket-probe")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut text = String::new();
    probe
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut text)
        .unwrap();
    probe.wait().unwrap();
    let found: Value = serde_json::from_str(&text).unwrap();
    assert!(found["landlock_abi"].as_u64().unwrap_or(0) >= 4, "{found}");
    assert_eq!(found["namespaces"], true, "{found}");
    let _ = std::io::stdout().flush();
}
