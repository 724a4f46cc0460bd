//! The ways `wicket tool` answers cards.

use std::io::{BufRead, Write};

use wicket_core::gate::Answerer;
use wicket_protocol::{Answer, Card};

use crate::show;

/// Prints each card as a JSON line on stdout, then lets the inner answerer answer.
pub struct Printing<A> {
    inner: A,
}

impl<A> Printing<A> {
    pub fn new(inner: A) -> Printing<A> {
        Printing { inner }
    }
}

impl<A: Answerer> Answerer for Printing<A> {
    fn answer(&mut self, card: &Card) -> Option<Answer> {
        let mut line = serde_json::to_value(card).unwrap_or_default();
        if let Some(map) = line.as_object_mut() {
            map.insert("type".into(), "card".into());
        }
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
        drop(out);
        self.inner.answer(card)
    }
}

/// Reads `{"card": ID, "answer": ...}` lines from stdin. End of input withdraws the card.
#[derive(Default)]
pub struct StdinLines;

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
                eprintln!(
                    "wicket: an answer line is not JSON; send {{\"card\":\"{}\",\"answer\":\"allow_once|allow_session|deny\"}}",
                    card.id
                );
                continue;
            };
            if value.get("card").and_then(|v| v.as_str()) != Some(card.id.as_str()) {
                eprintln!(
                    "wicket: that answer is not for the open card {}; ignored",
                    card.id
                );
                continue;
            }
            match value
                .get("answer")
                .cloned()
                .map(serde_json::from_value::<Answer>)
            {
                Some(Ok(answer)) => return Some(answer),
                _ => eprintln!("wicket: the answer must be allow_once, allow_session or deny"),
            }
        }
    }
}

/// Shows the card readably on stderr and prompts on the terminal.
pub struct Terminal;

impl Answerer for Terminal {
    fn answer(&mut self, card: &Card) -> Option<Answer> {
        let color = std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
        eprint!("{}", show::card(card, color));
        let stdin = std::io::stdin();
        loop {
            eprint!("[o]nce / [s]ession / [d]eny: ");
            let _ = std::io::stderr().flush();
            let mut line = String::new();
            match stdin.lock().read_line(&mut line) {
                Ok(0) | Err(_) => return None,
                Ok(_) => {}
            }
            match line.trim() {
                "o" | "once" => return Some(Answer::AllowOnce),
                "s" | "session" => return Some(Answer::AllowSession),
                "d" | "deny" => return Some(Answer::Deny),
                _ => eprintln!("type o, s or d"),
            }
        }
    }
}
