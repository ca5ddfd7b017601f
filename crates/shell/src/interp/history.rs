//! The command history: the list an interactive shell records each
//! command line into (when `set -o history` is on, its default there),
//! `$HISTSIZE` and `$HISTFILESIZE`, the history file, and the `history` and
//! `fc -l`/`fc -s` builtins, as bash keeps them. A non-interactive shell
//! records nothing, but its builtins work on the list (`history -r` loads a
//! file). Editing a command with `fc` needs an editor, which the light shell
//! does not have: only listing and `fc -s` (re-run) are offered.

use stead_vfs::VPath;

use super::options::Table;
use super::{flags, Shell, SourceKind, R};

/// bash's default `$HISTSIZE` and `$HISTFILESIZE` in an interactive shell.
pub(super) const DEFAULT_SIZE: usize = 500;

/// The history list of one shell.
#[derive(Debug, Clone, Default)]
pub(crate) struct History {
    entries: Vec<String>,
    /// The number of the first entry minus one (entries dropped by
    /// `$HISTSIZE` keep the numbers of the rest).
    base: usize,
    /// Entries added since the history file was last written (bash's
    /// `history_lines_this_session`).
    unsaved: usize,
    /// Lines of the history file read or written so far (`history -n`).
    lines_in_file: usize,
}

impl History {
    fn push(&mut self, line: String) {
        self.entries.push(line);
        self.unsaved += 1;
    }

    /// Keeps the last `max` entries.
    fn stifle(&mut self, max: usize) {
        if self.entries.len() > max {
            let drop = self.entries.len() - max;
            self.entries.drain(..drop);
            self.base += drop;
        }
    }

    /// `history -c`: numbering starts again at 1.
    fn clear(&mut self) {
        self.base = 0;
        self.entries.clear();
        self.unsaved = 0;
    }

    /// The list's `(number, line)` pairs.
    fn numbered(&self) -> impl Iterator<Item = (usize, &str)> {
        self.entries
            .iter()
            .enumerate()
            .map(|(i, e)| (self.base + i + 1, e.as_str()))
    }
}

impl Shell<'_> {
    fn history_on(&mut self) -> bool {
        self.st.opts.get("history", Table::Set) == Some(true)
    }

    /// Records what an interactive shell read for one command: the blank
    /// lines before it are not history, comment lines are entries of
    /// their own, then the command's lines are one entry.
    pub(crate) fn record_history(&mut self, text: &str) {
        if !self.history_on() {
            return;
        }
        let mut rest = text.trim_end_matches('\n');
        while let Some((first, more)) = rest.split_once('\n') {
            let first_trimmed = first.trim();
            if !first_trimmed.is_empty() && !first_trimmed.starts_with('#') {
                break;
            }
            if !first_trimmed.is_empty() {
                self.add_history(first);
            }
            rest = more;
        }
        if !rest.trim().is_empty() {
            self.add_history(rest);
        }
    }

    fn add_history(&mut self, line: &str) {
        self.st.history.push(line.to_string());
        if let Some(max) = self.size_var("HISTSIZE") {
            self.st.history.stifle(max);
        }
    }

    /// A numeric history size variable, if set to a number.
    fn size_var(&mut self, name: &str) -> Option<usize> {
        self.get_scalar(name)?.trim().parse().ok()
    }

    /// `$HISTFILE` (its first element when it is an array).
    fn histfile(&mut self) -> Option<String> {
        self.get_scalar("HISTFILE").filter(|f| !f.is_empty())
    }

    /// After an assignment to `HISTSIZE` (the list shrinks) or
    /// `HISTFILESIZE` (the file is cut to its last lines), as bash does.
    pub(crate) fn history_size_changed(&mut self, name: &str) -> R<()> {
        match name {
            "HISTSIZE" => {
                if let Some(max) = self.size_var("HISTSIZE") {
                    self.st.history.stifle(max);
                }
            }
            _ => {
                if let (Some(max), Some(file)) = (self.size_var("HISTFILESIZE"), self.histfile()) {
                    self.truncate_history_file(&file, max)?;
                }
            }
        }
        Ok(())
    }

    fn history_path(&self, file: &str) -> Option<VPath> {
        VPath::parse_from(file, &self.st.cwd).ok()
    }

    fn read_history_file(&mut self, file: &str) -> Option<Vec<String>> {
        let path = self.history_path(file)?;
        let bytes = self.fs.read(&path).ok()?;
        let text = crate::bytes::decode(&bytes);
        Some(text.lines().map(str::to_string).collect())
    }

    fn write_history_file(&mut self, file: &str, lines: &[String], append: bool) -> R<bool> {
        let Some(path) = self.history_path(file) else {
            return Ok(false);
        };
        let mut data = String::new();
        for l in lines {
            data.push_str(l);
            data.push('\n');
        }
        self.budget.charge_write(data.len() as u64)?;
        let written = if append {
            self.fs.append(&path, data.as_bytes())
        } else {
            self.fs.write(&path, data.as_bytes())
        };
        Ok(written.is_ok())
    }

    fn truncate_history_file(&mut self, file: &str, max: usize) -> R<()> {
        if let Some(lines) = self.read_history_file(file) {
            if lines.len() > max {
                let keep = lines[lines.len() - max..].to_vec();
                self.write_history_file(file, &keep, false)?;
            }
        }
        Ok(())
    }

    /// An interactive shell starting: `$HISTFILE` (default
    /// `~/.bash_history`), `$HISTSIZE` and `$HISTFILESIZE` are set, and the
    /// file is read into the list.
    pub(crate) fn start_history(&mut self) -> R<()> {
        self.st.opts.set("history", Table::Set, true);
        if self.get_scalar("HISTFILE").is_none() {
            let home = self.get_scalar("HOME").unwrap_or_default();
            self.set_scalar("HISTFILE", format!("{home}/.bash_history"))?;
        }
        for name in ["HISTSIZE", "HISTFILESIZE"] {
            if self.get_scalar(name).is_none() {
                self.set_scalar(name, DEFAULT_SIZE.to_string())?;
            }
        }
        if let Some(file) = self.histfile() {
            if let Some(lines) = self.read_history_file(&file) {
                self.st.history.lines_in_file = lines.len();
                for l in lines {
                    self.st.history.entries.push(l);
                }
                if let Some(max) = self.size_var("HISTSIZE") {
                    self.st.history.stifle(max);
                }
            }
        }
        Ok(())
    }

    /// An interactive shell ending: the lines of this session are appended
    /// to the history file, or (when `$HISTSIZE` dropped some of them and
    /// `histappend` is off) the list replaces the file; then the file is cut
    /// to `$HISTFILESIZE`.
    pub(crate) fn save_history(&mut self) -> R<()> {
        let unsaved = self.st.history.unsaved;
        let Some(file) = self.histfile() else {
            return Ok(());
        };
        if unsaved == 0 || !self.history_on() {
            return Ok(());
        }
        let entries = self.st.history.entries.clone();
        let append = self.st.opts.get("histappend", Table::Shopt) == Some(true);
        if unsaved <= entries.len() || append {
            let from = entries.len() - unsaved.min(entries.len());
            self.write_history_file(&file, &entries[from..], true)?;
        } else {
            self.write_history_file(&file, &entries, false)?;
        }
        self.st.history.unsaved = 0;
        if let Some(max) = self.size_var("HISTFILESIZE") {
            self.truncate_history_file(&file, max)?;
        }
        Ok(())
    }

    /// The entry an offset names: `n` is entry number n, `-n` the n-th from
    /// the end; `None` when out of range.
    fn history_index(&self, offset: i64) -> Option<usize> {
        let h = &self.st.history;
        let len = h.entries.len() as i64;
        let i = if offset < 0 {
            len + offset
        } else {
            offset - h.base as i64 - 1
        };
        (0..len).contains(&i).then_some(i as usize)
    }
}

/// `history [n]`, `-c`, `-d offset[-offset]`, `-anrw [file]`, `-s args`,
/// `-p args`.
pub(super) fn history(sh: &mut Shell, args: &[String]) -> R<i32> {
    let parsed = match flags::parse(args, "canrwspd", "d") {
        Ok(parsed) => parsed,
        Err(bad) => return usage(sh, &bad.message()),
    };
    let mut flags = String::new();
    let mut delete = None;
    for (c, argument) in parsed.flags {
        match (c, argument) {
            ('d', Some(offset)) => delete = Some(offset.to_string()),
            (c, _) => flags.push(c),
        }
    }
    let rest = parsed.operands;
    if flags.contains('c') {
        sh.st.history.clear();
    }
    if let Some(d) = delete {
        return delete_entries(sh, &d);
    }
    if flags.contains('s') {
        // The `history -s` line itself is replaced by its arguments.
        if sh.history_on() {
            sh.st.history.entries.pop();
        }
        sh.st.history.push(rest.join(" "));
        return Ok(0);
    }
    if flags.contains('p') {
        let text: String = rest.iter().map(|a| format!("{a}\n")).collect();
        sh.out(&text)?;
        return Ok(0);
    }
    if let Some(mode) = flags.chars().find(|c| "anrw".contains(*c)) {
        return history_file(sh, mode, rest.first().cloned());
    }
    if flags.contains('c') {
        return Ok(0);
    }
    let count = match rest {
        [] => None,
        [n] => match n.strip_prefix('+').unwrap_or(n).parse::<usize>() {
            Ok(n) => Some(n),
            Err(_) => {
                sh.err_line(&format!("history: {n}: numeric argument required"))?;
                return Ok(1);
            }
        },
        _ => {
            sh.err_line("history: too many arguments")?;
            return Ok(1);
        }
    };
    let listed: Vec<(usize, &str)> = sh.st.history.numbered().collect();
    let from = count.map_or(0, |n| listed.len().saturating_sub(n));
    let text: String = listed[from..]
        .iter()
        .map(|(n, l)| format!("{n:>5}  {l}\n"))
        .collect();
    sh.out(&text)?;
    Ok(0)
}

fn usage(sh: &mut Shell, message: &str) -> R<i32> {
    sh.err_line(&format!("history: {message}"))?;
    sh.err_line(
        "history: usage: history [-c] [-d offset] [n] or history -anrw [filename] or history -ps arg [arg...]",
    )?;
    Ok(2)
}

/// `history -d offset` or `-d start-end`.
fn delete_entries(sh: &mut Shell, spec: &str) -> R<i32> {
    let parse = |s: &str| s.parse::<i64>().ok();
    let range = match spec.split_once('-').filter(|(a, _)| !a.is_empty()) {
        Some((a, b)) => parse(a).zip(parse(b)),
        None => parse(spec).map(|n| (n, n)),
    };
    let indices = range.and_then(|(a, b)| Some((sh.history_index(a)?, sh.history_index(b)?)));
    match indices {
        Some((a, b)) if a <= b => {
            sh.st.history.entries.drain(a..=b);
            Ok(0)
        }
        _ => {
            sh.err_line(&format!("history: {spec}: history position out of range"))?;
            Ok(1)
        }
    }
}

/// `history -a`, `-n`, `-r` or `-w` with `file` or `$HISTFILE`.
fn history_file(sh: &mut Shell, mode: char, file: Option<String>) -> R<i32> {
    let file = file.or_else(|| sh.histfile());
    match mode {
        'a' => {
            let h = &sh.st.history;
            let n = h.unsaved.min(h.entries.len());
            if n == 0 {
                return Ok(0);
            }
            let Some(file) = file else {
                return Ok(1);
            };
            let lines = h.entries[h.entries.len() - n..].to_vec();
            if !sh.write_history_file(&file, &lines, true)? {
                return Ok(1);
            }
            sh.st.history.unsaved = 0;
            sh.st.history.lines_in_file += n;
            Ok(0)
        }
        'w' => {
            let Some(file) = file else {
                return Ok(1);
            };
            let lines = sh.st.history.entries.clone();
            if !sh.write_history_file(&file, &lines, false)? {
                return Ok(1);
            }
            sh.st.history.unsaved = 0;
            sh.st.history.lines_in_file = lines.len();
            Ok(0)
        }
        _ => {
            let Some(lines) = file.and_then(|f| sh.read_history_file(&f)) else {
                return Ok(1);
            };
            let skip = if mode == 'n' {
                sh.st.history.lines_in_file
            } else {
                0
            };
            let new: Vec<String> = lines.iter().skip(skip).cloned().collect();
            sh.st.history.lines_in_file = lines.len();
            sh.st.history.entries.extend(new);
            if let Some(max) = sh.size_var("HISTSIZE") {
                sh.st.history.stifle(max);
            }
            Ok(0)
        }
    }
}

/// `fc -l [-nr] [first [last]]` lists; `fc -s [old=new] [command]` runs a
/// command again. Without them `fc` edits, which needs an editor.
pub(super) fn fc(sh: &mut Shell, args: &[String]) -> R<i32> {
    let (mut list, mut numbers, mut reverse, mut rerun) = (false, true, false, false);
    let mut i = 1;
    while let Some(a) = args.get(i) {
        let is_flag =
            a.starts_with('-') && a.len() > 1 && !a[1..].starts_with(|c: char| c.is_ascii_digit());
        if a == "--" {
            i += 1;
            break;
        }
        if !is_flag {
            break;
        }
        for c in a[1..].chars() {
            match c {
                'l' => list = true,
                'n' => numbers = false,
                'r' => reverse = true,
                's' => rerun = true,
                'e' => {
                    i += 1;
                    if args.get(i).map(String::as_str) == Some("-") {
                        rerun = true;
                    }
                }
                _ => {
                    sh.err_line(&format!("fc: -{c}: invalid option"))?;
                    sh.err_line("fc: usage: fc [-e ename] [-lnr] [first] [last] or fc -s [pat=rep] [command]")?;
                    return Ok(2);
                }
            }
        }
        i += 1;
    }
    let rest = &args[i..];
    // The `fc` line itself, when it was recorded, is not one of the commands.
    let own = usize::from(sh.history_on() && !sh.st.history.entries.is_empty());
    let len = sh.st.history.entries.len();
    let last = len.saturating_sub(own);
    let base = sh.st.history.base;
    // An offset names an entry number; a negative one counts back from
    // the `fc` command.
    let index = |n: i64| -> usize {
        let current = (base + len + 1 - own) as i64;
        let number = if n < 0 { current + n } else { n };
        (number - base as i64 - 1).clamp(0, last.max(1) as i64 - 1) as usize
    };
    if rerun {
        return fc_rerun(sh, rest, last);
    }
    if !list {
        sh.err_line("fc: editing a command needs an editor, which the light shell does not have (use fc -l or fc -s)")?;
        return Ok(1);
    }
    if last == 0 {
        return Ok(0);
    }
    let parse = |s: &String| s.parse::<i64>().ok();
    let (first, end) = match rest {
        [] => (last.saturating_sub(16), last - 1),
        [a] => match parse(a) {
            Some(a) => (index(a), last - 1),
            None => return history_spec_error(sh),
        },
        [a, b, ..] => match (parse(a), parse(b)) {
            (Some(a), Some(b)) => (index(a), index(b)),
            _ => return history_spec_error(sh),
        },
    };
    let (lo, hi) = if first > end {
        reverse = true;
        (end, first)
    } else {
        (first, end)
    };
    let mut lines: Vec<String> = (lo..=hi)
        .map(|i| {
            let line = &sh.st.history.entries[i];
            if numbers {
                format!("{}\t {line}\n", base + i + 1)
            } else {
                format!("\t {line}\n")
            }
        })
        .collect();
    if reverse {
        lines.reverse();
    }
    sh.out(&lines.concat())?;
    Ok(0)
}

fn history_spec_error(sh: &mut Shell) -> R<i32> {
    sh.err_line("fc: history specification out of range")?;
    Ok(1)
}

/// `fc -s [old=new] [prefix]`: the last command (or the last starting with
/// `prefix`), with `old` replaced by `new`, echoed and run.
fn fc_rerun(sh: &mut Shell, rest: &[String], last: usize) -> R<i32> {
    let (subst, prefix) = match rest.first().and_then(|a| a.split_once('=')) {
        Some((old, new)) => (Some((old.to_string(), new.to_string())), rest.get(1)),
        None => (None, rest.first()),
    };
    let found = sh.st.history.entries[..last]
        .iter()
        .rev()
        .find(|e| prefix.is_none_or(|p| e.starts_with(p.as_str())))
        .cloned();
    let Some(mut command) = found else {
        return history_spec_error(sh);
    };
    if let Some((old, new)) = subst {
        command = command.replacen(&old, &new, 1);
    }
    if let Some(entry) = sh.st.history.entries.last_mut() {
        entry.clone_from(&command);
    }
    sh.write_fd(2, format!("{command}\n").as_bytes())?;
    sh.run_source(&command, None, SourceKind::Eval)
}
