//! Servers on 127.0.0.1 for the egress proxy's tests (wicket-net's own,
//! and the binary's through the jail): an HTTP server that counts every
//! byte and accept, an HTTPS one with a CA made for the test, and the
//! check that the clients the tests drive are installed.
#![allow(clippy::disallowed_methods)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// How long a test waits for something that should come at once, before it
/// fails instead of hanging.
pub const PATIENCE: Duration = Duration::from_secs(60);

/// Things that arrive from other threads, waited for by count.
pub struct Records<T> {
    items: Mutex<Vec<T>>,
    arrived: Condvar,
}

impl<T: Clone> Records<T> {
    /// None yet.
    pub fn new() -> Arc<Self> {
        Arc::new(Self {
            items: Mutex::new(Vec::new()),
            arrived: Condvar::new(),
        })
    }

    /// One more, and wakes whoever waits.
    pub fn push(&self, item: T) {
        self.items.lock().unwrap().push(item);
        self.arrived.notify_all();
    }

    /// The first `count` items, once there are that many.
    pub fn wait_for(&self, count: usize) -> Vec<T> {
        let deadline = Instant::now() + PATIENCE;
        let mut items = self.items.lock().unwrap();
        while items.len() < count {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero(),
                "waited {PATIENCE:?} for {count} records, have {}",
                items.len()
            );
            items = self.arrived.wait_timeout(items, left).unwrap().0;
        }
        items[..count].to_vec()
    }

    /// Those there are now.
    pub fn now(&self) -> Vec<T> {
        self.items.lock().unwrap().clone()
    }
}

/// What the upstream server saw of one connection.
#[derive(Debug, Clone)]
pub struct Served {
    /// The request head as it arrived.
    pub head: String,
    /// Every byte read from the connection, to its end.
    pub received: u64,
    /// Every byte written to it.
    pub sent: u64,
}

/// An HTTP server on 127.0.0.1 that answers each request with one body,
/// closes, and counts its accepts and every byte each way.
pub struct Upstream {
    address: SocketAddr,
    accepts: Arc<AtomicUsize>,
    served: Arc<Records<Served>>,
}

impl Upstream {
    /// Answers every request with `body`.
    pub fn start(body: &[u8]) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        let accepts = Arc::new(AtomicUsize::new(0));
        let served = Records::new();
        let response = [
            format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            )
            .as_bytes(),
            body,
        ]
        .concat();
        let response = Arc::new(response);
        let (counter, records) = (accepts.clone(), served.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                counter.fetch_add(1, Ordering::SeqCst);
                let (response, records) = (response.clone(), records.clone());
                std::thread::spawn(move || {
                    if let Some(served) = answer(stream, &response) {
                        records.push(served);
                    }
                });
            }
        });
        Self {
            address,
            accepts,
            served,
        }
    }

    /// Its port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.address.port()
    }

    /// How many connections reached it.
    pub fn accepts(&self) -> usize {
        self.accepts.load(Ordering::SeqCst)
    }

    /// The first `count` connections it served, once they have ended.
    pub fn served(&self, count: usize) -> Vec<Served> {
        self.served.wait_for(count)
    }
}

/// Reads a request head, writes the response, ends its sending, and reads
/// to the end, counting.
fn answer(mut stream: TcpStream, response: &[u8]) -> Option<Served> {
    stream.set_read_timeout(Some(PATIENCE)).ok()?;
    let mut received = Vec::new();
    let mut buffer = [0; 16 * 1024];
    while !received.windows(4).any(|w| w == b"\r\n\r\n") {
        let count = stream.read(&mut buffer).ok()?;
        if count == 0 {
            return None;
        }
        received.extend_from_slice(&buffer[..count]);
    }
    let end = received.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let head = String::from_utf8_lossy(&received[..end]).into_owned();
    stream.write_all(response).ok()?;
    stream.shutdown(std::net::Shutdown::Write).ok()?;
    let mut rest = Vec::new();
    stream.read_to_end(&mut rest).ok()?;
    Some(Served {
        head,
        received: (received.len() + rest.len()) as u64,
        sent: response.len() as u64,
    })
}

/// Whether `tool` is on `PATH`. A missing tool fails the test, since CI
/// has them all; with `WICKET_TEST_SKIP_MISSING_TOOLS=1` the test says it
/// is skipped, and why, and returns.
pub fn have(tool: &str) -> bool {
    let found = std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(tool).is_file()));
    if found {
        return true;
    }
    let skip = std::env::var_os("WICKET_TEST_SKIP_MISSING_TOOLS").is_some_and(|v| v == "1");
    assert!(
        skip,
        "{tool} is not on PATH: install it, or set WICKET_TEST_SKIP_MISSING_TOOLS=1 to skip the tests that need it"
    );
    eprintln!("SKIPPED: {tool} is not on PATH (WICKET_TEST_SKIP_MISSING_TOOLS=1)");
    false
}

/// An HTTPS server on 127.0.0.1 (python3's `ssl`) with a certificate for
/// `localhost` from a CA made for the test (the `openssl` CLI).
pub struct TlsServer {
    child: Child,
    /// Its port on 127.0.0.1.
    pub port: u16,
    /// The CA that signed its certificate, a PEM file.
    pub ca: String,
    _dir: tempfile::TempDir,
}

/// What the HTTPS server answers every request with.
pub const TLS_BODY: &str = "hello over TLS through Wicket\n";

impl TlsServer {
    /// Makes the CA and the certificate, and starts the server.
    pub fn start() -> Self {
        let dir = temp_dir();
        let openssl = |args: &[&str]| {
            let output = Command::new("openssl")
                .args(args)
                .current_dir(dir.path())
                .output()
                .unwrap();
            assert!(
                output.status.success(),
                "openssl {args:?}: {}",
                String::from_utf8_lossy(&output.stderr)
            );
        };
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"];
        openssl(
            &[
                &["req", "-x509", "-nodes", "-days", "2"][..],
                &ec,
                &[
                    "-keyout",
                    "ca.key",
                    "-out",
                    "ca.pem",
                    "-subj",
                    "/CN=Wicket test CA",
                    "-addext",
                    "basicConstraints=critical,CA:TRUE",
                    "-addext",
                    "keyUsage=critical,keyCertSign,cRLSign",
                ],
            ]
            .concat(),
        );
        openssl(
            &[
                &["req", "-nodes"][..],
                &ec,
                &[
                    "-keyout",
                    "leaf.key",
                    "-out",
                    "leaf.csr",
                    "-subj",
                    "/CN=localhost",
                ],
            ]
            .concat(),
        );
        std::fs::write(
            dir.path().join("leaf.ext"),
            "subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\n\
             keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n",
        )
        .unwrap();
        openssl(&[
            "x509",
            "-req",
            "-in",
            "leaf.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "2",
            "-out",
            "leaf.pem",
            "-extfile",
            "leaf.ext",
        ]);
        let script = format!(
            r#"
import http.server, ssl, sys
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = {TLS_BODY:?}.encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(sys.argv[1], sys.argv[2])
server.socket = context.wrap_socket(server.socket, server_side=True)
print(server.server_address[1], flush=True)
server.serve_forever()
"#
        );
        let (child, port) =
            python_server(&script, &[&file(&dir, "leaf.pem"), &file(&dir, "leaf.key")]);
        Self {
            child,
            port,
            ca: file(&dir, "ca.pem"),
            _dir: dir,
        }
    }
}

impl Drop for TlsServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A temporary folder for one test's files.
fn temp_dir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

/// A path inside `dir`, as a string for a command line.
fn file(dir: &tempfile::TempDir, name: &str) -> String {
    let path: PathBuf = dir.path().join(name);
    path.to_str().unwrap().to_owned()
}

/// `python3 -m http.server` over a folder, on 127.0.0.1 at a port of its
/// own choosing: a package index, or a git repository served the "dumb"
/// way. Stopped when dropped.
pub struct StaticServer {
    child: Child,
    /// Its port on 127.0.0.1.
    pub port: u16,
}

impl StaticServer {
    /// Serves `folder`.
    pub fn start(folder: &std::path::Path) -> Self {
        let script = r#"
import functools, http.server, sys
handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[1])
handler.func.log_message = lambda *args: None
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
print(server.server_address[1], flush=True)
server.serve_forever()
"#;
        let (child, port) = python_server(script, &[folder.to_str().unwrap()]);
        Self { child, port }
    }
}

impl Drop for StaticServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts a python3 server `script` with `args`, which prints its port
/// first; the child and the port.
fn python_server(script: &str, args: &[&str]) -> (Child, u16) {
    let mut child = Command::new("python3")
        .args(["-c", script])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port = line
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("the server printed {line:?}, not its port"));
    (child, port)
}
