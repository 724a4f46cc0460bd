//! A session's servers: started together at its first turn, offered to the
//! model as `mcp__SERVER__TOOL`, called one at a time from the turn, brought
//! back once per turn when one dies, and stopped with the session.
//!
//! The hub knows nothing of cards. The turn asks the gate which servers may
//! start (a workspace's stdio server raises a `run` card first) and hands
//! the hub an [`Approval`] for each; each call is put through the gate
//! before [`Hub::call`] is reached.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::runtime::Handle;
use wicket_os::Cancel;
use wicket_protocol::{ErrorKind, McpOutput, McpState, WireError};

use crate::connection::{Connection, Failure};
use crate::names::model_name;
use crate::server::{Launch, ServerSpec};

/// The most of a server's description of a tool the model is given.
pub const DESCRIPTION_MAX_BYTES: usize = 1024;

/// Whether a server may start, as the turn decided it.
#[derive(Debug, Clone)]
pub enum Approval {
    /// A stdio server: start it like this.
    Launch(Box<Launch>),
    /// A Streamable HTTP server of the home config: connect.
    Connect,
    /// Not started, and why (the person denied its card, or it could never start).
    Refused {
        /// Denied by the person (else it failed before starting).
        denied: bool,
        /// Why.
        message: String,
    },
}

/// What happened to a server, for the session's log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// The server.
    pub server: String,
    /// What happened.
    pub state: McpState,
    /// Details.
    pub message: String,
}

/// A tool the model is offered.
#[derive(Debug, Clone, PartialEq)]
pub struct Offered {
    /// `mcp__SERVER__TOOL`.
    pub name: String,
    /// The server.
    pub server: String,
    /// The tool's own name.
    pub tool: String,
    /// The server's description, cut to [`DESCRIPTION_MAX_BYTES`].
    pub description: String,
    /// Its input schema, as the server gave it.
    pub schema: serde_json::Value,
    /// The server's hints (readOnlyHint, …), shown on the card as its claim.
    pub annotations: Option<serde_json::Value>,
}

/// Where a server stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Standing {
    /// Not tried yet.
    Pending,
    /// Started: what it offers.
    Up {
        /// The protocol version it answered with.
        protocol: String,
        /// Its name and version, as it gave them.
        server_info: String,
    },
    /// Did not start, and why.
    Failed(String),
    /// The person denied starting it.
    Denied(String),
    /// Died, and why.
    Dead(String),
}

struct Slot {
    spec: ServerSpec,
    approval: Option<Approval>,
    standing: Standing,
    connection: Option<Arc<Connection>>,
    offered: Vec<Offered>,
    restarted_in: Option<u64>,
}

#[derive(Default)]
struct Inner {
    configured: bool,
    servers: BTreeMap<String, Slot>,
    turn: u64,
}

/// Opens a connection to a server: [`Connection::open`], or a test's fake.
pub type Connector = Arc<
    dyn Fn(
            ServerSpec,
            Option<Launch>,
        ) -> Pin<Box<dyn Future<Output = Result<Connection, Failure>> + Send>>
        + Send
        + Sync,
>;

/// One session's MCP servers.
pub struct Hub {
    runtime: Handle,
    connector: Connector,
    inner: Mutex<Inner>,
    /// Where the servers' connections through Wicket's proxy ask.
    desk: wicket_net::desk::Desk,
}

impl std::fmt::Debug for Hub {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("Hub").finish_non_exhaustive()
    }
}

fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// The tools of `connection` that `spec` offers, named for the model; two
/// that would share a name are refused, and said so.
fn offer(spec: &ServerSpec, connection: &Connection) -> (Vec<Offered>, Vec<String>) {
    let mut offered: Vec<Offered> = Vec::new();
    let mut refused = Vec::new();
    let mut taken: BTreeMap<String, String> = BTreeMap::new();
    for tool in &connection.tools {
        let own = tool.name.to_string();
        if !spec.offers(&own) {
            continue;
        }
        let name = model_name(&spec.name, &own);
        if let Some(first) = taken.get(&name) {
            refused.push(format!(
                "the tools '{first}' and '{own}' would both be named {name}; '{own}' is not offered (rename one on the server, or disable one with disabled_tools)"
            ));
            continue;
        }
        taken.insert(name.clone(), own.clone());
        let description = match (&tool.title, &tool.description) {
            (Some(title), Some(description)) => format!("{title}: {description}"),
            (None, Some(description)) => description.to_string(),
            (Some(title), None) => title.clone(),
            (None, None) => format!("The tool {own} of the MCP server {}.", spec.name),
        };
        offered.push(Offered {
            name,
            server: spec.name.clone(),
            tool: own,
            description: cut(&description, DESCRIPTION_MAX_BYTES),
            schema: serde_json::Value::Object((*tool.input_schema).clone()),
            annotations: tool
                .annotations
                .as_ref()
                .and_then(|annotations| serde_json::to_value(annotations).ok()),
        });
    }
    (offered, refused)
}

impl Hub {
    /// A hub whose servers run on `runtime`.
    pub fn new(runtime: Handle) -> Hub {
        Hub::with_connector(
            runtime,
            Arc::new(|spec, launch| {
                Box::pin(async move { Connection::open(&spec, launch.as_ref()).await })
            }),
        )
    }

    /// Where the servers' connections through Wicket's proxy ask: the call
    /// in progress holds it (`Gate::with_desk`).
    pub fn desk(&self) -> &wicket_net::desk::Desk {
        &self.desk
    }

    /// A hub that reaches its servers through `connector`.
    pub fn with_connector(runtime: Handle, connector: Connector) -> Hub {
        Hub {
            runtime,
            connector,
            inner: Mutex::new(Inner::default()),
            desk: wicket_net::desk::Desk::default(),
        }
    }

    fn inner(&self) -> MutexGuard<'_, Inner> {
        wicket_os::sync::lock(&self.inner)
    }

    /// Takes the session's servers, the first time only: the servers a
    /// session started with are its servers until it ends. A disabled one
    /// is left out, so nothing starts it.
    pub fn configure(&self, specs: Vec<ServerSpec>) {
        let mut inner = self.inner();
        if inner.configured {
            return;
        }
        inner.configured = true;
        for spec in specs.into_iter().filter(|spec| spec.enabled) {
            inner.servers.insert(
                spec.name.clone(),
                Slot {
                    spec,
                    approval: None,
                    standing: Standing::Pending,
                    connection: None,
                    offered: Vec::new(),
                    restarted_in: None,
                },
            );
        }
    }

    /// The servers not tried yet.
    pub fn pending(&self) -> Vec<ServerSpec> {
        self.inner()
            .servers
            .values()
            .filter(|slot| slot.standing == Standing::Pending)
            .map(|slot| slot.spec.clone())
            .collect()
    }

    /// A new turn: each server may be brought back once more.
    pub fn begin_turn(&self) {
        self.inner().turn += 1;
    }

    /// Starts the approved servers concurrently, each within its startup
    /// timeout, so the wait is the slowest one's, not the sum.
    pub fn start(&self, approvals: Vec<(String, Approval)>) -> Vec<Report> {
        let mut reports = Vec::new();
        let mut starting = Vec::new();
        {
            let mut inner = self.inner();
            for (name, approval) in approvals {
                let Some(slot) = inner.servers.get_mut(&name) else {
                    continue;
                };
                slot.approval = Some(approval.clone());
                match approval {
                    Approval::Refused { denied, message } => {
                        slot.standing = if denied {
                            Standing::Denied(message.clone())
                        } else {
                            Standing::Failed(message.clone())
                        };
                        reports.push(Report {
                            server: name,
                            state: if denied {
                                McpState::Denied
                            } else {
                                McpState::Failed
                            },
                            message,
                        });
                    }
                    Approval::Launch(launch) => {
                        starting.push((slot.spec.clone(), Some(*launch)));
                    }
                    Approval::Connect => starting.push((slot.spec.clone(), None)),
                }
            }
        }
        let opened = self.runtime.block_on(futures_util::future::join_all(
            starting
                .iter()
                .map(|(spec, launch)| (self.connector)(spec.clone(), launch.clone())),
        ));
        for ((spec, _), result) in starting.iter().zip(opened) {
            reports.push(self.settle(spec, result, McpState::Started));
        }
        reports
    }

    /// Records how a start went.
    fn settle(
        &self,
        spec: &ServerSpec,
        result: Result<Connection, Failure>,
        started: McpState,
    ) -> Report {
        let mut inner = self.inner();
        let Some(slot) = inner.servers.get_mut(&spec.name) else {
            return Report {
                server: spec.name.clone(),
                state: McpState::Failed,
                message: "the server is not configured".into(),
            };
        };
        match result {
            Ok(connection) => {
                let (offered, refused) = offer(spec, &connection);
                let mut message = format!(
                    "{} tools offered of {} listed; protocol {}",
                    offered.len(),
                    connection.tools.len(),
                    connection.protocol
                );
                if !connection.server_info.is_empty() {
                    message.push_str(&format!("; server {}", connection.server_info));
                }
                for line in refused {
                    message.push_str("; ");
                    message.push_str(&line);
                }
                slot.standing = Standing::Up {
                    protocol: connection.protocol.clone(),
                    server_info: connection.server_info.clone(),
                };
                slot.offered = offered;
                slot.connection = Some(Arc::new(connection));
                Report {
                    server: spec.name.clone(),
                    state: started,
                    message,
                }
            }
            Err(failure) => {
                slot.standing = Standing::Failed(failure.message().to_string());
                slot.connection = None;
                slot.offered.clear();
                Report {
                    server: spec.name.clone(),
                    state: McpState::Failed,
                    message: failure.message().to_string(),
                }
            }
        }
    }

    /// Every tool the model is offered now.
    pub fn offered(&self) -> Vec<Offered> {
        self.inner()
            .servers
            .values()
            .flat_map(|slot| slot.offered.clone())
            .collect()
    }

    /// The offered tool the model calls `name`.
    pub fn find(&self, name: &str) -> Option<Offered> {
        self.inner()
            .servers
            .values()
            .flat_map(|slot| slot.offered.iter())
            .find(|offered| offered.name == name)
            .cloned()
    }

    /// Whether the person's own config lets `tool` of `server` skip its card.
    pub fn auto_allowed(&self, server: &str, tool: &str) -> bool {
        self.inner()
            .servers
            .get(server)
            .is_some_and(|slot| !slot.spec.from_workspace && slot.spec.auto_allow.contains(tool))
    }

    /// Each server and where it stands, with the tools it offers.
    pub fn standings(&self) -> Vec<(ServerSpec, Standing, Vec<Offered>)> {
        self.inner()
            .servers
            .values()
            .map(|slot| {
                (
                    slot.spec.clone(),
                    slot.standing.clone(),
                    slot.offered.clone(),
                )
            })
            .collect()
    }

    /// Calls `tool` of `server` (the gate already let it through), and
    /// stops waiting at once on cancel, telling the server. A server that
    /// died is brought back, once per turn; the call itself is not
    /// repeated, since it may have done its work.
    pub fn call(
        &self,
        server: &str,
        tool: &str,
        arguments: serde_json::Map<String, serde_json::Value>,
        cancel: &Cancel,
    ) -> (Result<McpOutput, WireError>, Vec<Report>) {
        let mut reports = Vec::new();
        let connection = {
            let inner = self.inner();
            let Some(slot) = inner.servers.get(server) else {
                return (
                    Err(WireError::new(
                        ErrorKind::Mcp,
                        format!("there is no MCP server '{server}' in this session"),
                    )),
                    reports,
                );
            };
            (
                slot.spec.clone(),
                slot.connection.clone(),
                slot.standing.clone(),
            )
        };
        let (spec, connection, standing) = connection;
        let connection = match (connection, standing) {
            (Some(connection), _) => connection,
            (None, Standing::Dead(why)) => match self.revive(&spec, &mut reports) {
                Some(connection) => connection,
                None => return (Err(WireError::new(ErrorKind::Mcp, why)), reports),
            },
            (None, standing) => {
                return (
                    Err(WireError::new(
                        ErrorKind::Mcp,
                        format!("the MCP server {server} is not running ({standing:?})"),
                    )),
                    reports,
                );
            }
        };
        let notify = Arc::new(tokio::sync::Notify::new());
        let wake = notify.clone();
        let listener = cancel.on_cancel(Box::new(move || wake.notify_one()));
        let result = self.runtime.block_on(async {
            tokio::select! {
                result = connection.call(server, tool, arguments, spec.tool_timeout) => Some(result),
                () = notify.notified() => None,
            }
        });
        cancel.remove(listener);
        let result = match result {
            None => Err(WireError::new(
                ErrorKind::Cancelled,
                format!(
                    "the call to {tool} was cancelled; the MCP server {server} was told to stop it"
                ),
            )),
            Some(Ok(output)) => Ok(output),
            Some(Err(Failure::Error(message))) => Err(WireError::new(ErrorKind::Mcp, message)),
            Some(Err(Failure::Died(message))) => {
                self.bury(&spec, &connection, &message, &mut reports);
                let back = self.revive(&spec, &mut reports).is_some();
                let next = if back {
                    "it was started again; call the tool again if the call should be repeated"
                } else {
                    "it stays down for the rest of this turn"
                };
                Err(WireError::new(ErrorKind::Mcp, format!("{message}; {next}")))
            }
        };
        (result, reports)
    }

    /// Marks `server` dead (once, for the connection that died).
    fn bury(
        &self,
        spec: &ServerSpec,
        connection: &Arc<Connection>,
        message: &str,
        reports: &mut Vec<Report>,
    ) {
        let dead = {
            let mut inner = self.inner();
            match inner.servers.get_mut(&spec.name) {
                Some(slot)
                    if slot
                        .connection
                        .as_ref()
                        .is_some_and(|held| Arc::ptr_eq(held, connection)) =>
                {
                    slot.connection = None;
                    slot.offered.clear();
                    slot.standing = Standing::Dead(message.to_string());
                    true
                }
                _ => false,
            }
        };
        if dead {
            self.runtime.block_on(connection.close());
            reports.push(Report {
                server: spec.name.clone(),
                state: McpState::Died,
                message: message.to_string(),
            });
        }
    }

    /// Starts a dead server again, unless it was already brought back in
    /// this turn.
    fn revive(&self, spec: &ServerSpec, reports: &mut Vec<Report>) -> Option<Arc<Connection>> {
        let approval = {
            let mut inner = self.inner();
            let turn = inner.turn;
            let slot = inner.servers.get_mut(&spec.name)?;
            if slot.restarted_in == Some(turn) {
                return None;
            }
            slot.restarted_in = Some(turn);
            slot.approval.clone()?
        };
        let launch = match approval {
            Approval::Launch(launch) => Some(*launch),
            Approval::Connect => None,
            Approval::Refused { .. } => return None,
        };
        let opened = self
            .runtime
            .block_on((self.connector)(spec.clone(), launch));
        let report = self.settle(spec, opened, McpState::Restarted);
        let up = report.state == McpState::Restarted;
        reports.push(report);
        if !up {
            return None;
        }
        self.inner()
            .servers
            .get(&spec.name)
            .and_then(|slot| slot.connection.clone())
    }

    /// Stops every server: closes its session, then TERM, then KILL, all
    /// at once.
    pub fn stop(&self) {
        let connections: Vec<Arc<Connection>> = {
            let mut inner = self.inner();
            inner
                .servers
                .values_mut()
                .filter_map(|slot| {
                    slot.offered.clear();
                    slot.connection.take()
                })
                .collect()
        };
        let stopping: Vec<_> = connections
            .into_iter()
            .map(|connection| {
                let runtime = self.runtime.clone();
                std::thread::spawn(move || runtime.block_on(connection.close()))
            })
            .collect();
        for thread in stopping {
            // A stopping thread that panicked has nothing more to stop.
            let _ = thread.join();
        }
    }

    /// Whether the hub has no servers at all (none configured, none tried):
    /// dropping it loses nothing.
    pub fn is_empty(&self) -> bool {
        self.inner().servers.is_empty()
    }

    /// The names of the servers that offer tools now.
    pub fn running(&self) -> BTreeSet<String> {
        self.inner()
            .servers
            .values()
            .filter(|slot| slot.connection.is_some())
            .map(|slot| slot.spec.name.clone())
            .collect()
    }
}

impl Drop for Hub {
    fn drop(&mut self) {
        self.stop();
    }
}
