//! `stead-checkpoint`: the workspace's time travel from a script, so a
//! script can pin the workspace before a risky step and go back.
//!
//! ```text
//! stead-checkpoint [-m NOTE] [NAME]      pin the workspace; prints the id
//! stead-checkpoint list [N]              the newest N (default 20) checkpoints
//! stead-checkpoint diff FROM [TO]        what differs (TO defaults to now)
//! stead-checkpoint restore ID|NAME [PATH...]
//! stead-checkpoint undo                  take back the last operation
//! ```
//!
//! FROM and TO are a checkpoint id or name, `now`, or `rev:N`. Diff lines
//! are `<change> <path>` (`added`, `deleted`, `modified`, `mode_changed`,
//! `type_changed`, `moved` with ` <- <from>`), like `git diff
//! --name-status` in words. The exec the script runs in took an automatic
//! checkpoint before it began, so a restore or undo made here can itself
//! be undone by undoing the exec.

use stead_vfs::{Checkpoint, CheckpointId, PathChange, Point, VPath, VfsError};

use super::{Ctx, Table};
use crate::limits::Abort;

pub(crate) const UTILITIES: Table = &[("stead-checkpoint", stead_checkpoint)];

const NAME: &str = "stead-checkpoint";

const USAGE: &str = "usage: stead-checkpoint [-m NOTE] [NAME] | list [N] | diff FROM [TO] | \
restore ID|NAME [PATH...] | undo";

/// Most diff lines printed.
const DIFF_LIMIT: usize = 10_000;

fn stead_checkpoint(ctx: &mut Ctx<'_>, argv: &[String]) -> Result<i32, Abort> {
    let args: Vec<&str> = argv[1..].iter().map(String::as_str).collect();
    let done = match args.as_slice() {
        ["-h" | "--help"] => {
            ctx.stdout.write_str(&format!("{USAGE}\n"))?;
            return Ok(0);
        }
        ["list"] => list(ctx, 20),
        ["list", n] => match n.parse() {
            Ok(n) => list(ctx, n),
            Err(_) => return usage(ctx, &format!("not a count: {n}")),
        },
        ["diff", from] => diff(ctx, from, "now"),
        ["diff", from, to] => diff(ctx, from, to),
        ["restore", key, paths @ ..] => restore(ctx, key, paths),
        ["undo"] => undo(ctx),
        ["-m", note, rest @ ..] => match rest {
            [] => create(ctx, None, Some(note)),
            [name] => create(ctx, Some(name), Some(note)),
            _ => return usage(ctx, "too many arguments"),
        },
        [] => create(ctx, None, None),
        [name] if !name.starts_with('-') => create(ctx, Some(name), None),
        _ => return usage(ctx, "unknown arguments"),
    };
    match done {
        Ok(Ok(())) => Ok(0),
        Ok(Err(error)) => {
            ctx.error(NAME, &error.to_string())?;
            Ok(1)
        }
        Err(abort) => Err(abort),
    }
}

fn usage(ctx: &mut Ctx<'_>, problem: &str) -> Result<i32, Abort> {
    ctx.error(NAME, &format!("{problem}\n{USAGE}"))?;
    Ok(2)
}

/// What a subcommand did: an abort (a limit) ends the script; a workspace
/// error is the command's failure.
type Done = Result<Result<(), VfsError>, Abort>;

fn line(checkpoint: &Checkpoint) -> String {
    let what = checkpoint
        .name
        .clone()
        .or_else(|| {
            checkpoint
                .operation
                .as_ref()
                .map(|op| format!("before {}", op.to_text()))
        })
        .unwrap_or_default();
    format!(
        "{}\trev {}\t{} files\t{}\n",
        checkpoint.id, checkpoint.revision, checkpoint.files, what
    )
}

fn create(ctx: &mut Ctx<'_>, name: Option<&str>, note: Option<&str>) -> Done {
    match ctx.fs.checkpoint(name, note) {
        Ok(checkpoint) => {
            ctx.stdout.write_str(&format!("{}\n", checkpoint.id))?;
            Ok(Ok(()))
        }
        Err(error) => Ok(Err(error)),
    }
}

fn list(ctx: &mut Ctx<'_>, limit: usize) -> Done {
    match ctx.fs.checkpoints(limit.max(1)) {
        Ok(checkpoints) => {
            for checkpoint in &checkpoints {
                ctx.stdout.write_str(&line(checkpoint))?;
            }
            Ok(Ok(()))
        }
        Err(error) => Ok(Err(error)),
    }
}

fn point(ctx: &Ctx<'_>, text: &str) -> Result<Point, VfsError> {
    if text == "now" {
        return Ok(Point::Now);
    }
    if let Some(revision) = text.strip_prefix("rev:") {
        return revision
            .parse()
            .map(Point::Revision)
            .map_err(|_| VfsError::UnknownCheckpoint {
                checkpoint: text.to_string(),
            });
    }
    Ok(Point::Checkpoint(ctx.fs.find_checkpoint(text)?.id))
}

fn diff(ctx: &mut Ctx<'_>, from: &str, to: &str) -> Done {
    let compared = point(ctx, from)
        .and_then(|from| Ok((from, point(ctx, to)?)))
        .and_then(|(from, to)| ctx.fs.diff(from, to, DIFF_LIMIT));
    let diff = match compared {
        Ok(diff) => diff,
        Err(error) => return Ok(Err(error)),
    };
    for entry in &diff.entries {
        let change = match entry.change {
            PathChange::Added => "added",
            PathChange::Deleted => "deleted",
            PathChange::Modified => "modified",
            PathChange::ModeChanged => "mode_changed",
            PathChange::TypeChanged => "type_changed",
            PathChange::Moved => "moved",
        };
        let from = entry
            .from
            .as_deref()
            .map(|from| format!(" <- {from}"))
            .unwrap_or_default();
        ctx.stdout
            .write_str(&format!("{change} {}{from}\n", entry.path))?;
    }
    Ok(Ok(()))
}

fn restore(ctx: &mut Ctx<'_>, key: &str, paths: &[&str]) -> Done {
    let paths: Result<Vec<VPath>, VfsError> = paths
        .iter()
        .map(|p| VPath::parse_from(p, ctx.cwd))
        .collect();
    let restored = paths.and_then(|paths| {
        let id: CheckpointId = ctx.fs.find_checkpoint(key)?.id;
        let only = (!paths.is_empty()).then_some(paths.as_slice());
        ctx.fs.restore(id, only)
    });
    match restored {
        Ok(restored) => {
            ctx.stdout.write_str(&format!(
                "restored {} path(s) from checkpoint {}\n",
                restored.changes.len(),
                restored.checkpoint
            ))?;
            Ok(Ok(()))
        }
        Err(error) => Ok(Err(error)),
    }
}

fn undo(ctx: &mut Ctx<'_>) -> Done {
    match ctx.fs.undo() {
        Ok(undone) => {
            ctx.stdout.write_str(&format!(
                "undid {}: {} path(s) put back\n",
                undone
                    .checkpoint
                    .operation
                    .as_ref()
                    .map(|op| op.to_text())
                    .unwrap_or_else(|| "a checkpoint".into()),
                undone.restored.changes.len()
            ))?;
            Ok(Ok(()))
        }
        Err(error) => Ok(Err(error)),
    }
}

#[cfg(test)]
mod tests {
    use stead_vfs::{VPath, Vfs};

    use crate::utils::testing::{db, files, run};

    fn read(db: &stead_sql::SqliteDb, path: &str) -> Option<String> {
        Vfs::new(db, 0)
            .read_file(&VPath::parse(path).unwrap())
            .ok()
            .map(|bytes| String::from_utf8(bytes).unwrap())
    }

    #[test]
    fn a_script_pins_the_workspace_and_goes_back() {
        let db = db();
        files(&db, &[("/app/config.toml", "good\n")]);
        let taken = run(
            &db,
            &["stead-checkpoint", "-m", "before migrating", "safe"],
            "",
        );
        assert_eq!((taken.status, taken.stdout.trim()), (0, "1"), "{taken:?}");
        files(
            &db,
            &[("/app/config.toml", "broken\n"), ("/app/new.txt", "x")],
        );
        let diff = run(&db, &["stead-checkpoint", "diff", "safe"], "");
        assert_eq!(
            diff.stdout,
            "modified /app/config.toml\nadded /app/new.txt\n"
        );
        let restored = run(
            &db,
            &["stead-checkpoint", "restore", "safe", "/app/config.toml"],
            "",
        );
        assert_eq!(restored.status, 0, "{restored:?}");
        assert_eq!(read(&db, "/app/config.toml").as_deref(), Some("good\n"));
        assert_eq!(
            read(&db, "/app/new.txt").as_deref(),
            Some("x"),
            "only the path asked for"
        );
        let listed = run(&db, &["stead-checkpoint", "list"], "");
        assert!(listed.stdout.starts_with("1\trev "), "{}", listed.stdout);
        assert!(listed.stdout.contains("safe"));
    }

    #[test]
    fn mistakes_fail_with_a_message() {
        let db = db();
        let dup = run(&db, &["stead-checkpoint", "x"], "");
        assert_eq!(dup.status, 0);
        let again = run(&db, &["stead-checkpoint", "x"], "");
        assert_eq!(again.status, 1);
        assert!(again.stderr.contains("already exists"), "{again:?}");
        let missing = run(&db, &["stead-checkpoint", "restore", "nope"], "");
        assert_eq!(missing.status, 1);
        assert!(
            missing.stderr.starts_with("stead-checkpoint: "),
            "{missing:?}"
        );
        let bad = run(&db, &["stead-checkpoint", "--frobnicate"], "");
        assert_eq!(bad.status, 2);
        let nothing = run(&db, &["stead-checkpoint", "undo"], "");
        assert_eq!(nothing.status, 1, "nothing to undo: {nothing:?}");
    }
}
