use super::*;
use wicket_protocol::Network;

fn rules(text: &str, source: Source) -> Vec<(Source, Rule)> {
    parse(text, "t")
        .unwrap()
        .into_iter()
        .map(|rule| (source, rule))
        .collect()
}

fn argv(words: &[&str]) -> Vec<String> {
    words.iter().map(|word| word.to_string()).collect()
}

fn run_verdict(all: &[(Source, Rule)], words: &[&str]) -> Verdict {
    let argv = argv(words);
    verdict(
        all,
        Path::new("/w"),
        &Subject::Run {
            read: Default::default(),
            argv: &argv,
            cwd: ".",
            network: Network::Off,
            git: false,
        },
    )
}

const HOME: &str = r#"
[[rules]]
id = "tests"
action = "allow"
tool = "run"
argv_prefix = ["cargo", "test"]

[[rules]]
id = "fmt"
action = "allow"
tool = "run"
argv = ["cargo", "fmt"]

[[rules]]
id = "no-push"
action = "deny"
tool = "run"
argv_prefix = ["git", "push"]

[[rules]]
id = "ask-rm"
action = "ask"
tool = "run"
argv_prefix = ["rm"]

[[rules]]
id = "rm-tmp"
action = "allow"
tool = "run"
argv_prefix = ["rm", "tmp"]

[[rules]]
id = "net"
action = "allow"
tool = "run"
argv_prefix = ["curl"]
network = true

[[rules]]
id = "src"
action = "allow"
tool = "write"
path = "src/**/*.rs"

[[rules]]
id = "no-lock"
action = "deny"
tool = "write_file"
path = "**/*.lock"

[[rules]]
id = "etc"
action = "allow"
tool = "read_outside"
path = "/etc/*"
reach = "read"

[[rules]]
id = "git-status"
action = "allow"
tool = "mcp"
server = "git"
mcp_tool = "git_status"

[[rules]]
id = "elsewhere"
action = "allow"
tool = "run"
argv = ["make"]
workspace = "/other"
"#;

#[test]
fn the_rule_table_decides_each_matcher_by_precedence() {
    let all = rules(HOME, Source::HomeConfig);
    let allowed = |id: &str| Some(AllowedBy::Rule(id.to_string().into()));
    assert_eq!(
        run_verdict(&all, &["cargo", "test", "foo"]).allow,
        allowed("tests")
    );
    assert_eq!(run_verdict(&all, &["cargo", "fmt"]).allow, allowed("fmt"));
    assert_eq!(run_verdict(&all, &["cargo", "fmt", "--check"]).allow, None);
    assert_eq!(run_verdict(&all, &["./cargo", "test"]).allow, None);
    assert_eq!(
        run_verdict(&all, &["make"]).allow,
        None,
        "another workspace's rule"
    );
    // An ask beats an allow; the gate asks.
    let rm = run_verdict(&all, &["rm", "tmp"]);
    assert_eq!(
        (rm.ask.as_deref(), rm.allow),
        (Some("ask-rm"), allowed("rm-tmp"))
    );
    // The network only where the rule gives it.
    let curl = argv(&["curl", "x"]);
    let with_network = |network| {
        verdict(
            &all,
            Path::new("/w"),
            &Subject::Run {
                read: Default::default(),
                argv: &curl,
                cwd: ".",
                network,
                git: false,
            },
        )
        .allow
    };
    assert_eq!(with_network(Network::Proxied), allowed("net"));
    assert_eq!(with_network(Network::Off), allowed("net"));
    // A path to read only where the rule names it; a deny sees through it.
    let outside = tempfile::tempdir().unwrap();
    let notes = std::fs::canonicalize(outside.path()).unwrap();
    let inner = notes.join("sub");
    std::fs::create_dir(&inner).unwrap();
    let readers = rules(
        &format!(
            "[[rules]]\nid = \"cat-notes\"\naction = \"allow\"\ntool = \"run\"\nargv_prefix = [\"cat\"]\nread = [{:?}]\n\
             [[rules]]\nid = \"no-rm\"\naction = \"deny\"\ntool = \"run\"\nargv_prefix = [\"rm\"]\n",
            notes.display().to_string()
        ),
        Source::HomeConfig,
    );
    let reading = |words: &[&str], read: &[PathBuf]| {
        verdict(
            &readers,
            Path::new("/w"),
            &Subject::Run {
                argv: &argv(words),
                cwd: ".",
                network: Network::Off,
                git: false,
                read,
            },
        )
    };
    assert_eq!(
        reading(&["cat", "x"], std::slice::from_ref(&inner)).allow,
        allowed("cat-notes")
    );
    assert_eq!(reading(&["cat", "x"], &[]).allow, allowed("cat-notes"));
    assert_eq!(reading(&["cat", "x"], &[PathBuf::from("/etc")]).allow, None);
    assert_eq!(
        reading(&["rm", "x"], &[inner]).deny.as_deref(),
        Some("no-rm")
    );
    assert_eq!(run_verdict(&all, &["cargo", "test"]).deny, None);
    let tests = argv(&["cargo", "test"]);
    let networked = verdict(
        &all,
        Path::new("/w"),
        &Subject::Run {
            read: Default::default(),
            argv: &tests,
            cwd: ".",
            network: Network::Proxied,
            git: false,
        },
    );
    assert_eq!(
        networked.allow, None,
        "cargo test's rule does not give the network"
    );
    // Writes: relative globs inside, write_file vs write.
    let write = |tool: &'static str, path: &str| {
        verdict(
            &all,
            Path::new("/w"),
            &Subject::Write {
                tool,
                absolute: Path::new(path),
                guarded: wicket_protocol::guarded::git_or_wicket(Path::new(path)),
            },
        )
    };
    assert_eq!(
        write("search_replace", "/w/src/a/b.rs").allow,
        allowed("src")
    );
    assert_eq!(write("write_file", "/w/src/b.txt").allow, None);
    assert_eq!(write("write_file", "/elsewhere/src/b.rs").allow, None);
    assert_eq!(
        write("write_file", "/w/Cargo.lock").deny.as_deref(),
        Some("no-lock")
    );
    assert_eq!(write("search_replace", "/w/Cargo.lock").deny, None);
    // Outside reads, by reach.
    let read = |path: &str, reach| {
        verdict(
            &all,
            Path::new("/w"),
            &Subject::ReadOutside {
                path: Path::new(path),
                reach,
            },
        )
        .allow
    };
    assert_eq!(read("/etc/hosts", Reach::Read), allowed("etc"));
    assert_eq!(read("/etc/hosts", Reach::List), None);
    assert_eq!(
        read("/etc/ssl/x", Reach::Read),
        None,
        "* stays in one folder"
    );
    // MCP.
    let arguments = serde_json::json!({"repo": "."});
    let mcp = |tool| {
        verdict(
            &all,
            Path::new("/w"),
            &Subject::Mcp {
                server: "git",
                tool,
                arguments: &arguments,
            },
        )
        .allow
    };
    assert_eq!(mcp("git_status"), allowed("git-status"));
    assert_eq!(mcp("git_commit"), None);
}

#[test]
fn a_workspace_allow_is_ignored_and_its_deny_holds() {
    let workspace = rules(
        "[[rules]]\naction = \"allow\"\ntool = \"run\"\nargv_prefix = [\"curl\"]\n\
         [[rules]]\naction = \"deny\"\ntool = \"run\"\nargv_prefix = [\"make\"]\n",
        Source::Workspace,
    );
    assert_eq!(run_verdict(&workspace, &["curl", "x"]).allow, None);
    assert_eq!(
        run_verdict(&workspace, &["make"]).deny.as_deref(),
        Some("t-2")
    );
}

#[test]
fn a_write_rule_covers_git_and_wicket_only_where_it_names_them() {
    let all = rules(
        "[[rules]]\nid = \"all\"\naction = \"allow\"\ntool = \"write\"\npath = \"**\"\n\
         [[rules]]\nid = \"hooks\"\naction = \"allow\"\ntool = \"write\"\npath = \"sub/.git/hooks/*\"\n\
         [[rules]]\nid = \"exact\"\naction = \"allow\"\ntool = \"write\"\npath = \"gd/[*]config\"\n\
         [[rules]]\nid = \"echo\"\naction = \"allow\"\ntool = \"run\"\nargv_prefix = [\"echo\"]\n",
        Source::HomeConfig,
    );
    let allowed = |id: &str| Some(AllowedBy::Rule(id.to_string().into()));
    let write = |path: &str, guarded: bool| {
        verdict(
            &all,
            Path::new("/w"),
            &Subject::Write {
                tool: "write_file",
                absolute: Path::new(path),
                guarded,
            },
        )
        .allow
    };
    assert_eq!(write("/w/src/main.rs", false), allowed("all"));
    assert_eq!(write("/w/.git/hooks/post-checkout", true), None);
    assert_eq!(write("/w/a/b/.wicket/config.toml", true), None);
    assert_eq!(write("/w/sub/.git/hooks/pre-push", true), allowed("hooks"));
    assert_eq!(write("/w/gd/*config", true), allowed("exact"));
    // A shell redirection into .git is a guarded write too.
    assert!(
        run_verdict(&all, &["sh", "-c", "echo x > out.txt"])
            .allow
            .is_some()
    );
    let script = run_verdict(&all, &["sh", "-c", "echo x > .git/config"]);
    assert_eq!(script.allow, None);
}

#[test]
fn a_deny_on_git_push_holds_through_paths_scripts_and_wrappers() {
    let all = rules(HOME, Source::HomeConfig);
    for words in [
        &["git", "push"][..],
        &["/usr/bin/git", "push"],
        &["sh", "-c", "git push"],
        &["sh", "-c", "echo x; git push origin"],
        &["bash", "-c", "true && /usr/bin/git push"],
        &["env", "GIT_DIR=x", "git", "push"],
    ] {
        assert_eq!(
            run_verdict(&all, words).deny.as_deref(),
            Some("no-push"),
            "{words:?}"
        );
    }
    // A substitution is never allowed by a rule: the card comes up.
    let hidden = run_verdict(&all, &["sh", "-c", "$(echo git) push"]);
    assert_eq!((hidden.deny, hidden.allow), (None, None));
}

#[test]
fn a_script_is_allowed_only_when_each_of_its_commands_is() {
    let all = rules(HOME, Source::HomeConfig);
    assert_eq!(
        run_verdict(&all, &["sh", "-c", "cargo test && cargo fmt"]).allow,
        Some(AllowedBy::Rules(vec!["tests".into(), "fmt".into()]))
    );
    assert_eq!(
        run_verdict(&all, &["sh", "-c", "cargo test && cargo fmt --all"]).allow,
        None
    );
    assert_eq!(
        run_verdict(&all, &["sh", "-c", "cargo test > /tmp/x"]).allow,
        None
    );
    assert_eq!(
        run_verdict(&all, &["sh", "-c", "X=1 cargo test"]).allow,
        None
    );
    assert_eq!(
        run_verdict(&all, &["sh", "-c", "cargo test 2>&1 > /dev/null"]).allow,
        Some(AllowedBy::Rules(vec!["tests".into()]))
    );
    // What it writes is a write: no rule covers out.txt.
    assert_eq!(
        run_verdict(&all, &["sh", "-c", "cargo test > out.txt"]).allow,
        None
    );
}

#[test]
fn what_a_review_found_stays_closed() {
    let all = rules(HOME, Source::HomeConfig);
    // A redirection is a write: no write rule for it, no allow.
    assert_eq!(
        run_verdict(&all, &["sh", "-c", "cargo test; > build.rs"]).allow,
        None
    );
    assert_eq!(
        run_verdict(&all, &["sh", "-c", "cargo test > src/out.rs"]).allow,
        Some(AllowedBy::Rules(vec!["tests".into(), "src".into()])),
        "src/**/*.rs may be written"
    );
    assert_eq!(
        run_verdict(&all, &["sh", "-c", "cargo test > .git/config"]).allow,
        None
    );
    // A repository's own `./sh` is not a shell.
    let ls = rules(
        "[[rules]]\nid = \"ls\"\naction = \"allow\"\ntool = \"run\"\nargv = [\"ls\"]\n",
        Source::HomeConfig,
    );
    assert_eq!(run_verdict(&ls, &["./sh", "-c", "ls"]).allow, None);
    assert_eq!(
        run_verdict(&ls, &["/bin/sh", "-c", "ls"]).allow,
        Some(AllowedBy::Rules(vec!["ls".into()]))
    );
    // `cd` moves the rest of a script out of the folder a rule names.
    assert_eq!(
        run_verdict(&all, &["sh", "-c", "cd .. && cargo test"]).allow,
        None
    );
    // Options before the subcommand are read through: `git -c x=y clean`
    // is `git clean`.
    let git = rules(
        "[[rules]]\nid = \"git\"\naction = \"allow\"\ntool = \"run\"\nargv_prefix = [\"git\"]\n\
         [[rules]]\nid = \"no-clean\"\naction = \"deny\"\ntool = \"run\"\nargv_prefix = [\"git\", \"clean\"]\n",
        Source::HomeConfig,
    );
    let sneaky = run_verdict(&git, &["git", "-c", "x=y", "clean", "-fdx"]);
    assert_eq!(sneaky.deny.as_deref(), Some("no-clean"));
    let sneaky = run_verdict(&git, &["git", "-C", ".", "--no-pager", "clean", "-fdx"]);
    assert_eq!(sneaky.deny.as_deref(), Some("no-clean"));
    // Denies read shells, eval and env -S however they are spelt.
    for words in [
        &["sh", "-c", "git push", "x"][..],
        &["bash", "-ic", "git push"],
        &["command", "eval", "git push"],
        &["env", "-iS", "git push"],
        &["xargs", "--max-args", "1", "git", "push"],
    ] {
        assert_eq!(
            run_verdict(&all, words).deny.as_deref(),
            Some("no-push"),
            "{words:?}"
        );
    }
    // An exact path is exact: a backslash is not an escape.
    let exact = exact_glob("/home/me/\\.ssh/id_rsa");
    assert!(glob_matches(&exact, "/home/me/\\.ssh/id_rsa"));
    assert!(!glob_matches(&exact, "/home/me/.ssh/id_rsa"));
    assert!(!glob_matches(&exact_glob("a*"), "ab"));
}

#[test]
fn a_card_widens_only_to_its_own_first_words_and_never_to_a_bare_shell() {
    let card = |argv: &[&str]| wicket_protocol::Card {
        task: None,
        id: "card-1".into(),
        tool: "run".into(),
        kind: wicket_protocol::CardKind::Run(wicket_protocol::RunCard {
            no_preview: Default::default(),
            managed: None,
            preview: Default::default(),
            read: Default::default(),
            argv: argv.iter().map(|word| word.to_string()).collect(),
            cwd: ".".into(),
            timeout_s: None,
            network: Network::Off,
            git: false,
            sandbox: wicket_protocol::SandboxSummary {
                complete: Default::default(),
                summary: Default::default(),
                mode: wicket_protocol::SandboxMode::WorkspaceWrite,
                network: false,
                layers: Vec::new(),
                note: None,
            },
            source: wicket_protocol::RunSource::Tool,
        }),
        no_checkpoint: None,
        checkpointing: None,
        always: Some(Box::new(
            toml::from_str("action = \"allow\"\ntool = \"run\"\nargv = [\"x\"]\n").unwrap(),
        )),
    };
    let mut tests = card(&["cargo", "test", "foo"]);
    crate::widen(&mut tests, argv(&["cargo", "test"])).unwrap();
    let always = tests.always.unwrap();
    assert_eq!(
        (always.argv, always.argv_prefix),
        (None, Some(argv(&["cargo", "test"])))
    );
    assert!(crate::widen(&mut card(&["cargo", "test"]), argv(&["rm"])).is_err());
    assert!(crate::widen(&mut card(&["cargo", "test"]), Vec::new()).is_err());
    assert!(crate::widen(&mut card(&["sh", "-c", "cargo test"]), argv(&["sh", "-c"])).is_err());
    assert!(crate::widen(&mut card(&["env", "A=1", "make"]), argv(&["env"])).is_err());
}

#[test]
fn saved_rules_are_appended_and_revoked_keeping_the_rest_of_the_file() {
    let home = tempfile::tempdir().unwrap();
    let path = home.path().join(RULES_FILE);
    std::fs::write(
        &path,
        "# mine\n[[rules]]\nid = \"own\"\naction = \"deny\"\ntool = \"run\"\nargv = [\"x\"]\n",
    )
    .unwrap();
    let spec: RuleSpec = toml::from_str(
        "action = \"allow\"\ntool = \"run\"\nargv = [\"cargo\", \"test\"]\nworkspace = \"/w\"\n",
    )
    .unwrap();
    let id = save(&path, spec).unwrap();
    let saved = read_saved(&path).unwrap();
    assert_eq!(
        saved
            .iter()
            .map(|rule| rule.id.as_str())
            .collect::<Vec<_>>(),
        ["own", id.as_str()]
    );
    assert_eq!(revoke(&path, &id).unwrap().id, id);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.starts_with("# mine\n"), "{text}");
    assert_eq!(read_saved(&path).unwrap().len(), 1);
    assert!(matches!(revoke(&path, &id), Err(Error::NoSuchRule(_))));
    // A file the rule cannot be added to is left as it is.
    std::fs::write(&path, "rules = []\n").unwrap();
    let spec: RuleSpec =
        toml::from_str("action = \"deny\"\ntool = \"run\"\nargv = [\"x\"]\n").unwrap();
    assert!(save(&path, spec).is_err());
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "rules = []\n");
    std::fs::write(&path, "[[rules]]\naction = \"allow\"\ntool = \"run\"\n").unwrap();
    assert!(read_saved(&path).unwrap_err().to_string().contains("argv"));
}

#[test]
fn a_named_rule_is_added_once_and_fresh_says_beforehand_which_are() {
    let home = tempfile::tempdir().unwrap();
    let path = home.path().join(RULES_FILE);
    let named = |id: &str, words: &[&str]| {
        let mut spec = RuleSpec::new(wicket_protocol::RuleAction::Deny, "run");
        spec.id = Some(id.into());
        spec.argv_prefix = Some(argv(words));
        (spec, format!("from {id}"))
    };
    save_named(&path, &[named("imp-a", &["rm", "-rf"])]).unwrap();
    let specs = [
        named("imp-a", &["rm", "-rf"]),
        named("imp-b", &["rm", "-fr"]),
        named("imp-b", &["rm", "-fr"]),
        named("imp-c", &["rm", "-r"]),
    ];
    let foreseen = fresh(&read_saved(&path).unwrap(), &specs);
    assert_eq!(foreseen, [false, true, false, true]);
    assert_eq!(save_named(&path, &specs).unwrap(), foreseen);
    let ids: Vec<String> = read_saved(&path)
        .unwrap()
        .iter()
        .map(|rule| rule.id.to_string())
        .collect();
    assert_eq!(ids, ["imp-a", "imp-b", "imp-c"]);
}

#[test]
fn a_managed_deny_holds_a_command_the_gate_cannot_read() {
    let managed = rules(
        "[[rules]]\nid = \"managed:no-push\"\naction = \"deny\"\ntool = \"run\"\nargv_prefix = [\"git\", \"push\"]\n",
        Source::Managed,
    );
    for hidden in [
        &["sh", "-c", "g=git; $g push"][..],
        &["sh", "-c", "echo git push | sh"],
        &["python3", "-c", "import os; os.system('git push')"],
        &["sh", "-c", "echo push | xargs git"],
        &["bash", "script.sh"],
    ] {
        let verdict = run_verdict(&managed, hidden);
        assert_eq!(verdict.deny, None, "{hidden:?}");
        assert_eq!(
            verdict.held.as_deref(),
            Some("managed:no-push"),
            "{hidden:?}"
        );
    }
    assert_eq!(
        run_verdict(&managed, &["git", "-c", "x.y=1", "push"])
            .deny
            .as_deref(),
        Some("managed:no-push")
    );
    // What it can read, and is not a push, is not held.
    for plain in [
        &["git", "status"][..],
        &["sh", "-c", "cargo test && git log"],
        &["python3", "x.py"],
    ] {
        let verdict = run_verdict(&managed, plain);
        assert_eq!((verdict.deny, verdict.held), (None, None), "{plain:?}");
    }
    // The person's own deny is not held: an unreadable call is a plain card.
    let home = rules(
        "[[rules]]\nid = \"no-push\"\naction = \"deny\"\ntool = \"run\"\nargv_prefix = [\"git\", \"push\"]\n",
        Source::HomeConfig,
    );
    assert_eq!(
        run_verdict(&home, &["sh", "-c", "g=git; $g push"]).held,
        None
    );
}

#[test]
fn a_command_prefix_allow_is_a_string_prefix_of_the_line_as_written() {
    let all = rules(
        "[[rules]]\nid = \"npm-test\"\naction = \"allow\"\ntool = \"run\"\ncommand_prefix = \"npm run test\"\n\n\
         [[rules]]\nid = \"ls\"\naction = \"allow\"\ntool = \"run\"\ncommand_prefix = \"ls\"\n",
        Source::Saved,
    );
    let allowed = |words: &[&str]| run_verdict(&all, words).allow.is_some();
    assert!(allowed(&["npm", "run", "test"]));
    assert!(allowed(&["npm", "run", "test:unit"]), "Claude Code's `:*`");
    assert!(allowed(&["npm", "run", "test", "--", "-w"]));
    assert!(allowed(&["ls"]) && allowed(&["ls", "-la"]));
    for not in [
        &["npm", "run", "build"][..],
        &["npm run test"],
        &["npm", "run test"],
        &["./npm", "run", "test"],
        &["/usr/bin/npm", "run", "test"],
        &["lsof"],
        &["npx", "run", "test"],
    ] {
        assert!(!allowed(not), "{not:?} is not covered");
    }
    // A script is covered only when each of its commands is.
    assert!(allowed(&["sh", "-c", "npm run test:unit && ls -la"]));
    assert!(!allowed(&["sh", "-c", "npm run test:unit; rm -rf /"]));
}

#[test]
fn a_command_prefix_deny_covers_at_least_what_claude_code_s_did() {
    let all = rules(
        "[[rules]]\nid = \"no-rm\"\naction = \"deny\"\ntool = \"run\"\ncommand_prefix = \"rm -rf\"\n\n\
         [[rules]]\nid = \"no-dd\"\naction = \"deny\"\ntool = \"run\"\ncommand_prefix = \"dd\"\n",
        Source::Saved,
    );
    let denied = |words: &[&str]| run_verdict(&all, words).deny;
    for words in [
        &["rm", "-rf", "/"][..],
        &["rm", "-rfv", "x"],
        &["/bin/rm", "-rf", "x"],
        &["sudo", "rm", "-rf", "x"],
        &["sh", "-c", "cd /tmp && rm -rf x"],
        &["dd", "if=/dev/zero"],
        &["ddrescue", "a", "b"],
    ] {
        assert!(denied(words).is_some(), "{words:?} is denied");
    }
    assert_eq!(denied(&["rm", "-r", "x"]), None);
    // Words of the rule with others between them raise a card.
    let verdict = run_verdict(&all, &["rm", "-v", "-rf", "x"]);
    assert_eq!(verdict.deny, None);
    assert_eq!(verdict.ask.as_deref(), Some("no-rm"));
}

#[test]
fn a_command_prefix_is_checked_and_reads_back() {
    assert!(
        parse(
            "[[rules]]\naction = \"allow\"\ntool = \"run\"\ncommand_prefix = \" npm\"\n",
            "t"
        )
        .is_err()
    );
    assert!(
        parse(
            "[[rules]]\naction = \"allow\"\ntool = \"run\"\ncommand_prefix = \"\"\n",
            "t"
        )
        .is_err()
    );
    let both = parse(
        "[[rules]]\naction = \"allow\"\ntool = \"run\"\ncommand_prefix = \"npm run\"\nargv = [\"npm\"]\n",
        "t",
    )
    .unwrap_err();
    assert!(both.contains("not more"), "{both}");
    let rule = &parse(
        "[[rules]]\naction = \"allow\"\ntool = \"run\"\ncommand_prefix = \"npm run test\"\n",
        "t",
    )
    .unwrap()[0];
    assert_eq!(rule.spec().check("other").unwrap(), *rule);
    assert!(
        rule.spec()
            .describe()
            .contains("command_prefix \"npm run test\"")
    );
}
