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
    let mut call = |answers: &[Answer]| -> Result<()> {
        round += 1;
        let command = format!("echo {round} > one.txt");
        let call = ToolCall::parse(
            "run",
            serde_json::json!({"argv": ["sh", "-c", command], "preview": true}),
        )
        .map_err(|e| anyhow::anyhow!(e.message))?;
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
    // The first checkpoint walks the tree; the rounds after it are tracked.
    call(&[Answer::AllowOnce])?;
    let call = std::cell::RefCell::new(call);
    let [plain, discarded, applied] = interleaved_medians(
        15,
        [
            &mut || (call.borrow_mut())(&[Answer::AllowOnce]),
            &mut || (call.borrow_mut())(&[Answer::Preview, Answer::Discard]),
            &mut || (call.borrow_mut())(&[Answer::Preview, Answer::Apply]),
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
    Ok(())
}

fn ms_of(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}
