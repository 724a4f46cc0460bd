//! Rules and grants through the real binary: deny rules that no path, script
//! or wrapper gets around, scripts allowed only command by command,
//! `allow_always` saving a rule the next call is allowed by, `wicket grants`
//! and its revoke, and `wicket policy check`.

use crate::{Fixture, ToolRunner, lines, wicket};
use serde_json::Value;

const RULES: &str = r#"
[[rules]]
id = "no-push"
action = "deny"
tool = "run"
argv_prefix = ["git", "push"]

[[rules]]
id = "tests"
action = "allow"
tool = "run"
argv_prefix = ["cargo", "test"]
"#;

fn with_rules(extra: &str) -> Fixture {
    let f = Fixture::new();
    std::fs::write(f.home.join("rules.toml"), format!("{RULES}{extra}")).unwrap();
    f
}

fn run(f: &Fixture, argv: &[&str], answers: &str, extra: &[&str]) -> (Vec<Value>, i32) {
    let args = serde_json::json!({ "argv": argv }).to_string();
    let mut all = vec!["--answers", answers];
    all.extend_from_slice(extra);
    f.tool("run", &args, &all)
}

fn cards(out: &[Value]) -> usize {
    out.iter().filter(|line| line["type"] == "card").count()
}

#[test]
fn a_deny_on_git_push_blocks_every_spelling_and_a_substitution_gets_its_card() {
    let f = with_rules("");
    for argv in [
        &["git", "push"][..],
        &["/usr/bin/git", "push"],
        &["sh", "-c", "git push"],
        &["sh", "-c", "echo x; git push origin"],
    ] {
        // Even a person who would allow it is never asked: the rule refuses first.
        let (out, code) = run(&f, argv, "allow_once", &[]);
        assert_eq!((cards(&out), code), (0, 1), "{argv:?}: {out:?}");
        let error = &out[0]["error"];
        assert_eq!(error["kind"], "denied", "{argv:?}");
        assert!(
            error["message"].as_str().unwrap().contains("no-push"),
            "{error}"
        );
    }
    // `$(echo git) push` cannot be read, so no rule allows (or denies) it: a card.
    let (out, code) = run(&f, &["sh", "-c", "$(echo git) push"], "deny", &[]);
    assert_eq!((cards(&out), code), (1, 1), "{out:?}");
}

#[test]
fn a_script_goes_through_only_when_each_of_its_commands_is_allowed() {
    let allowed = with_rules(
        "\n[[rules]]\nid = \"fmt\"\naction = \"allow\"\ntool = \"run\"\nargv_prefix = [\"cargo\", \"fmt\"]\n",
    );
    let script = "cargo test && cargo fmt";
    let (out, code) = run(&allowed, &["sh", "-c", script], "deny", &["--session", "s"]);
    assert_eq!(cards(&out), 0, "{out:?}");
    // It ran without a card (what cargo made of an empty folder does not matter).
    assert_eq!(out.last().unwrap()["type"], "result", "{out:?} {code}");
    let log = wicket()
        .env("WICKET_HOME", &allowed.home)
        .args(["log", "s", "--json"])
        .output()
        .unwrap();
    let call = lines(&log)
        .into_iter()
        .find(|event| event["type"] == "tool_call")
        .unwrap();
    assert_eq!(
        call["allowed_by"],
        serde_json::json!({"rules": ["tests", "fmt"]})
    );
    // Without cargo fmt allowed, the same script raises its card.
    let only_tests = with_rules("");
    let (out, code) = run(&only_tests, &["sh", "-c", script], "deny", &[]);
    assert_eq!((cards(&out), code), (1, 1), "{out:?}");
}

#[test]
fn allow_always_saves_a_rule_that_lets_the_next_call_through_until_revoked() {
    let f = Fixture::new();
    let args = r#"{"path":"a.txt","content":"one\n"}"#;
    let (out, code) = f.tool(
        "write_file",
        args,
        &["--session", "s", "--answers", "allow_always"],
    );
    assert_eq!((cards(&out), code), (1, 0), "{out:?}");
    assert_eq!(out[0]["always"]["path"], "a.txt");
    let saved = std::fs::read_to_string(f.home.join("rules.toml")).unwrap();
    assert!(saved.contains("path = \"a.txt\""), "{saved}");
    // Another session, another day: no card, and the call says why.
    let args = r#"{"path":"a.txt","content":"two\n"}"#;
    let (out, code) = f.tool("write_file", args, &["--session", "t", "--answers", "deny"]);
    assert_eq!((cards(&out), code), (0, 0), "{out:?}");
    assert_eq!(
        std::fs::read_to_string(f.ws.join("a.txt")).unwrap(),
        "two\n"
    );
    // The grants list it with its origin; a revoke takes it back.
    let listing = wicket()
        .env("WICKET_HOME", &f.home)
        .args(["grants", "--json"])
        .output()
        .unwrap();
    let rules = lines(&listing);
    assert_eq!(rules.len(), 1, "{rules:?}");
    assert_eq!(rules[0]["kind"], "rule");
    assert_eq!(rules[0]["origin"]["session"], "s");
    let id = rules[0]["id"].as_str().unwrap().to_string();
    let checked = wicket()
        .env("WICKET_HOME", &f.home)
        .args(["policy", "check", "t"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&checked.stdout);
    assert!(text.contains(&format!("allowed by rule {id}")), "{text}");
    assert!(
        text.contains("1 calls: 0 card, 1 allowed, 0 denied, 0 free"),
        "{text}"
    );
    let revoked = wicket()
        .env("WICKET_HOME", &f.home)
        .args(["grants", "revoke", &id])
        .output()
        .unwrap();
    assert_eq!(revoked.status.code(), Some(0));
    let (out, code) = f.tool(
        "write_file",
        r#"{"path":"a.txt","content":"three\n"}"#,
        &["--answers", "deny"],
    );
    assert_eq!(
        (cards(&out), code),
        (1, 1),
        "a revoked rule asks again: {out:?}"
    );
}

#[test]
fn a_session_grant_is_listed_and_revoked_and_then_asks_again() {
    let f = Fixture::new();
    let args = r#"{"argv":["true"]}"#;
    f.tool(
        "run",
        args,
        &["--session", "s", "--answers", "allow_session"],
    );
    let listing = wicket()
        .env("WICKET_HOME", &f.home)
        .args(["grants", "--session", "s", "--json"])
        .output()
        .unwrap();
    let grants = lines(&listing);
    assert_eq!(grants.len(), 1, "{grants:?}");
    assert_eq!(grants[0]["kind"], "session_grant");
    assert!(
        grants[0]["origin"]["card"]
            .as_str()
            .unwrap()
            .starts_with("card-")
    );
    let id = grants[0]["id"].as_str().unwrap();
    let (out, _) = f.tool("run", args, &["--session", "s"]);
    assert_eq!(cards(&out), 0);
    let revoked = wicket()
        .env("WICKET_HOME", &f.home)
        .args(["grants", "revoke", id, "--session", "s"])
        .output()
        .unwrap();
    assert_eq!(
        revoked.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&revoked.stderr)
    );
    let (out, code) = f.tool("run", args, &["--session", "s", "--answers", "deny"]);
    assert_eq!((cards(&out), code), (1, 1), "{out:?}");
}

#[test]
fn a_workspace_allow_rule_is_ignored_and_its_deny_holds() {
    let f = Fixture::new();
    std::fs::create_dir_all(f.ws.join(".wicket")).unwrap();
    std::fs::write(
        f.ws.join(".wicket/config.toml"),
        "[[rules]]\naction = \"allow\"\ntool = \"run\"\nargv_prefix = [\"true\"]\n\
         [[rules]]\naction = \"deny\"\ntool = \"write\"\npath = \"*.lock\"\n",
    )
    .unwrap();
    let (out, code) = run(&f, &["true"], "deny", &[]);
    assert_eq!(
        (cards(&out), code),
        (1, 1),
        "the repository cannot allow: {out:?}"
    );
    let (out, code) = f.tool(
        "write_file",
        r#"{"path":"Cargo.lock","content":"x"}"#,
        &["--answers", "allow_once"],
    );
    assert_eq!((cards(&out), code), (0, 1), "{out:?}");
    assert!(!f.ws.join("Cargo.lock").exists());
}
