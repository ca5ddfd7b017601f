//! Output streams with a byte cap.
//!
//! Pipelines are buffered stage by stage, so an output buffer is where a
//! runaway producer (`yes`, `cat` of a huge file in a loop) is stopped: past
//! the cap, writes fail with [`LimitKind::OutputBytes`].

use crate::limits::{Abort, LimitKind};

/// A stdout or stderr buffer.
#[derive(Debug, Default)]
pub struct Output {
    bytes: Vec<u8>,
    cap: usize,
}

impl Output {
    /// An empty buffer holding at most `cap` bytes.
    pub fn with_cap(cap: usize) -> Self {
        Output {
            bytes: Vec::new(),
            cap,
        }
    }

    /// Appends `data`, or fails once the cap would be passed (keeping what fits).
    pub fn write(&mut self, data: &[u8]) -> Result<(), Abort> {
        let room = self.cap.saturating_sub(self.bytes.len());
        if data.len() > room {
            self.bytes.extend_from_slice(&data[..room]);
            return Err(Abort::Limit(LimitKind::OutputBytes));
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
