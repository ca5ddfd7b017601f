//! Output streams with a byte cap.
//!
//! Pipelines are buffered stage by stage, so an output buffer is where a
//! runaway producer (`yes`, `cat` of a huge file in a loop) is stopped: past
//! the cap, writes fail with the buffer's limit: [`LimitKind::OutputBytes`]
//! for the exec's stdout and stderr and for files, [`LimitKind::PipeBytes`]
//! for a pipe or a command substitution (see [`Output::pipe`]).

use crate::limits::{Abort, LimitKind};

/// A stdout or stderr buffer.
#[derive(Debug)]
pub struct Output {
    bytes: Vec<u8>,
    cap: usize,
    /// The limit a write past the cap reports.
    limit: LimitKind,
}

/// An empty buffer that holds nothing (what `std::mem::take` leaves).
impl Default for Output {
    fn default() -> Self {
        Output::with_cap(0)
    }
}

impl Output {
    /// An empty buffer holding at most `cap` bytes.
    pub fn with_cap(cap: usize) -> Self {
        Output {
            bytes: Vec::new(),
            cap,
            limit: LimitKind::OutputBytes,
        }
    }

    /// A pipe's (or command substitution's) buffer: past `cap` a write
    /// fails with [`LimitKind::PipeBytes`].
    pub fn pipe(cap: usize) -> Self {
        Output {
            limit: LimitKind::PipeBytes,
            ..Output::with_cap(cap)
        }
    }

    /// The limit a write past the cap fails with.
    pub fn limit(&self) -> LimitKind {
        self.limit
    }

    /// Appends `data`, or fails once the cap would be passed (keeping what
    /// fits). A pipe also fails when a write fills it exactly: its writer
    /// is stopped as a real one would block on the full pipe until its
    /// reader goes away (so `cat` passing on a full pipe stops too).
    pub fn write(&mut self, data: &[u8]) -> Result<(), Abort> {
        let room = self.cap.saturating_sub(self.bytes.len());
        let fills_pipe =
            self.limit == LimitKind::PipeBytes && !data.is_empty() && data.len() == room;
        if data.len() > room || fills_pipe {
            self.bytes.extend_from_slice(&data[..room]);
            return Err(Abort::Limit(self.limit()));
        }
        self.bytes.extend_from_slice(data);
        Ok(())
    }

    pub fn write_str(&mut self, text: &str) -> Result<(), Abort> {
        self.write(text.as_bytes())
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }

    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    pub fn cap(&self) -> usize {
        self.cap
    }
}

/// A command's standard input: bytes, and whether they are all of it.
///
/// Pipelines run stage by stage, so a pipe holds what its writer wrote
/// before the pipe filled up (the writer then stops as with SIGPIPE), and
/// an endless device (`/dev/zero`) reads as a full pipe. That is all a
/// reader that stops early needs (`yes | head`), but a reader that needs
/// the rest would compute a plausible wrong answer from a prefix (`sort`,
/// `wc`, `tail`): reaching the end of a cut input fails with
/// [`LimitKind::PipeBytes`] instead.
#[derive(Debug, Clone, Copy)]
pub struct Stdin<'a> {
    bytes: &'a [u8],
    complete: bool,
}

impl<'a> Stdin<'a> {
    /// All of the input.
    pub fn complete(bytes: &'a [u8]) -> Self {
        Stdin {
            bytes,
            complete: true,
        }
    }

    /// The start of an input that goes on (a full pipe, a device).
    pub fn cut(bytes: &'a [u8]) -> Self {
        Stdin {
            bytes,
            complete: false,
        }
    }

    pub fn is_complete(&self) -> bool {
        self.complete
    }

    /// The whole input, for a reader that needs all of it.
    pub fn all(&self) -> Result<&'a [u8], Abort> {
        self.end()?;
        Ok(self.bytes)
    }

    /// The bytes there are, for a reader that may stop early; it calls
    /// [`Stdin::end`] if it needs what follows them.
    pub fn available(&self) -> &'a [u8] {
        self.bytes
    }

    /// The reader needs what follows the available bytes: fine at the end
    /// of a complete input (it sees end of file), a limit on a cut one.
    pub fn end(&self) -> Result<(), Abort> {
        if self.complete {
            Ok(())
        } else {
            Err(Abort::Limit(LimitKind::PipeBytes))
        }
    }

    /// The rest after the first `n` bytes, cut or complete as this is.
    pub fn after(&self, n: usize) -> Stdin<'a> {
        Stdin {
            bytes: &self.bytes[n.min(self.bytes.len())..],
            complete: self.complete,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_input_refuses_to_end() {
        let cut = Stdin::cut(b"abc");
        assert_eq!(cut.available(), b"abc");
        assert_eq!(cut.all(), Err(Abort::Limit(LimitKind::PipeBytes)));
        assert_eq!(cut.after(1).end(), Err(Abort::Limit(LimitKind::PipeBytes)));
        let whole = Stdin::complete(b"abc");
        assert_eq!(whole.all(), Ok(&b"abc"[..]));
        assert_eq!(whole.after(5).available(), b"");
    }

    #[test]
    fn a_pipe_buffer_reports_its_own_limit() {
        let mut pipe = Output::pipe(2);
        assert_eq!(pipe.write(b"abc"), Err(Abort::Limit(LimitKind::PipeBytes)));
        assert_eq!(pipe.as_bytes(), b"ab");
        let mut out = Output::with_cap(2);
        assert_eq!(out.write(b"abc"), Err(Abort::Limit(LimitKind::OutputBytes)));
    }
}
