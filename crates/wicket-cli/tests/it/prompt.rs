//! What the model reads, snapshotted: the system prompt and the tool specs
//! in each sandbox mode (workspace-write, off, and a machine that cannot
//! confine a command), so a change to any word is seen in review.

use wicket_gate::sandbox::SandboxSettings;
use wicket_os::launch::Availability;
use wicket_protocol::card::SandboxMode;

/// A kernel that gives every layer.
fn every_layer() -> Availability {
    Availability {
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
    let (prompt, _) = wicket_core::turn::system_prompt(&workspace, &[], &sentence);
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
