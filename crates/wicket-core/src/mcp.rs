//! MCP in a session: the `[mcp_servers.NAME]` tables of both configs, and
//! what a turn does with them — asks the gate which servers may start (a
//! workspace's stdio server raises a `run` card with `"source":"mcp"`
//! first), starts them on the session's [`Hub`], offers their tools, and
//! puts every call through the gate's `mcp` card.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use wicket_mcp::server::{DEFAULT_STARTUP_TIMEOUT_S, DEFAULT_TOOL_TIMEOUT_S, OpenCwd};
use wicket_mcp::{Approval, Hub, Launch, Report, ServerSpec, Transport, names};
use wicket_os::spawn::Cwd;
use wicket_protocol::{
    ErrorKind, EventBody, McpCall, RunArgs, RunSource, ToolOutput, ToolSpec, WireError,
};
use wicket_tools::tools::run::{open_dir, validate};
use wicket_tools::{Cancel, Tools, Workspace};

use crate::config::Owner;
use crate::error::{Error, Result};
use wicket_gate::sandbox::Access;
use wicket_gate::{Answerer, CommandRequest, Confinement, Gate, McpRequest};
use wicket_session::Session;

/// One `[mcp_servers.NAME]` table as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileServer {
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    cwd: Option<PathBuf>,
    #[serde(default)]
    network: bool,
    #[serde(default)]
    write_git: bool,
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    enabled_tools: Option<Vec<String>>,
    #[serde(default)]
    disabled_tools: Vec<String>,
    #[serde(default)]
    auto_allow: Vec<String>,
    startup_timeout_s: Option<u64>,
    tool_timeout_s: Option<u64>,
}

fn invalid(path: &Path, name: &str, message: impl std::fmt::Display) -> Error {
    Error::Config {
        path: path.display().to_string(),
        message: format!("[mcp_servers.{name}] {message}"),
    }
}

/// `${VAR}` in a header value, from the environment (home config only).
fn expand(path: &Path, name: &str, value: &str) -> Result<String> {
    let mut out = String::new();
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            return Err(invalid(
                path,
                name,
                format!("the header value '{value}' opens ${{ without closing it"),
            ));
        };
        let variable = &after[..end];
        let found = std::env::var(variable).map_err(|_| {
            invalid(
                path,
                name,
                format!("a header names the environment variable {variable}, which is not set; set it, or remove the header"),
            )
        })?;
        out.push_str(&found);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The servers one config file declares. The workspace's are untrusted:
/// they may not name a URL, set variables, or let a tool skip its card.
pub(crate) fn server_specs(
    servers: BTreeMap<String, FileServer>,
    owner: Owner,
    path: &Path,
) -> Result<Vec<ServerSpec>> {
    let mut specs = Vec::new();
    for (name, mut file) in servers {
        if !names::valid_server_name(&name) {
            return Err(invalid(
                path,
                &name,
                "is not a usable server name: use up to 32 letters, digits, '-' and single '_'s",
            ));
        }
        let workspace = owner == Owner::Workspace;
        let transport = match (file.command.take(), file.url.take()) {
            (Some(command), None) => stdio_transport(path, &name, command, &mut file, workspace)?,
            (None, Some(url)) => http_transport(path, &name, url, &mut file, workspace)?,
            (Some(_), Some(_)) => {
                return Err(invalid(path, &name, "has both command and url; give one"));
            }
            (None, None) => {
                return Err(invalid(
                    path,
                    &name,
                    "needs command (a stdio server) or url (Streamable HTTP)",
                ));
            }
        };
        specs.push(ServerSpec {
            name,
            transport,
            enabled_tools: file.enabled_tools.map(|tools| tools.into_iter().collect()),
            disabled_tools: file.disabled_tools.into_iter().collect(),
            // The person's own rule: a workspace's is ignored.
            auto_allow: if workspace {
                BTreeSet::new()
            } else {
                file.auto_allow.into_iter().collect()
            },
            startup_timeout: Duration::from_secs(
                file.startup_timeout_s
                    .unwrap_or(DEFAULT_STARTUP_TIMEOUT_S)
                    .max(1),
            ),
            tool_timeout: Duration::from_secs(
                file.tool_timeout_s.unwrap_or(DEFAULT_TOOL_TIMEOUT_S).max(1),
            ),
            from_workspace: workspace,
        });
    }
    Ok(specs)
}

/// A command server: its argv, and for a workspace's, no variables and a
/// cwd inside the workspace.
fn stdio_transport(
    path: &Path,
    name: &str,
    command: String,
    file: &mut FileServer,
    workspace: bool,
) -> Result<Transport> {
    if command.is_empty() {
        return Err(invalid(
            path,
            name,
            "command is empty; name the program to start",
        ));
    }
    if workspace && !file.env.is_empty() {
        return Err(invalid(
            path,
            name,
            "env may be set only in $WICKET_HOME/config.toml: the card shows a workspace server's argv, and variables would change what it runs unseen",
        ));
    }
    if let Some(cwd) = &file.cwd
        && workspace
        && (cwd.is_absolute()
            || cwd
                .components()
                .any(|c| matches!(c, std::path::Component::ParentDir)))
    {
        return Err(invalid(
            path,
            name,
            "cwd must be a folder inside the workspace, given relative to it",
        ));
    }
    if !file.headers.is_empty() {
        return Err(invalid(
            path,
            name,
            "headers are for url servers; a command server takes env",
        ));
    }
    let mut argv = vec![command];
    argv.append(&mut file.args);
    Ok(Transport::Stdio {
        argv,
        env: std::mem::take(&mut file.env).into_iter().collect(),
        cwd: file.cwd.take(),
        network: file.network,
        write_git: file.write_git,
    })
}

/// A Streamable HTTP server: the person's own only, its headers expanded.
fn http_transport(
    path: &Path,
    name: &str,
    url: String,
    file: &mut FileServer,
    workspace: bool,
) -> Result<Transport> {
    if workspace {
        return Err(invalid(
            path,
            name,
            "a url server may be declared only in $WICKET_HOME/config.toml: connecting would tell a host of the repository's choosing that you opened it",
        ));
    }
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(invalid(
            path,
            name,
            format!("url '{url}' must start with http:// or https://"),
        ));
    }
    if !file.env.is_empty() || !file.args.is_empty() || file.cwd.is_some() {
        return Err(invalid(
            path,
            name,
            "args, env and cwd are for command servers; a url server takes headers",
        ));
    }
    let mut headers = Vec::new();
    for (header, value) in std::mem::take(&mut file.headers) {
        headers.push((header, expand(path, name, &value)?));
    }
    Ok(Transport::Http { url, headers })
}

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
pub(crate) fn start_args(argv: &[String], cwd: Option<&Path>, access: Access) -> RunArgs {
    RunArgs {
        argv: argv.to_vec(),
        cwd: cwd.map(|cwd| cwd.display().to_string()),
        timeout_s: None,
        network: access.network,
        git: access.git,
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
    /// The servers.
    pub hub: &'a Hub,
}

impl McpSession<'_> {
    fn gate(&self) -> Gate<'_> {
        Gate::new(self.tools, self.session, self.confinement)
    }

    fn log(&self, report: Report) {
        // A failed append is recorded in the session, and the turn ends on
        // it at its next boundary.
        let _ = self.session.append(EventBody::Mcp {
            server: report.server,
            state: report.state,
            message: report.message,
        });
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
        for report in self.hub.start(approvals) {
            self.log(report);
        }
        // A failed sync is recorded in the session; the turn ends on it at its next boundary.
        let _ = self.session.sync();
    }

    fn approve(&self, spec: &ServerSpec, answerer: &mut dyn Answerer) -> Approval {
        let Transport::Stdio {
            argv,
            cwd,
            network,
            write_git,
            ..
        } = &spec.transport
        else {
            return Approval::Connect;
        };
        let workspace = self.tools.workspace();
        let gate = self.gate();
        let access = Access {
            network: *network,
            git: *write_git,
        };
        let args = start_args(argv, cwd.as_deref(), access);
        let opener = open_cwd(workspace.root(), cwd.as_deref(), args.clone());
        if !spec.from_workspace {
            return match gate.home_command(access) {
                Ok(confine) => Approval::Launch(Launch {
                    confine,
                    cwd: opener,
                }),
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
            source: RunSource::Mcp,
        };
        match gate.allow_command(&wicket_os::ids::new_id("mcp"), &request, answerer) {
            Ok(allowed) => Approval::Launch(Launch {
                confine: allowed.confine,
                cwd: opener,
            }),
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
        call_id: &str,
        call: &McpCall,
        answerer: &mut dyn Answerer,
        cancel: &Cancel,
    ) -> Result<ToolOutput, WireError> {
        let auto = self.hub.auto_allowed(&call.server, &call.tool);
        // Nothing is called that the log did not record.
        self.session
            .append(EventBody::ToolCall {
                call_id: call_id.to_string(),
                name: call.name.clone(),
                arguments: serde_json::Value::Object(call.arguments.clone()),
                auto_allowed: auto.then(|| {
                    format!(
                        "auto_allow of [mcp_servers.{}] in $WICKET_HOME/config.toml",
                        call.server
                    )
                }),
            })
            .map_err(wicket_gate::internal)?;
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
        let gate = self.gate();
        let result = gate.allow_mcp(call_id, &request, answerer).and_then(|()| {
            if cancel.is_cancelled() {
                return Err(WireError::new(
                    ErrorKind::Cancelled,
                    "the turn was cancelled before the call was made",
                ));
            }
            let (result, reports) =
                self.hub
                    .call(&call.server, &call.tool, call.arguments.clone(), cancel);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> BTreeMap<String, FileServer> {
        #[derive(Deserialize)]
        struct File {
            mcp_servers: BTreeMap<String, FileServer>,
        }
        toml::from_str::<File>(text).unwrap().mcp_servers
    }

    #[test]
    fn a_home_server_keeps_its_rules_and_a_workspace_one_loses_auto_allow() {
        let text = r#"
[mcp_servers.everything]
command = "node"
args = ["server.js", "stdio"]
auto_allow = ["echo"]
tool_timeout_s = 5
"#;
        let home = server_specs(parse(text), Owner::Home, Path::new("home.toml")).unwrap();
        assert_eq!(home[0].auto_allow, BTreeSet::from(["echo".to_string()]));
        assert_eq!(home[0].tool_timeout, Duration::from_secs(5));
        assert_eq!(home[0].startup_timeout, Duration::from_secs(10));
        assert_eq!(home[0].argv().unwrap(), ["node", "server.js", "stdio"]);
        let workspace = server_specs(parse(text), Owner::Workspace, Path::new("ws.toml")).unwrap();
        assert!(workspace[0].auto_allow.is_empty());
        assert!(workspace[0].from_workspace);
    }

    #[test]
    fn a_workspace_may_not_name_a_url_set_env_or_leave_the_workspace() {
        for (text, says) in [
            (
                "[mcp_servers.x]\nurl = \"http://127.0.0.1:1/mcp\"",
                "only in $WICKET_HOME",
            ),
            (
                "[mcp_servers.x]\ncommand = \"node\"\nenv = { NODE_OPTIONS = \"--require ./x.js\" }",
                "env may be set only",
            ),
            (
                "[mcp_servers.x]\ncommand = \"node\"\ncwd = \"../elsewhere\"",
                "inside the workspace",
            ),
            (
                "[mcp_servers.x]\ncommand = \"node\"\ncwd = \"/etc\"",
                "inside the workspace",
            ),
        ] {
            let error =
                server_specs(parse(text), Owner::Workspace, Path::new("ws.toml")).unwrap_err();
            assert!(error.to_string().contains(says), "{text}: {error}");
        }
    }

    #[test]
    fn bad_tables_say_what_is_wrong() {
        for (text, says) in [
            (
                "[mcp_servers.\"a__b\"]\ncommand = \"x\"",
                "not a usable server name",
            ),
            (
                "[mcp_servers.x]\ncommand = \"x\"\nurl = \"http://h/\"",
                "both command and url",
            ),
            ("[mcp_servers.x]\nargs = [\"a\"]", "needs command"),
            (
                "[mcp_servers.x]\nurl = \"ftp://h/\"",
                "must start with http",
            ),
            (
                "[mcp_servers.x]\nurl = \"http://h/\"\nheaders = { A = \"${WICKET_TEST_SURELY_UNSET}\" }",
                "WICKET_TEST_SURELY_UNSET, which is not set",
            ),
        ] {
            let error = server_specs(parse(text), Owner::Home, Path::new("home.toml")).unwrap_err();
            assert!(error.to_string().contains(says), "{text}: {error}");
        }
    }

    #[test]
    fn header_values_name_environment_variables() {
        // PATH is set in every test environment.
        let path = std::env::var("PATH").unwrap();
        let text = "[mcp_servers.x]\nurl = \"http://h/mcp\"\nheaders = { Authorization = \"Bearer ${PATH}!\" }";
        let specs = server_specs(parse(text), Owner::Home, Path::new("home.toml")).unwrap();
        let Transport::Http { headers, .. } = &specs[0].transport else {
            panic!("not http")
        };
        assert_eq!(
            headers[0],
            ("Authorization".to_string(), format!("Bearer {path}!"))
        );
    }
}
