//! Column and layout utilities: `cut`, `paste`, `join`, `column`, `nl`,
//! `fold`, `expand`, `unexpand`. All work on bytes; positions count bytes
//! (the C locale), so `cut -c` and `cut -b` are the same.

use super::{flag, getopt, lines, read_all, read_concat, records, usage, with_arg, Opt, Parsed};
use crate::limits::{build_bytes_regex, Abort, RegexError};
use crate::utils::Ctx;

/// A list of 1-based inclusive ranges (`1,3-5,7-`), as `cut` takes.
#[derive(Debug)]
struct Ranges(Vec<(usize, usize)>);

impl Ranges {
    fn parse(text: &str) -> Result<Ranges, String> {
        let mut ranges = Vec::new();
        for part in text.split([',', ' ']) {
            let number = |s: &str, default: usize| -> Result<usize, String> {
                if s.is_empty() {
                    return Ok(default);
                }
                match s.parse::<usize>() {
                    Ok(0) => Err("fields and positions are numbered from 1".to_string()),
                    Ok(n) => Ok(n),
                    Err(_) => Err(format!("invalid field value ‘{s}’")),
                }
            };
            let range = match part.split_once('-') {
                Some(("", "")) => return Err("invalid range with no endpoint: -".to_string()),
                Some((a, b)) => (number(a, 1)?, number(b, usize::MAX)?),
                None => {
                    let n = number(part, 0)?;
                    if n == 0 {
                        return Err("fields and positions are numbered from 1".to_string());
                    }
                    (n, n)
                }
            };
            if range.1 < range.0 {
                return Err("invalid decreasing range".to_string());
            }
            ranges.push(range);
        }
        Ok(Ranges(ranges))
    }

    fn contains(&self, index: usize) -> bool {
        self.0.iter().any(|(a, b)| (*a..=*b).contains(&index))
    }
}

pub(super) const CUT_OPTS: &[Opt] = &[
    with_arg('b', "bytes"),
    with_arg('c', "characters"),
    with_arg('f', "fields"),
    with_arg('d', "delimiter"),
    flag('n', ""),
    flag('s', "only-delimited"),
    flag('z', "zero-terminated"),
    flag('\u{1}', "complement"),
    with_arg('\u{2}', "output-delimiter"),
];

pub(super) fn cut(ctx: &mut Ctx<'_>, argv: &[String]) -> Result<i32, Abort> {
    let parsed = match getopt(&argv[1..], CUT_OPTS) {
        Ok(p) => p,
        Err(message) => return usage(ctx, "cut", &message, 1),
    };
    let list = ['b', 'c', 'f']
        .iter()
        .find_map(|k| parsed.value(*k).map(|v| (*k, v)));
    let Some((mode, list)) = list else {
        return usage(
            ctx,
            "cut",
            "you must specify a list of bytes, characters, or fields",
            1,
        );
    };
    let ranges = match Ranges::parse(list) {
        Ok(r) => r,
        Err(message) => return usage(ctx, "cut", &message, 1),
    };
    let delimiter = match parsed.value('d') {
        Some(d) if d.len() > 1 => {
            return usage(ctx, "cut", "the delimiter must be a single character", 1)
        }
        Some(d) => d.bytes().next().unwrap_or(0),
        None => b'\t',
    };
    let sep = if parsed.has('z') { 0 } else { b'\n' };
    let (data, failed) = read_concat(ctx, "cut", &parsed.operands)?;
    let complement = parsed.has('\u{1}');
    let mut out = Vec::with_capacity(data.len());
    for line in records(&data, sep) {
        let kept = if mode == 'f' {
            let output_delimiter = parsed.value('\u{2}').map(str::as_bytes);
            cut_fields(
                line,
                &ranges,
                delimiter,
                output_delimiter,
                complement,
                parsed.has('s'),
            )
        } else {
            let keep = |i: usize| ranges.contains(i + 1) != complement;
            let bytes = line
                .iter()
                .enumerate()
                .filter(|(i, _)| keep(*i))
                .map(|(_, b)| *b);
            Some(bytes.collect())
        };
        if let Some(kept) = kept {
            out.extend_from_slice(&kept);
            out.push(sep);
        }
    }
    ctx.stdout.write(&out)?;
    Ok(i32::from(failed))
}

/// The selected fields of one line; `None` when `-s` drops it.
fn cut_fields(
    line: &[u8],
    ranges: &Ranges,
    delimiter: u8,
    output_delimiter: Option<&[u8]>,
    complement: bool,
    only_delimited: bool,
) -> Option<Vec<u8>> {
    if !line.contains(&delimiter) {
        return (!only_delimited).then(|| line.to_vec());
    }
    let joiner = output_delimiter.unwrap_or(std::slice::from_ref(&delimiter));
    let fields = line
        .split(|b| *b == delimiter)
        .enumerate()
        .filter(|(i, _)| ranges.contains(i + 1) != complement)
        .map(|(_, f)| f);
    Some(fields.collect::<Vec<_>>().join(joiner))
}

/// `paste`'s delimiter list: escapes `\n`, `\t`, `\\`, and `\0` (none).
fn paste_delimiters(text: &str) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        let item = match c {
            '\\' => match chars.next() {
                Some('n') => "\n".to_string(),
                Some('t') => "\t".to_string(),
                Some('0') | None => String::new(),
                Some(other) => other.to_string(),
            },
            other => other.to_string(),
        };
        out.push(item.into_bytes());
    }
    out
}

pub(super) fn paste(ctx: &mut Ctx<'_>, argv: &[String]) -> Result<i32, Abort> {
    let opts = [
        with_arg('d', "delimiters"),
        flag('s', "serial"),
        flag('z', "zero-terminated"),
    ];
    let parsed = match getopt(&argv[1..], &opts) {
        Ok(p) => p,
        Err(message) => return usage(ctx, "paste", &message, 1),
    };
    let delimiters = paste_delimiters(parsed.value('d').unwrap_or("\t"));
    let delimiters = if delimiters.is_empty() {
        vec![Vec::new()]
    } else {
        delimiters
    };
    let sep = if parsed.has('z') { 0 } else { b'\n' };
    let operands = if parsed.operands.is_empty() {
        vec!["-".to_string()]
    } else {
        parsed.operands.clone()
    };
    let mut inputs = Vec::new();
    let mut failed = false;
    let mut stdin_read = false;
    for operand in &operands {
        // Every `-` shares stdin: read it once, deal its lines round-robin.
        if operand == "-" && stdin_read {
            inputs.push(None);
            continue;
        }
        stdin_read |= operand == "-";
        match super::read_operand(ctx, operand)? {
            Ok(bytes) => inputs.push(Some(bytes)),
            Err(error) => {
                ctx.fs_error("paste", operand, &error)?;
                failed = true;
            }
        }
    }
    if failed {
        return Ok(1);
    }
    let columns: Vec<Vec<&[u8]>> = inputs.iter().flatten().map(|d| records(d, sep)).collect();
    let out = if parsed.has('s') {
        paste_serial(&columns, &delimiters, sep)
    } else {
        let sources: Vec<usize> = stdin_sources(&operands);
        paste_parallel(&columns, &sources, &delimiters, sep)
    };
    ctx.stdout.write(&out).map(|()| 0)
}

/// For each operand, which read input it takes lines from.
fn stdin_sources(operands: &[String]) -> Vec<usize> {
    let mut next = 0;
    let mut stdin_index = None;
    operands
        .iter()
        .map(|o| {
            if o == "-" {
                if let Some(i) = stdin_index {
                    return i;
                }
                stdin_index = Some(next);
            }
            next += 1;
            next - 1
        })
        .collect()
}

fn paste_serial(columns: &[Vec<&[u8]>], delimiters: &[Vec<u8>], sep: u8) -> Vec<u8> {
    let mut out = Vec::new();
    for lines in columns {
        for (i, line) in lines.iter().enumerate() {
            if i > 0 {
                out.extend_from_slice(&delimiters[(i - 1) % delimiters.len()]);
            }
            out.extend_from_slice(line);
        }
        out.push(sep);
    }
    out
}

fn paste_parallel(
    columns: &[Vec<&[u8]>],
    sources: &[usize],
    delimiters: &[Vec<u8>],
    sep: u8,
) -> Vec<u8> {
    let mut cursors = vec![0usize; columns.len()];
    let mut out = Vec::new();
    loop {
        let mut row = Vec::new();
        let mut any = false;
        for (i, source) in sources.iter().enumerate() {
            if i > 0 {
                row.extend_from_slice(&delimiters[(i - 1) % delimiters.len()]);
            }
            if let Some(line) = columns[*source].get(cursors[*source]) {
                row.extend_from_slice(line);
                cursors[*source] += 1;
                any = true;
            }
        }
        if !any {
            return out;
        }
        out.extend_from_slice(&row);
        out.push(sep);
    }
}

pub(super) const JOIN_OPTS: &[Opt] = &[
    with_arg('t', ""),
    with_arg('1', ""),
    with_arg('2', ""),
    with_arg('j', ""),
    with_arg('a', ""),
    with_arg('v', ""),
    with_arg('e', ""),
    with_arg('o', ""),
    flag('i', "ignore-case"),
    flag('\u{1}', "nocheck-order"),
    flag('\u{2}', "check-order"),
    flag('\u{3}', "header"),
];

/// One side of a join: its lines split into fields.
struct Side<'d> {
    rows: Vec<Vec<&'d [u8]>>,
    lines: Vec<&'d [u8]>,
    key: usize,
}

impl<'d> Side<'d> {
    fn new(lines: &'d [Vec<u8>], key: usize, separator: Option<u8>) -> Side<'d> {
        Side {
            rows: lines.iter().map(|l| join_fields(l, separator)).collect(),
            lines: lines.iter().map(Vec::as_slice).collect(),
            key: key.max(1) - 1,
        }
    }
}

/// How `join` prints.
struct JoinStyle {
    separator: Vec<u8>,
    empty: Option<Vec<u8>>,
    format: Option<Vec<(usize, usize)>>,
    fold: bool,
}

pub(super) fn join(ctx: &mut Ctx<'_>, argv: &[String]) -> Result<i32, Abort> {
    let parsed = match getopt(&argv[1..], JOIN_OPTS) {
        Ok(p) => p,
        Err(message) => return usage(ctx, "join", &message, 1),
    };
    if let Some(message) = super::two_operands(&parsed.operands) {
        return usage(ctx, "join", &message, 1);
    }
    let field = |key: char| {
        parsed
            .value(key)
            .or(parsed.value('j'))
            .and_then(|v| v.parse::<usize>().ok())
            .unwrap_or(1)
    };
    let (data, failed) = read_all(ctx, "join", &parsed.operands)?;
    if failed {
        return Ok(1);
    }
    let separator = parsed
        .value('t')
        .map(|t| t.as_bytes().first().copied().unwrap_or(b'\t'));
    let split = |d: &'_ [u8]| -> Vec<Vec<u8>> { lines(d).iter().map(|l| l.to_vec()).collect() };
    let (left_lines, right_lines) = (split(&data[0].1), split(&data[1].1));
    let left = Side::new(&left_lines, field('1'), separator);
    let right = Side::new(&right_lines, field('2'), separator);
    let style = JoinStyle {
        separator: separator.map_or(b" ".to_vec(), |s| vec![s]),
        empty: parsed.value('e').map(|e| e.as_bytes().to_vec()),
        format: parse_join_format(parsed.value('o')),
        fold: parsed.has('i'),
    };
    let wants = |key: char, n: &str| parsed.opts.iter().any(|(k, v)| *k == key && v == n);
    let show = [
        wants('a', "1") || wants('v', "1"),
        wants('a', "2") || wants('v', "2"),
    ];
    let only_unpaired = parsed.has('v');
    let mut out = Vec::new();
    let check = merge_join([&left, &right], &style, show, only_unpaired, &mut out);
    ctx.budget.charge_cpu(out.len() as u64)?;
    for (index, side) in [&left, &right].into_iter().enumerate() {
        if let Some(row) = check.disorder[index] {
            let name = &parsed.operands[index];
            let text = String::from_utf8_lossy(side.lines[row]).into_owned();
            ctx.error(
                "join",
                &format!("{name}:{}: is not sorted: {text}", row + 1),
            )?;
        }
    }
    ctx.stdout.write(&out)?;
    if check.disorder.iter().any(Option::is_some) {
        ctx.error("join", "input is not in sorted order")?;
        return Ok(1);
    }
    Ok(0)
}

/// `-o 0,1.2,2.3`: (file, field) with file 0 meaning the join field.
fn parse_join_format(text: Option<&str>) -> Option<Vec<(usize, usize)>> {
    let text = text.filter(|t| *t != "auto")?;
    let items = text.split([',', ' ']).filter_map(|item| {
        if item == "0" {
            return Some((0, 0));
        }
        let (file, field) = item.split_once('.')?;
        Some((file.parse().ok()?, field.parse::<usize>().ok()?.max(1) - 1))
    });
    Some(items.collect())
}

/// A line's fields: split on `separator`, or on runs of blanks.
fn join_fields(line: &[u8], separator: Option<u8>) -> Vec<&[u8]> {
    match separator {
        Some(s) => line.split(move |b| *b == s).collect(),
        None => line
            .split(|b| *b == b' ' || *b == b'\t')
            .filter(|f| !f.is_empty())
            .collect(),
    }
}

fn join_key<'d>(side: &Side<'d>, row: usize) -> &'d [u8] {
    side.rows[row].get(side.key).copied().unwrap_or(b"")
}

fn compare_keys(a: &[u8], b: &[u8], fold: bool) -> std::cmp::Ordering {
    if fold {
        a.to_ascii_lowercase().cmp(&b.to_ascii_lowercase())
    } else {
        a.cmp(b)
    }
}

/// GNU's lazy order check: once an unpairable line has been seen, each
/// line read is compared with the previous one of its file.
#[derive(Default)]
struct OrderCheck {
    seen_unpairable: bool,
    /// The first out-of-order row of each input.
    disorder: [Option<usize>; 2],
}

impl OrderCheck {
    /// Row `row` of input `which` has just been read.
    fn read(&mut self, which: usize, side: &Side<'_>, row: usize, fold: bool) {
        let checked = self.seen_unpairable && self.disorder[which].is_none();
        if checked && row > 0 && row < side.rows.len() {
            let order = compare_keys(join_key(side, row - 1), join_key(side, row), fold);
            if order.is_gt() {
                self.disorder[which] = Some(row);
            }
        }
    }
}

/// The classic merge of two sorted inputs, pairing runs of equal keys.
fn merge_join(
    sides: [&Side<'_>; 2],
    style: &JoinStyle,
    show: [bool; 2],
    only_unpaired: bool,
    out: &mut Vec<u8>,
) -> OrderCheck {
    let [left, right] = sides;
    let mut check = OrderCheck::default();
    let (mut i, mut j) = (0, 0);
    while i < left.rows.len() && j < right.rows.len() {
        match compare_keys(join_key(left, i), join_key(right, j), style.fold) {
            std::cmp::Ordering::Less => {
                if show[0] {
                    join_line(out, style, Some((left, i)), None);
                }
                check.seen_unpairable = true;
                i += 1;
                check.read(0, left, i, style.fold);
            }
            std::cmp::Ordering::Greater => {
                if show[1] {
                    join_line(out, style, None, Some((right, j)));
                }
                check.seen_unpairable = true;
                j += 1;
                check.read(1, right, j, style.fold);
            }
            std::cmp::Ordering::Equal => {
                let key = join_key(left, i);
                let run = |side: &Side<'_>, from: usize| {
                    (from..side.rows.len())
                        .take_while(|r| compare_keys(join_key(side, *r), key, style.fold).is_eq())
                        .count()
                };
                let (left_run, right_run) = (run(left, i), run(right, j));
                if !only_unpaired {
                    for a in i..i + left_run {
                        for b in j..j + right_run {
                            join_line(out, style, Some((left, a)), Some((right, b)));
                        }
                    }
                }
                i += left_run;
                j += right_run;
                check.read(0, left, i, style.fold);
                check.read(1, right, j, style.fold);
            }
        }
    }
    for (which, (side, from)) in [(left, i), (right, j)].into_iter().enumerate() {
        for row in from..side.rows.len() {
            check.seen_unpairable = true;
            if show[which] {
                let pair = if which == 0 {
                    (Some((side, row)), None)
                } else {
                    (None, Some((side, row)))
                };
                join_line(out, style, pair.0, pair.1);
            }
            check.read(which, side, row + 1, style.fold);
        }
    }
    check
}

/// Prints one output line of `join` (paired, or one side only).
fn join_line(
    out: &mut Vec<u8>,
    style: &JoinStyle,
    left: Option<(&Side<'_>, usize)>,
    right: Option<(&Side<'_>, usize)>,
) {
    let key = left
        .or(right)
        .map_or(&b""[..], |(side, row)| join_key(side, row));
    let mut cells: Vec<&[u8]> = Vec::new();
    let empty = style.empty.as_deref().unwrap_or(b"");
    match &style.format {
        Some(format) => {
            for (file, field) in format {
                let cell = match file {
                    0 => Some(key),
                    1 => left.and_then(|(s, r)| s.rows[r].get(*field).copied()),
                    _ => right.and_then(|(s, r)| s.rows[r].get(*field).copied()),
                };
                cells.push(cell.unwrap_or(empty));
            }
        }
        None => {
            cells.push(key);
            for (side, row) in [left, right].into_iter().flatten() {
                let rest = side.rows[row]
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| *i != side.key);
                cells.extend(rest.map(|(_, f)| *f));
            }
        }
    }
    out.extend_from_slice(&cells.join(&style.separator[..]));
    out.push(b'\n');
}

pub(super) fn column(ctx: &mut Ctx<'_>, argv: &[String]) -> Result<i32, Abort> {
    let opts = [
        flag('t', "table"),
        with_arg('s', "separator"),
        with_arg('o', "output-separator"),
        with_arg('c', "output-width"),
        flag('x', "fillrows"),
        flag('n', ""),
    ];
    let parsed = match getopt(&argv[1..], &opts) {
        Ok(p) => p,
        Err(message) => return usage(ctx, "column", &message, 1),
    };
    let (data, failed) = read_concat(ctx, "column", &parsed.operands)?;
    let text = String::from_utf8_lossy(&data);
    let rows: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let out = if parsed.has('t') {
        let separators = parsed.value('s').unwrap_or(" \t");
        table(&rows, separators, parsed.value('o').unwrap_or("  "))
    } else {
        let width = parsed.value('c').and_then(|c| c.parse().ok()).unwrap_or(80);
        fill_columns(&rows, width, parsed.has('x'))
    };
    ctx.stdout.write_str(&out)?;
    Ok(i32::from(failed))
}

/// `column -t`: cells split on any of `separators` (runs of whitespace
/// merge), padded to each column's width; the last column is not padded.
fn table(rows: &[&str], separators: &str, output: &str) -> String {
    let whitespace = separators.chars().all(char::is_whitespace);
    let cells: Vec<Vec<&str>> = rows
        .iter()
        .map(|row| {
            let split = row.split(|c| separators.contains(c));
            if whitespace {
                split.filter(|c| !c.is_empty()).collect()
            } else {
                split.collect()
            }
        })
        .collect();
    let columns = cells.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            cells
                .iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in &cells {
        for (c, cell) in row.iter().enumerate() {
            out.push_str(cell);
            if c + 1 < row.len() {
                let pad = widths[c] - cell.chars().count();
                out.push_str(&" ".repeat(pad));
                out.push_str(output);
            }
        }
        out.push('\n');
    }
    out
}

/// `column` without `-t`: entries in columns down the page, tab-aligned.
fn fill_columns(rows: &[&str], width: usize, across: bool) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let longest = rows.iter().map(|r| r.chars().count()).max().unwrap_or(0);
    let column_width = (longest + 8) & !7;
    let columns = (width / column_width).max(1);
    let lines = rows.len().div_ceil(columns);
    let mut out = String::new();
    for line in 0..lines {
        let indices: Vec<usize> = (0..columns)
            .map(|c| {
                if across {
                    line * columns + c
                } else {
                    c * lines + line
                }
            })
            .filter(|i| *i < rows.len())
            .collect();
        for (k, index) in indices.iter().enumerate() {
            let entry = rows[*index];
            out.push_str(entry);
            if k + 1 < indices.len() {
                let mut at = entry.chars().count();
                while at < column_width {
                    out.push('\t');
                    at = (at + 8) & !7;
                }
            }
        }
        out.push('\n');
    }
    out
}

pub(super) const NL_OPTS: &[Opt] = &[
    with_arg('b', "body-numbering"),
    with_arg('n', "number-format"),
    with_arg('w', "number-width"),
    with_arg('s', "number-separator"),
    with_arg('v', "starting-line-number"),
    with_arg('i', "line-increment"),
    with_arg('h', "header-numbering"),
    with_arg('f', "footer-numbering"),
    with_arg('d', "section-delimiter"),
    flag('p', "no-renumber"),
];

pub(super) fn nl(ctx: &mut Ctx<'_>, argv: &[String]) -> Result<i32, Abort> {
    let parsed = match getopt(&argv[1..], NL_OPTS) {
        Ok(p) => p,
        Err(message) => return usage(ctx, "nl", &message, 1),
    };
    let mut numbers = [6i64, 1, 1];
    let names = [
        "line number field width",
        "starting line number",
        "line number increment",
    ];
    for (slot, key) in ['w', 'v', 'i'].into_iter().enumerate() {
        match super::number_option(&parsed, key, numbers[slot]) {
            Ok(n) => numbers[slot] = n,
            Err(text) => {
                ctx.error("nl", &format!("invalid {}: ‘{text}’", names[slot]))?;
                return Ok(1);
            }
        }
    }
    let [width, start, step] = numbers;
    let style = parsed.value('b').unwrap_or("t");
    let selection = match Selection::parse(style) {
        Ok(selection) => selection,
        Err(message) => return usage(ctx, "nl", &message, 1),
    };
    let format = parsed.value('n').unwrap_or("rn");
    let separator = parsed.value('s').unwrap_or("\t");
    let (data, failed) = read_concat(ctx, "nl", &parsed.operands)?;
    let width = width.max(1) as usize;
    let mut out = Vec::with_capacity(data.len() + data.len() / 2);
    let mut next = start;
    for line in data.split_inclusive(|b| *b == b'\n') {
        let body = line.strip_suffix(b"\n").unwrap_or(line);
        let shown = if selection.numbers(body) {
            let number = next;
            next += step;
            match format {
                "ln" => format!("{number:<width$}"),
                "rz" => super::misc_pad_zero(number, width),
                _ => format!("{number:>width$}"),
            }
        } else {
            " ".repeat(width)
        };
        out.extend_from_slice(shown.as_bytes());
        out.extend_from_slice(separator.as_bytes());
        out.extend_from_slice(body);
        out.push(b'\n');
    }
    ctx.stdout.write(&out)?;
    Ok(i32::from(failed))
}

/// `nl -b`: which lines get a number.
enum Selection {
    All,
    None,
    NonEmpty,
    Matching(regex::bytes::Regex),
}

impl Selection {
    fn parse(style: &str) -> Result<Selection, String> {
        match style {
            "a" => Ok(Selection::All),
            "n" => Ok(Selection::None),
            "t" => Ok(Selection::NonEmpty),
            _ => match style.strip_prefix('p') {
                Some(p) => build_bytes_regex(&mut regex::bytes::RegexBuilder::new(p))
                    .map(Selection::Matching)
                    .map_err(|e| match e {
                        RegexError::TooLarge => e.to_string(),
                        RegexError::Invalid(_) => format!("invalid regular expression: {p}"),
                    }),
                None => Err(format!("invalid body numbering style: ‘{style}’")),
            },
        }
    }

    fn numbers(&self, line: &[u8]) -> bool {
        match self {
            Selection::All => true,
            Selection::None => false,
            Selection::NonEmpty => !line.is_empty(),
            Selection::Matching(re) => re.is_match(line),
        }
    }
}

pub(super) fn fold(ctx: &mut Ctx<'_>, argv: &[String]) -> Result<i32, Abort> {
    let opts = [
        with_arg('w', "width"),
        flag('s', "spaces"),
        flag('b', "bytes"),
    ];
    let args = obsolete_width(&argv[1..]);
    let parsed = match getopt(&args, &opts) {
        Ok(p) => p,
        Err(message) => return usage(ctx, "fold", &message, 1),
    };
    let Some(width) = parsed
        .value('w')
        .map_or(Some(80), |w| w.parse::<usize>().ok().filter(|w| *w > 0))
    else {
        let w = parsed.value('w').unwrap_or_default();
        let why = if w == "0" {
            ": Numerical result out of range"
        } else {
            ""
        };
        ctx.error("fold", &format!("invalid number of columns: ‘{w}’{why}"))?;
        return Ok(1);
    };
    let (data, failed) = read_concat(ctx, "fold", &parsed.operands)?;
    let mut out = Vec::with_capacity(data.len() + data.len() / width.max(1));
    for line in data.split_inclusive(|b| *b == b'\n') {
        let (body, newline) = match line.strip_suffix(b"\n") {
            Some(body) => (body, true),
            None => (line, false),
        };
        fold_line(body, width, parsed.has('s'), parsed.has('b'), &mut out);
        if newline {
            out.push(b'\n');
        }
    }
    ctx.stdout.write(&out)?;
    Ok(i32::from(failed))
}

/// `fold -5` means `fold -w 5`.
fn obsolete_width(args: &[String]) -> Vec<String> {
    args.iter()
        .flat_map(|a| {
            let digits =
                a.len() > 1 && a.starts_with('-') && a[1..].bytes().all(|b| b.is_ascii_digit());
            if digits {
                vec!["-w".to_string(), a[1..].to_string()]
            } else {
                vec![a.clone()]
            }
        })
        .collect()
}

/// The column after printing `byte` at `column`.
fn advance(column: usize, byte: u8, bytes: bool) -> usize {
    if bytes {
        return column + 1;
    }
    match byte {
        b'\t' => column + 8 - column % 8,
        b'\r' => 0,
        8 => column.saturating_sub(1),
        _ => column + 1,
    }
}

fn fold_line(body: &[u8], width: usize, at_spaces: bool, bytes: bool, out: &mut Vec<u8>) {
    let mut pending: Vec<u8> = Vec::new();
    let mut column = 0;
    for &byte in body {
        loop {
            let next = advance(column, byte, bytes);
            if next <= width || pending.is_empty() {
                pending.push(byte);
                column = next;
                break;
            }
            let blank = if at_spaces {
                pending.iter().rposition(|b| *b == b' ' || *b == b'\t')
            } else {
                None
            };
            match blank {
                Some(at) => {
                    out.extend_from_slice(&pending[..=at]);
                    pending.drain(..=at);
                    column = pending.iter().fold(0, |c, b| advance(c, *b, bytes));
                }
                None => {
                    out.append(&mut pending);
                    column = 0;
                }
            }
            out.push(b'\n');
        }
    }
    out.extend_from_slice(&pending);
}

/// Tab stops from `-t`: one number (every N) or a list.
#[derive(Clone)]
struct TabStops(Vec<usize>);

impl TabStops {
    fn parse(text: Option<&str>) -> Option<TabStops> {
        let stops: Option<Vec<usize>> = text
            .unwrap_or("8")
            .split([',', ' '])
            .filter(|s| !s.is_empty())
            .map(|s| s.parse().ok().filter(|n| *n > 0))
            .collect();
        stops.filter(|s| !s.is_empty()).map(TabStops)
    }

    /// The next stop after `column`, if any.
    fn next(&self, column: usize) -> Option<usize> {
        match self.0.as_slice() {
            [every] => Some(column + every - column % every),
            list => list.iter().copied().find(|s| *s > column),
        }
    }
}

/// Reads `-t` (also `-N`) for expand/unexpand; the error status when bad.
fn tab_options(
    ctx: &mut Ctx<'_>,
    argv: &[String],
    util: &str,
    all_flag: bool,
) -> Result<Result<(Parsed, TabStops), i32>, Abort> {
    let mut opts = vec![with_arg('t', "tabs"), flag('i', "initial")];
    if all_flag {
        opts.push(flag('a', "all"));
        opts.push(flag('\u{1}', "first-only"));
    }
    let args: Vec<String> = argv[1..]
        .iter()
        .map(|a| {
            if a.len() > 1 && a.starts_with('-') && a[1..].bytes().all(|b| b.is_ascii_digit()) {
                format!("-t{}", &a[1..])
            } else {
                a.clone()
            }
        })
        .collect();
    let parsed = match getopt(&args, &opts) {
        Ok(p) => p,
        Err(message) => return usage(ctx, util, &message, 1).map(Err),
    };
    match TabStops::parse(parsed.value('t')) {
        Some(stops) => Ok(Ok((parsed, stops))),
        None => {
            let text = parsed.value('t').unwrap_or_default();
            ctx.error(
                util,
                &format!("tab size contains invalid character(s): ‘{text}’"),
            )?;
            Ok(Err(1))
        }
    }
}

pub(super) fn expand(ctx: &mut Ctx<'_>, argv: &[String]) -> Result<i32, Abort> {
    let (parsed, stops) = match tab_options(ctx, argv, "expand", false)? {
        Ok(v) => v,
        Err(status) => return Ok(status),
    };
    let (data, failed) = read_concat(ctx, "expand", &parsed.operands)?;
    let mut out = Vec::with_capacity(data.len() * 2);
    let mut column = 0;
    let mut leading = true;
    for &byte in &data {
        match byte {
            b'\t' if leading || !parsed.has('i') => {
                let stop = stops.next(column).unwrap_or(column + 1);
                out.extend(std::iter::repeat_n(b' ', stop - column));
                column = stop;
            }
            b'\n' => {
                out.push(byte);
                column = 0;
                leading = true;
            }
            _ => {
                leading &= byte == b' ' || byte == b'\t';
                out.push(byte);
                column = advance(column, byte, false);
            }
        }
    }
    ctx.stdout.write(&out)?;
    Ok(i32::from(failed))
}

pub(super) fn unexpand(ctx: &mut Ctx<'_>, argv: &[String]) -> Result<i32, Abort> {
    let (parsed, stops) = match tab_options(ctx, argv, "unexpand", true)? {
        Ok(v) => v,
        Err(status) => return Ok(status),
    };
    let all = (parsed.has('a') || parsed.has('t')) && !parsed.has('\u{1}');
    let (data, failed) = read_concat(ctx, "unexpand", &parsed.operands)?;
    let mut out = Vec::with_capacity(data.len());
    for line in data.split_inclusive(|b| *b == b'\n') {
        unexpand_line(line, &stops, all, &mut out);
    }
    ctx.stdout.write(&out)?;
    Ok(i32::from(failed))
}

/// Turns runs of blanks that reach a tab stop into tabs, in the leading
/// blanks or, with `all`, everywhere. As in GNU, a lone space reaching a
/// stop becomes a tab only when another blank follows it.
fn unexpand_line(line: &[u8], stops: &TabStops, all: bool, out: &mut Vec<u8>) {
    let mut column = 0;
    let mut blanks: Vec<u8> = Vec::new();
    let mut blank_start = 0;
    let mut converting = true;
    let mut lone_space = false;
    for &byte in line {
        let blank = converting && (byte == b' ' || byte == b'\t');
        if lone_space {
            out.push(if blank { b'\t' } else { b' ' });
            lone_space = false;
        }
        if blank {
            if blanks.is_empty() {
                blank_start = column;
            }
            blanks.push(byte);
            column = if byte == b'\t' {
                stops.next(column).unwrap_or(column + 1)
            } else {
                column + 1
            };
            if stops.next(blank_start).is_some_and(|stop| stop <= column) {
                if blanks == b" " {
                    lone_space = true;
                } else {
                    out.push(b'\t');
                }
                blanks.clear();
                blank_start = column;
            }
            continue;
        }
        out.append(&mut blanks);
        out.push(byte);
        column = advance(column, byte, false);
        converting = all;
    }
    if lone_space {
        out.push(b' ');
    }
    out.append(&mut blanks);
}

#[cfg(test)]
mod tests {
    use crate::utils::testing::{db, files, run};

    fn out(argv: &[&str], stdin: &str) -> String {
        run(&db(), argv, stdin).stdout
    }

    #[test]
    fn cut_fields_and_characters() {
        assert_eq!(out(&["cut", "-d:", "-f2"], "a:b:c\n"), "b\n");
        assert_eq!(
            out(&["cut", "-d:", "-f1,3"], "a:b:c\ne:f:g\n"),
            "a:c\ne:g\n"
        );
        assert_eq!(
            out(&["cut", "-d:", "-f2-"], "a:b:c\nnodelim\n"),
            "b:c\nnodelim\n"
        );
        assert_eq!(out(&["cut", "-s", "-d:", "-f2"], "a:b:c\nnodelim\n"), "b\n");
        assert_eq!(out(&["cut", "-f1"], "a\tb\nd\te\n"), "a\nd\n");
        assert_eq!(out(&["cut", "-d", " ", "-f2"], "one two\n"), "two\n");
        assert_eq!(
            out(&["cut", "-d:", "--complement", "-f2"], "a:b:c\n"),
            "a:c\n"
        );
        assert_eq!(
            out(&["cut", "-d:", "-f3,1", "--output-delimiter= "], "a:b:c"),
            "a c\n"
        );
        assert_eq!(out(&["cut", "-c2-4,6"], "abcdef\n"), "bcdf\n");
        assert_eq!(out(&["cut", "-c-2"], "abcdef\n"), "ab\n");
        assert_eq!(out(&["cut", "-b", "2-", "--complement"], "abc\n"), "a\n");
    }

    #[test]
    fn cut_errors() {
        let none = run(&db(), &["cut"], "");
        assert_eq!(
            none.stderr.lines().next(),
            Some("cut: you must specify a list of bytes, characters, or fields")
        );
        let zero = run(&db(), &["cut", "-f", "0"], "");
        assert_eq!(
            (zero.status, zero.stderr.lines().next()),
            (1, Some("cut: fields and positions are numbered from 1"))
        );
        let delim = run(&db(), &["cut", "-d", "ab", "-f1"], "");
        assert_eq!(
            delim.stderr.lines().next(),
            Some("cut: the delimiter must be a single character")
        );
    }

    #[test]
    fn paste_parallel_serial_and_stdin() {
        let db = db();
        files(
            &db,
            &[
                ("/1", "a\nb\nc\n"),
                ("/2", "1\n2\n3\n"),
                ("/3", "x\ny\nz\n"),
                ("/e", ""),
                ("/s", "hello\n"),
            ],
        );
        assert_eq!(
            run(&db, &["paste", "/1", "/2", "/3"], "").stdout,
            "a\t1\tx\nb\t2\ty\nc\t3\tz\n"
        );
        assert_eq!(
            run(&db, &["paste", "-d,:", "/1", "/2", "/3"], "").stdout,
            "a,1:x\nb,2:y\nc,3:z\n"
        );
        assert_eq!(
            run(&db, &["paste", "/e", "/1"], "").stdout,
            "\ta\n\tb\n\tc\n"
        );
        assert_eq!(
            run(&db, &["paste", "/s", "/1"], "").stdout,
            "hello\ta\n\tb\n\tc\n"
        );
        assert_eq!(
            run(&db, &["paste", "-s", "/1", "/2"], "").stdout,
            "a\tb\tc\n1\t2\t3\n"
        );
        assert_eq!(
            run(&db, &["paste", "-s", "-d", ",;"], "a\nb\nc\n").stdout,
            "a,b;c\n"
        );
        assert_eq!(
            run(&db, &["paste", "-", "-", "-"], "a\nb\nc\nd\ne\nf\n").stdout,
            "a\tb\tc\nd\te\tf\n"
        );
        assert_eq!(
            run(&db, &["paste", "-", "/2"], "a\n").stdout,
            "a\t1\n\t2\n\t3\n"
        );
        assert_eq!(run(&db, &["paste", "/nope"], "").status, 1);
    }

    #[test]
    fn join_variants() {
        let db = db();
        files(
            &db,
            &[
                ("/a", "1 apple\n2 banana\n3 cherry\n"),
                ("/b", "1 red\n3 red\n"),
                ("/c", "1,apple\n2,banana\n"),
                ("/d", "1,fruit\n2,fruit\n"),
                ("/u", "b 1\na 2\n"),
                ("/v", "a x\nb y\n"),
            ],
        );
        assert_eq!(
            run(&db, &["join", "/a", "/b"], "").stdout,
            "1 apple red\n3 cherry red\n"
        );
        assert_eq!(
            run(&db, &["join", "-a", "1", "/a", "/b"], "").stdout,
            "1 apple red\n2 banana\n3 cherry red\n"
        );
        assert_eq!(
            run(&db, &["join", "-v", "1", "/a", "/b"], "").stdout,
            "2 banana\n"
        );
        assert_eq!(
            run(&db, &["join", "-t", ",", "/c", "/d"], "").stdout,
            "1,apple,fruit\n2,banana,fruit\n"
        );
        assert_eq!(
            run(&db, &["join", "-o", "1.2,2.2", "/a", "/b"], "").stdout,
            "apple red\ncherry red\n"
        );
        assert_eq!(
            run(
                &db,
                &["join", "-a", "1", "-e", "NA", "-o", "0,2.2", "/a", "/b"],
                ""
            )
            .stdout,
            "1 red\n2 NA\n3 red\n"
        );
        assert_eq!(
            run(&db, &["join", "-1", "2", "-2", "1", "/u", "/b"], "").stdout,
            "1 b red\n"
        );
        let unsorted = run(&db, &["join", "/u", "/v"], "");
        assert_eq!((unsorted.stdout.as_str(), unsorted.status), ("b 1 y\n", 1));
        assert_eq!(
            unsorted.stderr,
            "join: /u:2: is not sorted: a 2\njoin: input is not in sorted order\n"
        );
        // Unsorted but fully paired input is not reported, as in GNU.
        let paired = run(&db, &["join", "/u", "/u"], "");
        assert_eq!(
            (paired.stdout.as_str(), paired.status),
            ("b 1 1\na 2 2\n", 0)
        );
    }

    #[test]
    fn column_table_and_fill() {
        assert_eq!(
            out(&["column", "-t"], "a b c\nd e\nf\n"),
            "a  b  c\nd  e\nf\n"
        );
        assert_eq!(
            out(&["column", "-t", "-s,"], "a,b\ncc,d\n"),
            "a   b\ncc  d\n"
        );
        assert_eq!(
            out(&["column", "-t", "-s,", "-o", "|"], "a,b\ncc,d\n"),
            "a |b\ncc|d\n"
        );
        assert_eq!(out(&["column"], ""), "");
        assert_eq!(out(&["column"], "a\nb\nc\n"), "a\tb\tc\n");
        assert_eq!(out(&["column", "-c", "20"], "a\nb\nc\n"), "a\tc\nb\n");
        assert_eq!(out(&["column", "-c", "10"], "a\nb\nc\n"), "a\nb\nc\n");
    }

    #[test]
    fn nl_formats() {
        assert_eq!(
            out(&["nl"], "a\nb\nc\n"),
            "     1\ta\n     2\tb\n     3\tc\n"
        );
        assert_eq!(out(&["nl"], "a\n\nb\n"), "     1\ta\n      \t\n     2\tb\n");
        assert_eq!(
            out(&["nl", "-ba"], "a\n\nb\n"),
            "     1\ta\n     2\t\n     3\tb\n"
        );
        assert_eq!(out(&["nl", "-v", "10"], "a\nb\n"), "    10\ta\n    11\tb\n");
        assert_eq!(out(&["nl", "-w", "3"], "a\nb\n"), "  1\ta\n  2\tb\n");
        assert_eq!(
            out(&["nl", "-i", "5"], "a\nb\nc\n"),
            "     1\ta\n     6\tb\n    11\tc\n"
        );
        assert_eq!(out(&["nl", "-n", "ln"], "a\nb\n"), "1     \ta\n2     \tb\n");
        assert_eq!(out(&["nl", "-n", "rz"], "a\nb\n"), "000001\ta\n000002\tb\n");
        assert_eq!(out(&["nl", "-s", ": "], "a\n"), "     1: a\n");
        assert_eq!(out(&["nl", "-bp^x"], "xa\nb\n"), "     1\txa\n      \tb\n");
        assert_eq!(out(&["nl"], "no newline"), "     1\tno newline\n");
        assert_eq!(out(&["nl", "-bn"], "a\n"), "      \ta\n");
        assert_eq!(run(&db(), &["nl", "-bx"], "a\n").status, 1);
    }

    #[test]
    fn fold_widths_and_spaces() {
        assert_eq!(
            out(&["fold", "-w", "5"], "hello world test\n"),
            "hello\n worl\nd tes\nt\n"
        );
        assert_eq!(
            out(&["fold", "-sw", "10"], "hello world foo bar\n"),
            "hello \nworld foo \nbar\n"
        );
        assert_eq!(
            out(&["fold", "-w", "10"], "12345678901234567890\nabcdefghij\n"),
            "1234567890\n1234567890\nabcdefghij\n"
        );
        assert_eq!(
            out(&["fold", "-w", "4"], "hello world foo\n"),
            "hell\no wo\nrld \nfoo\n"
        );
        assert_eq!(out(&["fold", "-w", "4"], "a\tb\n"), "a\n\t\nb\n");
        assert_eq!(out(&["fold", "-s", "-w", "5"], "abc def\n"), "abc \ndef\n");
    }

    #[test]
    fn expand_and_unexpand() {
        assert_eq!(out(&["expand"], "a\tb\tc"), "a       b       c");
        assert_eq!(out(&["expand"], "\thello"), "        hello");
        assert_eq!(out(&["expand", "-t", "4"], "a\tb"), "a   b");
        assert_eq!(out(&["expand", "-t", "2,6"], "ab\tc\n"), "ab    c\n");
        assert_eq!(out(&["expand", "-i"], "\ta\tb\n"), "        a\tb\n");
        assert_eq!(out(&["unexpand"], "        hello"), "\thello");
        assert_eq!(
            out(&["unexpand"], "hello        world"),
            "hello        world"
        );
        assert_eq!(out(&["unexpand", "-a"], "hello   world"), "hello\tworld");
        assert_eq!(out(&["unexpand", "-t", "4"], "    hello"), "\thello");
        assert_eq!(out(&["unexpand", "-a"], "abcdefg h\n"), "abcdefg h\n");
        assert_eq!(out(&["unexpand", "-t", "2"], "  a  b\n"), "\ta\t b\n");
        assert_eq!(out(&["unexpand", "-t", "4"], "  a   b\n"), "  a\t  b\n");
        assert_eq!(out(&["unexpand", "-t", "2"], "ab  c\n"), "ab\tc\n");
    }
}
