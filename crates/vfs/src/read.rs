//! Reading files the way an agent reads them: by line, bounded, resumable.
//!
//! An agent's context is small and files are not, so every read is capped (by
//! lines and by bytes) and says where to continue. The file is read chunk by
//! chunk and lines before the requested one are only counted, so reading the
//! end of a 100 MiB log holds at most one chunk plus the answer in memory. A
//! file that looks binary (a NUL byte near the start, as `grep` and `git`
//! decide) is reported as such instead of being dumped into the context.

use serde::Serialize;
use stead_sql::Sql;

use crate::error::Result;
use crate::path::VPath;
use crate::Vfs;

/// Default and largest number of lines one read returns.
pub const DEFAULT_LINE_LIMIT: u64 = 2000;
/// Default and largest number of bytes of content one read returns.
pub const DEFAULT_BYTE_LIMIT: usize = 256 * 1024;
/// How much of the start of a file is inspected for NUL bytes.
pub const BINARY_SNIFF_BYTES: usize = 8192;

/// What to read, by line.
#[derive(Debug, Clone, Copy)]
pub struct LineRequest {
    /// First line to return, 1-based.
    pub offset: u64,
    /// Most lines to return.
    pub limit: u64,
    /// Most bytes of content to return (line-number prefixes included).
    pub max_bytes: usize,
    /// Prefix each line with its number and a tab, as `cat -n` does.
    pub line_numbers: bool,
}

impl Default for LineRequest {
    fn default() -> Self {
        LineRequest {
            offset: 1,
            limit: DEFAULT_LINE_LIMIT,
            max_bytes: DEFAULT_BYTE_LIMIT,
            line_numbers: false,
        }
    }
}

/// The answer to a line read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Lines {
    /// The lines, with their line endings; empty for a binary file.
    pub content: String,
    /// The file's size in bytes.
    pub size: u64,
    /// The number of the first line returned.
    pub offset: u64,
    /// How many lines `content` holds.
    pub lines: u64,
    /// Whether the file looks binary; `content` is then empty.
    pub binary: bool,
    /// Whether some bytes were not valid UTF-8 (shown as U+FFFD).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub lossy: bool,
    /// Whether the read stopped at a limit before the end of the file.
    pub truncated: bool,
    /// The line to pass as `offset` to read on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_offset: Option<u64>,
    /// When a single line exceeded the byte limit: the byte offset to read on
    /// from by byte range.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_byte_offset: Option<u64>,
    /// Total lines in the file, known when the read reached its end.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_lines: Option<u64>,
}

/// Whether `prefix` (the start of a file) looks binary.
pub fn looks_binary(prefix: &[u8]) -> bool {
    prefix[..prefix.len().min(BINARY_SNIFF_BYTES)].contains(&0)
}

/// Collects the requested lines from a stream of byte pieces.
struct Collector {
    request: LineRequest,
    /// Number of the line being scanned.
    line: u64,
    /// Byte offset in the file of the start of the line being scanned.
    line_start: u64,
    /// Bytes scanned so far.
    pos: u64,
    /// The current line's bytes, kept only when it will be returned.
    current: Vec<u8>,
    out: Vec<u8>,
    lines: u64,
    stop: Option<Stop>,
}

#[derive(Debug, Clone, Copy)]
enum Stop {
    /// Stopped before this line.
    AtLine(u64),
    /// Stopped inside one over-long line, at this byte offset.
    AtByte(u64),
}

impl Collector {
    fn new(request: LineRequest) -> Self {
        Collector {
            request,
            line: 1,
            line_start: 0,
            pos: 0,
            current: Vec::new(),
            out: Vec::new(),
            lines: 0,
            stop: None,
        }
    }

    fn wanted(&self) -> bool {
        self.line >= self.request.offset
    }

    fn prefix(&self) -> String {
        if self.request.line_numbers {
            format!("{:>6}\t", self.line)
        } else {
            String::new()
        }
    }

    /// Feeds the next piece of the file; returns false once done.
    fn feed(&mut self, mut piece: &[u8]) -> bool {
        while self.stop.is_none() && !piece.is_empty() {
            let newline = piece.iter().position(|&b| b == b'\n');
            let take = newline.map_or(piece.len(), |i| i + 1);
            if self.wanted() {
                // Keep at most one byte past the limit: enough to know it is exceeded.
                let room = (self.request.max_bytes + 1).saturating_sub(self.current.len());
                self.current.extend_from_slice(&piece[..take.min(room)]);
            }
            self.pos += take as u64;
            piece = &piece[take..];
            if newline.is_some() {
                self.end_line();
            }
        }
        self.stop.is_none()
    }

    /// The line being scanned is complete (or the file ended after it).
    fn end_line(&mut self) {
        if self.wanted() {
            if self.lines == self.request.limit {
                self.stop = Some(Stop::AtLine(self.line));
                return;
            }
            let prefix = self.prefix();
            let len = prefix.len() + self.current.len();
            if self.out.len() + len > self.request.max_bytes {
                if self.lines == 0 {
                    // One line alone exceeds the limit: return its start.
                    let keep = self.request.max_bytes.saturating_sub(prefix.len());
                    self.out.extend_from_slice(prefix.as_bytes());
                    self.out
                        .extend_from_slice(&self.current[..keep.min(self.current.len())]);
                    self.lines = 1;
                    self.stop = Some(Stop::AtByte(self.line_start + keep as u64));
                } else {
                    self.stop = Some(Stop::AtLine(self.line));
                }
                return;
            }
            self.out.extend_from_slice(prefix.as_bytes());
            self.out.append(&mut self.current);
            self.lines += 1;
        }
        self.current.clear();
        self.line += 1;
        self.line_start = self.pos;
    }

    fn finish(mut self, size: u64) -> Lines {
        if self.stop.is_none() && self.pos > self.line_start {
            // A last line without a newline.
            self.end_line();
        }
        let content = String::from_utf8_lossy(&self.out);
        let lossy = matches!(content, std::borrow::Cow::Owned(_));
        let (next_offset, next_byte_offset, total_lines) = match self.stop {
            Some(Stop::AtLine(line)) => (Some(line), None, None),
            Some(Stop::AtByte(byte)) => (None, Some(byte), None),
            None => (None, None, Some(self.line - 1)),
        };
        Lines {
            content: content.into_owned(),
            size,
            offset: self.request.offset,
            lines: self.lines,
            binary: false,
            lossy,
            truncated: self.stop.is_some(),
            next_offset,
            next_byte_offset,
            total_lines,
        }
    }
}

impl<S: Sql> Vfs<'_, S> {
    /// Reads lines of the file at `path` as `request` asks.
    pub fn read_lines(&self, path: &VPath, request: LineRequest) -> Result<Lines> {
        let (_, node) = self.file(path)?;
        let mut collector = Collector::new(LineRequest {
            offset: request.offset.max(1),
            ..request
        });
        for (i, chunk) in self.chunks_of(node.ino)?.iter().enumerate() {
            let data = self.chunk_data(chunk.id)?;
            if i == 0 && looks_binary(&data) {
                return Ok(Lines {
                    content: String::new(),
                    size: node.size,
                    offset: request.offset,
                    lines: 0,
                    binary: true,
                    lossy: false,
                    truncated: false,
                    next_offset: None,
                    next_byte_offset: None,
                    total_lines: None,
                });
            }
            if !collector.feed(&data) {
                break;
            }
        }
        Ok(collector.finish(node.size))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(text: &str, request: LineRequest) -> Lines {
        let mut c = Collector::new(request);
        // Feed in small pieces to cross piece boundaries mid-line.
        for piece in text.as_bytes().chunks(3) {
            if !c.feed(piece) {
                break;
            }
        }
        c.finish(text.len() as u64)
    }

    #[test]
    fn whole_file_reports_total() {
        let got = collect("a\nb\nc", LineRequest::default());
        assert_eq!(got.content, "a\nb\nc");
        assert_eq!(got.lines, 3);
        assert_eq!(got.total_lines, Some(3));
        assert!(!got.truncated);
    }

    #[test]
    fn offset_limit_and_continuation() {
        let text: String = (1..=10).map(|i| format!("line{i}\n")).collect();
        let got = collect(
            &text,
            LineRequest {
                offset: 3,
                limit: 2,
                ..Default::default()
            },
        );
        assert_eq!(got.content, "line3\nline4\n");
        assert!(got.truncated);
        assert_eq!(got.next_offset, Some(5));
        let rest = collect(
            &text,
            LineRequest {
                offset: 9,
                ..Default::default()
            },
        );
        assert_eq!(rest.content, "line9\nline10\n");
        assert_eq!(rest.total_lines, Some(10));
    }

    #[test]
    fn byte_cap_stops_at_line_boundary() {
        let got = collect(
            "aaaa\nbbbb\ncccc\n",
            LineRequest {
                max_bytes: 11,
                ..Default::default()
            },
        );
        assert_eq!(got.content, "aaaa\nbbbb\n");
        assert_eq!(got.next_offset, Some(3));
    }

    #[test]
    fn overlong_line_gives_byte_continuation() {
        let text = format!("{}\nnext\n", "x".repeat(100));
        let got = collect(
            &text,
            LineRequest {
                max_bytes: 10,
                ..Default::default()
            },
        );
        assert_eq!(got.content, "x".repeat(10));
        assert_eq!(got.next_byte_offset, Some(10));
        let second = collect(
            &text,
            LineRequest {
                offset: 2,
                max_bytes: 10,
                ..Default::default()
            },
        );
        assert_eq!(second.content, "next\n");
    }

    #[test]
    fn line_numbers() {
        let got = collect(
            "a\nb\n",
            LineRequest {
                line_numbers: true,
                offset: 2,
                ..Default::default()
            },
        );
        assert_eq!(got.content, "     2\tb\n");
    }

    #[test]
    fn binary_sniff() {
        assert!(looks_binary(b"abc\0def"));
        assert!(!looks_binary(b"plain text"));
    }
}
