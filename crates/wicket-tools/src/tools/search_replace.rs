//! search_replace: replaces an exact string, once unless `replace_all`, in a file
//! of at most [`WRITE_MAX_BYTES`]; the new bytes then take the write path.

use wicket_protocol::{ErrorKind, SearchReplaceArgs};

use crate::error::{Error, Result};
use crate::limits::WRITE_MAX_BYTES;

/// The file's new content after the replacement, or why there is none.
pub fn replaced(current: Option<&[u8]>, args: &SearchReplaceArgs) -> Result<Vec<u8>> {
    let shown = &args.path;
    if args.old.is_empty() {
        return Err(Error::invalid(
            "'old' is empty; give the exact text to replace (use write_file to create a file)",
        ));
    }
    let Some(current) = current else {
        return Err(Error::new(
            ErrorKind::NotFound,
            format!("'{shown}' does not exist; use write_file to create it"),
        ));
    };
    if current.len() > WRITE_MAX_BYTES {
        return Err(Error::new(
            ErrorKind::TooLarge,
            format!(
                "'{shown}' is {} bytes; search_replace edits files of at most {WRITE_MAX_BYTES} bytes, use run with a tool like sed for larger ones",
                current.len()
            ),
        ));
    }
    let text = std::str::from_utf8(current).map_err(|_| {
        Error::invalid(format!(
            "'{shown}' is not UTF-8 text; search_replace edits text files"
        ))
    })?;
    let positions: Vec<usize> = text
        .match_indices(args.old.as_str())
        .map(|(at, _)| at)
        .collect();
    if positions.is_empty() {
        return Err(Error::new(
            ErrorKind::NoMatch,
            format!(
                "'old' does not occur in '{shown}'; read the file again and copy the text exactly, whitespace included"
            ),
        ));
    }
    if positions.len() > 1 && !args.replace_all {
        let lines: Vec<String> = positions
            .iter()
            .map(|&at| (memchr::memchr_iter(b'\n', &current[..at]).count() + 1).to_string())
            .collect();
        return Err(Error::new(
            ErrorKind::NotUnique,
            format!(
                "'old' occurs {} times in '{shown}', on lines {}; add surrounding lines to make it unique, or set replace_all",
                positions.len(),
                lines.join(", ")
            ),
        ));
    }
    let new_text = if args.replace_all {
        text.replace(args.old.as_str(), &args.new)
    } else {
        text.replacen(args.old.as_str(), &args.new, 1)
    };
    if new_text.len() > WRITE_MAX_BYTES {
        return Err(Error::new(
            ErrorKind::TooLarge,
            format!(
                "the result would be {} bytes, more than the {WRITE_MAX_BYTES} a write may have",
                new_text.len()
            ),
        ));
    }
    Ok(new_text.into_bytes())
}
