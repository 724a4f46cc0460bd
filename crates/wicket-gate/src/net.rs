//! A command's network through Wicket, as the gate decides it. Each
//! connection the command makes to its proxy listener comes to
//! [`handler`]'s thread, where `wicket-net` reads the host and resolves it;
//! the decision itself is made on the gate's own thread (the one holding
//! the person's [`Answerer`](crate::Answerer)), in the order every other
//! call is decided: a deny rule, an ask rule, the session's grant, an
//! allow rule, what this command's own cards already said, else a `net`
//! card naming the command and the host. The connection waits while the
//! card is open. When it closes, its [`Closed`] record comes back here too,
//! to be logged as a `net` event and summed into the run's result.

use std::collections::{BTreeMap, BTreeSet};
use std::net::{Shutdown, TcpStream};
use std::sync::mpsc::{Receiver, Sender};
use std::sync::{Arc, Mutex};

pub(crate) use wicket_net::desk::Asked;
use wicket_net::{Closed, Decision, Host, Outcome, Resolved, Target};
use wicket_os::egress::Egress;
use wicket_protocol::event::NetEvent;
use wicket_protocol::{AllowedBy, CallId, NetUse, RunOutput};

/// The clients of a command's connections still open, so that when the
/// command is over every one is closed, and no relay outlives it.
#[derive(Clone, Default)]
pub(crate) struct Open(Arc<Mutex<Vec<TcpStream>>>);

impl Open {
    fn add(&self, socket: &TcpStream) {
        if let (Ok(copy), Ok(mut open)) = (socket.try_clone(), self.0.lock()) {
            open.push(copy);
        }
    }

    /// Shuts every connection down, both its sockets: each relay then ends.
    pub(crate) fn close_all(&self) {
        if let Ok(open) = self.0.lock() {
            for client in open.iter() {
                // One already closed has nothing left to shut.
                let _ = client.shutdown(Shutdown::Both);
            }
        }
    }
}

/// What the launcher hands Wicket for each connection: a thread of its
/// own, where `wicket-net` serves it, asking `gate` for the decision and
/// telling it of the close.
pub(crate) fn handler(gate: Sender<Asked>, open: Open) -> Egress {
    let gate = Mutex::new(gate);
    Egress(Arc::new(move |client: TcpStream| {
        let Ok(gate) = gate.lock().map(|gate| gate.clone()) else {
            return;
        };
        open.add(&client);
        let open = open.clone();
        std::thread::spawn(move || {
            let asking = Asking { gate, open };
            let closed = wicket_net::serve(client, &asking);
            // The gate's thread is gone only after every sender, this one included.
            let _ = asking.gate.send(Asked::Closed { closed, from: None });
        });
    }))
}

/// One connection's questions to the gate's thread.
struct Asking {
    gate: Sender<Asked>,
    open: Open,
}

impl wicket_net::Decide for Asking {
    fn decide(&self, target: &Target, resolved: &Resolved) -> Decision {
        // No answer comes when the gate's thread is gone (the command is over): refused.
        wicket_net::desk::ask(&self.gate, target, resolved, None)
    }

    fn connected(&self, upstream: &TcpStream) {
        self.open.add(upstream);
    }
}

/// What one command's own net cards said: `allow_once` lets a host for the
/// rest of the command, and a `deny` is not asked again in it.
#[derive(Default)]
pub(crate) struct Said {
    /// Allowed at a card, with the card.
    pub(crate) allowed: BTreeMap<(String, u16), AllowedBy>,
    /// Denied at a card, or by a rule.
    pub(crate) denied: BTreeSet<(String, u16)>,
}

/// The decision to let a connection through, saying what let it (the
/// `net` event reads it back: [`recorded`]).
pub(crate) fn allowed(by: &AllowedBy) -> Decision {
    Decision::Allow {
        allowed_by: serde_json::to_string(by).unwrap_or_default(),
    }
}

/// The host as rules name it, and as the command wrote it where that differs.
pub(crate) fn names(host: &Host) -> (String, Option<String>) {
    let ascii = host.ascii();
    match host {
        Host::Name { shown, .. } if host.is_mixed() => (ascii, Some(shown.clone())),
        Host::Name { .. } | Host::Ip(_) => (ascii, None),
    }
}

/// What the log and the run's result say of a connection, once closed.
pub(crate) fn recorded(closed: &Closed) -> Option<(wicket_protocol::event::NetEvent, NetUse)> {
    let target = closed.target.as_ref()?;
    let (host, _) = names(&target.host);
    let refused = match &closed.outcome {
        Outcome::Relayed => None,
        Outcome::Denied => Some("refused: no rule, grant or answer allowed it".to_string()),
        Outcome::BadRequest(why) => Some(format!("a request Wicket could not read: {why}")),
        Outcome::Unresolved(why) => Some(format!("the name does not resolve: {why}")),
        Outcome::ConnectFailed(why) => Some(format!("no address took the connection: {why}")),
    };
    let allowed_by = closed
        .allowed_by
        .as_deref()
        .and_then(|allowed| serde_json::from_str::<AllowedBy>(allowed).ok());
    let event = wicket_protocol::event::NetEvent {
        call_id: None,
        server: None,
        host: host.clone(),
        port: target.port,
        address: closed.address.map(|address| address.to_string()),
        local: closed
            .address
            .is_some_and(|address| wicket_net::resolve::is_local(address.ip())),
        sent: closed.sent,
        received: closed.received,
        allowed_by,
        refused,
        duration_ms: closed.duration.as_millis() as u64,
    };
    let used = NetUse {
        host,
        port: target.port,
        sent: closed.sent,
        received: closed.received,
    };
    Some((event, used))
}

/// What a command's connections came to, as they closed.
#[derive(Default)]
pub(crate) struct Tally {
    used: Vec<NetUse>,
    refused: Vec<String>,
}

impl Tally {
    /// One connection closed: counted, and its `net` event for the log.
    pub(crate) fn add(&mut self, closed: &Closed, call_id: &CallId) -> Option<NetEvent> {
        let (mut event, used) = recorded(closed)?;
        event.call_id = Some(call_id.clone());
        let target = format!("{}:{}", event.host, event.port);
        if closed.outcome == Outcome::Denied && !self.refused.contains(&target) {
            self.refused.push(target);
        }
        self.used.push(used);
        Some(event)
    }

    /// The run's `net`, and a note that names what was refused (unless
    /// the run's own note says more).
    pub(crate) fn into_output(self, output: &mut RunOutput) {
        output.net = summed(self.used);
        if output.note.is_none() && !self.refused.is_empty() {
            output.note = Some(format!(
                "Wicket refused {} (the person or a rule denied it); nothing was sent there. {}",
                self.refused.join(", "),
                crate::AFTER_A_DENIAL
            ));
        }
    }
}

/// The run's `net`: the bytes each way, host by host, in the order first reached.
fn summed(uses: Vec<NetUse>) -> Vec<NetUse> {
    let mut summed: Vec<NetUse> = Vec::new();
    for used in uses {
        match summed
            .iter_mut()
            .find(|seen| seen.host == used.host && seen.port == used.port)
        {
            Some(seen) => {
                seen.sent += used.sent;
                seen.received += used.received;
            }
            None => summed.push(used),
        }
    }
    summed
}

/// Drains what the connections ask until every sender is gone: the
/// command's own and each connection's.
pub(crate) fn each(asked: &Receiver<Asked>, mut on: impl FnMut(Asked)) {
    for one in asked {
        on(one);
    }
}
