//! Range requests on a file download (RFC 9110, section 14): `Range:
//! bytes=...` picks the part of the file to send, `If-Range` makes that
//! conditional on the file being the one the client already has part of.
//!
//! A client resuming a large download, or reading a window of a log or a
//! data set, asks for the bytes it needs, and the agent reads only the
//! chunks that hold them (from SQLite or the object store).
//!
//! What this server does with each form, all of which RFC 9110 permits:
//! - one range (`first-last`, `first-`, `-suffix`) that the file can
//!   satisfy: `206` with `Content-Range`;
//! - a range set that the file cannot satisfy (every `first` at or past
//!   the end, or a zero suffix): `416` with `Content-Range: bytes */size`;
//! - more than one range, a unit other than `bytes`, or a header that does
//!   not parse: the header is ignored and the whole file sent (`200`), as
//!   a server that does not serve multipart ranges may;
//! - `If-Range` with the file's strong entity tag sends the range;
//!   anything else (another tag, a weak one, a date: a date of one-second
//!   resolution cannot tell two writes in one second apart) sends the
//!   whole file.
//! - a suffix range of an empty file selects nothing there is to send in
//!   a `206`: the (empty) file is sent whole.

use stead_vfs::ChunkRef;

use crate::error::ApiError;

/// What a download sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Selected {
    /// The whole file, `200`.
    Whole,
    /// Bytes `start..=end` of the file, `206`.
    Part { start: u64, end: u64 },
}

impl Selected {
    /// The status a download of this answers with.
    pub fn status(self) -> u16 {
        match self {
            Selected::Whole => 200,
            Selected::Part { .. } => 206,
        }
    }

    /// How many bytes of a file of `size` bytes are sent.
    pub fn len(self, size: u64) -> u64 {
        match self {
            Selected::Whole => size,
            Selected::Part { start, end } => end - start + 1,
        }
    }

    /// The headers that say which bytes of a file of `size` bytes are
    /// sent: their length, and for a part where they lie.
    pub fn headers(self, size: u64) -> Vec<(&'static str, String)> {
        let mut headers = vec![
            ("accept-ranges", "bytes".to_string()),
            ("content-length", self.len(size).to_string()),
        ];
        if let Selected::Part { start, end } = self {
            headers.push(("content-range", format!("bytes {start}-{end}/{size}")));
        }
        headers
    }

    /// The part of each of a file's `chunks` (in order) that is sent;
    /// chunks wholly outside the range are left out, so they are never
    /// read.
    pub fn slices(self, chunks: &[ChunkRef]) -> Vec<ChunkSlice> {
        let (start, end) = match self {
            Selected::Whole => (0, u64::MAX),
            Selected::Part { start, end } => (start, end),
        };
        let mut offset = 0;
        let mut slices = Vec::new();
        for chunk in chunks {
            let (first, last) = (offset, offset + chunk.size);
            offset = last;
            if last <= start || first > end {
                continue;
            }
            let skip = start.saturating_sub(first);
            let stop = end.saturating_add(1).min(last) - first;
            slices.push(ChunkSlice {
                id: chunk.id,
                skip: skip as usize,
                take: (stop - skip) as usize,
            });
        }
        slices
    }
}

/// The bytes `skip..skip + take` of chunk `id`: what a download sends of
/// it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkSlice {
    pub id: i64,
    pub skip: usize,
    pub take: usize,
}

impl ChunkSlice {
    /// This slice of the chunk's `bytes`; a chunk shorter than its record
    /// says is an error, never a short answer.
    pub fn of(self, mut bytes: Vec<u8>) -> Result<Vec<u8>, String> {
        let stop = self.skip + self.take;
        if bytes.len() < stop {
            return Err(format!(
                "chunk {} holds {} bytes, its record says at least {stop}",
                self.id,
                bytes.len()
            ));
        }
        bytes.truncate(stop);
        if self.skip > 0 {
            bytes.drain(..self.skip);
        }
        Ok(bytes)
    }
}

/// The headers that ask for part of a file.
#[derive(Debug, Clone, Default)]
pub struct RangeHeaders {
    /// `Range`.
    pub range: Option<String>,
    /// `If-Range`.
    pub if_range: Option<String>,
}

impl RangeHeaders {
    /// What to send of a file of `size` bytes whose entity tag is `etag`,
    /// or `416` when the range asked for lies past its end.
    pub fn select(&self, size: u64, etag: &str) -> Result<Selected, ApiError> {
        let Some(range) = self.range.as_deref() else {
            return Ok(Selected::Whole);
        };
        if let Some(validator) = self.if_range.as_deref() {
            if validator.trim() != etag {
                return Ok(Selected::Whole);
            }
        }
        let Some(spec) = single_byte_range(range) else {
            return Ok(Selected::Whole);
        };
        match spec.within(size) {
            Fit::Part { start, end } => Ok(Selected::Part { start, end }),
            Fit::Nothing => Ok(Selected::Whole),
            Fit::Unsatisfiable => Err(ApiError::RangeNotSatisfiable { size }),
        }
    }
}

/// One `range-spec` of the `bytes` unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Spec {
    /// `first-` or `first-last`.
    From { first: u64, last: Option<u64> },
    /// `-length`: the last `length` bytes.
    Suffix { length: u64 },
}

/// How a [`Spec`] meets a file of some size.
enum Fit {
    Part {
        start: u64,
        end: u64,
    },
    /// Satisfiable, but there is no byte to send (a suffix of an empty
    /// file).
    Nothing,
    Unsatisfiable,
}

impl Spec {
    fn within(self, size: u64) -> Fit {
        match self {
            Spec::From { first, .. } if first >= size => Fit::Unsatisfiable,
            Spec::From { first, last } => Fit::Part {
                start: first,
                end: last.map_or(size - 1, |last| last.min(size - 1)),
            },
            Spec::Suffix { length: 0 } => Fit::Unsatisfiable,
            Spec::Suffix { .. } if size == 0 => Fit::Nothing,
            Spec::Suffix { length } => Fit::Part {
                start: size - length.min(size),
                end: size - 1,
            },
        }
    }
}

/// The one byte range `value` asks for; `None` for a value to ignore
/// (another unit, a malformed spec, or more than one range).
fn single_byte_range(value: &str) -> Option<Spec> {
    let (unit, set) = value.trim().split_once('=')?;
    if !unit.trim().eq_ignore_ascii_case("bytes") {
        return None;
    }
    // `1#range-spec`: empty list elements are allowed and not counted.
    let mut specs = set.split(',').map(str::trim).filter(|s| !s.is_empty());
    let spec = parse_spec(specs.next()?)?;
    match specs.next() {
        Some(_) => None,
        None => Some(spec),
    }
}

fn parse_spec(spec: &str) -> Option<Spec> {
    let (first, last) = spec.split_once('-')?;
    match (first, last) {
        ("", length) => Some(Spec::Suffix {
            length: digits(length)?,
        }),
        (first, "") => Some(Spec::From {
            first: digits(first)?,
            last: None,
        }),
        (first, last) => {
            let (first, last) = (digits(first)?, digits(last)?);
            // `last < first` makes the spec invalid, not unsatisfiable.
            (last >= first).then_some(Spec::From {
                first,
                last: Some(last),
            })
        }
    }
}

/// `1*DIGIT`, no sign or space; a number too large for `u64` is larger
/// than any file, so it saturates.
fn digits(text: &str) -> Option<u64> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(text.parse().unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TAG: &str = "\"7-3\"";

    fn select(range: &str, size: u64) -> Result<Selected, ApiError> {
        RangeHeaders {
            range: Some(range.into()),
            if_range: None,
        }
        .select(size, TAG)
    }

    fn part(start: u64, end: u64) -> Result<Selected, ApiError> {
        Ok(Selected::Part { start, end })
    }

    #[test]
    fn each_form_of_one_range_selects_the_bytes_rfc_9110_gives() {
        assert_eq!(select("bytes=0-499", 10_000), part(0, 499));
        assert_eq!(select("bytes=500-999", 10_000), part(500, 999));
        assert_eq!(select("bytes=-500", 10_000), part(9_500, 9_999));
        assert_eq!(select("bytes=9500-", 10_000), part(9_500, 9_999));
        assert_eq!(select("bytes=0-0", 10_000), part(0, 0));
        assert_eq!(select("bytes=-1", 10_000), part(9_999, 9_999));
        // A last position past the end, or a suffix longer than the file,
        // is cut to the file.
        assert_eq!(select("bytes=5-99999999999999999999", 10), part(5, 9));
        assert_eq!(select("bytes=-50", 10), part(0, 9));
        // The unit is case-insensitive; spaces around the list's elements
        // and empty elements are allowed.
        assert_eq!(select("Bytes= , 3-4 ,", 10), part(3, 4));
    }

    #[test]
    fn a_range_past_the_end_is_416_with_the_size() {
        for range in ["bytes=10-", "bytes=10-20", "bytes=-0", "bytes=0-"] {
            let size = if range == "bytes=0-" { 0 } else { 10 };
            match select(range, size) {
                Err(error @ ApiError::RangeNotSatisfiable { .. }) => {
                    assert_eq!(error.status(), 416);
                    assert_eq!(
                        error.headers(),
                        vec![("content-range", format!("bytes */{size}"))]
                    );
                }
                other => panic!("{range} of {size} bytes: {other:?}"),
            }
        }
    }

    #[test]
    fn what_is_not_one_valid_byte_range_sends_the_whole_file() {
        for range in [
            "bytes=0-1,5-6",
            "items=0-1",
            "bytes=5-3",
            "bytes=a-b",
            "bytes=+1-2",
            "bytes= 1 -2",
            "bytes=",
            "bytes",
            "0-1",
            "bytes=--1",
        ] {
            assert_eq!(select(range, 10).ok(), Some(Selected::Whole), "{range}");
        }
        // A suffix of an empty file: nothing a 206 could carry.
        assert_eq!(select("bytes=-5", 0).ok(), Some(Selected::Whole));
        let none = RangeHeaders::default();
        assert_eq!(none.select(10, TAG).ok(), Some(Selected::Whole));
    }

    #[test]
    fn a_range_reads_only_the_chunks_that_hold_it_and_slices_the_ends() {
        let chunks: Vec<ChunkRef> = [(11, 4), (12, 4), (13, 2)]
            .map(|(id, size)| ChunkRef { id, size })
            .to_vec();
        let slice = |id, skip, take| ChunkSlice { id, skip, take };
        let whole = Selected::Whole.slices(&chunks);
        assert_eq!(whole, [slice(11, 0, 4), slice(12, 0, 4), slice(13, 0, 2)]);
        let middle = Selected::Part { start: 5, end: 6 };
        assert_eq!(middle.slices(&chunks), [slice(12, 1, 2)]);
        let across = Selected::Part { start: 3, end: 8 };
        assert_eq!(
            across.slices(&chunks),
            [slice(11, 3, 1), slice(12, 0, 4), slice(13, 0, 1)]
        );
        let last = Selected::Part { start: 9, end: 9 };
        assert_eq!(last.slices(&chunks), [slice(13, 1, 1)]);
        // Every byte of a ten-byte file, by every range, in one piece each.
        let file: Vec<u8> = (0..10).collect();
        let bytes_of = |id: i64| match id {
            11 => file[0..4].to_vec(),
            12 => file[4..8].to_vec(),
            _ => file[8..10].to_vec(),
        };
        for start in 0..10u64 {
            for end in start..10 {
                let part = Selected::Part { start, end };
                let sent: Vec<u8> = part
                    .slices(&chunks)
                    .into_iter()
                    .flat_map(|s| s.of(bytes_of(s.id)).unwrap())
                    .collect();
                assert_eq!(sent, file[start as usize..=end as usize]);
                assert_eq!(part.len(10), sent.len() as u64);
            }
        }
        assert!(slice(13, 1, 2).of(vec![0, 1]).is_err());
    }

    #[test]
    fn the_headers_say_which_bytes_are_sent() {
        assert_eq!(
            Selected::Part { start: 2, end: 5 }.headers(10),
            [
                ("accept-ranges", "bytes".to_string()),
                ("content-length", "4".to_string()),
                ("content-range", "bytes 2-5/10".to_string())
            ]
        );
        assert_eq!(Selected::Whole.headers(10)[1].1, "10");
        assert_eq!(Selected::Whole.status(), 200);
        assert_eq!(Selected::Part { start: 0, end: 0 }.status(), 206);
    }

    #[test]
    fn if_range_sends_the_range_only_for_the_files_own_strong_tag() {
        let with = |validator: &str| RangeHeaders {
            range: Some("bytes=2-3".into()),
            if_range: Some(validator.into()),
        };
        assert_eq!(with(TAG).select(10, TAG).ok(), part(2, 3).ok());
        for other in ["\"7-2\"", "W/\"7-3\"", "Wed, 21 Oct 2015 07:28:00 GMT", ""] {
            assert_eq!(
                with(other).select(10, TAG).ok(),
                Some(Selected::Whole),
                "{other}"
            );
        }
        // A failed If-Range sends the whole file even where the range is
        // past the end.
        let past = RangeHeaders {
            range: Some("bytes=50-".into()),
            if_range: Some("\"old\"".into()),
        };
        assert_eq!(past.select(10, TAG).ok(), Some(Selected::Whole));
    }
}
