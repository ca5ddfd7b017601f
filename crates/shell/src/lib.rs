//! A bash interpreter and the common Unix utilities, in plain Rust, over the
//! agent's workspace filesystem.
//!
//! No processes and no threads: a command line is parsed, expanded and run
//! as function calls inside the isolate, next to the files. Every exec
//! starts with fresh shell state (variables, functions) while the filesystem
//! persists; every write goes to the workspace at once, inside the exec's
//! one transaction, so it is durable the moment the command returns and an
//! exec's many writes cost one commit. Runaway scripts end with a named limit
//! ([`LimitKind`]) instead of exhausting the platform's CPU budget.
//!
//! [`exec`] is the entry point: the interpreter lives in `interp` (parser,
//! expansion, builtins, redirections, jobs, traps, options); commands are
//! looked up as function, then builtin, then utility (`utils::lookup`;
//! `/bin/cat` and `/usr/bin/env` map to the utility by basename), then a
//! script file on `$PATH` in the workspace. Utilities run other commands
//! through the interpreter's [`Runner`].
//!
//! The public API is deliberately small: [`exec`] / [`exec_with_commands`]
//! and their request and result types, the limits, [`commands_used`] and
//! [`light_shell_gaps`] (how `auto` routes a script), and [`Ctx`],
//! [`Utility`], [`Runner`] and [`Output`] for commands a host adds (the tests'
//! `argv.py`), and [`net`], through which a host answers the network
//! requests of an exec it runs as a replay. Everything else is private so the compiler finds dead code.
//!
//! [`ExecResult`] holds stdout and stderr as raw bytes, exactly as written
//! (binary output such as `gzip -c` or `tar c` included); a host decides
//! how to encode them (the HTTP layer offers base64).
//!
//! The modules' imports form no circle: a module uses the ones beneath it
//! and what its parent module holds for all its parts (the builtins table
//! in `interp`, which names handlers from most of the interpreter's
//! modules and is consulted by `type`, `command` and `compgen`; awk's
//! `Stop`; jq's `Edit` of the program text), never a sibling that uses it
//! back.
//!
//! Known approximations: a utility's stdout and stderr are separate buffers,
//! so with `2>&1` its stderr follows its stdout instead of interleaving;
//! inside `while read` loops a filter utility reading standard input (e.g.
//! `cat` with no file operand) consumes the rest of it, one given files does
//! not. Background jobs run when waited for (see `interp/jobs.rs`).

#![deny(unreachable_pub)]

mod bytes;
pub mod content;
mod devices;
mod fs;
mod interp;
mod io;
mod limits;
pub mod net;
mod pipes;
pub mod session;
mod utils;

pub use fs::Fs;
pub use io::{Output, Stdin};
pub use limits::{Abort, Budget, Clock, Held, LimitKind, Limits, MAX_PARSE_DEPTH};

/// Finds the recorded corpus for the unit tests that read it (grep, sed and
/// jq fixtures), the same way the integration tests do.
#[cfg(test)]
#[path = "../tests/common/corpus.rs"]
mod test_corpus;

use std::collections::BTreeMap;

use stead_vfs::VPath;

pub use utils::{git_entries, git_meta, Ctx, Runner, Utility};

/// One command line to run.
#[derive(Debug, Clone)]
pub struct ExecRequest {
    pub command: String,
    pub cwd: VPath,
    /// Extra environment, over the defaults (see [`exec`]).
    pub env: BTreeMap<String, String>,
    pub stdin: Vec<u8>,
    pub limits: Limits,
}

/// What a command line produced.
#[derive(Debug, Clone, Default)]
pub struct ExecResult {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub exit_code: i32,
    /// Output hit its cap.
    pub truncated: bool,
    /// The limit that ended the exec.
    pub limit: Option<LimitKind>,
}

/// The exit status when a limit ends an exec (as `timeout` does).
pub const LIMIT_EXIT_CODE: i32 = 124;

/// Runs `request.command` with fresh shell state over `fs`.
///
/// The environment starts as `HOME=/`, `PWD` (the cwd), `PATH=/usr/bin:/bin`,
/// `USER=agent`, `SHELL=/bin/bash`, `IFS` unset (default splitting), all
/// exported, then `request.env` on top. A crossed limit ends the exec with
/// exit code [`LIMIT_EXIT_CODE`] (124), `limit` set, and
/// `stead: limit <name> exceeded` appended to stderr. A syntax error exits 2.
pub fn exec(fs: &dyn Fs, clock: &dyn Clock, request: ExecRequest) -> ExecResult {
    exec_with_commands(fs, clock, request, &[])
}

/// [`exec`] with extra commands (tests provide helpers such as `argv.py`).
///
/// The exec's changes to the workspace commit together, in one transaction
/// ([`Fs::atomically`]): a thousand small writes cost one commit, and a
/// host that dies midway keeps none of them. Should the commit itself fail,
/// the exec reports it (exit code 1 if it had succeeded, the reason on
/// stderr): none of its changes was kept.
pub fn exec_with_commands(
    fs: &dyn Fs,
    clock: &dyn Clock,
    request: ExecRequest,
    extra: &[(&str, Utility)],
) -> ExecResult {
    let mut request = Some(request);
    let mut result = ExecResult::default();
    let committed = fs.atomically(&mut || {
        if let Some(request) = request.take() {
            result = run(fs, clock, request, extra);
        }
    });
    if let Err(e) = committed {
        let message = format!("stead: the command's changes were not kept: {e}\n");
        result.stderr.extend_from_slice(message.as_bytes());
        if result.exit_code == 0 {
            result.exit_code = 1;
        }
    }
    result
}

/// Runs one exec over `fs`, inside its transaction.
fn run(
    fs: &dyn Fs,
    clock: &dyn Clock,
    request: ExecRequest,
    extra: &[(&str, Utility)],
) -> ExecResult {
    let clock = limits::ExecClock::new(clock);
    let budget = Budget::new(request.limits, clock.now_ms());
    let pipes = pipes::Pipes::default();
    let view = pipes::WithPipes { fs, pipes: &pipes };
    let mut shell = interp::Shell::new(&view, &pipes, &clock, &budget, request.cwd.clone(), extra);
    let out = shell.open_exec_output();
    let err = shell.open_exec_output();
    shell.fds[0] = Some(interp::Fd::In(std::rc::Rc::new(interp::Input::new(
        request.stdin,
    ))));
    shell.fds[1] = Some(interp::Fd::Out(out));
    shell.fds[2] = Some(interp::Fd::Out(err));
    let defaults = [
        ("HOME", "/".to_string()),
        ("PWD", request.cwd.as_str().to_string()),
        ("PATH", "/usr/bin:/bin".to_string()),
        ("USER", "agent".to_string()),
        ("SHELL", "/bin/bash".to_string()),
    ];
    let defaults = defaults.into_iter().map(|(k, v)| (k.to_string(), v));
    for (k, v) in defaults.chain(request.env) {
        shell.st.vars.insert(
            k,
            interp::Var {
                value: interp::Value::Str(v),
                attrs: interp::vars_export(),
            },
        );
    }
    // Set by bash itself, not exported.
    for (k, v) in [("OPTIND", "1"), ("PS4", "+ ")] {
        if !shell.st.vars.contains_key(k) {
            shell
                .st
                .vars
                .insert(k.to_string(), interp::Var::new(v.to_string()));
        }
    }
    let mut limit = None;
    let r = shell.run_source(&request.command, None, interp::SourceKind::Script);
    let r = match r {
        Err(interp::Flow::Abort(Abort::Limit(k))) => Err(k),
        other => {
            let status = match other {
                Ok(s) => s,
                Err(interp::Flow::Abort(Abort::Exit(s))) | Err(interp::Flow::Error(s)) => s,
                Err(interp::Flow::Return(s)) => s,
                Err(_) => shell.status,
            };
            shell.status = status;
            // Background jobs not waited for finish before the shell exits.
            let jobs = match shell.complete_all_jobs() {
                Err(interp::Flow::Abort(Abort::Limit(k))) => Err(k),
                _ => Ok(()),
            };
            shell.status = status;
            match jobs.map(|()| shell.run_exit_trap()) {
                Err(k) => Err(k),
                Ok(r) => match r {
                    Err(interp::Flow::Abort(Abort::Limit(k))) => Err(k),
                    _ => Ok(shell.status),
                },
            }
        }
    };
    let status = match r.and_then(|s| match shell.finish() {
        Err(interp::Flow::Abort(Abort::Limit(k))) => Err(k),
        _ => Ok(s),
    }) {
        Ok(s) => s,
        Err(k) => {
            limit = Some(k);
            LIMIT_EXIT_CODE
        }
    };
    let stdout = std::mem::take(&mut shell.slots[out].out);
    let stderr = std::mem::take(&mut shell.slots[err].out);
    let truncated = stdout.len() >= stdout.cap() || stderr.len() >= stderr.cap();
    let mut stderr = stderr.into_bytes();
    if let Some(k) = limit {
        stderr.extend_from_slice(interp::limit_message(k).as_bytes());
    }
    ExecResult {
        stdout: stdout.into_bytes(),
        stderr,
        exit_code: status,
        truncated: truncated || limit == Some(LimitKind::OutputBytes),
        limit,
    }
}

/// Names of commands a script would run (simple command names, without
/// expanding anything); `None` when the script cannot be parsed.
pub fn commands_used(script: &str) -> Option<Vec<String>> {
    let prog = interp::parse::parse_script(script).ok()?;
    let mut names = interp::CommandNames::default();
    interp::collect_commands(&prog, &mut names);
    names.used.sort();
    names.used.dedup();
    Some(names.used)
}

/// What keeps a script from running in the light shell as the real
/// programs would: how `auto` routes a script to the Linux computer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Gap {
    /// A command that is neither a builtin, nor one of the light shell's
    /// utilities, nor a function the script defines.
    Command(String),
    /// A light-shell utility given options it does not support (as its
    /// own option parser reads them): the utility and the parser's message.
    Options { utility: String, message: String },
    /// A script file run as a program (`./tool`) whose `#!` line names an
    /// interpreter other than bash or sh.
    Interpreter { file: String, interpreter: String },
    /// A binary file run as a program.
    Binary(String),
}

/// How deep script files that run script files are followed.
const MAX_SCRIPT_NESTING: usize = 8;

/// The [`Gap`]s of a script, found without running it (the light shell
/// writes to the workspace as it goes, so failing over after a failure
/// would not be safe). `None` when the script, or a script file it runs,
/// cannot be parsed.
///
/// Every simple command whose name is literal is checked: a utility's
/// words go through the same option parser it runs with, a word known only
/// once expanded (`"$f"`, `$(cmd)`) standing for a plain operand. Script
/// files named literally are read from `files` (relative to `cwd`) and
/// checked the same way: `bash FILE`, `sh FILE`, `bash -c TEXT`, `source
/// FILE`, `. FILE`, and a file run as a program (`./FILE`, whose `#!` line
/// must name bash or sh, or be absent). Names built at run time (`$cmd`),
/// options that only expansion produces, and the commands `xargs`, `find
/// -exec` or `env` run are not seen: such a script runs in the light shell,
/// as does one naming a script file that does not exist (it fails there as
/// in bash).
pub fn light_shell_gaps(script: &str, files: &dyn Fs, cwd: &VPath) -> Option<Vec<Gap>> {
    let mut search = GapSearch {
        files,
        cwd,
        followed: Vec::new(),
        gaps: Vec::new(),
    };
    search.script(script, &[])?;
    Some(search.gaps)
}

/// A walk over a script and the script files it runs.
struct GapSearch<'a> {
    files: &'a dyn Fs,
    cwd: &'a VPath,
    /// Script files already checked (each once: files may run each other).
    followed: Vec<VPath>,
    gaps: Vec<Gap>,
}

/// What a simple command with literal words runs.
enum Runs {
    /// A program or builtin, checked by name and options.
    Command,
    /// Shell text: a script file's (`file`) or `bash -c`'s.
    Script {
        file: Option<String>,
        text: Option<String>,
        sourced: bool,
    },
    /// A file run as a program.
    Program(String),
}

impl GapSearch<'_> {
    /// The gaps of `script`, which sees the functions `defined` (a sourced
    /// file sees its caller's); the functions it defines, its sourced
    /// files' included (the caller sees those).
    fn script(&mut self, script: &str, defined: &[String]) -> Option<Vec<String>> {
        let prog = interp::parse::parse_script(script).ok()?;
        let mut names = interp::CommandNames::default();
        interp::collect_commands(&prog, &mut names);
        names.defined.extend_from_slice(defined);
        let runs: Vec<Runs> = names.argvs.iter().map(|argv| runs(argv)).collect();
        // Sourced files first: what they define, the rest may call.
        for run in &runs {
            if let Runs::Script {
                file: Some(file),
                sourced: true,
                ..
            } = run
            {
                if let Some(text) = self.read(file) {
                    let more = self.script(&crate::bytes::decode(&text), &names.defined)?;
                    names.defined.extend(more);
                }
            }
        }
        for (run, argv) in runs.into_iter().zip(&names.argvs) {
            let Some(Some(name)) = argv.first() else {
                continue;
            };
            if names.defined.iter().any(|d| d == name) {
                continue;
            }
            match run {
                Runs::Command => self.command(name, argv),
                Runs::Script { sourced: true, .. } => {}
                Runs::Script { file, text, .. } => {
                    if let Some(text) = text.or_else(|| {
                        let bytes = self.read(file.as_deref()?)?;
                        Some(crate::bytes::decode(&bytes))
                    }) {
                        self.script(&text, &[])?;
                    }
                }
                Runs::Program(file) => {
                    let Some(text) = self.read(&file) else {
                        continue;
                    };
                    let first_line = text.split(|b| *b == b'\n').next().unwrap_or(&[]);
                    if first_line.contains(&0) {
                        self.gap(Gap::Binary(file));
                    } else if let Some(interpreter) = interp::invoke::foreign_interpreter(&text) {
                        self.gap(Gap::Interpreter { file, interpreter });
                    } else {
                        self.script(&crate::bytes::decode(&text), &[])?;
                    }
                }
            }
        }
        Some(names.defined)
    }

    /// A program or builtin by name: one the light shell lacks, or one
    /// given options its parser refuses.
    fn command(&mut self, name: &str, argv: &[Option<String>]) {
        if interp::is_builtin(name) {
            return;
        }
        if utils::lookup(name).is_none() {
            return self.gap(Gap::Command(name.to_string()));
        }
        // An expanded word stands for an operand: "." is one to every parser.
        let words: Vec<String> = argv
            .iter()
            .map(|word| word.clone().unwrap_or_else(|| ".".to_string()))
            .collect();
        if let Err(message) = utils::check_options(&words) {
            self.gap(Gap::Options {
                utility: name.to_string(),
                message,
            });
        }
    }

    /// A script file's content, the first time it is asked for (and within
    /// [`MAX_SCRIPT_NESTING`]); `None` when it cannot be read.
    fn read(&mut self, file: &str) -> Option<Vec<u8>> {
        let path = VPath::parse_from(file, self.cwd).ok()?;
        if self.followed.contains(&path) || self.followed.len() >= MAX_SCRIPT_NESTING {
            return None;
        }
        self.followed.push(path.clone());
        self.files.read(&path).ok()
    }

    fn gap(&mut self, gap: Gap) {
        if !self.gaps.contains(&gap) {
            self.gaps.push(gap);
        }
    }
}

/// What a simple command runs, as far as its literal words tell.
fn runs(argv: &[Option<String>]) -> Runs {
    let Some(Some(name)) = argv.first() else {
        return Runs::Command;
    };
    let base = name.rsplit('/').next().unwrap_or(name);
    let in_program_dir = name.contains('/')
        && utils::which::PROGRAM_DIRS
            .iter()
            .any(|d| name[..name.len() - base.len()].strip_suffix('/') == Some(d));
    match name.as_str() {
        "source" | "." => Runs::Script {
            file: argv.get(1).cloned().flatten().filter(|f| f != "--"),
            text: None,
            sourced: true,
        },
        _ if name.contains('/') && !in_program_dir => Runs::Program(name.clone()),
        _ if matches!(base, "bash" | "sh") => {
            // Words only expansion knows cannot be read as options, and a
            // command line bash refuses runs nothing: nothing to follow.
            let invocation = argv
                .iter()
                .cloned()
                .collect::<Option<Vec<String>>>()
                .and_then(|words| interp::invoke::parse_invocation(&words).ok());
            let (file, text) = match invocation {
                Some(inv) => (
                    inv.words.first().cloned().filter(|_| inv.command.is_none()),
                    inv.command,
                ),
                None => (None, None),
            };
            Runs::Script {
                file,
                text,
                sourced: false,
            }
        }
        _ => Runs::Command,
    }
}
