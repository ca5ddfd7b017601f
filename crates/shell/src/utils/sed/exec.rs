//! Running a parsed sed program over an input stream.
//!
//! One [`Engine`] per `sed` run (its hold space outlives each `-i` file, as
//! in GNU): it owns the hold space, the range states and the queue of text that `a`
//! and `r` print at the end of a cycle. Output is collected in a buffer and
//! handed to stdout in chunks, so the output cap still stops a runaway
//! script early; `w` files are written once, at the end.

use std::collections::BTreeMap;

use crate::utils::search::backref::{Compiled, Groups};

use super::parse::{Address, Cmd, Command, End, Pattern, Piece, Subst};
use crate::limits::{Abort, Budget, LimitKind};
use crate::utils::Ctx;

/// Bytes of output collected before they are handed to stdout.
const OUTPUT_CHUNK: usize = 64 << 10;

/// The input lines of one stream (all files, or one file with `-s`/`-i`).
pub(super) struct Stream {
    pub buffers: Vec<(String, Vec<u8>)>,
    pub file: usize,
    pub pos: usize,
    pub delimiter: u8,
}

/// A line read from the input: content and whether its delimiter was there.
struct Line {
    text: Vec<u8>,
    terminated: bool,
}

impl Stream {
    pub(super) fn new(buffers: Vec<(String, Vec<u8>)>, delimiter: u8) -> Self {
        Stream {
            buffers,
            file: 0,
            pos: 0,
            delimiter,
        }
    }

    /// Skips finished buffers; false when no input remains.
    fn has_more(&mut self) -> bool {
        while self.file < self.buffers.len() && self.pos >= self.buffers[self.file].1.len() {
            self.file += 1;
            self.pos = 0;
        }
        self.file < self.buffers.len()
    }

    fn next_line(&mut self) -> Option<Line> {
        if !self.has_more() {
            return None;
        }
        let data = &self.buffers[self.file].1;
        let rest = &data[self.pos..];
        let (text, terminated) = match rest.iter().position(|&b| b == self.delimiter) {
            Some(at) => (rest[..at].to_vec(), true),
            None => (rest.to_vec(), false),
        };
        self.pos += text.len() + terminated as usize;
        Some(Line { text, terminated })
    }

    fn file_name(&self) -> &str {
        let index = self.file.min(self.buffers.len().saturating_sub(1));
        self.buffers
            .get(index)
            .map_or("-", |(name, _)| name.as_str())
    }
}

/// What the `-n`, `-z` and `l` settings say.
#[derive(Debug, Clone, Copy)]
pub(super) struct Settings {
    pub quiet: bool,
    pub delimiter: u8,
    pub line_wrap: usize,
}

/// Text queued by `a` and `r` for the end of the cycle.
enum Queued {
    Text(Vec<u8>),
    File(String),
}

/// How a cycle ended.
enum Flow {
    /// Print the pattern space (unless `-n`) and read the next line.
    Next { autoprint: bool },
    /// `D` with a newline: run again on what is left, without reading.
    Restart,
}

#[derive(Default, Clone, Copy)]
struct RangeState {
    active: bool,
    /// Line number that ends a `+N` range.
    end_line: usize,
    /// `0,/re/` has not yet seen its first line.
    zero_done: bool,
}

pub(super) struct Engine<'p> {
    program: &'p [Command],
    settings: Settings,
    ranges: Vec<RangeState>,
    pattern: Vec<u8>,
    hold: Vec<u8>,
    terminated: bool,
    line_no: usize,
    last_regex: Option<Compiled>,
    substituted: bool,
    queue: Vec<Queued>,
    /// Output not yet handed to the destination.
    pub out: Vec<u8>,
    missing_newline: bool,
    /// Content for each `w` file, written at the end.
    pub writes: BTreeMap<String, Vec<u8>>,
    /// Files read line by line by `R`: content and position.
    line_files: BTreeMap<String, (Vec<u8>, usize)>,
    /// Set by `q`/`Q`: the exit status.
    pub quit: Option<i32>,
    /// A runtime error message (e.g. no previous regex).
    pub error: Option<String>,
}

impl<'p> Engine<'p> {
    pub(super) fn new(program: &'p [Command], settings: Settings) -> Self {
        let mut writes = BTreeMap::new();
        for command in program {
            let name = match &command.cmd {
                Cmd::WriteFile(name) | Cmd::WriteFirst(name) => Some(name),
                Cmd::Subst(s) => s.write.as_ref(),
                _ => None,
            };
            if let Some(name) = name {
                writes.entry(name.clone()).or_insert_with(Vec::new);
            }
        }
        Engine {
            program,
            settings,
            ranges: vec![RangeState::default(); program.len()],
            pattern: Vec::new(),
            hold: Vec::new(),
            terminated: true,
            line_no: 0,
            last_regex: None,
            substituted: false,
            queue: Vec::new(),
            out: Vec::new(),
            missing_newline: false,
            writes,
            line_files: BTreeMap::new(),
            quit: None,
            error: None,
        }
    }

    /// Starts line numbering again (per file with `-s` and `-i`).
    pub(super) fn reset_lines(&mut self) {
        self.line_no = 0;
        self.ranges = vec![RangeState::default(); self.program.len()];
    }

    /// Runs every cycle of `stream`; `flush` is called after each cycle.
    pub(super) fn run(
        &mut self,
        ctx: &mut Ctx<'_>,
        stream: &mut Stream,
        to_stdout: bool,
    ) -> Result<(), Abort> {
        while self.quit.is_none() && self.error.is_none() {
            let Some(line) = stream.next_line() else {
                break;
            };
            self.read(line);
            self.substituted = false;
            loop {
                ctx.budget.charge_cpu(self.pattern.len() as u64 + 1)?;
                let flow = self.cycle(ctx, stream)?;
                self.end_cycle(ctx, &flow)?;
                // Hand output over in chunks: often enough for the output
                // cap to stop a runaway script, rarely enough to be cheap.
                if to_stdout && self.out.len() >= OUTPUT_CHUNK {
                    ctx.stdout.write(&self.out)?;
                    self.out.clear();
                }
                if !matches!(flow, Flow::Restart) || self.quit.is_some() {
                    break;
                }
            }
        }
        Ok(())
    }

    fn read(&mut self, line: Line) {
        self.pattern = line.text;
        self.terminated = line.terminated;
        self.line_no += 1;
    }

    fn end_cycle(&mut self, ctx: &mut Ctx<'_>, flow: &Flow) -> Result<(), Abort> {
        if matches!(flow, Flow::Next { autoprint: true }) && !self.settings.quiet {
            self.emit_space();
        }
        self.flush_queue(ctx)
    }

    /// Writes text, first adding the delimiter a previous unterminated line lacked.
    fn emit(&mut self, text: &[u8], terminated: bool) {
        let delimiter = self.settings.delimiter;
        write_out(
            &mut self.out,
            &mut self.missing_newline,
            delimiter,
            text,
            terminated,
        );
    }

    /// Writes the pattern space, ending it as its input line ended.
    fn emit_space(&mut self) {
        let delimiter = self.settings.delimiter;
        let (text, terminated) = (&self.pattern, self.terminated);
        write_out(
            &mut self.out,
            &mut self.missing_newline,
            delimiter,
            text,
            terminated,
        );
    }

    fn flush_queue(&mut self, ctx: &mut Ctx<'_>) -> Result<(), Abort> {
        for queued in std::mem::take(&mut self.queue) {
            match queued {
                Queued::Text(text) => self.emit(&text, false),
                Queued::File(name) => {
                    let data = if name == "/dev/stdin" {
                        Some(ctx.stdin.all()?.to_vec())
                    } else {
                        ctx.path(&name).ok().and_then(|p| ctx.fs.read(&p).ok())
                    };
                    if let Some(data) = data {
                        ctx.budget.charge_cpu(data.len() as u64)?;
                        self.emit(&data, false);
                    }
                }
            }
            // Queued text carries its own newline (or not, for files).
            self.missing_newline = false;
        }
        Ok(())
    }

    /// Runs the program once over the pattern space.
    fn cycle(&mut self, ctx: &mut Ctx<'_>, stream: &mut Stream) -> Result<Flow, Abort> {
        let mut pc = 0;
        while pc < self.program.len() {
            ctx.budget.charge_cpu(1)?;
            let command = &self.program[pc];
            let selected = self.selected(pc, stream, ctx.budget)?;
            pc += 1;
            if self.error.is_some() {
                return Ok(Flow::Next { autoprint: false });
            }
            if !selected {
                if let Cmd::Block(after) = command.cmd {
                    pc = after;
                }
                continue;
            }
            match self.execute(ctx, stream, pc - 1)? {
                Step::Continue => {}
                Step::Jump(target) => {
                    // A taken branch is how sed loops: bound it like a loop.
                    ctx.budget.charge_iteration()?;
                    pc = target;
                }
                Step::End(flow) => return Ok(flow),
            }
        }
        Ok(Flow::Next { autoprint: true })
    }

    fn execute(
        &mut self,
        ctx: &mut Ctx<'_>,
        stream: &mut Stream,
        pc: usize,
    ) -> Result<Step, Abort> {
        let program = self.program;
        let step = match &program[pc].cmd {
            Cmd::Block(_) | Cmd::EndBlock | Cmd::Label => Step::Continue,
            Cmd::Subst(subst) => {
                self.substitute(ctx, subst)?;
                Step::Continue
            }
            Cmd::Translate(map) => {
                self.translate(map);
                Step::Continue
            }
            Cmd::Append(text) => {
                self.queue.push(Queued::Text(text.clone()));
                Step::Continue
            }
            Cmd::Insert(text) => {
                self.emit(text, false);
                self.missing_newline = false;
                Step::Continue
            }
            Cmd::Change(text) => {
                let in_range = program[pc].end.is_some() && !program[pc].negate;
                if !in_range || !self.ranges[pc].active {
                    self.emit(text, false);
                    self.missing_newline = false;
                }
                Step::End(Flow::Next { autoprint: false })
            }
            Cmd::Branch(kind, target) => self.branch(*kind, *target),
            Cmd::Quit(silent, code) => {
                self.quit = Some(*code);
                Step::End(Flow::Next { autoprint: !silent })
            }
            Cmd::ReadFile(name) => {
                self.queue.push(Queued::File(name.clone()));
                Step::Continue
            }
            Cmd::ReadLine(name) => {
                if let Some(line) = self.read_line_of(ctx, name) {
                    self.queue.push(Queued::Text(line));
                }
                Step::Continue
            }
            Cmd::WriteFile(name) | Cmd::WriteFirst(name) => {
                let first_only = matches!(program[pc].cmd, Cmd::WriteFirst(_));
                let end = match first_only {
                    true => self.pattern.iter().position(|&b| b == b'\n'),
                    false => None,
                };
                let mut data = self.pattern[..end.unwrap_or(self.pattern.len())].to_vec();
                data.push(self.settings.delimiter);
                self.write_to(ctx, name, &data)?;
                Step::Continue
            }
            Cmd::List(width) => {
                let listed = list(&self.pattern, width.unwrap_or(self.settings.line_wrap));
                self.emit(&listed, true);
                Step::Continue
            }
            Cmd::Simple(letter) => self.simple(ctx, stream, *letter)?,
        };
        Ok(step)
    }

    fn branch(&mut self, kind: char, target: Option<usize>) -> Step {
        let taken = match kind {
            't' => std::mem::take(&mut self.substituted),
            'T' => !std::mem::take(&mut self.substituted),
            _ => true,
        };
        match (taken, target) {
            (false, _) => Step::Continue,
            (true, Some(target)) => Step::Jump(target),
            (true, None) => Step::Jump(self.program.len()),
        }
    }

    fn simple(
        &mut self,
        ctx: &mut Ctx<'_>,
        stream: &mut Stream,
        letter: char,
    ) -> Result<Step, Abort> {
        match letter {
            'd' => return Ok(Step::End(Flow::Next { autoprint: false })),
            'D' => {
                let Some(at) = self.pattern.iter().position(|&b| b == b'\n') else {
                    return Ok(Step::End(Flow::Next { autoprint: false }));
                };
                self.pattern.drain(..=at);
                return Ok(Step::End(Flow::Restart));
            }
            'p' => self.emit_space(),
            'P' => {
                let end = self.pattern.iter().position(|&b| b == b'\n');
                let first = self.pattern[..end.unwrap_or(self.pattern.len())].to_vec();
                self.emit(&first, true);
            }
            'n' | 'N' => return self.next_line(ctx, stream, letter == 'N'),
            'g' => {
                self.spaces_grow(ctx, self.hold.len().saturating_sub(self.pattern.len()))?;
                self.pattern = self.hold.clone();
            }
            'G' => {
                self.spaces_grow(ctx, self.hold.len() + 1)?;
                self.pattern.push(b'\n');
                self.pattern.extend_from_slice(&self.hold);
            }
            'h' => {
                self.spaces_grow(ctx, self.pattern.len().saturating_sub(self.hold.len()))?;
                self.hold = self.pattern.clone();
            }
            'H' => {
                self.spaces_grow(ctx, self.pattern.len() + 1)?;
                self.hold.push(b'\n');
                self.hold.extend_from_slice(&self.pattern);
            }
            'x' => std::mem::swap(&mut self.pattern, &mut self.hold),
            '=' => self.emit(format!("{}\n", self.line_no).as_bytes(), false),
            'z' => self.pattern.clear(),
            'F' => {
                let name = stream.file_name().to_string();
                self.emit(format!("{name}\n").as_bytes(), false);
            }
            _ => {}
        }
        if letter == '=' || letter == 'F' {
            self.missing_newline = false;
        }
        Ok(Step::Continue)
    }

    /// The pattern and hold spaces are about to grow by `extra` bytes: the
    /// copy is charged as CPU work, and both spaces must fit in the memory
    /// budget, so a loop that grows them (`:a;h;G;ba`, `:a;s/^/xx/;ba`)
    /// ends with a limit instead of copying without end.
    fn spaces_grow(&self, ctx: &Ctx<'_>, extra: usize) -> Result<(), Abort> {
        let spaces = self.pattern.len() + self.hold.len();
        ctx.budget.charge_cpu((spaces + extra) as u64)?;
        ctx.budget.check_memory(spaces.saturating_add(extra) as u64)
    }

    /// `n` and `N`: without a next line, GNU prints the pattern space and stops.
    fn next_line(
        &mut self,
        ctx: &mut Ctx<'_>,
        stream: &mut Stream,
        append: bool,
    ) -> Result<Step, Abort> {
        if !stream.has_more() {
            return Ok(Step::End(Flow::Next { autoprint: true }));
        }
        if !append && !self.settings.quiet {
            self.emit_space();
        }
        self.flush_queue(ctx)?;
        let Some(line) = stream.next_line() else {
            return Ok(Step::End(Flow::Next { autoprint: true }));
        };
        if append {
            let previous = std::mem::take(&mut self.pattern);
            self.read(line);
            let mut joined = previous;
            joined.push(b'\n');
            joined.extend_from_slice(&self.pattern);
            self.pattern = joined;
        } else {
            self.read(line);
        }
        Ok(Step::Continue)
    }

    /// `R`: the next line of `name` (read once, on first use), with its newline.
    fn read_line_of(&mut self, ctx: &mut Ctx<'_>, name: &str) -> Option<Vec<u8>> {
        let (data, pos) = self.line_files.entry(name.to_string()).or_insert_with(|| {
            let data = ctx.path(name).ok().and_then(|p| ctx.fs.read(&p).ok());
            (data.unwrap_or_default(), 0)
        });
        if *pos >= data.len() {
            return None;
        }
        let rest = &data[*pos..];
        let len = rest
            .iter()
            .position(|&b| b == b'\n')
            .map_or(rest.len(), |p| p + 1);
        let mut line = rest[..len].to_vec();
        *pos += len;
        if line.last() != Some(&b'\n') {
            line.push(b'\n');
        }
        Some(line)
    }

    fn write_to(&mut self, ctx: &mut Ctx<'_>, name: &str, data: &[u8]) -> Result<(), Abort> {
        match name {
            "/dev/stdout" => {
                self.emit(data, false);
                self.missing_newline = false;
            }
            "/dev/stderr" => ctx.stderr.write(data)?,
            _ => self
                .writes
                .entry(name.to_string())
                .or_default()
                .extend_from_slice(data),
        }
        Ok(())
    }

    fn translate(&mut self, map: &[(char, char)]) {
        let text = String::from_utf8_lossy(&self.pattern);
        let mapped: String = text
            .chars()
            .map(|c| {
                map.iter()
                    .find(|(from, _)| *from == c)
                    .map_or(c, |&(_, to)| to)
            })
            .collect();
        self.pattern = mapped.into_bytes();
    }

    /// The regex for `pattern`, remembering it as the last one used.
    fn regex(&mut self, pattern: &Pattern) -> Option<Compiled> {
        match pattern {
            Pattern::Re(re) => {
                self.last_regex = Some(re.clone());
                Some(re.clone())
            }
            Pattern::Last => {
                if self.last_regex.is_none() {
                    self.error = Some("no previous regular expression".into());
                }
                self.last_regex.clone()
            }
        }
    }

    fn substitute(&mut self, ctx: &mut Ctx<'_>, subst: &Subst) -> Result<(), Abort> {
        let Some(re) = self.regex(&subst.pattern) else {
            return Ok(());
        };
        let mut result = Vec::with_capacity(self.pattern.len());
        let mut last_end = 0;
        let mut seen = 0u64;
        let mut replaced = false;
        let pattern = &self.pattern;
        let whole_only = !subst
            .replacement
            .iter()
            .any(|p| matches!(p, Piece::Group(n) if *n > 0));
        // The result may take what the budget has left beside the hold
        // space (the pattern space it replaces is dropped).
        let room = ctx
            .budget
            .limits()
            .max_memory_bytes
            .saturating_sub(ctx.budget.memory_in_use())
            .saturating_sub(self.hold.len() as u64);
        let mut too_large = false;
        ctx.budget.charge_cpu(re.extra_work(pattern))?;
        re.for_each_match(pattern, whole_only, &mut |groups| {
            seen += 1;
            if seen < subst.nth as u64 {
                return true;
            }
            let (start, end) = groups[0].expect("group 0 always matches");
            result.extend_from_slice(&pattern[last_end..start]);
            expand(&mut result, pattern, groups, &subst.replacement);
            last_end = end;
            replaced = true;
            too_large = result.len() as u64 > room;
            subst.global && !too_large
        });
        if too_large {
            return Err(Abort::Limit(LimitKind::Memory));
        }
        ctx.budget.charge_cpu(seen)?;
        if !replaced {
            return Ok(());
        }
        result.extend_from_slice(&self.pattern[last_end..]);
        // Building the new pattern space is work per byte, as copying it.
        ctx.budget.charge_cpu(result.len() as u64)?;
        ctx.budget
            .check_memory((result.len() + self.hold.len()) as u64)?;
        self.pattern = result;
        self.substituted = true;
        if subst.print {
            self.emit_space();
        }
        if let Some(name) = &subst.write {
            let mut data = self.pattern.clone();
            data.push(self.settings.delimiter);
            self.write_to(ctx, name, &data)?;
        }
        Ok(())
    }

    /// Whether command `index` applies to the current line.
    /// Whether command `index` applies; a pattern address's search is
    /// charged to `budget` before it runs.
    fn selected(
        &mut self,
        index: usize,
        stream: &mut Stream,
        budget: &Budget,
    ) -> Result<bool, Abort> {
        let command = &self.program[index];
        let hit = match (&command.start, &command.end) {
            (None, _) => true,
            (Some(start), None) => self.matches(start, stream, budget)?,
            (Some(start), Some(end)) => self.in_range(index, start, end, stream, budget)?,
        };
        Ok(hit != command.negate)
    }

    fn matches(
        &mut self,
        address: &Address,
        stream: &mut Stream,
        budget: &Budget,
    ) -> Result<bool, Abort> {
        Ok(match address {
            Address::Line(n) => self.line_no == *n,
            Address::Last => !stream.has_more(),
            Address::Step(first, 0) => self.line_no == *first,
            Address::Step(first, step) => {
                self.line_no >= *first && (self.line_no - first) % step == 0
            }
            Address::Zero => false,
            Address::Match(pattern) => match self.regex(pattern) {
                Some(re) => {
                    budget.charge_cpu(re.extra_work(&self.pattern))?;
                    re.is_match(&self.pattern)
                }
                None => false,
            },
        })
    }

    fn in_range(
        &mut self,
        index: usize,
        start: &Address,
        end: &End,
        stream: &mut Stream,
        budget: &Budget,
    ) -> Result<bool, Abort> {
        let mut state = self.ranges[index];
        let line = self.line_no;
        if matches!(start, Address::Zero) && !state.zero_done {
            state.zero_done = true;
            state.active = true;
        } else if !state.active {
            if !self.matches(start, stream, budget)? {
                return Ok(false);
            }
            state.active = match end {
                End::Addr(Address::Line(last)) => *last > line,
                End::Addr(Address::Last) => stream.has_more(),
                End::Plus(n) => {
                    state.end_line = line + n;
                    *n > 0
                }
                End::Multiple(n) => *n > 0 && line % n != 0,
                End::Addr(_) => true,
            };
            self.ranges[index] = state;
            return Ok(true);
        }
        state.active = !match end {
            End::Addr(Address::Line(last)) => line >= *last,
            End::Addr(address) => self.matches(address, stream, budget)?,
            End::Plus(_) => line >= state.end_line,
            End::Multiple(n) => line % n == 0,
        };
        self.ranges[index] = state;
        Ok(true)
    }
}

enum Step {
    Continue,
    Jump(usize),
    End(Flow),
}

fn write_out(out: &mut Vec<u8>, missing: &mut bool, delimiter: u8, text: &[u8], terminated: bool) {
    if std::mem::take(missing) {
        out.push(delimiter);
    }
    out.extend_from_slice(text);
    if terminated {
        out.push(delimiter);
    } else {
        *missing = true;
    }
}

/// Case conversion state while expanding a replacement.
#[derive(Default)]
struct Case {
    /// `\U` or `\L` in force.
    mode: Option<char>,
    /// `\u` or `\l` for the next character.
    one: Option<char>,
}

impl Case {
    fn push(&mut self, out: &mut Vec<u8>, text: &[u8]) {
        if self.mode.is_none() && self.one.is_none() {
            out.extend_from_slice(text);
            return;
        }
        let text = String::from_utf8_lossy(text);
        let mut chars = text.chars();
        if let Some(one) = self.one.filter(|_| !text.is_empty()) {
            let first = chars.next().expect("text is not empty");
            let converted: String = if one == 'u' {
                first.to_uppercase().collect()
            } else {
                first.to_lowercase().collect()
            };
            out.extend_from_slice(converted.as_bytes());
            self.one = None;
        }
        let rest = chars.as_str();
        let converted = match self.mode {
            Some('U') => rest.to_uppercase(),
            Some('L') => rest.to_lowercase(),
            _ => rest.to_string(),
        };
        out.extend_from_slice(converted.as_bytes());
    }
}

/// Appends the replacement for one match.
fn expand(out: &mut Vec<u8>, haystack: &[u8], groups: &Groups, pieces: &[Piece]) {
    let mut case = Case::default();
    for piece in pieces {
        match piece {
            Piece::Text(text) => case.push(out, text),
            Piece::Group(n) => {
                if let Some(Some((start, end))) = groups.get(*n) {
                    case.push(out, &haystack[*start..*end]);
                }
            }
            Piece::Case(c @ ('u' | 'l')) => case.one = Some(*c),
            Piece::Case('E') => case = Case::default(),
            Piece::Case(c) => case.mode = Some(*c),
        }
    }
}

/// `l`: the pattern space with escapes, wrapped at `width` (0: never).
fn list(pattern: &[u8], width: usize) -> Vec<u8> {
    let mut out = Vec::new();
    let mut column = 0;
    for &b in pattern {
        let escaped = match b {
            b'\\' => "\\\\".to_string(),
            0x07 => "\\a".into(),
            0x08 => "\\b".into(),
            0x0c => "\\f".into(),
            b'\n' => "\\n".into(),
            b'\r' => "\\r".into(),
            b'\t' => "\\t".into(),
            0x0b => "\\v".into(),
            0x20..=0x7e => (b as char).to_string(),
            _ => format!("\\{b:03o}"),
        };
        if width > 1 && column + escaped.len() > width - 1 {
            out.extend_from_slice(b"\\\n");
            column = 0;
        }
        column += escaped.len();
        out.extend_from_slice(escaped.as_bytes());
    }
    out.push(b'$');
    out
}
