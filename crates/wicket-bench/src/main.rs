//! `cargo run --release -p wicket-bench [-- FILTER]`: each workload, Wicket's
//! figure beside the reference a person would otherwise use, and the ratio.
// The bench runs the references (cat, rg, grep, diff, git) and the binary
// from outside, as a person would: not children of Wicket's.
#![allow(clippy::disallowed_methods)]

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use wicket_protocol::event::{AssistantMessageEvent, CompactedEvent, ToolResultEvent};

mod checkpoints;
mod load;
mod mcp;
mod operations;
mod preview;
mod proxy;
mod tasks;
mod tui;
use wicket_gate::diff;
use wicket_protocol::EventBody;
use wicket_session::Session;

/// One row of the table.
pub(crate) struct Row {
    name: String,
    wicket: String,
    reference: String,
    ratio: Option<f64>,
}

/// The median of `runs` timings of `f`, after one warm-up.
pub(crate) fn median(runs: usize, mut f: impl FnMut() -> Result<()>) -> Result<Duration> {
    f()?;
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let started = Instant::now();
        f()?;
        times.push(started.elapsed());
    }
    times.sort();
    Ok(times[runs / 2])
}

pub(crate) fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

/// A file of `bytes` bytes of source-like lines; `salt` changes every line.
fn lines_of(bytes: usize, salt: &str) -> String {
    let mut out = String::with_capacity(bytes + 64);
    let mut i = 0;
    while out.len() < bytes {
        out.push_str(&format!("    let value_{i} = compute({i}, \"{salt}\");\n"));
        i += 1;
    }
    out
}

/// `diff -u A B` on the same pair, for the reference column.
fn gnu_diff(dir: &Path, before: &str, after: &str) -> Result<Duration> {
    let (a, b) = (dir.join("before"), dir.join("after"));
    std::fs::write(&a, before)?;
    std::fs::write(&b, after)?;
    median(15, || {
        let status = Command::new("diff")
            .arg("-u")
            .arg(&a)
            .arg(&b)
            .stdout(std::process::Stdio::null())
            .status()
            .context("running diff -u")?;
        anyhow::ensure!(status.code() == Some(1), "diff -u found no difference");
        Ok(())
    })
}

fn card_rows(rows: &mut Vec<Row>) -> Result<()> {
    let dir = tempfile::tempdir()?;
    let before = lines_of(256 * 1024, "old");
    let twelve_k: String = (0..12_000)
        .map(|i| format!("    let value_{i} = compute({i}, \"old\");\n"))
        .collect();
    let every_7th: String = twelve_k
        .lines()
        .enumerate()
        .map(|(i, line)| {
            if i % 7 == 0 {
                format!("{line} // changed\n")
            } else {
                format!("{line}\n")
            }
        })
        .collect();
    let cases = [
        (
            "card: 256 KiB rewrite, every line new",
            before.clone(),
            lines_of(256 * 1024, "new"),
        ),
        ("card: 12k lines, every 7th changed", twelve_k, every_7th),
    ];
    for (name, before, after) in cases {
        let mut bytes = 0;
        let wicket = median(15, || {
            let card = diff::for_card(diff::unified(
                "src/lib.rs",
                Some(before.as_bytes()),
                after.as_bytes(),
            ));
            bytes = card.bytes;
            Ok(())
        })?;
        let reference = gnu_diff(dir.path(), &before, &after)?;
        rows.push(Row {
            name: format!("{name} ({bytes} diff bytes)"),
            wicket: ms(wicket),
            reference: format!("diff -u {}", ms(reference)),
            ratio: Some(wicket.as_secs_f64() / reference.as_secs_f64()),
        });
    }
    Ok(())
}

/// A typical event: a tool result of a small read.
pub(crate) fn sample_event(i: u64) -> EventBody {
    EventBody::ToolResult(ToolResultEvent {
        call_id: format!("call-{i}").into(),
        result: Ok(wicket_protocol::ToolOutput::ReadFile(
            wicket_protocol::ReadFileOutput {
                first_line: Default::default(),
                total_lines: Default::default(),
                note: Default::default(),
                content: "fn main() {}\n".into(),
                size: 13,
                offset: 0,
                next_offset: None,
                next_line: None,
                binary: false,
            },
        )),
    })
}

fn log_rows(rows: &mut Vec<Row>) -> Result<()> {
    const EVENTS: u64 = 10_000;
    let home = tempfile::tempdir()?;
    let ws = tempfile::tempdir()?;
    let rate = |id: &str, sync_every: Option<u64>| -> Result<f64> {
        let (session, _) = Session::open_or_create(home.path(), id, ws.path(), None)?;
        let started = Instant::now();
        for i in 0..EVENTS {
            session.append(sample_event(i))?;
            if sync_every.is_some_and(|n| (i + 1) % n == 0) {
                session.sync()?;
            }
        }
        session.sync()?;
        Ok(EVENTS as f64 / started.elapsed().as_secs_f64())
    };
    let unsynced = rate("no-fsync", None)?;
    for (name, every) in [
        ("log: append, fsync every 10 events (turn boundaries)", 10),
        ("log: append, fsync after every event", 1),
    ] {
        let synced = rate(&format!("fsync-{every}"), Some(every))?;
        rows.push(Row {
            name: name.into(),
            wicket: format!("{synced:.0} events/s"),
            reference: format!("no fsync {unsynced:.0} events/s"),
            ratio: Some(unsynced / synced),
        });
    }
    Ok(())
}

/// Where ripgrep is: on PATH or in ~/.cargo/bin, installed when missing.
fn ripgrep() -> Result<std::path::PathBuf> {
    let cargo_bin = std::env::var_os("HOME")
        .map(|home| Path::new(&home).join(".cargo/bin/rg"))
        .unwrap_or_default();
    for candidate in [std::path::PathBuf::from("rg"), cargo_bin.clone()] {
        if Command::new(&candidate)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
        {
            return Ok(candidate);
        }
    }
    eprintln!("ripgrep is missing: cargo install ripgrep --locked");
    let status = Command::new("cargo")
        .args(["install", "ripgrep", "--locked"])
        .status()
        .context("running cargo install ripgrep")?;
    anyhow::ensure!(status.success(), "cargo install ripgrep failed");
    Ok(cargo_bin)
}

/// The large real tree: the Rust documentation installed with the toolchain.
fn doc_tree() -> Result<std::path::PathBuf> {
    let output = Command::new("rustc")
        .args(["--print", "sysroot"])
        .output()?;
    let sysroot = String::from_utf8(output.stdout)?.trim().to_string();
    let tree = Path::new(&sysroot).join("share/doc/rust/html");
    anyhow::ensure!(
        tree.is_dir(),
        "{} is missing (rustup component add rust-docs)",
        tree.display()
    );
    Ok(tree)
}

fn grep_rows(rows: &mut Vec<Row>) -> Result<()> {
    let rg = ripgrep()?;
    let tree = doc_tree()?;
    let tools = wicket_tools::Tools::open(&tree)?;
    let cases = [
        (
            "grep: first 200 matches of 'fn' in the Rust docs",
            "fn",
            true,
        ),
        (
            "grep: full scan, a literal that never occurs",
            "ZqXjWicketNeverOccurs",
            false,
        ),
        (
            "grep: full scan, a regex with no literal",
            r"[qxz][0-9]{7}[qxz]{3}",
            false,
        ),
    ];
    for (name, pattern, first_200) in cases {
        let args = wicket_protocol::GrepArgs {
            pattern: pattern.into(),
            path: None,
            glob: None,
            case_insensitive: false,
        };
        let mut found = 0;
        let wicket = median(5, || {
            found = tools
                .grep(None, &args, &wicket_tools::Cancel::default())?
                .matches
                .len();
            Ok(())
        })?;
        let reference = median(5, || {
            let script = if first_200 {
                format!("{} -n {pattern} . | head -n 200 >/dev/null", rg.display())
            } else {
                format!("{} -n '{pattern}' . >/dev/null; true", rg.display())
            };
            Command::new("sh")
                .arg("-c")
                .arg(script)
                .current_dir(&tree)
                .status()?;
            Ok(())
        })?;
        rows.push(Row {
            name: format!("{name} ({found} matches)"),
            wicket: ms(wicket),
            reference: format!("rg {}", ms(reference)),
            ratio: Some(wicket.as_secs_f64() / reference.as_secs_f64()),
        });
    }
    Ok(())
}

fn read_rows(rows: &mut Vec<Row>) -> Result<()> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("big.log");
    {
        use std::io::Write;
        let mut file = std::io::BufWriter::new(std::fs::File::create(&path)?);
        for i in 0..2_000_000u64 {
            writeln!(
                file,
                "{i:>10} the quick brown fox jumps over the lazy dog {i:x}"
            )?;
        }
    }
    let size = std::fs::metadata(&path)?.len();
    let tools = wicket_tools::Tools::open(dir.path())?;
    let location = tools.workspace().classify("big.log")?;
    let args = wicket_protocol::ReadFileArgs {
        limit: Default::default(),
        path: "big.log".into(),
        offset: None,
        line: Some(1_999_000),
    };
    let wicket = median(9, || {
        let out = tools.read_file(&location, &args)?;
        anyhow::ensure!(out.content.starts_with("   1998999 "), "wrong line");
        Ok(())
    })?;
    let reference = median(9, || {
        Command::new("wc")
            .arg("-l")
            .arg(&path)
            .stdout(std::process::Stdio::null())
            .status()?;
        Ok(())
    })?;
    rows.push(Row {
        name: format!(
            "read_file: line 1,999,000 of a {} MB file",
            size / 1_000_000
        ),
        wicket: ms(wicket),
        reference: format!("wc -l {}", ms(reference)),
        ratio: Some(wicket.as_secs_f64() / reference.as_secs_f64()),
    });
    Ok(())
}

/// The release `wicket` binary, built when missing or stale.
pub(crate) fn wicket_binary() -> Result<std::path::PathBuf> {
    let status = Command::new("cargo")
        .args(["build", "--release", "--quiet", "-p", "wicket-cli"])
        .status()
        .context("building the wicket binary")?;
    anyhow::ensure!(status.success(), "cargo build -p wicket-cli failed");
    let exe = std::env::current_exe()?;
    Ok(exe.with_file_name("wicket"))
}

/// One `wicket exec` turn of the script model at `script`, cards denied.
pub(crate) fn exec_script(
    wicket: &std::path::Path,
    home: &std::path::Path,
    ws: &std::path::Path,
    script: &std::path::Path,
) -> Result<()> {
    exec_script_with(wicket, home, ws, script, &[])
}

/// [`exec_script`] with `env` set too.
pub(crate) fn exec_script_with(
    wicket: &std::path::Path,
    home: &std::path::Path,
    ws: &std::path::Path,
    script: &std::path::Path,
    env: &[(&str, &std::path::Path)],
) -> Result<()> {
    let mut command = Command::new(wicket);
    for (name, value) in env {
        command.env(name, value);
    }
    let out = command
        .env("WICKET_HOME", home)
        .args(["exec", "go", "--answers", "deny", "--model"])
        .arg(format!("script:{}", script.display()))
        .arg("--workspace")
        .arg(ws)
        .stdin(std::process::Stdio::null())
        .output()?;
    anyhow::ensure!(
        out.status.success(),
        "wicket exec failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(())
}

/// A temp folder with `home/`, `ws/` and a script of `replies` then "done".
pub(crate) struct Scripted {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) home: std::path::PathBuf,
    pub(crate) ws: std::path::PathBuf,
    pub(crate) script: std::path::PathBuf,
}

impl Scripted {
    pub(crate) fn new(mut replies: Vec<serde_json::Value>) -> Result<Scripted> {
        let dir = tempfile::tempdir()?;
        let (home, ws) = (dir.path().join("home"), dir.path().join("ws"));
        std::fs::create_dir_all(&home)?;
        std::fs::create_dir_all(&ws)?;
        replies.push(serde_json::json!({"text": "done"}));
        let script = dir.path().join("script.json");
        std::fs::write(&script, serde_json::Value::Array(replies).to_string())?;
        Ok(Scripted {
            dir,
            home,
            ws,
            script,
        })
    }

    /// `calls` writes of `wN.txt`, each a call through the gate.
    pub(crate) fn writes(calls: usize) -> Result<Scripted> {
        Scripted::new(
            (0..calls)
                .map(|n| {
                    serde_json::json!({"tool_calls": [{"name": "write_file", "arguments": {"path": format!("w{n}.txt"), "content": "x\n"}}]})
                })
                .collect(),
        )
    }
}

/// What a PreToolUse hook costs a call: `wicket exec` of a script of
/// `CALLS` writes (each through the gate: allowed by a rule, so no card),
/// with no hook, a hook whose matcher never matches, and a matched no-op
/// (`true`, in the jail like every hook); the difference per call.
fn hook_rows(rows: &mut Vec<Row>) -> Result<()> {
    // Enough calls that the kernel probe a process makes once (~17 ms, at
    // its first confined command) is not counted as a hook's.
    const CALLS: usize = 200;
    let wicket_exe = wicket_binary()?;
    let scripted = Scripted::writes(CALLS)?;
    let (home, ws, script) = (&scripted.home, &scripted.ws, &scripted.script);
    let rules =
        "step_limit = 1000\n[[rules]]\naction = \"allow\"\ntool = \"write\"\npath = \"*.txt\"\n";
    let turn = |hooks: &str| -> Result<Duration> {
        std::fs::write(home.join("config.toml"), format!("{rules}{hooks}"))?;
        median(5, || exec_script(&wicket_exe, home, ws, script))
    };
    let none = turn("")?;
    let unmatched = turn("[[hooks.pre_tool_use]]\nmatcher = \"run\"\ncommand = [\"true\"]\n")?;
    let matched = turn("[[hooks.pre_tool_use]]\nmatcher = \"write_file\"\ncommand = [\"true\"]\n")?;
    let per_call = |with: Duration| (with.as_secs_f64() - none.as_secs_f64()) / CALLS as f64;
    for (name, with) in [
        ("an unmatched hook", unmatched),
        ("a matched no-op hook (true)", matched),
    ] {
        rows.push(Row {
            name: format!("hooks: {name}, per call ({CALLS} writes a turn)"),
            wicket: format!("{:+.2} ms", per_call(with) * 1e3),
            reference: format!(
                "no hook {:.2} ms a call",
                none.as_secs_f64() * 1e3 / CALLS as f64
            ),
            ratio: None,
        });
    }
    Ok(())
}

/// Runs of each start-up command: enough that the median holds still on a
/// busy two-core machine.
const START_RUNS: usize = 201;

/// Process start: `wicket tool read_file` of a six-byte file and `wicket
/// --version`, each against `cat` of the same file. The three commands take
/// turns, so a build or a test run next door slows them alike and the ratio
/// means something on a busy machine. A private, empty `$WICKET_HOME`: the
/// person's own config (hooks) would otherwise be part of the figure.
fn start_rows(rows: &mut Vec<Row>) -> Result<()> {
    let wicket_exe = wicket_binary()?;
    let home = tempfile::tempdir()?;
    let dir = tempfile::tempdir()?;
    std::fs::write(dir.path().join("a.txt"), "hello\n")?;
    let run = |command: &mut Command| -> Result<()> {
        let status = command
            .env("WICKET_HOME", home.path())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .status()?;
        anyhow::ensure!(status.success(), "{command:?} failed");
        Ok(())
    };
    let [read, version, cat] = interleaved_medians(
        START_RUNS,
        [
            &mut || {
                run(Command::new(&wicket_exe)
                    .args(["tool", "read_file", r#"{"path":"a.txt"}"#, "--workspace"])
                    .arg(dir.path()))
            },
            &mut || run(Command::new(&wicket_exe).arg("--version")),
            &mut || run(Command::new("cat").arg(dir.path().join("a.txt"))),
        ],
    )?;
    for (name, wicket) in [
        ("start + one small read: wicket tool read_file", read),
        ("start alone: wicket --version", version),
    ] {
        rows.push(Row {
            name: name.into(),
            wicket: ms(wicket),
            reference: format!("cat {}", ms(cat)),
            ratio: Some(wicket.as_secs_f64() / cat.as_secs_f64()),
        });
    }
    Ok(())
}

/// The median of `runs` timings of each command, the commands taking turns
/// (after one warm-up round). Each round starts one command further on: a
/// start right after a big `wicket` has exited measured up to 0.06 ms
/// slower than one right after `cat`, so no command always follows the
/// same one.
fn interleaved_medians<const N: usize>(
    runs: usize,
    commands: [&mut dyn FnMut() -> Result<()>; N],
) -> Result<[Duration; N]> {
    let mut times = [(); N].map(|()| Vec::with_capacity(runs));
    for round in 0..=runs {
        for turn in 0..N {
            let which = (round + turn) % N;
            let started = Instant::now();
            commands[which]()?;
            if round > 0 {
                times[which].push(started.elapsed());
            }
        }
    }
    Ok(times.map(|mut times| {
        times.sort();
        times[runs / 2]
    }))
}

fn gate_rows(rows: &mut Vec<Row>) -> Result<()> {
    const CALLS: usize = 10_000;
    let home = tempfile::tempdir()?;
    let ws = tempfile::tempdir()?;
    std::fs::write(ws.path().join("a.txt"), "fn main() {}\n".repeat(20))?;
    let tools = wicket_tools::Tools::open(ws.path())?;
    let (session, _) =
        Session::open_or_create(home.path(), "gate", tools.workspace().root(), None)?;
    let confinement = wicket_gate::Confinement {
        sandbox: wicket_gate::sandbox::SandboxSettings::default(),
        home: home.path().to_path_buf(),
    };
    let rules = wicket_gate::rules::Rules::default();
    let gate = wicket_gate::Gate::new(&tools, &session, &confinement, &rules);
    let call = wicket_protocol::ToolCall::parse("read_file", serde_json::json!({"path": "a.txt"}))
        .map_err(|e| anyhow::anyhow!(e.message))?;
    let cancel = wicket_tools::Cancel::default();
    let mut policy = wicket_gate::Policy(wicket_protocol::Answer::Deny);
    let before = std::fs::metadata(session.log_path())?.len();
    let started = Instant::now();
    for i in 0..CALLS {
        gate.call(&format!("call-{i}").into(), &call, &mut policy, &cancel)
            .map_err(|e| anyhow::anyhow!(e.message))?;
    }
    let gated = started.elapsed();
    let bytes = std::fs::metadata(session.log_path())?.len() - before;
    let location = tools.workspace().classify("a.txt")?;
    let args = wicket_protocol::ReadFileArgs {
        limit: Default::default(),
        path: "a.txt".into(),
        offset: None,
        line: None,
    };
    let started = Instant::now();
    for _ in 0..CALLS {
        tools.read_file(&location, &args)?;
    }
    let bare = started.elapsed();
    rows.push(Row {
        name: format!(
            "gate: 10,000 inside reads in one session ({} log bytes per call)",
            bytes / CALLS as u64
        ),
        wicket: format!("{:.0} calls/s", CALLS as f64 / gated.as_secs_f64()),
        reference: format!("bare tool {:.0} calls/s", CALLS as f64 / bare.as_secs_f64()),
        ratio: Some(gated.as_secs_f64() / bare.as_secs_f64()),
    });
    Ok(())
}

/// Runs `program args` under GNU time; returns (seconds, peak RSS in KiB, stdout).
fn timed(program: &Path, args: &[&str]) -> Result<(f64, u64, Vec<u8>)> {
    let dir = tempfile::tempdir()?;
    let report = dir.path().join("time");
    let output = Command::new("/usr/bin/time")
        .arg("-o")
        .arg(&report)
        .args(["-f", "%e %M"])
        .arg(program)
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .context("running /usr/bin/time (Debian package time)")?;
    let text = std::fs::read_to_string(&report)?;
    let mut fields = text.split_whitespace().rev().take(2).collect::<Vec<_>>();
    fields.reverse();
    let seconds = fields.first().and_then(|f| f.parse().ok()).unwrap_or(0.0);
    let rss = fields.get(1).and_then(|f| f.parse().ok()).unwrap_or(0);
    Ok((seconds, rss, output.stdout))
}

fn run_rows(rows: &mut Vec<Row>) -> Result<()> {
    let wicket_exe = wicket_binary()?;
    let ws = tempfile::tempdir()?;
    let n = 120_000_000u64;
    let args =
        serde_json::json!({"argv": ["seq", "1", n.to_string()], "timeout_s": 600}).to_string();
    let ws_path = ws.path().display().to_string();
    let (seconds, rss, stdout) = timed(
        &wicket_exe,
        &[
            "tool",
            "run",
            &args,
            "--workspace",
            &ws_path,
            "--answers",
            "allow_once",
        ],
    )?;
    let text = String::from_utf8_lossy(&stdout);
    let result: serde_json::Value = serde_json::from_str(text.lines().last().unwrap_or("{}"))?;
    let out = result["stdout"].as_str().unwrap_or("");
    let total: u64 = (1..=9u64)
        .map(|digits| {
            let low = 10u64.pow(digits as u32 - 1);
            let high = (10u64.pow(digits as u32) - 1).min(n);
            if low > n {
                0
            } else {
                (high - low + 1) * (digits + 1)
            }
        })
        .sum();
    let correct = out.starts_with("1\n2\n3\n")
        && out.ends_with(&format!("{}\n{n}\n", n - 1))
        && result["stdout_cut"].as_u64() == Some(total - 64 * 1024);
    anyhow::ensure!(
        correct,
        "the head and tail of run's output are wrong: {}",
        &text[..text.len().min(300)]
    );
    let (reference_seconds, reference_rss, _) =
        timed(Path::new("sh"), &["-c", &format!("seq 1 {n} > /dev/null")])?;
    rows.push(Row {
        name: format!(
            "run: seq with {:.2} GB of output, head+tail correct",
            total as f64 / 1e9
        ),
        wicket: format!("{seconds:.2} s, peak {} MiB", rss / 1024),
        reference: format!(
            "seq>/dev/null {reference_seconds:.2} s, {} MiB",
            reference_rss / 1024
        ),
        ratio: Some(seconds / reference_seconds.max(0.01)),
    });
    Ok(())
}

fn resume_rows(rows: &mut Vec<Row>) -> Result<()> {
    const EVENTS: u64 = 100_000;
    let home = tempfile::tempdir()?;
    let ws = tempfile::tempdir()?;
    {
        let (session, _) = Session::open_or_create(home.path(), "big", ws.path(), None)?;
        for i in 0..EVENTS {
            session.append(sample_event(i))?;
        }
        session.sync()?;
    }
    let exe = std::env::current_exe()?;
    let home_text = home.path().display().to_string();
    let ws_text = ws.path().display().to_string();
    let (seconds, rss, stdout) = timed(&exe, &["--resume", &home_text, "big", &ws_text])?;
    let inner: f64 = String::from_utf8_lossy(&stdout)
        .trim()
        .parse()
        .unwrap_or(0.0);
    let size = std::fs::metadata(home.path().join("sessions/big/log.jsonl"))?.len();
    let (cat_seconds, _, _) = timed(
        Path::new("cat"),
        &[&home
            .path()
            .join("sessions/big/log.jsonl")
            .display()
            .to_string()],
    )?;
    rows.push(Row {
        name: format!(
            "resume: a session of 100,000 events ({} MB log)",
            size / 1_000_000
        ),
        wicket: format!(
            "{:.0} ms load, {seconds:.2} s process, peak {} MiB",
            inner * 1e3,
            rss / 1024
        ),
        reference: format!("cat {cat_seconds:.2} s"),
        ratio: None,
    });
    Ok(())
}

/// `--resume HOME ID WS`: opens the session and rebuilds its conversation,
/// printing the seconds it took (run under GNU time for the peak memory).
fn resume_child(home: &str, id: &str, ws: &str) -> Result<()> {
    let started = Instant::now();
    let (_session, loaded) = Session::open_or_create(Path::new(home), id, Path::new(ws), None)?;
    let messages = wicket_core::turn::conversation(&loaded.events);
    let elapsed = started.elapsed();
    anyhow::ensure!(loaded.events.len() > 100_000 - 1, "the log did not load");
    std::hint::black_box(messages);
    println!("{}", elapsed.as_secs_f64());
    Ok(())
}

/// The sandbox launcher's cost: `true` started directly, through the
/// launcher unconfined, and through it in the sandbox (namespaces and
/// Landlock), median of 50 each.
fn launcher_rows(rows: &mut Vec<Row>) -> Result<()> {
    use wicket_os::spawn::{self, Confine, Cwd, Limits, Spec};
    let wicket_exe = wicket_binary()?;
    let dir = tempfile::tempdir()?;
    let ws = std::fs::canonicalize(dir.path())?;
    let limits = Limits {
        cut_note: Default::default(),
        timeout: Duration::from_secs(10),
        keep_bytes: 1024,
    };
    let cancel = wicket_tools::Cancel::default();
    let direct = median(50, || {
        let status = Command::new("true").current_dir(&ws).status()?;
        anyhow::ensure!(status.success(), "true failed");
        Ok(())
    })?;
    // What `wicket` itself installs: the small launcher beside it.
    let small = wicket_exe.with_file_name("wicket-launch");
    wicket_os::launch::install_launcher(small.clone());
    let start_with = |confine: Confine, egress: Option<wicket_os::egress::Egress>| -> Result<()> {
        let spec = Spec {
            confine,
            egress,
            ..Spec::new(vec!["true".into()], Cwd::Path(ws.clone()))
        };
        let finished = spawn::run(spec, limits, &cancel)?;
        anyhow::ensure!(
            finished.code() == Some(0),
            "true failed: {:?}",
            finished.stderr
        );
        Ok(())
    };
    let start = |confine: Confine| start_with(confine, None);
    let unconfined = median(50, || start(Confine::none()))?;
    let policy = wicket_os::launch::Policy {
        overlay: Default::default(),
        hidden: Default::default(),
        workspace: ws.clone(),
        read_only: false,
        writable: Vec::new(),
        visible: Vec::new(),
        deny_read: vec![std::env::temp_dir().join("wicket-bench-home")],
        network: wicket_protocol::Network::Off,
        write_git: false,
        limits: wicket_os::launch::ResourceLimits {
            max_processes: 1024,
            max_memory_mb: 4096,
        },
    };
    let sandboxed = median(50, || start(Confine::sandbox(policy.clone())))?;
    let networked = |network| wicket_os::launch::Policy {
        network,
        ..policy.clone()
    };
    let direct_network = median(50, || {
        start(Confine::sandbox(networked(
            wicket_protocol::Network::Direct,
        )))
    })?;
    // Each connection would be handed here; `true` makes none.
    let egress = wicket_os::egress::Egress(std::sync::Arc::new(drop));
    let proxied = median(50, || {
        start_with(
            Confine::sandbox(networked(wicket_protocol::Network::Proxied)),
            Some(egress.clone()),
        )
    })?;
    let available = wicket_os::launch::availability();
    let mut measured = vec![
        (
            "run true: through the launcher, unconfined".to_string(),
            unconfined,
        ),
        (
            format!(
                "run true: sandboxed, every layer [Landlock ABI {}, mounts {}, seccomp {}, cgroup {}]",
                available.landlock_abi.unwrap_or(0),
                available.mounts,
                available.seccomp,
                available.cgroup
            ),
            sandboxed,
        ),
        (
            "run true: sandboxed, the host's network (\"direct\")".to_string(),
            direct_network,
        ),
        (
            format!(
                "run true: sandboxed, network through Wicket (+{} over direct)",
                ms(proxied.saturating_sub(direct_network))
            ),
            proxied,
        ),
    ];
    measured.extend(layer_by_layer(&small, &ws, &policy, false)?);
    measured.extend(layer_by_layer(&wicket_exe, &ws, &policy, true)?);
    for (name, took) in measured {
        rows.push(Row {
            name,
            wicket: format!("{} (+{})", ms(took), ms(took.saturating_sub(direct))),
            reference: format!("direct {}", ms(direct)),
            ratio: Some(took.as_secs_f64() / direct.as_secs_f64()),
        });
    }
    Ok(())
}

/// The launcher (`exe`) started by hand with one layer more each time, so
/// the table says where its time goes: what `wicket_os::spawn` would ask of
/// it, minus the layers not yet added. `only_all`: just the last row, for
/// the comparison with the big binary.
fn layer_by_layer(
    exe: &std::path::Path,
    ws: &std::path::Path,
    policy: &wicket_os::launch::Policy,
    only_all: bool,
) -> Result<Vec<(String, Duration)>> {
    use wicket_os::launch::Launch;
    let name = exe
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let home = std::env::temp_dir().join("wicket-bench-home");
    std::fs::create_dir_all(&home)?;
    let base = Launch {
        parent: std::process::id(),
        policy: None,
        isolate: false,
        mounts: false,
        seccomp: false,
        cgroup: false,
        protect: Vec::new(),
        mask: Vec::new(),
        egress: None,
        proxy_port: None,
        report: None,
    };
    let sandboxed = Launch {
        policy: Some(policy.clone()),
        ..base.clone()
    };
    let steps = [
        ("layers: setsid, closed fds, PDEATHSIG, exec", base.clone()),
        (
            "layers: + $WICKET_HOME read-only (mode = off)",
            Launch {
                mounts: true,
                protect: vec![home],
                ..base.clone()
            },
        ),
        ("layers: Landlock only, no namespaces", sandboxed.clone()),
        (
            "layers: + user, PID and network namespaces",
            Launch {
                isolate: true,
                ..sandboxed.clone()
            },
        ),
        (
            "layers: + mount namespace",
            Launch {
                isolate: true,
                mounts: true,
                ..sandboxed.clone()
            },
        ),
        (
            "layers: + seccomp",
            Launch {
                isolate: true,
                mounts: true,
                seccomp: true,
                ..sandboxed.clone()
            },
        ),
        (
            "layers: + cgroup (all of them)",
            Launch {
                isolate: true,
                mounts: true,
                seccomp: true,
                cgroup: true,
                ..sandboxed
            },
        ),
    ];
    let mut measured = Vec::new();
    let skip = if only_all { steps.len() - 1 } else { 0 };
    for (step, launch) in steps.into_iter().skip(skip) {
        let label = format!("{name} {step}");
        let took = median(50, || {
            let status = Command::new(exe)
                .arg(wicket_os::launch::LAUNCH_ARG)
                .arg(launch.to_arg()?)
                .args(["--", "true"])
                .current_dir(ws)
                .status()?;
            anyhow::ensure!(status.success(), "{label}: {status}");
            Ok(())
        })?;
        measured.push((label, took));
    }
    Ok(measured)
}

/// Rebuilding the conversation a turn sends, for a session of 100,000
/// events: without a compaction (every event is read and rebuilt) and
/// with one near the end (only what follows it is parsed and rebuilt).
fn rebuild_rows(rows: &mut Vec<Row>) -> Result<()> {
    const EVENTS: u64 = 100_000;
    let dir = tempfile::tempdir()?;
    let ws = std::fs::canonicalize(dir.path())?;
    let home = ws.join("home");
    let build = |id: &str, compact_at: Option<u64>| -> Result<std::path::PathBuf> {
        let (session, _) = Session::open_or_create(&home, id, &ws, None)?;
        let mut seq = 1;
        while seq < EVENTS {
            let call = format!("c{seq}");
            session.append(EventBody::AssistantMessage(AssistantMessageEvent {
                text: String::new(),
                tool_calls: vec![wicket_protocol::ToolCallRequest {
                    id: call.clone().into(),
                    name: "read_file".into(),
                    arguments: r#"{"path":"src/main.rs"}"#.into(),
                }],
                usage: Some(wicket_protocol::Usage::default()),
                stop_reason: None,
            }))?;
            session.append(sample_event(seq))?;
            seq += 2;
            if compact_at == Some(seq / 1000 * 1000) && seq % 1000 == 1 {
                session.append(EventBody::Compacted(CompactedEvent {
                    summary: "the work so far".into(),
                    from_seq: 1,
                    to_seq: seq - 20,
                    tokens_before: 100_000,
                    tokens_after: 2_000,
                    usage: wicket_protocol::Usage::default(),
                }))?;
                seq += 1;
            }
        }
        session.sync()?;
        Ok(session.log_path().to_path_buf())
    };
    let plain = build("plain", None)?;
    let compacted = build("compacted", Some(EVENTS - 2_000))?;
    for (name, log) in [
        ("no compaction", &plain),
        ("a compaction 2,000 events from the end", &compacted),
    ] {
        let mut messages = 0;
        let took = median(9, || {
            let events = wicket_session::load_for_conversation(log)?;
            messages = wicket_core::turn::conversation(&events).len();
            Ok(())
        })?;
        rows.push(Row {
            name: format!("rebuild: 100,000-event session, {name} ({messages} messages)"),
            wicket: ms(took),
            reference: "-".into(),
            ratio: None,
        });
    }
    Ok(())
}

/// The crash loop: `wicket serve` under a scripted load (sessions running
/// commands and waiting on cards) is killed with SIGKILL at a random
/// moment, 50 times, and started again each time. Counts what must be zero:
/// processes of commands left running, sessions listed as running or
/// waiting after the restart, and sessions whose log no longer loads.
fn crash_rows(rows: &mut Vec<Row>) -> Result<()> {
    const KILLS: usize = 50;
    let wicket_exe = wicket_binary()?;
    let base = tempfile::tempdir()?;
    let root = std::fs::canonicalize(base.path())?;
    let (home, ws) = (root.join("home"), root.join("ws"));
    std::fs::create_dir_all(&ws)?;
    let marker = format!("wicket-crash-loop-{}", std::process::id());
    let script = root.join("load.json");
    let run = serde_json::json!({"argv": ["sh", "-c", format!("setsid sleep 60 & sleep 60; : {marker}")]});
    let write = serde_json::json!({"path": "w.txt", "content": "x"});
    std::fs::write(
        &script,
        serde_json::json!([
            {"tool_calls": [{"name": "run", "arguments": run}]},
            {"tool_calls": [{"name": "write_file", "arguments": write}]},
            {"text": "done"}
        ])
        .to_string(),
    )?;
    let model = format!("script:{}", script.display());
    let (mut orphans, mut stale, mut unloadable) = (0usize, 0usize, 0usize);
    let started = Instant::now();
    for round in 0..KILLS {
        let mut server = Command::new(&wicket_exe)
            .env("WICKET_HOME", &home)
            .args(["serve", "--port", "0"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()?;
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(server.stdout.take().context("stdout")?),
            &mut line,
        )?;
        let file: serde_json::Value =
            serde_json::from_slice(&std::fs::read(home.join("server.json"))?)?;
        let api = Api {
            port: file["port"].as_u64().unwrap_or(0) as u16,
            token: file["token"].as_str().unwrap_or("").to_string(),
        };
        // The state the last server left: nothing may claim to run.
        for session in api
            .call("GET", "/api/sessions", None)?
            .as_array()
            .cloned()
            .unwrap_or_default()
        {
            if session["status"] != "idle" {
                stale += 1;
            }
        }
        // New load: three sessions, each runs a command (allowed) and then
        // waits on a write card.
        for _ in 0..3 {
            let id = api.call(
                "POST",
                "/api/sessions",
                Some(serde_json::json!({"workspace": ws, "model": model})),
            )?["id"]
                .as_str()
                .unwrap_or("")
                .to_string();
            api.call(
                "POST",
                &format!("/api/sessions/{id}/messages"),
                Some(serde_json::json!({"text": "go"})),
            )?;
            if let Some(card) = api.wait_card(&id)? {
                api.call(
                    "POST",
                    &format!("/api/sessions/{id}/cards/{card}"),
                    Some(serde_json::json!({"answer": "allow_once"})),
                )?;
            }
        }
        // Kill at a random moment within the next 300 ms.
        std::thread::sleep(Duration::from_millis(wicket_os::ids::random_u64() % 300));
        let _ = server.kill();
        let _ = server.wait();
        // Children die with the server: give the kernel a moment, then look.
        std::thread::sleep(Duration::from_millis(200));
        orphans += processes_with(&marker);
        eprintln!("crash loop: round {} of {KILLS}", round + 1);
    }
    for entry in std::fs::read_dir(home.join("sessions"))? {
        let id = entry?.file_name().to_string_lossy().into_owned();
        let out = Command::new(&wicket_exe)
            .env("WICKET_HOME", &home)
            .args(["log", &id, "--json"])
            .output()?;
        if !out.status.success() {
            unloadable += 1;
        }
    }
    let _ = Command::new("pkill").args(["-f", &marker]).status();
    rows.push(Row {
        name: format!("crash loop: {KILLS} kill -9 of serve under load, restarted each time"),
        wicket: format!("{orphans} orphans, {stale} stale, {unloadable} unloadable"),
        reference: format!("{:.1} s", started.elapsed().as_secs_f64()),
        ratio: None,
    });
    Ok(())
}

/// The processes whose command line holds `marker`.
fn processes_with(marker: &str) -> usize {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    entries
        .filter_map(|entry| entry.ok())
        .filter(|entry| {
            std::fs::read(entry.path().join("cmdline"))
                .map(|bytes| {
                    String::from_utf8_lossy(&bytes)
                        .replace('\0', " ")
                        .contains(marker)
                })
                .unwrap_or(false)
        })
        .count()
}

/// A tiny client for the crash loop (plain HTTP/1.1 is enough here).
struct Api {
    port: u16,
    token: String,
}

impl Api {
    fn call(
        &self,
        method: &str,
        path: &str,
        body: Option<serde_json::Value>,
    ) -> Result<serde_json::Value> {
        use std::io::{Read, Write};
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", self.port))?;
        let body = body.map(|b| b.to_string()).unwrap_or_default();
        write!(
            stream,
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            self.port,
            self.token,
            body.len()
        )?;
        let mut response = String::new();
        stream.read_to_string(&mut response)?;
        let text = response
            .split_once("\r\n\r\n")
            .map(|(_, b)| b)
            .unwrap_or("");
        Ok(serde_json::from_str(text).unwrap_or(serde_json::Value::Null))
    }

    /// The session's open card, waited for up to two seconds.
    fn wait_card(&self, id: &str) -> Result<Option<String>> {
        for _ in 0..200 {
            let detail = self.call("GET", &format!("/api/sessions/{id}"), None)?;
            if let Some(card) = detail["open"]["card"]["id"].as_str() {
                return Ok(Some(card.to_string()));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Ok(None)
    }
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--resume") && args.len() == 5 {
        return resume_child(&args[2], &args[3], &args[4]);
    }
    let filter = args.get(1).cloned().unwrap_or_default();
    let mut rows = Vec::new();
    type Workload = fn(&mut Vec<Row>) -> Result<()>;
    let workloads: [(&str, Workload); 21] = [
        ("telemetry", operations::telemetry_rows),
        ("managed", operations::managed_rows),
        ("checkpoints", checkpoints::checkpoint_rows),
        ("preview", preview::preview_rows),
        ("load", load::load_rows),
        ("hooks", hook_rows),
        ("tasks", tasks::task_rows),
        ("tui", tui::tui_rows),
        ("mcp", mcp::mcp_rows),
        ("rebuild", rebuild_rows),
        ("launcher", launcher_rows),
        ("proxy", proxy::proxy_rows),
        ("crash", crash_rows),
        ("grep", grep_rows),
        ("read", read_rows),
        ("start", start_rows),
        ("card", card_rows),
        ("gate", gate_rows),
        ("log", log_rows),
        ("run", run_rows),
        ("resume", resume_rows),
    ];
    for (name, workload) in workloads {
        if name.contains(&filter) {
            eprintln!("running {name}…");
            workload(&mut rows).with_context(|| format!("the {name} benchmark"))?;
        }
    }
    let width = rows.iter().map(|row| row.name.len()).max().unwrap_or(0);
    println!(
        "{:width$}  {:>36}  {:>32}  ratio",
        "workload", "wicket", "reference"
    );
    for row in &rows {
        let ratio = row.ratio.map_or("-".to_string(), |r| format!("{r:.2}x"));
        println!(
            "{:width$}  {:>36}  {:>32}  {ratio}",
            row.name, row.wicket, row.reference
        );
    }
    Ok(())
}
