//! The V4A `apply_patch` format (`*** Begin Patch` ... `*** End Patch`).
//!
//! The grammar is codex's (`apply_patch_tool_instructions.md`), read the
//! way its reference parsers read it: markers may be padded with
//! whitespace, blank lines between file operations are skipped, an empty
//! hunk line is an empty context line, several `@@` lines may stack (the
//! agents SDK's nested anchors) and the first hunk of an update may omit
//! `@@`. Where the references disagree the friendlier reading wins and is
//! written down in the crate docs.

use std::ops::Range;

use crate::error::{Malformed, PatchError};
use crate::{FilePatch, Hunk, HunkLine};

pub(crate) const BEGIN: &str = "*** Begin Patch";
const END: &str = "*** End Patch";
const ADD: &str = "*** Add File:";
const DELETE: &str = "*** Delete File:";
const UPDATE: &str = "*** Update File:";
const MOVE: &str = "*** Move to:";
const END_OF_FILE: &str = "*** End of File";

/// Markers that end a hunk even when padded with whitespace (a context line
/// cannot start with `*`, but a padded marker would otherwise read as one).
const MARKERS: [&str; 6] = [END, ADD, DELETE, UPDATE, MOVE, END_OF_FILE];

fn malformed(line: usize, problem: Malformed) -> PatchError {
    PatchError::Malformed {
        line: line + 1,
        problem,
    }
}

/// Parses `lines[range]`, whose first line is `*** Begin Patch`.
pub(crate) fn parse(lines: &[&str], range: Range<usize>) -> Result<Vec<FilePatch>, PatchError> {
    let end = (range.start + 1..range.end)
        .rfind(|&i| !lines[i].trim().is_empty())
        .filter(|&i| lines[i].trim() == END)
        .ok_or_else(|| malformed(range.end.saturating_sub(1), Malformed::MissingEnd))?;
    let mut parser = Parser {
        lines,
        at: range.start + 1,
        end,
    };
    let mut files = Vec::new();
    while let Some(file) = parser.file()? {
        files.push(file);
    }
    Ok(files)
}

struct Parser<'a> {
    lines: &'a [&'a str],
    /// The next line to read.
    at: usize,
    /// The `*** End Patch` line.
    end: usize,
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Option<&'a str> {
        (self.at < self.end).then(|| self.lines[self.at])
    }

    /// The next file operation, or `None` at `*** End Patch`.
    fn file(&mut self) -> Result<Option<FilePatch>, PatchError> {
        while self.peek().is_some_and(|line| line.trim().is_empty()) {
            self.at += 1;
        }
        let Some(line) = self.peek() else {
            return Ok(None);
        };
        let header = self.at;
        let line = line.trim();
        self.at += 1;
        if let Some(path) = line.strip_prefix(ADD) {
            let path = path_of(path, ADD, header)?;
            let text = self.added_lines();
            return Ok(Some(FilePatch::Add {
                path,
                text,
                mode: None,
            }));
        }
        if let Some(path) = line.strip_prefix(DELETE) {
            let path = path_of(path, DELETE, header)?;
            return Ok(Some(FilePatch::Delete {
                path,
                hunks: Vec::new(),
            }));
        }
        if let Some(path) = line.strip_prefix(UPDATE) {
            let path = path_of(path, UPDATE, header)?;
            let move_to = match self.peek().map(str::trim) {
                Some(next) if next.starts_with(MOVE) => {
                    let at = self.at;
                    self.at += 1;
                    Some(path_of(&next[MOVE.len()..], MOVE, at)?)
                }
                _ => None,
            };
            let hunks = self.hunks()?;
            if hunks.is_empty() && move_to.is_none() {
                return Err(malformed(header, Malformed::EmptyUpdate { path }));
            }
            return Ok(Some(FilePatch::Update {
                path,
                move_to,
                hunks,
                mode: None,
            }));
        }
        Err(malformed(
            header,
            Malformed::UnknownOperation {
                text: line.to_string(),
            },
        ))
    }

    /// An added file's `+` lines. Blank lines among them are empty lines of
    /// the file (models drop the `+` there); blank lines after the last `+`
    /// line separate operations.
    fn added_lines(&mut self) -> String {
        let mut text = String::new();
        let mut blank_run = 0;
        while let Some(line) = self.peek() {
            if let Some(content) = line.strip_prefix('+') {
                text.extend(std::iter::repeat_n("\n", blank_run));
                blank_run = 0;
                text.push_str(content);
                text.push('\n');
            } else if line.trim().is_empty() {
                blank_run += 1;
            } else {
                break;
            }
            self.at += 1;
        }
        text
    }

    /// An update's hunks, up to the next file operation.
    fn hunks(&mut self) -> Result<Vec<Hunk>, PatchError> {
        let mut hunks = Vec::new();
        loop {
            while self.peek().is_some_and(|line| line.trim().is_empty()) {
                self.at += 1;
            }
            match self.peek() {
                None => return Ok(hunks),
                Some(line) if line.trim_start().starts_with('*') => return Ok(hunks),
                Some(_) => hunks.push(self.hunk()?),
            }
        }
    }

    fn hunk(&mut self) -> Result<Hunk, PatchError> {
        let start = self.at;
        let mut headers = Vec::new();
        let mut anchors = Vec::new();
        while let Some(line) = self.peek().filter(|line| line.starts_with("@@")) {
            headers.push(line.trim_end());
            if let Some(anchor) = anchor_of(line) {
                anchors.push(anchor.to_string());
            }
            self.at += 1;
        }
        let mut lines = Vec::new();
        let mut end_of_file = false;
        while let Some(line) = self.peek() {
            let trimmed = line.trim();
            if line.starts_with("@@") {
                break;
            }
            if trimmed == END_OF_FILE {
                self.at += 1;
                end_of_file = true;
                break;
            }
            if line.starts_with('*') || MARKERS.iter().any(|m| trimmed.starts_with(m)) {
                break;
            }
            lines.push(match line.chars().next() {
                None => HunkLine::Context(String::new()),
                Some(' ') => HunkLine::Context(line[1..].to_string()),
                Some('-') => HunkLine::Remove(line[1..].to_string()),
                Some('+') => HunkLine::Add(line[1..].to_string()),
                Some(_) if trimmed.is_empty() => HunkLine::Context(String::new()),
                Some(_) => {
                    return Err(malformed(
                        self.at,
                        Malformed::BadHunkLine {
                            text: line.to_string(),
                        },
                    ))
                }
            });
            self.at += 1;
        }
        // Trailing empty lines separate this hunk from the next operation
        // more often than they are file content; keep them (the applier
        // retries without them) unless they are all the hunk has.
        if lines
            .iter()
            .all(|line| matches!(line, HunkLine::Context(text) if text.is_empty()))
        {
            return Err(malformed(start, Malformed::EmptyHunk));
        }
        Ok(Hunk {
            header: headers.join(" "),
            anchors,
            lines,
            old_start: None,
            end_of_file,
            new_missing_newline: false,
        })
    }
}

/// A path after a marker: trimmed, and required.
fn path_of(text: &str, marker: &'static str, line: usize) -> Result<String, PatchError> {
    let path = text.trim();
    if path.is_empty() {
        return Err(malformed(line, Malformed::MissingPath { marker }));
    }
    Ok(path.to_string())
}

/// The context text of a `@@` line: what follows `@@ `, unless nothing does
/// or it is a unified range (`@@ -3,7 +3,8 @@`), which V4A has no use for.
fn anchor_of(line: &str) -> Option<&str> {
    let rest = line[2..].strip_prefix(' ').unwrap_or(&line[2..]);
    if rest.trim().is_empty() || is_unified_range(rest) {
        return None;
    }
    Some(rest)
}

fn is_unified_range(text: &str) -> bool {
    let mut parts = text.split_whitespace();
    let range = |part: Option<&str>, sign: char| {
        part.and_then(|p| p.strip_prefix(sign)).is_some_and(|p| {
            !p.is_empty()
                && p.split(',')
                    .all(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        })
    };
    range(parts.next(), '-') && range(parts.next(), '+') && parts.next() == Some("@@")
}

#[cfg(test)]
mod tests {
    use crate::{parse, FilePatch, Hunk, HunkLine, Malformed, PatchError};

    fn files(text: &str) -> Vec<FilePatch> {
        parse(text).unwrap().files
    }

    fn error(text: &str) -> (usize, Malformed) {
        match parse(text) {
            Err(PatchError::Malformed { line, problem }) => (line, problem),
            other => panic!("expected a malformed patch, got {other:?}"),
        }
    }

    fn hunk(header: &str, anchors: &[&str], lines: Vec<HunkLine>) -> Hunk {
        Hunk {
            header: header.into(),
            anchors: anchors.iter().map(|a| a.to_string()).collect(),
            lines,
            old_start: None,
            end_of_file: false,
            new_missing_newline: false,
        }
    }

    use HunkLine::{Add, Context, Remove};

    fn s(text: &str) -> String {
        text.to_string()
    }

    #[test]
    fn every_operation() {
        let patch = "*** Begin Patch
*** Add File: docs/new.md
+# Title
+
+body
*** Delete File: old.txt
*** Update File: src/app.py
*** Move to: src/main.py
@@ class App
@@     def greet(self):
 keep
-old
+new
@@
-tail
+end
*** End of File
*** End Patch
";
        assert_eq!(
            files(patch),
            vec![
                FilePatch::Add {
                    path: s("docs/new.md"),
                    text: s("# Title\n\nbody\n"),
                    mode: None
                },
                FilePatch::Delete {
                    path: s("old.txt"),
                    hunks: vec![]
                },
                FilePatch::Update {
                    path: s("src/app.py"),
                    move_to: Some(s("src/main.py")),
                    hunks: vec![
                        hunk(
                            "@@ class App @@     def greet(self):",
                            &["class App", "    def greet(self):"],
                            vec![Context(s("keep")), Remove(s("old")), Add(s("new"))]
                        ),
                        Hunk {
                            end_of_file: true,
                            ..hunk("@@", &[], vec![Remove(s("tail")), Add(s("end"))])
                        },
                    ],
                    mode: None
                },
            ]
        );
    }

    #[test]
    fn first_hunk_may_omit_its_header_and_empty_lines_are_context() {
        let patch = "*** Begin Patch\n*** Update File: f\n import os\n\n+import re\n*** End Patch";
        let expected = vec![FilePatch::Update {
            path: s("f"),
            move_to: None,
            hunks: vec![hunk(
                "",
                &[],
                vec![Context(s("import os")), Context(s("")), Add(s("import re"))],
            )],
            mode: None,
        }];
        assert_eq!(files(patch), expected);
    }

    #[test]
    fn padded_markers_and_blank_lines_between_operations() {
        let patch = "  *** Begin Patch \n\n  *** Add File:   a.txt  \n+x\n\n\n *** Delete File: b\n\n *** End Patch \n";
        assert_eq!(
            files(patch),
            vec![
                FilePatch::Add {
                    path: s("a.txt"),
                    text: s("x\n"),
                    mode: None
                },
                FilePatch::Delete {
                    path: s("b"),
                    hunks: vec![]
                },
            ]
        );
    }

    #[test]
    fn an_added_file_may_be_empty_and_may_hold_blank_lines() {
        let patch =
            "*** Begin Patch\n*** Add File: empty\n*** Add File: gaps\n+a\n\n+b\n\n*** End Patch";
        let texts: Vec<String> = files(patch)
            .into_iter()
            .map(|file| match file {
                FilePatch::Add { text, .. } => text,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(texts, ["", "a\n\nb\n"]);
    }

    #[test]
    fn a_unified_range_in_a_v4a_header_is_a_bare_header() {
        let patch = "*** Begin Patch\n*** Update File: f\n@@ -3,2 +3,2 @@\n-a\n+b\n@@ -10 +10 @@ fn main\n-c\n+d\n*** End Patch";
        let FilePatch::Update { hunks, .. } = &files(patch)[0] else {
            panic!()
        };
        assert!(hunks.iter().all(|h| h.anchors.is_empty()), "{hunks:?}");
        // Text that merely starts like a range is an anchor.
        let patch = "*** Begin Patch\n*** Update File: f\n@@ -x +y\n-a\n*** End Patch";
        let FilePatch::Update { hunks, .. } = &files(patch)[0] else {
            panic!()
        };
        assert_eq!(hunks[0].anchors, ["-x +y"]);
    }

    #[test]
    fn a_pure_move_needs_no_hunks() {
        let patch = "*** Begin Patch\n*** Update File: a\n*** Move to: b/c\n*** End Patch";
        assert_eq!(
            files(patch),
            vec![FilePatch::Update {
                path: s("a"),
                move_to: Some(s("b/c")),
                hunks: vec![],
                mode: None
            }]
        );
    }

    #[test]
    fn malformed_patches_name_the_line_and_problem() {
        let cases: [(&str, usize, Malformed); 8] = [
            (
                "*** Begin Patch\n*** Add File: a\n+x\n",
                3,
                Malformed::MissingEnd,
            ),
            ("*** Begin Patch\n*** End Patch", 1, Malformed::NoFiles),
            (
                "*** Begin Patch\n*** Frobnicate File: a\n*** End Patch",
                2,
                Malformed::UnknownOperation {
                    text: s("*** Frobnicate File: a"),
                },
            ),
            (
                "*** Begin Patch\n*** Add File:   \n*** End Patch",
                2,
                Malformed::MissingPath {
                    marker: "*** Add File:",
                },
            ),
            (
                "*** Begin Patch\n*** Update File: a\n*** End Patch",
                2,
                Malformed::EmptyUpdate { path: s("a") },
            ),
            (
                "*** Begin Patch\n*** Update File: a\n@@ def f():\n*** End Patch",
                3,
                Malformed::EmptyHunk,
            ),
            (
                "*** Begin Patch\n*** Update File: a\n@@\n-x\nbad line\n*** End Patch",
                5,
                Malformed::BadHunkLine {
                    text: s("bad line"),
                },
            ),
            (
                "*** Begin Patch\n*** Add File: a\n+x\ny\n*** End Patch",
                4,
                Malformed::UnknownOperation { text: s("y") },
            ),
        ];
        for (patch, line, problem) in cases {
            assert_eq!(error(patch), (line, problem), "{patch:?}");
        }
    }
}
