//! `apply_patch`: a V4A patch or a unified diff (see [`stead_patch`] for
//! the formats and matching rules) applied to the workspace as one change.
//!
//! Why it works the way it does:
//!
//! - **All or nothing.** Every file of the patch is planned first, against
//!   the workspace as earlier operations of the same patch leave it (an
//!   update after an add sees the added text; a second update of a file
//!   sees the first), and only then written, all in one transaction with
//!   one revision. Any failure (a malformed patch, a hunk that does not
//!   apply, a missing file, a path outside the workspace, a quota) leaves
//!   every file as it was.
//! - **Nothing is overwritten by surprise.** An added file must not exist
//!   and neither may a move's destination (`EEXIST`); codex's reference
//!   tool overwrites both, but in a shared workspace that silently loses
//!   another writer's file, and the model meant an update anyway.
//! - **Paths are workspace paths.** Relative ones are taken from the base
//!   directory the caller gives, and every one goes through
//!   [`VPath::parse_from`], so `..` above the root, NUL bytes and overlong
//!   names are refused before anything is read.
//! - **Files keep what the patch does not change.** An update keeps the
//!   file's inode and mode (unless git's `new mode` sets one); a move keeps
//!   the mode; updates follow a symlink to its target, as `edit` does, while
//!   a deletion removes the link itself, as `rm` does.
//! - **The answer shows what happened**: each file touched (added, updated,
//!   moved, deleted) with hunks that needed a fallback rule or an offset,
//!   and one unified diff of all of it (git-style rename and mode headers
//!   where needed), which `git apply` or this module can apply again.

use std::collections::BTreeMap;

use serde::Serialize;
use stead_patch::{apply_hunks, FilePatch, Format, HunkMatch, PatchError};
use stead_sql::Sql;

use crate::edit::{as_text, unified_diff, EditError};
use crate::error::{Result, VfsError};
use crate::node::{Kind, Node};
use crate::ops::{ChangeKind, WriteOptions};
use crate::path::VPath;
use crate::{Vfs, FILE_MODE};

/// What [`Vfs::apply_patch`] did (or, for a dry run, would do).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PatchOutcome {
    pub format: Format,
    /// The files touched, in patch order.
    pub files: Vec<PatchedFile>,
    /// Unified diff of every change, file after file.
    pub diff: String,
    /// Revision of the change; absent for a dry run or a patch that
    /// changed nothing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revision: Option<i64>,
}

/// One file operation of a patch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PatchedFile {
    pub action: FileAction,
    /// The file's path afterwards (for a deletion, the path removed).
    pub path: String,
    /// Where a moved file came from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// Size afterwards; absent for a deletion.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Hunks that applied only by a fallback rule or at an offset.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fuzzy: Vec<HunkMatch>,
}

/// What a patch did to a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FileAction {
    Added,
    Updated,
    Moved,
    Deleted,
}

impl FileAction {
    /// The letter codex's `apply_patch` prints (a move is an `M` of its
    /// destination there too).
    pub fn letter(self) -> char {
        match self {
            FileAction::Added => 'A',
            FileAction::Updated | FileAction::Moved => 'M',
            FileAction::Deleted => 'D',
        }
    }
}

impl PatchOutcome {
    /// The summary codex's `apply_patch` prints on success:
    /// `Success. Updated the following files:` and a line per file
    /// (`A path`, `M path`, `D path`). Paths below `relative_to` are
    /// printed relative to it (as the patch named them); others, and all
    /// without it, are workspace paths.
    pub fn summary(&self, relative_to: Option<&VPath>) -> String {
        let mut out = String::from("Success. Updated the following files:\n");
        for file in &self.files {
            let below = relative_to.and_then(|base| {
                let path = VPath::parse(&file.path).ok()?;
                let rest = path.strip_prefix(base)?;
                (!rest.is_empty()).then(|| rest.to_string())
            });
            out.push(file.action.letter());
            out.push(' ');
            out.push_str(below.as_deref().unwrap_or(&file.path));
            out.push('\n');
        }
        out
    }
}

/// A file as the patch has left it so far, or `None` once it removed it.
type Overlay = BTreeMap<VPath, Option<Staged>>;

/// A file's content and mode as planned.
#[derive(Clone)]
struct Staged {
    data: Vec<u8>,
    mode: u32,
}

/// What stands at a path while planning.
enum Current {
    /// A file the patch wrote earlier.
    Staged(Staged),
    /// A node of the workspace, at its real path.
    Stored {
        real: VPath,
        node: Node,
    },
    Absent,
}

/// A write, in the order the patch gave it.
enum Step {
    Create {
        path: VPath,
        data: Vec<u8>,
        mode: u32,
    },
    Replace {
        path: VPath,
        data: Vec<u8>,
        mode: u32,
    },
    Move {
        from: VPath,
        to: VPath,
        data: Vec<u8>,
        mode: u32,
    },
    Remove {
        path: VPath,
    },
}

/// The patch, worked out and not yet written.
struct Plan {
    format: Format,
    files: Vec<PatchedFile>,
    diff: String,
    steps: Vec<Step>,
}

impl<S: Sql> Vfs<'_, S> {
    /// Applies `patch` (V4A or unified diff, told apart by its text) to the
    /// workspace in one transaction. Relative paths in the patch are taken
    /// from `base`. With `dry_run`, only reports what would change.
    ///
    /// # Errors
    ///
    /// [`VfsError::Patch`] for a malformed patch (`EINVAL`) or a hunk that
    /// does not apply (`EDIT_NO_MATCH`, naming the file, the hunk and the
    /// nearest text); the path errors of [`VPath::parse_from`]; `ENOENT` for
    /// an update or deletion of a missing file; `EEXIST` for an added file
    /// or move destination that exists; `EISDIR` for a directory; `EILSEQ`
    /// for hunks against a file that is not UTF-8; quota errors. On any
    /// error nothing has changed.
    pub fn apply_patch(&self, patch: &str, base: &VPath, dry_run: bool) -> Result<PatchOutcome> {
        let parsed = stead_patch::parse(patch)?;
        if dry_run {
            let plan = self.plan(&parsed, base)?;
            return Ok(outcome(plan, None));
        }
        self.change(|rev| {
            let plan = self.plan(&parsed, base)?;
            let wrote = !plan.steps.is_empty();
            for step in &plan.steps {
                self.perform(step, rev)?;
            }
            Ok(outcome(plan, wrote.then_some(rev)))
        })
    }

    fn plan(&self, patch: &stead_patch::Patch, base: &VPath) -> Result<Plan> {
        let mut planner = Planner {
            vfs: self,
            base,
            overlay: Overlay::new(),
            plan: Plan {
                format: patch.format,
                files: Vec::with_capacity(patch.files.len()),
                diff: String::new(),
                steps: Vec::with_capacity(patch.files.len()),
            },
        };
        for file in &patch.files {
            match file {
                FilePatch::Add { path, text, mode } => planner.add(path, text, *mode)?,
                FilePatch::Delete { path, hunks } => planner.delete(path, hunks)?,
                FilePatch::Update {
                    path,
                    move_to,
                    hunks,
                    mode,
                } => planner.update(path, move_to.as_deref(), hunks, *mode)?,
            }
        }
        Ok(planner.plan)
    }

    /// What is at `path` once the patch's earlier operations are counted.
    fn current(&self, overlay: &Overlay, path: &VPath, follow: bool) -> Result<Current> {
        if let Some(entry) = overlay.get(path) {
            return Ok(entry.clone().map_or(Current::Absent, Current::Staged));
        }
        match self.stat(path, follow) {
            Ok((real, node)) => match overlay.get(&real) {
                Some(entry) => Ok(entry.clone().map_or(Current::Absent, Current::Staged)),
                None => Ok(Current::Stored { real, node }),
            },
            Err(VfsError::NotFound { .. }) => Ok(Current::Absent),
            Err(error) => Err(error),
        }
    }

    /// The regular file at `path` (its real path and content), or the error
    /// an update or deletion of it gets.
    fn file_at(&self, overlay: &Overlay, path: &VPath, follow: bool) -> Result<(VPath, Staged)> {
        match self.current(overlay, path, follow)? {
            Current::Staged(staged) => Ok((path.clone(), staged)),
            Current::Stored { real, node } => match node.kind {
                Kind::Dir => Err(VfsError::IsADirectory {
                    path: path.to_string(),
                }),
                // Only a deletion reaches a symlink (updates follow it).
                Kind::Symlink => Ok((
                    real,
                    Staged {
                        data: Vec::new(),
                        mode: node.mode,
                    },
                )),
                Kind::File => Ok((
                    real,
                    Staged {
                        data: self.content(node.ino)?,
                        mode: node.mode,
                    },
                )),
            },
            Current::Absent => Err(VfsError::NotFound {
                path: path.to_string(),
            }),
        }
    }

    fn perform(&self, step: &Step, rev: i64) -> Result<()> {
        match step {
            Step::Create { path, data, mode } => self.create_file(path, data, *mode, rev),
            Step::Replace { path, data, mode } => {
                let options = WriteOptions {
                    mode: Some(*mode),
                    create_parents: false,
                };
                let (real, node, _) = self.prepare_file(path, options, rev)?;
                self.set_content(node.ino, data)?;
                self.finish_file(rev, &real, node.ino, data.len() as u64, false)
                    .map(drop)
            }
            Step::Move {
                from,
                to,
                data,
                mode,
            } => {
                // Written before the source goes, so shared chunks stay.
                self.create_file(to, data, *mode, rev)?;
                self.remove_entry(from, rev)
            }
            Step::Remove { path } => self.remove_entry(path, rev),
        }
    }

    fn create_file(&self, path: &VPath, data: &[u8], mode: u32, rev: i64) -> Result<()> {
        let options = WriteOptions {
            mode: Some(mode),
            create_parents: true,
        };
        let (real, node, created) = self.prepare_file(path, options, rev)?;
        if !created {
            return Err(VfsError::AlreadyExists {
                path: path.to_string(),
            });
        }
        self.push_chunks(node.ino, 0, data)?;
        self.finish_file(rev, &real, node.ino, data.len() as u64, true)
            .map(drop)
    }

    fn remove_entry(&self, path: &VPath, rev: i64) -> Result<()> {
        let (real, node, parent) = self.existing_in(path, false)?;
        self.unlink(&real, &node, parent, rev)?;
        self.log_change(rev, &real, ChangeKind::Deleted)
    }
}

/// Works out a patch file by file, against the workspace as the patch's
/// earlier operations leave it.
struct Planner<'p, 'db, S: Sql> {
    vfs: &'p Vfs<'db, S>,
    base: &'p VPath,
    overlay: Overlay,
    plan: Plan,
}

impl<S: Sql> Planner<'_, '_, S> {
    fn path(&self, path: &str) -> Result<VPath> {
        VPath::parse_from(path, self.base)
    }

    /// Fails with `EEXIST` when anything (a file, a directory, a symlink)
    /// stands at `path`.
    fn ensure_absent(&self, path: &VPath) -> Result<()> {
        match self.vfs.current(&self.overlay, path, false)? {
            Current::Absent => Ok(()),
            Current::Staged(_) | Current::Stored { .. } => Err(VfsError::AlreadyExists {
                path: path.to_string(),
            }),
        }
    }

    fn record(
        &mut self,
        action: FileAction,
        path: &VPath,
        from: Option<&VPath>,
        size: Option<u64>,
        fuzzy: Vec<HunkMatch>,
    ) {
        self.plan.files.push(PatchedFile {
            action,
            path: path.to_string(),
            from: from.map(VPath::to_string),
            size,
            fuzzy,
        });
    }

    fn add(&mut self, path: &str, text: &str, mode: Option<u32>) -> Result<()> {
        let path = self.path(path)?;
        self.ensure_absent(&path)?;
        self.vfs.check_size(&path, text.len() as u64)?;
        let new = Staged {
            data: text.as_bytes().to_vec(),
            mode: mode.unwrap_or(FILE_MODE),
        };
        self.plan.diff += &file_diff(None, Some(Side::of(&path, &new)));
        self.record(
            FileAction::Added,
            &path,
            None,
            Some(text.len() as u64),
            Vec::new(),
        );
        self.plan.steps.push(Step::Create {
            path: path.clone(),
            data: new.data.clone(),
            mode: new.mode,
        });
        self.overlay.insert(path, Some(new));
        Ok(())
    }

    fn delete(&mut self, path: &str, hunks: &[stead_patch::Hunk]) -> Result<()> {
        let path = self.path(path)?;
        let (real, old) = self.vfs.file_at(&self.overlay, &path, false)?;
        if !hunks.is_empty() {
            let left = apply_hunks(text_of(&real, &old.data)?, hunks, real.as_str())?;
            if !left.text.is_empty() {
                return Err(PatchError::DeleteMismatch {
                    path: real.to_string(),
                    remaining: left.text.lines().count().max(1),
                }
                .into());
            }
        }
        self.plan.diff += &file_diff(Some(Side::of(&real, &old)), None);
        self.record(FileAction::Deleted, &real, None, None, Vec::new());
        self.overlay.insert(real.clone(), None);
        self.plan.steps.push(Step::Remove { path: real });
        Ok(())
    }

    fn update(
        &mut self,
        path: &str,
        move_to: Option<&str>,
        hunks: &[stead_patch::Hunk],
        mode: Option<u32>,
    ) -> Result<()> {
        let path = self.path(path)?;
        let (real, old) = self.vfs.file_at(&self.overlay, &path, true)?;
        let (data, fuzzy) = match hunks {
            [] => (old.data.clone(), Vec::new()),
            _ => {
                let applied = apply_hunks(text_of(&real, &old.data)?, hunks, real.as_str())?;
                (applied.text.into_bytes(), applied.fuzzy)
            }
        };
        self.vfs.check_size(&real, data.len() as u64)?;
        let new = Staged {
            data,
            mode: mode.unwrap_or(old.mode),
        };
        let to = match move_to {
            Some(to) => Some(self.path(to)?).filter(|to| *to != real),
            None => None,
        };
        let size = Some(new.data.len() as u64);
        match to {
            Some(to) => {
                self.ensure_absent(&to)?;
                self.plan.diff +=
                    &file_diff(Some(Side::of(&real, &old)), Some(Side::of(&to, &new)));
                self.record(FileAction::Moved, &to, Some(&real), size, fuzzy);
                self.plan.steps.push(Step::Move {
                    from: real.clone(),
                    to: to.clone(),
                    data: new.data.clone(),
                    mode: new.mode,
                });
                self.overlay.insert(real, None);
                self.overlay.insert(to, Some(new));
            }
            None => {
                self.plan.diff +=
                    &file_diff(Some(Side::of(&real, &old)), Some(Side::of(&real, &new)));
                self.record(FileAction::Updated, &real, None, size, fuzzy);
                if new.data != old.data || new.mode != old.mode {
                    self.plan.steps.push(Step::Replace {
                        path: real.clone(),
                        data: new.data.clone(),
                        mode: new.mode,
                    });
                    self.overlay.insert(real, Some(new));
                }
            }
        }
        Ok(())
    }
}

fn outcome(plan: Plan, revision: Option<i64>) -> PatchOutcome {
    PatchOutcome {
        format: plan.format,
        files: plan.files,
        diff: plan.diff,
        revision,
    }
}

/// `data` as text for hunks, or `EILSEQ` naming the file.
fn text_of<'a>(path: &VPath, data: &'a [u8]) -> Result<&'a str> {
    as_text(data).map_err(|source: EditError| VfsError::Edit {
        path: path.to_string(),
        source,
    })
}

/// One side of a file's diff.
#[derive(Clone, Copy)]
struct Side<'a> {
    path: &'a VPath,
    data: &'a [u8],
    mode: u32,
}

impl<'a> Side<'a> {
    fn of(path: &'a VPath, staged: &'a Staged) -> Self {
        Side {
            path,
            data: &staged.data,
            mode: staged.mode,
        }
    }
}

/// The diff of one file, `None` for the side where it does not exist.
/// Moves and mode changes get git's extended headers, so `git apply` (and
/// this module) read them as such.
fn file_diff(old: Option<Side<'_>>, new: Option<Side<'_>>) -> String {
    let label = |prefix: &str, side: Option<Side<'_>>| match side {
        Some(side) => format!("{prefix}{}", side.path),
        None => "/dev/null".to_string(),
    };
    let (old_label, new_label) = (label("a", old), label("b", new));
    let mut out = String::new();
    if let (Some(old), Some(new)) = (old, new) {
        let moved = old.path != new.path;
        if moved || old.mode != new.mode {
            out += &format!("diff --git {old_label} {new_label}\n");
        }
        if old.mode != new.mode {
            let git_mode = |mode: u32| format!("{:06o}", 0o100000 | (mode & 0o7777));
            out += &format!(
                "old mode {}\nnew mode {}\n",
                git_mode(old.mode),
                git_mode(new.mode)
            );
        }
        if moved {
            // git names are relative to the repository root.
            let relative = |side: Side<'_>| side.path.as_str()[1..].to_string();
            out += &format!(
                "rename from {}\nrename to {}\n",
                relative(old),
                relative(new)
            );
        }
        if old.data == new.data {
            return out;
        }
    }
    let (old_data, new_data) = (
        old.map_or(&[][..], |s| s.data),
        new.map_or(&[][..], |s| s.data),
    );
    match (std::str::from_utf8(old_data), std::str::from_utf8(new_data)) {
        (Ok(old_text), Ok(new_text)) => {
            let body = unified_diff(old_text, new_text, &old_label, &new_label);
            if body.is_empty() {
                // An empty file added or deleted: the headers say it all.
                out + &format!("--- {old_label}\n+++ {new_label}\n")
            } else {
                out + &body
            }
        }
        _ => out + &format!("Binary files {old_label} and {new_label} differ\n"),
    }
}
