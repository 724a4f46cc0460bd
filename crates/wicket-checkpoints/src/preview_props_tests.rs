//! A property of a preview over random upper layers: whiteouts, opaque
//! folders, links, modes, kinds replaced, deep and wide trees. The upper
//! layer is made as the overlay would make it for a command that turns
//! the workspace `before` into `after` (what it copies up unchanged, and
//! whether a folder it rebuilt is opaque, chosen at random); then the
//! card lists exactly the paths where `after` differs from `before`, and
//! apply makes the workspace `after`, nothing more and nothing less.

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use proptest::prelude::*;

use super::*;

/// One entry of a tree.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Node {
    Dir(u32),
    File(u8, u32),
    Link(u8),
}

/// A tree by path (`/` between names), a folder before what is in it.
type Tree = BTreeMap<String, Node>;

fn parent(path: &str) -> Option<&str> {
    path.rfind('/').map(|at| &path[..at])
}

/// Drops what has no folder to be in: a tree a filesystem can hold.
fn normal(tree: Tree) -> Tree {
    let mut kept = Tree::new();
    for (path, node) in tree {
        let housed = match parent(&path) {
            None => true,
            Some(folder) => matches!(kept.get(folder), Some(Node::Dir(_))),
        };
        if housed {
            kept.insert(path, node);
        }
    }
    kept
}

fn node() -> impl Strategy<Value = Node> {
    prop_oneof![
        3 => prop::sample::select(vec![0o755u32, 0o750]).prop_map(Node::Dir),
        4 => (0u8..3, prop::sample::select(vec![0o644u32, 0o755])).prop_map(|(c, m)| Node::File(c, m)),
        1 => (0u8..2).prop_map(Node::Link),
    ]
}

fn entries() -> impl Strategy<Value = Vec<(String, Node)>> {
    let path = prop::collection::vec(prop::sample::select(vec!["a", "b", "c"]), 1..4)
        .prop_map(|names| names.join("/"));
    prop::collection::vec((path, node()), 0..24)
}

/// What a command did to one path of `before`.
#[derive(Debug, Clone)]
enum Edit {
    Keep,
    Remove,
    Become(Node),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![5 => Just(Edit::Keep), 1 => Just(Edit::Remove), 2 => node().prop_map(Edit::Become)]
}

/// A folder `depth` deep (`z/z/…`) and one `width` wide (`w/f00…`).
fn shape(tree: &mut Tree, depth: usize, width: usize) {
    let mut path = String::new();
    for _ in 0..depth {
        path = if path.is_empty() {
            "z".into()
        } else {
            format!("{path}/z")
        };
        tree.insert(path.clone(), Node::Dir(0o755));
    }
    if width > 0 {
        tree.insert("w".into(), Node::Dir(0o755));
    }
    for n in 0..width {
        tree.insert(format!("w/f{n:02}"), Node::File(0, 0o644));
    }
}

/// A tree, and the tree a command made of it.
fn trees() -> impl Strategy<Value = (Tree, Tree, u64)> {
    (
        entries(),
        prop::collection::vec(edit(), 64),
        entries(),
        0usize..40,
        0usize..30,
        0usize..3,
        any::<u64>(),
    )
        .prop_map(|(entries, edits, added, depth, width, reshape, seed)| {
            let mut before: Tree = entries.into_iter().collect();
            shape(&mut before, depth, width);
            let before = normal(before);
            let mut after = Tree::new();
            for (n, (path, node)) in before.iter().enumerate() {
                match edits.get(n % edits.len()).cloned().unwrap_or(Edit::Keep) {
                    Edit::Keep => {
                        after.insert(path.clone(), node.clone());
                    }
                    Edit::Remove => {}
                    Edit::Become(other) => {
                        after.insert(path.clone(), other);
                    }
                }
            }
            for (path, node) in added {
                after.entry(path).or_insert(node);
            }
            // Deep and wide ones changed at their far end too.
            match reshape {
                0 if depth > 1 => {
                    after.insert(
                        format!("{}/end", vec!["z"; depth].join("/")),
                        Node::File(1, 0o644),
                    );
                }
                1 if width > 2 => {
                    after.remove("w/f01");
                    after.insert("w/f02".into(), Node::File(2, 0o644));
                }
                _ => {}
            }
            (before, normal(after), seed)
        })
}

fn bytes(content: u8) -> Vec<u8> {
    format!("content {content}\n").into_bytes()
}

fn target(which: u8) -> String {
    format!("target-{which}")
}

/// Writes `node` at `at`.
fn make(at: &Path, node: &Node) {
    match node {
        Node::Dir(mode) => {
            std::fs::create_dir(at).unwrap();
            std::fs::set_permissions(at, std::fs::Permissions::from_mode(*mode)).unwrap();
        }
        Node::File(content, mode) => {
            std::fs::write(at, bytes(*content)).unwrap();
            std::fs::set_permissions(at, std::fs::Permissions::from_mode(*mode)).unwrap();
        }
        Node::Link(which) => std::os::unix::fs::symlink(target(*which), at).unwrap(),
    }
}

/// A coin for `path`'s `what`, the same for the same seed.
fn coin(seed: u64, path: &str, what: &str) -> bool {
    let mut hash = seed ^ 0x9e37_79b9_7f4a_7c15;
    for byte in path.bytes().chain(what.bytes()) {
        hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
    }
    hash & 1 == 1
}

/// The names directly in the folder `path` of either tree.
fn names_in(before: &Tree, after: &Tree, path: &str) -> BTreeSet<String> {
    let prefix = if path.is_empty() {
        String::new()
    } else {
        format!("{path}/")
    };
    before
        .keys()
        .chain(after.keys())
        .filter_map(|key| key.strip_prefix(&prefix))
        .filter(|rest| !rest.is_empty() && !rest.contains('/'))
        .map(str::to_string)
        .collect()
}

/// The upper layer for `before` → `after` at `path` (below a folder the
/// command replaced when `hidden`: nothing of `before` shows through);
/// whether it wrote anything there.
fn upper_at(
    upper: &Path,
    before: &Tree,
    after: &Tree,
    path: &str,
    hidden: bool,
    seed: u64,
) -> bool {
    let at = upper.join(path);
    let was = if hidden { None } else { before.get(path) };
    match after.get(path) {
        Some(Node::Dir(mode)) => {
            let was_dir = matches!(was, Some(Node::Dir(_)));
            let opaque = was_dir && coin(seed, path, "opaque");
            make(&at, &Node::Dir(*mode));
            if opaque {
                rustix::fs::setxattr(
                    &at,
                    "user.overlay.opaque",
                    b"y",
                    rustix::fs::XattrFlags::empty(),
                )
                .unwrap();
            }
            let mut wrote = !was_dir || opaque || was != after.get(path);
            for name in names_in(before, after, path) {
                wrote |= upper_at(
                    upper,
                    before,
                    after,
                    &format!("{path}/{name}"),
                    hidden || opaque,
                    seed,
                );
            }
            if !wrote && !coin(seed, path, "copied up") {
                std::fs::remove_dir(&at).unwrap();
            }
            true
        }
        Some(node) => {
            if was == Some(node) && !coin(seed, path, "copied up") {
                return false;
            }
            make(&at, node);
            true
        }
        None if was.is_some() => {
            rustix::fs::mknodat(
                rustix::fs::CWD,
                &at,
                FileType::CharacterDevice,
                Mode::empty(),
                0,
            )
            .unwrap();
            true
        }
        None => false,
    }
}

/// What the folder `root` holds, as a tree.
fn read_tree(root: &Path) -> Tree {
    let mut tree = Tree::new();
    let mut folders = vec![String::new()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(root.join(&folder)).unwrap() {
            let name = entry.unwrap().file_name().into_string().unwrap();
            let path = if folder.is_empty() {
                name
            } else {
                format!("{folder}/{name}")
            };
            let at = root.join(&path);
            let meta = std::fs::symlink_metadata(&at).unwrap();
            let mode = meta.permissions().mode() & 0o7777;
            let node = if meta.file_type().is_symlink() {
                let to = std::fs::read_link(&at)
                    .unwrap()
                    .into_os_string()
                    .into_string()
                    .unwrap();
                Node::Link((0..2).find(|which| target(*which) == to).unwrap())
            } else if meta.is_dir() {
                folders.push(path.clone());
                Node::Dir(mode)
            } else {
                let read = std::fs::read(&at).unwrap();
                Node::File(
                    (0..3).find(|content| bytes(*content) == read).unwrap(),
                    mode,
                )
            };
            tree.insert(path, node);
        }
    }
    tree
}

/// The paths where two trees differ (a link's mode means nothing).
fn differing(before: &Tree, after: &Tree) -> BTreeSet<String> {
    before
        .keys()
        .chain(after.keys())
        .filter(|path| before.get(*path) != after.get(*path))
        .cloned()
        .collect()
}

fn check(before: &Tree, after: &Tree, seed: u64) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let (ws, upper) = (root.join("ws"), root.join("upper"));
    std::fs::create_dir(&ws).unwrap();
    std::fs::create_dir(&upper).unwrap();
    for (path, node) in before {
        make(&ws.join(path), node);
    }
    let workspace = Workspace::open(&ws).unwrap();
    let store = Store::new(&root.join("sessions/one"), &root.join("store"));
    let settings = Settings::default();
    store.take(&workspace, &settings, 1, "run").unwrap();
    for name in names_in(before, after, "") {
        upper_at(&upper, before, after, &name, false, seed);
    }
    let preview = store
        .preview(
            &workspace,
            &settings,
            &upper,
            Began {
                at: i128::MAX,
                git: false,
            },
            u64::MAX,
        )
        .unwrap();
    prop_assert!(preview.unread.is_empty(), "{:?}", preview.unread);
    let listed: BTreeSet<String> = preview
        .seen
        .iter()
        .map(|seen| String::from_utf8(seen.path.clone()).unwrap())
        .collect();
    prop_assert_eq!(
        &listed,
        &differing(before, after),
        "the card lists each change, and only those"
    );
    let applied = store
        .apply_preview(&workspace, &settings, &preview, 2, "preview")
        .unwrap();
    prop_assert!(applied.failed.is_empty(), "{:?}", applied.failed);
    prop_assert_eq!(&read_tree(&ws), after, "apply makes what the command made");
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn apply_changes_exactly_the_paths_the_card_lists((before, after, seed) in trees()) {
        check(&before, &after, seed)?;
    }
}
