//! Compaction: before a request would pass 80 % of the model's window (or
//! after a "prompt too long"), the older part of the conversation is
//! summarised by the model and a `compacted` event stands for it; also
//! `/compact` between turns ([`Runner::compact_now`]).

use super::*;
use wicket_protocol::event::CompactedEvent;

impl Runner<'_> {
    /// Compacts the session's conversation now (`/compact`, the API's
    /// `compact`), between turns.
    pub fn compact_now(&self, cancel: &Cancel) -> Outcome {
        // A failure of an earlier turn is that turn's; this one finds out for itself.
        let _ = self.session.take_failure();
        self.session
            .recorded()
            .update_meta(|meta| meta.status = Status::Running);
        let history = match load_for_conversation(self.session.log_path()) {
            Ok(events) => conversation(&events),
            Err(error) => return self.fail(format!("the session's log cannot be read: {error}")),
        };
        let (system, _) = system_prompt(
            self.tools.workspace(),
            &self.settings.skills,
            &self.settings.confinement.sandbox.prompt_sentence(),
            // A compaction asks nothing of anyone: the prompt as a person's turn reads it.
            true,
            &self.settings.instructions,
            &self.settings.instructions_below,
        );
        let mut turn = self.new_turn(history, system);
        let before = self.estimate(&turn);
        match self.compact(&mut turn, before, cancel) {
            Ok(Compaction::Done) => self.end(Outcome::Finished(String::new())),
            Ok(Compaction::Nothing) => self.too_small(before),
            Err(outcome) => outcome,
        }
    }

    /// Summarises the older part of the conversation with the model, logs
    /// `compacted`, and rebuilds the conversation from the summary.
    pub(super) fn compact(
        &self,
        turn: &mut Turn,
        before: u64,
        cancel: &Cancel,
    ) -> Result<Compaction, Outcome> {
        let events = load_log(self.session.log_path())
            .map_err(|error| self.fail(format!("the session's log cannot be read: {error}")))?
            .events;
        let Some((from_seq, to_seq)) = compaction_cut(&events, self.settings.model.context_window)
        else {
            return Ok(Compaction::Nothing);
        };
        let upto = events.iter().filter(|event| event.seq <= to_seq).count();
        let mut messages = conversation(&events[..upto]);
        messages.push(Message::User {
            text: COMPACT_PROMPT.into(),
        });
        let mut request = Request {
            system: turn.request.system.clone(),
            messages,
            tools: turn.request.tools.clone(),
            max_tokens: self.settings.max_tokens.min(4096),
        };
        let mut usage = Usage::default();
        let mut reply = self.summary(&request, turn, &mut usage, cancel)?;
        if reply.text.trim().is_empty() {
            // No summary (a tool call, or nothing): once more, with no tools to call.
            request.tools.clear();
            reply = self.summary(&request, turn, &mut usage, cancel)?;
        }
        if reply.text.trim().is_empty() {
            return Err(self.fail(format!(
                "the conversation had to be compacted to fit the model's window, and the model gave no summary \
                 (twice, the second time with no tools to call; it made {} tool call(s)), so the conversation is left as it was. \
                 Try again, or use a model that follows the summary request",
                reply.tool_calls.len()
            )));
        }
        let mut rebuilt_events = events;
        rebuilt_events.push(Event {
            seq: u64::MAX,
            ts: String::new(),
            body: EventBody::Compacted(CompactedEvent {
                summary: reply.text.clone(),
                from_seq,
                to_seq,
                tokens_before: before,
                tokens_after: 0,
                usage,
            }),
        });
        turn.request.messages = conversation(&rebuilt_events);
        turn.counted = 0;
        turn.added_bytes = 0;
        let after = estimate_tokens(turn.request.bytes());
        self.log(EventBody::Compacted(CompactedEvent {
            summary: reply.text,
            from_seq,
            to_seq,
            tokens_before: before,
            tokens_after: after,
            usage,
        }));
        self.session.recorded().sync();
        Ok(Compaction::Done)
    }

    /// One reply to a compaction's request, its usage counted.
    pub(super) fn summary(
        &self,
        request: &Request,
        turn: &mut Turn,
        usage: &mut Usage,
        cancel: &Cancel,
    ) -> Result<Completion, Outcome> {
        let reply = match self.complete(request, cancel) {
            Ok(reply) => reply,
            Err(Stop::Cancelled) => return Err(self.cancelled(&[])),
            Err(Stop::Chat(error)) => {
                return Err(self.fail(format!(
                    "the conversation had to be compacted to fit the model's window, and the summary failed: {error}"
                )));
            }
        };
        if let Some(reported) = &reply.usage {
            usage.add(&self.count(turn, reported));
        }
        Ok(reply)
    }

    /// The turn's end when the conversation does not fit the window and
    /// there is nothing older to summarise.
    pub(super) fn too_small(&self, before: u64) -> Outcome {
        self.fail(format!(
            "the conversation (about {before} tokens) does not fit the model's window of {} tokens, and there is nothing older to summarise: \
             the system prompt, the tools and the last exchange alone are too big for it. Use a model (or a server setting, \
             such as llama.cpp's --ctx-size) with a larger window, and set context_window for it in config.toml",
            self.settings.model.context_window
        ))
    }
}
