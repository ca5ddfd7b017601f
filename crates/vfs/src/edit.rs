//! The `edit` tool: several exact-text replacements applied to a file at once.
//!
//! Why it works the way it does:
//!
//! - **Atomic against the original.** Every `old` string is located in the
//!   *original* text, and all the replacements are then spliced in a single
//!   pass. No edit ever sees another edit's output, so an edit whose `new`
//!   happens to contain a later edit's `old` cannot trigger a cascade, and
//!   the result does not depend on the order the edits were listed in. If
//!   any edit fails, nothing is applied: the caller gets an error value and
//!   the file stays as it was.
//! - **Exactly one match.** An agent that edits "the first `foo`" when there
//!   are three is making a silent, wrong change. Requiring `old` to be unique
//!   (unless `replace_all` is set) turns that into an error that tells the
//!   agent to add context. Matching is exact and byte-for-byte, counting
//!   non-overlapping occurrences the way [`str::match_indices`] does.
//! - **No overlaps.** Two edits that touch the same bytes have no single
//!   sensible meaning, so they are rejected rather than resolved by order.
//! - **Line endings are preserved.** Agents almost always write `\n`. If the
//!   file uses CRLF (it has at least as many `\r\n` as bare `\n`) and an
//!   edit's `old` contains no `\r`, that edit's bare `\n`s are turned into
//!   `\r\n` in both `old` and `new` before matching. Otherwise an LF `old`
//!   would never match a CRLF file, and an LF `new` would leave the file
//!   with mixed endings. An `old` that already contains `\r` is taken to be
//!   deliberate and is used exactly as given.
//! - **Forgiving, but only when unambiguous.** When `old` is not in the file
//!   exactly, it is searched for again under looser rules, one at a time
//!   and each including the last: line endings (CRLF vs LF), Unicode
//!   normalisation (NFC), trailing whitespace, indentation, typographic
//!   quotes/dashes/spaces (see [`stead_patch::MatchRule`]). The first rule
//!   that finds it decides: one match is applied (with `new` re-indented
//!   like the file and given its line endings) and reported in
//!   [`Edited::fuzzy`] with the exact text it replaced; several matches are
//!   [`EditError::FuzzyAmbiguous`]. Only the exact text is ever counted for
//!   `replace_all`: a fuzzy match is always a single one. Files over 4 MiB
//!   are only searched exactly (the normalised copy would not fit a
//!   Worker's memory).
//!
//! The module is pure: text in, text out. Reading and writing the file is the
//! caller's job.

mod fuzzy;

use std::borrow::Cow;

use similar::TextDiff;
use stead_patch::{is_crlf, MatchRule};

/// One replacement: `old` must occur exactly once in the original text (or at
/// least once when `replace_all`).
#[derive(Debug, Clone, serde::Deserialize, schemars::JsonSchema)]
pub struct Replacement {
    /// The exact text to find.
    pub old: String,
    /// The text to put in its place.
    pub new: String,
    /// Replace every occurrence instead of requiring exactly one.
    #[serde(default)]
    pub replace_all: bool,
}

/// Why a set of edits was rejected. `index` is the edit's position in the
/// list given to [`apply`], counting from 0.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum EditError {
    #[error("edit {index}: `old` is empty")]
    EmptyOld { index: usize },
    #[error("edit {index}: `old` not found in the file")]
    NotFound { index: usize },
    #[error(
        "edit {index}: `old` matches {count} places; add context to make it unique or set replace_all"
    )]
    Ambiguous { index: usize, count: usize },
    /// `old` is not in the file exactly, and the first looser rule that
    /// finds it finds it in several places.
    #[error(
        "edit {index}: `old` is not in the file exactly, and matches {count} places ignoring {}; add context to make it unique",
        rule.forgives()
    )]
    FuzzyAmbiguous {
        index: usize,
        count: usize,
        rule: MatchRule,
    },
    /// `index` is the later edit in the list and `other` the earlier one, so
    /// `index > other` always.
    #[error("edit {index} overlaps edit {other}")]
    Overlap { index: usize, other: usize },
    /// The final text equals the original (this includes an empty edit list).
    #[error("edits made no change")]
    NoChange,
    /// For callers holding raw bytes; see [`as_text`].
    #[error("the file is not valid UTF-8 text")]
    NotText,
}

/// The outcome of a successful [`apply`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edited {
    /// The new file contents.
    pub text: String,
    /// How many ranges were replaced in total (a `replace_all` edit counts
    /// each occurrence).
    pub replacements: usize,
    /// Unified diff of the original against `text`, 3 lines of context.
    pub diff: String,
    /// The edits whose `old` was found only by a looser rule, in edit order.
    pub fuzzy: Vec<FuzzyMatch>,
}

/// An edit applied by a fuzzy match: which rule found it, and the file's
/// exact text it replaced (what `old` should have been).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FuzzyMatch {
    /// The edit's position in the request, from 0.
    pub edit_index: usize,
    pub rule: MatchRule,
    pub matched: String,
}

/// Views file contents as text, so callers holding bytes get
/// [`EditError::NotText`] instead of editing a binary file.
///
/// # Errors
///
/// [`EditError::NotText`] when `bytes` is not valid UTF-8.
pub fn as_text(bytes: &[u8]) -> Result<&str, EditError> {
    std::str::from_utf8(bytes).map_err(|_| EditError::NotText)
}

/// A located match: the byte range in the original, which edit produced it,
/// and what goes there.
struct Span<'a> {
    start: usize,
    end: usize,
    index: usize,
    new: Cow<'a, str>,
}

/// Applies all replacements against `original` at once. `path` labels the
/// diff headers (`--- a{path}` / `+++ b{path}`; paths start with '/').
///
/// Edits are checked in list order, so the first bad edit is the one
/// reported; overlaps are checked once every edit has matched.
///
/// # Errors
///
/// Any [`EditError`] but `NotText`; on error nothing has been applied.
pub fn apply(original: &str, edits: &[Replacement], path: &str) -> Result<Edited, EditError> {
    if edits.is_empty() {
        return Err(EditError::NoChange);
    }
    let crlf = is_crlf(original);

    // Translated strings must outlive the spans that borrow them, so they
    // are all built before any matching starts.
    let prepared: Vec<(String, String)> = edits
        .iter()
        .map(|e| {
            if crlf && !e.old.contains('\r') {
                (lf_to_crlf(&e.old), lf_to_crlf(&e.new))
            } else {
                (e.old.clone(), e.new.clone())
            }
        })
        .collect();

    let mut spans = Vec::new();
    let mut fuzzy = Vec::new();
    for (index, (edit, (old, new))) in edits.iter().zip(&prepared).enumerate() {
        // An empty needle matches between every pair of characters; that is
        // never what an agent means.
        if old.is_empty() {
            return Err(EditError::EmptyOld { index });
        }
        let before = spans.len();
        spans.extend(original.match_indices(old.as_str()).map(|(start, m)| Span {
            start,
            end: start + m.len(),
            index,
            new: Cow::Borrowed(new.as_str()),
        }));
        let count = spans.len() - before;
        if count > 1 && !edit.replace_all {
            return Err(EditError::Ambiguous { index, count });
        }
        if count == 0 {
            match fuzzy::search(original, old, new, crlf) {
                fuzzy::Search::Found(found) => {
                    fuzzy.push(FuzzyMatch {
                        edit_index: index,
                        rule: found.rule,
                        matched: original[found.start..found.end].to_string(),
                    });
                    spans.push(Span {
                        start: found.start,
                        end: found.end,
                        index,
                        new: Cow::Owned(found.new),
                    });
                }
                fuzzy::Search::Ambiguous { count, rule } => {
                    return Err(EditError::FuzzyAmbiguous { index, count, rule })
                }
                fuzzy::Search::NotFound => return Err(EditError::NotFound { index }),
            }
        }
    }

    // Sorted by start, any overlap shows up between neighbours: if span i
    // overlaps some later span j, then span i+1 starts no later than j and
    // so overlaps i too. Spans are never empty, so ranges that merely touch
    // (`end == start`) are fine.
    spans.sort_by_key(|s| (s.start, s.end));
    for pair in spans.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        if b.start < a.end {
            return Err(EditError::Overlap {
                index: a.index.max(b.index),
                other: a.index.min(b.index),
            });
        }
    }

    let mut text = String::with_capacity(original.len());
    let mut cursor = 0;
    for span in &spans {
        text.push_str(&original[cursor..span.start]);
        text.push_str(&span.new);
        cursor = span.end;
    }
    text.push_str(&original[cursor..]);

    if text == original {
        return Err(EditError::NoChange);
    }

    let diff = unified_diff(original, &text, &format!("a{path}"), &format!("b{path}"));
    Ok(Edited {
        text,
        replacements: spans.len(),
        diff,
        fuzzy,
    })
}

/// Unified diff of `old` against `new` with 3 lines of context, under the
/// headers `--- {old_label}` and `+++ {new_label}` (`/dev/null` for a file
/// that is created or deleted). Large inputs get [`coarse_diff`], so this is
/// safe to call on any file.
pub fn unified_diff(old: &str, new: &str, old_label: &str, new_label: &str) -> String {
    if old.lines().count() + new.lines().count() > MAX_DIFF_LINES {
        coarse_diff(old, new, old_label, new_label)
    } else {
        TextDiff::from_lines(old, new)
            .unified_diff()
            .context_radius(3)
            .header(old_label, new_label)
            .to_string()
    }
}

/// Lines (old plus new) above which the diff is [`coarse_diff`]. A minimal
/// diff costs O(lines x differences): `replace_all` of `\n` in a 128k-line
/// file took minutes, far past a Worker's CPU limit, while 10,000 lines
/// costs at most about 10^8 steps.
const MAX_DIFF_LINES: usize = 10_000;

/// A valid unified diff in linear time, for large edits: one hunk from the
/// first changed line to the last (common leading and trailing lines are
/// context), rather than the minimal set of hunks.
fn coarse_diff(old: &str, new: &str, old_label: &str, new_label: &str) -> String {
    use std::fmt::Write;

    let a: Vec<&str> = old.split_inclusive('\n').collect();
    let b: Vec<&str> = new.split_inclusive('\n').collect();
    let prefix = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let suffix = a[prefix..]
        .iter()
        .rev()
        .zip(b[prefix..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let start = prefix.saturating_sub(3);
    let a_end = (a.len() - suffix + 3).min(a.len());
    let b_end = (b.len() - suffix + 3).min(b.len());
    // GNU ranges: 1-based start, `,len` unless 1; an empty range names the
    // line before it.
    let range = |from: usize, to: usize| match to - from {
        0 => format!("{from},0"),
        1 => format!("{}", from + 1),
        n => format!("{},{n}", from + 1),
    };
    let mut out = format!("--- {old_label}\n+++ {new_label}\n");
    let _ = writeln!(
        out,
        "@@ -{} +{} @@",
        range(start, a_end),
        range(start, b_end)
    );
    let mut line = |mark: char, text: &str| {
        out.push(mark);
        out.push_str(text);
        if !text.ends_with('\n') {
            out.push_str("\n\\ No newline at end of file\n");
        }
    };
    for text in &a[start..prefix] {
        line(' ', text);
    }
    for text in &a[prefix..a.len() - suffix] {
        line('-', text);
    }
    for text in &b[prefix..b.len() - suffix] {
        line('+', text);
    }
    for text in &a[a.len() - suffix..a_end] {
        line(' ', text);
    }
    out
}

/// Turns every bare `\n` into `\r\n`, leaving existing `\r\n` alone so a
/// `new` that already mixes in CRLF doesn't gain `\r\r\n`.
pub fn lf_to_crlf(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + s.len() / 16);
    let mut prev = '\0';
    for c in s.chars() {
        if c == '\n' && prev != '\r' {
            out.push('\r');
        }
        out.push(c);
        prev = c;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The linear-time diff used for large edits agrees with the minimal
    /// one whenever the change is one contiguous run of lines.
    #[test]
    fn coarse_diff_matches_the_minimal_diff_for_one_change() {
        let minimal = |a: &str, b: &str| {
            TextDiff::from_lines(a, b)
                .unified_diff()
                .context_radius(3)
                .header("a/f", "b/f")
                .to_string()
        };
        let cases = [
            (
                "1\n2\n3\n4\n5\n6\n7\n8\n9\n",
                "1\n2\n3\n4\nfive\n6\n7\n8\n9\n",
            ),
            ("1\n2\n3\n", "0\n1\n2\n3\n"),
            ("1\n2\n3", "1\n2\nthree"),
            ("a\nb\nc\nd\n", "a\nd\n"),
            ("x", "y\nz\n"),
        ];
        for (a, b) in cases {
            assert_eq!(
                coarse_diff(a, b, "a/f", "b/f"),
                minimal(a, b),
                "{a:?} -> {b:?}"
            );
        }
    }

    /// `replace_all` of every newline of a 128k-line file: the minimal diff
    /// of that took minutes; the edit must stay fast and still report it.
    #[test]
    fn large_edits_get_a_linear_diff() {
        let original = "big\n".repeat(1 << 17);
        let started = std::time::Instant::now();
        let edits = [Replacement {
            old: "\n".into(),
            new: "a a".into(),
            replace_all: true,
        }];
        let out = apply(&original, &edits, "/big").unwrap();
        assert_eq!(out.replacements, 1 << 17);
        assert!(out
            .diff
            .starts_with("--- a/big\n+++ b/big\n@@ -1,131072 +1 @@\n-big\n"));
        assert!(out.diff.ends_with("a a\n\\ No newline at end of file\n"));
        assert!(started.elapsed().as_secs() < 10, "{:?}", started.elapsed());
    }

    fn rep(old: &str, new: &str) -> Replacement {
        Replacement {
            old: old.into(),
            new: new.into(),
            replace_all: false,
        }
    }

    fn rep_all(old: &str, new: &str) -> Replacement {
        Replacement {
            replace_all: true,
            ..rep(old, new)
        }
    }

    #[test]
    fn single_replace() {
        let out = apply(
            "fn main() {\n    old();\n}\n",
            &[rep("old()", "new()")],
            "/a.rs",
        )
        .unwrap();
        assert_eq!(out.text, "fn main() {\n    new();\n}\n");
        assert_eq!(out.replacements, 1);
    }

    #[test]
    fn edits_apply_against_original_without_cascading() {
        // Edit 0 writes "b", which edit 1 is looking for; edit 1 must only
        // see the original "b", not edit 0's output.
        let edits = [rep("a", "b"), rep("b", "c")];
        let out = apply("a b\n", &edits, "/f").unwrap();
        assert_eq!(out.text, "b c\n");
        assert_eq!(out.replacements, 2);
    }

    #[test]
    fn order_of_edits_does_not_matter() {
        let text = "one\ntwo\nthree\n";
        let forward = apply(text, &[rep("one", "1"), rep("three", "3")], "/f").unwrap();
        let backward = apply(text, &[rep("three", "3"), rep("one", "1")], "/f").unwrap();
        assert_eq!(forward.text, "1\ntwo\n3\n");
        assert_eq!(forward.text, backward.text);
    }

    #[test]
    fn not_found_names_the_edit() {
        let edits = [rep("alpha", "A"), rep("missing", "M")];
        assert_eq!(
            apply("alpha beta\n", &edits, "/f"),
            Err(EditError::NotFound { index: 1 })
        );
    }

    #[test]
    fn first_failing_edit_is_reported() {
        let edits = [rep("x", "y"), rep("", "z"), rep("nope", "")];
        assert_eq!(
            apply("x\n", &edits, "/f"),
            Err(EditError::EmptyOld { index: 1 })
        );
    }

    #[test]
    fn empty_old_is_rejected() {
        assert_eq!(
            apply("text", &[rep("", "x")], "/f"),
            Err(EditError::EmptyOld { index: 0 })
        );
    }

    #[test]
    fn ambiguous_reports_count() {
        let err = apply("x = 1;\nx = 1;\nx = 1;\n", &[rep("x = 1;", "x = 2;")], "/f");
        assert_eq!(err, Err(EditError::Ambiguous { index: 0, count: 3 }));
        assert_eq!(
            err.unwrap_err().to_string(),
            "edit 0: `old` matches 3 places; add context to make it unique or set replace_all"
        );
    }

    #[test]
    fn matches_are_non_overlapping_like_match_indices() {
        // "aa" occurs twice in "aaaa" without overlap (not three times).
        assert_eq!(
            apply("aaaa", &[rep("aa", "b")], "/f"),
            Err(EditError::Ambiguous { index: 0, count: 2 })
        );
        let out = apply("aaaa", &[rep_all("aa", "b")], "/f").unwrap();
        assert_eq!(out.text, "bb");
    }

    #[test]
    fn replace_all_replaces_and_counts_every_occurrence() {
        let edits = [rep_all("foo", "bar"), rep("end", "END")];
        let out = apply("foo foo\nfoo end\n", &edits, "/f").unwrap();
        assert_eq!(out.text, "bar bar\nbar END\n");
        assert_eq!(out.replacements, 4);
    }

    #[test]
    fn replace_all_with_single_match_is_fine() {
        let out = apply("only one\n", &[rep_all("one", "1")], "/f").unwrap();
        assert_eq!(out.text, "only 1\n");
        assert_eq!(out.replacements, 1);
    }

    #[test]
    fn overlap_names_later_edit_as_index() {
        let edits = [rep("hello world", "hi"), rep("world!", "earth!")];
        assert_eq!(
            apply("hello world!\n", &edits, "/f"),
            Err(EditError::Overlap { index: 1, other: 0 })
        );
        // Listing them the other way round swaps the indices, not the roles.
        let edits = [rep("world!", "earth!"), rep("hello world", "hi")];
        assert_eq!(
            apply("hello world!\n", &edits, "/f"),
            Err(EditError::Overlap { index: 1, other: 0 })
        );
    }

    #[test]
    fn overlap_with_contained_and_identical_ranges() {
        // One range inside another.
        let edits = [rep("abc", "x"), rep("middle abc tail", "y"), rep("z", "q")];
        assert_eq!(
            apply("head middle abc tail z", &edits, "/f"),
            Err(EditError::Overlap { index: 1, other: 0 })
        );
        // The same text edited twice.
        let edits = [rep("z", "1"), rep("k", "2"), rep("k", "3")];
        assert_eq!(
            apply("z k", &edits, "/f"),
            Err(EditError::Overlap { index: 2, other: 1 })
        );
    }

    #[test]
    fn overlap_with_replace_all_match() {
        let edits = [rep_all("ab", "X"), rep("b c", "Y")];
        assert_eq!(
            apply("ab ab c", &edits, "/f"),
            Err(EditError::Overlap { index: 1, other: 0 })
        );
    }

    #[test]
    fn adjacent_ranges_do_not_overlap() {
        let out = apply("abcd", &[rep("ab", "1"), rep("cd", "2")], "/f").unwrap();
        assert_eq!(out.text, "12");
    }

    #[test]
    fn crlf_preserved_when_edit_uses_lf() {
        let original = "line one\r\nline two\r\nline three\r\n";
        let out = apply(
            original,
            &[rep("line one\nline two\n", "first\nsecond\nextra\n")],
            "/win.txt",
        )
        .unwrap();
        assert_eq!(out.text, "first\r\nsecond\r\nextra\r\nline three\r\n");
        assert!(!out.text.replace("\r\n", "").contains('\n'));
    }

    #[test]
    fn crlf_file_single_line_old_gets_crlf_in_new() {
        let out = apply("a\r\nb\r\n", &[rep("a", "a\nnew")], "/f").unwrap();
        assert_eq!(out.text, "a\r\nnew\r\nb\r\n");
    }

    #[test]
    fn crlf_new_already_crlf_is_not_doubled() {
        let out = apply("a\r\nb\r\n", &[rep("a\nb", "x\r\ny")], "/f").unwrap();
        assert_eq!(out.text, "x\r\ny\r\n");
    }

    #[test]
    fn old_with_cr_is_matched_as_given() {
        let out = apply("a\r\nb\r\n", &[rep("a\r\n", "z\n")], "/f").unwrap();
        assert_eq!(out.text, "z\nb\r\n");
    }

    #[test]
    fn lf_file_is_matched_as_given() {
        // Mostly LF with one stray CRLF: not a CRLF file, so no translation,
        // and an LF `old` does not match across the CRLF exactly; only the
        // line-endings rule finds it, and says so.
        let original = "a\r\nb\nc\nd\n";
        let out = apply(original, &[rep("a\nb", "x")], "/f").unwrap();
        assert_eq!(out.text, "x\nc\nd\n");
        assert_eq!(
            out.fuzzy,
            [FuzzyMatch {
                edit_index: 0,
                rule: MatchRule::LineEndings,
                matched: "a\r\nb".into()
            }]
        );
        let out = apply(original, &[rep("b\nc", "x\ny")], "/f").unwrap();
        assert_eq!(out.text, "a\r\nx\ny\nd\n");
        assert!(out.fuzzy.is_empty());
    }

    #[test]
    fn crlf_detection() {
        assert!(is_crlf("a\r\nb\r\n"));
        assert!(is_crlf("a\r\nb\n")); // a tie counts as CRLF
        assert!(!is_crlf("a\r\nb\nc\n"));
        assert!(!is_crlf("no newline"));
        assert!(!is_crlf(""));
        assert!(!is_crlf("a\rb\n"));
    }

    #[test]
    fn no_change_is_an_error() {
        assert_eq!(
            apply("same\n", &[rep("same", "same")], "/f"),
            Err(EditError::NoChange)
        );
        // Several edits that each put back what they found still count.
        assert_eq!(
            apply("ab", &[rep("a", "a"), rep("b", "b")], "/f"),
            Err(EditError::NoChange)
        );
    }

    #[test]
    fn empty_edit_list_is_no_change() {
        assert_eq!(apply("text", &[], "/f"), Err(EditError::NoChange));
    }

    #[test]
    fn unicode_text() {
        let original = "naïve café — 日本語 🦀\nzweite Zeile\n";
        let edits = [rep("café", "CAFÉ"), rep("日本語 🦀", "中文 🐍")];
        let out = apply(original, &edits, "/u.txt").unwrap();
        assert_eq!(out.text, "naïve CAFÉ — 中文 🐍\nzweite Zeile\n");
        assert!(out.diff.contains("-naïve café — 日本語 🦀\n"));
        assert!(out.diff.contains("+naïve CAFÉ — 中文 🐍\n"));
    }

    #[test]
    fn diff_has_headers_and_changed_lines() {
        let original = "1\n2\n3\n4\n5\n6\n7\n8\n9\n";
        let out = apply(original, &[rep("5\n", "five\n")], "/dir/n.txt").unwrap();
        let diff = &out.diff;
        assert!(
            diff.starts_with("--- a/dir/n.txt\n+++ b/dir/n.txt\n"),
            "{diff}"
        );
        assert!(diff.contains("@@ -2,7 +2,7 @@\n"), "{diff}");
        assert!(diff.contains("\n-5\n+five\n"), "{diff}");
        // Three lines of context either side, no more.
        assert!(diff.contains(" 2\n 3\n 4\n-5"), "{diff}");
        assert!(diff.contains("+five\n 6\n 7\n 8\n"), "{diff}");
        assert!(!diff.contains(" 1\n") && !diff.contains(" 9\n"), "{diff}");
    }

    /// Applies one edit that only a fuzzy rule finds; returns the text and
    /// the one fuzzy report.
    fn fuzzy_edit(original: &str, old: &str, new: &str) -> (String, FuzzyMatch) {
        let out = apply(original, &[rep("exact", "EXACT"), rep(old, new)], "/f").unwrap();
        assert_eq!(out.replacements, 2);
        let [report] = &out.fuzzy[..] else {
            panic!("expected one fuzzy match, got {:?}", out.fuzzy)
        };
        assert_eq!(report.edit_index, 1);
        assert!(out.diff.contains("+EXACT"), "{}", out.diff);
        (out.text, report.clone())
    }

    #[test]
    fn fuzzy_line_endings() {
        let (text, report) = fuzzy_edit("exact\none\r\ntwo\nthree\n", "one\ntwo", "1\n2");
        assert_eq!(text, "EXACT\n1\n2\nthree\n");
        assert_eq!(
            (report.rule, report.matched.as_str()),
            (MatchRule::LineEndings, "one\r\ntwo")
        );
    }

    #[test]
    fn fuzzy_unicode_normalisation() {
        // The file has NFD (`e` + combining acute), the model sent NFC.
        let (text, report) = fuzzy_edit("exact r\u{e9}sume\u{301}\n", "r\u{e9}sum\u{e9}", "CV");
        assert_eq!(text, "EXACT CV\n");
        assert_eq!(
            (report.rule, report.matched.as_str()),
            (MatchRule::Unicode, "r\u{e9}sume\u{301}")
        );
    }

    #[test]
    fn fuzzy_trailing_whitespace() {
        let (text, report) = fuzzy_edit(
            "exact\nx = 1;  \ny = 2;\t\n",
            "x = 1;\ny = 2;\n",
            "z = 3;\n",
        );
        assert_eq!(text, "EXACT\nz = 3;\n");
        assert_eq!(report.rule, MatchRule::TrailingWhitespace);
        assert_eq!(report.matched, "x = 1;  \ny = 2;\t\n");
    }

    #[test]
    fn fuzzy_indentation_reindents_new() {
        // The model quoted a method as if it were at the top level.
        let (text, report) = fuzzy_edit(
            "exact\nclass A:\n        def f(self):\n            return 1\n",
            "    def f(self):\n        return 1",
            "    def f(self):\n        return 2",
        );
        assert_eq!(report.rule, MatchRule::Indentation);
        assert_eq!(report.matched, "        def f(self):\n            return 1");
        assert_eq!(
            text,
            "EXACT\nclass A:\n        def f(self):\n            return 2\n"
        );
        // Indentation that differs by more than one consistent prefix (top
        // level the same, nested lines spaces for a tab) is not guessed at.
        let err = apply(
            "if a:\n\tb()\n",
            &[rep("if a:\n    b()", "if a:\n    c()")],
            "/f",
        );
        assert_eq!(err, Err(EditError::NotFound { index: 0 }));
    }

    #[test]
    fn fuzzy_typography() {
        let (text, report) = fuzzy_edit(
            "exact\nprint(\u{201C}it\u{2019}s 1\u{2013}2\u{201D})\n",
            "print(\"it's 1-2\")",
            "print(\"it is 1 to 2\")",
        );
        assert_eq!(text, "EXACT\nprint(\"it is 1 to 2\")\n");
        assert_eq!(report.rule, MatchRule::Typography);
        assert_eq!(
            report.matched,
            "print(\u{201C}it\u{2019}s 1\u{2013}2\u{201D})"
        );
    }

    #[test]
    fn fuzzy_ambiguity_is_an_error_naming_the_count_and_rule() {
        let original = "a = 1  \nb = 2\na = 1\t\n";
        let err = apply(original, &[rep("a = 1\n", "a = 3\n")], "/f").unwrap_err();
        assert_eq!(
            err,
            EditError::FuzzyAmbiguous {
                index: 0,
                count: 2,
                rule: MatchRule::TrailingWhitespace
            }
        );
        assert_eq!(err.code(), crate::Errno::EditAmbiguous);
        assert_eq!(err.index(), Some(0));
        assert_eq!(
            err.to_string(),
            "edit 0: `old` is not in the file exactly, and matches 2 places ignoring trailing whitespace; add context to make it unique"
        );
        // replace_all does not widen a fuzzy match to every place.
        let err = apply(original, &[rep_all("a = 1\n", "a = 3\n")], "/f").unwrap_err();
        assert!(matches!(err, EditError::FuzzyAmbiguous { count: 2, .. }));
    }

    #[test]
    fn an_exact_match_never_goes_fuzzy() {
        // `x` occurs exactly once, and fuzzily (ignoring the space) twice
        // more: the exact match is taken without looking further.
        let out = apply("x\n x\nx \n", &[rep("x\n ", "y\n ")], "/f").unwrap();
        assert_eq!(out.text, "y\n x\nx \n");
        assert!(out.fuzzy.is_empty());
    }

    #[test]
    fn as_text_rejects_non_utf8() {
        assert_eq!(as_text(b"ok"), Ok("ok"));
        assert_eq!(as_text(&[0xff, 0xfe, 0x00]), Err(EditError::NotText));
    }

    #[test]
    fn replacement_deserializes_with_default_replace_all() {
        // serde_json is not a dependency of this crate, so exercise the
        // derive through serde's value deserializer instead.
        use serde::de::value::{Error, MapDeserializer};
        use serde::Deserialize;
        let fields = [("old", "a"), ("new", "b")];
        let r =
            Replacement::deserialize(MapDeserializer::<_, Error>::new(fields.into_iter())).unwrap();
        assert_eq!(
            (r.old.as_str(), r.new.as_str(), r.replace_all),
            ("a", "b", false)
        );
    }
}
