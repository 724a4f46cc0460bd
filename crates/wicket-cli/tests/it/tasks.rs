//! Sub-tasks through the binary: a parent's `task` calls start sessions of
//! their own under the parent's rules, hooks and grants; their cards come
//! in the parent's stream marked with the sub-task, are answered there,
//! and the parent's log and each child's tell one story.

use std::collections::HashMap;

use crate::exec::{converse, exec, script};
use crate::*;

/// A PreToolUse hook in Claude Code's shape that denies a command naming
/// `forbidden`, and says so.
const DENY_FORBIDDEN: &str = r#"import json, sys
data = json.load(sys.stdin)
command = data.get("tool_input", {}).get("command", "")
if "forbidden" in command.split():
    print(json.dumps({"hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "permissionDecision": "deny",
        "permissionDecisionReason": "forbidden is not to be touched"}}))
"#;

/// A fixture whose home denies `rm` by rule and `… forbidden` by hook.
fn guarded() -> Fixture {
    let f = Fixture::new();
    f.write("a.txt", "alpha\n");
    f.write("x.txt", "keep me\n");
    f.write(".hooks/deny.py", DENY_FORBIDDEN);
    std::fs::write(
        f.home.join("rules.toml"),
        "[[rules]]\nid = \"no-rm\"\naction = \"deny\"\ntool = \"run\"\nargv_prefix = [\"rm\"]\n",
    )
    .unwrap();
    std::fs::write(
        f.home.join("config.toml"),
        format!(
            "[[hooks.pre_tool_use]]\nname = \"no-forbidden\"\nmatcher = \"*\"\ncommand = [\"python3\", \"{}\"]\n",
            f.ws.join(".hooks/deny.py").display()
        ),
    )
    .unwrap();
    f
}

/// The parent starts two read tasks and one `all` task between two
/// commands; each child's replies are keyed by its prompt.
fn three_tasks() -> Value {
    json!({
        "replies": [
            {"tool_calls": [{"name": "run", "arguments": {"argv": ["echo", "parent"]}}]},
            {"tool_calls": [
                {"name": "task", "arguments": {"description": "read a", "prompt": "TASK-A: what does a.txt say?"}},
                {"name": "task", "arguments": {"description": "try to run", "prompt": "TASK-B: run echo", "tools": "read"}},
                {"name": "task", "arguments": {"description": "clean up", "prompt": "TASK-C: clean up", "tools": "all"}}
            ]},
            {"tool_calls": [{"name": "run", "arguments": {"argv": ["echo", "child"]}}]},
            {"tool_calls": [{"name": "finish", "arguments": {"result": "all done"}}]}
        ],
        "tasks": {
            "TASK-A": [
                {"tool_calls": [{"name": "read_file", "arguments": {"path": "a.txt"}}]},
                {"tool_calls": [{"name": "finish", "arguments": {"result": "a says alpha"}}]}
            ],
            "TASK-B": [
                {"tool_calls": [{"name": "run", "arguments": {"argv": ["echo", "b"]}}]},
                {"tool_calls": [{"name": "task", "arguments": {"description": "deeper", "prompt": "x"}}]},
                {"tool_calls": [{"name": "finish", "arguments": {"result": "b could not run"}}]}
            ],
            "TASK-C": [
                {"tool_calls": [{"name": "run", "arguments": {"argv": ["rm", "x.txt"]}}]},
                {"tool_calls": [{"name": "run", "arguments": {"argv": ["touch", "forbidden"]}}]},
                {"tool_calls": [{"name": "run", "arguments": {"argv": ["echo", "parent"]}}]},
                {"tool_calls": [{"name": "run", "arguments": {"argv": ["echo", "child"]}}]},
                {"tool_calls": [{"name": "finish", "arguments": {"result": "c done"}}]}
            ]
        }
    })
}

/// A session's log on disk.
pub(crate) fn log_of(f: &Fixture, session: &str) -> Vec<Value> {
    std::fs::read_to_string(f.home.join("sessions").join(session).join("log.jsonl"))
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

fn meta_of(f: &Fixture, session: &str) -> Value {
    serde_json::from_str(
        &std::fs::read_to_string(f.home.join("sessions").join(session).join("meta.json")).unwrap(),
    )
    .unwrap()
}

fn of_type<'e>(events: &'e [Value], kind: &str) -> Vec<&'e Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

/// Each child's session by its description, from the parent's `task` events.
fn children(events: &[Value]) -> HashMap<String, String> {
    of_type(events, "task")
        .into_iter()
        .map(|task| {
            (
                task["description"].as_str().unwrap().to_string(),
                task["session"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Every card the parent's stream showed for a child is the child's own
/// card, with the same answer in both logs.
fn one_story(f: &Fixture, parent: &[Value]) {
    let answers: HashMap<&str, &Value> = of_type(parent, "answer")
        .into_iter()
        .map(|answer| (answer["card"].as_str().unwrap(), &answer["answer"]))
        .collect();
    for card in of_type(parent, "card") {
        let Some(child) = card["task"]["session"].as_str() else {
            continue;
        };
        let log = log_of(f, child);
        let id = card["id"].as_str().unwrap();
        let own = of_type(&log, "card")
            .into_iter()
            .find(|own| own["id"] == id)
            .unwrap_or_else(|| panic!("the child's log has no card {id}: {log:#?}"));
        assert_eq!(own["argv"], card["argv"], "the same card");
        assert!(
            own.get("task").is_none(),
            "its own log needs no mark: {own}"
        );
        let answered = of_type(&log, "answer")
            .into_iter()
            .find(|answer| answer["card"] == id)
            .unwrap();
        assert_eq!(
            &answered["answer"], answers[id],
            "the same answer in both logs"
        );
    }
}

#[test]
fn sub_tasks_keep_the_parents_rules_hooks_and_grants_and_tell_one_story() {
    let f = guarded();
    let model = script(&f, "tasks.json", three_tasks());
    let (events, code) = converse(
        exec(&f, "go", &["--model", &model]),
        &["allow_session", "allow_session"],
        &[],
    );
    assert_eq!(code, 0, "{events:#?}");
    assert_eq!(ending(&events)["text"], "all done");
    let parent = events[0]["session"].as_str().unwrap().to_string();
    let tasks = children(&events);
    assert_eq!(tasks.len(), 3, "{events:#?}");

    // Two cards in all: the parent's first command, and the child's `echo
    // child`, shown in the parent marked with its sub-task. The child's
    // `echo parent` rode on the parent's grant, and the parent's `echo
    // child` on the child's.
    let cards = of_type(&events, "card");
    assert_eq!(cards.len(), 2, "{cards:#?}");
    assert!(cards[0].get("task").is_none(), "{}", cards[0]);
    assert_eq!(cards[1]["argv"], json!(["echo", "child"]));
    assert_eq!(
        cards[1]["task"],
        json!({"session": tasks["clean up"], "description": "clean up"})
    );

    // Each task's result is its child's finish.
    let results: Vec<&Value> = of_type(&events, "tool_result")
        .into_iter()
        .filter(|result| result["output"].get("task").is_some())
        .collect();
    let finished: HashMap<&str, &str> = results
        .iter()
        .map(|result| {
            (
                result["output"]["task"]["description"].as_str().unwrap(),
                result["output"]["result"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(finished["read a"], "a says alpha");
    assert_eq!(finished["try to run"], "b could not run");
    assert_eq!(finished["clean up"], "c done");

    // The deny rule and the hook held inside the child.
    assert!(f.ws.join("x.txt").exists(), "rm ran in the child");
    assert!(
        !f.ws.join("forbidden").exists(),
        "the hook's deny did not hold"
    );
    let c = log_of(&f, &tasks["clean up"]);
    let denied: Vec<&str> = of_type(&c, "tool_result")
        .into_iter()
        .filter(|result| result["error"]["kind"] == "denied")
        .map(|result| result["error"]["message"].as_str().unwrap())
        .collect();
    assert_eq!(denied.len(), 2, "{c:#?}");
    assert!(denied[0].contains("no-rm"), "{denied:?}");
    assert!(
        denied[1].contains("forbidden is not to be touched"),
        "{denied:?}"
    );
    assert!(
        of_type(&c, "hook")
            .iter()
            .any(|hook| hook["event"] == "PreToolUse"),
        "the PreToolUse hook ran for the child's calls: {c:#?}"
    );
    ending(&c);

    // A read task is offered reads only, and no task starts a task.
    let b = log_of(&f, &tasks["try to run"]);
    let refused: Vec<&str> = of_type(&b, "tool_result")
        .into_iter()
        .filter_map(|result| result["error"]["message"].as_str())
        .collect();
    assert!(
        refused[0].contains("offered only read_file, grep, list_dir, finish"),
        "{refused:?}"
    );
    assert!(
        refused[1].contains("cannot start a task of its own"),
        "{refused:?}"
    );

    // The children name their parent; the grants are the parent's.
    for child in tasks.values() {
        let meta = meta_of(&f, child);
        assert_eq!(meta["parent"], parent.as_str(), "{meta}");
        let call = meta["parent_call"].as_str().unwrap();
        assert!(
            of_type(&events, "task")
                .iter()
                .any(|task| task["call_id"] == call && task["session"] == child.as_str()),
            "{meta}"
        );
        assert!(
            meta["allowed"]["run"].as_array().is_none_or(Vec::is_empty),
            "{meta}"
        );
    }
    let granted = meta_of(&f, &parent)["allowed"]["run"].to_string();
    assert!(
        granted.contains("parent") && granted.contains("child"),
        "{granted}"
    );
    one_story(&f, &events);
}

#[test]
fn wicket_log_of_the_parent_shows_each_child_inline() {
    let f = guarded();
    let model = script(&f, "tasks.json", three_tasks());
    let (events, code) = converse(
        exec(&f, "go", &["--model", &model]),
        &["allow_session", "allow_session"],
        &[],
    );
    assert_eq!(code, 0, "{events:#?}");
    let parent = events[0]["session"].as_str().unwrap();
    let text = wicket()
        .env("WICKET_HOME", &f.home)
        .args(["log", parent])
        .succeeds();
    let text = String::from_utf8_lossy(&text.stdout).to_string();
    let lines: Vec<&str> = text.lines().collect();
    let started = lines
        .iter()
        .position(|line| line.contains("sub-task: read a"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        lines[started + 1].starts_with("  │ ") && lines[started + 2].contains("TASK-A"),
        "the child's events follow its start: {text}"
    );
    assert!(text.contains("  │ ") && text.contains("a says alpha"), "{text}");
    let json = wicket()
        .env("WICKET_HOME", &f.home)
        .args(["log", parent, "--json"])
        .succeeds();
    let inline: Vec<Value> = lines_of(&json)
        .into_iter()
        .filter(|event| event["task"]["description"] == "clean up" && event["type"] != "card")
        .collect();
    assert!(
        inline.iter().any(|event| event["type"] == "turn_ended"),
        "the child's own events, marked with it: {inline:#?}"
    );
}

fn lines_of(output: &Output) -> Vec<Value> {
    crate::lines(output)
}

#[test]
fn fail_on_deny_counts_what_a_sub_task_was_denied() {
    let f = guarded();
    let denied = json!({
        "replies": [
            {"tool_calls": [{"name": "task", "arguments": {"description": "rm", "prompt": "TASK-RM", "tools": "all"}}]},
            {"text": "done"}
        ],
        "tasks": {"TASK-RM": [
            {"tool_calls": [{"name": "run", "arguments": {"argv": ["rm", "x.txt"]}}]},
            {"tool_calls": [{"name": "finish", "arguments": {"result": "rm was denied"}}]}
        ]}
    });
    let model = script(&f, "denied.json", denied);
    let (events, code) = converse(
        exec(&f, "go", &["--model", &model, "--fail-on-deny"]),
        &[],
        &[],
    );
    assert_eq!(code, 3, "{events:#?}");
    let last = events.last().unwrap();
    assert_eq!(last["type"], "denied", "{last}");
    let child = children(&events)["rm"].clone();
    assert_eq!(last["calls"][0]["call_id"], format!("{child}/script-1-1"), "{last}");
    assert!(last["calls"][0]["why"].as_str().unwrap().contains("no-rm"), "{last}");

    let reading = json!({
        "replies": [
            {"tool_calls": [{"name": "task", "arguments": {"description": "read", "prompt": "TASK-READ"}}]},
            {"text": "done"}
        ],
        "tasks": {"TASK-READ": [
            {"tool_calls": [{"name": "read_file", "arguments": {"path": "a.txt"}}]},
            {"text": "alpha"}
        ]}
    });
    let model = script(&f, "reading.json", reading);
    let (events, code) = converse(
        exec(&f, "go", &["--model", &model, "--fail-on-deny"]),
        &[],
        &[],
    );
    assert_eq!(code, 0, "{events:#?}");
}
