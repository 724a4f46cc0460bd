//! Text that reaches a terminal. Model text, file contents, paths and
//! command output can carry control characters (ESC sequences that move the
//! cursor and redraw a card, CR, backspace), bidi overrides that reorder
//! what a person reads, and format characters that show as nothing (a
//! zero-width space after `README.md`, a BOM, tag characters). [`visible`]
//! makes every one of them visible, so what a card shows is what it says;
//! every printer goes through it. [`mark_blank_runs`] shows a long run of
//! blanks as `␠×N`, so a card line cannot hide its tail off screen.

use unicode_general_category::{GeneralCategory, get_general_category};

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
        // Line and paragraph separators: a line end a person cannot see.
        '\u{2028}' | '\u{2029}' => true,
        // Plain ASCII is never a format character: the common case stays cheap.
        ' '..='~' => false,
        // Format characters (Cf): zero-width space and joiners, word
        // joiner, BOM, soft hyphen, tag characters, and the bidi
        // embeddings, overrides, isolates and marks.
        _ => get_general_category(c) == GeneralCategory::Format,
    }
}

/// An argv as one line a person can read back exactly: each argument in
/// POSIX shell quoting (`["x y"]` and `["x", "y"]` read differently), then
/// made [`visible_line`] (a newline in a script shows as `␊`).
pub fn shell_words<S: AsRef<str>>(argv: &[S]) -> String {
    let quoted: Vec<String> = argv
        .iter()
        .map(|arg| {
            let arg = arg.as_ref();
            match shlex::try_quote(arg) {
                Ok(quoted) => quoted.into_owned(),
                // A NUL cannot be quoted for a shell; single quotes and ␀ show it.
                Err(_) => format!("'{arg}'"),
            }
        })
        .collect();
    visible_line(&quoted.join(" "))
}

/// Blanks in a row past this many show as one marker.
pub const BLANK_RUN_MAX: usize = 8;

/// The shortest run that is marked: [`BLANK_RUN_MAX`] + 1 spaces (checked
/// without allocating, for every line of a card on every frame).
const MARKED_RUN: &str = "         ";
const _: () = assert!(MARKED_RUN.len() == BLANK_RUN_MAX + 1);

/// `line` with every run of more than [`BLANK_RUN_MAX`] spaces shown as
/// `␠×N`: 150 spaces cannot push the rest of a line past the edge of a card.
pub fn mark_blank_runs(line: &str) -> String {
    if !line.contains(MARKED_RUN) {
        return line.to_string();
    }
    let mut out = String::with_capacity(line.len());
    let mut run = 0usize;
    let flush = |out: &mut String, run: usize| {
        if run > BLANK_RUN_MAX {
            out.push_str(&format!("␠×{run}"));
        } else {
            out.push_str(&" ".repeat(run));
        }
    };
    for c in line.chars() {
        if c == ' ' {
            run += 1;
            continue;
        }
        flush(&mut out, run);
        run = 0;
        out.push(c);
    }
    flush(&mut out, run);
    out
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

    #[test]
    fn format_characters_become_visible() {
        assert_eq!(visible_line("README.md\u{200b}"), "README.md<U+200B>");
        assert_eq!(
            visible("\u{feff}a\u{2060}b\u{e0041}c\u{ad}"),
            "<U+FEFF>a<U+2060>b<U+E0041>c<U+00AD>"
        );
    }

    #[test]
    fn an_argv_reads_back_exactly() {
        assert_eq!(shell_words(&["x y"]), "'x y'");
        assert_eq!(shell_words(&["x", "y"]), "x y");
        assert_eq!(shell_words(&["sh", "-c", "a\nb"]), "sh -c 'a␊b'");
        assert_eq!(shell_words(&["echo", "it's"]), r#"echo "it's""#);
        assert_eq!(shell_words(&["a\u{0}b"]), "'a␀b'");
    }

    #[test]
    fn long_blank_runs_show_their_length() {
        assert_eq!(mark_blank_runs("a        b"), "a        b");
        let hidden = format!("DEBUG = False{}; import os", " ".repeat(150));
        assert_eq!(mark_blank_runs(&hidden), "DEBUG = False␠×150; import os");
        assert_eq!(mark_blank_runs(&format!("x{}", " ".repeat(9))), "x␠×9");
    }

    use proptest::strategy::Strategy;

    /// Bidi controls are Cf, so "no Cf" covers them; C0, C1 and the line
    /// separators are checked by name.
    fn hidden(c: char) -> bool {
        c.is_control()
            || matches!(c, '\u{2028}' | '\u{2029}')
            || get_general_category(c) == GeneralCategory::Format
    }

    proptest::proptest! {
        #[test]
        fn nothing_hidden_gets_through(text in proptest::prelude::any::<String>()) {
            let shown = visible_line(&text);
            proptest::prop_assert!(!shown.chars().any(hidden), "{shown:?}");
            let shown = visible(&text);
            proptest::prop_assert!(
                !shown.chars().any(|c| hidden(c) && c != '\n' && c != '\t'),
                "{shown:?}"
            );
        }

        #[test]
        fn visible_text_is_unchanged(text in "[^\\p{Cc}\\p{Cf}\\p{Zl}\\p{Zp}]*") {
            proptest::prop_assert_eq!(visible_line(&text), text.clone());
            proptest::prop_assert_eq!(visible(&text), text);
        }

        #[test]
        fn hidden_characters_are_always_marked(
            before in "[a-z]{0,4}",
            c in proptest::char::any().prop_filter("hidden", |c| hidden(*c) && !matches!(*c, '\n' | '\t')),
            after in "[a-z]{0,4}",
        ) {
            let text = format!("{before}{c}{after}");
            proptest::prop_assert!(!visible(&text).contains(c));
        }
    }
}
