//! The `[mcp_servers.NAME]` tables of both configs, read into the specs a
//! session starts its servers from: a workspace's may declare only a
//! command server, with no environment and a cwd inside the workspace.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use wicket_mcp::server::{DEFAULT_STARTUP_TIMEOUT_S, DEFAULT_TOOL_TIMEOUT_S};
use wicket_mcp::{ServerSpec, Transport, names};

use super::Owner;
use crate::error::{Error, Result};

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
    network: wicket_protocol::Network,
    #[serde(default)]
    write_git: bool,
    #[serde(default)]
    read: Vec<String>,
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    enabled: Option<bool>,
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

/// `${VAR}` in a header value, from the environment (home config only);
/// `Ok(Err(VAR))` names the first variable that is not set.
fn expand(path: &Path, name: &str, value: &str) -> Result<std::result::Result<String, String>> {
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
        let Ok(found) = std::env::var(variable) else {
            return Ok(Err(variable.to_string()));
        };
        out.push_str(&found);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(Ok(out))
}

/// What a server whose header names an unset variable says: it fails
/// alone, as in Claude Code, and Wicket goes on.
pub(crate) fn unset_variable(name: &str, variable: &str) -> String {
    format!(
        "the MCP server {name} does not start: a header of [mcp_servers.{name}] names the \
         environment variable {variable}, which is not set; set it and start Wicket again, or \
         remove the header"
    )
}

/// The servers one config file declares. The workspace's are untrusted:
/// they may not name a URL, set variables, or let a tool skip its card.
/// A disabled one (`enabled = false`) keeps its name and is never started,
/// so its headers are not expanded: a variable it names that is unset
/// stops nothing while the server is off.
pub(crate) fn server_specs(
    servers: BTreeMap<String, FileServer>,
    owner: Owner,
    path: &Path,
) -> Result<Vec<ServerSpec>> {
    let mut specs = Vec::new();
    for (name, mut file) in servers {
        let mut fails = None;
        if !names::valid_server_name(&name) {
            return Err(invalid(
                path,
                &name,
                "is not a usable server name: use up to 32 letters, digits, '-' and single '_'s",
            ));
        }
        let workspace = owner == Owner::Workspace;
        let enabled = file.enabled.unwrap_or(true);
        let transport = match (file.command.take(), file.url.take()) {
            (Some(command), None) => stdio_transport(path, &name, command, &mut file, workspace)?,
            (None, Some(url)) => {
                http_transport(path, &name, url, &mut file, workspace, enabled, &mut fails)?
            }
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
            enabled,
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
            fails,
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
        read: std::mem::take(&mut file.read),
    })
}

/// A Streamable HTTP server: the person's own only, its headers expanded
/// (when it is `enabled`; a disabled one's are kept as written). A header
/// naming a variable that is not set leaves it as written and says in
/// `fails` why the server cannot start.
fn http_transport(
    path: &Path,
    name: &str,
    url: String,
    file: &mut FileServer,
    workspace: bool,
    enabled: bool,
    fails: &mut Option<String>,
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
        let value = match enabled {
            true => match expand(path, name, &value)? {
                Ok(expanded) => expanded,
                Err(variable) => {
                    fails.get_or_insert_with(|| unset_variable(name, &variable));
                    value
                }
            },
            false => value,
        };
        headers.push((header, value));
    }
    Ok(Transport::Http { url, headers })
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
    fn a_disabled_server_is_declared_off_and_its_unset_variables_stop_nothing() {
        let text = r#"
[mcp_servers.off]
url = "http://h/mcp"
headers = { Authorization = "Bearer ${WICKET_TEST_SURELY_UNSET}" }
enabled = false

[mcp_servers.on]
command = "node"
enabled = true
enabled_tools = ["read", "write"]
disabled_tools = ["write"]
"#;
        let specs = server_specs(parse(text), Owner::Home, Path::new("home.toml")).unwrap();
        let by_name = |name: &str| specs.iter().find(|spec| spec.name == name).unwrap();
        assert!(!by_name("off").enabled);
        assert!(by_name("on").enabled);
        assert!(by_name("on").offers("read") && !by_name("on").offers("write"));
        assert_eq!(by_name("off").fails, None);
        let on = server_specs(
            parse(&text.replace("enabled = false", "enabled = true")),
            Owner::Home,
            Path::new("home.toml"),
        )
        .unwrap();
        let fails = on[0].fails.as_deref().unwrap();
        assert!(fails.contains("WICKET_TEST_SURELY_UNSET"), "{fails}");
        assert_eq!(on[1].fails, None, "the other server is as it was");
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
