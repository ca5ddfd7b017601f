//! A file as hunks see it: lines without their endings, plus the two facts
//! needed to write it back unchanged (CRLF or LF, final newline or not).

/// Whether `text` counts as a CRLF file: `\r\n` endings at least as common
/// as bare `\n` ones. A file with no newline at all is not CRLF. (The VFS
/// `edit` tool uses the same rule, so both tools agree on every file.)
pub fn is_crlf(text: &str) -> bool {
    let newlines = text.matches('\n').count();
    let crlf = text.matches("\r\n").count();
    crlf > 0 && crlf >= newlines - crlf
}

/// `text` split into lines. In a CRLF file every `\r\n` ending is taken off
/// whole; elsewhere a stray `\r` stays part of its line, so writing the lines
/// back reproduces the file byte for byte.
#[derive(Debug)]
pub(crate) struct Lines<'a> {
    pub lines: Vec<&'a str>,
    /// The last line ends with a newline. An empty file counts as ending with
    /// one, so lines added to it are terminated.
    pub ends_with_newline: bool,
    pub crlf: bool,
}

impl<'a> Lines<'a> {
    pub fn split(text: &'a str) -> Self {
        let crlf = is_crlf(text);
        if text.is_empty() {
            return Lines {
                lines: Vec::new(),
                ends_with_newline: true,
                crlf,
            };
        }
        let (body, ends_with_newline) = match text.strip_suffix('\n') {
            Some(body) => (body, true),
            None => (text, false),
        };
        let lines = body
            .split('\n')
            .map(|line| match crlf {
                true => line.strip_suffix('\r').unwrap_or(line),
                false => line,
            })
            .collect();
        Lines {
            lines,
            ends_with_newline,
            crlf,
        }
    }
}

/// Joins `lines` with the file's line ending, ending the last one when
/// `ends_with_newline` (no lines give an empty file).
pub(crate) fn render<'s>(
    lines: impl IntoIterator<Item = &'s str>,
    ends_with_newline: bool,
    crlf: bool,
) -> String {
    let ending = if crlf { "\r\n" } else { "\n" };
    let mut out = String::new();
    let mut any = false;
    for line in lines {
        if any {
            out.push_str(ending);
        }
        out.push_str(line);
        any = true;
    }
    if any && ends_with_newline {
        out.push_str(ending);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

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
            "mostly\nlf\nwith one\r\n",
            "lone\rcr\n",
        ] {
            let split = Lines::split(text);
            let back = render(
                split.lines.iter().copied(),
                split.ends_with_newline,
                split.crlf,
            );
            assert_eq!(back, text, "{split:?}");
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
    fn crlf_detection() {
        assert!(is_crlf("a\r\nb\r\n"));
        assert!(is_crlf("a\r\nb\n"));
        assert!(!is_crlf("a\r\nb\nc\n"));
        assert!(!is_crlf("no newline"));
        assert!(!is_crlf(""));
        assert!(!is_crlf("a\rb\n"));
    }
}
