//! search_replace: replaces an exact string, once unless `replace_all`, in a file
//! of at most [`WRITE_MAX_BYTES`]; the new bytes then take the write path.

use wicket_protocol::{ErrorKind, SearchReplaceArgs};

use crate::error::{Error, Result};
use crate::limits::WRITE_MAX_BYTES;

/// Why `old` was not found in `text`, and where it nearly was.
fn no_match(text: &str, old: &str, shown: &str) -> Error {
    let near = match loose_match(text, old) {
        Some(line) => format!(
            " It does occur at line {line} when spaces, tabs and line breaks are ignored: \
             copy the whitespace exactly as the file has it."
        ),
        None => String::new(),
    };
    Error::new(
        ErrorKind::NoMatch,
        format!(
            "'old' does not occur in '{shown}'; read the file again and copy the text exactly, whitespace included.{near}"
        ),
    )
}

/// The line where `old` would occur in `text` were whitespace ignored
/// (the same words in the same order), if it does.
fn loose_match(text: &str, old: &str) -> Option<usize> {
    let wanted: Vec<&str> = old.split_whitespace().collect();
    if wanted.is_empty() {
        return None;
    }
    let words: Vec<(usize, &str)> = text
        .split_whitespace()
        .map(|word| (word.as_ptr() as usize - text.as_ptr() as usize, word))
        .collect();
    let start = words.windows(wanted.len()).find(|window| {
        window
            .iter()
            .zip(&wanted)
            .all(|((_, word), wanted)| word == wanted)
    })?;
    let at = start[0].0;
    Some(text[..at].matches('\n').count() + 1)
}

/// The file's new content after the replacement, or why there is none.
pub fn replaced(current: Option<&[u8]>, args: &SearchReplaceArgs) -> Result<Vec<u8>> {
    let shown = &args.path;
    if args.old.is_empty() {
        return Err(Error::invalid(
            "'old' is empty; give the exact text to replace (use write_file to create a file)",
        ));
    }
    if args.old == args.new {
        return Err(Error::invalid(
            "'old' and 'new' are the same text, so nothing would change; give the text as it should become in 'new'",
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
        return Err(no_match(text, &args.old, shown));
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

#[cfg(test)]
mod tests {
    use super::*;

    fn args(old: &str, new: &str) -> SearchReplaceArgs {
        SearchReplaceArgs {
            path: "a.rs".into(),
            old: old.into(),
            new: new.into(),
            replace_all: false,
        }
    }

    #[test]
    fn a_near_miss_in_whitespace_names_its_line_and_old_equal_to_new_is_refused() {
        let file = b"fn main() {\n    let x =  1;\n}\n";
        let missed = replaced(Some(file), &args("let x = 1;", "let x = 2;")).unwrap_err();
        assert_eq!(missed.kind, ErrorKind::NoMatch);
        assert!(missed.message.contains("at line 2"), "{}", missed.message);
        let absent = replaced(Some(file), &args("let y = 1;", "x")).unwrap_err();
        assert!(!absent.message.contains("at line"), "{}", absent.message);
        let same = replaced(Some(file), &args("main", "main")).unwrap_err();
        assert_eq!(same.kind, ErrorKind::InvalidArgs);
        assert!(same.message.contains("the same"), "{}", same.message);
    }
}
