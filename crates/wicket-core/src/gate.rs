//! The gate: the only way a tool call reaches a tool. Inside reads, lists and
//! greps go straight through; writes, commands and outside reads raise a
//! [`Card`] and wait for an [`Answer`]. A write card carries the SHA-256 of the
//! bytes on disk; an answer that comes back to a changed file is dropped, its
//! allow_session with it, and a new card goes up.

use sha2::{Digest, Sha256};
use wicket_protocol::{
    Answer, Card, CardKind, ErrorKind, EventBody, ToolCall, ToolOutput, WireError,
};
use wicket_tools::limits::RUN_DEFAULT_TIMEOUT_S;
use wicket_tools::tools::search_replace::replaced;
use wicket_tools::tools::write_file::check_content_size;
use wicket_tools::{Cancel, Location, Tools};

use crate::diff;
use crate::session::{Session, Status};

/// How many times a write re-asks because the file kept changing before the gate gives up.
pub const STALE_RETRIES: usize = 8;

/// Who answers cards: a person at a terminal, a script on stdin, a fixed policy,
/// or (later) the web page. `None` means the card was withdrawn (cancel).
pub trait Answerer {
    fn answer(&mut self, card: &Card) -> Option<Answer>;
}

/// A fixed answer for every card (`--answers deny|allow_once|allow_session`).
pub struct Policy(pub Answer);

impl Answerer for Policy {
    fn answer(&mut self, _card: &Card) -> Option<Answer> {
        Some(self.0)
    }
}

/// The SHA-256 of a file's bytes, or "absent".
pub fn digest(bytes: Option<&[u8]>) -> String {
    match bytes {
        None => "absent".to_string(),
        Some(bytes) => Sha256::digest(bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect(),
    }
}

fn denied(what: &str) -> WireError {
    WireError {
        kind: ErrorKind::Denied,
        message: format!(
            "the person denied {what}; the workspace is as it was. Ask them (with ask) what they want instead, or try another way"
        ),
    }
}

fn withdrawn() -> WireError {
    WireError {
        kind: ErrorKind::Denied,
        message: "the card was withdrawn (the turn was cancelled)".into(),
    }
}

fn internal(error: crate::Error) -> WireError {
    WireError {
        kind: ErrorKind::Io,
        message: error.to_string(),
    }
}

/// Computes a write's new bytes from the bytes on disk (`None`: absent).
type NewContent<'a> = dyn Fn(Option<&[u8]>) -> Result<Vec<u8>, WireError> + 'a;

/// A card id unique within a session: the process id and a random part.
fn new_card_id() -> String {
    format!("card-{:x}{:04x}", std::process::id(), fastrand::u16(..))
}

/// The gate over one session's tools.
pub struct Gate<'a> {
    tools: &'a Tools,
    session: &'a Session,
}

impl<'a> Gate<'a> {
    pub fn new(tools: &'a Tools, session: &'a Session) -> Gate<'a> {
        Gate { tools, session }
    }

    /// Runs one tool call through the gate, logging the call, any card and
    /// answer, and the result. `on_card` sees each card as it goes up.
    pub fn call(
        &self,
        call_id: &str,
        call: &ToolCall,
        answerer: &mut dyn Answerer,
        cancel: &Cancel,
    ) -> Result<ToolOutput, WireError> {
        let arguments = serde_json::to_value(call)
            .ok()
            .and_then(|value| value.get("arguments").cloned())
            .unwrap_or_default();
        self.session
            .append(EventBody::ToolCall {
                call_id: call_id.to_string(),
                name: call.name().to_string(),
                arguments,
            })
            .map_err(internal)?;
        let result = self.dispatch(call_id, call, answerer, cancel);
        let (ok, output, error) = match &result {
            Ok(output) => (true, serde_json::to_value(output).ok(), None),
            Err(error) => (false, None, Some(error.clone())),
        };
        self.session
            .append(EventBody::ToolResult {
                call_id: call_id.to_string(),
                ok,
                output,
                error,
            })
            .map_err(internal)?;
        result
    }

    fn dispatch(
        &self,
        call_id: &str,
        call: &ToolCall,
        answerer: &mut dyn Answerer,
        cancel: &Cancel,
    ) -> Result<ToolOutput, WireError> {
        let workspace = self.tools.workspace();
        match call {
            ToolCall::ReadFile(args) => {
                let location = workspace.classify(&args.path)?;
                self.outside_read(call_id, call.name(), &location, answerer)?;
                Ok(ToolOutput::ReadFile(self.tools.read_file(&location, args)?))
            }
            ToolCall::ListDir(args) => {
                let location = workspace.classify(args.path.as_deref().unwrap_or("."))?;
                self.outside_read(call_id, call.name(), &location, answerer)?;
                Ok(ToolOutput::ListDir(self.tools.list_dir(&location, args)?))
            }
            ToolCall::Grep(args) => {
                let location = args
                    .path
                    .as_deref()
                    .map(|path| workspace.classify(path))
                    .transpose()?;
                if let Some(location) = &location {
                    self.outside_read(call_id, call.name(), location, answerer)?;
                }
                Ok(ToolOutput::Grep(self.tools.grep(location.as_ref(), args)?))
            }
            ToolCall::WriteFile(args) => {
                check_content_size(args.content.len(), &args.path)?;
                let location = workspace.classify(&args.path)?;
                let content = args.content.as_bytes().to_vec();
                self.write(
                    call_id,
                    call.name(),
                    &location,
                    &args.path,
                    answerer,
                    &move |_| Ok(content.clone()),
                )
            }
            ToolCall::SearchReplace(args) => {
                let location = workspace.classify(&args.path)?;
                self.write(
                    call_id,
                    call.name(),
                    &location,
                    &args.path,
                    answerer,
                    &|current| replaced(current, args).map_err(WireError::from),
                )
            }
            ToolCall::Run(args) => {
                wicket_tools::tools::run::validate(args)?;
                let allowed = self.session.meta().allowed.argv.contains(&args.argv);
                if !allowed {
                    let timeout = wicket_tools::tools::run::timeout_of(args)?;
                    let card = Card {
                        argv: Some(args.argv.clone()),
                        cwd: args.cwd.clone(),
                        timeout_s: (timeout != RUN_DEFAULT_TIMEOUT_S).then_some(timeout),
                        ..self.blank_card(CardKind::Run, call.name())
                    };
                    let answer = self.ask(call_id, card, answerer)?;
                    match answer {
                        Answer::Deny => return Err(denied("this command; it never started")),
                        Answer::AllowSession => {
                            let argv = args.argv.clone();
                            self.session
                                .update_meta(|meta| {
                                    meta.allowed.argv.insert(argv);
                                })
                                .map_err(internal)?;
                        }
                        Answer::AllowOnce => {}
                    }
                }
                if cancel.is_cancelled() {
                    return Err(withdrawn());
                }
                Ok(ToolOutput::Run(self.tools.run(args, cancel)?))
            }
        }
    }

    fn blank_card(&self, kind: CardKind, tool: &str) -> Card {
        Card {
            id: String::new(),
            kind,
            tool: tool.to_string(),
            path: None,
            argv: None,
            cwd: None,
            timeout_s: None,
            diff: None,
            diff_bytes: None,
            diff_truncated: None,
            digest: None,
        }
    }

    /// Logs a card (under a fresh random id), asks, logs the answer.
    fn ask(
        &self,
        call_id: &str,
        card: Card,
        answerer: &mut dyn Answerer,
    ) -> Result<Answer, WireError> {
        let (id, answer) = self.raise(call_id, card, None, answerer)?;
        self.log_answer(&id, answer, false)?;
        Ok(answer)
    }

    /// Logs a card (under a fresh random id) and waits for its answer, which
    /// the caller logs once it knows whether the answer is stale.
    fn raise(
        &self,
        call_id: &str,
        mut card: Card,
        proposed: Option<String>,
        answerer: &mut dyn Answerer,
    ) -> Result<(String, Answer), WireError> {
        card.id = new_card_id();
        self.session
            .append(EventBody::Card {
                call_id: call_id.to_string(),
                card: card.clone(),
                proposed,
            })
            .map_err(internal)?;
        self.session.sync().map_err(internal)?;
        // The session reads `waiting` while the card is open, then what it was.
        let before = self.session.meta().status;
        self.session
            .update_meta(|meta| meta.status = Status::Waiting)
            .map_err(internal)?;
        let answer = answerer.answer(&card);
        self.session
            .update_meta(|meta| meta.status = before)
            .map_err(internal)?;
        let answer = answer.ok_or_else(withdrawn)?;
        Ok((card.id, answer))
    }

    fn log_answer(&self, card: &str, answer: Answer, stale: bool) -> Result<(), WireError> {
        self.session
            .append(EventBody::Answer {
                card: card.to_string(),
                answer,
                stale,
            })
            .map_err(internal)?;
        self.session.sync().map_err(internal)
    }

    /// Cards an outside read or list unless its exact path was allowed for the session.
    fn outside_read(
        &self,
        call_id: &str,
        tool: &str,
        location: &Location,
        answerer: &mut dyn Answerer,
    ) -> Result<(), WireError> {
        let Location::Outside(path) = location else {
            return Ok(());
        };
        let key = path.display().to_string();
        if self.session.meta().allowed.outside_read.contains(&key) {
            return Ok(());
        }
        let card = Card {
            path: Some(key.clone()),
            ..self.blank_card(CardKind::OutsideRead, tool)
        };
        match self.ask(call_id, card, answerer)? {
            Answer::Deny => Err(denied(&format!("reading {key}"))),
            Answer::AllowOnce => Ok(()),
            Answer::AllowSession => self
                .session
                .update_meta(|meta| {
                    meta.allowed.outside_read.insert(key);
                })
                .map_err(internal),
        }
    }

    /// The write path shared by write_file and search_replace.
    fn write(
        &self,
        call_id: &str,
        tool: &str,
        location: &Location,
        shown: &str,
        answerer: &mut dyn Answerer,
        new_content: &NewContent<'_>,
    ) -> Result<ToolOutput, WireError> {
        for _ in 0..STALE_RETRIES {
            let target = self.tools.plan_write(location, shown)?;
            let content = new_content(target.current.as_deref())?;
            let key = target.absolute.display().to_string();
            let asked_digest = digest(target.current.as_deref());
            let mut remember = false;
            if !self.session.meta().allowed.write.contains(&key) {
                let label = target
                    .absolute
                    .strip_prefix(self.tools.workspace().root())
                    .map(|relative| relative.display().to_string())
                    .unwrap_or_else(|_| key.clone());
                let full = diff::unified(&label, target.current.as_deref(), &content);
                let cut = diff::for_card(full);
                let card = Card {
                    path: Some(key.clone()),
                    diff: Some(cut.text),
                    diff_bytes: Some(cut.bytes),
                    diff_truncated: Some(cut.truncated),
                    digest: Some(asked_digest.clone()),
                    ..self.blank_card(CardKind::Write, tool)
                };
                let (card_id, answer) = self.raise(
                    call_id,
                    card,
                    Some(String::from_utf8_lossy(&content).into_owned()),
                    answerer,
                )?;
                if answer == Answer::Deny {
                    self.log_answer(&card_id, answer, false)?;
                    return Err(denied(&format!("the write to {key}")));
                }
                // The answer was about the bytes the card showed; are they still
                // there? If not, the answer (an allow_session too) is spent.
                let now = self.tools.plan_write(location, shown)?;
                let stale = now.absolute != target.absolute
                    || digest(now.current.as_deref()) != asked_digest;
                self.log_answer(&card_id, answer, stale)?;
                if stale {
                    continue;
                }
                remember = answer == Answer::AllowSession;
            }
            let still_current = |bytes: Option<&[u8]>| digest(bytes) == asked_digest;
            match self
                .tools
                .commit_write(location, &target, &content, &still_current)
            {
                Ok(output) => {
                    if remember {
                        self.session
                            .update_meta(|meta| {
                                meta.allowed.write.insert(key);
                            })
                            .map_err(internal)?;
                    }
                    return Ok(ToolOutput::Write(output));
                }
                Err(error) if error.kind == ErrorKind::Stale => {
                    // Changed between the answer and the rename: the answer
                    // was logged fresh, so say here that it was spent.
                    self.log_stale(&key)?;
                    continue;
                }
                Err(error) => return Err(error.into()),
            }
        }
        Err(WireError {
            kind: ErrorKind::Io,
            message: format!(
                "'{shown}' kept changing on disk while the write was asked {STALE_RETRIES} times; try again when it is still"
            ),
        })
    }

    fn log_stale(&self, key: &str) -> Result<(), WireError> {
        self.session
            .append(EventBody::error(format!(
                "{key} changed on disk after the answer; the answer was spent and the write asks again"
            )))
            .map_err(internal)?;
        Ok(())
    }
}
