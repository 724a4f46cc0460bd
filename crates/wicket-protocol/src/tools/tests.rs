use super::*;

#[test]
fn the_names_other_agents_use_are_read_as_ours() {
    let edit = ToolCall::parse(
        "search_replace",
        serde_json::json!({"file_path": "a.rs", "old_string": "x", "new_string": "y"}),
    )
    .unwrap();
    let ToolCall::SearchReplace(edit) = edit else {
        panic!("search_replace");
    };
    assert_eq!(
        (edit.path.as_str(), edit.old.as_str(), edit.new.as_str()),
        ("a.rs", "x", "y")
    );
    let short = ToolCall::parse(
        "search_replace",
        serde_json::json!({"path": "a.rs", "old_str": "x", "new_str": "y"}),
    );
    assert!(short.is_ok(), "{short:?}");
    for (tool, args) in [
        ("read_file", serde_json::json!({"file_path": "a.rs"})),
        (
            "write_file",
            serde_json::json!({"file_path": "a.rs", "content": ""}),
        ),
    ] {
        assert!(ToolCall::parse(tool, args).is_ok(), "{tool}");
    }
    // A shell line as `command` is answered with the argv that runs it.
    let error =
        ToolCall::parse("run", serde_json::json!({"command": "ls -la | wc -l"})).unwrap_err();
    assert!(
        error
            .message
            .contains(r#"{"argv":["sh","-c","ls -la | wc -l"]}"#),
        "{}",
        error.message
    );
}

fn no_mcp(_: &str) -> Option<(String, String)> {
    None
}

#[test]
fn parses_known_tools_and_rejects_unknown_ones() {
    let call = ToolCall::parse("read_file", serde_json::json!({"path": "a", "line": 3}));
    assert_eq!(
        call,
        Ok(ToolCall::ReadFile(ReadFileArgs {
            limit: Default::default(),
            path: "a".into(),
            offset: None,
            line: Some(3)
        }))
    );
    let error = ToolCall::parse("rm", serde_json::json!({})).unwrap_err();
    assert_eq!(error.kind, ErrorKind::InvalidArgs);
    let error = ToolCall::parse("run", serde_json::json!({"argv": "ls"})).unwrap_err();
    assert_eq!(error.kind, ErrorKind::InvalidArgs);
    let error = ToolCall::parse("list_dir", serde_json::json!({"pth": "x"})).unwrap_err();
    assert!(error.message.contains("pth"), "{}", error.message);
}

#[test]
fn core_calls_are_parsed_at_the_edge() {
    assert_eq!(
        Call::parse("finish", r#"{"result":"done"}"#, &no_mcp),
        Ok(Call::Core(CoreCall::Finish(FinishArgs {
            result: "done".into()
        })))
    );
    let (logged, error) = Call::parse("ask", "{nope", &no_mcp).unwrap_err();
    assert_eq!(logged, serde_json::json!("{nope"));
    assert_eq!(error.kind, ErrorKind::InvalidArgs);
    let (_, error) = Call::parse("mcp__x__y", "{}", &no_mcp).unwrap_err();
    assert!(error.message.contains("mcp__x__y"), "{}", error.message);
}

#[test]
fn absurd_nesting_is_refused_and_logged_as_text() {
    let deep = format!("{}{}", "[".repeat(126), "]".repeat(126));
    let raw = format!(r#"{{"path": {deep}}}"#);
    let (logged, error) = Call::parse("read_file", &raw, &no_mcp).unwrap_err();
    assert_eq!(error.kind, ErrorKind::InvalidArgs);
    assert!(error.message.contains("nest"), "{}", error.message);
    assert_eq!(logged, serde_json::Value::String(raw));
    let shallow = format!("{}{}", "[".repeat(60), "]".repeat(60));
    assert!(check_depth("x", &serde_json::from_str(&shallow).unwrap()).is_ok());
}

#[test]
fn outputs_round_trip_through_their_untagged_shape() {
    let outputs = [
        ToolOutput::ReadFile(ReadFileOutput {
            first_line: Default::default(),
            total_lines: Default::default(),
            note: Default::default(),
            content: "x".into(),
            size: 1,
            offset: 0,
            next_offset: None,
            next_line: None,
            binary: false,
        }),
        ToolOutput::Grep(GrepOutput {
            matches: vec![],
            truncated: false,
            note: None,
            hidden: 0,
        }),
        ToolOutput::ListDir(ListDirOutput {
            entries: vec![],
            omitted: 0,
            hidden: 0,
        }),
        ToolOutput::Write(WriteOutput {
            path: "/a".into(),
            bytes: 1,
            runs_later: None,
        }),
        ToolOutput::Run(RunOutput {
            note: Default::default(),
            net: Default::default(),
            runs_later: vec!["Makefile".into(), "sub/.envrc".into()],
            exit_code: Some(0),
            signal: None,
            timed_out: false,
            stdout: String::new(),
            stderr: String::new(),
            stdout_cut: 0,
            stderr_cut: 0,
            duration_ms: 1,
        }),
        ToolOutput::Reply(ReplyOutput { reply: "r".into() }),
        ToolOutput::Finish(FinishOutput { result: "r".into() }),
        ToolOutput::Skill(SkillOutput {
            name: "n".into(),
            instructions: "i".into(),
        }),
        ToolOutput::Mcp(McpOutput {
            server: "s".into(),
            tool: "t".into(),
            content: vec![McpContent::Text { text: "t".into() }],
            structured: None,
        }),
    ];
    for output in outputs {
        let json = serde_json::to_string(&output).unwrap();
        let back: ToolOutput = serde_json::from_str(&json).unwrap();
        assert_eq!(back, output, "{json}");
    }
}

#[test]
fn a_runs_result_names_what_runs_later_only_when_something_does() {
    let mut run = RunOutput {
        exit_code: Some(0),
        signal: None,
        timed_out: false,
        stdout: String::new(),
        stderr: String::new(),
        stdout_cut: 0,
        stderr_cut: 0,
        duration_ms: 1,
        net: Vec::new(),
        runs_later: Vec::new(),
        note: None,
    };
    let line = result_line(&Ok(ToolOutput::Run(run.clone())));
    assert!(line.get("runs_later").is_none(), "{line}");
    run.runs_later = vec!["GNUmakefile".into(), "sub/.cargo/config.toml".into()];
    let line = result_line(&Ok(ToolOutput::Run(run)));
    assert_eq!(
        line["runs_later"],
        serde_json::json!(["GNUmakefile", "sub/.cargo/config.toml"])
    );
}

#[test]
fn result_lines_have_the_contract_shape() {
    let ok = result_line(&Ok(ToolOutput::Grep(GrepOutput {
        matches: vec!["a:1:x".into()],
        truncated: false,
        note: None,
        hidden: 0,
    })));
    assert_eq!(
        ok,
        serde_json::json!({"type":"result","ok":true,"matches":["a:1:x"],"truncated":false})
    );
    let err = result_line(&Err(WireError::new(ErrorKind::Denied, "no")));
    assert_eq!(err["error"]["kind"], "denied");
    assert_eq!(err["ok"], false);
}

mod hostile {
    use proptest::prelude::*;

    use super::*;
    use crate::limits::ARGUMENTS_MAX_DEPTH;

    /// Cases: a fixed 256, so CI is the same size every time; a longer
    /// campaign sets `PROPTEST_CASES`.
    fn cases() -> u32 {
        std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|cases| cases.parse().ok())
            .unwrap_or(256)
    }

    /// Argument text as a model (or whoever is behind it) might send it.
    fn raw() -> impl Strategy<Value = String> {
        let field = prop_oneof![
            Just("path"),
            Just("content"),
            Just("argv"),
            Just("offset"),
            Just("line"),
            Just("old_string"),
            Just("new_string"),
            Just("pattern"),
            Just("question"),
            Just("result"),
            Just("name"),
            Just("timeout_s"),
            Just("extra"),
        ];
        let scalar = prop_oneof![
            any::<String>().prop_map(serde_json::Value::from),
            any::<i64>().prop_map(serde_json::Value::from),
            any::<u64>().prop_map(serde_json::Value::from),
            any::<f64>().prop_map(|n| serde_json::json!(n)),
            any::<bool>().prop_map(serde_json::Value::from),
            Just(serde_json::Value::Null),
            proptest::collection::vec(any::<String>(), 0..3).prop_map(serde_json::Value::from),
        ];
        prop_oneof![
            proptest::collection::vec((field, scalar), 0..5).prop_map(|fields| {
                let map: serde_json::Map<String, serde_json::Value> = fields
                    .into_iter()
                    .map(|(key, value)| (key.to_string(), value))
                    .collect();
                serde_json::Value::Object(map).to_string()
            }),
            (1usize..200).prop_map(|depth| format!(
                "{{\"path\":{}1{}}}",
                "[".repeat(depth),
                "]".repeat(depth)
            )),
            any::<String>(),
            Just(String::new()),
            Just("   ".to_string()),
        ]
    }

    fn name() -> impl Strategy<Value = String> {
        prop_oneof![
            proptest::sample::select(TOOL_NAMES.to_vec()).prop_map(str::to_string),
            proptest::sample::select(vec![
                "ask",
                "finish",
                "use_skill",
                "mcp__s__t",
                "mcp__gone__x"
            ])
            .prop_map(str::to_string),
            "[a-z_]{0,12}",
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(cases()))]

        /// Whatever the name and text, parsing never panics; a refusal
        /// is `invalid_args`, and what it would log parses back as JSON
        /// (a log line must always read again); nesting past the bound
        /// is always refused.
        #[test]
        fn any_call_parses_or_is_refused_with_a_loggable_value(name in name(), raw in raw()) {
            let mcp = |tool: &str| (tool == "mcp__s__t").then(|| ("s".to_string(), "t".to_string()));
            let deep = raw.starts_with("{\"path\":[")
                && raw.matches('[').count() > ARGUMENTS_MAX_DEPTH;
            match Call::parse(&name, &raw, &mcp) {
                Ok(_) => prop_assert!(!deep, "{raw}"),
                Err((logged, error)) => {
                    prop_assert_eq!(error.kind, ErrorKind::InvalidArgs);
                    let line = serde_json::to_string(&logged).unwrap();
                    prop_assert!(serde_json::from_str::<serde_json::Value>(&line).is_ok(), "{line}");
                }
            }
        }
    }
}
