//! `tr`: translate, delete and squeeze bytes.
//!
//! Sets are expanded to byte lists (C locale): escapes, `a-z` ranges,
//! `[:class:]`, `[=c=]`, and in the second set `[c*n]` / `[c*]` repeats.
//! As in GNU, a short second set is padded with its last byte unless `-t`
//! truncates the first set instead.

use super::{flag, getopt, usage, Opt};
use crate::limits::Abort;
use crate::utils::Ctx;

pub(super) const TR_OPTS: &[Opt] = &[
    flag('c', "complement"),
    flag('C', ""),
    flag('d', "delete"),
    flag('s', "squeeze-repeats"),
    flag('t', "truncate-set1"),
];

/// One piece of a set before expansion; `Fill` is `[c*]` (as many as needed).
enum Piece {
    Bytes(Vec<u8>),
    Fill(u8),
}

pub(super) fn tr(ctx: &mut Ctx<'_>, argv: &[String]) -> Result<i32, Abort> {
    let parsed = match getopt(&argv[1..], TR_OPTS) {
        Ok(p) => p,
        Err(message) => return usage(ctx, "tr", &message, 1),
    };
    let complement = parsed.has('c') || parsed.has('C');
    let (delete, squeeze) = (parsed.has('d'), parsed.has('s'));
    let sets = &parsed.operands;
    // Translating, or deleting and squeezing, takes two sets; one alone, one.
    let needed = if delete != squeeze { 1 } else { 2 };
    let most = if delete && !squeeze { 1 } else { 2 };
    if sets.is_empty() {
        return usage(ctx, "tr", "missing operand", 1);
    }
    if sets.len() < needed {
        let why = if delete {
            "Two strings must be given when both deleting and squeezing repeats."
        } else {
            "Two strings must be given when translating."
        };
        ctx.error(
            "tr",
            &format!("missing operand after ‘{}’", sets[sets.len() - 1]),
        )?;
        ctx.stderr.write_str(&format!("{why}\n"))?;
        return usage_tail(ctx);
    }
    if sets.len() > most {
        ctx.error("tr", &format!("extra operand ‘{}’", sets[most]))?;
        if most == 1 {
            ctx.stderr.write_str(
                "Only one string may be given when deleting without squeezing repeats.\n",
            )?;
        }
        return usage_tail(ctx);
    }
    let input = ctx.stdin.all()?;
    let result = run_tr(input, sets, complement, delete, squeeze, parsed.has('t'));
    match result {
        Ok(out) => {
            ctx.budget.charge_cpu(input.len() as u64)?;
            ctx.stdout.write(&out).map(|()| 0)
        }
        Err(message) => {
            ctx.error("tr", &message)?;
            Ok(1)
        }
    }
}

fn usage_tail(ctx: &mut Ctx<'_>) -> Result<i32, Abort> {
    ctx.stderr
        .write_str("Try 'tr --help' for more information.\n")?;
    Ok(1)
}

/// Does the work once the operands are known good.
fn run_tr(
    input: &[u8],
    sets: &[String],
    complement: bool,
    delete: bool,
    squeeze: bool,
    truncate: bool,
) -> Result<Vec<u8>, String> {
    let mut set1 = flatten(parse_set(sets[0].as_bytes())?, 0);
    if complement {
        let mut member = [false; 256];
        set1.iter().for_each(|b| member[usize::from(*b)] = true);
        set1 = (0..=255u8).filter(|b| !member[usize::from(*b)]).collect();
    }
    let set2 = match sets.get(1) {
        Some(text) => Some(parse_set(text.as_bytes())?),
        None => None,
    };
    if delete {
        let keep = membership(&set1, true);
        let kept: Vec<u8> = input
            .iter()
            .copied()
            .filter(|b| keep[usize::from(*b)])
            .collect();
        return Ok(match (squeeze, set2) {
            (true, Some(set2)) => squeeze_bytes(&kept, &membership(&flatten(set2, 0), false)),
            _ => kept,
        });
    }
    match set2 {
        None => Ok(squeeze_bytes(input, &membership(&set1, false))),
        Some(set2) => {
            let set2 = flatten(set2, set1.len());
            let map = translation(&mut set1, &set2, truncate)?;
            let translated: Vec<u8> = input.iter().map(|b| map[usize::from(*b)]).collect();
            Ok(if squeeze {
                squeeze_bytes(&translated, &membership(&set2, false))
            } else {
                translated
            })
        }
    }
}

/// A 256-entry table: `member` for bytes in `set`, the opposite otherwise.
fn membership(set: &[u8], negate: bool) -> [bool; 256] {
    let mut table = [negate; 256];
    set.iter().for_each(|b| table[usize::from(*b)] = !negate);
    table
}

/// Collapses runs of the same byte when that byte is in `set`.
fn squeeze_bytes(input: &[u8], set: &[bool; 256]) -> Vec<u8> {
    let mut out: Vec<u8> = Vec::with_capacity(input.len());
    for &byte in input {
        if set[usize::from(byte)] && out.last() == Some(&byte) {
            continue;
        }
        out.push(byte);
    }
    out
}

/// The byte map of `tr SET1 SET2`.
fn translation(set1: &mut Vec<u8>, set2: &[u8], truncate: bool) -> Result<[u8; 256], String> {
    if set2.is_empty() && !set1.is_empty() && !truncate {
        return Err("when not truncating set1, string2 must be non-empty".to_string());
    }
    if truncate {
        set1.truncate(set2.len());
    }
    let mut map = [0u8; 256];
    for (i, slot) in map.iter_mut().enumerate() {
        *slot = i as u8;
    }
    for (i, from) in set1.iter().enumerate() {
        let to = set2.get(i).or(set2.last()).copied().unwrap_or(*from);
        map[usize::from(*from)] = to;
    }
    Ok(map)
}

/// Expands pieces; `[c*]` fills up to `target` bytes.
fn flatten(pieces: Vec<Piece>, target: usize) -> Vec<u8> {
    let fixed: usize = pieces
        .iter()
        .map(|p| match p {
            Piece::Bytes(b) => b.len(),
            Piece::Fill(_) => 0,
        })
        .sum();
    let mut out = Vec::new();
    for piece in pieces {
        match piece {
            Piece::Bytes(bytes) => out.extend(bytes),
            Piece::Fill(byte) => {
                out.extend(std::iter::repeat_n(byte, target.saturating_sub(fixed)))
            }
        }
    }
    out
}

/// Parses a set into pieces.
fn parse_set(text: &[u8]) -> Result<Vec<Piece>, String> {
    let mut pieces = Vec::new();
    let mut at = 0;
    while at < text.len() {
        if text[at] == b'[' {
            if let Some((piece, next)) = bracket(text, at)? {
                pieces.push(piece);
                at = next;
                continue;
            }
        }
        let (first, next) = unescape(text, at);
        if text.get(next) == Some(&b'-') && next + 1 < text.len() {
            let (last, after) = unescape(text, next + 1);
            if last < first {
                let shown = String::from_utf8_lossy(&text[at..after]).into_owned();
                return Err(format!(
                    "range-endpoints of '{shown}' are in reverse collating sequence order"
                ));
            }
            pieces.push(Piece::Bytes((first..=last).collect()));
            at = after;
        } else {
            pieces.push(Piece::Bytes(vec![first]));
            at = next;
        }
    }
    Ok(pieces)
}

/// Largest `n` of `[c*n]` taken as written (1 MiB of set).
const MAX_REPEAT: usize = 1 << 20;

/// `[:class:]`, `[=c=]`, `[c*n]` or `[c*]` at `at`; `None` if `[` is literal.
fn bracket(text: &[u8], at: usize) -> Result<Option<(Piece, usize)>, String> {
    let rest = &text[at + 1..];
    if rest.is_empty() {
        // A `[` at the end of the set is literal.
        return Ok(None);
    }
    if let Some(inner) = rest.strip_prefix(b":") {
        if let Some(end) = inner.windows(2).position(|w| w == b":]") {
            let name = String::from_utf8_lossy(&inner[..end]).into_owned();
            let bytes = class(&name).ok_or_else(|| format!("invalid character class '{name}'"))?;
            return Ok(Some((Piece::Bytes(bytes), at + 4 + end)));
        }
    }
    if rest.len() >= 4 && rest[0] == b'=' && rest[2] == b'=' && rest[3] == b']' {
        return Ok(Some((Piece::Bytes(vec![rest[1]]), at + 5)));
    }
    let (byte, next) = unescape(text, at + 1);
    if text.get(next) != Some(&b'*') {
        return Ok(None);
    }
    let Some(close) = text[next..].iter().position(|b| *b == b']') else {
        return Ok(None);
    };
    let count_text = String::from_utf8_lossy(&text[next + 1..next + close]).into_owned();
    let end = next + close + 1;
    if count_text.is_empty() {
        return Ok(Some((Piece::Fill(byte), end)));
    }
    let radix = if count_text.starts_with('0') { 8 } else { 10 };
    let count = usize::from_str_radix(&count_text, radix)
        .map_err(|_| format!("invalid repeat count '{count_text}' in [c*n] construct"))?;
    if count == 0 {
        return Ok(Some((Piece::Fill(byte), end)));
    }
    // Only as many bytes of a set as the other set has can matter, and
    // sets come from the command line, so a count past that bound is cut:
    // `[x*99999999999]` must not allocate 100 GB.
    Ok(Some((Piece::Bytes(vec![byte; count.min(MAX_REPEAT)]), end)))
}

/// The bytes of a character class, in order.
fn class(name: &str) -> Option<Vec<u8>> {
    let test: fn(&u8) -> bool = match name {
        "alpha" => u8::is_ascii_alphabetic,
        "digit" => u8::is_ascii_digit,
        "alnum" => u8::is_ascii_alphanumeric,
        "upper" => u8::is_ascii_uppercase,
        "lower" => u8::is_ascii_lowercase,
        "space" => |b| matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c),
        "blank" => |b| *b == b' ' || *b == b'\t',
        "punct" => u8::is_ascii_punctuation,
        "print" => |b| (0x20..0x7f).contains(b),
        "graph" => u8::is_ascii_graphic,
        "cntrl" => u8::is_ascii_control,
        "xdigit" => u8::is_ascii_hexdigit,
        _ => return None,
    };
    Some((0..=255u8).filter(test).collect())
}

/// One possibly escaped byte at `at`, and where the next one starts.
fn unescape(text: &[u8], at: usize) -> (u8, usize) {
    if text[at] != b'\\' || at + 1 >= text.len() {
        return (text[at], at + 1);
    }
    let next = text[at + 1];
    let simple = match next {
        b'a' => Some(7),
        b'b' => Some(8),
        b'f' => Some(12),
        b'n' => Some(b'\n'),
        b'r' => Some(b'\r'),
        b't' => Some(b'\t'),
        b'v' => Some(11),
        b'0'..=b'7' => None,
        other => Some(other),
    };
    if let Some(byte) = simple {
        return (byte, at + 2);
    }
    let digits = text[at + 1..]
        .iter()
        .take(3)
        .take_while(|b| (b'0'..=b'7').contains(*b))
        .count();
    let value = text[at + 1..at + 1 + digits]
        .iter()
        .fold(0u32, |v, d| v * 8 + u32::from(d - b'0'));
    (value as u8, at + 1 + digits)
}

#[cfg(test)]
mod tests {
    use crate::utils::testing::{db, run};

    fn tr(args: &[&str], input: &str) -> String {
        let mut argv = vec!["tr"];
        argv.extend_from_slice(args);
        run(&db(), &argv, input).stdout
    }

    #[test]
    fn translates_with_ranges_classes_and_padding() {
        assert_eq!(tr(&["a-z", "A-Z"], "hello\n"), "HELLO\n");
        assert_eq!(tr(&["elo", "xyz"], "hello"), "hxyyz");
        assert_eq!(tr(&["a-z", "AB"], "hello\n"), "BBBBB\n");
        assert_eq!(tr(&["-t", "a-z", "AB"], "abc\n"), "ABc\n");
        assert_eq!(
            tr(
                &["[:upper:][:lower:]", "[:lower:][:upper:]"],
                "Hello World\n"
            ),
            "hELLO wORLD\n"
        );
        assert_eq!(tr(&["\\t", " "], "a\tb\n"), "a b\n");
        assert_eq!(tr(&["abc", "[x*]"], "abc\n"), "xxx\n");
        assert_eq!(tr(&["abcd", "[x*2]y"], "abcd\n"), "xxyy\n");
        assert_eq!(tr(&["a-", "xy"], "a-b\n"), "xyb\n");
        assert_eq!(tr(&["-c", "a-z", "X"], "hello world\n"), "helloXworldX");
    }

    #[test]
    fn deletes_and_squeezes() {
        assert_eq!(tr(&["-d", "lo"], "hello world\n"), "he wrd\n");
        assert_eq!(tr(&["-d", "\\n"], "a\nb\n"), "ab");
        assert_eq!(tr(&["-d", "[:digit:]"], "a1b2\n"), "ab\n");
        assert_eq!(tr(&["-cd", "l\\n"], "hello\n"), "ll\n");
        assert_eq!(tr(&["-s", "lo "], "helloo  world\n"), "helo world\n");
        assert_eq!(tr(&["-s", "\\n"], "a\n\n\nb\n"), "a\nb\n");
        assert_eq!(tr(&["-s", "a-z", "A-Z"], "aabb\n"), "AB\n");
        assert_eq!(tr(&["-ds", "a", "b"], "abbba\n"), "b\n");
    }

    #[test]
    fn reports_bad_operands() {
        let none = run(&db(), &["tr"], "");
        assert_eq!(
            (none.status, none.stderr.as_str()),
            (
                1,
                "tr: missing operand\nTry 'tr --help' for more information.\n"
            )
        );
        let one = run(&db(), &["tr", "a"], "");
        assert!(one.stderr.starts_with(
            "tr: missing operand after ‘a’\nTwo strings must be given when translating.\n"
        ));
        let empty = run(&db(), &["tr", "a-c", ""], "abc");
        assert_eq!(
            empty.stderr,
            "tr: when not truncating set1, string2 must be non-empty\n"
        );
        let reversed = run(&db(), &["tr", "c-a", "x"], "");
        assert_eq!(
            reversed.stderr,
            "tr: range-endpoints of 'c-a' are in reverse collating sequence order\n"
        );
    }
}
