//! Unified diffs for write cards, with imara-diff's Myers algorithm (the one
//! git and GNU diff use by default; its heuristics bound the worst case). The
//! histogram algorithm was 17x slower on a file with every 7th line changed.

use imara_diff::intern::InternedInput;
use imara_diff::{Algorithm, UnifiedDiffBuilder};

pub use wicket_protocol::limits::{CARD_DIFF_MAX_BYTES, CARD_DIFF_MAX_LINES};

/// What a card shows of a diff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CardDiff {
    /// The diff as the card shows it.
    pub text: String,
    /// The full diff's size in bytes.
    pub bytes: u64,
    /// True when the card shows only its first lines.
    pub truncated: bool,
}

/// The full unified diff from `before` (`None`: the file is absent) to `after`.
pub fn unified(path: &str, before: Option<&[u8]>, after: &[u8]) -> String {
    between(path, before, Some(after))
}

/// A unified diff of a change to `path`: `None` before is a file created
/// (`--- /dev/null`), `None` after one deleted (`+++ /dev/null`).
pub fn between(path: &str, before: Option<&[u8]>, after: Option<&[u8]>) -> String {
    let before_text = before.map(String::from_utf8_lossy).unwrap_or_default();
    let after_text = after.map(String::from_utf8_lossy).unwrap_or_default();
    let input = InternedInput::new(before_text.as_ref(), after_text.as_ref());
    let body = imara_diff::diff(Algorithm::Myers, &input, UnifiedDiffBuilder::new(&input));
    let side = |bytes: Option<&[u8]>, prefix: &str| match bytes {
        Some(_) => format!("{prefix}/{path}"),
        None => "/dev/null".to_string(),
    };
    format!(
        "--- {}\n+++ {}\n{body}",
        side(before, "a"),
        side(after, "b")
    )
}

/// Cuts a diff for a card: whole up to [`CARD_DIFF_MAX_BYTES`], else its first
/// [`CARD_DIFF_MAX_LINES`] lines.
pub fn for_card(full: String) -> CardDiff {
    let bytes = full.len() as u64;
    if full.len() <= CARD_DIFF_MAX_BYTES {
        return CardDiff {
            text: full,
            bytes,
            truncated: false,
        };
    }
    let end = memchr::memchr_iter(b'\n', full.as_bytes())
        .nth(CARD_DIFF_MAX_LINES - 1)
        .map_or(full.len(), |at| at + 1);
    // 400 long lines could still be large; keep the card within its byte limit too.
    let mut end = end.min(CARD_DIFF_MAX_BYTES);
    while !full.is_char_boundary(end) {
        end -= 1;
    }
    CardDiff {
        text: full[..end].to_string(),
        bytes,
        truncated: true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deleted_file_diffs_to_dev_null() {
        let diff = between("y.txt", Some(b"gone\n"), None);
        assert_eq!(diff, "--- a/y.txt\n+++ /dev/null\n@@ -1,1 +1,0 @@\n-gone\n");
    }

    #[test]
    fn a_new_file_diffs_against_dev_null() {
        let diff = unified("a.txt", None, b"hello\n");
        assert_eq!(
            diff,
            "--- /dev/null\n+++ b/a.txt\n@@ -1,0 +1,1 @@\n+hello\n"
        );
    }

    #[test]
    fn card_diff_edges() {
        let exact = "x".repeat(CARD_DIFF_MAX_BYTES - 1) + "\n";
        let card = for_card(exact.clone());
        assert!(!card.truncated);
        assert_eq!(card.text, exact);
        let over = exact + "y";
        let card = for_card(over);
        assert!(card.truncated);
        assert_eq!(card.bytes, CARD_DIFF_MAX_BYTES as u64 + 1);
        let many: String = (0..5000).map(|i| format!("+line {i:020}\n")).collect();
        let card = for_card(many.clone());
        assert!(card.truncated);
        assert_eq!(card.text.lines().count(), CARD_DIFF_MAX_LINES);
        assert_eq!(card.bytes, many.len() as u64);
    }
}
