//! `grep`, `egrep` and `fgrep`, with GNU grep's output and exit status.
//!
//! Patterns are translated once into one `regex::bytes` matcher (see
//! [`posix`]), and lines are matched as bytes, so files that are not UTF-8
//! still work. A whole-file `is_match` runs before any line splitting: most
//! files an agent greps do not match at all, and the crate's literal
//! prefilters make that check nearly free. `-P` patterns go to the `regex`
//! crate as written: its syntax is Perl-like, without look-around or
//! back-references.

pub(crate) mod backref;
mod options;
pub(crate) mod posix;

use std::collections::VecDeque;

use globset::{Glob, GlobMatcher};
use stead_vfs::{Kind, Node, VPath};

use super::{Ctx, Table};
use crate::limits::Abort;
use backref::Compiled;
use options::{Dialect, Options, Report};
use posix::Syntax;

pub(crate) const UTILITIES: Table = &[("grep", grep), ("egrep", egrep), ("fgrep", fgrep)];

/// Read as empty even when the workspace has no `/dev`.
const DEV_NULL: &str = "/dev/null";

/// How deep `-R` follows directory symlinks before giving up on a cycle.
const MAX_DEPTH: usize = 64;

/// Files found by a recursive walk are read together, up to this many files
/// or bytes at a time: each SQL statement costs more than the bytes it reads.
const BATCH_FILES: usize = 256;
const BATCH_BYTES: u64 = 8 << 20;

fn grep(ctx: &mut Ctx<'_>, argv: &[String]) -> Result<i32, Abort> {
    run(ctx, &argv[1..], None)
}

fn egrep(ctx: &mut Ctx<'_>, argv: &[String]) -> Result<i32, Abort> {
    run(ctx, &argv[1..], Some(Dialect::Extended))
}

fn fgrep(ctx: &mut Ctx<'_>, argv: &[String]) -> Result<i32, Abort> {
    run(ctx, &argv[1..], Some(Dialect::Fixed))
}

fn run(ctx: &mut Ctx<'_>, args: &[String], dialect: Option<Dialect>) -> Result<i32, Abort> {
    if let Some(status) = info_option(ctx, args, "grep (GNU grep) 3.8\n", USAGE)? {
        return Ok(status);
    }
    let mut opts = match Options::parse(args) {
        Ok(opts) => opts,
        Err(message) => return usage(ctx, &message),
    };
    if let Some(dialect) = dialect {
        opts.dialect = dialect;
    }
    let Some(patterns) = collect_patterns(ctx, &opts)? else {
        return Ok(2);
    };
    let matcher = match Matcher::new(&opts, &patterns) {
        Ok(matcher) => matcher,
        Err(message) => {
            ctx.error("grep", &message)?;
            return Ok(2);
        }
    };
    let filters = match Filters::new(&opts) {
        Ok(filters) => filters,
        Err(message) => {
            ctx.error("grep", &message)?;
            return Ok(2);
        }
    };
    if matcher.re.is_none() && !opts.invert {
        // No patterns select nothing; GNU does not even read the files.
        return Ok(1);
    }
    let mut search = Search {
        ctx,
        opts: &opts,
        matcher,
        filters,
        with_filename: false,
        selected: false,
        errors: false,
        done: false,
        last_count: 0,
        stdin_used: false,
        last_output: None,
        file_id: 0,
        pending: Vec::new(),
        pending_bytes: 0,
    };
    search.run_all()
}

const USAGE: &str = "Usage: grep [OPTION]... PATTERNS [FILE]...\n";

fn usage(ctx: &mut Ctx<'_>, message: &str) -> Result<i32, Abort> {
    if message != "usage" {
        ctx.error("grep", message)?;
    }
    ctx.stderr.write_str(USAGE)?;
    ctx.stderr
        .write_str("Try 'grep --help' for more information.\n")?;
    Ok(2)
}

/// `--version` and `--help` (before any `--`): print and exit 0. Shared with `sed`.
pub(super) fn info_option(
    ctx: &mut Ctx<'_>,
    args: &[String],
    version: &str,
    usage: &str,
) -> Result<Option<i32>, Abort> {
    let text = match info_request(args) {
        Some(Info::Version) => version,
        Some(Info::Help) => usage,
        None => return Ok(None),
    };
    ctx.stdout.write_str(text)?;
    Ok(Some(0))
}

/// What `--version` or `--help` asks for.
pub(super) enum Info {
    Version,
    Help,
}

/// The first of `--version` and `--help` before `--`, if any: it answers
/// instead of running.
pub(super) fn info_request(args: &[String]) -> Option<Info> {
    args.iter()
        .take_while(|a| *a != "--")
        .find_map(|arg| match arg.as_str() {
            "--version" => Some(Info::Version),
            "--help" => Some(Info::Help),
            _ => None,
        })
}

/// Whether `grep` accepts `argv`'s options, as it reads them when it runs.
fn check_options(argv: &[String]) -> Result<(), String> {
    match info_request(&argv[1..]) {
        Some(_) => Ok(()),
        None => Options::parse(&argv[1..]).map(drop),
    }
}

/// How `auto` checks these utilities' options (see `utils::check_options`).
pub(crate) const OPTION_CHECKS: super::Checks = &[
    ("grep", check_options),
    ("egrep", check_options),
    ("fgrep", check_options),
];

/// Every pattern from `-e`, `-f` and the first operand, one per line.
fn collect_patterns(ctx: &mut Ctx<'_>, opts: &Options) -> Result<Option<Vec<String>>, Abort> {
    let mut patterns: Vec<String> = Vec::new();
    for pattern in &opts.patterns {
        patterns.extend(pattern.split('\n').map(str::to_string));
    }
    for file in &opts.pattern_files {
        if file == DEV_NULL {
            continue;
        }
        let Some(bytes) = ctx.read_input("grep", file)? else {
            return Ok(None);
        };
        let text = String::from_utf8_lossy(&bytes);
        let text = text.strip_suffix('\n').unwrap_or(&text);
        if !bytes.is_empty() {
            patterns.extend(text.split('\n').map(str::to_string));
        }
    }
    Ok(Some(patterns))
}

/// The compiled patterns.
struct Matcher {
    /// `None` when there are no patterns at all (`-f /dev/null`): nothing matches.
    re: Option<Compiled>,
}

impl Matcher {
    fn new(opts: &Options, patterns: &[String]) -> Result<Matcher, String> {
        if patterns.is_empty() {
            return Ok(Matcher { re: None });
        }
        let mut alternatives = Vec::with_capacity(patterns.len());
        for pattern in patterns {
            let translated = match opts.dialect {
                Dialect::Fixed => regex::escape(pattern),
                Dialect::Perl => pattern.clone(),
                Dialect::Basic => posix::translate(pattern, Syntax::Basic)?,
                Dialect::Extended => posix::translate(pattern, Syntax::Extended)?,
            };
            alternatives.push(format!("(?:{translated})"));
        }
        let mut source = String::from("(?m)");
        if opts.ignore_case {
            source.push_str("(?i)");
        }
        let body = alternatives.join("|");
        if opts.line {
            source.push_str(&format!("^(?:{body})$"));
        } else if opts.word {
            source.push_str(&format!(r"\b{{start-half}}(?:{body})\b{{end-half}}"));
        } else {
            source.push_str(&body);
        }
        let re = Compiled::new("", &source)?;
        Ok(Matcher { re: Some(re) })
    }

    fn is_match(&self, haystack: &[u8]) -> bool {
        self.re.as_ref().is_some_and(|re| re.is_match(haystack))
    }

    /// Whether a whole-buffer check is cheap (not for backtracking).
    fn can_prefilter(&self) -> bool {
        !matches!(self.re, Some(Compiled::Slow(_)))
    }
}

/// `--include`, `--exclude` and `--exclude-dir`.
struct Filters {
    include: Vec<GlobMatcher>,
    exclude: Vec<GlobMatcher>,
    exclude_dir: Vec<GlobMatcher>,
}

impl Filters {
    fn new(opts: &Options) -> Result<Filters, String> {
        let compile = |globs: &[String]| -> Result<Vec<GlobMatcher>, String> {
            globs
                .iter()
                .map(|g| {
                    Glob::new(g)
                        .map(|g| g.compile_matcher())
                        .map_err(|e| format!("{g}: {e}"))
                })
                .collect()
        };
        Ok(Filters {
            include: compile(&opts.include)?,
            exclude: compile(&opts.exclude)?,
            exclude_dir: compile(&opts.exclude_dir)?,
        })
    }

    fn file_allowed(&self, name: &str) -> bool {
        let name = name.rsplit('/').next().unwrap_or(name);
        if self.exclude.iter().any(|g| g.is_match(name)) {
            return false;
        }
        self.include.is_empty() || self.include.iter().any(|g| g.is_match(name))
    }

    fn dir_allowed(&self, name: &str) -> bool {
        !self.exclude_dir.iter().any(|g| g.is_match(name))
    }
}

/// One `grep` run over all its operands.
struct Search<'c, 'a> {
    ctx: &'c mut Ctx<'a>,
    opts: &'c Options,
    matcher: Matcher,
    filters: Filters,
    with_filename: bool,
    /// Some line was selected somewhere.
    selected: bool,
    /// Some file could not be read.
    errors: bool,
    /// `-q` found its line: stop everything.
    done: bool,
    /// Lines selected in the last buffer searched.
    last_count: u64,
    stdin_used: bool,
    /// (file number, line index) of the last line printed, for `--`.
    last_output: Option<(usize, usize)>,
    file_id: usize,
    /// Files met by the walk and not searched yet, in order.
    pending: Vec<Pending>,
    /// Their total size.
    pending_bytes: u64,
}

/// A file queued by the recursive walk.
struct Pending {
    path: VPath,
    display: String,
    node: Node,
}

/// A line of the current buffer: index and byte range (without the newline).
#[derive(Clone, Copy)]
struct Line {
    index: usize,
    start: usize,
    end: usize,
}

impl Search<'_, '_> {
    fn run_all(&mut self) -> Result<i32, Abort> {
        let mut operands = self.opts.operands.clone();
        let implicit_dot = operands.is_empty() && self.opts.recursive;
        if operands.is_empty() {
            operands.push(if implicit_dot { "." } else { "-" }.to_string());
        }
        // GNU names files when there are several operands, or when -r
        // walks a directory (decided in `operand`).
        self.with_filename = self.opts.with_filename.unwrap_or(operands.len() > 1);
        if implicit_dot {
            self.with_filename = self.opts.with_filename.unwrap_or(true);
            // GNU prints paths under an implicit `.` without the `./`.
            self.walk(&self.ctx.cwd.clone(), "")?;
        } else {
            for operand in &operands {
                self.operand(operand)?;
                if self.done {
                    break;
                }
            }
        }
        Ok(if self.done || (self.selected && !self.errors) {
            0
        } else if self.errors {
            2
        } else {
            1
        })
    }

    fn operand(&mut self, operand: &str) -> Result<(), Abort> {
        if operand == "-" {
            // Standard input can be read once; a second `-` finds it at its end.
            let stdin = if std::mem::replace(&mut self.stdin_used, true) {
                crate::io::Stdin::complete(&[])
            } else {
                self.ctx.stdin
            };
            self.search_buffer("(standard input)", stdin.available())?;
            // `-q` and `-m` may stop before the end; otherwise grep read it all.
            if !(self.done || self.opts.max_count.is_some_and(|m| self.last_count >= m)) {
                stdin.end()?;
            }
            return Ok(());
        }
        if operand == DEV_NULL {
            return self.search_buffer(operand, &[]);
        }
        let path = match self.ctx.path(operand) {
            Ok(path) => path,
            Err(error) => return self.fs_error(operand, &error),
        };
        let node = match self.ctx.fs.stat(&path, true) {
            Ok(node) => node,
            Err(error) => return self.fs_error(operand, &error),
        };
        if node.kind == Kind::Dir {
            if self.opts.recursive {
                // --exclude-dir applies to directory operands too, as in GNU.
                let trimmed = operand.trim_end_matches('/');
                let base = trimmed.rsplit('/').next().unwrap_or(trimmed);
                if !self.filters.dir_allowed(base) || !self.filters.dir_allowed(trimmed) {
                    return Ok(());
                }
                self.with_filename = self.opts.with_filename.unwrap_or(true);
                return self.walk(&path, operand);
            }
            return self.message(&format!("{operand}: Is a directory"));
        }
        if !self.filters.file_allowed(operand) {
            return Ok(());
        }
        self.search_file(&path, operand)
    }

    /// Searches every file under `dir`, shown as `display` (empty for the
    /// implicit `.`), in name order.
    fn walk(&mut self, dir: &VPath, display: &str) -> Result<(), Abort> {
        let walked = self.walk_dir(dir, display, 0);
        // Whatever stopped the walk, the files met before it are searched,
        // as they would have been one by one.
        self.flush()?;
        walked
    }

    /// Queues every file under `dir` (see [`Search::walk`]); searches the
    /// queue whenever it fills and before any message, so output keeps the
    /// walk's order.
    fn walk_dir(&mut self, dir: &VPath, display: &str, depth: usize) -> Result<(), Abort> {
        let entries = match self.ctx.fs.list(dir) {
            Ok(entries) => entries,
            Err(error) => {
                self.flush()?;
                if self.done {
                    return Ok(());
                }
                return self.fs_error(display, &error);
            }
        };
        for entry in entries {
            self.ctx.budget.charge_iteration()?;
            let shown = child_display(display, &entry.name);
            let path = dir.join(&entry.name);
            let node = match entry.node.kind {
                Kind::Symlink if !self.opts.dereference => continue,
                Kind::Symlink => match self.ctx.fs.stat(&path, true) {
                    Ok(node) => node,
                    Err(error) => {
                        self.flush()?;
                        if self.done {
                            break;
                        }
                        self.fs_error(&shown, &error)?;
                        continue;
                    }
                },
                _ => entry.node,
            };
            if node.kind == Kind::Dir {
                if self.filters.dir_allowed(&entry.name) && depth < MAX_DEPTH {
                    self.walk_dir(&path, &shown, depth + 1)?;
                }
            } else if self.filters.file_allowed(&entry.name) {
                self.queue(path, shown, node)?;
            }
            if self.done {
                break;
            }
        }
        Ok(())
    }

    /// Queues a file of the walk, searching the queue once it is full.
    fn queue(&mut self, path: VPath, display: String, node: Node) -> Result<(), Abort> {
        self.pending_bytes += node.size;
        self.pending.push(Pending {
            path,
            display,
            node,
        });
        if self.pending.len() >= BATCH_FILES || self.pending_bytes >= BATCH_BYTES {
            self.flush()?;
        }
        Ok(())
    }

    /// Searches the queued files, in order, reading them all at once.
    fn flush(&mut self) -> Result<(), Abort> {
        let batch = std::mem::take(&mut self.pending);
        self.pending_bytes = 0;
        if batch.is_empty() || self.done {
            return Ok(());
        }
        let nodes: Vec<Node> = batch.iter().map(|file| file.node.clone()).collect();
        match self.ctx.fs.read_many(&nodes) {
            Ok(contents) => {
                for (file, bytes) in batch.iter().zip(contents) {
                    self.search_buffer(&file.display, &bytes)?;
                    if self.done {
                        break;
                    }
                }
            }
            // One by one, for each file's own error.
            Err(_) => {
                for file in &batch {
                    self.search_file(&file.path, &file.display)?;
                    if self.done {
                        break;
                    }
                }
            }
        }
        Ok(())
    }

    fn search_file(&mut self, path: &VPath, display: &str) -> Result<(), Abort> {
        match self.ctx.fs.read(path) {
            Ok(bytes) => self.search_buffer(display, &bytes),
            Err(error) => self.fs_error(display, &error),
        }
    }

    fn fs_error(&mut self, operand: &str, error: &stead_vfs::VfsError) -> Result<(), Abort> {
        let text = super::strerror(error);
        self.message(&format!("{operand}: {text}"))
    }

    /// Reports a file error (unless `-s`) and remembers it for the status.
    fn message(&mut self, message: &str) -> Result<(), Abort> {
        self.errors = true;
        if self.opts.no_messages {
            return Ok(());
        }
        self.ctx.error("grep", message)
    }

    /// Searches one file's content, printing what the options ask for.
    fn search_buffer(&mut self, name: &str, buf: &[u8]) -> Result<(), Abort> {
        self.file_id += 1;
        let extra = self.matcher.re.as_ref().map_or(0, |re| re.extra_work(buf));
        self.ctx
            .budget
            .charge_cpu((buf.len() as u64).saturating_add(extra))?;
        let binary = !self.opts.text && buf.contains(&0);
        if binary && self.opts.skip_binary {
            return Ok(());
        }
        // Whole-buffer check first: a file without a match needs no line splitting.
        let prefilter = !self.opts.invert && self.matcher.can_prefilter();
        let count = if prefilter && !self.matcher.is_match(buf) {
            0
        } else {
            self.scan_lines(name, buf, binary)?
        };
        self.last_count = count;
        if count > 0 {
            self.selected = true;
        }
        self.report_file(name, count)
    }

    /// Prints the per-file summary of `-c`, `-l` and `-L`.
    fn report_file(&mut self, name: &str, count: u64) -> Result<(), Abort> {
        match self.opts.report {
            Report::Count if self.with_filename => {
                let sep = if self.opts.null { '\0' } else { ':' };
                self.ctx.stdout.write_str(&format!("{name}{sep}{count}\n"))
            }
            Report::Count => self.ctx.stdout.write_str(&format!("{count}\n")),
            Report::FilesWith if count > 0 => self.write_name(name),
            Report::FilesWithout if count == 0 => self.write_name(name),
            _ => Ok(()),
        }
    }

    /// A file name for `-l`/`-L`, ended by a newline or (`-Z`) a NUL.
    fn write_name(&mut self, name: &str) -> Result<(), Abort> {
        let end = if self.opts.null { '\0' } else { '\n' };
        self.ctx.stdout.write_str(&format!("{name}{end}"))
    }

    /// Walks the lines of `buf`; returns how many were selected.
    fn scan_lines(&mut self, name: &str, buf: &[u8], binary: bool) -> Result<u64, Abort> {
        let max = self.opts.max_count.unwrap_or(u64::MAX);
        let printing = self.opts.report == Report::Lines && !binary;
        let context = printing && !self.opts.only_matching;
        let (after, before) = if context {
            (self.opts.after, self.opts.before)
        } else {
            (0, 0)
        };
        let mut count = 0u64;
        let mut pending_after = 0usize;
        let mut held: VecDeque<Line> = VecDeque::with_capacity(before);
        let compiled = self.matcher.re.clone();
        let mut candidates = Candidates::new(compiled.as_ref(), buf);
        for line in lines(buf) {
            self.ctx
                .budget
                .charge_cpu((line.end - line.start + 1) as u64)?;
            let text = &buf[line.start..line.end];
            if count >= max {
                if pending_after == 0 {
                    break;
                }
                pending_after -= 1;
                self.print_line(name, buf, line, false)?;
                continue;
            }
            let matched = match candidates.check(line) {
                Some(known) => known,
                None => self.matcher.is_match(text),
            };
            if matched == self.opts.invert {
                if pending_after > 0 {
                    pending_after -= 1;
                    self.print_line(name, buf, line, false)?;
                } else if before > 0 {
                    if held.len() == before {
                        held.pop_front();
                    }
                    held.push_back(line);
                }
                continue;
            }
            count += 1;
            match self.opts.report {
                Report::Quiet => {
                    self.done = true;
                    return Ok(count);
                }
                Report::FilesWith | Report::FilesWithout => return Ok(count),
                Report::Count => continue,
                Report::Lines => {}
            }
            if binary {
                self.ctx
                    .stderr
                    .write_str(&format!("grep: {name}: binary file matches\n"))?;
                return Ok(count);
            }
            while let Some(held_line) = held.pop_front() {
                self.print_line(name, buf, held_line, false)?;
            }
            self.print_line(name, buf, line, true)?;
            pending_after = after;
        }
        Ok(count)
    }

    /// Prints a selected (`:`) or context (`-`) line, with `--` before a
    /// new context group.
    fn print_line(
        &mut self,
        name: &str,
        buf: &[u8],
        line: Line,
        selected: bool,
    ) -> Result<(), Abort> {
        if self.opts.after > 0 || self.opts.before > 0 {
            let here = (self.file_id, line.index);
            let adjacent = self
                .last_output
                .is_some_and(|(file, index)| file == here.0 && index + 1 == here.1);
            if self.last_output.is_some() && !adjacent && !self.opts.only_matching {
                self.ctx.stdout.write_str("--\n")?;
            }
            self.last_output = Some(here);
        }
        let sep = if selected { ':' } else { '-' };
        if self.opts.only_matching {
            return if selected && !self.opts.invert {
                self.print_matches(name, buf, line)
            } else {
                Ok(())
            };
        }
        let prefix = self.prefix(name, line.index, line.start, sep);
        self.ctx.stdout.write_str(&prefix)?;
        self.ctx.stdout.write(&buf[line.start..line.end])?;
        self.ctx.stdout.write(b"\n")
    }

    /// `-o`: each non-empty match on its own line.
    fn print_matches(&mut self, name: &str, buf: &[u8], line: Line) -> Result<(), Abort> {
        let Some(re) = self.matcher.re.clone() else {
            return Ok(());
        };
        let text = &buf[line.start..line.end];
        let mut spans = Vec::new();
        re.for_each_match(text, true, &mut |groups| {
            spans.extend(groups[0].filter(|(s, e)| s < e));
            true
        });
        for (start, end) in spans {
            let prefix = self.prefix(name, line.index, line.start + start, ':');
            self.ctx.stdout.write_str(&prefix)?;
            self.ctx.stdout.write(&text[start..end])?;
            self.ctx.stdout.write(b"\n")?;
        }
        Ok(())
    }

    fn prefix(&self, name: &str, index: usize, offset: usize, sep: char) -> String {
        let mut prefix = String::new();
        if self.with_filename {
            prefix.push_str(name);
            prefix.push(if self.opts.null { '\0' } else { sep });
        }
        if self.opts.line_number {
            prefix.push_str(&format!("{}{sep}", index + 1));
        }
        if self.opts.byte_offset {
            prefix.push_str(&format!("{offset}{sep}"));
        }
        prefix
    }
}

/// Skips runs of lines that cannot match: one forward search finds where
/// the next match ends, and only the line holding that end is tested. Each
/// search starts past the previous one, so the whole file is scanned once.
struct Candidates<'r, 'b> {
    re: Option<&'r regex::bytes::Regex>,
    buf: &'b [u8],
    /// `None`: not searched yet; `Some(None)`: no match left.
    next_end: Option<Option<usize>>,
    /// Where the search that found `next_end` started.
    from: usize,
}

impl<'r, 'b> Candidates<'r, 'b> {
    fn new(compiled: Option<&'r Compiled>, buf: &'b [u8]) -> Self {
        let re = match compiled {
            Some(Compiled::Fast(re, _)) => Some(&**re),
            _ => None,
        };
        Candidates {
            re,
            buf,
            next_end: None,
            from: 0,
        }
    }

    /// Whether `line` matches, when known without testing the line alone.
    fn check(&mut self, line: Line) -> Option<bool> {
        let re = self.re?;
        if self
            .next_end
            .is_none_or(|end| end.is_some_and(|e| e < line.start))
        {
            self.next_end = Some(re.shortest_match_at(self.buf, line.start));
            self.from = line.start;
        }
        match self.next_end {
            // A match inside this line would end within it, no earlier than `e`.
            Some(Some(e)) if e <= line.end => {
                // Found from this line's start and ending in it: it lies in it.
                (self.from == line.start).then_some(true)
            }
            _ => Some(false),
        }
    }
}

/// How a file found while recursing is shown: joined to its directory's
/// display name (bare under the implicit `.`).
fn child_display(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else if dir.ends_with('/') {
        format!("{dir}{name}")
    } else {
        format!("{dir}/{name}")
    }
}

/// The lines of `buf`, without their newlines; a final line without one counts.
fn lines(buf: &[u8]) -> impl Iterator<Item = Line> + '_ {
    let mut start = 0;
    let mut index = 0;
    std::iter::from_fn(move || {
        if start >= buf.len() {
            return None;
        }
        let end = buf[start..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(buf.len(), |p| start + p);
        let line = Line { index, start, end };
        start = end + 1;
        index += 1;
        Some(line)
    })
}

#[cfg(test)]
pub(super) mod tests;
