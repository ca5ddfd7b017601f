//! The patch tool: `stead_patch::parse` and `apply_hunks` on arbitrary
//! text, and `Vfs::apply_patch` over a real (rusqlite) workspace.
//!
//! Patches are model-written text meeting file content: line splitting,
//! CRLF handling, hunk counts, the matching ladder's normalisations and the
//! nearest-text search can all index wrongly. The checks: no panic; a
//! malformed patch names a line of the patch; a failed hunk names a hunk
//! that exists and a nearest line inside the file; fuzzy reports name real
//! hunks; an applied result, diffed back against the original (by the VFS
//! `edit` diff) and re-applied, gives the same text exactly; through the
//! workspace, a failed or dry-run patch changes no table, and an applied one
//! is one revision after which every file reported is as reported.

use std::collections::BTreeMap;

use stead_patch::{apply_hunks, parse, FilePatch, MatchRule, PatchError};
use stead_vfs::edit::unified_diff;
use stead_vfs::{FileAction, VPath, Vfs, WriteOptions};

use crate::targets::{dump, fresh_db, text};
use crate::Target;

pub const TARGET: Target = Target {
    name: "patch",
    about: "stead_patch::parse/apply_hunks and Vfs::apply_patch: no panic, errors point inside the patch and file, results re-diff and re-apply exactly, failed or dry-run patches change no table",
    run,
    seeds,
    tokens: &[
        "*** Begin Patch\n",
        "*** End Patch\n",
        "*** Add File: ",
        "*** Update File: ",
        "*** Delete File: ",
        "*** Move to: ",
        "*** End of File\n",
        "@@\n",
        "@@ ",
        "\n+",
        "\n-",
        "\n ",
        "\n\n",
        "--- a/f\n+++ b/f\n",
        "--- /dev/null\n",
        "+++ /dev/null\n",
        "@@ -1,2 +1,2 @@\n",
        "@@ -0,0 +1 @@\n",
        "\\ No newline at end of file\n",
        "diff --git a/f b/g\n",
        "rename from f\nrename to g\n",
        "new file mode 100755\n",
        "old mode 100644\nnew mode 100755\n",
        "a.txt",
        "d/b.txt",
        "../x",
        "\r\n",
        "\t",
        "\u{201C}",
        "\u{2014}",
        "e\u{301}",
        "<<'EOF'\n",
        "\nEOF\n",
    ],
    bounds: None,
};

/// Byte 0: bit 0 also runs the patch through a workspace, bit 1 makes that
/// a dry run. The rest is the original file text, a NUL, and the patch (no
/// NUL: an empty original and all patch).
pub fn run(data: &[u8]) {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let (original, patch) = split(rest);
    check_text(&original, &patch);
    if flags & 1 == 1 {
        check_workspace(&original, &patch, flags & 2 == 2);
    }
}

/// The original text and the patch: before and after the first NUL.
fn split(bytes: &[u8]) -> (String, String) {
    match bytes.iter().position(|&b| b == 0) {
        Some(nul) => (text(&bytes[..nul]), text(&bytes[nul + 1..])),
        None => (String::new(), text(bytes)),
    }
}

fn check_text(original: &str, patch: &str) {
    let parsed = match parse(patch) {
        Ok(parsed) => parsed,
        Err(PatchError::Malformed { line, problem }) => {
            let lines = patch.split('\n').count();
            assert!(
                (1..=lines + 1).contains(&line),
                "line {line} of {lines}: {problem}"
            );
            return;
        }
        Err(other) => panic!("parse gave a non-parse error: {other:?}"),
    };
    assert!(!parsed.files.is_empty());
    for file in &parsed.files {
        let hunks = match file {
            FilePatch::Update { hunks, .. } | FilePatch::Delete { hunks, .. } => hunks,
            FilePatch::Add { .. } => continue,
        };
        match apply_hunks(original, hunks, "/f") {
            Ok(applied) => {
                for m in &applied.fuzzy {
                    assert!((1..=hunks.len()).contains(&m.hunk), "{m:?}");
                    assert!(m.line >= 1);
                    assert!(m.rule != MatchRule::Exact || m.offset != 0, "{m:?}");
                }
                round_trip(original, &applied.text);
            }
            Err(PatchError::HunkFailed(failed)) => {
                assert!((1..=hunks.len()).contains(&failed.hunk), "{failed:?}");
                if let Some(nearest) = &failed.nearest {
                    let lines = original.split('\n').count();
                    assert!((1..=lines).contains(&nearest.line), "{nearest:?}");
                    assert!(nearest.matching_lines <= nearest.of);
                }
                assert!(!failed.to_string().is_empty());
            }
            Err(other) => panic!("apply_hunks gave {other:?}"),
        }
    }
}

/// The diff of `original` to `result` applies back to `result` exactly
/// (for text without `\r`, whose endings a diff cannot always say).
fn round_trip(original: &str, result: &str) {
    if original.contains('\r') || result.contains('\r') {
        return;
    }
    let diff = unified_diff(original, result, "a/f", "b/f");
    if diff.is_empty() {
        assert_eq!(original, result);
        return;
    }
    let reparsed = parse(&diff).unwrap_or_else(|e| panic!("{e}\n{diff}"));
    let [FilePatch::Update { path, hunks, .. }] = &reparsed.files[..] else {
        panic!("{reparsed:?}")
    };
    assert_eq!(path, "f");
    let again = apply_hunks(original, hunks, "/f").unwrap_or_else(|e| panic!("{e}\n{diff}"));
    assert_eq!(again.text, result, "{diff}");
    assert!(again.fuzzy.is_empty(), "{:?}\n{diff}", again.fuzzy);
}

fn check_workspace(original: &str, patch: &str, dry_run: bool) {
    let db = fresh_db();
    let vfs = Vfs::new(&db, 1_700_000_000_000);
    for (path, text) in [("/f", original), ("/a.txt", original), ("/d/b.txt", "b\n")] {
        vfs.write(
            &VPath::parse(path).unwrap(),
            text.as_bytes(),
            WriteOptions::default(),
        )
        .expect("seed file");
    }
    let revision = vfs.revision().unwrap();
    let before = dump(&db);
    let result = vfs.apply_patch(patch, &VPath::root(), dry_run);
    let out = match result {
        Err(error) => {
            assert!(!error.code().as_str().is_empty());
            assert!(
                dump(&db) == before,
                "a failed patch changed the workspace: {error}"
            );
            return;
        }
        Ok(out) => out,
    };
    match out.revision {
        None => {
            assert!(
                dump(&db) == before,
                "a dry or empty patch changed the workspace"
            );
            return;
        }
        Some(rev) => {
            assert!(!dry_run);
            assert_eq!(rev, revision + 1);
            assert_eq!(vfs.revision().unwrap(), rev);
        }
    }
    // The last word on each path the answer names.
    let mut last: BTreeMap<&str, Option<u64>> = BTreeMap::new();
    for file in &out.files {
        match file.action {
            FileAction::Added | FileAction::Updated => {
                last.insert(&file.path, file.size);
            }
            FileAction::Moved => {
                last.insert(file.from.as_deref().expect("a move says where from"), None);
                last.insert(&file.path, file.size);
            }
            FileAction::Deleted => {
                last.insert(&file.path, None);
            }
        }
    }
    for (path, size) in last {
        let stat = vfs.stat(&VPath::parse(path).unwrap(), false);
        match size {
            Some(size) => assert_eq!(stat.expect("reported file exists").1.size, size, "{path}"),
            None => assert!(stat.is_err(), "{path} was reported gone"),
        }
    }
}

fn seeds() -> Vec<Vec<u8>> {
    let original =
        "def f():\n    x = 1\n    return x\n\nclass A:\n    def f(self):\n        return 2\n";
    let patches = [
        "*** Begin Patch\n*** Update File: f\n@@ class A:\n@@     def f(self):\n-        return 2\n+        return 3\n*** End Patch\n",
        "*** Begin Patch\n*** Update File: a.txt\n*** Move to: moved/a.txt\n@@\n def f():\n-    x = 1\n+    x = 2\n*** End of File\n*** Add File: new.txt\n+hello\n*** Delete File: d/b.txt\n*** End Patch\n",
        "*** Begin Patch\n*** Update File: f\n@@\n-\tx = 1  \n+    x = \u{201C}1\u{201D}\n*** End Patch\n",
        "*** Begin Patch\n*** Update File: f\n@@ def g():\n-    x = 9\n+    x = 1\n*** End Patch\n",
        "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n def f():\n-    x = 1\n+    x = 10\n     return x\n@@ -6,2 +6,3 @@\n     def f(self):\n         return 2\n+        # done\n",
        "diff --git a/a.txt b/c.txt\nsimilarity index 90%\nrename from a.txt\nrename to c.txt\n--- a/a.txt\n+++ b/c.txt\n@@ -7 +7 @@\n-        return 2\n\\ No newline at end of file\n+        return 4\n",
        "diff --git a/n.sh b/n.sh\nnew file mode 100755\n--- /dev/null\n+++ b/n.sh\n@@ -0,0 +1 @@\n+echo\ndiff --git a/d/b.txt b/d/b.txt\ndeleted file mode 100644\n--- a/d/b.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-b\n",
        "<<'EOF'\n*** Begin Patch\n*** Add File: ../escape\n+x\n*** End Patch\nEOF\n",
    ];
    let mut seeds = Vec::new();
    for (i, patch) in patches.iter().enumerate() {
        for flags in [0u8, 1, 3] {
            let mut seed = vec![flags];
            let text = if i == 2 {
                original.replace("    x", "\tx")
            } else {
                original.to_string()
            };
            seed.extend_from_slice(text.as_bytes());
            seed.push(0);
            seed.extend_from_slice(patch.as_bytes());
            seeds.push(seed);
        }
    }
    seeds.push(b"\x01*** Begin Patch\n*** Add File: x\n+1\n*** End Patch".to_vec());
    seeds
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mutate::{mutate, Rng};

    /// Mutated seeds reach successful applies and each kind of failure.
    #[test]
    fn mutated_seeds_reach_applies_and_failures() {
        let corpus = seeds();
        let mut rng = Rng::new(7);
        let (mut applied, mut malformed, mut failed) = (0, 0, 0);
        for i in 0..5_000 {
            let input = mutate(
                &mut rng,
                &corpus[i % corpus.len()],
                &corpus,
                TARGET.tokens,
                2048,
            );
            let (original, patch) = split(input.get(1..).unwrap_or_default());
            match parse(&patch) {
                Err(_) => malformed += 1,
                Ok(parsed) => {
                    for file in parsed.files {
                        if let FilePatch::Update { hunks, .. } = file {
                            match apply_hunks(&original, &hunks, "/f") {
                                Ok(_) => applied += 1,
                                Err(_) => failed += 1,
                            }
                        }
                    }
                }
            }
        }
        assert!(
            applied > 100 && malformed > 100 && failed > 100,
            "{applied} {malformed} {failed}"
        );
    }
}
