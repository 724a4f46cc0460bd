//! MCP in a session: what a turn does with the servers the configs name
//! (`config::mcp_servers` reads their tables) — asks the gate which servers may start (a
//! workspace's stdio server raises a `run` card with `"source":"mcp"`
//! first), starts them on the session's [`Hub`], offers their tools, and
//! puts every call through the gate's `mcp` card.

use std::path::Path;
use std::sync::Arc;

use wicket_mcp::server::OpenCwd;
use wicket_mcp::{Approval, Hub, Launch, Report, ServerSpec, Transport};
use wicket_os::spawn::Cwd;
use wicket_protocol::{
    CallId, ErrorKind, EventBody, McpCall, Network, RunArgs, RunSource, ToolOutput, ToolSpec,
    WireError,
};
use wicket_tools::tools::run::{open_dir, validate};
use wicket_tools::{Cancel, Tools, Workspace};

use wicket_gate::{Answerer, CommandRequest, Confinement, Gate, McpRequest};
use wicket_os::egress::Egress;
use wicket_protocol::event::{McpEvent, ToolCallEvent};
use wicket_session::Session;

/// The tools a hub offers, as the model is told of them.
pub fn tool_specs(hub: &Hub) -> Vec<ToolSpec> {
    hub.offered()
        .into_iter()
        .map(|offered| ToolSpec {
            name: offered.name,
            description: offered.description,
            parameters: offered.schema,
        })
        .collect()
}

/// The `run` arguments a stdio server's start is checked as: its argv, and
/// its folder inside the workspace.
pub(crate) fn start_args(argv: &[String], cwd: Option<&Path>) -> RunArgs {
    RunArgs {
        argv: argv.to_vec(),
        cwd: cwd.map(|cwd| cwd.display().to_string()),
        ..RunArgs::default()
    }
}

/// Opens a server's folder afresh for each start: a folder inside the
/// workspace through the resolver, or the home config's absolute path.
pub(crate) fn open_cwd(root: &Path, cwd: Option<&Path>, args: RunArgs) -> OpenCwd {
    if let Some(absolute) = cwd.filter(|cwd| cwd.is_absolute()) {
        let absolute = absolute.to_path_buf();
        return Arc::new(move || Ok(Cwd::Path(absolute.clone())));
    }
    let root = root.to_path_buf();
    Arc::new(move || {
        let workspace =
            Workspace::open(&root).map_err(|error| WireError::new(ErrorKind::Io, error.message))?;
        let (fd, _) = open_dir(&workspace, &args)?;
        Ok(Cwd::Fd(fd))
    })
}

/// A server the turn may not start, and why.
pub(crate) fn refused(denied: bool, message: impl Into<String>) -> Approval {
    Approval::Refused {
        denied,
        message: message.into(),
    }
}

/// A session's MCP servers with what they need from it: the workspace, the
/// log, and the sandbox its commands run in. The turn and `wicket mcp` both
/// go through here.
pub struct McpSession<'a> {
    /// The workspace's tools (its root, the resolver).
    pub tools: &'a Tools,
    /// The session: cards, answers, calls and `mcp` events go in its log.
    pub session: &'a Session,
    /// The sandbox.
    pub confinement: &'a Confinement,
    /// The person's rules.
    pub rules: &'a wicket_gate::rules::Rules,
    /// The servers.
    pub hub: &'a Hub,
}

impl McpSession<'_> {
    fn gate(&self) -> Gate<'_> {
        Gate::new(self.tools, self.session, self.confinement, self.rules)
    }

    /// What a server with a network through Wicket does with each of its
    /// connections: served on a thread of its own, asking the hub's desk.
    fn egress(&self, server: &str, network: Network) -> Option<Egress> {
        if network != Network::Proxied {
            return None;
        }
        let desk = self.hub.desk().clone();
        let server = server.to_string();
        Some(Egress(Arc::new(move |client| {
            let (desk, server) = (desk.clone(), server.clone());
            std::thread::spawn(move || desk.serve(&server, client));
        })))
    }

    fn log(&self, report: Report) {
        self.session.recorded().append(EventBody::Mcp(McpEvent {
            server: report.server,
            state: report.state,
            message: report.message,
        }));
    }

    /// Starts the servers of `specs` not tried yet in this session (a
    /// workspace's stdio server only after its `run` card), concurrently;
    /// each outcome is an `mcp` event, and one that fails holds up no other.
    pub fn start(&self, specs: &[ServerSpec], answerer: &mut dyn Answerer) {
        self.hub.configure(specs.to_vec());
        self.hub.begin_turn();
        let pending = self.hub.pending();
        if pending.is_empty() {
            return;
        }
        let approvals = pending
            .iter()
            .map(|spec| (spec.name.clone(), self.approve(spec, answerer)))
            .collect();
        // A server may reach a host while it starts: the start holds the desk.
        let starting: CallId = wicket_os::ids::new_id("mcp").into();
        let reports = self
            .gate()
            .with_desk(self.hub.desk(), &starting, answerer, || {
                self.hub.start(approvals)
            });
        for report in reports {
            self.log(report);
        }
        self.session.recorded().sync();
    }

    fn approve(&self, spec: &ServerSpec, answerer: &mut dyn Answerer) -> Approval {
        if let Some(why) = &spec.fails {
            return refused(false, why.clone());
        }
        let Transport::Stdio {
            argv,
            cwd,
            network,
            write_git,
            read,
            ..
        } = &spec.transport
        else {
            return Approval::Connect;
        };
        let workspace = self.tools.workspace();
        let gate = self.gate();
        let args = start_args(argv, cwd.as_deref());
        let opener = open_cwd(workspace.root(), cwd.as_deref(), args.clone());
        if !spec.from_workspace {
            return match gate.home_command(*network, *write_git, read) {
                Ok(confine) => Approval::Launch(Box::new(Launch {
                    confine,
                    cwd: opener,
                    egress: self.egress(&spec.name, *network),
                })),
                Err(error) => refused(false, error.message),
            };
        }
        let dir = match validate(workspace, &args) {
            Ok(dir) => dir,
            Err(error) => return refused(false, error.message),
        };
        let request = CommandRequest {
            tool: "run",
            argv,
            dir: &dir,
            timeout_s: None,
            network: *network,
            git: *write_git,
            read,
            source: RunSource::Mcp,
            preview: false,
        };
        match gate.allow_command(&wicket_os::ids::new_id("mcp").into(), &request, answerer) {
            Ok(allowed) => Approval::Launch(Box::new(Launch {
                confine: allowed.confine,
                cwd: opener,
                egress: self.egress(&spec.name, *network),
            })),
            Err(error) if error.kind == ErrorKind::Denied => refused(
                true,
                "the person did not allow this workspace server to start; its tools are not offered",
            ),
            Err(error) => refused(false, error.message),
        }
    }

    /// One call of an MCP tool: logged as the model made it, through the
    /// gate's `mcp` card (unless the person's own `auto_allow` names the
    /// tool, which the call's log line says), then to the server; the
    /// whole result goes in the log.
    pub fn call(
        &self,
        call_id: &CallId,
        call: &McpCall,
        hooked: wicket_gate::Hooked,
        answerer: &mut dyn Answerer,
        cancel: &Cancel,
    ) -> Result<ToolOutput, WireError> {
        let auto = self.hub.auto_allowed(&call.server, &call.tool);
        let annotations = self
            .hub
            .find(&call.name)
            .and_then(|offered| offered.annotations);
        let request = McpRequest {
            server: &call.server,
            tool: &call.tool,
            arguments: &call.arguments,
            annotations: annotations.as_ref(),
            auto_allowed: auto,
        };
        let gate = self.gate().hooked(hooked);
        let (auto_allowed, allowed_by) = gate.mcp_passage(&request);
        // Nothing is called that the log did not record.
        self.session
            .append(EventBody::ToolCall(ToolCallEvent {
                call_id: call_id.clone(),
                name: call.name.clone(),
                arguments: serde_json::Value::Object(call.arguments.clone()),
                auto_allowed: auto_allowed.then(|| {
                    format!(
                        "auto_allow of [mcp_servers.{}] in $WICKET_HOME/config.toml",
                        call.server
                    )
                }),
                allowed_by,
            }))
            .map_err(wicket_gate::internal)?;
        let result = gate.allow_mcp(call_id, &request, answerer).and_then(|()| {
            if cancel.is_cancelled() {
                return Err(WireError::new(
                    ErrorKind::Cancelled,
                    "the turn was cancelled before the call was made",
                ));
            }
            // The server's connections through Wicket ask while the call runs.
            let (result, reports) = gate.with_desk(self.hub.desk(), call_id, answerer, || {
                self.hub
                    .call(&call.server, &call.tool, call.arguments.clone(), cancel)
            });
            for report in reports {
                self.log(report);
            }
            result.map(ToolOutput::Mcp)
        });
        // A result that cannot be logged is recorded in the session, and
        // the turn ends on it before its next call.
        let _ = gate.log_result(call_id, &result);
        result
    }
}
