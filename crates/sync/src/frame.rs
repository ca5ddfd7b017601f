//! Chunks on the wire: `[32-byte hash][u32 little-endian length][bytes]`,
//! back to back, in a binary body.
//!
//! Content travels as raw bytes, not base64 in JSON: a 50 MB workspace costs
//! 50 MB, and the receiver checks every chunk against its hash before it
//! keeps it, so a truncated or corrupted body can never become file content.

use thiserror::Error;

use crate::{hash_chunk, ChunkHash, CHUNK_SIZE};

const HEADER: usize = 36;

/// Appends one framed chunk to `out`.
pub fn encode(out: &mut Vec<u8>, data: &[u8]) {
    out.extend_from_slice(&hash_chunk(data).0);
    out.extend_from_slice(&(data.len() as u32).to_le_bytes());
    out.extend_from_slice(data);
}

/// A body that is not a well-formed run of frames.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum FrameError {
    #[error("chunk {hash} declares {len} bytes, more than {CHUNK_SIZE}")]
    TooLong { hash: ChunkHash, len: usize },
    #[error("chunk {hash} does not match its hash")]
    HashMismatch { hash: ChunkHash },
    #[error("the body ends inside a chunk")]
    Truncated,
}

/// Splits a body arriving in pieces into verified chunks.
#[derive(Default)]
pub struct FrameDecoder {
    buffer: Vec<u8>,
}

impl FrameDecoder {
    /// Adds the next piece of the body.
    pub fn push(&mut self, piece: &[u8]) {
        self.buffer.extend_from_slice(piece);
    }

    /// The next complete chunk, checked against its hash; `Ok(None)` when more
    /// bytes are needed.
    pub fn next_chunk(&mut self) -> Result<Option<(ChunkHash, Vec<u8>)>, FrameError> {
        if self.buffer.len() < HEADER {
            return Ok(None);
        }
        let mut hash = [0u8; 32];
        hash.copy_from_slice(&self.buffer[..32]);
        let hash = ChunkHash(hash);
        let len = u32::from_le_bytes(self.buffer[32..HEADER].try_into().expect("4 bytes")) as usize;
        if len > CHUNK_SIZE {
            return Err(FrameError::TooLong { hash, len });
        }
        if self.buffer.len() < HEADER + len {
            return Ok(None);
        }
        let rest = self.buffer.split_off(HEADER + len);
        let mut frame = std::mem::replace(&mut self.buffer, rest);
        let data = frame.split_off(HEADER);
        if hash_chunk(&data) != hash {
            return Err(FrameError::HashMismatch { hash });
        }
        Ok(Some((hash, data)))
    }

    /// Checks the body ended on a frame boundary.
    pub fn finish(&self) -> Result<(), FrameError> {
        if self.buffer.is_empty() {
            Ok(())
        } else {
            Err(FrameError::Truncated)
        }
    }
}

/// Decodes a whole body at once.
pub fn decode_all(body: &[u8]) -> Result<Vec<(ChunkHash, Vec<u8>)>, FrameError> {
    let mut decoder = FrameDecoder::default();
    decoder.push(body);
    let mut out = Vec::new();
    while let Some(chunk) = decoder.next_chunk()? {
        out.push(chunk);
    }
    decoder.finish()?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_in_any_pieces() {
        let mut body = Vec::new();
        encode(&mut body, b"hello");
        encode(&mut body, &vec![1u8; 1000]);
        for piece in [1, 7, 36, 1000, body.len()] {
            let mut decoder = FrameDecoder::default();
            let mut got = Vec::new();
            for part in body.chunks(piece) {
                decoder.push(part);
                while let Some((hash, data)) = decoder.next_chunk().unwrap() {
                    assert_eq!(hash, hash_chunk(&data));
                    got.push(data);
                }
            }
            decoder.finish().unwrap();
            assert_eq!(got, vec![b"hello".to_vec(), vec![1u8; 1000]]);
        }
    }

    #[test]
    fn corrupt_and_short_bodies_are_refused() {
        let mut body = Vec::new();
        encode(&mut body, b"hello");
        let mut corrupt = body.clone();
        *corrupt.last_mut().unwrap() = b'X';
        assert!(matches!(
            decode_all(&corrupt),
            Err(FrameError::HashMismatch { .. })
        ));
        assert_eq!(
            decode_all(&body[..body.len() - 1]),
            Err(FrameError::Truncated)
        );
        let mut long = body[..32].to_vec();
        long.extend_from_slice(&(CHUNK_SIZE as u32 + 1).to_le_bytes());
        assert!(matches!(decode_all(&long), Err(FrameError::TooLong { .. })));
    }
}
