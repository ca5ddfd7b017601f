//! `numfmt`: convert numbers to and from human-readable sizes
//! (`--to=si|iec|iec-i`, `--from=si|iec|iec-i|auto`), in a chosen field of
//! each line, with `--suffix`, `--padding` and `--header`. Rounding is
//! GNU's default, away from zero.

use super::{getopt, lines, read_concat, usage, with_arg, Opt};
use crate::limits::Abort;
use crate::utils::Ctx;

const NUMFMT_OPTS: &[Opt] = &[
    with_arg('\u{1}', "to"),
    with_arg('\u{2}', "from"),
    with_arg('\u{3}', "suffix"),
    with_arg('\u{4}', "padding"),
    with_arg('\u{5}', "field"),
    with_arg('\u{6}', "header"),
    with_arg('d', "delimiter"),
];

const SUFFIXES: &[u8] = b"KMGTPEZY";

/// A unit system: its base and whether suffixes carry an `i`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Scale {
    None,
    Si,
    Iec,
    IecI,
    Auto,
}

impl Scale {
    fn parse(text: &str) -> Option<Scale> {
        match text {
            "none" => Some(Scale::None),
            "si" => Some(Scale::Si),
            "iec" => Some(Scale::Iec),
            "iec-i" => Some(Scale::IecI),
            "auto" => Some(Scale::Auto),
            _ => None,
        }
    }

    fn base(self) -> f64 {
        match self {
            Scale::Si => 1000.0,
            _ => 1024.0,
        }
    }
}

/// How each number is rewritten.
struct Conversion {
    from: Scale,
    to: Scale,
    suffix: String,
    padding: i64,
}

pub(super) fn numfmt(ctx: &mut Ctx<'_>, argv: &[String]) -> Result<i32, Abort> {
    // `--header` takes an optional count; give it its default explicitly.
    let args: Vec<String> = argv[1..]
        .iter()
        .map(|a| {
            if a == "--header" {
                "--header=1".to_string()
            } else {
                a.clone()
            }
        })
        .collect();
    let parsed = match getopt(&args, NUMFMT_OPTS) {
        Ok(p) => p,
        Err(message) => return usage(ctx, "numfmt", &message, 1),
    };
    let scale = |key: char, name: &str| match parsed.value(key) {
        None => Ok(Scale::None),
        Some(v) => Scale::parse(v).ok_or_else(|| format!("invalid argument ‘{v}’ for ‘--{name}’")),
    };
    let (from, to) = match (scale('\u{2}', "from"), scale('\u{1}', "to")) {
        (Ok(from), Ok(to)) => (from, to),
        (Err(message), _) | (_, Err(message)) => return usage(ctx, "numfmt", &message, 1),
    };
    let conversion = Conversion {
        from,
        to,
        suffix: parsed.value('\u{3}').unwrap_or("").to_string(),
        padding: parsed
            .value('\u{4}')
            .and_then(|p| p.parse().ok())
            .unwrap_or(0),
    };
    let field = parsed
        .value('\u{5}')
        .and_then(|f| f.parse::<usize>().ok())
        .unwrap_or(1)
        .max(1);
    let header = parsed
        .value('\u{6}')
        .and_then(|h| h.parse::<usize>().ok())
        .unwrap_or(0);
    let delimiter = parsed.value('d').and_then(|d| d.chars().next());
    let owned;
    let inputs: Vec<&str> = if parsed.operands.is_empty() {
        let (data, _) = read_concat(ctx, "numfmt", &[])?;
        owned = String::from_utf8_lossy(&data).into_owned();
        lines(owned.as_bytes())
            .into_iter()
            .map(|l| std::str::from_utf8(l).unwrap_or(""))
            .collect()
    } else {
        parsed.operands.iter().map(String::as_str).collect()
    };
    let mut out = String::new();
    for (index, line) in inputs.iter().enumerate() {
        let converted = if index < header {
            Ok(line.to_string())
        } else {
            convert_field(line, field, delimiter, &conversion)
        };
        match converted {
            Ok(text) => {
                out.push_str(&text);
                out.push('\n');
            }
            Err(bad) => {
                ctx.stdout.write_str(&out)?;
                ctx.error("numfmt", &format!("invalid number: ‘{bad}’"))?;
                return Ok(2);
            }
        }
    }
    ctx.stdout.write_str(&out).map(|()| 0)
}

/// Rewrites field `field` (1-based) of `line`, keeping the rest as it is.
fn convert_field(
    line: &str,
    field: usize,
    delimiter: Option<char>,
    conversion: &Conversion,
) -> Result<String, String> {
    let spans = field_spans(line, delimiter);
    let Some(&(start, end)) = spans.get(field - 1) else {
        return Ok(line.to_string());
    };
    let converted = convert(&line[start..end], conversion)?;
    Ok(format!("{}{converted}{}", &line[..start], &line[end..]))
}

/// Byte ranges of the fields: split on `delimiter`, or on runs of blanks.
fn field_spans(line: &str, delimiter: Option<char>) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    match delimiter {
        Some(d) => {
            let mut start = 0;
            for (at, c) in line.char_indices() {
                if c == d {
                    spans.push((start, at));
                    start = at + c.len_utf8();
                }
            }
            spans.push((start, line.len()));
        }
        None => {
            let mut start = None;
            for (at, c) in line
                .char_indices()
                .chain(std::iter::once((line.len(), ' ')))
            {
                match (c == ' ' || c == '\t', start) {
                    (true, Some(s)) => {
                        spans.push((s, at));
                        start = None;
                    }
                    (false, None) => start = Some(at),
                    _ => {}
                }
            }
        }
    }
    spans
}

fn convert(text: &str, conversion: &Conversion) -> Result<String, String> {
    let bare = text
        .strip_suffix(conversion.suffix.as_str())
        .filter(|_| !conversion.suffix.is_empty())
        .unwrap_or(text);
    let value = parse_scaled(bare, conversion.from).ok_or_else(|| text.to_string())?;
    let shown = format!("{}{}", render(value, conversion.to), conversion.suffix);
    let width = conversion.padding.unsigned_abs() as usize;
    Ok(if conversion.padding < 0 {
        format!("{shown:<width$}")
    } else {
        format!("{shown:>width$}")
    })
}

/// Parses `1.5K`-style input under the `--from` scale.
fn parse_scaled(text: &str, from: Scale) -> Option<f64> {
    let end = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+'))
        .unwrap_or(text.len());
    let number: f64 = text[..end].parse().ok()?;
    let suffix = &text[end..];
    if suffix.is_empty() {
        return Some(number);
    }
    if from == Scale::None {
        return None;
    }
    let letter = suffix.as_bytes()[0].to_ascii_uppercase();
    let power = SUFFIXES.iter().position(|s| *s == letter)? as i32 + 1;
    let with_i = &suffix[1..] == "i";
    let base = match (from, with_i) {
        (Scale::Auto, true) | (Scale::IecI, true) => 1024.0,
        (Scale::Auto, false) | (Scale::Si, false) => 1000.0,
        (Scale::Iec, false) => 1024.0,
        _ => return None,
    };
    if !with_i && suffix.len() > 1 {
        return None;
    }
    Some(number * f64::powi(base, power))
}

/// Rounds away from zero to `decimals` places.
fn round_up(value: f64, decimals: i32) -> f64 {
    let scale = f64::powi(10.0, decimals);
    let steps = (value.abs() * scale - 1e-9).ceil();
    let magnitude = if steps > 0.0 { steps / scale } else { 0.0 };
    if value < 0.0 {
        -magnitude
    } else {
        magnitude
    }
}

/// Formats `value` under the `--to` scale.
fn render(value: f64, to: Scale) -> String {
    if matches!(to, Scale::None | Scale::Auto) {
        return format!("{}", round_up(value, 0));
    }
    let base = to.base();
    let mut magnitude = value.abs();
    let mut power = 0;
    while magnitude >= base && power < SUFFIXES.len() {
        magnitude /= base;
        power += 1;
    }
    if power == 0 {
        return format!("{}", round_up(value, 0));
    }
    let mut shown = if magnitude < 10.0 {
        round_up(magnitude, 1)
    } else {
        round_up(magnitude, 0)
    };
    if shown >= base && power < SUFFIXES.len() {
        shown = 1.0;
        power += 1;
    }
    let sign = if value < 0.0 { "-" } else { "" };
    let digits = if shown < 10.0 {
        format!("{shown:.1}")
    } else {
        format!("{shown:.0}")
    };
    let letter = SUFFIXES[power - 1] as char;
    let i = if to == Scale::IecI { "i" } else { "" };
    format!("{sign}{digits}{letter}{i}")
}

#[cfg(test)]
mod tests {
    use crate::utils::testing::{db, run};

    fn numfmt(args: &[&str], stdin: &str) -> String {
        let mut argv = vec!["numfmt"];
        argv.extend_from_slice(args);
        run(&db(), &argv, stdin).stdout
    }

    #[test]
    fn to_human_sizes_like_gnu() {
        let values = [
            "0",
            "999",
            "1000",
            "1023",
            "1024",
            "1025",
            "1536",
            "10240",
            "10300",
            "1048576",
            "123456789",
            "-2048",
        ];
        let iec = [
            "0", "999", "1000", "1023", "1.0K", "1.1K", "1.5K", "10K", "11K", "1.0M", "118M",
            "-2.0K",
        ];
        let si = [
            "0", "999", "1.0K", "1.1K", "1.1K", "1.1K", "1.6K", "11K", "11K", "1.1M", "124M",
            "-2.1K",
        ];
        for ((value, want_iec), want_si) in values.iter().zip(iec).zip(si) {
            assert_eq!(
                numfmt(&["--to=iec", "--", value], ""),
                format!("{want_iec}\n"),
                "{value}"
            );
            assert_eq!(
                numfmt(&["--to=si", "--", value], ""),
                format!("{want_si}\n"),
                "{value}"
            );
        }
        assert_eq!(
            numfmt(&["--to=iec-i", "--suffix=B", "1536"], ""),
            "1.5KiB\n"
        );
        assert_eq!(numfmt(&["--to=iec", "1.5"], ""), "2\n");
    }

    #[test]
    fn from_fields_padding_and_errors() {
        assert_eq!(numfmt(&["--from=iec", "1K", "2.5M"], ""), "1024\n2621440\n");
        assert_eq!(numfmt(&["--from=si", "1K"], ""), "1000\n");
        assert_eq!(numfmt(&["--from=auto", "1Ki", "1K"], ""), "1024\n1000\n");
        assert_eq!(numfmt(&["--to=iec"], "1024 x\n"), "1.0K x\n");
        assert_eq!(numfmt(&["--to=iec", "--field=2"], "x 2048\n"), "x 2.0K\n");
        assert_eq!(
            numfmt(&["--to=iec", "--padding=8", "2048"], ""),
            "    2.0K\n"
        );
        assert_eq!(
            numfmt(&["--header", "--to=iec"], "size\n4096\n"),
            "size\n4.0K\n"
        );
        let bad = run(&db(), &["numfmt", "abc"], "");
        assert_eq!(
            (bad.status, bad.stderr.as_str()),
            (2, "numfmt: invalid number: ‘abc’\n")
        );
    }
}
