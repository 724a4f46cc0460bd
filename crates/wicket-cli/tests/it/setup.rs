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
        notices
            .iter()
            .any(|n| n.contains("Read(./.env)") && n.contains("need no card")),
        "{notices:#?}"
    );
    assert!(!f.ws.join("denied").exists() && !f.ws.join("allowed").exists());
}
