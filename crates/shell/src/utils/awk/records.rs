//! Records and fields: awk's regex dialect, record separators (RS) and
//! field separators (FS), over text already in memory.

use regex::Regex;

use crate::limits::build_regex;

/// Translates an awk ERE to the `regex` crate's syntax: literal braces that
/// are not intervals, `[` inside brackets, gawk's `\y \< \>` word edges,
/// and `.` matching newlines.
pub(super) fn translate(re: &str) -> String {
    let chars: Vec<char> = re.chars().collect();
    let mut out = String::from("(?s)");
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\\' => {
                i += 1;
                match chars.get(i) {
                    Some('y' | '<' | '>') => out.push_str("\\b"),
                    Some('/') => out.push('/'),
                    Some('"') => out.push('"'),
                    Some(&d) if d.is_ascii_alphanumeric() => {
                        out.push('\\');
                        out.push(d);
                    }
                    Some(&d) => push_literal(&mut out, d),
                    None => out.push_str("\\\\"),
                }
            }
            '[' => i = bracket(&chars, i, &mut out),
            '{' if !is_interval(&chars[i..]) => out.push_str("\\{"),
            '}' if !closes_interval(&chars[..i]) => out.push_str("\\}"),
            _ => out.push(c),
        }
        i += 1;
    }
    out
}

fn push_literal(out: &mut String, c: char) {
    if c.is_ascii_punctuation() {
        out.push('\\');
    }
    out.push(c);
}

fn is_interval(rest: &[char]) -> bool {
    let end = rest.iter().position(|&c| c == '}');
    match end {
        Some(end) if end > 1 => {
            rest[1..end].iter().all(|c| c.is_ascii_digit() || *c == ',') && rest[1].is_ascii_digit()
        }
        _ => false,
    }
}

fn closes_interval(before: &[char]) -> bool {
    match before.iter().rposition(|&c| c == '{') {
        Some(start) => {
            let inside = &before[start + 1..];
            inside.first().is_some_and(char::is_ascii_digit)
                && inside.iter().all(|c| c.is_ascii_digit() || *c == ',')
        }
        None => false,
    }
}

/// Copies a bracket expression starting at `chars[start] == '['`; returns
/// the index of its closing `]`.
fn bracket(chars: &[char], start: usize, out: &mut String) -> usize {
    let mut i = start + 1;
    out.push('[');
    if chars.get(i) == Some(&'^') {
        out.push('^');
        i += 1;
    }
    if chars.get(i) == Some(&']') {
        out.push_str("\\]");
        i += 1;
    }
    while i < chars.len() {
        let c = chars[i];
        match c {
            ']' => {
                out.push(']');
                return i;
            }
            '[' if matches!(chars.get(i + 1), Some(':' | '.' | '=')) => {
                let close = chars[i + 2..]
                    .iter()
                    .position(|&d| d == ']')
                    .map_or(chars.len() - 1, |p| i + 2 + p);
                out.extend(&chars[i..=close]);
                i = close;
            }
            '\\' => {
                i += 1;
                match chars.get(i) {
                    Some(&d) if d.is_ascii_alphanumeric() => {
                        out.push('\\');
                        out.push(d);
                    }
                    Some(&d) => push_literal(out, d),
                    None => out.push_str("\\\\"),
                }
            }
            '[' | '&' | '~' => {
                out.push('\\');
                out.push(c);
            }
            '-' if chars.get(i + 1) == Some(&'-') => out.push_str("\\-"),
            _ => out.push(c),
        }
        i += 1;
    }
    // Unclosed: let the regex compiler report it.
    i
}

/// Compiles an awk regex.
pub(super) fn compile(re: &str) -> Result<Regex, String> {
    build_regex(&mut regex::RegexBuilder::new(&translate(re))).map_err(|e| {
        let first = e.to_string();
        format!(
            "regular expression /{re}/: {}",
            first.lines().last().unwrap_or("invalid")
        )
    })
}

/// How records are separated (RS).
pub(crate) enum RecordSep {
    Char(char),
    /// RS="": blank lines separate records.
    Paragraph,
    Regex(Regex),
}

impl RecordSep {
    pub(crate) fn new(rs: &str) -> Result<Self, String> {
        let mut chars = rs.chars();
        match (chars.next(), chars.next()) {
            (None, _) => Ok(RecordSep::Paragraph),
            (Some(c), None) => Ok(RecordSep::Char(c)),
            _ => compile(rs).map(RecordSep::Regex),
        }
    }

    /// The next record in `data` from `*pos`, as a byte range; advances `pos`.
    pub(crate) fn next(&self, data: &str, pos: &mut usize) -> Option<(usize, usize)> {
        let start = *pos;
        if start >= data.len() {
            return self.at_end();
        }
        match self {
            RecordSep::Char(c) => {
                let (end, next) = match find_char(&data[start..], *c) {
                    Some(i) => (start + i, start + i + c.len_utf8()),
                    None => (data.len(), data.len()),
                };
                *pos = next;
                Some((start, end))
            }
            RecordSep::Paragraph => paragraph(data, pos),
            RecordSep::Regex(re) => {
                let found = re.find_iter(&data[start..]).find(|m| !m.is_empty());
                match found {
                    Some(m) => {
                        *pos = start + m.end();
                        Some((start, start + m.start()))
                    }
                    None => {
                        *pos = data.len();
                        Some((start, data.len()))
                    }
                }
            }
        }
    }

    fn at_end(&self) -> Option<(usize, usize)> {
        None
    }
}

fn find_char(text: &str, c: char) -> Option<usize> {
    if c.is_ascii() {
        text.as_bytes().iter().position(|&b| b == c as u8)
    } else {
        text.find(c)
    }
}

fn paragraph(data: &str, pos: &mut usize) -> Option<(usize, usize)> {
    let bytes = data.as_bytes();
    let mut start = *pos;
    while start < bytes.len() && bytes[start] == b'\n' {
        start += 1;
    }
    if start >= bytes.len() {
        *pos = bytes.len();
        return None;
    }
    let end = data[start..]
        .find("\n\n")
        .map_or(bytes.len(), |i| start + i);
    let mut next = end;
    while next < bytes.len() && bytes[next] == b'\n' {
        next += 1;
    }
    *pos = next;
    let end = if end == bytes.len() && data.ends_with('\n') {
        end - 1
    } else {
        end
    };
    Some((start, end.max(start)))
}

/// How fields are separated (FS, or split()'s separator).
pub(super) enum FieldSep {
    /// The default " ": runs of blanks and newlines, trimmed.
    Blanks,
    Char(char),
    /// FS="": every character is a field.
    EachChar,
    Regex(Regex),
}

impl FieldSep {
    pub(super) fn new(fs: &str) -> Result<Self, String> {
        let mut chars = fs.chars();
        match (chars.next(), chars.next()) {
            (None, _) => Ok(FieldSep::EachChar),
            (Some(' '), None) => Ok(FieldSep::Blanks),
            (Some(c), None) if c != '\\' => Ok(FieldSep::Char(c)),
            _ if fs == "\\t" => Ok(FieldSep::Char('\t')),
            _ => compile(fs).map(FieldSep::Regex),
        }
    }

    /// Splits `text` into field ranges (cleared first). `newline_too` adds
    /// newline as a separator (paragraph mode).
    pub(super) fn split(&self, text: &str, newline_too: bool, out: &mut Vec<(usize, usize)>) {
        out.clear();
        if text.is_empty() {
            return;
        }
        match self {
            FieldSep::Blanks => split_blanks(text, out),
            FieldSep::Char(c) => {
                let mut start = 0;
                for (i, d) in text.char_indices() {
                    if d == *c || (newline_too && d == '\n') {
                        out.push((start, i));
                        start = i + d.len_utf8();
                    }
                }
                out.push((start, text.len()));
            }
            FieldSep::EachChar => {
                out.extend(text.char_indices().map(|(i, c)| (i, i + c.len_utf8())));
            }
            FieldSep::Regex(re) => {
                let mut start = 0;
                for m in re.find_iter(text) {
                    if m.is_empty() {
                        continue;
                    }
                    out.push((start, m.start()));
                    start = m.end();
                }
                out.push((start, text.len()));
            }
        }
    }
}

fn split_blanks(text: &str, out: &mut Vec<(usize, usize)>) {
    let bytes = text.as_bytes();
    let mut i = 0;
    let blank = |b: u8| b == b' ' || b == b'\t' || b == b'\n';
    while i < bytes.len() {
        while i < bytes.len() && blank(bytes[i]) {
            i += 1;
        }
        if i >= bytes.len() {
            break;
        }
        let start = i;
        while i < bytes.len() && !blank(bytes[i]) {
            i += 1;
        }
        out.push((start, i));
    }
}
