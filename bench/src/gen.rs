//! Deterministic test data: pseudo-random bytes and pseudo-word text.
//!
//! Every generator is seeded, so a run is reproducible. Different seeds give
//! different content, which matters: the workspace stores chunks once per
//! BLAKE3 hash, so writing the same bytes twice would measure deduplication
//! instead of writing.

use std::io::{self, Read};

/// SplitMix64: tiny, fast and good enough for test data.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `low..=high`.
    pub fn between(&mut self, low: usize, high: usize) -> usize {
        low + (self.next_u64() % (high - low + 1) as u64) as usize
    }

    pub fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.between(0, items.len() - 1)]
    }
}

/// Lower-case syllables only: generated text never contains `_` or digits,
/// so the grep needles cannot occur by accident.
const SYLLABLES: &[&str] = &[
    "ka", "lo", "mi", "ne", "ru", "ta", "shi", "ven", "dor", "el", "an", "is", "or", "um", "qua",
    "zel", "pri", "sto", "gra", "ful", "ber", "con", "tex", "ing", "at", "re", "err",
];

const PUNCTUATION: &[&str] = &[" ", " ", " ", " ", " ", ", ", ". ", "; ", " = ", "(", ") "];

fn push_word(rng: &mut Rng, out: &mut String) {
    for _ in 0..rng.between(1, 4) {
        out.push_str(rng.pick(SYLLABLES));
    }
}

/// One line of 2-14 pseudo-words, sometimes indented, ending in `\n`.
pub fn push_line(rng: &mut Rng, out: &mut String) {
    for _ in 0..rng.between(0, 3) * 2 {
        out.push(' ');
    }
    let words = rng.between(2, 14);
    for i in 0..words {
        push_word(rng, out);
        if i + 1 < words {
            out.push_str(rng.pick(PUNCTUATION));
        }
    }
    out.push('\n');
}

/// About `len` bytes of text (whole lines), with `planted` lines put in at a
/// random place.
pub fn document(rng: &mut Rng, len: usize, planted: &[String]) -> String {
    let mut out = String::with_capacity(len + 200);
    let plant_at = rng.between(0, len);
    let mut pending = Some(planted);
    while out.len() < len {
        if out.len() >= plant_at {
            for line in pending.take().unwrap_or_default() {
                out.push_str(line);
                out.push('\n');
            }
        }
        push_line(rng, &mut out);
    }
    for line in pending.unwrap_or_default() {
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// Exactly `len` bytes of text.
pub fn text(rng: &mut Rng, len: usize) -> String {
    let mut out = document(rng, len, &[]);
    out.truncate(len);
    out
}

/// A reader of `len` pseudo-random bytes (incompressible, never repeating).
pub struct Noise {
    rng: Rng,
    block: Vec<u8>,
    at: usize,
    left: u64,
}

const NOISE_BLOCK: usize = 64 * 1024;

impl Noise {
    pub fn new(seed: u64, len: u64) -> Noise {
        Noise {
            rng: Rng::new(seed),
            block: vec![0; NOISE_BLOCK],
            at: NOISE_BLOCK,
            left: len,
        }
    }

    fn refill(&mut self) {
        for word in self.block.chunks_exact_mut(8) {
            word.copy_from_slice(&self.rng.next_u64().to_le_bytes());
        }
        self.at = 0;
    }
}

impl Read for Noise {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.left == 0 || buf.is_empty() {
            return Ok(0);
        }
        if self.at == self.block.len() {
            self.refill();
        }
        let n = buf
            .len()
            .min(self.block.len() - self.at)
            .min(usize::try_from(self.left).unwrap_or(usize::MAX));
        buf[..n].copy_from_slice(&self.block[self.at..self.at + n]);
        self.at += n;
        self.left -= n as u64;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn noise_does_not_depend_on_read_sizes() {
        let mut whole = Vec::new();
        Noise::new(7, 200_000).read_to_end(&mut whole).unwrap();
        let mut pieces = Vec::new();
        let mut noise = Noise::new(7, 200_000);
        let mut buf = [0u8; 999];
        loop {
            let n = noise.read(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            pieces.extend_from_slice(&buf[..n]);
        }
        assert_eq!(whole.len(), 200_000);
        assert_eq!(whole, pieces);
    }

    #[test]
    fn text_has_the_asked_length_and_no_needle_characters() {
        let text = text(&mut Rng::new(1), 777);
        assert_eq!(text.len(), 777);
        assert!(!text.contains('_') && !text.chars().any(|c| c.is_ascii_digit()));
    }

    #[test]
    fn planted_lines_are_present() {
        let planted = ["needle here".to_string()];
        let doc = document(&mut Rng::new(2), 5000, &planted);
        assert_eq!(doc.matches("needle here\n").count(), 1);
    }
}
