//! Patches over text: parsing the two formats agents write, and applying a
//! file's hunks to its text. Pure Rust, no I/O: the VFS reads and writes the
//! files (`stead_vfs::patch`), in one transaction per patch.
//!
//! # Formats
//!
//! [`parse`] tells the formats apart by their first line.
//!
//! **V4A**, the `apply_patch` format GPT-5-class models are trained on
//! (OpenAI's codex `apply-patch` crate and agents SDK are the reference):
//!
//! ```text
//! *** Begin Patch
//! *** Add File: docs/hello.txt
//! +Hello
//! *** Update File: src/app.py
//! *** Move to: src/main.py
//! @@ class App
//! @@     def greet(self):
//!          name = self.name
//! -        print("Hi")
//! +        print(f"Hello, {name}")
//! *** End of File
//! *** Delete File: obsolete.txt
//! *** End Patch
//! ```
//!
//! - An update's hunks start with `@@`, optionally followed by a context line
//!   (a class or function heading). Several `@@` lines in a row narrow the
//!   search step by step: each is found after the one before, and the hunk's
//!   lines after the last. The first hunk may omit `@@`.
//! - Hunk lines start with ' ' (context), '-' (removed) or '+' (added); an
//!   empty line is an empty context line. `*** End of File` says the hunk's
//!   lines end the file.
//! - Markers may carry surrounding whitespace; the whole patch may be
//!   wrapped in a heredoc (`<<'EOF'` ... `EOF`) or a Markdown code fence, as
//!   models sometimes send it.
//! - A `@@ -12,7 +12,8 @@` line (a unified range written into a V4A patch)
//!   is read as a bare `@@`.
//!
//! **Unified diffs**, as `diff -u`, `diff -ruN` and `git diff` print them:
//! `---`/`+++` headers (`a/` and `b/` prefixes taken off, `/dev/null` for an
//! added or deleted file, and GNU diff's epoch timestamp for a file `diff -N`
//! treats as absent), `@@ -l,c +l,c @@` hunks, `\ No newline at end of
//! file`, and git's extended headers (`rename from`/`rename to`, `new file
//! mode`, `deleted file mode`, `old mode`/`new mode`). Text around the diffs
//! (a commit message, `diff` command lines, `index` lines) is skipped, as
//! `patch` and `git apply` do. Binary patches, copies, symlinks and
//! submodules are refused.
//!
//! # Applying hunks
//!
//! [`apply_hunks`] applies one file's hunks in order; each is searched for at
//! or after the end of the one before, so hunks never overlap.
//!
//! - A V4A hunk is located by its context: each `@@` line in turn, then the
//!   hunk's old lines (context and removed), first match after the previous
//!   hunk. With `*** End of File` the end of the file is tried first. A hunk
//!   with only added lines goes after its last `@@` line, or at the end of
//!   the file when it has none.
//! - A unified hunk is searched for nearest its stated line, shifted by how
//!   far the previous hunk moved (as `patch` reports "offset N lines"),
//!   looking both ways.
//! - Both fall back through the [`MatchRule`] ladder when the exact text is
//!   not there: Unicode normalisation, then trailing whitespace, then
//!   indentation, then typographic punctuation. A looser rule is tried only
//!   once every stricter one failed everywhere. Lines a hunk keeps (context)
//!   keep the file's text, so a fuzzy match never rewrites them.
//! - A V4A hunk ending in empty context lines that are not in the file is
//!   retried without them (a model's separator line, not file content).
//! - Line endings: a CRLF file (see [`is_crlf`]) is matched without its
//!   `\r`s. Lines the file keeps keep their own endings, even in a file
//!   with mixed ones; added lines get the file's usual ending, unless the
//!   hunks spell `\r` out (a diff of a file with mixed endings), and then
//!   exactly what they spell. A patch that is CRLF throughout (sent through
//!   a Windows clipboard) is read as LF; in a mostly-LF patch a `\r` is
//!   content.
//! - Final newline: the result ends with one unless a hunk at the end of
//!   the file says otherwise (`\ No newline at end of file`); a file
//!   without one keeps it that way unless a hunk touches its end. (A V4A
//!   hunk at the end always ends the file with a newline, as codex does.)
//!
//! # Errors
//!
//! A [`PatchError`] is either [`PatchError::Malformed`] (the line of the
//! patch and what is wrong with it), [`PatchError::HunkFailed`] (the file,
//! the hunk's number and header, what was not found, and the [`Nearest`]
//! region of the file: its line number, text and how many lines agree), or
//! [`PatchError::DeleteMismatch`] (a unified deletion whose file holds more
//! than the diff removes).

mod apply;
mod error;
mod nearest;
pub mod rules;
mod text;
mod unified;
mod v4a;

pub use apply::{apply_hunks, Applied, HunkMatch};
pub use error::{HunkFailed, Malformed, Missing, Nearest, PatchError};
pub use rules::MatchRule;
pub use text::is_crlf;

/// A parsed patch: what to do to which files, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Patch {
    pub format: Format,
    pub files: Vec<FilePatch>,
}

/// Which format a patch was written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// OpenAI's `*** Begin Patch` format.
    V4a,
    /// `diff -u` / `git diff` output.
    Unified,
}

/// One file's part of a patch. Paths are as written in the patch (prefixes
/// such as git's `a/` taken off); the caller resolves and validates them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FilePatch {
    /// Create `path` with `text`; it must not exist.
    Add {
        path: String,
        text: String,
        /// Permission bits from git's `new file mode`.
        mode: Option<u32>,
    },
    /// Remove `path`. A unified diff's hunks (the removed lines) must match
    /// the whole file; V4A deletions have none.
    Delete { path: String, hunks: Vec<Hunk> },
    /// Apply `hunks` to `path`, then move it to `move_to` if given (V4A
    /// `*** Move to:`, git `rename to`), and set `mode` if given.
    Update {
        path: String,
        move_to: Option<String>,
        hunks: Vec<Hunk>,
        mode: Option<u32>,
    },
}

impl FilePatch {
    /// The path the patch names first (the source of a move).
    pub fn path(&self) -> &str {
        match self {
            FilePatch::Add { path, .. }
            | FilePatch::Delete { path, .. }
            | FilePatch::Update { path, .. } => path,
        }
    }
}

/// One hunk: a run of context, removed and added lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk {
    /// The `@@` line(s) as written, for messages.
    pub header: String,
    /// V4A `@@ <text>` context lines, outermost first.
    pub anchors: Vec<String>,
    pub lines: Vec<HunkLine>,
    /// Unified diffs: the 1-based line where the old lines start (for an
    /// insertion, the line they go after). `None` for V4A hunks.
    pub old_start: Option<usize>,
    /// V4A `*** End of File`: the old lines end the file.
    pub end_of_file: bool,
    /// `\ No newline at end of file` after the hunk's last new line.
    pub new_missing_newline: bool,
}

/// A line of a hunk, without its prefix character.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HunkLine {
    /// Kept: must be in the file, and stays.
    Context(String),
    /// Must be in the file, and goes.
    Remove(String),
    /// Put in.
    Add(String),
}

impl Hunk {
    /// The lines the hunk expects in the file (context and removed), in order.
    pub fn old_lines(&self) -> impl Iterator<Item = &str> {
        self.lines.iter().filter_map(|line| match line {
            HunkLine::Context(text) | HunkLine::Remove(text) => Some(text.as_str()),
            HunkLine::Add(_) => None,
        })
    }
}

/// Parses `text` as a V4A patch or a unified diff, whichever it is.
///
/// # Errors
///
/// [`PatchError::Malformed`], naming the line and the problem.
pub fn parse(text: &str) -> Result<Patch, PatchError> {
    // A patch sent with CRLF line endings (through a Windows clipboard, an
    // HTTP client) means LF ones. In a patch that is mostly LF, a `\r` is
    // file content (a diff of a file with some CRLF lines), and stays.
    let normalized = match is_crlf(text) {
        true => text.replace("\r\n", "\n"),
        false => text.to_string(),
    };
    let mut lines: Vec<&str> = normalized.split('\n').collect();
    if lines.last() == Some(&"") {
        lines.pop();
    }
    let body = unwrap(&lines);
    let first = body.clone().find(|&i| !lines[i].trim().is_empty());
    let Some(first) = first else {
        return Err(PatchError::Malformed {
            line: 1,
            problem: Malformed::NotAPatch,
        });
    };
    if lines[first].trim() == v4a::BEGIN {
        let files = v4a::parse(&lines, first..body.end)?;
        return finish(Format::V4a, files, first);
    }
    if unified::looks_unified(&lines[body.clone()]) {
        let files = unified::parse(&lines, body)?;
        return finish(Format::Unified, files, first);
    }
    Err(PatchError::Malformed {
        line: first + 1,
        problem: Malformed::NotAPatch,
    })
}

fn finish(format: Format, files: Vec<FilePatch>, first: usize) -> Result<Patch, PatchError> {
    if files.is_empty() {
        return Err(PatchError::Malformed {
            line: first + 1,
            problem: Malformed::NoFiles,
        });
    }
    Ok(Patch { format, files })
}

/// The range of `lines` inside a heredoc (`<<'EOF'` ... `EOF`, as a model
/// writing a shell command sends it) or a Markdown code fence, or all of
/// them.
fn unwrap(lines: &[&str]) -> std::ops::Range<usize> {
    let all = 0..lines.len();
    let nonblank = |i: &usize| !lines[*i].trim().is_empty();
    let (Some(first), Some(last)) = (all.clone().find(nonblank), all.clone().rfind(nonblank))
    else {
        return all;
    };
    if first == last {
        return all;
    }
    let (open, close) = (lines[first].trim(), lines[last].trim());
    let heredoc = open
        .strip_prefix("<<")
        .map(|word| word.trim_start_matches('-').trim())
        .map(|word| {
            let quoted = ['\'', '"']
                .into_iter()
                .find_map(|q| word.strip_prefix(q).and_then(|w| w.strip_suffix(q)));
            quoted.unwrap_or(word)
        });
    match heredoc {
        Some(word) if !word.is_empty() && close == word => return first + 1..last,
        _ => {}
    }
    if open.starts_with("```") && close == "```" {
        return first + 1..last;
    }
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    fn update(hunks: Vec<Hunk>) -> FilePatch {
        FilePatch::Update {
            path: "a.txt".into(),
            move_to: None,
            hunks,
            mode: None,
        }
    }

    #[test]
    fn formats_are_told_apart() {
        let v4a = "*** Begin Patch\n*** Delete File: a.txt\n*** End Patch\n";
        assert_eq!(parse(v4a).unwrap().format, Format::V4a);
        let unified = "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-x\n+y\n";
        assert_eq!(parse(unified).unwrap().format, Format::Unified);
        for text in ["", "\n\n", "just some text\n", "@@ -1 +1 @@\n-x\n+y\n"] {
            assert!(
                matches!(parse(text), Err(PatchError::Malformed { .. })),
                "{text:?}"
            );
        }
    }

    #[test]
    fn wrappers_models_add_are_taken_off() {
        let inner = "*** Begin Patch\n*** Delete File: a.txt\n*** End Patch";
        for text in [
            format!("<<'EOF'\n{inner}\nEOF\n"),
            format!("<<EOF\n{inner}\nEOF"),
            format!("<<\"PATCH\"\n{inner}\nPATCH\n"),
            format!("```diff\n{inner}\n```\n"),
            format!("\n\n{inner}\n\n"),
        ] {
            let patch = parse(&text).unwrap();
            assert_eq!(patch.files.len(), 1, "{text:?}");
        }
        // A mismatched heredoc is not unwrapped.
        let text = format!("<<'EOF'\n{inner}\nEND\n");
        assert!(parse(&text).is_err());
    }

    #[test]
    fn crlf_patches_parse_like_lf_ones() {
        let lf = "*** Begin Patch\n*** Update File: a.txt\n@@\n-x\n+y\n*** End Patch\n";
        assert_eq!(
            parse(&lf.replace('\n', "\r\n")).unwrap(),
            parse(lf).unwrap()
        );
        let expected = update(vec![Hunk {
            header: "@@".into(),
            anchors: vec![],
            lines: vec![HunkLine::Remove("x".into()), HunkLine::Add("y".into())],
            old_start: None,
            end_of_file: false,
            new_missing_newline: false,
        }]);
        assert_eq!(parse(lf).unwrap().files, vec![expected]);
    }
}
