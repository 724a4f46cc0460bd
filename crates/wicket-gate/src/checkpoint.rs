//! The checkpoint before a write or a command, taken on a thread of the
//! call's own while the call goes on to its card: a card waits for it a
//! second at most, then goes up saying how far the walk got and says it
//! again every second while it is up (a `checkpoint_walk` notice that the
//! TUI and the page show on the open card, in place of the last), and
//! nothing is written or run before it is done ([`Gate::settle`]).

use super::*;

/// A checkpoint being taken while the call goes on to its card.
pub(crate) struct Pending {
    call_id: CallId,
    done: std::sync::mpsc::Receiver<wicket_checkpoints::Result<wicket_checkpoints::Taken>>,
}

/// A checkpoint that takes longer than this says how far its walk has got.
pub const CHECKPOINT_PROGRESS_AFTER: std::time::Duration = std::time::Duration::from_secs(1);

/// And says it again this often until it is done.
const CHECKPOINT_PROGRESS_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

/// While a card is up over it, this often: the count on the card moves.
const CHECKPOINT_PROGRESS_OPEN: std::time::Duration = std::time::Duration::from_secs(1);

/// What `done` brings (`None` if its sender went without a word), telling
/// `progress` through `tell` after `first` and then every `every`, while
/// there is progress to tell.
fn waited<T>(
    done: &std::sync::mpsc::Receiver<T>,
    first: std::time::Duration,
    every: std::time::Duration,
    progress: impl Fn() -> Option<u64>,
    mut tell: impl FnMut(u64),
) -> Option<T> {
    let mut wait = first;
    loop {
        match done.recv_timeout(wait) {
            Ok(value) => return Some(value),
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return None,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                if let Some(met) = progress() {
                    tell(met);
                }
                wait = every;
            }
        }
    }
}

/// Gaps of a checkpoint named on a card: this many paths, then a count.
const GAPS_NAMED: usize = 5;

/// What a checkpoint has no copy of, in one line.
fn gaps_line(gaps: &[(String, String)]) -> String {
    let mut line: Vec<String> = gaps
        .iter()
        .take(GAPS_NAMED)
        .map(|(path, why)| format!("{path} ({why})"))
        .collect();
    if gaps.len() > GAPS_NAMED {
        line.push(format!("and {} more", gaps.len() - GAPS_NAMED));
    }
    format!("{}; a rewind cannot bring these back", line.join("; "))
}

impl Gate<'_> {
    /// Starts the checkpoint before call `seq` on a thread of `scope`: a
    /// card may go up while it is taken (a large workspace's first walk
    /// takes seconds), and [`Gate::settle`] waits for it before the call
    /// changes anything.
    pub(crate) fn start_checkpoint<'scope>(
        &'scope self,
        scope: &'scope std::thread::Scope<'scope, '_>,
        call_id: &CallId,
        seq: u64,
        tool: &'scope str,
    ) {
        let Some(checkpointing) = self.checkpoints else {
            return;
        };
        let workspace = self.tools.workspace();
        let (done, taken) = std::sync::mpsc::channel();
        scope.spawn(move || {
            let taken = checkpointing
                .store
                .take(workspace, checkpointing.settings, seq, tool);
            // The gate stopped waiting only if it is gone: no one to tell.
            let _ = done.send(taken);
        });
        *self.pending.borrow_mut() = Some(Pending {
            call_id: call_id.clone(),
            done: taken,
        });
    }

    /// Waits for the checkpoint being taken, if one is, saying how far its
    /// walk got while it takes long; what it has no copy of (or why there
    /// is none) is a `checkpoint` event.
    pub(crate) fn settle(&self) -> Result<(), WireError> {
        self.settle_within(None).map(drop)
    }

    /// [`Gate::settle`], giving up after `limit` (the walk's count so far
    /// when it did).
    pub(crate) fn settle_within(
        &self,
        limit: Option<std::time::Duration>,
    ) -> Result<Option<u64>, WireError> {
        let mut pending = self.pending.borrow_mut();
        let Some(Pending { call_id, done }) = pending.as_ref() else {
            return Ok(None);
        };
        let walking = || self.checkpoints.and_then(|c| c.store.walking());
        let taken = match limit {
            Some(limit) => match done.recv_timeout(limit) {
                Ok(taken) => Some(taken),
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    return Ok(Some(walking().unwrap_or(0)));
                }
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => None,
            },
            None => waited(
                done,
                CHECKPOINT_PROGRESS_AFTER,
                CHECKPOINT_PROGRESS_EVERY,
                walking,
                |met| walk_notice(self.session, met),
            ),
        };
        let call_id = call_id.clone();
        *pending = None;
        drop(pending);
        let missed = match taken {
            Some(Ok(taken)) if taken.gaps.is_empty() => return Ok(None),
            Some(Ok(taken)) => gaps_line(&taken.gaps),
            Some(Err(error)) => format!("{error}; a rewind cannot go back to before this call"),
            None => "the checkpoint's thread failed; a rewind cannot go back to before this call"
                .to_string(),
        };
        self.session
            .append(EventBody::Checkpoint(CheckpointEvent {
                call_id,
                message: missed.clone(),
            }))
            .map_err(internal)?;
        *self.no_checkpoint.borrow_mut() = Some(missed);
        Ok(None)
    }

    /// Records what the call at event `seq` left (the checkpoint store's
    /// line after it), once it is over, so that a rewind takes back only
    /// this session's work. A failure is a `checkpoint` event: the call's
    /// own result stands, and a rewind past it is refused, saying why.
    pub(crate) fn record_after(
        &self,
        call_id: &CallId,
        seq: u64,
        call: &ToolCall,
    ) -> Result<(), WireError> {
        let Some(checkpointing) = self.checkpoints else {
            return Ok(());
        };
        let wrote = self.wrote(call);
        let Err(error) = checkpointing.store.take_after(
            self.tools.workspace(),
            checkpointing.settings,
            seq,
            call.name(),
            wrote.as_deref(),
        ) else {
            return Ok(());
        };
        self.session
            .append(EventBody::Checkpoint(CheckpointEvent {
                call_id: call_id.clone(),
                message: format!(
                    "what this call changed could not be recorded ({error}); a rewind cannot go \
                     back past it"
                ),
            }))
            .map_err(internal)?;
        Ok(())
    }

    /// The path a write wrote, below the workspace, as the store names it
    /// (links inside the workspace followed, as the write followed them):
    /// its line after names that path alone as the call's. `None` for a
    /// command, and for a write whose path no longer resolves (its line
    /// then names all that was heard, as a command's does).
    fn wrote(&self, call: &ToolCall) -> Option<Vec<u8>> {
        use std::os::unix::ffi::OsStrExt;
        let path = match call {
            ToolCall::WriteFile(args) => &args.path,
            ToolCall::SearchReplace(args) => &args.path,
            _ => return None,
        };
        let workspace = self.tools.workspace();
        let wicket_tools::Location::Inside(relative) = workspace.classify(path).ok()? else {
            return None;
        };
        let resolved = workspace.walk(&relative, false).ok()?;
        let below = resolved.absolute.strip_prefix(workspace.root()).ok()?;
        let bytes = below.as_os_str().as_bytes();
        (!bytes.is_empty()).then(|| bytes.to_vec())
    }

    /// Waits for `answer` (a card's), saying every second how far the walk
    /// of the checkpoint still being taken got (`walking`: it was when the
    /// card went up): every front end shows the newest on the open card.
    pub(crate) fn while_walking<T>(&self, walking: bool, answer: impl FnOnce() -> T) -> T {
        let Some(checkpointing) = self.checkpoints.filter(|_| walking) else {
            return answer();
        };
        let session = self.session;
        std::thread::scope(|scope| {
            let (answered, stop) = std::sync::mpsc::channel::<()>();
            scope.spawn(move || {
                waited(
                    &stop,
                    CHECKPOINT_PROGRESS_OPEN,
                    CHECKPOINT_PROGRESS_OPEN,
                    || checkpointing.store.walking(),
                    |met| walk_notice(session, met),
                )
            });
            let value = answer();
            drop(answered);
            value
        })
    }
}

/// Says in the log (every front end shows it, the newest on an open card)
/// how far the whole walk a checkpoint waits on has got: a large
/// workspace's first one takes seconds.
fn walk_notice(session: &Session, met: u64) {
    session.recorded().append(EventBody::Notice(NoticeEvent {
        call_id: None,
        text: None,
        message: format!(
            "walking the whole workspace for the checkpoint before this call: {met} files and \
             folders so far; the call waits for it, so that a rewind can go back to before it"
        ),
        file: None,
        key: Some(wicket_protocol::event::CHECKPOINT_WALK.into()),
    }));
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_long_wait_tells_its_progress_until_the_value_comes() {
        let (send, done) = std::sync::mpsc::channel();
        let mut told = Vec::new();
        let met = std::cell::Cell::new(0u64);
        let value = waited(
            &done,
            Duration::ZERO,
            Duration::ZERO,
            || {
                met.set(met.get() + 1024);
                Some(met.get())
            },
            |met| {
                told.push(met);
                if told.len() == 3 {
                    send.send("taken").unwrap();
                }
            },
        );
        assert_eq!(value, Some("taken"));
        assert_eq!(told, vec![1024, 2048, 3072]);
    }

    #[test]
    fn a_wait_with_nothing_to_tell_says_nothing_and_a_sender_gone_is_none() {
        let (send, done) = std::sync::mpsc::channel::<u8>();
        let waits = std::cell::Cell::new(0);
        let sender = std::cell::RefCell::new(Some(send));
        let value = waited(
            &done,
            Duration::ZERO,
            Duration::ZERO,
            || {
                waits.set(waits.get() + 1);
                // The sender goes without a word on the second wait.
                if waits.get() == 2 {
                    sender.borrow_mut().take();
                }
                None
            },
            |_| panic!("nothing to tell"),
        );
        assert_eq!(value, None);
    }
}
