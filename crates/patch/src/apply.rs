//! Applying one file's hunks to its text (rules in the crate docs).
//!
//! Every hunk is placed first, against the original lines, and the result
//! is then assembled in one pass: a hunk never sees another hunk's output,
//! and a failure leaves nothing half done.

use std::borrow::Cow;

use crate::error::{HunkFailed, Missing, PatchError};
use crate::nearest::nearest;
use crate::rules::{normalize_line, MatchRule};
use crate::text::{Lines, Piece};
use crate::{Hunk, HunkLine};

/// A file's new text, and how its hunks were placed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    pub text: String,
    /// The hunks that did not apply exactly where they said: matched only by
    /// a fallback rule, or (unified diffs) at an offset from their stated
    /// line. Empty when every hunk applied as written.
    pub fuzzy: Vec<HunkMatch>,
}

/// Where and how a hunk was applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct HunkMatch {
    /// The hunk's number in its file, counting from 1.
    pub hunk: usize,
    /// The line its old lines start at in the original file, from 1.
    pub line: usize,
    /// The rule its lines (and `@@` context lines) needed.
    pub rule: MatchRule,
    /// Lines between where a unified hunk said it was and where it was
    /// found (`patch`'s "offset"); 0 for V4A hunks, which state no line.
    pub offset: isize,
}

/// Applies `hunks` to `original` in order. `path` names the file in errors.
///
/// # Errors
///
/// [`PatchError::HunkFailed`] for the first hunk (or `@@` context line)
/// that is not in the file, with the nearest text there is.
pub fn apply_hunks(original: &str, hunks: &[Hunk], path: &str) -> Result<Applied, PatchError> {
    let file = Lines::split(original);
    // A CRLF file's lines are matched without their `\r`; a diff of it may
    // have kept them, and then says per added line which ending it has.
    let literal = hunks.iter().any(|hunk| {
        hunk.lines.iter().any(|line| match line {
            HunkLine::Context(text) | HunkLine::Remove(text) | HunkLine::Add(text) => {
                text.ends_with('\r')
            }
        })
    });
    let hunks = match file.crlf {
        true => Cow::Owned(hunks.iter().map(without_cr).collect()),
        false => Cow::Borrowed(hunks),
    };
    let mut views = Views::new(&file.lines);
    let mut placed: Vec<Placed<'_>> = Vec::with_capacity(hunks.len());
    let mut fuzzy = Vec::new();
    let mut cursor = 0;
    let mut offset = 0;
    for (index, hunk) in hunks.iter().enumerate() {
        let place = match hunk.old_start {
            Some(old_start) => views.place_unified(hunk, old_start, cursor, offset),
            None => views.place_v4a(hunk, cursor),
        };
        let place = place.map_err(|failure| {
            PatchError::HunkFailed(Box::new(HunkFailed {
                path: path.to_string(),
                hunk: index + 1,
                header: hunk.header.clone(),
                nearest: nearest(&file.lines, &failure.pattern, failure.around),
                missing: failure.missing,
            }))
        })?;
        if place.rule != MatchRule::Exact || place.offset != 0 {
            fuzzy.push(HunkMatch {
                hunk: index + 1,
                line: place.start + 1,
                rule: place.rule,
                offset: place.offset,
            });
        }
        offset = place.offset;
        if !place.appended {
            cursor = place.start + old_len(place.lines);
        }
        placed.push(Placed {
            start: place.start,
            lines: place.lines,
            missing_newline: hunk.new_missing_newline,
        });
    }
    // Hunks appended at the end of the file did not move the cursor, so
    // later hunks may sit before them.
    placed.sort_by_key(|p| p.start);

    let mut out: Vec<Piece<'_>> = Vec::with_capacity(file.lines.len());
    let mut at = 0;
    let mut ends_with_newline = file.ends_with_newline;
    for hunk in &placed {
        out.extend((at..hunk.start).map(Piece::Kept));
        at = hunk.start;
        for line in hunk.lines {
            match line {
                // Kept lines keep the file's text, whatever rule matched.
                HunkLine::Context(_) => {
                    out.push(Piece::Kept(at));
                    at += 1;
                }
                HunkLine::Remove(_) => at += 1,
                HunkLine::Add(text) => out.push(Piece::Added(text)),
            }
        }
        if at == file.lines.len() {
            ends_with_newline = !hunk.missing_newline;
        }
    }
    out.extend((at..file.lines.len()).map(Piece::Kept));
    Ok(Applied {
        text: file.render(&out, ends_with_newline, literal),
        fuzzy,
    })
}

/// `hunk` with one `\r` taken off the end of each line it matches (its
/// added lines keep theirs, to say which ending they want).
fn without_cr(hunk: &Hunk) -> Hunk {
    let strip = |text: &String| text.strip_suffix('\r').unwrap_or(text).to_string();
    Hunk {
        anchors: hunk.anchors.iter().map(strip).collect(),
        lines: hunk
            .lines
            .iter()
            .map(|line| match line {
                HunkLine::Context(text) => HunkLine::Context(strip(text)),
                HunkLine::Remove(text) => HunkLine::Remove(strip(text)),
                HunkLine::Add(text) => HunkLine::Add(text.clone()),
            })
            .collect(),
        ..hunk.clone()
    }
}

/// A hunk placed in the original lines.
struct Placed<'h> {
    start: usize,
    lines: &'h [HunkLine],
    missing_newline: bool,
}

/// Where a hunk goes.
struct Place<'h> {
    start: usize,
    /// The hunk's lines, less any trailing empty context lines the file
    /// did not have.
    lines: &'h [HunkLine],
    rule: MatchRule,
    offset: isize,
    /// A V4A addition put at the end of the file.
    appended: bool,
}

/// Why a hunk could not be placed, and what to compare the file with.
struct Failure {
    missing: Missing,
    pattern: Vec<String>,
    around: usize,
}

fn old_len(lines: &[HunkLine]) -> usize {
    lines
        .iter()
        .filter(|line| !matches!(line, HunkLine::Add(_)))
        .count()
}

fn old_lines(lines: &[HunkLine]) -> Vec<&str> {
    lines
        .iter()
        .filter_map(|line| match line {
            HunkLine::Context(text) | HunkLine::Remove(text) => Some(text.as_str()),
            HunkLine::Add(_) => None,
        })
        .collect()
}

/// The hunk's lines, then (V4A) the same without trailing empty context
/// lines, a model's separator rather than file content.
fn variants(hunk: &Hunk) -> Vec<&[HunkLine]> {
    let mut variants = vec![&hunk.lines[..]];
    if hunk.old_start.is_none() {
        let kept = hunk
            .lines
            .iter()
            .rposition(|line| !matches!(line, HunkLine::Context(text) if text.is_empty()))
            .map_or(0, |last| last + 1);
        if kept < hunk.lines.len() && old_len(&hunk.lines[..kept]) > 0 {
            variants.push(&hunk.lines[..kept]);
        }
    }
    variants
}

/// The file's lines as each rule sees them. Exact matching reads the lines
/// themselves; a fallback rule's normalised copy is made when first needed
/// and only the latest one is kept, so a large file costs one copy at most.
struct Views<'a> {
    lines: &'a [&'a str],
    fallback: Option<(MatchRule, Vec<Cow<'a, str>>)>,
}

impl<'a> Views<'a> {
    fn new(lines: &'a [&'a str]) -> Self {
        Views {
            lines,
            fallback: None,
        }
    }

    /// The lines under `rule`, or `None` for the lines as they are.
    fn view(&mut self, rule: MatchRule) -> Option<&[Cow<'a, str>]> {
        if rule == MatchRule::Exact {
            return None;
        }
        if self
            .fallback
            .as_ref()
            .is_none_or(|(cached, _)| *cached != rule)
        {
            let lines = self.lines.iter().map(|line| normalize_line(line, rule));
            self.fallback = Some((rule, lines.collect()));
        }
        self.fallback.as_ref().map(|(_, view)| &view[..])
    }

    /// Where `pattern` matches at or after `from`, in `order`, under the
    /// strictest rule that finds it anywhere.
    fn seek(&mut self, pattern: &[&str], from: usize, order: Order) -> Option<(usize, MatchRule)> {
        let len = self.lines.len();
        if pattern.len() > len {
            return None;
        }
        let last = len - pattern.len();
        if from > last {
            return None;
        }
        for rule in MatchRule::LINE_LADDER {
            let wanted: Vec<Cow<'_, str>> = pattern
                .iter()
                .map(|line| normalize_line(line, rule))
                .collect();
            let lines = self.lines;
            let view = self.view(rule);
            let line = |i: usize| -> &str { view.map_or(lines[i], |view| &view[i]) };
            let at = |start: usize| {
                wanted
                    .iter()
                    .enumerate()
                    .all(|(j, want)| line(start + j) == want.as_ref())
            };
            let found = match order {
                Order::Forward => (from..=last).find(|&start| at(start)),
                Order::EndFirst => Some(last)
                    .filter(|&start| at(start))
                    .or_else(|| (from..=last).find(|&start| at(start))),
                Order::Nearest(expected) => {
                    let expected = expected.clamp(from, last);
                    (0..=last - from).find_map(|distance| {
                        let after = expected + distance;
                        let before = expected.checked_sub(distance).filter(|&b| b >= from);
                        [Some(after).filter(|&a| a <= last), before]
                            .into_iter()
                            .flatten()
                            .find(|&start| at(start))
                    })
                }
            };
            if let Some(start) = found {
                return Some((start, rule));
            }
        }
        None
    }

    /// V4A: each `@@` context line in turn, then the hunk's old lines.
    fn place_v4a<'h>(&mut self, hunk: &'h Hunk, cursor: usize) -> Result<Place<'h>, Failure> {
        let mut from = cursor;
        let mut rule = MatchRule::Exact;
        for anchor in &hunk.anchors {
            let (at, anchor_rule) = self
                .seek(&[anchor.as_str()], from, Order::Forward)
                .ok_or_else(|| Failure {
                    missing: Missing::Anchor(anchor.clone()),
                    pattern: vec![anchor.clone()],
                    around: from,
                })?;
            from = at + 1;
            rule = rule.max(anchor_rule);
        }
        if old_len(&hunk.lines) == 0 {
            let appended = hunk.anchors.is_empty() || hunk.end_of_file;
            let start = if appended { self.lines.len() } else { from };
            return Ok(Place {
                start,
                lines: &hunk.lines,
                rule,
                offset: 0,
                appended,
            });
        }
        let order = if hunk.end_of_file {
            Order::EndFirst
        } else {
            Order::Forward
        };
        for lines in variants(hunk) {
            if let Some((start, lines_rule)) = self.seek(&old_lines(lines), from, order) {
                return Ok(Place {
                    start,
                    lines,
                    rule: rule.max(lines_rule),
                    offset: 0,
                    appended: false,
                });
            }
        }
        Err(self.missing_lines(hunk, from))
    }

    /// Unified: the old lines, nearest their stated line (moved by the
    /// previous hunk's offset).
    fn place_unified<'h>(
        &mut self,
        hunk: &'h Hunk,
        old_start: usize,
        cursor: usize,
        offset: isize,
    ) -> Result<Place<'h>, Failure> {
        let old = old_lines(&hunk.lines);
        // `-l,0` inserts after line l; otherwise the old lines start at l.
        let stated = if old.is_empty() {
            old_start
        } else {
            old_start.saturating_sub(1)
        };
        let expected = stated.saturating_add_signed(offset);
        if old.is_empty() {
            let start = expected.clamp(cursor, self.lines.len().max(cursor));
            return Ok(Place {
                start,
                lines: &hunk.lines,
                rule: MatchRule::Exact,
                offset: start as isize - stated as isize,
                appended: false,
            });
        }
        match self.seek(&old, cursor, Order::Nearest(expected)) {
            Some((start, rule)) => Ok(Place {
                start,
                lines: &hunk.lines,
                rule,
                offset: start as isize - stated as isize,
                appended: false,
            }),
            None => Err(self.missing_lines(hunk, expected)),
        }
    }

    fn missing_lines(&self, hunk: &Hunk, around: usize) -> Failure {
        let pattern: Vec<String> = hunk.old_lines().map(str::to_string).collect();
        Failure {
            missing: Missing::Lines(pattern.join("\n")),
            pattern,
            around,
        }
    }
}

/// Where to look first.
#[derive(Clone, Copy)]
enum Order {
    Forward,
    /// At the very end, then forward (V4A `*** End of File`).
    EndFirst,
    /// Both ways from this line, nearest first.
    Nearest(usize),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{parse, FilePatch, Malformed};

    /// Applies the first file of `patch` (an update) to `original`.
    fn apply(patch: &str, original: &str) -> Result<Applied, PatchError> {
        let parsed = parse(patch)?;
        match &parsed.files[0] {
            FilePatch::Update { hunks, .. } | FilePatch::Delete { hunks, .. } => {
                apply_hunks(original, hunks, "f")
            }
            FilePatch::Add { .. } => Err(PatchError::Malformed {
                line: 0,
                problem: Malformed::NoFiles,
            }),
        }
    }

    fn v4a(body: &str) -> String {
        format!("*** Begin Patch\n*** Update File: f\n{body}\n*** End Patch\n")
    }

    fn failed(result: Result<Applied, PatchError>) -> HunkFailed {
        match result {
            Err(PatchError::HunkFailed(failed)) => *failed,
            other => panic!("expected a failed hunk, got {other:?}"),
        }
    }

    #[test]
    fn v4a_hunks_apply_in_order_after_their_anchors() {
        let original = "class A:\n    def f(self):\n        return 1\n\nclass B:\n    def f(self):\n        return 1\n";
        let patch = v4a("@@ class B:\n@@     def f(self):\n-        return 1\n+        return 2");
        let out = apply(&patch, original).unwrap();
        assert_eq!(
            out.text,
            "class A:\n    def f(self):\n        return 1\n\nclass B:\n    def f(self):\n        return 2\n"
        );
        assert!(out.fuzzy.is_empty());
    }

    #[test]
    fn several_hunks_and_end_of_file() {
        let original = "a\nb\nc\nd\ne\nb\n";
        let patch = v4a("@@\n a\n-b\n+B\n@@\n e\n-b\n+end\n*** End of File");
        assert_eq!(
            apply(&patch, original).unwrap().text,
            "a\nB\nc\nd\ne\nend\n"
        );
        // End of File prefers the last occurrence even when one comes first.
        let patch = v4a("@@\n-b\n+last\n*** End of File");
        assert_eq!(
            apply(&patch, original).unwrap().text,
            "a\nb\nc\nd\ne\nlast\n"
        );
    }

    #[test]
    fn additions_without_context() {
        // No anchor: appended at the end (codex's rule), before later hunks
        // that sit earlier in the file.
        let patch = v4a("@@\n+tail\n@@\n-a\n+A");
        assert_eq!(apply(&patch, "a\nb\n").unwrap().text, "A\nb\ntail\n");
        // With an anchor: right after it.
        let patch = v4a("@@ def f():\n+    pass");
        assert_eq!(
            apply(&patch, "def f():\n\ndef g():\n").unwrap().text,
            "def f():\n    pass\n\ndef g():\n"
        );
    }

    #[test]
    fn fallback_rules_keep_the_files_context_lines() {
        let original = "fn main() {   \n\tlet s = \u{201C}hi\u{201D};\n\tprintln!(s);\n}\n";
        let patch = v4a(
            "@@\n fn main() {\n-    let s = \"hi\";\n+    let s = \"hello\";\n     println!(s);",
        );
        let out = apply(&patch, original).unwrap();
        assert_eq!(
            out.text,
            "fn main() {   \n    let s = \"hello\";\n\tprintln!(s);\n}\n"
        );
        assert_eq!(
            out.fuzzy,
            [HunkMatch {
                hunk: 1,
                line: 1,
                rule: MatchRule::Typography,
                offset: 0
            }]
        );
    }

    #[test]
    fn the_strictest_rule_wins_over_an_earlier_looser_match() {
        let original = "x  \nx\n";
        let patch = v4a("@@\n-x\n+y");
        let out = apply(&patch, original).unwrap();
        assert_eq!(out.text, "x  \ny\n");
        assert!(out.fuzzy.is_empty());
    }

    #[test]
    fn unicode_normal_forms_match() {
        let patch = v4a("@@\n-caf\u{e9}\n+tea");
        let out = apply(&patch, "cafe\u{301}\n").unwrap();
        assert_eq!(out.text, "tea\n");
        assert_eq!(out.fuzzy[0].rule, MatchRule::Unicode);
    }

    #[test]
    fn trailing_blank_context_not_in_the_file_is_dropped() {
        let patch = v4a("@@\n-last\n+LAST\n\n");
        assert_eq!(
            apply(&patch, "first\nlast\n").unwrap().text,
            "first\nLAST\n"
        );
    }

    #[test]
    fn crlf_files_stay_crlf() {
        let patch = v4a("@@\n one\n-two\n+2\n+2.5");
        assert_eq!(
            apply(&patch, "one\r\ntwo\r\nthree\r\n").unwrap().text,
            "one\r\n2\r\n2.5\r\nthree\r\n"
        );
    }

    #[test]
    fn final_newline_follows_the_hunk_at_the_end() {
        // V4A: a hunk at the end terminates the file (codex does too).
        let patch = v4a("@@\n-no newline\n+first\n+second");
        assert_eq!(apply(&patch, "no newline").unwrap().text, "first\nsecond\n");
        // A hunk elsewhere leaves the missing newline missing.
        let patch = v4a("@@\n-a\n+A");
        assert_eq!(apply(&patch, "a\nb").unwrap().text, "A\nb");
        // Unified: the marker decides.
        let diff = "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n\\ No newline at end of file\n";
        assert_eq!(apply(diff, "a\nb\n").unwrap().text, "a\nc");
    }

    #[test]
    fn unified_hunks_are_found_at_an_offset() {
        let original: String = (1..=30).map(|n| format!("line {n}\n")).collect();
        // Says line 10, but the text is at line 13 (three lines were added
        // above since the diff was made); the next hunk is looked for three
        // lines on too, and found there.
        let diff = "--- a/f\n+++ b/f\n@@ -10,2 +10,2 @@\n line 13\n-line 14\n+fourteen\n@@ -17 +17 @@\n-line 20\n+twenty\n";
        let out = apply(diff, &original).unwrap();
        assert!(out.text.contains("line 13\nfourteen\nline 15\n"));
        assert!(out.text.contains("line 19\ntwenty\nline 21\n"));
        assert_eq!(
            out.fuzzy,
            [
                HunkMatch {
                    hunk: 1,
                    line: 13,
                    rule: MatchRule::Exact,
                    offset: 3
                },
                HunkMatch {
                    hunk: 2,
                    line: 20,
                    rule: MatchRule::Exact,
                    offset: 3
                }
            ]
        );
    }

    #[test]
    fn unified_search_prefers_the_nearest_occurrence() {
        let original = "x\na\nx\nb\nc\nx\n";
        let diff = "--- a/f\n+++ b/f\n@@ -4,1 +4,1 @@\n-x\n+y\n";
        assert_eq!(apply(diff, original).unwrap().text, "x\na\ny\nb\nc\nx\n");
    }

    #[test]
    fn unified_insertions_go_after_their_line() {
        let diff = "--- a/f\n+++ b/f\n@@ -1,0 +2 @@\n+inserted\n";
        assert_eq!(
            apply(diff, "one\ntwo\n").unwrap().text,
            "one\ninserted\ntwo\n"
        );
        let diff = "--- a/f\n+++ b/f\n@@ -0,0 +1 @@\n+top\n";
        assert_eq!(apply(diff, "one\n").unwrap().text, "top\none\n");
    }

    #[test]
    fn a_missing_hunk_names_itself_and_the_nearest_text() {
        let original = "def f():\n    x = 1\n    y = 2\n    return x + y\n";
        let patch = v4a("@@ def f():\n     x = 1\n-    y = 3\n+    y = 4\n     return x + y");
        let failed = failed(apply(&patch, original));
        assert_eq!(failed.hunk, 1);
        assert_eq!(failed.header, "@@ def f():");
        assert_eq!(
            failed.missing,
            Missing::Lines("    x = 1\n    y = 3\n    return x + y".into())
        );
        let nearest = failed.nearest.clone().unwrap();
        assert_eq!(
            (nearest.line, nearest.matching_lines, nearest.of),
            (2, 2, 3)
        );
        assert_eq!(nearest.text, "    x = 1\n    y = 2\n    return x + y");
        let message = failed.to_string();
        assert!(
            message.starts_with("f: hunk #1 (@@ def f():) does not apply"),
            "{message}"
        );
        assert!(
            message.contains("nearest match, at line 2 (2 of 3 lines agree)"),
            "{message}"
        );
    }

    #[test]
    fn a_missing_anchor_is_named() {
        let patch = v4a("@@ def g():\n-    x = 1\n+    x = 2");
        let failed = failed(apply(&patch, "def f():\n    x = 1\n"));
        assert_eq!(failed.missing, Missing::Anchor("def g():".into()));
        let nearest = failed.nearest.unwrap();
        assert_eq!((nearest.line, nearest.text.as_str()), (1, "def f():"));
    }

    #[test]
    fn later_hunks_never_match_before_earlier_ones() {
        let patch = v4a("@@\n-b\n+B\n@@\n-a\n+A");
        let failed = failed(apply(&patch, "a\nb\n"));
        assert_eq!(failed.hunk, 2);
    }
}
