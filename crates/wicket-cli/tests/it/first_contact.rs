//! A person's real setup, the first time: `wicket import` on a fresh
//! install writes only what its loader takes and lists every key it read;
//! an unset variable fails its server alone; Claude Code's `:*` keeps its
//! meaning; `@../` imports inside the workspace are read; and the readers
//! the fuzz campaign hung or slowed (a FIFO for a home file, thousands of
//! missing imports, a sparse log) answer at once.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::exec::{exec, script};
use crate::*;

/// Runs `command` to its end, killing it (and failing) if it is still
/// running after 60 s: a reader that waits on a FIFO must not hang the suite.
fn finishes(command: &mut Command) -> Output {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            child.kill().unwrap();
            let output = child.wait_with_output().unwrap();
            panic!("{command:?} did not finish: {output:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// `wicket import FROM` with `home` as `$WICKET_HOME` and `user` as `$HOME`.
fn import(f: &Fixture, home: &Path, user: &Path, args: &[&str]) -> Command {
    let mut command = wicket();
    command
        .env("WICKET_HOME", home)
        .env("HOME", user)
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("CODEX_HOME")
        .env_remove("WICKET_TEST_SENTRY_UNSET")
        .arg("import")
        .args(args)
        .arg("--workspace")
        .arg(&f.ws);
    command
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A person's Claude Code home with a bit of everything import meets,
/// among it what its loader would refuse.
fn claude_home(f: &Fixture) -> PathBuf {
    let user = f.root.join("person");
    let nested = format!("{}Bash{}", "(".repeat(250), ")".repeat(250));
    write(
        &user.join(".claude/settings.json"),
        &serde_json::to_string_pretty(&json!({
            "permissions": {
                "allow": ["Bash(npm run test:*)"],
                "deny": ["Bash(rm -rf:*)"],
                "defaultMode": "acceptEdits",
                "additionalDirectories": ["/opt/shared-docs"]
            },
            "env": {"": "nameless", "GOOD_NAME": "1"},
            "hooks": {"PreToolUse": [
                {"matcher": nested, "hooks": [{"type": "command", "command": "true"}]},
                {"matcher": "Bash", "hooks": [{"type": "command", "command": "true", "timeout": 18446744073709551615u64}]}
            ]},
            "model": "claude-sonnet-4-5",
            "statusLine": {"type": "command", "command": "echo hi"}
        }))
        .unwrap(),
    );
    let long = "a".repeat(33);
    write(
        &user.join(".claude.json"),
        &serde_json::to_string_pretty(&json!({
            "numStartups": 12,
            "mcpServers": {
                "my.server": {"command": "node", "args": ["x.js"]},
                "a__b": {"command": "node", "args": ["x.js"]},
                "": {"command": "node", "args": ["x.js"]},
                long: {"command": "node", "args": ["x.js"]},
                "github": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"]},
                "sentry": {"type": "http", "url": "http://127.0.0.1:9/mcp",
                           "headers": {"Authorization": "Bearer ${WICKET_TEST_SENTRY_UNSET}"}}
            },
            "projects": {
                f.ws.display().to_string(): {"mcpServers": {"local": {"command": "node", "args": ["local.js"]}}},
                "/somewhere/else": {"mcpServers": {"far": {"command": "node", "args": ["far.js"]}}}
            }
        }))
        .unwrap(),
    );
    user
}

#[test]
fn import_on_a_fresh_install_makes_the_home_and_writes_only_what_its_loader_takes() {
    use std::os::unix::fs::PermissionsExt;
    let f = Fixture::new();
    let user = claude_home(&f);
    let home = f.root.join("fresh/wicket");
    let dry = finishes(&mut import(&f, &home, &user, &["claude-code", "--dry-run"]));
    assert_eq!(dry.status.code(), Some(0), "{dry:?}");
    assert!(!home.exists(), "a dry run makes nothing");

    let output = finishes(&mut import(&f, &home, &user, &["claude-code"]));
    let table = stdout(&output);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{table}\n{}",
        stderr(&output)
    );
    let mode = std::fs::metadata(&home).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700);
    let rules = std::fs::read_to_string(home.join("rules.toml")).unwrap();
    assert!(
        rules.contains("command_prefix = \"npm run test\""),
        "{rules}"
    );
    assert!(rules.contains("command_prefix = \"rm -rf\""), "{rules}");
    assert!(rules.contains("path = \"/opt/shared-docs/**\""), "{rules}");
    let config = std::fs::read_to_string(home.join("config.toml")).unwrap();
    for written in [
        "[mcp_servers.github]",
        "network = true",
        "[mcp_servers.sentry]",
        "[mcp_servers.local]",
        "model = \"anthropic:claude-sonnet-4-5\"",
        "\"GOOD_NAME\"",
    ] {
        assert!(config.contains(written), "{written}: {config}");
    }
    for left in [
        "my.server",
        "a__b",
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        "far.js",
        "\"\"",
        "(((",
    ] {
        assert!(!config.contains(left), "{left} is not written: {config}");
    }
    // Each key read is a row, carried or left with why.
    for row in [
        "defaultMode: acceptEdits",
        "statusLine",
        "/opt/shared-docs",
        "model: claude-sonnet-4-5",
        "numStartups",
        "far",
        "not a number of seconds",
        "fetches what it runs first",
        "Wicket has no servers for one workspace",
    ] {
        assert!(table.contains(row), "{row}: {table}");
    }
    let refused = table
        .lines()
        .filter(|line| line.contains("not carried over: Wicket's loader refuses it"))
        .count();
    // Four server names, the nameless env name, the nested matcher.
    assert_eq!(refused, 6, "{table}");

    // What was written loads: every command starts, with the server whose
    // variable is unset failing alone.
    for args in [&["grants"][..], &["policy", "show"]] {
        let output = finishes(
            wicket()
                .env("WICKET_HOME", &home)
                .env_remove("WICKET_TEST_SENTRY_UNSET")
                .args(args)
                .current_dir(&f.ws),
        );
        assert_eq!(output.status.code(), Some(0), "{args:?}: {output:?}");
    }
}

#[test]
fn an_unset_header_variable_fails_its_server_alone() {
    let f = Fixture::new();
    std::fs::write(
        f.home.join("config.toml"),
        "[mcp_servers.sentry]\nurl = \"http://127.0.0.1:9/mcp\"\n\
         headers = { Authorization = \"Bearer ${WICKET_TEST_SENTRY_UNSET}\" }\n",
    )
    .unwrap();
    for args in [&["grants"][..], &["policy", "show"]] {
        let output = finishes(
            wicket()
                .env("WICKET_HOME", &f.home)
                .env_remove("WICKET_TEST_SENTRY_UNSET")
                .args(args)
                .current_dir(&f.ws),
        );
        assert_eq!(output.status.code(), Some(0), "{args:?}: {output:?}");
    }
    let model = script(&f, "text.json", json!([{"text": "done"}]));
    let output = finishes(
        exec(
            &f,
            "go",
            &["--model", &model, "--json", "--answers", "deny"],
        )
        .env_remove("WICKET_TEST_SENTRY_UNSET"),
    );
    let events = lines(&output);
    assert_eq!(output.status.code(), Some(0), "{events:#?}");
    assert_eq!(ending(&events)["type"], "result", "{events:#?}");
    assert!(
        events.iter().any(|event| event["type"] == "notice"
            && event["key"] == "[mcp_servers.sentry]"
            && event["message"]
                .as_str()
                .is_some_and(|message| message.contains("WICKET_TEST_SENTRY_UNSET"))),
        "{events:#?}"
    );
    let failed = events
        .iter()
        .find(|event| event["type"] == "mcp" && event["server"] == "sentry")
        .unwrap_or_else(|| panic!("{events:#?}"));
    assert_eq!(failed["state"], "failed", "{failed}");
}

#[test]
fn npm_run_test_unit_goes_under_the_imported_allow_and_rm_rf_v_is_denied() {
    let f = Fixture::new();
    let user = f.root.join("person");
    write(
        &user.join(".claude/settings.json"),
        r#"{"permissions": {"allow": ["Bash(npm run test:*)"], "deny": ["Bash(rm -rf:*)"]}}"#,
    );
    let output = finishes(&mut import(&f, &f.home, &user, &["claude-code"]));
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    f.write("doomed/file", "x\n");
    let model = script(
        &f,
        "npm.json",
        json!([
            {"tool_calls": [{"name": "run", "arguments": {"argv": ["npm", "run", "test:unit"]}}]},
            {"tool_calls": [{"name": "run", "arguments": {"argv": ["rm", "-rfv", "doomed"]}}]},
            {"tool_calls": [{"name": "run", "arguments": {"argv": ["npm", "run", "build"]}}]},
            {"text": "done"}
        ]),
    );
    let output = finishes(&mut exec(
        &f,
        "go",
        &["--model", &model, "--json", "--answers", "deny"],
    ));
    let events = lines(&output);
    assert_eq!(output.status.code(), Some(0), "{events:#?}");
    let calls: Vec<&Value> = events.iter().filter(|e| e["type"] == "tool_call").collect();
    assert!(
        calls[0]["allowed_by"]["rule"]
            .as_str()
            .is_some_and(|id| id.starts_with("imp-")),
        "npm run test:unit goes without a card: {:#?}",
        calls[0]
    );
    let cards: Vec<&Value> = events.iter().filter(|e| e["type"] == "card").collect();
    assert_eq!(cards.len(), 1, "only npm run build asks: {cards:#?}");
    assert_eq!(cards[0]["argv"], json!(["npm", "run", "build"]));
    let results: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "tool_result")
        .collect();
    let denied = results[1]["error"]["message"].as_str().unwrap_or_default();
    assert!(denied.contains("A rule of the person's (imp-"), "{denied}");
    assert!(f.ws.join("doomed/file").exists(), "rm -rfv never ran");
}

#[test]
fn a_parent_import_inside_the_workspace_reaches_the_model_and_one_outside_does_not() {
    use wicket_fake::{FakeReply, FakeServer, Step, Wire};
    let f = Fixture::new();
    f.write("CLAUDE.md", "Read @docs/guides/style.md first.\n");
    f.write(
        "docs/guides/style.md",
        "Style: see @../conventions.md and @../../../secret.md\n",
    );
    f.write("docs/conventions.md", "MARKER-CONVENTIONS-59\n");
    write(&f.root.join("secret.md"), "MARKER-OUTSIDE-59\n");
    let fake = FakeServer::start(Wire::OpenAi);
    fake.push(Step::Reply(FakeReply::text("done")));
    let output = finishes(
        exec(
            &f,
            "go",
            &["--model", "openai:gpt-test", "--json", "--answers", "deny"],
        )
        .env("OPENAI_BASE_URL", fake.base_url())
        .env("OPENAI_API_KEY", "test-key"),
    );
    let events = lines(&output);
    assert_eq!(output.status.code(), Some(0), "{events:#?}");
    let request = fake
        .requests()
        .into_iter()
        .find(|request| request.method == "POST")
        .unwrap()
        .body
        .to_string();
    assert!(request.contains("MARKER-CONVENTIONS-59"), "{request}");
    assert!(!request.contains("MARKER-OUTSIDE-59"), "{request}");
    assert!(
        events.iter().any(|event| event["type"] == "error"
            && event["message"].as_str().is_some_and(|message| message
                .contains("@../../../secret.md (imported by docs/guides/style.md) was not read"))),
        "{events:#?}"
    );
}

#[test]
fn thousands_of_missing_imports_are_one_error_with_a_count() {
    let f = Fixture::new();
    let names: String = (0..3000).map(|n| format!("@missing/{n}.md\n")).collect();
    f.write("CLAUDE.md", &names);
    let model = script(&f, "text.json", json!([{"text": "done"}]));
    let output = finishes(&mut exec(
        &f,
        "go",
        &["--model", &model, "--json", "--answers", "deny"],
    ));
    let events = lines(&output);
    assert_eq!(output.status.code(), Some(0));
    let errors: Vec<&Value> = events.iter().filter(|e| e["type"] == "error").collect();
    assert_eq!(errors.len(), 1, "{errors:#?}");
    let message = errors[0]["message"].as_str().unwrap();
    assert!(
        message.starts_with("3000 instruction files were not read: missing/0.md was not read")
            && message.ends_with("and 2995 more"),
        "{message}"
    );
}

fn make_fifo(path: &Path) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        path,
        rustix::fs::Mode::from_raw_mode(0o600),
    )
    .unwrap();
}

#[test]
fn a_fifo_in_place_of_a_home_file_is_refused_and_named_not_waited_on() {
    for name in ["rules.toml", "config.toml"] {
        let f = Fixture::new();
        make_fifo(&f.home.join(name));
        let policy = finishes(
            wicket()
                .env("WICKET_HOME", &f.home)
                .args(["policy", "show", "--workspace"])
                .arg(&f.ws),
        );
        assert_ne!(policy.status.code(), Some(0), "{name}: {policy:?}");
        let said = stderr(&policy);
        assert!(
            said.contains(name) && said.contains("not a regular file"),
            "{name}: {said}"
        );
        let tool = finishes(
            wicket()
                .env("WICKET_HOME", &f.home)
                .args(["tool", "run", r#"{"argv": ["true"]}"#, "--workspace"])
                .arg(&f.ws),
        );
        assert_ne!(tool.status.code(), Some(0), "{name}: {tool:?}");
        let said = format!("{}{}", stdout(&tool), stderr(&tool));
        assert!(said.contains(name), "{name}: {said}");
    }
    let f = Fixture::new();
    make_fifo(&f.home.join("rules.toml"));
    let user = f.root.join("person");
    write(
        &user.join(".claude/settings.json"),
        r#"{"permissions": {"allow": ["Bash(ls:*)"]}}"#,
    );
    let dry = finishes(&mut import(
        &f,
        &f.home,
        &user,
        &["claude-code", "--dry-run"],
    ));
    assert_ne!(dry.status.code(), Some(0), "{dry:?}");
    assert!(stderr(&dry).contains("rules.toml"), "{dry:?}");
    // The managed policy too.
    let f = Fixture::new();
    let managed = f.root.join("managed.toml");
    make_fifo(&managed);
    let policy = finishes(
        wicket()
            .env("WICKET_HOME", &f.home)
            .env("WICKET_MANAGED_CONFIG", &managed)
            .args(["policy", "show", "--workspace"])
            .arg(&f.ws),
    );
    assert_ne!(policy.status.code(), Some(0), "{policy:?}");
    assert!(stderr(&policy).contains("managed.toml"), "{policy:?}");
}

#[test]
fn a_log_with_a_sparse_tail_is_read_to_its_hole() {
    let f = Fixture::new();
    let model = script(&f, "text.json", json!([{"text": "done"}]));
    let output = finishes(&mut exec(
        &f,
        "go",
        &["--model", &model, "--json", "--answers", "deny"],
    ));
    let events = lines(&output);
    assert_eq!(output.status.code(), Some(0));
    let id = events[0]["session"].as_str().unwrap().to_string();
    let log = f.home.join("sessions").join(&id).join("log.jsonl");
    let written = std::fs::metadata(&log).unwrap().len();
    // 64 GiB never written: read through, it took minutes.
    std::fs::OpenOptions::new()
        .write(true)
        .open(&log)
        .unwrap()
        .set_len(64 << 30)
        .unwrap();
    let shown = finishes(
        wicket()
            .env("WICKET_HOME", &f.home)
            .args(["log", "--json", &id]),
    );
    assert_eq!(shown.status.code(), Some(0), "{shown:?}");
    assert_eq!(lines(&shown).len(), events.len(), "{shown:?}");
    assert!(stderr(&shown).contains("ends in a hole"), "{shown:?}");
    assert_eq!(
        std::fs::metadata(&log).unwrap().len(),
        64 << 30,
        "log only reads"
    );
    assert!(written < 64 << 30);
}

#[test]
fn import_codex_on_a_fresh_install_makes_the_home_and_lists_every_key() {
    let f = Fixture::new();
    let user = f.root.join("person");
    write(
        &user.join(".codex/config.toml"),
        "model = \"gpt-5-codex\"\napproval_policy = \"on-request\"\n\n\
         [mcp_servers.github]\ncommand = \"npx\"\nargs = [\"-y\", \"@modelcontextprotocol/server-github\"]\n\
         env_vars = [\"GITHUB_TOKEN\"]\n\n\
         [mcp_servers.\"my.server\"]\ncommand = \"node\"\n",
    );
    write(
        &user.join(".codex/rules/default.rules"),
        "prefix_rule(pattern = [\"git\", \"status\"], decision = \"allow\")\n",
    );
    let home = f.root.join("fresh/wicket");
    let output = finishes(&mut import(&f, &home, &user, &["codex"]));
    let table = stdout(&output);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{table}\n{}",
        stderr(&output)
    );
    assert!(home.join("rules.toml").exists() && home.join("config.toml").exists());
    let config = std::fs::read_to_string(home.join("config.toml")).unwrap();
    assert!(
        config.contains("[mcp_servers.github]") && config.contains("network = true"),
        "{config}"
    );
    assert!(
        config.contains("model = \"openai:gpt-5-codex\""),
        "{config}"
    );
    assert!(!config.contains("my.server"), "{config}");
    for row in [
        "approval_policy",
        "github.env_vars",
        "my.server",
        "loader refuses it",
    ] {
        assert!(table.contains(row), "{row}: {table}");
    }
    let shown = finishes(
        wicket()
            .env("WICKET_HOME", &home)
            .args(["policy", "show", "--workspace"])
            .arg(&f.ws),
    );
    assert_eq!(shown.status.code(), Some(0), "{shown:?}");
}
