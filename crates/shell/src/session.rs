//! A shell that lives across command lines: what an interactive terminal
//! runs each line in.
//!
//! [`crate::exec`] starts every command line with fresh shell state. A
//! terminal needs its variables, functions, aliases, options, traps and cwd
//! to carry from one line to the next, and across reconnects and restarts
//! of the isolate, so a [`Session`] is plain data that storage keeps. After
//! each line the shell prints its own state the way bash does for reading
//! back (`declare -p`, `declare -f`, `alias -p`, `set +o`, `shopt -p`,
//! `trap -p`), and the next line begins by reading it back. Nothing here
//! knows the interpreter's insides: whatever the shell can print of itself
//! survives, as it would through bash's own `declare -p > state; . state`.
//!
//! As in an interactive bash, `exit` (or a failure under `set -e`) ends the
//! session, running its `EXIT` trap then (not after every line); a line
//! stopped by a limit ends only that line, and the session goes on with the
//! state it had before it.

use serde::{Deserialize, Serialize};
use stead_vfs::VPath;

use crate::limits::{Clock, LimitKind, Limits};
use crate::{exec, ExecRequest, Fs};

/// What separates a line's output from the state the shell printed after
/// it (the last occurrence counts: a line cannot print after it, and no
/// shell value holds a NUL byte).
const MARK: &[u8] = b"\0stead-session-state ";

/// The persistent state of one interactive shell.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Session {
    /// The working directory.
    pub cwd: String,
    /// Shell text that sets the state up again (what the shell printed
    /// after the last line).
    pub state: String,
    /// The exit status of the last line (`$?`).
    pub status: i32,
}

impl Default for Session {
    fn default() -> Self {
        Session {
            cwd: "/".into(),
            state: String::new(),
            status: 0,
        }
    }
}

/// What one line did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// Its output, stdout and stderr together (as a terminal shows them).
    pub output: Vec<u8>,
    /// Its exit status.
    pub status: i32,
    /// Whether the shell ended with it (`exit`, `set -e`): the session is
    /// over.
    pub ended: bool,
    /// The limit that stopped it, if one did.
    pub limit: Option<LimitKind>,
}

/// Quotes `text` as one shell word.
fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

impl Session {
    /// The session's cwd, or `/` if it no longer is a directory.
    fn cwd(&self, fs: &dyn Fs) -> VPath {
        VPath::parse(&self.cwd)
            .ok()
            .filter(|cwd| fs.stat(cwd, true).is_ok_and(|node| node.is_dir()))
            .unwrap_or_else(VPath::root)
    }

    /// A script that sets the state up (silently), then evaluates `line`
    /// (its stderr with its stdout, when `merged`) and runs `after`.
    ///
    /// An interactive shell expands aliases, so this one does (unless the
    /// state says otherwise). `$?` is the last line's status, restored at
    /// the start of the evaluated text (reading the state back sets it);
    /// under `set -e` (switched
    /// on last, after the rest is read back, so a failure while reading
    /// back cannot end the shell) it can only have been 0.
    fn script(&self, line: &str, merged: bool, after: &str) -> String {
        let mut errexit = false;
        let state: Vec<&str> = self
            .state
            .lines()
            .filter(|line| match *line {
                "set -o errexit" => {
                    errexit = true;
                    false
                }
                line => !resets_by_itself(line),
            })
            .collect();
        let (errexit, line) = match errexit {
            true => ("set -o errexit\n", line.to_string()),
            false => ("", format!("(exit {})\n{line}", self.status)),
        };
        format!(
            "shopt -s expand_aliases\neval {state} >/dev/null 2>&1\n{errexit}eval {line}{merge}\n{after}\n",
            state = quote(&state.join("\n")),
            line = quote(&line),
            merge = if merged { " 2>&1" } else { "" },
        )
    }

    /// Runs `line` (with `env` added, such as the terminal's size), and
    /// keeps the state it leaves.
    pub fn run(
        &mut self,
        fs: &dyn Fs,
        clock: &dyn Clock,
        line: &str,
        env: &[(&str, String)],
        limits: Limits,
    ) -> Line {
        let after = "printf '\\0stead-session-state %d\\0' \"$?\"\n\
             declare -p\ndeclare -f\nalias -p\nshopt -p\ntrap -p\nset +o\ntrap - EXIT\n\
             printf '\\0%s' \"$PWD\"";
        let request = ExecRequest {
            command: self.script(line, true, after),
            cwd: self.cwd(fs),
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
            stdin: Vec::new(),
            limits,
        };
        let result = exec(fs, clock, request);
        let Some(at) = find_last(&result.stdout, MARK) else {
            // The shell ended before printing its state: the line ended it,
            // unless a limit did (then only the line ends).
            let mut output = result.stdout;
            output.extend_from_slice(&result.stderr);
            let ended = result.limit.is_none();
            if !ended {
                self.status = result.exit_code;
            }
            return Line {
                output,
                status: result.exit_code,
                ended,
                limit: result.limit,
            };
        };
        let output = result.stdout[..at].to_vec();
        let rest = String::from_utf8_lossy(&result.stdout[at + MARK.len()..]).into_owned();
        let (status, rest) = rest.split_once('\0').unwrap_or((&rest, ""));
        let (state, cwd) = rest.rsplit_once('\0').unwrap_or((rest, "/"));
        self.status = status.parse().unwrap_or(result.exit_code);
        self.state = state.to_string();
        self.cwd = cwd.to_string();
        Line {
            output,
            status: self.status,
            ended: false,
            limit: None,
        }
    }

    /// The words `word` may complete to: command names (aliases,
    /// functions, builtins, utilities) where a command goes, otherwise
    /// paths, as `compgen` generates them; a directory ends in `/`.
    pub fn complete(
        &self,
        fs: &dyn Fs,
        clock: &dyn Clock,
        word: &str,
        command: bool,
    ) -> Vec<String> {
        let generate = match command && !word.contains('/') {
            true => "compgen -c -- \"$w\" | sort -u",
            false => {
                "compgen -f -- \"$w\" | while IFS= read -r f; do \
                 if [ -d \"$f\" ]; then printf '%s/\\n' \"$f\"; else printf '%s\\n' \"$f\"; fi; done"
            }
        };
        let line = format!("w={}\n{generate}", quote(word));
        let request = ExecRequest {
            command: self.script(&line, false, ""),
            cwd: self.cwd(fs),
            env: Default::default(),
            stdin: Vec::new(),
            limits: Limits::default(),
        };
        let result = exec(fs, clock, request);
        let mut words: Vec<String> = String::from_utf8_lossy(&result.stdout)
            .lines()
            .filter(|w| !w.is_empty())
            .map(str::to_string)
            .collect();
        words.sort();
        words.dedup();
        words
    }
}

/// Whether `text` is the start of a command that goes on: an open quote,
/// an `if` without its `fi`, a trailing `|` or `&&`. An interactive shell
/// then asks for more (its `PS2` prompt) before running any of it.
pub fn incomplete(text: &str) -> bool {
    match crate::interp::parse::parse_script(text) {
        Ok(_) => false,
        Err(e) => {
            e.kind == crate::interp::parse::SyntaxKind::Unclosed
                || e.message.contains("unexpected end of file")
        }
    }
}

/// Variables the shell sets anew for each line, or that the terminal
/// passes in (its size): never read back from an earlier line.
const FRESH: &[&str] = &[
    "BASHPID",
    "BASH_ARGC",
    "BASH_ARGV",
    "BASH_COMMAND",
    "BASH_LINENO",
    "BASH_SOURCE",
    "BASH_SUBSHELL",
    "COLUMNS",
    "EPOCHREALTIME",
    "EPOCHSECONDS",
    "EUID",
    "FUNCNAME",
    "GROUPS",
    "HISTCMD",
    "LINENO",
    "LINES",
    "PIPESTATUS",
    "PPID",
    "RANDOM",
    "SECONDS",
    "SHLVL",
    "SRANDOM",
    "UID",
    "_",
];

/// Whether `line` of the printed state declares one of the [`FRESH`]
/// variables (`declare -i RANDOM=4`).
fn resets_by_itself(line: &str) -> bool {
    let Some(rest) = line.strip_prefix("declare ") else {
        return false;
    };
    let name = rest
        .split_whitespace()
        .find(|word| !word.starts_with('-'))
        .map(|word| word.split('=').next().unwrap_or(word));
    name.is_some_and(|name| FRESH.contains(&name))
}

/// Where `needle` last occurs in `haystack`.
fn find_last(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .rposition(|window| window == needle)
}
