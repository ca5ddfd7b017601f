//! Why a patch was refused: malformed text, or a hunk whose lines are not in
//! the file. Every error says where (the patch line, or the file and hunk)
//! and, for a hunk, what it looked for and the nearest text there was, so a
//! model can fix its patch without reading the whole file again.

use std::fmt;

/// A patch that cannot be applied. Nothing has been changed when one is
/// returned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatchError {
    /// The patch text itself is wrong; `line` counts from 1 in the text given.
    #[error("malformed patch at line {line}: {problem}")]
    Malformed { line: usize, problem: Malformed },
    /// A hunk's lines (or one of its `@@` context lines) are not in the file.
    #[error("{0}")]
    HunkFailed(Box<HunkFailed>),
    /// A deletion's hunks matched, but the file holds more than they remove:
    /// deleting it would lose lines the patch never saw.
    #[error(
        "{path}: the patch deletes the file but {remaining} line(s) of it are not in the patch"
    )]
    DeleteMismatch { path: String, remaining: usize },
}

impl PatchError {
    /// The file the error is about, when it is about one.
    pub fn path(&self) -> Option<&str> {
        match self {
            PatchError::Malformed { problem, .. } => problem.path(),
            PatchError::HunkFailed(failed) => Some(&failed.path),
            PatchError::DeleteMismatch { path, .. } => Some(path),
        }
    }
}

/// What is wrong with a malformed patch.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Malformed {
    #[error("not a patch: expected `*** Begin Patch` (V4A) or a unified diff (`--- a/path`, `+++ b/path`, `@@ -l,n +l,n @@`)")]
    NotAPatch,
    #[error("`*** End Patch` missing: the last line must end the patch")]
    MissingEnd,
    #[error("the patch changes no files")]
    NoFiles,
    #[error("expected `*** Add File:`, `*** Update File:` or `*** Delete File:`, found {text:?}")]
    UnknownOperation { text: String },
    #[error("`{marker}` needs a path")]
    MissingPath { marker: &'static str },
    #[error("update of {path} has no hunks (and no `*** Move to:`)")]
    EmptyUpdate { path: String },
    #[error("hunk has no lines")]
    EmptyHunk,
    #[error("hunk line must start with ' ' (context), '-' (remove) or '+' (add), found {text:?}")]
    BadHunkLine { text: String },
    #[error("invalid hunk header {text:?}: expected `@@ -start,count +start,count @@`")]
    BadHunkHeader { text: String },
    #[error("hunk ends early: its header promises {old} more old and {new} more new line(s)")]
    HunkTooShort { old: usize, new: usize },
    #[error("hunk header {text:?} comes before any `---`/`+++` file header")]
    HunkWithoutFile { text: String },
    #[error("`---` header {text:?} is not followed by a `+++` header")]
    MissingNewName { text: String },
    #[error("cannot read file names from {text:?}")]
    BadFileName { text: String },
    #[error("{path} is created, so its hunks can only add lines")]
    AddWithContext { path: String },
    #[error("binary patch for {path}: only text patches can be applied")]
    Binary { path: String },
    #[error("{what} ({path}) is not supported")]
    Unsupported { what: &'static str, path: String },
    #[error("invalid mode {text:?}")]
    BadMode { text: String },
}

impl Malformed {
    fn path(&self) -> Option<&str> {
        match self {
            Malformed::EmptyUpdate { path }
            | Malformed::AddWithContext { path }
            | Malformed::Binary { path }
            | Malformed::Unsupported { path, .. } => Some(path),
            Malformed::NotAPatch
            | Malformed::MissingEnd
            | Malformed::NoFiles
            | Malformed::UnknownOperation { .. }
            | Malformed::MissingPath { .. }
            | Malformed::EmptyHunk
            | Malformed::BadHunkLine { .. }
            | Malformed::BadHunkHeader { .. }
            | Malformed::HunkTooShort { .. }
            | Malformed::HunkWithoutFile { .. }
            | Malformed::MissingNewName { .. }
            | Malformed::BadFileName { .. }
            | Malformed::BadMode { .. } => None,
        }
    }
}

/// A hunk that does not apply to its file. Serializes as the fields of an
/// API error: `{"path", "hunk", "header", "missing": {"lines"|"anchor"},
/// "nearest": {"line", "text", "matching_lines", "of"} | null}`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct HunkFailed {
    /// The file as the patch names it.
    pub path: String,
    /// The hunk's position among the file's hunks, counting from 1 (as
    /// `patch` numbers them: "Hunk #2 FAILED").
    pub hunk: usize,
    /// The hunk's `@@` line(s) as written (empty for a V4A hunk without one).
    pub header: String,
    /// What was searched for and not found.
    pub missing: Missing,
    /// The region of the file most like what was searched for, if any.
    pub nearest: Option<Nearest>,
}

/// What a failed hunk looked for.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Missing {
    /// A V4A `@@ <line>` context line (a class or function heading).
    Anchor(String),
    /// The hunk's old lines (context and removed lines), joined by `\n`.
    Lines(String),
}

/// The best-matching region of a file for a hunk that did not apply.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Nearest {
    /// Where the region starts, counting lines from 1.
    pub line: usize,
    /// The region's text (cut to a few dozen lines).
    pub text: String,
    /// How many of the hunk's non-blank lines the region has (ignoring
    /// surrounding whitespace) in the same place; 0 when the region was
    /// chosen for resembling the hunk's first line.
    pub matching_lines: usize,
    /// How many non-blank lines the hunk looked for.
    pub of: usize,
}

/// Longest text quoted in a message, in bytes.
const QUOTE_LIMIT: usize = 2_000;

impl fmt::Display for HunkFailed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: hunk #{}", self.path, self.hunk)?;
        if !self.header.is_empty() {
            write!(f, " ({})", self.header)?;
        }
        match &self.missing {
            Missing::Anchor(anchor) => {
                write!(f, " does not apply: context line {anchor:?} not found")?
            }
            Missing::Lines(lines) => write!(
                f,
                " does not apply: these lines are not in the file:\n{}",
                quote(lines)
            )?,
        }
        match &self.nearest {
            Some(nearest) if nearest.matching_lines > 0 => write!(
                f,
                "\nnearest match, at line {} ({} of {} lines agree):\n{}",
                nearest.line,
                nearest.matching_lines,
                nearest.of,
                quote(&nearest.text)
            ),
            Some(nearest) => write!(
                f,
                "\nmost similar text, at line {}:\n{}",
                nearest.line,
                quote(&nearest.text)
            ),
            None => write!(f, "\nnothing similar found in the file"),
        }
    }
}

/// `text` cut at [`QUOTE_LIMIT`] bytes (on a character boundary).
fn quote(text: &str) -> String {
    if text.len() <= QUOTE_LIMIT {
        return text.to_string();
    }
    let mut end = QUOTE_LIMIT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}\n[... {} more bytes]", &text[..end], text.len() - end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_hunk_serializes_as_api_error_fields() {
        let failed = HunkFailed {
            path: "/f".into(),
            hunk: 2,
            header: "@@ def f():".into(),
            missing: Missing::Anchor("def f():".into()),
            nearest: Some(Nearest {
                line: 3,
                text: "def g():".into(),
                matching_lines: 0,
                of: 1,
            }),
        };
        assert_eq!(
            serde_json::to_value(&failed).unwrap(),
            serde_json::json!({
                "path": "/f", "hunk": 2, "header": "@@ def f():",
                "missing": {"anchor": "def f():"},
                "nearest": {"line": 3, "text": "def g():", "matching_lines": 0, "of": 1}
            })
        );
    }

    #[test]
    fn long_quotes_are_cut_on_a_character_boundary() {
        let text = "é".repeat(QUOTE_LIMIT);
        let quoted = quote(&text);
        assert!(quoted.len() < text.len());
        assert!(quoted.ends_with(&format!("[... {} more bytes]", text.len() - QUOTE_LIMIT)));
    }
}
