//! read_file: at most [`READ_FILE_MAX_BYTES`] of text from a byte offset or a
//! 1-based line (and at most `limit` lines), never splitting a UTF-8
//! character and ending at a line's end unless one line is longer than the
//! limit; with the line it starts on, the line to read on from, and the
//! file's lines, where they are known.

use std::fs::File;
use std::os::unix::fs::FileExt;

use wicket_protocol::{ReadFileArgs, ReadFileOutput};

use crate::error::{Error, Result};
use crate::limits::{BINARY_SNIFF_BYTES, READ_FILE_MAX_BYTES};
use crate::resolve::{Location, Workspace};

const SCAN_CHUNK: usize = 256 * 1024;

fn pread(file: &File, buffer: &mut [u8], offset: u64, shown: &str) -> Result<usize> {
    let mut filled = 0;
    while filled < buffer.len() {
        match file.read_at(&mut buffer[filled..], offset + filled as u64) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(error) => return Err(Error::io(shown, error)),
        }
    }
    Ok(filled)
}

/// Reads the file's first `end` bytes a buffer at a time, past its holes
/// (a stretch of a sparse file never written reads as zeros: no newline,
/// no text, so it is skipped, not read), handing each buffer and its
/// offset to `each` until it says stop.
fn scan(
    file: &File,
    end: u64,
    shown: &str,
    mut each: impl FnMut(u64, &[u8]) -> std::ops::ControlFlow<()>,
) -> Result<()> {
    let mut buffer = vec![0u8; SCAN_CHUNK];
    let mut offset = 0u64;
    while offset < end {
        let data =
            wicket_os::files::data_from(file, offset).map_err(|error| Error::io(shown, error))?;
        let Some(data) = data.filter(|data| *data < end) else {
            break;
        };
        let hole = wicket_os::files::hole_from(file, data)
            .map_err(|error| Error::io(shown, error))?
            .clamp(data + 1, end);
        offset = data;
        while offset < hole {
            let want = (hole - offset).min(SCAN_CHUNK as u64) as usize;
            let n = pread(file, &mut buffer[..want], offset, shown)?;
            if n == 0 {
                return Ok(());
            }
            if each(offset, &buffer[..n]).is_break() {
                return Ok(());
            }
            offset += n as u64;
        }
    }
    Ok(())
}

/// Newlines in the file's first `end` bytes, counted a buffer at a time
/// (a SIMD byte count, as `wc -l` does), past its holes.
fn newlines_before(file: &File, end: u64, shown: &str) -> Result<u64> {
    let mut count = 0u64;
    scan(file, end, shown, |_, chunk| {
        count += bytecount::count(chunk, b'\n') as u64;
        std::ops::ControlFlow::Continue(())
    })?;
    Ok(count)
}

/// The lines of a file of `size` bytes holding `newlines`: one more for
/// a last line with none.
fn lines_of(file: &File, newlines: u64, size: u64, shown: &str) -> Result<u64> {
    if size == 0 {
        return Ok(0);
    }
    let mut last = [0u8; 1];
    pread(file, &mut last, size - 1, shown)?;
    Ok(newlines + u64::from(last[0] != b'\n'))
}

/// The file's lines: its newlines, and one more for a last line with none.
fn lines_in(file: &File, size: u64, shown: &str) -> Result<u64> {
    lines_of(file, newlines_before(file, size, shown)?, size, shown)
}

/// The byte offset where 1-based `line` starts. Whole buffers before the
/// one holding it are only counted (a SIMD byte count, as `wc -l` does),
/// holes skipped; newline positions are looked for in that last buffer
/// alone. A line past the end is said with the file's lines, from the
/// count this one scan made (the file is not read again).
fn line_start(file: &File, line: u64, size: u64, shown: &str) -> Result<u64> {
    let mut needed = line - 1;
    if needed == 0 {
        return Ok(0);
    }
    let mut counted = 0u64;
    let mut found = None;
    scan(file, size, shown, |offset, chunk| {
        let in_chunk = bytecount::count(chunk, b'\n') as u64;
        if in_chunk < needed {
            needed -= in_chunk;
            counted += in_chunk;
            return std::ops::ControlFlow::Continue(());
        }
        // usize: needed <= in_chunk, which came from a usize.
        if let Some(position) = memchr::memchr_iter(b'\n', chunk).nth(needed as usize - 1) {
            counted += needed;
            found = Some(offset + position as u64 + 1);
        }
        std::ops::ControlFlow::Break(())
    })?;
    // Line N of a file whose last line ends with a newline starts at its
    // end: not a line (and then every newline was counted).
    if let Some(start) = found.filter(|start| *start < size) {
        return Ok(start);
    }
    Err(Error::invalid(format!(
        "line {line} is past the end of '{shown}', which has {} line(s); read from line 1, or by offset",
        lines_of(file, counted, size, shown)?
    )))
}

/// The length of the longest prefix of `bytes` that ends on a character boundary.
fn utf8_prefix(bytes: &[u8]) -> usize {
    match std::str::from_utf8(bytes) {
        Ok(_) => bytes.len(),
        Err(error) if error.error_len().is_none() => error.valid_up_to(),
        Err(_) => bytes.len(),
    }
}

fn binary(size: u64, offset: u64) -> ReadFileOutput {
    ReadFileOutput {
        content: String::new(),
        size,
        offset,
        first_line: None,
        next_offset: None,
        next_line: None,
        total_lines: None,
        binary: true,
        note: Some(BINARY_NOTE.into()),
    }
}

/// Lines are counted through files up to this size: a read of a larger one
/// from an offset has no `first_line`, and no read of it has `total_lines`.
const LINES_COUNTED_BYTES: u64 = 8 * 1024 * 1024;

/// What a binary read says in words.
pub const BINARY_NOTE: &str = "the file is binary (it holds NUL bytes), so its content is not \
     shown; to look inside it, run a tool such as file, xxd or strings on it";

/// Where a read starts: the offset, the line's start, or 0, backed up to
/// a character boundary when the offset points inside a character.
fn start_of(file: &File, args: &ReadFileArgs, size: u64, shown: &str) -> Result<u64> {
    let start = match (args.offset, args.line) {
        (Some(offset), _) => offset.min(size),
        (None, Some(line)) => line_start(file, line, size, shown)?,
        (None, None) => 0,
    };
    if start == 0 {
        return Ok(0);
    }
    let mut probe = [0u8; 1];
    if pread(file, &mut probe, start, shown)? != 1 || probe[0] & 0xC0 != 0x80 {
        return Ok(start);
    }
    let back = start.min(3) as usize;
    let mut lead = [0u8; 3];
    let n = pread(file, &mut lead[..back], start - back as u64, shown)?;
    let mut continuation = 0;
    for byte in lead[..n].iter().rev() {
        continuation += 1;
        if byte & 0xC0 != 0x80 {
            break;
        }
    }
    Ok(start - continuation)
}

/// The bytes a read returns from `start`: at most the byte limit and
/// `limit` lines, never splitting a character, and ending at a line's end
/// unless the file ends first or one line is longer than the limit (then
/// true: the read ends inside that line).
fn chunk_at(
    file: &File,
    start: u64,
    size: u64,
    limit: Option<u64>,
    shown: &str,
) -> Result<(Vec<u8>, bool)> {
    // A little more than the limit, so a character cut at the edge is seen.
    let mut buffer = vec![0u8; READ_FILE_MAX_BYTES + 4];
    let n = pread(file, &mut buffer, start, shown)?;
    buffer.truncate(n);
    let mut take = buffer.len().min(READ_FILE_MAX_BYTES);
    let reaches_end = start + (take as u64) >= size && buffer.len() <= READ_FILE_MAX_BYTES;
    let mut inside_a_line = false;
    if !reaches_end {
        take = utf8_prefix(&buffer[..take]);
        match memchr::memrchr(b'\n', &buffer[..take]) {
            Some(last_newline) => take = last_newline + 1,
            None => inside_a_line = true,
        }
    }
    // usize: a line count past the buffer's length is never reached.
    if let Some(limit) = limit.map(|limit| usize::try_from(limit).unwrap_or(usize::MAX))
        && let Some(end) = memchr::memchr_iter(b'\n', &buffer[..take]).nth(limit.saturating_sub(1))
    {
        take = end + 1;
        inside_a_line = false;
    }
    buffer.truncate(take);
    Ok((buffer, inside_a_line))
}

/// read_file: at most [`READ_FILE_MAX_BYTES`] of text from an offset or a line.
pub fn read_file(
    workspace: &Workspace,
    location: &Location,
    args: &ReadFileArgs,
) -> Result<ReadFileOutput> {
    if args.offset.is_some() && args.line.is_some() {
        return Err(Error::invalid("give either offset or line, not both"));
    }
    if args.line == Some(0) {
        return Err(Error::invalid("lines are numbered from 1"));
    }
    if args.limit == Some(0) {
        return Err(Error::invalid(
            "limit is a number of lines, at least 1; leave it out to read as much as fits",
        ));
    }
    let shown = args.path.as_str();
    let (file, stat) = workspace.open_file(location, shown)?;
    let size = stat.st_size as u64;
    let mut sniff = vec![0u8; BINARY_SNIFF_BYTES];
    let sniffed = pread(&file, &mut sniff, 0, shown)?;
    // core's word-at-a-time search, not the memchr crate's: memchr's first
    // call runs std's CPU feature detection, up to ten CPUID instructions,
    // each a trap to the hypervisor on a VM (0.07 ms there, more than the
    // rest of the read; BENCHMARKS.md 2026-12-06). On at most 8 KiB the two
    // searches differ by under a microsecond.
    if sniff[..sniffed].contains(&0) {
        return Ok(binary(size, 0));
    }
    let start = start_of(&file, args, size, shown)?;
    let (chunk, inside_a_line) = chunk_at(&file, start, size, args.limit, shown)?;
    let Ok(content) = String::from_utf8(chunk) else {
        return Ok(binary(size, start));
    };
    let end = start + content.len() as u64;
    let counted = size <= LINES_COUNTED_BYTES;
    let first_line = match (args.line, start) {
        (Some(line), _) => Some(line),
        (None, 0) => Some(1),
        (None, _) if counted => Some(newlines_before(&file, start, shown)? + 1),
        (None, _) => None,
    };
    let newlines = memchr::memchr_iter(b'\n', content.as_bytes()).count() as u64;
    let more = end < size;
    let next_line = match first_line {
        Some(first) if more && content.ends_with('\n') => Some(first + newlines),
        _ => None,
    };
    let total_lines = match (more, first_line) {
        // The read reached the end: its lines tell the count.
        (false, Some(first)) => {
            Some(first - 1 + newlines + u64::from(!content.ends_with('\n') && !content.is_empty()))
        }
        _ if counted => Some(lines_in(&file, size, shown)?),
        _ => None,
    };
    let note = inside_a_line.then(|| {
        format!(
            "line {} is longer than {} KiB: this read ends inside it; read on from next_offset",
            first_line.map_or("here".to_string(), |line| (line + newlines).to_string()),
            READ_FILE_MAX_BYTES / 1024
        )
    });
    Ok(ReadFileOutput {
        note,
        content,
        size,
        offset: start,
        first_line,
        next_offset: more.then_some(end),
        next_line,
        total_lines,
        binary: false,
    })
}
