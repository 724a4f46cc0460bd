//! What the operations features cost a turn.
//!
//! Telemetry: a scripted turn of 1,000 `read_file` calls (no card), its
//! time from the log's `user_message` to its `turn_ended`, with no
//! collector, with one that answers at once, and with one that accepts and
//! never answers. The exit's bounded flush is not the turn's.
//!
//! The managed policy: a turn of 200 writes, each through the gate (allowed
//! by a home rule, so no card), with and without a managed file of a deny
//! rule and every floor; the difference per call.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::time::Duration;

use anyhow::Result;

use crate::{Row, Scripted, exec_script, exec_script_with, ms};

const CALLS: usize = 1000;
const RUNS: usize = 15;

/// A collector on 127.0.0.1: answers each export 200 at once, or never.
fn collector(answers: bool) -> Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || take_exports(stream, answers));
        }
    });
    Ok(port)
}

/// Reads export after export from `stream` (a head, then Content-Length
/// bytes), answering each 200 when `answers`, else holding it unanswered.
fn take_exports(stream: std::net::TcpStream, answers: bool) -> Option<()> {
    let mut held = Vec::new();
    let mut reader = BufReader::new(stream);
    loop {
        let mut length = 0usize;
        let mut line = String::new();
        while line != "\r\n" {
            line.clear();
            if reader.read_line(&mut line).ok()? == 0 {
                return None;
            }
            if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = value.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).ok()?;
        if !answers {
            held.push(body);
            continue;
        }
        let answer =
            b"HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\nContent-Length: 0\r\n\r\n";
        reader.get_mut().write_all(answer).ok()?;
    }
}

/// The turn's time, from the newest session's log.
fn turn_time(home: &Path) -> Result<Duration> {
    let sessions = home.join("sessions");
    let newest = std::fs::read_dir(&sessions)?
        .flatten()
        .max_by_key(|entry| entry.file_name())
        .ok_or_else(|| anyhow::anyhow!("no session"))?;
    let log = std::fs::read_to_string(newest.path().join("log.jsonl"))?;
    let at = |kind: &str| -> Result<time::OffsetDateTime> {
        let line = log
            .lines()
            .flat_map(serde_json::from_str::<serde_json::Value>)
            .find(|event| event["type"] == kind)
            .ok_or_else(|| anyhow::anyhow!("no {kind} event"))?;
        Ok(time::OffsetDateTime::parse(
            line["ts"].as_str().unwrap_or(""),
            &time::format_description::well_known::Rfc3339,
        )?)
    };
    let took = at("turn_ended")? - at("user_message")?;
    Ok(Duration::try_from(took)?)
}

pub(crate) fn telemetry_rows(rows: &mut Vec<Row>) -> Result<()> {
    let wicket = crate::wicket_binary()?;
    let scripted = Scripted::new(
        (0..CALLS)
            .map(|_| {
                serde_json::json!({"tool_calls": [{"name": "read_file", "arguments": {"path": "a.txt"}}]})
            })
            .collect(),
    )?;
    let (home, ws, script) = (&scripted.home, &scripted.ws, &scripted.script);
    std::fs::write(ws.join("a.txt"), "fn main() {}\n")?;
    let (answering, stuck) = (collector(true)?, collector(false)?);
    let configs = [
        ("no collector".to_string(), String::new()),
        (
            "a collector that answers".to_string(),
            format!("[telemetry]\notlp_endpoint = \"http://127.0.0.1:{answering}\"\n"),
        ),
        (
            "a collector that never answers".to_string(),
            format!("[telemetry]\notlp_endpoint = \"http://127.0.0.1:{stuck}\"\n"),
        ),
    ];
    // A window that holds 1,000 results: no compaction in the figure.
    let window = format!(
        "step_limit = 2000\n[models.\"script:{}\"]\ncontext_window = 100000000\n",
        script.display()
    );
    // The three take turns, run by run, so a busy machine slows them alike.
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); configs.len()];
    for run in 0..=RUNS {
        for (n, (_, config)) in configs.iter().enumerate() {
            std::fs::write(home.join("config.toml"), format!("{window}{config}"))?;
            exec_script(&wicket, home, ws, script)?;
            if run > 0 {
                times[n].push(turn_time(home)?);
            }
            std::fs::remove_dir_all(home.join("sessions"))?;
        }
    }
    let medians: Vec<Duration> = times
        .iter_mut()
        .map(|runs| {
            runs.sort();
            runs[runs.len() / 2]
        })
        .collect();
    for (n, (name, _)) in configs.iter().enumerate().skip(1) {
        rows.push(Row {
            name: format!("telemetry: a {CALLS}-call turn, {name}"),
            wicket: ms(medians[n]),
            reference: format!("no collector {}", ms(medians[0])),
            ratio: Some(medians[n].as_secs_f64() / medians[0].as_secs_f64()),
        });
    }
    Ok(())
}

pub(crate) fn managed_rows(rows: &mut Vec<Row>) -> Result<()> {
    const WRITES: usize = 200;
    let wicket = crate::wicket_binary()?;
    let scripted = Scripted::writes(WRITES)?;
    let (home, ws, script) = (&scripted.home, &scripted.ws, &scripted.script);
    std::fs::write(
        home.join("config.toml"),
        "step_limit = 1000\n[[rules]]\naction = \"allow\"\ntool = \"write\"\npath = \"*.txt\"\n",
    )?;
    let policy = scripted.dir.path().join("managed.toml");
    std::fs::write(
        &policy,
        "[[rules]]\nid = \"no-push\"\naction = \"deny\"\ntool = \"run\"\nargv_prefix = [\"git\", \"push\"]\n\n\
         [sandbox]\nforbid_modes = [\"off\"]\nforbid_direct_network = true\nallow_always = false\n",
    )?;
    let turn = |managed: bool| -> Result<()> {
        let env: &[(&str, &Path)] = if managed {
            &[("WICKET_MANAGED_CONFIG", &policy)]
        } else {
            &[]
        };
        exec_script_with(&wicket, home, ws, script, env)?;
        std::fs::remove_dir_all(home.join("sessions"))?;
        Ok(())
    };
    let (mut without, mut with) = (Vec::new(), Vec::new());
    for run in 0..=RUNS {
        for (managed, times) in [(false, &mut without), (true, &mut with)] {
            let started = std::time::Instant::now();
            turn(managed)?;
            if run > 0 {
                times.push(started.elapsed());
            }
        }
    }
    without.sort();
    with.sort();
    let (none, held) = (without[RUNS / 2], with[RUNS / 2]);
    let per_call = (held.as_secs_f64() - none.as_secs_f64()) / WRITES as f64;
    rows.push(Row {
        name: format!("managed policy: per gated call ({WRITES} writes a turn)"),
        wicket: format!("{:+.3} ms", per_call * 1e3),
        reference: format!(
            "no policy {:.3} ms a call",
            none.as_secs_f64() * 1e3 / WRITES as f64
        ),
        ratio: Some(held.as_secs_f64() / none.as_secs_f64()),
    });
    Ok(())
}
