//! `sort` and `uniq`.
//!
//! `sort` compares keys the way GNU does in the C locale: bytes for text,
//! decimal strings for `-n` (exact, any length), suffixes for `-h`,
//! `filevercmp` rules for `-V`; equal keys fall back to the whole line
//! unless `-s` or `-u`. The sort is stable, so `-u` keeps the first line of
//! each run of equals, as GNU does.

use std::cmp::Ordering;

use super::{flag, getopt, read_concat, records, usage, with_arg, Opt, Parsed};
use crate::limits::Abort;
use crate::utils::Ctx;

pub(super) const SORT_OPTS: &[Opt] = &[
    flag('b', "ignore-leading-blanks"),
    flag('d', "dictionary-order"),
    flag('f', "ignore-case"),
    flag('g', "general-numeric-sort"),
    flag('i', "ignore-nonprinting"),
    flag('M', "month-sort"),
    flag('h', "human-numeric-sort"),
    flag('n', "numeric-sort"),
    flag('R', "random-sort"),
    flag('r', "reverse"),
    flag('V', "version-sort"),
    flag('c', "check"),
    flag('C', ""),
    with_arg('k', "key"),
    flag('m', "merge"),
    with_arg('o', "output"),
    flag('s', "stable"),
    with_arg('t', "field-separator"),
    flag('u', "unique"),
    flag('z', "zero-terminated"),
    with_arg('S', "buffer-size"),
    with_arg('T', "temporary-directory"),
    with_arg('\u{1}', "parallel"),
    with_arg('\u{2}', "sort"),
];

/// How one key compares.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
enum Mode {
    #[default]
    Text,
    Numeric,
    General,
    Human,
    Month,
    Version,
    Random,
}

/// The ordering options of a key (or the global ones).
#[derive(Clone, Copy, Default, PartialEq, Eq)]
struct Order {
    mode: Mode,
    blank_start: bool,
    blank_end: bool,
    dictionary: bool,
    fold: bool,
    printable: bool,
    reverse: bool,
}

impl Order {
    /// Applies one option letter; false if it is not an ordering option.
    fn set(&mut self, letter: char) -> bool {
        match letter {
            'b' => (self.blank_start, self.blank_end) = (true, true),
            'd' => self.dictionary = true,
            'f' => self.fold = true,
            'i' => self.printable = true,
            'r' => self.reverse = true,
            'n' => self.mode = Mode::Numeric,
            'g' => self.mode = Mode::General,
            'h' => self.mode = Mode::Human,
            'M' => self.mode = Mode::Month,
            'V' => self.mode = Mode::Version,
            'R' => self.mode = Mode::Random,
            _ => return false,
        }
        true
    }
}

/// A `-k POS1[,POS2]` key: fields and characters are 1-based; an end
/// character of 0 means the end of the field; no end field means the line end.
#[derive(Clone, Copy)]
struct Key {
    start_field: usize,
    start_char: usize,
    end: Option<(usize, usize)>,
    order: Order,
}

/// Everything `sort` needs to compare two lines.
struct Sorter {
    keys: Vec<Key>,
    separator: Option<u8>,
    global: Order,
    /// No last-resort whole-line comparison (`-s`, `-u`).
    stable: bool,
    seed: u64,
}

pub(super) fn sort(ctx: &mut Ctx<'_>, argv: &[String]) -> Result<i32, Abort> {
    let parsed = match getopt(&argv[1..], SORT_OPTS) {
        Ok(p) => p,
        Err(message) => return usage(ctx, "sort", &message, 2),
    };
    let sorter = match build_sorter(&parsed, ctx.clock.now_ms()) {
        Ok(s) => s,
        Err(message) => {
            ctx.error("sort", &message)?;
            return Ok(2);
        }
    };
    let sep = if parsed.has('z') { 0 } else { b'\n' };
    let (data, failed) = read_sort_inputs(ctx, &parsed.operands)?;
    if failed {
        return Ok(2);
    }
    let mut lines = records(&data, sep);
    ctx.budget.charge_cpu(
        (lines.len() as u64 + 1) * (64 - (lines.len() as u64).leading_zeros()) as u64,
    )?;
    if parsed.has('c') || parsed.has('C') {
        return check(
            ctx,
            &sorter,
            &lines,
            parsed.has('u'),
            !parsed.has('C'),
            &parsed,
        );
    }
    lines.sort_by(|a, b| sorter.compare(a, b));
    if parsed.has('u') {
        lines.dedup_by(|b, a| sorter.compare_keys(a, b) == Ordering::Equal);
    }
    let mut out = Vec::with_capacity(data.len() + 1);
    for line in lines {
        out.extend_from_slice(line);
        out.push(sep);
    }
    match parsed.value('o') {
        Some(file) => write_output(ctx, file, &out),
        None => ctx.stdout.write(&out).map(|()| 0),
    }
}

/// Reads `sort`'s inputs; GNU words a failure `cannot read: NAME: error`.
fn read_sort_inputs(ctx: &mut Ctx<'_>, operands: &[String]) -> Result<(Vec<u8>, bool), Abort> {
    let (mut data, mut failed) = (Vec::new(), false);
    let stdin = ["-".to_string()];
    for operand in if operands.is_empty() {
        &stdin[..]
    } else {
        operands
    } {
        match super::read_operand(ctx, operand)? {
            Ok(bytes) => {
                data.extend_from_slice(&bytes);
                if !bytes.is_empty() && !bytes.ends_with(b"\n") && !bytes.ends_with(b"\0") {
                    data.push(b'\n');
                }
            }
            Err(error) => {
                let message = format!("cannot read: {operand}: {}", crate::utils::strerror(&error));
                ctx.error("sort", &message)?;
                failed = true;
            }
        }
    }
    Ok((data, failed))
}

/// `sort -o FILE`.
fn write_output(ctx: &mut Ctx<'_>, file: &str, out: &[u8]) -> Result<i32, Abort> {
    match super::save(ctx, file, out)? {
        Ok(()) => Ok(0),
        Err(error) => {
            let message = format!("open failed: {file}: {}", crate::utils::strerror(&error));
            ctx.error("sort", &message)?;
            Ok(2)
        }
    }
}

/// `sort -c`/`-C`: reports the first line out of order.
fn check(
    ctx: &mut Ctx<'_>,
    sorter: &Sorter,
    lines: &[&[u8]],
    strict: bool,
    loud: bool,
    parsed: &Parsed,
) -> Result<i32, Abort> {
    for (index, pair) in lines.windows(2).enumerate() {
        let order = sorter.compare(pair[0], pair[1]);
        let keys_equal = strict && sorter.compare_keys(pair[0], pair[1]) == Ordering::Equal;
        if order == Ordering::Greater || keys_equal {
            if loud {
                let name = parsed.operands.first().map_or("-", String::as_str);
                let line = String::from_utf8_lossy(pair[1]);
                let message = format!("{name}:{}: disorder: {line}", index + 2);
                ctx.error("sort", &message)?;
            }
            return Ok(1);
        }
    }
    Ok(0)
}

fn build_sorter(parsed: &Parsed, seed: u64) -> Result<Sorter, String> {
    let mut global = Order::default();
    for (key, _) in &parsed.opts {
        global.set(*key);
    }
    let separator = match parsed.value('t') {
        None => None,
        Some("\\0") => Some(0),
        Some("") => return Err("empty tab".to_string()),
        Some(t) if t.len() == 1 => Some(t.as_bytes()[0]),
        Some(t) => return Err(format!("multi-character tab '{t}'")),
    };
    let mut keys = Vec::new();
    for (key, spec) in &parsed.opts {
        if *key == 'k' {
            keys.push(parse_key(spec, global)?);
        }
    }
    if keys.is_empty() {
        keys.push(Key {
            start_field: 1,
            start_char: 1,
            end: None,
            order: global,
        });
    }
    Ok(Sorter {
        keys,
        separator,
        global,
        stable: parsed.has('s') || parsed.has('u'),
        seed,
    })
}

/// Parses `F[.C][opts][,F[.C][opts]]`; a key without options inherits the global ones.
fn parse_key(spec: &str, global: Order) -> Result<Key, String> {
    let invalid = || format!("invalid number at field start: invalid count at start of ‘{spec}’");
    let (start, end) = match spec.split_once(',') {
        Some((s, e)) => (s, Some(e)),
        None => (spec, None),
    };
    let mut order = Order::default();
    let (start_field, start_char, start_opts) = parse_position(start).ok_or_else(invalid)?;
    if start_field == 0 {
        return Err(format!(
            "field number is zero: invalid field specification ‘{spec}’"
        ));
    }
    if start_char == 0 {
        return Err(format!(
            "character offset is zero: invalid field specification ‘{spec}’"
        ));
    }
    let mut own = false;
    for letter in start_opts.chars() {
        own |= apply_key_option(&mut order, letter, true)?;
    }
    let end = match end {
        None => None,
        Some(text) => {
            let (field, ch, opts) = parse_position(text).ok_or_else(invalid)?;
            if field == 0 {
                return Err(format!(
                    "field number is zero: invalid field specification ‘{spec}’"
                ));
            }
            for letter in opts.chars() {
                own |= apply_key_option(&mut order, letter, false)?;
            }
            Some((field, if ch == usize::MAX { 0 } else { ch }))
        }
    };
    let order = if own { order } else { global };
    let start_char = if start_char == usize::MAX {
        1
    } else {
        start_char
    };
    Ok(Key {
        start_field,
        start_char,
        end,
        order,
    })
}

/// Applies an option letter written inside a key; `b` applies to the
/// position it follows.
fn apply_key_option(order: &mut Order, letter: char, at_start: bool) -> Result<bool, String> {
    match letter {
        'b' if at_start => order.blank_start = true,
        'b' => order.blank_end = true,
        _ if order.set(letter) => {}
        _ => {
            return Err(format!(
                "stray character in field spec: invalid field specification '{letter}'"
            ))
        }
    }
    Ok(true)
}

/// `F[.C]OPTS` → (F, C, OPTS); C is `usize::MAX` for "not given" in a
/// start position and 0 in an end position.
fn parse_position(text: &str) -> Option<(usize, usize, &str)> {
    let digits = |s: &str| s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let field_len = digits(text);
    let field = text[..field_len].parse().ok()?;
    let rest = &text[field_len..];
    match rest.strip_prefix('.') {
        Some(after) => {
            let char_len = digits(after);
            let ch = after[..char_len].parse().ok()?;
            Some((field, ch, &after[char_len..]))
        }
        None => Some((field, usize::MAX, rest)),
    }
}

fn is_blank(byte: u8) -> bool {
    byte == b' ' || byte == b'\t'
}

impl Sorter {
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        let by_keys = self.compare_keys(a, b);
        if by_keys != Ordering::Equal || self.stable {
            return by_keys;
        }
        let whole = a.cmp(b);
        if self.global.reverse {
            whole.reverse()
        } else {
            whole
        }
    }

    fn compare_keys(&self, a: &[u8], b: &[u8]) -> Ordering {
        for key in &self.keys {
            let (ka, kb) = (self.extract(a, key), self.extract(b, key));
            let order = compare_key(ka, kb, &key.order, self.seed);
            if order != Ordering::Equal {
                return if key.order.reverse {
                    order.reverse()
                } else {
                    order
                };
            }
        }
        Ordering::Equal
    }

    /// The bytes of `line` that `key` covers.
    fn extract<'l>(&self, line: &'l [u8], key: &Key) -> &'l [u8] {
        let mut start = self.field_start(line, key.start_field);
        if key.order.blank_start {
            while start < line.len() && is_blank(line[start]) {
                start += 1;
            }
        }
        start = (start + key.start_char - 1).min(line.len());
        let end = match key.end {
            None => line.len(),
            Some((field, 0)) => self.field_end(line, field),
            Some((field, ch)) => {
                let mut at = self.field_start(line, field);
                if key.order.blank_end {
                    while at < line.len() && is_blank(line[at]) {
                        at += 1;
                    }
                }
                (at + ch).min(line.len())
            }
        };
        if end <= start {
            &line[start..start]
        } else {
            &line[start..end]
        }
    }

    /// Where field `field` (1-based) begins, blanks included when no `-t`.
    fn field_start(&self, line: &[u8], field: usize) -> usize {
        let mut at = 0;
        for _ in 1..field {
            at = self.skip_field(line, at);
            if let Some(sep) = self.separator {
                if at < line.len() && line[at] == sep {
                    at += 1;
                }
            }
        }
        at
    }

    fn field_end(&self, line: &[u8], field: usize) -> usize {
        let start = self.field_start(line, field);
        self.skip_field(line, start)
    }

    /// From `at`, the end of the field there (not past its separator).
    fn skip_field(&self, line: &[u8], mut at: usize) -> usize {
        match self.separator {
            Some(sep) => {
                while at < line.len() && line[at] != sep {
                    at += 1;
                }
            }
            None => {
                while at < line.len() && is_blank(line[at]) {
                    at += 1;
                }
                while at < line.len() && !is_blank(line[at]) {
                    at += 1;
                }
            }
        }
        at
    }
}

fn compare_key(a: &[u8], b: &[u8], order: &Order, seed: u64) -> Ordering {
    match order.mode {
        Mode::Text => compare_text(a, b, order),
        Mode::Numeric => compare_numeric(a, b),
        Mode::General => compare_general(a, b),
        Mode::Human => compare_human(a, b),
        Mode::Month => month(a).cmp(&month(b)),
        Mode::Version => compare_version(a, b),
        Mode::Random => hash(a, seed).cmp(&hash(b, seed)).then_with(|| a.cmp(b)),
    }
}

/// Text order with `-d`, `-i` (dropping bytes) and `-f` (upper-casing).
fn compare_text(a: &[u8], b: &[u8], order: &Order) -> Ordering {
    if !(order.dictionary || order.printable || order.fold) {
        return a.cmp(b);
    }
    let keep = |byte: &&u8| {
        (!order.dictionary || byte.is_ascii_alphanumeric() || is_blank(**byte))
            && (!order.printable || (0x20..0x7f).contains(*byte))
    };
    let fold = |byte: &u8| {
        if order.fold {
            byte.to_ascii_uppercase()
        } else {
            *byte
        }
    };
    let left = a.iter().filter(keep).map(fold);
    let right = b.iter().filter(keep).map(fold);
    left.cmp(right)
}

/// A number's parts: sign, integer digits (no leading zeros), fraction
/// digits (no trailing zeros), and the bytes after it.
struct Decimal<'a> {
    negative: bool,
    int: &'a [u8],
    frac: &'a [u8],
    rest: &'a [u8],
}

fn decimal(text: &[u8]) -> Decimal<'_> {
    let mut at = 0;
    while at < text.len() && is_blank(text[at]) {
        at += 1;
    }
    let negative = text.get(at) == Some(&b'-');
    if negative {
        at += 1;
    }
    let run = |from: usize| {
        from + text[from..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count()
    };
    let int_end = run(at);
    let mut int = &text[at..int_end];
    while int.first() == Some(&b'0') {
        int = &int[1..];
    }
    let (mut frac, end) = if text.get(int_end) == Some(&b'.') {
        let frac_end = run(int_end + 1);
        (&text[int_end + 1..frac_end], frac_end)
    } else {
        (&text[int_end..int_end], int_end)
    };
    while frac.last() == Some(&b'0') {
        frac = &frac[..frac.len() - 1];
    }
    let zero = int.is_empty() && frac.is_empty();
    Decimal {
        negative: negative && !zero,
        int,
        frac,
        rest: &text[end..],
    }
}

fn compare_magnitude(a: &Decimal<'_>, b: &Decimal<'_>) -> Ordering {
    a.int
        .len()
        .cmp(&b.int.len())
        .then_with(|| a.int.cmp(b.int))
        .then_with(|| a.frac.cmp(b.frac))
}

fn compare_decimal(a: &Decimal<'_>, b: &Decimal<'_>) -> Ordering {
    match (a.negative, b.negative) {
        (false, true) => Ordering::Greater,
        (true, false) => Ordering::Less,
        (false, false) => compare_magnitude(a, b),
        (true, true) => compare_magnitude(b, a),
    }
}

fn compare_numeric(a: &[u8], b: &[u8]) -> Ordering {
    compare_decimal(&decimal(a), &decimal(b))
}

/// `-h`: sign first, then the SI suffix, then the number.
fn compare_human(a: &[u8], b: &[u8]) -> Ordering {
    let (da, db) = (decimal(a), decimal(b));
    let power = |d: &Decimal<'_>| {
        let suffix = d.rest.first().copied().unwrap_or(b' ');
        b"KMGTPEZYRQ"
            .iter()
            .position(|s| *s == suffix.to_ascii_uppercase())
            .map_or(0, |p| p + 1)
    };
    let sign = |d: &Decimal<'_>| {
        if d.negative {
            -1
        } else if d.int.is_empty() && d.frac.is_empty() {
            0
        } else {
            1
        }
    };
    sign(&da).cmp(&sign(&db)).then_with(|| {
        let by_power = power(&da).cmp(&power(&db));
        let order = by_power.then_with(|| compare_magnitude(&da, &db));
        if da.negative {
            order.reverse()
        } else {
            order
        }
    })
}

/// `-g`: floating point; what does not parse sorts first.
fn compare_general(a: &[u8], b: &[u8]) -> Ordering {
    match (leading_float(a), leading_float(b)) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Less,
        (Some(_), None) => Ordering::Greater,
        (Some(x), Some(y)) => x.partial_cmp(&y).unwrap_or(Ordering::Equal),
    }
}

/// The longest prefix of `text` (after blanks) that is a C `strtod` number,
/// hexadecimal integers included.
fn leading_float(text: &[u8]) -> Option<f64> {
    let text = String::from_utf8_lossy(text);
    let text = text.trim_start();
    let (sign, digits) = match text.strip_prefix('-') {
        Some(rest) => (-1.0, rest),
        None => (1.0, text.strip_prefix('+').unwrap_or(text)),
    };
    if let Some(hex) = digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        let end = hex
            .find(|c: char| !c.is_ascii_hexdigit())
            .unwrap_or(hex.len());
        if end > 0 {
            return u64::from_str_radix(&hex[..end], 16)
                .ok()
                .map(|v| sign * v as f64);
        }
    }
    (1..=text.len())
        .rev()
        .filter(|end| text.is_char_boundary(*end))
        .find_map(|end| text[..end].parse::<f64>().ok())
}

fn month(text: &[u8]) -> usize {
    let trimmed: Vec<u8> = text
        .iter()
        .skip_while(|b| is_blank(**b))
        .take(3)
        .map(u8::to_ascii_uppercase)
        .collect();
    const MONTHS: [&[u8]; 12] = [
        b"JAN", b"FEB", b"MAR", b"APR", b"MAY", b"JUN", b"JUL", b"AUG", b"SEP", b"OCT", b"NOV",
        b"DEC",
    ];
    MONTHS
        .iter()
        .position(|m| *m == trimmed.as_slice())
        .map_or(0, |p| p + 1)
}

fn hash(text: &[u8], seed: u64) -> u64 {
    text.iter().fold(seed ^ 0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// GNU `filevercmp`: compare without the file suffixes first, then whole.
pub(super) fn compare_version(a: &[u8], b: &[u8]) -> Ordering {
    if a == b {
        return Ordering::Equal;
    }
    let (pa, pb) = (&a[..suffix_start(a)], &b[..suffix_start(b)]);
    let order = if pa == pb {
        Ordering::Equal
    } else {
        verrevcmp(pa, pb)
    };
    order.then_with(|| verrevcmp(a, b)).then_with(|| a.cmp(b))
}

/// Where a trailing run of `.ext` suffixes (`(\.[A-Za-z~][A-Za-z0-9~]*)*`) starts.
fn suffix_start(text: &[u8]) -> usize {
    let mut start = text.len();
    let mut at = text.len();
    while at > 0 {
        let c = text[at - 1];
        if c.is_ascii_alphanumeric() || c == b'~' {
            at -= 1;
            continue;
        }
        let first = text.get(at).copied();
        if c == b'.'
            && at < text.len()
            && first.is_some_and(|f| f.is_ascii_alphabetic() || f == b'~')
        {
            at -= 1;
            start = at;
            continue;
        }
        break;
    }
    start
}

fn version_order(c: Option<u8>) -> i32 {
    match c {
        None => 0,
        Some(c) if c.is_ascii_digit() => 0,
        Some(c) if c.is_ascii_alphabetic() => i32::from(c),
        Some(b'~') => -1,
        Some(c) => i32::from(c) + 256,
    }
}

fn verrevcmp(a: &[u8], b: &[u8]) -> Ordering {
    let (mut i, mut j) = (0, 0);
    let digit = |s: &[u8], k: usize| s.get(k).is_some_and(u8::is_ascii_digit);
    while i < a.len() || j < b.len() {
        while (i < a.len() && !digit(a, i)) || (j < b.len() && !digit(b, j)) {
            let (ac, bc) = (
                version_order(a.get(i).copied()),
                version_order(b.get(j).copied()),
            );
            if ac != bc {
                return ac.cmp(&bc);
            }
            i += 1;
            j += 1;
        }
        while a.get(i) == Some(&b'0') {
            i += 1;
        }
        while b.get(j) == Some(&b'0') {
            j += 1;
        }
        let mut first_diff = Ordering::Equal;
        while digit(a, i) && digit(b, j) {
            if first_diff == Ordering::Equal {
                first_diff = a[i].cmp(&b[j]);
            }
            i += 1;
            j += 1;
        }
        if digit(a, i) {
            return Ordering::Greater;
        }
        if digit(b, j) {
            return Ordering::Less;
        }
        if first_diff != Ordering::Equal {
            return first_diff;
        }
    }
    Ordering::Equal
}

pub(super) const UNIQ_OPTS: &[Opt] = &[
    flag('c', "count"),
    flag('d', "repeated"),
    flag('D', "all-repeated"),
    flag('u', "unique"),
    flag('i', "ignore-case"),
    with_arg('f', "skip-fields"),
    with_arg('s', "skip-chars"),
    with_arg('w', "check-chars"),
    flag('z', "zero-terminated"),
];

/// What part of a line `uniq` compares.
struct UniqKey {
    fields: usize,
    chars: usize,
    width: Option<usize>,
    fold: bool,
}

impl UniqKey {
    fn of<'l>(&self, line: &'l [u8]) -> &'l [u8] {
        let mut at = 0;
        for _ in 0..self.fields {
            while at < line.len() && is_blank(line[at]) {
                at += 1;
            }
            while at < line.len() && !is_blank(line[at]) {
                at += 1;
            }
        }
        let start = (at + self.chars).min(line.len());
        let end = self
            .width
            .map_or(line.len(), |w| (start + w).min(line.len()));
        &line[start..end]
    }

    fn same(&self, a: &[u8], b: &[u8]) -> bool {
        let (ka, kb) = (self.of(a), self.of(b));
        if self.fold {
            ka.eq_ignore_ascii_case(kb)
        } else {
            ka == kb
        }
    }
}

pub(super) fn uniq(ctx: &mut Ctx<'_>, argv: &[String]) -> Result<i32, Abort> {
    let parsed = match getopt(&argv[1..], UNIQ_OPTS) {
        Ok(p) => p,
        Err(message) => return usage(ctx, "uniq", &message, 1),
    };
    let mut numbers = [0usize; 3];
    let names = ["fields to skip", "bytes to skip", "bytes to compare"];
    for (slot, key) in ['f', 's', 'w'].into_iter().enumerate() {
        match super::number_option(&parsed, key, 0) {
            Ok(n) => numbers[slot] = n,
            Err(text) => {
                ctx.error(
                    "uniq",
                    &format!("{text}: invalid number of {}", names[slot]),
                )?;
                return Ok(1);
            }
        }
    }
    let [fields, chars, width] = numbers;
    let width = parsed.has('w').then_some(width);
    let key = UniqKey {
        fields,
        chars,
        width,
        fold: parsed.has('i'),
    };
    if parsed.operands.len() > 2 {
        let extra = &parsed.operands[2];
        return usage(ctx, "uniq", &format!("extra operand '{extra}'"), 1);
    }
    let input = parsed
        .operands
        .first()
        .cloned()
        .into_iter()
        .collect::<Vec<_>>();
    let (data, failed) = read_concat(ctx, "uniq", &input)?;
    if failed {
        return Ok(1);
    }
    let sep = if parsed.has('z') { 0 } else { b'\n' };
    let out = uniq_output(&records(&data, sep), &key, &parsed, sep);
    let output = parsed.operands.get(1).map(String::as_str);
    super::save_or_print(ctx, "uniq", output, &out)
}

/// Groups adjacent equal lines and prints them per the options.
fn uniq_output(lines: &[&[u8]], key: &UniqKey, parsed: &Parsed, sep: u8) -> Vec<u8> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < lines.len() {
        let mut end = start + 1;
        while end < lines.len() && key.same(lines[start], lines[end]) {
            end += 1;
        }
        let count = end - start;
        let wanted = if parsed.has('d') || parsed.has('D') {
            count > 1
        } else {
            !parsed.has('u') || count == 1
        };
        let wanted = wanted && !(parsed.has('u') && (parsed.has('d') || parsed.has('D')));
        if wanted {
            let shown = if parsed.has('D') {
                &lines[start..end]
            } else {
                &lines[start..=start]
            };
            for line in shown {
                if parsed.has('c') {
                    out.extend_from_slice(format!("{count:>7} ").as_bytes());
                }
                out.extend_from_slice(line);
                out.push(sep);
            }
        }
        start = end;
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::utils::testing::{db, files, run};

    fn sort(args: &[&str], input: &str) -> String {
        let mut argv = vec!["sort"];
        argv.extend_from_slice(args);
        run(&db(), &argv, input).stdout
    }

    #[test]
    fn sort_plain_reverse_unique() {
        assert_eq!(sort(&[], "c\na\nb"), "a\nb\nc\n");
        assert_eq!(sort(&[], "b\n\na\n\nc\n"), "\n\na\nb\nc\n");
        assert_eq!(
            sort(&["-r"], "apple\ncherry\nbanana\n"),
            "cherry\nbanana\napple\n"
        );
        assert_eq!(sort(&["-ru"], "a\nc\nb\nc\na\n"), "c\nb\na\n");
        assert_eq!(sort(&["-fu"], "b\nB\na\nA\n"), "a\nb\n");
        assert_eq!(sort(&["-f"], "b\nB\na\nA\n"), "A\na\nB\nb\n");
        assert_eq!(sort(&["-b"], "   c\n  b\na\n"), "a\n  b\n   c\n");
    }

    #[test]
    fn sort_numeric_kinds() {
        assert_eq!(sort(&["-n"], "10\n2\n-3\n1.5\nx\n"), "-3\nx\n1.5\n2\n10\n");
        assert_eq!(sort(&["-nr"], "1\n20\n2\n10\n"), "20\n10\n2\n1\n");
        assert_eq!(sort(&["-nu"], "3\n1\n3\n5\n1\n"), "1\n3\n5\n");
        assert_eq!(
            sort(&["-h"], "2M\n1K\n500\n1G\n100K\n"),
            "500\n1K\n100K\n2M\n1G\n"
        );
        assert_eq!(sort(&["-h"], "2K\n1M\n-1K\n10\n"), "-1K\n10\n2K\n1M\n");
        assert_eq!(sort(&["-g"], "1.5\n-2\n1e3\nabc\n"), "abc\n-2\n1.5\n1e3\n");
        assert_eq!(sort(&["-g"], "0x10\n9\n1e3\n"), "9\n0x10\n1e3\n");
        assert_eq!(
            sort(&["-V"], "a\n1.0.10\n1.0.2\n1.0\n1.0a\n"),
            "1.0\n1.0a\n1.0.2\n1.0.10\na\n"
        );
        assert_eq!(sort(&["-M"], "Mar\nJan\nfeb\n"), "Jan\nfeb\nMar\n");
    }

    #[test]
    fn sort_keys_and_separators() {
        assert_eq!(
            sort(&["-t:", "-k2", "-rn"], "a:1\nb:3\nc:2\n"),
            "b:3\nc:2\na:1\n"
        );
        assert_eq!(sort(&["-t:", "-k2"], "a:3\nb:1\nc:2\n"), "b:1\nc:2\na:3\n");
        assert_eq!(
            sort(&["-k", "2", "-n"], "x 10\ny 2\nz 5\n"),
            "y 2\nz 5\nx 10\n"
        );
        assert_eq!(sort(&["-k2,2n"], "a 2\nb 10\nc 1\n"), "c 1\na 2\nb 10\n");
        assert_eq!(sort(&["-k1,1", "-u"], "a c\na b\nb a\n"), "a c\nb a\n");
        assert_eq!(sort(&["-k1.2,1.2"], "ab\nba\nzc\n"), "ba\nab\nzc\n");
        assert_eq!(
            sort(&["-k2,2", "-k1,1r"], "a x\nb x\nc a\n"),
            "c a\nb x\na x\n"
        );
        assert_eq!(sort(&["-s", "-k1,1"], "b 2\na 9\nb 1\n"), "a 9\nb 2\nb 1\n");
        assert_eq!(
            sort(&["-t", ",", "-k3,3n"], "a,b,3\nc,d,1\n"),
            "c,d,1\na,b,3\n"
        );
    }

    #[test]
    fn sort_check_output_file_and_errors() {
        let db = db();
        files(&db, &[("/in", "b\na\n")]);
        let checked = run(&db, &["sort", "-c"], "1\n3\n2\n");
        assert_eq!(
            (checked.status, checked.stderr.as_str()),
            (1, "sort: -:3: disorder: 2\n")
        );
        assert_eq!(run(&db, &["sort", "-c"], "1\n2\n").status, 0);
        assert_eq!(run(&db, &["sort", "-C"], "2\n1\n").stderr, "");
        run(&db, &["sort", "-o", "/in", "/in"], "");
        assert_eq!(run(&db, &["cat", "/in"], "").stdout, "a\nb\n");
        let missing = run(&db, &["sort", "/nope"], "");
        assert_eq!(
            missing.stderr,
            "sort: cannot read: /nope: No such file or directory\n"
        );
        assert_eq!(missing.status, 2);
        assert_eq!(run(&db, &["sort", "-k"], "").status, 2);
        let zero = run(&db, &["sort", "-k", "1,0"], "");
        assert_eq!(
            zero.stderr,
            "sort: field number is zero: invalid field specification ‘1,0’\n"
        );
        let offset = run(&db, &["sort", "-k", "1.0"], "");
        assert_eq!(
            offset.stderr,
            "sort: character offset is zero: invalid field specification ‘1.0’\n"
        );
    }

    #[test]
    fn uniq_variants() {
        let u = |args: &[&str], input: &str| {
            let mut argv = vec!["uniq"];
            argv.extend_from_slice(args);
            run(&db(), &argv, input).stdout
        };
        assert_eq!(u(&[], "a\na\nb\na\n"), "a\nb\na\n");
        assert_eq!(u(&["-c"], "a\na\nb\nb\nb\n"), "      2 a\n      3 b\n");
        assert_eq!(u(&["-d"], "a\na\nb\nc\nc\n"), "a\nc\n");
        assert_eq!(u(&["-cd"], "a\na\nb\nc\nc\nc\n"), "      2 a\n      3 c\n");
        assert_eq!(u(&["-u"], "a\na\nb\nc\n"), "b\nc\n");
        assert_eq!(u(&["-D"], "a\na\nb\n"), "a\na\n");
        assert_eq!(u(&["-i"], "A\na\nb\n"), "A\nb\n");
        assert_eq!(u(&["-f", "1"], "1 x\n2 x\n3 y\n"), "1 x\n3 y\n");
        assert_eq!(u(&["-s", "1"], "ax\nbx\ncy\n"), "ax\ncy\n");
        assert_eq!(u(&["-w", "1"], "ab\nac\nbc\n"), "ab\nbc\n");
    }

    #[test]
    fn uniq_output_file_operand() {
        let db = db();
        files(&db, &[("/in", "x\nx\ny\n")]);
        assert_eq!(run(&db, &["uniq", "/in", "/out"], "").stdout, "");
        assert_eq!(run(&db, &["cat", "/out"], "").stdout, "x\ny\n");
        assert_eq!(run(&db, &["uniq", "/nope"], "").status, 1);
    }
}
