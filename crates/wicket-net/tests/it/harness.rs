//! The proxy under test, a decider that keeps a list, the servers behind
//! the proxy, and the plumbing to wait for them.

use std::collections::HashSet;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use wicket_net::{Closed, Decide, Decision, Resolved, Target, serve};
pub use wicket_test_support::net::{PATIENCE, Records, Served, Upstream, have};

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
/// allows any name before its lookup and any host whose addresses are all
/// global, while a local one (loopback, private) needs its own name in the
/// list. Every question is kept, with what it was shown of the addresses
/// (`None`: asked by the name alone, before any lookup).
pub struct Rules {
    allowed: HashSet<String>,
    asked: Mutex<Vec<(Target, Option<Resolved>)>>,
}

impl Rules {
    pub fn allowing(hosts: &[&str]) -> Arc<Self> {
        Arc::new(Self {
            allowed: hosts.iter().map(|host| host.to_string()).collect(),
            asked: Mutex::new(Vec::new()),
        })
    }

    pub fn asked(&self) -> Vec<(Target, Option<Resolved>)> {
        self.asked.lock().unwrap().clone()
    }
}

impl Decide for Rules {
    fn decide(&self, target: &Target, resolved: Option<&Resolved>) -> Decision {
        self.asked
            .lock()
            .unwrap()
            .push((target.clone(), resolved.cloned()));
        let host = target.host.ascii();
        if self.allowed.contains(&host) {
            return Decision::Allow {
                allowed_by: format!("rule {host}"),
            };
        }
        if self.allowed.contains("*") && !resolved.is_some_and(|resolved| resolved.local) {
            return Decision::Allow {
                allowed_by: "rule *".into(),
            };
        }
        Decision::Deny
    }
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
