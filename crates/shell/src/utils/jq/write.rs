//! JSON output exactly as jq 1.7 prints it: two-space (or tab, or n-space)
//! indentation, `"key": value` when pretty, shortest round-trip floats in
//! jq's notation (`1e+100`, `1e-05`, `3` for 3.0), control characters as
//! `\u00XX`, NaN as `null`.

use jaq_json::{Num, Val};

/// How values are laid out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Layout {
    Compact,
    Spaces(usize),
    Tab,
}

/// Output options shared by every value of a run.
#[derive(Clone, Copy, Debug)]
pub(super) struct Style {
    pub layout: Layout,
    pub sort_keys: bool,
    pub ascii: bool,
    /// Writing stops once `out` is longer: values share their parts, so a
    /// small value can print as an exponentially long text
    /// (`reduce range(60) as $i ([]; [., .])`). The caller sees the length
    /// and reports its limit.
    pub max_len: usize,
}

impl Style {
    pub(super) fn with_max_len(self, max_len: usize) -> Style {
        Style { max_len, ..self }
    }
}

/// Appends `value` as JSON (stopping past `style.max_len`).
pub(super) fn write_value(out: &mut String, value: &Val, style: &Style, level: usize) {
    if out.len() > style.max_len {
        return;
    }
    match value {
        Val::Null => out.push_str("null"),
        Val::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Val::Num(n) => write_num(out, n),
        Val::TStr(s) | Val::BStr(s) => write_str(out, &String::from_utf8_lossy(s), style.ascii),
        Val::Arr(items) => {
            if items.is_empty() {
                out.push_str("[]");
                return;
            }
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if out.len() > style.max_len {
                    return;
                }
                separator(out, style, level + 1, i > 0);
                write_value(out, item, style, level + 1);
            }
            separator(out, style, level, false);
            out.push(']');
        }
        Val::Obj(map) => {
            if map.is_empty() {
                out.push_str("{}");
                return;
            }
            let mut entries: Vec<(String, &Val)> =
                map.iter().map(|(k, v)| (key_text(k), v)).collect();
            if style.sort_keys {
                entries.sort_by(|a, b| a.0.cmp(&b.0));
            }
            out.push('{');
            for (i, (key, v)) in entries.iter().enumerate() {
                if out.len() > style.max_len {
                    return;
                }
                separator(out, style, level + 1, i > 0);
                write_str(out, key, style.ascii);
                out.push(':');
                if style.layout != Layout::Compact {
                    out.push(' ');
                }
                write_value(out, v, style, level + 1);
            }
            separator(out, style, level, false);
            out.push('}');
        }
    }
}

fn key_text(key: &Val) -> String {
    match key {
        Val::TStr(s) | Val::BStr(s) => String::from_utf8_lossy(s).into_owned(),
        other => {
            let mut text = String::new();
            write_value(&mut text, other, &COMPACT, 0);
            text
        }
    }
}

const COMPACT: Style = Style {
    layout: Layout::Compact,
    sort_keys: false,
    ascii: false,
    max_len: usize::MAX,
};

/// A comma (when `comma`), then a newline and indentation when pretty.
fn separator(out: &mut String, style: &Style, level: usize, comma: bool) {
    if comma {
        out.push(',');
    }
    match style.layout {
        Layout::Compact => {}
        Layout::Spaces(n) => {
            out.push('\n');
            out.extend(std::iter::repeat_n(' ', n * level));
        }
        Layout::Tab => {
            out.push('\n');
            out.extend(std::iter::repeat_n('\t', level));
        }
    }
}

/// A JSON string literal with jq's escapes.
pub(super) fn write_str(out: &mut String, text: &str, ascii: bool) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            c if ascii && !c.is_ascii() => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

fn write_num(out: &mut String, n: &Num) {
    match n {
        Num::Int(i) => out.push_str(&i.to_string()),
        Num::BigInt(i) => out.push_str(&i.to_string()),
        Num::Float(f) => out.push_str(&format_float(*f)),
        // A literal from the input or the program: kept as written (as jq
        // 1.7 does) unless it has an exponent, which jq would canonicalize.
        Num::Dec(text) => match text.parse::<f64>() {
            Ok(f) if f.is_finite() && !text.contains(['e', 'E']) => out.push_str(text),
            Ok(f) => out.push_str(&format_float(f)),
            Err(_) => out.push_str(text),
        },
    }
}

/// A double the way jq's dtoa-based printer writes it.
pub(super) fn format_float(x: f64) -> String {
    if x.is_nan() {
        return "null".into();
    }
    if x.is_infinite() {
        return format_float(f64::MAX.copysign(x));
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0" } else { "0" }.into();
    }
    let sign = if x < 0.0 { "-" } else { "" };
    let sci = format!("{:e}", x.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let exp: i32 = exp.parse().unwrap_or(0);
    let decpt = exp + 1;
    let nd = digits.len() as i32;
    let body = if decpt <= -4 || decpt > nd + 15 {
        let (first, rest) = digits.split_at(1);
        let point = if rest.is_empty() { "" } else { "." };
        let esign = if exp < 0 { '-' } else { '+' };
        format!("{first}{point}{rest}e{esign}{:02}", exp.abs())
    } else if decpt <= 0 {
        format!("0.{}{digits}", "0".repeat((-decpt) as usize))
    } else if decpt >= nd {
        format!("{digits}{}", "0".repeat((decpt - nd) as usize))
    } else {
        let (int, frac) = digits.split_at(decpt as usize);
        format!("{int}.{frac}")
    };
    format!("{sign}{body}")
}

#[cfg(test)]
mod tests {
    use super::format_float;

    #[test]
    fn floats_print_like_jq() {
        let cases = [
            (1.5, "1.5"),
            (3.0, "3"),
            (1e17, "1e+17"),
            (1e-5, "1e-05"),
            (0.0001, "0.0001"),
            (1e100, "1e+100"),
            (123456789.123, "123456789.123"),
            (100000000000000020.0, "100000000000000020"),
            (0.1 + 0.2, "0.30000000000000004"),
            (-0.0, "-0"),
            (f64::INFINITY, "1.7976931348623157e+308"),
            (f64::NAN, "null"),
        ];
        for (x, want) in cases {
            assert_eq!(format_float(x), want, "{x}");
        }
    }
}
