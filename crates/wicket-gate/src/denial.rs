//! What the model reads when a call is denied, one text everywhere (by the
//! person, with their reason; by a rule; by a hook), and how an answer is
//! read for the card it answers.

use super::*;

/// What the model reads after a denial, the same everywhere: what was
/// denied, that nothing happened, and what to do instead.
pub const AFTER_A_DENIAL: &str = "Do not repeat it or get the same effect another way. If you still \
     need it, say why with ask; otherwise carry on without it.";

/// [`AFTER_A_DENIAL`] when no person answers (a fixed `--answers`
/// policy): there is no one to ask.
pub const AFTER_A_DENIAL_UNATTENDED: &str = "Do not repeat it or get the same effect another \
     way; no person is answering in this run, so carry on without it.";

/// What to do after a denial, as the answerer can take it.
pub fn after_a_denial(attended: bool) -> &'static str {
    if attended {
        AFTER_A_DENIAL
    } else {
        AFTER_A_DENIAL_UNATTENDED
    }
}

/// The answer as the card can take it: an effects card reads an allow as
/// `apply` and anything else as `discard` (a fixed `--answers` policy
/// answers it so); any other card reads an answer it does not offer as a
/// deny (a front end refuses one first).
pub(crate) fn fitted(answer: Answer, card: &CardKind) -> Answer {
    match card {
        CardKind::Effects(_) => match answer {
            Answer::Apply | Answer::AllowOnce | Answer::AllowSession | Answer::AllowAlways => {
                Answer::Apply
            }
            Answer::Discard | Answer::Deny | Answer::Preview => Answer::Discard,
        },
        _ if answer.fits(card) => answer,
        _ => Answer::Deny,
    }
}

/// A card's answer, with what came with it.
pub(crate) struct Answered {
    /// The card as asked (an `allow_always` widened).
    pub(crate) card: Card,
    pub(crate) answer: Answer,
    /// A deny's reason.
    pub(crate) reason: Option<String>,
    /// Whether a person gave it.
    pub(crate) attended: bool,
}

impl Answered {
    /// The error the model reads when this answer was a deny of `what`.
    pub(crate) fn denied(&self, what: &str) -> WireError {
        let who = if self.attended {
            "The person"
        } else {
            "The --answers policy"
        };
        let said = match &self.reason {
            Some(reason) => format!(" Their reason: {}.", serde_json::json!(reason)),
            None => String::new(),
        };
        WireError::new(
            ErrorKind::Denied,
            format!(
                "{who} denied {what}; nothing happened.{said} {}",
                after_a_denial(self.attended)
            ),
        )
    }
}

pub(crate) fn withdrawn() -> WireError {
    WireError::new(
        ErrorKind::Denied,
        "the card was withdrawn (the turn was cancelled)",
    )
}

pub(crate) fn denied_by_rule(rule: &str, attended: bool) -> WireError {
    WireError::new(
        ErrorKind::Denied,
        format!(
            "A rule of the person's ({rule}) denied this call without asking; nothing happened. \
             {}",
            after_a_denial(attended)
        ),
    )
}

pub(crate) fn denied_by_hook(hook: &str, reason: &str) -> WireError {
    WireError::new(
        ErrorKind::Denied,
        format!(
            "the hook {hook} refused this call: {}; the workspace is as it was",
            if reason.trim().is_empty() {
                "it gave no reason"
            } else {
                reason.trim()
            }
        ),
    )
}
