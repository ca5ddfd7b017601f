//! A file as hunks see it: lines without their endings, plus what is needed
//! to write it back with every line it keeps byte for byte.

/// Whether `text` counts as a CRLF file: `\r\n` endings at least as common
/// as bare `\n` ones. A file with no newline at all is not CRLF. (The VFS
/// `edit` tool uses the same rule, so both tools agree on every file.)
pub fn is_crlf(text: &str) -> bool {
    let newlines = text.matches('\n').count();
    let crlf = text.matches("\r\n").count();
    crlf > 0 && crlf >= newlines - crlf
}

/// `text` split into lines. In a CRLF file each `\r\n` ending is taken off
/// whole (and remembered per line, so a stray bare `\n` line stays bare);
/// elsewhere a `\r` is part of its line.
#[derive(Debug)]
pub(crate) struct Lines<'a> {
    pub lines: Vec<&'a str>,
    /// Per line: it ended with `\r\n` (only ever set in a CRLF file).
    crlf_ended: Vec<bool>,
    /// The last line ends with a newline. An empty file counts as ending with
    /// one, so lines added to it are terminated.
    pub ends_with_newline: bool,
    pub crlf: bool,
}

/// A line of the result: one of the file's, or one a hunk added.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Piece<'a> {
    Kept(usize),
    Added(&'a str),
}

impl<'a> Lines<'a> {
    pub fn split(text: &'a str) -> Self {
        let crlf = is_crlf(text);
        if text.is_empty() {
            return Lines {
                lines: Vec::new(),
                crlf_ended: Vec::new(),
                ends_with_newline: true,
                crlf,
            };
        }
        let (body, ends_with_newline) = match text.strip_suffix('\n') {
            Some(body) => (body, true),
            None => (text, false),
        };
        let mut lines = Vec::new();
        let mut crlf_ended = Vec::new();
        let count = body.split('\n').count();
        for (i, line) in body.split('\n').enumerate() {
            let ended = i + 1 < count || ends_with_newline;
            match line.strip_suffix('\r') {
                Some(content) if crlf && ended => {
                    lines.push(content);
                    crlf_ended.push(true);
                }
                _ => {
                    lines.push(line);
                    crlf_ended.push(false);
                }
            }
        }
        Lines {
            lines,
            crlf_ended,
            ends_with_newline,
            crlf,
        }
    }

    /// The file's usual line ending, for lines a hunk adds.
    fn ending(&self) -> &'static str {
        if self.crlf {
            "\r\n"
        } else {
            "\n"
        }
    }

    /// `pieces` joined: kept lines with their own ending; the last ends only
    /// when `ends_with_newline`. An added line in a CRLF file ends with
    /// CRLF, unless `literal` (the hunks spell out `\r` where they mean it,
    /// as a diff of a file with mixed endings does): then a line ending in
    /// `\r` ends with CRLF and any other with a bare LF. Elsewhere added
    /// lines end with LF, any `\r` being content.
    pub fn render(&self, pieces: &[Piece<'_>], ends_with_newline: bool, literal: bool) -> String {
        let mut out = String::new();
        let last_line = self.lines.len().checked_sub(1);
        for (k, piece) in pieces.iter().enumerate() {
            let (text, ending) = match *piece {
                Piece::Added(text) if !self.crlf => (text, "\n"),
                Piece::Added(text) => match text.strip_suffix('\r') {
                    Some(content) => (content, "\r\n"),
                    None if literal => (text, "\n"),
                    None => (text, "\r\n"),
                },
                // The file's last line had no ending of its own if the file
                // lacked a final newline: it takes the usual one.
                Piece::Kept(i) if Some(i) == last_line && !self.ends_with_newline => {
                    (self.lines[i], self.ending())
                }
                Piece::Kept(i) => (
                    self.lines[i],
                    if self.crlf_ended[i] { "\r\n" } else { "\n" },
                ),
            };
            out.push_str(text);
            if k + 1 < pieces.len() || ends_with_newline {
                out.push_str(ending);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(text: &str) -> String {
        let split = Lines::split(text);
        let pieces: Vec<Piece<'_>> = (0..split.lines.len()).map(Piece::Kept).collect();
        split.render(&pieces, split.ends_with_newline, false)
    }

    #[test]
    fn split_and_render_round_trip() {
        for text in [
            "",
            "\n",
            "a",
            "a\n",
            "a\nb",
            "a\nb\n",
            "a\n\n",
            "a\r\nb\r\n",
            "a\r\nb",
            "a\r\nb\r",
            "mostly\nlf\nwith one\r\n",
            "mostly\r\ncrlf\r\nwith one bare\nline\r\n",
            "lone\rcr\n",
            "\r\n\r\n\n",
        ] {
            assert_eq!(round_trip(text), text, "{:?}", Lines::split(text));
        }
    }

    #[test]
    fn crlf_endings_are_taken_off_whole() {
        let split = Lines::split("one\r\ntwo\r\n");
        assert_eq!(split.lines, ["one", "two"]);
        assert!(split.crlf && split.ends_with_newline);
        // Not a CRLF file: the stray `\r` is content.
        let split = Lines::split("a\r\nb\nc\n");
        assert_eq!(split.lines, ["a\r", "b", "c"]);
        assert!(!split.crlf);
    }

    #[test]
    fn added_lines_take_the_files_usual_ending() {
        let split = Lines::split("a\r\nb\nc\r\n");
        let pieces = [
            Piece::Kept(0),
            Piece::Added("new"),
            Piece::Kept(1),
            Piece::Kept(2),
        ];
        assert_eq!(split.render(&pieces, true, false), "a\r\nnew\r\nb\nc\r\n");
        // Literal endings: what the hunk spelled out.
        let pieces = [Piece::Added("crlf\r"), Piece::Added("lf"), Piece::Kept(2)];
        assert_eq!(split.render(&pieces, true, true), "crlf\r\nlf\nc\r\n");
        // In an LF file a `\r` is content.
        let split = Lines::split("a\n");
        assert_eq!(split.render(&[Piece::Added("x\r")], true, false), "x\r\n");
        // A last line without newline gets one when something follows it.
        let split = Lines::split("a\nb");
        let pieces = [Piece::Kept(0), Piece::Kept(1), Piece::Added("c")];
        assert_eq!(split.render(&pieces, false, false), "a\nb\nc");
    }

    #[test]
    fn crlf_detection() {
        assert!(is_crlf("a\r\nb\r\n"));
        assert!(is_crlf("a\r\nb\n"));
        assert!(!is_crlf("a\r\nb\nc\n"));
        assert!(!is_crlf("no newline"));
        assert!(!is_crlf(""));
        assert!(!is_crlf("a\rb\n"));
    }
}
