//! insta settings for what a person reads: times, temp paths, ids and
//! durations vary from run to run; the rest is pinned.

/// The filters: timestamps, temp folders, card/question/call ids, session
/// ids and durations.
pub const REDACTIONS: [(&str, &str); 7] = [
    (r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z", "[TIME]"),
    (r"/tmp/\.tmp[A-Za-z0-9]+", "[TMP]"),
    (r"(card|q|call|hook)-[0-9a-f]{16}", "$1-[ID]"),
    (r"\d{8}-\d{6}-[0-9a-f]{8}", "[SESSION]"),
    (r"\b\d+ ms\b", "[N] ms"),
    (r#""duration_ms":\d+"#, r#""duration_ms":[N]"#),
    (r"\$\d+\.\d{4}", "$$[COST]"),
];

/// insta settings with [`REDACTIONS`] and `extra` (literal text → its
/// name, such as the fixture's root → `[ROOT]`), applied first.
pub fn settings(extra: &[(&str, &str)]) -> insta::Settings {
    let mut settings = insta::Settings::clone_current();
    for (from, to) in extra {
        settings.add_filter(&regex_escape(from), *to);
    }
    for (pattern, replacement) in REDACTIONS {
        settings.add_filter(pattern, replacement);
    }
    settings.set_prepend_module_to_snapshot(false);
    settings
}

fn regex_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if "\\.+*?()|[]{}^$#&-~".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}
