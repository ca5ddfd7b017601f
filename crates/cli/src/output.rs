//! Writing to the terminal or a pipe.
//!
//! A reader that goes away (`stead cat big | head`) ends the program
//! quietly with success, as `cat` does, instead of a panic on a broken pipe.

use std::io::{IsTerminal, Write};

use serde_json::Value;

use crate::error::Result;

/// Writes raw bytes to standard output.
pub fn bytes(data: &[u8]) {
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(data).and_then(|()| out.flush()) {
        gone(e);
    }
}

/// Writes raw bytes to standard error.
pub fn error_bytes(data: &[u8]) {
    let mut out = std::io::stderr().lock();
    if let Err(e) = out.write_all(data).and_then(|()| out.flush()) {
        gone(e);
    }
}

fn gone(error: std::io::Error) {
    match error.kind() {
        std::io::ErrorKind::BrokenPipe => std::process::exit(0),
        _ => {
            eprintln!("stead: cannot write the output: {error}");
            std::process::exit(crate::error::Failure::Local.exit_code());
        }
    }
}

/// One line of text.
pub fn line(text: &str) {
    bytes(format!("{text}\n").as_bytes());
}

/// A JSON value on one line.
pub fn json(value: &Value) {
    line(&value.to_string());
}

/// The end of a command: the answer as JSON, or one line for a person.
pub fn done(json: bool, value: &Value, text: &str) -> Result<i32> {
    match json {
        true => self::json(value),
        false => line(text),
    }
    Ok(0)
}

/// Whether standard output is a terminal (colour, progress).
pub fn is_terminal() -> bool {
    std::io::stdout().is_terminal()
}

/// Milliseconds since the epoch as `YYYY-MM-DD HH:MM:SS` UTC.
pub fn time(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let (days, rest) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

/// A byte count for people: `1.5 MiB`.
pub fn size(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    match unit {
        0 => format!("{bytes} B"),
        _ => format!("{value:.1} {}", UNITS[unit]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_and_sizes_read_as_people_write_them() {
        assert_eq!(time(0), "1970-01-01 00:00:00");
        assert_eq!(time(1_796_000_000_000), "2026-11-30 00:53:20");
        assert_eq!(time(951_782_400_000), "2000-02-29 00:00:00");
        assert_eq!(size(512), "512 B");
        assert_eq!(size(1536), "1.5 KiB");
        assert_eq!(size(5 << 30), "5.0 GiB");
    }
}
