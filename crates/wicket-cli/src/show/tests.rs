use super::*;
use wicket_protocol::OutsideReadCard;

fn write_card_of(path: &str, diff: String, bytes: u64, truncated: bool, tool: &str) -> Card {
    Card {
        id: "card-1".into(),
        ..Card::new(
            tool,
            CardKind::Write(WriteCard {
                path: path.into(),
                diff_bytes: bytes,
                diff,
                diff_truncated: truncated,
                digest: "absent".into(),
                outside: false,
                git: false,
                runs_later: None,
            }),
        )
    }
}

fn write_card() -> Card {
    let before = b"fn main() {\n    println!(\"hello\");\n}\n";
    let after = b"fn main() {\n    println!(\"hello, world\");\n}\n";
    let diff = wicket_gate::diff::unified("src/main.rs", Some(before), after);
    let bytes = diff.len() as u64;
    write_card_of(
        "/home/me/project/src/main.rs",
        diff,
        bytes,
        false,
        "search_replace",
    )
}

fn run_card_of(sandbox: SandboxSummary, source: RunSource, network: Network) -> Card {
    Card {
        id: "card-2".into(),
        ..Card::new(
            "run",
            CardKind::Run(RunCard {
                no_preview: Default::default(),
                managed: None,
                preview: Default::default(),
                read: Default::default(),
                argv: vec!["cargo".into(), "test".into(), "--".into(), "a b".into()],
                cwd: "crates/core".into(),
                timeout_s: Some(300),
                network,
                git: false,
                sandbox,
                source,
            }),
        )
    }
}

#[test]
fn a_write_card() {
    insta::assert_snapshot!(card(&write_card(), false));
}

#[test]
fn a_write_card_in_colour() {
    insta::assert_snapshot!(card(&write_card(), true).replace('\x1b', "<ESC>"));
}

#[test]
fn a_cut_write_card_says_how_big_the_diff_is() {
    let text: String = (0..3).map(|i| format!("+line {i}\n")).collect();
    let cut = write_card_of(
        "/home/me/project/big.txt",
        format!("--- /dev/null\n+++ b/big.txt\n@@ -1,0 +1,9000 @@\n{text}"),
        120_345,
        true,
        "write_file",
    );
    insta::assert_snapshot!(card(&cut, false));
}

#[test]
fn a_run_card_with_a_timeout() {
    let sandbox = SandboxSummary {
        complete: Default::default(),
        summary: Default::default(),
        mode: SandboxMode::WorkspaceWrite,
        network: false,
        layers: Vec::new(),
        note: None,
    };
    insta::assert_snapshot!(card(
        &run_card_of(sandbox, RunSource::Tool, Network::Off),
        false
    ));
}

#[test]
fn a_sub_tasks_card_is_shown_under_a_line_naming_it() {
    let sandbox = SandboxSummary {
        complete: Default::default(),
        summary: Default::default(),
        mode: SandboxMode::WorkspaceWrite,
        network: false,
        layers: Vec::new(),
        note: None,
    };
    let mut shown = run_card_of(sandbox, RunSource::Tool, Network::Off);
    shown.task = Some(Box::new(wicket_protocol::TaskRef {
        session: "s-child".into(),
        description: "clean up".into(),
    }));
    assert_eq!(
        card_summary(&shown),
        "sub-task: clean up: run cargo test -- a b"
    );
    insta::assert_snapshot!(card(&shown, false));
}

#[test]
fn a_run_card_that_asks_for_git_names_each_layer() {
    let sandbox = SandboxSummary {
        complete: Default::default(),
        summary: Default::default(),
        mode: SandboxMode::WorkspaceWrite,
        network: false,
        layers: vec![
            "mount namespace: the workspace writable, .git too".into(),
            "seccomp: no UNIX sockets".into(),
        ],
        note: None,
    };
    let mut git = run_card_of(sandbox, RunSource::Tool, Network::Off);
    if let CardKind::Run(run) = &mut git.kind {
        run.git = true;
    }
    insta::assert_snapshot!(card(&git, false));
}

#[test]
fn a_blank_run_in_a_diff_or_an_argv_shows_its_length() {
    let hidden = format!("+DEBUG = False{}; import os", " ".repeat(150));
    let write = write_card_of(
        "/ws/settings.py",
        format!("--- a/settings.py\n+++ b/settings.py\n@@ -1 +1 @@\n-DEBUG = True\n{hidden}\n"),
        200,
        false,
        "write_file",
    );
    assert!(card(&write, false).contains("+DEBUG = False␠×150; import os"));
    let sandbox = SandboxSummary {
        complete: Default::default(),
        summary: Default::default(),
        mode: SandboxMode::WorkspaceWrite,
        network: false,
        layers: Vec::new(),
        note: None,
    };
    let mut run = run_card_of(sandbox, RunSource::Tool, Network::Off);
    if let CardKind::Run(run) = &mut run.kind {
        run.argv = vec![
            "sh".into(),
            "-c".into(),
            format!("true{}; rm -rf ~", " ".repeat(40)),
        ];
    }
    assert!(
        card(&run, false).contains("\"true␠×40; rm -rf ~\""),
        "{}",
        card(&run, false)
    );
}

#[test]
fn a_workspace_hook_card_with_network_and_no_sandbox() {
    let sandbox = SandboxSummary {
        complete: Default::default(),
        summary: Default::default(),
        mode: SandboxMode::Unavailable,
        network: true,
        layers: Vec::new(),
        note: Some("this kernel has no Landlock: the command would run unconfined".into()),
    };
    insta::assert_snapshot!(card(
        &run_card_of(sandbox, RunSource::Hook, Network::Proxied),
        false
    ));
}

#[test]
fn an_outside_read_card() {
    let read = Card {
        id: "card-3".into(),
        ..Card::new(
            "grep",
            CardKind::OutsideRead(OutsideReadCard {
                path: "/etc".into(),
                reach: Reach::Grep,
            }),
        )
    };
    insta::assert_snapshot!(card(&read, false));
}

#[test]
fn an_mcp_card_shows_the_arguments_and_the_servers_claim() {
    let arguments = serde_json::json!({"path": "/srv/notes\u{1b}[2Jx.txt", "head": 3});
    let mcp = Card {
        id: "card-4".into(),
        ..Card::new(
            "read_text_file",
            CardKind::Mcp(McpCard {
                server: "fs".into(),
                arguments_text: serde_json::to_string_pretty(&arguments).unwrap(),
                arguments,
                arguments_truncated: false,
                annotations: Some(serde_json::json!({"readOnlyHint": true})),
            }),
        )
    };
    let shown = card(&mcp, false);
    assert!(!shown.contains('\x1b'));
    insta::assert_snapshot!(shown);
}

#[test]
fn a_spoofing_diff_is_shown_with_its_controls_visible() {
    let diff = "--- a/notes\n+++ b/notes\n@@ -1 +1,2 @@\n+echo pwned > ~/.bashrc\x1b[1A\x1b[2K\r+# just a comment\n".to_string();
    let bytes = diff.len() as u64;
    let spoof = write_card_of("/ws/notes\u{202e}txt.sh", diff, bytes, false, "write_file");
    let shown = card(&spoof, true);
    assert!(!shown.contains("\x1b[1A") && !shown.contains('\r') && !shown.contains('\u{202e}'));
    insta::assert_snapshot!(shown.replace("\x1b[", "<ESC>["));
}
