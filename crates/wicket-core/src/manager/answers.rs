//! How a person's answer reaches the turn that waits for it: a front end
//! gives it to the manager ([`Manager::answer_with`], [`Manager::reply`]),
//! which checks it fits the open card, and the turn's [`LivePerson`] takes it.

use super::*;

pub(super) enum Given {
    /// An answer to the open card.
    Answer(Answered),
    Reply(String),
}

/// An answer as a front end gives it: for an `allow_always`, the argv
/// prefix its rule was widened to; for a `deny`, the person's reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answered {
    /// The answer.
    pub answer: Answer,
    /// The first words of the card's argv an `allow_always` saves.
    pub widened: Option<Vec<String>>,
    /// Why the person denied (the model reads it).
    pub reason: Option<String>,
}

impl From<Answer> for Answered {
    fn from(answer: Answer) -> Answered {
        Answered {
            answer,
            widened: None,
            reason: None,
        }
    }
}

/// The person behind a session's front ends: each card waits for what one of them gives.
pub(super) struct LivePerson {
    live: Arc<Live>,
    /// What came with the last answer.
    last: Option<Answered>,
}

impl LivePerson {
    pub(super) fn new(live: Arc<Live>) -> LivePerson {
        LivePerson { live, last: None }
    }
}

impl Answerer for LivePerson {
    fn answer(&mut self, card: &Card) -> Option<Answer> {
        match self.live.wait_for(&card.id)? {
            Given::Answer(answered) => {
                let answer = answered.answer;
                self.last = Some(answered);
                Some(answer)
            }
            Given::Reply(_) => None,
        }
    }

    fn reply(&mut self, id: &QuestionId, _question: &str) -> Option<String> {
        match self.live.wait_for(id)? {
            Given::Reply(reply) => Some(reply),
            Given::Answer(..) => None,
        }
    }

    fn widened(&mut self) -> Option<Vec<String>> {
        self.last.as_mut()?.widened.take()
    }

    fn reason(&mut self) -> Option<String> {
        self.last.as_mut()?.reason.take()
    }

    fn attended(&self) -> bool {
        !self.live.state().unattended
    }
}

impl Manager {
    /// Answers the open card.
    pub fn answer(
        &self,
        id: &SessionId,
        card: &CardId,
        answer: Answer,
    ) -> Result<(), ManagerError> {
        self.answer_with(id, card, answer.into())
    }

    /// Answers the open card with what came with the answer: an
    /// `allow_always` widened to an argv prefix (the card's own first
    /// words), a deny's reason.
    pub fn answer_with(
        &self,
        id: &SessionId,
        card: &CardId,
        answered: Answered,
    ) -> Result<(), ManagerError> {
        self.give(id, card, Given::Answer(answered))
    }

    /// Says that no person answers the session's cards from now on (a
    /// fixed policy answers them), or that one does again.
    pub fn set_unattended(&self, id: &SessionId, unattended: bool) -> Result<(), ManagerError> {
        self.live(id)?.state().unattended = unattended;
        Ok(())
    }

    /// Replies to the open question.
    pub fn reply(
        &self,
        id: &SessionId,
        question: &QuestionId,
        reply: &str,
    ) -> Result<(), ManagerError> {
        self.give(id, question, Given::Reply(reply.to_string()))
    }

    /// Never blocks on the disk: a card or question is open only in a
    /// session that is open, so one that is not gets `NotOpen` without
    /// being opened (the HTTP answer path calls this on its async task).
    fn give(&self, id: &str, item: &str, given: Given) -> Result<(), ManagerError> {
        let Some(live) = self.sessions().get(id).cloned() else {
            return Err(match self.on_disk(id) {
                Err(missing @ ManagerError::NoSuchSession(_)) => missing,
                _ => ManagerError::NotOpen {
                    session: id.to_string(),
                    item: item.to_string(),
                },
            });
        };
        // A sub-task's card is shown and answered in its parent: an answer
        // sent to the sub-task's own session goes there.
        if let Some(parent) = live.session.meta().parent {
            let parent_live = self.sessions().get(&parent).cloned();
            if parent_live
                .is_some_and(|parent| parent.state().open.as_ref().map(Open::id) == Some(item))
            {
                return self.give(&parent, item, given);
            }
        }
        let mut state = live.state();
        let fits = match (&state.open, &given) {
            (Some(Open::Card(card)), Given::Answer(..)) => card.id == item,
            (Some(Open::Question { id: open, .. }), Given::Reply(_)) => open == item,
            _ => false,
        };
        if !fits || state.given.is_some() {
            return Err(ManagerError::NotOpen {
                session: id.to_string(),
                item: item.to_string(),
            });
        }
        fitting(state.open.as_ref(), &given)?;
        // Closed at once: a second answer to it is refused, and what is open
        // next is the next card.
        state.given = Some(given);
        state.open = None;
        live.changed.notify_all();
        Ok(())
    }
}

/// Whether what is given fits the open card: an answer it takes (an
/// `allow_always` only where it offers one), a reason with a deny only, a
/// widening that is the card's own argv prefix.
fn fitting(open: Option<&Open>, given: &Given) -> Result<(), ManagerError> {
    if let (Some(Open::Card(card)), Given::Answer(Answered { answer, .. })) = (open, given)
        && !answer.taken_by(&card.kind)
    {
        return Err(ManagerError::BadAnswer(format!(
            "{} is not an answer card {} offers",
            answer.as_str(),
            card.id
        )));
    }
    if let (Some(Open::Card(card)), Given::Answer(Answered { answer, .. })) = (open, given)
        && *answer == Answer::AllowAlways
        && card.always.is_none()
    {
        return Err(ManagerError::BadAnswer(format!(
            "card {} offers no allow_always (a managed policy can turn it off); answer \
                 allow_once or allow_session",
            card.id
        )));
    }
    if let Given::Answer(Answered {
        answer,
        reason: Some(_),
        ..
    }) = given
        && *answer != Answer::Deny
    {
        return Err(ManagerError::BadAnswer(
            "a reason goes with a deny only".into(),
        ));
    }
    if let (
        Some(Open::Card(card)),
        Given::Answer(Answered {
            answer,
            widened: Some(prefix),
            ..
        }),
    ) = (open, given)
    {
        if *answer != Answer::AllowAlways {
            return Err(ManagerError::BadAnswer(
                "argv_prefix widens an allow_always answer only".into(),
            ));
        }
        wicket_gate::widen(&mut (**card).clone(), prefix.clone())
            .map_err(|error| ManagerError::BadAnswer(error.message))?;
    }
    Ok(())
}
