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

/// [`AFTER_A_DENIAL`] in a sub-task, which has no ask: its finish is its
/// only word back.
pub const AFTER_A_DENIAL_IN_A_TASK: &str = "Do not repeat it or get the same effect another \
     way. If you still need it, say why in your finish; otherwise carry on without it.";

/// Who hears a call's denial: whether a person answers its cards, and
/// whether the model can ask them anything (a sub-task cannot).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Audience {
    /// A person answers (not a fixed `--answers` policy).
    pub attended: bool,
    /// The model has `ask`.
    pub asks: bool,
}

impl Audience {
    /// The answerer's.
    pub fn of(answerer: &dyn Answerer) -> Audience {
        Audience {
            attended: answerer.attended(),
            asks: answerer.asks(),
        }
    }
}

/// What to do after a denial, as the answerer can take it.
pub fn after_a_denial(audience: Audience) -> &'static str {
    match audience {
        Audience { asks: false, .. } => AFTER_A_DENIAL_IN_A_TASK,
        Audience { attended: true, .. } => AFTER_A_DENIAL,
        Audience {
            attended: false, ..
        } => AFTER_A_DENIAL_UNATTENDED,
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
    /// The answer was `preview`, which the card did not offer: why it did
    /// not (its `no_preview`).
    pub(crate) unoffered: Option<String>,
    /// Whether a person gave it, and whether the model can ask them.
    pub(crate) audience: Audience,
}

impl Answered {
    /// The error the model reads when this answer was a deny of `what`.
    pub(crate) fn denied(&self, what: &str) -> WireError {
        if let Some(why) = &self.unoffered {
            return WireError::new(
                ErrorKind::Denied,
                format!(
                    "the answer was preview, but no preview was available for this command: \
                     {why}. The command never started, so nothing happened; it was not denied. \
                     It can only run for real: call it again without \"preview\" if it is \
                     still needed, and its card asks again."
                ),
            );
        }
        let who = if self.audience.attended {
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
                after_a_denial(self.audience)
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

pub(crate) fn denied_by_rule(rule: &str, audience: Audience) -> WireError {
    WireError::new(
        ErrorKind::Denied,
        format!(
            "{} ({rule}) denied this call without asking; nothing happened. {}",
            if rule.starts_with("managed:") {
                "The managed policy's rule"
            } else {
                "A rule of the person's"
            },
            after_a_denial(audience)
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
