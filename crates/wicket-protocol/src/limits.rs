//! Every limit Wicket keeps, in one place. The tools, the descriptions the
//! model reads ([`crate::schema`]), the cards and the tests all refer to
//! these names.

/// read_file returns at most this many bytes of text per call.
pub const READ_FILE_MAX_BYTES: usize = 32 * 1024;
/// A file whose first this-many bytes hold a NUL is reported as binary.
pub const BINARY_SNIFF_BYTES: usize = 8 * 1024;
/// grep stops after this many matches.
pub const GREP_MAX_MATCHES: usize = 200;
/// A matched line longer than this is cut (minified files would flood the model).
pub const GREP_LINE_MAX_BYTES: usize = 1024;
/// An ignore file (`.gitignore`, `.ignore`) larger than this is not read.
pub const IGNORE_FILE_MAX_BYTES: u64 = 1024 * 1024;
/// list_dir names at most this many entries.
pub const LIST_DIR_MAX_ENTRIES: usize = 500;
/// search_replace refuses files larger than this, and write_file content larger than this.
pub const WRITE_MAX_BYTES: usize = 256 * 1024;
/// An existing file larger than this is not replaced by write_file (its diff and
/// digest need its bytes in memory).
pub const WRITE_EXISTING_MAX_BYTES: u64 = 4 * 1024 * 1024;
/// run's default timeout.
pub const RUN_DEFAULT_TIMEOUT_S: u64 = 120;
/// run's longest timeout.
pub const RUN_MAX_TIMEOUT_S: u64 = 600;
/// Bytes of each of stdout and stderr that run returns: half head, half tail.
pub const RUN_STREAM_MAX_BYTES: usize = 64 * 1024;
/// Between SIGTERM and SIGKILL for a command's process group.
pub const RUN_KILL_GRACE_MS: u64 = 2000;
/// A tool path longer than this is refused as invalid.
pub const PATH_MAX_BYTES: usize = 4096;
/// Symlinks followed while resolving one path before it is called a loop.
pub const SYMLINK_MAX_FOLLOWS: usize = 40;
/// Tool arguments nested deeper than this are refused: a log line must
/// always parse again (serde_json stops at 128 levels).
pub const ARGUMENTS_MAX_DEPTH: usize = 64;
/// A diff is on the card whole up to this many bytes.
pub const CARD_DIFF_MAX_BYTES: usize = 64 * 1024;
/// A larger diff shows this many of its first lines.
pub const CARD_DIFF_MAX_LINES: usize = 400;
/// The most bytes of an effects card's changes (as JSON, diffs and all),
/// and so of the changes a preview's result gives the model: past it,
/// the rest are grouped by folder and change, each with its count.
pub const EFFECTS_MAX_BYTES: usize = 64 * 1024;
/// AGENTS.md and SKILL.md files larger than this are not read.
pub const PROMPT_FILE_MAX_BYTES: u64 = 256 * 1024;
/// A file larger than this is not copied into a checkpoint (`[checkpoints]
/// max_file_mb` says otherwise); the checkpoint says it has no copy of it.
pub const CHECKPOINT_MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;
/// A workspace with more files than this (not ignored; folders not counted) gets no
/// checkpoint (`[checkpoints] max_files` says otherwise).
pub const CHECKPOINT_MAX_FILES: usize = 1_000_000;
/// Checkpoints older than this many days are pruned (`[checkpoints] keep_days`).
pub const CHECKPOINT_KEEP_DAYS: u64 = 30;
/// A workspace's checkpoint store may take this much (`[checkpoints]
/// max_store_mb`): past it the session's oldest checkpoints are pruned
/// first, and a checkpoint that alone passes it is not kept (its call's
/// card says so).
pub const CHECKPOINT_MAX_STORE_BYTES: u64 = 2048 * 1024 * 1024;
/// A `rewound` event names this many paths of each list; the counts are whole.
pub const REWOUND_MAX_PATHS: usize = 100;
/// One checkpoint stores at most this many bytes of new copies; files past
/// it get none, and the checkpoint says so.
pub const CHECKPOINT_MAX_NEW_BYTES: u64 = 512 * 1024 * 1024;
/// A model reply may ask for at most this many tool calls. A reply that
/// asks for more is refused whole: none of its calls runs, and the model
/// reads why in each call's result, so the turn goes on.
pub const REPLY_MAX_TOOL_CALLS: usize = 64;
/// A streamed reply holds at most this many parts: tool calls by their
/// OpenAI `index`, or Anthropic content blocks (text, thinking and tool use
/// together). The server numbers and counts them, so this bounds them
/// before they size anything (an index of 2^32 would ask for 150 GB); past
/// it the stream is broken, a protocol error that ends the turn. It is
/// above [`REPLY_MAX_TOOL_CALLS`], so a model that asks for a few calls too
/// many is told so rather than cut off.
pub const REPLY_MAX_BLOCKS: usize = 4 * REPLY_MAX_TOOL_CALLS;
/// A context window larger than this many tokens (from a server's
/// `/props`, or a config) is past any real model's, and treated as unknown.
pub const CONTEXT_WINDOW_MAX_TOKENS: u64 = 100_000_000;
/// A `log.jsonl` line longer than this is not held in memory: it is read
/// past (as unreadable when it ends in a newline, as torn when it does not).
/// The longest line Wicket writes is far shorter: a 256 KiB write escaped
/// into JSON, or an MCP result.
pub const LOG_LINE_MAX_BYTES: usize = 64 * 1024 * 1024;
/// A `meta.json` larger than this is refused as damaged.
pub const META_MAX_BYTES: u64 = 64 * 1024 * 1024;
/// `wicket tool NAME @FILE` reads at most this many bytes of arguments.
pub const ARGUMENTS_FILE_MAX_BYTES: u64 = 16 * 1024 * 1024;
/// The last seq a log numbers: 2^53 - 1, the largest integer a JSON reader
/// such as the web page holds exactly (a billion events a second would take
/// over a hundred days to reach it). A log at it takes no more events: the
/// session is refused with an error naming it, never numbered again from 0.
pub const LOG_SEQ_MAX: u64 = (1 << 53) - 1;
/// A streamed reply's body may be at most this many bytes on the wire. A
/// model's longest reply is a few megabytes of events; past this the
/// stream is broken (a server that streams forever), a protocol error, so
/// the parser and the reply never grow without end.
pub const REPLY_MAX_BYTES: u64 = 256 * 1024 * 1024;

/// Sub-tasks one turn runs at once unless `[limits] max_tasks` says otherwise.
pub const DEFAULT_MAX_TASKS: usize = 4;
