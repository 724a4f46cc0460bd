//! Reading a client's request head, bounded: at most [`HEAD_MAX_BYTES`]
//! and [`HEAD_TIMEOUT`] from the connection's start, whichever protocol.
//! What the reads took past the head is kept for the upstream host.

use std::io::{ErrorKind, Read};
use std::net::TcpStream;
use std::time::Instant;

use crate::error::{Error, Result};
use crate::{HEAD_MAX_BYTES, HEAD_TIMEOUT};

/// The bytes read from a client so far, and how far its head has been
/// taken.
pub(crate) struct Intake<'a> {
    client: &'a TcpStream,
    /// [`HEAD_MAX_BYTES`] long; `buffer[..filled]` came from the client.
    buffer: Vec<u8>,
    filled: usize,
    /// `buffer[..taken]` has been read as the head.
    taken: usize,
    deadline: Instant,
}

impl<'a> Intake<'a> {
    /// Starts reading `client`, whose head must be complete by
    /// [`HEAD_TIMEOUT`] after `started`.
    pub(crate) fn new(client: &'a TcpStream, started: Instant) -> Self {
        Self {
            client,
            buffer: vec![0; HEAD_MAX_BYTES],
            filled: 0,
            taken: 0,
            deadline: started + HEAD_TIMEOUT,
        }
    }

    /// The next byte, without taking it.
    pub(crate) fn peek(&mut self) -> Result<u8> {
        while self.filled == self.taken {
            self.fill()?;
        }
        Ok(self.buffer[self.taken])
    }

    /// Takes the next `count` bytes, reading until there are that many.
    pub(crate) fn take(&mut self, count: usize) -> Result<&[u8]> {
        while self.filled - self.taken < count {
            self.fill()?;
        }
        let start = self.taken;
        self.taken += count;
        Ok(&self.buffer[start..self.taken])
    }

    /// Takes an HTTP head: everything up to and including the first empty
    /// line (`\r\n\r\n`, or a bare `\n\n`), reading until it has come.
    pub(crate) fn take_http_head(&mut self) -> Result<&[u8]> {
        let start = self.taken;
        let mut scanned = start;
        loop {
            if let Some(end) = head_end(&self.buffer[..self.filled], start, scanned) {
                self.taken = end;
                return Ok(&self.buffer[start..end]);
            }
            scanned = self.filled;
            self.fill()?;
        }
    }

    /// What the client sent past its head: the start of a request body,
    /// or of what it tunnels.
    pub(crate) fn rest(&self) -> &[u8] {
        &self.buffer[self.taken..self.filled]
    }

    /// Reads more from the client, within the size and time left.
    fn fill(&mut self) -> Result<()> {
        if self.filled == self.buffer.len() {
            return Err(Error::HeadTooLarge);
        }
        loop {
            let left = self.deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(Error::HeadTimeout);
            }
            self.client
                .set_read_timeout(Some(left))
                .map_err(Error::Read)?;
            let mut client = self.client;
            match client.read(&mut self.buffer[self.filled..]) {
                Ok(0) => return Err(Error::ClosedEarly),
                Ok(count) => {
                    self.filled += count;
                    return Ok(());
                }
                Err(error) if error.kind() == ErrorKind::Interrupted => continue,
                Err(error)
                    if matches!(error.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) =>
                {
                    return Err(Error::HeadTimeout);
                }
                Err(error) => return Err(Error::Read(error)),
            }
        }
    }
}

impl Drop for Intake<'_> {
    /// Clears the read timeout: the relay's reads wait as long as the
    /// connection lives.
    fn drop(&mut self) {
        // A socket whose timeout cannot be cleared is one that failed; the
        // relay's first read will say so.
        let _ = self.client.set_read_timeout(None);
    }
}

/// Where the head that starts at `start` ends (just past its empty line),
/// if it is complete in `bytes`. `scanned` is how far an earlier call got,
/// so that a client sending a byte at a time costs a scan of each byte
/// once, not of the whole head each time.
fn head_end(bytes: &[u8], start: usize, scanned: usize) -> Option<usize> {
    // A line end found at `scanned - 1` may start the empty line: look
    // back far enough to see `\n\r\n` or `\n\n` straddle the old end.
    let from = scanned.saturating_sub(2).max(start);
    let mut at = from;
    while let Some(offset) = bytes[at..].iter().position(|b| *b == b'\n') {
        let newline = at + offset;
        match &bytes[newline + 1..] {
            [b'\n', ..] => return Some(newline + 2),
            [b'\r', b'\n', ..] => return Some(newline + 3),
            _ => at = newline + 1,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_head_ends_at_its_first_empty_line() {
        let bytes = b"GET http://a/ HTTP/1.1\r\nHost: a\r\n\r\nbody";
        assert_eq!(head_end(bytes, 0, 0), Some(bytes.len() - 4));
        let bare = b"GET http://a/ HTTP/1.1\nHost: a\n\nbody";
        assert_eq!(head_end(bare, 0, 0), Some(bare.len() - 4));
        assert_eq!(
            head_end(b"GET http://a/ HTTP/1.1\r\nHost: a\r\n", 0, 0),
            None
        );
    }

    /// A connected pair of loopback sockets.
    fn pair() -> (TcpStream, TcpStream) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let near = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (far, _) = listener.accept().unwrap();
        (near, far)
    }

    #[test]
    fn a_client_silent_past_the_deadline_times_out_and_the_timeout_is_cleared_after() {
        let (_client, proxy_side) = pair();
        // As if the connection had come in HEAD_TIMEOUT less 50 ms ago.
        let started = Instant::now() - HEAD_TIMEOUT + std::time::Duration::from_millis(50);
        let mut intake = Intake::new(&proxy_side, started);
        assert!(matches!(intake.peek(), Err(Error::HeadTimeout)));
        assert!(matches!(intake.take_http_head(), Err(Error::HeadTimeout)));
        drop(intake);
        assert_eq!(proxy_side.read_timeout().unwrap(), None);
    }

    #[test]
    fn a_head_that_fills_the_buffer_without_ending_is_too_large() {
        use std::io::Write;
        let (mut client, proxy_side) = pair();
        let writer = std::thread::spawn(move || {
            let _ = client.write_all(&vec![b'a'; HEAD_MAX_BYTES + 1]);
            client
        });
        let mut intake = Intake::new(&proxy_side, Instant::now());
        assert!(matches!(intake.take_http_head(), Err(Error::HeadTooLarge)));
        drop(writer.join().unwrap());
    }

    #[test]
    fn bytes_past_the_head_are_kept_for_the_host() {
        use std::io::Write;
        let (mut client, proxy_side) = pair();
        client
            .write_all(b"CONNECT a:1 HTTP/1.1\r\n\r\n\x16\x03\x01")
            .unwrap();
        let mut intake = Intake::new(&proxy_side, Instant::now());
        let head = intake.take_http_head().unwrap().to_vec();
        while intake.rest().len() < 3 {
            // The three bytes may come in a read of their own.
            intake.fill().unwrap();
        }
        assert_eq!(head, b"CONNECT a:1 HTTP/1.1\r\n\r\n");
        assert_eq!(intake.rest(), b"\x16\x03\x01");
    }

    #[test]
    fn an_empty_line_split_across_reads_is_found() {
        let bytes = b"CONNECT a:1 HTTP/1.1\r\n\r\n";
        for split in 0..bytes.len() {
            assert_eq!(head_end(bytes, 0, split), Some(bytes.len()), "{split}");
        }
    }
}
