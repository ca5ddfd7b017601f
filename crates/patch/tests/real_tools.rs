//! Diffs made by the real `git diff` and GNU `diff -u` apply to the old
//! text and give exactly the new text.
//!
//! Each run generates pairs of files (old, new) from a fixed seed: lines
//! replaced, inserted and deleted in several places, plus the edge cases
//! (CRLF, no final newline on either side, a file emptied, non-ASCII text).
//! The real tools diff them with several context sizes, and every file of
//! every diff must reproduce its new text, also when the old text has moved
//! down (lines added above it since the diff was made). The tools must be
//! installed: without them the test fails rather than skipping.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use stead_patch::{apply_hunks, parse, FilePatch, Format};

/// A deterministic generator (64-bit LCG), so a failure is reproducible.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) as usize) % n.max(1)
    }
}

/// Every line is unique, so a hunk's place is never ambiguous and the
/// shifted-text check below has a single right answer.
fn base(case: usize, lines: usize) -> Vec<String> {
    (0..lines)
        .map(|i| match i % 5 {
            0 => format!("fn item_{case}_{i}() {{"),
            1 => format!("    let v{i} = compute({case}, {i});"),
            2 => format!("    // note {i}: caf\u{e9} \u{2014} {case}"),
            3 => format!("    v{}", i - 2),
            _ => format!("}} // end {i}"),
        })
        .collect()
}

fn mutate(rng: &mut Rng, lines: &[String], case: usize) -> Vec<String> {
    let mut out = lines.to_vec();
    for edit in 0..1 + rng.below(4) {
        let at = rng.below(out.len() + 1);
        let count = 1 + rng.below(3);
        match rng.below(3) {
            0 if at < out.len() => {
                out[at] = format!("    changed({case}, {edit}, {at});");
            }
            1 => {
                for k in 0..count {
                    out.insert(at, format!("    inserted({case}, {edit}, {k});"));
                }
            }
            _ => {
                let end = (at + count).min(out.len());
                out.drain(at..end);
            }
        }
    }
    out
}

/// `lines` joined, line i ending with `ending(i)` (the last only when
/// `final_newline`).
fn join(lines: &[String], ending: impl Fn(&str) -> &'static str, final_newline: bool) -> String {
    let mut text = String::new();
    for (i, line) in lines.iter().enumerate() {
        text.push_str(line);
        if i + 1 < lines.len() || final_newline {
            text.push_str(ending(line));
        }
    }
    text
}

/// (name, old text, new text) for every case.
fn cases() -> Vec<(String, String, String)> {
    let mut rng = Rng(0x5eed);
    let mut cases = Vec::new();
    for case in 0..16 {
        let old = base(case, 20 + rng.below(60));
        let new = mutate(&mut rng, &old, case);
        // Line endings: CRLF, mostly CRLF with some bare LF lines, mostly
        // LF with some CRLF lines (chosen by line content, so a line keeps
        // its ending in both versions and inserted lines get either).
        let ending = move |line: &str| -> &'static str {
            let odd = line.bytes().map(u32::from).sum::<u32>() % 3 == 0;
            match case {
                3 => "\r\n",
                9 if odd => "\n",
                9 => "\r\n",
                10 if odd => "\r\n",
                _ => "\n",
            }
        };
        let (old_final, new_final) = match case {
            4 => (false, true),
            5 => (true, false),
            6 => (false, false),
            _ => (true, true),
        };
        cases.push((
            format!("dir{}/case{case}.txt", case % 3),
            join(&old, ending, old_final),
            join(&new, ending, new_final),
        ));
    }
    let emptied = join(&base(99, 7), |_| "\n", true);
    cases.push(("emptied.txt".into(), emptied.clone(), String::new()));
    cases.push(("filled.txt".into(), String::new(), emptied));
    // Mixed line endings, with added lines of either kind.
    cases.push((
        "mixed_crlf.txt".into(),
        "a\r\nb\r\nc\r\nd\n".into(),
        "a\r\nb\r\nnew lf\nc\r\nnew crlf\r\nd\n".into(),
    ));
    cases.push((
        "mixed_lf.txt".into(),
        "a\nb\r\nc\nd\n".into(),
        "a\nb\r\nx crlf\r\nc\ny lf\nd\n".into(),
    ));
    cases
}

fn run(dir: &Path, program: &str, args: &[&str]) -> String {
    let out = Command::new(program)
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .output()
        .unwrap_or_else(|e| panic!("{program} must be installed for this test: {e}"));
    // diff exits 1 when the files differ; git diff --exit-code is not used.
    assert!(
        out.status.code().is_some_and(|c| c <= 1),
        "{program} {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("diffs of text files are text")
}

fn write_tree(root: &Path, files: impl IntoIterator<Item = (String, String)>) {
    for (name, text) in files {
        let path = root.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
}

/// Applies every file of `diff` to `before` (name -> text) as the
/// workspace would, returning the files afterwards.
fn apply_all(diff: &str, before: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    let patch = parse(diff).unwrap_or_else(|e| panic!("{e}\n{diff}"));
    assert_eq!(patch.format, Format::Unified);
    // Every generated case changes its file, so every one is in the diff.
    assert_eq!(patch.files.len(), cases().len(), "{diff}");
    let mut files = before.clone();
    for file in &patch.files {
        match file {
            FilePatch::Add { path, text, .. } => {
                assert!(
                    files.insert(path.clone(), text.clone()).is_none(),
                    "{path} exists"
                );
            }
            FilePatch::Delete { path, hunks } => {
                let old = files
                    .remove(path)
                    .unwrap_or_else(|| panic!("{path} missing"));
                let out = apply_hunks(&old, hunks, path).unwrap_or_else(|e| panic!("{e}"));
                assert_eq!(out.text, "", "{path}: a deletion removes everything");
            }
            FilePatch::Update {
                path,
                move_to,
                hunks,
                mode,
            } => {
                assert_eq!((move_to, mode), (&None, &None));
                let old = &files[path];
                let out = apply_hunks(old, hunks, path).unwrap_or_else(|e| panic!("{e}\n{diff}"));
                files.insert(path.clone(), out.text);
            }
        }
    }
    files
}

fn assert_same(got: &BTreeMap<String, String>, want: &BTreeMap<String, String>, what: &str) {
    assert_eq!(
        got.keys().collect::<Vec<_>>(),
        want.keys().collect::<Vec<_>>(),
        "{what}"
    );
    for (name, text) in want {
        assert!(
            got[name] == *text,
            "{what}: {name}\n got {:?}\nwant {text:?}",
            got[name]
        );
    }
}

#[test]
fn git_diff_output_applies() {
    let repo = tempfile::tempdir().unwrap();
    let dir = repo.path();
    let cases = cases();
    write_tree(
        dir,
        cases.iter().map(|(n, old, _)| (n.clone(), old.clone())),
    );
    run(dir, "git", &["init", "-q"]);
    run(dir, "git", &["add", "-A"]);
    run(
        dir,
        "git",
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.com",
            "commit",
            "-qm",
            "old",
        ],
    );
    write_tree(
        dir,
        cases.iter().map(|(n, _, new)| (n.clone(), new.clone())),
    );
    let old: BTreeMap<_, _> = cases
        .iter()
        .map(|(n, o, _)| (n.clone(), o.clone()))
        .collect();
    let new: BTreeMap<_, _> = cases
        .iter()
        .map(|(n, _, w)| (n.clone(), w.clone()))
        .collect();
    for context in ["-U3", "-U1", "-U0", "-U8"] {
        let diff = run(
            dir,
            "git",
            &[
                "-c",
                "core.autocrlf=false",
                "diff",
                "--no-color",
                "--no-ext-diff",
                context,
            ],
        );
        assert!(diff.starts_with("diff --git a/"), "{diff}");
        assert_same(
            &apply_all(&diff, &old),
            &new,
            &format!("git diff {context}"),
        );
    }
}

#[test]
fn gnu_diff_output_applies_including_adds_and_deletes() {
    let trees = tempfile::tempdir().unwrap();
    let dir = trees.path();
    let cases = cases();
    let mut old: BTreeMap<String, String> = BTreeMap::new();
    let mut new: BTreeMap<String, String> = BTreeMap::new();
    for (i, (name, before, after)) in cases.into_iter().enumerate() {
        // Some files exist on one side only: `diff -N` reports them as
        // created or deleted.
        if i != 7 {
            old.insert(name.clone(), before);
        }
        if i != 8 {
            new.insert(name, after);
        }
    }
    write_tree(&dir.join("old"), old.clone());
    write_tree(&dir.join("new"), new.clone());
    for context in ["-U3", "-U0", "-U5"] {
        let diff = run(dir, "diff", &["-ruN", context, "old", "new"]);
        assert!(diff.contains("\n--- old/"), "{diff}");
        assert_same(
            &apply_all(&diff, &old),
            &new,
            &format!("diff -ruN {context}"),
        );
    }
}

/// The old text has moved down since the diff was made (lines added above
/// every case): hunks are found at their offset, as `patch` finds them.
#[test]
fn diffs_apply_to_text_that_has_moved() {
    let trees = tempfile::tempdir().unwrap();
    let dir = trees.path();
    let cases = cases();
    write_tree(
        &dir.join("a"),
        cases.iter().map(|(n, old, _)| (n.clone(), old.clone())),
    );
    write_tree(
        &dir.join("b"),
        cases.iter().map(|(n, _, new)| (n.clone(), new.clone())),
    );
    let prefix = "added above 1\nadded above 2\nadded above 3\nadded above 4\n";
    // With context, as `patch` needs to relocate a hunk (a hunk of only
    // added lines and no context has nothing to be found by).
    for context in ["-U3", "-U1"] {
        let diff = run(dir, "diff", &["-ru", context, "a", "b"]);
        let patch = parse(&diff).unwrap();
        for file in &patch.files {
            let FilePatch::Update { path, hunks, .. } = file else {
                panic!("{file:?}")
            };
            let (_, old, new) = cases.iter().find(|(n, ..)| n == path).unwrap();
            if old.is_empty() || old.contains('\r') {
                continue; // nothing to shift, or a CRLF file would need a CRLF prefix
            }
            let shifted = format!("{prefix}{old}");
            let out = apply_hunks(&shifted, hunks, path).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(out.text, format!("{prefix}{new}"), "{path} {context}");
            assert!(
                out.fuzzy.iter().all(|m| m.offset == 4),
                "{path}: {:?}",
                out.fuzzy
            );
        }
    }
}
