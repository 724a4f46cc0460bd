//! `wicket rewind`: the files of a session's workspace back to how they
//! were before an event, after saying what will change.

use std::io::{BufRead, IsTerminal, Write};
use std::process::ExitCode;

use wicket_core::manager::{Manager, RewindTo, standard_setup};
use wicket_protocol::text::visible_line;
use wicket_protocol::{EventBody, SessionId};
use wicket_session as session;

use crate::show::say;
use wicket_protocol::event::RewoundEvent;

/// What `wicket rewind` was asked.
pub(crate) struct Options {
    pub session: String,
    pub to: Option<u64>,
    pub undo: bool,
    pub yes: bool,
    pub list: bool,
}

fn when(at: u64) -> String {
    time::OffsetDateTime::from_unix_timestamp(at as i64)
        .ok()
        .and_then(|at| {
            at.format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
        .unwrap_or_else(|| at.to_string())
}

/// The plan, indented.
fn plan_lines(plan: &wicket_checkpoints::Plan) -> Vec<String> {
    plan.lines()
        .into_iter()
        .map(|line| format!("  {line}"))
        .collect()
}

/// `--list`: each point to go back to, with the words of the call it
/// comes before and what that call changed.
fn list(manager: &Manager, id: &SessionId) -> anyhow::Result<()> {
    let calls: std::collections::BTreeMap<u64, String> = manager
        .events_after(id, 0)?
        .into_iter()
        .filter_map(|event| match event.body {
            EventBody::ToolCall(call) => Some((
                event.seq,
                format!(
                    "{} {}",
                    call.name,
                    wicket_protocol::call_summary(&call.name, &call.arguments)
                ),
            )),
            EventBody::Rewound(_) => Some((event.seq, "the rewind".to_string())),
            _ => None,
        })
        .collect();
    for info in manager.checkpoints(id)? {
        let call = calls.get(&info.seq).unwrap_or(&info.tool);
        println!(
            "{:>5}  {}  {}: {}",
            info.seq,
            when(info.at),
            visible_line(call.trim_end()),
            info.changed_line()
        );
    }
    Ok(())
}

pub(crate) fn rewind(options: Options) -> anyhow::Result<ExitCode> {
    let home = session::home();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let manager = Manager::new(&home, runtime.handle().clone(), standard_setup(&home));
    let id = SessionId::from(options.session.clone());
    if options.list {
        list(&manager, &id)?;
        return Ok(ExitCode::SUCCESS);
    }
    let to = match (options.to, options.undo) {
        (Some(seq), false) => RewindTo::Seq(seq),
        (None, true) => RewindTo::Undo,
        (None, false) => RewindTo::LastTurn,
        (Some(_), true) => anyhow::bail!("give --to or --undo, not both"),
    };
    let (target, plan) = manager.rewind_plan(&id, to)?;
    if plan.is_empty() {
        println!(
            "nothing to rewind: the files are as they were before event {}",
            target.seq
        );
        for line in plan_lines(&plan) {
            println!("{line}");
        }
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "rewind session {} to before event {} ({}, {}):",
        options.session,
        target.seq,
        target.tool,
        when(target.at)
    );
    for line in plan_lines(&plan) {
        println!("{line}");
    }
    if !options.yes {
        if !std::io::stdin().is_terminal() {
            say(
                "nothing changed: stdin is not a terminal to ask on; add --yes to rewind without asking",
            );
            return Ok(ExitCode::from(2));
        }
        print!("rewind these files? [y/N] ");
        std::io::stdout().flush()?;
        let mut answer = String::new();
        std::io::stdin().lock().read_line(&mut answer)?;
        if !matches!(answer.trim(), "y" | "Y" | "yes") {
            println!("nothing changed");
            return Ok(ExitCode::SUCCESS);
        }
    }
    let event = manager.rewind(&id, to)?;
    if let EventBody::Rewound(RewoundEvent { to, files }) = &event.body {
        println!("{}", visible_line(&files.line(*to)));
    }
    println!(
        "`wicket rewind {} --undo` takes it back (event {})",
        options.session, event.seq
    );
    Ok(ExitCode::SUCCESS)
}
