//! Wicket run the way Harbor (Terminal-Bench's harness) runs an ACP agent:
//! Harbor's own launcher, `acp_runner.py` and trajectory conversion
//! (tests/harbor/run_acp.py, harbor 0.26.0 in tests/harbor/.venv, which
//! scripts/test.sh makes), against the built binary and a fake provider.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use wicket_fake::{FakeReply, FakeServer, Step, Wire};

use crate::*;

const MODEL: &str = "openai:gpt-harbor";

/// Harbor's venv's Python.
fn python() -> PathBuf {
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/harbor/.venv/bin/python");
    assert!(
        python.exists(),
        "Harbor is not installed: scripts/test.sh makes tests/harbor/.venv (Python 3.12+, tests/harbor/requirements.txt)"
    );
    python
}

/// What one trial left: the runner's summary and events, the trajectory,
/// and the context Harbor filled in.
struct Trial {
    summary: Value,
    events: Vec<Value>,
    trajectory: Value,
    context: Value,
}

/// One trial of `instruction` with `permission` (allow or deny), Harbor's
/// `-m` as `requested`; the agent's default model is `WICKET_MODEL`.
fn trial(f: &Fixture, fake: &FakeServer, permission: &str, requested: Option<&str>) -> Trial {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let logs = f.root.join("logs");
    let bin = Path::new(env!("CARGO_BIN_EXE_wicket")).parent().unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let mut command = Command::new(python());
    command
        .arg(root.join("tests/harbor/run_acp.py"))
        .arg(root.join("integrations/acp-registry/agent.json"))
        .arg(&f.ws)
        .arg(&logs)
        .arg("do the task")
        .env("PATH", path)
        .env("WICKET_HOME", &f.home)
        .env("WICKET_MODEL", "openai:gpt-4o")
        .env("OPENAI_BASE_URL", fake.base_url())
        .env("OPENAI_API_KEY", "test-key")
        .env("ACP_RUNNER_PERMISSION_MODE", permission);
    if let Some(model) = requested {
        command.env("ACP_RUNNER_REQUESTED_MODEL", model);
    }
    let output = peer_succeeds(&mut command);
    // Harbor logs on stdout too: the script's JSON is the last line.
    let stdout = String::from_utf8_lossy(&output.stdout);
    let printed: Value = serde_json::from_str(stdout.lines().last().unwrap_or("")).unwrap();
    assert_eq!(printed["runner_exit"], 0, "{printed:#}");
    let read = |name: &str| std::fs::read_to_string(logs.join(name)).unwrap();
    Trial {
        summary: serde_json::from_str(&read("acp-summary.json")).unwrap(),
        events: read("acp-events.jsonl")
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect(),
        trajectory: serde_json::from_str(&read("trajectory.json")).unwrap(),
        context: printed["context"].clone(),
    }
}

/// The session updates of a trial, in order.
fn updates(trial: &Trial) -> Vec<&Value> {
    trial
        .events
        .iter()
        .filter(|e| e["event_type"] == "session_update")
        .map(|e| &e["payload"]["update"])
        .collect()
}

fn with_prices(f: &Fixture) {
    std::fs::write(
        f.home.join("config.toml"),
        format!(
            "[models.\"{MODEL}\"]\ncontext_window = 100000\n\n[prices.\"{MODEL}\"]\ninput = 1.0\noutput = 10.0\ncached_input = 0.1\ncache_write = 1.0\n"
        ),
    )
    .unwrap();
}

fn write_then_say(fake: &FakeServer) {
    fake.push(Step::Reply(
        FakeReply::tool_call(
            "w1",
            "write_file",
            r#"{"path": "b.txt", "content": "from harbor\n"}"#,
        )
        .usage(1000, 50),
    ));
    fake.push(Step::Reply(FakeReply::text("done").usage(1200, 10)));
}

#[test]
fn harbors_runner_allows_a_write_and_records_tokens_and_cost() {
    let f = Fixture::new();
    with_prices(&f);
    let fake = FakeServer::start(Wire::OpenAi);
    write_then_say(&fake);
    let trial = trial(&f, &fake, "allow", Some("openai/gpt-harbor"));
    assert_eq!(f.read("b.txt"), "from harbor\n");
    assert!(trial.summary.get("error").is_none(), "{:#}", trial.summary);
    assert_eq!(
        trial.summary["permissions_requested"].as_u64(),
        Some(1),
        "{:#}",
        trial.summary
    );
    // -m chose the model: the runner says so, and the requests named it.
    assert_eq!(
        trial.summary["set_model_mechanism"], "session_config_option",
        "{:#}",
        trial.summary
    );
    assert_eq!(
        trial.summary["resolved_session_model_id"],
        "openai/gpt-harbor"
    );
    for request in fake.requests() {
        assert_eq!(request.body["model"], "gpt-harbor");
    }
    // Tokens from the prompt's response, cost from the last usage update.
    assert_eq!(trial.context["n_input_tokens"], 2200, "{:#}", trial.context);
    assert_eq!(trial.context["n_output_tokens"], 60);
    let cost = trial.context["cost_usd"].as_f64().unwrap();
    assert!((cost - 0.0028).abs() < 1e-9, "{cost}");
    assert_eq!(
        trial.trajectory["agent"]["name"], "wicket",
        "{:#}",
        trial.trajectory
    );
}

#[test]
fn harbors_deny_leaves_the_workspace_as_it_was() {
    let f = Fixture::new();
    let fake = FakeServer::start(Wire::OpenAi);
    write_then_say(&fake);
    let trial = trial(&f, &fake, "deny", None);
    assert!(!f.ws.join("b.txt").exists());
    assert_eq!(trial.summary["permissions_requested"].as_u64(), Some(1));
    assert!(trial.summary.get("error").is_none(), "{:#}", trial.summary);
}

/// Thirty reads that need no card: the updates come in the log's order
/// (text, call, its end, next text), each reply's text exactly once, and
/// the trajectory has one agent step per reply.
#[test]
fn thirty_reads_through_harbor_arrive_in_order_one_step_per_reply() {
    let f = Fixture::new();
    let fake = FakeServer::start(Wire::OpenAi);
    for n in 1..=30 {
        fake.push(Step::Reply(
            FakeReply::tool_call(format!("r{n}"), "read_file", r#"{"path": "a.txt"}"#)
                .with_text(format!("step {n}")),
        ));
    }
    fake.push(Step::Reply(FakeReply::text("all read")));
    let trial = trial(&f, &fake, "allow", None);
    let mut steps = Vec::new();
    let mut text = String::new();
    for update in updates(&trial) {
        match update["sessionUpdate"].as_str().unwrap_or("") {
            "agent_message_chunk" => text.push_str(update["content"]["text"].as_str().unwrap()),
            "tool_call" => {
                steps.push(format!("text:{}", std::mem::take(&mut text)));
                steps.push("call".to_string());
            }
            "tool_call_update" if update["status"] == "completed" => {
                steps.push("done".to_string());
            }
            _ => {}
        }
    }
    steps.push(format!("text:{text}"));
    let mut wanted = Vec::new();
    for n in 1..=30 {
        wanted.extend([format!("text:step {n}"), "call".into(), "done".into()]);
    }
    wanted.push("text:all read".into());
    assert_eq!(steps, wanted);
    let agent_steps: Vec<&Value> = trial.trajectory["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|step| step["source"] == "agent")
        .collect();
    assert_eq!(agent_steps.len(), 31, "{:#}", trial.trajectory);
    assert_eq!(agent_steps[0]["message"], "step 1");
    assert_eq!(agent_steps[30]["message"], "all read");
}
