//! The interpreter: runs a parsed script against the workspace.
//!
//! Design:
//! - All shell state that a subshell may change (variables, functions,
//!   positional parameters, cwd, options) lives in [`State`]; a subshell,
//!   command substitution or pipeline stage saves a copy and restores it
//!   afterwards, so changes are discarded as in bash.
//! - File descriptors map to capture buffers ([`Slot`]). A redirection to a
//!   file opens a slot that is flushed to the file when the redirection
//!   ends (a `>` truncates at open, as bash does); `exec >file` slots are
//!   flushed at the end of the exec. Pipelines are buffered stage by stage.
//! - Input descriptors hold bytes plus a shared read position, so `read`
//!   in a `while` loop consumes its input line by line.
//! - Control flow (`break`, `continue`, `return`, fatal expansion errors)
//!   travels as [`Flow`] values; `exit` and limits as [`Abort`].
//! - Process substitution `<(cmd)` runs `cmd` first and holds its output as
//!   `/dev/fd/63` (then 62, ...), the names bash shows, in memory
//!   ([`crate::pipes`]), never in the workspace; they close with their
//!   command. `>(cmd)` gets such a file too, and `cmd` runs with it as
//!   input once the outer command finished.

pub(crate) mod arith;
pub(crate) mod ast;
mod builtins;
mod complete;
mod cond;
mod dirs;
mod expand;
mod flags;
mod history;
pub(crate) mod invoke;
mod jobs;
mod memory;
mod options;
pub(crate) mod parse;
mod pattern;
mod print;
pub(crate) mod printf;
mod redirect;
mod resources;
mod search;
mod traps;
mod vars;

use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

use stead_vfs::VPath;

use crate::fs::Fs;
use crate::io::Output;
use crate::limits::{Abort, Budget, Clock, LimitKind};
use crate::pipes::Pipes;
use crate::utils::{self, Ctx, Runner, Utility};
use ast::*;
pub(crate) use vars::{Value, Var};

/// A builtin: a command run inside the interpreter, with its state.
pub(crate) type Builtin = fn(&mut Shell, &[String]) -> R<i32>;

/// Every builtin and the module that runs it. The table is the
/// interpreter's, not any one module's: it names handlers from most of its
/// modules, and those that report on commands (`type`, `command`, `hash`,
/// `compgen -b`) consult it, so it stands above them all.
const BUILTINS: &[(&str, Builtin)] = &[
    (":", |_, _| Ok(0)),
    ("true", |_, _| Ok(0)),
    ("false", |_, _| Ok(1)),
    ("echo", builtins::echo),
    ("printf", builtins::printf_builtin),
    ("cd", builtins::cd),
    ("pwd", builtins::pwd),
    ("export", builtins::export),
    ("unset", builtins::unset),
    ("declare", builtins::declare),
    ("typeset", builtins::declare),
    ("local", builtins::local),
    ("readonly", builtins::readonly),
    ("shift", builtins::shift),
    ("eval", builtins::eval),
    ("source", builtins::source),
    (".", builtins::source),
    ("read", builtins::read),
    ("test", builtins::test),
    ("[", builtins::bracket),
    ("type", search::type_builtin),
    ("command", search::command),
    ("builtin", builtins::builtin),
    ("getopts", builtins::getopts),
    ("exit", builtins::exit),
    ("return", builtins::return_builtin),
    ("break", builtins::break_builtin),
    ("continue", builtins::continue_builtin),
    ("let", builtins::let_builtin),
    ("shopt", options::shopt),
    ("set", builtins::set),
    ("alias", builtins::alias),
    ("unalias", builtins::unalias),
    ("mapfile", builtins::mapfile),
    ("readarray", builtins::mapfile),
    ("trap", traps::trap),
    ("wait", jobs::wait),
    ("jobs", jobs::jobs),
    ("fg", jobs::fg),
    ("bg", jobs::bg),
    ("disown", jobs::disown),
    ("kill", jobs::kill),
    ("complete", complete::complete),
    ("pushd", dirs::pushd),
    ("popd", dirs::popd),
    ("dirs", dirs::dirs),
    ("compgen", complete::compgen),
    ("compopt", complete::compopt),
    ("hash", search::hash),
    ("history", history::history),
    ("fc", history::fc),
    ("umask", resources::umask),
    ("ulimit", resources::ulimit),
    ("exec", builtins::exec_builtin),
    ("times", |sh, _| {
        sh.out("0m0.000s 0m0.000s\n0m0.000s 0m0.000s\n")?;
        Ok(0)
    }),
];

/// Every builtin's name, sorted.
pub(crate) fn builtin_names() -> Vec<String> {
    let mut v: Vec<String> = BUILTINS.iter().map(|(n, _)| n.to_string()).collect();
    v.sort();
    v
}

pub(crate) fn lookup_builtin(name: &str) -> Option<Builtin> {
    BUILTINS.iter().find(|(n, _)| *n == name).map(|(_, b)| *b)
}

/// POSIX's special builtins.
pub(crate) fn is_special_builtin(name: &str) -> bool {
    matches!(
        name,
        ":" | "."
            | "break"
            | "continue"
            | "eval"
            | "exec"
            | "exit"
            | "export"
            | "readonly"
            | "return"
            | "set"
            | "shift"
            | "times"
            | "trap"
            | "unset"
    )
}

pub(crate) fn is_builtin(name: &str) -> bool {
    lookup_builtin(name).is_some()
}

/// What a syntax error in a source text ends (see [`Shell::run_source`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SourceKind {
    /// A script or `-c` text: the shell exits.
    Script,
    /// `eval`, `source` or a trap: the text returns 1, as bash's
    /// `eval` and `.` do when their text does not parse.
    Eval,
}

/// How control leaves a command early.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Flow {
    Abort(Abort),
    Break(u32),
    Continue(u32),
    Return(i32),
    /// An expansion error (bad substitution, arithmetic, `failglob`):
    /// abandons the complete command being run; the script goes on with the
    /// next one, as bash does. A subshell it reaches ends with this status.
    Error(i32),
    /// The current command failed (e.g. assigning a readonly variable).
    Fail(i32),
}

impl From<Abort> for Flow {
    fn from(a: Abort) -> Self {
        Flow::Abort(a)
    }
}

pub(crate) type R<T> = Result<T, Flow>;

#[derive(Debug, Clone)]
pub(crate) struct Opts {
    pub errexit: bool,
    pub allexport: bool,
    pub nounset: bool,
    pub xtrace: bool,
    pub pipefail: bool,
    pub noglob: bool,
    pub noclobber: bool,
    pub globstar: bool,
    pub nullglob: bool,
    pub failglob: bool,
    pub dotglob: bool,
    pub extglob: bool,
    pub nocaseglob: bool,
    pub nocasematch: bool,
    pub lastpipe: bool,
    pub expand_aliases: bool,
    /// `set -n`: commands are read but not run.
    pub noexec: bool,
    /// `set -E`: functions, subshells and command substitutions see `ERR`.
    pub errtrace: bool,
    /// `set -T`: functions see `DEBUG` and `RETURN`.
    pub functrace: bool,
    /// `set -o posix`: special builtins keep prefix assignments, and their
    /// errors end the shell.
    pub posix: bool,
    /// `set -v`
    pub verbose: bool,
    /// `shopt -s inherit_errexit`
    pub inherit_errexit: bool,
    /// `shopt -s xpg_echo`: `echo` interprets escapes.
    pub xpg_echo: bool,
    /// The options the light shell does not act on that are on.
    pub others: std::collections::BTreeSet<&'static str>,
}

impl Default for Opts {
    fn default() -> Self {
        Opts {
            errexit: false,
            allexport: false,
            nounset: false,
            xtrace: false,
            pipefail: false,
            noglob: false,
            noclobber: false,
            globstar: false,
            nullglob: false,
            failglob: false,
            dotglob: false,
            extglob: false,
            nocaseglob: false,
            nocasematch: false,
            lastpipe: false,
            expand_aliases: false,
            noexec: false,
            errtrace: false,
            functrace: false,
            posix: false,
            verbose: false,
            inherit_errexit: false,
            xpg_echo: false,
            others: options::default_others(),
        }
    }
}

/// Everything a subshell copies and discards.
#[derive(Clone)]
pub(crate) struct State {
    pub vars: HashMap<String, Var>,
    pub funcs: HashMap<String, Rc<Function>>,
    /// Variable contexts: function calls and prefix assignments.
    pub frames: Vec<vars::Frame>,
    pub positional: Vec<String>,
    pub arg0: String,
    pub cwd: VPath,
    pub opts: Opts,
    pub traps: BTreeMap<String, String>,
    /// A subshell's parent's traps, which `trap` shows until it sets its own.
    pub inherited_traps: BTreeMap<String, String>,
    /// `$!`
    pub last_bg_pid: Option<u32>,
    /// `$BASHPID`: this (sub)shell's process id.
    pub bashpid: u32,
    pub aliases: BTreeMap<String, String>,
    /// `complete` specs, in the order defined.
    pub completions: Vec<complete::Spec>,
    /// `pushd`'s saved directories, nearest first.
    pub dir_stack: Vec<String>,
    pub func_names: Vec<String>,
    /// The line each function in `func_names` was called from
    /// (`BASH_LINENO`).
    pub call_lines: Vec<usize>,
    /// The files whose code runs, outermost first (`BASH_SOURCE` reversed):
    /// the script file, each sourced file, and for each function call the
    /// file the function was defined in.
    pub sources: Vec<String>,
    /// The file each function was defined in; bash names code that came
    /// from no file (a `-c` text, the exec's command line) `environment`.
    pub func_sources: HashMap<String, String>,
    /// Where commands were found (`hash`).
    pub hashed: BTreeMap<String, search::Hashed>,
    /// Started with `-i`.
    pub interactive: bool,
    /// Running a `bash -c` text (not a script file).
    pub command_text: bool,
    /// `ulimit`'s settings.
    pub limits: resources::Limits,
    /// `umask`.
    pub umask: u32,
    pub history: history::History,
}

/// Where an output descriptor's bytes go.
pub(crate) struct Slot {
    pub out: Output,
    /// Flushed to this file (append) when the slot closes.
    pub file: Option<VPath>,
    /// `>`: the first flush replaces the file's content (one write instead
    /// of a truncation at open and an append at close).
    pub replace: bool,
    pub open: bool,
    /// Opened by `exec`: written to the file after every command.
    pub direct: bool,
    /// The mode to give the file the slot creates, when the `umask` makes
    /// it other than the usual `0644`.
    pub mode: Option<u32>,
}

/// A readable input with a shared position.
pub(crate) struct Input {
    pub data: Vec<u8>,
    pub pos: std::cell::Cell<usize>,
    /// `data` is all there is; `false` for a pipe that filled up or a
    /// device that never ends (see [`crate::io::Stdin`]).
    pub complete: bool,
    /// Opened with `<>`: the descriptor writes too, to this file at the
    /// shared position (overwriting, as one open file description does).
    /// Reads keep to `data`, the content at open: a write lands before the
    /// position, so only a change made by other means could differ.
    pub file: Option<VPath>,
}

impl Input {
    /// All of an input.
    pub(crate) fn new(data: Vec<u8>) -> Self {
        Input {
            data,
            pos: 0.into(),
            complete: true,
            file: None,
        }
    }

    /// The start of an input that goes on.
    pub(crate) fn cut(data: Vec<u8>) -> Self {
        Input {
            complete: false,
            ..Input::new(data)
        }
    }

    /// Reads all that is left.
    pub(crate) fn take_rest(&self) -> Vec<u8> {
        let pos = self.pos.get().min(self.data.len());
        self.pos.set(self.data.len());
        self.data[pos..].to_vec()
    }

    /// What is left to read.
    pub(crate) fn rest(&self) -> crate::io::Stdin<'_> {
        let rest = &self.data[self.pos.get().min(self.data.len())..];
        if self.complete {
            crate::io::Stdin::complete(rest)
        } else {
            crate::io::Stdin::cut(rest)
        }
    }
}

#[derive(Clone)]
pub(crate) enum Fd {
    In(Rc<Input>),
    Out(usize),
    Null,
}

pub(crate) struct Shell<'a> {
    pub fs: &'a dyn Fs,
    /// Where process substitutions' `/dev/fd/N` files live (`fs` shows them).
    pipes: &'a Pipes,
    pub clock: &'a dyn Clock,
    pub budget: &'a Budget,
    pub st: State,
    pub status: i32,
    pub slots: Vec<Slot>,
    pub fds: Vec<Option<Fd>>,
    pub pipestatus: Vec<i32>,
    pub arith_depth: u32,
    /// Inside an arithmetic branch not taken (bash's `noeval`).
    pub(crate) arith_noeval: u32,
    /// `$LINENO`: the line of the command running, in its source text.
    pub line: usize,
    /// Added to parsed line numbers: the line an `eval` or trap text
    /// starts from.
    pub line_base: usize,
    /// Nesting of conditions where `set -e` does not apply.
    pub no_errexit: u32,
    pub deferred: Vec<Rc<Assign>>,
    pub extra: &'a [(&'a str, Utility)],
    procsubs: Vec<(VPath, Option<Rc<Program>>)>,
    random: u64,
    ticks: u32,
    pub(crate) in_function: u32,
    /// The command being dispatched has prefix assignments, in the frame
    /// on top (a function call it makes takes them as its own).
    env_for_call: bool,
    /// Loops running in the current function (or at top level), for
    /// `break` and `continue`.
    pub(crate) loop_depth: u32,
    /// Nesting of `source` / `.` (where `return` is allowed).
    pub(crate) sourcing: u32,
    /// Status of the last command substitution (for `x=$(false)`).
    pub cmdsub_status: Option<i32>,
    /// Descriptors from `{var}>file`, which outlive their command.
    pub persist_fds: Vec<usize>,
    /// `$_`: the last argument of the previous simple command.
    pub last_arg: String,
    in_err_trap: bool,
    in_debug_trap: bool,
    /// The next pipeline is a background job's own command, whose status
    /// no `ERR` trap or `set -e` looks at (see `jobs.rs`).
    pub(super) job_unchecked: bool,
    /// `$BASH_COMMAND`: the command the `DEBUG` trap runs before.
    pub bash_command: String,
    /// Background jobs of this shell and of the subshells running now.
    jobs: Vec<jobs::Job>,
    /// Where the current (sub)shell's jobs start in `jobs`.
    job_floor: usize,
    /// The last process id given out (jobs and subshells).
    next_pid: u32,
    /// The process ids of the shells enclosing the current subshell.
    pid_stack: Vec<u32>,
    /// Signals sent to an enclosing shell, delivered when it resumes.
    pending_signals: Vec<(u32, i32)>,
    /// Writing a redirection's output to its file failed (it is written
    /// when the redirection ends): the command's status becomes 1, as a
    /// failed write makes the command fail in bash.
    pub(crate) write_failed: bool,
}

/// The status of a pipeline stage stopped by a full pipe (128 + SIGPIPE).
const SIGPIPE_STATUS: i32 = 141;

/// The top-level message for a limit.
pub(crate) fn limit_message(kind: crate::limits::LimitKind) -> String {
    format!("stead: limit {} exceeded\n", kind.name())
}

impl<'a> Shell<'a> {
    /// A shell over `fs`, which must show `pipes` (see [`crate::pipes`]).
    pub(crate) fn new(
        fs: &'a dyn Fs,
        pipes: &'a Pipes,
        clock: &'a dyn Clock,
        budget: &'a Budget,
        cwd: VPath,
        extra: &'a [(&'a str, Utility)],
    ) -> Self {
        Shell {
            fs,
            pipes,
            clock,
            budget,
            st: State {
                vars: HashMap::new(),
                funcs: HashMap::new(),
                frames: Vec::new(),
                positional: Vec::new(),
                arg0: "bash".into(),
                cwd,
                opts: Opts::default(),
                traps: BTreeMap::new(),
                inherited_traps: BTreeMap::new(),
                last_bg_pid: None,
                bashpid: jobs::SHELL_PID,
                aliases: BTreeMap::new(),
                completions: Vec::new(),
                dir_stack: Vec::new(),
                func_names: Vec::new(),
                call_lines: Vec::new(),
                sources: Vec::new(),
                func_sources: HashMap::new(),
                hashed: BTreeMap::new(),
                interactive: false,
                command_text: false,
                limits: Default::default(),
                umask: 0o022,
                history: Default::default(),
            },
            status: 0,
            slots: Vec::new(),
            fds: vec![None; 10],
            // Empty until a pipeline has run, as in bash.
            pipestatus: Vec::new(),
            arith_depth: 0,
            arith_noeval: 0,
            line: 1,
            line_base: 0,
            no_errexit: 0,
            deferred: Vec::new(),
            extra,
            procsubs: Vec::new(),
            random: 0x2545_F491_4F6C_DD1D,
            ticks: 0,
            in_function: 0,
            env_for_call: false,
            loop_depth: 0,
            sourcing: 0,
            cmdsub_status: None,
            persist_fds: Vec::new(),
            last_arg: String::new(),
            in_err_trap: false,
            in_debug_trap: false,
            job_unchecked: false,
            bash_command: String::new(),
            jobs: Vec::new(),
            job_floor: 0,
            next_pid: jobs::SHELL_PID,
            pid_stack: Vec::new(),
            pending_signals: Vec::new(),
            write_failed: false,
        }
    }

    /// Opens a slot for output to `file`, or for a pipe or capture (a
    /// command substitution) when `None`, and returns its index.
    pub(crate) fn open_slot(&mut self, file: Option<VPath>) -> usize {
        let limits = self.budget.limits();
        let out = match file {
            Some(_) => Output::with_cap(limits.max_output_bytes),
            None => Output::pipe(limits.max_pipe_bytes),
        };
        self.push_slot(out, file)
    }

    /// Opens the slot of the exec's own stdout or stderr.
    pub(crate) fn open_exec_output(&mut self) -> usize {
        let cap = self.budget.limits().max_output_bytes;
        self.push_slot(Output::with_cap(cap), None)
    }

    fn push_slot(&mut self, out: Output, file: Option<VPath>) -> usize {
        self.slots.push(Slot {
            out,
            file,
            replace: false,
            open: true,
            direct: false,
            mode: None,
        });
        self.slots.len() - 1
    }

    /// Closes a slot, writing file-backed output to its file.
    ///
    /// Closed slots are popped once nothing above them is open, so a slot
    /// may be gone by the time it is closed again (`finish` closes from the
    /// top down); callers that took a slot's output themselves mark it
    /// closed before calling this, and it must still be popped, or closed
    /// slots pile up under an open one.
    pub(crate) fn close_slot(&mut self, index: usize) -> R<()> {
        // Background jobs writing here run first (they would have written
        // before it closed).
        if self.slots.get(index).is_some_and(|s| s.open) {
            self.complete_jobs_writing_to(index)?;
        }
        let Some(slot) = self.slots.get_mut(index) else {
            return Ok(());
        };
        let was_open = std::mem::replace(&mut slot.open, false);
        let bytes = std::mem::take(&mut slot.out).into_bytes();
        let file = slot.file.take();
        let replace = std::mem::replace(&mut slot.replace, false);
        let mode = slot.mode.take();
        while self.slots.last().is_some_and(|s| !s.open) && self.slots.len() > 2 {
            self.slots.pop();
        }
        if !was_open {
            return Ok(());
        }
        if let Some(path) = file {
            if !bytes.is_empty() || replace {
                let (bytes, too_large) = self.within_file_size(&path, bytes, replace);
                self.budget.charge_write(bytes.len() as u64)?;
                let written = if replace {
                    self.fs.write(&path, &bytes)
                } else {
                    self.fs.append(&path, &bytes)
                };
                if let Err(e) = written {
                    self.write_failed = true;
                    let msg = format!("{}: {}", path.as_str(), utils::strerror(&e));
                    self.err_line(&msg)?;
                }
                if let Some(mode) = mode {
                    let _ = self.fs.chmod(&path, mode);
                }
                if too_large {
                    // SIGXFSZ ends the (sub)shell, as the kernel does.
                    return Err(Flow::Abort(Abort::Exit(128 + 25)));
                }
            }
        }
        Ok(())
    }

    /// Writes the shell's own output to a descriptor (raw-byte characters
    /// become their bytes, see `crate::bytes`).
    pub(crate) fn write_fd(&mut self, fd: usize, data: &[u8]) -> R<()> {
        match self.fds.get(fd).cloned().flatten() {
            Some(Fd::Out(i)) => {
                self.slots[i].out.write(&crate::bytes::encode_bytes(data))?;
                Ok(())
            }
            Some(Fd::Null) => Ok(()),
            Some(Fd::In(input)) if input.file.is_some() => {
                self.write_through(&input, &crate::bytes::encode_bytes(data))
            }
            _ => {
                if fd != 2 {
                    self.err_line(&format!("{fd}: Bad file descriptor"))?;
                }
                Err(Flow::Error(1)).or(Ok(()))
            }
        }
    }

    /// Writes raw bytes through a `<>` descriptor: at its position, over
    /// what the file holds there (a position past the end leaves a gap of
    /// NUL bytes, as a write after `lseek` does), the position moved past.
    fn write_through(&mut self, input: &Input, bytes: &[u8]) -> R<()> {
        let Some(path) = &input.file else {
            return Ok(());
        };
        let mut content = self.fs.read(path).unwrap_or_default();
        let at = input.pos.get();
        let end = at + bytes.len();
        if content.len() < end {
            content.resize(end, 0);
        }
        content[at..end].copy_from_slice(bytes);
        self.budget.charge_write(content.len() as u64)?;
        if let Err(e) = self.fs.write(path, &content) {
            self.write_failed = true;
            self.err_line(&format!("{}: {}", path.as_str(), utils::strerror(&e)))?;
        }
        input.pos.set(end);
        Ok(())
    }

    pub(crate) fn out(&mut self, text: &str) -> R<()> {
        self.write_fd(1, text.as_bytes())
    }

    /// Writes `bash: message\n` to stderr.
    pub(crate) fn err_line(&mut self, message: &str) -> R<()> {
        let line = format!("bash: {message}\n");
        self.write_fd(2, line.as_bytes())
    }

    /// Prints an expansion error and returns the flow that abandons the
    /// current complete command ([`Flow::Error`]).
    pub(crate) fn fatal(&mut self, message: &str) -> Flow {
        match self.err_line(message) {
            Err(f) => f,
            Ok(()) => Flow::Error(1),
        }
    }

    /// Prints an error that ends the shell (`${x?}`, `set -u`), as a
    /// non-interactive bash does.
    pub(crate) fn fatal_exit(&mut self, message: &str) -> Flow {
        match self.err_line(message) {
            Err(f) => f,
            // An interactive shell only abandons the line.
            Ok(()) if self.st.interactive => Flow::Error(1),
            // bash ends a `-c` text with 127, a script with 1.
            Ok(()) if self.st.command_text => Flow::Abort(Abort::Exit(127)),
            Ok(()) => Flow::Abort(Abort::Exit(1)),
        }
    }

    fn tick(&mut self) -> R<()> {
        self.budget.charge_command()?;
        self.ticks = self.ticks.wrapping_add(1);
        if self.ticks % 256 == 0 {
            self.budget.check_time(self.clock)?;
        }
        Ok(())
    }

    pub(crate) fn next_random(&mut self) -> u64 {
        self.random ^= self.random << 13;
        self.random ^= self.random >> 7;
        self.random ^= self.random << 17;
        self.random
    }

    // ---- running ----

    /// Runs a script text as bash reads one: a complete command (a line, or
    /// the lines a compound command spans) at a time, so that a syntax error
    /// further on stops nothing before it. A syntax error prints
    /// `bash: [label: ]line N: message` and ends the text: the shell itself
    /// for a script (`Flow::Error` with the status its kind gives, see
    /// [`parse::SyntaxKind::script_status`]; an open compound assignment
    /// ends only its line, as bash discards it and reads on), or just the
    /// text for `eval` and `source`, which then return 1 (`Ok(1)`).
    pub(crate) fn run_source(
        &mut self,
        text: &str,
        label: Option<&str>,
        kind: SourceKind,
    ) -> R<i32> {
        let mut parser = parse::Parser::new(text);
        // The text starts with `$?` as it was (`false; eval 'echo $?'`
        // prints 1); one that runs no command ends with status 0.
        let mut ran = false;
        loop {
            if self.st.opts.expand_aliases {
                parser.set_aliases(self.st.aliases.clone());
            }
            parser.set_extglob(self.st.opts.extglob);
            let prog = match parser.next_command_line() {
                None if ran => return Ok(self.status),
                None => {
                    self.status = 0;
                    return Ok(0);
                }
                Some(Ok(prog)) => prog,
                Some(Err(error)) => {
                    let line = self.line_base + parser.line_number();
                    let msg = match label {
                        Some(l) => format!("{l}: line {line}: {error}"),
                        None => format!("line {line}: {error}"),
                    };
                    self.err_line(&msg)?;
                    match kind {
                        SourceKind::Script => {
                            self.status = error.kind.script_status(self.status);
                            // bash discards the line an open compound
                            // assignment failed on and reads on.
                            if error.kind == parse::SyntaxKind::Assignment {
                                parser.skip_line();
                                ran = true;
                                continue;
                            }
                            return Err(Flow::Error(self.status));
                        }
                        SourceKind::Eval => {
                            self.status = 1;
                            return Ok(1);
                        }
                    }
                }
            };
            if self.st.opts.noexec {
                continue;
            }
            ran = true;
            match self.run_program(&prog) {
                Ok(_) => {}
                Err(Flow::Error(s)) => self.status = s,
                Err(e) => return Err(e),
            }
        }
    }

    pub(crate) fn run_program(&mut self, prog: &[Item]) -> R<i32> {
        for item in prog {
            self.run_item(item)?;
        }
        Ok(self.status)
    }

    fn run_item(&mut self, item: &Item) -> R<()> {
        if item.background {
            return self.start_job(item);
        }
        let guarded = !item.rest.is_empty();
        if guarded {
            self.no_errexit += 1;
        }
        let first = self.run_pipeline(&item.first);
        if guarded {
            self.no_errexit -= 1;
        }
        first?;
        for (i, (and, pipe)) in item.rest.iter().enumerate() {
            if (self.status == 0) != *and {
                continue;
            }
            let last = i + 1 == item.rest.len();
            if !last {
                self.no_errexit += 1;
            }
            let r = self.run_pipeline(pipe);
            if !last {
                self.no_errexit -= 1;
            }
            r?;
        }
        Ok(())
    }

    /// After a command that failed where `set -e` applies: the `ERR` trap,
    /// then `set -e` itself.
    fn check_errexit(&mut self) -> R<()> {
        if self.status == 0 || self.no_errexit > 0 {
            return Ok(());
        }
        self.on_failure()
    }

    /// The `ERR` trap, then `set -e` itself, for a failure they apply to.
    fn on_failure(&mut self) -> R<()> {
        self.fire_err_trap()?;
        if self.st.opts.errexit {
            return Err(Flow::Abort(Abort::Exit(self.status)));
        }
        Ok(())
    }

    fn run_pipeline(&mut self, pipe: &Pipeline) -> R<()> {
        // `$LINENO` in a compound command's own words (`for x in $LINENO`)
        // is the line it starts on; simple commands set their own.
        self.line = self.line_base + pipe.line;
        if !pipe.timed {
            return self.run_untimed(pipe);
        }
        let start = self.clock.now_ms();
        let r = self.run_untimed(pipe);
        let elapsed = self.clock.now_ms().saturating_sub(start);
        self.report_time(elapsed)?;
        r
    }

    /// `time`'s report, in `$TIMEFORMAT` (bash's default when unset). The
    /// isolate measures wall time only: user and system time show as 0.
    fn report_time(&mut self, elapsed_ms: u64) -> R<()> {
        let format = self
            .get_scalar("TIMEFORMAT")
            .unwrap_or_else(|| "\nreal\t%3lR\nuser\t%3lU\nsys\t%3lS".to_string());
        let seconds = elapsed_ms as f64 / 1000.0;
        let mut out = String::new();
        let mut chars = format.chars().peekable();
        while let Some(c) = chars.next() {
            if c != '%' {
                out.push(c);
                continue;
            }
            let mut precision = 3;
            let mut long = false;
            while let Some(&d) = chars.peek() {
                match d {
                    '0'..='9' => precision = d.to_digit(10).unwrap_or(3).min(3) as usize,
                    'l' => long = true,
                    _ => break,
                }
                chars.next();
            }
            let value = match chars.next() {
                Some('R') => seconds,
                Some('U') | Some('S') => 0.0,
                Some('P') => {
                    out.push_str(&format!("{:.*}", precision, 0.0));
                    continue;
                }
                Some('%') => {
                    out.push('%');
                    continue;
                }
                Some(other) => {
                    out.push('%');
                    out.push(other);
                    continue;
                }
                None => break,
            };
            if long {
                let minutes = (value / 60.0).floor();
                out.push_str(&format!(
                    "{minutes}m{:.*}s",
                    precision,
                    value - minutes * 60.0
                ));
            } else {
                out.push_str(&format!("{:.*}", precision, value));
            }
        }
        out.push('\n');
        self.write_fd(2, out.as_bytes())
    }

    fn run_untimed(&mut self, pipe: &Pipeline) -> R<()> {
        self.line = self.line_base + pipe.line;
        // A background job's own status is its parent's to see, and the
        // parent does not wait for it (see `jobs.rs`).
        let checked = !std::mem::take(&mut self.job_unchecked);
        // `!` keeps `set -e` from failures inside it only when `set -e` is
        // on as it starts (bash's CMD_IGNORE_RETURN for an inverted command
        // under errexit): `! f` where `f` runs `set -e; false` exits.
        let ignoring = pipe.negate && self.st.opts.errexit;
        if ignoring {
            self.no_errexit += 1;
        }
        let r = if pipe.cmds.len() == 1 {
            let r = self.run_command(&pipe.cmds[0]);
            if sets_pipestatus(&pipe.cmds[0]) {
                self.pipestatus = vec![self.status];
            }
            r
        } else {
            let r = self.run_stages(&pipe.cmds);
            match r {
                Ok(()) if checked => self.check_last_subshell(pipe),
                r => r,
            }
        };
        if ignoring {
            self.no_errexit -= 1;
        }
        if pipe.negate {
            r?;
            self.status = (self.status == 0) as i32;
            return Ok(());
        }
        r?;
        // `ERR` and `set -e` look at simple commands, `(( ))`, `[[ ]]`,
        // subshells and whole pipelines; a compound command's status is
        // that of a command inside it, already looked at.
        let atomic = pipe.cmds.len() > 1
            || match &pipe.cmds[0] {
                Command::Simple(_) => true,
                Command::Compound(c, _) => matches!(
                    c.as_ref(),
                    Compound::Arith(_) | Compound::Cond(..) | Compound::Subshell(_)
                ),
                Command::Function(_) => false,
            };
        if atomic && checked {
            self.check_errexit()?;
        }
        Ok(())
    }

    /// bash waits for a `( )` ending a pipeline as for one standing alone,
    /// so its failure runs `ERR` and `set -e` before the pipeline's own do
    /// (`true | (false)` runs the trap twice); a `!` does not reach the
    /// stage.
    fn check_last_subshell(&mut self, pipe: &Pipeline) -> R<()> {
        let failed = match (pipe.cmds.last(), self.pipestatus.last()) {
            (Some(cmd), Some(&status)) if status != 0 && is_user_subshell(cmd) => status,
            _ => return Ok(()),
        };
        if self.no_errexit > 0 {
            return Ok(());
        }
        let status = std::mem::replace(&mut self.status, failed);
        self.on_failure()?;
        self.status = status;
        Ok(())
    }

    fn run_stages(&mut self, cmds: &[Command]) -> R<()> {
        let saved_in = self.fds[0].clone();
        let saved_out = self.fds[1].clone();
        let mut statuses = Vec::with_capacity(cmds.len());
        let mut result = Ok(());
        for (i, cmd) in cmds.iter().enumerate() {
            let last = i + 1 == cmds.len();
            let slot = (!last).then(|| self.open_slot(None));
            if let Some(s) = slot {
                self.fds[1] = Some(Fd::Out(s));
            } else {
                self.fds[1] = saved_out.clone();
            }
            let r = if last && self.st.opts.lastpipe {
                self.run_command(cmd)
            } else {
                self.subshell(|sh| sh.run_command(cmd).map(|_| sh.status))
                    .map(|status| self.status = status)
            };
            let r = match (r, slot) {
                // A writer that filled its pipe buffer is stopped the way
                // SIGPIPE stops it in bash (`yes | head`): the next stage
                // reads what was written, and the exec goes on.
                // The next stage gets what fitted, marked as cut: a reader
                // that needs more than that ends with `max_pipe_bytes`.
                (Err(Flow::Abort(Abort::Limit(LimitKind::PipeBytes))), Some(s))
                    if self.slots[s].out.len() >= self.slots[s].out.cap() =>
                {
                    self.status = SIGPIPE_STATUS;
                    Ok(())
                }
                (r, _) => r,
            };
            let cut = self.status == SIGPIPE_STATUS;
            statuses.push(self.status);
            if let Some(s) = slot {
                let bytes = std::mem::take(&mut self.slots[s].out).into_bytes();
                self.slots[s].open = false;
                self.close_slot(s)?;
                self.charge_built(bytes.len())?;
                let input = if cut {
                    Input::cut(bytes)
                } else {
                    Input::new(bytes)
                };
                self.fds[0] = Some(Fd::In(Rc::new(input)));
            }
            if let Err(e) = r {
                result = Err(e);
                break;
            }
        }
        self.fds[0] = saved_in;
        self.fds[1] = saved_out;
        result?;
        if self.st.opts.pipefail {
            self.status = statuses
                .iter()
                .rev()
                .find(|&&s| s != 0)
                .copied()
                .unwrap_or(0);
        }
        self.pipestatus = statuses;
        Ok(())
    }

    /// Runs `f` with state changes discarded; `exit` ends only the subshell.
    /// The subshell gets its own process id, starts with traps reset (see
    /// `traps.rs`), runs an `EXIT` trap it set, and completes the
    /// background jobs it started before it ends.
    pub(crate) fn subshell(&mut self, f: impl FnOnce(&mut Self) -> R<i32>) -> R<i32> {
        self.budget.enter()?;
        let held = match self.hold_saved_state() {
            Ok(held) => held,
            Err(e) => {
                self.budget.leave();
                return Err(e);
            }
        };
        let saved = self.st.clone();
        let saved_fds = self.fds.clone();
        let saved_floor = std::mem::replace(&mut self.job_floor, self.jobs.len());
        self.pid_stack.push(self.st.bashpid);
        self.st.bashpid = self.new_pid();
        self.reset_traps_for_subshell();
        let r = f(self);
        let r = self.end_subshell(r);
        self.jobs.truncate(self.job_floor);
        self.job_floor = saved_floor;
        self.st = saved;
        self.pid_stack.pop();
        self.restore_fds(saved_fds)?;
        self.budget.leave();
        drop(held);
        let status = r?;
        let pid = self.st.bashpid;
        let mine: Vec<i32> = self
            .pending_signals
            .iter()
            .filter(|(p, _)| *p == pid)
            .map(|(_, s)| *s)
            .collect();
        self.pending_signals.retain(|(p, _)| *p != pid);
        for signal in mine {
            self.deliver_signal(signal)?;
        }
        Ok(status)
    }

    /// The status a subshell ends with: its `EXIT` trap and pending jobs run.
    fn end_subshell(&mut self, r: R<i32>) -> R<i32> {
        let status = match r {
            Ok(s) => s,
            Err(Flow::Abort(Abort::Exit(s)))
            | Err(Flow::Error(s))
            | Err(Flow::Return(s))
            | Err(Flow::Fail(s)) => s,
            Err(Flow::Break(_)) | Err(Flow::Continue(_)) => self.status,
            Err(e) => return Err(e),
        };
        self.status = status;
        self.complete_all_jobs()?;
        match self.run_exit_trap() {
            Ok(()) => Ok(self.status),
            Err(Flow::Abort(Abort::Exit(s))) => Ok(s),
            Err(e) => Err(e),
        }
    }

    pub(crate) fn run_command(&mut self, cmd: &Command) -> R<()> {
        // Every nesting of commands (and of functions calling functions)
        // passes through here.
        self.budget.check_stack()?;
        match self.run_command_inner(cmd) {
            Err(Flow::Fail(s)) => {
                self.status = s;
                self.check_errexit()
            }
            other => other,
        }
    }

    fn run_command_inner(&mut self, cmd: &Command) -> R<()> {
        match cmd {
            Command::Simple(s) => self.run_simple(s),
            Command::Compound(c, redirs) => {
                if redirs.is_empty() {
                    return self.run_compound(c);
                }
                // Process substitutions in the redirections close with the
                // compound command.
                let procsubs_before = self.procsubs.len();
                let saved = match self.apply_redirs(redirs)? {
                    Some(saved) => saved,
                    None => {
                        self.status = 1;
                        self.finish_procsubs(procsubs_before)?;
                        return self.check_errexit();
                    }
                };
                let r = self.run_compound(c);
                self.restore_fds(saved)?;
                self.status = self.status_after_writes(self.status);
                self.finish_procsubs(procsubs_before)?;
                r
            }
            Command::Function(f) => self.define_function(f),
        }
    }

    /// Defines a function. A name holding `$` (written with an expansion,
    /// `$x() { ...; }`) is refused when the definition runs, status 1, as
    /// bash refuses a name word with a dollar sign.
    fn define_function(&mut self, f: &Rc<Function>) -> R<()> {
        if f.name.contains('$') {
            self.err_line(&format!("`{}': not a valid identifier", f.name))?;
            self.status = 1;
            return Ok(());
        }
        self.st.funcs.insert(f.name.clone(), f.clone());
        let file = self.st.sources.last().map_or("environment", String::as_str);
        self.st
            .func_sources
            .insert(f.name.clone(), file.to_string());
        self.status = 0;
        Ok(())
    }

    fn run_compound(&mut self, c: &Compound) -> R<()> {
        match c {
            Compound::Group(p) => self.run_program(p).map(drop),
            Compound::Subshell(p) => {
                let s = self.subshell(|sh| sh.run_program(p))?;
                self.status = s;
                Ok(())
            }
            Compound::If {
                branches,
                otherwise,
            } => {
                for (cond, body) in branches {
                    if self.condition(cond)? {
                        return self.run_program(body).map(drop);
                    }
                }
                match otherwise {
                    Some(p) => self.run_program(p).map(drop),
                    None => {
                        self.status = 0;
                        Ok(())
                    }
                }
            }
            Compound::While { until, cond, body } => self.run_while(*until, cond, body),
            Compound::For {
                var, words, body, ..
            } => self.run_for(var, words.as_deref(), body),
            Compound::Select {
                var, words, body, ..
            } => self.run_select(var, words.as_deref(), body),
            Compound::ArithFor {
                init,
                cond,
                step,
                body,
                ..
            } => self.run_arith_for(init.as_ref(), cond.as_ref(), step.as_ref(), body),
            Compound::Case { word, arms, .. } => self.run_case(word, arms),
            Compound::Arith(a) => {
                self.tick()?;
                self.status = match self.arith(a) {
                    Ok(v) => (v == 0) as i32,
                    Err(Flow::Error(_)) => 1,
                    Err(e) => return Err(e),
                };
                Ok(())
            }
            Compound::Cond(c, _) => {
                self.tick()?;
                self.status = match self.eval_cond(c) {
                    Ok(b) => (!b) as i32,
                    Err(Flow::Fail(s)) => s,
                    Err(e) => return Err(e),
                };
                Ok(())
            }
        }
    }

    fn condition(&mut self, cond: &[Item]) -> R<bool> {
        self.no_errexit += 1;
        let r = self.run_program(cond);
        self.no_errexit -= 1;
        Ok(r? == 0)
    }

    /// Handles `break`/`continue` coming out of a loop body; `Ok(true)` stops the loop.
    fn loop_flow(&mut self, r: R<i32>) -> R<bool> {
        match r {
            Ok(_) => Ok(false),
            Err(Flow::Break(n)) => {
                if n > 1 {
                    Err(Flow::Break(n - 1))
                } else {
                    Ok(true)
                }
            }
            Err(Flow::Continue(n)) => {
                if n > 1 {
                    Err(Flow::Continue(n - 1))
                } else {
                    Ok(false)
                }
            }
            Err(e) => Err(e),
        }
    }

    /// Runs a loop: `break` and `continue` are meaningful inside it.
    fn in_loop(&mut self, f: impl FnOnce(&mut Self) -> R<()>) -> R<()> {
        self.loop_depth += 1;
        let r = f(self);
        self.loop_depth -= 1;
        r
    }

    /// `select`: prints the numbered menu and `$PS3` to stderr, reads a
    /// line (`$REPLY`), sets the variable to the chosen word (empty for
    /// anything else) and runs the body, until end of input or `break`.
    fn run_select(&mut self, var: &str, words: Option<&[Word]>, body: &[Item]) -> R<()> {
        let items = match words {
            Some(w) => self.expand_words(w)?,
            None => self.st.positional.clone(),
        };
        self.in_loop(|sh| sh.select_loop(var, &items, body))
    }

    fn select_loop(&mut self, var: &str, items: &[String], body: &[Item]) -> R<()> {
        let mut status = 0;
        let mut show_menu = true;
        loop {
            self.budget.charge_iteration()?;
            if show_menu {
                let width = items.len().to_string().len();
                let menu: String = items
                    .iter()
                    .enumerate()
                    .map(|(i, w)| format!("{:>width$}) {w}\n", i + 1))
                    .collect();
                self.write_fd(2, menu.as_bytes())?;
            }
            let prompt = self.get_scalar("PS3").unwrap_or_else(|| "#? ".into());
            self.write_fd(2, prompt.as_bytes())?;
            let (_, code) =
                self.capture(&["read".to_string(), "-r".to_string(), "REPLY".to_string()])?;
            if code != 0 {
                // bash ends the menu line on stdout at end of input.
                self.write_fd(1, b"\n")?;
                break;
            }
            let reply = self.get_scalar("REPLY").unwrap_or_default();
            if reply.trim().is_empty() {
                show_menu = true;
                continue;
            }
            show_menu = false;
            let chosen = reply
                .trim()
                .parse::<usize>()
                .ok()
                .and_then(|n| n.checked_sub(1))
                .and_then(|n| items.get(n))
                .cloned()
                .unwrap_or_default();
            self.set_scalar(var, chosen)?;
            let r = self.run_program(body);
            status = self.status;
            if self.loop_flow(r)? {
                break;
            }
        }
        self.status = status;
        Ok(())
    }

    fn run_while(&mut self, until: bool, cond: &[Item], body: &[Item]) -> R<()> {
        self.in_loop(|sh| sh.run_while_loop(until, cond, body))
    }

    fn run_while_loop(&mut self, until: bool, cond: &[Item], body: &[Item]) -> R<()> {
        let mut status = 0;
        loop {
            self.budget.charge_iteration()?;
            self.tick_time()?;
            let test = match self.condition(cond) {
                Ok(test) => test,
                // `break` / `continue` in the condition act on this loop too.
                Err(e @ (Flow::Break(_) | Flow::Continue(_))) => {
                    if self.loop_flow(Err(e))? {
                        break;
                    }
                    continue;
                }
                Err(e) => return Err(e),
            };
            if test == until {
                break;
            }
            let r = self.run_program(body);
            status = self.status;
            if self.loop_flow(r)? {
                break;
            }
        }
        self.status = status;
        Ok(())
    }

    fn tick_time(&mut self) -> R<()> {
        self.ticks = self.ticks.wrapping_add(1);
        if self.ticks % 256 == 0 {
            self.budget.check_time(self.clock)?;
        }
        Ok(())
    }

    fn run_for(&mut self, var: &str, words: Option<&[Word]>, body: &[Item]) -> R<()> {
        let items = match words {
            Some(w) => self.expand_words(w)?,
            None => self.st.positional.clone(),
        };
        self.in_loop(|sh| sh.run_for_items(var, items, body))
    }

    fn run_for_items(&mut self, var: &str, items: Vec<String>, body: &[Item]) -> R<()> {
        self.status = 0;
        let mut status = 0;
        for item in items {
            self.budget.charge_iteration()?;
            self.tick_time()?;
            self.set_scalar(var, item)?;
            let r = self.run_program(body);
            status = self.status;
            if self.loop_flow(r)? {
                break;
            }
        }
        self.status = status;
        Ok(())
    }

    fn run_arith_for(
        &mut self,
        init: Option<&Arith>,
        cond: Option<&Arith>,
        step: Option<&Arith>,
        body: &[Item],
    ) -> R<()> {
        self.in_loop(|sh| sh.run_arith_loop(init, cond, step, body))
    }

    fn run_arith_loop(
        &mut self,
        init: Option<&Arith>,
        cond: Option<&Arith>,
        step: Option<&Arith>,
        body: &[Item],
    ) -> R<()> {
        if let Some(a) = init {
            self.arith(a)?;
        }
        let mut status = 0;
        // The expressions are on the `for` line, whatever the body ran.
        let line = self.line;
        loop {
            self.budget.charge_iteration()?;
            self.tick_time()?;
            self.line = line;
            if let Some(c) = cond {
                if self.arith(c)? == 0 {
                    break;
                }
            }
            let r = self.run_program(body);
            status = self.status;
            if self.loop_flow(r)? {
                break;
            }
            if let Some(s) = step {
                self.line = line;
                self.arith(s)?;
            }
        }
        self.status = status;
        Ok(())
    }

    fn run_case(&mut self, word: &Word, arms: &[CaseArm]) -> R<()> {
        let subject = self.expand_single(word)?;
        self.status = 0;
        let mut i = 0;
        let mut fall = false;
        while i < arms.len() {
            let arm = &arms[i];
            let mut hit = fall;
            if !hit {
                for p in &arm.patterns {
                    let pat = self.expand_pattern(p)?;
                    if self.pattern_match(&pat, &subject)? {
                        hit = true;
                        break;
                    }
                }
            }
            if hit {
                self.run_program(&arm.body)?;
                match arm.term {
                    CaseTerm::Break => return Ok(()),
                    CaseTerm::FallThrough => fall = true,
                    CaseTerm::Continue => fall = false,
                }
            }
            i += 1;
        }
        Ok(())
    }

    /// Evaluates an arithmetic expression.
    pub(crate) fn arith(&mut self, a: &Arith) -> R<i64> {
        match a {
            Arith::Static(expr, _) => self.eval_arith(expr),
            Arith::Dynamic(w) => {
                let text = self.expand_single(w)?;
                self.eval_arith(&arith::parse(&text))
            }
        }
    }

    // ---- simple commands ----

    fn run_simple(&mut self, cmd: &Simple) -> R<()> {
        self.tick()?;
        let procsubs_before = self.procsubs.len();
        self.line = self.line_base + cmd.line;
        if self.st.traps.contains_key("DEBUG") {
            self.fire_debug_trap(&cmd.text)?;
        }
        self.cmdsub_status = None;
        let argv = match self.expand_words(&cmd.words) {
            Ok(v) => v,
            Err(Flow::Error(s)) => {
                self.status = s;
                return Err(Flow::Error(s));
            }
            Err(e) => return Err(e),
        };
        if argv.is_empty() {
            // Words that expand to nothing (`$(false)`) leave the status of
            // their last command substitution.
            let words_status = self.cmdsub_status;
            return self.run_assign_only(cmd, words_status, procsubs_before);
        }
        let deferred = std::mem::take(&mut self.deferred);
        if self.st.opts.xtrace {
            let line = format!(
                "+ {}\n",
                argv.iter()
                    .map(|a| printf::xtrace_quote(a))
                    .collect::<Vec<_>>()
                    .join(" ")
            );
            self.write_fd(2, line.as_bytes())?;
        }
        // Prefix assignments apply to this command only, in a frame of
        // their own (see `vars.rs`).
        let has_env = !cmd.assigns.is_empty();
        if has_env {
            self.push_env_frame();
        }
        for a in &cmd.assigns {
            // A command's environment holds names, not elements: bash
            // refuses `a[1]=v cmd`'s assignment, as it is written, and runs
            // the command.
            if a.index.is_some() {
                let written = written_element(&cmd.text, &a.name);
                self.err_line(&format!("`{written}': not a valid identifier"))?;
                continue;
            }
            // A readonly variable keeps its value; the command still runs.
            if self.is_readonly(&a.name) {
                self.err_line(&format!("{}: readonly variable", a.name))?;
                continue;
            }
            let outer = self.st.vars.get(&a.name).cloned();
            if let Some(frame) = self.st.frames.last_mut() {
                frame.cells.push(vars::Cell {
                    name: a.name.clone(),
                    outer,
                    kind: vars::CellKind::Temp,
                });
            }
            self.assign_prefix(a)?;
            if let Some(v) = self.st.vars.get_mut(&a.name) {
                v.attrs |= vars::EXPORT;
            }
        }
        let saved_fds = if cmd.redirs.is_empty() {
            None
        } else {
            match self.apply_redirs(&cmd.redirs) {
                Ok(Some(s)) => Some(s),
                Ok(None) => {
                    self.end_env_frame(has_env, &argv[0]);
                    self.status = 1;
                    return Ok(());
                }
                Err(e) => return Err(e),
            }
        };
        self.env_for_call = has_env;
        let r = self.dispatch(&argv, deferred);
        self.env_for_call = false;
        if let Some(last) = argv.last() {
            self.last_arg.clone_from(last);
        }
        if argv[0] == "exec" && argv[1..].iter().all(|a| a == "--") && argv.len() <= 2 {
            // `exec >file`: the redirections stay.
            self.settle_exec_fds()?;
        } else if let Some(saved) = saved_fds {
            self.restore_fds(saved)?;
        }
        self.flush_direct()?;
        self.end_env_frame(has_env, &argv[0]);
        self.finish_procsubs(procsubs_before)?;
        let status = r?;
        self.status = self.status_after_writes(status);
        Ok(())
    }

    /// `status`, or 1 when writing a redirection's output failed.
    fn status_after_writes(&mut self, status: i32) -> i32 {
        if std::mem::take(&mut self.write_failed) && status == 0 {
            1
        } else {
            status
        }
    }

    /// Ends a command's prefix-assignment frame (when it has one).
    fn end_env_frame(&mut self, has_env: bool, cmd: &str) {
        if !has_env {
            return;
        }
        // Prefix assignments last for their command only (`declare` and
        // `export` included, as in bash 5.2); in POSIX mode those of a
        // special builtin stay.
        let keep = self.st.opts.posix && is_special_builtin(cmd);
        self.pop_frame(keep);
    }

    /// `x=1 y=$(cmd)`: the words see the `$?` of the previous command (so
    /// `rc=$?` works); the status is the last command substitution's, or 0.
    fn run_assign_only(
        &mut self,
        cmd: &Simple,
        words_status: Option<i32>,
        procsubs_before: usize,
    ) -> R<()> {
        let mut last_sub = words_status;
        for a in &cmd.assigns {
            self.cmdsub_status = None;
            // Assigning a readonly variable abandons the line, as bash does.
            if self.is_readonly(&a.name) {
                self.err_line(&format!("{}: readonly variable", a.name))?;
                self.status = 1;
                self.check_errexit()?;
                return Err(Flow::Error(1));
            }
            if let Err(e) = self.assign(a) {
                return Err(match e {
                    // A failed assignment (a readonly array's element, a bad
                    // subscript) abandons the line, as bash does.
                    Flow::Error(s) => {
                        self.status = s;
                        Flow::Error(s)
                    }
                    Flow::Fail(s) => {
                        self.status = s;
                        self.check_errexit()?;
                        Flow::Error(s)
                    }
                    e => e,
                });
            }
            if let Some(s) = self.cmdsub_status {
                last_sub = Some(s);
            }
        }
        if !cmd.redirs.is_empty() {
            let persisting = self.persist_fds.len();
            let applied = self.apply_redirs(&cmd.redirs)?;
            // `{fd}>file` alone: bash opens (and creates) the file, but
            // neither the descriptor nor the variable lasts.
            self.persist_fds.truncate(persisting);
            match applied {
                Some(saved) => {
                    self.restore_fds(saved)?;
                    for r in &cmd.redirs {
                        if let Some(name) = &r.var_fd {
                            self.st.vars.remove(name);
                        }
                    }
                }
                None => {
                    self.status = 1;
                    return Ok(());
                }
            }
        }
        self.status = last_sub.unwrap_or(0);
        // A command of assignments alone has no last argument: `$_` is empty.
        self.last_arg.clear();
        // Its status goes to `ERR` and `set -e` with its pipeline's, once.
        self.finish_procsubs(procsubs_before)
    }

    /// Runs a command by name: function, builtin, utility.
    pub(crate) fn dispatch(&mut self, argv: &[String], deferred: Vec<Rc<Assign>>) -> R<i32> {
        let name = argv[0].as_str();
        if let Some(f) = self.st.funcs.get(name).cloned() {
            return self.call_function(&f, argv);
        }
        if let Some(b) = lookup_builtin(name) {
            // `readonly a=(1 2)` assigns before the name becomes readonly.
            if name == "readonly" {
                for a in deferred {
                    self.assign(&a)?;
                }
                return b(self, argv);
            }
            let r = b(self, argv);
            // An abandoned `declare` assigns none of its arrays.
            if r.is_ok() {
                for a in deferred {
                    self.assign(&a)?;
                }
            }
            return r;
        }
        self.run_external(argv)
    }

    /// Runs a program: a name with a `/` is that file (or, under `/bin` or
    /// `/usr/bin`, the light shell's program of that name); any other name
    /// is searched for (see `search.rs`).
    pub(crate) fn run_external(&mut self, argv: &[String]) -> R<i32> {
        let name = argv[0].as_str();
        if !name.contains('/') {
            return match self.find_command(name) {
                Some(found) => self.run_found(found, argv),
                None => self.not_found(name),
            };
        }
        let base = name.rsplit('/').next().unwrap_or(name);
        let dir = &name[..name.len() - base.len()];
        let in_program_dir = crate::utils::which::PROGRAM_DIRS
            .iter()
            .any(|d| dir.strip_suffix('/') == Some(d));
        if in_program_dir && self.is_program(base) {
            return self.run_program_named(base, argv);
        }
        self.run_file(argv)
    }

    /// Runs what a search found.
    pub(crate) fn run_found(&mut self, found: utils::which::Found, argv: &[String]) -> R<i32> {
        use utils::which::Found;
        match found {
            Found::Program(path) => {
                let base = path.rsplit('/').next().unwrap_or("").to_string();
                self.run_program_named(&base, argv)
            }
            Found::File(path) | Found::NotExecutable(path) => {
                let mut v = argv.to_vec();
                v[0] = path;
                self.run_file(&v)
            }
        }
    }

    /// The light shell's program `base`, with `argv[0]` as typed.
    fn run_program_named(&mut self, base: &str, argv: &[String]) -> R<i32> {
        if matches!(base, "bash" | "sh") {
            return self.run_shell_command(argv);
        }
        let util = self
            .extra
            .iter()
            .find(|(n, _)| *n == base)
            .map(|(_, u)| *u)
            .or_else(|| utils::lookup(base));
        if let Some(u) = util {
            return self.run_utility(u, argv);
        }
        match lookup_builtin(base) {
            Some(b) => {
                let mut v = argv.to_vec();
                v[0] = base.to_string();
                b(self, &v)
            }
            None => self.not_found(base),
        }
    }

    pub(crate) fn not_found(&mut self, name: &str) -> R<i32> {
        let msg = format!(
            "bash: {name}: command not found in the light shell (it can run on the Linux computer: backend \"computer\")\n"
        );
        self.write_fd(2, msg.as_bytes())?;
        Ok(127)
    }

    /// A file named by `source`: on `$PATH` (readable is enough, as bash's
    /// `source` searches), else as given.
    pub(crate) fn source_lookup(&mut self, name: &str) -> Option<String> {
        let path = self.get_scalar("PATH")?;
        path.split(':').filter(|d| !d.is_empty()).find_map(|dir| {
            let p = VPath::parse_from(dir, &self.st.cwd).ok()?.join(name);
            let node = self.fs.stat(&p, true).ok()?;
            (node.kind == stead_vfs::Kind::File).then(|| p.as_str().to_string())
        })
    }

    /// Runs a workspace file as a program: it must exist, be a file and be
    /// executable (else 127 or 126 with bash's message); a file with a NUL
    /// byte in its first line is binary, which the light shell cannot run;
    /// anything else runs as a bash script.
    fn run_file(&mut self, argv: &[String]) -> R<i32> {
        let name = &argv[0];
        // bash: 127 when there is no such file, 126 when it cannot run.
        let missing = |e: &stead_vfs::VfsError| {
            let status = match e.code() {
                stead_vfs::Errno::Enoent | stead_vfs::Errno::Enotdir => 127,
                _ => 126,
            };
            Some((status, utils::strerror(e)))
        };
        let failure = match VPath::parse_from(name, &self.st.cwd) {
            Err(e) => missing(&e),
            Ok(path) => match self.fs.stat(&path, true) {
                Err(e) => missing(&e),
                Ok(node) if node.kind == stead_vfs::Kind::Dir => {
                    Some((126, "Is a directory".into()))
                }
                Ok(node) if node.mode & 0o111 == 0 => Some((126, "Permission denied".into())),
                Ok(_) => None,
            },
        };
        if let Some((status, why)) = failure {
            self.err_line(&format!("{name}: {why}"))?;
            return Ok(status);
        }
        let text = VPath::parse_from(name, &self.st.cwd).and_then(|p| self.fs.read(&p));
        if let Some(program) = text.ok().and_then(|t| invoke::foreign_interpreter(&t)) {
            // bash's words for an interpreter it cannot find.
            self.err_line(&format!(
                "{name}: {program}: bad interpreter: not in the light shell (it can run on the \
                 Linux computer: backend \"computer\")"
            ))?;
            return Ok(126);
        }
        self.run_script_file(argv)
    }

    /// Runs a file as a bash script, in a new shell (`bash file args`).
    fn run_script_file(&mut self, argv: &[String]) -> R<i32> {
        let mut v = vec!["bash".to_string()];
        v.extend_from_slice(argv);
        self.run_shell_command(&v)
    }

    pub(crate) fn call_function(&mut self, f: &Function, argv: &[String]) -> R<i32> {
        self.budget.enter()?;
        let saved_pos = std::mem::replace(&mut self.st.positional, argv[1..].to_vec());
        let env_below = std::mem::take(&mut self.env_for_call);
        self.st.frames.push(vars::Frame {
            kind: vars::FrameKind::Function { env_below },
            cells: Vec::new(),
        });
        self.st.func_names.push(f.name.clone());
        self.st.call_lines.push(self.line);
        let file = self.st.func_sources.get(&f.name).cloned();
        self.st
            .sources
            .push(file.unwrap_or_else(|| "environment".into()));
        self.in_function += 1;
        let saved_loops = std::mem::replace(&mut self.loop_depth, 0);
        let hidden = self.hide_traps_for_function();
        let r = self.run_command(&f.body);
        let r = match r {
            Ok(()) | Err(Flow::Return(_)) => {
                let status = match r {
                    Err(Flow::Return(s)) => s,
                    _ => self.status,
                };
                self.status = status;
                self.fire_return_trap().map(|()| status)
            }
            Err(e) => Err(e),
        };
        self.restore_function_traps(hidden);
        self.loop_depth = saved_loops;
        self.in_function -= 1;
        self.st.func_names.pop();
        // `$LINENO` is the caller's line again (the `ERR` trap a failed call
        // fires names the call).
        if let Some(line) = self.st.call_lines.pop() {
            self.line = line;
        }
        self.st.sources.pop();
        self.pop_frame(false);
        self.st.positional = saved_pos;
        self.budget.leave();
        r
    }

    /// Takes all remaining input from fd 0.
    pub(crate) fn take_stdin(&mut self) -> Vec<u8> {
        match self.fds[0].clone() {
            Some(Fd::In(input)) => input.take_rest(),
            _ => Vec::new(),
        }
    }

    fn run_utility(&mut self, util: Utility, argv: &[String]) -> R<i32> {
        // Near the memory budget, the estimate may count values freed since
        // it was measured: measure, so the utility's holds see what is free.
        if self.budget.memory_tight() {
            self.measure_memory()?;
        }
        let input = match self.fds[0].clone() {
            Some(Fd::In(input)) => Some(input),
            _ => None,
        };
        let stdin = match &input {
            Some(i) => i.rest(),
            None => crate::io::Stdin::complete(&[]),
        };
        let env = self.exported_env();
        let cwd = self.st.cwd.clone();
        let (mut stdout, out_slot) = self.take_output(1);
        let (mut stderr, err_slot) = if err_shares(&self.fds, 1, 2) {
            (
                Output::with_cap(self.budget.limits().max_output_bytes),
                None,
            )
        } else {
            self.take_output(2)
        };
        let (fs, clock, budget) = (self.fs, self.clock, self.budget);
        let mut runner = ShellRunner { shell: self };
        let mut ctx = Ctx {
            fs,
            clock,
            budget,
            cwd: &cwd,
            env: &env,
            stdin,
            stdout: &mut stdout,
            stderr: &mut stderr,
            runner: &mut runner,
        };
        let r = util(&mut ctx, argv);
        if let Some(input) = &input {
            if reads_stdin(argv) {
                input.pos.set(input.data.len());
            }
        }
        let shared = err_shares(&self.fds, 1, 2);
        self.put_output(1, out_slot, stdout)?;
        if shared {
            self.write_fd(1, stderr.as_bytes())?;
        } else {
            self.put_output(2, err_slot, stderr)?;
        }
        Ok(r?)
    }

    /// Takes a descriptor's buffer out for a utility (a scratch buffer for
    /// `/dev/null` and a `<>` descriptor).
    fn take_output(&mut self, fd: usize) -> (Output, Option<usize>) {
        let cap = self.budget.limits().max_output_bytes;
        match self.fds.get(fd).cloned().flatten() {
            Some(Fd::Out(i)) => (
                std::mem::replace(&mut self.slots[i].out, Output::with_cap(0)),
                Some(i),
            ),
            _ => (Output::with_cap(cap), None),
        }
    }

    /// Gives a descriptor back what a utility wrote to it: its slot's buffer,
    /// or written through a `<>` descriptor.
    fn put_output(&mut self, fd: usize, slot: Option<usize>, out: Output) -> R<()> {
        if let Some(i) = slot {
            self.slots[i].out = out;
        } else if let Some(Fd::In(input)) = self.fds.get(fd).cloned().flatten() {
            self.write_through(&input, out.as_bytes())?;
        }
        Ok(())
    }

    pub(crate) fn exported_env(&self) -> BTreeMap<String, String> {
        let mut env = BTreeMap::new();
        for (name, var) in &self.st.vars {
            // Arrays cannot be in an environment: bash exports only strings.
            if var.attrs & vars::EXPORT == 0 {
                continue;
            }
            if let Value::Str(s) = &var.value {
                env.insert(name.clone(), s.clone());
            }
        }
        env
    }

    /// Runs a command with captured output (for utilities that run commands).
    pub(crate) fn run_captured(
        &mut self,
        argv: &[String],
        stdin: crate::io::Stdin<'_>,
        stdout: &mut Output,
        stderr: &mut Output,
    ) -> R<i32> {
        let saved = self.fds.clone();
        let out = self.open_slot(None);
        let err = self.open_slot(None);
        let data = stdin.available().to_vec();
        let input = if stdin.is_complete() {
            Input::new(data)
        } else {
            Input::cut(data)
        };
        self.fds[0] = Some(Fd::In(Rc::new(input)));
        self.fds[1] = Some(Fd::Out(out));
        self.fds[2] = Some(Fd::Out(err));
        let r = self.dispatch(argv, Vec::new());
        let o = std::mem::take(&mut self.slots[out].out).into_bytes();
        let e = std::mem::take(&mut self.slots[err].out).into_bytes();
        self.slots[err].open = false;
        self.close_slot(err)?;
        self.slots[out].open = false;
        self.close_slot(out)?;
        self.fds = saved;
        stdout.write(&o)?;
        stderr.write(&e)?;
        match r {
            Err(Flow::Abort(Abort::Exit(s)))
            | Err(Flow::Error(s))
            | Err(Flow::Return(s))
            | Err(Flow::Fail(s)) => Ok(s),
            other => other,
        }
    }

    /// Runs `argv` with its stdout captured (stderr passes through).
    pub(crate) fn capture(&mut self, argv: &[String]) -> R<(String, i32)> {
        let slot = self.open_slot(None);
        let saved = self.fds[1].replace(Fd::Out(slot));
        let r = self.dispatch(argv, Vec::new());
        self.fds[1] = saved;
        let bytes = std::mem::take(&mut self.slots[slot].out).into_bytes();
        self.slots[slot].open = false;
        self.close_slot(slot)?;
        let status = r?;
        Ok((crate::bytes::decode(&bytes), status))
    }

    /// Runs the `EXIT` trap, if any.
    pub(crate) fn run_exit_trap(&mut self) -> R<()> {
        if let Some(script) = self.st.traps.remove("EXIT") {
            if let Ok(prog) = parse::parse_script(&script) {
                let status = self.status;
                match self.run_program(&prog) {
                    Ok(_) | Err(Flow::Error(_)) | Err(Flow::Return(_)) => self.status = status,
                    Err(Flow::Abort(Abort::Exit(s))) => self.status = s,
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(())
    }

    /// Closes every slot opened by `exec` and every process substitution.
    pub(crate) fn finish(&mut self) -> R<()> {
        for i in (2..self.slots.len()).rev() {
            self.close_slot(i)?;
        }
        for (path, _) in std::mem::take(&mut self.procsubs) {
            self.pipes.close(&path);
        }
        Ok(())
    }

    /// Creates a process-substitution file; `>(cmd)` runs later.
    pub(crate) fn procsub(&mut self, prog: &Rc<Program>, input: bool) -> R<String> {
        let n = self.procsubs.len();
        let dir = VPath::parse("/dev/fd").unwrap_or_else(|_| VPath::root());
        let path = dir.join(&(63 - n as i64).to_string());
        let mut data = Vec::new();
        if input {
            let (bytes, r) = self.stdout_of(|sh| sh.subshell(|sh| sh.run_program(prog)))?;
            data = bytes;
            r?;
        }
        self.budget.charge_write(data.len() as u64)?;
        self.pipes.open(&path, data);
        self.procsubs
            .push((path.clone(), (!input).then(|| prog.clone())));
        Ok(path.as_str().to_string())
    }

    /// At the end of a simple command, runs the pending `>(cmd)` consumers
    /// of the process substitutions it made (from index `first`) with their
    /// files as input, then removes those files: as in bash, their
    /// descriptors close with the command, so the next one is `63` again.
    fn finish_procsubs(&mut self, first: usize) -> R<()> {
        let first = first.min(self.procsubs.len());
        let made = self.procsubs.split_off(first);
        for (path, prog) in &made {
            let Some(prog) = prog else { continue };
            let data = self.fs.read(path).unwrap_or_default();
            let saved = self.fds[0].replace(Fd::In(Rc::new(Input::new(data))));
            let status = self.status;
            let r = self.subshell(|sh| sh.run_program(prog));
            self.status = status;
            self.fds[0] = saved;
            r?;
        }
        for (path, _) in made {
            self.pipes.close(&path);
        }
        Ok(())
    }
}

fn err_shares(fds: &[Option<Fd>], a: usize, b: usize) -> bool {
    matches!((&fds[a], &fds[b]), (Some(Fd::Out(x)), Some(Fd::Out(y))) if x == y)
}

/// Whether a utility consumed its standard input (so a `while read` loop
/// around it sees the rest gone, as with real file descriptors).
fn reads_stdin(argv: &[String]) -> bool {
    let name = argv[0].rsplit('/').next().unwrap_or("");
    let operands = argv[1..]
        .iter()
        .filter(|a| !a.starts_with('-') || a.as_str() == "-")
        .count();
    match name {
        "cat" | "sort" | "uniq" | "wc" | "head" | "tail" | "tac" | "rev" | "nl" | "base64"
        | "md5sum" | "sha256sum" | "sha1sum" | "od" | "fold" | "paste" | "tee" | "cksum" => {
            operands == 0
        }
        "grep" | "egrep" | "fgrep" | "sed" | "awk" | "jq" | "cut" => operands <= 1,
        "tr" | "xargs" | "read" => true,
        _ => false,
    }
}

struct ShellRunner<'s, 'a> {
    shell: &'s mut Shell<'a>,
}

impl Runner for ShellRunner<'_, '_> {
    fn run(
        &mut self,
        argv: &[String],
        stdin: crate::io::Stdin<'_>,
        stdout: &mut Output,
        stderr: &mut Output,
    ) -> Result<i32, Abort> {
        if argv.is_empty() {
            return Ok(0);
        }
        match self.shell.run_captured(argv, stdin, stdout, stderr) {
            Ok(s) => Ok(s),
            Err(Flow::Abort(a)) => Err(a),
            Err(_) => Ok(1),
        }
    }
}

/// The export attribute (for setting up the initial environment).
pub(crate) fn vars_export() -> u8 {
    vars::EXPORT
}

/// The command names a script mentions literally, the functions it
/// defines, and the words of each simple command whose name is literal
/// (`None` for a word known only once expanded: `$x`, `$(cmd)`).
#[derive(Debug, Default)]
pub(crate) struct CommandNames {
    pub used: Vec<String>,
    pub defined: Vec<String>,
    pub argvs: Vec<Vec<Option<String>>>,
}

pub(crate) fn collect_commands(prog: &[Item], names: &mut CommandNames) {
    for item in prog {
        for pipe in std::iter::once(&item.first).chain(item.rest.iter().map(|(_, p)| p)) {
            for cmd in &pipe.cmds {
                collect_command(cmd, names);
            }
        }
    }
}

fn collect_words(words: &[Word], names: &mut CommandNames) {
    for w in words {
        collect_parts(&w.0, names);
    }
}

fn collect_parts(parts: &[Part], names: &mut CommandNames) {
    for p in parts {
        match p {
            Part::Command(prog) | Part::ProcSub(prog, _) | Part::FunSub(prog, _) => {
                collect_commands(prog, names)
            }
            Part::Double(inner) => collect_parts(inner, names),
            _ => {}
        }
    }
}

fn collect_command(cmd: &Command, names: &mut CommandNames) {
    match cmd {
        Command::Simple(s) => {
            if let Some(first) = s.words.first() {
                if let Some(name) = literal_text(first) {
                    names.used.push(name);
                    names.argvs.push(s.words.iter().map(literal_text).collect());
                }
            }
            collect_words(&s.words, names);
            for a in &s.assigns {
                if let AssignValue::Scalar(w) = &a.value {
                    collect_words(std::slice::from_ref(w), names);
                }
            }
        }
        Command::Compound(c, _) => match c.as_ref() {
            Compound::Group(p) | Compound::Subshell(p) => collect_commands(p, names),
            Compound::If {
                branches,
                otherwise,
            } => {
                for (c, b) in branches {
                    collect_commands(c, names);
                    collect_commands(b, names);
                }
                if let Some(o) = otherwise {
                    collect_commands(o, names);
                }
            }
            Compound::For { body, words, .. } => {
                collect_words(words.as_deref().unwrap_or(&[]), names);
                collect_commands(body, names)
            }
            Compound::ArithFor { body, .. } => collect_commands(body, names),
            Compound::Select { body, words, .. } => {
                collect_words(words.as_deref().unwrap_or(&[]), names);
                collect_commands(body, names)
            }
            Compound::While { cond, body, .. } => {
                collect_commands(cond, names);
                collect_commands(body, names);
            }
            Compound::Case { arms, .. } => {
                for a in arms {
                    collect_commands(&a.body, names);
                }
            }
            Compound::Arith(_) | Compound::Cond(..) => {}
        },
        Command::Function(f) => {
            names.defined.push(f.name.clone());
            collect_command(&f.body, names)
        }
    }
}

fn literal_text(w: &Word) -> Option<String> {
    let mut s = String::new();
    for p in &w.0 {
        match p {
            Part::Lit(t) | Part::Quoted(t) => s.push_str(t),
            Part::Double(inner) => {
                for q in inner {
                    match q {
                        Part::Lit(t) => s.push_str(t),
                        _ => return None,
                    }
                }
            }
            _ => return None,
        }
    }
    Some(s)
}

/// Whether running `cmd` as a whole pipeline sets `PIPESTATUS` to its status.
/// Bash records the status of simple commands, subshells, `[[ ]]` and
/// `(( ))`; other compound commands leave what the pipelines inside them set
/// (a `case` that matches nothing leaves `PIPESTATUS` as it was).
fn sets_pipestatus(cmd: &Command) -> bool {
    match cmd {
        Command::Simple(_) | Command::Function(_) => true,
        Command::Compound(compound, _) => match compound.as_ref() {
            Compound::Subshell(_) | Compound::Arith(_) | Compound::Cond(..) => true,
            Compound::Group(_)
            | Compound::If { .. }
            | Compound::For { .. }
            | Compound::Select { .. }
            | Compound::ArithFor { .. }
            | Compound::While { .. }
            | Compound::Case { .. } => false,
        },
    }
}

/// A `( list )` command, which bash runs and waits for as a subshell of
/// its own even as a pipeline's stage.
fn is_user_subshell(cmd: &Command) -> bool {
    matches!(cmd, Command::Compound(c, _) if matches!(c.as_ref(), Compound::Subshell(_)))
}

/// `name[subscript]` as a command's text writes it among its prefix
/// assignments (the name alone if it cannot be found).
fn written_element(text: &str, name: &str) -> String {
    let start = format!("{name}[");
    let Some(at) = text.find(&start) else {
        return name.to_string();
    };
    let mut depth = 0usize;
    for (i, c) in text[at + name.len()..].char_indices() {
        match c {
            '[' => depth += 1,
            ']' if depth == 1 => return text[at..at + name.len() + i + 1].to_string(),
            ']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    name.to_string()
}
