//! Sub-tasks through the binary: a parent's `task` calls start sessions of
//! their own under the parent's rules, hooks and grants; their cards come
//! in the parent's stream marked with the sub-task, are answered there,
//! and the parent's log and each child's tell one story.

use std::collections::HashMap;

use std::time::Duration;

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
/// [`three_tasks`] through `wicket exec`, both cards answered
/// allow_session; it must exit 0. Its events.
fn three_tasks_through_exec(f: &Fixture) -> Vec<Value> {
    let model = script(f, "tasks.json", three_tasks());
    let (events, code) = converse(
        exec(f, "go", &["--model", &model]),
        &["allow_session", "allow_session"],
        &[],
    );
    assert_eq!(code, 0, "{events:#?}");
    events
}

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
        let log = f.log(child);
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
    let events = three_tasks_through_exec(&f);
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
    let c = f.log(&tasks["clean up"]);
    let denied: Vec<&str> = of_type(&c, "tool_result")
        .into_iter()
        .filter(|result| result["error"]["kind"] == "denied")
        .map(|result| result["error"]["message"].as_str().unwrap())
        .collect();
    assert_eq!(denied.len(), 2, "{c:#?}");
    assert!(denied[0].contains("no-rm"), "{denied:?}");
    assert!(
        denied[0].contains("say why in your finish") && !denied[0].contains("with ask"),
        "a sub-task has no ask: {denied:?}"
    );
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
    let b = f.log(&tasks["try to run"]);
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
        let meta = f.meta(child);
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
    let granted = f.meta(&parent)["allowed"]["run"].to_string();
    assert!(
        granted.contains("parent") && granted.contains("child"),
        "{granted}"
    );
    one_story(&f, &events);
}

#[test]
fn wicket_log_of_the_parent_shows_each_child_inline() {
    let f = guarded();
    let events = three_tasks_through_exec(&f);
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
    assert!(
        text.contains("  │ ") && text.contains("a says alpha"),
        "{text}"
    );
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
    assert_eq!(
        last["calls"][0]["call_id"],
        format!("{child}/script-1-1"),
        "{last}"
    );
    assert!(
        last["calls"][0]["why"].as_str().unwrap().contains("no-rm"),
        "{last}"
    );

    // A fixed policy answers a sub-task's card in the parent like any other.
    let writing = json!({
        "replies": [
            {"tool_calls": [{"name": "task", "arguments": {"description": "write", "prompt": "TASK-WRITE", "tools": "all"}}]},
            {"text": "done"}
        ],
        "tasks": {"TASK-WRITE": [
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "new.txt", "content": "x\n"}}]},
            {"tool_calls": [{"name": "finish", "arguments": {"result": "the write was denied"}}]}
        ]}
    });
    let model = script(&f, "writing.json", writing);
    let output = exec(
        &f,
        "go",
        &[
            "--model",
            &model,
            "--fail-on-deny",
            "--json",
            "--answers",
            "deny",
        ],
    )
    .stdin(Stdio::null())
    .output()
    .unwrap();
    let events = lines(&output);
    assert_eq!(output.status.code(), Some(3), "{events:#?}");
    assert!(!f.ws.join("new.txt").exists());
    let card = of_type(&events, "card")[0];
    assert_eq!(card["task"]["description"], "write", "{card}");

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

/// A new session through the API; its id.
fn api_session(api: &wicket_test_support::http::Api, f: &Fixture, model: &str) -> String {
    let reply = api.post(
        "/api/sessions",
        json!({"workspace": f.ws.display().to_string(), "model": model}),
    );
    assert_eq!(reply.status, 201, "{}", reply.body);
    reply.body["id"].as_str().unwrap().to_string()
}

#[test]
fn the_apis_event_stream_for_the_parent_carries_its_sub_tasks_cards() {
    let f = guarded();
    let model = script(&f, "tasks.json", three_tasks());
    let served = crate::serve::serve(&f);
    let api = &served.api;
    let id = api_session(api, &f, &model);
    let sent = api.post(
        &format!("/api/sessions/{id}/messages"),
        json!({"text": "go"}),
    );
    assert_eq!(sent.body["state"], "started", "{}", sent.body);
    let mut seen = Vec::new();
    for event in api.events(&id, 0, None) {
        if event["type"] == "card" {
            let card = event["id"].as_str().unwrap();
            let answered = api.post(
                &format!("/api/sessions/{id}/cards/{card}"),
                json!({"answer": "allow_session"}),
            );
            assert_eq!(answered.status, 200, "{}", answered.body);
        }
        let over = event["type"] == "turn_ended";
        seen.push(event);
        if over {
            break;
        }
    }
    assert_eq!(ending(&seen)["text"], "all done", "{seen:#?}");
    let cards = of_type(&seen, "card");
    assert_eq!(cards.len(), 2, "{cards:#?}");
    assert_eq!(cards[1]["task"]["description"], "clean up");
    assert_eq!(of_type(&seen, "task").len(), 3);
    one_story(&f, &seen);
}

/// A parent starts five sub-tasks on the fake provider: three of the
/// first four stall, one finishes, and only then does the fifth start.
#[test]
fn a_fifth_sub_task_waits_for_one_of_four_and_cancel_ends_them_all() {
    use wicket_fake::{FakeReply, FakeServer, Step, Wire};
    let f = Fixture::new();
    let fake = FakeServer::start(Wire::OpenAi);
    let five = (1..=5).fold(FakeReply::default(), |reply, n| {
        reply.with_tool_call(
            format!("call-{n}"),
            "task",
            json!({"description": format!("task {n}"), "prompt": format!("TASK-{n}")}).to_string(),
        )
    });
    fake.push(Step::Reply(five));
    for _ in 0..3 {
        fake.push(Step::Stall {
            reply: FakeReply::text("thinking"),
            events: 1,
        });
    }
    fake.push(Step::Reply(FakeReply::text("one of four is done")));
    fake.push(Step::Reply(FakeReply::text("the fifth is done")));
    let env = [
        ("OPENAI_BASE_URL", fake.base_url()),
        ("OPENAI_API_KEY", "test-key".to_string()),
    ];
    let served = crate::serve::serve_with(&f, &env);
    let api = &served.api;
    let id = api_session(api, &f, "openai:gpt-test");
    api.post(
        &format!("/api/sessions/{id}/messages"),
        json!({"text": "go"}),
    );
    let mut seen = Vec::new();
    for event in api.events(&id, 0, None) {
        let fifth_done =
            event["type"] == "tool_result" && event["output"]["result"] == "the fifth is done";
        seen.push(event);
        if fifth_done {
            break;
        }
    }
    // Four started; the fifth only after one of them ended.
    let order: Vec<String> = seen
        .iter()
        .filter_map(|event| match event["type"].as_str() {
            Some("task") => Some(format!("start {}", event["description"].as_str().unwrap())),
            Some("tool_result") => Some("end".to_string()),
            _ => None,
        })
        .collect();
    let first_end = order.iter().position(|step| step == "end").unwrap();
    assert_eq!(first_end, 4, "four start, then one ends: {order:?}");
    assert_eq!(order[5], "start task 5", "{order:?}");
    let posts: Vec<String> = fake
        .requests()
        .into_iter()
        .filter(|request| request.method == "POST")
        .map(|request| format!("{} {}", request.path, request.body["messages"]))
        .collect();
    assert_eq!(
        posts.len(),
        6,
        "the parent's, four, then the fifth's: {posts:#?}"
    );
    let cancelled = api.post(&format!("/api/sessions/{id}/cancel"), json!({}));
    assert_eq!(cancelled.status, 200, "{}", cancelled.body);
    let rest: Vec<Value> = api
        .events(&id, seen.last().unwrap()["seq"].as_u64().unwrap(), None)
        .take_while(|event| event["type"] != "turn_ended")
        .collect();
    let cancelled_tasks = of_type(&rest, "tool_result")
        .into_iter()
        .filter(|result| result["error"]["kind"] == "cancelled")
        .count();
    assert_eq!(cancelled_tasks, 3, "{rest:#?}");
    let log = f.log(&id);
    assert_eq!(log.last().unwrap()["outcome"], "cancelled");
    for child in children(&seen).values() {
        let ended = f.log(child).last().unwrap().clone();
        assert_eq!(ended["type"], "turn_ended", "{child}");
    }
}

#[test]
fn cancelling_the_parent_stops_a_childs_command_and_ends_both_turns_cancelled() {
    let f = Fixture::new();
    let tag = wicket_test_support::process::marker("subtask-sleep");
    let model = script(
        &f,
        "sleep.json",
        json!({
            "replies": [
                {"tool_calls": [{"name": "task", "arguments": {"description": "wait", "prompt": "TASK-SLEEP", "tools": "all"}}]},
                {"text": "never"}
            ],
            "tasks": {"TASK-SLEEP": [
                {"tool_calls": [{"name": "run", "arguments": {"argv": ["sh", "-c", format!("sleep 30; echo {tag}")]}}]},
                {"text": "never"}
            ]}
        }),
    );
    let served = crate::serve::serve(&f);
    let api = &served.api;
    let id = api_session(api, &f, &model);
    api.post(
        &format!("/api/sessions/{id}/messages"),
        json!({"text": "go"}),
    );
    let mut seen = Vec::new();
    for event in api.events(&id, 0, None) {
        let card = (event["type"] == "card").then(|| event["id"].as_str().unwrap().to_string());
        seen.push(event);
        if let Some(card) = card {
            api.post(
                &format!("/api/sessions/{id}/cards/{card}"),
                json!({"answer": "allow_once"}),
            );
            break;
        }
    }
    assert!(
        wicket_test_support::wait_until(Duration::from_secs(20), || {
            wicket_test_support::process::alive(&tag)
        }),
        "the child's command started"
    );
    let cancelled = api.post(&format!("/api/sessions/{id}/cancel"), json!({}));
    assert_eq!(cancelled.status, 200, "{}", cancelled.body);
    let ended = wicket_test_support::wait_until(Duration::from_secs(20), || {
        f.log(&id)
            .last()
            .is_some_and(|event| event["type"] == "turn_ended")
    });
    assert!(ended, "{:#?}", f.log(&id));
    assert!(
        !wicket_test_support::process::alive(&tag),
        "the child's command survived"
    );
    let child = children(&seen)["wait"].clone();
    for session in [&id, &child] {
        let log = f.log(session);
        assert_eq!(
            log.last().unwrap()["outcome"],
            "cancelled",
            "{session}: {log:#?}"
        );
    }
}

#[test]
fn sub_tasks_over_acp_ask_as_the_parent() {
    let f = guarded();
    let model = script(&f, "tasks.json", three_tasks());
    crate::acp::sdk_test("tasks.test.mjs", &f, &model, &[]);
    assert!(
        f.ws.join("x.txt").exists(),
        "the deny rule held in the child"
    );
}

#[test]
fn rewinding_the_parent_takes_back_what_a_child_wrote() {
    let f = Fixture::new();
    f.write("a.txt", "alpha\n");
    let model = script(
        &f,
        "writes.json",
        json!({
            "replies": [
                {"tool_calls": [{"name": "task", "arguments": {"description": "edit", "prompt": "TASK-EDIT", "tools": "all"}}]},
                {"text": "edited"}
            ],
            "tasks": {"TASK-EDIT": [
                {"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "changed\n"}}]},
                {"tool_calls": [{"name": "run", "arguments": {"argv": ["touch", "made.txt"]}}]},
                {"tool_calls": [{"name": "finish", "arguments": {"result": "done"}}]}
            ]}
        }),
    );
    let (events, code) = converse(
        exec(&f, "go", &["--model", &model, "--session", "rw"]),
        &["allow_once", "allow_once"],
        &[],
    );
    assert_eq!(code, 0, "{events:#?}");
    assert_eq!(f.read("a.txt"), "changed\n");
    assert!(f.ws.join("made.txt").exists());
    let rewound = wicket()
        .env("WICKET_HOME", &f.home)
        .env("NO_COLOR", "1")
        .args(["rewind", "rw", "--yes"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        rewound.status.success(),
        "{}",
        String::from_utf8_lossy(&rewound.stderr)
    );
    assert_eq!(
        f.read("a.txt"),
        "alpha\n",
        "the child's write is taken back"
    );
    assert!(
        !f.ws.join("made.txt").exists(),
        "the child's command's file is gone"
    );
}
