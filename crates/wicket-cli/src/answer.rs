//! The ways cards are answered from this process: a JSON line per card on
//! stdout for scripts ([`Printing`]), answer lines on stdin
//! ([`StdinLines`]), and the prompt on a terminal ([`Terminal`], with
//! [`prompt_card`] and [`prompt_reply`], which `wicket exec` shares).
//!
//! On a terminal, keys typed before a card is drawn never answer it: the
//! prompt reads stdin byte by byte (no buffer can hold the next line), and
//! the terminal's pending input is flushed right after the card is drawn.

use std::io::{BufRead, Write};

use wicket_core::manager::Answered;
use wicket_gate::Answerer;
use wicket_protocol::{Answer, Card};

use crate::show;

/// Prints each card as a JSON line on stdout, then lets the inner answerer answer.
pub(crate) struct Printing<A> {
    inner: A,
}

impl<A> Printing<A> {
    /// Wraps `inner`.
    pub(crate) fn new(inner: A) -> Printing<A> {
        Printing { inner }
    }
}

impl<A: Answerer> Answerer for Printing<A> {
    fn answer(&mut self, card: &Card) -> Option<Answer> {
        let mut line = wicket_protocol::json::value(card);
        if let Some(map) = line.as_object_mut() {
            map.insert("type".into(), "card".into());
        }
        show::line_out(&line.to_string());
        self.inner.answer(card)
    }

    fn reason(&mut self) -> Option<String> {
        self.inner.reason()
    }

    fn attended(&self) -> bool {
        self.inner.attended()
    }
}

/// Reads `{"card": ID, "answer": ..., "reason": ...}` lines from stdin. End of input withdraws the card.
#[derive(Default)]
pub(crate) struct StdinLines {
    /// The last deny's reason.
    reason: Option<String>,
}

impl Answerer for StdinLines {
    fn answer(&mut self, card: &Card) -> Option<Answer> {
        let stdin = std::io::stdin();
        let mut line = String::new();
        loop {
            line.clear();
            match stdin.lock().read_line(&mut line) {
                Ok(0) | Err(_) => return None,
                Ok(_) => {}
            }
            if line.trim().is_empty() {
                continue;
            }
            let parsed: Result<serde_json::Value, _> = serde_json::from_str(&line);
            let Ok(value) = parsed else {
                show::say(format!(
                    "an answer line is not JSON; send {{\"card\":\"{}\",\"answer\":\"allow_once|allow_session|deny\"}}",
                    card.id
                ));
                continue;
            };
            if value.get("card").and_then(|v| v.as_str()) != Some(card.id.as_str()) {
                show::say(format!(
                    "that answer is not for the open card {}; ignored",
                    card.id
                ));
                continue;
            }
            match answer_line(&value) {
                Ok(answered) => {
                    self.reason = answered.reason;
                    return Some(answered.answer);
                }
                Err(error) => show::say(error),
            }
        }
    }

    fn reason(&mut self) -> Option<String> {
        self.reason.take()
    }
}

/// An answer line's `answer`, and a deny's `reason`; what is wrong with it otherwise.
pub(crate) fn answer_line(value: &serde_json::Value) -> Result<Answered, String> {
    let answer = serde_json::from_value::<Answer>(value["answer"].clone())
        .map_err(|_| "the answer must be allow_once, allow_session, allow_always or deny")?;
    let reason = match &value["reason"] {
        serde_json::Value::Null => None,
        serde_json::Value::String(given) if answer == Answer::Deny => {
            wicket_protocol::card::deny_reason(given)
        }
        serde_json::Value::String(_) => return Err("a reason goes with a deny only".into()),
        _ => return Err("a reason is a string".into()),
    };
    Ok(Answered {
        answer,
        widened: None,
        reason,
    })
}

/// Shows the card readably on stderr and prompts on the terminal.
#[derive(Default)]
pub(crate) struct Terminal {
    /// The last deny's reason.
    reason: Option<String>,
}

impl Answerer for Terminal {
    fn answer(&mut self, card: &Card) -> Option<Answer> {
        let answered = prompt_card(card)?;
        self.reason = answered.reason;
        Some(answered.answer)
    }

    fn reason(&mut self) -> Option<String> {
        self.reason.take()
    }
}

/// One line from the terminal, read a byte at a time so nothing of the
/// next line is taken with it. `None` at end of input.
pub(crate) fn read_terminal_line() -> Option<String> {
    let stdin = rustix::stdio::stdin();
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    loop {
        match rustix::io::read(stdin, &mut byte) {
            Ok(0) => {
                return (!line.is_empty()).then(|| String::from_utf8_lossy(&line).into_owned());
            }
            Ok(_) if byte[0] == b'\n' => return Some(String::from_utf8_lossy(&line).into_owned()),
            Ok(_) => line.push(byte[0]),
            Err(rustix::io::Errno::INTR) => {}
            Err(_) => return None,
        }
    }
}

/// Drops whatever was typed (or pasted) before now.
fn flush_typed_ahead() {
    // Best effort: input that is no terminal has nothing typed ahead to drop.
    let _ = rustix::termios::tcflush(
        rustix::stdio::stdin(),
        rustix::termios::QueueSelector::IFlush,
    );
}

/// Draws the card on stderr, drops what was typed before it, and asks
/// `[o]nce / [s]ession / [a]lways / [d]eny / [r]eason`: `r` denies with a
/// reason, asked next. `None` at end of input.
pub(crate) fn prompt_card(card: &Card) -> Option<Answered> {
    eprint!("\n{}", show::card(card, show::colour()));
    // Stderr gone: the answer is still read, and a card never shown is denied by no answer.
    let _ = std::io::stderr().flush();
    flush_typed_ahead();
    if let wicket_protocol::CardKind::Effects(_) = card.kind {
        return prompt_effects();
    }
    let preview = Answer::Preview.fits(&card.kind);
    loop {
        let line = show::ask_line(if preview {
            "[o]nce / [s]ession / [a]lways / [p]review / [d]eny / [r]eason, deny: "
        } else {
            "[o]nce / [s]ession / [a]lways / [d]eny / [r]eason, deny: "
        })?;
        let answer = match line.trim() {
            "o" | "once" => Answer::AllowOnce,
            "s" | "session" => Answer::AllowSession,
            "a" | "always" if card.always.is_some() => Answer::AllowAlways,
            "d" | "deny" => Answer::Deny,
            "p" | "preview" if preview => Answer::Preview,
            "r" | "reason" => {
                let reason = show::ask_line("why you deny it (the model reads it): ")?;
                return Some(Answered {
                    answer: Answer::Deny,
                    widened: None,
                    reason: wicket_protocol::card::deny_reason(&reason),
                });
            }
            _ => {
                eprintln!("type o, s, a, d or r");
                continue;
            }
        };
        return Some(answer.into());
    }
}

/// Asks `[a]pply / [d]iscard` of an effects card. `None` at end of input.
fn prompt_effects() -> Option<Answered> {
    loop {
        match show::ask_line("[a]pply / [d]iscard: ")?.trim() {
            "a" | "apply" => return Some(Answer::Apply.into()),
            "d" | "discard" => return Some(Answer::Discard.into()),
            _ => eprintln!("type a or d"),
        }
    }
}

/// Asks a question on the terminal; `None` at end of input.
pub(crate) fn prompt_reply(question: &str) -> Option<String> {
    eprintln!("\n? {}", wicket_protocol::text::visible(question));
    show::ask_line("reply: ").map(|line| line.trim_end_matches('\r').to_string())
}
