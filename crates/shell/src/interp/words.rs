//! Word-level parsing: quotes, `$` expansions, backquotes, here-document
//! bodies, and brace expansion.

use std::rc::Rc;

use super::{is_meta, is_name, PResult, Parser, SyntaxError};
use crate::interp::ast::*;

impl Parser {
    pub(super) fn word(&mut self) -> PResult<Word> {
        self.word_mode(false)
    }

    /// Reads one word up to a metacharacter; `assign` enables `~` after `:`.
    pub(super) fn word_mode(&mut self, assign: bool) -> PResult<Word> {
        let mut parts = Vec::new();
        let mut lit = String::new();
        let start = self.pos;
        while let Some(c) = self.peek() {
            if is_meta(c) {
                if matches!(c, '<' | '>') && self.peek_at(1) == Some('(') {
                    self.proc_sub(&mut parts, &mut lit, c)?;
                    continue;
                }
                break;
            }
            match c {
                '~' if self.pos == start || (assign && lit.ends_with(':')) => {
                    flush(&mut parts, &mut lit);
                    self.tilde(&mut parts, &mut lit);
                }
                '@' | '*' | '+' | '?' | '!' if self.peek_at(1) == Some('(') => {
                    self.extglob(&mut parts, &mut lit)?;
                }
                '\\' | '\'' | '"' | '$' | '`' => {
                    flush(&mut parts, &mut lit);
                    self.word_piece(&mut parts, &mut lit, false)?;
                }
                _ => {
                    lit.push(c);
                    self.pos += 1;
                }
            }
        }
        flush(&mut parts, &mut lit);
        if self.pos == start {
            return Err(self.unexpected());
        }
        Ok(Word(parts))
    }

    /// `<(list)` or `>(list)`, at `c` (`<` or `>`).
    pub(super) fn proc_sub(
        &mut self,
        parts: &mut Vec<Part>,
        lit: &mut String,
        c: char,
    ) -> PResult<()> {
        flush(parts, lit);
        self.pos += 2;
        let prog = self.program()?;
        self.close_paren()?;
        parts.push(Part::ProcSub(Rc::new(prog), c == '<'));
        Ok(())
    }

    /// An array subscript's text as a word: quotes removed, expansions kept.
    pub(crate) fn index_word(text: &str) -> PResult<Word> {
        let mut sub = Parser::new(&format!("{text}\u{0}"));
        sub.param_word(&['\u{0}'])
    }

    fn close_paren(&mut self) -> PResult<()> {
        self.skip_space_nl()?;
        if self.peek() != Some(')') {
            return Err(self.unexpected());
        }
        self.pos += 1;
        Ok(())
    }

    pub(super) fn tilde(&mut self, parts: &mut Vec<Part>, lit: &mut String) {
        let mut i = self.pos + 1;
        let mut name = String::new();
        while let Some(&c) = self.src.get(i) {
            if c == '/' || c == ':' || c == '}' || is_meta(c) {
                break;
            }
            if !is_tilde_name_char(c) {
                lit.push('~');
                self.pos += 1;
                return;
            }
            name.push(c);
            i += 1;
        }
        self.pos = i;
        parts.push(Part::Tilde(name));
    }

    /// An extended glob `@(a|b)`: its operators are pattern text, what is
    /// inside is expanded as any word is (`@($x|'lit')`), blanks included.
    fn extglob(&mut self, parts: &mut Vec<Part>, lit: &mut String) -> PResult<()> {
        let mut depth = 0;
        while let Some(c) = self.peek() {
            match c {
                '\\' | '\'' | '"' | '$' | '`' => {
                    flush(parts, lit);
                    self.word_piece(parts, lit, false)?;
                    continue;
                }
                '(' => depth += 1,
                ')' => depth -= 1,
                _ => {}
            }
            lit.push(c);
            self.pos += 1;
            if depth == 0 && c == ')' {
                return Ok(());
            }
        }
        Ok(())
    }

    /// One quoted piece or expansion at `\`, `'`, `"`, `$` or a backquote.
    pub(super) fn word_piece(
        &mut self,
        parts: &mut Vec<Part>,
        lit: &mut String,
        in_dq: bool,
    ) -> PResult<()> {
        let c = self.peek().unwrap_or(' ');
        match c {
            '\\' => {
                self.pos += 1;
                match self.peek() {
                    Some('\n') => self.pos += 1,
                    Some(n) => {
                        self.pos += 1;
                        parts.push(Part::Quoted(n.to_string()));
                    }
                    None => lit.push('\\'),
                }
            }
            '\'' => {
                self.pos += 1;
                let mut s = String::new();
                loop {
                    match self.peek() {
                        None => return Err(SyntaxError::unclosed('\'')),
                        Some('\'') => break,
                        Some(ch) => s.push(ch),
                    }
                    self.pos += 1;
                }
                self.pos += 1;
                parts.push(Part::Quoted(s));
            }
            '"' => {
                self.pos += 1;
                let inner = self.dq_parts(Some('"'))?;
                parts.push(Part::Double(inner));
            }
            '`' => parts.push(self.backquote(in_dq)?),
            _ => parts.push(self.dollar(in_dq)?),
        }
        Ok(())
    }

    /// Double-quoted content up to `stop` (or the end of input).
    pub(crate) fn dq_parts(&mut self, stop: Option<char>) -> PResult<Vec<Part>> {
        self.dq_parts_mode(stop, false)
    }

    fn dq_parts_mode(&mut self, stop: Option<char>, doc: bool) -> PResult<Vec<Part>> {
        let mut parts = Vec::new();
        let mut lit = String::new();
        loop {
            let Some(c) = self.peek() else {
                if stop.is_some() {
                    return Err(SyntaxError::unclosed('"'));
                }
                break;
            };
            if Some(c) == stop {
                self.pos += 1;
                break;
            }
            match c {
                '\\' => {
                    let n = self.peek_at(1);
                    let special =
                        matches!(n, Some('$' | '`' | '\\' | '\n')) || (!doc && n == Some('"'));
                    if special {
                        if n != Some('\n') {
                            lit.push(n.unwrap());
                        }
                        self.pos += 2;
                    } else {
                        lit.push('\\');
                        self.pos += 1;
                    }
                }
                '$' | '`' => {
                    flush(&mut parts, &mut lit);
                    let mut inner_lit = String::new();
                    self.word_piece(&mut parts, &mut inner_lit, true)?;
                    lit.push_str(&inner_lit);
                }
                _ => {
                    lit.push(c);
                    self.pos += 1;
                }
            }
        }
        flush(&mut parts, &mut lit);
        Ok(parts)
    }

    /// `` `cmd` ``: inside it `\``, `\\` and `\$` (and `\"` within double
    /// quotes) stand for the character itself.
    fn backquote(&mut self, in_dq: bool) -> PResult<Part> {
        self.pos += 1;
        let mut text = String::new();
        loop {
            match self.peek() {
                None => return Err(SyntaxError::unclosed('`')),
                Some('`') => break,
                Some('\\')
                    if matches!(self.peek_at(1), Some('`' | '\\' | '$'))
                        || (in_dq && self.peek_at(1) == Some('"')) =>
                {
                    text.push(self.peek_at(1).unwrap());
                    self.pos += 2;
                    continue;
                }
                Some(c) => text.push(c),
            }
            self.pos += 1;
        }
        self.pos += 1;
        let prog = super::parse_nested_script(&text, self.depth)?;
        Ok(Part::Command(Rc::new(prog)))
    }

    fn dollar(&mut self, in_dq: bool) -> PResult<Part> {
        self.pos += 1;
        // A line continuation may split `$` from its name: `$\<newline>?`.
        while self.peek() == Some('\\') && self.peek_at(1) == Some('\n') {
            self.pos += 2;
        }
        let Some(c) = self.peek() else {
            return Ok(Part::Lit("$".into()));
        };
        match c {
            '(' if self.peek_at(1) == Some('(') => {
                let save = self.pos;
                self.pos += 2;
                if let Some(text) = self.arith_text("))") {
                    return Ok(Part::Arith(self.make_arith(&text)?));
                }
                if self.pos >= self.src.len() {
                    return Err(SyntaxError::unclosed(')'));
                }
                self.pos = save + 1;
                let prog = self.program()?;
                self.close_paren()?;
                Ok(Part::Command(Rc::new(prog)))
            }
            '(' => {
                self.pos += 1;
                let prog = self.program()?;
                self.close_paren()?;
                Ok(Part::Command(Rc::new(prog)))
            }
            // `$[expr]`: bash's old spelling of `$((expr))`.
            '[' => {
                let save = self.pos;
                self.pos += 1;
                match self.bracket_arith_text() {
                    Some(text) => Ok(Part::Arith(self.make_arith(&text)?)),
                    None => {
                        self.pos = save;
                        Ok(Part::Lit("$".into()))
                    }
                }
            }
            // `${ list; }` and `${|list; }`: bash 5.3's command substitution
            // run in the current shell (the second's value is `$REPLY`).
            '{' if matches!(self.peek_at(1), Some(' ' | '\t' | '\n' | '|')) => {
                self.pos += 1;
                let reply = self.peek() == Some('|');
                if reply {
                    self.pos += 1;
                }
                let saved = std::mem::replace(&mut self.in_dq, false);
                let prog = self.program();
                self.in_dq = saved;
                let prog = prog?;
                self.skip_space_nl()?;
                if self.peek() != Some('}') {
                    return Err(self.unexpected());
                }
                self.pos += 1;
                Ok(Part::FunSub(Rc::new(prog), reply))
            }
            '{' => {
                self.pos += 1;
                let start = self.pos;
                let saved = std::mem::replace(&mut self.in_dq, in_dq);
                let r = self.nest(Self::braced_param);
                self.in_dq = saved;
                match r {
                    // bash reports a bad substitution when it expands it,
                    // so code that never runs may hold one.
                    Err(e) if e.message == "bad substitution" => self.bad_substitution(start),
                    other => other,
                }
            }
            '\'' if !in_dq => {
                self.pos += 1;
                Ok(Part::Quoted(self.ansi_c()?))
            }
            '"' if !in_dq => {
                self.pos += 1;
                Ok(Part::Double(self.dq_parts(Some('"'))?))
            }
            c if c.is_ascii_alphabetic() || c == '_' => {
                let mut name = String::new();
                while let Some(ch) = self
                    .peek()
                    .filter(|ch| ch.is_ascii_alphanumeric() || *ch == '_')
                {
                    name.push(ch);
                    self.pos += 1;
                }
                Ok(simple_param(name))
            }
            c if c.is_ascii_digit() || matches!(c, '@' | '*' | '#' | '?' | '$' | '!' | '-') => {
                self.pos += 1;
                Ok(simple_param(c.to_string()))
            }
            _ => Ok(Part::Lit("$".into())),
        }
    }

    /// The text of `$[...]` up to its matching `]`.
    fn bracket_arith_text(&mut self) -> Option<String> {
        let mut depth = 0;
        let mut text = String::new();
        while let Some(c) = self.peek() {
            self.pos += 1;
            match c {
                '[' => depth += 1,
                ']' if depth == 0 => return Some(text),
                ']' => depth -= 1,
                _ => {}
            }
            text.push(c);
        }
        None
    }

    /// `${...}` that does not parse, from `start` (after `${`) to its first
    /// `}` (a bare `{` does not nest, as in [`Self::param_word`]).
    fn bad_substitution(&mut self, start: usize) -> PResult<Part> {
        self.pos = start;
        while let Some(c) = self.peek() {
            self.pos += 1;
            if c == '}' {
                let text: String = self.src[start - 2..self.pos].iter().collect();
                return Ok(Part::BadSubst(Rc::from(text)));
            }
        }
        Err(SyntaxError::unclosed('}'))
    }

    fn ansi_c(&mut self) -> PResult<String> {
        let mut raw = String::new();
        loop {
            match self.peek() {
                None => return Err(SyntaxError::unclosed('\'')),
                Some('\'') => break,
                Some('\\') => {
                    raw.push('\\');
                    if let Some(n) = self.peek_at(1) {
                        raw.push(n);
                        self.pos += 1;
                    }
                }
                Some(c) => raw.push(c),
            }
            self.pos += 1;
        }
        self.pos += 1;
        let mut text =
            crate::interp::printf::unescape(&raw, crate::interp::printf::Escapes::Text).0;
        // A value cannot hold NUL: `$'a\0b'` is `a`.
        if let Some(nul) = text.find('\0') {
            text.truncate(nul);
        }
        Ok(text)
    }

    /// After `${`, at `#`: whether it is `${#name}` (a length) rather than
    /// the parameter `#` with an operator (`${#-x}`, `${##2}`, `${###}`):
    /// a length needs a whole parameter name, then `}` or `[`.
    fn is_length_op(&self) -> bool {
        let at = |n: usize| self.peek_at(n);
        let end = match at(1) {
            Some(c) if c.is_ascii_alphabetic() || c == '_' => {
                let mut n = 2;
                while at(n).is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
                    n += 1;
                }
                n
            }
            Some(c) if c.is_ascii_digit() => {
                let mut n = 2;
                while at(n).is_some_and(|c| c.is_ascii_digit()) {
                    n += 1;
                }
                n
            }
            Some('@' | '*' | '#' | '?' | '$' | '!' | '-') => 2,
            _ => return false,
        };
        matches!(at(end), Some('}' | '['))
    }

    fn braced_param(&mut self) -> PResult<Part> {
        let bad = || SyntaxError::from("bad substitution");
        let mut length = false;
        let mut indirect = false;
        if self.peek() == Some('#') && self.is_length_op() {
            length = true;
            self.pos += 1;
        } else if self.peek() == Some('!') && !matches!(self.peek_at(1), Some('}')) {
            indirect = true;
            self.pos += 1;
        }
        let mut name = String::new();
        match self.peek() {
            Some(c) if c.is_ascii_alphabetic() || c == '_' => {
                while let Some(ch) = self
                    .peek()
                    .filter(|ch| ch.is_ascii_alphanumeric() || *ch == '_')
                {
                    name.push(ch);
                    self.pos += 1;
                }
            }
            Some(c) if c.is_ascii_digit() => {
                while let Some(ch) = self.peek().filter(|ch| ch.is_ascii_digit()) {
                    name.push(ch);
                    self.pos += 1;
                }
            }
            Some(c) if matches!(c, '@' | '*' | '#' | '?' | '$' | '!' | '-') => {
                name.push(c);
                self.pos += 1;
            }
            _ => return Err(bad()),
        }
        let mut sub = None;
        if self.peek() == Some('[') {
            self.pos += 1;
            let start = self.pos;
            let mut depth = 0;
            loop {
                match self.peek() {
                    None => return Err(bad()),
                    Some('[') => depth += 1,
                    Some(']') if depth == 0 => break,
                    Some(']') => depth -= 1,
                    _ => {}
                }
                self.pos += 1;
            }
            let text: String = self.src[start..self.pos].iter().collect();
            self.pos += 1;
            sub = Some(match text.as_str() {
                "@" => Subscript::All(false),
                "*" => Subscript::All(true),
                _ => Subscript::Index(Parser::index_word(&text)?),
            });
        }
        let param = |name: String, sub, op, indirect| {
            Part::Param(Box::new(Param {
                name,
                sub,
                op,
                indirect,
                bare: false,
            }))
        };
        if length {
            self.expect_close_brace()?;
            return Ok(param(name, sub, ParamOp::Length, false));
        }
        if indirect {
            if matches!(self.peek(), Some('*' | '@')) && self.peek_at(1) == Some('}') {
                let star = self.peek() == Some('*');
                self.pos += 2;
                return Ok(param(name, None, ParamOp::Names(star), false));
            }
            if matches!(sub, Some(Subscript::All(_))) && self.peek() == Some('}') {
                self.pos += 1;
                return Ok(param(name, sub, ParamOp::Keys, false));
            }
        }
        let op = self.param_op()?;
        Ok(param(name, sub, op, indirect))
    }

    fn expect_close_brace(&mut self) -> PResult<()> {
        if self.peek() == Some('}') {
            self.pos += 1;
            Ok(())
        } else {
            Err("bad substitution".into())
        }
    }

    fn param_op(&mut self) -> PResult<ParamOp> {
        let c = self.peek().ok_or("bad substitution")?;
        self.pos += 1;
        let op = match c {
            '}' => return Ok(ParamOp::None),
            ':' if matches!(self.peek(), Some('-' | '=' | '+' | '?')) => {
                let op = self.peek().unwrap();
                self.pos += 1;
                ParamOp::Test {
                    op,
                    colon: true,
                    word: self.param_word_q(&['}'], self.in_dq)?,
                }
            }
            '-' | '=' | '+' | '?' => ParamOp::Test {
                op: c,
                colon: false,
                word: self.param_word_q(&['}'], self.in_dq)?,
            },
            ':' => {
                // `${s:}` has no offset at all: bash calls it a bad
                // substitution (`${s: }` is offset 0).
                if self.peek() == Some('}') {
                    return Err("bad substitution".into());
                }
                let offset = self.param_word(&[':', '}'])?;
                let length = if self.src.get(self.pos - 1) == Some(&':') {
                    let w = self.param_word(&['}'])?;
                    Some(self.word_arith(w)?)
                } else {
                    None
                };
                return Ok(ParamOp::Substr(self.word_arith(offset)?, length));
            }
            '#' | '%' => {
                let longest = self.peek() == Some(c);
                if longest {
                    self.pos += 1;
                }
                ParamOp::Strip {
                    suffix: c == '%',
                    longest,
                    pat: self.param_word(&['}'])?,
                }
            }
            '/' => {
                let mode = match self.peek() {
                    Some('/') => b'/',
                    Some('#') => b'#',
                    Some('%') => b'%',
                    _ => 0,
                };
                if mode != 0 {
                    self.pos += 1;
                }
                // A pattern is never empty: a slash right after the
                // operator is its first character (`${x////c}`).
                let leading_slash = mode == b'/' && self.peek() == Some('/');
                if leading_slash {
                    self.pos += 1;
                }
                let mut pat = self.param_word(&['/', '}'])?;
                if leading_slash {
                    pat.0.insert(0, Part::Lit("/".into()));
                }
                let rep = if self.src.get(self.pos - 1) == Some(&'/') {
                    self.param_word(&['}'])?
                } else {
                    Word::default()
                };
                return Ok(ParamOp::Replace { mode, pat, rep });
            }
            '^' | ',' | '~' => {
                let all = self.peek() == Some(c);
                if all {
                    self.pos += 1;
                }
                let to = match c {
                    '^' => CaseChange::Upper,
                    ',' => CaseChange::Lower,
                    _ => CaseChange::Toggle,
                };
                ParamOp::Case {
                    to,
                    all,
                    pat: self.param_word(&['}'])?,
                }
            }
            '@' => {
                let t = self.peek().ok_or("bad substitution")?;
                self.pos += 1;
                self.expect_close_brace()?;
                return Ok(ParamOp::Transform(t));
            }
            _ => return Err("bad substitution".into()),
        };
        Ok(op)
    }

    fn word_arith(&mut self, word: Word) -> PResult<Arith> {
        match word.0.as_slice() {
            [] => Ok(Arith::Static(
                Rc::new(crate::interp::arith::Expr::Num(0)),
                Rc::from(""),
            )),
            [Part::Lit(text)] => {
                let text = text.clone();
                self.make_arith(&text)
            }
            _ => Ok(Arith::Dynamic(word)),
        }
    }

    /// A word inside `${...}` up to one of `stops` (consumed). A bare `{`
    /// does not nest: bash ends `${` at its first unquoted `}` outside an
    /// inner expansion, so `${x:-{a}b}` is the word `{a` and then `b}`.
    fn param_word(&mut self, stops: &[char]) -> PResult<Word> {
        self.param_word_q(stops, false)
    }

    /// `literal_squote`: inside `"${x:-'a'}"` single quotes are literal.
    fn param_word_q(&mut self, stops: &[char], literal_squote: bool) -> PResult<Word> {
        let mut parts = Vec::new();
        let mut lit = String::new();
        // A slice's offset is arithmetic: a `:` answering a `?` is part of
        // it (`${s: 1 ? 2 : 0 : 1}`), as bash skips the offset.
        let mut open_ternaries = 0;
        // `${x:-~}` outside double quotes: the word's tilde expands.
        if !self.in_dq && self.peek() == Some('~') && stops.contains(&'}') {
            self.tilde(&mut parts, &mut lit);
        }
        loop {
            let Some(c) = self.peek() else {
                return Err("bad substitution".into());
            };
            if stops.contains(&c) {
                if c == ':' && open_ternaries > 0 {
                    open_ternaries -= 1;
                    lit.push(c);
                    self.pos += 1;
                    continue;
                }
                self.pos += 1;
                break;
            }
            match c {
                '?' if stops.contains(&':') => {
                    open_ternaries += 1;
                    lit.push(c);
                    self.pos += 1;
                }
                // In double quotes a backslash quotes only `$`, a backquote,
                // `"`, `\`, a newline and what ends the word; before anything
                // else it stays: `"${x-\z}"` is `\z`.
                '\\' if self.in_dq
                    && self.peek_at(1).is_some_and(|n| {
                        !matches!(n, '$' | '`' | '"' | '\\' | '\n') && !stops.contains(&n)
                    }) =>
                {
                    lit.push(c);
                    lit.extend(self.peek_at(1));
                    self.pos += 2;
                }
                '\'' if literal_squote => {
                    // Kept, and still quoting the word's end (`"${x:-'}'}"`
                    // is `'}'`), but expansions inside work: `"${x:-'$v'}"`.
                    lit.push(c);
                    self.pos += 1;
                    while let Some(q) = self.peek() {
                        if matches!(q, '$' | '`') {
                            flush(&mut parts, &mut lit);
                            self.word_piece(&mut parts, &mut lit, false)?;
                            continue;
                        }
                        lit.push(q);
                        self.pos += 1;
                        if q == '\'' {
                            break;
                        }
                    }
                }
                '\\' | '\'' | '"' | '$' | '`' => {
                    flush(&mut parts, &mut lit);
                    self.word_piece(&mut parts, &mut lit, false)?;
                }
                // Within double quotes `<(` is text.
                '<' | '>' if self.peek_at(1) == Some('(') && !self.in_dq => {
                    self.proc_sub(&mut parts, &mut lit, c)?;
                }
                _ => {
                    lit.push(c);
                    self.pos += 1;
                }
            }
        }
        flush(&mut parts, &mut lit);
        Ok(Word(parts))
    }

    /// The newline ending the current logical line (continuations and
    /// quoted newlines skipped).
    fn line_end(&self) -> Option<usize> {
        let mut i = self.pos;
        let mut quote: Option<char> = None;
        while let Some(&c) = self.src.get(i) {
            match (quote, c) {
                (None, '\\') | (Some('"'), '\\') => i += 1,
                (None, '\'' | '"') => quote = Some(c),
                (Some(q), _) if c == q => quote = None,
                (None, '\n') => return Some(i),
                _ => {}
            }
            i += 1;
        }
        None
    }

    /// Reads the body of a here-document that starts after the current line.
    /// A here-document's body, and its lines as written up to and with the
    /// delimiter line.
    pub(super) fn heredoc_body(
        &mut self,
        delim: &str,
        quoted: bool,
        strip: bool,
    ) -> PResult<(Word, String)> {
        let (nl, start) = match self.skip_at {
            Some(pair) => pair,
            None => match self.line_end() {
                Some(nl) => (nl, nl + 1),
                None => (self.src.len(), self.src.len()),
            },
        };
        let mut i = start;
        let mut text = String::new();
        while i < self.src.len() {
            let end = self.src[i..]
                .iter()
                .position(|&c| c == '\n')
                .map_or(self.src.len(), |o| i + o);
            let line: String = self.src[i..end].iter().collect();
            i = (end + 1).min(self.src.len());
            let line = if strip {
                line.trim_start_matches('\t').to_string()
            } else {
                line
            };
            if line == delim {
                break;
            }
            text.push_str(&line);
            text.push('\n');
        }
        self.skip_at = Some((nl, i));
        let lines: String = self.src[start.min(i)..i].iter().collect();
        if quoted {
            return Ok((Word(vec![Part::Quoted(text)]), lines));
        }
        let mut sub = self.nested(&text);
        let body = Word(vec![Part::Double(sub.dq_parts_mode(None, true)?)]);
        Ok((body, lines))
    }
}

fn simple_param(name: String) -> Part {
    let bare = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_');
    Part::Param(Box::new(Param {
        name,
        sub: None,
        op: ParamOp::None,
        indirect: false,
        bare,
    }))
}

fn flush(parts: &mut Vec<Part>, lit: &mut String) {
    if !lit.is_empty() {
        parts.push(Part::Lit(std::mem::take(lit)));
    }
}

// ---- brace expansion ----

#[derive(Clone)]
enum Tok {
    Ch(char),
    /// Boxed: a word is one `Tok` per character while it is expanded.
    Part(Box<Part>),
}

/// Words one brace expansion may make, and characters in all. Brace
/// expansion happens as the script is parsed, before an exec's memory
/// budget applies, so its size has a fixed bound; more is a syntax error
/// naming it (never a silent cut of the list). `{1..100000}` fits.
pub(super) const MAX_BRACE_WORDS: usize = 100_000;
pub(super) const MAX_BRACE_CHARS: usize = 1 << 20;

/// Expands `{a,b}` and `{1..3}` in the unquoted text of a word.
pub(crate) fn brace_expand(word: Word) -> Result<Vec<Word>, String> {
    let has_brace = word
        .0
        .iter()
        .any(|p| matches!(p, Part::Lit(s) if s.contains('{')));
    if !has_brace {
        return Ok(vec![word]);
    }
    let toks: Vec<Tok> = word
        .0
        .into_iter()
        .flat_map(|p| match p {
            Part::Lit(s) => s.chars().map(Tok::Ch).collect::<Vec<_>>(),
            other => vec![Tok::Part(Box::new(other))],
        })
        .collect();
    let mut made = Made::default();
    expand_toks(toks, 0, &mut made)?;
    Ok(made.words)
}

/// The words a brace expansion has made, and their characters.
#[derive(Default)]
struct Made {
    words: Vec<Word>,
    chars: usize,
}

fn too_many_words() -> String {
    format!(
        "brace expansion: more than {MAX_BRACE_WORDS} words or {MAX_BRACE_CHARS} characters (max_brace_words)"
    )
}

/// Expands the first brace group of `toks` at or after `from` and
/// recurses on each result (what comes before `from` holds no group left
/// to expand); finished words go to `made` as they are made.
fn expand_toks(toks: Vec<Tok>, from: usize, made: &mut Made) -> Result<(), String> {
    for i in from..toks.len() {
        if !matches!(toks[i], Tok::Ch('{')) || (i > 0 && matches!(toks[i - 1], Tok::Ch('$'))) {
            continue;
        }
        let Some(j) = matching_brace(&toks, i) else {
            continue;
        };
        let inner = &toks[i + 1..j];
        let alts = match alternatives(inner) {
            Some(a) => a,
            None => match sequence(inner) {
                Some(s) => s?
                    .into_iter()
                    .map(|s| s.chars().map(Tok::Ch).collect())
                    .collect(),
                None => continue,
            },
        };
        if alts.len() > MAX_BRACE_WORDS {
            return Err(too_many_words());
        }
        for alt in alts {
            let mut v: Vec<Tok> = toks[..i].to_vec();
            v.extend(alt);
            v.extend_from_slice(&toks[j + 1..]);
            // From `i`: an alternative may hold groups of its own (`{a,{b,c}}`).
            expand_toks(v, i, made)?;
        }
        return Ok(());
    }
    made.chars += toks.len();
    if made.words.len() >= MAX_BRACE_WORDS || made.chars > MAX_BRACE_CHARS {
        return Err(too_many_words());
    }
    made.words.push(rebuild(toks));
    Ok(())
}

fn matching_brace(toks: &[Tok], open: usize) -> Option<usize> {
    let mut depth = 0;
    for (k, t) in toks.iter().enumerate().skip(open) {
        match t {
            Tok::Ch('{') => depth += 1,
            Tok::Ch('}') => {
                depth -= 1;
                if depth == 0 {
                    return Some(k);
                }
            }
            _ => {}
        }
    }
    None
}

fn alternatives(inner: &[Tok]) -> Option<Vec<Vec<Tok>>> {
    let mut alts = vec![Vec::new()];
    let mut depth = 0;
    for t in inner {
        match t {
            Tok::Ch('{') => depth += 1,
            Tok::Ch('}') => depth -= 1,
            Tok::Ch(',') if depth == 0 => {
                alts.push(Vec::new());
                continue;
            }
            _ => {}
        }
        alts.last_mut().unwrap().push(t.clone());
    }
    (alts.len() > 1).then_some(alts)
}

/// `{a..b}` / `{a..b..step}`: numbers or single letters; `None` when
/// `inner` is not a sequence, an error when it has too many words.
fn sequence(inner: &[Tok]) -> Option<Result<Vec<String>, String>> {
    let mut text = String::new();
    for t in inner {
        match t {
            Tok::Ch(c) => text.push(*c),
            Tok::Part(_) => return None,
        }
    }
    let pieces: Vec<&str> = text.split("..").collect();
    if pieces.len() != 2 && pieces.len() != 3 {
        return None;
    }
    let step: i64 = match pieces.get(2) {
        Some(s) => s.parse().ok()?,
        None => 1,
    };
    let step = i128::from(step).abs().max(1);
    if let (Ok(a), Ok(b)) = (pieces[0].parse::<i64>(), pieces[1].parse::<i64>()) {
        let (a, b) = (i128::from(a), i128::from(b));
        if (b - a).abs() / step >= MAX_BRACE_WORDS as i128 {
            return Some(Err(too_many_words()));
        }
        let width = if has_leading_zero(pieces[0]) || has_leading_zero(pieces[1]) {
            pieces[0].len().max(pieces[1].len())
        } else {
            0
        };
        let step = if a <= b { step } else { -step };
        let count = (b - a) / step + 1;
        let words = (0..count).map(|k| {
            let x = a + k * step;
            if width > 0 && x < 0 {
                format!("-{:0w$}", -x, w = width - 1)
            } else if width > 0 {
                format!("{x:0width$}")
            } else {
                x.to_string()
            }
        });
        return Some(Ok(words.collect()));
    }
    let (a, b) = (single_char(pieces[0])?, single_char(pieces[1])?);
    let (a, b) = (a as i64, b as i64);
    let mut v = Vec::new();
    let mut x = a;
    while (a <= b && x <= b) || (a > b && x >= b) {
        v.push(char::from_u32(x as u32)?.to_string());
        x += if a <= b { step as i64 } else { -(step as i64) };
    }
    Some(Ok(v))
}

fn has_leading_zero(s: &str) -> bool {
    let s = s.strip_prefix('-').unwrap_or(s);
    s.len() > 1 && s.starts_with('0')
}

fn single_char(s: &str) -> Option<char> {
    let mut it = s.chars();
    let c = it.next()?;
    (it.next().is_none() && c.is_ascii_alphabetic()).then_some(c)
}

fn rebuild(toks: Vec<Tok>) -> Word {
    let mut parts = Vec::new();
    let mut lit = String::new();
    let mut toks = toks.into_iter().peekable();
    while let Some(t) = toks.next() {
        match t {
            Tok::Ch(c) => lit.push(c),
            Tok::Part(mut p) => {
                flush(&mut parts, &mut lit);
                // `{$a,b}_c`: bash expands braces in the text, so `$a_c`
                // names the variable `a_c`.
                if let Part::Param(param) = p.as_mut() {
                    while let Some(Tok::Ch(c)) = toks
                        .next_if(|t| matches!(t, Tok::Ch(c) if param.bare && (c.is_ascii_alphanumeric() || *c == '_')))
                    {
                        param.name.push(c);
                    }
                }
                parts.push(*p);
            }
        }
    }
    flush(&mut parts, &mut lit);
    Word(leading_tilde(parts))
}

fn is_tilde_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '+')
}

/// Tilde expansion follows brace expansion: a word that a brace group left
/// starting with `~` expands it (`~{/src,root}` is `~/src ~root`).
fn leading_tilde(mut parts: Vec<Part>) -> Vec<Part> {
    let Some(Part::Lit(first)) = parts.first() else {
        return parts;
    };
    let Some(rest) = first.strip_prefix('~') else {
        return parts;
    };
    let end = rest.find('/');
    // The prefix must be all literal: up to a slash, or the whole word.
    if end.is_none() && parts.len() > 1 {
        return parts;
    }
    let (name, tail) = rest.split_at(end.unwrap_or(rest.len()));
    if !name.chars().all(is_tilde_name_char) {
        return parts;
    }
    let (name, tail) = (name.to_string(), tail.to_string());
    parts.remove(0);
    if !tail.is_empty() {
        parts.insert(0, Part::Lit(tail));
    }
    parts.insert(0, Part::Tilde(name));
    parts
}

/// True when `name` is a valid variable name.
pub(crate) fn valid_name(name: &str) -> bool {
    is_name(name)
}
