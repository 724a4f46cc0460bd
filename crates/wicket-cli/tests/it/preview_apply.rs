//! A preview applies exactly what its card showed (round 5), through the
//! binary: hostile upper layers (a very deep tree, a sparse file), a
//! relative `WICKET_HOME`, a folder the command replaced, a race with the
//! workspace, a cut diff and a card past its bound.

use crate::preview::{fixture, previewed, result};
use crate::*;

/// The change the card lists at `path`.
fn change<'c>(card: &'c Value, path: &str) -> &'c Value {
    card["changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|change| change["path"] == path)
        .unwrap_or_else(|| panic!("no change at {path}: {card}"))
}

#[test]
fn a_preview_of_a_tree_ten_thousand_folders_deep_shows_its_card_and_wicket_lives() {
    let f = fixture();
    // Perl makes and enters each folder by its name alone: a shell's `cd`
    // works out the whole path each time, and past PATH_MAX it cannot.
    let command = "perl -e 'for (1..10000) { mkdir \"d\" or die $!; chdir \"d\" or die $! } \
                   open my $f, \">\", \"f\" or die $!; print $f \"end\\n\"'";
    let mut shown = false;
    let events = previewed(&f, command, "discard", |card| {
        shown = true;
        assert_eq!(card["exit_code"], 0, "{card:#}");
        let d = change(card, "d");
        assert_eq!(d["change"], "created", "{card:#}");
        // 9,999 folders below it and the file at the bottom.
        assert_eq!(d["entries"], 10_000, "{card:#}");
    });
    assert!(shown, "the effects card came up");
    assert_eq!(result(&events)["output"]["preview"], "discarded");
    assert!(!f.ws.join("d").exists());
}

/// The bytes the files below `root` take on disk (blocks, not sizes).
fn on_disk(root: &std::path::Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let mut total = 0;
    let mut stack = vec![root.to_path_buf()];
    while let Some(folder) = stack.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            total += meta.blocks() * 512;
            if meta.is_dir() {
                stack.push(path);
            }
        }
    }
    total
}

#[test]
fn a_sparse_terabyte_is_refused_on_the_card_and_never_stored() {
    let f = fixture();
    std::fs::write(
        f.home.join("config.toml"),
        "[sandbox]\npreview_max_mb = 64\n",
    )
    .unwrap();
    let events = previewed(
        &f,
        "truncate -s 1T x && echo small > small.txt",
        "apply",
        |card| {
            assert_eq!(card["exit_code"], 0, "{card:#}");
            let x = change(card, "x");
            assert_eq!(x["change"], "refused", "{card:#}");
            assert_eq!(x["diff_truncated"], true, "{card:#}");
            let why = x["diff"].as_str().unwrap();
            assert!(
                why.contains("holes counted") && why.contains("preview_max_mb (64.0 MiB)"),
                "{card:#}"
            );
            assert_eq!(change(card, "small.txt")["change"], "created");
        },
    );
    assert_eq!(result(&events)["output"]["preview"], "applied");
    assert!(!f.ws.join("x").exists(), "a refused file is never applied");
    assert_eq!(f.read("small.txt"), "small\n");
    let used = on_disk(&f.home);
    assert!(
        used < 8 * 1024 * 1024,
        "{used} bytes on disk under the home"
    );
}

#[test]
fn a_relative_wicket_home_previews_as_an_absolute_one() {
    let f = fixture();
    let arguments = json!({"argv": ["sh", "-c", "echo made > made.txt"], "preview": true});
    let events = crate::preview::previewed_by(
        &f,
        arguments,
        "apply",
        |card| assert_eq!(change(card, "made.txt")["change"], "created", "{card:#}"),
        |command| {
            command.env("WICKET_HOME", "home").current_dir(&f.root);
        },
    );
    let result = result(&events);
    assert_eq!(result["ok"], true, "{result:#}");
    assert_eq!(result["output"]["preview"], "applied", "{result:#}");
    assert_eq!(f.read("made.txt"), "made\n");
    assert!(
        f.home.join("sessions").is_dir(),
        "the home is the one named"
    );
}

/// A copy of the workspace (its `.git` too) with `command` run in it
/// plainly: what apply must make of the workspace.
fn plain_run(f: &Fixture, command: &str) -> std::path::PathBuf {
    let copy = f.root.join("plain");
    let copied = Command::new("cp")
        .arg("-a")
        .arg(&f.ws)
        .arg(&copy)
        .status()
        .unwrap();
    assert!(copied.success());
    let ran = Command::new("sh")
        .args(["-c", command])
        .current_dir(&copy)
        .status()
        .unwrap();
    assert!(ran.success());
    copy
}

/// The paths the card lists, each with its change.
fn listed(card: &Value) -> Vec<(String, String)> {
    card["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|change| {
            (
                change["path"].as_str().unwrap().to_string(),
                change["change"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

const REPLACE_SRC: &str = "rm -rf src && mkdir src && printf 'fn a() {}\\n' > src/a.rs";

#[test]
fn a_replaced_folder_lists_each_file_apply_removes_and_apply_makes_what_a_plain_run_makes() {
    let f = fixture();
    f.write("src/a.rs", "fn a() {}\n");
    f.write("src/b.rs", "fn b() {}\n");
    f.write("src/deep/c.rs", "fn c() {}\n");
    let plain = plain_run(&f, REPLACE_SRC);
    let mut card_seen = Vec::new();
    let events = previewed(&f, REPLACE_SRC, "apply", |card| card_seen = listed(card));
    // src/a.rs is made again byte for byte: no change; src stays a folder of the same mode.
    assert_eq!(
        card_seen,
        [
            ("src/b.rs".to_string(), "deleted".to_string()),
            ("src/deep".into(), "deleted".into()),
            ("src/deep/c.rs".into(), "deleted".into()),
        ]
    );
    assert_eq!(result(&events)["output"]["preview"], "applied");
    assert_eq!(crate::preview::tree(&f.ws), crate::preview::tree(&plain));
}

#[test]
fn a_replaced_folder_with_many_removals_is_one_entry_with_their_count_and_apply_removes_those() {
    let f = fixture();
    f.write("src/a.rs", "fn a() {}\n");
    for n in 0..30 {
        f.write(&format!("src/gone{n:02}.rs"), "gone\n");
    }
    f.write("src/more/x.rs", "x\n");
    let plain = plain_run(&f, REPLACE_SRC);
    let events = previewed(&f, REPLACE_SRC, "apply", |card| {
        assert_eq!(
            listed(card),
            [("src".to_string(), "deleted".to_string())],
            "{card:#}"
        );
        // 30 files, the folder `more` and the file in it.
        assert_eq!(change(card, "src")["entries"], 32, "{card:#}");
        assert!(change(card, "src").get("bytes").is_none(), "{card:#}");
    });
    assert_eq!(result(&events)["output"]["preview"], "applied");
    assert_eq!(crate::preview::tree(&f.ws), crate::preview::tree(&plain));
}

#[test]
fn a_file_made_below_a_removed_folder_while_the_card_is_open_stops_the_apply_and_is_named() {
    let f = fixture();
    f.write("d/old.txt", "old\n");
    let events = previewed(&f, "rm -rf d", "apply", |card| {
        assert_eq!(change(card, "d")["change"], "deleted", "{card:#}");
        std::fs::write(f.ws.join("d/new.txt"), "made meanwhile\n").unwrap();
    });
    let result = result(&events);
    assert_eq!(result["ok"], false, "{result:#}");
    let message = result["error"]["message"].as_str().unwrap();
    assert!(message.contains("d/new.txt"), "{result:#}");
    assert_eq!(f.read("d/new.txt"), "made meanwhile\n");
    assert_eq!(f.read("d/old.txt"), "old\n", "nothing was applied");
}

/// A text file past the part of it a card compares (256 KiB).
fn long_file(f: &Fixture) {
    let text: String = (0..40_000).map(|n| format!("line {n:06}\n")).collect();
    assert!(text.len() > 400 * 1024);
    f.write("long.txt", &text);
}

#[test]
fn a_change_past_the_compared_part_says_so_and_a_cut_diff_is_marked_where_it_stops() {
    let f = fixture();
    long_file(&f);
    previewed(
        &f,
        "sed -i '$ s/.*/the end changed/' long.txt",
        "discard",
        |card| {
            let long = change(card, "long.txt");
            assert_eq!(long["change"], "modified", "{card:#}");
            assert_eq!(long["diff_truncated"], true, "{card:#}");
            let diff = long["diff"].as_str().unwrap();
            assert!(diff.starts_with("changed past the shown part"), "{diff}");
        },
    );
    let f = fixture();
    long_file(&f);
    previewed(
        &f,
        "sed -i '1 s/.*/the start changed/' long.txt",
        "discard",
        |card| {
            let long = change(card, "long.txt");
            assert_eq!(long["diff_truncated"], true, "{card:#}");
            let diff = long["diff"].as_str().unwrap();
            assert!(diff.contains("+the start changed\n"), "{diff}");
            assert!(
                diff.ends_with(
                    "[the diff stops here: it is of the file's first 256 KiB only; the file is \
                 480006 bytes, and what is past that is not shown]\n"
                ),
                "{diff}"
            );
            // Only the first line differs in the part compared.
            let added = diff
                .lines()
                .filter(|line| line.starts_with('+') && !line.starts_with("+++"));
            assert_eq!(added.count(), 1, "{diff}");
        },
    );
}

#[test]
fn five_thousand_new_files_at_the_root_make_a_bounded_card_that_counts_the_rest_and_apply_makes_them_all()
 {
    let f = fixture();
    let command = "i=0; while [ $i -lt 5000 ]; do echo $i > f$i.txt; i=$((i+1)); done";
    let events = previewed(&f, command, "apply", |card| {
        let changes = serde_json::to_string(&card["changes"]).unwrap();
        assert!(
            changes.len() <= 64 * 1024,
            "{} bytes of changes",
            changes.len()
        );
        let listed = card["changes"].as_array().unwrap();
        let counted: u64 = listed
            .iter()
            .map(|change| change["entries"].as_u64().unwrap_or(1))
            .sum();
        assert_eq!(counted, 5000, "every file listed or counted");
        let rest = listed.last().unwrap();
        assert_eq!(
            (&rest["path"], &rest["change"]),
            (&json!("."), &json!("created"))
        );
        assert!(
            rest["diff"]
                .as_str()
                .unwrap()
                .contains("past the card's limit of 64 KiB"),
            "{rest:#}"
        );
    });
    let result = result(&events);
    assert_eq!(result["output"]["preview"], "applied", "{result:#}");
    let output = serde_json::to_string(&result["output"]).unwrap();
    assert!(
        output.len() <= 64 * 1024,
        "{} bytes to the model",
        output.len()
    );
    for n in [0, 2500, 4999] {
        assert_eq!(f.read(&format!("f{n}.txt")), format!("{n}\n"));
    }
}
