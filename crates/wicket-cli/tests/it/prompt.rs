//! What the model reads, snapshotted: the system prompt and the tool specs
//! in each sandbox mode (workspace-write, off, and a machine that cannot
//! confine a command), so a change to any word is seen in review.

use wicket_gate::sandbox::SandboxSettings;
use wicket_os::launch::Availability;
use wicket_protocol::card::SandboxMode;

/// A kernel that gives every layer.
fn every_layer() -> Availability {
    Availability {
        overlay: Default::default(),
        launcher: true,
        landlock_abi: Some(5),
        namespaces: true,
        mounts: true,
        seccomp: true,
        cgroup: true,
        root: false,
    }
}

fn prompt_in(mode: SandboxMode, available: &Availability) -> String {
    let f = crate::Fixture::new();
    let workspace = wicket_tools::Workspace::open(&f.ws).unwrap();
    let sandbox = SandboxSettings {
        mode,
        ..SandboxSettings::default()
    };
    let sentence = sandbox.prompt_sentence_with(available);
    let (prompt, _) = wicket_core::turn::system_prompt(
        &workspace,
        &[],
        &sentence,
        true,
        &[],
        std::path::Path::new(""),
    );
    prompt.replace(&workspace.root().display().to_string(), "[WORKSPACE]")
}

#[test]
fn the_prompt_and_specs_read_the_same_in_each_sandbox_mode() {
    let jailed = prompt_in(SandboxMode::WorkspaceWrite, &every_layer());
    let off = prompt_in(SandboxMode::Off, &every_layer());
    let unavailable = prompt_in(SandboxMode::WorkspaceWrite, &Availability::default());
    insta::assert_snapshot!("prompt_workspace_write", jailed);
    insta::assert_snapshot!("prompt_off", off);
    insta::assert_snapshot!("prompt_unavailable", unavailable);
    assert!(jailed.contains("\"network\": true") && jailed.contains("/tmp"));
    assert!(!off.contains("jail") && !unavailable.contains("jail"));
    assert!(jailed.contains("Each runs in a jail that writes only the workspace"));
    // The specs are the same in every mode: nothing in them says what the mode is.
    let specs: Vec<serde_json::Value> = wicket_protocol::schema::tool_specs()
        .into_iter()
        .map(|spec| {
            serde_json::json!({
                "name": spec.name,
                "description": spec.description,
                "parameters": spec.parameters,
            })
        })
        .collect();
    let specs = serde_json::to_string_pretty(&specs).unwrap();
    for claim in ["sandboxed", "runs in a jail", "read-only by default"] {
        assert!(!specs.contains(claim), "{claim}");
    }
    insta::assert_snapshot!("tool_specs", specs);
}

/// Every error kind a call can meet on its own, each from a real call
/// through `wicket tool`, its text as the model reads it.
#[test]
fn every_error_kind_reads_the_same_through_the_binary() {
    use crate::ToolRunner;
    let f = crate::Fixture::new();
    f.write("twice.txt", "same\nsame\n");
    f.write("big.txt", &"x".repeat(2 * 1024 * 1024));
    std::fs::create_dir(f.ws.join("dir")).unwrap();
    let fifo = f.ws.join("pipe");
    make_fifo(&fifo);
    let home_write = format!("{}/config.toml", f.home.display());
    let cases: Vec<(&str, &str, serde_json::Value, &[&str])> = vec![
        (
            "outside_workspace",
            "write_file",
            serde_json::json!({"path": "../escape", "content": "x"}),
            &["--answers", "allow_once"],
        ),
        (
            "denied",
            "write_file",
            serde_json::json!({"path": "new.txt", "content": "x"}),
            &["--answers", "deny"],
        ),
        (
            "not_found",
            "read_file",
            serde_json::json!({"path": "missing.txt"}),
            &[],
        ),
        (
            "too_large",
            "search_replace",
            serde_json::json!({"path": "big.txt", "old": "x", "new": "y"}),
            &["--answers", "allow_once"],
        ),
        (
            "not_unique",
            "search_replace",
            serde_json::json!({"path": "twice.txt", "old": "same", "new": "other"}),
            &["--answers", "allow_once"],
        ),
        (
            "no_match",
            "search_replace",
            serde_json::json!({"path": "a.txt", "old": "gamma", "new": "delta"}),
            &["--answers", "allow_once"],
        ),
        (
            "special_file",
            "read_file",
            serde_json::json!({"path": "pipe"}),
            &[],
        ),
        (
            "invalid_args",
            "read_file",
            serde_json::json!({"path": "a.txt", "line": 0}),
            &[],
        ),
        (
            "invalid_args (a shell line)",
            "run",
            serde_json::json!({"command": "ls -la"}),
            &[],
        ),
        (
            "invalid_args (old equals new)",
            "search_replace",
            serde_json::json!({"path": "a.txt", "old": "beta", "new": "beta"}),
            &[],
        ),
        (
            "invalid_args (a folder)",
            "read_file",
            serde_json::json!({"path": "dir"}),
            &[],
        ),
        (
            "forbidden",
            "write_file",
            serde_json::json!({"path": home_write, "content": "x"}),
            &["--answers", "allow_once"],
        ),
    ];
    let mut text = String::new();
    for (kind, tool, args, extra) in &cases {
        let (out, _) = f.tool(tool, &args.to_string(), extra);
        let last = out.last().unwrap_or_else(|| panic!("{kind}: no output"));
        let error = &last["error"];
        let wire = kind.split(' ').next().unwrap_or(kind);
        assert_eq!(error["kind"], *wire, "{kind}: {last:#}");
        let message = error["message"].as_str().unwrap_or_default();
        let message = message
            .replace(&f.root.display().to_string(), "[ROOT]")
            .replace(&f.home.display().to_string(), "[HOME]");
        text.push_str(&format!("{kind} ({tool}): {message}\n"));
    }
    insta::assert_snapshot!("error_kinds", text);
}

fn make_fifo(path: &std::path::Path) {
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        path,
        rustix::fs::Mode::from_raw_mode(0o600),
    )
    .unwrap();
}

/// The fake OpenAI server's POSTed request bodies, in order.
fn posted(fake: &wicket_fake::FakeServer) -> Vec<String> {
    fake.requests()
        .into_iter()
        .filter(|request| request.method == "POST")
        .map(|request| request.body.to_string())
        .collect()
}

/// `wicket exec` against `fake`, its model `openai:gpt-test`.
fn exec_on(
    f: &crate::Fixture,
    fake: &wicket_fake::FakeServer,
    extra: &[&str],
) -> std::process::Command {
    let mut args = vec!["--model", "openai:gpt-test"];
    args.extend_from_slice(extra);
    let mut command = crate::exec::exec(f, "do it", &args);
    command
        .env("OPENAI_BASE_URL", fake.base_url())
        .env("OPENAI_API_KEY", "test-key");
    command
}

#[test]
fn a_denials_reason_reaches_the_next_request_and_a_policy_denial_does_not_say_ask() {
    use wicket_fake::{FakeReply, FakeServer, Step, Wire};
    let write = || {
        Step::Reply(FakeReply::tool_call(
            "call_w",
            "write_file",
            r#"{"path": "a.txt", "content": "new\n"}"#,
        ))
    };
    let f = crate::Fixture::new();
    let fake = FakeServer::start(Wire::OpenAi);
    fake.push(write());
    fake.push(Step::Reply(FakeReply::text("left it")));
    let (events, code) = crate::exec::converse(
        exec_on(&f, &fake, &[]),
        &[r#"{"answer": "deny", "reason": "the fixture must stay as it is"}"#],
        &[],
    );
    assert_eq!(code, 0, "{events:#?}");
    let last = posted(&fake).pop().unwrap();
    assert!(
        last.contains(r#"The person denied the write to"#)
            && last.contains(r#"Their reason: \\\"the fixture must stay as it is\\\"."#)
            && last.contains("say why with ask"),
        "{last}"
    );
    assert_eq!(f.read("a.txt"), "alpha\nbeta\n");

    // Under --answers deny no one can be asked, and the text does not say to.
    let f = crate::Fixture::new();
    let fake = FakeServer::start(Wire::OpenAi);
    fake.push(write());
    fake.push(Step::Reply(FakeReply::text("left it")));
    let output = exec_on(&f, &fake, &["--json", "--answers", "deny"])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let last = posted(&fake).pop().unwrap();
    assert!(
        last.contains("The --answers policy denied the write to")
            && last.contains("no person is answering in this run")
            && last.contains("no person answers in this run: a fixed policy answers each one")
            && !last.contains("with ask"),
        "neither the prompt nor the result says to ask: {last}"
    );
}

#[test]
fn the_request_after_a_failed_curl_carries_the_network_note() {
    use wicket_fake::{FakeReply, FakeServer, Step, Wire};
    let f = crate::Fixture::new();
    let fake = FakeServer::start(Wire::OpenAi);
    // `.invalid` never resolves (RFC 6761), with a network or without.
    fake.push(Step::Reply(FakeReply::tool_call(
        "call_c",
        "run",
        r#"{"argv": ["curl", "-sS", "http://wicket-test.invalid/"]}"#,
    )));
    fake.push(Step::Reply(FakeReply::text("no network")));
    let (events, code) = crate::exec::converse(exec_on(&f, &fake, &[]), &["allow_once"], &[]);
    assert_eq!(code, 0, "{events:#?}");
    let last = posted(&fake).pop().unwrap();
    assert!(last.contains("Could not resolve host"), "{last}");
    assert!(
        last.contains(r#"the command has no network; if it needs one, run it again with \\\"network\\\": true"#),
        "{last}"
    );
}

/// Started in a subfolder of the workspace, exec reads the AGENTS.md and
/// CLAUDE.md of each folder from the root down to it; the person's Claude
/// Code skills (`~/.claude/skills`) are offered beside Wicket's.
#[test]
fn exec_in_a_subfolder_reads_its_instructions_and_the_persons_claude_skills() {
    let f = crate::Fixture::new();
    f.write("CLAUDE.md", "root rule\n");
    f.write("sub/CLAUDE.md", "sub rule\n");
    f.write("other/AGENTS.md", "other rule\n");
    let user = f.home.join("user");
    let skill = user.join(".claude/skills/notes");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: notes\ndescription: Keep notes\n---\nWrite notes in NOTES.md.\n",
    )
    .unwrap();
    let model = crate::exec::script(
        &f,
        "skill.json",
        serde_json::json!([
            {"tool_calls": [{"name": "use_skill", "arguments": {"name": "notes"}}]},
            {"text": "done"}
        ]),
    );
    let output = crate::exec::exec(
        &f,
        "go",
        &["--model", &model, "--json", "--answers", "deny"],
    )
    .current_dir(f.ws.join("sub"))
    .env("HOME", &user)
    .stdin(std::process::Stdio::null())
    .output()
    .unwrap();
    let events = crate::lines(&output);
    assert_eq!(output.status.code(), Some(0), "{events:#?}");
    let read = events
        .iter()
        .find(|event| event["type"] == "notice" && event["key"] == "instructions")
        .unwrap_or_else(|| panic!("{events:#?}"));
    assert_eq!(
        read["message"],
        "instructions read: CLAUDE.md, sub/CLAUDE.md"
    );
    let skill = events
        .iter()
        .find(|event| event["type"] == "tool_result")
        .unwrap();
    assert_eq!(
        skill["output"]["instructions"], "Write notes in NOTES.md.\n",
        "{skill}"
    );
}
