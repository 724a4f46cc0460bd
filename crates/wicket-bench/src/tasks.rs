//! `wicket-bench tasks`: what starting a read sub-task costs over a plain
//! tool call. `wicket exec` of a script of `CALLS` `task` calls, each a
//! read sub-task that reads one file and finishes (a child session, its
//! meta.json and log, its first request and its finish), against the same
//! script with `read_file` in place of each task; the difference per call.
//! And from the logs those runs wrote: a task's start alone (its `tool_call`
//! to its child's first reply, so the child's session, log, prompt and
//! first request) against a `read_file` call (its `tool_call` to its result).

use std::time::Duration;

use anyhow::Result;
use serde_json::json;

use crate::{Row, exec_script, median, wicket_binary};

/// Calls a turn: enough that the process's start is not counted as a task's.
const CALLS: usize = 100;

pub(crate) fn task_rows(rows: &mut Vec<Row>) -> Result<()> {
    let wicket_exe = wicket_binary()?;
    let dir = tempfile::tempdir()?;
    let (home, ws) = (dir.path().join("home"), dir.path().join("ws"));
    std::fs::create_dir_all(&home)?;
    std::fs::create_dir_all(&ws)?;
    std::fs::write(ws.join("a.txt"), "alpha\n")?;
    std::fs::write(home.join("config.toml"), "step_limit = 1000\n")?;
    let read = json!({"name": "read_file", "arguments": {"path": "a.txt"}});
    let task = json!({"name": "task", "arguments": {"description": "read a", "prompt": "TASK: read a.txt"}});
    let script = |call: &serde_json::Value, name: &str| -> Result<std::path::PathBuf> {
        let mut replies: Vec<serde_json::Value> =
            (0..CALLS).map(|_| json!({"tool_calls": [call]})).collect();
        replies.push(json!({"text": "done"}));
        let path = dir.path().join(name);
        let body = json!({
            "replies": replies,
            "tasks": {"TASK: read a.txt": [
                {"tool_calls": [read]},
                {"tool_calls": [{"name": "finish", "arguments": {"result": "alpha"}}]}
            ]}
        });
        std::fs::write(&path, body.to_string())?;
        Ok(path)
    };
    let plain = script(&read, "reads.json")?;
    let tasks = script(&task, "tasks.json")?;
    let turn = |script: &std::path::Path| -> Result<Duration> {
        median(5, || exec_script(&wicket_exe, &home, &ws, script))
    };
    let reads = turn(&plain)?;
    let started = turn(&tasks)?;
    let per_call = |total: Duration| total.as_secs_f64() * 1e3 / CALLS as f64;
    rows.push(Row {
        name: format!(
            "tasks: a whole read sub-task (a read, a finish) over a read_file call ({CALLS} a turn)"
        ),
        wicket: format!("{:+.2} ms a task", per_call(started) - per_call(reads)),
        reference: format!("read_file {:.2} ms a call", per_call(reads)),
        ratio: Some(started.as_secs_f64() / reads.as_secs_f64()),
    });
    let (starts, calls) = from_logs(&home.join("sessions"))?;
    rows.push(Row {
        name: "tasks: a read sub-task's start (call to its child's first reply), median".into(),
        wicket: format!("{:.2} ms ({:+.2} ms)", starts * 1e3, (starts - calls) * 1e3),
        reference: format!("read_file call {:.2} ms", calls * 1e3),
        ratio: Some(starts / calls.max(1e-9)),
    });
    Ok(())
}

/// A log's events.
fn events(dir: &std::path::Path) -> Result<Vec<serde_json::Value>> {
    Ok(std::fs::read_to_string(dir.join("log.jsonl"))?
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect())
}

/// An event's time, in seconds.
fn at(event: &serde_json::Value) -> Result<f64> {
    let ts = event["ts"].as_str().unwrap_or_default();
    let parsed = time::OffsetDateTime::parse(ts, &time::format_description::well_known::Rfc3339)?;
    Ok(parsed.unix_timestamp_nanos() as f64 / 1e9)
}

fn middle(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}

/// The median start of a task (its call to its child's first reply) and
/// of a read_file call (its call to its result), in seconds, over every
/// session the runs left.
fn from_logs(sessions: &std::path::Path) -> Result<(f64, f64)> {
    let (mut starts, mut calls) = (Vec::new(), Vec::new());
    for entry in std::fs::read_dir(sessions)? {
        let log = events(&entry?.path())?;
        let called: std::collections::HashMap<&str, &serde_json::Value> = log
            .iter()
            .filter(|event| event["type"] == "tool_call")
            .map(|event| (event["call_id"].as_str().unwrap_or_default(), event))
            .collect();
        for event in &log {
            let Some(call) = called.get(event["call_id"].as_str().unwrap_or_default()) else {
                continue;
            };
            match (event["type"].as_str(), call["name"].as_str()) {
                (Some("task"), _) => {
                    let child = events(&sessions.join(event["session"].as_str().unwrap_or("-")))?;
                    if let Some(reply) = child.iter().find(|e| e["type"] == "assistant_message") {
                        starts.push(at(reply)? - at(call)?);
                    }
                }
                (Some("tool_result"), Some("read_file")) if log[0]["type"] == "session_started" => {
                    calls.push(at(event)? - at(call)?);
                }
                _ => {}
            }
        }
    }
    Ok((middle(starts), middle(calls)))
}
