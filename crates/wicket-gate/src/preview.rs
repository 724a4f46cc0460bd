//! A preview: the person answered `preview` on a run card, so the command
//! runs in the jail over an overlay of the workspace (its writes land in a
//! folder under the session's, the workspace does not change, and it has
//! no network), and an `effects` card shows what it changed. `apply`
//! writes that into the workspace through the checkpoint store's rewind
//! path; `discard` throws it away.

use std::path::PathBuf;

use wicket_checkpoints::{Effected, PREVIEW_SHOWN_BYTES, Preview};
use wicket_protocol::limits::EFFECTS_MAX_BYTES;
use wicket_protocol::tools::{PreviewOutcome, PreviewOutput, RunArgs, RunOutput};
use wicket_protocol::{
    Answer, CallId, Card, CardKind, Effect, EffectKind, EffectsCard, ErrorKind, Network, RunSource,
    SandboxMode, ToolOutput, WireError,
};
use wicket_tools::Cancel;
use wicket_tools::tools::run::RunDir;

use crate::sandbox::Access;
use crate::{Answerer, Checkpointing, Gate, diff};

/// Past this many new entries under one new folder, the card shows the
/// folder as one entry with a count and a size.
pub(crate) const PREVIEW_GROUP_AFTER: usize = 20;

/// How far a file's ctime may lag the clock (the kernel's coarse tick, at
/// most 10 ms): a file changed as the preview starts still counts.
const CTIME_LAG_NANOS: i128 = 10_000_000;

/// A preview's folders, removed when it is over, applied or not.
struct Layer {
    root: PathBuf,
}

impl Drop for Layer {
    fn drop(&mut self) {
        // Best effort: a layer left behind holds nothing of the workspace's and is swept with the session.
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

impl Gate<'_> {
    /// Why a run card offers no `preview`, or `None` when it does.
    pub(crate) fn no_preview(&self, source: RunSource) -> Option<String> {
        if source != RunSource::Tool {
            return Some("only the model's own commands can be previewed".into());
        }
        if self.checkpoints.is_none() {
            return Some(
                "this session keeps no checkpoints, which a preview's apply is made from".into(),
            );
        }
        let sandbox = &self.confinement.sandbox;
        if sandbox.mode != SandboxMode::WorkspaceWrite {
            return Some(format!(
                "no preview with the sandbox {}: it runs over the jail's overlay",
                sandbox.mode.as_str()
            ));
        }
        let available = wicket_os::launch::availability();
        if available.missing().is_some() || !available.jail_tree() || !available.overlay {
            return Some(
                "no preview here: this kernel cannot mount an overlay in the jail's namespaces"
                    .into(),
            );
        }
        None
    }

    /// Runs the command over an overlay, shows what it changed on an
    /// effects card, and applies or discards that.
    pub(crate) fn run_previewed(
        &self,
        call_id: &CallId,
        args: &RunArgs,
        dir: &RunDir,
        answerer: &mut dyn Answerer,
        cancel: &Cancel,
    ) -> Result<ToolOutput, WireError> {
        let Some(checkpointing) = self.checkpoints else {
            return Err(WireError::new(
                ErrorKind::Unsandboxed,
                "this session keeps no checkpoints, so a preview cannot be applied",
            ));
        };
        let layer = self.layer(call_id)?;
        let mut wanted = Vec::new();
        let began = began(args);
        let output = self.run_over(call_id, &layer, args, dir, cancel, &mut wanted)?;
        let workspace = self.tools.workspace();
        let preview = checkpointing
            .store
            .preview(
                workspace,
                checkpointing.settings,
                &layer.root.join("upper"),
                began,
                self.preview_most(),
            )
            .map_err(|error| WireError::new(ErrorKind::Io, error.to_string()))?;
        let changes = effects(&preview);
        let card = Card::new(
            "run",
            CardKind::Effects(EffectsCard {
                argv: args.argv.clone(),
                exit_code: output.exit_code,
                stdout: output.stdout.clone(),
                stderr: output.stderr.clone(),
                changes: changes.clone(),
                note: note(&preview, &output, args),
                wanted_hosts: wanted,
            }),
        );
        let answered = self.ask(call_id, card, answerer)?;
        let outcome = match answered.answer {
            Answer::Apply => PreviewOutcome::Applied,
            _ => PreviewOutcome::Discarded,
        };
        let failed = match outcome {
            PreviewOutcome::Applied => self.apply(checkpointing, &preview)?,
            PreviewOutcome::Discarded => Vec::new(),
        };
        drop(layer);
        Ok(ToolOutput::Preview(PreviewOutput {
            preview: outcome,
            exit_code: output.exit_code,
            stdout: output.stdout,
            stderr: output.stderr,
            changes: changes
                .into_iter()
                .map(|effect| Effect {
                    diff: String::new(),
                    diff_truncated: false,
                    ..effect
                })
                .collect(),
            failed,
            note: output.note,
        }))
    }

    /// Writes what `preview` changed into the workspace (after a
    /// checkpoint): the paths it could not write, each with why.
    fn apply(
        &self,
        checkpointing: Checkpointing<'_>,
        preview: &Preview,
    ) -> Result<Vec<String>, WireError> {
        let applied = checkpointing
            .store
            .apply_preview(
                self.tools.workspace(),
                checkpointing.settings,
                preview,
                self.checkpoint_seq(self.session.last_seq()),
                "preview",
            )
            .map_err(|error| WireError::new(ErrorKind::Stale, error.to_string()))?;
        Ok(applied
            .failed
            .into_iter()
            .map(|(path, why)| format!("{path}: {why}"))
            .collect())
    }

    /// Runs the command in the jail with the workspace under `layer`'s
    /// overlay and no network; a jail that could not be built is an error,
    /// not an effects card.
    fn run_over(
        &self,
        call_id: &CallId,
        layer: &Layer,
        args: &RunArgs,
        dir: &RunDir,
        cancel: &Cancel,
        wanted: &mut Vec<String>,
    ) -> Result<RunOutput, WireError> {
        // A call that asked for the network through Wicket gets a proxy that
        // refuses every host and names it; no other network at all.
        let proxied = args.network == Network::Proxied;
        let network = if proxied {
            Network::Proxied
        } else {
            Network::Off
        };
        // A call that may change git changes the overlay's `.git`: its changes are effects too.
        let access = Access {
            network,
            git: args.git,
            read: self.access(network, false, &args.read)?.0.read,
        };
        let summary = self.sandbox_summary(&access);
        let mut confine = self.confine(&summary, &access)?;
        let Some(policy) = confine.sandbox.as_mut() else {
            return Err(WireError::new(
                ErrorKind::Unsandboxed,
                "the jail is not in force here, so nothing can be previewed",
            ));
        };
        let upper = layer.root.join("upper");
        policy.overlay = Some(wicket_os::launch::Overlay {
            upper: upper.clone(),
            work: layer.root.join("work"),
        });
        let most = self.preview_most();
        let (output, stopped) = watched(&upper, most, cancel, |own| {
            if proxied {
                let run = crate::net::Proxied {
                    call_id,
                    args,
                    dir,
                    cancel: own,
                };
                self.run_refusing(run, confine, wanted)
            } else {
                self.tools.run(args, dir, confine, None, own)
            }
        });
        let mut output = output?;
        if stopped {
            let said = format!(
                "it was stopped: it wrote more than [sandbox] preview_max_mb ({} MiB) into the \
                 preview's layer; what it wrote up to then is below",
                self.confinement.sandbox.preview_max_mb
            );
            output.note = Some(match output.note.take() {
                Some(note) => format!("{said}; {note}"),
                None => said,
            });
        }
        if output.exit_code == Some(i32::from(wicket_os::launch::SETUP_FAILED))
            && output.stderr.starts_with("wicket sandbox:")
        {
            return Err(WireError::new(
                ErrorKind::Unsandboxed,
                format!(
                    "the preview could not be set up, so the command never started: {}",
                    output.stderr.trim()
                ),
            ));
        }
        Ok(output)
    }

    /// `[sandbox] preview_max_mb` in bytes: the most a preview's layer may
    /// hold on disk while its command runs, and its files together, holes
    /// counted, when they are read.
    fn preview_most(&self) -> u64 {
        self.confinement
            .sandbox
            .preview_max_mb
            .saturating_mul(1024 * 1024)
    }

    /// A fresh, empty upper and work folder for this call, under the session's folder.
    fn layer(&self, call_id: &CallId) -> Result<Layer, WireError> {
        let name: String = call_id
            .as_str()
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        let root = self.session.dir().join("preview").join(name);
        let made = || -> std::io::Result<()> {
            if root.exists() {
                std::fs::remove_dir_all(&root)?;
            }
            std::fs::create_dir_all(root.join("upper"))?;
            std::fs::create_dir_all(root.join("work"))
        };
        made().map_err(|error| {
            WireError::new(
                ErrorKind::Io,
                format!(
                    "the preview's folder {} could not be made: {error}",
                    root.display()
                ),
            )
        })?;
        Ok(Layer { root })
    }
}

/// How often a preview's layer is measured while its command runs.
const MEASURE_EVERY: std::time::Duration = std::time::Duration::from_millis(50);

/// Runs `run` with a cancel of its own (which `cancel` cancels too), and
/// stops it once `upper` holds more than `most` bytes on disk; whether it
/// was stopped so.
fn watched<T>(
    upper: &std::path::Path,
    most: u64,
    cancel: &Cancel,
    run: impl FnOnce(&Cancel) -> T,
) -> (T, bool) {
    let own = Cancel::default();
    let follows = {
        let own = own.clone();
        cancel.on_cancel(Box::new(move || own.cancel()))
    };
    let over = std::sync::atomic::AtomicBool::new(false);
    let done = std::sync::atomic::AtomicBool::new(false);
    let ran = std::thread::scope(|scope| {
        scope.spawn(|| {
            while !done.load(std::sync::atomic::Ordering::SeqCst) {
                if wicket_checkpoints::on_disk(upper) > most {
                    over.store(true, std::sync::atomic::Ordering::SeqCst);
                    own.cancel();
                    return;
                }
                std::thread::sleep(MEASURE_EVERY);
            }
        });
        let ran = run(&own);
        done.store(true, std::sync::atomic::Ordering::SeqCst);
        ran
    });
    cancel.remove(follows);
    (ran, over.load(std::sync::atomic::Ordering::SeqCst))
}

/// The moment a preview starts (in nanoseconds, one clock tick early),
/// and whether its call may change git: where no checkpoint says what was
/// there (below `.git`, an ignored path), what the workspace changed
/// since stops the apply.
fn began(args: &RunArgs) -> wicket_checkpoints::Began {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_nanos() as i128);
    wicket_checkpoints::Began {
        at: now - CTIME_LAG_NANOS,
        git: args.git,
    }
}

/// What the card says besides the changes.
fn note(preview: &Preview, output: &RunOutput, args: &RunArgs) -> Option<String> {
    let mut said = Vec::new();
    if preview.seen.iter().any(|seen| seen.git) {
        said.push(
            "it changed .git (the call asked to): those entries are marked git; apply writes them \
             into the workspace's .git, no checkpoint holds them so no rewind takes them back, and \
             a .git that points outside the workspace stayed read-only"
                .to_string(),
        );
    }
    if args.network == Network::Direct {
        said.push(
            "it asked for the machine's own network, which a preview never has (nor can it say which hosts it wanted)"
                .to_string(),
        );
    }
    if let Some(note) = &output.note {
        said.push(note.clone());
    }
    if output.timed_out {
        said.push("it ran past its timeout and was stopped".to_string());
    }
    if preview.seen.iter().any(|seen| seen.ignored) {
        said.push(
            "some changes are to ignored paths, which no checkpoint holds: apply writes them all \
             (over what was there before too), and a rewind takes back none of them"
                .to_string(),
        );
    }
    if !preview.unread.is_empty() {
        said.push(format!(
            "not read from the preview's layer: {}",
            preview
                .unread
                .iter()
                .map(|(path, why)| format!("{path} ({why})"))
                .collect::<Vec<_>>()
                .join("; ")
        ));
    }
    said.push(
        "a preview shows what the command changed in the workspace; not what it would send over \
         a network (it had none), nor what it changes through a daemon or outside the workspace"
            .to_string(),
    );
    Some(said.join("; "))
}

/// Paths shown as one entry: a folder and how many entries below it the
/// entry stands for, with their bytes.
struct Group<'p> {
    folder: &'p [u8],
    entries: u64,
    bytes: u64,
    /// A folder the command replaced, which stays: the entry stands for
    /// the removals below it only (what it made there is shown).
    removals: bool,
}

impl Group<'_> {
    /// Whether the group's entry stands for `seen`.
    fn holds(&self, seen: &Effected) -> bool {
        below(&seen.path, self.folder) && (!self.removals || seen.kind == EffectKind::Deleted)
    }
}

/// The folders shown as one entry: a new folder (or an ignored one) with
/// more than [`PREVIEW_GROUP_AFTER`] entries below it, a removed one with
/// more than that many removals below it, and a folder the command
/// replaced with more than that many removals below it. Apply changes
/// exactly what each counts.
fn groups(preview: &Preview) -> Vec<Group<'_>> {
    let mut grouped: Vec<Group<'_>> = Vec::new();
    let whole = preview.seen.iter().filter(|seen| {
        seen.dir
            && (seen.kind == EffectKind::Created
                || seen.kind == EffectKind::Deleted
                || seen.ignored)
    });
    let folders = whole
        .map(|seen| (seen.path.as_slice(), false))
        .chain(preview.replaced.iter().map(|path| (path.as_slice(), true)));
    for (folder, removals) in folders {
        // A folder inside one already grouped is in that group.
        if grouped
            .iter()
            .any(|group| !group.removals && below(folder, group.folder))
        {
            continue;
        }
        let mut group = Group {
            folder,
            entries: 0,
            bytes: 0,
            removals,
        };
        let held: Vec<u64> = preview
            .seen
            .iter()
            .filter(|seen| group.holds(seen))
            .map(|seen| seen.bytes)
            .collect();
        group.entries = held.len() as u64;
        group.bytes = held.iter().sum();
        if group.entries > PREVIEW_GROUP_AFTER as u64 {
            grouped.push(group);
        }
    }
    grouped
}

/// The card's entries: each changed path, a folder with more than
/// [`PREVIEW_GROUP_AFTER`] entries (or removals) below it as one.
fn effects(preview: &Preview) -> Vec<Effect> {
    let grouped = groups(preview);
    let mut shown = Vec::new();
    let mut said: Vec<&[u8]> = Vec::new();
    for seen in &preview.seen {
        // A replaced folder's removals, said once, before the first of them.
        for group in grouped.iter().filter(|group| group.removals) {
            if group.holds(seen) && !said.contains(&group.folder) {
                said.push(group.folder);
                shown.push(removals_entry(group));
            }
        }
        if grouped.iter().any(|group| group.holds(seen)) {
            continue;
        }
        let path = wicket_tools::tree::shown(&seen.path);
        let group = grouped
            .iter()
            .find(|group| !group.removals && group.folder == seen.path.as_slice());
        let (diff, diff_truncated) = shown_change(&path, seen);
        shown.push(Effect {
            path,
            change: seen.kind,
            diff,
            diff_truncated,
            mode: seen.mode.map(|mode| format!("{mode:o}")),
            entries: group.map(|group| group.entries),
            // What a removal frees is not known without reading each: no size.
            bytes: group
                .filter(|_| seen.kind != EffectKind::Deleted)
                .map(|group| group.bytes),
            ignored: seen.ignored,
            git: seen.git,
        });
    }
    bounded(shown)
}

/// Room kept below [`EFFECTS_MAX_BYTES`] for the entries that group what
/// is past it (one for each kind of change, at the worst).
const GROUPS_ROOM: usize = 8 * 1024;

/// `shown` within [`EFFECTS_MAX_BYTES`] of JSON: entries in order while
/// they fit, then what is past that as one entry for each top folder and
/// change (or, when those would not fit either, for each change), with
/// their count and bytes. Apply changes every one counted.
fn bounded(shown: Vec<Effect>) -> Vec<Effect> {
    let size = |effect: &Effect| serde_json::to_vec(effect).map_or(0, |json| json.len() + 1);
    let mut kept = Vec::new();
    let mut used = 0;
    let mut past = Vec::new();
    let room = EFFECTS_MAX_BYTES - GROUPS_ROOM;
    for mut effect in shown {
        if !past.is_empty() {
            past.push(effect);
            continue;
        }
        if used + size(&effect) > room && !effect.diff.is_empty() {
            // The entry without its diff may fit: the path is what apply changes.
            effect.diff = format!(
                "not shown: the card's limit of {} KiB is reached",
                EFFECTS_MAX_BYTES / 1024
            );
            effect.diff_truncated = true;
        }
        let bytes = size(&effect);
        if used + bytes <= room {
            used += bytes;
            kept.push(effect);
        } else {
            past.push(effect);
        }
    }
    if past.is_empty() {
        return kept;
    }
    let by_folder = grouped_past(&past, |path| match path.split_once('/') {
        Some((top, _)) => top.to_string(),
        None => ".".to_string(),
    });
    let fits = by_folder.iter().map(size).sum::<usize>() <= EFFECTS_MAX_BYTES - used;
    if fits {
        kept.extend(by_folder);
    } else {
        kept.extend(grouped_past(&past, |_| ".".to_string()));
    }
    kept
}

/// The entries `past` the card's bound as one entry for each folder
/// (`folder_of` their path; `.` the workspace's root) and change.
fn grouped_past(past: &[Effect], folder_of: impl Fn(&str) -> String) -> Vec<Effect> {
    let mut groups: std::collections::BTreeMap<(String, &'static str), Effect> =
        std::collections::BTreeMap::new();
    for effect in past {
        let folder = folder_of(&effect.path);
        let group = groups
            .entry((folder.clone(), effect.change.as_str()))
            .or_insert_with(|| Effect {
                path: folder,
                change: effect.change,
                diff: String::new(),
                diff_truncated: true,
                mode: None,
                entries: Some(0),
                bytes: Some(0),
                ignored: true,
                git: false,
            });
        group.entries = Some(group.entries.unwrap_or(0) + effect.entries.unwrap_or(1));
        group.bytes = match effect.change {
            EffectKind::Deleted => None,
            _ => Some(group.bytes.unwrap_or(0) + effect.bytes.unwrap_or(0)),
        };
        group.ignored &= effect.ignored;
        group.git |= effect.git;
    }
    groups
        .into_values()
        .map(|mut group| {
            let place = match group.path.as_str() {
                "." => "in the workspace".to_string(),
                folder => format!("below {folder}"),
            };
            group.diff = format!(
                "{} more {} {place}: past the card's limit of {} KiB, so counted here, not \
                 listed one by one; apply changes each of them",
                group.entries.unwrap_or(0),
                group.change.as_str(),
                EFFECTS_MAX_BYTES / 1024
            );
            group
        })
        .collect()
}

/// The one entry for the removals below a folder the command replaced.
fn removals_entry(group: &Group<'_>) -> Effect {
    let path = wicket_tools::tree::shown(group.folder);
    Effect {
        diff: format!(
            "the command replaced {path}: apply removes the {} entries below it counted here \
             (what it made there again is listed on its own); {path} itself stays",
            group.entries
        ),
        path,
        change: EffectKind::Deleted,
        diff_truncated: true,
        mode: None,
        entries: Some(group.entries),
        bytes: None,
        ignored: false,
        git: false,
    }
}

/// What a diff says of a file whose shown parts (its first
/// [`PREVIEW_SHOWN_BYTES`]) are the same before and after.
fn past_the_shown_part(seen: &Effected) -> String {
    format!(
        "changed past the shown part: the file's first {} KiB are the same before and after, \
         and it is {} bytes now",
        PREVIEW_SHOWN_BYTES / 1024,
        seen.bytes
    )
}

/// Whether `path` lies below `folder`.
fn below(path: &[u8], folder: &[u8]) -> bool {
    path.len() > folder.len() && path.starts_with(folder) && path[folder.len()] == b'/'
}

/// A change's diff as the card shows it: a file's, cut as a write card's;
/// a link's target; nothing for a folder or a mode.
fn shown_change(path: &str, seen: &Effected) -> (String, bool) {
    match seen.kind {
        EffectKind::Refused => (
            seen.why.clone().unwrap_or_else(|| {
                "a special file (a device, a FIFO, a socket): never applied".to_string()
            }),
            true,
        ),
        EffectKind::Link => (
            format!(
                "→ {}",
                wicket_protocol::text::visible_line(&String::from_utf8_lossy(
                    seen.new.as_deref().unwrap_or_default()
                ))
            ),
            false,
        ),
        EffectKind::Created | EffectKind::Modified | EffectKind::Deleted if !seen.dir => {
            let binary = |bytes: Option<&[u8]>| bytes.is_some_and(|bytes| bytes.contains(&0));
            if binary(seen.old.as_deref()) || binary(seen.new.as_deref()) {
                return (format!("binary, {} bytes: not shown", seen.bytes), true);
            }
            // A deleted file's diff ends at /dev/null, as git writes it.
            let after = match seen.kind {
                EffectKind::Deleted => None,
                _ => Some(seen.new.as_deref().unwrap_or_default()),
            };
            // A cut part ends at its last whole line: a line cut short on
            // one side only is not a change.
            let whole = |bytes: &'_ [u8]| -> usize {
                match memchr::memrchr(b'\n', bytes) {
                    Some(at) if seen.cut => at + 1,
                    _ => bytes.len(),
                }
            };
            let old = seen.old.as_deref().map(|old| &old[..whole(old)]);
            let after = after.map(|after| &after[..whole(after)]);
            if seen.cut && old == after {
                return (past_the_shown_part(seen), true);
            }
            let cut = diff::for_card(diff::between(path, old, after));
            let mut text = cut.text;
            if cut.truncated {
                text.push_str(&format!(
                    "[the diff is cut here, at the card's limit: {} of its {} bytes are shown]\n",
                    text.len(),
                    cut.bytes
                ));
            }
            if seen.cut {
                text.push_str(&format!(
                    "[the diff stops here: it is of the file's first {} KiB only; the file is \
                     {} bytes, and what is past that is not shown]\n",
                    PREVIEW_SHOWN_BYTES / 1024,
                    seen.bytes
                ));
            }
            (text, cut.truncated || seen.cut)
        }
        _ => (String::new(), false),
    }
}
