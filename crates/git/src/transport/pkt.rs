//! pkt-lines, git's framing on the wire: four hex digits of length, then
//! the data; `0000` (flush), `0001` (delimiter) and `0002` (response end)
//! carry none. Encoding and decoding are `gix-packetline`'s; this module
//! is the small shape the protocol code reads and writes them in.

use gix_packetline::decode::{self, Stream};
use gix_packetline::PacketLineRef;

use super::TransportError;

/// A request body being written as pkt-lines.
#[derive(Default)]
pub(crate) struct Writer {
    pub(crate) bytes: Vec<u8>,
}

impl Writer {
    /// One data line (`text` should end with `\n`, as git's do).
    pub(crate) fn line(&mut self, text: &str) {
        gix_packetline::blocking_io::encode::data_to_write(text.as_bytes(), &mut self.bytes)
            .expect("writing into memory");
    }

    pub(crate) fn flush(&mut self) {
        gix_packetline::blocking_io::encode::flush_to_write(&mut self.bytes)
            .expect("writing into memory");
    }

    pub(crate) fn delim(&mut self) {
        gix_packetline::blocking_io::encode::delim_to_write(&mut self.bytes)
            .expect("writing into memory");
    }
}

/// One pkt-line read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Line<'a> {
    Data(&'a [u8]),
    Flush,
    Delim,
    End,
}

impl<'a> Line<'a> {
    /// A data line as text, without its trailing newline.
    pub(crate) fn text(self) -> Option<&'a str> {
        match self {
            Line::Data(data) => std::str::from_utf8(data)
                .ok()
                .map(|t| t.strip_suffix('\n').unwrap_or(t)),
            _ => None,
        }
    }
}

/// Reads pkt-lines from the start of a body.
pub(crate) struct Reader<'a> {
    data: &'a [u8],
    pub(crate) at: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(data: &'a [u8]) -> Self {
        Reader { data, at: 0 }
    }

    /// What follows the lines read so far (a pack after a v0 negotiation).
    pub(crate) fn rest(&self) -> &'a [u8] {
        &self.data[self.at..]
    }

    /// The next line; `None` at the end of the body.
    pub(crate) fn next(&mut self) -> Result<Option<Line<'a>>, TransportError> {
        if self.at >= self.data.len() {
            return Ok(None);
        }
        match decode::streaming(&self.data[self.at..]) {
            Ok(Stream::Complete {
                line,
                bytes_consumed,
            }) => {
                self.at += bytes_consumed;
                Ok(Some(match line {
                    PacketLineRef::Data(data) => Line::Data(data),
                    PacketLineRef::Flush => Line::Flush,
                    PacketLineRef::Delimiter => Line::Delim,
                    PacketLineRef::ResponseEnd => Line::End,
                }))
            }
            Ok(Stream::Incomplete { .. }) => Err(TransportError::Protocol(
                "the server's answer ends in the middle of a line".into(),
            )),
            Err(e) => Err(TransportError::Protocol(format!(
                "the server's answer is not in git's format: {e}"
            ))),
        }
    }

    /// The next line, which must be there.
    pub(crate) fn expect(&mut self) -> Result<Line<'a>, TransportError> {
        self.next()?
            .ok_or_else(|| TransportError::Protocol("the server's answer ends too early".into()))
    }
}

/// The data of a side-band-64k stream: band 1 joined; band 2 (progress)
/// is passed to `progress`; band 3 is the server's error. Reads until a
/// flush or the end of the body.
pub(crate) fn demux(
    reader: &mut Reader<'_>,
    progress: &mut dyn FnMut(&[u8]),
) -> Result<Vec<u8>, TransportError> {
    let mut data = Vec::new();
    loop {
        match reader.next()? {
            None | Some(Line::Flush) | Some(Line::End) => return Ok(data),
            Some(Line::Delim) => {
                return Err(TransportError::Protocol(
                    "a delimiter inside a side-band stream".into(),
                ))
            }
            Some(Line::Data(line)) => match line.split_first() {
                Some((1, rest)) => data.extend_from_slice(rest),
                Some((2, rest)) => progress(rest),
                Some((3, rest)) => {
                    return Err(TransportError::Remote(
                        String::from_utf8_lossy(rest).trim_end().to_string(),
                    ))
                }
                _ => {
                    return Err(TransportError::Protocol(
                        "a side-band line on no known band".into(),
                    ))
                }
            },
        }
    }
}
