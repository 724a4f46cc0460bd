//! The terminal UI with a 10,000-event session: the time to open it (load
//! the log, build the transcript, draw the first screen) beside `cat` of the
//! same log, and keystroke to screen (the key handled, the frame drawn).

use std::time::{Duration, Instant};

use anyhow::Result;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use wicket_protocol::{EventBody, Usage};
use wicket_session::{Session, load_log};
use wicket_tui::app::App;

use crate::{Row, ms};
use wicket_protocol::event::{AssistantMessageEvent, ToolCallEvent, UserMessageEvent};

/// A session's mix: an ask, a reply in markdown, a call and its result.
fn turn_events(i: u64) -> [EventBody; 4] {
    [
        EventBody::UserMessage(UserMessageEvent {
            plan: Default::default(),
            text: format!("Step {i}: look at src/module_{i}.rs"),
        }),
        EventBody::AssistantMessage(AssistantMessageEvent {
            text: format!("Reading **module {i}** with `read_file`:\n\n- first\n- second"),
            tool_calls: Vec::new(),
            usage: Some(Usage::default()),
            stop_reason: None,
        }),
        EventBody::ToolCall(ToolCallEvent {
            call_id: format!("c{i}").into(),
            name: "read_file".into(),
            arguments: serde_json::json!({"path": format!("src/module_{i}.rs")}),
            auto_allowed: None,
            allowed_by: None,
        }),
        crate::sample_event(i),
    ]
}

pub(crate) fn tui_rows(rows: &mut Vec<Row>) -> Result<()> {
    const EVENTS: u64 = 10_000;
    let home = tempfile::tempdir()?;
    let ws = tempfile::tempdir()?;
    {
        let (session, _) = Session::open_or_create(home.path(), "big", ws.path(), None)?;
        for i in 0..EVENTS / 4 {
            for body in turn_events(i) {
                session.append(body)?;
            }
        }
        session.sync()?;
    }
    let log = home.path().join("sessions/big/log.jsonl");
    let mut opens = Vec::new();
    let mut app = None;
    for _ in 0..5 {
        let started = Instant::now();
        let loaded = load_log(&log)?;
        let mut opened = App::new(
            "big",
            &ws.path().display().to_string(),
            Some("openai:gpt-4o".into()),
            None,
            false,
        );
        for event in &loaded.events {
            opened.on_event(event);
        }
        let mut terminal = Terminal::new(TestBackend::new(120, 40))?;
        terminal.draw(|frame| opened.render(frame))?;
        opens.push(started.elapsed());
        app = Some(opened);
    }
    opens.sort();
    let open = opens[opens.len() / 2];
    let cat = crate::median(15, || {
        let out = std::process::Command::new("cat").arg(&log).output()?;
        anyhow::ensure!(out.status.success(), "cat failed");
        Ok(())
    })?;
    rows.push(Row {
        name: "tui: open a 10,000-event session (load, transcript, first frame)".into(),
        wicket: ms(open),
        reference: format!("cat {}", ms(cat)),
        ratio: Some(open.as_secs_f64() / cat.as_secs_f64()),
    });
    let Some(mut app) = app else {
        anyhow::bail!("no run");
    };
    let mut terminal = Terminal::new(TestBackend::new(120, 40))?;
    let mut frames: Vec<Duration> = Vec::with_capacity(1000);
    for i in 0..1000 {
        let code = if i % 50 == 49 {
            KeyCode::PageUp
        } else {
            KeyCode::Char('x')
        };
        let started = Instant::now();
        app.on_key(KeyEvent::new(code, KeyModifiers::NONE));
        terminal.draw(|frame| app.render(frame))?;
        frames.push(started.elapsed());
    }
    frames.sort();
    rows.push(Row {
        name: "tui: keystroke to frame, 10,000 events open (1,000 keys)".into(),
        wicket: format!("median {} p99 {}", ms(frames[500]), ms(frames[990])),
        reference: "target 16.00 ms".into(),
        ratio: Some(frames[990].as_secs_f64() / 0.016),
    });
    Ok(())
}
