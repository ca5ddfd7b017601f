//! The interpreter's share of the memory budget (`max_memory_bytes`).
//!
//! Values are built in many places (expansions, command substitutions,
//! pipes, `mapfile`) and freed in many more (assignments replace values,
//! functions return, subshells end), so exact bookkeeping at every site
//! would be brittle. Instead the sites that BUILD charge what they build
//! ([`Shell::charge_built`]) to an estimate that only grows, and the state
//! is MEASURED ([`Shell::measure_memory`]) when the estimate crosses the
//! budget or has drifted by a sixteenth of it: a crossing that the
//! measurement confirms ends the exec with `max_memory_bytes`; otherwise
//! the estimate restarts from the measured size. The measurement walks the
//! variables, the open output buffers and the inputs, so its cost is
//! charged as CPU. A subshell's saved copy of the state is held
//! ([`crate::limits::Held`]) for as long as the subshell runs.

use std::rc::Rc;

use super::vars::Value;
use super::{Fd, Shell, State, R};
use crate::limits::Held;

/// What one string, array element or map entry costs beyond its bytes
/// (the `String` header, the tree node's share, allocator rounding).
const ENTRY_OVERHEAD: u64 = 48;

/// What a function definition is counted as (its syntax tree is not
/// walked; a definition's text is bounded by the script's).
const FUNCTION_BYTES: u64 = 512;

/// Bytes and entries of a value.
fn value_size(value: &Value) -> (u64, u64) {
    match value {
        Value::Unset => (0, 1),
        Value::Str(s) => (s.len() as u64 + ENTRY_OVERHEAD, 1),
        Value::Indexed(m) => m.values().fold((ENTRY_OVERHEAD, 1), |(b, n), v| {
            (b + v.len() as u64 + 8 + ENTRY_OVERHEAD, n + 1)
        }),
        Value::Assoc(m) => m.iter().fold((ENTRY_OVERHEAD, 1), |(b, n), (k, v)| {
            (b + (k.len() + v.len()) as u64 + ENTRY_OVERHEAD, n + 1)
        }),
    }
}

impl State {
    /// Bytes this state holds, and the number of entries walked.
    pub(super) fn heap_size(&self) -> (u64, u64) {
        let mut bytes = 0u64;
        let mut entries = 0u64;
        let mut add = |(b, n): (u64, u64)| {
            bytes += b;
            entries += n;
        };
        for (name, var) in &self.vars {
            let (b, n) = value_size(&var.value);
            add((b + name.len() as u64, n));
        }
        for frame in &self.frames {
            for cell in &frame.cells {
                let (b, n) = cell.outer.as_ref().map_or((0, 1), |v| value_size(&v.value));
                add((b + cell.name.len() as u64 + ENTRY_OVERHEAD, n));
            }
        }
        for arg in &self.positional {
            add((arg.len() as u64 + ENTRY_OVERHEAD, 1));
        }
        add((
            self.funcs.len() as u64 * FUNCTION_BYTES,
            self.funcs.len() as u64,
        ));
        (bytes, entries.max(1))
    }
}

impl<'a> Shell<'a> {
    /// Charges `bytes` the interpreter is building (a value about to be
    /// pushed into a word, a pipe's content) to its memory estimate.
    pub(crate) fn charge_built(&mut self, bytes: usize) -> R<()> {
        if self.budget.charge_state(bytes as u64) {
            self.measure_memory()?;
        }
        Ok(())
    }

    /// Measures the interpreter's state (variables, open output buffers,
    /// inputs) and reports it to the budget, which fails when it does not
    /// fit.
    pub(crate) fn measure_memory(&mut self) -> R<()> {
        let (mut bytes, mut entries) = self.st.heap_size();
        for slot in &self.slots {
            bytes += slot.out.len() as u64;
            entries += 1;
        }
        let mut seen: Vec<*const super::Input> = Vec::new();
        for fd in self.fds.iter().flatten() {
            if let Fd::In(input) = fd {
                let ptr = Rc::as_ptr(input);
                if !seen.contains(&ptr) {
                    seen.push(ptr);
                    bytes += input.data.len() as u64;
                }
            }
            entries += 1;
        }
        self.budget.charge_cpu(entries)?;
        self.budget.set_state(bytes)?;
        Ok(())
    }

    /// Holds the size of the state a subshell saves, for as long as the
    /// subshell runs (each nested subshell keeps one more copy).
    pub(crate) fn hold_saved_state(&mut self) -> R<Held<'a>> {
        let (bytes, entries) = self.st.heap_size();
        let budget: &'a crate::limits::Budget = self.budget;
        budget.charge_cpu(entries)?;
        Ok(budget.hold(bytes)?)
    }
}
