//! A command's network through Wicket, as the gate decides it. Each
//! connection the command makes to its proxy listener comes to
//! [`handler`]'s thread, where `wicket-net` reads the host; the decision,
//! on the name before any lookup and again where an allowed name resolved
//! to a local address, is made on the gate's own thread (the one holding
//! the person's [`Answerer`](crate::Answerer)), in the order every other
//! call is decided: a deny rule, an ask rule, the session's grant, an
//! allow rule, what this command's own cards already said, else a `net`
//! card naming the command and the host. The connection waits while the
//! card is open. When it closes, its [`Closed`] record comes back here too,
//! to be logged as a `net` event and summed into the run's result.

use std::collections::{BTreeMap, BTreeSet};
use std::net::{Shutdown, TcpStream};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};

pub(crate) use wicket_net::desk::Asked;
use wicket_net::{Closed, Decision, Host, Outcome, Resolved, Target};
use wicket_os::egress::Egress;
use wicket_protocol::rules::Matcher;
use wicket_protocol::{Answer, Card, CardKind, ErrorKind, EventBody, NetCard, RunArgs, WireError};
use wicket_session::{GrantKind, NetKey, grant_id};
use wicket_tools::Cancel;
use wicket_tools::tools::run::RunDir;

use crate::rules::{self, Subject};
use crate::{Answerer, Check, Gate, internal};
use wicket_protocol::event::NetEvent;
use wicket_protocol::{AllowedBy, CallId, NetUse, RunOutput};

/// The sockets of a command's connections still open (each client's, and
/// its host's once connected), so that when the command is over every one
/// is closed and no relay outlives it. A connection's are let go as it
/// ends: a copy kept past that would hold it open.
#[derive(Clone, Default)]
pub(crate) struct Open(Arc<Mutex<OpenSockets>>);

#[derive(Default)]
struct OpenSockets {
    next: u64,
    by_connection: BTreeMap<u64, Vec<TcpStream>>,
}

impl Open {
    /// A new connection, its client's socket kept; the number to add its
    /// host's socket under and to let both go by.
    fn add(&self, client: &TcpStream) -> u64 {
        let Ok(mut open) = self.0.lock() else {
            return u64::MAX;
        };
        let connection = open.next;
        open.next += 1;
        let copies = client.try_clone().into_iter().collect();
        open.by_connection.insert(connection, copies);
        connection
    }

    /// The host's socket of `connection`, kept beside its client's.
    fn add_upstream(&self, connection: u64, upstream: &TcpStream) {
        if let (Ok(copy), Ok(mut open)) = (upstream.try_clone(), self.0.lock())
            && let Some(sockets) = open.by_connection.get_mut(&connection)
        {
            sockets.push(copy);
        }
    }

    /// `connection` has ended: its copies are closed.
    fn ended(&self, connection: u64) {
        if let Ok(mut open) = self.0.lock() {
            open.by_connection.remove(&connection);
        }
    }

    /// Shuts every connection down, both its sockets: each relay then ends.
    pub(crate) fn close_all(&self) {
        if let Ok(open) = self.0.lock() {
            for socket in open.by_connection.values().flatten() {
                // One already closed has nothing left to shut.
                let _ = socket.shutdown(Shutdown::Both);
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
        let connection = open.add(&client);
        let open = open.clone();
        std::thread::spawn(move || {
            let asking = Asking {
                gate,
                open,
                connection,
            };
            let closed = wicket_net::serve(client, &asking);
            asking.open.ended(asking.connection);
            // The gate's thread is gone only after every sender, this one included.
            let _ = asking.gate.send(Asked::Closed { closed, from: None });
        });
    }))
}

/// One connection's questions to the gate's thread.
struct Asking {
    gate: Sender<Asked>,
    open: Open,
    connection: u64,
}

impl wicket_net::Decide for Asking {
    fn decide(&self, target: &Target, resolved: Option<&Resolved>) -> Decision {
        // No answer comes when the gate's thread is gone (the command is over): refused.
        wicket_net::desk::ask(&self.gate, target, resolved, None)
    }

    fn connected(&self, upstream: &TcpStream) {
        self.open.add_upstream(self.connection, upstream);
    }
}

/// What one command's own net cards said: `allow_once` lets a host for the
/// rest of the command, and a `deny` is not asked again in it. An answer
/// about a name is not one about a local address it may resolve to later
/// (a name whose DNS answer changes): allowed hosts are kept by host, port
/// and locality, and a local address needs a card of its own.
#[derive(Default)]
pub(crate) struct Said {
    /// Allowed at a card, with the card: by host, port and whether the
    /// card was about a local address.
    pub(crate) allowed: BTreeMap<(String, u16, bool), AllowedBy>,
    /// Denied at a card, or by a rule.
    pub(crate) denied: BTreeSet<(String, u16)>,
    /// The person's reasons for the hosts they denied, `host:port: "why"`.
    pub(crate) reasons: Vec<String>,
}

/// The decision to let a connection through, saying what let it (the
/// `net` event reads it back: [`recorded`]).
pub(crate) fn allowed(by: &AllowedBy) -> Decision {
    Decision::Allow {
        allowed_by: wicket_protocol::json::text(by),
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
    pub(crate) fn into_output(
        self,
        output: &mut RunOutput,
        said: &Said,
        audience: crate::Audience,
    ) {
        output.net = summed(self.used);
        if output.note.is_none() && !self.refused.is_empty() {
            let reasons = if said.reasons.is_empty() {
                String::new()
            } else {
                format!(" The person's reasons: {}.", said.reasons.join("; "))
            };
            output.note = Some(format!(
                "Wicket refused {} (the person or a rule denied it); nothing was sent there.{reasons} {}",
                self.refused.join(", "),
                crate::after_a_denial(audience)
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

/// A `run` whose network goes through Wicket, as its connections' cards need it.
pub(crate) struct Proxied<'r> {
    pub(crate) call_id: &'r CallId,
    pub(crate) args: &'r RunArgs,
    pub(crate) dir: &'r RunDir,
    pub(crate) cancel: &'r Cancel,
}

/// How long a call holds the desk after its work, for the connections
/// still closing (a longer one is logged by the next call).
const DESK_GRACE: std::time::Duration = std::time::Duration::from_secs(1);

/// Adds `target` to what a refused command wanted, once.
fn named(wanted: &mut Vec<String>, target: &wicket_net::Target) {
    let (host, _) = names(&target.host);
    let named = format!("{host}:{}", target.port);
    if !wanted.contains(&named) {
        wanted.push(named);
    }
}

/// How a proxied command's hosts are decided.
enum Deciding<'a> {
    /// Each new host by rule, grant or card.
    Ask(&'a mut dyn Answerer),
    /// Every host refused, and named.
    Refuse(&'a mut Vec<String>),
}

/// Who a `net` card says wants to reach a host: a command (its argv), or an
/// MCP server; and the call it came in.
struct Asker<'r> {
    call_id: &'r CallId,
    argv: &'r [String],
    server: Option<&'r str>,
}

impl Gate<'_> {
    /// [`Gate::check`] for a connection through Wicket's proxy to `host:port`
    /// (`local`: the name resolved to a local address).
    pub fn check_net(&self, host: &str, port: u16, local: bool) -> Check {
        let key = NetKey {
            host: host.to_string(),
            port,
            local,
        };
        match self.net_pass(&key, &Said::default()) {
            Ok(None) => Check::Card,
            Ok(Some(wicket_net::Decision::Deny)) => {
                Check::Refused(format!("a deny rule names {host}:{port}"))
            }
            Ok(Some(wicket_net::Decision::Allow { allowed_by })) => {
                match serde_json::from_str::<AllowedBy>(&allowed_by) {
                    Ok(by) => Check::Allowed(by),
                    Err(_) => Check::Card,
                }
            }
            Err(error) => Check::Refused(error.message),
        }
    }

    /// A command whose network goes through Wicket: it runs on a thread of
    /// its own, while this one (which holds the answerer) decides each host
    /// it asks for and logs each connection as it closes. The result says
    /// what went where.
    pub(crate) fn run_proxied(
        &self,
        run: Proxied<'_>,
        confine: wicket_os::spawn::Confine,
        answerer: &mut dyn Answerer,
    ) -> Result<RunOutput, WireError> {
        self.run_through(run, confine, Deciding::Ask(answerer))
    }

    /// [`Gate::run_proxied`], every host refused without a card and named
    /// in `wanted` (a preview has no network, yet says what it tried).
    pub(crate) fn run_refusing(
        &self,
        run: Proxied<'_>,
        confine: wicket_os::spawn::Confine,
        wanted: &mut Vec<String>,
    ) -> Result<RunOutput, WireError> {
        self.run_through(run, confine, Deciding::Refuse(wanted))
    }

    fn run_through(
        &self,
        run: Proxied<'_>,
        confine: wicket_os::spawn::Confine,
        mut deciding: Deciding<'_>,
    ) -> Result<RunOutput, WireError> {
        let (to_gate, asked) = std::sync::mpsc::channel();
        let open = Open::default();
        let egress = handler(to_gate, open.clone());
        let tools = self.tools;
        let mut said = Said::default();
        let mut tally = Tally::default();
        let mut failure = None;
        let asker = Asker {
            call_id: run.call_id,
            argv: &run.args.argv,
            server: None,
        };
        let ran = std::thread::scope(|scope| {
            let runner = scope.spawn(move || {
                let ran = tools.run(run.args, run.dir, confine, Some(egress), run.cancel);
                // The command is over: no connection of its outlives it.
                open.close_all();
                ran
            });
            for one in &asked {
                match one {
                    Asked::Decide {
                        target,
                        resolved,
                        reply,
                        from: _,
                    } => {
                        let asking: Option<(&mut Said, &mut dyn Answerer)> = match &mut deciding {
                            Deciding::Ask(answerer) => Some((&mut said, &mut **answerer)),
                            Deciding::Refuse(wanted) => {
                                named(wanted, &target);
                                None
                            }
                        };
                        if let Some(error) =
                            self.reply_net(&asker, &target, resolved.as_ref(), &reply, asking)
                        {
                            failure.get_or_insert(error);
                        }
                    }
                    // A command's connections tell of no end of work: they end with it.
                    Asked::Done => {}
                    Asked::Closed { closed, from: _ } => {
                        if let Some(event) = tally.add(&closed, run.call_id)
                            && let Err(error) = self.session.append(EventBody::Net(event))
                        {
                            failure.get_or_insert(internal(error));
                        }
                    }
                }
            }
            runner.join()
        });
        let mut output = match ran {
            Ok(ran) => ran?,
            Err(_) => {
                return Err(WireError::new(
                    ErrorKind::Io,
                    "the thread running the command failed; whether it ran is in the log",
                ));
            }
        };
        if let Some(error) = failure {
            return Err(error);
        }
        match deciding {
            Deciding::Ask(answerer) => {
                tally.into_output(&mut output, &said, crate::Audience::of(&*answerer))
            }
            // What was wanted is said on the effects card, not as a refusal.
            Deciding::Refuse(_) => output.net = summed(tally.used),
        }
        Ok(output)
    }

    /// Does `work` (an MCP server's start, or a call of its) on a thread of
    /// its own while this one, holding the answerer, decides what the
    /// servers' connections ask through `desk`: the same decision as a
    /// command's, on a `net` card that names the server. Connections that
    /// closed while no call held the desk are logged first.
    pub fn with_desk<T: Send>(
        &self,
        desk: &wicket_net::desk::Desk,
        call_id: &CallId,
        answerer: &mut dyn Answerer,
        work: impl FnOnce() -> T + Send,
    ) -> T {
        let (to_gate, asked) = std::sync::mpsc::channel();
        let done = to_gate.clone();
        for (server, closed) in desk.hold(to_gate) {
            self.log_net(None, Some(&server), &closed);
        }
        let mut said = Said::default();
        let worked = std::thread::scope(|scope| {
            let worker = scope.spawn(move || {
                let worked = work();
                // The loop below stops on this; it is there until then.
                let _ = done.send(Asked::Done);
                worked
            });
            for one in &asked {
                if matches!(one, Asked::Done) {
                    break;
                }
                self.heard(one, call_id, Some((&mut said, &mut *answerer)));
            }
            // A connection that ends as the work does (a response read
            // whole, its socket closing) is heard for a moment more.
            let deadline = std::time::Instant::now() + DESK_GRACE;
            while desk.open() > 0 {
                let left = deadline.saturating_duration_since(std::time::Instant::now());
                match asked.recv_timeout(left) {
                    Ok(one) => self.heard(one, call_id, None),
                    Err(_) => break,
                }
            }
            desk.release();
            while let Ok(one) = asked.try_recv() {
                self.heard(one, call_id, None);
            }
            worker.join()
        });
        match worked {
            Ok(worked) => worked,
            Err(panic) => std::panic::resume_unwind(panic),
        }
    }

    /// One thing a server's connection asked or told while `call_id` held
    /// the desk: decided with `deciding` (this call's answers and the
    /// person), or refused once the call's work is over; a close logged.
    fn heard(
        &self,
        one: Asked,
        call_id: &CallId,
        deciding: Option<(&mut Said, &mut dyn Answerer)>,
    ) {
        match one {
            Asked::Decide {
                target,
                resolved,
                from,
                reply,
            } => {
                let asker = Asker {
                    call_id,
                    argv: &[],
                    server: from.as_deref(),
                };
                // A server's connection refused is all a failure here costs.
                self.reply_net(&asker, &target, resolved.as_ref(), &reply, deciding);
            }
            Asked::Closed { closed, from } => {
                self.log_net(Some(call_id), from.as_deref(), &closed);
            }
            Asked::Done => {}
        }
    }

    /// Decides one connection (refuses it when no one is `deciding`) and
    /// answers it. A card withdrawn is that connection refused; the error
    /// returned is one that is more than a refusal (a log that could not
    /// be written).
    fn reply_net(
        &self,
        asker: &Asker<'_>,
        target: &wicket_net::Target,
        resolved: Option<&wicket_net::Resolved>,
        reply: &std::sync::mpsc::Sender<wicket_net::Decision>,
        deciding: Option<(&mut Said, &mut dyn Answerer)>,
    ) -> Option<WireError> {
        let decided = match deciding {
            Some((said, answerer)) => self.decide_net(asker, target, resolved, said, answerer),
            None => Ok(wicket_net::Decision::Deny),
        };
        let (decision, failure) = match decided {
            Ok(decision) => (decision, None),
            Err(error) if error.kind == ErrorKind::Denied => (wicket_net::Decision::Deny, None),
            Err(error) => (wicket_net::Decision::Deny, Some(error)),
        };
        // The connection may be gone already; nothing waits for the answer then.
        let _ = reply.send(decision);
        failure
    }

    /// A connection through Wicket's proxy, as it closed, in the log.
    fn log_net(&self, call_id: Option<&CallId>, server: Option<&str>, closed: &wicket_net::Closed) {
        if let Some((mut event, _)) = recorded(closed) {
            event.call_id = call_id.cloned();
            event.server = server.map(str::to_string);
            self.session.recorded().append(EventBody::Net(event));
        }
    }

    /// A `net` card, with the rule `allow_always` saves: that host and port.
    fn net_card(&self, net: NetCard) -> Card {
        let always = self.always(Matcher::Net {
            host: net.host.clone(),
            port: Some(net.port),
        });
        Card {
            always: Some(Box::new(always)),
            ..Card::new("net", CardKind::Net(net))
        }
    }

    /// Whether one connection of a command may go to `target`: a deny rule
    /// refuses; an ask rule cards; then the session's grant, an allow rule,
    /// what this command's own cards said; else a `net` card. Asked first by
    /// the name alone (`resolved` is `None`: nothing looked up yet, and the
    /// card shows no address), then again where the allowed name resolved
    /// to a local address: that passes only by a rule that names hosts, a
    /// grant from a card that said so, or such a card (marked local).
    fn decide_net(
        &self,
        asker: &Asker<'_>,
        target: &wicket_net::Target,
        resolved: Option<&wicket_net::Resolved>,
        said: &mut Said,
        answerer: &mut dyn Answerer,
    ) -> Result<wicket_net::Decision, WireError> {
        let (host, shown) = names(&target.host);
        let local = resolved.is_some_and(|resolved| resolved.local);
        let key = NetKey {
            host: host.clone(),
            port: target.port,
            local,
        };
        if let Some(decided) = self.net_pass(&key, said)? {
            return Ok(decided);
        }
        let card = self.net_card(NetCard {
            host,
            port: target.port,
            shown,
            addresses: resolved
                .map(|resolved| {
                    resolved
                        .addresses
                        .iter()
                        .map(|address| address.ip().to_string())
                        .collect()
                })
                .unwrap_or_default(),
            local,
            argv: asker.argv.to_vec(),
            server: asker.server.map(str::to_string),
        });
        let answered = self.ask(asker.call_id, card, answerer)?;
        let by = match answered.answer {
            Answer::Deny | Answer::Preview | Answer::Apply | Answer::Discard => {
                if let Some(reason) = answered.reason {
                    said.reasons.push(format!(
                        "{}:{}: {}",
                        key.host,
                        key.port,
                        serde_json::json!(reason)
                    ));
                }
                said.denied.insert((key.host.clone(), key.port));
                return Ok(wicket_net::Decision::Deny);
            }
            Answer::AllowOnce | Answer::AllowAlways => AllowedBy::Card(answered.card.id.clone()),
            Answer::AllowSession => {
                self.grant(&answered.card, GrantKind::Net, &key, |allowed| {
                    allowed.net.insert(key.clone());
                })?;
                AllowedBy::Grant(grant_id(GrantKind::Net, &serde_json::json!(key)))
            }
        };
        // The rule allow_always saves names the host, which opens its local
        // addresses too; the other answers are about what the card showed.
        let covers_local = key.local || answered.answer == Answer::AllowAlways;
        said.allowed
            .insert((key.host.clone(), key.port, covers_local), by.clone());
        Ok(allowed(&by))
    }

    /// A connection's decision without a card, where there is one: a deny
    /// rule or this command's own denial refuses; unless an ask rule says
    /// to ask, the session's grant (a grant for a local name only from a
    /// card that said so), an allow rule, or this command's own card allows.
    fn net_pass(
        &self,
        key: &NetKey,
        said: &Said,
    ) -> Result<Option<wicket_net::Decision>, WireError> {
        let pair = (key.host.clone(), key.port);
        if said.denied.contains(&pair) {
            return Ok(Some(wicket_net::Decision::Deny));
        }
        let subject = Subject::Net {
            host: &key.host,
            port: key.port,
            local: key.local,
        };
        let verdict = rules::verdict(
            self.rules_in_force()?,
            self.tools.workspace().root(),
            &subject,
        );
        if verdict.deny.is_some() {
            return Ok(Some(wicket_net::Decision::Deny));
        }
        if verdict.ask.is_some() {
            return Ok(None);
        }
        let grant = self.held_grant(GrantKind::Net, key, |allowed| {
            allowed.net.contains(key)
                || (!key.local
                    && allowed.net.contains(&NetKey {
                        local: true,
                        ..key.clone()
                    }))
        });
        // A card about a local address also answered for the name.
        let by = grant.map(AllowedBy::Grant).or(verdict.allow).or_else(|| {
            said.allowed
                .get(&(key.host.clone(), key.port, key.local))
                .or_else(|| {
                    (!key.local)
                        .then(|| said.allowed.get(&(key.host.clone(), key.port, true)))
                        .flatten()
                })
                .cloned()
        });
        Ok(by.as_ref().map(allowed))
    }
}
