//! A preview: the person answered `preview` on a run card, so the command
//! runs in the jail over an overlay of the workspace (its writes land in a
//! folder under the session's, the workspace does not change, and it has
//! no network), and an `effects` card shows what it changed. `apply`
//! writes that into the workspace through the checkpoint store's rewind
//! path; `discard` throws it away.

use std::path::PathBuf;

use wicket_checkpoints::{Effected, Preview};
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
        let git_since = git_since(args);
        let output = self.run_over(call_id, &layer, args, dir, cancel, &mut wanted)?;
        let workspace = self.tools.workspace();
        let preview = checkpointing
            .store
            .preview(
                workspace,
                checkpointing.settings,
                &layer.root.join("upper"),
                git_since,
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
        policy.overlay = Some(wicket_os::launch::Overlay {
            upper: layer.root.join("upper"),
            work: layer.root.join("work"),
        });
        let most = self
            .confinement
            .sandbox
            .preview_max_mb
            .saturating_mul(1024 * 1024);
        let (output, stopped) = watched(&layer.root.join("upper"), most, cancel, |own| {
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
                if on_disk(upper) > most {
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

/// The bytes on disk below `folder` (blocks, not sizes: a sparse file
/// costs what it holds), never following a link.
fn on_disk(folder: &std::path::Path) -> u64 {
    let mut total = 0u64;
    let mut stack = vec![folder.to_path_buf()];
    while let Some(folder) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(meta) = entry.metadata() else {
                continue;
            };
            total = total.saturating_add(std::os::unix::fs::MetadataExt::blocks(&meta) * 512);
            if meta.is_dir() {
                stack.push(entry.path());
            }
        }
    }
    total
}

/// For a call that may change git, the moment its preview starts (in
/// nanoseconds, one clock tick early): below `.git` no checkpoint says
/// what was there, so what the workspace changed there since stops the apply.
fn git_since(args: &RunArgs) -> Option<i128> {
    args.git.then(|| {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.as_nanos() as i128);
        now - CTIME_LAG_NANOS
    })
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
            "some changes are to ignored paths, which no checkpoint holds: apply writes the new \
             ones but leaves any that were there before as they are, and a rewind takes back none \
             of them"
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

/// The card's entries: each changed path, a new folder with more than
/// [`PREVIEW_GROUP_AFTER`] entries below it as one.
fn effects(preview: &Preview) -> Vec<Effect> {
    // New folders, and ignored ones (node_modules/, target/) new or not.
    let new_folders: Vec<&Effected> = preview
        .seen
        .iter()
        .filter(|seen| seen.dir && (seen.kind == EffectKind::Created || seen.ignored))
        .collect();
    let mut grouped: Vec<(&[u8], u64, u64)> = Vec::new();
    for folder in new_folders {
        // A folder inside one already grouped is in that group.
        if grouped
            .iter()
            .any(|(outer, _, _)| below(&folder.path, outer))
        {
            continue;
        }
        let inner: Vec<&Effected> = preview
            .seen
            .iter()
            .filter(|seen| below(&seen.path, &folder.path))
            .collect();
        if inner.len() > PREVIEW_GROUP_AFTER {
            let bytes = inner.iter().map(|seen| seen.bytes).sum();
            grouped.push((&folder.path, inner.len() as u64, bytes));
        }
    }
    let mut shown = Vec::new();
    for seen in &preview.seen {
        if grouped.iter().any(|(outer, _, _)| below(&seen.path, outer)) {
            continue;
        }
        let path = wicket_tools::tree::shown(&seen.path);
        let group = grouped
            .iter()
            .find(|(outer, _, _)| *outer == seen.path.as_slice());
        let (diff, diff_truncated) = if seen.ignored && seen.kind == EffectKind::Modified {
            // Its bytes before are in no checkpoint, and apply leaves it.
            (
                "an ignored path that was there before: apply leaves it as it is".to_string(),
                true,
            )
        } else {
            shown_change(&path, seen)
        };
        shown.push(Effect {
            path,
            change: seen.kind,
            diff,
            diff_truncated,
            mode: seen.mode.map(|mode| format!("{mode:o}")),
            entries: group.map(|(_, entries, _)| *entries),
            bytes: group.map(|(_, _, bytes)| *bytes),
            ignored: seen.ignored,
            git: seen.git,
        });
    }
    shown
}

/// Whether `path` lies below `folder`.
fn below(path: &[u8], folder: &[u8]) -> bool {
    path.len() > folder.len() && path.starts_with(folder) && path[folder.len()] == b'/'
}

/// A change's diff as the card shows it: a file's, cut as a write card's;
/// a link's target; nothing for a folder or a mode.
fn shown_change(path: &str, seen: &Effected) -> (String, bool) {
    match seen.kind {
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
            let cut = diff::for_card(diff::between(path, seen.old.as_deref(), after));
            (cut.text, cut.truncated)
        }
        _ => (String::new(), false),
    }
}
