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
