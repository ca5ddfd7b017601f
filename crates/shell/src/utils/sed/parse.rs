//! Parsing a sed script into a flat program.
//!
//! Blocks become a `{` that knows where its `}` is, and branches know their
//! target index, so execution is a simple program counter over a vector.
//! Regexes are translated from POSIX syntax (see `search::posix`) and
//! compiled here, once.

use crate::utils::search::backref::Compiled;
use crate::utils::search::posix::{self, Syntax};

/// A compiled regex, or the empty regex `//` (the last one used).
#[derive(Debug, Clone)]
pub(super) enum Pattern {
    Last,
    Re(Compiled),
}

#[derive(Debug, Clone)]
pub(super) enum Address {
    Line(usize),
    Last,
    Match(Pattern),
    /// `first~step`.
    Step(usize, usize),
    /// `0` in `0,/re/`.
    Zero,
}

#[derive(Debug, Clone)]
pub(super) enum End {
    Addr(Address),
    /// `addr1,+N`.
    Plus(usize),
    /// `addr1,~N`.
    Multiple(usize),
}

/// One piece of an `s` replacement.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Piece {
    Text(Vec<u8>),
    /// `&` (0) or `\1`..`\9`.
    Group(usize),
    /// `\U`, `\L`, `\u`, `\l`, `\E`.
    Case(char),
}

#[derive(Debug, Clone)]
pub(super) struct Subst {
    pub pattern: Pattern,
    pub replacement: Vec<Piece>,
    pub global: bool,
    /// Replace only the Nth match (1 when not given).
    pub nth: usize,
    pub print: bool,
    pub write: Option<String>,
}

#[derive(Debug, Clone)]
pub(super) enum Cmd {
    /// `{`, with the index just after its `}`.
    Block(usize),
    EndBlock,
    Subst(Box<Subst>),
    Translate(Vec<(char, char)>),
    /// `a`, `i`, `c` with their text.
    Append(Vec<u8>),
    Insert(Vec<u8>),
    Change(Vec<u8>),
    /// `b`, `t`, `T` with their target index (`None`: end of script).
    Branch(char, Option<usize>),
    Label,
    /// `q` / `Q` with an exit code.
    Quit(bool, i32),
    ReadFile(String),
    /// `R`: the next line of the file.
    ReadLine(String),
    WriteFile(String),
    /// `W`: the first line of the pattern space.
    WriteFirst(String),
    List(Option<usize>),
    /// Every other single-letter command: `d D p P n N g G h H x = z F`.
    Simple(char),
}

#[derive(Debug, Clone)]
pub(super) struct Command {
    pub start: Option<Address>,
    pub end: Option<End>,
    pub negate: bool,
    pub cmd: Cmd,
}

/// Parse options that change how regexes are read.
#[derive(Debug, Clone, Copy)]
pub(super) struct Dialect {
    pub extended: bool,
}

/// Parses a whole script; the error is the message after `sed: -e expression #1, char N: `.
pub(super) fn parse(script: &str, dialect: Dialect) -> Result<Vec<Command>, String> {
    let mut parser = Parser {
        chars: script.chars().collect(),
        pos: 0,
        dialect,
        commands: Vec::new(),
        open: Vec::new(),
        labels: Vec::new(),
        branches: Vec::new(),
    };
    parser
        .script()
        .map_err(|e| format!("char {}: {e}", parser.pos))?;
    Ok(parser.commands)
}

/// The character of `\t`, `\r`, `\f`, `\v` or `\a`.
fn control_escape(c: char) -> Option<char> {
    Some(match c {
        't' => '\t',
        'r' => '\r',
        'f' => '\x0c',
        'v' => '\x0b',
        'a' => '\x07',
        _ => return None,
    })
}

/// `v VERSION`: whether GNU sed 4.9, which this imitates, is recent enough.
fn version_supported(version: &str) -> bool {
    if version.is_empty() {
        return true;
    }
    let parts: Option<Vec<u32>> = version.split('.').map(|p| p.parse().ok()).collect();
    parts.is_some_and(|parts| parts <= vec![4, 9])
}

struct Parser {
    chars: Vec<char>,
    pos: usize,
    dialect: Dialect,
    commands: Vec<Command>,
    /// Indices of `{` not yet closed.
    open: Vec<usize>,
    labels: Vec<(String, usize)>,
    /// (command index, label) of branches to resolve.
    branches: Vec<(usize, String)>,
}

fn is_end(c: char) -> bool {
    matches!(c, ';' | '\n' | '}' | '#')
}

impl Parser {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn next(&mut self) -> Option<char> {
        let c = self.peek();
        self.pos += c.is_some() as usize;
        c
    }

    fn eat(&mut self, c: char) -> bool {
        let yes = self.peek() == Some(c);
        self.pos += yes as usize;
        yes
    }

    fn skip_blanks(&mut self) {
        while matches!(self.peek(), Some(' ' | '\t')) {
            self.pos += 1;
        }
    }

    fn skip_separators(&mut self) {
        while matches!(self.peek(), Some(' ' | '\t' | '\n' | ';')) {
            self.pos += 1;
        }
    }

    fn script(&mut self) -> Result<(), String> {
        loop {
            self.skip_separators();
            match self.peek() {
                None => break,
                Some('#') => self.skip_comment(),
                Some(_) => self.command()?,
            }
        }
        if !self.open.is_empty() {
            return Err("unmatched `{'".into());
        }
        self.resolve_branches()
    }

    fn skip_comment(&mut self) {
        while let Some(c) = self.next() {
            if c == '\n' {
                break;
            }
        }
    }

    fn resolve_branches(&mut self) -> Result<(), String> {
        for (index, label) in std::mem::take(&mut self.branches) {
            let Some(&(_, target)) = self.labels.iter().find(|(l, _)| *l == label) else {
                return Err(format!("can't find label for jump to `{label}'"));
            };
            if let Cmd::Branch(_, slot) = &mut self.commands[index].cmd {
                *slot = Some(target);
            }
        }
        Ok(())
    }

    /// Checks that nothing but blanks stands before the next separator.
    fn end_of_command(&mut self) -> Result<(), String> {
        self.skip_blanks();
        match self.peek() {
            None => Ok(()),
            Some(c) if is_end(c) => {
                if c == ';' || c == '\n' {
                    self.pos += 1;
                }
                Ok(())
            }
            Some(c) => Err(format!("extra characters after command ({c})")),
        }
    }

    fn command(&mut self) -> Result<(), String> {
        let start = self.address()?;
        let mut end = None;
        if start.is_some() && self.eat(',') {
            self.skip_blanks();
            end = Some(self.range_end()?);
        }
        if matches!(start, Some(Address::Zero))
            && !matches!(end, Some(End::Addr(Address::Match(_))))
        {
            return Err("invalid usage of line address 0".into());
        }
        self.skip_blanks();
        let mut negate = false;
        while self.eat('!') {
            negate = true;
            self.skip_blanks();
        }
        let Some(letter) = self.next() else {
            return Err("missing command".into());
        };
        let has_address = start.is_some();
        let cmd = self.command_body(letter, has_address)?;
        self.commands.push(Command {
            start,
            end,
            negate,
            cmd,
        });
        Ok(())
    }

    fn command_body(&mut self, letter: char, has_address: bool) -> Result<Cmd, String> {
        let cmd = match letter {
            'b' | 't' | 'T' => {
                let label = self.branch_label();
                if !label.is_empty() {
                    self.branches.push((self.commands.len(), label));
                }
                Cmd::Branch(letter, None)
            }
            '{' => {
                self.open.push(self.commands.len());
                return Ok(Cmd::Block(0));
            }
            '}' => {
                if has_address {
                    return Err("} doesn't want any addresses".into());
                }
                let open = self.open.pop().ok_or("unexpected `}'")?;
                self.commands[open].cmd = Cmd::Block(self.commands.len() + 1);
                Cmd::EndBlock
            }
            's' => {
                let subst = self.substitution()?;
                let wrote = subst.write.is_some();
                let cmd = Cmd::Subst(Box::new(subst));
                if wrote {
                    return Ok(cmd);
                }
                self.end_of_command()
                    .map_err(|_| "unknown option to `s'".to_string())?;
                return Ok(cmd);
            }
            'y' => Cmd::Translate(self.translation()?),
            'a' | 'i' | 'c' => {
                let text = self.text()?;
                return Ok(match letter {
                    'a' => Cmd::Append(text),
                    'i' => Cmd::Insert(text),
                    _ => Cmd::Change(text),
                });
            }
            ':' => {
                if has_address {
                    return Err(": doesn't want any addresses".into());
                }
                let label = self.label();
                if label.is_empty() {
                    return Err("\":\" lacks a label".into());
                }
                self.labels.push((label, self.commands.len()));
                return Ok(Cmd::Label);
            }
            'v' => {
                let version = self.label();
                if !version_supported(&version) {
                    return Err("expected newer version of sed".into());
                }
                return Ok(Cmd::Label);
            }
            'q' | 'Q' => Cmd::Quit(letter == 'Q', self.number().unwrap_or(0) as i32),
            'l' | 'L' => Cmd::List(self.number()),
            'r' | 'R' | 'w' | 'W' => {
                let name = self.filename()?;
                return Ok(match letter {
                    'r' => Cmd::ReadFile(name),
                    'R' => Cmd::ReadLine(name),
                    'w' => Cmd::WriteFile(name),
                    _ => Cmd::WriteFirst(name),
                });
            }
            'd' | 'D' | 'p' | 'P' | 'n' | 'N' | 'g' | 'G' | 'h' | 'H' | 'x' | '=' | 'z' | 'F' => {
                Cmd::Simple(letter)
            }
            _ => return Err(format!("unknown command: `{letter}'")),
        };
        self.end_of_command()?;
        Ok(cmd)
    }

    fn number(&mut self) -> Option<usize> {
        self.skip_blanks();
        let start = self.pos;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.pos += 1;
        }
        let digits: String = self.chars[start..self.pos].iter().collect();
        digits.parse().ok()
    }

    fn address(&mut self) -> Result<Option<Address>, String> {
        let Some(c) = self.peek() else {
            return Ok(None);
        };
        if c.is_ascii_digit() {
            let first = self.number().unwrap_or(0);
            if self.eat('~') {
                let step = self.number().unwrap_or(0);
                return Ok(Some(Address::Step(first, step)));
            }
            return Ok(Some(if first == 0 {
                Address::Zero
            } else {
                Address::Line(first)
            }));
        }
        if c == '$' {
            self.pos += 1;
            return Ok(Some(Address::Last));
        }
        if c == '/' || c == '\\' {
            self.pos += 1;
            let delim = if c == '\\' {
                self.next().ok_or("unexpected end of script")?
            } else {
                '/'
            };
            let source = self.delimited(delim, "unterminated address regex")?;
            let flags = self.regex_flags();
            return Ok(Some(Address::Match(self.compile(&source, &flags)?)));
        }
        Ok(None)
    }

    /// `I` and `M` after an address regex.
    fn regex_flags(&mut self) -> String {
        let mut flags = String::new();
        while let Some(c @ ('I' | 'M')) = self.peek() {
            flags.push(c);
            self.pos += 1;
        }
        flags
    }

    fn range_end(&mut self) -> Result<End, String> {
        if self.eat('+') {
            return Ok(End::Plus(self.number().ok_or("expected number")?));
        }
        if self.eat('~') {
            return Ok(End::Multiple(self.number().ok_or("expected number")?));
        }
        match self.address()? {
            Some(Address::Zero) => Err("invalid usage of line address 0".into()),
            Some(Address::Step(first, _)) => Ok(End::Addr(Address::Line(first))),
            Some(address) => Ok(End::Addr(address)),
            None => Err("unexpected `,'".into()),
        }
    }

    /// Reads up to an unescaped `delim`, turning `\delim` into `delim` and
    /// `\n` into a newline escape the regex translator understands.
    fn delimited(&mut self, delim: char, unterminated: &str) -> Result<String, String> {
        let mut text = String::new();
        loop {
            let c = self.next().ok_or_else(|| unterminated.to_string())?;
            if c == delim {
                return Ok(text);
            }
            if c == '\\' {
                let escaped = self.next().ok_or_else(|| unterminated.to_string())?;
                // GNU sed turns these escapes into characters before the
                // regex sees them, so they work inside brackets too.
                match escaped {
                    _ if escaped == delim => text.push(delim),
                    '\n' | 'n' => text.push('\n'),
                    _ if control_escape(escaped).is_some() => {
                        text.extend(control_escape(escaped));
                    }
                    'x' => text.push(self.hex_escape()),
                    _ => {
                        text.push('\\');
                        text.push(escaped);
                    }
                }
                continue;
            }
            if c == '\n' && delim != '\n' {
                return Err(unterminated.to_string());
            }
            text.push(c);
            if c == '[' {
                self.bracket_into(&mut text);
            }
        }
    }

    /// Copies the rest of a bracket expression (after `[`): the delimiter
    /// does not end a regex inside one, as in GNU sed.
    fn bracket_into(&mut self, text: &mut String) {
        let start = self.pos;
        let mut first = true;
        while let Some(c) = self.next() {
            match c {
                '^' if first && self.pos == start + 1 => {
                    text.push(c);
                    continue;
                }
                ']' if !first => {
                    text.push(c);
                    return;
                }
                '[' if matches!(self.peek(), Some(':' | '.' | '=')) => {
                    let kind = self.next().unwrap_or(':');
                    text.push('[');
                    text.push(kind);
                    while let Some(inner) = self.next() {
                        text.push(inner);
                        if inner == kind && self.eat(']') {
                            text.push(']');
                            break;
                        }
                    }
                    first = false;
                    continue;
                }
                '\\' if matches!(self.peek(), Some('n' | 't')) => {
                    let e = self.next();
                    text.push(if e == Some('n') { '\n' } else { '\t' });
                    first = false;
                    continue;
                }
                '\n' => {
                    // Unterminated bracket: let the regex compiler complain.
                    self.pos -= 1;
                    return;
                }
                _ => {}
            }
            text.push(c);
            first = false;
        }
    }

    fn compile(&self, source: &str, flags: &str) -> Result<Pattern, String> {
        if source.is_empty() {
            return Ok(Pattern::Last);
        }
        let syntax = if self.dialect.extended {
            Syntax::Extended
        } else {
            Syntax::Basic
        };
        let translated = posix::translate(source, syntax)?;
        let multiline = flags.contains('M') || flags.contains('m');
        let mut prefix = String::from(if multiline { "(?m)" } else { "(?s)" });
        if flags.contains('I') || flags.contains('i') {
            prefix.push_str("(?i)");
        }
        Compiled::new(&prefix, &translated).map(Pattern::Re)
    }

    fn substitution(&mut self) -> Result<Subst, String> {
        let delim = self.next().ok_or("unterminated `s' command")?;
        if delim == '\n' || delim == '\\' {
            return Err("unterminated `s' command".into());
        }
        let source = self.delimited(delim, "unterminated `s' command")?;
        let replacement = self.replacement(delim)?;
        let mut subst = Subst {
            pattern: Pattern::Last,
            replacement,
            global: false,
            nth: 1,
            print: false,
            write: None,
        };
        let mut flags = String::new();
        loop {
            match self.peek() {
                Some('g') => subst.global = true,
                Some('p') => subst.print = true,
                Some(c @ ('i' | 'I' | 'm' | 'M')) => flags.push(c),
                Some('e') => {}
                Some('w') => {
                    self.pos += 1;
                    subst.write = Some(self.filename()?);
                    break;
                }
                Some(c) if c.is_ascii_digit() => {
                    subst.nth = self
                        .number()
                        .filter(|&n| n > 0)
                        .ok_or("number option to `s' command may not be zero")?;
                    continue;
                }
                _ => break,
            }
            self.pos += 1;
        }
        subst.pattern = self.compile(&source, &flags)?;
        if let Pattern::Re(re) = &subst.pattern {
            let groups = re.captures_len() - 1;
            for piece in &subst.replacement {
                if let Piece::Group(n) = piece {
                    if *n > groups {
                        return Err(format!("invalid reference \\{n} on `s' command's RHS"));
                    }
                }
            }
        }
        Ok(subst)
    }

    /// The replacement part of `s`, up to `delim`.
    fn replacement(&mut self, delim: char) -> Result<Vec<Piece>, String> {
        let mut pieces = Vec::new();
        let mut text = String::new();
        let flush = |text: &mut String, pieces: &mut Vec<Piece>| {
            if !text.is_empty() {
                pieces.push(Piece::Text(std::mem::take(text).into_bytes()));
            }
        };
        loop {
            let c = self.next().ok_or("unterminated `s' command")?;
            if c == delim {
                break;
            }
            match c {
                '&' => {
                    flush(&mut text, &mut pieces);
                    pieces.push(Piece::Group(0));
                }
                '\\' => {
                    let e = self.next().ok_or("unterminated `s' command")?;
                    match e {
                        '0'..='9' => {
                            flush(&mut text, &mut pieces);
                            pieces.push(Piece::Group(e as usize - '0' as usize));
                        }
                        'U' | 'L' | 'u' | 'l' | 'E' => {
                            flush(&mut text, &mut pieces);
                            pieces.push(Piece::Case(e));
                        }
                        'n' => text.push('\n'),
                        'x' => text.push(self.hex_escape()),
                        _ if control_escape(e).is_some() => text.extend(control_escape(e)),
                        _ => text.push(e),
                    }
                }
                _ => text.push(c),
            }
        }
        flush(&mut text, &mut pieces);
        Ok(pieces)
    }

    /// The character of `\xHH` (after the `x`); `x` itself without digits.
    fn hex_escape(&mut self) -> char {
        let mut value = 0u32;
        let mut digits = 0;
        while digits < 2 {
            let Some(d) = self.peek().and_then(|c| c.to_digit(16)) else {
                break;
            };
            value = value * 16 + d;
            digits += 1;
            self.pos += 1;
        }
        if digits == 0 {
            return 'x';
        }
        char::from_u32(value).unwrap_or('x')
    }

    fn translation(&mut self) -> Result<Vec<(char, char)>, String> {
        let delim = self.next().ok_or("unterminated `y' command")?;
        let from = self.y_part(delim)?;
        let to = self.y_part(delim)?;
        if from.len() != to.len() {
            return Err("strings for `y' command are different lengths".into());
        }
        Ok(from.into_iter().zip(to).collect())
    }

    fn y_part(&mut self, delim: char) -> Result<Vec<char>, String> {
        let mut out = Vec::new();
        loop {
            let c = self.next().ok_or("unterminated `y' command")?;
            if c == delim {
                return Ok(out);
            }
            if c != '\\' {
                out.push(c);
                continue;
            }
            match self.next().ok_or("unterminated `y' command")? {
                'n' => out.push('\n'),
                't' => out.push('\t'),
                '\\' => out.push('\\'),
                e if e == delim => out.push(e),
                other => out.push(other),
            }
        }
    }

    /// The text of `a`, `i`, `c`: GNU one-liner (`a text`) or classic
    /// (`a\` newline `text`), with `\`-newline continuing it.
    fn text(&mut self) -> Result<Vec<u8>, String> {
        self.skip_blanks();
        if self.eat('\\') {
            if !self.eat('\n') {
                // `a\text`: the one-liner form keeping leading blanks.
            }
        } else if self.peek().is_none() || self.peek() == Some('\n') {
            return Err("expected \\ after `a', `c' or `i'".into());
        }
        let mut text = String::new();
        while let Some(c) = self.next() {
            match c {
                '\n' => break,
                '\\' => match self.next() {
                    Some('t') => text.push('\t'),
                    Some('n') => text.push('\n'),
                    Some(e) => text.push(e),
                    None => break,
                },
                _ => text.push(c),
            }
        }
        if !text.is_empty() {
            text.push('\n');
        }
        Ok(text.into_bytes())
    }

    /// A label for `:`, `b`, `t`, `T`: up to `;` or a newline.
    fn label(&mut self) -> String {
        self.skip_blanks();
        let mut label = String::new();
        while let Some(c) = self.peek() {
            if c == '\n' || c == ';' {
                break;
            }
            label.push(c);
            self.pos += 1;
        }
        if self.peek().is_some() {
            self.pos += 1;
        }
        label.trim_end().to_string()
    }

    /// A branch target: like a label, but `}` also ends it (GNU accepts `b}`).
    fn branch_label(&mut self) -> String {
        self.skip_blanks();
        let mut label = String::new();
        while let Some(c) = self.peek() {
            if matches!(c, '\n' | ';' | '}') || c.is_whitespace() {
                break;
            }
            label.push(c);
            self.pos += 1;
        }
        label
    }

    /// A file name for `r`, `w` and `s///w`: the rest of the line.
    fn filename(&mut self) -> Result<String, String> {
        self.skip_blanks();
        let mut name = String::new();
        while let Some(c) = self.next() {
            if c == '\n' {
                break;
            }
            name.push(c);
        }
        if name.is_empty() {
            return Err("missing filename in r/R/w/W commands".into());
        }
        Ok(name)
    }
}
