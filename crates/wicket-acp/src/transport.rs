//! The stdio transport, with a bound: an editor's message line is read to
//! at most [`LINE_MAX_BYTES`]. A longer one is dropped as it streams in
//! (never buffered whole) and stands in the stream as a short line that is
//! not JSON, so the protocol layer answers it with a parse error and the
//! agent goes on.

use std::io::{BufRead, Write};

use agent_client_protocol::Lines;
use futures_util::{Sink, Stream};

/// The most one ACP message line may be.
pub const LINE_MAX_BYTES: usize = 16 * 1024 * 1024;

/// The next line of `reader` (without its newline), `None` at the end. A
/// line over `max` bytes comes back as a sentence saying so.
pub fn read_bounded(reader: &mut impl BufRead, max: usize) -> std::io::Result<Option<String>> {
    let mut line = Vec::new();
    let mut total = 0usize;
    loop {
        let buffer = match reader.fill_buf() {
            Ok(buffer) => buffer,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        };
        if buffer.is_empty() {
            if total == 0 {
                return Ok(None);
            }
            break;
        }
        let (piece, used, ended) = match buffer.iter().position(|byte| *byte == b'\n') {
            Some(end) => (&buffer[..end], end + 1, true),
            None => (buffer, buffer.len(), false),
        };
        total = total.saturating_add(piece.len());
        if total <= max {
            line.extend_from_slice(piece);
        } else {
            line.clear();
        }
        reader.consume(used);
        if ended {
            break;
        }
    }
    if total > max {
        return Ok(Some(format!(
            "a message line of {total} bytes was dropped: an ACP line may be at most {max} bytes"
        )));
    }
    Ok(Some(String::from_utf8_lossy(&line).into_owned()))
}

/// Stdin and stdout as the SDK's line transport: a thread reads stdin
/// through [`read_bounded`], and each line out is written on the blocking
/// pool, so no async task blocks on either.
pub fn stdio() -> Lines<
    impl Sink<String, Error = std::io::Error> + Send + 'static,
    impl Stream<Item = std::io::Result<String>> + Send + 'static,
> {
    let (lines, incoming) = tokio::sync::mpsc::channel::<std::io::Result<String>>(16);
    std::thread::spawn(move || {
        let mut stdin = std::io::stdin().lock();
        loop {
            let next = read_bounded(&mut stdin, LINE_MAX_BYTES);
            let done = !matches!(next, Ok(Some(_)));
            let item = match next {
                Ok(Some(line)) => Ok(line),
                Ok(None) => break,
                Err(error) => Err(error),
            };
            if lines.blocking_send(item).is_err() || done {
                break;
            }
        }
    });
    let incoming = futures_util::stream::unfold(incoming, |mut incoming| async move {
        incoming.recv().await.map(|item| (item, incoming))
    });
    // Each line is written (and flushed) before the next is taken, on the
    // blocking pool: a send completes only once the editor can read it.
    let outgoing = futures_util::sink::unfold((), |(), line: String| async move {
        tokio::task::spawn_blocking(move || {
            let mut stdout = std::io::stdout().lock();
            writeln!(stdout, "{line}").and_then(|()| stdout.flush())
        })
        .await
        .map_err(std::io::Error::other)?
    });
    Lines::new(Box::pin(outgoing), Box::pin(incoming))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_line_is_dropped_and_the_next_one_read() {
        let mut input = Vec::new();
        input.extend_from_slice(b"{\"a\":1}\n");
        input.extend(std::iter::repeat_n(b'x', 100));
        input.extend_from_slice(b"\n{\"b\":2}\nlast");
        let mut reader = std::io::BufReader::with_capacity(7, &input[..]);
        assert_eq!(read_bounded(&mut reader, 50).unwrap().unwrap(), "{\"a\":1}");
        let dropped = read_bounded(&mut reader, 50).unwrap().unwrap();
        assert!(dropped.contains("100 bytes was dropped"), "{dropped}");
        assert_eq!(read_bounded(&mut reader, 50).unwrap().unwrap(), "{\"b\":2}");
        assert_eq!(read_bounded(&mut reader, 50).unwrap().unwrap(), "last");
        assert_eq!(read_bounded(&mut reader, 50).unwrap(), None);
    }
}
