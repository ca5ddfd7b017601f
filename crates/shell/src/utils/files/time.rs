//! Dates in UTC (the workspace has no time zone): formatting as `ls`,
//! `stat` and `tar` print them, and parsing `touch -d`/`-t` stamps.

use crate::utils::civil::{civil_from_days, days_from_civil};

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// A broken-down UTC time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Civil {
    pub year: i64,
    pub month: u32,
    pub day: u32,
    pub hour: u32,
    pub minute: u32,
    pub second: u32,
}

impl Civil {
    pub(super) fn from_secs(secs: i64) -> Civil {
        let (year, month, day) = civil_from_days(secs.div_euclid(86_400));
        let rem = secs.rem_euclid(86_400) as u32;
        Civil {
            year,
            month,
            day,
            hour: rem / 3600,
            minute: rem / 60 % 60,
            second: rem % 60,
        }
    }

    pub(super) fn to_secs(self) -> i64 {
        days_from_civil(self.year, self.month, self.day) * 86_400
            + i64::from(self.hour * 3600 + self.minute * 60 + self.second)
    }

    fn valid(self) -> bool {
        (1..=12).contains(&self.month)
            && (1..=31).contains(&self.day)
            && self.hour < 24
            && self.minute < 60
            && self.second < 61
    }
}

/// `ls -l`'s date: `Nov 30 12:08` within six months of now, else `Nov 30  2020`.
pub(super) fn ls_date(mtime_ms: i64, now_ms: i64) -> String {
    const SIX_MONTHS_MS: i64 = 15_778_476_000;
    let t = Civil::from_secs(mtime_ms.div_euclid(1000));
    let month = MONTHS[t.month as usize - 1];
    if mtime_ms > now_ms || now_ms - mtime_ms > SIX_MONTHS_MS {
        format!("{month} {:>2}  {}", t.day, t.year)
    } else {
        format!("{month} {:>2} {:02}:{:02}", t.day, t.hour, t.minute)
    }
}

/// `YYYY-MM-DD HH:MM`, as `tar -tv` prints.
pub(super) fn minutes(mtime_ms: i64) -> String {
    let t = Civil::from_secs(mtime_ms.div_euclid(1000));
    format!(
        "{}-{:02}-{:02} {:02}:{:02}",
        t.year, t.month, t.day, t.hour, t.minute
    )
}

/// `YYYY-MM-DD HH:MM:SS.nnnnnnnnn +0000`, as `stat` prints.
pub(super) fn full(mtime_ms: i64) -> String {
    let t = Civil::from_secs(mtime_ms.div_euclid(1000));
    let nanos = mtime_ms.rem_euclid(1000) * 1_000_000;
    format!(
        "{}-{:02}-{:02} {:02}:{:02}:{:02}.{nanos:09} +0000",
        t.year, t.month, t.day, t.hour, t.minute, t.second
    )
}

const WEEKDAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];

/// Seconds with ten fractional digits, as `find -printf` prints them.
fn seconds(mtime_ms: i64, whole: i64) -> String {
    format!("{whole:02}.{:03}0000000", mtime_ms.rem_euclid(1000))
}

/// `find -printf %t`: `Tue Nov 14 22:13:20.0000000000 2023`.
pub(super) fn ctime(mtime_ms: i64) -> String {
    let secs = mtime_ms.div_euclid(1000);
    let t = Civil::from_secs(secs);
    format!(
        "{} {} {:>2} {:02}:{:02}:{} {}",
        WEEKDAYS[secs.div_euclid(86_400).rem_euclid(7) as usize],
        MONTHS[t.month as usize - 1],
        t.day,
        t.hour,
        t.minute,
        seconds(mtime_ms, i64::from(t.second)),
        t.year
    )
}

/// One `find -printf %Tx` field (`@`, `Y`, `m`, `d`, `H`, `M`, `S`, `F`, `T`...).
pub(super) fn field(mtime_ms: i64, field: char) -> String {
    let secs = mtime_ms.div_euclid(1000);
    let t = Civil::from_secs(secs);
    match field {
        '@' => seconds(mtime_ms, secs),
        'Y' => t.year.to_string(),
        'm' => format!("{:02}", t.month),
        'd' => format!("{:02}", t.day),
        'H' | 'k' => format!("{:02}", t.hour),
        'M' => format!("{:02}", t.minute),
        'S' => seconds(mtime_ms, i64::from(t.second)),
        'F' => format!("{}-{:02}-{:02}", t.year, t.month, t.day),
        'T' => format!(
            "{:02}:{:02}:{}",
            t.hour,
            t.minute,
            seconds(mtime_ms, i64::from(t.second))
        ),
        'b' => MONTHS[t.month as usize - 1].to_string(),
        'a' => WEEKDAYS[secs.div_euclid(86_400).rem_euclid(7) as usize].to_string(),
        's' => secs.to_string(),
        other => format!("%T{other}"),
    }
}

/// Parses `touch -d`: `@SECS`, `YYYY-MM-DD`, `YYYY-MM-DD[T ]HH:MM[:SS]`,
/// optionally ending in `Z` or `UTC`. Milliseconds since the epoch.
pub(super) fn parse_date(text: &str) -> Option<i64> {
    let text = text.trim();
    if let Some(secs) = text.strip_prefix('@') {
        return secs.parse::<i64>().ok().map(|s| s * 1000);
    }
    let text = text
        .trim_end_matches("UTC")
        .trim_end_matches('Z')
        .trim_end();
    let (date, clock) = match text.split_once(['T', ' ']) {
        Some((d, c)) => (d, c.trim()),
        None => (text, ""),
    };
    let mut parts = date.split('-');
    let year = parts.next()?.parse().ok()?;
    let month = parts.next()?.parse().ok()?;
    let day = parts.next()?.parse().ok()?;
    if parts.next().is_some() {
        return None;
    }
    let (clock, fraction) = clock.split_once('.').unwrap_or((clock, ""));
    let mut hms = clock.split(':').filter(|s| !s.is_empty());
    let mut next = || hms.next().map_or(Some(0), |s| s.parse().ok());
    let time = Civil {
        year,
        month,
        day,
        hour: next()?,
        minute: next()?,
        second: next()?,
    };
    if !fraction.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let millis: i64 = format!("{fraction:0<3}")[..3].parse().unwrap_or(0);
    time.valid().then(|| time.to_secs() * 1000 + millis)
}

/// Parses `touch -t [[CC]YY]MMDDhhmm[.ss]`; `now_ms` supplies the default year.
pub(super) fn parse_stamp(text: &str, now_ms: i64) -> Option<i64> {
    let (digits, seconds) = match text.split_once('.') {
        Some((d, s)) if s.len() == 2 => (d, s.parse().ok()?),
        Some(_) => return None,
        None => (text, 0),
    };
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let num = |s: &str| s.parse::<u32>().ok();
    let (year, rest) = match digits.len() {
        8 => (Civil::from_secs(now_ms / 1000).year, digits),
        10 => {
            let yy = i64::from(num(&digits[..2])?);
            (if yy < 69 { 2000 + yy } else { 1900 + yy }, &digits[2..])
        }
        12 => (i64::from(num(&digits[..4])?), &digits[4..]),
        _ => return None,
    };
    let time = Civil {
        year,
        month: num(&rest[0..2])?,
        day: num(&rest[2..4])?,
        hour: num(&rest[4..6])?,
        minute: num(&rest[6..8])?,
        second: seconds,
    };
    time.valid().then(|| time.to_secs() * 1000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_civil_dates() {
        // 2023-11-14 22:13:20 UTC, checked with `date -u -d @1700000000`.
        let t = Civil::from_secs(1_700_000_000);
        assert_eq!((t.year, t.month, t.day), (2023, 11, 14));
        assert_eq!((t.hour, t.minute, t.second), (22, 13, 20));
        assert_eq!(t.to_secs(), 1_700_000_000);
        assert_eq!(Civil::from_secs(951_782_400).day, 29); // 2000-02-29
    }

    #[test]
    fn formats_like_gnu() {
        let now = 1_700_000_000_000;
        assert_eq!(ls_date(now - 60_000, now), "Nov 14 22:12");
        assert_eq!(ls_date(1_600_000_000_000, now), "Sep 13  2020");
        assert_eq!(
            full(1_700_000_000_123),
            "2023-11-14 22:13:20.123000000 +0000"
        );
        assert_eq!(minutes(now), "2023-11-14 22:13");
        // GNU `find -printf '%T@|%t|%TF %TT'` of a file touched at @1700000000.123.
        let ms = 1_700_000_000_123;
        assert_eq!(field(ms, '@'), "1700000000.1230000000");
        assert_eq!(ctime(ms), "Tue Nov 14 22:13:20.1230000000 2023");
        assert_eq!(
            format!("{} {}", field(ms, 'F'), field(ms, 'T')),
            "2023-11-14 22:13:20.1230000000"
        );
    }

    #[test]
    fn parses_touch_dates() {
        assert_eq!(parse_date("@1700000000"), Some(1_700_000_000_000));
        assert_eq!(parse_date("2023-11-14 22:13:20"), Some(1_700_000_000_000));
        assert_eq!(parse_date("2023-11-14T22:13:20Z"), Some(1_700_000_000_000));
        assert_eq!(parse_date("2023-11-14"), Some(1_699_920_000_000));
        assert_eq!(parse_date("yesterday"), None);
        assert_eq!(parse_date("2023-11-14 22:13:20.5"), Some(1_700_000_000_500));
        assert_eq!(parse_date("2023-11-14 22:13:20.é"), None);
        assert_eq!(parse_stamp("202311142213.20", 0), Some(1_700_000_000_000));
        assert_eq!(parse_stamp("2311142213.20", 0), Some(1_700_000_000_000));
        assert_eq!(parse_stamp("13", 0), None);
    }
}
