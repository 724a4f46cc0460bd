//! Your setup comes with you: a repository's own Claude Code settings read
//! as repository config (its denies hold, its allows do not), and `wicket
//! import` of a person's Claude Code and Codex settings.

use crate::exec::{exec, script};
use crate::*;

#[test]
fn a_repositorys_claude_settings_deny_holds_and_its_allow_does_not() {
    let f = Fixture::new();
    f.write(
        ".claude/settings.json",
        r#"{
  "permissions": {
    "allow": ["Bash(touch allowed)", "Edit(**)"],
    "ask": ["Bash(git push)"],
    "deny": ["Bash(touch denied)", "Read(./.env)"]
  },
  "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "true"}]}]}
}"#,
    );
    let model = script(
        &f,
        "repo.json",
        json!([
            {"tool_calls": [{"name": "run", "arguments": {"argv": ["touch", "denied"]}}]},
            {"tool_calls": [{"name": "run", "arguments": {"argv": ["touch", "allowed"]}}]},
            {"text": "done"}
        ]),
    );
    let output = exec(
        &f,
        "go",
        &["--model", &model, "--json", "--answers", "deny"],
    )
    .stdin(Stdio::null())
    .output()
    .unwrap();
    let events = lines(&output);
    assert_eq!(output.status.code(), Some(0), "{events:#?}");
    let results: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "tool_result")
        .collect();
    let denied = results[0]["error"]["message"].as_str().unwrap();
    assert!(denied.contains("rule of the person's"), "{denied}");
    let cards: Vec<&Value> = events.iter().filter(|e| e["type"] == "card").collect();
    assert_eq!(
        cards.len(),
        1,
        "the repository's allow lets nothing skip its card: {cards:#?}"
    );
    assert_eq!(cards[0]["argv"], json!(["touch", "allowed"]));
    let notices: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "notice")
        .filter_map(|e| e["message"].as_str())
        .collect();
    assert!(
        notices
            .iter()
            .any(|n| n.contains("ignored its 2 permissions.allow rule(s)")),
        "{notices:#?}"
    );
    assert!(
        notices.iter().any(|n| n.contains("ignored its hooks")),
        "{notices:#?}"
    );
    assert!(
        notices.iter().any(|n| n.contains("Read(./.env)")
            && n.contains("does not gate reads inside the workspace")),
        "{notices:#?}"
    );
    assert!(!f.ws.join("denied").exists() && !f.ws.join("allowed").exists());
}

fn fixtures() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/import")
}

/// The MCP test server's entry point (installed by scripts/test.sh).
fn everything() -> String {
    let index = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/mcp/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(
        index.exists(),
        "the MCP test servers are not installed: run `npm ci` in tests/mcp"
    );
    index.canonicalize().unwrap().display().to_string()
}

/// A person's home holding the fixtures where each tool keeps them.
fn person(f: &Fixture) -> std::path::PathBuf {
    let user = f.root.join("user");
    let copy = |from: &str, to: &str| {
        let text = std::fs::read_to_string(fixtures().join(from))
            .unwrap()
            .replace("@EVERYTHING@", &everything());
        let to = user.join(to);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::write(to, text).unwrap();
    };
    copy("claude/settings.json", ".claude/settings.json");
    copy("claude/claude.json", ".claude.json");
    copy("codex/config.toml", ".codex/config.toml");
    copy("codex/rules/default.rules", ".codex/rules/default.rules");
    user
}

fn import(f: &Fixture, user: &std::path::Path, args: &[&str]) -> String {
    let output = wicket()
        .env("WICKET_HOME", &f.home)
        .env("HOME", user)
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("CODEX_HOME")
        .arg("import")
        .args(args)
        .arg("--workspace")
        .arg(&f.ws)
        .succeeds();
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn an_imported_claude_code_setup_allows_asks_and_denies_as_it_did() {
    let f = Fixture::new();
    let user = person(&f);
    // The person's own config, which the import keeps: the MCP test
    // servers' folder shown to the jail (a clone may live under /tmp).
    let servers = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/mcp")
        .canonicalize()
        .unwrap();
    std::fs::write(
        f.home.join("config.toml"),
        format!(
            "# my own settings\n[sandbox]\nextra_read = [{:?}]\n",
            servers.display().to_string()
        ),
    )
    .unwrap();
    let dry = import(&f, &user, &["claude-code", "--dry-run"]);
    assert!(dry.contains("dry run: nothing was written"), "{dry}");
    assert!(
        !f.home.join("rules.toml").exists(),
        "a dry run writes nothing"
    );
    let table = import(&f, &user, &["claude-code"]);
    for said in [
        "Bash(npm run test:*)",
        "allow command_prefix \"npm run test\"",
        "ask command_prefix \"git push\"",
        "deny argv [\"cat\", \".env\"]",
        "read_outside path \"/**/.env\"",
        "WebSearch has no counterpart",
        "a pattern with a leading wildcard cannot be an argv prefix; kept as a card",
        "the PreCompact event has no counterpart",
        "[[hooks.pre_tool_use]]",
        "[mcp_servers.everything]",
        "env_pass \"NODE_ENV\"",
    ] {
        assert!(table.contains(said), "{said}: {table}");
    }
    let rules = std::fs::read_to_string(f.home.join("rules.toml")).unwrap();
    assert!(
        rules.contains(
            "# imported from ~/.claude/settings.json permissions.allow: Bash(npm run test:*)"
        ),
        "{rules}"
    );
    let config = std::fs::read_to_string(f.home.join("config.toml")).unwrap();
    assert!(
        config.starts_with("# my own settings\n[sandbox]\nextra_read"),
        "{config}"
    );
    // Twice is once.
    let again = import(&f, &user, &["claude-code"]);
    assert!(
        again.contains("(already imported)") && again.contains("(already there)"),
        "{again}"
    );
    assert_eq!(
        std::fs::read_to_string(f.home.join("rules.toml")).unwrap(),
        rules
    );
    assert_eq!(
        std::fs::read_to_string(f.home.join("config.toml")).unwrap(),
        config
    );

    // npm run test goes without a card, git push asks, cat .env is denied;
    // the imported hook ran before each command.
    let model = script(
        &f,
        "imported.json",
        json!([
            {"tool_calls": [{"name": "run", "arguments": {"argv": ["npm", "run", "test"]}}]},
            {"tool_calls": [{"name": "run", "arguments": {"argv": ["git", "push"]}}]},
            {"tool_calls": [{"name": "run", "arguments": {"argv": ["cat", ".env"]}}]},
            {"text": "done"}
        ]),
    );
    let output = exec(
        &f,
        "go",
        &["--model", &model, "--json", "--answers", "deny"],
    )
    .stdin(Stdio::null())
    .output()
    .unwrap();
    let events = lines(&output);
    let calls: Vec<&Value> = events.iter().filter(|e| e["type"] == "tool_call").collect();
    assert!(
        calls[0]["allowed_by"]["rule"]
            .as_str()
            .unwrap()
            .starts_with("imp-"),
        "{:#?}",
        calls[0]
    );
    let cards: Vec<&Value> = events.iter().filter(|e| e["type"] == "card").collect();
    assert_eq!(cards.len(), 1, "{cards:#?}");
    assert_eq!(cards[0]["argv"], json!(["git", "push"]));
    let results: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "tool_result")
        .collect();
    let denied = results[2]["error"]["message"].as_str().unwrap();
    assert!(denied.contains("A rule of the person's (imp-"), "{denied}");
    let hooks: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "hook" && e["event"] == "PreToolUse")
        .collect();
    assert_eq!(
        hooks.len(),
        3,
        "the imported hook runs before each command: {hooks:#?}"
    );
    assert!(f.ws.join("hook-ran").exists(), "the hook's command ran");

    // The imported MCP server starts and lists its tools.
    let listed = wicket()
        .env("WICKET_HOME", &f.home)
        .args(["mcp", "list", "--json", "--workspace"])
        .arg(&f.ws)
        .succeeds();
    // (an unlisted server would have made it exit 1)
    let listed = lines(&listed);
    let server = listed
        .iter()
        .find(|line| line["type"] == "server" && line["name"] == "everything")
        .unwrap_or_else(|| panic!("{listed:#?}"));
    assert_eq!(server["state"], "started", "{server}");
}

#[test]
fn an_imported_codex_setup_keeps_its_prefix_rules_and_servers() {
    let f = Fixture::new();
    let user = person(&f);
    let table = import(&f, &user, &["codex"]);
    for said in [
        "allow argv_prefix [\"npm\", \"test\"]",
        "allow argv_prefix [\"npm\", \"run\"]",
        "ask argv_prefix [\"git\", \"push\"]",
        "deny argv_prefix [\"rm\", \"-rf\"]",
        "[mcp_servers.docs]",
        "[mcp_servers.remote]",
    ] {
        assert!(table.contains(said), "{said}: {table}");
    }
    let config = std::fs::read_to_string(f.home.join("config.toml")).unwrap();
    assert!(
        config.contains("Authorization = \"Bearer ${EXAMPLE_TOKEN}\""),
        "{config}"
    );
    assert!(
        config.contains("# imported from ~/.codex/config.toml mcp_servers"),
        "{config}"
    );
    let again = import(&f, &user, &["codex"]);
    assert!(
        !again.contains("rule imp-") || again.contains("(already imported)"),
        "{again}"
    );
    assert_eq!(
        std::fs::read_to_string(f.home.join("config.toml")).unwrap(),
        config
    );
}

/// A person's Codex home, made here: alternatives in a forbidden, an allow
/// and a prompt rule, a rule with no decision, a server whose tools are
/// filtered, and a disabled one. Each server touches a marker in the
/// folder it starts in (the workspace) before it becomes the MCP test
/// server, so a start shows on disk.
fn codex_person(f: &Fixture) -> std::path::PathBuf {
    let user = f.root.join("codex-user");
    let codex = user.join(".codex");
    std::fs::create_dir_all(codex.join("rules")).unwrap();
    std::fs::write(
        codex.join("rules/default.rules"),
        r#"
prefix_rule(pattern = ["rm", ["-rf", "-fr"]], decision = "forbidden")
prefix_rule(pattern = ["touch", ["one", "two"]], decision = "allow")
prefix_rule(pattern = ["touch", ["one", "two"], ["asked-a", "asked-b"]], decision = "prompt")
prefix_rule(pattern = ["mkdir", ["d1", "d2"]])
"#,
    )
    .unwrap();
    let server = |marker: &str| {
        format!(
            "command = \"sh\"\nargs = [\"-c\", {:?}]\n",
            format!("touch {marker}; exec node {} stdio", everything())
        )
    };
    std::fs::write(
        codex.join("config.toml"),
        format!(
            "model = \"gpt-5-codex\"\n\n[mcp_servers.notes]\n{}\
             enabled_tools = [\"echo\", \"get-sum\"]\ndisabled_tools = [\"get-sum\"]\n\
             startup_timeout_sec = 20\ntool_timeout_sec = 30.5\n\n[mcp_servers.off]\n{}enabled = false\n",
            server("notes-started"),
            server("off-started"),
        ),
    )
    .unwrap();
    user
}

/// The rule ids a table names (`rule imp-…: …`), in its order.
fn rule_ids(table: &str) -> Vec<String> {
    table
        .split("rule ")
        .skip(1)
        .filter_map(|rest| rest.split(':').next())
        .filter(|id| id.starts_with("imp-"))
        .map(str::to_string)
        .collect()
}

#[test]
fn every_alternative_of_an_imported_codex_rule_holds_and_a_disabled_server_stays_off() {
    use wicket_fake::{FakeReply, FakeServer, Step, Wire};
    let f = Fixture::new();
    let user = codex_person(&f);
    // The person's own config: the test servers' folder shown to the jail.
    let servers = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/mcp")
        .canonicalize()
        .unwrap();
    std::fs::write(
        f.home.join("config.toml"),
        format!(
            "[sandbox]\nextra_read = [{:?}]\n\n[models.\"openai:gpt-test\"]\ncontext_window = 1000000\n",
            servers.display().to_string()
        ),
    )
    .unwrap();

    // The dry run lists the rules the import writes, one for one.
    let dry = import(&f, &user, &["codex", "--dry-run"]);
    let table = import(&f, &user, &["codex"]);
    let listed = rule_ids(&dry);
    assert_eq!(listed.len(), 2 + 2 + 4 + 2, "{dry}");
    assert_eq!(listed, rule_ids(&table), "{dry}\n{table}");
    let saved: toml::Table =
        toml::from_str(&std::fs::read_to_string(f.home.join("rules.toml")).unwrap()).unwrap();
    let written: Vec<String> = saved["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|rule| rule["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(written, listed, "{table}");
    assert!(
        !table.contains("already imported"),
        "no alternative shares an id: {table}"
    );
    for said in [
        "deny argv_prefix [\"rm\", \"-fr\"]",
        "allow argv_prefix [\"mkdir\", \"d2\"]",
        "ask argv_prefix [\"touch\", \"two\", \"asked-b\"]",
        "(disabled, as it was",
    ] {
        assert!(table.contains(said), "{said}: {table}");
    }

    // A turn that tries every alternative, every card answered allow_once.
    std::fs::create_dir_all(f.ws.join("junk-rf")).unwrap();
    std::fs::write(f.ws.join("junk-rf/keep"), "kept").unwrap();
    std::fs::create_dir_all(f.ws.join("junk-fr")).unwrap();
    std::fs::write(f.ws.join("junk-fr/keep"), "kept").unwrap();
    let calls: [&[&str]; 10] = [
        &["rm", "-rf", "junk-rf"],
        &["rm", "-fr", "junk-fr"],
        &["touch", "one"],
        &["touch", "two"],
        &["mkdir", "d1"],
        &["mkdir", "d2"],
        &["touch", "one", "asked-a"],
        &["touch", "one", "asked-b"],
        &["touch", "two", "asked-a"],
        &["touch", "two", "asked-b"],
    ];
    let fake = FakeServer::start(Wire::OpenAi);
    for (n, argv) in calls.iter().enumerate() {
        fake.push(Step::Reply(FakeReply::tool_call(
            format!("c{n}"),
            "run",
            json!({ "argv": argv }).to_string(),
        )));
    }
    fake.push(Step::Reply(FakeReply::text("done")));
    let output = exec(
        &f,
        "try them",
        &[
            "--model",
            "openai:gpt-test",
            "--json",
            "--answers",
            "allow_once",
        ],
    )
    .env("OPENAI_BASE_URL", fake.base_url())
    .env("OPENAI_API_KEY", "test-key")
    .succeeds();
    let events = lines(&output);

    // Every forbidden alternative is refused, and what it would remove stays.
    for junk in ["junk-rf/keep", "junk-fr/keep"] {
        assert_eq!(
            std::fs::read_to_string(f.ws.join(junk)).ok().as_deref(),
            Some("kept"),
            "{junk}: {events:#?}"
        );
    }
    // Every allowed alternative (the rule with no decision too) ran
    // without a card; every prompt alternative asked.
    for made in ["one", "two", "d1", "d2"] {
        assert!(f.ws.join(made).exists(), "{made}: {events:#?}");
    }
    let carded: Vec<Value> = events
        .iter()
        .filter(|e| e["type"] == "card")
        .map(|card| card["argv"].clone())
        .collect();
    assert_eq!(
        carded,
        calls[6..]
            .iter()
            .map(|argv| json!(argv))
            .collect::<Vec<_>>(),
        "{events:#?}"
    );
    let ran: Vec<&Value> = events.iter().filter(|e| e["type"] == "tool_call").collect();
    for call in &ran[2..6] {
        assert!(
            call["allowed_by"]["rule"]
                .as_str()
                .is_some_and(|id| listed.iter().any(|listed| listed == id)),
            "{call}"
        );
    }

    // The disabled server never started; the other did, and its filtered
    // tool was never offered to the model.
    assert!(f.ws.join("notes-started").exists(), "{events:#?}");
    assert!(!f.ws.join("off-started").exists(), "{events:#?}");
    let requests = fake.requests();
    assert_eq!(requests.len(), calls.len() + 1);
    let offered: std::collections::BTreeSet<String> = requests
        .iter()
        .flat_map(|request| request.body["tools"].as_array().unwrap().clone())
        .filter_map(|tool| tool["function"]["name"].as_str().map(str::to_string))
        .filter(|name| name.starts_with("mcp__"))
        .collect();
    assert_eq!(
        offered,
        std::collections::BTreeSet::from(["mcp__notes__echo".to_string()])
    );

    // `wicket mcp list` says so too.
    let listed = wicket()
        .env("WICKET_HOME", &f.home)
        .args(["mcp", "list", "--json", "--workspace"])
        .arg(&f.ws)
        .succeeds();
    let states: Vec<(String, String)> = lines(&listed)
        .iter()
        .map(|line| {
            (
                line["name"].as_str().unwrap().to_string(),
                line["state"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        states,
        [
            ("notes".to_string(), "started".to_string()),
            ("off".to_string(), "disabled".to_string())
        ]
    );
    assert!(!f.ws.join("off-started").exists());
}

#[test]
fn a_forbidden_codex_rule_that_cannot_be_carried_whole_stops_the_import() {
    let f = Fixture::new();
    let user = f.root.join("codex-user");
    std::fs::create_dir_all(user.join(".codex/rules")).unwrap();
    std::fs::write(
        user.join(".codex/rules/default.rules"),
        "prefix_rule(pattern = [\"touch\", \"ok\"], decision = \"allow\")\n\
         prefix_rule(pattern = [\"rm\", [\"-rf\", [\"-fr\"]]], decision = \"forbidden\")\n",
    )
    .unwrap();
    for dry in [true, false] {
        let output = wicket()
            .env("WICKET_HOME", &f.home)
            .env("HOME", &user)
            .env_remove("CODEX_HOME")
            .args(["import", "codex", "--workspace"])
            .arg(&f.ws)
            .args(dry.then_some("--dry-run"))
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{stderr}");
        assert!(
            stderr.contains("~/.codex/rules/default.rules: prefix_rule(pattern = [\"rm\", [\"-rf\", [\"-fr\"]]], decision = \"forbidden\")")
                && stderr.contains("a forbidden rule Wicket cannot carry whole"),
            "{stderr}"
        );
        assert!(
            !f.home.join("rules.toml").exists(),
            "not even the allow beside it is written"
        );
    }
}
