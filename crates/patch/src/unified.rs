//! Unified diffs: `diff -u`, `diff -ruN` and `git diff` output.
//!
//! A diff is a run of file sections, each a `---`/`+++` header pair (after
//! git's `diff --git` line and extended headers, when it has them) and its
//! `@@` hunks. Hunks are read by the counts in their headers, as `patch`
//! reads them, so a removed line starting `--` is never taken for the next
//! file's header. Anything between sections (commit messages, `diff`
//! command lines, `Only in` notes) is skipped.
//!
//! File names: git sections drop the `a/` and `b/` prefixes. Other diffs
//! drop a first directory when both names have one and the rest agrees
//! (`diff -ru old new` prints `old/x` and `new/x`), and when the names still
//! differ (`x.orig` and `x`) the shorter is the file, as `git apply` picks.

use std::ops::Range;

use crate::error::{Malformed, PatchError};
use crate::{FilePatch, Hunk, HunkLine};

/// Whether `lines` hold a unified diff: a git header, or `---` followed by `+++`.
pub(crate) fn looks_unified(lines: &[&str]) -> bool {
    lines.iter().any(|line| line.starts_with("diff --git "))
        || lines
            .windows(2)
            .any(|pair| pair[0].starts_with("--- ") && pair[1].starts_with("+++ "))
}

fn malformed(line: usize, problem: Malformed) -> PatchError {
    PatchError::Malformed {
        line: line + 1,
        problem,
    }
}

pub(crate) fn parse(lines: &[&str], range: Range<usize>) -> Result<Vec<FilePatch>, PatchError> {
    let mut parser = Parser {
        lines,
        at: range.start,
        end: range.end,
    };
    let mut files = Vec::new();
    while let Some(line) = parser.peek() {
        let file = if line.starts_with("diff --git ") {
            parser.git_section()?
        } else if line.starts_with("--- ") && parser.peek_at(1).is_some_and(is_new_header) {
            parser.plain_section()?
        } else if line.starts_with("@@ -") {
            return Err(malformed(
                parser.at,
                Malformed::HunkWithoutFile {
                    text: line.to_string(),
                },
            ));
        } else {
            parser.at += 1;
            continue;
        };
        files.extend(file);
    }
    Ok(files)
}

fn is_new_header(line: &str) -> bool {
    line.starts_with("+++ ")
}

struct Parser<'a> {
    lines: &'a [&'a str],
    at: usize,
    end: usize,
}

/// A name from a `---`/`+++` header: `None` for `/dev/null`; `epoch` when
/// GNU diff stamped it with the Unix epoch (how `diff -N` marks a file that
/// does not exist on that side).
struct Name {
    path: Option<String>,
    epoch: bool,
}

/// Git's extended header lines.
#[derive(Default)]
struct GitHeaders {
    new_file_mode: Option<u32>,
    deleted: bool,
    new_mode: Option<u32>,
    rename_from: Option<String>,
    rename_to: Option<String>,
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Option<&'a str> {
        self.peek_at(0)
    }

    fn peek_at(&self, ahead: usize) -> Option<&'a str> {
        (self.at + ahead < self.end).then(|| self.lines[self.at + ahead])
    }

    fn git_section(&mut self) -> Result<Option<FilePatch>, PatchError> {
        let start = self.at;
        let git_line = &self.lines[start]["diff --git ".len()..];
        self.at += 1;
        let mut headers = GitHeaders::default();
        while let Some(line) = self.peek() {
            if line.starts_with("diff --git ")
                || line.starts_with("--- ")
                || line.starts_with("@@ ")
            {
                break;
            }
            let path =
                || git_names(git_line).map_or_else(String::new, |(_, new)| strip(&new, "b/"));
            if let Some(mode) = line.strip_prefix("new file mode ") {
                headers.new_file_mode = Some(mode_of(mode, self.at, path())?);
            } else if let Some(mode) = line.strip_prefix("deleted file mode ") {
                mode_of(mode, self.at, path())?;
                headers.deleted = true;
            } else if let Some(mode) = line.strip_prefix("new mode ") {
                headers.new_mode = Some(mode_of(mode, self.at, path())?);
            } else if let Some(mode) = line.strip_prefix("old mode ") {
                mode_of(mode, self.at, path())?;
            } else if let Some(name) = line.strip_prefix("rename from ") {
                headers.rename_from = Some(unquote(name, self.at)?);
            } else if let Some(name) = line.strip_prefix("rename to ") {
                headers.rename_to = Some(unquote(name, self.at)?);
            } else if line.starts_with("copy from ") || line.starts_with("copy to ") {
                return Err(malformed(
                    self.at,
                    Malformed::Unsupported {
                        what: "a copy",
                        path: path(),
                    },
                ));
            } else if line.starts_with("Binary files ") || line.starts_with("GIT binary patch") {
                return Err(malformed(self.at, Malformed::Binary { path: path() }));
            } else if !(line.starts_with("index ")
                || line.starts_with("similarity index ")
                || line.starts_with("dissimilarity index "))
            {
                break;
            }
            self.at += 1;
        }
        let names = match self.peek() {
            Some(line) if line.starts_with("--- ") => Some(self.header_pair()?),
            _ => None,
        };
        let hunks = self.hunks()?;

        let (old, new) = match names {
            Some((old, new)) => (
                old.path.map(|p| strip(&p, "a/")),
                new.path.map(|p| strip(&p, "b/")),
            ),
            None => {
                let (old, new) = git_names(git_line).ok_or_else(|| {
                    malformed(
                        start,
                        Malformed::BadFileName {
                            text: self.lines[start].to_string(),
                        },
                    )
                })?;
                let added = headers.new_file_mode.is_some();
                let old = (!added).then(|| strip(&old, "a/"));
                let new = (!headers.deleted).then(|| strip(&new, "b/"));
                (old, new)
            }
        };
        let old = headers.rename_from.clone().or(old);
        let new = headers.rename_to.clone().or(new);
        let change = Change {
            old,
            new,
            added: headers.new_file_mode.is_some(),
            deleted: headers.deleted,
            mode: headers.new_file_mode.or(headers.new_mode),
            hunks,
        };
        change.into_file(start)
    }

    fn plain_section(&mut self) -> Result<Option<FilePatch>, PatchError> {
        let start = self.at;
        let (old, new) = self.header_pair()?;
        let hunks = self.hunks()?;
        let old_empty = hunks.iter().all(|h| h.old_lines().next().is_none());
        let new_empty = hunks
            .iter()
            .all(|h| h.lines.iter().all(|l| matches!(l, HunkLine::Remove(_))));
        let added = old.path.is_none() || (old.epoch && old_empty);
        let deleted = new.path.is_none() || (new.epoch && new_empty);
        let (old, new) = match (old.path, new.path) {
            (Some(old), Some(new)) => {
                let (old, new) = strip_pair(&old, &new);
                let same = if old.len() <= new.len() { old } else { new };
                (Some(same.clone()), Some(same))
            }
            (old, new) => (old.map(|p| strip(&p, "a/")), new.map(|p| strip(&p, "b/"))),
        };
        let change = Change {
            old: (!added).then_some(old).flatten(),
            new: (!deleted).then_some(new).flatten(),
            added,
            deleted,
            mode: None,
            hunks,
        };
        change.into_file(start)
    }

    /// The `---` and `+++` lines at the current line.
    fn header_pair(&mut self) -> Result<(Name, Name), PatchError> {
        let old_line = self.lines[self.at];
        let Some(new_line) = self.peek_at(1).filter(|line| is_new_header(line)) else {
            return Err(malformed(
                self.at,
                Malformed::MissingNewName {
                    text: old_line.to_string(),
                },
            ));
        };
        let old = name_of(&old_line[4..], self.at)?;
        let new = name_of(&new_line[4..], self.at + 1)?;
        self.at += 2;
        Ok((old, new))
    }

    fn hunks(&mut self) -> Result<Vec<Hunk>, PatchError> {
        let mut hunks = Vec::new();
        while self.peek().is_some_and(|line| line.starts_with("@@ ")) {
            hunks.push(self.hunk()?);
        }
        Ok(hunks)
    }

    /// One hunk, read by its header's counts.
    fn hunk(&mut self) -> Result<Hunk, PatchError> {
        let header = self.lines[self.at];
        let (old_start, mut old, mut new) = counts(header).ok_or_else(|| {
            malformed(
                self.at,
                Malformed::BadHunkHeader {
                    text: header.to_string(),
                },
            )
        })?;
        self.at += 1;
        let mut lines: Vec<HunkLine> = Vec::new();
        let mut new_missing_newline = false;
        loop {
            let line = self.peek();
            if line.is_some_and(|line| line.starts_with('\\')) {
                // `\ No newline at end of file` (in the diff tool's
                // language) is about the line before it.
                if matches!(lines.last(), Some(HunkLine::Add(_) | HunkLine::Context(_))) {
                    new_missing_newline = true;
                }
                self.at += 1;
                continue;
            }
            if old == 0 && new == 0 {
                break;
            }
            let parsed = match line.map(|line| (line.chars().next(), line)) {
                Some((Some(' '), line)) if old > 0 && new > 0 => {
                    HunkLine::Context(line[1..].to_string())
                }
                // An empty line is an empty context line whose space an
                // editor or mailer took off.
                Some((None, _)) if old > 0 && new > 0 => HunkLine::Context(String::new()),
                Some((Some('-'), line)) if old > 0 => HunkLine::Remove(line[1..].to_string()),
                Some((Some('+'), line)) if new > 0 => HunkLine::Add(line[1..].to_string()),
                _ => return Err(malformed(self.at, Malformed::HunkTooShort { old, new })),
            };
            match parsed {
                HunkLine::Context(_) => (old, new) = (old - 1, new - 1),
                HunkLine::Remove(_) => old -= 1,
                HunkLine::Add(_) => new -= 1,
            }
            lines.push(parsed);
            self.at += 1;
        }
        Ok(Hunk {
            header: header.trim_end().to_string(),
            anchors: Vec::new(),
            lines,
            old_start: Some(old_start),
            end_of_file: false,
            new_missing_newline,
        })
    }
}

/// A file section before it becomes a [`FilePatch`].
struct Change {
    old: Option<String>,
    new: Option<String>,
    added: bool,
    deleted: bool,
    mode: Option<u32>,
    hunks: Vec<Hunk>,
}

impl Change {
    fn into_file(self, line: usize) -> Result<Option<FilePatch>, PatchError> {
        let bad_names = || {
            malformed(
                line,
                Malformed::BadFileName {
                    text: "--- /dev/null and +++ /dev/null".into(),
                },
            )
        };
        match (self.added, self.deleted) {
            (true, true) => Err(bad_names()),
            (true, false) => {
                let path = self.new.ok_or_else(bad_names)?;
                let mut text = String::new();
                for hunk in &self.hunks {
                    for hunk_line in &hunk.lines {
                        let HunkLine::Add(added) = hunk_line else {
                            return Err(malformed(line, Malformed::AddWithContext { path }));
                        };
                        text.push_str(added);
                        text.push('\n');
                    }
                    if hunk.new_missing_newline {
                        text.pop();
                    }
                }
                Ok(Some(FilePatch::Add {
                    path,
                    text,
                    mode: self.mode,
                }))
            }
            (false, true) => Ok(Some(FilePatch::Delete {
                path: self.old.ok_or_else(bad_names)?,
                hunks: self.hunks,
            })),
            (false, false) => {
                let path = self.old.ok_or_else(bad_names)?;
                let move_to = self.new.filter(|new| *new != path);
                if self.hunks.is_empty() && move_to.is_none() && self.mode.is_none() {
                    // Nothing to do: a section with only an `index` line.
                    return Ok(None);
                }
                Ok(Some(FilePatch::Update {
                    path,
                    move_to,
                    hunks: self.hunks,
                    mode: self.mode,
                }))
            }
        }
    }
}

/// `@@ -a,b +c,d @@ ...` as (a, b, d); a missing count is 1.
fn counts(header: &str) -> Option<(usize, usize, usize)> {
    let rest = header.strip_prefix("@@ ")?;
    let (ranges, _) = rest.split_once(" @@")?;
    let (old, new) = ranges.split_once(' ')?;
    let range = |text: &str, sign: char| -> Option<(usize, usize)> {
        let text = text.strip_prefix(sign)?;
        let (start, count) = text.split_once(',').unwrap_or((text, "1"));
        Some((start.parse().ok()?, count.parse().ok()?))
    };
    let (old_start, old_count) = range(old, '-')?;
    let (_, new_count) = range(new, '+')?;
    Some((old_start, old_count, new_count))
}

/// Permission bits of a git mode; only regular files can be patched.
fn mode_of(text: &str, line: usize, path: String) -> Result<u32, PatchError> {
    let mode = u32::from_str_radix(text.trim(), 8).map_err(|_| {
        malformed(
            line,
            Malformed::BadMode {
                text: text.to_string(),
            },
        )
    })?;
    match mode >> 12 {
        0o10 => Ok(mode & 0o7777),
        0o12 => Err(malformed(
            line,
            Malformed::Unsupported {
                what: "a symbolic link",
                path,
            },
        )),
        0o16 => Err(malformed(
            line,
            Malformed::Unsupported {
                what: "a submodule",
                path,
            },
        )),
        _ => Err(malformed(
            line,
            Malformed::BadMode {
                text: text.to_string(),
            },
        )),
    }
}

/// The name of a `---`/`+++` line (after the marker): quoted C-style by
/// git when it has unusual characters, otherwise up to a tab (GNU diff's
/// timestamp follows one).
fn name_of(text: &str, line: usize) -> Result<Name, PatchError> {
    let (path, stamp) = if text.starts_with('"') {
        let (path, rest) = unquote_prefix(text).ok_or_else(|| bad_name(text, line))?;
        (path, rest.trim_start_matches('\t'))
    } else {
        let (path, stamp) = text.split_once('\t').unwrap_or((text, ""));
        (path.trim_end().to_string(), stamp)
    };
    if path.is_empty() {
        return Err(bad_name(text, line));
    }
    Ok(Name {
        epoch: is_epoch(stamp),
        path: (path != "/dev/null").then_some(path),
    })
}

fn bad_name(text: &str, line: usize) -> PatchError {
    malformed(
        line,
        Malformed::BadFileName {
            text: text.to_string(),
        },
    )
}

/// A name as git writes it in `rename from`/`rename to` lines.
fn unquote(text: &str, line: usize) -> Result<String, PatchError> {
    if !text.starts_with('"') {
        return Ok(text.to_string());
    }
    match unquote_prefix(text) {
        Some((name, "")) => Ok(name),
        _ => Err(bad_name(text, line)),
    }
}

/// Reads the C-quoted string `text` starts with (git's `quote_c_style`:
/// `\t`, `\n`, `\"`, `\\`, octal bytes), returning it and what follows.
fn unquote_prefix(text: &str) -> Option<(String, &str)> {
    let mut bytes = Vec::new();
    let mut chars = text.strip_prefix('"')?.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => {
                let name = String::from_utf8(bytes).ok()?;
                return Some((name, &text[1 + i + 1..]));
            }
            '\\' => {
                let (_, escaped) = chars.next()?;
                let byte = match escaped {
                    'a' => 7,
                    'b' => 8,
                    't' => b'\t',
                    'n' => b'\n',
                    'v' => 11,
                    'f' => 12,
                    'r' => b'\r',
                    '"' => b'"',
                    '\\' => b'\\',
                    '0'..='3' => {
                        let mut value = escaped.to_digit(8)?;
                        for _ in 0..2 {
                            value = value * 8 + chars.next()?.1.to_digit(8)?;
                        }
                        value as u8
                    }
                    _ => return None,
                };
                bytes.push(byte);
            }
            c => {
                let mut buf = [0; 4];
                bytes.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            }
        }
    }
    None
}

/// The two names of a `diff --git a/x b/y` line. Unquoted names may hold
/// spaces, so the line is split where both halves name the same file (the
/// only case where git relies on this line for names).
fn git_names(text: &str) -> Option<(String, String)> {
    if text.starts_with('"') {
        let (old, rest) = unquote_prefix(text)?;
        let rest = rest.strip_prefix(' ')?;
        let new = if rest.starts_with('"') {
            let (new, tail) = unquote_prefix(rest)?;
            tail.is_empty().then_some(new)?
        } else {
            rest.to_string()
        };
        return Some((old, new));
    }
    if text.len() % 2 == 1 {
        let half = text.len() / 2;
        if text.is_char_boundary(half) && text.as_bytes()[half] == b' ' {
            let (old, new) = (&text[..half], &text[half + 1..]);
            if strip(old, "a/") == strip(new, "b/") {
                return Some((old.to_string(), new.to_string()));
            }
        }
    }
    let (old, new) = text.split_once(" b/")?;
    Some((old.to_string(), format!("b/{new}")))
}

fn strip(path: &str, prefix: &str) -> String {
    path.strip_prefix(prefix).unwrap_or(path).to_string()
}

/// Both names of a non-git diff without the first directory they differ
/// in: `a/x b/x`, or `old/x new/x` from `diff -ru old new`.
fn strip_pair(old: &str, new: &str) -> (String, String) {
    if let (Some(old), Some(new)) = (old.strip_prefix("a/"), new.strip_prefix("b/")) {
        return (old.to_string(), new.to_string());
    }
    match (old.split_once('/'), new.split_once('/')) {
        (Some((old_dir, old_rest)), Some((new_dir, new_rest)))
            if old_dir != new_dir && old_rest == new_rest && !old_rest.is_empty() =>
        {
            (old_rest.to_string(), new_rest.to_string())
        }
        _ => (old.to_string(), new.to_string()),
    }
}

/// Whether a GNU diff timestamp (`1970-01-01 01:00:00.000000000 +0100`) is
/// the Unix epoch in its own time zone.
fn is_epoch(stamp: &str) -> bool {
    let mut parts = stamp.split_whitespace();
    let (Some(date), Some(time), Some(zone)) = (parts.next(), parts.next(), parts.next()) else {
        return false;
    };
    let day_seconds: i64 = match date {
        "1970-01-01" => 0,
        "1969-12-31" => -86_400,
        _ => return false,
    };
    let (clock, fraction) = time.split_once('.').unwrap_or((time, "0"));
    let hms: Vec<i64> = clock.split(':').filter_map(|n| n.parse().ok()).collect();
    let [h, m, s] = hms[..] else {
        return false;
    };
    if !fraction.bytes().all(|b| b == b'0') {
        return false;
    }
    let (sign, digits) = match zone.split_at_checked(1) {
        Some(("+", digits)) => (1, digits),
        Some(("-", digits)) => (-1, digits),
        _ => return false,
    };
    let Ok(offset) = digits.parse::<i64>() else {
        return false;
    };
    let offset_seconds = sign * ((offset / 100) * 3600 + (offset % 100) * 60);
    day_seconds + h * 3600 + m * 60 + s - offset_seconds == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse;

    fn files(text: &str) -> Vec<FilePatch> {
        parse(text).unwrap().files
    }

    fn malformed_problem(text: &str) -> (usize, Malformed) {
        match parse(text) {
            Err(PatchError::Malformed { line, problem }) => (line, problem),
            other => panic!("expected a malformed patch, got {other:?}"),
        }
    }

    fn s(text: &str) -> String {
        text.to_string()
    }

    #[test]
    fn hunks_are_read_by_their_counts() {
        // The removed line `-- x` must not be taken for a `---` header.
        let diff = "--- a/f\n+++ b/f\n@@ -1,3 +1 @@\n keep\n--- x\n-++ y\n@@ -9 +8,2 @@ fn tail()\n-old\n+new\n+more\n";
        let [FilePatch::Update { path, hunks, .. }] = &files(diff)[..] else {
            panic!("{:?}", files(diff))
        };
        assert_eq!(path, "f");
        assert_eq!(hunks.len(), 2);
        assert_eq!(
            hunks[0].lines,
            [
                HunkLine::Context(s("keep")),
                HunkLine::Remove(s("-- x")),
                HunkLine::Remove(s("++ y"))
            ]
        );
        assert_eq!(hunks[0].old_start, Some(1));
        assert_eq!(hunks[1].old_start, Some(9));
        assert_eq!(hunks[1].header, "@@ -9 +8,2 @@ fn tail()");
    }

    #[test]
    fn no_newline_markers_belong_to_the_line_before() {
        let diff = "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-old\n\\ No newline at end of file\n+new\n\\ No newline at end of file\n";
        let [FilePatch::Update { hunks, .. }] = &files(diff)[..] else {
            panic!()
        };
        assert!(hunks[0].new_missing_newline);
        let diff = "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-old\n\\ No newline at end of file\n+new\n";
        let [FilePatch::Update { hunks, .. }] = &files(diff)[..] else {
            panic!()
        };
        assert!(!hunks[0].new_missing_newline);
    }

    #[test]
    fn git_extended_headers() {
        let diff = "\
From 1234 Mon Sep 17 00:00:00 2001
Subject: [PATCH] things

---
 a.txt | 1 +
diff --git a/new.sh b/new.sh
new file mode 100755
index 0000000..e69de29
--- /dev/null
+++ b/new.sh
@@ -0,0 +1,2 @@
+#!/bin/sh
+echo hi
diff --git a/empty b/empty
new file mode 100644
index 0000000..e69de29
diff --git a/gone.txt b/gone.txt
deleted file mode 100644
index 1234567..0000000
--- a/gone.txt
+++ /dev/null
@@ -1 +0,0 @@
-bye
diff --git a/old name.txt b/new name.txt
similarity index 90%
rename from old name.txt
rename to new name.txt
index 1111111..2222222 100644
--- a/old name.txt
+++ b/new name.txt
@@ -1 +1 @@
-x
+y
diff --git a/run b/run
old mode 100644
new mode 100755
diff --git a/same b/same
index 1111111..2222222 100644
--
2.47.3
";
        let files = files(diff);
        assert_eq!(files.len(), 5, "{files:#?}");
        assert_eq!(
            files[0],
            FilePatch::Add {
                path: s("new.sh"),
                text: s("#!/bin/sh\necho hi\n"),
                mode: Some(0o755)
            }
        );
        assert_eq!(
            files[1],
            FilePatch::Add {
                path: s("empty"),
                text: s(""),
                mode: Some(0o644)
            }
        );
        assert!(
            matches!(&files[2], FilePatch::Delete { path, hunks } if path == "gone.txt" && hunks.len() == 1)
        );
        assert!(
            matches!(&files[3], FilePatch::Update { path, move_to: Some(to), hunks, mode: None }
            if path == "old name.txt" && to == "new name.txt" && hunks.len() == 1)
        );
        assert_eq!(
            files[4],
            FilePatch::Update {
                path: s("run"),
                move_to: None,
                hunks: vec![],
                mode: Some(0o755)
            }
        );
    }

    #[test]
    fn quoted_git_names() {
        let diff = "diff --git \"a/tab\\there\" \"b/caf\\303\\251\"\nsimilarity index 100%\nrename from \"tab\\there\"\nrename to \"caf\\303\\251\"\n";
        assert_eq!(
            files(diff),
            vec![FilePatch::Update {
                path: s("tab\there"),
                move_to: Some(s("café")),
                hunks: vec![],
                mode: None
            }]
        );
    }

    #[test]
    fn gnu_diff_names_and_epoch_timestamps() {
        // `diff -ruN old new`: an added file has an epoch-stamped old side.
        let diff = "\
diff -ruN old/added.txt new/added.txt
--- old/added.txt\t1970-01-01 01:00:00.000000000 +0100
+++ new/added.txt\t2026-11-30 10:00:00.000000000 +0100
@@ -0,0 +1 @@
+hello
diff -ruN old/dir/f.txt new/dir/f.txt
--- old/dir/f.txt\t2026-11-30 10:00:00.000000000 +0100
+++ new/dir/f.txt\t2026-11-30 10:00:01.000000000 +0100
@@ -1 +1 @@
-a
+b
--- x.orig\t2026-11-30 10:00:00.000000000 +0000
+++ x\t2026-11-30 10:00:00.000000000 +0000
@@ -1 +1 @@
-a
+b
";
        let files = files(diff);
        assert_eq!(
            files[0],
            FilePatch::Add {
                path: s("added.txt"),
                text: s("hello\n"),
                mode: None
            }
        );
        assert_eq!(files[1].path(), "dir/f.txt");
        assert_eq!(files[2].path(), "x");
        assert!(matches!(&files[2], FilePatch::Update { move_to: None, .. }));
    }

    #[test]
    fn epoch_detection() {
        assert!(is_epoch("1970-01-01 00:00:00.000000000 +0000"));
        assert!(is_epoch("1970-01-01 01:00:00 +0100"));
        assert!(is_epoch("1969-12-31 19:00:00.000000000 -0500"));
        assert!(!is_epoch("1970-01-01 00:00:01.000000000 +0000"));
        assert!(!is_epoch("1970-01-01 00:00:00.5 +0000"));
        assert!(!is_epoch("2026-11-30 10:00:00.000000000 +0100"));
        assert!(!is_epoch(""));
    }

    #[test]
    fn malformed_unified_diffs() {
        let cases: [(&str, usize, Malformed); 6] = [
            (
                "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n-x\n+y\n",
                6,
                Malformed::HunkTooShort { old: 1, new: 1 },
            ),
            (
                "--- a/f\n+++ b/f\n@@ -1,x +1 @@\n-x\n+y\n",
                3,
                Malformed::BadHunkHeader {
                    text: s("@@ -1,x +1 @@"),
                },
            ),
            (
                "diff --git a/f b/f\n--- a/f\n@@ -1 +1 @@\n-x\n+y\n",
                2,
                Malformed::MissingNewName { text: s("--- a/f") },
            ),
            (
                "diff --git a/img.png b/img.png\nindex 1..2 100644\nBinary files a/img.png and b/img.png differ\n",
                3,
                Malformed::Binary { path: s("img.png") },
            ),
            (
                "diff --git a/l b/l\nnew file mode 120000\n--- /dev/null\n+++ b/l\n@@ -0,0 +1 @@\n+target\n",
                2,
                Malformed::Unsupported {
                    what: "a symbolic link",
                    path: s("l"),
                },
            ),
            (
                "--- /dev/null\n+++ b/f\n@@ -1 +1,2 @@\n x\n+y\n",
                1,
                Malformed::AddWithContext { path: s("f") },
            ),
        ];
        for (diff, line, problem) in cases {
            assert_eq!(malformed_problem(diff), (line, problem), "{diff:?}");
        }
    }
}
