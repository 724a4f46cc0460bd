//! `cargo run --release -p wicket-bench -- proxy`: Wicket's egress proxy
//! (`wicket-net`) beside a direct connection on loopback. (a) connect and first byte of
//! a response, the median of 200, through the proxy and direct; (b) a
//! 200 MB download through a `CONNECT` tunnel and direct, as throughput;
//! (c) 100 connections at once through the proxy, all of which must
//! complete. Prints each pair and its ratio, and for (b) the CPU time the
//! whole process spent per GB (server, proxy and client are its threads):
//! the proxy's read-and-write is a second trip through TCP, which on a
//! machine with few cores is what a download through it waits on.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use wicket_net::{Decision, Resolved, Target, serve};

use anyhow::Result;

use crate::Row;

/// Samples of the connect-to-first-byte time.
const LATENCY_SAMPLES: usize = 200;
/// The download's size.
const DOWNLOAD_BYTES: u64 = 200 * 1000 * 1000;
/// Downloads each way, taking turns; the best of each is kept.
const DOWNLOAD_ROUNDS: usize = 5;
/// Connections at once.
const CONCURRENT: usize = 100;

/// The proxy beside a direct connection, as rows: (a) connect and first
/// byte, (b) a download's throughput, (c) connections at once.
pub(crate) fn proxy_rows(rows: &mut Vec<Row>) -> Result<()> {
    let small = Server::start(Reply::Small)?;
    let big = Server::start(Reply::Download)?;
    let proxy = start_proxy()?;
    let direct = median(LATENCY_SAMPLES, || first_byte_direct(small.address))?;
    let literal = median(LATENCY_SAMPLES, || {
        first_byte_proxied(proxy, &format!("127.0.0.1:{}", small.address.port()))
    })?;
    let named = median(LATENCY_SAMPLES, || {
        first_byte_proxied(proxy, &format!("localhost:{}", small.address.port()))
    })?;
    for (name, through) in [
        (
            "proxy: connect + first byte, 127.0.0.1 (median of 200)",
            literal,
        ),
        (
            "proxy: connect + first byte, localhost (getaddrinfo in it)",
            named,
        ),
    ] {
        rows.push(Row {
            name: name.into(),
            wicket: format!(
                "{:.1} µs (+{:.1} µs)",
                micros(through),
                micros(through) - micros(direct)
            ),
            reference: format!("direct {:.1} µs", micros(direct)),
            ratio: Some(ratio(through, direct)),
        });
    }
    let mut best_direct = Duration::MAX;
    let mut best_proxied = Duration::MAX;
    let (mut cpu_direct, mut cpu_proxied) = (Duration::ZERO, Duration::ZERO);
    for _ in 0..DOWNLOAD_ROUNDS {
        let cpu = cpu_time()?;
        best_direct = best_direct.min(download_direct(big.address)?);
        cpu_direct += cpu_time()? - cpu;
        let cpu = cpu_time()?;
        best_proxied = best_proxied.min(download_proxied(proxy, big.address.port())?);
        cpu_proxied += cpu_time()? - cpu;
    }
    let per_gigabyte =
        |cpu: Duration| cpu.as_secs_f64() / (DOWNLOAD_ROUNDS as f64 * DOWNLOAD_BYTES as f64 / 1e9);
    rows.push(Row {
        name: format!(
            "proxy: {} MB download, best of {DOWNLOAD_ROUNDS} ({} cores)",
            DOWNLOAD_BYTES / 1_000_000,
            std::thread::available_parallelism().map_or(0, |n| n.get())
        ),
        wicket: format!(
            "{:.0} MB/s, {:.2} CPU s/GB",
            rate(best_proxied),
            per_gigabyte(cpu_proxied)
        ),
        reference: format!(
            "direct {:.0} MB/s, {:.2} CPU s/GB",
            rate(best_direct),
            per_gigabyte(cpu_direct)
        ),
        ratio: Some(rate(best_proxied) / rate(best_direct)),
    });
    let started = Instant::now();
    let completed = concurrent(proxy, small.address.port())?;
    anyhow::ensure!(
        completed == CONCURRENT,
        "only {completed} of {CONCURRENT} connections completed"
    );
    rows.push(Row {
        name: format!("proxy: {CONCURRENT} connections at once, 1 MB each"),
        wicket: format!(
            "{completed} of {CONCURRENT} in {:.1} ms",
            started.elapsed().as_secs_f64() * 1000.0
        ),
        reference: "-".into(),
        ratio: None,
    });
    Ok(())
}

/// What the bench's server answers.
#[derive(Clone, Copy)]
enum Reply {
    /// A short response at once (for latency), or 1 MB when asked for
    /// `/big` (the concurrent connections).
    Small,
    /// [`DOWNLOAD_BYTES`] of body.
    Download,
}

/// An HTTP server on 127.0.0.1, a thread per connection.
struct Server {
    address: SocketAddr,
}

impl Server {
    fn start(reply: Reply) -> Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let address = listener.local_addr()?;
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                std::thread::spawn(move || {
                    // A client that went away mid-answer is no result.
                    let _ = answer(stream, reply);
                });
            }
        });
        Ok(Self { address })
    }
}

fn answer(mut stream: TcpStream, reply: Reply) -> Result<()> {
    stream.set_nodelay(true)?;
    let head = read_head(&mut stream)?;
    let body_bytes = match reply {
        Reply::Small if head.starts_with(b"GET /big ") => 1_000_000,
        Reply::Small => 2,
        Reply::Download => DOWNLOAD_BYTES,
    };
    stream.write_all(
        format!("HTTP/1.1 200 OK\r\nContent-Length: {body_bytes}\r\nConnection: close\r\n\r\n")
            .as_bytes(),
    )?;
    let chunk = vec![b'x'; 1 << 20];
    let mut left = body_bytes;
    while left > 0 {
        let count = left.min(chunk.len() as u64) as usize;
        stream.write_all(&chunk[..count])?;
        left -= count as u64;
    }
    stream.shutdown(std::net::Shutdown::Write)?;
    Ok(())
}

/// Reads up to the end of an HTTP head; returns what was read.
fn read_head(stream: &mut TcpStream) -> Result<Vec<u8>> {
    let mut head = Vec::new();
    let mut buffer = [0; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let count = stream.read(&mut buffer)?;
        if count == 0 {
            anyhow::bail!("the peer closed before its head ended");
        }
        head.extend_from_slice(&buffer[..count]);
    }
    Ok(head)
}

/// The proxy, allowing everything, a thread per connection as Wicket runs
/// it.
fn start_proxy() -> Result<SocketAddr> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let address = listener.local_addr()?;
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let allow = |_: &Target, _: Option<&Resolved>| Decision::Allow {
                    allowed_by: "bench".into(),
                };
                serve(stream, &allow)
            });
        }
    });
    Ok(address)
}

fn first_byte_direct(server: SocketAddr) -> Result<Duration> {
    let started = Instant::now();
    let mut stream = TcpStream::connect(server)?;
    stream.set_nodelay(true)?;
    stream.write_all(b"GET / HTTP/1.1\r\nHost: bench\r\n\r\n")?;
    let mut byte = [0; 1];
    stream.read_exact(&mut byte)?;
    Ok(started.elapsed())
}

fn first_byte_proxied(proxy: SocketAddr, authority: &str) -> Result<Duration> {
    let started = Instant::now();
    let mut stream = TcpStream::connect(proxy)?;
    stream.set_nodelay(true)?;
    stream.write_all(format!("GET http://{authority}/ HTTP/1.1\r\n\r\n").as_bytes())?;
    let mut byte = [0; 1];
    stream.read_exact(&mut byte)?;
    Ok(started.elapsed())
}

/// Reads the stream to its end; returns how many bytes came.
fn drain(stream: &mut TcpStream) -> Result<u64> {
    let mut buffer = vec![0; 256 * 1024];
    let mut total = 0;
    loop {
        match stream.read(&mut buffer) {
            Ok(0) => return Ok(total),
            Ok(count) => total += count as u64,
            Err(error) if error.kind() == ErrorKind::Interrupted => {}
            Err(error) => return Err(error.into()),
        }
    }
}

fn download_direct(server: SocketAddr) -> Result<Duration> {
    let started = Instant::now();
    let mut stream = TcpStream::connect(server)?;
    stream.write_all(b"GET /download HTTP/1.1\r\nHost: bench\r\n\r\n")?;
    check_download(drain(&mut stream)?)?;
    Ok(started.elapsed())
}

fn download_proxied(proxy: SocketAddr, port: u16) -> Result<Duration> {
    let started = Instant::now();
    let mut stream = TcpStream::connect(proxy)?;
    stream.write_all(
        format!(
            "CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\nGET /download HTTP/1.1\r\nHost: bench\r\n\r\n"
        )
        .as_bytes(),
    )?;
    let established = b"HTTP/1.1 200 Connection established\r\n\r\n".len() as u64;
    check_download(drain(&mut stream)?.saturating_sub(established))?;
    Ok(started.elapsed())
}

fn check_download(bytes: u64) -> Result<()> {
    if bytes < DOWNLOAD_BYTES {
        anyhow::bail!("the download stopped at {bytes} bytes");
    }
    Ok(())
}

/// How many of [`CONCURRENT`] requests for 1 MB, started together through
/// the proxy, got all of it.
fn concurrent(proxy: SocketAddr, port: u16) -> Result<usize> {
    let start = Arc::new(Barrier::new(CONCURRENT));
    let clients: Vec<_> = (0..CONCURRENT)
        .map(|_| {
            let start = start.clone();
            std::thread::spawn(move || -> Result<u64> {
                start.wait();
                let mut stream = TcpStream::connect(proxy)?;
                stream.write_all(
                    format!("GET http://localhost:{port}/big HTTP/1.1\r\n\r\n").as_bytes(),
                )?;
                drain(&mut stream)
            })
        })
        .collect();
    let mut completed = 0;
    for client in clients {
        if let Ok(Ok(bytes)) = client.join()
            && bytes > 1_000_000
        {
            completed += 1;
        }
    }
    Ok(completed)
}

fn median(samples: usize, mut measure: impl FnMut() -> Result<Duration>) -> Result<Duration> {
    let mut times = (0..samples)
        .map(|_| measure())
        .collect::<Result<Vec<_>>>()?;
    times.sort();
    Ok(times[samples / 2])
}

fn micros(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e6
}

fn ratio(through: Duration, direct: Duration) -> f64 {
    through.as_secs_f64() / direct.as_secs_f64()
}

/// The CPU time this process has used, all its threads (user and system),
/// from `/proc/self/stat` in clock ticks of 10 ms.
fn cpu_time() -> Result<Duration> {
    const TICKS_PER_SECOND: u64 = 100;
    let stat = std::fs::read_to_string("/proc/self/stat")?;
    // The fields after the command name, which is in parentheses and may
    // hold spaces: utime and stime are the 12th and 13th of them.
    let after = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest)
        .unwrap_or_default();
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |index: usize| -> Result<u64> {
        Ok(fields
            .get(index)
            .ok_or_else(|| anyhow::anyhow!("/proc/self/stat is shorter than expected"))?
            .parse()?)
    };
    let total = ticks(11)? + ticks(12)?;
    Ok(Duration::from_millis(total * 1000 / TICKS_PER_SECOND))
}

/// Megabytes a second for one download.
fn rate(duration: Duration) -> f64 {
    DOWNLOAD_BYTES as f64 / 1e6 / duration.as_secs_f64()
}
