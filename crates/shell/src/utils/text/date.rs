//! `date`: the time from the shell's [`crate::limits::Clock`], shown in UTC.
//!
//! The isolate has no time zone database, so every time is UTC (`%Z` is
//! `UTC`, `%z` `+0000`) whether or not `-u` is given. `-d` accepts
//! `@EPOCH`, ISO dates (`2024-01-15`, `2024-01-15 10:30[:00]`,
//! `2024-01-15T10:30:00Z`), `now`/`today`/`yesterday`/`tomorrow`, and
//! trailing relative items such as `+1 day` or `3 hours ago`.

use super::{flag, getopt, usage, with_arg, Opt, Parsed};
use crate::limits::Abort;
use crate::utils::civil::{civil_from_days, days_from_civil};
use crate::utils::Ctx;

const DAYS: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];
const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// A broken-down UTC time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Civil {
    year: i64,
    month: u32,
    day: u32,
    hour: u32,
    minute: u32,
    second: u32,
    nanos: u32,
    /// 0 = Sunday.
    weekday: u32,
    /// 0-based day of the year.
    yearday: u32,
}

fn is_leap(year: i64) -> bool {
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
}

impl Civil {
    fn from_unix(seconds: i64, nanos: u32) -> Civil {
        let days = seconds.div_euclid(86_400);
        let secs = seconds.rem_euclid(86_400) as u32;
        let (year, month, day) = civil_from_days(days);
        Civil {
            year,
            month,
            day,
            hour: secs / 3600,
            minute: secs / 60 % 60,
            second: secs % 60,
            nanos,
            weekday: (days + 4).rem_euclid(7) as u32,
            yearday: (days - days_from_civil(year, 1, 1)) as u32,
        }
    }

    fn unix(&self) -> i64 {
        days_from_civil(self.year, self.month, self.day) * 86_400
            + i64::from(self.hour * 3600 + self.minute * 60 + self.second)
    }

    /// ISO 8601 week number and week-based year.
    fn iso_week(&self) -> (i64, u32) {
        let weekday = (self.weekday + 6) % 7; // Monday = 0
        let yday = i64::from(self.yearday);
        let week = (yday - i64::from(weekday) + 10) / 7;
        if week < 1 {
            let previous = self.year - 1;
            let days = if is_leap(previous) { 366 } else { 365 };
            let shifted = Civil {
                year: previous,
                yearday: (yday + days) as u32,
                ..*self
            };
            return shifted.iso_week();
        }
        let days = if is_leap(self.year) { 366 } else { 365 };
        if week == 53 && yday - i64::from(weekday) + 3 >= days {
            return (self.year + 1, 1);
        }
        (self.year, week as u32)
    }
}

const DATE_OPTS: &[Opt] = &[
    flag('u', "utc"),
    flag('u', "universal"),
    with_arg('d', "date"),
    flag('R', "rfc-email"),
    with_arg('r', "reference"),
    with_arg('\u{1}', "iso-8601"),
    flag('\u{2}', "I"),
];

/// Parses `date`'s options (for running it, and for `auto`'s check).
pub(super) fn parse_options(argv: &[String]) -> Result<Parsed, String> {
    // `-I` takes an optional attached argument; rewrite it to the long form.
    let args: Vec<String> = argv[1..]
        .iter()
        .map(|a| match a.strip_prefix("-I") {
            Some("") => "--iso-8601=date".to_string(),
            Some(rest) if !a.starts_with("--") => format!("--iso-8601={rest}"),
            _ => a.clone(),
        })
        .map(|a| {
            if a == "--iso-8601" {
                "--iso-8601=date".to_string()
            } else {
                a
            }
        })
        .collect();
    getopt(&args, DATE_OPTS)
}

pub(super) fn date(ctx: &mut Ctx<'_>, argv: &[String]) -> Result<i32, Abort> {
    let parsed = match parse_options(argv) {
        Ok(p) => p,
        Err(message) => return usage(ctx, "date", &message, 1),
    };
    let now_ms = ctx.clock.now_ms() as i64;
    let mut when = (
        now_ms.div_euclid(1000),
        (now_ms.rem_euclid(1000) * 1_000_000) as u32,
    );
    if let Some(file) = parsed.value('r') {
        let node = ctx.path(file).and_then(|p| ctx.fs.stat(&p, true));
        match node {
            Ok(node) => when = (node.mtime.div_euclid(1000), 0),
            Err(error) => return ctx.fs_error("date", file, &error).map(|()| 1),
        }
    }
    if let Some(text) = parsed.value('d') {
        match parse_date(text, when.0) {
            Some(seconds) => when = (seconds, 0),
            None => {
                ctx.error("date", &format!("invalid date ‘{text}’"))?;
                return Ok(1);
            }
        }
    }
    let format = match date_format(&parsed) {
        Ok(f) => f,
        Err(message) => return usage(ctx, "date", &message, 1),
    };
    let civil = Civil::from_unix(when.0, when.1);
    ctx.stdout
        .write_str(&format!("{}\n", render(&format, &civil)))
        .map(|()| 0)
}

/// The format to print with: `+FORMAT`, `-I`, `-R` or the default.
fn date_format(parsed: &super::Parsed) -> Result<String, String> {
    if let Some(operand) = parsed.operands.first() {
        return match operand.strip_prefix('+') {
            Some(format) if parsed.operands.len() == 1 => Ok(format.to_string()),
            Some(_) => Err(format!("extra operand ‘{}’", parsed.operands[1])),
            None => Err(format!("invalid date ‘{operand}’")),
        };
    }
    if let Some(precision) = parsed.value('\u{1}') {
        return match precision {
            "date" | "" => Ok("%F".to_string()),
            "hours" => Ok("%FT%H%:z".to_string()),
            "minutes" => Ok("%FT%H:%M%:z".to_string()),
            "seconds" => Ok("%FT%T%:z".to_string()),
            "ns" => Ok("%FT%T,%N%:z".to_string()),
            other => Err(format!("invalid argument ‘{other}’ for ‘--iso-8601’")),
        };
    }
    if parsed.has('R') {
        return Ok("%a, %d %b %Y %T %z".to_string());
    }
    Ok("%a %b %e %H:%M:%S %Z %Y".to_string())
}

/// Parses a `-d` string to Unix seconds; `now` is the current second.
fn parse_date(text: &str, now: i64) -> Option<i64> {
    let text = text.trim();
    if let Some(epoch) = text.strip_prefix('@') {
        return epoch.trim().parse::<f64>().ok().map(|s| s.floor() as i64);
    }
    let lower = text.to_ascii_lowercase();
    let (base, relative) = split_relative(&lower);
    let base = base.as_str();
    let midnight = |t: i64| t - t.rem_euclid(86_400);
    let start = match base {
        "" | "now" => now,
        "today" => now,
        "yesterday" => now - 86_400,
        "tomorrow" => now + 86_400,
        "midnight" => midnight(now),
        _ => parse_absolute(base)?,
    };
    apply_relative(start, relative)
}

/// Splits off trailing relative items (`+1 day`, `2 weeks ago`, `next month`).
fn split_relative(text: &str) -> (String, Vec<&str>) {
    let words: Vec<&str> = text.split_whitespace().collect();
    let is_unit = |w: &str| relative_unit(w).is_some();
    let first_unit = words.iter().position(|w| {
        is_unit(w)
            || w.starts_with('+')
            || (w.starts_with('-') && w.len() > 1 && w[1..].bytes().all(|b| b.is_ascii_digit()))
    });
    match first_unit {
        Some(index) => {
            let index =
                if index > 0 && words[index - 1].parse::<i64>().is_ok() && is_unit(words[index]) {
                    index - 1
                } else {
                    index
                };
            (words[..index].join(" "), words[index..].to_vec())
        }
        None => (text.to_string(), Vec::new()),
    }
}

/// Seconds in a relative unit, if `word` is one (months/years handled by the caller).
fn relative_unit(word: &str) -> Option<i64> {
    let word = word.trim_end_matches('s');
    match word {
        "sec" | "second" => Some(1),
        "min" | "minute" => Some(60),
        "hour" => Some(3600),
        "day" => Some(86_400),
        "week" | "fortnight" if word == "week" => Some(7 * 86_400),
        "fortnight" => Some(14 * 86_400),
        "month" => Some(-1),
        "year" => Some(-12),
        _ => None,
    }
}

fn apply_relative(mut time: i64, items: Vec<&str>) -> Option<i64> {
    let mut count: Option<i64> = None;
    let mut iter = items.into_iter().peekable();
    while let Some(word) = iter.next() {
        if let Ok(n) = word.trim_start_matches('+').parse::<i64>() {
            count = Some(n);
            continue;
        }
        let n = match word {
            "next" => 1,
            "last" => -1,
            _ => count.take().unwrap_or(1),
        };
        let (n, word) = if word == "next" || word == "last" {
            (n, iter.next()?)
        } else {
            (n, word)
        };
        let unit = relative_unit(word)?;
        let ago = iter.peek() == Some(&"ago");
        if ago {
            iter.next();
        }
        let n = if ago { -n } else { n };
        time = if unit < 0 {
            add_months(time, n * -unit)
        } else {
            time + n * unit
        };
    }
    if count.is_some() {
        return None;
    }
    Some(time)
}

fn add_months(time: i64, months: i64) -> i64 {
    let civil = Civil::from_unix(time, 0);
    let total = civil.year * 12 + i64::from(civil.month - 1) + months;
    let moved = Civil {
        year: total.div_euclid(12),
        month: (total.rem_euclid(12) + 1) as u32,
        ..civil
    };
    moved.unix()
}

/// `YYYY-MM-DD[( |T)HH:MM[:SS[.frac]]][Z|+HH:MM]`, or `HH:MM[:SS]` today.
fn parse_absolute(text: &str) -> Option<i64> {
    let (date, time) = match text.split_once(['t', ' ']) {
        Some((d, t)) => (d, Some(t.trim())),
        None => (text, None),
    };
    let mut parts = date.splitn(3, ['-', '/']);
    let year: i64 = parts.next()?.parse().ok()?;
    let month: u32 = parts.next()?.parse().ok()?;
    let day: u32 = parts.next()?.parse().ok()?;
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return None;
    }
    let base = days_from_civil(year, month, day) * 86_400;
    let Some(time) = time else { return Some(base) };
    let (clock, offset) = split_zone(time)?;
    let mut fields = clock.split(':');
    let hour: i64 = fields.next()?.parse().ok()?;
    let minute: i64 = fields.next().map_or(Some(0), |m| m.parse().ok())?;
    let second: f64 = fields.next().map_or(Some(0.0), |s| s.parse().ok())?;
    if hour > 24 || minute > 59 || second >= 61.0 {
        return None;
    }
    Some(base + hour * 3600 + minute * 60 + second as i64 - offset)
}

/// Splits a trailing `Z`, `UTC` or `±HH[:MM]` zone off a time; the offset in seconds.
fn split_zone(time: &str) -> Option<(&str, i64)> {
    if let Some(clock) = time
        .strip_suffix('z')
        .or_else(|| time.strip_suffix(" utc"))
        .or_else(|| time.strip_suffix("utc"))
    {
        return Some((clock.trim(), 0));
    }
    match time.rfind(['+', '-']) {
        Some(at) => {
            let zone = time[at + 1..].replace(':', "");
            let hours: i64 = zone.get(..2)?.parse().ok()?;
            let minutes: i64 = zone
                .get(2..)
                .filter(|m| !m.is_empty())
                .map_or(Some(0), |m| m.parse().ok())?;
            let sign = if &time[at..=at] == "-" { -1 } else { 1 };
            Some((time[..at].trim(), sign * (hours * 3600 + minutes * 60)))
        }
        None => Some((time, 0)),
    }
}

/// Expands a `strftime` format, with GNU's `-`, `_`, `0`, `^`, `#` flags and widths.
fn render(format: &str, t: &Civil) -> String {
    let mut out = String::new();
    let mut chars = format.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let mut flag = None;
        while let Some(f) = chars.next_if(|f| "-_0^#".contains(*f)) {
            flag = Some(f);
        }
        let mut width = String::new();
        while let Some(d) = chars.next_if(char::is_ascii_digit) {
            width.push(d);
        }
        let colon = chars.next_if_eq(&':').is_some();
        let Some(spec) = chars.next() else {
            out.push('%');
            break;
        };
        let field = conversion(spec, colon, t);
        out.push_str(&pad(field, flag, width.parse().ok()));
    }
    out
}

/// Formats Unix `seconds` in UTC with a `strftime` format (for other utilities).
pub(crate) fn format_utc(format: &str, seconds: i64) -> String {
    render(format, &Civil::from_unix(seconds, 0))
}

/// One conversion: its text and, for numbers, the default pad and width.
enum Field {
    Number(i64, char, usize),
    Text(String),
}

fn conversion(spec: char, colon: bool, t: &Civil) -> Field {
    use Field::{Number, Text};
    let hour12 = if t.hour % 12 == 0 { 12 } else { t.hour % 12 };
    let day_name = DAYS[t.weekday as usize];
    let month_name = MONTHS[(t.month - 1) as usize];
    match spec {
        'Y' => Number(t.year, '0', 1),
        'C' => Number(t.year.div_euclid(100), '0', 2),
        'y' => Number(t.year.rem_euclid(100), '0', 2),
        'm' => Number(i64::from(t.month), '0', 2),
        'd' => Number(i64::from(t.day), '0', 2),
        'e' => Number(i64::from(t.day), ' ', 2),
        'H' => Number(i64::from(t.hour), '0', 2),
        'k' => Number(i64::from(t.hour), ' ', 2),
        'I' => Number(i64::from(hour12), '0', 2),
        'l' => Number(i64::from(hour12), ' ', 2),
        'M' => Number(i64::from(t.minute), '0', 2),
        'S' => Number(i64::from(t.second), '0', 2),
        'N' => Text(format!("{:09}", t.nanos)),
        's' => Number(t.unix(), '0', 1),
        'j' => Number(i64::from(t.yearday + 1), '0', 3),
        'u' => Number(
            i64::from(if t.weekday == 0 { 7 } else { t.weekday }),
            '0',
            1,
        ),
        'w' => Number(i64::from(t.weekday), '0', 1),
        'U' => Number(i64::from((t.yearday + 7 - t.weekday) / 7), '0', 2),
        'W' => Number(i64::from((t.yearday + 7 - (t.weekday + 6) % 7) / 7), '0', 2),
        'V' => Number(i64::from(t.iso_week().1), '0', 2),
        'G' => Number(t.iso_week().0, '0', 1),
        'g' => Number(t.iso_week().0.rem_euclid(100), '0', 2),
        'q' => Number(i64::from((t.month - 1) / 3 + 1), '0', 1),
        'a' => Text(day_name[..3].to_string()),
        'A' => Text(day_name.to_string()),
        'b' | 'h' => Text(month_name[..3].to_string()),
        'B' => Text(month_name.to_string()),
        'p' => Text(if t.hour < 12 { "AM" } else { "PM" }.to_string()),
        'P' => Text(if t.hour < 12 { "am" } else { "pm" }.to_string()),
        'Z' => Text("UTC".to_string()),
        'z' if colon => Text("+00:00".to_string()),
        'z' => Text("+0000".to_string()),
        'F' => Text(render("%Y-%m-%d", t)),
        'T' => Text(render("%H:%M:%S", t)),
        'D' | 'x' => Text(render("%m/%d/%y", t)),
        'R' => Text(render("%H:%M", t)),
        'r' => Text(render("%I:%M:%S %p", t)),
        'X' => Text(render("%H:%M:%S", t)),
        'c' => Text(render("%a %b %e %H:%M:%S %Y", t)),
        'n' => Text("\n".to_string()),
        't' => Text("\t".to_string()),
        '%' => Text("%".to_string()),
        other => Text(format!("%{other}")),
    }
}

fn pad(field: Field, flag: Option<char>, width: Option<usize>) -> String {
    match field {
        Field::Number(value, default_pad, default_width) => {
            let (fill, width) = match flag {
                Some('-') => (' ', 0),
                Some('_') => (' ', width.unwrap_or(default_width)),
                Some('0') => ('0', width.unwrap_or(default_width)),
                _ => (default_pad, width.unwrap_or(default_width)),
            };
            let digits = value.unsigned_abs().to_string();
            let sign = if value < 0 { "-" } else { "" };
            let room = width.saturating_sub(digits.len() + sign.len());
            if fill == '0' {
                format!("{sign}{}{digits}", "0".repeat(room))
            } else {
                format!("{}{sign}{digits}", " ".repeat(room))
            }
        }
        Field::Text(text) => {
            let text = match flag {
                Some('^') => text.to_uppercase(),
                Some('#') => text.to_lowercase(),
                _ => text,
            };
            let fill = if flag == Some('0') { '0' } else { ' ' };
            let room = width.unwrap_or(0).saturating_sub(text.chars().count());
            format!("{}{text}", fill.to_string().repeat(room))
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::utils::testing::{db, run};

    fn date(args: &[&str]) -> String {
        let mut argv = vec!["date"];
        argv.extend_from_slice(args);
        run(&db(), &argv, "").stdout
    }

    #[test]
    fn default_format_uses_the_clock() {
        // The test clock reads 1_700_000_000_000 ms.
        assert_eq!(date(&[]), "Tue Nov 14 22:13:20 UTC 2023\n");
        assert_eq!(date(&["-u", "+%s"]), "1700000000\n");
    }

    #[test]
    fn conversions_match_gnu() {
        let all = "+%Y-%m-%d %H:%M:%S %s %F %T %a %A %b %B %j %e %k %l %I %p %P %Z %z %:z %D %R %r %c %x %X %u %w %U %W %V %G %g %C %N %y %-d %_m %^a %10Y";
        assert_eq!(
            date(&["-u", "-d", "@1700000000", all]),
            "2023-11-14 22:13:20 1700000000 2023-11-14 22:13:20 Tue Tuesday Nov November 318 14 22 10 10 PM pm UTC +0000 +00:00 11/14/23 22:13 10:13:20 PM Tue Nov 14 22:13:20 2023 11/14/23 22:13:20 2 2 46 46 46 2023 23 20 000000000 23 14 11 TUE 0000002023\n"
        );
    }

    #[test]
    fn parses_dates_and_iso_output() {
        assert_eq!(
            date(&["-u", "-d", "2024-02-29 13:05", "+%s"]),
            "1709211900\n"
        );
        assert_eq!(
            date(&["-d", "2024-02-29T13:05:09Z"]),
            "Thu Feb 29 13:05:09 UTC 2024\n"
        );
        assert_eq!(date(&["-d", "2024-01-15", "+%A"]), "Monday\n");
        assert_eq!(date(&["-d", "2024-01-15 +1 day", "+%F"]), "2024-01-16\n");
        assert_eq!(date(&["-d", "2024-01-31 1 month", "+%F"]), "2024-03-02\n");
        assert_eq!(
            date(&["-d", "2024-01-15 2 days ago", "+%F"]),
            "2024-01-13\n"
        );
        assert_eq!(date(&["-d", "yesterday", "+%F"]), "2023-11-13\n");
        assert_eq!(
            date(&["-d", "2024-01-01T00:00:00+01:00", "+%F %T"]),
            "2023-12-31 23:00:00\n"
        );
        assert_eq!(date(&["-u", "-I", "-d", "@0"]), "1970-01-01\n");
        assert_eq!(
            date(&["-Iseconds", "-d", "@0"]),
            "1970-01-01T00:00:00+00:00\n"
        );
        assert_eq!(
            date(&["-R", "-d", "@0"]),
            "Thu, 01 Jan 1970 00:00:00 +0000\n"
        );
        let bad = run(&db(), &["date", "-d", "bad"], "");
        assert_eq!(
            (bad.status, bad.stderr.as_str()),
            (1, "date: invalid date ‘bad’\n")
        );
    }

    #[test]
    fn iso_weeks_at_year_edges() {
        assert_eq!(
            date(&["-d", "2021-01-03", "+%G-W%V %U %W"]),
            "2020-W53 01 00\n"
        );
        assert_eq!(date(&["-d", "2024-12-30", "+%G-W%V"]), "2025-W01\n");
    }
}
