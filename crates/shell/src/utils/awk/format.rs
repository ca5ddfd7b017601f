//! Number formatting and `printf`/`sprintf`, with C's conversions.
//!
//! Rust's formatting differs from C's (`%e` exponents, `%g` trimming), so
//! the C rules are implemented here on top of Rust's exact decimal output.

/// A value as `printf` sees it: the formatter asks for a number or a string.
pub(super) trait Arg {
    fn num(&self) -> f64;
    fn text(&self) -> String;
    /// Whether the value is a number (for `%c`).
    fn is_num(&self) -> bool;
}

/// Formats an integral number the way awk prints it.
pub(super) fn integral(n: f64) -> Option<String> {
    if n == n.trunc() && n.is_finite() {
        if n.abs() < 1e18 {
            return Some((n as i64).to_string());
        }
        return Some(format!("{n:.0}"));
    }
    None
}

/// A number as awk turns it into a string: integers plainly, others with
/// `fmt` (CONVFMT or OFMT).
pub(super) fn num_to_string(n: f64, fmt: &str) -> String {
    if let Some(text) = integral(n) {
        return text;
    }
    if fmt == "%.6g" {
        return format_g(n, 6, false, false);
    }
    sprintf(fmt, &[&n as &dyn Arg])
}

impl Arg for f64 {
    fn num(&self) -> f64 {
        *self
    }
    fn text(&self) -> String {
        num_to_string(*self, "%.6g")
    }
    fn is_num(&self) -> bool {
        true
    }
}

fn nonfinite(n: f64, upper: bool) -> Option<String> {
    let text = if n.is_nan() {
        if n.is_sign_negative() {
            "-nan"
        } else {
            "nan"
        }
    } else if n.is_infinite() {
        if n < 0.0 {
            "-inf"
        } else {
            "inf"
        }
    } else {
        return None;
    };
    Some(if upper {
        text.to_uppercase()
    } else {
        text.into()
    })
}

/// C's `%.{prec}e`.
pub(super) fn format_e(n: f64, prec: usize, upper: bool) -> String {
    if let Some(text) = nonfinite(n, upper) {
        return text;
    }
    let rust = format!("{n:.prec$e}");
    let (mantissa, exp) = rust.split_once('e').unwrap_or((&rust, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let sign = if exp < 0 { '-' } else { '+' };
    let e = if upper { 'E' } else { 'e' };
    format!("{mantissa}{e}{sign}{:02}", exp.abs())
}

/// C's `%.{prec}f`.
pub(super) fn format_f(n: f64, prec: usize) -> String {
    if let Some(text) = nonfinite(n, false) {
        return text;
    }
    format!("{n:.prec$}")
}

/// C's `%.{prec}g` (`alt` keeps trailing zeros, as `#` does).
pub(super) fn format_g(n: f64, prec: usize, upper: bool, alt: bool) -> String {
    if let Some(text) = nonfinite(n, upper) {
        return text;
    }
    let p = prec.max(1);
    let e_form = format_e(n, p - 1, upper);
    let exp: i32 = e_form
        .rsplit(['e', 'E'])
        .next()
        .and_then(|x| x.parse().ok())
        .unwrap_or(0);
    let text = if exp < -4 || exp >= p as i32 {
        e_form
    } else {
        format_f(n, (p as i32 - 1 - exp) as usize)
    };
    if alt {
        return text;
    }
    trim_zeros(&text)
}

fn trim_zeros(text: &str) -> String {
    let (mantissa, exp) = match text.find(['e', 'E']) {
        Some(i) => (&text[..i], &text[i..]),
        None => (text, ""),
    };
    if !mantissa.contains('.') {
        return text.to_string();
    }
    let trimmed = mantissa.trim_end_matches('0').trim_end_matches('.');
    format!("{trimmed}{exp}")
}

/// One parsed `%` conversion.
#[derive(Default)]
struct Spec {
    left: bool,
    plus: bool,
    space: bool,
    alt: bool,
    zero: bool,
    width: usize,
    prec: Option<usize>,
}

/// Formats `args` by `fmt` as awk's `sprintf` does.
pub(super) fn sprintf(fmt: &str, args: &[&dyn Arg]) -> String {
    sprintf_within(fmt, args, usize::MAX).unwrap_or_default()
}

/// [`sprintf`], or `None` when the text would pass `room` bytes: checked
/// before a width or precision is padded out (`%*d` with a width of 1e9
/// would otherwise build a gigabyte first).
pub(super) fn sprintf_within(fmt: &str, args: &[&dyn Arg], room: usize) -> Option<String> {
    let mut out = String::new();
    let mut chars = fmt.chars().peekable();
    let mut next_arg = args.iter();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let mut spec = Spec::default();
        while let Some(&f) = chars.peek() {
            match f {
                '-' => spec.left = true,
                '+' => spec.plus = true,
                ' ' => spec.space = true,
                '#' => spec.alt = true,
                '0' => spec.zero = true,
                _ => break,
            }
            chars.next();
        }
        if chars.peek() == Some(&'*') {
            chars.next();
            let w = next_arg.next().map_or(0.0, |a| a.num()) as i64;
            spec.left |= w < 0;
            spec.width = w.unsigned_abs() as usize;
        } else {
            spec.width = digits(&mut chars).unwrap_or(0);
        }
        if chars.peek() == Some(&'.') {
            chars.next();
            if chars.peek() == Some(&'*') {
                chars.next();
                let p = next_arg.next().map_or(0.0, |a| a.num()) as i64;
                spec.prec = (p >= 0).then_some(p as usize);
            } else {
                spec.prec = Some(digits(&mut chars).unwrap_or(0));
            }
        }
        // Length modifiers mean nothing in awk.
        while matches!(chars.peek(), Some('h' | 'l' | 'L' | 'q' | 'j' | 'z' | 't')) {
            chars.next();
        }
        let Some(conv) = chars.next() else {
            out.push('%');
            break;
        };
        if conv == '%' {
            out.push('%');
            continue;
        }
        let padded = spec.width.max(spec.prec.unwrap_or(0));
        if out.len().saturating_add(padded) > room {
            return None;
        }
        let arg = next_arg.next().copied();
        match convert(conv, &spec, arg) {
            Some(text) => out.push_str(&text),
            None => {
                out.push('%');
                out.push(conv);
            }
        }
        if out.len() > room {
            return None;
        }
    }
    (out.len() <= room).then_some(out)
}

fn digits(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) -> Option<usize> {
    let mut value: Option<usize> = None;
    while let Some(d) = chars.peek().and_then(|c| c.to_digit(10)) {
        value = Some(
            value
                .unwrap_or(0)
                .saturating_mul(10)
                .saturating_add(d as usize),
        );
        chars.next();
    }
    value
}

fn convert(conv: char, spec: &Spec, arg: Option<&dyn Arg>) -> Option<String> {
    let num = || arg.map_or(0.0, |a| a.num());
    let text = match conv {
        'd' | 'i' => return Some(signed_int(num(), spec)),
        'o' | 'x' | 'X' | 'u' => return Some(unsigned_int(num(), conv, spec)),
        'e' | 'E' => format_e(num(), spec.prec.unwrap_or(6), conv == 'E'),
        'f' | 'F' => format_f(num(), spec.prec.unwrap_or(6)),
        'g' | 'G' => format_g(num(), spec.prec.unwrap_or(6), conv == 'G', spec.alt),
        'c' => {
            let text = match arg {
                Some(a) if a.is_num() => char::from_u32(a.num() as u32)
                    .map(String::from)
                    .unwrap_or_default(),
                Some(a) => a
                    .text()
                    .chars()
                    .next()
                    .map(String::from)
                    .unwrap_or_default(),
                None => String::new(),
            };
            return Some(pad(text, spec, false));
        }
        's' => {
            let mut text = arg.map(|a| a.text()).unwrap_or_default();
            if let Some(p) = spec.prec {
                text = text.chars().take(p).collect();
            }
            return Some(pad(text, spec, false));
        }
        _ => return None,
    };
    let signed = sign_prefix(text, spec);
    Some(pad(signed, spec, num().is_finite()))
}

fn sign_prefix(text: String, spec: &Spec) -> String {
    if text.starts_with('-') {
        text
    } else if spec.plus {
        format!("+{text}")
    } else if spec.space {
        format!(" {text}")
    } else {
        text
    }
}

fn signed_int(n: f64, spec: &Spec) -> String {
    if !n.is_finite() {
        return pad(sign_prefix(format_f(n, 0), spec), spec, false);
    }
    let t = n.trunc();
    let mut digits = if t.abs() < 1e18 {
        (t.abs() as i64).to_string()
    } else {
        format!("{:.0}", t.abs())
    };
    if let Some(p) = spec.prec {
        if p == 0 && t == 0.0 {
            digits.clear();
        }
        digits = format!("{digits:0>p$}");
    }
    let text = if t < 0.0 {
        format!("-{digits}")
    } else {
        digits
    };
    pad(sign_prefix(text, spec), spec, spec.prec.is_none())
}

fn unsigned_int(n: f64, conv: char, spec: &Spec) -> String {
    let value = if n < 0.0 {
        (n.trunc() as i64) as u64
    } else {
        n.trunc() as u64
    };
    let mut digits = match conv {
        'o' => format!("{value:o}"),
        'x' => format!("{value:x}"),
        'X' => format!("{value:X}"),
        _ => value.to_string(),
    };
    if let Some(p) = spec.prec {
        if p == 0 && value == 0 {
            digits.clear();
        }
        digits = format!("{digits:0>p$}");
    }
    if spec.alt && value != 0 {
        digits = match conv {
            'o' if !digits.starts_with('0') => format!("0{digits}"),
            'x' => format!("0x{digits}"),
            'X' => format!("0X{digits}"),
            _ => digits,
        };
    }
    pad(digits, spec, spec.prec.is_none())
}

/// Pads to the width; zeros go after any sign or `0x` prefix.
fn pad(text: String, spec: &Spec, zero_ok: bool) -> String {
    let len = text.chars().count();
    if len >= spec.width {
        return text;
    }
    let fill = spec.width - len;
    if spec.left {
        return format!("{text}{}", " ".repeat(fill));
    }
    if spec.zero && zero_ok {
        let prefix_len = text
            .find(|c: char| c.is_ascii_digit())
            .map(|i| {
                if text[i..].starts_with("0x") || text[i..].starts_with("0X") {
                    i + 2
                } else {
                    i
                }
            })
            .unwrap_or(0);
        let (prefix, rest) = text.split_at(prefix_len);
        return format!("{prefix}{}{rest}", "0".repeat(fill));
    }
    format!("{}{text}", " ".repeat(fill))
}
