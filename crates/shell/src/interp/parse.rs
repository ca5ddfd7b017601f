//! A recursive-descent parser for bash scripts.
//!
//! Bash's tokens depend on context (reserved words only in command position,
//! `}` ending a `${`, here-document bodies following the line), so the parser
//! reads characters directly rather than a token stream. Brace expansion is
//! done here, since it is purely syntactic.

use std::collections::BTreeMap;
use std::rc::Rc;

use super::arith;
use super::ast::*;
use crate::limits::{too_deep_message, MAX_PARSE_DEPTH};

pub(crate) type PResult<T> = Result<T, SyntaxError>;

/// A syntax error: what to print, and which part of bash's reader finds
/// it, since that decides the status a script ends with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SyntaxError {
    pub(crate) message: String,
    pub(crate) kind: SyntaxKind,
}

/// Where bash's reader finds a syntax error (see [`SyntaxKind::script_status`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SyntaxKind {
    /// A token the grammar cannot take (bash's `yyerror`).
    Grammar,
    /// A quote, `${`, `$((`, `((` or `[[` left open at the end of the
    /// text: bash's scanner reports it and hands the grammar an error
    /// token, not a syntax error of its own.
    Unclosed,
    /// A compound assignment left open (`x=(a b`): bash discards the
    /// command being read.
    Assignment,
}

impl SyntaxKind {
    /// The status a script or `-c` text ends with after the error, `$?`
    /// being `status` before it: 2 for the grammar's errors; the status
    /// kept after the scanner's, except that one running into the end of
    /// the text makes a 0 a 2 (bash's `error yacc_EOF` rule); 1 after an
    /// open compound assignment (bash's `DISCARD`).
    pub(crate) fn script_status(self, status: i32) -> i32 {
        match self {
            SyntaxKind::Grammar => 2,
            SyntaxKind::Unclosed if status == 0 => 2,
            SyntaxKind::Unclosed => status,
            SyntaxKind::Assignment => 1,
        }
    }
}

impl SyntaxError {
    fn new(message: impl Into<String>, kind: SyntaxKind) -> Self {
        SyntaxError {
            message: message.into(),
            kind,
        }
    }

    /// An unclosed quote or expansion: `unexpected EOF while looking for
    /// matching `c'`.
    pub(super) fn unclosed(close: char) -> Self {
        Self::new(
            format!("unexpected EOF while looking for matching `{close}'"),
            SyntaxKind::Unclosed,
        )
    }
}

impl From<String> for SyntaxError {
    fn from(message: String) -> Self {
        SyntaxError::new(message, SyntaxKind::Grammar)
    }
}

impl From<&str> for SyntaxError {
    fn from(message: &str) -> Self {
        SyntaxError::new(message, SyntaxKind::Grammar)
    }
}

impl std::fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

pub(crate) struct Parser {
    src: Vec<char>,
    pos: usize,
    /// Positions of the newlines in `src`, for line numbers.
    newlines: Vec<usize>,
    /// Aliases to expand in command position (bash expands them as it
    /// parses, so a definition applies from the next line on).
    aliases: BTreeMap<String, String>,
    /// Aliases being expanded, with where their text ends in `src`: an
    /// alias is not expanded again inside its own text.
    expanding: Vec<(String, usize)>,
    /// Where the text of an alias ending in a blank ends: the next word
    /// from there is checked for an alias too.
    alias_blank_at: Option<usize>,
    /// Bodies already read: (position of the newline, where parsing resumes).
    skip_at: Option<(usize, usize)>,
    /// Inside `"${...}"` (single quotes are literal in `:-` words).
    pub(super) in_dq: bool,
    /// `shopt -s extglob` was on when the command was read.
    extglob: bool,
    /// Nesting of lists, `[[ ]]` groups and `${...}` being parsed (that of
    /// the enclosing text included, for a parser of a nested text).
    depth: usize,
}

const RESERVED_END: &[&str] = &[
    "then", "elif", "else", "fi", "do", "done", "esac", "}", "in",
];

/// Parses a whole script.
pub(crate) fn parse_script(src: &str) -> PResult<Program> {
    parse_nested_script(src, 0)
}

/// Parses a whole script nested `depth` levels inside another text.
fn parse_nested_script(src: &str, depth: usize) -> PResult<Program> {
    let mut p = Parser::new(src);
    p.depth = depth;
    let prog = p.program()?;
    p.skip_space_nl()?;
    if p.pos < p.src.len() {
        return Err(p.unexpected());
    }
    Ok(prog)
}

fn is_name(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn is_meta(c: char) -> bool {
    matches!(
        c,
        ' ' | '\t' | '\n' | ';' | '&' | '|' | '<' | '>' | '(' | ')'
    )
}

impl Parser {
    pub(crate) fn new(src: &str) -> Self {
        let src: Vec<char> = src.chars().collect();
        Parser {
            newlines: newline_positions(&src),
            src,
            pos: 0,
            aliases: BTreeMap::new(),
            expanding: Vec::new(),
            alias_blank_at: None,
            skip_at: None,
            in_dq: false,
            extglob: false,
            depth: 0,
        }
    }

    /// A parser for `text` nested in what this one parses (a here-document
    /// body, an arithmetic word): it shares this one's depth.
    pub(super) fn nested(&self, text: &str) -> Parser {
        let mut sub = Parser::new(text);
        sub.depth = self.depth;
        sub
    }

    /// Runs `f` one nesting level deeper. Every recursion of the grammar
    /// passes through here, so text nested deeper than
    /// [`MAX_PARSE_DEPTH`] is a syntax error rather than a stack overflow
    /// (the parser recurses once per level).
    pub(super) fn nest<T>(&mut self, f: impl FnOnce(&mut Self) -> PResult<T>) -> PResult<T> {
        if self.depth >= MAX_PARSE_DEPTH {
            return Err(format!("syntax error: {}", too_deep_message()).into());
        }
        self.depth += 1;
        let r = f(self);
        self.depth -= 1;
        r
    }

    /// Whether `extglob` is on for what is read from now on.
    pub(crate) fn set_extglob(&mut self, on: bool) {
        self.extglob = on;
    }

    /// Sets the aliases expanded from now on.
    pub(crate) fn set_aliases(&mut self, aliases: BTreeMap<String, String>) {
        self.aliases = aliases;
    }

    /// The next complete command of a script: the commands up to the end of
    /// a line (more lines when a compound command or quote spans them), as
    /// bash reads a script, so that a syntax error further on stops nothing
    /// before it. `None` at the end of the text.
    pub(crate) fn next_command_line(&mut self) -> Option<PResult<Program>> {
        if let Err(e) = self.skip_space_nl() {
            return Some(Err(e));
        }
        if self.pos >= self.src.len() {
            return None;
        }
        Some(self.command_line())
    }

    /// Where the parser is in its text.
    pub(crate) fn position(&self) -> usize {
        self.pos
    }

    /// The text read since `start` (a [`Parser::position`]).
    pub(crate) fn text_since(&self, start: usize) -> String {
        let end = self.pos.min(self.src.len());
        self.src[start.min(end)..end].iter().collect()
    }

    /// Skips to the next line (after a syntax error, as an interactive
    /// shell discards the rest of the line it read).
    pub(crate) fn skip_line(&mut self) {
        while let Some(c) = self.peek() {
            self.pos += 1;
            if c == '\n' {
                break;
            }
        }
        self.skip_at = None;
    }

    fn command_line(&mut self) -> PResult<Program> {
        let mut items = Vec::new();
        loop {
            if self.at_end_of_list() {
                return Err(self.unexpected());
            }
            let mut item = self.and_or()?;
            self.skip_space();
            match self.peek() {
                Some(';') if !matches!(self.peek_at(1), Some(';' | '&')) => self.pos += 1,
                Some('&') if !matches!(self.peek_at(1), Some('&' | '>')) => {
                    self.pos += 1;
                    item.background = true;
                }
                Some('\n') => {
                    items.push(item);
                    self.newline()?;
                    return Ok(items);
                }
                None => {
                    items.push(item);
                    return Ok(items);
                }
                _ => return Err(self.unexpected()),
            }
            items.push(item);
            self.skip_space();
            match self.peek() {
                Some('\n') => {
                    self.newline()?;
                    return Ok(items);
                }
                None => return Ok(items),
                _ => {}
            }
        }
    }

    /// Replaces the word at the current position by its alias, when it is
    /// an unquoted word naming one not already being expanded.
    fn expand_alias(&mut self) -> bool {
        if self.aliases.is_empty() {
            return false;
        }
        let pos = self.pos;
        self.expanding.retain(|(_, end)| *end > pos);
        let Some(word) = self.peek_word() else {
            return false;
        };
        let n = word.chars().count();
        if !self.word_ends_after(n) || self.expanding.iter().any(|(w, _)| *w == word) {
            return false;
        }
        let Some(value) = self.aliases.get(&word) else {
            return false;
        };
        let value: Vec<char> = value.chars().collect();
        let blank = matches!(value.last(), Some(' ' | '\t'));
        let len = value.len();
        let shift = |at: usize| if at > pos { at + len - n } else { at };
        self.src.splice(pos..pos + n, value);
        for (_, end) in &mut self.expanding {
            *end = shift(*end);
        }
        self.alias_blank_at = self.alias_blank_at.map(shift);
        self.skip_at = self.skip_at.map(|(nl, resume)| (shift(nl), shift(resume)));
        self.newlines = newline_positions(&self.src);
        self.expanding.push((word, pos + len));
        if blank {
            self.alias_blank_at = Some(pos + len);
        }
        true
    }

    /// Whether the word at the current position follows an alias that
    /// ended in a blank (and so is checked for an alias itself).
    fn after_blank_alias(&mut self) -> bool {
        match self.alias_blank_at {
            Some(at) if self.pos >= at => {
                self.alias_blank_at = None;
                true
            }
            _ => false,
        }
    }

    /// The 1-based line of the current position.
    pub(crate) fn line_number(&self) -> usize {
        1 + self.newlines.partition_point(|&n| n < self.pos)
    }

    fn peek(&self) -> Option<char> {
        self.src.get(self.pos).copied()
    }

    fn peek_at(&self, n: usize) -> Option<char> {
        self.src.get(self.pos + n).copied()
    }

    fn starts(&self, s: &str) -> bool {
        s.chars()
            .enumerate()
            .all(|(k, c)| self.src.get(self.pos + k) == Some(&c))
    }

    fn line(&self) -> usize {
        self.line_number()
    }

    fn unexpected(&self) -> SyntaxError {
        self.unexpected_text().into()
    }

    fn unexpected_text(&self) -> String {
        match self.peek() {
            None => "syntax error: unexpected end of file".to_string(),
            Some('\n') => "syntax error near unexpected token `newline'".to_string(),
            Some(_) => {
                let tok: String = self.src[self.pos..]
                    .iter()
                    .take_while(|c| !c.is_whitespace())
                    .take(if is_meta(self.src[self.pos]) { 2 } else { 40 })
                    .collect();
                // Counted in characters: one multi-byte character is not
                // a two-character operator, and must not be cut in half.
                let tok = if tok.chars().count() == 2
                    && !matches!(tok.as_str(), ";;" | "&&" | "||" | ">>" | "<<")
                {
                    tok.chars().take(1).collect()
                } else {
                    tok
                };
                format!("syntax error near unexpected token `{tok}'")
            }
        }
    }

    /// Skips blanks, line continuations and comments (not newlines).
    fn skip_space(&mut self) {
        loop {
            match self.peek() {
                Some(' ' | '\t' | '\r') => self.pos += 1,
                Some('\\') if self.peek_at(1) == Some('\n') => self.pos += 2,
                Some('#') => {
                    while !matches!(self.peek(), None | Some('\n')) {
                        self.pos += 1;
                    }
                }
                _ => break,
            }
        }
    }

    /// Consumes one newline, reading pending here-document bodies.
    fn newline(&mut self) -> PResult<()> {
        let at = self.pos;
        self.pos += 1;
        if let Some((nl, resume)) = self.skip_at {
            if nl == at {
                self.pos = resume;
                self.skip_at = None;
            }
        }
        Ok(())
    }

    fn skip_space_nl(&mut self) -> PResult<()> {
        loop {
            self.skip_space();
            if self.peek() == Some('\n') {
                self.newline()?;
            } else {
                return Ok(());
            }
        }
    }

    /// The next bare word in command position, without consuming it.
    fn peek_word(&self) -> Option<String> {
        let mut i = self.pos;
        let mut s = String::new();
        while let Some(&c) = self.src.get(i) {
            if self.proc_sub_at(i) {
                // `do<(true)` is one word, not the reserved word `do`.
                s.push_str("<(");
                break;
            }
            if is_meta(c) || matches!(c, '"' | '\'' | '\\' | '$' | '`') {
                break;
            }
            s.push(c);
            i += 1;
        }
        if s.is_empty() {
            // `{` `}` `!` are words too, and always end before metachars.
            None
        } else {
            Some(s)
        }
    }

    fn at_reserved(&self, word: &str) -> bool {
        self.peek_word().as_deref() == Some(word)
    }

    fn expect_word(&mut self, word: &str) -> PResult<()> {
        self.skip_space_nl()?;
        if self.at_reserved(word) {
            self.pos += word.chars().count();
            Ok(())
        } else {
            Err(self.unexpected())
        }
    }

    /// A list that must hold at least one command (`if`, loop bodies...).
    fn body(&mut self) -> PResult<Program> {
        let p = self.program()?;
        if p.is_empty() {
            self.skip_space_nl()?;
            return Err(self.unexpected());
        }
        Ok(p)
    }

    /// Parses a list up to something that cannot start a command.
    pub(crate) fn program(&mut self) -> PResult<Program> {
        self.nest(Self::list)
    }

    fn list(&mut self) -> PResult<Program> {
        let mut items = Vec::new();
        loop {
            self.skip_space_nl()?;
            if self.at_end_of_list() {
                return Ok(items);
            }
            let mut item = self.and_or()?;
            self.skip_space();
            match self.peek() {
                Some(';') if self.peek_at(1) != Some(';') && self.peek_at(1) != Some('&') => {
                    self.pos += 1
                }
                Some('&') if self.peek_at(1) != Some('&') && self.peek_at(1) != Some('>') => {
                    self.pos += 1;
                    item.background = true;
                }
                Some('\n') => self.newline()?,
                _ => {
                    items.push(item);
                    return Ok(items);
                }
            }
            items.push(item);
        }
    }

    fn at_end_of_list(&self) -> bool {
        match self.peek() {
            None | Some(')') => true,
            Some(';') if matches!(self.peek_at(1), Some(';') | Some('&')) => true,
            _ => match self.peek_word() {
                Some(w) => {
                    RESERVED_END.contains(&w.as_str()) && self.word_ends_after(w.chars().count())
                }
                None => false,
            },
        }
    }

    fn word_ends_after(&self, n: usize) -> bool {
        match self.src.get(self.pos + n) {
            None => true,
            Some(&c) => is_meta(c) && !self.proc_sub_at(self.pos + n),
        }
    }

    /// Whether a process substitution `<(` or `>(` starts at `i`: it
    /// continues a word rather than ending it.
    fn proc_sub_at(&self, i: usize) -> bool {
        matches!(self.src.get(i), Some('<' | '>')) && self.src.get(i + 1) == Some(&'(')
    }

    /// The source text from `start` to the current position, blanks trimmed.
    fn text_from(&self, start: usize) -> Rc<str> {
        let end = self.pos.min(self.src.len());
        let text: String = self.src[start.min(end)..end].iter().collect();
        Rc::from(text.trim())
    }

    fn and_or(&mut self) -> PResult<Item> {
        self.skip_space();
        let start = self.pos;
        let first = self.pipeline()?;
        let mut rest = Vec::new();
        loop {
            self.skip_space();
            let and = if self.starts("&&") {
                true
            } else if self.starts("||") {
                false
            } else {
                break;
            };
            self.pos += 2;
            self.skip_space_nl()?;
            rest.push((and, self.pipeline()?));
        }
        Ok(Item {
            first,
            rest,
            background: false,
            text: self.text_from(start),
        })
    }

    fn pipeline(&mut self) -> PResult<Pipeline> {
        self.skip_space();
        let line = self.line();
        let mut negate = false;
        let mut timed = false;
        loop {
            if self.at_reserved("time") && self.word_ends_after(4) {
                self.pos += 4;
                timed = true;
                self.skip_space();
                if self.starts("-p ") {
                    self.pos += 2;
                }
            } else if self.peek() == Some('!') && self.word_ends_after(1) {
                self.pos += 1;
                negate = !negate;
            } else {
                break;
            }
            self.skip_space();
        }
        let mut cmds = vec![self.command()?];
        loop {
            self.skip_space();
            if self.peek() == Some('|') && self.peek_at(1) != Some('|') {
                let both = self.peek_at(1) == Some('&');
                self.pos += if both { 2 } else { 1 };
                if both {
                    add_redir(
                        cmds.last_mut().unwrap(),
                        Redir {
                            fd: Some(2),
                            var_fd: None,
                            op: RedirOp::DupOut,
                            target: Word::lit("1"),
                            text: Rc::from("2>&1"),
                        },
                    );
                }
                self.skip_space_nl()?;
                cmds.push(self.command()?);
            } else {
                break;
            }
        }
        Ok(Pipeline {
            negate,
            timed,
            cmds,
            line,
        })
    }

    fn command(&mut self) -> PResult<Command> {
        self.skip_space();
        if self.expand_alias() {
            return self.command();
        }
        let compound = match self.peek() {
            Some('(') if self.peek_at(1) == Some('(') => {
                if let Some(a) = self.try_arith_command()? {
                    Some(Compound::Arith(a))
                } else {
                    self.pos += 1;
                    Some(self.subshell()?)
                }
            }
            Some('(') => {
                self.pos += 1;
                Some(self.subshell()?)
            }
            _ => self.reserved_compound()?,
        };
        if let Some(c) = compound {
            let redirs = self.trailing_redirs()?;
            return Ok(Command::Compound(Box::new(c), redirs));
        }
        if self.at_reserved("function") && self.word_ends_after(8) {
            self.pos += 8;
            self.skip_space();
            let name = self.peek_word().ok_or_else(|| self.unexpected())?;
            self.pos += name.chars().count();
            self.skip_space();
            if self.starts("()") {
                self.pos += 2;
            }
            return self.function_body(name);
        }
        self.simple()
    }

    fn subshell(&mut self) -> PResult<Compound> {
        let body = self.program()?;
        self.skip_space_nl()?;
        if self.peek() != Some(')') {
            return Err(self.unexpected());
        }
        self.pos += 1;
        Ok(Compound::Subshell(body))
    }

    fn try_arith_command(&mut self) -> PResult<Option<Arith>> {
        let save = self.pos;
        self.pos += 2;
        match self.arith_text("))") {
            Some(text) => Ok(Some(self.make_arith(&text)?)),
            // Its parentheses never balance: bash's scanner reads to the
            // end looking for the `)`.
            None if self.pos >= self.src.len() => Err(SyntaxError::unclosed(')')),
            None => {
                self.pos = save;
                Ok(None)
            }
        }
    }

    /// Reads arithmetic text up to the matching `close`, or `None`.
    fn arith_text(&mut self, close: &str) -> Option<String> {
        let mut depth = 0i32;
        let mut text = String::new();
        let mut quote: Option<char> = None;
        while let Some(c) = self.peek() {
            // A backslash-newline outside single quotes joins the lines, as
            // everywhere in bash's reader.
            if c == '\\' && self.peek_at(1) == Some('\n') && quote != Some('\'') {
                self.pos += 2;
                continue;
            }
            if let Some(q) = quote {
                if c == q {
                    quote = None;
                }
            } else if depth == 0 && self.starts(close) {
                self.pos += close.chars().count();
                return Some(text);
            } else if c == '(' {
                depth += 1;
            } else if c == ')' {
                depth -= 1;
                if depth < 0 {
                    return None;
                }
            } else if c == '"' || c == '\'' {
                quote = Some(c);
            }
            text.push(c);
            self.pos += 1;
        }
        None
    }

    /// An arithmetic expression is expanded as if in double quotes, but its
    /// own double quotes are not special: they are removed (`$(( "1+2" * 3 ))`
    /// is 7), while those inside its substitutions stay theirs.
    fn make_arith(&mut self, text: &str) -> PResult<Arith> {
        if text.contains('$') || text.contains('`') || text.contains('"') || text.contains('\'') {
            let mut sub = self.nested(text);
            let parts = sub
                .dq_parts(None)?
                .into_iter()
                .map(|p| match p {
                    Part::Lit(t) => Part::Lit(t.replace('"', "")),
                    other => other,
                })
                .collect();
            return Ok(Arith::Dynamic(Word(parts)));
        }
        Ok(Arith::Static(Rc::new(arith::parse(text)), Rc::from(text)))
    }

    fn reserved_compound(&mut self) -> PResult<Option<Compound>> {
        let Some(word) = self.peek_word() else {
            return Ok(None);
        };
        let n = word.chars().count();
        if !self.word_ends_after(n) && word != "{" {
            return Ok(None);
        }
        if word == "{" && !self.word_ends_after(1) {
            return Ok(None);
        }
        let c = match word.as_str() {
            "{" => {
                self.pos += 1;
                let body = self.body()?;
                self.expect_word("}")?;
                Compound::Group(body)
            }
            "if" => {
                self.pos += 2;
                self.if_rest()?
            }
            "while" | "until" => {
                self.pos += n;
                let cond = self.body()?;
                let body = self.do_block()?;
                Compound::While {
                    until: word == "until",
                    cond,
                    body,
                }
            }
            "for" => {
                self.pos += 3;
                self.for_rest()?
            }
            "select" => {
                self.pos += 6;
                match self.for_rest()? {
                    Compound::For {
                        var,
                        words,
                        body,
                        head,
                    } => Compound::Select {
                        var,
                        words,
                        body,
                        head,
                    },
                    _ => return Err("syntax error near unexpected token `(('".into()),
                }
            }
            "case" => {
                self.pos += 4;
                self.case_rest()?
            }
            "[[" => {
                self.pos += 2;
                let start = self.pos;
                let c = self
                    .cond_or()
                    .and_then(|c| {
                        self.skip_space();
                        if self.starts("]]") {
                            Ok(c)
                        } else {
                            Err(self.unexpected())
                        }
                    })
                    .map_err(|e| self.cond_error(e))?;
                let text = self.text_from(start);
                self.pos += 2;
                Compound::Cond(c, text)
            }
            _ => return Ok(None),
        };
        Ok(Some(c))
    }

    fn if_rest(&mut self) -> PResult<Compound> {
        let mut branches = Vec::new();
        let mut otherwise = None;
        loop {
            let cond = self.body()?;
            self.expect_word("then")?;
            let body = self.body()?;
            branches.push((cond, body));
            self.skip_space_nl()?;
            if self.at_reserved("elif") {
                self.pos += 4;
                continue;
            }
            if self.at_reserved("else") {
                self.pos += 4;
                otherwise = Some(self.body()?);
            }
            self.expect_word("fi")?;
            return Ok(Compound::If {
                branches,
                otherwise,
            });
        }
    }

    fn do_block(&mut self) -> PResult<Program> {
        self.skip_space_nl()?;
        if self.at_reserved("{") {
            // `for x in a; { ...; }` (bash accepts it)
            self.pos += 1;
            let body = self.program()?;
            self.expect_word("}")?;
            return Ok(body);
        }
        self.expect_word("do")?;
        let body = self.body()?;
        self.expect_word("done")?;
        Ok(body)
    }

    fn for_rest(&mut self) -> PResult<Compound> {
        self.skip_space();
        if self.starts("((") {
            self.pos += 2;
            let text = self
                .arith_text("))")
                .ok_or_else(|| SyntaxError::unclosed(')'))?;
            let parts: Vec<&str> = split_top(&text, ';');
            if parts.len() != 3 {
                return Err("syntax error: arithmetic expression required".into());
            }
            let head = [0, 1, 2].map(|i| Rc::from(parts[i].trim()));
            let mut ariths = Vec::new();
            for p in parts {
                ariths.push(if p.trim().is_empty() {
                    None
                } else {
                    Some(self.make_arith(p)?)
                });
            }
            self.skip_space();
            if self.peek() == Some(';') {
                self.pos += 1;
            }
            let body = self.do_block()?;
            let mut it = ariths.into_iter();
            return Ok(Compound::ArithFor {
                init: it.next().flatten(),
                cond: it.next().flatten(),
                step: it.next().flatten(),
                body,
                head,
            });
        }
        let head_start = self.pos;
        let var = self.peek_word().ok_or_else(|| self.unexpected())?;
        self.pos += var.chars().count();
        if !is_name(&var) {
            return Err(format!("`{var}': not a valid identifier").into());
        }
        self.skip_space_nl()?;
        let mut words = None;
        if self.at_reserved("in") && self.word_ends_after(2) {
            self.pos += 2;
            let mut list = Vec::new();
            loop {
                self.skip_space();
                match self.peek() {
                    None | Some('\n' | ';') => break,
                    _ => {
                        let w = self.word()?;
                        list.extend(brace_expand(w)?);
                    }
                }
            }
            words = Some(list);
        }
        let head = self.text_from(head_start);
        self.skip_space();
        if matches!(self.peek(), Some(';')) {
            self.pos += 1;
        }
        let body = self.do_block()?;
        Ok(Compound::For {
            var,
            words,
            body,
            head,
        })
    }

    fn case_rest(&mut self) -> PResult<Compound> {
        self.skip_space();
        let head_start = self.pos;
        let word = self.word()?;
        let head = self.text_from(head_start);
        self.expect_word("in")?;
        let mut arms = Vec::new();
        loop {
            self.skip_space_nl()?;
            if self.at_reserved("esac") {
                self.pos += 4;
                return Ok(Compound::Case { word, arms, head });
            }
            if self.peek() == Some('(') {
                self.pos += 1;
            }
            let mut patterns = Vec::new();
            let mut pattern_text = Vec::new();
            loop {
                self.skip_space();
                let start = self.pos;
                patterns.push(self.word()?);
                pattern_text.push(self.text_from(start));
                self.skip_space();
                match self.peek() {
                    Some('|') => self.pos += 1,
                    Some(')') => {
                        self.pos += 1;
                        break;
                    }
                    _ => return Err(self.unexpected()),
                }
            }
            let body = self.program()?;
            self.skip_space_nl()?;
            let term = if self.starts(";;&") {
                self.pos += 3;
                CaseTerm::Continue
            } else if self.starts(";;") {
                self.pos += 2;
                CaseTerm::Break
            } else if self.starts(";&") {
                self.pos += 2;
                CaseTerm::FallThrough
            } else if self.at_reserved("esac") {
                CaseTerm::Break
            } else {
                return Err(self.unexpected());
            };
            arms.push(CaseArm {
                patterns,
                pattern_text,
                body,
                term,
            });
        }
    }

    // ---- [[ ]] ----

    fn cond_or(&mut self) -> PResult<Cond> {
        let mut l = self.cond_and()?;
        loop {
            self.skip_space_nl()?;
            if self.starts("||") {
                self.pos += 2;
                let r = self.cond_and()?;
                l = Cond::Or(Box::new(l), Box::new(r));
            } else {
                return Ok(l);
            }
        }
    }

    fn cond_and(&mut self) -> PResult<Cond> {
        let mut l = self.cond_not()?;
        loop {
            self.skip_space_nl()?;
            if self.starts("&&") {
                self.pos += 2;
                let r = self.cond_not()?;
                l = Cond::And(Box::new(l), Box::new(r));
            } else {
                return Ok(l);
            }
        }
    }

    fn cond_not(&mut self) -> PResult<Cond> {
        self.skip_space_nl()?;
        // With extglob on, `!(...)` is a pattern word, not a negation.
        let ext_word = self.extglob && self.peek_at(1) == Some('(');
        if self.peek() == Some('!') && self.word_ends_after(1) && !ext_word {
            self.pos += 1;
            return Ok(Cond::Not(Box::new(self.nest(Self::cond_not)?)));
        }
        if self.peek() == Some('(') {
            self.pos += 1;
            let c = self.nest(Self::cond_or)?;
            self.skip_space_nl()?;
            if self.peek() != Some(')') {
                return Err(self.unexpected());
            }
            self.pos += 1;
            return Ok(c);
        }
        self.cond_primary()
    }

    /// A syntax error inside `[[ ]]` that ran into the end of the text
    /// leaves `[[` open, as bash's scanner reports it. Others end a script
    /// with status 2, as the spec tests record (bash 5.2.15 keeps the
    /// status instead, a difference of that release).
    fn cond_error(&self, e: SyntaxError) -> SyntaxError {
        match e.kind {
            SyntaxKind::Grammar if self.pos >= self.src.len() => SyntaxError {
                kind: SyntaxKind::Unclosed,
                ..e
            },
            _ => e,
        }
    }

    fn cond_word(&mut self) -> PResult<Word> {
        self.skip_space();
        if self.starts("]]") || matches!(self.peek(), None | Some('\n')) {
            return Err(self.unexpected());
        }
        self.word()
    }

    fn cond_primary(&mut self) -> PResult<Cond> {
        let first = self.cond_word()?;
        if let Some(op) = first.as_lit() {
            if is_unary_test(op) {
                if self.cond_next_is_end() {
                    return Err("unexpected argument `]]' to conditional unary operator".into());
                }
                let op = op.to_string();
                let arg = self.cond_word()?;
                return Ok(Cond::Unary(op, arg));
            }
        }
        self.skip_space();
        let op = if self.peek() == Some('<') || self.peek() == Some('>') {
            let c = self.peek().unwrap();
            self.pos += 1;
            Some(c.to_string())
        } else {
            match self.peek_word() {
                Some(w)
                    if matches!(
                        w.as_str(),
                        "==" | "="
                            | "!="
                            | "=~"
                            | "-eq"
                            | "-ne"
                            | "-lt"
                            | "-le"
                            | "-gt"
                            | "-ge"
                            | "-nt"
                            | "-ot"
                            | "-ef"
                    ) =>
                {
                    self.pos += w.chars().count();
                    Some(w)
                }
                _ => None,
            }
        };
        let Some(op) = op else {
            return Ok(Cond::Word(first));
        };
        self.skip_space();
        let right = if op == "=~" {
            self.regex_word()?
        } else {
            self.cond_word()?
        };
        Ok(Cond::Binary(op, first, right))
    }

    fn cond_next_is_end(&self) -> bool {
        let mut i = self.pos;
        while matches!(self.src.get(i), Some(' ' | '\t')) {
            i += 1;
        }
        matches!(self.src.get(i), None | Some('\n'))
            || (self.src.get(i) == Some(&']') && self.src.get(i + 1) == Some(&']'))
            || (self.src.get(i) == Some(&'&') && self.src.get(i + 1) == Some(&'&'))
            || (self.src.get(i) == Some(&'|') && self.src.get(i + 1) == Some(&'|'))
    }

    /// The right side of `=~`: a word in which parentheses nest (and may
    /// hold blanks), and a leading `~` expands.
    fn regex_word(&mut self) -> PResult<Word> {
        let mut parts = Vec::new();
        let mut depth = 0;
        let mut lit = String::new();
        let start = self.pos;
        while let Some(c) = self.peek() {
            if depth == 0 && (c == ' ' || c == '\t' || c == '\n') {
                break;
            }
            if depth == 0 && (self.starts("]]") || self.starts("&&") || self.starts("||")) {
                break;
            }
            match c {
                '~' if self.pos == start => self.tilde(&mut parts, &mut lit),
                '<' | '>' if self.peek_at(1) == Some('(') => {
                    self.proc_sub(&mut parts, &mut lit, c)?;
                }
                '(' => {
                    depth += 1;
                    lit.push(c);
                    self.pos += 1;
                }
                ')' if depth > 0 => {
                    depth -= 1;
                    lit.push(c);
                    self.pos += 1;
                }
                ')' => break,
                '\'' | '"' | '$' | '`' | '\\' => {
                    if !lit.is_empty() {
                        parts.push(Part::Lit(std::mem::take(&mut lit)));
                    }
                    self.word_piece(&mut parts, &mut lit, false)?;
                }
                _ => {
                    lit.push(c);
                    self.pos += 1;
                }
            }
        }
        if !lit.is_empty() {
            parts.push(Part::Lit(lit));
        }
        Ok(Word(parts))
    }

    // ---- simple commands ----

    fn trailing_redirs(&mut self) -> PResult<Vec<Redir>> {
        let mut redirs = Vec::new();
        loop {
            self.skip_space();
            match self.try_redir()? {
                Some(r) => redirs.push(r),
                None => return Ok(redirs),
            }
        }
    }

    fn simple(&mut self) -> PResult<Command> {
        let line = self.line();
        let start = self.pos;
        let mut cmd = Simple {
            assigns: Vec::new(),
            words: Vec::new(),
            redirs: Vec::new(),
            line,
            text: Rc::from(""),
        };
        // The first word as written, the name if `()` follows it.
        let mut first_word = String::new();
        loop {
            self.skip_space();
            if let Some(r) = self.try_redir()? {
                cmd.redirs.push(r);
                continue;
            }
            let Some(c) = self.peek() else { break };
            let procsub = matches!(c, '<' | '>') && self.peek_at(1) == Some('(');
            if is_meta(c) && !procsub {
                if c == '(' && cmd.words.len() == 1 && cmd.assigns.is_empty() {
                    let save = self.pos;
                    self.pos += 1;
                    self.skip_space();
                    if self.peek() == Some(')') {
                        // A name with expansions is kept as written; bash
                        // refuses it when it runs (see `define_function`).
                        let name = match cmd.words[0].as_lit() {
                            Some(l) => l.to_string(),
                            None => first_word.clone(),
                        };
                        self.pos += 1;
                        return self.function_body(name);
                    }
                    self.pos = save;
                }
                if c == '(' {
                    return Err(self.unexpected());
                }
                break;
            }
            if cmd.words.is_empty() {
                if let Some(a) = self.try_assign()? {
                    cmd.assigns.push(a);
                    continue;
                }
            } else if is_decl(&cmd.words[0]) {
                if let Some(a) = self.try_assign()? {
                    cmd.words.push(assign_word(a));
                    continue;
                }
            } else if let Some(w) = self.compound_text_word(&cmd.words[0])? {
                cmd.words.push(w);
                continue;
            }
            let blank_alias = self.after_blank_alias();
            if (cmd.words.is_empty() || blank_alias) && self.expand_alias() {
                continue;
            }
            let word_start = self.pos;
            let w = self.word()?;
            if cmd.words.is_empty() {
                first_word = self.src[word_start..self.pos].iter().collect();
            }
            if cmd.words.is_empty() && cmd.assigns.is_empty() && cmd.redirs.is_empty() {
                if let Some(l) = w.as_lit() {
                    if matches!(
                        l,
                        "then" | "else" | "elif" | "fi" | "do" | "done" | "esac" | "}" | ")" | "in"
                    ) {
                        return Err(format!("syntax error near unexpected token `{l}'").into());
                    }
                }
            }
            cmd.words.extend(brace_expand(w)?);
        }
        if cmd.words.is_empty() && cmd.assigns.is_empty() && cmd.redirs.is_empty() {
            return Err(self.unexpected());
        }
        cmd.text = self.text_from(start);
        Ok(Command::Simple(cmd))
    }

    fn function_body(&mut self, name: String) -> PResult<Command> {
        self.skip_space_nl()?;
        let body = self.command()?;
        if !matches!(body, Command::Compound(..)) {
            return Err(self.unexpected());
        }
        Ok(Command::Function(Rc::new(Function { name, body })))
    }

    fn try_assign(&mut self) -> PResult<Option<Assign>> {
        let start = self.pos;
        let mut name = String::new();
        while let Some(c) = self.peek() {
            if c.is_ascii_alphanumeric() || c == '_' {
                name.push(c);
                self.pos += 1;
            } else {
                break;
            }
        }
        if !is_name(&name) {
            self.pos = start;
            return Ok(None);
        }
        let mut index = None;
        if self.peek() == Some('[') {
            self.pos += 1;
            let text_start = self.pos;
            let mut depth = 0;
            loop {
                match self.peek() {
                    None | Some('\n') => {
                        self.pos = start;
                        return Ok(None);
                    }
                    Some('[') => depth += 1,
                    Some(']') if depth == 0 => break,
                    Some(']') => depth -= 1,
                    _ => {}
                }
                self.pos += 1;
            }
            let text: String = self.src[text_start..self.pos].iter().collect();
            self.pos += 1;
            index = Some(Parser::index_word(&text)?);
        }
        let append = self.starts("+=");
        if append {
            self.pos += 1;
        }
        if self.peek() != Some('=') {
            self.pos = start;
            return Ok(None);
        }
        self.pos += 1;
        // `a[0]=(x)` parses too; assigning it fails (see `Shell::assign`).
        if self.peek() == Some('(') {
            self.pos += 1;
            // Any error inside the list is the compound assignment's.
            let elems = self.array_elems().map_err(|e| SyntaxError {
                kind: SyntaxKind::Assignment,
                ..e
            })?;
            return Ok(Some(Assign {
                name,
                index,
                append,
                value: AssignValue::Array(elems),
            }));
        }
        let value = match self.peek() {
            None => Word::default(),
            Some(c) if is_meta(c) && !(matches!(c, '<' | '>') && self.peek_at(1) == Some('(')) => {
                Word::default()
            }
            _ => self.word_mode(true)?,
        };
        Ok(Some(Assign {
            name,
            index,
            append,
            value: AssignValue::Scalar(value),
        }))
    }

    fn array_elems(&mut self) -> PResult<Vec<ArrayElem>> {
        let mut elems = Vec::new();
        loop {
            self.skip_space_nl()?;
            match self.peek() {
                Some(')') => {
                    self.pos += 1;
                    return Ok(elems);
                }
                None => return Err(SyntaxError::unclosed(')')),
                _ => {}
            }
            if self.peek() == Some('[') {
                let save = self.pos;
                if let Some(close) = self.matching_bracket(self.pos) {
                    let append = self.src.get(self.pos + close + 1) == Some(&'+');
                    let eq = self.pos + close + 1 + usize::from(append);
                    if self.src.get(eq) == Some(&'=') {
                        let text: String =
                            self.src[self.pos + 1..self.pos + close].iter().collect();
                        self.pos = eq + 1;
                        let key = (Parser::index_word(&text)?, append);
                        let value = match self.peek() {
                            Some(c) if is_meta(c) => Word::default(),
                            None => Word::default(),
                            _ => self.word_mode(true)?,
                        };
                        let braced = self.element_braced(save)?;
                        elems.push(ArrayElem {
                            key: Some(key),
                            value,
                            braced,
                        });
                        continue;
                    }
                }
                self.pos = save;
            }
            let w = self.word()?;
            for value in brace_expand(w)? {
                elems.push(ArrayElem {
                    key: None,
                    value,
                    braced: Vec::new(),
                });
            }
        }
    }

    /// The keyed element from `start` to here read again as a plain word
    /// and brace-expanded: its words when there are several (see
    /// [`ArrayElem::braced`]), else none.
    fn element_braced(&mut self, start: usize) -> PResult<Vec<Word>> {
        let end = self.pos;
        if !self.src[start..end].contains(&'{') {
            return Ok(Vec::new());
        }
        self.pos = start;
        let whole = self.word();
        let same_end = self.pos == end;
        self.pos = end;
        match whole {
            Ok(w) if same_end => {
                let words = brace_expand(w)?;
                Ok(if words.len() > 1 { words } else { Vec::new() })
            }
            _ => Ok(Vec::new()),
        }
    }

    /// Offset from `start` (a `[`) of the `]` closing it, nesting counted.
    fn matching_bracket(&self, start: usize) -> Option<usize> {
        let mut depth = 0usize;
        for (i, &c) in self.src[start..].iter().enumerate() {
            match c {
                '[' => depth += 1,
                ']' => {
                    depth -= 1;
                    if depth == 0 {
                        return Some(i);
                    }
                }
                _ => {}
            }
        }
        None
    }

    fn try_redir(&mut self) -> PResult<Option<Redir>> {
        let start = self.pos;
        let mut fd = None;
        let mut var_fd = None;
        let mut digits = String::new();
        while let Some(c) = self.peek().filter(|c| c.is_ascii_digit()) {
            digits.push(c);
            self.pos += 1;
        }
        if !digits.is_empty() {
            fd = digits.parse().ok();
        } else if self.peek() == Some('{') {
            if let Some(close) = self.src[self.pos..].iter().position(|&c| c == '}') {
                let name: String = self.src[self.pos + 1..self.pos + close].iter().collect();
                let after = self.src.get(self.pos + close + 1);
                if is_name(&name) && matches!(after, Some('<' | '>')) {
                    var_fd = Some(name);
                    self.pos += close + 1;
                }
            }
        }
        let ops: &[(&str, RedirOp)] = &[
            ("&>>", RedirOp::AllAppend),
            ("&>", RedirOp::AllOut),
            ("<<<", RedirOp::HereString),
            ("<<-", RedirOp::HereDoc),
            ("<<", RedirOp::HereDoc),
            ("<&", RedirOp::DupIn),
            ("<>", RedirOp::ReadWrite),
            (">>", RedirOp::Append),
            (">&", RedirOp::DupOut),
            (">|", RedirOp::Clobber),
            ("<", RedirOp::In),
            (">", RedirOp::Out),
        ];
        let Some(&(tok, op)) = ops.iter().find(|(t, _)| self.starts(t)) else {
            self.pos = start;
            return Ok(None);
        };
        if (tok.starts_with('<') || tok.starts_with('>'))
            && self.peek_at(1) == Some('(')
            && tok.len() == 1
        {
            // process substitution: a word, not a redirection
            self.pos = start;
            return Ok(None);
        }
        if fd.is_some() && tok.starts_with('&') {
            self.pos = start;
            return Ok(None);
        }
        self.pos += tok.len();
        self.skip_space();
        if op == RedirOp::HereDoc {
            let strip_tabs = tok == "<<-";
            let word_start = self.pos;
            self.word()?;
            let raw: String = self.src[word_start..self.pos].iter().collect();
            let (delim, quoted) = heredoc_delim(&raw);
            let head = self.text_from(start);
            let (body, lines) = self.heredoc_body(&delim, quoted, strip_tabs)?;
            return Ok(Some(Redir {
                fd,
                var_fd,
                op,
                target: body,
                text: Rc::from(format!("{head}\n{lines}")),
            }));
        }
        if matches!(self.peek(), None | Some('\n' | ';' | '|' | '&')) {
            return Err(self.unexpected());
        }
        let target = self.word()?;
        Ok(Some(Redir {
            fd,
            var_fd,
            op,
            target,
            text: self.text_from(start),
        }))
    }
}

fn newline_positions(src: &[char]) -> Vec<usize> {
    src.iter()
        .enumerate()
        .filter(|(_, &c)| c == '\n')
        .map(|(i, _)| i)
        .collect()
}

/// Splits at `sep` outside parentheses.
fn split_top(text: &str, sep: char) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            c if c == sep && depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

/// The unary operators of `[[ ]]` and `test`.
pub(crate) fn is_unary_test(op: &str) -> bool {
    matches!(
        op,
        "-a" | "-b"
            | "-c"
            | "-d"
            | "-e"
            | "-f"
            | "-g"
            | "-h"
            | "-k"
            | "-p"
            | "-r"
            | "-s"
            | "-t"
            | "-u"
            | "-w"
            | "-x"
            | "-G"
            | "-L"
            | "-N"
            | "-O"
            | "-S"
            | "-z"
            | "-n"
            | "-o"
            | "-v"
            | "-R"
    )
}

impl Parser {
    /// `let x=( 1 )`, `eval a=(1 2)`: bash reads a compound assignment
    /// after these too, and passes its text, expanded but not split, as
    /// one argument.
    fn compound_text_word(&mut self, command: &Word) -> PResult<Option<Word>> {
        if !matches!(command.as_lit(), Some("let" | "eval")) {
            return Ok(None);
        }
        let start = self.pos;
        match self.try_assign()? {
            Some(Assign {
                value: AssignValue::Array(_),
                ..
            }) => {
                let text: String = self.src[start..self.pos].iter().collect();
                let parts = self.nested(&text).dq_parts(None)?;
                Ok(Some(Word(vec![Part::Double(parts)])))
            }
            _ => {
                self.pos = start;
                Ok(None)
            }
        }
    }
}

fn is_decl(word: &Word) -> bool {
    matches!(
        word.as_lit(),
        Some("declare" | "typeset" | "local" | "export" | "readonly")
    )
}

/// `declare a=1`: one unsplit word; `declare a=(1 2)`: the assignment itself,
/// done after the builtin has declared the name.
fn assign_word(a: Assign) -> Word {
    let mut parts = vec![Part::Quoted(a.name.clone())];
    if let Some(index) = &a.index {
        parts.push(Part::Quoted("[".into()));
        parts.push(Part::Double(index.0.clone()));
        parts.push(Part::Quoted("]".into()));
    }
    parts.push(Part::Quoted(if a.append { "+=" } else { "=" }.into()));
    match &a.value {
        AssignValue::Scalar(w) => parts.push(Part::Double(w.0.clone())),
        AssignValue::Array(_) => return Word(vec![Part::ArrayAssign(Rc::new(a))]),
    }
    Word(parts)
}

fn add_redir(cmd: &mut Command, r: Redir) {
    match cmd {
        Command::Simple(s) => s.redirs.push(r),
        Command::Compound(_, redirs) => redirs.push(r),
        Command::Function(_) => {}
    }
}

/// A here-document's delimiter: the word as written, with quotes removed
/// (but not inside `$(...)` or `${...}`) and nothing expanded (`<<${a}`
/// ends at a line `${a}`); whether any of it was quoted (then the body is
/// not expanded).
fn heredoc_delim(raw: &str) -> (String, bool) {
    let mut text = String::new();
    let mut quoted = false;
    let mut quote: Option<char> = None;
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        // `$(...)` and `${...}` are kept as written, quotes inside included.
        if quote.is_none() && c == '$' && matches!(chars.peek(), Some('(' | '{')) {
            let mut depth = 0;
            text.push(c);
            for c in chars.by_ref() {
                text.push(c);
                match c {
                    '(' | '{' => depth += 1,
                    ')' | '}' => depth -= 1,
                    _ => {}
                }
                if depth == 0 {
                    break;
                }
            }
            continue;
        }
        match (quote, c) {
            (None, '\'' | '"') => {
                quoted = true;
                quote = Some(c);
            }
            (Some(q), _) if c == q => quote = None,
            (None, '\\') => {
                quoted = true;
                text.extend(chars.next());
            }
            (Some('"'), '\\')
                if chars
                    .peek()
                    .is_some_and(|n| matches!(n, '$' | '`' | '"' | '\\')) =>
            {
                text.extend(chars.next());
            }
            _ => text.push(c),
        }
    }
    (text, quoted)
}

#[path = "words.rs"]
mod words;
pub(crate) use words::{brace_expand, valid_name};
