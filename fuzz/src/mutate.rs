//! A deterministic random source and a byte mutator.
//!
//! Coverage-free fuzzing lives or dies by its mutations: most random byte
//! strings are rejected by the first check of any parser, so inputs are
//! mostly small edits of valid seeds (bit flips, interesting integers,
//! inserted or deleted runs, splices of two corpus entries, dictionary
//! tokens), which keep them near the interesting part of the input space.
//! Everything is driven by one seed so that a run can be repeated exactly.

/// xorshift64*: fast, seedable, and good enough for choosing mutations.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        // Mix the seed so that 0, 1, 2... start far apart.
        let mut rng = Rng(seed ^ 0x9E37_79B9_7F4A_7C15);
        rng.0 = rng.0.max(1);
        rng.next_u64();
        rng
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number in `0..n` (`n` > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// True with probability `1/n`.
    pub fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0
    }

    pub fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next_u64() as u8).collect()
    }
}

const INTERESTING: &[u64] = &[
    0,
    1,
    0x7f,
    0x80,
    0xff,
    0x100,
    0x7fff,
    0xffff,
    0x8_0000,
    0x8_0001,
    0x7fff_ffff,
    0xffff_ffff,
    u64::MAX,
];

/// Returns a mutated copy of `input`, at most `max_len` bytes long.
pub fn mutate(
    rng: &mut Rng,
    input: &[u8],
    corpus: &[Vec<u8>],
    tokens: &[&str],
    max_len: usize,
) -> Vec<u8> {
    let mut out = input.to_vec();
    let rounds = 1 + rng.below(4);
    for _ in 0..rounds {
        match rng.below(11) {
            0 if !out.is_empty() => {
                let i = rng.below(out.len());
                out[i] ^= 1 << rng.below(8);
            }
            1 if !out.is_empty() => {
                let i = rng.below(out.len());
                out[i] = rng.next_u64() as u8;
            }
            2 if !out.is_empty() => {
                // Delete a run.
                let start = rng.below(out.len());
                let len = 1 + rng.below((out.len() - start).min(16));
                out.drain(start..start + len);
            }
            3 => {
                // Insert random bytes.
                let at = rng.below(out.len() + 1);
                let len = 1 + rng.below(8);
                let bytes = rng.bytes(len);
                out.splice(at..at, bytes);
            }
            4 | 5 if !tokens.is_empty() => {
                let token = tokens[rng.below(tokens.len())].as_bytes();
                let at = rng.below(out.len() + 1);
                if rng.one_in(3) && at < out.len() {
                    // Overwrite instead of insert.
                    let end = (at + token.len()).min(out.len());
                    out.splice(at..end, token.iter().copied());
                } else {
                    out.splice(at..at, token.iter().copied());
                }
            }
            6 if !out.is_empty() => {
                // Duplicate a run (repetition finds quadratic paths and
                // nesting limits).
                let start = rng.below(out.len());
                let len = 1 + rng.below((out.len() - start).min(32));
                let run: Vec<u8> = out[start..start + len].to_vec();
                let times = 1 + rng.below(8);
                let at = rng.below(out.len() + 1);
                for _ in 0..times {
                    out.splice(at..at, run.iter().copied());
                }
            }
            7 if !corpus.is_empty() => {
                // Splice: our head with another entry's tail.
                let other = &corpus[rng.below(corpus.len())];
                let cut = rng.below(out.len() + 1);
                let from = rng.below(other.len() + 1);
                out.truncate(cut);
                out.extend_from_slice(&other[from..]);
            }
            8 if out.len() >= 4 => {
                // An interesting integer, little or big endian, 1-8 bytes.
                let value = INTERESTING[rng.below(INTERESTING.len())];
                let width = [1, 2, 4, 8][rng.below(4)].min(out.len());
                let at = rng.below(out.len() - width + 1);
                let bytes = if rng.one_in(2) {
                    value.to_le_bytes()
                } else {
                    value.to_be_bytes()
                };
                out[at..at + width].copy_from_slice(&bytes[..width]);
            }
            9 if !out.is_empty() => {
                // An ASCII digit run: numbers are what parsers choke on.
                let at = rng.below(out.len() + 1);
                let digits = (rng.next_u64() % 10u64.pow(1 + rng.below(19) as u32)).to_string();
                out.splice(at..at, digits.bytes());
            }
            _ => {
                if !out.is_empty() {
                    out.truncate(rng.below(out.len() + 1));
                }
            }
        }
    }
    out.truncate(max_len);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_mutations() {
        let corpus = vec![b"hello world".to_vec(), b"echo $x".to_vec()];
        let run = |seed| {
            let mut rng = Rng::new(seed);
            (0..100)
                .map(|_| mutate(&mut rng, &corpus[0], &corpus, &["$(", "|"], 64))
                .collect::<Vec<_>>()
        };
        assert_eq!(run(7), run(7));
        assert_ne!(run(7), run(8));
        assert!(run(7).iter().all(|m| m.len() <= 64));
        // The mutator changes things.
        assert!(run(7).iter().filter(|m| m[..] != corpus[0][..]).count() > 80);
    }
}
