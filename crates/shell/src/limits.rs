//! Execution limits: every way a script can run away has a name and a bound.
//!
//! The interpreter and the utilities charge a shared [`Budget`] as they go;
//! the first bound crossed ends the whole exec with [`Abort::Limit`], which
//! unwinds to the top and is reported in the result. Time is read from a
//! [`Clock`] so the same code runs on the host and in the isolate.

use std::cell::Cell;

/// Which bound a script crossed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LimitKind {
    /// Simple commands (builtins, utilities, functions) executed.
    Commands,
    /// Iterations of all loops together.
    LoopIterations,
    /// Nesting of function calls, subshells, `eval` and `source`.
    CallDepth,
    /// Bytes of stdout or stderr produced.
    OutputBytes,
    /// Bytes written to files.
    BytesWritten,
    /// Wall-clock time.
    WallTime,
    /// CPU work (see [`Budget::charge_cpu`]).
    Cpu,
}

impl LimitKind {
    /// The name used in errors and results, e.g. `max_commands`.
    pub fn name(self) -> &'static str {
        match self {
            LimitKind::Commands => "max_commands",
            LimitKind::LoopIterations => "max_loop_iterations",
            LimitKind::CallDepth => "max_call_depth",
            LimitKind::OutputBytes => "max_output_bytes",
            LimitKind::BytesWritten => "max_bytes_written",
            LimitKind::WallTime => "max_wall_ms",
            LimitKind::Cpu => "max_cpu_units",
        }
    }
}

/// Why execution stopped early: not an error of the script, an end of the exec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Abort {
    /// A bound was crossed.
    Limit(LimitKind),
    /// `exit` was called (with this status).
    Exit(i32),
}

/// The bounds for one exec.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_commands: u64,
    pub max_loop_iterations: u64,
    pub max_call_depth: u32,
    pub max_output_bytes: usize,
    pub max_bytes_written: u64,
    pub max_wall_ms: u64,
    pub max_cpu_units: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            // Loops end first on iterations (a typical loop runs a few
            // commands per pass); command-heavy bodies end on commands.
            max_commands: 5_000_000,
            max_loop_iterations: 1_000_000,
            max_call_depth: 200,
            max_output_bytes: 16 << 20,
            max_bytes_written: 256 << 20,
            max_wall_ms: 20_000,
            max_cpu_units: 1_000_000_000,
        }
    }
}

/// A source of milliseconds (monotonic enough for budgeting).
pub trait Clock {
    fn now_ms(&self) -> u64;
}

/// The running totals of one exec, charged by everything that does work.
/// Interior mutability lets utilities and the interpreter share it freely.
#[derive(Debug)]
pub struct Budget {
    limits: Limits,
    started_ms: u64,
    commands: Cell<u64>,
    iterations: Cell<u64>,
    depth: Cell<u32>,
    written: Cell<u64>,
    cpu: Cell<u64>,
}

impl Budget {
    pub fn new(limits: Limits, started_ms: u64) -> Self {
        Budget {
            limits,
            started_ms,
            commands: Cell::new(0),
            iterations: Cell::new(0),
            depth: Cell::new(0),
            written: Cell::new(0),
            cpu: Cell::new(0),
        }
    }

    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    fn bump(counter: &Cell<u64>, by: u64, max: u64, kind: LimitKind) -> Result<(), Abort> {
        let value = counter.get().saturating_add(by);
        counter.set(value);
        if value > max {
            Err(Abort::Limit(kind))
        } else {
            Ok(())
        }
    }

    /// One simple command is about to run.
    pub fn charge_command(&self) -> Result<(), Abort> {
        Self::bump(
            &self.commands,
            1,
            self.limits.max_commands,
            LimitKind::Commands,
        )
    }

    /// One loop iteration is about to run.
    pub fn charge_iteration(&self) -> Result<(), Abort> {
        Self::bump(
            &self.iterations,
            1,
            self.limits.max_loop_iterations,
            LimitKind::LoopIterations,
        )
    }

    /// `bytes` are about to be written to files.
    pub fn charge_write(&self, bytes: u64) -> Result<(), Abort> {
        Self::bump(
            &self.written,
            bytes,
            self.limits.max_bytes_written,
            LimitKind::BytesWritten,
        )
    }

    /// `units` of CPU work (roughly: bytes processed, or steps taken) done.
    pub fn charge_cpu(&self, units: u64) -> Result<(), Abort> {
        Self::bump(&self.cpu, units, self.limits.max_cpu_units, LimitKind::Cpu)
    }

    /// Enters a function, subshell, `eval` or `source`; pair with [`Budget::leave`].
    pub fn enter(&self) -> Result<(), Abort> {
        let depth = self.depth.get() + 1;
        self.depth.set(depth);
        if depth > self.limits.max_call_depth {
            Err(Abort::Limit(LimitKind::CallDepth))
        } else {
            Ok(())
        }
    }

    pub fn leave(&self) {
        self.depth.set(self.depth.get().saturating_sub(1));
    }

    /// Checks the wall clock.
    pub fn check_time(&self, clock: &dyn Clock) -> Result<(), Abort> {
        if clock.now_ms().saturating_sub(self.started_ms) > self.limits.max_wall_ms {
            Err(Abort::Limit(LimitKind::WallTime))
        } else {
            Ok(())
        }
    }
}
