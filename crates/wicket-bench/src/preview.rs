//! What a preview costs over a plain run: the same one-file command in a
//! 10,000-file workspace through the gate, answered `allow_once` (a plain
//! run in the jail) or `preview` then `discard` (the overlay, the scan of
//! its upper layer, the diff, the effects card), and `preview` then
//! `apply` (plus the checkpoint and the write). Each call takes its
//! checkpoint first, as every run does.

use std::time::Duration;

use anyhow::Result;
use wicket_checkpoints::{Settings, Store};
use wicket_gate::Answerer;
use wicket_protocol::{Answer, Card, ToolCall};
use wicket_session::Session;

use crate::{Row, interleaved_medians, ms};

/// Answers each card with the next of its list, round after round.
struct Answers {
    list: Vec<Answer>,
    next: usize,
}

impl Answerer for Answers {
    fn answer(&mut self, _card: &Card) -> Option<Answer> {
        let answer = self.list[self.next % self.list.len()];
        self.next += 1;
        Some(answer)
    }
}

pub(crate) fn preview_rows(rows: &mut Vec<Row>) -> Result<()> {
    const FILES: usize = 10_000;
    let small = crate::wicket_binary()?.with_file_name("wicket-launch");
    wicket_os::launch::install_launcher(small);
    if !wicket_os::launch::availability().overlay {
        anyhow::bail!("this kernel mounts no overlay in a user namespace: nothing to measure");
    }
    let home = tempfile::tempdir()?;
    let dir = tempfile::tempdir()?;
    let ws = std::fs::canonicalize(dir.path())?;
    crate::checkpoints::workspace(&ws, FILES)?;
    std::fs::write(ws.join("one.txt"), "one\n")?;
    let tools = wicket_tools::Tools::open(&ws)?;
    let (session, _) = Session::open_or_create(home.path(), "preview", &ws, None)?;
    let store = Store::new(session.dir(), &home.path().join("checkpoints"));
    let settings = Settings::default();
    let confinement = wicket_gate::Confinement {
        sandbox: wicket_gate::sandbox::SandboxSettings::default(),
        home: home.path().to_path_buf(),
    };
    let rules = wicket_gate::rules::Rules::default();
    let cancel = wicket_tools::Cancel::default();
    let mut round = 0u64;
    // One `run` call through the gate, its cards answered in turn.
    let mut gate_call = |args: serde_json::Value, answers: &[Answer]| -> Result<()> {
        round += 1;
        let call = ToolCall::parse("run", args).map_err(|e| anyhow::anyhow!(e.message))?;
        let gate = wicket_gate::Gate::new(&tools, &session, &confinement, &rules).checkpointed(
            Some(wicket_gate::Checkpointing {
                store: &store,
                settings: &settings,
            }),
        );
        let mut answerer = Answers {
            list: answers.to_vec(),
            next: 0,
        };
        let output = gate
            .call(
                &format!("call-{round}").into(),
                &call,
                &mut answerer,
                &cancel,
            )
            .map_err(|e| anyhow::anyhow!(e.message))?;
        anyhow::ensure!(
            !matches!(output, wicket_protocol::ToolOutput::Run(ref run) if run.exit_code != Some(0)),
            "the command failed: {output:?}"
        );
        Ok(())
    };
    let one_file = |round: u64| {
        let command = format!("echo {round} > one.txt");
        serde_json::json!({"argv": ["sh", "-c", command], "preview": true})
    };
    // The first checkpoint walks the tree; the rounds after it are tracked.
    gate_call(one_file(0), &[Answer::AllowOnce])?;
    let gate = std::cell::RefCell::new(gate_call);
    let rounds = std::cell::Cell::new(0);
    let call = |answers: &[Answer]| {
        rounds.set(rounds.get() + 1);
        (gate.borrow_mut())(one_file(rounds.get()), answers)
    };
    let [plain, discarded, applied] = interleaved_medians(
        15,
        [
            &mut || call(&[Answer::AllowOnce]),
            &mut || call(&[Answer::Preview, Answer::Discard]),
            &mut || call(&[Answer::Preview, Answer::Apply]),
        ],
    )?;
    let over = |previewed: Duration| format!("+{:.1} ms", ms_of(previewed) - ms_of(plain));
    rows.push(Row {
        name: format!("preview, {FILES} files: a one-file command, discarded"),
        wicket: format!("{} ({})", ms(discarded), over(discarded)),
        reference: format!("plain run {}", ms(plain)),
        ratio: Some(discarded.as_secs_f64() / plain.as_secs_f64()),
    });
    rows.push(Row {
        name: format!("preview, {FILES} files: a one-file command, applied"),
        wicket: format!("{} ({})", ms(applied), over(applied)),
        reference: format!("plain run {}", ms(plain)),
        ratio: Some(applied.as_secs_f64() / plain.as_secs_f64()),
    });

    // A command that makes 100,000 files, previewed and discarded: its
    // upper layer read whole, every entry compared, the card bounded;
    // against the same command alone, in a folder of its own.
    let make = format!(
        "import os\nfor d in range({}):\n os.makedirs(f'gen/{{d}}')\n \
         for i in range(1000): open(f'gen/{{d}}/{{i}}', 'w').close()\n",
        LAYER_ENTRIES / 1000
    );
    let alone = crate::median(3, || {
        let scratch = tempfile::tempdir()?;
        let status = std::process::Command::new("python3")
            .args(["-c", &make])
            .current_dir(scratch.path())
            .status()?;
        anyhow::ensure!(status.success(), "python3 failed");
        Ok(())
    })?;
    let mut grew = 0u64;
    let layered = crate::median(3, || {
        let before = rss_reset()?;
        let args = serde_json::json!({"argv": ["python3", "-c", make], "preview": true});
        (gate.borrow_mut())(args, &[Answer::Preview, Answer::Discard])?;
        grew = grew.max(peak_rss()?.saturating_sub(before));
        Ok(())
    })?;
    rows.push(Row {
        name: format!(
            "preview, {LAYER_ENTRIES} files made: the upper layer read, discarded (peak +{} MiB)",
            grew / 1024
        ),
        wicket: format!("{} (+{:.1} ms)", ms(layered), ms_of(layered) - ms_of(alone)),
        reference: format!("the command alone {}", ms(alone)),
        ratio: Some(layered.as_secs_f64() / alone.as_secs_f64()),
    });
    Ok(())
}

/// This process's resident memory now, in KiB, its peak set back to it
/// (`/proc/self/clear_refs`, 5).
fn rss_reset() -> Result<u64> {
    std::fs::write("/proc/self/clear_refs", "5")?;
    status_kib("VmRSS:")
}

/// This process's peak resident memory since [`rss_reset`], in KiB.
fn peak_rss() -> Result<u64> {
    status_kib("VmHWM:")
}

fn status_kib(field: &str) -> Result<u64> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    let line = status
        .lines()
        .find_map(|line| line.strip_prefix(field))
        .ok_or_else(|| anyhow::anyhow!("no {field} in /proc/self/status"))?;
    Ok(line.trim().trim_end_matches("kB").trim().parse()?)
}

/// The entries the large preview's command makes.
const LAYER_ENTRIES: usize = 100_000;

fn ms_of(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}
