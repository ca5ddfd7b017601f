//! What one regular-expression search costs, known before it runs.
//!
//! The `regex` crate searches in time linear in the text, with a factor
//! that depends on the engine it ends up using. Its lazy DFA takes about
//! one step per byte; but where the DFA's states are each huge (counted
//! repetitions make them so: `a{1000}{10}` over a line of `a`s), its cache
//! thrashes, it gives up, and the PikeVM takes over at up to one step per
//! byte *per NFA state*: 10,000 states, so 87 s for one 2 MB line. A search
//! cannot be interrupted once started, so its cost has to be known before.
//!
//! [`SearchCost::work`] gives that cost: the text's length when the lazy
//! DFA answers on it alone (run first, with the same cache rules the
//! `regex` crate uses, only where the worst case is not small anyway), or
//! the PikeVM's worst case, states × bytes, when it gives up. A caller
//! refuses a search whose work is past its bound (the grep tool: see
//! [`MAX_SEARCH_WORK`]).

use std::cell::RefCell;

use regex_automata::hybrid::regex::{Cache, Regex};
use regex_automata::nfa::thompson;
use regex_automata::util::syntax;
use regex_automata::Input;

use crate::grep::MAX_REGEX_BYTES;

/// Most work one grep page may spend on searches the fast engine gave up
/// on, in PikeVM steps (a few seconds of CPU).
pub const MAX_SEARCH_WORK: u64 = 1 << 30;

/// Worst cases up to this many steps are not checked first: checking
/// would cost more than it saves.
const CHEAP: u64 = 1 << 24;

/// A pattern's lazy DFA, to learn whether a search needs the slow engine,
/// with the cache its checks share.
pub struct SearchCost {
    dfa: Regex,
    cache: RefCell<Cache>,
    states: u64,
}

impl std::fmt::Debug for SearchCost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SearchCost")
            .field("states", &self.states)
            .finish_non_exhaustive()
    }
}

impl SearchCost {
    /// For `pattern` as the `regex` crate compiles it with these flags
    /// (byte-oriented, Unicode on). `None` if it does not compile here
    /// (the caller's compile has reported why).
    pub fn new(pattern: &str, case_insensitive: bool, multi_line: bool) -> Option<SearchCost> {
        let dfa = Regex::builder()
            .syntax(
                syntax::Config::new()
                    .case_insensitive(case_insensitive)
                    .multi_line(multi_line)
                    .utf8(false),
            )
            .thompson(thompson::Config::new().nfa_size_limit(Some(MAX_REGEX_BYTES)))
            .dfa(
                regex_automata::hybrid::dfa::Config::new()
                    .cache_capacity(2 << 20)
                    .minimum_cache_clear_count(Some(3))
                    .minimum_bytes_per_state(Some(10)),
            )
            .build(pattern)
            .ok()?;
        let states = dfa.forward().get_nfa().states().len() as u64;
        let cache = RefCell::new(dfa.create_cache());
        Some(SearchCost { dfa, cache, states })
    }

    /// The steps one search of `hay` costs at most (see the module docs).
    pub fn work(&self, hay: &[u8]) -> u64 {
        let bytes = hay.len() as u64;
        let worst = bytes.saturating_mul(self.states);
        if worst <= CHEAP {
            return bytes;
        }
        let mut cache = self.cache.borrow_mut();
        match self
            .dfa
            .try_search(&mut cache, &Input::new(hay).earliest(true))
        {
            Ok(_) => bytes,
            Err(_) => worst,
        }
    }

    /// The steps one search of `hay` costs beyond one per byte: what the
    /// slow engine adds, zero where the fast one answers.
    pub fn extra_work(&self, hay: &[u8]) -> u64 {
        self.work(hay).saturating_sub(hay.len() as u64)
    }

    /// The pattern's NFA states (the slow engine's steps per byte, at most).
    pub fn states(&self) -> u64 {
        self.states
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_search_costs_its_bytes_unless_the_fast_engine_gives_up() {
        let line = vec![b'a'; 1 << 20];
        let ordinary = SearchCost::new(r"\w+ing|foo\d{3}", false, true).unwrap();
        assert_eq!(ordinary.work(&line), 1 << 20);
        assert_eq!(ordinary.extra_work(&line), 0);
        let counted = SearchCost::new("a{1000}{10}", false, true).unwrap();
        assert!(counted.states() >= 10_000, "{}", counted.states());
        assert_eq!(counted.work(&line), counted.states() << 20);
        assert_eq!(counted.extra_work(&line), (counted.states() - 1) << 20);
        // A short text is not checked: its worst case is small.
        assert_eq!(counted.work(b"aaaa"), 4);
    }
}
