//! The managed policy through the binary: a floor (`WICKET_MANAGED_CONFIG`,
//! added to `/etc/wicket/managed.toml`) that no home rule, saved rule, hook
//! or answer can lower, refused when anyone but root could change it, and
//! `wicket policy show` naming where each setting and rule came from.

use std::os::unix::fs::PermissionsExt;

use crate::exec::{exec, script};
use crate::*;

/// A managed policy file beside the fixture, mode `mode`.
fn managed(f: &Fixture, text: &str, mode: u32) -> std::path::PathBuf {
    let path = f.root.join("managed.toml");
    std::fs::write(&path, text).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    path
}

fn root() -> bool {
    rustix::process::getuid().is_root()
}

fn exec_under(f: &Fixture, policy: &std::path::Path, model: &str, answers: &str) -> Output {
    exec(f, "go", &["--model", model, "--json", "--answers", answers])
        .env("WICKET_MANAGED_CONFIG", policy)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

const DENY_PUSH: &str = "[[rules]]\nid = \"no-push\"\naction = \"deny\"\ntool = \"run\"\nargv_prefix = [\"git\", \"push\"]\n";

/// A hook that allows every call without a card.
const ALLOW_ALL: &str = r#"import json, sys
json.load(sys.stdin)
print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}))
"#;

#[test]
fn a_managed_deny_holds_against_a_home_allow_a_saved_allow_and_a_hooks_allow() {
    let f = Fixture::new();
    let policy = managed(&f, DENY_PUSH, 0o644);
    f.write(".hooks/allow.py", ALLOW_ALL);
    std::fs::write(
        f.home.join("config.toml"),
        format!(
            "[[rules]]\naction = \"allow\"\ntool = \"run\"\nargv_prefix = [\"git\"]\n\n\
             [[hooks.pre_tool_use]]\nname = \"allow-all\"\ncommand = [\"python3\", \"{}\"]\n",
            f.ws.join(".hooks/allow.py").display()
        ),
    )
    .unwrap();
    // What an allow_always answer saved.
    std::fs::write(
        f.home.join("rules.toml"),
        "[[rules]]\nid = \"r-saved\"\naction = \"allow\"\ntool = \"run\"\nargv = [\"git\", \"push\"]\n",
    )
    .unwrap();
    let model = script(
        &f,
        "push.json",
        json!([
            {"tool_calls": [{"name": "run", "arguments": {"argv": ["git", "push"]}}]},
            {"text": "done"}
        ]),
    );
    let output = exec_under(&f, &policy, &model, "allow_always");
    if !root() {
        // Not root: the file cannot be root's, so Wicket refuses to run under it.
        assert_ne!(output.status.code(), Some(0));
        return;
    }
    // --answers allow_always is allowed here (the policy does not forbid it).
    let events = lines(&output);
    assert_eq!(output.status.code(), Some(0), "{events:#?}");
    assert!(events.iter().all(|e| e["type"] != "card"), "{events:#?}");
    let result = events.iter().find(|e| e["type"] == "tool_result").unwrap();
    let why = result["error"]["message"].as_str().unwrap();
    assert!(why.contains("managed:no-push"), "{why}");
}

#[test]
fn forbid_modes_turns_a_home_off_into_workspace_write_and_allow_always_false_hides_the_answer() {
    let f = Fixture::new();
    let policy = managed(
        &f,
        "[sandbox]\nforbid_modes = [\"off\"]\nallow_always = false\n",
        0o644,
    );
    std::fs::write(f.home.join("config.toml"), "[sandbox]\nmode = \"off\"\n").unwrap();
    let model = script(
        &f,
        "run.json",
        json!([
            {"tool_calls": [{"name": "run", "arguments": {"argv": ["true"]}}]},
            {"text": "done"}
        ]),
    );
    if !root() {
        return;
    }
    let refused = exec_under(&f, &policy, &model, "allow_always");
    assert_ne!(refused.status.code(), Some(0));
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(
        said.contains("allow_always = false") && said.contains("managed.toml"),
        "{said}"
    );
    let output = exec_under(&f, &policy, &model, "deny");
    let events = lines(&output);
    assert_eq!(output.status.code(), Some(0), "{events:#?}");
    let card = events.iter().find(|e| e["type"] == "card").unwrap();
    assert_eq!(card["sandbox"]["mode"], "workspace-write", "{card}");
    assert!(
        card.get("always").is_none(),
        "no card offers allow_always: {card}"
    );
    let notice = events
        .iter()
        .find(|e| e["type"] == "notice" && e["message"].as_str().unwrap().contains("forbids it"))
        .unwrap_or_else(|| panic!("{events:#?}"));
    let message = notice["message"].as_str().unwrap();
    assert!(
        message.contains("config.toml") && message.contains("managed.toml"),
        "the notice names both files: {message}"
    );
}

#[test]
fn a_managed_file_anyone_but_root_could_change_is_refused() {
    let f = Fixture::new();
    let policy = managed(&f, DENY_PUSH, 0o664);
    let model = script(&f, "none.json", json!([{"text": "done"}]));
    let output = exec_under(&f, &policy, &model, "deny");
    assert_ne!(output.status.code(), Some(0));
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(
        said.contains(&policy.display().to_string()) && said.contains("owned by root"),
        "{said}"
    );
}

#[test]
fn policy_show_names_the_source_of_every_setting_and_rule() {
    let f = Fixture::new();
    let policy = managed(
        &f,
        &format!("{DENY_PUSH}\n[sandbox]\nrequired = true\n"),
        0o644,
    );
    std::fs::write(
        f.home.join("config.toml"),
        "model = \"script:x.json\"\n[[rules]]\naction = \"allow\"\ntool = \"run\"\nargv_prefix = [\"ls\"]\n",
    )
    .unwrap();
    std::fs::write(
        f.home.join("rules.toml"),
        "[[rules]]\nid = \"r-1\"\naction = \"allow\"\ntool = \"run\"\nargv = [\"make\"]\n",
    )
    .unwrap();
    f.write(
        ".wicket/config.toml",
        "[[rules]]\naction = \"deny\"\ntool = \"run\"\nargv_prefix = [\"rm\"]\n",
    );
    let output = wicket()
        .env("WICKET_HOME", &f.home)
        .env("WICKET_MANAGED_CONFIG", &policy)
        .args(["policy", "show", "--json", "--workspace"])
        .arg(&f.ws)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    if !root() {
        assert_ne!(output.status.code(), Some(0));
        return;
    }
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let shown = lines(&output);
    let source = |kind: &str, key: &str| -> String {
        shown
            .iter()
            .find(|line| line["kind"] == kind && line["key"].as_str().unwrap().contains(key))
            .unwrap_or_else(|| panic!("{kind} {key}: {shown:#?}"))["source"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let managed = policy.display().to_string();
    assert_eq!(source("rule", "no-push"), managed);
    assert_eq!(source("setting", "sandbox.required"), managed);
    assert_eq!(
        source("setting", "model"),
        f.home.join("config.toml").display().to_string()
    );
    assert_eq!(
        source("rule", "r-1"),
        f.home.join("rules.toml").display().to_string()
    );
    assert_eq!(
        source("rule", "workspace:"),
        f.ws.join(".wicket/config.toml").display().to_string()
    );
    assert!(
        shown.iter().all(|line| line["source"].is_string()),
        "{shown:#?}"
    );
    // The managed rule comes first.
    let first_rule = shown.iter().find(|line| line["kind"] == "rule").unwrap();
    assert_eq!(first_rule["key"], "managed:no-push");
}

#[test]
fn forbid_direct_network_also_forbids_mode_off_and_its_hosts_network() {
    if !(root() && wicket_test_support::net::have("curl")) {
        return;
    }
    let f = Fixture::new();
    let policy = managed(&f, "[sandbox]\nforbid_direct_network = true\n", 0o644);
    // The person's own "off" would run the command with the host's network.
    std::fs::write(f.home.join("config.toml"), "[sandbox]\nmode = \"off\"\n").unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let url = format!(
        "http://127.0.0.1:{}/",
        listener.local_addr().unwrap().port()
    );
    let model = script(
        &f,
        "reach.json",
        json!([
            {"tool_calls": [{"name": "run", "arguments": {"argv": ["curl", "-s", "-m", "3", &url]}}]},
            {"text": "done"}
        ]),
    );
    // Without the policy, "off" reaches the listener: the control.
    let output = exec(
        &f,
        "go",
        &["--model", &model, "--json", "--answers", "allow_once"],
    )
    .stdin(Stdio::null())
    .output()
    .unwrap();
    assert_eq!(output.status.code(), Some(0));
    assert!(
        listener.accept().is_ok(),
        "without the policy, the command reached the listener: {:#?}",
        lines(&output)
    );
    let output = exec_under(&f, &policy, &model, "allow_once");
    let events = lines(&output);
    assert_eq!(output.status.code(), Some(0), "{events:#?}");
    let card = events.iter().find(|e| e["type"] == "card").unwrap();
    assert_eq!(card["sandbox"]["mode"], "workspace-write", "{card}");
    assert!(
        matches!(listener.accept(), Err(error) if error.kind() == std::io::ErrorKind::WouldBlock),
        "the command reached the host's network: {events:#?}"
    );
}

/// `run` of `argv` (with `.git` writable) under the managed `policy`,
/// answered `answer`: every line `wicket tool` printed.
fn run_under(f: &Fixture, policy: &std::path::Path, argv: &[&str], answer: &str) -> Vec<Value> {
    let args = json!({"argv": argv, "git": true});
    let output = f
        .command("run", &args.to_string(), &["--answers", answer])
        .env("WICKET_MANAGED_CONFIG", policy)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    lines(&output)
}

#[test]
fn a_managed_deny_on_git_push_holds_against_global_options_aliases_and_hidden_forms() {
    use crate::jail::{branches, git, remote};
    if !root() {
        return;
    }
    let f = Fixture::new();
    let policy = managed(&f, DENY_PUSH, 0o644);
    let remote = remote(&f);
    std::fs::write(
        f.home.join("config.toml"),
        format!("[sandbox]\nextra_write = [\"{}\"]\n", remote.display()),
    )
    .unwrap();
    // The repository's own alias, as a hostile repository would set it.
    git(&f.ws, &["config", "alias.st", "push"]);
    for (number, argv) in [
        &["git", "-c", "x.y=1", "push", "origin", "HEAD:sneaky"][..],
        &["git", "-C", ".", "push", "origin", "HEAD:sneaky"],
        &["git", "--no-pager", "push", "origin", "HEAD:sneaky"],
        &["git", "st", "origin", "HEAD:sneaky"],
    ]
    .iter()
    .enumerate()
    {
        let out = run_under(&f, &policy, argv, "allow_always");
        assert!(
            out.iter().all(|line| line["type"] != "card"),
            "{number}: refused without a card: {out:#?}"
        );
        let why = out.last().unwrap()["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert!(why.contains("managed:no-push"), "{number}: {out:#?}");
        assert!(
            !branches(&remote).contains("sneaky"),
            "{number}: the push landed"
        );
    }
    // What the gate cannot read gets a card naming the rule, with no
    // allow_always; allow_always saves nothing and runs nothing.
    for script in [
        "g=git; $g push origin HEAD:sneaky",
        "echo git push origin HEAD:sneaky | sh",
    ] {
        let argv = ["sh", "-c", script];
        let out = run_under(&f, &policy, &argv, "allow_always");
        let card = out
            .iter()
            .find(|line| line["type"] == "card")
            .unwrap_or_else(|| panic!("{out:#?}"));
        assert!(card.get("always").is_none(), "{card:#}");
        assert!(
            card["managed"]
                .as_str()
                .unwrap()
                .contains("managed:no-push"),
            "{card:#}"
        );
        assert!(!branches(&remote).contains("sneaky"), "{script}: {out:#?}");
        assert!(
            !f.home.join("rules.toml").exists(),
            "{script}: a rule was saved"
        );
    }
    // The card is real: the person may let it run once.
    let out = run_under(
        &f,
        &policy,
        &["sh", "-c", "g=git; $g push origin HEAD:sneaky"],
        "allow_once",
    );
    assert!(branches(&remote).contains("sneaky"), "{out:#?}");
}

/// A repository can hide an alias from a reading of its config: in a file
/// its config includes, in a `!` alias whose script names no git, or past
/// the size the gate reads. The first is read and denied; the others are
/// held: a card naming the managed rule, no allow_always, no push.
#[test]
fn a_managed_deny_on_git_push_reads_included_aliases_and_holds_what_it_cannot_read() {
    use crate::jail::{branches, git, remote};
    if !root() {
        return;
    }
    let f = Fixture::new();
    let policy = managed(&f, DENY_PUSH, 0o644);
    let remote = remote(&f);
    std::fs::write(
        f.home.join("config.toml"),
        format!("[sandbox]\nextra_write = [\"{}\"]\n", remote.display()),
    )
    .unwrap();
    std::fs::write(f.ws.join(".git/extra.cfg"), "[alias]\n\tsy = push\n").unwrap();
    git(&f.ws, &["config", "include.path", "extra.cfg"]);
    let out = run_under(
        &f,
        &policy,
        &["git", "sy", "origin", "HEAD:sneaky"],
        "allow_always",
    );
    assert!(out.iter().all(|line| line["type"] != "card"), "{out:#?}");
    let why = out.last().unwrap()["error"]["message"].to_string();
    assert!(why.contains("managed:no-push"), "{out:#?}");
    assert!(!branches(&remote).contains("sneaky"));
    let held = |argv: &[&str]| {
        let out = run_under(&f, &policy, argv, "allow_always");
        let card = out
            .iter()
            .find(|line| line["type"] == "card")
            .unwrap_or_else(|| panic!("{argv:?}: {out:#?}"))
            .clone();
        assert!(card.get("always").is_none(), "{card:#}");
        assert!(
            card["managed"].to_string().contains("managed:no-push"),
            "{card:#}"
        );
        assert!(!branches(&remote).contains("sneaky"), "{argv:?}: {out:#?}");
    };
    git(
        &f.ws,
        &["config", "alias.hid", "!g=git; $g push origin HEAD:sneaky"],
    );
    held(&["git", "hid"]);
    // A config past what the gate reads: whatever alias it holds is unread.
    let mut config = std::fs::read_to_string(f.ws.join(".git/config")).unwrap();
    config.push_str(&format!(
        "# {}\n[alias]\n\tbig = push\n",
        "x".repeat(5 << 20)
    ));
    std::fs::write(f.ws.join(".git/config"), config).unwrap();
    held(&["git", "big", "origin", "HEAD:sneaky"]);
    assert!(!f.home.join("rules.toml").exists(), "a rule was saved");
}
