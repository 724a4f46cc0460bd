//! One live server: its process (for a stdio server), the rmcp client over
//! it, the tools it listed, and the tail of what it said on stderr. Dropping
//! a connection closes it and stops the process: TERM to its group, then KILL.

use std::collections::HashMap;
use std::io::Read;
use std::os::fd::OwnedFd;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ContentBlock,
    Implementation, ProtocolVersion, ResourceContents, Tool,
};
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{Peer, RoleClient, ServiceError, ServiceExt};
use wicket_os::spawn::{self, Running, Spec};
use wicket_protocol::{McpContent, McpOutput, text};

use crate::server::{Launch, ServerSpec, Transport};

/// How much of a server's stderr is kept, for the error when it fails.
const STDERR_TAIL_BYTES: usize = 2048;

/// Why a server could not be reached or a call did not come back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// The server is gone: its process exited or its stream closed.
    Died(String),
    /// Anything else, said as the model and the person should read it.
    Error(String),
}

impl Failure {
    /// The message.
    pub fn message(&self) -> &str {
        match self {
            Failure::Died(message) | Failure::Error(message) => message,
        }
    }
}

/// The last bytes a stdio server wrote to stderr.
#[derive(Clone, Default)]
struct StderrTail(Arc<Mutex<Vec<u8>>>);

impl StderrTail {
    /// Drains `stream` on its own thread until it ends.
    fn drain(&self, mut stream: impl Read + Send + 'static) {
        let tail = self.0.clone();
        // No thread for it: the server's stderr is left unread, and only its tail in errors is lost.
        let _ = std::thread::Builder::new()
            .name("wicket-mcp-stderr".into())
            .spawn(move || {
                let mut buffer = [0u8; 4096];
                while let Ok(read) = stream.read(&mut buffer) {
                    if read == 0 {
                        break;
                    }
                    let Ok(mut kept) = tail.lock() else { break };
                    kept.extend_from_slice(&buffer[..read]);
                    let over = kept.len().saturating_sub(STDERR_TAIL_BYTES);
                    kept.drain(..over);
                }
            });
    }

    /// `: <last lines of stderr>`, or nothing when it said nothing.
    fn said(&self) -> String {
        let kept = self.0.lock().map(|kept| kept.clone()).unwrap_or_default();
        let said = String::from_utf8_lossy(&kept);
        let said = said.trim();
        if said.is_empty() {
            String::new()
        } else {
            format!("; its stderr ends: {}", text::visible_line(said))
        }
    }
}

/// A started server.
pub struct Connection {
    service: Mutex<Option<RunningService<RoleClient, ClientConfig>>>,
    peer: Peer<RoleClient>,
    process: Option<Mutex<Running>>,
    stderr: StderrTail,
    /// The protocol version the server answered `initialize` with.
    pub protocol: String,
    /// The server's name for itself and its version.
    pub server_info: String,
    /// Every tool it listed (the config's filters are applied later).
    pub tools: Vec<Tool>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Connection")
            .field("protocol", &self.protocol)
            .field("tools", &self.tools.len())
            .finish_non_exhaustive()
    }
}

fn client_config() -> ClientConfig {
    // Pinned: the last version with the `initialize` handshake every
    // server we meet speaks; a newer server answers with what it takes.
    ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("wicket", env!("CARGO_PKG_VERSION")),
    )
    .with_protocol_version(ProtocolVersion::V_2025_11_25)
}

/// An rmcp error in words: what failed and why, never the Rust type names
/// rmcp's own text carries (`Transport [rmcp::transport::worker::
/// WorkerTransport<…>] error: …`): a transport's error is said by its
/// context and its cause.
fn in_words(error: &(dyn std::error::Error + 'static)) -> String {
    if let Some(rmcp::service::ClientInitializeError::TransportError { error, context }) =
        error.downcast_ref::<rmcp::service::ClientInitializeError>()
    {
        return format!("{context}: {}", in_words(error));
    }
    if let Some(ServiceError::TransportSend(error)) = error.downcast_ref::<ServiceError>() {
        return format!("sending to the server: {}", in_words(error));
    }
    if let Some(error) = error.downcast_ref::<rmcp::transport::DynamicTransportError>() {
        return in_words(error.error.as_ref());
    }
    without_type_names(&error.to_string())
}

/// `text` without a bracketed Rust path (`[rmcp::…<…>] `), where an error
/// nested deeper than [`in_words`] looks still names one.
fn without_type_names(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find('[') {
        let Some(length) = rest[start..].find("] ") else {
            break;
        };
        let inner = &rest[start + 1..start + length];
        out.push_str(&rest[..start]);
        if !inner.contains("::") {
            out.push_str(&rest[start..start + length + 2]);
        }
        rest = &rest[start + length + 2..];
    }
    out.push_str(rest);
    out
}

fn pipe_error(what: &str, error: std::io::Error) -> Failure {
    Failure::Error(format!("connecting to the server's {what}: {error}"))
}

/// The MCP handshake over a byte stream pair (a process's stdout and
/// stdin), within `timeout`.
async fn handshake<R, W>(
    read: R,
    write: W,
    timeout: Duration,
    tail: &StderrTail,
) -> Result<RunningService<RoleClient, ClientConfig>, Failure>
where
    R: tokio::io::AsyncRead + Send + Unpin + 'static,
    W: tokio::io::AsyncWrite + Send + Unpin + 'static,
{
    match tokio::time::timeout(timeout, client_config().serve((read, write))).await {
        Ok(Ok(service)) => Ok(service),
        Ok(Err(error)) => {
            // Give a crashing server a moment to say why.
            tokio::time::sleep(Duration::from_millis(50)).await;
            Err(Failure::Error(format!(
                "the server did not complete the MCP handshake: {}{}",
                in_words(&error),
                tail.said()
            )))
        }
        Err(_) => Err(Failure::Error(format!(
            "the server did not answer `initialize` within {} s (startup_timeout_s){}",
            timeout.as_secs(),
            tail.said()
        ))),
    }
}

impl Connection {
    /// Starts `spec` (a stdio server through the one spawning module,
    /// launched as `launch` says; an HTTP server over Streamable HTTP),
    /// runs the handshake and lists its tools, all within the startup
    /// timeout.
    pub async fn open(spec: &ServerSpec, launch: Option<&Launch>) -> Result<Connection, Failure> {
        let timeout = spec.startup_timeout;
        match &spec.transport {
            Transport::Stdio { argv, env, .. } => {
                let launch = launch
                    .ok_or_else(|| Failure::Error("the server was not allowed to start".into()))?;
                let cwd = (launch.cwd)().map_err(|error| Failure::Error(error.message))?;
                let mut running = spawn::start(Spec {
                    env: env.clone(),
                    confine: launch.confine.clone(),
                    egress: launch.egress.clone(),
                    ..Spec::new(argv.clone(), cwd)
                })
                .map_err(|error| Failure::Error(error.to_string()))?;
                let child = running.child_mut();
                let (Some(stdin), Some(stdout), Some(stderr)) =
                    (child.stdin.take(), child.stdout.take(), child.stderr.take())
                else {
                    return Err(Failure::Error("the server's pipes were not made".into()));
                };
                let tail = StderrTail::default();
                tail.drain(stderr);
                let stdin = tokio::net::unix::pipe::Sender::from_owned_fd(OwnedFd::from(stdin))
                    .map_err(|error| pipe_error("stdin", error))?;
                let stdout = tokio::net::unix::pipe::Receiver::from_owned_fd(OwnedFd::from(stdout))
                    .map_err(|error| pipe_error("stdout", error))?;
                let service = handshake(stdout, stdin, timeout, &tail).await?;
                Connection::ready(service, Some(running), tail, timeout).await
            }
            Transport::Http { url, headers } => {
                wicket_chat::tls::install();
                let mut custom = HashMap::new();
                for (name, value) in headers {
                    let name = reqwest::header::HeaderName::from_bytes(name.as_bytes())
                        .map_err(|_| Failure::Error(format!("'{name}' is not a header name")))?;
                    let value = reqwest::header::HeaderValue::from_str(value).map_err(|_| {
                        Failure::Error(format!("the value of the header '{name}' is not valid"))
                    })?;
                    custom.insert(name, value);
                }
                let client = reqwest::Client::builder()
                    .connect_timeout(timeout)
                    .redirect(same_origin_redirects(url))
                    .build()
                    .map_err(|error| Failure::Error(format!("making an HTTP client: {error}")))?;
                let config = StreamableHttpClientTransportConfig::with_uri(url.as_str())
                    .custom_headers(custom);
                let transport = StreamableHttpClientTransport::with_client(client, config);
                let service =
                    match tokio::time::timeout(timeout, client_config().serve(transport)).await {
                        Ok(Ok(service)) => service,
                        Ok(Err(error)) => {
                            return Err(Failure::Error(format!(
                                "the MCP handshake with {url} failed: {}",
                                in_words(&error)
                            )));
                        }
                        Err(_) => {
                            return Err(Failure::Error(format!(
                                "{url} did not answer `initialize` within {} s (startup_timeout_s)",
                                timeout.as_secs()
                            )));
                        }
                    };
                Connection::ready(service, None, StderrTail::default(), timeout).await
            }
        }
    }

    /// A server on the other end of `read` and `write` (a stream pair the
    /// caller made: a fake in a test), with no process of its own.
    pub async fn over<R, W>(read: R, write: W, timeout: Duration) -> Result<Connection, Failure>
    where
        R: tokio::io::AsyncRead + Send + Unpin + 'static,
        W: tokio::io::AsyncWrite + Send + Unpin + 'static,
    {
        let tail = StderrTail::default();
        let service = handshake(read, write, timeout, &tail).await?;
        Connection::ready(service, None, tail, timeout).await
    }

    async fn ready(
        service: RunningService<RoleClient, ClientConfig>,
        process: Option<Running>,
        stderr: StderrTail,
        timeout: Duration,
    ) -> Result<Connection, Failure> {
        let peer = service.peer().clone();
        let (protocol, server_info) = match service.peer_info() {
            Some(info) => (
                info.protocol_version.as_str().to_string(),
                info.server_info
                    .as_ref()
                    .map(|server| format!("{} {}", server.name, server.version))
                    .unwrap_or_default(),
            ),
            None => (String::new(), String::new()),
        };
        let tools = match tokio::time::timeout(timeout, peer.list_all_tools()).await {
            Ok(Ok(tools)) => tools,
            Ok(Err(error)) => {
                return Err(Failure::Error(format!(
                    "the server did not list its tools: {}{}",
                    in_words(&error),
                    stderr.said()
                )));
            }
            Err(_) => {
                return Err(Failure::Error(format!(
                    "the server did not list its tools within {} s (startup_timeout_s)",
                    timeout.as_secs()
                )));
            }
        };
        Ok(Connection {
            service: Mutex::new(Some(service)),
            peer,
            process: process.map(Mutex::new),
            stderr,
            protocol,
            server_info,
            tools,
        })
    }

    /// Calls `tool`, giving up after `timeout`. Dropping the future (a
    /// cancel) sends the server `notifications/cancelled` for the call.
    pub async fn call(
        &self,
        server: &str,
        tool: &str,
        arguments: serde_json::Map<String, serde_json::Value>,
        timeout: Duration,
    ) -> Result<McpOutput, Failure> {
        let params = CallToolRequestParams::new(tool.to_string()).with_arguments(arguments);
        let result = match tokio::time::timeout(timeout, self.peer.call_tool(params)).await {
            Ok(result) => result,
            Err(_) => {
                return Err(Failure::Error(format!(
                    "the tool {tool} of the MCP server {server} did not answer within {} s (tool_timeout_s); the call was cancelled",
                    timeout.as_secs()
                )));
            }
        };
        match result {
            Ok(result) => output(server, tool, result),
            Err(ServiceError::TransportClosed | ServiceError::TransportSend(_)) => {
                // Let the process be reaped, so what it said is complete.
                tokio::time::sleep(Duration::from_millis(20)).await;
                Err(Failure::Died(format!(
                    "the MCP server {server} stopped during the call to {tool}{}{}",
                    self.exit_note(),
                    self.stderr.said()
                )))
            }
            Err(error) => Err(Failure::Error(format!(
                "the MCP server {server} answered the call to {tool} with an error: {}",
                in_words(&error)
            ))),
        }
    }

    fn exit_note(&self) -> String {
        let Some(process) = &self.process else {
            return String::new();
        };
        let Ok(mut process) = process.lock() else {
            return String::new();
        };
        if process.exited() {
            " (its process exited)".into()
        } else {
            String::new()
        }
    }

    /// Closes the session with the server (its stdin, for a stdio server),
    /// then stops the process: TERM to its group, then KILL.
    pub async fn close(&self) {
        let service = self.service.lock().ok().and_then(|mut held| held.take());
        if let Some(mut service) = service {
            // A server that does not close its session in time is stopped by its process below (TERM, then KILL).
            let _ = service.close_with_timeout(Duration::from_millis(500)).await;
        }
        if let Some(process) = &self.process
            && let Ok(mut process) = process.lock()
        {
            process.stop();
        }
    }
}

/// A `CallToolResult` as Wicket's output: `isError` is an error whose
/// message is the server's text (the log keeps it whole).
fn output(server: &str, tool: &str, result: CallToolResult) -> Result<McpOutput, Failure> {
    let content: Vec<McpContent> = result.content.into_iter().filter_map(content).collect();
    let output = McpOutput {
        server: server.to_string(),
        tool: tool.to_string(),
        content,
        structured: result.structured_content,
    };
    if result.is_error == Some(true) {
        return Err(Failure::Error(format!(
            "the tool {tool} of the MCP server {server} reported an error: {}",
            output.full_text()
        )));
    }
    Ok(output)
}

fn content(block: ContentBlock) -> Option<McpContent> {
    Some(match block {
        ContentBlock::Text(text) => McpContent::Text { text: text.text },
        ContentBlock::Image(image) => McpContent::Image {
            data: image.data,
            mime_type: image.mime_type,
        },
        ContentBlock::Audio(audio) => McpContent::Audio {
            data: audio.data,
            mime_type: audio.mime_type,
        },
        ContentBlock::ResourceLink(link) => McpContent::ResourceLink {
            uri: link.uri,
            name: link.name,
        },
        ContentBlock::Resource(embedded) => match embedded.resource {
            ResourceContents::TextResourceContents { uri, text, .. } => McpContent::Resource {
                uri,
                text: Some(text),
            },
            ResourceContents::BlobResourceContents { uri, .. } => {
                McpContent::Resource { uri, text: None }
            }
            #[allow(unreachable_patterns)]
            _ => return None,
        },
        #[allow(unreachable_patterns)]
        _ => return None,
    })
}

/// Redirects an HTTP server may send: only to the same origin (scheme,
/// host and port), at most [`MAX_REDIRECTS`]. The config's headers (a
/// token, most often) go with every request, so a redirect to another
/// host would hand them over.
fn same_origin_redirects(url: &str) -> reqwest::redirect::Policy {
    let origin = reqwest::Url::parse(url).ok().map(|url| url.origin());
    reqwest::redirect::Policy::custom(move |attempt| {
        if attempt.previous().len() >= MAX_REDIRECTS {
            return attempt.error(format!("more than {MAX_REDIRECTS} redirects"));
        }
        match &origin {
            Some(origin) if attempt.url().origin() == *origin => attempt.follow(),
            _ => attempt.stop(),
        }
    })
}

/// Redirects followed within one origin.
const MAX_REDIRECTS: usize = 5;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_transport_failure_is_said_in_words_without_rust_type_names() {
        let transport = "rmcp::transport::worker::WorkerTransport<rmcp::transport::streamable_http_client::StreamableHttpClientWorker<reqwest::async_impl::client::Client>>";
        let cause = std::io::Error::new(
            std::io::ErrorKind::ConnectionRefused,
            "error sending request for url (http://127.0.0.1:1/mcp)",
        );
        let error = rmcp::service::ClientInitializeError::TransportError {
            error: rmcp::transport::DynamicTransportError::from_parts(
                transport,
                std::any::TypeId::of::<()>(),
                Box::new(cause),
            ),
            context: "send initialize request".into(),
        };
        assert!(
            error.to_string().contains("rmcp::"),
            "rmcp's own text names the type"
        );
        let said = in_words(&error);
        assert_eq!(
            said,
            "send initialize request: error sending request for url (http://127.0.0.1:1/mcp)"
        );
        assert_eq!(
            without_type_names("Transport [a::B<c::D>] error: gone [3 tries] left"),
            "Transport error: gone [3 tries] left"
        );
    }
}
