//! Text that reaches a terminal. Model text, file contents, paths and
//! command output can carry control characters (ESC sequences that move the
//! cursor and redraw a card, CR, backspace) and bidi overrides that reorder
//! what a person reads. [`visible`] makes every one of them visible, so
//! what a card shows is what it says; every printer goes through it.

/// `text` with control characters and bidi controls made visible; line
/// ends and tabs are kept. For multi-line text (a diff, a message, output).
pub fn visible(text: &str) -> String {
    escape(text, true)
}

/// [`visible`] for one line (a path, an argument): line ends and tabs are
/// made visible too.
pub fn visible_line(text: &str) -> String {
    escape(text, false)
}

/// `text` whole when it fits in `max` bytes, else its first and last
/// `max / 2` bytes (on character boundaries) around a marker that says how
/// many bytes were cut: what a model is given of a long result.
pub fn head_tail(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut head = max / 2;
    while !text.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = text.len() - max / 2;
    while !text.is_char_boundary(tail) {
        tail += 1;
    }
    format!(
        "{}\n[… {} bytes cut …]\n{}",
        &text[..head],
        tail - head,
        &text[tail..]
    )
}

fn needs_escape(c: char, multiline: bool) -> bool {
    match c {
        '\n' | '\t' => !multiline,
        '\u{00}'..='\u{1f}' | '\u{7f}' | '\u{80}'..='\u{9f}' => true,
        // Bidi embeddings, overrides, isolates and marks.
        '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' => true,
        '\u{061c}' | '\u{2028}' | '\u{2029}' => true,
        _ => false,
    }
}

fn escape(text: &str, multiline: bool) -> String {
    if !text.chars().any(|c| needs_escape(c, multiline)) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if !needs_escape(c, multiline) {
            out.push(c);
            continue;
        }
        match c {
            // C0 controls as their Unicode control pictures: ESC is ␛, CR is ␍.
            '\u{00}'..='\u{1f}' => {
                out.push(char::from_u32(0x2400 + c as u32).unwrap_or('?'));
            }
            '\u{7f}' => out.push('\u{2421}'),
            _ => out.push_str(&format!("<U+{:04X}>", c as u32)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_tail_keeps_both_ends_and_counts_the_cut() {
        assert_eq!(head_tail("short", 10), "short");
        let text = format!("{}{}{}", "a".repeat(10), "é".repeat(50), "z".repeat(10));
        let cut = head_tail(&text, 20);
        assert!(cut.starts_with("aaaaaaaaaa\n[…"), "{cut}");
        assert!(cut.ends_with("\nzzzzzzzzzz"), "{cut}");
        assert!(cut.contains("[… 100 bytes cut …]"), "{cut}");
    }

    #[test]
    fn escapes_and_overrides_become_visible() {
        let spoof = "+# just a comment\x1b[7A\x1b[2K\recho pwned\u{8}";
        let shown = visible(spoof);
        assert!(!shown.contains('\x1b') && !shown.contains('\r') && !shown.contains('\u{8}'));
        assert_eq!(shown, "+# just a comment␛[7A␛[2K␍echo pwned␈");
        assert_eq!(
            visible("a\u{202e}b\u{2066}c\u{9b}"),
            "a<U+202E>b<U+2066>c<U+009B>"
        );
        assert_eq!(visible("line\n\tindented\n"), "line\n\tindented\n");
        assert_eq!(visible_line("a\nb\tc"), "a␊b␉c");
        assert_eq!(visible("plain ü ✓"), "plain ü ✓");
    }
}
