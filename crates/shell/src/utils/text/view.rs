//! Utilities that show (parts of) files as they are: `cat`, `head`,
//! `tail`, `tac`, `rev`, `wc`, `tee`, `strings`.

use super::{
    flag, getopt, open_all_with, parse_count, read_all, read_all_with, usage, with_arg, Opt,
};
use crate::limits::{Abort, LimitKind};
use crate::utils::Ctx;

pub(super) const CAT_OPTS: &[Opt] = &[
    flag('A', "show-all"),
    flag('b', "number-nonblank"),
    flag('e', ""),
    flag('E', "show-ends"),
    flag('n', "number"),
    flag('s', "squeeze-blank"),
    flag('t', ""),
    flag('T', "show-tabs"),
    flag('u', ""),
    flag('v', "show-nonprinting"),
];

/// How `cat` decorates lines.
#[derive(Default)]
struct CatStyle {
    number: bool,
    nonblank: bool,
    squeeze: bool,
    ends: bool,
    tabs: bool,
    nonprinting: bool,
}

pub(super) fn cat(ctx: &mut Ctx<'_>, argv: &[String]) -> Result<i32, Abort> {
    let parsed = match getopt(&argv[1..], CAT_OPTS) {
        Ok(p) => p,
        Err(message) => return usage(ctx, "cat", &message, 1),
    };
    let mut style = CatStyle::default();
    for (key, _) in &parsed.opts {
        match key {
            'A' => (style.nonprinting, style.ends, style.tabs) = (true, true, true),
            'b' => style.nonblank = true,
            'e' => (style.nonprinting, style.ends) = (true, true),
            'E' => style.ends = true,
            'n' => style.number = true,
            's' => style.squeeze = true,
            't' => (style.nonprinting, style.tabs) = (true, true),
            'T' => style.tabs = true,
            'v' => style.nonprinting = true,
            _ => {}
        }
    }
    let describe = |operand: &str, error: &str| format!("{operand}: {error}");
    let (inputs, failed) = open_all_with(ctx, "cat", &parsed.operands, describe)?;
    let complete = inputs.iter().all(|(_, content)| content.complete);
    let data: Vec<u8> = inputs.into_iter().flat_map(|(_, c)| c.data).collect();
    let plain = !(style.number
        || style.nonblank
        || style.squeeze
        || style.ends
        || style.tabs
        || style.nonprinting);
    if plain {
        ctx.stdout.write(&data)?;
    } else {
        ctx.stdout.write(&decorate(&data, &style))?;
    }
    // An input that goes on: a full output pipe has stopped `cat` above
    // (as SIGPIPE would); otherwise it would copy more than there is.
    if !complete {
        return Err(Abort::Limit(LimitKind::PipeBytes));
    }
    Ok(i32::from(failed))
}

/// Applies `cat`'s numbering, squeezing and visible-character options.
fn decorate(data: &[u8], style: &CatStyle) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() + data.len() / 4);
    let mut number = 0;
    let mut previous_blank = false;
    for line in data.split_inclusive(|b| *b == b'\n') {
        let (body, newline) = match line.strip_suffix(b"\n") {
            Some(body) => (body, true),
            None => (line, false),
        };
        let blank = body.is_empty() && newline;
        if style.squeeze && blank && previous_blank {
            continue;
        }
        previous_blank = blank;
        if (style.nonblank && !blank) || (style.number && !style.nonblank) {
            number += 1;
            out.extend_from_slice(format!("{number:>6}\t").as_bytes());
        }
        for &byte in body {
            push_visible(&mut out, byte, style);
        }
        if newline {
            if style.ends {
                out.push(b'$');
            }
            out.push(b'\n');
        }
    }
    out
}

/// Pushes `byte` as `cat -v`/`-T` shows it.
fn push_visible(out: &mut Vec<u8>, byte: u8, style: &CatStyle) {
    if byte == b'\t' {
        out.extend_from_slice(if style.tabs { b"^I" } else { b"\t" });
        return;
    }
    if !style.nonprinting {
        out.push(byte);
        return;
    }
    let low = if byte >= 128 {
        out.extend_from_slice(b"M-");
        byte - 128
    } else {
        byte
    };
    match low {
        0..=31 => out.extend_from_slice(&[b'^', low + 64]),
        127 => out.extend_from_slice(b"^?"),
        _ => out.push(low),
    }
}

pub(super) const HEAD_TAIL_OPTS: &[Opt] = &[
    with_arg('n', "lines"),
    with_arg('c', "bytes"),
    flag('q', "quiet"),
    flag('q', "silent"),
    flag('v', "verbose"),
    flag('z', "zero-terminated"),
    flag('f', "follow"),
    flag('F', ""),
    with_arg('s', "sleep-interval"),
    with_arg('\u{1}', "pid"),
    flag('\u{2}', "retry"),
];

/// What `head`/`tail` select: counted in lines (records) or bytes; `from_end`
/// is `head -n -N` (all but the last N) or `tail -n N` (the last N).
#[derive(Clone, Copy)]
struct Span {
    count: u64,
    bytes: bool,
    /// `head -n -N` / `tail -n +N`: the other end of the input.
    flipped: bool,
}

/// Rewrites the obsolete `head -5` / `tail -5` / `tail +5` forms.
pub(super) fn obsolete_count(args: &[String], allow_plus: bool) -> Vec<String> {
    let mut args = args.to_vec();
    if let Some(first) = args.first() {
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        // `get`, not slicing: an operand may start with a multi-byte character.
        let rest = first.get(1..).unwrap_or_default();
        if (first.starts_with('-') || (allow_plus && first.starts_with('+'))) && digits(rest) {
            let value = if first.starts_with('+') {
                first.clone()
            } else {
                rest.to_string()
            };
            args.splice(0..1, ["-n".to_string(), value]);
        }
    }
    args
}

/// Parses the `-n`/`-c` value: `sign` is the leading `-` or `+` if any.
fn parse_span(
    ctx: &mut Ctx<'_>,
    util: &str,
    parsed: &super::Parsed,
) -> Result<Result<Span, i32>, Abort> {
    let chosen = parsed
        .opts
        .iter()
        .rev()
        .find(|(k, _)| *k == 'n' || *k == 'c');
    let Some((key, text)) = chosen else {
        return Ok(Ok(Span {
            count: 10,
            bytes: false,
            flipped: false,
        }));
    };
    let bytes = *key == 'c';
    let (flip_sign, rest) = if util == "head" {
        ('-', text.as_str())
    } else {
        ('+', text.as_str())
    };
    let flipped = rest.starts_with(flip_sign);
    let digits = rest.trim_start_matches(['-', '+']);
    match parse_count(digits) {
        Some(count) => Ok(Ok(Span {
            count,
            bytes,
            flipped,
        })),
        None => {
            let what = if bytes { "bytes" } else { "lines" };
            ctx.error(util, &format!("invalid number of {what}: ‘{text}’"))?;
            Ok(Err(1))
        }
    }
}

/// The piece of `data` that `head` shows.
fn head_part(data: &[u8], span: Span, sep: u8) -> &[u8] {
    let count = usize::try_from(span.count).unwrap_or(usize::MAX);
    let end = match (span.bytes, span.flipped) {
        (true, false) => count.min(data.len()),
        (true, true) => data.len().saturating_sub(count),
        (false, false) => nth_record_end(data, count, sep),
        (false, true) => {
            let total = data.split_inclusive(|b| *b == sep).count();
            nth_record_end(data, total.saturating_sub(count), sep)
        }
    };
    &data[..end]
}

/// The piece of `data` that `tail` shows.
fn tail_part(data: &[u8], span: Span, sep: u8) -> &[u8] {
    let count = usize::try_from(span.count).unwrap_or(usize::MAX);
    let start = match (span.bytes, span.flipped) {
        (true, false) => data.len().saturating_sub(count),
        (true, true) => count.saturating_sub(1).min(data.len()),
        (false, true) => nth_record_end(data, count.saturating_sub(1), sep),
        (false, false) => {
            let total = data.split_inclusive(|b| *b == sep).count();
            nth_record_end(data, total.saturating_sub(count), sep)
        }
    };
    &data[start..]
}

/// The offset just past the first `n` records.
fn nth_record_end(data: &[u8], n: usize, sep: u8) -> usize {
    data.split_inclusive(|b| *b == sep)
        .take(n)
        .map(<[u8]>::len)
        .sum()
}

pub(super) fn head(ctx: &mut Ctx<'_>, argv: &[String]) -> Result<i32, Abort> {
    head_or_tail(ctx, argv, "head")
}

pub(super) fn tail(ctx: &mut Ctx<'_>, argv: &[String]) -> Result<i32, Abort> {
    head_or_tail(ctx, argv, "tail")
}

/// `head` and `tail` share options, headers and error wording; only the
/// part they keep differs. `tail -f` does not follow (nothing can grow
/// while the command runs): it prints what is there.
fn head_or_tail(ctx: &mut Ctx<'_>, argv: &[String], util: &str) -> Result<i32, Abort> {
    let args = obsolete_count(&argv[1..], util == "tail");
    let parsed = match getopt(&args, HEAD_TAIL_OPTS) {
        Ok(p) => p,
        Err(message) => return usage(ctx, util, &message, 1),
    };
    let span = match parse_span(ctx, util, &parsed)? {
        Ok(span) => span,
        Err(status) => return Ok(status),
    };
    let sep = if parsed.has('z') { 0 } else { b'\n' };
    let describe =
        |operand: &str, error: &str| format!("cannot open '{operand}' for reading: {error}");
    let (inputs, failed) = open_all_with(ctx, util, &parsed.operands, describe)?;
    let headers = parsed.has('v') || (parsed.operands.len() > 1 && !parsed.has('q'));
    for (index, (name, content)) in inputs.iter().enumerate() {
        if headers {
            let name = if name == "-" { "standard input" } else { name };
            let gap = if index > 0 { "\n" } else { "" };
            ctx.stdout.write_str(&format!("{gap}==> {name} <==\n"))?;
        }
        let data = &content.data;
        let part = if util == "head" {
            head_part(data, span, sep)
        } else {
            tail_part(data, span, sep)
        };
        // Of an input that goes on (a full pipe, /dev/zero), `head` needs
        // only its start; `tail`, and `head` beyond what is there, would
        // answer from a prefix.
        let enough = util == "head" && head_has_enough(data, part, span, sep);
        if !content.complete && !enough {
            return Err(Abort::Limit(LimitKind::PipeBytes));
        }
        ctx.stdout.write(part)?;
    }
    Ok(i32::from(failed))
}

/// Whether `part`, what `head` keeps of `data`, is all it asked for (so
/// what follows `data` does not matter).
fn head_has_enough(data: &[u8], part: &[u8], span: Span, sep: u8) -> bool {
    let count = usize::try_from(span.count).unwrap_or(usize::MAX);
    match (span.bytes, span.flipped) {
        (_, true) => false,
        (true, false) => count <= data.len(),
        (false, false) => part.iter().filter(|&&b| b == sep).count() >= count,
    }
}

pub(super) fn tac(ctx: &mut Ctx<'_>, argv: &[String]) -> Result<i32, Abort> {
    let opts = [with_arg('s', "separator"), flag('b', "before")];
    let parsed = match getopt(&argv[1..], &opts) {
        Ok(p) => p,
        Err(message) => return usage(ctx, "tac", &message, 1),
    };
    let sep = parsed
        .value('s')
        .and_then(|s| s.bytes().next())
        .unwrap_or(b'\n');
    let describe =
        |operand: &str, error: &str| format!("failed to open '{operand}' for reading: {error}");
    let (inputs, failed) = read_all_with(ctx, "tac", &parsed.operands, describe)?;
    for (_, data) in &inputs {
        let mut out = Vec::with_capacity(data.len());
        for record in data.split_inclusive(|b| *b == sep).rev() {
            out.extend_from_slice(record);
        }
        ctx.stdout.write(&out)?;
    }
    Ok(i32::from(failed))
}

pub(super) fn rev(ctx: &mut Ctx<'_>, argv: &[String]) -> Result<i32, Abort> {
    let parsed = match getopt(&argv[1..], &[]) {
        Ok(p) => p,
        Err(message) => return usage(ctx, "rev", &message, 1),
    };
    let describe = |operand: &str, error: &str| format!("cannot open {operand}: {error}");
    let (inputs, failed) = read_all_with(ctx, "rev", &parsed.operands, describe)?;
    for (_, data) in &inputs {
        let mut out = Vec::with_capacity(data.len());
        for line in data.split_inclusive(|b| *b == b'\n') {
            let (body, newline) = match line.strip_suffix(b"\n") {
                Some(body) => (body, "\n"),
                None => (line, ""),
            };
            let reversed: String = String::from_utf8_lossy(body).chars().rev().collect();
            out.extend_from_slice(reversed.as_bytes());
            out.extend_from_slice(newline.as_bytes());
        }
        ctx.stdout.write(&out)?;
    }
    Ok(i32::from(failed))
}

pub(super) const WC_OPTS: &[Opt] = &[
    flag('l', "lines"),
    flag('w', "words"),
    flag('m', "chars"),
    flag('c', "bytes"),
    flag('L', "max-line-length"),
];

/// The counts of one input, in `wc`'s output order.
#[derive(Default, Clone, Copy)]
struct Counts([u64; 5]);

impl Counts {
    fn of(data: &[u8]) -> Counts {
        let mut lines = 0;
        let mut words = 0;
        let mut chars = 0;
        let mut longest = 0;
        let mut width = 0;
        let mut in_word = false;
        for &byte in data {
            let space = matches!(byte, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c);
            if !space && !in_word {
                words += 1;
            }
            in_word = !space;
            if byte & 0xC0 != 0x80 {
                chars += 1;
            }
            match byte {
                b'\n' => {
                    lines += 1;
                    longest = longest.max(width);
                    width = 0;
                }
                b'\t' => width = (width / 8 + 1) * 8,
                b'\r' | 0x0c => width = 0,
                _ if byte & 0xC0 != 0x80 && byte >= 0x20 && byte != 0x7f => width += 1,
                _ => {}
            }
        }
        Counts([lines, words, chars, data.len() as u64, longest.max(width)])
    }

    fn add(&mut self, other: &Counts) {
        for (i, value) in other.0.iter().enumerate() {
            if i == 4 {
                self.0[4] = self.0[4].max(*value);
            } else {
                self.0[i] += value;
            }
        }
    }
}

pub(super) fn wc(ctx: &mut Ctx<'_>, argv: &[String]) -> Result<i32, Abort> {
    let parsed = match getopt(&argv[1..], WC_OPTS) {
        Ok(p) => p,
        Err(message) => return usage(ctx, "wc", &message, 1),
    };
    let mut shown: Vec<usize> = "lwmcL"
        .chars()
        .enumerate()
        .filter(|(_, key)| parsed.has(*key))
        .map(|(i, _)| i)
        .collect();
    if shown.is_empty() {
        shown = vec![0, 1, 3];
    }
    let (inputs, failed) = read_all(ctx, "wc", &parsed.operands)?;
    let counts: Vec<Counts> = inputs.iter().map(|(_, data)| Counts::of(data)).collect();
    let mut total = Counts::default();
    counts.iter().for_each(|c| total.add(c));
    let width = wc_width(&inputs, shown.len(), parsed.operands.len());
    let mut out = String::new();
    let mut row = |counts: &Counts, name: &str| {
        let cells: Vec<String> = shown
            .iter()
            .map(|i| format!("{:>width$}", counts.0[*i]))
            .collect();
        out.push_str(&cells.join(" "));
        if !name.is_empty() {
            out.push(' ');
            out.push_str(name);
        }
        out.push('\n');
    };
    for ((name, _), counts) in inputs.iter().zip(&counts) {
        let shown_name = if parsed.operands.is_empty() {
            ""
        } else {
            name.as_str()
        };
        row(counts, shown_name);
    }
    if parsed.operands.len() > 1 {
        row(&total, "total");
    }
    ctx.stdout.write_str(&out)?;
    Ok(i32::from(failed))
}

/// GNU's column width: one number alone is unpadded; otherwise wide enough
/// for the total size of the files, and at least 7 when stdin is counted.
fn wc_width(inputs: &[(String, Vec<u8>)], columns: usize, operands: usize) -> usize {
    if columns == 1 && operands <= 1 {
        return 1;
    }
    let minimum = if inputs.iter().any(|(name, _)| name == "-") {
        7
    } else {
        1
    };
    let total: usize = inputs.iter().map(|(_, data)| data.len()).sum();
    total.to_string().len().max(minimum)
}

pub(super) fn tee(ctx: &mut Ctx<'_>, argv: &[String]) -> Result<i32, Abort> {
    let opts = [
        flag('a', "append"),
        flag('i', "ignore-interrupts"),
        flag('p', ""),
    ];
    let parsed = match getopt(&argv[1..], &opts) {
        Ok(p) => p,
        Err(message) => return usage(ctx, "tee", &message, 1),
    };
    let stdin = ctx.stdin;
    let data = stdin.available();
    ctx.budget.charge_cpu(data.len() as u64)?;
    let mut failed = false;
    for operand in &parsed.operands {
        if !tee_special(ctx, operand, data)? {
            failed |= !tee_file(ctx, operand, data, parsed.has('a'))?;
        }
    }
    ctx.stdout.write(data)?;
    // As `cat`: a full output pipe stops it first; otherwise the rest of
    // an input that goes on is needed.
    stdin.end()?;
    Ok(i32::from(failed))
}

/// `/dev/null`, `/dev/stdout` and `/dev/stderr` are not workspace files.
fn tee_special(ctx: &mut Ctx<'_>, operand: &str, data: &[u8]) -> Result<bool, Abort> {
    match operand {
        "/dev/null" => Ok(true),
        "/dev/stdout" | "-" => ctx.stdout.write(data).map(|()| true),
        "/dev/stderr" => ctx.stderr.write(data).map(|()| true),
        _ => Ok(false),
    }
}

/// Writes (or appends) one `tee` target; false when it failed (reported).
fn tee_file(ctx: &mut Ctx<'_>, operand: &str, data: &[u8], append: bool) -> Result<bool, Abort> {
    let result = if append {
        ctx.budget.charge_write(data.len() as u64)?;
        ctx.path(operand)
            .and_then(|path| ctx.fs.append(&path, data))
    } else {
        super::save(ctx, operand, data)?
    };
    match result {
        Ok(()) => Ok(true),
        Err(error) => {
            ctx.fs_error("tee", operand, &error)?;
            Ok(false)
        }
    }
}

pub(super) fn strings(ctx: &mut Ctx<'_>, argv: &[String]) -> Result<i32, Abort> {
    let opts = [
        with_arg('n', "bytes"),
        flag('a', "all"),
        with_arg('t', "radix"),
    ];
    let args = obsolete_count(&argv[1..], false);
    let parsed = match getopt(&args, &opts) {
        Ok(p) => p,
        Err(message) => return usage(ctx, "strings", &message, 1),
    };
    let Some(min) = parsed
        .value('n')
        .map_or(Some(4), |v| v.parse::<usize>().ok())
    else {
        ctx.error("strings", "invalid minimum string length")?;
        return Ok(1);
    };
    let (inputs, failed) = read_all(ctx, "strings", &parsed.operands)?;
    for (_, data) in &inputs {
        let mut out = Vec::new();
        let printable = |b: &u8| (0x20..0x7f).contains(b) || *b == b'\t';
        for run in data.split(|b| !printable(b)) {
            if run.len() >= min.max(1) {
                out.extend_from_slice(run);
                out.push(b'\n');
            }
        }
        ctx.stdout.write(&out)?;
    }
    Ok(i32::from(failed))
}

#[cfg(test)]
mod tests {
    use crate::utils::testing::{db, files, run};

    fn out(argv: &[&str], stdin: &str) -> String {
        run(&db(), argv, stdin).stdout
    }

    #[test]
    fn cat_plain_and_numbered_across_files() {
        let db = db();
        files(&db, &[("/a", "x\ny\n"), ("/b", "z")]);
        assert_eq!(
            run(&db, &["cat", "/a", "-", "/b"], "in\n").stdout,
            "x\ny\nin\nz"
        );
        assert_eq!(
            run(&db, &["cat", "-n", "/a", "/b"], "").stdout,
            "     1\tx\n     2\ty\n     3\tz"
        );
        let missing = run(&db, &["cat", "/nope", "/a"], "");
        assert_eq!((missing.stdout.as_str(), missing.status), ("x\ny\n", 1));
        assert_eq!(missing.stderr, "cat: /nope: No such file or directory\n");
    }

    #[test]
    fn cat_show_flags_match_gnu() {
        let blanks = "a\n\n\n\nb\n\n\nc\n";
        assert_eq!(
            out(&["cat", "-nb"], blanks),
            "     1\ta\n\n\n\n     2\tb\n\n\n     3\tc\n"
        );
        assert_eq!(
            out(&["cat", "-sn"], blanks),
            "     1\ta\n     2\t\n     3\tb\n     4\t\n     5\tc\n"
        );
        assert_eq!(
            out(&["cat", "-A"], "tab\there\nctrl\x07\x7f\n"),
            "tab^Ihere$\nctrl^G^?$\n"
        );
        assert_eq!(out(&["cat", "-e"], "t\tx\n"), "t\tx$\n");
        assert_eq!(out(&["cat", "-v"], "\u{80}"), "M-BM-^@");
        assert_eq!(out(&["cat", "-E"], "no newline"), "no newline");
        let bad = run(&db(), &["cat", "-z"], "");
        assert_eq!(
            bad.stderr,
            "cat: invalid option -- 'z'\nTry 'cat --help' for more information.\n"
        );
    }

    #[test]
    fn head_counts_and_headers() {
        let db = db();
        let text: String = (1..=12).map(|i| format!("line {i}\n")).collect();
        files(&db, &[("/t", &text), ("/a", "1\n2\n3\n")]);
        assert_eq!(run(&db, &["head", "/t"], "").stdout.lines().count(), 10);
        assert_eq!(run(&db, &["head", "-n", "2", "/a"], "").stdout, "1\n2\n");
        assert_eq!(run(&db, &["head", "-2", "/a"], "").stdout, "1\n2\n");
        assert_eq!(run(&db, &["head", "-n", "-1", "/a"], "").stdout, "1\n2\n");
        assert_eq!(run(&db, &["head", "-c", "3", "/a"], "").stdout, "1\n2");
        assert_eq!(run(&db, &["head", "-c", "-2"], "12345").stdout, "123");
        assert_eq!(
            run(&db, &["head", "-n1", "/a", "/a"], "").stdout,
            "==> /a <==\n1\n\n==> /a <==\n1\n"
        );
        assert_eq!(
            run(&db, &["head", "-v", "-n1"], "x\n").stdout,
            "==> standard input <==\nx\n"
        );
        let missing = run(&db, &["head", "/nope"], "");
        assert_eq!(
            missing.stderr,
            "head: cannot open '/nope' for reading: No such file or directory\n"
        );
        assert_eq!(missing.status, 1);
    }

    /// Found by the fuzzer (`fuzz/`): an operand starting with a multi-byte
    /// character was sliced at byte 1 while looking for `-5` / `+5`.
    #[test]
    fn first_operand_starting_with_a_multibyte_character() {
        let db = db();
        for util in ["head", "tail", "strings"] {
            let result = run(&db, &[util, "\u{e9}5"], "x\n");
            assert_eq!(result.status, 1, "{util}");
            assert!(
                result.stderr.contains("\u{e9}5"),
                "{util}: {}",
                result.stderr
            );
        }
    }

    #[test]
    fn tail_counts_and_offsets() {
        assert_eq!(out(&["tail", "-n", "2"], "1\n2\n3\n"), "2\n3\n");
        assert_eq!(out(&["tail", "-n", "+2"], "1\n2\n3\n"), "2\n3\n");
        assert_eq!(out(&["tail", "-1"], "1\n2\n3"), "3");
        assert_eq!(
            out(&["tail", "-c", "10"], "line1\nline2\nline3\n"),
            "ne2\nline3\n"
        );
        assert_eq!(out(&["tail", "-c", "+2"], "12345"), "2345");
        assert_eq!(out(&["tail", "-n", "10"], "a\nb\n"), "a\nb\n");
    }

    #[test]
    fn tac_and_rev() {
        assert_eq!(out(&["tac"], "a\nb\nc\n"), "c\nb\na\n");
        assert_eq!(out(&["tac"], "a\nb"), "ba\n");
        assert_eq!(out(&["rev"], "abc\nhé\n"), "cba\néh\n");
        assert_eq!(out(&["rev"], ""), "");
    }

    #[test]
    fn wc_formats_like_gnu() {
        let db = db();
        files(
            &db,
            &[
                ("/a", "a b\nc\n"),
                ("/b", "one two three\nfour five six seven eight\n"),
                ("/e", ""),
            ],
        );
        assert_eq!(run(&db, &["wc", "/e"], "").stdout, "0 0 0 /e\n");
        assert_eq!(run(&db, &["wc", "-l", "/a"], "").stdout, "2 /a\n");
        assert_eq!(
            run(&db, &["wc", "-l", "/a", "/b"], "").stdout,
            " 2 /a\n 2 /b\n 4 total\n"
        );
        assert_eq!(
            run(&db, &["wc", "/a", "/b"], "").stdout,
            " 2  3  6 /a\n 2  8 40 /b\n 4 11 46 total\n"
        );
        assert_eq!(run(&db, &["wc", "-l"], "a\nb\nc\n").stdout, "3\n");
        assert_eq!(
            run(&db, &["wc"], "hi\n").stdout,
            "      1       1       3\n"
        );
        assert_eq!(
            run(&db, &["wc", "-m", "-L"], "héllo\n").stdout,
            "      6       5\n"
        );
    }

    #[test]
    fn tee_writes_appends_and_passes_through() {
        let db = db();
        files(&db, &[("/old", "1\n")]);
        let r = run(&db, &["tee", "/new", "/dev/null"], "x\n");
        assert_eq!(r.stdout, "x\n");
        assert_eq!(run(&db, &["cat", "/new"], "").stdout, "x\n");
        run(&db, &["tee", "-a", "/old"], "2\n");
        assert_eq!(run(&db, &["cat", "/old"], "").stdout, "1\n2\n");
        let bad = run(&db, &["tee", "/no/dir/f"], "y\n");
        assert_eq!((bad.stdout.as_str(), bad.status), ("y\n", 1));
        assert!(bad.stderr.starts_with("tee: /no/dir/f: "));
    }

    #[test]
    fn strings_finds_printable_runs() {
        assert_eq!(
            out(&["strings"], "hello\0\0world\0\0test"),
            "hello\nworld\ntest\n"
        );
        assert_eq!(out(&["strings"], "ab\0cd\0efgh"), "efgh\n");
        assert_eq!(out(&["strings", "-n", "2"], "ab\0cd\0e"), "ab\ncd\n");
    }
}
