//! The sandbox, through the binary: each command is a real one, run
//! through the gate with allow_once, as the model's `run` would be. What the
//! card allowed is all it can do: write the workspace and its own TMPDIR,
//! read everything but `$WICKET_HOME` and the denied paths, no network
//! unless asked, nothing left running after it.

use std::io::{Read, Write};
use std::net::{TcpListener, UdpSocket};
use std::time::Duration;

use serde_json::{Value, json};
use wicket_protocol::Network;
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
    let etc = std::path::Path::new("/etc").join(marker("etc"));
    f.link("link-out", &f.outside);
    // Each write says whether it went through, so that each refusal is
    // told apart (not counted together with a path refused anyway).
    let script = format!(
        "echo in > inside.txt; echo t > \"$TMPDIR/t\" && echo tmpdir-ok; \
         echo x > {home}/x && echo wrote-home; echo x > {tmp} && echo wrote-tmp; \
         echo x > {etc} && echo wrote-etc; echo x > link-out/x && echo wrote-link; true",
        home = home.display(),
        tmp = outside_tmp.display(),
        etc = etc.display(),
    );
    let result = sandboxed(&f, &script, &[]);
    let stdout = result["stdout"].as_str().unwrap();
    assert!(stdout.contains("tmpdir-ok"), "{result:#}");
    assert_eq!(f.read("inside.txt"), "in\n");
    // The person's home (outside the workspace) and a link out of it.
    assert!(!stdout.contains("wrote-home"), "{result:#}");
    assert!(!home.join("x").exists());
    assert!(!stdout.contains("wrote-link"), "{result:#}");
    assert!(!f.outside.join("x").exists());
    // /etc: read-only in the jail, whoever runs it (root included).
    assert!(!stdout.contains("wrote-etc"), "{result:#}");
    assert!(!etc.exists());
    // The host's /tmp: the command's /tmp is its own (a tmpfs in the jail,
    // where the write goes through), and the host never sees it.
    assert!(!outside_tmp.exists());
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
    let stderr = result["stderr"].as_str().unwrap();
    assert_eq!(stderr.matches("cat: ").count(), 2, "{result:#}");
}

/// A workspace that holds `$WICKET_HOME` and a denied folder (as `$HOME`
/// does when Wicket starts there): neither can be read or written.
#[test]
fn wicket_home_and_a_denied_folder_inside_the_workspace_are_hidden() {
    let f = Fixture::new();
    let home = f.ws.join(".local/share/wicket");
    let secrets = f.ws.join(".ssh");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&secrets).unwrap();
    std::fs::write(
        home.join("config.toml"),
        format!("[sandbox]\ndeny_read = [\"{}\"]\n", secrets.display()),
    )
    .unwrap();
    std::fs::write(secrets.join("id_ed25519"), "PRIVATE KEY").unwrap();
    let script = "cat .local/share/wicket/config.toml; cat .ssh/id_ed25519; \
        echo '[sandbox]' >> .local/share/wicket/config.toml; echo k > .ssh/authorized_keys; \
        mkdir -p .local/share/wicket/sessions/x && echo made; echo ok > src.txt";
    let (out, code) = f
        .command(
            "run",
            &json!({"argv": ["sh", "-c", script]}).to_string(),
            &["--answers", "allow_once"],
        )
        .env("WICKET_HOME", &home)
        .stdin(std::process::Stdio::null())
        .output()
        .map(|output| (lines(&output), output.status.code()))
        .unwrap();
    assert_eq!(code, Some(0), "{out:#?}");
    let result = out.last().unwrap();
    let stdout = result["stdout"].as_str().unwrap();
    assert!(
        !stdout.contains("PRIVATE") && !stdout.contains("deny_read"),
        "{result:#}"
    );
    assert!(!stdout.contains("made"), "{result:#}");
    assert_eq!(
        std::fs::read_to_string(home.join("config.toml")).unwrap(),
        format!("[sandbox]\ndeny_read = [\"{}\"]\n", secrets.display())
    );
    assert!(!secrets.join("authorized_keys").exists());
    assert!(!home.join("sessions/x").exists());
    assert_eq!(
        f.read("src.txt"),
        "ok\n",
        "the rest of the workspace is writable"
    );
}

#[test]
fn git_and_wicket_folders_are_read_only_unless_the_card_said_git() {
    let f = Fixture::new();
    let git = |args: &[&str]| {
        let status = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .current_dir(&f.ws)
            .stdout(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(status.success(), "git {args:?}");
    };
    git(&["init", "-q"]);
    git(&["add", "a.txt"]);
    git(&["commit", "-q", "-m", "first"]);
    std::fs::create_dir_all(f.ws.join(".wicket")).unwrap();
    std::fs::create_dir_all(f.ws.join("src")).unwrap();
    let config_before = std::fs::read_to_string(f.ws.join(".git/config")).unwrap();
    let script = "echo x > .git/hooks/x; echo '[core] fsmonitor = evil' >> .git/config; \
        echo 'model = \"x\"' > .wicket/config.toml; echo x > src/x && echo src-ok";
    let result = sandboxed(&f, script, &[]);
    assert!(
        result["stdout"].as_str().unwrap().contains("src-ok"),
        "{result:#}"
    );
    assert_eq!(
        result["stderr"]
            .as_str()
            .unwrap()
            .matches("Read-only file system")
            .count(),
        3,
        "{result:#}"
    );
    assert!(!f.ws.join(".git/hooks/x").exists());
    assert!(!f.ws.join(".wicket/config.toml").exists());
    assert_eq!(
        std::fs::read_to_string(f.ws.join(".git/config")).unwrap(),
        config_before
    );
    // A commit needs .git: asked for, and the card says so.
    let commit = json!({"argv": ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-am", "second"], "git": true});
    std::fs::write(f.ws.join("a.txt"), "changed\n").unwrap();
    let (out, code) = f.tool("run", &commit.to_string(), &["--answers", "allow_once"]);
    assert_eq!(code, 0, "{out:#?}");
    assert_eq!(out[0]["git"], true, "{:#}", out[0]);
    let layers = out[0]["sandbox"]["layers"].to_string();
    assert!(layers.contains(".git too"), "{layers}");
    assert_eq!(out[1]["exit_code"], 0, "{:#}", out[1]);
    let log = std::process::Command::new("git")
        .args(["log", "--oneline"])
        .current_dir(&f.ws)
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&log.stdout).lines().count(), 2);
    // Without it, the same commit cannot write .git.
    std::fs::write(f.ws.join("a.txt"), "again\n").unwrap();
    let (out, _) = f.tool(
        "run",
        &json!({"argv": commit["argv"]}).to_string(),
        &["--answers", "allow_once"],
    );
    assert_ne!(out[1]["exit_code"], 0, "{:#}", out[1]);
}

/// A UNIX socket the test listens on, in `folder`; the command tries it.
fn unix_socket_reached(
    f: &Fixture,
    folder: &std::path::Path,
    network: Network,
    read: &[&std::path::Path],
) -> Value {
    std::fs::create_dir_all(folder).unwrap();
    let path = folder.join(format!("{}.sock", marker("s")));
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    listener.set_nonblocking(true).unwrap();
    let code = python(&format!(
        "import socket\ntry:\n  s = socket.socket(socket.AF_UNIX); s.connect(\"{}\"); print(\"unix-connected\")\nexcept OSError as e: print(\"unix-refused\", e)",
        path.display()
    ));
    let (out, code) = f.tool(
        "run",
        &json!({"argv": ["sh", "-c", code], "network": network, "read": read}).to_string(),
        &["--answers", "allow_once"],
    );
    assert_eq!(code, 0, "{out:#?}");
    let accepted = listener.accept().is_ok();
    let result = out.last().unwrap().clone();
    let connected = result["stdout"]
        .as_str()
        .unwrap()
        .contains("unix-connected");
    assert_eq!(accepted, connected, "{result:#}");
    result
}

#[test]
fn no_unix_socket_outside_is_reachable_without_network() {
    let f = Fixture::new();
    // /tmp is the command's own; a folder under the real $HOME is shown
    // to it by `read`, so there only the seccomp filter holds the socket.
    let tmp = std::env::temp_dir().join(marker("sockets"));
    let home = std::path::PathBuf::from(std::env::var_os("HOME").unwrap()).join(marker("sockets"));
    std::fs::create_dir_all(&home).unwrap();
    // A network through Wicket is its proxy, never a daemon's socket.
    for (folder, network) in [
        (&tmp, Network::Off),
        (&home, Network::Off),
        (&home, Network::Proxied),
    ] {
        let result = unix_socket_reached(&f, folder, network, &[&home]);
        std::fs::remove_dir_all(folder).unwrap();
        assert!(
            result["stdout"].as_str().unwrap().contains("unix-refused"),
            "{folder:?} {network:?}: {result:#}"
        );
    }
    std::fs::create_dir_all(&home).unwrap();
    let result = unix_socket_reached(&f, &home, Network::Direct, &[&home]);
    std::fs::remove_dir_all(&home).unwrap();
    assert!(
        result["stdout"]
            .as_str()
            .unwrap()
            .contains("unix-connected"),
        "with network: {result:#}"
    );
}

#[test]
fn proc_shows_only_the_commands_own_processes() {
    let f = Fixture::new();
    let marker = marker("visible");
    // A host process and a host socket, both named by the marker.
    let mut outside = std::process::Command::new("python3")
        .args(["-c", "import time; time.sleep(30)", &marker])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let socket = f.outside.join(format!("{marker}.sock"));
    let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    assert!(
        wait_until(Duration::from_secs(5), || std::fs::read_to_string(format!(
            "/proc/{}/cmdline",
            outside.id()
        ))
        .is_ok_and(|cmdline| cmdline.contains(&marker))),
        "the host process is not up"
    );
    // The script names the marker in two halves, so no command line in
    // the jail holds it whole.
    let (head, tail) = marker.split_at(8);
    let result = sandboxed(
        &f,
        &format!(
            "a={head}; b={tail}; grep -l \"$a$b\" /proc/[0-9]*/cmdline /proc/net/unix; ls /proc | grep -c '^[0-9]'"
        ),
        &[],
    );
    outside.kill().unwrap();
    outside.wait().unwrap();
    let stdout = result["stdout"].as_str().unwrap();
    assert!(!stdout.contains("/proc/"), "{result:#}");
    let count: usize = stdout.trim().parse().unwrap();
    assert!(count <= 5, "{count} processes visible: {result:#}");
}

#[test]
fn an_inherited_descriptor_cannot_be_written() {
    let f = Fixture::new();
    let target = f.outside.join("fd7.txt");
    let script = format!(
        "exec {} tool run '{{\"argv\":[\"sh\",\"-c\",\"echo leaked >&7 || echo fd7-closed\"]}}' --workspace {} --answers allow_once 7>>{}",
        env!("CARGO_BIN_EXE_wicket"),
        f.ws.display(),
        target.display()
    );
    let output = std::process::Command::new("sh")
        .args(["-c", &script])
        .env("WICKET_HOME", &f.home)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let out = lines(&output);
    assert!(
        out.last().unwrap()["stdout"]
            .as_str()
            .unwrap()
            .contains("fd7-closed"),
        "{out:#?}"
    );
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "");
}

#[test]
fn a_fork_loop_stops_below_max_processes() {
    let f = Fixture::new();
    std::fs::write(
        f.home.join("config.toml"),
        "[sandbox]\nmax_processes = 64\n",
    )
    .unwrap();
    let script = python(
        "import os, signal, time\nchildren = []\nfor _ in range(300):\n  try:\n    pid = os.fork()\n  except OSError: break\n  if pid == 0:\n    time.sleep(30); os._exit(0)\n  children.append(pid)\nprint(len(children))\nfor pid in children: os.kill(pid, signal.SIGKILL)",
    );
    let (out, code) = f.tool(
        "run",
        &json!({"argv": ["sh", "-c", script], "timeout_s": 60}).to_string(),
        &["--answers", "allow_once"],
    );
    assert_eq!(code, 0, "{out:#?}");
    let layers = out[0]["sandbox"]["layers"].to_string();
    assert!(layers.contains("at most 64 processes"), "{layers}");
    let result = out.last().unwrap();
    let stdout = result["stdout"].as_str().unwrap();
    let forked: usize = stdout.trim().parse().unwrap_or(usize::MAX);
    // sh, python and the launcher's init count too.
    assert!(
        (1..64).contains(&forked),
        "{forked} forks went through: {result:#}"
    );
}

fn python(code: &str) -> String {
    format!("python3 -c '{code}'")
}

/// What `env` prints as a command, with `config` as the home config and
/// `vars` set in Wicket's own environment.
fn command_env(f: &Fixture, config: &str, vars: &[(&str, &str)]) -> String {
    std::fs::write(f.home.join("config.toml"), config).unwrap();
    let output = f
        .command("run", r#"{"argv":["env"]}"#, &["--answers", "allow_once"])
        .envs(vars.iter().copied())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let out = lines(&output);
    out[1]["stdout"].as_str().unwrap().to_string()
}

#[test]
fn the_environment_is_an_allowlist_and_env_pass_adds_to_it() {
    let f = Fixture::new();
    let env = command_env(
        &f,
        "[sandbox]\nenv_pass = [\"WICKET_TEST_PASSED\"]\n",
        &[
            ("GITHUB_TOKEN", "ghp-SECRET"),
            ("AWS_SECRET_ACCESS_KEY", "aws-SECRET"),
            ("SSH_AUTH_SOCK", "/tmp/agent.sock"),
            ("WICKET_TEST_PASSED", "yes"),
            ("LC_TIME", "C"),
        ],
    );
    assert!(env.contains("WICKET_TEST_PASSED=yes"), "{env}");
    assert!(env.contains("LC_TIME=C") && env.contains("PATH="), "{env}");
    assert!(
        !env.contains("SECRET") && !env.contains("SSH_AUTH_SOCK"),
        "{env}"
    );
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
    // With network through Wicket, only its proxy is reached: a socket
    // that goes around it reaches nothing.
    let (out, code) = f.tool(
        "run",
        &json!({"argv": ["sh", "-c", connect], "network": true}).to_string(),
        &["--answers", "allow_once"],
    );
    assert_eq!(code, 0, "{out:#?}");
    assert_eq!(out[0]["network"], true);
    assert_eq!(out[0]["sandbox"]["network"], true);
    let stdout = out[1]["stdout"].as_str().unwrap();
    assert!(stdout.contains("tcp-refused"), "{out:#?}");
    assert!(
        listener.accept().is_err(),
        "a TCP connection went around the proxy"
    );
    // The direct network (and the card that says so), the same connect works.
    let (out, code) = f.tool(
        "run",
        &json!({"argv": ["sh", "-c", connect], "network": "direct"}).to_string(),
        &["--answers", "allow_once"],
    );
    assert_eq!(code, 0, "{out:#?}");
    assert_eq!(out[0]["network"], "direct");
    let stdout = out[1]["stdout"].as_str().unwrap();
    assert!(stdout.contains("tcp-connected"), "{out:#?}");
}

/// `flag` (network, git) is part of a run's allow_session key: allowed
/// without it, the same argv with it asks again.
fn a_flag_is_its_own_allow_session_key(flag: &str) {
    let f = Fixture::new();
    let ask = |with: bool, answer: &str| {
        let mut args = json!({"argv": ["true"]});
        args[flag] = json!(with);
        f.tool(
            "run",
            &args.to_string(),
            &["--session", "keys", "--answers", answer],
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
    let with = ask(true, "deny");
    assert_eq!(with.len(), 2, "the same argv with {flag} asks again");
    assert_eq!(with[0][flag], true, "the card says {flag}");
    assert_eq!(with[1]["error"]["kind"], "denied");
}

#[test]
fn network_is_its_own_allow_session_key() {
    a_flag_is_its_own_allow_session_key("network");
}

#[test]
fn git_is_its_own_allow_session_key() {
    a_flag_is_its_own_allow_session_key("git");
}

#[test]
fn nothing_a_command_starts_outlives_its_cancel_or_timeout() {
    let f = Fixture::new();
    let marker = marker("setsid");
    // Each descendant says it started (a file in the workspace) before the
    // command ends, so a pass cannot come from descendants that never ran.
    let script = format!(
        "setsid sh -c 'touch started-1; sleep 300; : {marker}' & \
         setsid sh -c 'touch started-2; sleep 301; : {marker}' & \
         while [ ! -e started-1 ] || [ ! -e started-2 ]; do sleep 0.05; done; echo both-started"
    );
    let result = sandboxed(&f, &script, &[("timeout_s", json!(30))]);
    assert_eq!(result["exit_code"], 0, "{result:#}");
    assert!(
        result["stdout"].as_str().unwrap().contains("both-started"),
        "{result:#}"
    );
    assert!(f.ws.join("started-1").exists() && f.ws.join("started-2").exists());
    assert!(!alive(&marker), "a setsid descendant outlived the command");
    // A timeout, with the descendant still running.
    let script = format!("setsid sh -c 'touch started-3; sleep 300; : {marker}' & sleep 300");
    let result = sandboxed(&f, &script, &[("timeout_s", json!(1))]);
    assert_eq!(result["timed_out"], true, "{result:#}");
    assert!(
        f.ws.join("started-3").exists(),
        "the descendant never started"
    );
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
fn no_provider_key_reaches_a_command_even_when_env_pass_names_it() {
    let f = Fixture::new();
    let env = command_env(
        &f,
        "[sandbox]\nenv_pass = [\"OPENAI_API_KEY\"]\n",
        &[
            ("OPENAI_API_KEY", "sk-openai-SECRET"),
            ("ANTHROPIC_API_KEY", "sk-ant-SECRET"),
            ("OPENROUTER_API_KEY", "sk-or-SECRET"),
        ],
    );
    assert!(env.contains("PATH="), "{env}");
    assert!(!env.contains("SECRET"), "{env}");
}

#[test]
fn the_private_tmp_is_gone_with_the_command() {
    let f = Fixture::new();
    let name = marker("left");
    let result = sandboxed(
        &f,
        &format!("echo \"$TMPDIR\"; touch \"$TMPDIR/{name}\" /tmp/{name}-2 && echo made"),
        &[],
    );
    let stdout = result["stdout"].as_str().unwrap();
    assert!(stdout.contains("made"), "{result:#}");
    let tmpdir = stdout.lines().next().unwrap();
    assert_eq!(tmpdir, "/tmp", "{result:#}");
    assert!(!std::env::temp_dir().join(&name).exists());
    assert!(!std::env::temp_dir().join(format!("{name}-2")).exists());
    // The next command's /tmp is a new one: what the first left is gone.
    let result = sandboxed(
        &f,
        &format!("ls -a /tmp; test -e /tmp/{name} && echo still-there || echo gone"),
        &[],
    );
    let stdout = result["stdout"].as_str().unwrap();
    assert!(stdout.contains("gone"), "{result:#}");
    assert!(!stdout.contains(&name), "{result:#}");
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
    assert_eq!(found["mounts"], true, "{found}");
    assert_eq!(found["seccomp"], true, "{found}");
    // Root is not held to RLIMIT_NPROC: the fork test needs a cgroup then.
    assert!(found["cgroup"] == true || found["root"] == false, "{found}");
    let _ = std::io::stdout().flush();
}

/// What a command tries against the terminal: TIOCSTI on `/dev/tty` and on
/// every pty it can find, typing `keys`. It reports each attempt.
fn tiocsti(keys: &str) -> String {
    python(&format!(
        "import fcntl, glob, os, termios\nfor path in [\"/dev/tty\"] + glob.glob(\"/dev/pts/*\"):\n  try:\n    fd = os.open(path, os.O_RDWR)\n    for c in {keys:?}: fcntl.ioctl(fd, termios.TIOCSTI, c.encode())\n    print(\"typed-\" + \"into\", path)\n  except OSError as e: print(\"refused\", path, e)"
    ))
}

#[test]
fn a_command_cannot_type_into_the_persons_terminal() {
    let f = Fixture::new();
    let marker = marker("typed");
    let args = f.root.join("tiocsti.json");
    std::fs::write(
        &args,
        json!({"argv": ["sh", "-c", tiocsti(&format!("touch {marker}\n"))]}).to_string(),
    )
    .unwrap();
    // Wicket on a real terminal, as a person runs it; the card is answered there.
    let mut pty = wicket_test_support::pty::Pty::spawn(
        &format!(
            "{} tool run @{} --workspace {}; sleep 1",
            env!("CARGO_BIN_EXE_wicket"),
            args.display(),
            f.ws.display()
        ),
        &[
            ("WICKET_HOME", f.home.as_os_str()),
            ("NO_COLOR", std::ffi::OsStr::new("1")),
        ],
    );
    pty.expect("[o]nce / [s]ession / [a]lways / [d]eny / [r]eason, deny: ");
    pty.send("o\n");
    pty.expect(r#""type":"result""#);
    let (_, shown) = pty.finish();
    assert!(shown.contains("refused /dev/tty"), "{shown}");
    assert!(!shown.contains("typed-into"), "{shown}");
    assert!(!f.ws.join(&marker).exists() && !std::path::Path::new(&marker).exists());
}

#[test]
fn a_write_into_wicket_home_is_forbidden_and_never_carded() {
    let f = Fixture::new();
    let config = f.home.join("config.toml");
    std::fs::write(&config, "# the person's own\n").unwrap();
    let args = json!({"path": config, "content": "[sandbox]\nmode = \"off\"\n"});
    let (out, code) = f.tool(
        "write_file",
        &args.to_string(),
        &["--answers", "allow_once"],
    );
    assert_eq!(code, 1, "{out:#?}");
    assert_eq!(out.len(), 1, "no card went up: {out:#?}");
    assert_eq!(out[0]["error"]["kind"], "forbidden", "{out:#?}");
    assert_eq!(
        std::fs::read_to_string(&config).unwrap(),
        "# the person's own\n"
    );
    // A session's files too, by a path that walks into the folder.
    std::fs::create_dir_all(f.home.join("sessions/x")).unwrap();
    let sneaky = format!(
        "{}/../{}/sessions/x/meta.json",
        f.home.display(),
        f.home.file_name().unwrap().to_string_lossy()
    );
    let (out, _) = f.tool(
        "write_file",
        &json!({"path": sneaky, "content": "{}"}).to_string(),
        &["--answers", "allow_once"],
    );
    assert_eq!(out[0]["error"]["kind"], "forbidden", "{out:#?}");
}

#[test]
fn an_outside_write_card_says_outside() {
    let f = Fixture::new();
    let target = f.outside.join("notes.txt");
    let (out, code) = f.tool(
        "write_file",
        &json!({"path": target, "content": "x"}).to_string(),
        &["--answers", "deny"],
    );
    assert_eq!(code, 1);
    assert_eq!(out[0]["kind"], "write");
    assert_eq!(out[0]["outside"], true, "{:#}", out[0]);
    let (out, _) = f.tool(
        "write_file",
        &json!({"path": "inside.txt", "content": "x"}).to_string(),
        &["--answers", "deny"],
    );
    assert!(out[0].get("outside").is_none(), "{:#}", out[0]);
}

/// A repository's config that would turn the sandbox off and pick a model
/// that reads /dev/zero: the turn runs on the person's model, in the
/// sandbox, and a notice names each ignored key and the file.
#[test]
fn a_hostile_workspace_config_is_ignored_with_a_notice() {
    let f = Fixture::new();
    f.write(
        ".wicket/config.toml",
        "model = \"script:/dev/zero\"\n[sandbox]\nmode = \"off\"\n[providers.openai]\nbase_url = \"http://127.0.0.1:9\"\n",
    );
    let model = crate::exec::script(
        &f,
        "hostile.json",
        json!([
            {"tool_calls": [{"name": "run", "arguments": {"argv": ["true"]}}]},
            {"text": "done"}
        ]),
    );
    let output = crate::exec::exec(
        &f,
        "go",
        &["--model", &model, "--json", "--answers", "allow_once"],
    )
    .stdin(std::process::Stdio::null())
    .output()
    .unwrap();
    let events = lines(&output);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{events:#?}\n{stderr}");
    let card = events.iter().find(|e| e["type"] == "card").unwrap();
    assert_eq!(card["sandbox"]["mode"], "workspace-write", "{card:#}");
    let notices: Vec<&Value> = events.iter().filter(|e| e["type"] == "notice").collect();
    let keys: Vec<&str> = notices.iter().map(|n| n["key"].as_str().unwrap()).collect();
    assert_eq!(keys, ["model", "[providers]", "[sandbox]"], "{notices:#?}");
    for notice in &notices {
        assert!(
            notice["file"]
                .as_str()
                .unwrap()
                .ends_with(".wicket/config.toml")
        );
    }
    assert!(
        notices[0]["message"]
            .as_str()
            .unwrap()
            .contains("--model script:/dev/zero")
    );
    assert!(
        stderr.contains("wicket: notice: ignored [sandbox]"),
        "{stderr}"
    );
}

/// A file in the person's real home, removed when the test ends.
struct InHome(std::path::PathBuf);

impl InHome {
    fn new(name: &str, content: &str) -> InHome {
        let path = std::path::PathBuf::from(std::env::var_os("HOME").unwrap()).join(marker(name));
        std::fs::create_dir_all(&path).unwrap();
        std::fs::write(path.join("file"), content).unwrap();
        InHome(path)
    }
}

impl Drop for InHome {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn a_command_sees_no_home_but_its_toolchains_and_what_read_names() {
    let f = Fixture::new();
    let secret = InHome::new(".wicket-test-secret", "canary");
    let notes = InHome::new("notes", "my notes");
    let script = format!(
        "cat {secret}/file; cat ~/.gitconfig >/dev/null 2>&1; ls -d ~/.cargo >/dev/null 2>&1 && echo cargo-seen; \
         cat {notes}/file; true",
        secret = secret.0.display(),
        notes = notes.0.display(),
    );
    let home = std::path::PathBuf::from(std::env::var_os("HOME").unwrap());
    let result = sandboxed(&f, &script, &[]);
    let stdout = result["stdout"].as_str().unwrap();
    assert!(!stdout.contains("canary"), "{result:#}");
    assert!(!stdout.contains("my notes"), "{result:#}");
    // A toolchain of the home is seen (where the machine has one).
    assert_eq!(
        stdout.contains("cargo-seen"),
        home.join(".cargo").is_dir(),
        "{result:#}"
    );
    // `read` shows a path, and the card says so as the call wrote it.
    let written = format!("~/{}", notes.0.file_name().unwrap().to_string_lossy());
    let args = json!({"argv": ["sh", "-c", script], "read": [written]});
    let (out, code) = f.tool("run", &args.to_string(), &["--answers", "allow_once"]);
    assert_eq!(code, 0, "{out:#?}");
    assert_eq!(out[0]["read"], json!([written]), "{:#}", out[0]);
    assert!(
        out[0]["sandbox"]["summary"]
            .as_str()
            .unwrap()
            .contains(&format!("also reads: {written}")),
        "{:#}",
        out[0]
    );
    let stdout = out.last().unwrap()["stdout"].as_str().unwrap().to_string();
    assert!(stdout.contains("my notes"), "{out:#?}");
    assert!(!stdout.contains("canary"), "{out:#?}");
    // Nothing the sandbox hides can be named: $WICKET_HOME is refused before any card.
    let args = json!({"argv": ["true"], "read": [f.home.display().to_string()]});
    let (out, _) = f.tool("run", &args.to_string(), &["--answers", "allow_once"]);
    assert_eq!(out.len(), 1, "{out:#?}");
    assert_eq!(out[0]["error"]["kind"], "invalid_args", "{out:#?}");
}

#[test]
fn a_deny_read_path_stays_hidden_inside_a_home_toolchain() {
    let f = Fixture::new();
    let toolchain = InHome::new("toolchain", "tool");
    std::fs::write(toolchain.0.join("credentials"), "token").unwrap();
    let name = toolchain
        .0
        .file_name()
        .unwrap()
        .to_string_lossy()
        .to_string();
    std::fs::write(
        f.home.join("config.toml"),
        format!("[sandbox]\nhome_read = [\"~/{name}\"]\ndeny_read = [\"~/{name}/credentials\"]\n"),
    )
    .unwrap();
    let script = format!(
        "cat ~/{name}/file; cat ~/{name}/credentials; ls -d ~/.cargo 2>/dev/null || echo no-cargo; true"
    );
    let result = sandboxed(&f, &script, &[]);
    let stdout = result["stdout"].as_str().unwrap();
    assert!(stdout.contains("tool"), "{result:#}");
    assert!(!stdout.contains("token"), "{result:#}");
    // home_read replaced the default list.
    assert!(stdout.contains("no-cargo"), "{result:#}");
}

/// Writes each of `files` (relative to `home`) with a secret of its own.
fn secrets_in(home: &std::path::Path, files: &[&str]) {
    for (number, file) in files.iter().enumerate() {
        let path = home.join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, format!("SECRET-{number}\n")).unwrap();
    }
}

/// `run` of `sh -c script` with `HOME` set to `home`, answered allow_once:
/// the card and the result.
fn run_with_home(f: &Fixture, home: &std::path::Path, script: &str) -> (Value, Value) {
    let args = json!({"argv": ["sh", "-c", script]});
    let output = f
        .command("run", &args.to_string(), &["--answers", "allow_once"])
        .env("HOME", home)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let out = lines(&output);
    assert_eq!(output.status.code(), Some(0), "{out:#?}");
    (out[0].clone(), out.last().unwrap().clone())
}

/// What the command copied out (`leak-N`), as the host sees it afterwards:
/// each one that holds a secret.
fn leaked(f: &Fixture, count: usize) -> Vec<String> {
    (0..count)
        .filter_map(|number| std::fs::read_to_string(f.ws.join(format!("leak-{number}"))).ok())
        .filter(|text| text.contains("SECRET"))
        .collect()
}

const TOOLCHAIN_SECRETS: [&str; 8] = [
    ".cargo/credentials.toml",
    ".cargo/credentials",
    ".config/git/credentials",
    ".cache/huggingface/token",
    ".gem/credentials",
    ".m2/settings.xml",
    ".gradle/gradle.properties",
    ".npmrc",
];

#[test]
fn known_credentials_inside_the_toolchains_never_reach_the_workspace() {
    let f = Fixture::new();
    let home = user_home(&f);
    secrets_in(&home, &TOOLCHAIN_SECRETS);
    std::fs::write(home.join(".cargo/config.toml"), "[build]\njobs = 2\n").unwrap();
    let mut script = String::new();
    for (number, file) in TOOLCHAIN_SECRETS.iter().enumerate() {
        script.push_str(&format!("cat ~/{file} > leak-{number} 2>/dev/null; "));
    }
    script.push_str("cat ~/.cargo/config.toml > toolchain-config; true");
    let (card, result) = run_with_home(&f, &home, &script);
    assert_eq!(
        leaked(&f, TOOLCHAIN_SECRETS.len()),
        Vec::<String>::new(),
        "{result:#}"
    );
    // The toolchain itself is there: only its credentials are hidden.
    assert_eq!(
        f.read("toolchain-config"),
        "[build]\njobs = 2\n",
        "{result:#}"
    );
    assert!(
        card["sandbox"]["summary"]
            .as_str()
            .unwrap()
            .ends_with("home hidden but toolchains"),
        "{card:#}"
    );
}

#[test]
fn a_home_that_is_the_workspace_keeps_its_dotfiles_secrets_and_the_card_says_so() {
    let f = Fixture::new();
    let files = [
        ".ssh/id_ed25519",
        ".aws/credentials",
        ".netrc",
        ".git-credentials",
        ".config/gh/hosts.yml",
        ".bash_history",
        ".local/share/fish/fish_history",
        ".cargo/credentials.toml",
    ];
    secrets_in(&f.ws, &files);
    let mut script = String::new();
    for (number, file) in files.iter().enumerate() {
        script.push_str(&format!("cat {file} > leak-{number} 2>/dev/null; "));
    }
    script.push_str("cat a.txt > control; true");
    let (card, result) = run_with_home(&f, &f.ws, &script);
    assert_eq!(leaked(&f, files.len()), Vec::<String>::new(), "{result:#}");
    assert_eq!(f.read("control"), "alpha\nbeta\n", "{result:#}");
    // The person's files are as they were.
    assert_eq!(f.read(".netrc"), "SECRET-2\n");
    let summary = card["sandbox"]["summary"].as_str().unwrap();
    assert!(
        summary.contains("the home is the workspace: its dotfiles' secrets hidden")
            && !summary.contains("home hidden"),
        "{card:#}"
    );
    // A home inside the workspace is named as such.
    let g = Fixture::new();
    let inner = g.ws.join("me");
    secrets_in(&inner, &[".netrc"]);
    let (card, _) = run_with_home(&g, &inner, "cat me/.netrc > leak-0 2>/dev/null; true");
    assert_eq!(leaked(&g, 1), Vec::<String>::new());
    assert!(
        card["sandbox"]["summary"]
            .as_str()
            .unwrap()
            .contains("a home is in the workspace: its dotfiles' secrets hidden"),
        "{card:#}"
    );
}

#[test]
fn with_the_sandbox_off_the_credential_stores_are_still_hidden() {
    let f = Fixture::new();
    let home = user_home(&f);
    secrets_in(&home, &[".cargo/credentials.toml", ".aws/credentials"]);
    std::fs::write(f.home.join("config.toml"), "[sandbox]\nmode = \"off\"\n").unwrap();
    std::fs::write(home.join(".cargo/config.toml"), "[build]\njobs = 2\n").unwrap();
    let (card, result) = run_with_home(
        &f,
        &home,
        "cat ~/.cargo/credentials.toml > leak-0 2>/dev/null; cat ~/.aws/credentials > leak-1 2>/dev/null; \
         cat ~/.cargo/config.toml > control; true",
    );
    assert_eq!(card["sandbox"]["mode"], "off", "{card:#}");
    assert_eq!(leaked(&f, 2), Vec::<String>::new(), "{result:#}");
    assert_eq!(f.read("control"), "[build]\njobs = 2\n", "{result:#}");
}

/// A `deny_read` path inside the workspace, and a home's credential store
/// where the workspace is the home: no tool reads them (read_file refuses,
/// naming it; through a link too), grep and list_dir leave them out and
/// say how many, a write is refused before its card could show the old
/// bytes, and a command sees them masked. Nothing of them reaches a result.
#[test]
fn a_deny_read_path_inside_the_workspace_is_hidden_from_every_tool() {
    let f = Fixture::new();
    f.write(".env", "API_KEY=MARKER-7f3a\n");
    f.write("src/app.py", "import os\nKEY = os.environ['API_KEY']\n");
    std::os::unix::fs::symlink(".env", f.ws.join("public.txt")).unwrap();
    std::fs::write(
        f.home.join("config.toml"),
        format!(
            "[sandbox]\ndeny_read = [\"{}\"]\n",
            f.ws.join(".env").display()
        ),
    )
    .unwrap();
    let tool = |name: &str, args: Value| {
        let (out, code) = f.tool(name, &args.to_string(), &["--answers", "allow_once"]);
        let text = serde_json::to_string(&out).unwrap();
        assert!(!text.contains("MARKER-7f3a"), "{name}: {text}");
        (out.last().unwrap().clone(), code)
    };
    for path in [".env", "public.txt"] {
        let (result, code) = tool("read_file", json!({"path": path}));
        assert_eq!(code, 1, "{result:#}");
        assert_eq!(result["error"]["kind"], "forbidden", "{result:#}");
        assert!(
            result["error"]["message"]
                .as_str()
                .unwrap()
                .contains(".env"),
            "{result:#}"
        );
    }
    let (result, _) = tool("grep", json!({"pattern": "API_KEY"}));
    assert_eq!(result["hidden"], 1, "{result:#}");
    assert_eq!(
        result["matches"],
        json!(["src/app.py:2:KEY = os.environ['API_KEY']"])
    );
    let (result, _) = tool("list_dir", json!({}));
    assert_eq!(result["hidden"], 1, "{result:#}");
    assert!(
        !result["entries"].to_string().contains("\".env\""),
        "{result:#}"
    );
    let (result, _) = tool(
        "search_replace",
        json!({"path": ".env", "old": "API_KEY", "new": "X"}),
    );
    assert_eq!(result["error"]["kind"], "forbidden", "{result:#}");
    assert_eq!(f.read(".env"), "API_KEY=MARKER-7f3a\n");
    let (result, _) = tool("run", json!({"argv": ["cat", ".env"]}));
    assert!(!result.to_string().contains("MARKER"), "{result:#}");
}

/// Where the workspace is the home (`cd ~ && wicket`), the home's known
/// credential stores are hidden from the tools as from commands.
#[test]
fn where_the_workspace_is_the_home_its_credential_stores_are_hidden_from_the_tools() {
    let f = Fixture::new();
    f.write(".ssh/id_ed25519", "PRIVATE-KEY-MARKER\n");
    f.write(".git-credentials", "https://u:TOKEN-MARKER@example.com\n");
    f.write("notes.txt", "mine\n");
    let tool = |name: &str, args: Value| {
        let output = f
            .command(name, &args.to_string(), &["--answers", "allow_once"])
            .env("HOME", &f.ws)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        let out = lines(&output);
        let text = serde_json::to_string(&out).unwrap();
        assert!(!text.contains("MARKER"), "{name}: {text}");
        out.last().unwrap().clone()
    };
    for path in [".ssh/id_ed25519", ".git-credentials"] {
        let result = tool("read_file", json!({"path": path}));
        assert_eq!(result["error"]["kind"], "forbidden", "{result:#}");
    }
    let result = tool("grep", json!({"pattern": "MARKER"}));
    assert_eq!(result["matches"], json!([]), "{result:#}");
    assert_eq!(result["hidden"], 2, "{result:#}");
    let result = tool("read_file", json!({"path": "notes.txt"}));
    assert!(result.to_string().contains("mine"), "{result:#}");
}
