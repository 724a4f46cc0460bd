//! Hooks in Claude Code's shapes, through the real binary: a Python hook
//! written for Claude Code denies a command, a workspace's hook asks first
//! and cannot allow, failures fail closed (or are ignored when told), a
//! PostToolUse note reaches the model's next request, a Notification fires
//! when a card opens, and a blocked prompt never reaches the model.

use crate::exec::{converse, exec, script};
use crate::{Fixture, ending};
use serde_json::{Value, json};
use wicket_fake::{FakeReply, FakeServer, Step, Wire};

/// A Claude Code PreToolUse hook, unchanged: it reads the call on stdin and
/// denies a `run` whose argv holds `rm`.
const DENY_RM: &str = r#"import json, sys
data = json.load(sys.stdin)
command = data.get("tool_input", {}).get("command", "")
if data["hook_event_name"] == "PreToolUse" and "rm" in command.split():
    print(json.dumps({"hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "permissionDecision": "deny",
        "permissionDecisionReason": "rm is not allowed in this repository"}}))
"#;

/// A hook that lets every call through without a card.
const ALLOW_ALL: &str = r#"import json, sys
json.load(sys.stdin)
print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}))
"#;

/// Writes a hook script into the workspace (the jail hides the rest of
/// /tmp, where the fixture lives) and returns its argv.
fn python_hook(f: &Fixture, name: &str, body: &str) -> String {
    let dir = f.ws.join(".hooks");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, body).unwrap();
    format!(r#"["python3", "{}"]"#, path.display())
}

fn home_config(f: &Fixture, text: &str) {
    std::fs::write(f.home.join("config.toml"), text).unwrap();
}

/// `wicket exec` of a script model, cards answered with `answers`.
fn run_script(f: &Fixture, replies: Value, answers: &[&str]) -> (Vec<Value>, i32) {
    let model = script(f, "hooked.json", replies);
    converse(exec(f, "go", &["--model", &model]), answers, &[])
}

fn of_type<'e>(events: &'e [Value], kind: &str) -> Vec<&'e Value> {
    events
        .iter()
        .filter(|event| event["type"] == kind)
        .collect()
}

fn run_rm() -> Value {
    json!([
        {"tool_calls": [{"name": "run", "arguments": {"argv": ["rm", "-rf", "src"]}}]},
        {"text": "done"}
    ])
}

#[test]
fn a_claude_code_hook_denies_rm_and_the_model_gets_its_reason() {
    let f = Fixture::new();
    let hook = python_hook(&f, "deny_rm.py", DENY_RM);
    home_config(
        &f,
        &format!(
            "[[hooks.pre_tool_use]]\nname = \"no-rm\"\nmatcher = \"Bash\"\ncommand = {hook}\n"
        ),
    );
    std::fs::create_dir_all(f.ws.join("src")).unwrap();
    // Even a person who would allow it is never asked.
    let (events, code) = run_script(&f, run_rm(), &[]);
    assert_eq!(code, 0, "{events:#?}");
    assert!(of_type(&events, "card").is_empty(), "{events:#?}");
    let result = of_type(&events, "tool_result")[0];
    assert_eq!(result["error"]["kind"], "denied");
    let message = result["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("no-rm") && message.contains("rm is not allowed in this repository"),
        "{message}"
    );
    let hook = of_type(&events, "hook")[0];
    assert_eq!(
        (&hook["event"], &hook["name"], &hook["outcome"]),
        (&json!("PreToolUse"), &json!("no-rm"), &json!("block"))
    );
    assert!(hook["duration_ms"].is_u64(), "{hook}");
    assert!(f.ws.join("src").exists(), "the command never ran");
}

#[test]
fn a_home_hook_that_allows_skips_the_card_and_says_so() {
    let f = Fixture::new();
    let hook = python_hook(&f, "allow.py", ALLOW_ALL);
    home_config(
        &f,
        &format!(
            "[[hooks.pre_tool_use]]\nname = \"trusted\"\nmatcher = \"run\"\ncommand = {hook}\n"
        ),
    );
    let replies = json!([
        {"tool_calls": [{"name": "run", "arguments": {"argv": ["touch", "made"]}}]},
        {"text": "done"}
    ]);
    let (events, code) = run_script(&f, replies, &[]);
    assert_eq!(code, 0, "{events:#?}");
    assert!(of_type(&events, "card").is_empty(), "{events:#?}");
    let call = of_type(&events, "tool_call")[0];
    assert_eq!(call["allowed_by"], json!({"hook": "trusted"}));
    assert!(f.ws.join("made").exists());
}

#[test]
fn a_workspace_hook_asks_for_its_own_card_first_and_cannot_allow() {
    let f = Fixture::new();
    let deny = python_hook(&f, "deny_rm.py", DENY_RM);
    let allow = python_hook(&f, "allow.py", ALLOW_ALL);
    std::fs::create_dir_all(f.ws.join(".wicket")).unwrap();
    std::fs::write(
        f.ws.join(".wicket/config.toml"),
        format!(
            "[[hooks.pre_tool_use]]\ncommand = {deny}\n[[hooks.pre_tool_use]]\ncommand = {allow}\n"
        ),
    )
    .unwrap();
    std::fs::create_dir_all(f.ws.join("src")).unwrap();
    // Both hooks' own cards first; then the deny holds.
    let (events, code) = run_script(&f, run_rm(), &["allow_session", "allow_session"]);
    assert_eq!(code, 0, "{events:#?}");
    let cards = of_type(&events, "card");
    assert_eq!(cards.len(), 2, "{events:#?}");
    assert!(
        cards.iter().all(|card| card["source"] == "hook"),
        "{cards:#?}"
    );
    assert_eq!(
        of_type(&events, "tool_result")[0]["error"]["kind"],
        "denied"
    );
    // The allow of a repository's hook is not an allow: the call's own card comes up.
    let replies = json!([
        {"tool_calls": [{"name": "run", "arguments": {"argv": ["touch", "made"]}}]},
        {"text": "done"}
    ]);
    let model = script(&f, "touch.json", replies);
    let (events, _) = converse(
        exec(&f, "go", &["--model", &model]),
        &["allow_once", "allow_once", "deny"],
        &[],
    );
    let cards = of_type(&events, "card");
    assert_eq!(cards.len(), 3, "{events:#?}");
    assert_eq!(cards[2]["argv"], json!(["touch", "made"]));
    assert!(of_type(&events, "tool_call")[0].get("allowed_by").is_none());
    assert!(!f.ws.join("made").exists());
}

#[test]
fn a_pre_tool_use_hook_that_fails_blocks_unless_told_to_be_ignored() {
    let hang = "[[hooks.pre_tool_use]]\ncommand = [\"sleep\", \"30\"]\ntimeout_s = 1\n";
    let crash = "[[hooks.pre_tool_use]]\ncommand = [\"sh\", \"-c\", \"exit 1\"]\n";
    let ignored =
        "[[hooks.pre_tool_use]]\ncommand = [\"sh\", \"-c\", \"exit 1\"]\non_error = \"ignore\"\n";
    let told =
        "[[hooks.pre_tool_use]]\ncommand = [\"sh\", \"-c\", \"echo 'not on main' >&2; exit 2\"]\n";
    let replies = || {
        json!([
            {"tool_calls": [{"name": "run", "arguments": {"argv": ["touch", "made"]}}]},
            {"text": "done"}
        ])
    };
    for (config, said) in [(hang, "timeout"), (crash, "failed"), (told, "not on main")] {
        let f = Fixture::new();
        home_config(&f, config);
        let (events, code) = run_script(&f, replies(), &[]);
        assert_eq!(code, 0, "{events:#?}");
        assert!(of_type(&events, "card").is_empty(), "{config}: {events:#?}");
        let error = &of_type(&events, "tool_result")[0]["error"];
        assert_eq!(error["kind"], "denied", "{config}");
        assert!(
            error["message"].as_str().unwrap().contains(said),
            "{config}: {error}"
        );
        assert!(!f.ws.join("made").exists());
    }
    // on_error = "ignore": the failure is logged, and the call goes to its card.
    let f = Fixture::new();
    home_config(&f, ignored);
    let (events, _) = run_script(&f, replies(), &["deny"]);
    assert_eq!(of_type(&events, "card").len(), 1, "{events:#?}");
    let hook = of_type(&events, "hook")[0];
    assert_eq!(
        (&hook["outcome"], &hook["ignored"]),
        (&json!("error"), &json!(true))
    );
}

/// A PostToolUse formatter that keeps what it was given (in the workspace,
/// where the jail lets it write) and leaves the model a note.
const FORMATTER: &str = r#"import json, sys
data = json.load(sys.stdin)
with open("post-seen.json", "w") as seen:
    json.dump(data, seen)
print(json.dumps({"hookSpecificOutput": {"hookEventName": "PostToolUse",
    "additionalContext": "formatted " + data["wicket_input"]["path"]}}))
"#;

#[test]
fn a_post_tool_use_hook_sees_the_call_and_its_note_reaches_the_next_request() {
    let f = Fixture::new();
    let hook = python_hook(&f, "fmt.py", FORMATTER);
    home_config(
        &f,
        &format!(
            "[[hooks.post_tool_use]]\nname = \"fmt\"\nmatcher = \"write_file\"\ncommand = {hook}\n"
        ),
    );
    let fake = FakeServer::start(Wire::OpenAi);
    fake.push(Step::Reply(FakeReply::tool_call(
        "call_w1",
        "write_file",
        r#"{"path": "a.txt", "content": "one\n"}"#,
    )));
    fake.push(Step::Reply(FakeReply::text("written")));
    let mut command = exec(&f, "write a", &["--model", "openai:gpt-test"]);
    command
        .env("OPENAI_BASE_URL", fake.base_url())
        .env("OPENAI_API_KEY", "test-key");
    let (events, code) = converse(command, &["allow_once"], &[]);
    assert_eq!(code, 0, "{events:#?}");
    assert_eq!(ending(&events)["type"], "result");
    let seen: Value =
        serde_json::from_slice(&std::fs::read(f.ws.join("post-seen.json")).unwrap()).unwrap();
    assert_eq!(seen["hook_event_name"], "PostToolUse");
    assert_eq!(seen["tool_name"], "Write");
    assert_eq!(seen["wicket_tool"], "write_file");
    assert_eq!(seen["wicket_input"]["path"], "a.txt");
    assert_eq!(seen["tool_input"]["content"], "one\n");
    assert_eq!(seen["tool_response"]["bytes"], 4);
    assert_eq!(seen["tool_use_id"], "call_w1");
    assert_eq!(
        seen["tool_input"]["file_path"],
        f.ws.join("a.txt").display().to_string()
    );
    assert_eq!(seen["cwd"], f.ws.display().to_string());
    let requests: Vec<_> = fake
        .requests()
        .into_iter()
        .filter(|request| request.method == "POST")
        .collect();
    let last = requests.last().unwrap().body.to_string();
    assert!(last.contains("[hook fmt] formatted a.txt"), "{last}");
}

#[test]
fn a_notification_hook_fires_when_a_card_opens_with_the_cards_kind() {
    let f = Fixture::new();
    let hook = python_hook(
        &f,
        "notify.py",
        "import json, sys\ndata = json.load(sys.stdin)\nopen('notified.json', 'w').write(json.dumps(data))\n",
    );
    home_config(&f, &format!("[[hooks.notification]]\ncommand = {hook}\n"));
    let replies = json!([
        {"tool_calls": [{"name": "run", "arguments": {"argv": ["touch", "made"]}}]},
        {"text": "done"}
    ]);
    let (events, _) = run_script(&f, replies, &["deny"]);
    let card = of_type(&events, "card")[0];
    let notified: Value =
        serde_json::from_slice(&std::fs::read(f.ws.join("notified.json")).unwrap()).unwrap();
    assert_eq!(notified["hook_event_name"], "Notification");
    assert_eq!(notified["notification_type"], "permission_prompt");
    assert_eq!(notified["card_kind"], "run");
    assert_eq!(notified["card_id"], card["id"]);
}

#[test]
fn a_prompt_a_hook_blocks_never_reaches_the_model() {
    let f = Fixture::new();
    home_config(
        &f,
        "[[hooks.user_prompt_submit]]\nname = \"no-secrets\"\ncommand = [\"sh\", \"-c\", \"grep -q password && echo 'no passwords in prompts' >&2 && exit 2; exit 0\"]\n",
    );
    let fake = FakeServer::start(Wire::OpenAi);
    let mut command = exec(
        &f,
        "my password is hunter2",
        &["--model", "openai:gpt-test"],
    );
    command
        .env("OPENAI_BASE_URL", fake.base_url())
        .env("OPENAI_API_KEY", "test-key");
    let (events, code) = converse(command, &[], &[]);
    assert_eq!(code, 1, "{events:#?}");
    let error = ending(&events);
    assert_eq!(error["type"], "error");
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains("no-secrets") && message.contains("no passwords in prompts"),
        "{message}"
    );
    assert!(
        fake.requests()
            .iter()
            .all(|request| request.method != "POST"),
        "no model request"
    );
    assert!(of_type(&events, "user_message").is_empty(), "{events:#?}");
}

#[test]
fn session_start_tells_the_model_and_session_end_runs_as_exec_leaves() {
    let f = Fixture::new();
    home_config(
        &f,
        "[[hooks.session_start]]\nname = \"branch\"\ncommand = [\"sh\", \"-c\", \"grep -q '\\\"source\\\":\\\"startup\\\"' && echo 'on branch main'\"]\n\
         [[hooks.session_end]]\ncommand = [\"sh\", \"-c\", \"cat > ended.json\"]\n",
    );
    let fake = FakeServer::start(Wire::OpenAi);
    fake.push(Step::Reply(FakeReply::text("hi")));
    let mut command = exec(&f, "hello", &["--model", "openai:gpt-test"]);
    command
        .env("OPENAI_BASE_URL", fake.base_url())
        .env("OPENAI_API_KEY", "test-key");
    let (events, code) = converse(command, &[], &[]);
    assert_eq!(code, 0, "{events:#?}");
    let request = fake
        .requests()
        .into_iter()
        .find(|request| request.method == "POST")
        .unwrap()
        .body
        .to_string();
    assert!(
        request.contains("[hook branch] on branch main"),
        "{request}"
    );
    let ended: Value =
        serde_json::from_slice(&std::fs::read(f.ws.join("ended.json")).unwrap()).unwrap();
    assert_eq!(
        (&ended["hook_event_name"], &ended["reason"]),
        (&json!("SessionEnd"), &json!("exit"))
    );
}
