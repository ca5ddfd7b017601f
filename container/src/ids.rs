//! Exec ids remembered in bounded memory.
//!
//! An exec id must never run twice, and a container may live for days of
//! commands, so "every id ever seen" cannot be a set that only grows. The
//! most recent [`CAPACITY`] ids are kept exactly; an id pushed out raises a
//! high-water mark, and any id at or below that mark (in byte order) counts
//! as seen too. An old id is therefore still refused; the price is that a
//! new id below the mark is refused as well, which cannot happen when ids
//! increase (a time-ordered prefix), and with random ids only after
//! [`CAPACITY`] commands on one container instance.

use std::collections::{HashSet, VecDeque};

/// Ids kept exactly.
pub const CAPACITY: usize = 10_000;

#[derive(Debug, Default)]
pub struct ExecIds {
    recent: HashSet<String>,
    order: VecDeque<String>,
    /// The greatest id pushed out of `recent`.
    high_water: Option<String>,
    capacity: usize,
}

impl ExecIds {
    pub fn new() -> ExecIds {
        ExecIds::with_capacity(CAPACITY)
    }

    pub fn with_capacity(capacity: usize) -> ExecIds {
        ExecIds {
            capacity: capacity.max(1),
            ..ExecIds::default()
        }
    }

    /// Whether `id` was inserted before (or may have been: at or below the
    /// high-water mark).
    pub fn contains(&self, id: &str) -> bool {
        self.recent.contains(id) || self.high_water.as_deref().is_some_and(|mark| id <= mark)
    }

    /// Remembers `id`, forgetting the oldest exact entry when full.
    pub fn insert(&mut self, id: &str) {
        if !self.recent.insert(id.to_string()) {
            return;
        }
        self.order.push_back(id.to_string());
        if self.order.len() > self.capacity {
            let oldest = self.order.pop_front().expect("over capacity");
            self.recent.remove(&oldest);
            if self.high_water.as_ref().is_none_or(|mark| oldest > *mark) {
                self.high_water = Some(oldest);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ExecIds;

    #[test]
    fn recent_ids_exactly_old_ones_by_the_mark() {
        let mut ids = ExecIds::with_capacity(3);
        for id in ["a1", "a2", "a3", "a4", "a5"] {
            ids.insert(id);
        }
        assert_eq!(ids.recent.len(), 3);
        // a1 and a2 were pushed out, but stay refused.
        assert!(ids.contains("a1") && ids.contains("a2"));
        assert!(ids.contains("a5"));
        assert!(!ids.contains("a6"));
        // Below the mark counts as seen; above it only if kept.
        assert!(ids.contains("a0"));
        assert!(!ids.contains("b"));
        ids.insert("a5");
        assert_eq!(ids.order.len(), 3, "a repeat is not a new entry");
    }

    #[test]
    fn the_mark_never_goes_down() {
        let mut ids = ExecIds::with_capacity(1);
        ids.insert("z");
        ids.insert("m");
        ids.insert("a");
        assert!(ids.contains("y"), "pushed-out z keeps the mark at z");
        assert!(!ids.contains("zz"));
    }
}
