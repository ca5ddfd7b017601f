//! Execution limits: every way a script can run away has a name and a bound.
//!
//! The interpreter and the utilities charge a shared [`Budget`] as they go;
//! the first bound crossed ends the whole exec with [`Abort::Limit`], which
//! unwinds to the top and is reported in the result. Time is read from a
//! [`Clock`] so the same code runs on the host and in the isolate.
//!
//! Steps are not enough: a script can exhaust the isolate's memory in a few
//! steps (`s=$s$s` doubles a string each pass) or its stack in one
//! (`eval` of ten thousand nested parentheses). So the budget also bounds
//! memory ([`Budget::hold`], [`Budget::charge_state`]) and the depth of
//! recursion ([`Budget::check_stack`], [`MAX_PARSE_DEPTH`]).

use std::cell::{Cell, RefCell};

use stead_vfs::grep::regex_too_large;
pub(crate) use stead_vfs::grep::MAX_REGEX_BYTES;

/// Which bound a script crossed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LimitKind {
    /// Simple commands (builtins, utilities, functions) executed.
    Commands,
    /// Iterations of all loops together (jq and awk loops included).
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
    /// Bytes held at once: variables, arrays, pipes, command substitutions,
    /// and what utilities build (sort's lines, jq's and awk's values).
    Memory,
    /// A pipe or command substitution holding more than it can: the
    /// reader needed what the writer could not put in it.
    PipeBytes,
    /// Stack used by recursion that no count bounds tightly enough
    /// (deeply nested commands, jq and awk recursion).
    Stack,
    /// Not a bound: the exec stopped to wait for a network answer, which
    /// the host makes and then runs the exec again (see `crate::net`). A
    /// host that gives the shell a network never reports it.
    NetworkWait,
    /// Not a bound: the exec met content kept in the object store, which
    /// the host brings back and then runs the exec again (see
    /// `crate::content`). A host never reports it.
    ContentWait,
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
            LimitKind::Memory => "max_memory_bytes",
            LimitKind::PipeBytes => "max_pipe_bytes",
            LimitKind::Stack => "max_stack_bytes",
            LimitKind::NetworkWait => "network_wait",
            LimitKind::ContentWait => "content_wait",
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

/// Nesting a parser accepts (parentheses, groups, compound commands,
/// arithmetic and `[[ ]]` operands, awk, sed and jq blocks). Deeper text is
/// a syntax error naming `max_parse_depth`, not an end of the exec: it is a
/// property of the text, as any other syntax error. Fixed, because parsing
/// happens before an exec has limits (`commands_used` routes a script
/// before it runs).
pub const MAX_PARSE_DEPTH: usize = 100;

/// The syntax-error text for nesting deeper than [`MAX_PARSE_DEPTH`].
pub(crate) fn too_deep_message() -> String {
    format!("nesting deeper than {MAX_PARSE_DEPTH} levels (max_parse_depth)")
}

/// CPU units charged per filesystem node visited (`find`, pathname
/// expansion): a lookup costs far more than a byte processed, and in a
/// Worker the clock does not move during an exec, so a walk over a large
/// tree must end on this budget.
pub(crate) const NODE_COST: u64 = 64;

/// Why a regular expression from a script was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RegexError {
    /// Its compiled size passes [`MAX_REGEX_BYTES`]: reported as it is,
    /// naming the bound, by every utility.
    TooLarge,
    /// Not a valid expression (the crate's message): each utility words it
    /// as its GNU namesake does.
    Invalid(String),
}

impl std::fmt::Display for RegexError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RegexError::TooLarge => f.write_str(&regex_too_large()),
            RegexError::Invalid(reason) => f.write_str(reason),
        }
    }
}

impl From<regex::Error> for RegexError {
    fn from(error: regex::Error) -> Self {
        match error {
            regex::Error::CompiledTooBig(_) => RegexError::TooLarge,
            other => RegexError::Invalid(other.to_string()),
        }
    }
}

/// Compiles a regular expression from a script within
/// [`MAX_REGEX_BYTES`] (the bound the file tools use, see there why).
pub(crate) fn build_regex(builder: &mut regex::RegexBuilder) -> Result<regex::Regex, RegexError> {
    Ok(builder
        .size_limit(MAX_REGEX_BYTES)
        .dfa_size_limit(MAX_REGEX_BYTES)
        .build()?)
}

/// What searches with a script's pattern cost beyond one step per byte
/// (see [`stead_vfs::search_cost`]): the lazy DFA gives up on some texts
/// (a pattern that compiles small but counts high, `a{1000}{10}` over a
/// long line of `a`s) and the slow engine then needs up to one step per
/// byte per state. Utilities charge [`RegexCost::extra_work`] before such
/// a search, so it ends on `max_cpu_units` instead of running for minutes.
#[derive(Debug)]
pub(crate) struct RegexCost(Option<stead_vfs::search_cost::SearchCost>);

impl RegexCost {
    /// For `pattern` with its flags inline (`(?i)`), as compiled by
    /// [`build_regex`] or [`build_bytes_regex`] with no builder flags.
    pub(crate) fn new(pattern: &str) -> RegexCost {
        RegexCost(stead_vfs::search_cost::SearchCost::new(
            pattern, false, false,
        ))
    }

    /// The steps a search of `haystack` may cost beyond one per byte (none
    /// for a pattern that could not be measured).
    pub(crate) fn extra_work(&self, haystack: &[u8]) -> u64 {
        self.0.as_ref().map_or(0, |cost| cost.extra_work(haystack))
    }
}

/// [`build_regex`] for a matcher on bytes.
pub(crate) fn build_bytes_regex(
    builder: &mut regex::bytes::RegexBuilder,
) -> Result<regex::bytes::Regex, RegexError> {
    Ok(builder
        .size_limit(MAX_REGEX_BYTES)
        .dfa_size_limit(MAX_REGEX_BYTES)
        .build()?)
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
    pub max_memory_bytes: u64,
    pub max_pipe_bytes: usize,
    pub max_stack_bytes: usize,
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
            // The Worker's isolate has 128 MB for everything; the shell's
            // accounted data is half of that, leaving room for the copies
            // a step makes and for SQLite.
            max_memory_bytes: 64 << 20,
            max_pipe_bytes: 16 << 20,
            // A Worker's wasm stack is 1 MiB; the shell may use half from
            // where the exec started.
            max_stack_bytes: 512 << 10,
        }
    }
}

/// A source of milliseconds (monotonic enough for budgeting).
pub trait Clock {
    fn now_ms(&self) -> u64;

    /// Blocks for `ms` milliseconds if this clock can; `false` when it
    /// cannot. A Worker's isolate cannot block inside a synchronous exec,
    /// and its clock only moves across I/O: there [`ExecClock`] moves the
    /// shell's time forward instead.
    fn sleep_ms(&self, ms: u64) -> bool {
        let _ = ms;
        false
    }
}

/// The clock an exec reads: the host's, plus the time `sleep` spent
/// without waiting when the host's clock cannot block. So `sleep 5; date`
/// shows five seconds later and the wall limit counts the five seconds on
/// every host, while only a host that can block really waits.
pub(crate) struct ExecClock<'c> {
    host: &'c dyn Clock,
    unwaited_ms: Cell<u64>,
}

impl<'c> ExecClock<'c> {
    pub(crate) fn new(host: &'c dyn Clock) -> Self {
        ExecClock {
            host,
            unwaited_ms: Cell::new(0),
        }
    }
}

impl Clock for ExecClock<'_> {
    fn now_ms(&self) -> u64 {
        self.host.now_ms().saturating_add(self.unwaited_ms.get())
    }

    /// Always "sleeps": by blocking if the host can, else by moving this
    /// clock forward.
    fn sleep_ms(&self, ms: u64) -> bool {
        if !self.host.sleep_ms(ms) {
            self.unwaited_ms
                .set(self.unwaited_ms.get().saturating_add(ms));
        }
        true
    }
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
    /// Bytes held by live [`Held`] tokens.
    held: Cell<u64>,
    /// The interpreter's estimate of its own state (see [`Budget::charge_state`]).
    state: Cell<u64>,
    /// The state at its last measurement.
    state_measured: Cell<u64>,
    /// Where the stack was when the exec started.
    stack_base: usize,
    /// When the `timeout` commands running now end (exec clock, ms).
    deadlines: RefCell<Vec<u64>>,
}

/// The current stack position: the address of a local. Comparing it with
/// an earlier reading gives the stack used in between (the stack grows
/// down on every target stead runs on, wasm32's shadow stack included).
#[inline(never)]
pub(crate) fn stack_position() -> usize {
    let marker = 0u8;
    std::hint::black_box(&marker) as *const u8 as usize
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
            held: Cell::new(0),
            state: Cell::new(0),
            state_measured: Cell::new(0),
            stack_base: stack_position(),
            deadlines: RefCell::new(Vec::new()),
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

    /// Ends the exec once it has met content kept in the object store: the
    /// host runs it again when the content is back (see `crate::content`).
    fn content_ready() -> Result<(), Abort> {
        match crate::content::waiting() {
            true => Err(Abort::Limit(LimitKind::ContentWait)),
            false => Ok(()),
        }
    }

    /// One simple command is about to run.
    pub fn charge_command(&self) -> Result<(), Abort> {
        Self::content_ready()?;
        Self::bump(
            &self.commands,
            1,
            self.limits.max_commands,
            LimitKind::Commands,
        )
    }

    /// One loop iteration is about to run.
    pub fn charge_iteration(&self) -> Result<(), Abort> {
        Self::content_ready()?;
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

    /// Checks the wall clock, and the deadlines of the `timeout` commands
    /// running (past one, the run unwinds as at the wall limit until the
    /// `timeout` that set it, see [`Budget::deadline_passed`]).
    pub fn check_time(&self, clock: &dyn Clock) -> Result<(), Abort> {
        let now = clock.now_ms();
        let past_deadline = self.deadlines.borrow().iter().any(|&at| now >= at);
        if self.elapsed_ms(clock) > self.limits.max_wall_ms || past_deadline {
            Err(Abort::Limit(LimitKind::WallTime))
        } else {
            Ok(())
        }
    }

    fn elapsed_ms(&self, clock: &dyn Clock) -> u64 {
        clock.now_ms().saturating_sub(self.started_ms)
    }

    /// Milliseconds left before the wall limit or the nearest deadline.
    pub fn remaining_ms(&self, clock: &dyn Clock) -> u64 {
        let now = clock.now_ms();
        let wall = self
            .limits
            .max_wall_ms
            .saturating_sub(self.elapsed_ms(clock));
        let nearest = self.deadlines.borrow().iter().copied().min();
        nearest.map_or(wall, |at| wall.min(at.saturating_sub(now)))
    }

    /// A `timeout` starts: time runs out for what it runs at `at_ms`.
    /// Pair with [`Budget::end_deadline`].
    pub fn start_deadline(&self, at_ms: u64) {
        self.deadlines.borrow_mut().push(at_ms);
    }

    pub fn end_deadline(&self) {
        self.deadlines.borrow_mut().pop();
    }

    /// Whether a wall-time abort is the expiry of the deadline `at_ms` (and
    /// not of the exec's own limit, which ends everything).
    pub fn deadline_passed(&self, at_ms: u64, clock: &dyn Clock) -> bool {
        clock.now_ms() >= at_ms && self.elapsed_ms(clock) <= self.limits.max_wall_ms
    }

    /// Fails once recursion has used more than `max_stack_bytes` of stack
    /// since the exec started. Called where the interpreter, the
    /// utilities' evaluators and jq recurse, so that no nesting, however
    /// it is built, overflows the isolate's stack.
    pub fn check_stack(&self) -> Result<(), Abort> {
        if self.stack_used() > self.limits.max_stack_bytes {
            Err(Abort::Limit(LimitKind::Stack))
        } else {
            Ok(())
        }
    }

    /// Stack used since the exec started.
    fn stack_used(&self) -> usize {
        self.stack_base.saturating_sub(stack_position())
    }

    /// Whether recursion has used half of `max_stack_bytes`: where a
    /// recursion the script can recover from (bash's arithmetic
    /// "expression recursion level exceeded") stops, well before the
    /// limit that ends the exec.
    pub fn stack_half_used(&self) -> bool {
        self.stack_used() > self.limits.max_stack_bytes / 2
    }

    // ---- memory ----

    /// Bytes accounted now: the interpreter's state and every live hold.
    pub fn memory_in_use(&self) -> u64 {
        self.held.get().saturating_add(self.state.get())
    }

    fn memory_fits(&self, more: u64) -> Result<(), Abort> {
        if self.memory_in_use().saturating_add(more) > self.limits.max_memory_bytes {
            Err(Abort::Limit(LimitKind::Memory))
        } else {
            Ok(())
        }
    }

    /// Fails unless `bytes` more would fit in the memory budget (for a
    /// value about to be built and handed on, such as a file's content).
    pub fn check_memory(&self, bytes: u64) -> Result<(), Abort> {
        self.memory_fits(bytes)
    }

    /// Holds `bytes` of the memory budget until the token is dropped: for
    /// data a utility or the interpreter keeps while it works (sort's
    /// lines, a pipe's content, a subshell's saved state).
    pub fn hold(&self, bytes: u64) -> Result<Held<'_>, Abort> {
        self.memory_fits(bytes)?;
        self.held.set(self.held.get() + bytes);
        Ok(Held {
            budget: self,
            bytes,
        })
    }

    /// Adds `bytes` the interpreter built into its state (a value assigned,
    /// a word expanded) to its estimate. `true` asks the interpreter to
    /// measure its state and report it with [`Budget::set_state`]: the
    /// estimate crossed the budget, or has drifted by a sixteenth of it
    /// since the last measurement (freed values are only seen by
    /// measuring, so the estimate only grows in between).
    #[must_use]
    pub fn charge_state(&self, bytes: u64) -> bool {
        let state = self.state.get().saturating_add(bytes);
        self.state.set(state);
        let drift = state.saturating_sub(self.state_measured.get());
        self.memory_in_use() > self.limits.max_memory_bytes
            || drift > self.limits.max_memory_bytes / 16
    }

    /// Records a measurement of the interpreter's state; fails when it
    /// does not fit with what is held.
    pub fn set_state(&self, bytes: u64) -> Result<(), Abort> {
        self.state.set(bytes);
        self.state_measured.set(bytes);
        self.memory_fits(0)
    }

    /// Whether the estimate is within a quarter of the budget of its end,
    /// where a stale (too high) estimate could refuse a hold that fits.
    pub fn memory_tight(&self) -> bool {
        self.memory_in_use() > self.limits.max_memory_bytes / 4 * 3
    }
}

/// A share of the memory budget, given back when dropped.
#[derive(Debug)]
pub struct Held<'b> {
    budget: &'b Budget,
    bytes: u64,
}

impl Held<'_> {
    /// Holds `bytes` more.
    pub fn grow(&mut self, bytes: u64) -> Result<(), Abort> {
        self.budget.memory_fits(bytes)?;
        self.budget.held.set(self.budget.held.get() + bytes);
        self.bytes += bytes;
        Ok(())
    }

    /// Holds exactly `bytes` (more or less than now).
    pub fn resize(&mut self, bytes: u64) -> Result<(), Abort> {
        if bytes > self.bytes {
            self.grow(bytes - self.bytes)
        } else {
            let freed = self.bytes - bytes;
            self.budget.held.set(self.budget.held.get() - freed);
            self.bytes = bytes;
            Ok(())
        }
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.budget.held.set(self.budget.held.get() - self.bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget(max_memory_bytes: u64) -> Budget {
        Budget::new(
            Limits {
                max_memory_bytes,
                ..Limits::default()
            },
            0,
        )
    }

    #[test]
    fn holds_are_given_back_when_dropped() {
        let budget = budget(100);
        let first = budget.hold(60).unwrap();
        assert_eq!(
            budget.hold(41).unwrap_err(),
            Abort::Limit(LimitKind::Memory)
        );
        let mut second = budget.hold(40).unwrap();
        assert_eq!(budget.memory_in_use(), 100);
        assert!(second.grow(1).is_err());
        second.resize(10).unwrap();
        drop(first);
        assert_eq!(budget.memory_in_use(), 10);
        drop(second);
        assert_eq!(budget.memory_in_use(), 0);
    }

    #[test]
    fn the_state_estimate_asks_for_a_measurement_when_it_crosses_or_drifts() {
        let budget = budget(1600);
        // Under a sixteenth of drift: no measurement needed.
        assert!(!budget.charge_state(100));
        // Drifted past 100 bytes since the measurement at 0.
        assert!(budget.charge_state(1));
        budget.set_state(50).unwrap();
        let _held = budget.hold(1500).unwrap();
        // 50 + 1500 + 60 crosses 1600.
        assert!(budget.charge_state(60));
        assert_eq!(budget.set_state(110), Err(Abort::Limit(LimitKind::Memory)));
        assert!(budget.set_state(100).is_ok());
    }

    #[test]
    fn recursion_past_the_stack_budget_is_refused() {
        fn recurse(budget: &Budget) -> Result<u32, Abort> {
            let frame = std::hint::black_box([0u8; 256]);
            budget.check_stack()?;
            recurse(budget).map(|d| d + u32::from(frame[0]))
        }
        let budget = Budget::new(
            Limits {
                max_stack_bytes: 64 << 10,
                ..Limits::default()
            },
            0,
        );
        assert_eq!(recurse(&budget), Err(Abort::Limit(LimitKind::Stack)));
        assert!(budget.check_stack().is_ok());
    }

    #[test]
    fn unwaited_sleep_moves_the_exec_clock_and_counts_against_the_wall_limit() {
        struct Frozen;
        impl Clock for Frozen {
            fn now_ms(&self) -> u64 {
                1_000
            }
        }
        let clock = ExecClock::new(&Frozen);
        let budget = Budget::new(
            Limits {
                max_wall_ms: 5_000,
                ..Limits::default()
            },
            clock.now_ms(),
        );
        assert!(clock.sleep_ms(4_000));
        assert_eq!(clock.now_ms(), 5_000);
        assert!(budget.check_time(&clock).is_ok());
        assert!(clock.sleep_ms(1_001));
        assert_eq!(
            budget.check_time(&clock),
            Err(Abort::Limit(LimitKind::WallTime))
        );
    }
}
