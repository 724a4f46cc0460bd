//! `wicket-bench load`: `wicket serve` driven over HTTP by this Rust client.
//! Two rows:
//! - **idle**: N sessions created over the API (`WICKET_BENCH_IDLE`,
//!   default 10,000), none run: the server's resident memory after.
//! - **load**: N sessions at once (`WICKET_BENCH_SESSIONS`, default 1,000),
//!   each a turn of K write cards (`WICKET_BENCH_CARDS`, default 20), each
//!   card answered over HTTP the moment it arrives on the session's event
//!   stream: whether all finish, the answers' round trip (p50, p99), and
//!   the server's peak resident memory.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use futures_util::StreamExt;
use serde_json::{Value, json};

use crate::Row;

/// A running `wicket serve` and how to reach it.
struct Server {
    child: Child,
    base: String,
    token: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        // The bench is over: a server already gone has nothing to stop.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    fn start(wicket: &Path, home: &Path) -> Result<Server> {
        let mut child = Command::new(wicket)
            .env("WICKET_HOME", home)
            .env_remove("WICKET_MODEL")
            .args(["serve", "--port", "0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.take().context("stdout")?),
            &mut line,
        )?;
        let file: Value = serde_json::from_slice(&std::fs::read(home.join("server.json"))?)?;
        Ok(Server {
            child,
            base: format!("http://127.0.0.1:{}", file["port"].as_u64().unwrap_or(0)),
            token: file["token"].as_str().unwrap_or_default().to_string(),
        })
    }

    /// A line of /proc/PID/status, in MiB (`VmRSS`, `VmHWM`).
    fn memory_mib(&self, field: &str) -> Result<f64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))?;
        let kib: f64 = status
            .lines()
            .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
            .and_then(|rest| rest.trim().trim_end_matches(" kB").parse().ok())
            .with_context(|| format!("no {field} in /proc status"))?;
        Ok(kib / 1024.0)
    }
}

/// The API client: one pool, the server's token.
#[derive(Clone)]
struct Api {
    http: reqwest::Client,
    base: String,
    token: String,
}

impl Api {
    async fn post(&self, path: &str, body: Value) -> Result<Value> {
        let response = self
            .http
            .post(format!("{}{path}", self.base))
            .bearer_auth(&self.token)
            .json(&body)
            .send()
            .await?;
        let status = response.status();
        let value: Value = response.json().await.unwrap_or(Value::Null);
        if !status.is_success() {
            bail!("POST {path}: {status} {value}");
        }
        Ok(value)
    }

    async fn new_session(&self, workspace: &Path, model: &str) -> Result<String> {
        let created = self
            .post(
                "/api/sessions",
                json!({"workspace": workspace, "model": model}),
            )
            .await?;
        created["id"]
            .as_str()
            .map(str::to_string)
            .context("no session id")
    }

    /// One turn: follows the session's events, answers each card as it
    /// comes, until `turn_ended`. The answers' round trips and the cards seen.
    async fn turn(&self, id: &str) -> Result<(Vec<Duration>, usize)> {
        let response = self
            .http
            .get(format!("{}/api/sessions/{id}/events", self.base))
            .bearer_auth(&self.token)
            .send()
            .await?;
        let mut stream = response.bytes_stream();
        self.post(
            &format!("/api/sessions/{id}/messages"),
            json!({"text": "go"}),
        )
        .await?;
        let mut parser = wicket_chat::sse::SseParser::default();
        let (mut answers, mut cards) = (Vec::new(), 0);
        while let Some(chunk) = stream.next().await {
            for event in parser.feed(&chunk?) {
                let event: Value = serde_json::from_str(&event.data)?;
                match event["type"].as_str() {
                    Some("card") => {
                        cards += 1;
                        let card = event["id"].as_str().unwrap_or_default();
                        let sent = Instant::now();
                        self.post(
                            &format!("/api/sessions/{id}/cards/{card}"),
                            json!({"answer": "allow_once"}),
                        )
                        .await?;
                        answers.push(sent.elapsed());
                    }
                    Some("turn_ended") if event["outcome"] == "result" => {
                        return Ok((answers, cards));
                    }
                    Some("turn_ended") => bail!("session {id}: the turn ended: {event}"),
                    _ => {}
                }
            }
        }
        bail!("session {id}: the event stream ended before the turn")
    }
}

fn count(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

fn percentile(sorted: &[Duration], percent: usize) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[(sorted.len() * percent / 100).min(sorted.len() - 1)]
}

pub(crate) fn load_rows(rows: &mut Vec<Row>) -> Result<()> {
    let wicket = crate::wicket_binary()?;
    wicket_chat::tls::install();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let idle = count("WICKET_BENCH_IDLE", 10_000);
    let sessions = count("WICKET_BENCH_SESSIONS", 1_000);
    let cards = count("WICKET_BENCH_CARDS", 20);
    runtime.block_on(idle_row(rows, &wicket, idle))?;
    runtime.block_on(load_row(rows, &wicket, sessions, cards))
}

fn client(server: &Server) -> Result<Api> {
    Ok(Api {
        http: reqwest::Client::builder()
            .pool_max_idle_per_host(usize::MAX)
            .build()?,
        base: server.base.clone(),
        token: server.token.clone(),
    })
}

async fn idle_row(rows: &mut Vec<Row>, wicket: &Path, sessions: usize) -> Result<()> {
    let dir = tempfile::tempdir()?;
    let (home, ws) = (dir.path().join("home"), dir.path().join("ws"));
    std::fs::create_dir_all(&ws)?;
    let server = Server::start(wicket, &home)?;
    let api = client(&server)?;
    let before = server.memory_mib("VmRSS")?;
    let started = Instant::now();
    // Eight at a time: creating is what is measured, not a connection storm.
    let ws = Arc::new(ws);
    let mut made = 0;
    while made < sessions {
        let batch: Vec<_> = (made..sessions.min(made + 8))
            .map(|_| {
                let (api, ws) = (api.clone(), ws.clone());
                tokio::spawn(async move { api.new_session(&ws, "script:/nonexistent").await })
            })
            .collect();
        for task in batch {
            task.await??;
            made += 1;
        }
    }
    let took = started.elapsed();
    let after = server.memory_mib("VmRSS")?;
    rows.push(Row {
        name: format!("serve: {sessions} idle sessions (created over HTTP, none run)"),
        wicket: format!(
            "{after:.0} MiB RSS ({:.1} KiB a session)",
            (after - before) * 1024.0 / sessions as f64
        ),
        reference: format!("{before:.0} MiB at start; {:.1} s", took.as_secs_f64()),
        ratio: None,
    });
    Ok(())
}

async fn load_row(rows: &mut Vec<Row>, wicket: &Path, sessions: usize, cards: usize) -> Result<()> {
    let dir = tempfile::tempdir()?;
    let home = dir.path().join("home");
    let script = dir.path().join("writes.json");
    let mut replies: Vec<Value> = (0..cards)
        .map(|n| {
            json!({"tool_calls": [{"name": "write_file", "arguments": {"path": format!("w{n}.txt"), "content": format!("write {n}\n")}}]})
        })
        .collect();
    replies.push(json!({"text": "done"}));
    std::fs::write(&script, Value::Array(replies).to_string())?;
    let model = format!("script:{}", script.display());
    let server = Server::start(wicket, &home)?;
    let api = client(&server)?;
    let mut ids = Vec::new();
    for n in 0..sessions {
        let ws = dir.path().join(format!("ws/{n}"));
        std::fs::create_dir_all(&ws)?;
        ids.push(api.new_session(&ws, &model).await?);
    }
    let started = Instant::now();
    let turns: Vec<_> = ids
        .into_iter()
        .map(|id| {
            let api = api.clone();
            tokio::spawn(async move { api.turn(&id).await })
        })
        .collect();
    let (mut answers, mut finished, mut seen) = (Vec::new(), 0, 0);
    let mut failures = Vec::new();
    for turn in turns {
        match turn.await? {
            Ok((times, count)) => {
                finished += 1;
                seen += count;
                answers.extend(times);
            }
            Err(error) => failures.push(error.to_string()),
        }
    }
    let took = started.elapsed();
    if let Some(first) = failures.first() {
        eprintln!("load: {} turns failed; the first: {first}", failures.len());
    }
    answers.sort();
    let peak = server.memory_mib("VmHWM")?;
    rows.push(Row {
        name: format!("serve: {sessions} sessions at once x {cards} write cards over HTTP"),
        wicket: format!(
            "{finished}/{sessions} finished, {seen} cards; answer p50 {:.1} ms, p99 {:.1} ms; peak {peak:.0} MiB RSS",
            percentile(&answers, 50).as_secs_f64() * 1000.0,
            percentile(&answers, 99).as_secs_f64() * 1000.0,
        ),
        reference: format!("{:.1} s", took.as_secs_f64()),
        ratio: None,
    });
    Ok(())
}
