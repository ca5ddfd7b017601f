//! `printf` formatting, backslash escapes (`echo -e`, `$'...'`, `%b`) and
//! shell quoting (`%q`, `${x@Q}`, `set -x`).

/// Which backslash escapes a text takes (they differ in octal and `\c`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Escapes {
    /// `echo -e`: octal only as `\0nnn` (`\1` stays), `\c` stops output.
    Echo,
    /// `printf %b` operands: `\0nnn` and `\nnn`, `\c` stops output.
    Operand,
    /// `$'...'`, printf formats, `${x@E}`: `\nnn`, `\cX` is a control key.
    Text,
}

/// Processes backslash escapes; the returned flag is true when `\c` asked
/// to stop output.
pub(crate) fn unescape(s: &str, dialect: Escapes) -> (String, bool) {
    let echo = dialect != Escapes::Text;
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c != '\\' || i + 1 >= chars.len() {
            out.push(c);
            i += 1;
            continue;
        }
        let n = chars[i + 1];
        i += 2;
        match n {
            'n' => out.push('\n'),
            't' => out.push('\t'),
            'r' => out.push('\r'),
            'a' => out.push('\x07'),
            'b' => out.push('\x08'),
            'e' | 'E' => out.push('\x1b'),
            'f' => out.push('\x0c'),
            'v' => out.push('\x0b'),
            '\\' => out.push('\\'),
            '\'' => out.push('\''),
            '"' => out.push('"'),
            '?' => out.push('?'),
            'c' if echo => return (out, true),
            'c' => {
                if let Some(&x) = chars.get(i) {
                    out.push(char::from_u32((x as u32) & 0x1f).unwrap_or(x));
                    i += 1;
                }
            }
            '1'..='7' if dialect == Escapes::Echo => {
                out.push('\\');
                out.push(n);
            }
            '0'..='7' => {
                // `\0nnn` in echo, `\nnn` elsewhere
                let max = if echo && n == '0' { 3 } else { 2 };
                let mut v = n.to_digit(8).unwrap_or(0);
                let mut k = 0;
                while k < max && i < chars.len() && chars[i].is_digit(8) {
                    v = v * 8 + chars[i].to_digit(8).unwrap_or(0);
                    i += 1;
                    k += 1;
                }
                push_byte(&mut out, v & 0xff);
            }
            'x' => {
                let mut v = 0;
                let mut k = 0;
                while k < 2 && i < chars.len() && chars[i].is_ascii_hexdigit() {
                    v = v * 16 + chars[i].to_digit(16).unwrap_or(0);
                    i += 1;
                    k += 1;
                }
                if k == 0 {
                    out.push_str("\\x");
                } else {
                    push_byte(&mut out, v);
                }
            }
            'u' | 'U' => {
                let max = if n == 'u' { 4 } else { 8 };
                let mut v = 0;
                let mut k = 0;
                while k < max && i < chars.len() && chars[i].is_ascii_hexdigit() {
                    v = v * 16 + chars[i].to_digit(16).unwrap_or(0);
                    i += 1;
                    k += 1;
                }
                if k == 0 {
                    out.push('\\');
                    out.push(n);
                } else {
                    out.push(char::from_u32(v).unwrap_or('\u{fffd}'));
                }
            }
            other => {
                out.push('\\');
                out.push(other);
            }
        }
    }
    (out, false)
}

/// A byte from an escape: ASCII as is, above 0x7f as the raw byte (see
/// `crate::bytes`), so `$'\xff'` and `printf '\351'` write that byte.
fn push_byte(out: &mut String, v: u32) {
    match u8::try_from(v) {
        Ok(b) if b >= 0x80 => out.push(crate::bytes::byte_char(b)),
        Ok(b) => out.push(b as char),
        Err(_) => out.push('?'),
    }
}

/// Quotes a string for reuse as shell input, as bash's `%q` does.
/// A word as `set -x` shows it: as is when it is safe, else in single
/// quotes, or `$'...'` when it holds control characters other than tab and
/// newline (bash's xtrace rules).
pub(crate) fn xtrace_quote(s: &str) -> String {
    const METAS: &str = " \t\n'\"\\|&;()<>!{}*[?]^$`";
    let control = |c: char| {
        (c.is_control() && c != '\t' && c != '\n') || crate::bytes::char_byte(c).is_some()
    };
    if s.chars().any(control) {
        return quote(s);
    }
    let needs = s.is_empty() || s.chars().any(|c| METAS.contains(c)) || s.starts_with(['~', '#']);
    if !needs {
        return s.to_string();
    }
    format!("'{}'", s.replace('\'', "'\\''"))
}

pub(crate) fn quote(s: &str) -> String {
    if s.is_empty() {
        return "''".into();
    }
    if s.chars()
        .all(|c| c.is_ascii_alphanumeric() || "_-./=+,:@%^".contains(c))
    {
        return s.to_string();
    }
    if needs_ansi_c(s) {
        return ansi_c_quote(s);
    }
    let mut out = String::new();
    for c in s.chars() {
        if !(c.is_alphanumeric() || "_-./=+,:@%^".contains(c)) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Quotes like `trap -p`: single quotes.
pub(crate) fn single_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// Quotes like `${x@Q}`: single quotes, or `$'...'` when the value holds a
/// control character or a byte that is not UTF-8 (bash's
/// `ansic_shouldquote`): `${x@Q}` of a tab is `$'\t'`.
pub(crate) fn value_quote(s: &str) -> String {
    if needs_ansi_c(s) {
        ansi_c_quote(s)
    } else {
        single_quote(s)
    }
}

fn needs_ansi_c(s: &str) -> bool {
    s.chars()
        .any(|c| c.is_control() || crate::bytes::char_byte(c).is_some())
}

/// `$'...'` quoting: escapes for controls, octal for other bytes.
fn ansi_c_quote(s: &str) -> String {
    let mut out = String::from("$'");
    for c in s.chars() {
        if let Some(b) = crate::bytes::char_byte(c) {
            out.push_str(&format!("\\{b:03o}"));
            continue;
        }
        match c {
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\x1b' => out.push_str("\\E"),
            '\'' => out.push_str("\\'"),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\{:03o}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

/// The result of formatting: the text, and whether an argument was bad.
pub(crate) struct Formatted {
    pub text: String,
    pub errors: Vec<String>,
    pub stop: bool,
    now: i64,
}

/// Largest field width or precision `printf` accepts. Padding is built in
/// memory before the output cap applies, so `printf '%9999999999d'` would
/// otherwise allocate gigabytes (bash refuses widths past `INT_MAX` with
/// "Numerical result out of range"; in a 128 MB isolate the bound must be
/// far lower).
pub(crate) const MAX_FIELD: usize = 1 << 20;

/// Formats `args` with `fmt`, reusing the format while arguments remain.
/// Formats like bash's `printf`; `now` (Unix seconds) is what `%(fmt)T`
/// shows for `-1` or a missing argument.
pub(crate) fn format(fmt: &str, args: &[String], now: i64) -> Formatted {
    let mut f = Formatted {
        text: String::new(),
        errors: Vec::new(),
        stop: false,
        now,
    };
    let chars: Vec<char> = fmt.chars().collect();
    let mut next = 0;
    loop {
        let used = format_once(&chars, args, &mut next, &mut f);
        if f.stop || !used || next >= args.len() {
            break;
        }
    }
    f
}

/// One pass over the format; returns whether it consumed any argument.
fn format_once(chars: &[char], args: &[String], next: &mut usize, f: &mut Formatted) -> bool {
    let start_next = *next;
    let mut i = 0;
    let take = |next: &mut usize| -> Option<String> {
        let a = args.get(*next).cloned();
        *next += 1;
        a
    };
    while i < chars.len() {
        let c = chars[i];
        if c == '\\' {
            let mut j = i + 1;
            // one escape sequence
            if j < chars.len() {
                let n = chars[j];
                j += 1;
                if n.is_digit(8) {
                    let mut k = 1;
                    while k < 3 && j < chars.len() && chars[j].is_digit(8) {
                        j += 1;
                        k += 1;
                    }
                } else if n == 'x' {
                    let mut k = 0;
                    while k < 2 && j < chars.len() && chars[j].is_ascii_hexdigit() {
                        j += 1;
                        k += 1;
                    }
                } else if n == 'u' || n == 'U' {
                    let max = if n == 'u' { 4 } else { 8 };
                    let mut k = 0;
                    while k < max && j < chars.len() && chars[j].is_ascii_hexdigit() {
                        j += 1;
                        k += 1;
                    }
                }
            }
            let seq: String = chars[i..j].iter().collect();
            let (s, stop) = unescape(&seq, Escapes::Text);
            f.text.push_str(&s);
            if stop {
                f.stop = true;
                return true;
            }
            i = j;
            continue;
        }
        if c != '%' {
            f.text.push(c);
            i += 1;
            continue;
        }
        i += 1;
        if chars.get(i) == Some(&'%') {
            f.text.push('%');
            i += 1;
            continue;
        }
        let mut flags = String::new();
        while let Some(&fc) = chars.get(i).filter(|c| "-+ 0#'".contains(**c)) {
            flags.push(fc);
            i += 1;
        }
        let mut width: Option<i64> = None;
        if chars.get(i) == Some(&'*') {
            i += 1;
            // Read as an integer argument is (hex, octal, 'c; an invalid
            // one is an error, 0).
            let w = take(next).map_or(0, |a| int_arg(&a, f, IntKind::Signed));
            let w = w.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64;
            if w < 0 {
                flags.push('-');
            }
            width = Some(w.saturating_abs());
        } else {
            let mut w = String::new();
            while let Some(&d) = chars.get(i).filter(|c| c.is_ascii_digit()) {
                w.push(d);
                i += 1;
            }
            if !w.is_empty() {
                // Digits past i64 are out of range, not "no width".
                width = Some(w.parse().unwrap_or(i64::MAX));
            }
        }
        let mut precision: Option<usize> = None;
        if chars.get(i) == Some(&'.') {
            i += 1;
            if chars.get(i) == Some(&'*') {
                i += 1;
                let p = take(next).map_or(0, |a| int_arg(&a, f, IntKind::Signed));
                // A negative precision is taken as none given.
                precision = (p >= 0).then(|| p.min(i128::from(u32::MAX)) as usize);
            } else {
                let mut p = String::new();
                while let Some(&d) = chars.get(i).filter(|c| c.is_ascii_digit()) {
                    p.push(d);
                    i += 1;
                }
                precision = Some(if p.is_empty() {
                    0
                } else {
                    p.parse().unwrap_or(usize::MAX)
                });
            }
        }
        let too_large = |n: usize| n > MAX_FIELD;
        if let Some(n) = width.filter(|w| too_large(w.unsigned_abs() as usize)) {
            f.errors.push(format!("{n}: Numerical result out of range"));
            f.stop = true;
            return true;
        }
        if let Some(n) = precision.filter(|p| too_large(*p)) {
            f.errors.push(format!("{n}: Numerical result out of range"));
            f.stop = true;
            return true;
        }
        while matches!(chars.get(i), Some('l' | 'h' | 'L' | 'j' | 'z')) {
            i += 1;
        }
        if chars.get(i) == Some(&'(') {
            // `%(strftime)T`: the argument is Unix seconds (-1 or none: now).
            let Some(close) = chars[i..].iter().position(|&c| c == ')') else {
                f.errors
                    .push("`(': invalid time format specification".into());
                f.stop = true;
                return true;
            };
            let spec: String = chars[i + 1..i + close].iter().collect();
            i += close + 1;
            if chars.get(i) != Some(&'T') {
                f.errors
                    .push("`(': invalid time format specification".into());
                f.stop = true;
                return true;
            }
            i += 1;
            let secs = match take(next).filter(|a| !a.trim().is_empty()) {
                None => f.now,
                Some(a) => match int_arg(&a, f, IntKind::Signed) as i64 {
                    -1 | -2 => f.now,
                    s => s,
                },
            };
            // bash formats into a 128-byte buffer.
            let mut body = crate::utils::strftime_utc(&spec, secs);
            if body.len() > 127 {
                body.clear();
            }
            let body = match precision {
                Some(p) => body.chars().take(p).collect(),
                None => body,
            };
            f.text
                .push_str(&pad(&body, width.unwrap_or(0) as usize, &flags, 's'));
            continue;
        }
        let Some(&conv) = chars.get(i) else {
            f.errors.push(format!("%{flags}: invalid directive"));
            f.stop = true;
            return true;
        };
        i += 1;
        let arg = take(next);
        let body = convert(conv, &flags, precision, arg, f);
        let Some(body) = body else {
            return true;
        };
        f.text
            .push_str(&pad(&body, width.unwrap_or(0) as usize, &flags, conv));
    }
    *next > start_next
}

/// `body` padded to `width` bytes (C's printf counts bytes, not characters).
fn pad(body: &str, width: usize, flags: &str, conv: char) -> String {
    let len = crate::bytes::encode_bytes(body.as_bytes()).len();
    if len >= width {
        return body.to_string();
    }
    let fill = width - len;
    if flags.contains('-') {
        return format!("{body}{}", " ".repeat(fill));
    }
    if flags.contains('0') && !matches!(conv, 's' | 'b' | 'q' | 'c') {
        let (sign, digits) = match body.chars().next() {
            Some(c @ ('-' | '+' | ' ')) => (c.to_string(), &body[1..]),
            _ => (String::new(), body),
        };
        if let Some(hex) = digits
            .strip_prefix("0x")
            .or_else(|| digits.strip_prefix("0X"))
        {
            return format!("{sign}{}{}{hex}", &digits[..2], "0".repeat(fill));
        }
        return format!("{sign}{}{digits}", "0".repeat(fill));
    }
    format!("{}{body}", " ".repeat(fill))
}

/// How an integer argument out of range is brought in: `%d` clamps to the
/// signed range, `%u`/`%x`/`%o` read it as `strtoumax` does (saturating,
/// negative values wrapping), as bash does.
#[derive(Clone, Copy)]
enum IntKind {
    Signed,
    Unsigned,
}

/// The numeric value of a printf argument (`'c` is the char code, or the
/// byte for a byte that is not UTF-8).
fn int_arg(arg: &str, f: &mut Formatted, kind: IntKind) -> i128 {
    let t = arg.trim_start();
    if let Some(rest) = t.strip_prefix('\'').or_else(|| t.strip_prefix('"')) {
        return rest
            .chars()
            .next()
            .map_or(0, |c| match crate::bytes::char_byte(c) {
                Some(b) => i128::from(b),
                None => c as i128,
            });
    }
    if t.is_empty() {
        return 0;
    }
    let (neg, body) = match t.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    let (radix, digits) =
        if let Some(h) = body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
            (16, h)
        } else if body.len() > 1 && body.starts_with('0') {
            (8, &body[1..])
        } else {
            (10, body)
        };
    let valid: String = digits.chars().take_while(|c| c.is_digit(radix)).collect();
    if valid.len() != digits.len() || digits.is_empty() {
        f.errors.push(format!("{arg}: invalid number"));
    }
    // Saturate just past u64::MAX: enough to tell every overflow apart.
    let limit = u128::from(u64::MAX) + 1;
    let mut magnitude: u128 = 0;
    for c in valid.chars() {
        magnitude =
            (magnitude * u128::from(radix) + u128::from(c.to_digit(radix).unwrap_or(0))).min(limit);
    }
    match kind {
        IntKind::Signed => {
            let m = magnitude as i128;
            if neg {
                (-m).max(i128::from(i64::MIN))
            } else {
                m.min(i128::from(i64::MAX))
            }
        }
        // As strtoumax reads it: a negative number wraps, one out of range
        // is the largest, whatever its sign (`-18446744073709551616`).
        IntKind::Unsigned => i128::from(match magnitude {
            m if m >= limit => u64::MAX,
            m if neg => (m as u64).wrapping_neg(),
            m => m as u64,
        }),
    }
}

fn float_arg(arg: &str, f: &mut Formatted) -> f64 {
    let t = arg.trim();
    if let Some(rest) = t.strip_prefix('\'') {
        return rest.chars().next().map_or(0.0, |c| c as u32 as f64);
    }
    if t.is_empty() {
        return 0.0;
    }
    t.parse::<f64>()
        .ok()
        .or_else(|| hex_float(t))
        .unwrap_or_else(|| {
            f.errors.push(format!("{arg}: invalid number"));
            0.0
        })
}

/// A C hexadecimal floating constant, as bash's `strtold` reads one:
/// `0x10`, `-0x1.8`, `0x1p4` (a binary exponent).
fn hex_float(t: &str) -> Option<f64> {
    let (neg, t) = match t.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    let t = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X"))?;
    let (mantissa, exponent) = match t.find(['p', 'P']) {
        Some(i) => (&t[..i], t[i + 1..].parse::<i32>().ok()?),
        None => (t, 0),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if whole.is_empty() && fraction.is_empty() {
        return None;
    }
    let mut v = 0f64;
    for c in whole.chars() {
        v = v * 16.0 + f64::from(c.to_digit(16)?);
    }
    let mut scale = 1.0 / 16.0;
    for c in fraction.chars() {
        v += f64::from(c.to_digit(16)?) * scale;
        scale /= 16.0;
    }
    let v = v * 2f64.powi(exponent);
    Some(if neg { -v } else { v })
}

fn convert(
    conv: char,
    flags: &str,
    precision: Option<usize>,
    arg: Option<String>,
    f: &mut Formatted,
) -> Option<String> {
    let arg = arg.unwrap_or_default();
    Some(match conv {
        // Precision counts bytes, as C's printf (which bash's uses) does:
        // it may cut a character in two.
        's' => match precision {
            Some(p) => {
                let bytes = crate::bytes::encode_bytes(arg.as_bytes());
                crate::bytes::decode(&bytes[..p.min(bytes.len())])
            }
            None => arg,
        },
        'b' => {
            let (s, stop) = unescape(&arg, Escapes::Operand);
            if stop {
                f.text.push_str(&s);
                f.stop = true;
                return None;
            }
            s
        }
        // A missing argument is the empty string, which quotes as ''.
        'q' => quote(&arg),
        // The first byte, even of a multi-byte character, as bash does.
        'c' => match arg.chars().next() {
            Some(c) if c.len_utf8() > 1 && crate::bytes::char_byte(c).is_none() => {
                let mut buf = [0u8; 4];
                let first = c.encode_utf8(&mut buf).as_bytes()[0];
                crate::bytes::byte_char(first).to_string()
            }
            Some(c) => c.to_string(),
            // bash writes the empty string's terminating NUL.
            None => "\0".to_string(),
        },
        'd' | 'i' => {
            let v = int_arg(&arg, f, IntKind::Signed) as i64;
            let mut s = v.unsigned_abs().to_string();
            if let Some(p) = precision {
                if s.len() < p {
                    s = format!("{s:0>p$}");
                }
            }
            let sign = if v < 0 {
                "-"
            } else if flags.contains('+') {
                "+"
            } else if flags.contains(' ') {
                " "
            } else {
                ""
            };
            format!("{sign}{s}")
        }
        'u' | 'x' | 'X' | 'o' => {
            let v = int_arg(&arg, f, IntKind::Unsigned) as u64;
            let mut s = match conv {
                'x' => format!("{v:x}"),
                'X' => format!("{v:X}"),
                'o' => format!("{v:o}"),
                _ => v.to_string(),
            };
            if let Some(p) = precision {
                if s.len() < p {
                    s = format!("{s:0>p$}");
                }
            }
            if flags.contains('#') && v != 0 {
                s = match conv {
                    'x' => format!("0x{s}"),
                    'X' => format!("0X{s}"),
                    'o' => format!("0{s}"),
                    _ => s,
                };
            }
            s
        }
        'f' | 'F' | 'e' | 'E' | 'g' | 'G' => {
            let v = float_arg(&arg, f);
            let p = precision.unwrap_or(6);
            let mut s = match conv {
                'f' | 'F' if p == 0 && flags.contains('#') => format!("{v:.0}."),
                'f' | 'F' => format!("{v:.p$}"),
                'e' | 'E' => exp_format(v, p, conv == 'E'),
                _ => g_format(v, p, conv == 'G', flags.contains('#')),
            };
            if v >= 0.0 && flags.contains('+') {
                s.insert(0, '+');
            } else if v >= 0.0 && flags.contains(' ') {
                s.insert(0, ' ');
            }
            s
        }
        other => {
            f.errors.push(format!("%{other}: invalid directive"));
            f.stop = true;
            return None;
        }
    })
}

fn exp_format(v: f64, p: usize, upper: bool) -> String {
    let s = format!("{v:.p$e}");
    let (mant, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let e: i32 = exp.parse().unwrap_or(0);
    let sign = if e < 0 { '-' } else { '+' };
    let out = format!("{mant}e{sign}{:02}", e.abs());
    if upper {
        out.to_uppercase()
    } else {
        out
    }
}

fn g_format(v: f64, p: usize, upper: bool, keep: bool) -> String {
    let p = if p == 0 { 1 } else { p };
    if v == 0.0 {
        return "0".into();
    }
    let exp = v.abs().log10().floor() as i32;
    let s = if exp < -4 || exp >= p as i32 {
        let s = exp_format(v, p - 1, upper);
        if keep {
            s
        } else {
            let (m, e) = s
                .split_once(if upper { 'E' } else { 'e' })
                .unwrap_or((&s, ""));
            let m = trim_zeros(m);
            format!("{m}{}{e}", if upper { 'E' } else { 'e' })
        }
    } else {
        let decimals = (p as i32 - 1 - exp).max(0) as usize;
        let s = format!("{v:.decimals$}");
        if keep {
            s
        } else {
            trim_zeros(&s)
        }
    };
    s
}

fn trim_zeros(s: &str) -> String {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s.to_string()
    }
}
