//! Cron expressions and their next due time, in a time zone.
//!
//! Five fields (`minute hour day-of-month month day-of-week`), or six with a
//! leading `second` field, which schedules finer than a minute need (and the
//! tests, which cannot wait minutes). Each field takes `*`, numbers, ranges
//! `a-b`, steps `*/n`, `a-b/n`, `a/n`, and comma lists; months and weekdays
//! also take names (`JAN`, `MON`); Sunday is 0 or 7. `@yearly`, `@monthly`,
//! `@weekly`, `@daily` (`@midnight`) and `@hourly` are shorthands. As in
//! classic cron, when both day fields are restricted a day matching either
//! one matches.
//!
//! Times are matched on the wall clock of the schedule's IANA time zone
//! (via `chrono-tz`), so `0 9 * * MON-FRI` in `Europe/Paris` stays at 09:00
//! local across daylight-saving changes. Two edge cases, chosen and tested:
//! a wall time that does not exist (skipped by a spring-forward jump) is
//! skipped; a wall time that occurs twice (fall-back) runs once, at its
//! first occurrence.

use chrono::{
    DateTime, Datelike, Duration, LocalResult, NaiveDate, NaiveDateTime, TimeZone, Timelike,
};
use chrono_tz::Tz;

/// Why a cron expression was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid cron expression {expr:?}: {reason}")]
pub struct CronError {
    pub expr: String,
    pub reason: String,
}

/// A parsed cron expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cron {
    seconds: u64,
    minutes: u64,
    hours: u64,
    days: u64,
    months: u64,
    weekdays: u64,
    days_restricted: bool,
    weekdays_restricted: bool,
}

const MONTHS: [&str; 12] = [
    "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC",
];
const WEEKDAYS: [&str; 7] = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"];

/// Iterations [`Cron::next_after`] may take: enough to cross years of
/// non-matching days, bounded for expressions that never match (`0 0 30 2 *`).
const MAX_STEPS: usize = 100_000;

struct Field {
    name: &'static str,
    min: u32,
    max: u32,
    names: &'static [&'static str],
    /// The first name stands for this number.
    names_from: u32,
}

const SECOND: Field = Field {
    name: "second",
    min: 0,
    max: 59,
    names: &[],
    names_from: 0,
};
const MINUTE: Field = Field {
    name: "minute",
    min: 0,
    max: 59,
    names: &[],
    names_from: 0,
};
const HOUR: Field = Field {
    name: "hour",
    min: 0,
    max: 23,
    names: &[],
    names_from: 0,
};
const DAY: Field = Field {
    name: "day of month",
    min: 1,
    max: 31,
    names: &[],
    names_from: 0,
};
const MONTH: Field = Field {
    name: "month",
    min: 1,
    max: 12,
    names: &MONTHS,
    names_from: 1,
};
// 7 is accepted for Sunday and folded onto 0 below.
const WEEKDAY: Field = Field {
    name: "day of week",
    min: 0,
    max: 7,
    names: &WEEKDAYS,
    names_from: 0,
};

impl Field {
    fn value(&self, text: &str) -> Result<u32, String> {
        if let Some(i) = self.names.iter().position(|n| n.eq_ignore_ascii_case(text)) {
            return Ok(self.names_from + i as u32);
        }
        let value: u32 = text
            .parse()
            .map_err(|_| format!("{} {text:?} is not a number", self.name))?;
        if value < self.min || value > self.max {
            return Err(format!(
                "{} {value} is outside {}-{}",
                self.name, self.min, self.max
            ));
        }
        Ok(value)
    }

    /// The set of values `text` names, as a bit set.
    fn parse(&self, text: &str) -> Result<u64, String> {
        let mut set = 0u64;
        for part in text.split(',') {
            let (range, step) = match part.split_once('/') {
                Some((range, step)) => {
                    let step: u32 = step.parse().ok().filter(|s| *s > 0).ok_or_else(|| {
                        format!("{} step {step:?} is not a positive number", self.name)
                    })?;
                    (range, step)
                }
                None => (part, 1),
            };
            let (low, high) = if range == "*" {
                (self.min, self.max)
            } else if let Some((a, b)) = range.split_once('-') {
                let (a, b) = (self.value(a)?, self.value(b)?);
                if a > b {
                    return Err(format!("{} range {range:?} runs backwards", self.name));
                }
                (a, b)
            } else {
                let a = self.value(range)?;
                // `a/n` means from a to the end in steps of n.
                (a, if part.contains('/') { self.max } else { a })
            };
            let mut v = low;
            while v <= high {
                set |= 1 << v;
                v += step;
            }
        }
        Ok(set)
    }
}

/// The smallest member of `set` at or above `from`.
fn next_in(set: u64, from: u32) -> Option<u32> {
    if from >= 64 {
        return None;
    }
    let masked = set & (!0u64 << from);
    (masked != 0).then(|| masked.trailing_zeros())
}

#[cfg(test)]
thread_local! {
    /// Expressions parsed on this thread, so a test can see that work done
    /// per due time does not parse again.
    pub(crate) static PARSES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

impl Cron {
    /// Parses an expression.
    pub fn parse(expr: &str) -> Result<Cron, CronError> {
        #[cfg(test)]
        PARSES.with(|parses| parses.set(parses.get() + 1));
        Self::parse_fields(expr).map_err(|reason| CronError {
            expr: expr.to_string(),
            reason,
        })
    }

    fn parse_fields(expr: &str) -> Result<Cron, String> {
        let expanded = match expr.trim() {
            "@yearly" | "@annually" => "0 0 1 1 *",
            "@monthly" => "0 0 1 * *",
            "@weekly" => "0 0 * * 0",
            "@daily" | "@midnight" => "0 0 * * *",
            "@hourly" => "0 * * * *",
            other if other.starts_with('@') => return Err(format!("unknown shorthand {other}")),
            other => other,
        };
        let fields: Vec<&str> = expanded.split_whitespace().collect();
        let (second, rest) = match fields.len() {
            5 => ("0", &fields[..]),
            6 => (fields[0], &fields[1..]),
            n => return Err(format!("{n} fields; use 5 (or 6 with seconds first)")),
        };
        let mut weekdays = WEEKDAY.parse(rest[4])?;
        if weekdays & (1 << 7) != 0 {
            weekdays = (weekdays & !(1 << 7)) | 1;
        }
        Ok(Cron {
            seconds: SECOND.parse(second)?,
            minutes: MINUTE.parse(rest[0])?,
            hours: HOUR.parse(rest[1])?,
            days: DAY.parse(rest[2])?,
            months: MONTH.parse(rest[3])?,
            weekdays,
            days_restricted: !rest[2].starts_with('*'),
            weekdays_restricted: !rest[4].starts_with('*'),
        })
    }

    fn day_matches(&self, date: NaiveDate) -> bool {
        let day = self.days & (1 << date.day()) != 0;
        let weekday = self.weekdays & (1 << date.weekday().num_days_from_sunday()) != 0;
        match (self.days_restricted, self.weekdays_restricted) {
            (true, true) => day || weekday,
            (true, false) => day,
            (false, true) => weekday,
            (false, false) => true,
        }
    }

    /// The first due time strictly after `after_ms` (milliseconds since the
    /// epoch), on the wall clock of `tz`; `None` if there is none within
    /// the search bound (an expression that never matches).
    pub fn next_after(&self, after_ms: i64, tz: Tz) -> Option<i64> {
        let after = DateTime::from_timestamp_millis(after_ms)?;
        // Start at the next whole second of local wall time.
        let local = after.with_timezone(&tz).naive_local();
        let mut t = local.with_nanosecond(0)? + Duration::seconds(1);
        for _ in 0..MAX_STEPS {
            if self.months & (1 << t.month()) == 0 {
                let (y, m) = if t.month() == 12 {
                    (t.year() + 1, 1)
                } else {
                    (t.year(), t.month() + 1)
                };
                t = NaiveDate::from_ymd_opt(y, m, 1)?.and_hms_opt(0, 0, 0)?;
                continue;
            }
            if !self.day_matches(t.date()) {
                t = (t.date() + Duration::days(1)).and_hms_opt(0, 0, 0)?;
                continue;
            }
            let Some(hour) = next_in(self.hours, t.hour()) else {
                t = (t.date() + Duration::days(1)).and_hms_opt(0, 0, 0)?;
                continue;
            };
            if hour != t.hour() {
                t = t.date().and_hms_opt(hour, 0, 0)?;
            }
            let Some(minute) = next_in(self.minutes, t.minute()) else {
                t = next_hour(t)?;
                continue;
            };
            if minute != t.minute() {
                t = t.date().and_hms_opt(t.hour(), minute, 0)?;
            }
            let Some(second) = next_in(self.seconds, t.second()) else {
                t = t.date().and_hms_opt(t.hour(), t.minute(), 0)? + Duration::minutes(1);
                continue;
            };
            t = t.date().and_hms_opt(t.hour(), t.minute(), second)?;
            match self.resolve(tz, t, after_ms) {
                Some(ms) => return Some(ms),
                None => t += Duration::seconds(1),
            }
        }
        None
    }

    /// The instant of wall time `t` in `tz` that is after `after_ms`: the
    /// first of two in a fall-back hour, none in a spring-forward gap.
    fn resolve(&self, tz: Tz, t: NaiveDateTime, after_ms: i64) -> Option<i64> {
        let instant = match tz.from_local_datetime(&t) {
            LocalResult::Single(dt) => dt.timestamp_millis(),
            // Only the first occurrence counts, so once it has passed the
            // second is never returned.
            LocalResult::Ambiguous(first, _) => first.timestamp_millis(),
            LocalResult::None => return None,
        };
        (instant > after_ms).then_some(instant)
    }
}

fn next_hour(t: NaiveDateTime) -> Option<NaiveDateTime> {
    Some(t.date().and_hms_opt(t.hour(), 0, 0)? + Duration::hours(1))
}

/// Parses an IANA time zone name (`UTC`, `Europe/Paris`).
pub fn time_zone(name: &str) -> Result<Tz, crate::SchedError> {
    name.parse::<Tz>()
        .map_err(|_| crate::SchedError::UnknownTimeZone(name.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(text: &str) -> i64 {
        DateTime::parse_from_rfc3339(text)
            .unwrap()
            .timestamp_millis()
    }

    fn iso(ms: i64) -> String {
        DateTime::from_timestamp_millis(ms)
            .unwrap()
            .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    }

    fn next(expr: &str, tz: &str, after: &str) -> Option<String> {
        Cron::parse(expr)
            .unwrap()
            .next_after(ms(after), time_zone(tz).unwrap())
            .map(iso)
    }

    #[test]
    fn simple_fields_in_utc() {
        assert_eq!(
            next("*/15 * * * *", "UTC", "2026-03-01T10:07:00Z").unwrap(),
            "2026-03-01T10:15:00Z"
        );
        // Strictly after: a due time equal to `after` is not returned.
        assert_eq!(
            next("*/15 * * * *", "UTC", "2026-03-01T10:15:00Z").unwrap(),
            "2026-03-01T10:30:00Z"
        );
        assert_eq!(
            next("0 9 * * MON-FRI", "UTC", "2026-03-06T09:00:00Z").unwrap(),
            "2026-03-09T09:00:00Z"
        );
        assert_eq!(
            next("30 23 31 12 *", "UTC", "2026-03-01T00:00:00Z").unwrap(),
            "2026-12-31T23:30:00Z"
        );
        assert_eq!(
            next("@hourly", "UTC", "2026-03-01T10:59:59Z").unwrap(),
            "2026-03-01T11:00:00Z"
        );
        assert_eq!(
            next("0 0 1 jan,jul *", "UTC", "2026-03-01T00:00:00Z").unwrap(),
            "2026-07-01T00:00:00Z"
        );
        assert_eq!(
            next("0 12 * * 7", "UTC", "2026-03-02T00:00:00Z").unwrap(),
            "2026-03-08T12:00:00Z"
        );
        assert_eq!(
            next("5/20 * * * *", "UTC", "2026-03-01T10:26:00Z").unwrap(),
            "2026-03-01T10:45:00Z"
        );
    }

    #[test]
    fn six_fields_have_seconds() {
        assert_eq!(
            next("*/2 * * * * *", "UTC", "2026-03-01T10:00:00.500Z").unwrap(),
            "2026-03-01T10:00:02Z"
        );
        assert_eq!(
            next("10,40 * * * * *", "UTC", "2026-03-01T10:00:41Z").unwrap(),
            "2026-03-01T10:01:10Z"
        );
    }

    #[test]
    fn day_of_month_or_day_of_week_when_both_restricted() {
        // The 13th, or any Friday: 2026-03-06 is a Friday before the 13th.
        assert_eq!(
            next("0 0 13 * FRI", "UTC", "2026-03-01T00:00:00Z").unwrap(),
            "2026-03-06T00:00:00Z"
        );
        assert_eq!(
            next("0 0 13 * *", "UTC", "2026-03-01T00:00:00Z").unwrap(),
            "2026-03-13T00:00:00Z"
        );
    }

    #[test]
    fn time_zones_follow_the_local_wall_clock() {
        // 09:00 in Paris is 08:00 UTC in winter and 07:00 UTC in summer.
        assert_eq!(
            next("0 9 * * *", "Europe/Paris", "2026-03-01T12:00:00Z").unwrap(),
            "2026-03-02T08:00:00Z"
        );
        assert_eq!(
            next("0 9 * * *", "Europe/Paris", "2026-07-01T12:00:00Z").unwrap(),
            "2026-07-02T07:00:00Z"
        );
        assert_eq!(
            next("0 9 * * *", "America/New_York", "2026-07-01T00:00:00Z").unwrap(),
            "2026-07-01T13:00:00Z"
        );
    }

    #[test]
    fn spring_forward_gap_is_skipped_and_fall_back_runs_once() {
        // 2026-03-29: Paris jumps from 02:00 to 03:00; 02:30 does not exist.
        assert_eq!(
            next("30 2 * * *", "Europe/Paris", "2026-03-28T12:00:00Z").unwrap(),
            "2026-03-30T00:30:00Z"
        );
        // 2026-10-25: 02:30 happens twice (CEST then CET); run at the first.
        let first = next("30 2 * * *", "Europe/Paris", "2026-10-24T12:00:00Z").unwrap();
        assert_eq!(first, "2026-10-25T00:30:00Z");
        let again = next("30 2 * * *", "Europe/Paris", &first).unwrap();
        assert_eq!(again, "2026-10-26T01:30:00Z", "the repeated hour ran twice");
    }

    #[test]
    fn bad_expressions_are_refused_with_a_reason() {
        for (expr, fragment) in [
            ("* * * *", "4 fields"),
            ("61 * * * *", "outside 0-59"),
            ("* 24 * * *", "outside 0-23"),
            ("* * 0 * *", "outside 1-31"),
            ("* * * 13 *", "outside 1-12"),
            ("*/0 * * * *", "step"),
            ("5-1 * * * *", "backwards"),
            ("x * * * *", "not a number"),
            ("@often", "shorthand"),
        ] {
            let error = Cron::parse(expr).unwrap_err();
            assert!(error.reason.contains(fragment), "{expr}: {}", error.reason);
        }
        assert!(time_zone("Mars/Olympus").is_err());
    }

    #[test]
    fn impossible_dates_have_no_next_time() {
        assert_eq!(next("0 0 30 2 *", "UTC", "2026-01-01T00:00:00Z"), None);
    }
}
