//! `od`: dump bytes as octal, hex, decimal or characters (`-c`, `-t TYPE`,
//! `-A RADIX`, `-x`, `-b`, `-d`, `-o`, `-N`, `-j`, `-v`, `-w`). Repeated
//! lines collapse to `*` unless `-v`. Multi-byte values are little-endian.

use super::{flag, getopt, parse_count, read_concat, usage, with_arg};
use crate::limits::Abort;
use crate::utils::Ctx;

/// One output type: `c` characters, or a number format of `size` bytes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Char,
    Number { radix: char, size: usize },
}

#[derive(Clone, Copy)]
struct Type {
    kind: Kind,
    /// `z`: show printable characters after the line.
    text: bool,
}

impl Type {
    /// Characters per element (excluding the separating space).
    fn width(self) -> usize {
        match self.kind {
            Kind::Char => 3,
            Kind::Number { radix, size } => {
                let bits = size * 8;
                match radix {
                    'x' => size * 2,
                    'o' => bits.div_ceil(3),
                    'u' => max_digits(bits),
                    _ => max_digits(bits) + 1,
                }
            }
        }
    }

    fn size(self) -> usize {
        match self.kind {
            Kind::Char => 1,
            Kind::Number { size, .. } => size,
        }
    }

    fn render(self, bytes: &[u8]) -> String {
        let width = self.width();
        match self.kind {
            Kind::Char => format!(" {:>width$}", char_name(bytes[0])),
            Kind::Number { radix, size } => {
                let mut buf = [0u8; 8];
                buf[..bytes.len()].copy_from_slice(bytes);
                let value = u64::from_le_bytes(buf);
                let text = match radix {
                    'x' => format!("{value:0width$x}"),
                    'o' => format!("{value:0width$o}"),
                    'u' => format!("{value:>width$}"),
                    _ => {
                        let shift = 64 - size * 8;
                        let signed = ((value << shift) as i64) >> shift;
                        format!("{signed:>width$}")
                    }
                };
                format!(" {text}")
            }
        }
    }
}

/// Decimal digits of the largest unsigned value of `bits` bits.
fn max_digits(bits: usize) -> usize {
    match bits {
        8 => 3,
        16 => 5,
        32 => 10,
        _ => 20,
    }
}

fn char_name(byte: u8) -> String {
    match byte {
        0 => "\\0".to_string(),
        7 => "\\a".to_string(),
        8 => "\\b".to_string(),
        b'\t' => "\\t".to_string(),
        b'\n' => "\\n".to_string(),
        11 => "\\v".to_string(),
        12 => "\\f".to_string(),
        b'\r' => "\\r".to_string(),
        0x20..=0x7e => (byte as char).to_string(),
        _ => format!("{byte:03o}"),
    }
}

/// Parses a `-t` argument such as `x1`, `d4`, `c`, `x1z`, `o`.
fn parse_types(spec: &str) -> Result<Vec<Type>, String> {
    let mut types = Vec::new();
    let mut chars = spec.chars().peekable();
    while let Some(letter) = chars.next() {
        let kind = match letter {
            'c' | 'a' => Kind::Char,
            'x' | 'o' | 'u' | 'd' => Kind::Number {
                radix: letter,
                size: type_size(&mut chars, spec)?,
            },
            other => {
                return Err(format!(
                    "invalid character '{other}' in type string ‘{spec}’"
                ))
            }
        };
        let text = chars.next_if_eq(&'z').is_some();
        types.push(Type { kind, text });
    }
    Ok(types)
}

/// The byte size after a number type letter: digits or `C`/`S`/`I`/`L`.
fn type_size(
    chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
    spec: &str,
) -> Result<usize, String> {
    let mut digits = String::new();
    while let Some(d) = chars.next_if(char::is_ascii_digit) {
        digits.push(d);
    }
    let size = match chars.next_if(|c| "CSIL".contains(*c)) {
        Some('C') => 1,
        Some('S') => 2,
        Some('I') => 4,
        Some('L') => 8,
        _ if digits.is_empty() => 4,
        _ => digits.parse().unwrap_or(0),
    };
    if [1, 2, 4, 8].contains(&size) {
        Ok(size)
    } else {
        Err(format!(
            "invalid type string ‘{spec}’;\nthis system doesn't provide a {size}-byte integral type"
        ))
    }
}

pub(super) fn od(ctx: &mut Ctx<'_>, argv: &[String]) -> Result<i32, Abort> {
    let opts = [
        with_arg('A', "address-radix"),
        with_arg('t', "format"),
        with_arg('N', "read-bytes"),
        with_arg('j', "skip-bytes"),
        with_arg('w', "width"),
        flag('v', "output-duplicates"),
        flag('c', ""),
        flag('x', ""),
        flag('b', ""),
        flag('d', ""),
        flag('o', ""),
    ];
    let parsed = match getopt(&argv[1..], &opts) {
        Ok(p) => p,
        Err(message) => return usage(ctx, "od", &message, 1),
    };
    let mut types = Vec::new();
    for (key, value) in &parsed.opts {
        let spec = match key {
            't' => value.as_str(),
            'c' => "c",
            'x' => "x2",
            'b' => "o1",
            'd' => "u2",
            'o' => "o2",
            _ => continue,
        };
        match parse_types(spec) {
            Ok(parsed_types) => types.extend(parsed_types),
            Err(message) => return ctx.error("od", &message).map(|()| 1),
        }
    }
    if types.is_empty() {
        types = parse_types("o2").unwrap_or_default();
    }
    let radix = parsed.value('A').unwrap_or("o");
    if !["o", "x", "d", "n"].contains(&radix) {
        let message =
            format!("invalid output address radix '{radix}'; it must be one character from [doxn]");
        ctx.error("od", &message)?;
        return Ok(1);
    }
    let (data, failed) = read_concat(ctx, "od", &parsed.operands)?;
    if failed && data.is_empty() {
        return Ok(1);
    }
    let skip = parsed.value('j').and_then(parse_count).unwrap_or(0) as usize;
    let data = &data[skip.min(data.len())..];
    let data = match parsed.value('N').and_then(parse_count) {
        Some(n) => &data[..(n as usize).min(data.len())],
        None => data,
    };
    let width = parsed.value('w').and_then(|w| w.parse().ok()).unwrap_or(16);
    let layout = Layout {
        types,
        radix,
        width,
        all: parsed.has('v'),
    };
    ctx.stdout.write_str(&layout.dump(data, skip))?;
    Ok(i32::from(failed))
}

/// How `od` lays out its lines.
struct Layout<'a> {
    types: Vec<Type>,
    radix: &'a str,
    width: usize,
    all: bool,
}

impl Layout<'_> {
    fn address(&self, offset: usize) -> String {
        match self.radix {
            "x" => format!("{offset:06x}"),
            "d" => format!("{offset:07}"),
            "n" => String::new(),
            _ => format!("{offset:07o}"),
        }
    }

    fn dump(&self, data: &[u8], base: usize) -> String {
        let mut out = String::new();
        let mut previous: Option<&[u8]> = None;
        let mut starred = false;
        for (index, line) in data.chunks(self.width).enumerate() {
            let offset = base + index * self.width;
            if !self.all && previous == Some(line) && line.len() == self.width {
                if !starred {
                    out.push_str("*\n");
                    starred = true;
                }
                continue;
            }
            starred = false;
            previous = Some(line);
            for (t, kind) in self.types.iter().enumerate() {
                let address = if t == 0 {
                    self.address(offset)
                } else {
                    " ".repeat(self.address(0).len())
                };
                out.push_str(&address);
                out.push_str(&self.render_line(*kind, line));
                out.push('\n');
            }
        }
        if self.radix != "n" {
            out.push_str(&self.address(base + data.len()));
            out.push('\n');
        }
        out
    }

    /// Characters a full line of `kind` takes before padding.
    fn natural_width(&self, kind: Type) -> usize {
        self.width / kind.size() * (kind.width() + 1)
    }

    /// Each type's line is padded to the widest one's, so that the columns
    /// of `-t c -t x1` line up; as GNU od does, the padding is spread over
    /// the fields (the first ones of a short line take their full share).
    fn render_line(&self, kind: Type, line: &[u8]) -> String {
        let block = self
            .types
            .iter()
            .map(|t| self.natural_width(*t))
            .max()
            .unwrap_or(0);
        let fields = (self.width / kind.size()).max(1);
        let pad = block - self.natural_width(kind);
        let mut text = String::new();
        for (k, chunk) in line.chunks(kind.size()).enumerate() {
            let i = fields - k.min(fields - 1);
            let extra = pad * i / fields - pad * (i - 1) / fields;
            text.push_str(&" ".repeat(extra));
            text.push_str(&kind.render(chunk));
        }
        if kind.text {
            let full = block;
            let shown: String = line
                .iter()
                .map(|b| {
                    if (0x20..0x7f).contains(b) {
                        *b as char
                    } else {
                        '.'
                    }
                })
                .collect();
            text = format!("{text:<full$}  >{shown}<");
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use crate::utils::testing::{db, run};

    fn od(args: &[&str], input: &str) -> String {
        let mut argv = vec!["od"];
        argv.extend_from_slice(args);
        run(&db(), &argv, input).stdout
    }

    #[test]
    fn characters_and_hex_match_gnu() {
        assert_eq!(
            od(&["-c"], "hello\tworld\n\u{1}"),
            "0000000   h   e   l   l   o  \\t   w   o   r   l   d  \\n 001\n0000015\n"
        );
        assert_eq!(
            od(&["-A", "x", "-t", "x1"], "hello\n"),
            "000000 68 65 6c 6c 6f 0a\n000006\n"
        );
        assert_eq!(od(&["-An", "-t", "x1"], "abc"), " 61 62 63\n");
        assert_eq!(od(&[], "ab"), "0000000 061141\n0000002\n");
        assert_eq!(od(&["-x"], "abc"), "0000000 6261 0063\n0000003\n");
        assert_eq!(od(&["-b"], "ab"), "0000000 141 142\n0000002\n");
        assert_eq!(od(&["-t", "d1"], "ab"), "0000000   97   98\n0000002\n");
        assert_eq!(od(&["-t", "u1"], "ab"), "0000000  97  98\n0000002\n");
        assert_eq!(od(&["-c"], ""), "0000000\n");
    }

    #[test]
    fn several_types_share_the_widest_columns() {
        // Recorded from GNU od 9.1.
        assert_eq!(
            od(&["-A", "n", "-t", "c", "-t", "x1"], "abcd\0-\n"),
            "   a   b   c   d  \\0   -  \\n\n  61  62  63  64  00  2d  0a\n"
        );
        assert_eq!(
            od(&["-t", "x2", "-t", "c"], "abcd"),
            "0000000    6261    6463\n          a   b   c   d\n0000004\n"
        );
    }

    #[test]
    fn repeats_collapse_and_text_column() {
        let a45 = "a".repeat(45);
        let dumped = od(&["-c"], &a45);
        assert_eq!(dumped.lines().nth(1), Some("*"));
        assert_eq!(dumped.lines().last(), Some("0000055"));
        assert_eq!(
            od(&["-t", "x1z", "-A", "d"], "abcdefghijklmnopqrstu")
                .lines()
                .nth(1),
            Some("0000016 71 72 73 74 75                                   >qrstu<")
        );
        let bad = run(&db(), &["od", "-t", "q"], "");
        assert_eq!(
            (bad.status, bad.stderr.as_str()),
            (1, "od: invalid character 'q' in type string ‘q’\n")
        );
        assert_eq!(run(&db(), &["od", "-t", "x3"], "").status, 1);
        assert_eq!(run(&db(), &["od", "/nope"], "").stdout, "");
    }
}
