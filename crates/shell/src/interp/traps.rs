//! Traps and signals: `trap`, and what happens when a signal reaches the
//! shell.
//!
//! There are no processes, so the only signals are the ones a script sends
//! itself (`kill -USR1 $$`) or its background jobs (see `jobs.rs`). A
//! signal to the shell runs its trap right after the `kill` that sent it;
//! without a trap, the signals whose default action ends a process end the
//! shell with status 128 + the signal's number, as in bash.
//!
//! The pseudo-signals follow bash: `EXIT` runs when the shell (or a
//! subshell that set it) exits; `ERR` after a failing simple command,
//! `(( ))`, `[[ ]]`, subshell or pipeline, where `set -e` would apply;
//! `DEBUG` before each simple command, `[[ ]]`, `(( ))` and `for`/`case`
//! head; `RETURN` when a function or sourced file returns. Functions do not
//! see `ERR` unless `set -E` (errtrace), nor `DEBUG` and `RETURN` unless
//! `set -T` (functrace); subshells start with the parent's traps reset
//! (ignored signals stay ignored), and `trap` in a subshell still prints
//! the parent's, so `saved=$(trap)` works.

use super::{printf, Flow, Shell, SourceKind, R};
use crate::limits::Abort;

/// Linux signal numbers and names (without `SIG`), as `kill -l` lists them.
const SIGNALS: &[(i32, &str)] = &[
    (1, "HUP"),
    (2, "INT"),
    (3, "QUIT"),
    (4, "ILL"),
    (5, "TRAP"),
    (6, "ABRT"),
    (7, "BUS"),
    (8, "FPE"),
    (9, "KILL"),
    (10, "USR1"),
    (11, "SEGV"),
    (12, "USR2"),
    (13, "PIPE"),
    (14, "ALRM"),
    (15, "TERM"),
    (16, "STKFLT"),
    (17, "CHLD"),
    (18, "CONT"),
    (19, "STOP"),
    (20, "TSTP"),
    (21, "TTIN"),
    (22, "TTOU"),
    (23, "URG"),
    (24, "XCPU"),
    (25, "XFSZ"),
    (26, "VTALRM"),
    (27, "PROF"),
    (28, "WINCH"),
    (29, "IO"),
    (30, "PWR"),
    (31, "SYS"),
];

const RTMIN: i32 = 34;
const RTMAX: i32 = 64;

/// The name of signal `n` without `SIG` (`RTMIN+3`, `RTMAX-2` for the
/// real-time ones).
pub(super) fn signal_name(n: i32) -> Option<String> {
    if let Some((_, name)) = SIGNALS.iter().find(|(k, _)| *k == n) {
        return Some(name.to_string());
    }
    match n {
        RTMIN => Some("RTMIN".into()),
        RTMAX => Some("RTMAX".into()),
        n if (RTMIN + 1..=RTMIN + 15).contains(&n) => Some(format!("RTMIN+{}", n - RTMIN)),
        n if (RTMAX - 14..RTMAX).contains(&n) => Some(format!("RTMAX-{}", RTMAX - n)),
        _ => None,
    }
}

/// A signal given by number or name (any case, with or without `SIG`).
pub(super) fn signal_number(spec: &str) -> Option<i32> {
    if let Ok(n) = spec.parse::<i32>() {
        return signal_name(n).map(|_| n);
    }
    let upper = spec.to_ascii_uppercase();
    let bare = upper.strip_prefix("SIG").unwrap_or(&upper);
    (1..=RTMAX).find(|&n| signal_name(n).as_deref() == Some(bare))
}

/// `kill -l` / `trap -l`: every signal as ` 1) SIGHUP`, five to a line.
pub(super) fn signal_table() -> String {
    let mut out = String::new();
    let numbers = (1..=RTMAX).filter(|&n| signal_name(n).is_some());
    for (i, n) in numbers.enumerate() {
        let name = signal_name(n).unwrap_or_default();
        out.push_str(&format!("{n:2}) SIG{name}"));
        out.push(if (i + 1) % 5 == 0 { '\n' } else { '\t' });
    }
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out
}

/// Whether a signal's default action ends the process (the others are
/// ignored by default, or stop it, which a script cannot observe here).
fn terminates(n: i32) -> bool {
    !matches!(n, 17 | 18 | 19 | 20 | 21 | 22 | 23 | 28)
}

/// The key a trap is stored under: `EXIT`, `ERR`, `DEBUG`, `RETURN`, or a
/// signal name without `SIG`.
fn trap_key(spec: &str) -> Option<String> {
    let upper = spec.to_ascii_uppercase();
    let bare = upper.strip_prefix("SIG").unwrap_or(&upper);
    match bare {
        "EXIT" | "0" => Some("EXIT".into()),
        "ERR" | "DEBUG" | "RETURN" => Some(bare.to_string()),
        _ => signal_number(spec).and_then(signal_name),
    }
}

/// Sort order of `trap -p`: EXIT, signals by number, then the others.
fn trap_order(key: &str) -> i32 {
    match key {
        "EXIT" => 0,
        "DEBUG" => 1000,
        "ERR" => 1001,
        "RETURN" => 1002,
        _ => signal_number(key).unwrap_or(999),
    }
}

fn shown_name(key: &str) -> String {
    match key {
        "EXIT" | "DEBUG" | "ERR" | "RETURN" => key.to_string(),
        _ => format!("SIG{key}"),
    }
}

/// `trap [-lp] [[action] signal...]`
pub(super) fn trap(sh: &mut Shell, args: &[String]) -> R<i32> {
    // Options as bash's option parser reads them: letters combine (`-pl`),
    // `-l` wins over `-p`, and bash 5.2 knows no others (`-P` is 5.3's).
    let mut rest = &args[1..];
    let (mut print, mut list) = (false, false);
    while let Some(flag) = rest.first() {
        if flag == "--" {
            rest = &rest[1..];
            break;
        }
        let Some(letters) = flag.strip_prefix('-').filter(|l| !l.is_empty()) else {
            break;
        };
        for c in letters.chars() {
            match c {
                'l' => list = true,
                'p' => print = true,
                _ => {
                    sh.err_line(&format!("trap: -{c}: invalid option"))?;
                    sh.err_line("trap: usage: trap [-lp] [[arg] signal_spec ...]")?;
                    return Ok(2);
                }
            }
        }
        rest = &rest[1..];
    }
    if list {
        sh.out(&signal_table())?;
        return Ok(0);
    }
    if print || rest.is_empty() {
        return print_traps(sh, rest);
    }
    // `trap SIG...` (first operand a signal number, or a lone operand)
    // resets; `trap - SIG...` too; else the first operand is the action.
    let number = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let (action, sigs) = if rest.len() == 1 || number(&rest[0]) {
        (None, rest)
    } else if rest[0] == "-" {
        (None, &rest[1..])
    } else {
        (Some(rest[0].clone()), &rest[1..])
    };
    let mut status = 0;
    for spec in sigs {
        let Some(key) = trap_key(spec) else {
            sh.err_line(&format!("trap: {spec}: invalid signal specification"))?;
            status = 1;
            continue;
        };
        match &action {
            Some(a) => {
                sh.st.traps.insert(key, a.clone());
            }
            None => {
                sh.st.traps.remove(&key);
            }
        }
    }
    Ok(status)
}

fn print_traps(sh: &mut Shell, only: &[String]) -> R<i32> {
    // A subshell that set no trap of its own shows its parent's.
    let traps = if sh.st.traps.is_empty() {
        sh.st.inherited_traps.clone()
    } else {
        sh.st.traps.clone()
    };
    let mut keys: Vec<String> = Vec::new();
    let mut status = 0;
    if only.is_empty() {
        keys.extend(traps.keys().cloned());
    } else {
        for spec in only {
            match trap_key(spec) {
                Some(k) => keys.push(k),
                None => {
                    sh.err_line(&format!("trap: {spec}: invalid signal specification"))?;
                    status = 1;
                }
            }
        }
    }
    if only.is_empty() {
        keys.sort_by_key(|k| trap_order(k));
    }
    let mut text = String::new();
    for key in keys {
        if let Some(action) = traps.get(&key) {
            text.push_str(&format!(
                "trap -- {} {}\n",
                printf::single_quote(action),
                shown_name(&key)
            ));
        }
    }
    sh.out(&text)?;
    Ok(status)
}

impl Shell<'_> {
    /// Runs a trap's action with `$?` saved and restored; `LINENO` in it
    /// counts from `line_base`. An `exit` in it ends the shell as usual.
    fn run_trap_action(&mut self, action: &str, line_base: usize) -> R<()> {
        let status = self.status;
        let saved_base = std::mem::replace(&mut self.line_base, line_base);
        let saved_line = self.line;
        let r = self.run_source(action, None, SourceKind::Eval);
        self.line_base = saved_base;
        self.line = saved_line;
        match r {
            Ok(_) | Err(Flow::Return(_)) | Err(Flow::Error(_)) | Err(Flow::Fail(_)) => {
                self.status = status;
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    /// Runs the `ERR` trap after a failed command (the caller checked that
    /// `set -e` would apply here).
    pub(super) fn fire_err_trap(&mut self) -> R<()> {
        if self.in_err_trap {
            return Ok(());
        }
        let Some(action) = self.st.traps.get("ERR").cloned() else {
            return Ok(());
        };
        self.in_err_trap = true;
        let base = self.line.saturating_sub(1);
        let r = self.run_trap_action(&action, base);
        self.in_err_trap = false;
        r
    }

    /// Runs the `DEBUG` trap before a command whose text is `command`.
    pub(super) fn fire_debug_trap(&mut self, command: &str) -> R<()> {
        if self.in_debug_trap {
            return Ok(());
        }
        let Some(action) = self.st.traps.get("DEBUG").cloned() else {
            return Ok(());
        };
        self.bash_command = command.to_string();
        self.in_debug_trap = true;
        let base = self.line.saturating_sub(1);
        let r = self.run_trap_action(&action, base);
        self.in_debug_trap = false;
        r
    }

    /// Runs the `RETURN` trap, if set, as a function or sourced file returns.
    pub(super) fn fire_return_trap(&mut self) -> R<()> {
        let Some(action) = self.st.traps.get("RETURN").cloned() else {
            return Ok(());
        };
        let base = self.line.saturating_sub(1);
        self.run_trap_action(&action, base)
    }

    /// A signal sent to the shell itself: its trap runs, an ignored one
    /// (`trap '' SIG`) does nothing, else the default action applies.
    pub(super) fn deliver_signal(&mut self, n: i32) -> R<()> {
        let Some(name) = signal_name(n) else {
            return Ok(());
        };
        match self.st.traps.get(&name).cloned() {
            Some(action) if action.is_empty() => Ok(()),
            Some(action) => {
                let base = self.line.saturating_sub(1);
                self.run_trap_action(&action, base)
            }
            None if terminates(n) => Err(Flow::Abort(Abort::Exit(128 + n))),
            None => Ok(()),
        }
    }

    /// Traps as a subshell starts: actions reset, ignored signals kept;
    /// the parent's stay visible to `trap` until the subshell sets one.
    pub(super) fn reset_traps_for_subshell(&mut self) {
        let traps = std::mem::take(&mut self.st.traps);
        let (errtrace, functrace) = (self.st.opts.errtrace, self.st.opts.functrace);
        for (key, action) in &traps {
            let kept = match key.as_str() {
                "EXIT" => false,
                "ERR" => errtrace,
                "DEBUG" | "RETURN" => functrace,
                _ => action.is_empty(),
            };
            if kept {
                self.st.traps.insert(key.clone(), action.clone());
            }
        }
        if !traps.is_empty() {
            self.st.inherited_traps = traps;
        }
    }

    /// Hides the traps a function does not inherit; returns them for
    /// [`Shell::restore_function_traps`].
    pub(super) fn hide_traps_for_function(&mut self) -> Vec<(String, String)> {
        let mut hidden = Vec::new();
        let mut hide = |sh: &mut Self, key: &str| {
            if let Some(a) = sh.st.traps.remove(key) {
                hidden.push((key.to_string(), a));
            }
        };
        if !self.st.opts.functrace {
            hide(self, "DEBUG");
            hide(self, "RETURN");
        }
        if !self.st.opts.errtrace {
            hide(self, "ERR");
        }
        hidden
    }

    /// Puts back what [`Shell::hide_traps_for_function`] hid, unless the
    /// function set that trap itself (traps are global).
    pub(super) fn restore_function_traps(&mut self, hidden: Vec<(String, String)>) {
        for (key, action) in hidden {
            self.st.traps.entry(key).or_insert(action);
        }
    }
}
