//! The proxy under test, a decider that keeps a list, the servers behind
//! the proxy, and the plumbing to wait for them.

use std::collections::HashSet;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use wicket_net::{Closed, Decide, Decision, Resolved, Target, serve};

/// How long a test waits for something that should come at once, before it
/// fails instead of hanging.
pub const PATIENCE: Duration = Duration::from_secs(60);

/// Things that arrive from other threads, waited for by count.
pub struct Records<T> {
    items: Mutex<Vec<T>>,
    arrived: Condvar,
}

impl<T: Clone> Records<T> {
    pub fn new() -> Arc<Self> {
        Arc::new(Self {
            items: Mutex::new(Vec::new()),
            arrived: Condvar::new(),
        })
    }

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

    pub fn now(&self) -> Vec<T> {
        self.items.lock().unwrap().clone()
    }
}

/// The proxy: a listener on 127.0.0.1 that serves each connection on its
/// own thread with the test's decider, and keeps every [`Closed`].
pub struct Proxy {
    address: SocketAddr,
    closed: Arc<Records<Closed>>,
    stop: Arc<AtomicBool>,
}

impl Proxy {
    pub fn start<D: Decide + Send + 'static>(decide: Arc<D>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        let closed = Records::new();
        let stop = Arc::new(AtomicBool::new(false));
        let (records, stopped) = (closed.clone(), stop.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stopped.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(stream) = stream else { continue };
                let (decide, records) = (decide.clone(), records.clone());
                std::thread::spawn(move || records.push(serve(stream, &*decide)));
            }
        });
        Self {
            address,
            closed,
            stop,
        }
    }

    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// `http://127.0.0.1:PORT`, for curl's `-x`.
    pub fn url(&self) -> String {
        format!("http://{}", self.address)
    }

    /// The first `count` connections to close.
    pub fn closed(&self, count: usize) -> Vec<Closed> {
        self.closed.wait_for(count)
    }

    /// The one connection the test made, once it has closed.
    pub fn only_closed(&self) -> Closed {
        let closed = self.closed(1);
        assert_eq!(self.closed.now().len(), 1, "one connection");
        closed.into_iter().next().unwrap()
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accept loop so that it sees the flag.
        let _ = TcpStream::connect(self.address);
    }
}

/// A decider like the gate's rules: a host in the list is allowed; `*`
/// allows any host whose addresses are all global, while a local one
/// (loopback, private) needs its own name in the list. Every question is
/// kept.
pub struct Rules {
    allowed: HashSet<String>,
    asked: Mutex<Vec<(Target, Resolved)>>,
}

impl Rules {
    pub fn allowing(hosts: &[&str]) -> Arc<Self> {
        Arc::new(Self {
            allowed: hosts.iter().map(|host| host.to_string()).collect(),
            asked: Mutex::new(Vec::new()),
        })
    }

    pub fn asked(&self) -> Vec<(Target, Resolved)> {
        self.asked.lock().unwrap().clone()
    }
}

impl Decide for Rules {
    fn decide(&self, target: &Target, resolved: &Resolved) -> Decision {
        self.asked
            .lock()
            .unwrap()
            .push((target.clone(), resolved.clone()));
        let host = target.host.ascii();
        if self.allowed.contains(&host) {
            return Decision::Allow {
                allowed_by: format!("rule {host}"),
            };
        }
        if self.allowed.contains("*") && !resolved.local {
            return Decision::Allow {
                allowed_by: "rule *".into(),
            };
        }
        Decision::Deny
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

/// A port on 127.0.0.1 where nothing listens (bound, then let go).
pub fn closed_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Connects to the proxy, sends `bytes`, and reads until it closes.
pub fn exchange(proxy: &Proxy, bytes: &[u8]) -> Vec<u8> {
    let mut stream = TcpStream::connect(proxy.address()).unwrap();
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    stream.write_all(bytes).unwrap();
    read_to_close(&mut stream)
}

/// Everything until the peer closes; a reset after the data counts as the
/// end too. Fails the test rather than wait past [`PATIENCE`].
pub fn read_to_close(stream: &mut TcpStream) -> Vec<u8> {
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    let mut got = Vec::new();
    let mut buffer = [0; 16 * 1024];
    loop {
        match stream.read(&mut buffer) {
            Ok(0) => return got,
            Ok(count) => got.extend_from_slice(&buffer[..count]),
            Err(error) if error.kind() == std::io::ErrorKind::ConnectionReset => return got,
            Err(error) => panic!("reading from the proxy: {error}"),
        }
    }
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

/// A temporary folder for one test's files.
pub fn temp_dir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

/// A path inside `dir`, as a string for a command line.
pub fn file(dir: &tempfile::TempDir, name: &str) -> String {
    let path: PathBuf = dir.path().join(name);
    path.to_str().unwrap().to_owned()
}
