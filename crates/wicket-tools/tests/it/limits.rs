//! Each limit at its edge.

use wicket_protocol::{ErrorKind, GrepArgs, ListDirArgs, ReadFileArgs, SearchReplaceArgs};
use wicket_tools::limits::*;
use wicket_tools::tools::search_replace::replaced;

use crate::*;
use wicket_tools::Cancel;

fn read_at(
    tools: &Tools,
    path: &str,
    offset: Option<u64>,
    line: Option<u64>,
) -> wicket_protocol::ReadFileOutput {
    read_lines(tools, path, offset, line, None)
}

#[test]
fn read_exactly_the_limit_has_no_next() {
    let f = fixture();
    f.write("exact", &"a".repeat(READ_FILE_MAX_BYTES));
    let out = read_at(&f.tools(), "exact", None, None);
    assert_eq!(out.content.len(), READ_FILE_MAX_BYTES);
    assert_eq!(out.next_offset, None);
}

#[test]
fn read_one_over_the_limit_gives_the_next_offset() {
    let f = fixture();
    f.write("over", &"a".repeat(READ_FILE_MAX_BYTES + 1));
    let t = f.tools();
    let out = read_at(&t, "over", None, None);
    assert_eq!(out.content.len(), READ_FILE_MAX_BYTES);
    assert_eq!(out.next_offset, Some(READ_FILE_MAX_BYTES as u64));
    let rest = read_at(&t, "over", out.next_offset, None);
    assert_eq!(rest.content, "a");
    assert_eq!(rest.next_offset, None);
}

fn sample_text() -> String {
    // Multi-byte characters everywhere, so chunk edges fall inside them.
    (0..6000)
        .map(|i| format!("line {i}: héllo wörld ✓ 🦀 {}\n", "x".repeat(i % 37)))
        .collect()
}

#[test]
fn chunked_reads_by_offset_reassemble_the_file_exactly() {
    let f = fixture();
    let text = sample_text();
    f.write("big.txt", &text);
    let t = f.tools();
    let mut offset = Some(0);
    let mut joined = String::new();
    let mut calls = 0;
    while let Some(at) = offset {
        let out = read_at(&t, "big.txt", Some(at), None);
        assert!(out.content.len() <= READ_FILE_MAX_BYTES);
        joined.push_str(&out.content);
        offset = out.next_offset;
        calls += 1;
    }
    assert!(calls > 3);
    assert_eq!(joined, text);
}

#[test]
fn chunked_reads_by_line_reassemble_the_file_exactly() {
    let f = fixture();
    let text = sample_text();
    f.write("big.txt", &text);
    let t = f.tools();
    let mut line = Some(1);
    let mut joined = String::new();
    while let Some(at) = line {
        let out = read_at(&t, "big.txt", None, Some(at));
        assert!(out.content.ends_with('\n'));
        joined.push_str(&out.content);
        line = out.next_line;
    }
    assert_eq!(joined, text);
    let third = read_at(&t, "big.txt", None, Some(3));
    assert!(third.content.starts_with("line 2: "));
}

#[test]
fn a_read_never_splits_a_character() {
    let f = fixture();
    // 32767 ASCII bytes then a 4-byte crab: the limit falls inside it.
    let text = format!("{}🦀tail", "a".repeat(READ_FILE_MAX_BYTES - 1));
    f.write("edge", &text);
    let t = f.tools();
    let out = read_at(&t, "edge", None, None);
    assert_eq!(out.content.len(), READ_FILE_MAX_BYTES - 1);
    let rest = read_at(&t, "edge", out.next_offset, None);
    assert_eq!(rest.content, "🦀tail");
    // An offset inside a character starts at that character.
    let inside = read_at(&t, "edge", Some(READ_FILE_MAX_BYTES as u64 + 1), None);
    assert_eq!(inside.content, "🦀tail");
}

/// Lines of varying length over a file of several 256 KiB scan buffers:
/// every line read by number starts where counting the bytes says, the
/// ones at each buffer's edge included, and one past the last is refused.
#[test]
fn lines_deep_in_a_file_start_where_they_should() {
    let f = fixture();
    let mut text = String::new();
    let mut starts = vec![0usize];
    for n in 0..40_000 {
        text.push_str(&format!("{n}:{}\n", "é".repeat(n % 23)));
        starts.push(text.len());
    }
    starts.pop();
    assert!(text.len() > 3 * 256 * 1024);
    f.write("deep.txt", &text);
    let t = f.tools();
    // Lines starting just after each buffer edge, and a spread of others.
    let mut wanted: Vec<usize> = (1..4)
        .flat_map(|edge| {
            let at = starts.partition_point(|&start| start <= edge * 256 * 1024);
            [at - 1, at, at + 1]
        })
        .collect();
    wanted.extend([0, 1, 2, 1_000, 39_998, 39_999]);
    for index in wanted {
        let out = read_at(&t, "deep.txt", None, Some(index as u64 + 1));
        assert_eq!(out.offset, starts[index] as u64, "line {}", index + 1);
        assert!(
            out.content.starts_with(&format!("{index}:")),
            "line {}",
            index + 1
        );
    }
    let location = t.workspace().classify("deep.txt").unwrap();
    let past = ReadFileArgs {
        limit: Default::default(),
        path: "deep.txt".into(),
        offset: None,
        line: Some(40_002),
    };
    let error = t.read_file(&location, &past).unwrap_err();
    assert!(error.to_string().contains("40000 line(s)"), "{error}");
}

#[test]
fn binary_files_are_reported_with_their_size() {
    let f = fixture();
    std::fs::write(f.ws.join("bin"), [0u8, 1, 2, 3, 255]).unwrap();
    let out = read_at(&f.tools(), "bin", None, None);
    assert!(out.binary);
    assert_eq!(out.size, 5);
    assert!(out.content.is_empty());
}

#[test]
fn a_line_past_the_end_is_invalid() {
    let f = fixture();
    let t = f.tools();
    let location = t.workspace().classify("real.txt").unwrap();
    let args = ReadFileArgs {
        limit: Default::default(),
        path: "real.txt".into(),
        offset: None,
        line: Some(9),
    };
    assert_eq!(kind(t.read_file(&location, &args)), ErrorKind::InvalidArgs);
    let both = ReadFileArgs {
        limit: Default::default(),
        path: "real.txt".into(),
        offset: Some(0),
        line: Some(1),
    };
    assert_eq!(kind(t.read_file(&location, &both)), ErrorKind::InvalidArgs);
}

fn grep(tools: &Tools, pattern: &str) -> wicket_protocol::GrepOutput {
    tools
        .grep(
            None,
            &GrepArgs {
                pattern: pattern.into(),
                path: None,
                glob: None,
                case_insensitive: false,
            },
            &Cancel::default(),
        )
        .unwrap()
}

#[test]
fn grep_results_are_in_path_order() {
    let f = fixture();
    for name in ["b/z.txt", "a/y.txt", "a/b/x.txt", "c.txt", "a.txt"] {
        f.write(name, "needle\n");
    }
    let out = grep(&f.tools(), "needle");
    assert_eq!(
        out.matches,
        vec![
            "a/b/x.txt:1:needle",
            "a/y.txt:1:needle",
            "a.txt:1:needle",
            "b/z.txt:1:needle",
            "c.txt:1:needle"
        ]
    );
    assert!(!out.truncated);
}

#[test]
fn grep_stops_at_the_limit() {
    let f = fixture();
    for i in 0..50 {
        f.write(&format!("f{i:03}.txt"), &"hit\n".repeat(4));
    }
    let exactly = grep(&f.tools(), "hit");
    assert_eq!(exactly.matches.len(), GREP_MAX_MATCHES);
    assert!(!exactly.truncated);
    f.write("f999.txt", "hit\n");
    let over = grep(&f.tools(), "hit");
    assert_eq!(over.matches.len(), GREP_MAX_MATCHES);
    assert!(over.truncated);
    assert!(over.note.unwrap().contains("200"));
    assert_eq!(over.matches[0], "f000.txt:1:hit");
    assert_eq!(over.matches[199], "f049.txt:4:hit");
}

#[test]
fn grep_honours_gitignore_and_skips_git_and_binaries() {
    let f = fixture();
    f.write(".gitignore", "ignored/\n*.log\n");
    f.write("ignored/a.txt", "needle\n");
    f.write("x.log", "needle\n");
    f.write(".git/config", "needle\n");
    f.write("kept.txt", "needle\n");
    std::fs::write(f.ws.join("bin.dat"), b"needle\0\x01").unwrap();
    let out = grep(&f.tools(), "needle");
    assert_eq!(out.matches, vec!["kept.txt:1:needle"]);
}

#[test]
fn grep_glob_case_and_bad_patterns() {
    let f = fixture();
    f.write("a.rs", "Needle\n");
    f.write("b.md", "needle\n");
    let t = f.tools();
    let args = GrepArgs {
        pattern: "needle".into(),
        path: None,
        glob: Some("*.rs".into()),
        case_insensitive: true,
    };
    assert_eq!(
        t.grep(None, &args, &Cancel::default()).unwrap().matches,
        vec!["a.rs:1:Needle"]
    );
    let bad = GrepArgs {
        pattern: "(".into(),
        path: None,
        glob: None,
        case_insensitive: false,
    };
    assert_eq!(
        kind(t.grep(None, &bad, &Cancel::default())),
        ErrorKind::InvalidArgs
    );
}

#[test]
fn list_dir_stops_at_the_limit_and_counts_the_rest() {
    let f = fixture();
    for i in 0..LIST_DIR_MAX_ENTRIES {
        f.write(&format!("many/{i:04}"), "");
    }
    let t = f.tools();
    let location = t.workspace().classify("many").unwrap();
    let args = ListDirArgs {
        path: Some("many".into()),
    };
    let out = t.list_dir(&location, &args).unwrap();
    assert_eq!((out.entries.len(), out.omitted), (LIST_DIR_MAX_ENTRIES, 0));
    f.write("many/9999", "");
    f.write("many/9998", "");
    let out = t.list_dir(&location, &args).unwrap();
    assert_eq!((out.entries.len(), out.omitted), (LIST_DIR_MAX_ENTRIES, 2));
    assert_eq!(out.entries[0], "0000");
}

#[test]
fn list_dir_of_a_file_or_a_fifo_says_what_is_there() {
    let f = fixture();
    f.write("a.txt", "x");
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        f.ws.join("pipe"),
        rustix::fs::Mode::from_raw_mode(0o600),
    )
    .unwrap();
    let t = f.tools();
    let file = list(&t, "a.txt").unwrap_err();
    assert_eq!(file.kind, ErrorKind::InvalidArgs);
    assert!(file.message.contains("is a file, not a folder"), "{file}");
    let pipe = list(&t, "pipe").unwrap_err();
    assert_eq!(pipe.kind, ErrorKind::InvalidArgs);
    assert!(pipe.message.contains("is not a folder"), "{pipe}");
    assert_eq!(kind(list(&t, "missing")), ErrorKind::NotFound);
}

fn sr(old: &str, new: &str, all: bool) -> SearchReplaceArgs {
    SearchReplaceArgs {
        path: "f".into(),
        old: old.into(),
        new: new.into(),
        replace_all: all,
    }
}

#[test]
fn search_replace_needs_exactly_one_match_unless_replace_all() {
    let text = b"one\ntwo\none\n";
    assert_eq!(
        replaced(Some(text), &sr("two", "2", false)).unwrap(),
        b"one\n2\none\n"
    );
    let error = replaced(Some(text), &sr("one", "1", false)).unwrap_err();
    assert_eq!(error.kind, ErrorKind::NotUnique);
    assert!(
        error.message.contains("2 times") && error.message.contains("lines 1, 3"),
        "{}",
        error.message
    );
    assert_eq!(
        replaced(Some(text), &sr("one", "1", true)).unwrap(),
        b"1\ntwo\n1\n"
    );
    assert_eq!(
        replaced(Some(text), &sr("three", "3", false))
            .unwrap_err()
            .kind,
        ErrorKind::NoMatch
    );
    assert_eq!(
        replaced(None, &sr("a", "b", false)).unwrap_err().kind,
        ErrorKind::NotFound
    );
    assert_eq!(
        replaced(Some(text), &sr("", "b", false)).unwrap_err().kind,
        ErrorKind::InvalidArgs
    );
}

#[test]
fn search_replace_file_size_edge() {
    let exact = "a".repeat(WRITE_MAX_BYTES - 1) + "b";
    assert!(replaced(Some(exact.as_bytes()), &sr("b", "c", false)).is_ok());
    let over = exact + "d";
    assert_eq!(
        replaced(Some(over.as_bytes()), &sr("b", "c", false))
            .unwrap_err()
            .kind,
        ErrorKind::TooLarge
    );
}

#[test]
fn write_content_size_edge() {
    let f = fixture();
    let t = f.tools();
    write(&t, "exact", &"a".repeat(WRITE_MAX_BYTES)).unwrap();
    assert_eq!(
        std::fs::metadata(f.ws.join("exact")).unwrap().len(),
        WRITE_MAX_BYTES as u64
    );
    assert_eq!(
        kind(write(&t, "over", &"a".repeat(WRITE_MAX_BYTES + 1))),
        ErrorKind::TooLarge
    );
    assert!(!f.ws.join("over").exists());
}

fn read_lines(
    tools: &Tools,
    path: &str,
    offset: Option<u64>,
    line: Option<u64>,
    limit: Option<u64>,
) -> wicket_protocol::ReadFileOutput {
    let location = tools.workspace().classify(path).unwrap();
    tools
        .read_file(
            &location,
            &ReadFileArgs {
                path: path.into(),
                offset,
                line,
                limit,
            },
        )
        .unwrap()
}

#[test]
fn line_fields_hold_with_and_without_a_final_newline_and_with_crlf() {
    let f = fixture();
    f.write("four", "a\nb\nc\nd\n");
    f.write("open", "a\nb\nc\nd");
    f.write("crlf", "a\r\nb\r\nc\r\n");
    f.write("empty", "");
    let t = f.tools();
    for (name, total) in [("four", 4), ("open", 4), ("crlf", 3), ("empty", 0)] {
        let whole = read_lines(&t, name, None, None, None);
        assert_eq!(whole.total_lines, Some(total), "{name}");
        assert_eq!(whole.first_line, Some(1), "{name}");
        assert_eq!((whole.next_line, whole.next_offset), (None, None), "{name}");
    }
    // Two lines at a time, by line, then from an offset.
    let two = read_lines(&t, "four", None, Some(2), Some(2));
    assert_eq!(two.content, "b\nc\n");
    assert_eq!(
        (two.first_line, two.next_line, two.next_offset),
        (Some(2), Some(4), Some(6))
    );
    assert_eq!(two.total_lines, Some(4));
    let rest = read_lines(&t, "four", two.next_offset, None, None);
    assert_eq!((rest.content.as_str(), rest.first_line), ("d\n", Some(4)));
    let crlf = read_lines(&t, "crlf", None, Some(2), Some(1));
    assert_eq!((crlf.content.as_str(), crlf.next_line), ("b\r\n", Some(3)));
    // Line 5 of a four-line file is past its end, and the count says four.
    let location = t.workspace().classify("four").unwrap();
    let past = t.read_file(
        &location,
        &ReadFileArgs {
            path: "four".into(),
            offset: None,
            line: Some(5),
            limit: None,
        },
    );
    let error = past.unwrap_err();
    assert!(error.message.contains("has 4 line(s)"), "{}", error.message);
}

#[test]
fn a_read_ends_at_a_line_unless_one_line_is_longer_than_the_limit() {
    let f = fixture();
    let short = "short line\n".repeat(100);
    let long = "x".repeat(READ_FILE_MAX_BYTES + 100);
    f.write("mixed", &format!("{short}{long}\nafter\n"));
    let t = f.tools();
    let first = read_lines(&t, "mixed", None, None, None);
    assert_eq!(
        first.content, short,
        "the long line is left whole for the next read"
    );
    assert_eq!((first.next_line, first.total_lines), (Some(101), Some(102)));
    assert_eq!(first.note, None);
    let inside = read_lines(&t, "mixed", first.next_offset, None, None);
    assert_eq!(inside.content.len(), READ_FILE_MAX_BYTES);
    assert_eq!(inside.first_line, Some(101));
    assert_eq!(inside.next_line, None, "the read ends inside line 101");
    let note = inside.note.unwrap();
    assert!(note.contains("line 101 is longer than 32 KiB"), "{note}");
    let end = read_lines(&t, "mixed", inside.next_offset, None, None);
    assert_eq!(end.content, format!("{}\nafter\n", "x".repeat(100)));
    assert_eq!(end.first_line, Some(101));
}

#[test]
fn a_line_past_the_end_of_a_large_sparse_file_skips_its_hole() {
    let f = fixture();
    let text: String = (0..1000).map(|n| format!("line {n}\n")).collect();
    f.write("sparse.txt", &text);
    // 1 TiB never written past the text: read through, twice, it took hours.
    std::fs::OpenOptions::new()
        .write(true)
        .open(f.ws.join("sparse.txt"))
        .unwrap()
        .set_len(1 << 40)
        .unwrap();
    let t = f.tools();
    let location = t.workspace().classify("sparse.txt").unwrap();
    let past = ReadFileArgs {
        limit: Default::default(),
        path: "sparse.txt".into(),
        offset: None,
        line: Some(5_000),
    };
    let error = t.read_file(&location, &past).unwrap_err();
    assert_eq!(error.kind, ErrorKind::InvalidArgs);
    // The text's 1000 newlines, and the hole's zeros as one last line.
    assert!(error.to_string().contains("1001 line(s)"), "{error}");
    let out = read_at(&t, "sparse.txt", None, Some(1000));
    assert_eq!(out.content.lines().next(), Some("line 999"));
}
