use super::*;
use wicket_gate::sandbox::SandboxMode;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn error_of(home: &Path, ws: &Path) -> String {
    match Config::load(home, ws) {
        Ok(config) => panic!("the config loaded: {config:?}"),
        Err(error) => error.to_string(),
    }
}

#[test]
fn layers_apply_in_order_and_hooks_keep_their_owner() {
    let dir = tempfile::tempdir().unwrap();
    let (home, ws) = (dir.path().join("home"), dir.path().join("ws"));
    write(
        &home.join("config.toml"),
        r#"
model = "openai:gpt-4o"
step_limit = 10
[providers.openai]
base_url = "http://127.0.0.1:9/v1"
[[hooks.stop]]
command = ["make", "check"]
"#,
    );
    write(
        &ws.join(".wicket/config.toml"),
        r#"
model = "anthropic:claude-sonnet-4-5"
skill_dirs = ["more-skills"]
[[hooks.stop]]
command = ["cargo", "test"]
timeout_s = 300
"#,
    );
    let config = Config::load(&home, &ws).unwrap();
    // The repository's model is ignored, and the person told how to use it.
    assert_eq!(config.model.as_deref(), Some("openai:gpt-4o"));
    assert_eq!(config.notices.len(), 1, "{:?}", config.notices);
    assert_eq!(config.notices[0].key.as_deref(), Some("model"));
    assert!(
        config.notices[0]
            .message
            .contains("--model anthropic:claude-sonnet-4-5"),
        "{:?}",
        config.notices
    );
    assert_eq!(config.step_limit, 10);
    assert_eq!(
        config.openai_base_url.as_deref(),
        Some("http://127.0.0.1:9/v1")
    );
    assert_eq!(
        config.skill_dirs,
        vec![SkillDir::Workspace(PathBuf::from("more-skills"))]
    );
    use wicket_protocol::HookEvent;
    assert_eq!(
        config.hooks,
        vec![
            StopHook::new(
                HookEvent::Stop,
                vec!["make".into(), "check".into()],
                None,
                Owner::Home
            ),
            StopHook::new(
                HookEvent::Stop,
                vec!["cargo".into(), "test".into()],
                Some(300),
                Owner::Workspace
            ),
        ]
    );
}

#[test]
fn hook_tables_of_every_event_are_read_with_their_matcher_and_on_error() {
    use wicket_protocol::HookEvent;
    let dir = tempfile::tempdir().unwrap();
    let (home, ws) = (dir.path().join("home"), dir.path().join("ws"));
    write(
        &home.join("config.toml"),
        r#"
[[hooks.pre_tool_use]]
name = "no-rm"
matcher = "run|mcp__.*"
command = ["python3", "deny.py"]
[[hooks.post_tool_use]]
matcher = "write_file"
command = ["fmt"]
on_error = "block"
[[hooks.notification]]
command = ["notify-send", "wicket"]
"#,
    );
    std::fs::create_dir_all(&ws).unwrap();
    let config = Config::load(&home, &ws).unwrap();
    let [pre, post, notify] = &config.hooks[..] else {
        panic!("{:?}", config.hooks);
    };
    assert_eq!(
        (pre.event, pre.name.as_str()),
        (HookEvent::PreToolUse, "no-rm")
    );
    assert!(pre.matches("run") && pre.matches("mcp__git__status") && !pre.matches("run2"));
    assert_eq!(
        (pre.on_error, post.on_error),
        (OnError::Block, OnError::Block)
    );
    assert_eq!(
        (notify.on_error, notify.name.as_str()),
        (OnError::Ignore, "notify-send wicket")
    );
    assert!(notify.matches("anything"));
    let claude = Hook {
        matcher: Some(ToolMatcher::new("Bash|Edit").unwrap()),
        ..pre.clone()
    };
    assert!(
        claude.matches("run") && claude.matches("search_replace") && !claude.matches("write_file")
    );
    write(
        &home.join("config.toml"),
        "[[hooks.pre_tool_use]]
matcher = \"(\"
command = [\"x\"]
",
    );
    let error = Config::load(&home, &ws).unwrap_err().to_string();
    assert!(error.contains("not a regex"), "{error}");
}

#[test]
fn a_matcher_is_compiled_once_and_compared_and_shown_by_its_pattern() {
    let matcher = ToolMatcher::new("run|Edit").unwrap();
    assert_eq!(matcher, ToolMatcher::new("run|Edit").unwrap());
    assert_ne!(matcher, ToolMatcher::new("run").unwrap());
    assert_eq!(format!("{matcher:?}"), "\"run|Edit\"");
    assert_eq!(matcher.as_str(), "run|Edit");
    assert!(
        matcher.matches("run") && matcher.matches("search_replace") && !matcher.matches("rund")
    );
    assert!(ToolMatcher::new("").unwrap().matches("anything"));
    assert!(ToolMatcher::new("(").is_err());
}

#[test]
fn an_unknown_key_names_the_key_and_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().to_path_buf();
    write(&home.join("config.toml"), "modle = \"openai:gpt-4o\"\n");
    let error = error_of(&home, dir.path());
    assert!(
        error.contains("modle") && error.contains("config.toml"),
        "{error}"
    );
    write(
        &home.join("config.toml"),
        "[[hooks.stop]]\ncommand = [\"x\"]\ntimeout = 3\n",
    );
    let error = error_of(&home, dir.path());
    // The unknown key itself, not `timeout_s` from the list of known ones.
    assert!(error.contains("unknown field `timeout`"), "{error}");
}

/// The notices a workspace config `text` gets, as (key, message).
fn notices_of(text: &str) -> (Config, Vec<(Option<String>, String)>) {
    let dir = tempfile::tempdir().unwrap();
    let (home, ws) = (dir.path().join("home"), dir.path().join("ws"));
    write(&ws.join(".wicket/config.toml"), text);
    let config = Config::load(&home, &ws).unwrap();
    let notices = config
        .notices
        .iter()
        .map(|notice| (notice.key.clone(), notice.message.clone()))
        .collect();
    (config, notices)
}

#[test]
fn a_workspace_cannot_redirect_providers_or_touch_the_sandbox_and_cannot_stop_wicket() {
    let (config, notices) =
        notices_of("[providers.openai]\nbase_url = \"https://elsewhere.example\"\n");
    assert_eq!(config.openai_base_url, None);
    assert_eq!(notices[0].0.as_deref(), Some("[providers]"));
    assert!(notices[0].1.contains("API key"), "{notices:?}");
    let (config, notices) = notices_of("[sandbox]\nmode = \"off\"\n");
    assert_eq!(config.sandbox.mode, SandboxMode::WorkspaceWrite);
    assert_eq!(notices[0].0.as_deref(), Some("[sandbox]"));
    assert!(notices[0].1.contains(".wicket/config.toml"), "{notices:?}");
    for text in [
        "[models.\"x:y\"]\ncontext_window = 1\n",
        "[prices.\"x:y\"]\ninput = 0.0\noutput = 0.0\n",
        "[limits]\nmax_tokens_per_turn = 1\n",
    ] {
        let (_, notices) = notices_of(text);
        assert!(notices[0].1.contains("what you pay"), "{notices:?}");
    }
    let (config, notices) = notices_of("skill_dirs = [\"/etc\", \"ok\"]\n");
    assert_eq!(
        config.skill_dirs,
        vec![SkillDir::Workspace(PathBuf::from("ok"))]
    );
    assert!(notices[0].1.contains("inside the workspace"), "{notices:?}");
    let (_, notices) = notices_of("skill_dirs = [\"../x\"]\n");
    assert!(notices[0].1.contains("inside the workspace"), "{notices:?}");
    // Not even a broken file stops Wicket: the whole file is ignored.
    let (config, notices) = notices_of("model = \"x:y\"\n[[[broken\n");
    assert_eq!((config.model, notices[0].0.clone()), (None, None));
    assert!(
        notices[0].1.contains("ignored the workspace's config"),
        "{notices:?}"
    );
    let (_, notices) = notices_of("modle = \"x:y\"\n");
    assert!(notices[0].1.contains("modle"), "{notices:?}");
}

#[test]
fn a_workspace_config_is_read_through_the_resolver() {
    let dir = tempfile::tempdir().unwrap();
    let (home, ws) = (dir.path().join("home"), dir.path().join("ws"));
    write(&dir.path().join("elsewhere.toml"), "model = \"x:y\"\n");
    std::fs::create_dir_all(ws.join(".wicket")).unwrap();
    std::os::unix::fs::symlink(
        dir.path().join("elsewhere.toml"),
        ws.join(".wicket/config.toml"),
    )
    .unwrap();
    let config = Config::load(&home, &ws).unwrap();
    assert_eq!(config.model, None);
    assert!(
        config.notices[0].message.contains("leaves the workspace"),
        "{:?}",
        config.notices
    );
}

#[test]
fn sandbox_settings_name_a_bad_key_and_file() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    write(&home.join("config.toml"), "[sandbox]\nmode = \"loose\"\n");
    let error = error_of(&home, dir.path());
    // What was wrong, where, and what to write instead.
    assert!(
        error.contains("config.toml")
            && error.contains("line 2")
            && error.contains(
                "[sandbox] mode = \"loose\" is not a mode; use \"workspace-write\", \"read-only\" or \"off\""
            ),
        "{error}"
    );
    write(
        &home.join("config.toml"),
        "[sandbox]\nmode = \"unavailable\"\n",
    );
    assert!(error_of(&home, dir.path()).contains("is not a mode"));
    write(
        &home.join("config.toml"),
        "[sandbox]\nextra_write = [\"/no/such/folder\"]\n",
    );
    assert!(error_of(&home, dir.path()).contains("extra_write"));
    write(
        &home.join("config.toml"),
        "[sandbox]\ndeny_read = [\"/no/such/secrets\"]\n",
    );
    assert!(error_of(&home, dir.path()).contains("deny_read"));
    let secrets = dir.path().join("secrets");
    std::fs::create_dir_all(&secrets).unwrap();
    write(
        &home.join("config.toml"),
        &format!(
            "[sandbox]\nmode = \"read-only\"\nrequired = true\ndeny_read = [\"{}\"]\n",
            secrets.display()
        ),
    );
    let config = Config::load(&home, dir.path()).unwrap();
    assert_eq!(config.sandbox.mode, SandboxMode::ReadOnly);
    assert!(config.sandbox.required);
    assert_eq!(config.sandbox.deny_read, vec![secrets]);
}

#[test]
fn tool_choice_is_auto_required_or_absent() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    write(
        &home.join("config.toml"),
        "[providers.openai]\ntool_choice = \"sometimes\"\n",
    );
    let error = error_of(&home, dir.path());
    assert!(
        error.contains("config.toml")
            && error.contains("line 2")
            && error.contains(
                "[providers.openai] tool_choice = \"sometimes\" is not a choice; use \"auto\" or \"required\", or leave it out"
            ),
        "{error}"
    );
    write(
        &home.join("config.toml"),
        "[providers.openai]\ntool_choice = \"required\"\n",
    );
    let config = Config::load(&home, dir.path()).unwrap();
    assert_eq!(
        config.openai_tool_choice,
        Some(wicket_chat::ToolChoice::Required)
    );
}

#[test]
fn bad_jail_settings_name_the_file_and_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir_all(home.join("sessions")).unwrap();
    let cases = [
        (
            "[sandbox]\nenv_pass = [\"GOOD\", \"BAD NAME\"]\n",
            "env_pass entry \"BAD NAME\"",
        ),
        ("[sandbox]\nenv_pass = [\"1X\"]\n", "not a variable name"),
        ("[sandbox]\nmax_processes = 0\n", "max_processes = 0"),
        ("[sandbox]\nmax_memory_mb = 0\n", "max_memory_mb = 0"),
        (
            &format!(
                "[sandbox]\nextra_write = [\"{}\"]\n",
                home.join("sessions").display()
            ),
            "Wicket's own folder",
        ),
        (
            &format!("[sandbox]\nextra_write = [\"{}\"]\n", dir.path().display()),
            "Wicket's own folder",
        ),
    ];
    for (text, expected) in cases {
        write(&home.join("config.toml"), text);
        let error = error_of(&home, dir.path());
        assert!(
            error.contains(expected) && error.contains("config.toml"),
            "{text}: {error}"
        );
    }
    write(
        &home.join("config.toml"),
        "[sandbox]\nenv_pass = [\"GOPATH\", \"_X1\"]\nmax_processes = 64\nmax_memory_mb = 512\n",
    );
    let config = Config::load(&home, dir.path()).unwrap();
    assert_eq!(config.sandbox.env_pass, ["GOPATH", "_X1"]);
    assert_eq!(
        (config.sandbox.max_processes, config.sandbox.max_memory_mb),
        (64, 512)
    );
}

#[test]
fn every_home_only_key_in_a_workspace_config_is_ignored_with_a_notice_naming_it() {
    let keys = file::keys_of::<file::HomeKeys>();
    assert!(keys.contains(&"sandbox"), "{keys:?}");
    for key in keys {
        // Any value of the key's type will do; every home-only key but the
        // model is a table.
        let value = if *key == "model" { "\"x:y\"" } else { "{}" };
        let (config, notices) = notices_of(&format!("{key} = {value}\n"));
        let [(Some(named), message)] = &notices[..] else {
            panic!("{key}: {notices:?}");
        };
        assert!(
            [key.to_string(), format!("[{key}]")].contains(named),
            "{key}: {notices:?}"
        );
        assert!(
            message.starts_with(&format!("ignored {named} in ")),
            "{message}"
        );
        assert_eq!(
            Config {
                notices: Vec::new(),
                ..config
            },
            Config::default(),
            "{key} was obeyed"
        );
    }
}

#[test]
fn a_key_is_either_home_only_or_shared_never_both() {
    let home = file::keys_of::<file::HomeKeys>();
    let shared = file::keys_of::<file::SharedKeys>();
    assert!(
        !home.is_empty() && !shared.is_empty(),
        "{home:?} {shared:?}"
    );
    for key in home {
        assert!(!shared.contains(key), "{key} is in both");
    }
}

#[test]
fn an_unknown_key_is_refused_in_either_file_on_its_own_line() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    for text in [
        "step_limit = 3\nzzz = 1\n",
        "step_limit = 3\n[zzz]\na = 1\n",
    ] {
        write(&home.join("config.toml"), text);
        let error = error_of(&home, dir.path());
        assert!(
            error.contains("line 2")
                && error.contains("unknown field `zzz`, expected one of `model`"),
            "{error}"
        );
    }
    // A repository's is not fatal: the whole file is ignored, saying why.
    let (config, notices) = notices_of("step_limit = 3\nzzz = 1\n");
    assert_eq!(config.step_limit, DEFAULT_STEP_LIMIT);
    let [(None, message)] = &notices[..] else {
        panic!("{notices:?}");
    };
    assert!(
        message.starts_with("ignored the workspace's config")
            && message.contains("line 2")
            && message.contains("unknown field `zzz`"),
        "{message}"
    );
}

#[test]
fn a_star_matcher_loads_and_matches_every_tool_as_in_claude_code() {
    let matcher = super::ToolMatcher::new("*").unwrap();
    assert!(matcher.matches("run"));
    assert!(matcher.matches("mcp__files__search"));
    let exact = super::ToolMatcher::new("run").unwrap();
    assert!(exact.matches("run") && !exact.matches("run2"));
}
