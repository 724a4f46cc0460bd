//! The write path shared by write_file and search_replace: a card with
//! the diff unless the path is allowed, the digest taken again after the
//! answer (a stale answer is spent), and the commit through the resolver.
//! A write through a `.git` or `.wicket` entry, or into a git folder, says
//! so on its card ([`guarded_write`]); one into `$WICKET_HOME` is refused.

use std::path::{Path, PathBuf};

use super::*;

impl Gate<'_> {
    pub(super) fn write_file(
        &self,
        call_id: &CallId,
        args: &WriteFileArgs,
        answerer: &mut dyn Answerer,
    ) -> Result<ToolOutput, WireError> {
        check_content_size(args.content.len(), &args.path)?;
        let location = self.tools.workspace().classify(&args.path)?;
        let content = args.content.as_bytes();
        self.write(
            call_id,
            "write_file",
            &location,
            &args.path,
            answerer,
            &|_| Ok(content.to_vec()),
        )
    }

    pub(super) fn search_replace(
        &self,
        call_id: &CallId,
        args: &SearchReplaceArgs,
        answerer: &mut dyn Answerer,
    ) -> Result<ToolOutput, WireError> {
        let location = self.tools.workspace().classify(&args.path)?;
        self.write(
            call_id,
            "search_replace",
            &location,
            &args.path,
            answerer,
            &|current| replaced(current, args),
        )
    }

    /// The write path shared by write_file and search_replace.
    pub(super) fn write(
        &self,
        call_id: &CallId,
        tool: &str,
        location: &Location,
        shown: &str,
        answerer: &mut dyn Answerer,
        new_content: &NewContent<'_>,
    ) -> Result<ToolOutput, WireError> {
        let home = std::fs::canonicalize(&self.confinement.home)
            .unwrap_or_else(|_| self.confinement.home.clone());
        for _ in 0..STALE_RETRIES {
            let target = self.tools.plan_write(location, shown)?;
            never_wicket_home(&home, &target.absolute)?;
            let content = new_content(target.current.as_deref())?;
            let key = target.absolute.display().to_string();
            let asked_digest = digest(target.current.as_deref());
            let mut remember = None;
            let guarded = guarded_write(self.tools.workspace().root(), &target.absolute);
            if let Pass::Card | Pass::Asked | Pass::Held(_) =
                self.write_pass(tool, &target.absolute, guarded)?
            {
                let card = self.write_card(
                    guarded,
                    tool,
                    &target.absolute,
                    target.current.as_deref(),
                    &content,
                    &asked_digest,
                );
                let answered = self.raise(
                    call_id,
                    card,
                    Some(String::from_utf8_lossy(&content).into_owned()),
                    answerer,
                )?;
                if answered.answer == Answer::Deny {
                    self.log_answer(&answered, false)?;
                    return Err(answered.denied(&format!("the write to {key}")));
                }
                // The answer was about the bytes the card showed; are they still
                // there? If not, the answer (an allow_session too) is spent.
                let now = self.tools.plan_write(location, shown)?;
                never_wicket_home(&home, &now.absolute)?;
                let stale = now.absolute != target.absolute
                    || digest(now.current.as_deref()) != asked_digest;
                self.log_answer(&answered, stale)?;
                if stale {
                    continue;
                }
                remember = (answered.answer == Answer::AllowSession).then_some(answered.card);
            }
            // Nothing is written before the checkpoint of what was there is taken.
            self.settle()?;
            let still_current = |bytes: Option<&[u8]>| digest(bytes) == asked_digest;
            match self
                .tools
                .commit_write(location, &target, &content, &still_current)
            {
                Ok(output) => return self.written(output, &target.absolute, remember, key),
                Err(error) if error.kind == ErrorKind::Stale => {
                    // Changed between the answer and the rename: the answer
                    // was logged fresh, so say here that it was spent.
                    self.log_stale(&key)?;
                    continue;
                }
                Err(error) => return Err(error),
            }
        }
        Err(WireError::new(
            ErrorKind::Io,
            format!(
                "'{shown}' kept changing on disk while the write was asked {STALE_RETRIES} times; try again when it is still"
            ),
        ))
    }

    /// A write that landed: who runs the file later, and the session grant
    /// an `allow_session` made (`remember`, its card).
    fn written(
        &self,
        mut output: wicket_protocol::WriteOutput,
        absolute: &Path,
        remember: Option<Card>,
        key: String,
    ) -> Result<ToolOutput, WireError> {
        if let Ok(relative) = absolute.strip_prefix(self.tools.workspace().root()) {
            output.runs_later = guarded::runs_later(&relative.to_string_lossy());
        }
        if let Some(card) = remember {
            self.grant(&card, GrantKind::Write, &key, |allowed| {
                allowed.write.insert(key.clone());
            })?;
        }
        Ok(ToolOutput::Write(output))
    }

    pub(super) fn write_card(
        &self,
        guarded: bool,
        tool: &str,
        absolute: &Path,
        current: Option<&[u8]>,
        content: &[u8],
        digest: &str,
    ) -> Card {
        let path = absolute.display().to_string();
        let inside = absolute.strip_prefix(self.tools.workspace().root());
        let outside = inside.is_err();
        let label = inside
            .map(|relative| relative.display().to_string())
            .unwrap_or_else(|_| path.clone());
        let always = self.always(Matcher::Write {
            tool: WriteTool::Any,
            path: rules::exact_glob(&label),
        });
        let cut = diff::for_card(diff::unified(&label, current, content));
        Card {
            always: Some(Box::new(always)),
            ..Card::new(
                tool.to_string(),
                CardKind::Write(WriteCard {
                    path,
                    diff: cut.text,
                    diff_bytes: cut.bytes,
                    diff_truncated: cut.truncated,
                    digest: digest.to_string(),
                    outside,
                    git: guarded,
                    runs_later: (!outside).then(|| guarded::runs_later(&label)).flatten(),
                }),
            )
        }
    }

    pub(super) fn log_stale(&self, key: &str) -> Result<(), WireError> {
        self.session
            .append(EventBody::error(format!(
                "{key} changed on disk after the answer; the answer was spent and the write asks again"
            )))
            .map_err(internal)?;
        Ok(())
    }
}

/// Whether a write to `absolute` reaches what git or Wicket runs later: an
/// entry named `.git` or `.wicket` on its way, or a folder above it (inside
/// `root`, the workspace) that is a git folder under another name (a bare
/// repository, a submodule's gitdir: `HEAD`, and `objects` or a worktree's
/// `commondir`). Its card says "git", and only a rule that names it covers it.
pub fn guarded_write(root: &Path, absolute: &Path) -> bool {
    let is_file = |path: PathBuf| std::fs::symlink_metadata(path).is_ok_and(|meta| meta.is_file());
    let is_dir = |path: PathBuf| std::fs::symlink_metadata(path).is_ok_and(|meta| meta.is_dir());
    guarded::git_or_wicket(absolute)
        || absolute
            .ancestors()
            .skip(1)
            .take_while(|folder| folder.starts_with(root))
            .any(|folder| {
                is_file(folder.join("HEAD"))
                    && (is_dir(folder.join("objects")) || is_file(folder.join("commondir")))
            })
}

/// A write into `$WICKET_HOME` (`home`, canonical: its config, sessions,
/// grants) is never carded: one allow there could turn the sandbox off for good.
fn never_wicket_home(home: &Path, absolute: &Path) -> Result<(), WireError> {
    if absolute.starts_with(home) {
        return Err(WireError::new(
            ErrorKind::Forbidden,
            format!(
                "{} lies in Wicket's own folder {} (its config, sessions and grants), \
                 which no tool call may write; the person can edit it themselves",
                absolute.display(),
                home.display()
            ),
        ));
    }
    Ok(())
}
