//! `apply_patch`: the tool GPT-5-class models edit files with, as a command.
//!
//! It takes the patch the way codex's `apply_patch` does — as its one
//! argument, or on stdin when there is none (a heredoc: `apply_patch
//! <<'EOF'`) — and also from a file named by the argument, or `-` for
//! stdin. An argument holding a newline or starting `*** Begin Patch` is
//! patch text (no file name does either); any other is a file to read.
//!
//! The patch (V4A or unified diff) is applied by the workspace in one
//! transaction (`stead_vfs::patch`), so a failing hunk changes no file. On
//! success it prints codex's summary, paths relative to the current
//! directory when they are under it (as the patch named them):
//!
//! ```text
//! Success. Updated the following files:
//! A docs/new.md
//! M src/main.py
//! D old.txt
//! ```
//!
//! On failure it prints `apply_patch: <why>` (the file, hunk and nearest
//! text for a hunk that does not apply) and exits 1; a usage error exits 2.

use super::{Ctx, Table};
use crate::limits::Abort;

pub(crate) const UTILITIES: Table = &[("apply_patch", apply_patch), ("applypatch", apply_patch)];

const USAGE: &str =
    "usage: apply_patch [PATCH | FILE | -]  (the patch is read from stdin without an argument)";

fn apply_patch(ctx: &mut Ctx<'_>, argv: &[String]) -> Result<i32, Abort> {
    let name = argv[0].as_str();
    let operands: Vec<&String> = match argv.get(1).map(String::as_str) {
        Some("--") => argv[2..].iter().collect(),
        Some("-h" | "--help") => {
            ctx.stdout.write_str(&format!("{USAGE}\n"))?;
            return Ok(0);
        }
        Some(flag) if flag.starts_with('-') && flag != "-" => {
            ctx.error(name, &format!("unknown option {flag}\n{USAGE}"))?;
            return Ok(2);
        }
        _ => argv[1..].iter().collect(),
    };
    let patch = match operands[..] {
        [] => text(ctx.stdin.all()?),
        [operand] if is_patch_text(operand) => operand.clone(),
        [operand] => match ctx.read_input(name, operand)? {
            Some(bytes) => text(&bytes),
            None => return Ok(1),
        },
        _ => {
            ctx.error(name, &format!("too many arguments\n{USAGE}"))?;
            return Ok(2);
        }
    };
    ctx.budget.charge_cpu(patch.len() as u64)?;
    match ctx.fs.apply_patch(&patch, ctx.cwd) {
        Ok(outcome) => {
            let written: u64 = outcome.files.iter().filter_map(|f| f.size).sum();
            ctx.budget.charge_write(written)?;
            ctx.stdout.write_str(&outcome.summary(Some(ctx.cwd)))?;
            Ok(0)
        }
        Err(error) => {
            ctx.error(name, &error.to_string())?;
            Ok(1)
        }
    }
}

/// Whether an argument is the patch itself rather than a file holding it.
fn is_patch_text(operand: &str) -> bool {
    operand.contains('\n') || operand.trim_start().starts_with("*** Begin Patch")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[cfg(test)]
mod tests {
    use stead_vfs::{VPath, Vfs};

    use crate::utils::testing::{db, files, run};

    const PATCH: &str = "*** Begin Patch
*** Add File: proj/new.md
+# New
*** Update File: proj/main.py
@@ def main():
-    print(\"hi\")
+    print(\"hello\")
*** Delete File: proj/old.txt
*** End Patch
";

    fn read(db: &stead_sql::SqliteDb, path: &str) -> Option<String> {
        let vfs = Vfs::new(db, 0);
        vfs.read_file(&VPath::parse(path).unwrap())
            .ok()
            .map(|bytes| String::from_utf8(bytes).unwrap())
    }

    fn project(db: &stead_sql::SqliteDb) {
        files(
            db,
            &[
                ("/proj/main.py", "def main():\n    print(\"hi\")\n"),
                ("/proj/old.txt", "old\n"),
            ],
        );
    }

    #[test]
    fn reads_the_patch_from_stdin_and_prints_codexs_summary() {
        let db = db();
        project(&db);
        let ran = run(&db, &["apply_patch"], PATCH);
        assert_eq!((ran.status, ran.stderr.as_str()), (0, ""));
        assert_eq!(
            ran.stdout,
            "Success. Updated the following files:\nA proj/new.md\nM proj/main.py\nD proj/old.txt\n"
        );
        assert_eq!(read(&db, "/proj/new.md").as_deref(), Some("# New\n"));
        assert_eq!(
            read(&db, "/proj/main.py").as_deref(),
            Some("def main():\n    print(\"hello\")\n")
        );
        assert_eq!(read(&db, "/proj/old.txt"), None);
    }

    #[test]
    fn takes_the_patch_as_its_argument_or_from_a_file() {
        let as_argument = db();
        project(&as_argument);
        let ran = run(&as_argument, &["applypatch", PATCH], "");
        assert_eq!(ran.status, 0, "{}", ran.stderr);
        assert_eq!(
            read(&as_argument, "/proj/new.md").as_deref(),
            Some("# New\n")
        );
        let db = db();
        project(&db);
        files(&db, &[("/fix.patch", PATCH)]);
        let ran = run(&db, &["apply_patch", "/fix.patch"], "");
        assert_eq!(ran.status, 0, "{}", ran.stderr);
        assert_eq!(read(&db, "/proj/new.md").as_deref(), Some("# New\n"));
        let ran = run(&db, &["apply_patch", "/missing.patch"], "");
        assert_eq!(ran.status, 1);
        assert_eq!(
            ran.stderr,
            "apply_patch: /missing.patch: No such file or directory\n"
        );
    }

    #[test]
    fn a_failing_hunk_exits_1_and_changes_nothing() {
        let db = db();
        project(&db);
        let broken = PATCH.replace("-    print(\"hi\")", "-    print(\"bye\")");
        let ran = run(&db, &["apply_patch"], &broken);
        assert_eq!(ran.status, 1);
        assert_eq!(ran.stdout, "");
        assert!(
            ran.stderr
                .starts_with("apply_patch: /proj/main.py: hunk #1 (@@ def main():) does not apply"),
            "{}",
            ran.stderr
        );
        assert!(ran.stderr.contains("at line 2"), "{}", ran.stderr);
        assert_eq!(read(&db, "/proj/new.md"), None);
        assert_eq!(read(&db, "/proj/old.txt").as_deref(), Some("old\n"));
    }

    #[test]
    fn malformed_patches_and_usage_errors() {
        let db = db();
        let ran = run(&db, &["apply_patch"], "not a patch\n");
        assert_eq!(ran.status, 1);
        assert!(
            ran.stderr
                .starts_with("apply_patch: malformed patch at line 1: not a patch"),
            "{}",
            ran.stderr
        );
        let ran = run(&db, &["apply_patch", "--frobnicate"], "");
        assert_eq!(ran.status, 2);
        let ran = run(&db, &["apply_patch", "a", "b"], "");
        assert_eq!(ran.status, 2);
        assert_eq!(run(&db, &["apply_patch", "--help"], "").status, 0);
    }
}
