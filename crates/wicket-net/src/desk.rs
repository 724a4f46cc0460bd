//! Questions from connections to the one thread that may answer them. A
//! connection is served on a thread of its own, but only one thread holds
//! the person (the gate's, with its answerer): each connection's decision
//! and close go there as an [`Asked`]. A command's connections ask the
//! thread that runs it for as long as it runs. A long-lived process's (an
//! MCP server's) ask a [`Desk`]: whichever thread holds it now (a call of
//! that server in progress), or no one, and then the connection is refused
//! and its close kept until the desk is next held.

use std::net::TcpStream;
use std::sync::mpsc::{Sender, channel};
use std::sync::{Arc, Mutex};

use crate::{Closed, Decide, Decision, Resolved, Target, serve};

/// What a connection asks the deciding thread, or tells it.
#[derive(Debug)]
pub enum Asked {
    /// May it connect? The decision goes back on `reply`.
    Decide {
        /// What the client asked for.
        target: Target,
        /// Where the name resolved: `None` while it is decided by its name
        /// alone, before any lookup ([`Decide`]).
        resolved: Option<Resolved>,
        /// Who asks (an MCP server's name), when not the command being run.
        from: Option<String>,
        /// The decision, once made.
        reply: Sender<Decision>,
    },
    /// It closed.
    Closed {
        /// How.
        closed: Closed,
        /// Who made it, as in [`Asked::Decide`].
        from: Option<String>,
    },
    /// The work the deciding thread waits on is done: it stops listening.
    Done,
}

/// Asks `to` and waits for the answer; refused when no answer can come.
pub fn ask(
    to: &Sender<Asked>,
    target: &Target,
    resolved: Option<&Resolved>,
    from: Option<String>,
) -> Decision {
    let (reply, decision) = channel();
    let asked = Asked::Decide {
        target: target.clone(),
        resolved: resolved.cloned(),
        from,
        reply,
    };
    if to.send(asked).is_err() {
        return Decision::Deny;
    }
    decision.recv().unwrap_or(Decision::Deny)
}

#[derive(Debug, Default)]
struct Held {
    /// Where questions go now.
    to: Option<Sender<Asked>>,
    /// Connections that closed while no one held the desk, with who made them.
    unheard: Vec<(String, Closed)>,
    /// Connections being served now.
    open: usize,
}

/// Where the connections of long-lived processes ask: see the module.
#[derive(Debug, Clone, Default)]
pub struct Desk(Arc<Mutex<Held>>);

impl Desk {
    /// Questions go to `to` from now on; the closes no one heard since the
    /// desk was last held.
    pub fn hold(&self, to: Sender<Asked>) -> Vec<(String, Closed)> {
        let Ok(mut held) = self.0.lock() else {
            return Vec::new();
        };
        held.to = Some(to);
        std::mem::take(&mut held.unheard)
    }

    /// No one holds it: questions are refused, closes kept.
    pub fn release(&self) {
        if let Ok(mut held) = self.0.lock() {
            held.to = None;
        }
    }

    /// How many connections are being served now.
    pub fn open(&self) -> usize {
        self.0.lock().map_or(0, |held| held.open)
    }

    /// Serves one connection of `from` (an MCP server) to its end, asking
    /// whoever holds the desk.
    pub fn serve(&self, from: &str, client: TcpStream) {
        if let Ok(mut held) = self.0.lock() {
            held.open += 1;
        }
        let asking = Asking {
            desk: self.clone(),
            from: from.to_string(),
        };
        let closed = serve(client, &asking);
        let to = self.0.lock().ok().and_then(|held| held.to.clone());
        let told = to.is_some_and(|to| {
            to.send(Asked::Closed {
                closed: closed.clone(),
                from: Some(from.to_string()),
            })
            .is_ok()
        });
        if let Ok(mut held) = self.0.lock() {
            if !told {
                held.unheard.push((from.to_string(), closed));
            }
            held.open = held.open.saturating_sub(1);
        }
    }
}

/// One connection's questions to the desk.
struct Asking {
    desk: Desk,
    from: String,
}

impl Decide for Asking {
    fn decide(&self, target: &Target, resolved: Option<&Resolved>) -> Decision {
        let to = self.desk.0.lock().ok().and_then(|held| held.to.clone());
        match to {
            Some(to) => ask(&to, target, resolved, Some(self.from.clone())),
            // No call of the server's is in progress: no one to ask.
            None => Decision::Deny,
        }
    }
}
