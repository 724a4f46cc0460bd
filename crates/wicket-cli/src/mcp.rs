//! `wicket mcp list` and `wicket mcp call`: the configured MCP servers, their
//! tools, and one call made through the gate the way `wicket tool` makes
//! one — the same `mcp` card, the same answers, the same result line.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use wicket_core::config::Config;
use wicket_core::mcp::McpSession;
use wicket_gate::{Answerer, Confinement};
use wicket_mcp::{Hub, ServerSpec, Standing, Transport, names};
use wicket_protocol::text::visible_line;
use wicket_protocol::{McpCall, result_line};
use wicket_session::{self as session, Session};
use wicket_tools::{Cancel, Tools};

/// What `wicket mcp` works with.
pub(crate) struct Setup {
    tools: Tools,
    config: Config,
    confinement: Confinement,
    rules: wicket_gate::rules::Rules,
    session: Session,
    runtime: tokio::runtime::Runtime,
}

impl Setup {
    /// The workspace, both configs, and a session (in memory unless named).
    pub(crate) fn load(
        workspace: Option<PathBuf>,
        session_id: Option<String>,
    ) -> anyhow::Result<Setup> {
        let workspace = match workspace {
            Some(dir) => dir,
            None => std::env::current_dir()?,
        };
        let tools = Tools::open(&workspace).map_err(|error| anyhow::anyhow!(error.message))?;
        let root = tools.workspace().root().to_path_buf();
        let home = session::home();
        let config = Config::load(&home, &root)?;
        let confinement = Confinement {
            sandbox: config.sandbox.clone(),
            home: home.clone(),
        };
        let session = match session_id {
            Some(id) => Session::open_or_create(&home, &id, &root, None)?.0,
            None => Session::in_memory(&root),
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()?;
        Ok(Setup {
            rules: config.gate_rules(&home),
            tools,
            config,
            confinement,
            session,
            runtime,
        })
    }

    fn hub(&self) -> Hub {
        Hub::new(self.runtime.handle().clone())
    }

    fn mcp<'a>(&'a self, hub: &'a Hub) -> McpSession<'a> {
        McpSession {
            tools: &self.tools,
            session: &self.session,
            confinement: &self.confinement,
            rules: &self.rules,
            hub,
        }
    }
}

fn describe(spec: &ServerSpec) -> String {
    let how = match &spec.transport {
        Transport::Stdio { argv, network, .. } => format!(
            "{}{}",
            argv.iter()
                .map(|arg| visible_line(arg))
                .collect::<Vec<_>>()
                .join(" "),
            match network {
                wicket_protocol::Network::Off => "",
                wicket_protocol::Network::Proxied => " (network through Wicket)",
                wicket_protocol::Network::Direct => " (direct network)",
            }
        ),
        Transport::Http { url, .. } => visible_line(url),
    };
    let from = if spec.from_workspace {
        "workspace"
    } else {
        "home"
    };
    format!("{how}  [{from} config]")
}

/// The servers `wicket mcp list` did not start because they are disabled.
fn list_disabled(out: &mut impl Write, specs: &[ServerSpec], json: bool) -> std::io::Result<()> {
    for spec in specs.iter().filter(|spec| !spec.enabled) {
        if json {
            let line = serde_json::json!({
                "type": "server", "name": spec.name, "state": "disabled",
                "detail": "enabled = false in its table", "from_workspace": spec.from_workspace,
                "tools": [],
            });
            writeln!(out, "{line}")?;
        } else {
            writeln!(
                out,
                "{}  disabled (enabled = false)  {}",
                visible_line(&spec.name),
                visible_line(&describe(spec))
            )?;
        }
    }
    Ok(())
}

/// `wicket mcp list`: starts every configured server, and says of each
/// whether it started, with what protocol, and its tools.
pub(crate) fn list(
    setup: &Setup,
    json: bool,
    answerer: &mut dyn Answerer,
) -> anyhow::Result<ExitCode> {
    let specs = &setup.config.mcp_servers;
    let mut out = std::io::stdout().lock();
    if specs.is_empty() {
        writeln!(
            out,
            "no MCP servers are configured; add a [mcp_servers.NAME] table with command (or url) to $WICKET_HOME/config.toml"
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    let hub = setup.hub();
    drop(out);
    setup.mcp(&hub).start(specs, answerer);
    let mut out = std::io::stdout().lock();
    let mut all_up = true;
    for (spec, standing, offered) in hub.standings() {
        let (state, detail) = match &standing {
            Standing::Up {
                protocol,
                server_info,
            } => ("started", format!("protocol {protocol}; {server_info}")),
            Standing::Failed(why) => ("failed", why.clone()),
            Standing::Denied(why) => ("denied", why.clone()),
            Standing::Dead(why) => ("died", why.clone()),
            Standing::Pending => ("not started", String::new()),
        };
        all_up &= matches!(standing, Standing::Up { .. });
        if json {
            let tools: Vec<serde_json::Value> = offered
                .iter()
                .map(|tool| {
                    serde_json::json!({
                        "name": tool.name, "tool": tool.tool,
                        "description": tool.description, "annotations": tool.annotations,
                    })
                })
                .collect();
            let line = serde_json::json!({
                "type": "server", "name": spec.name, "state": state, "detail": detail,
                "from_workspace": spec.from_workspace, "tools": tools,
            });
            writeln!(out, "{line}")?;
            continue;
        }
        writeln!(
            out,
            "{}  {state}  {}",
            visible_line(&spec.name),
            visible_line(&describe(&spec))
        )?;
        if !detail.is_empty() {
            writeln!(out, "  {}", visible_line(&detail))?;
        }
        for tool in &offered {
            let first_line = tool.description.lines().next().unwrap_or_default();
            writeln!(
                out,
                "  {}  {}",
                visible_line(&tool.name),
                visible_line(first_line)
            )?;
        }
    }
    list_disabled(&mut out, specs, json)?;
    drop(out);
    hub.stop();
    Ok(if all_up {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The server `server` of the config, if it may be started; else why not.
fn startable<'s>(specs: &'s [ServerSpec], server: &str) -> Result<&'s ServerSpec, String> {
    let Some(spec) = specs.iter().find(|spec| spec.name == server) else {
        let known: Vec<&str> = specs.iter().map(|spec| spec.name.as_str()).collect();
        return Err(format!(
            "there is no MCP server '{server}' in the config; the servers are: {}",
            if known.is_empty() {
                "none".to_string()
            } else {
                known.join(", ")
            }
        ));
    };
    if !spec.enabled {
        return Err(format!(
            "the MCP server '{server}' is disabled (enabled = false in its table); set enabled = true to use it"
        ));
    }
    Ok(spec)
}

/// `wicket mcp call NAME TOOL JSON`: starts the one server and makes one
/// call through the gate, printing its card and result as JSON lines.
pub(crate) fn call(
    setup: &Setup,
    server: &str,
    tool: &str,
    arguments: serde_json::Value,
    answerer: &mut dyn Answerer,
) -> anyhow::Result<ExitCode> {
    let spec = match startable(&setup.config.mcp_servers, server) {
        Ok(spec) => spec,
        Err(why) => return crate::usage_error(why),
    };
    let serde_json::Value::Object(arguments) = arguments else {
        return crate::usage_error("the arguments must be a JSON object".into());
    };
    let hub = setup.hub();
    let mcp = setup.mcp(&hub);
    mcp.start(std::slice::from_ref(spec), answerer);
    let name = names::model_name(server, tool);
    let offered = hub.find(&name).filter(|offered| offered.tool == tool);
    if offered.is_none() {
        let why = match hub.standings().into_iter().next() {
            Some((_, Standing::Up { .. }, tools)) => format!(
                "the MCP server {server} offers no tool '{tool}'; it offers: {}",
                tools
                    .iter()
                    .map(|tool| tool.tool.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Some((_, standing, _)) => {
                format!("the MCP server {server} did not start: {standing:?}")
            }
            None => format!("the MCP server {server} did not start"),
        };
        hub.stop();
        return crate::usage_error(why);
    }
    let call = McpCall {
        name,
        server: server.to_string(),
        tool: tool.to_string(),
        arguments,
    };
    let call_id = wicket_protocol::CallId::from(wicket_os::ids::new_id("call"));
    let result = mcp.call(
        &call_id,
        &call,
        wicket_gate::Hooked::Nothing,
        answerer,
        &Cancel::default(),
    );
    setup.session.sync()?;
    hub.stop();
    println!("{}", result_line(&result));
    Ok(if result.is_ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
