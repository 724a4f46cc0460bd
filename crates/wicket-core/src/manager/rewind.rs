//! Checkpoints and rewinds of a session, never while a turn runs.

use super::*;
use wicket_protocol::event::{RewoundEvent, ToolCallEvent, UserMessageEvent};

impl Manager {
    /// The session's checkpoints, oldest first.
    pub fn checkpoints(
        &self,
        id: &SessionId,
    ) -> Result<Vec<wicket_checkpoints::Info>, ManagerError> {
        Ok(self.live(id)?.checkpoints.list()?)
    }

    /// The checkpoint a rewind to `to` goes back to.
    pub(super) fn rewind_target(
        &self,
        live: &Live,
        to: RewindTo,
    ) -> Result<wicket_checkpoints::Info, ManagerError> {
        let checkpoints = live.checkpoints.list()?;
        let events = session::load_log_after(live.session.log_path(), 0)?;
        let seq = match to {
            RewindTo::Seq(seq) => seq,
            RewindTo::LastTurn => {
                // The last turn that changed anything: a call denied, or one
                // that left the files as they were, is no point to go back to.
                let Some(last) = checkpoints
                    .iter()
                    .rev()
                    .find(|info| info.tool != "rewind" && (!info.scoped || info.changed > 0))
                else {
                    return Err(wicket_checkpoints::Error::NoCheckpoint(1).into());
                };
                events
                    .iter()
                    .rev()
                    .find(|event| {
                        event.seq < last.seq
                            && matches!(event.body, EventBody::UserMessage(UserMessageEvent { .. }))
                    })
                    .map_or(1, |event| event.seq)
            }
            RewindTo::Undo => {
                let Some(rewound) = events
                    .iter()
                    .rev()
                    .find(|event| matches!(event.body, EventBody::Rewound(RewoundEvent { .. })))
                else {
                    return Err(ManagerError::BadAnswer(
                        "this session has no rewind to undo; `wicket rewind SESSION` rewinds the last turn"
                            .into(),
                    ));
                };
                rewound.seq
            }
        };
        let found = wicket_checkpoints::first_at(&checkpoints, seq)?;
        // A write or command between the point asked for and the checkpoint
        // found had none of its own: the files cannot go back past it.
        let missed = events.iter().find(|event| {
            event.seq >= seq
                && event.seq < found.seq
                && matches!(&event.body, EventBody::ToolCall(ToolCallEvent { name, .. })
                    if wicket_protocol::tools::changes_files(name))
        });
        if let Some(missed) = missed {
            let nearest = checkpoints
                .iter()
                .rev()
                .find(|info| info.seq < missed.seq)
                .map_or(0, |info| info.seq);
            return Err(wicket_checkpoints::Error::Missed {
                missed: missed.seq,
                nearest,
            }
            .into());
        }
        Ok(found.clone())
    }

    /// Takes the session for a rewind: refused while a turn runs (or
    /// another rewind); let go when the hold is dropped, a panic too.
    /// Old checkpoints are pruned before a target is chosen among them.
    pub(super) fn hold_for_rewind(
        &self,
        id: &SessionId,
    ) -> Result<(RewindHold, wicket_checkpoints::Settings), ManagerError> {
        let live = self.live(id)?;
        let mut state = live.state();
        if state.rewinding {
            return Err(ManagerError::Rewinding(id.to_string()));
        }
        if state.running {
            return Err(ManagerError::Busy(id.to_string()));
        }
        state.rewinding = true;
        drop(state);
        let hold = RewindHold(live);
        let settings = Config::load_home(&self.lives.home)?.checkpoints;
        hold.0.checkpoints.ready(&settings)?;
        Ok((hold, settings))
    }

    /// What a rewind to `to` would change now; nothing is changed.
    pub fn rewind_plan(
        &self,
        id: &SessionId,
        to: RewindTo,
    ) -> Result<(wicket_checkpoints::Info, wicket_checkpoints::Plan), ManagerError> {
        let (hold, settings) = self.hold_for_rewind(id)?;
        let live = &hold.0;
        let target = self.rewind_target(live, to)?;
        let plan = live
            .checkpoints
            .plan(live.tools.workspace(), &settings, &target)?;
        Ok((target, plan))
    }

    /// Rewinds the session's files to how they were before `to` (a log
    /// seq, the last turn, or before the last rewind): a checkpoint of the
    /// files as they are is taken first, then what differs is written back,
    /// made or removed; a `rewound` event says what. Refused while a turn runs.
    pub fn rewind(&self, id: &SessionId, to: RewindTo) -> Result<Event, ManagerError> {
        let (hold, settings) = self.hold_for_rewind(id)?;
        let live = &hold.0;
        {
            let target = self.rewind_target(live, to)?;
            let seq = live.session.last_seq() + 1;
            let rewound =
                live.checkpoints
                    .rewind(live.tools.workspace(), &settings, &target, seq)?;
            let applied = rewound.applied;
            let mut more = 0;
            let mut cut = |paths: Vec<String>| {
                more += paths.len().saturating_sub(REWOUND_MAX_PATHS) as u64;
                paths
                    .into_iter()
                    .take(REWOUND_MAX_PATHS)
                    .collect::<Vec<_>>()
            };
            let failed: Vec<String> = applied
                .failed
                .iter()
                .chain(&applied.plan.kept)
                .map(|(path, why)| format!("{path}: {why}"))
                .collect();
            let files = wicket_protocol::event::RewoundFiles {
                restored: cut(applied.plan.restore),
                created: cut(applied.plan.create),
                deleted: cut(applied.plan.delete),
                not_restored: cut(failed),
                more,
            };
            let body = EventBody::Rewound(RewoundEvent {
                to: target.seq,
                files,
            });
            let event = live.session.append(body)?;
            live.session.sync()?;
            Ok(event)
        }
    }

    /// Prunes the checkpoints past `[checkpoints] keep_days` of every
    /// session no process holds (one in use prunes its own when it first
    /// takes a checkpoint). Returns how many sessions were looked at.
    pub fn prune_checkpoints(&self) -> Result<usize, ManagerError> {
        let keep_days = Config::load_home(&self.lives.home)?.checkpoints.keep_days;
        let Ok(folders) = std::fs::read_dir(self.lives.home.join("sessions")) else {
            return Ok(0);
        };
        let mut looked = 0;
        for folder in folders.flatten() {
            let dir = folder.path();
            if !dir.join("checkpoints").is_dir() {
                continue;
            }
            let Ok(wicket_os::files::Locked::Held(_lock)) =
                wicket_os::files::lock(&dir.join("lock"), std::time::Duration::ZERO)
            else {
                continue;
            };
            looked += 1;
            // A store that cannot be pruned now is pruned when its session is next used.
            let _ = wicket_checkpoints::Store::new(&dir, &self.lives.home.join("checkpoints"))
                .prune(keep_days);
        }
        Ok(looked)
    }
}
