//! The relay: bytes copied both ways between the client and the host, one
//! thread a direction, each direction's end passed on as a half-close, the
//! bytes on the host's connection counted as the host counts them.
//!
//! On Linux the bytes go socket to pipe to socket with `splice(2)`: the
//! kernel moves pages, none are copied into this process, and a download
//! through the proxy runs near the speed of a direct one. Where `splice`
//! is refused, a plain read and write loop does the same.
//!
//! A write to a peer that has gone fails with `EPIPE`; the kernel also
//! raises `SIGPIPE` for a `splice` into such a socket, which a Rust
//! program ignores (std sets it so before `main`). A caller that handles
//! `SIGPIPE` itself must ignore it on these threads' behalf.

use std::io::{self, ErrorKind, Read, Write};
use std::net::{Shutdown, TcpStream};

/// The bytes a relay moved on the host's connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Counts {
    /// Written to the host.
    pub(crate) sent: u64,
    /// Read from the host.
    pub(crate) received: u64,
}

/// What one direction moved: read from its source, written to its sink.
#[derive(Debug, Default)]
struct Moved {
    read: u64,
    written: u64,
}

/// The buffer of the read and write loop, where `splice` is refused.
const COPY_BUFFER_BYTES: usize = 256 * 1024;

/// The pipe between the two sockets of one direction, when `splice` moves
/// the bytes: each `splice` moves up to this much. Past 64 KiB (the
/// default) an unprivileged process may go up to `fs.pipe-max-size`, 1 MiB
/// by default; a pipe holds references to the socket's pages, not copies.
#[cfg(target_os = "linux")]
const PIPE_BYTES: usize = 1024 * 1024;

/// Relays between `client` and `upstream` until both directions have
/// ended: `to_client_first` is written to the client before anything from
/// the host (the `CONNECT` or SOCKS5 reply), `to_upstream_first` to the
/// host before anything from the client (the forwarded request head, and
/// what the client sent past its head). When one side ends its sending the
/// other side's sending is shut down; when either fails both sockets are
/// shut down, so neither thread waits on a dead connection.
///
/// Fails only when the second thread cannot be started, and then before a
/// byte was written either way.
pub(crate) fn relay(
    client: &TcpStream,
    upstream: &TcpStream,
    to_client_first: &[u8],
    to_upstream_first: &[u8],
) -> io::Result<Counts> {
    std::thread::scope(|scope| {
        let download = std::thread::Builder::new()
            .name("wicket-net relay".into())
            .spawn_scoped(scope, || pump(upstream, client, to_client_first))?;
        let upload = pump(client, upstream, to_upstream_first);
        let download = match download.join() {
            Ok(moved) => moved,
            // `pump` does not panic; were it to, the bug is raised here.
            Err(panic) => std::panic::resume_unwind(panic),
        };
        Ok(Counts {
            sent: upload.written,
            received: download.read,
        })
    })
}

/// One direction: `first`, then everything `from` sends, to `to`; then
/// `to`'s sending shut down, or on a failure both sockets.
fn pump(from: &TcpStream, to: &TcpStream, first: &[u8]) -> Moved {
    let mut moved = Moved::default();
    let ended = write_counted(to, first, &mut moved).and_then(|()| move_all(from, to, &mut moved));
    match ended {
        Ok(()) => {
            // The peer may be gone already; there is no one to tell.
            let _ = to.shutdown(Shutdown::Write);
        }
        Err(_) => {
            // The connection is broken; what broke it is the peers' to
            // know. Shutting both sockets wakes the other direction.
            let _ = from.shutdown(Shutdown::Both);
            let _ = to.shutdown(Shutdown::Both);
        }
    }
    moved
}

/// Writes all of `bytes` to `to`, counting what was written even when a
/// write fails partway.
fn write_counted(mut to: &TcpStream, mut bytes: &[u8], moved: &mut Moved) -> io::Result<()> {
    while !bytes.is_empty() {
        match to.write(bytes) {
            Ok(0) => return Err(ErrorKind::WriteZero.into()),
            Ok(count) => {
                moved.written += count as u64;
                bytes = &bytes[count..];
            }
            Err(error) if error.kind() == ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
    Ok(())
}

/// Moves everything `from` sends to `to`, until `from` ends (Ok) or
/// either fails.
#[cfg(target_os = "linux")]
fn move_all(from: &TcpStream, to: &TcpStream, moved: &mut Moved) -> io::Result<()> {
    use rustix::io::Errno;
    use rustix::pipe::{PipeFlags, SpliceFlags, fcntl_setpipe_size, pipe_with, splice};

    let Ok((pipe_out, pipe_in)) = pipe_with(PipeFlags::CLOEXEC) else {
        // Out of descriptors for a pipe: the loop needs none.
        return copy_all(from, to, moved);
    };
    // A smaller pipe still works, in more steps.
    let chunk = fcntl_setpipe_size(&pipe_in, PIPE_BYTES).unwrap_or(64 * 1024);
    loop {
        let count = match splice(from, None, &pipe_in, None, chunk, SpliceFlags::MOVE) {
            Ok(0) => return Ok(()),
            Ok(count) => count,
            Err(Errno::INTR) => continue,
            Err(Errno::INVAL) if moved.read == 0 => return copy_all(from, to, moved),
            Err(errno) => return Err(errno.into()),
        };
        moved.read += count as u64;
        let mut left = count;
        while left > 0 {
            match splice(&pipe_out, None, to, None, left, SpliceFlags::MOVE) {
                Ok(0) => return Err(ErrorKind::WriteZero.into()),
                Ok(count) => {
                    left -= count;
                    moved.written += count as u64;
                }
                Err(Errno::INTR) => {}
                Err(errno) => return Err(errno.into()),
            }
        }
    }
}

/// Moves everything `from` sends to `to`, until `from` ends (Ok) or
/// either fails.
#[cfg(not(target_os = "linux"))]
fn move_all(from: &TcpStream, to: &TcpStream, moved: &mut Moved) -> io::Result<()> {
    copy_all(from, to, moved)
}

/// [`move_all`] through a buffer in this process.
fn copy_all(mut from: &TcpStream, to: &TcpStream, moved: &mut Moved) -> io::Result<()> {
    let mut buffer = vec![0; COPY_BUFFER_BYTES];
    loop {
        let count = match from.read(&mut buffer) {
            Ok(0) => return Ok(()),
            Ok(count) => count,
            Err(error) if error.kind() == ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        };
        moved.read += count as u64;
        write_counted(to, &buffer[..count], moved)?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    /// A connected pair of loopback sockets.
    fn pair() -> (TcpStream, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let near = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (far, _) = listener.accept().unwrap();
        (near, far)
    }

    #[test]
    fn both_directions_are_relayed_counted_and_half_closed() {
        // client <-> (client_side | upstream_side) <-> host
        let (mut client, client_side) = pair();
        let (upstream_side, mut host) = pair();
        let download: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
        let expected = download.clone();
        let relay = std::thread::spawn(move || {
            relay(&client_side, &upstream_side, b"first>", b"<head>").unwrap()
        });
        let host = std::thread::spawn(move || {
            let mut received = Vec::new();
            host.read_to_end(&mut received).unwrap();
            host.write_all(&download).unwrap();
            received
        });
        client.write_all(b"request body").unwrap();
        client.shutdown(Shutdown::Write).unwrap();
        let mut got = Vec::new();
        client.read_to_end(&mut got).unwrap();
        assert_eq!(&got[..6], b"first>");
        assert!(got[6..] == expected[..], "the download arrives whole");
        assert_eq!(host.join().unwrap(), b"<head>request body");
        let counts = relay.join().unwrap();
        assert_eq!(
            counts,
            Counts {
                sent: 18,
                received: 3_000_000
            }
        );
    }

    #[test]
    fn a_failed_write_ends_both_directions() {
        let (client, client_side) = pair();
        let (upstream_side, mut host) = pair();
        let relay = std::thread::spawn(move || relay(&client_side, &upstream_side, b"", b""));
        // The client vanishes; the host keeps sending until the relay
        // gives up on it and shuts its socket.
        drop(client);
        let chunk = vec![7u8; 64 * 1024];
        while host.write_all(&chunk).is_ok() {}
        relay.join().unwrap().unwrap();
    }

    #[test]
    fn the_copy_loop_moves_and_counts_like_splice() {
        let (mut client, client_side) = pair();
        let (upstream_side, mut host) = pair();
        let copier = std::thread::spawn(move || {
            let mut moved = Moved::default();
            copy_all(&client_side, &upstream_side, &mut moved).unwrap();
            moved
        });
        let payload = vec![1u8; 1_000_000];
        client.write_all(&payload).unwrap();
        client.shutdown(Shutdown::Write).unwrap();
        let moved = copier.join().unwrap();
        assert_eq!((moved.read, moved.written), (1_000_000, 1_000_000));
        let mut got = vec![0u8; 1_000_000];
        host.read_exact(&mut got).unwrap();
        assert_eq!(got, payload);
    }
}
