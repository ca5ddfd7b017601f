//! The sync protocol's chunk frames: `FrameDecoder` on bodies split
//! arbitrarily.
//!
//! Frame bodies come from the container, which is the less trusted side, and
//! arrive in pieces of whatever size the network chose. The checks: no
//! panic; the decoder's verdict does not depend on how the body was split;
//! it accepts a body exactly when it is a run of frames that `frame::encode`
//! produces (re-encoding what it decoded gives back the body byte for
//! byte), and a body built by `encode` always decodes to its payloads.

use stead_sync::frame::{self, decode_all, FrameDecoder, FrameError};
use stead_sync::{hash_chunk, ChunkHash};

use crate::Target;

pub const TARGET: Target = Target {
    name: "frame",
    about: "FrameDecoder on arbitrary bytes in arbitrary pieces: no panic, split-independent, accepts exactly encode's output",
    run,
    seeds,
    tokens: &[],
    bounds: None,
};

/// Decoded chunks, or the first error.
type Verdict = Result<Vec<(ChunkHash, Vec<u8>)>, FrameError>;

/// Byte 0 picks the mode: even, the rest is a raw body; odd, the rest is
/// payloads (each a length byte then bytes) that are encoded, then maybe
/// damaged. Byte 1 seeds the piece sizes.
pub fn run(data: &[u8]) {
    let (Some(&mode), Some(&split)) = (data.first(), data.get(1)) else {
        return;
    };
    let rest = &data[2..];
    if mode % 2 == 0 {
        let _ = check_body(rest, split);
        return;
    }
    let mut payloads = Vec::new();
    let mut at = 0;
    while at < rest.len() {
        let len = rest[at] as usize;
        let end = (at + 1 + len).min(rest.len());
        payloads.push(rest[at + 1..end].to_vec());
        at = end;
    }
    let mut body = Vec::new();
    for payload in &payloads {
        frame::encode(&mut body, payload);
    }
    let verdict = check_body(&body, split);
    let decoded: Vec<Vec<u8>> = verdict
        .expect("encode's output decodes")
        .into_iter()
        .map(|(_, data)| data)
        .collect();
    assert_eq!(decoded, payloads);

    // Damage it: a flipped bit anywhere, or a cut, must be refused.
    if !body.is_empty() {
        let at = (mode as usize * 31 + split as usize) % body.len();
        let mut flipped = body.clone();
        flipped[at] ^= 1 << (split % 8);
        // A flip in a length field can still frame validly only if the hash
        // then matches other bytes, which BLAKE3 rules out.
        assert!(
            check_body(&flipped, split).is_err(),
            "a flipped bit at {at} was accepted"
        );
        let cut = &body[..at];
        if decode_all(cut).is_ok() {
            // Only a cut on a frame boundary can decode, and then to a prefix.
            let prefix = decode_all(cut).expect("checked");
            assert!(prefix.len() < payloads.len());
        }
    }
}

/// Decodes `body` whole and in pieces, checks the verdicts agree and that an
/// accepted body is exactly the encoding of its chunks.
fn check_body(body: &[u8], split: u8) -> Verdict {
    let whole = decode_all(body);
    let pieces = decode_in_pieces(body, split);
    assert_eq!(
        whole.is_ok(),
        pieces.is_ok(),
        "whole {whole:?} vs pieces {pieces:?}"
    );
    if let (Ok(a), Ok(b)) = (&whole, &pieces) {
        assert_eq!(a, b);
        let mut again = Vec::new();
        for (hash, data) in a {
            assert_eq!(*hash, hash_chunk(data));
            frame::encode(&mut again, data);
        }
        assert_eq!(again, body, "an accepted body is not encode's output");
    }
    whole
}

/// Feeds `body` in pieces whose sizes follow `split`, pulling chunks as soon
/// as they are complete, as the Durable Object does with a streamed body.
fn decode_in_pieces(body: &[u8], split: u8) -> Verdict {
    let mut decoder = FrameDecoder::default();
    let mut out = Vec::new();
    let mut state = split as usize | 1;
    let mut at = 0;
    while at < body.len() {
        state = state.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        let size = 1 + (state >> 8) % 64;
        let end = (at + size).min(body.len());
        decoder.push(&body[at..end]);
        at = end;
        while let Some(chunk) = decoder.next_chunk()? {
            out.push(chunk);
        }
    }
    decoder.finish()?;
    Ok(out)
}

fn seeds() -> Vec<Vec<u8>> {
    let mut body = vec![0, 3];
    frame::encode(&mut body, b"hello");
    frame::encode(&mut body, b"");
    let mut long = vec![0, 9];
    long.extend_from_slice(&[0xab; 32]);
    long.extend_from_slice(&(512 * 1024u32 + 1).to_le_bytes());
    vec![
        body,
        long,
        vec![1, 0, 5, b'h', b'e', b'l', b'l', b'o', 0, 3, 1, 2, 3],
        vec![1, 7, 200],
        vec![0, 0],
    ]
}
