//! A backtracking matcher for the few patterns the `regex` crate cannot
//! run: those with back-references (`\(a\)\1`, `(.)\1`).
//!
//! It reads the pattern after [`super::posix::translate`] (so it only has to
//! know the crate's syntax subset that translation emits), and matches on
//! characters. Backtracking can be exponential, so every search has a step
//! bound; a search that runs out of steps reports no match. Everything
//! without back-references stays on the linear-time `regex` engine.

use std::rc::Rc;

use regex::bytes::Regex as BytesRegex;
use regex::Regex;

use crate::limits::{build_bytes_regex, build_regex, RegexCost, RegexError};

/// Steps one search (all its start positions together) may take before
/// giving up: backtracking can be exponential.
const MAX_STEPS: u64 = 5_000_000;

/// Nesting depth a match may reach before giving up, to stay well inside
/// the stack (also on wasm). Repeats of one character do not nest.
const MAX_DEPTH: usize = 400;

/// Group spans of one match, in byte offsets; index 0 is the whole match.
pub(crate) type Groups = Vec<Option<(usize, usize)>>;

/// A compiled pattern: the fast engine, or backtracking for back-references.
/// Shared by `Rc`: cloning a `regex::Regex` itself would give the clone a
/// fresh (slow to warm) matching cache.
#[derive(Debug, Clone)]
pub(crate) enum Compiled {
    Fast(Rc<BytesRegex>, Rc<RegexCost>),
    Slow(Rc<Backtrack>),
}

impl Compiled {
    /// Compiles regex-crate syntax `source` (with `prefix` flags such as
    /// `(?i)`), falling back to backtracking when it has back-references.
    pub(crate) fn new(prefix: &str, source: &str) -> Result<Compiled, String> {
        let full = format!("{prefix}{source}");
        match build_bytes_regex(&mut regex::bytes::RegexBuilder::new(&full)) {
            Ok(re) => Ok(Compiled::Fast(Rc::new(re), Rc::new(RegexCost::new(&full)))),
            Err(RegexError::TooLarge) => Err(RegexError::TooLarge.to_string()),
            Err(error) if has_backref(source) => Backtrack::new(&full)
                .map(|b| Compiled::Slow(Rc::new(b)))
                .map_err(|_| format!("invalid regex: {error}")),
            Err(error) => Err(format!("invalid regex: {error}")),
        }
    }

    pub(crate) fn is_match(&self, haystack: &[u8]) -> bool {
        match self {
            Compiled::Fast(re, _) => re.is_match(haystack),
            Compiled::Slow(b) => b.is_match(haystack),
        }
    }

    /// See [`RegexCost::extra_work`]; backtracking has its own step bound.
    pub(crate) fn extra_work(&self, haystack: &[u8]) -> u64 {
        match self {
            Compiled::Fast(_, cost) => cost.extra_work(haystack),
            Compiled::Slow(_) => 0,
        }
    }

    /// The number of groups, the whole match included.
    pub(crate) fn captures_len(&self) -> usize {
        match self {
            Compiled::Fast(re, _) => re.captures_len(),
            Compiled::Slow(b) => b.groups + 1,
        }
    }

    /// Calls `each` for every successive non-overlapping match until it
    /// returns false. With `whole_only`, only group 0 is filled in (faster).
    pub(crate) fn for_each_match(
        &self,
        haystack: &[u8],
        whole_only: bool,
        each: &mut dyn FnMut(&Groups) -> bool,
    ) {
        let mut groups: Groups = Vec::new();
        match self {
            Compiled::Fast(re, _) if whole_only => {
                for m in re.find_iter(haystack) {
                    groups.clear();
                    groups.push(Some((m.start(), m.end())));
                    if !each(&groups) {
                        break;
                    }
                }
            }
            Compiled::Fast(re, _) => {
                for caps in re.captures_iter(haystack) {
                    groups.clear();
                    groups.extend(caps.iter().map(|g| g.map(|m| (m.start(), m.end()))));
                    if !each(&groups) {
                        break;
                    }
                }
            }
            Compiled::Slow(b) => b.for_each_match(haystack, each),
        }
    }
}

/// Whether translated `source` has a `\1`..`\9` outside brackets.
fn has_backref(source: &str) -> bool {
    let mut chars = source.chars();
    let mut in_class = 0usize;
    let mut found = false;
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                let digit = chars.next().is_some_and(|d| ('1'..='9').contains(&d));
                found |= digit && in_class == 0;
            }
            '[' => in_class += 1,
            ']' if in_class > 0 => in_class -= 1,
            _ => {}
        }
    }
    found
}

#[derive(Debug, Clone, Copy)]
enum Look {
    LineStart,
    LineEnd,
    TextStart,
    TextEnd,
    Boundary,
    NotBoundary,
    WordStart,
    WordEnd,
    StartHalf,
    EndHalf,
}

#[derive(Debug)]
enum Node {
    Char(char),
    Any,
    Set(Regex),
    Look(Look),
    Group(Box<Node>, usize),
    Concat(Vec<Node>),
    Alt(Vec<Node>),
    Repeat(Box<Node>, u32, Option<u32>),
    Backref(usize),
}

#[derive(Debug, Default, Clone, Copy)]
struct Flags {
    icase: bool,
    multiline: bool,
    dotall: bool,
}

#[derive(Debug)]
pub(crate) struct Backtrack {
    root: Node,
    groups: usize,
    flags: Flags,
}

impl Backtrack {
    fn new(source: &str) -> Result<Backtrack, String> {
        let mut parser = Parser {
            chars: source.chars().collect(),
            pos: 0,
            groups: 0,
            flags: Flags::default(),
        };
        let root = parser.alternation()?;
        if parser.pos < parser.chars.len() {
            return Err("unmatched )".into());
        }
        Ok(Backtrack {
            root,
            groups: parser.groups,
            flags: parser.flags,
        })
    }

    fn is_match(&self, haystack: &[u8]) -> bool {
        let text = Text::decode(haystack);
        let mut steps = 0;
        (0..=text.chars.len()).any(|start| self.match_at(&text, start, &mut steps).is_some())
    }

    fn for_each_match(&self, haystack: &[u8], each: &mut dyn FnMut(&Groups) -> bool) {
        let text = Text::decode(haystack);
        let mut start = 0;
        let mut last_end: Option<usize> = None;
        let mut steps = 0;
        while start <= text.chars.len() && steps <= MAX_STEPS {
            let Some(caps) = self.match_at(&text, start, &mut steps) else {
                start += 1;
                continue;
            };
            let (s, e) = caps[0].expect("a match has group 0");
            // No empty match right where the previous one ended.
            if s == e && last_end == Some(s) {
                start += 1;
                continue;
            }
            let groups: Groups = caps
                .iter()
                .map(|g| g.map(|(a, b)| (text.offsets[a], text.offsets[b])))
                .collect();
            if !each(&groups) {
                return;
            }
            last_end = Some(e);
            start = if e == s { e + 1 } else { e };
        }
    }

    /// The match starting exactly at char `start`, in char indices; `steps`
    /// carries the step count across calls.
    fn match_at(
        &self,
        text: &Text,
        start: usize,
        steps: &mut u64,
    ) -> Option<Vec<Option<(usize, usize)>>> {
        let mut run = Run {
            text: &text.chars,
            caps: vec![None; self.groups + 1],
            steps: *steps,
            depth: 0,
            flags: self.flags,
        };
        let mut end = None;
        run.node(&self.root, start, &mut |_, p| {
            end = Some(p);
            true
        });
        *steps = run.steps;
        let end = end?;
        run.caps[0] = Some((start, end));
        Some(run.caps)
    }
}

/// A haystack as characters, with each one's byte offset (plus the end).
struct Text {
    chars: Vec<char>,
    offsets: Vec<usize>,
}

impl Text {
    fn decode(bytes: &[u8]) -> Text {
        let mut chars = Vec::with_capacity(bytes.len());
        let mut offsets = Vec::with_capacity(bytes.len() + 1);
        let mut at = 0;
        for chunk in bytes.utf8_chunks() {
            for (i, c) in chunk.valid().char_indices() {
                chars.push(c);
                offsets.push(at + i);
            }
            at += chunk.valid().len();
            for _ in chunk.invalid() {
                chars.push(char::REPLACEMENT_CHARACTER);
                offsets.push(at);
                at += 1;
            }
        }
        offsets.push(bytes.len());
        Text { chars, offsets }
    }
}

struct Parser {
    chars: Vec<char>,
    pos: usize,
    groups: usize,
    flags: Flags,
}

impl Parser {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn eat(&mut self, text: &str) -> bool {
        let n = text.chars().count();
        let matches = self.chars.len() >= self.pos + n
            && self.chars[self.pos..self.pos + n]
                .iter()
                .copied()
                .eq(text.chars());
        if matches {
            self.pos += n;
        }
        matches
    }

    fn alternation(&mut self) -> Result<Node, String> {
        let mut branches = vec![self.concat()?];
        while self.eat("|") {
            branches.push(self.concat()?);
        }
        Ok(if branches.len() == 1 {
            branches.pop().expect("one branch")
        } else {
            Node::Alt(branches)
        })
    }

    fn concat(&mut self) -> Result<Node, String> {
        let mut nodes = Vec::new();
        while let Some(c) = self.peek() {
            if c == '|' || c == ')' {
                break;
            }
            let Some(atom) = self.atom()? else {
                continue;
            };
            nodes.push(self.quantified(atom)?);
        }
        Ok(Node::Concat(nodes))
    }

    fn quantified(&mut self, atom: Node) -> Result<Node, String> {
        let mut node = atom;
        loop {
            let (min, max) = match self.peek() {
                Some('*') => (0, None),
                Some('+') => (1, None),
                Some('?') => (0, Some(1)),
                Some('{') => {
                    self.pos += 1;
                    let body: String = self.chars[self.pos..]
                        .iter()
                        .take_while(|&&c| c != '}')
                        .collect();
                    self.pos += body.chars().count();
                    let bounds = parse_bounds(&body)?;
                    (bounds.0, bounds.1)
                }
                _ => return Ok(node),
            };
            self.pos += 1;
            node = Node::Repeat(Box::new(node), min, max);
        }
    }

    fn atom(&mut self) -> Result<Option<Node>, String> {
        let c = self.peek().expect("caller checked");
        self.pos += 1;
        let node = match c {
            '(' => return self.group(),
            '[' => self.class()?,
            '.' => Node::Any,
            '^' => Node::Look(Look::LineStart),
            '$' => Node::Look(Look::LineEnd),
            '\\' => self.escape()?,
            c => Node::Char(c),
        };
        Ok(Some(node))
    }

    fn group(&mut self) -> Result<Option<Node>, String> {
        if self.eat("?:") {
            let inner = self.alternation()?;
            self.close()?;
            return Ok(Some(inner));
        }
        if self.eat("?") {
            // Inline flags, e.g. `(?m)` or `(?i)`.
            while let Some(c) = self.peek() {
                self.pos += 1;
                match c {
                    'i' => self.flags.icase = true,
                    'm' => self.flags.multiline = true,
                    's' => self.flags.dotall = true,
                    ')' => return Ok(None),
                    _ => return Err("unsupported flag".into()),
                }
            }
            return Err("unterminated flags".into());
        }
        self.groups += 1;
        let index = self.groups;
        let inner = self.alternation()?;
        self.close()?;
        Ok(Some(Node::Group(Box::new(inner), index)))
    }

    fn close(&mut self) -> Result<(), String> {
        if self.eat(")") {
            Ok(())
        } else {
            Err("unclosed group".into())
        }
    }

    /// A bracket class, checked by the `regex` crate one character at a time.
    fn class(&mut self) -> Result<Node, String> {
        let start = self.pos - 1;
        let mut depth = 1;
        while depth > 0 {
            let c = self.peek().ok_or("unclosed class")?;
            self.pos += 1;
            match c {
                '\\' => self.pos += 1,
                '[' => depth += 1,
                ']' => depth -= 1,
                _ => {}
            }
        }
        let class: String = self.chars[start..self.pos].iter().collect();
        self.set(&class)
    }

    fn set(&self, class: &str) -> Result<Node, String> {
        let flags = if self.flags.icase { "(?i)" } else { "" };
        build_regex(&mut regex::RegexBuilder::new(&format!(
            "{flags}\\A{class}\\z"
        )))
        .map(Node::Set)
        .map_err(|e| e.to_string())
    }

    fn escape(&mut self) -> Result<Node, String> {
        let c = self.peek().ok_or("trailing backslash")?;
        self.pos += 1;
        Ok(match c {
            '1'..='9' => Node::Backref(c as usize - '0' as usize),
            'b' => {
                let look = if self.eat("{start}") {
                    Look::WordStart
                } else if self.eat("{end}") {
                    Look::WordEnd
                } else if self.eat("{start-half}") {
                    Look::StartHalf
                } else if self.eat("{end-half}") {
                    Look::EndHalf
                } else {
                    Look::Boundary
                };
                Node::Look(look)
            }
            'B' => Node::Look(Look::NotBoundary),
            'A' => Node::Look(Look::TextStart),
            'z' => Node::Look(Look::TextEnd),
            'w' | 'W' | 's' | 'S' | 'd' | 'D' => self.set(&format!("\\{c}"))?,
            'n' => Node::Char('\n'),
            't' => Node::Char('\t'),
            c => Node::Char(c),
        })
    }
}

fn parse_bounds(body: &str) -> Result<(u32, Option<u32>), String> {
    let number = |s: &str| s.parse::<u32>().map_err(|_| "bad repetition".to_string());
    match body.split_once(',') {
        None => {
            let n = number(body)?;
            Ok((n, Some(n)))
        }
        Some((min, "")) => Ok((number(min)?, None)),
        Some((min, max)) => Ok((number(min)?, Some(number(max)?))),
    }
}

fn is_word(c: Option<&char>) -> bool {
    c.is_some_and(|c| c.is_alphanumeric() || *c == '_')
}

/// One search attempt's state.
struct Run<'t> {
    text: &'t [char],
    caps: Vec<Option<(usize, usize)>>,
    steps: u64,
    /// Nesting of `node` calls: continuations recurse, so this bounds the stack.
    depth: usize,
    flags: Flags,
}

type Cont<'k, 't> = &'k mut dyn FnMut(&mut Run<'t>, usize) -> bool;

impl<'t> Run<'t> {
    fn same(&self, a: char, b: char) -> bool {
        a == b || (self.flags.icase && a.to_lowercase().eq(b.to_lowercase()))
    }

    fn look(&self, look: Look, pos: usize) -> bool {
        let before = pos.checked_sub(1).and_then(|p| self.text.get(p));
        let after = self.text.get(pos);
        let (w1, w2) = (is_word(before), is_word(after));
        match look {
            Look::LineStart => pos == 0 || (self.flags.multiline && before == Some(&'\n')),
            Look::LineEnd => {
                pos == self.text.len() || (self.flags.multiline && after == Some(&'\n'))
            }
            Look::TextStart => pos == 0,
            Look::TextEnd => pos == self.text.len(),
            Look::Boundary => w1 != w2,
            Look::NotBoundary => w1 == w2,
            Look::WordStart => !w1 && w2,
            Look::WordEnd => w1 && !w2,
            Look::StartHalf => !w1,
            Look::EndHalf => !w2,
        }
    }

    fn node(&mut self, node: &Node, pos: usize, k: Cont<'_, 't>) -> bool {
        self.steps += 1;
        if self.steps > MAX_STEPS {
            return false;
        }
        if self.depth >= MAX_DEPTH {
            // Too deep for the stack: give up on the whole search.
            self.steps = MAX_STEPS + 1;
            return false;
        }
        self.depth += 1;
        let matched = self.dispatch(node, pos, k);
        self.depth -= 1;
        matched
    }

    /// Whether the one-character node `node` matches at `pos`; `None` for
    /// other nodes.
    fn single(&self, node: &Node, pos: usize) -> Option<bool> {
        let here = self.text.get(pos).copied();
        Some(match node {
            Node::Char(c) => here.is_some_and(|h| self.same(h, *c)),
            Node::Any => here.is_some_and(|h| h != '\n' || self.flags.dotall),
            Node::Set(re) => here.is_some_and(|h| re.is_match(h.encode_utf8(&mut [0; 4]))),
            _ => return None,
        })
    }

    fn dispatch(&mut self, node: &Node, pos: usize, k: Cont<'_, 't>) -> bool {
        if let Some(matched) = self.single(node, pos) {
            return matched && k(self, pos + 1);
        }
        match node {
            Node::Char(_) | Node::Any | Node::Set(_) => false,
            Node::Look(look) => self.look(*look, pos) && k(self, pos),
            Node::Concat(nodes) => self.seq(nodes, pos, k),
            Node::Alt(branches) => branches.iter().any(|b| self.node(b, pos, k)),
            Node::Group(inner, index) => self.group(inner, *index, pos, k),
            Node::Repeat(inner, min, max) if self.single(inner, pos).is_some() => {
                self.repeat_single(inner, *min, *max, pos, k)
            }
            Node::Repeat(inner, min, max) => self.repeat(inner, *min, *max, 0, pos, k),
            Node::Backref(index) => self.backref(*index, pos, k),
        }
    }

    fn seq(&mut self, nodes: &[Node], pos: usize, k: Cont<'_, 't>) -> bool {
        match nodes.split_first() {
            None => k(self, pos),
            Some((first, rest)) => self.node(first, pos, &mut |run, p| run.seq(rest, p, k)),
        }
    }

    fn group(&mut self, inner: &Node, index: usize, pos: usize, k: Cont<'_, 't>) -> bool {
        let saved = self.caps[index];
        let matched = self.node(inner, pos, &mut |run, p| {
            let before = run.caps[index];
            run.caps[index] = Some((pos, p));
            if k(run, p) {
                return true;
            }
            run.caps[index] = before;
            false
        });
        if !matched {
            self.caps[index] = saved;
        }
        matched
    }

    fn repeat(
        &mut self,
        inner: &Node,
        min: u32,
        max: Option<u32>,
        count: u32,
        pos: usize,
        k: Cont<'_, 't>,
    ) -> bool {
        if max.is_none_or(|m| count < m) {
            let more = self.node(inner, pos, &mut |run, p| {
                // An empty iteration past the minimum would loop forever.
                if p == pos && count >= min {
                    return false;
                }
                run.repeat(inner, min, max, count + 1, p, k)
            });
            if more {
                return true;
            }
        }
        count >= min && k(self, pos)
    }

    /// A repeated one-character node: take as many as allowed, then give
    /// them back one by one (a loop, not a recursion per character).
    fn repeat_single(
        &mut self,
        inner: &Node,
        min: u32,
        max: Option<u32>,
        pos: usize,
        k: Cont<'_, 't>,
    ) -> bool {
        let limit = max.map_or(usize::MAX, |m| m as usize);
        let mut end = pos;
        while end - pos < limit && self.single(inner, end) == Some(true) {
            end += 1;
        }
        self.steps += (end - pos) as u64;
        let shortest = pos + min as usize;
        while end >= shortest {
            if k(self, end) {
                return true;
            }
            if end == shortest || self.steps > MAX_STEPS {
                break;
            }
            self.steps += 1;
            end -= 1;
        }
        false
    }

    fn backref(&mut self, index: usize, pos: usize, k: Cont<'_, 't>) -> bool {
        let Some(Some((start, end))) = self.caps.get(index).copied() else {
            return false;
        };
        let len = end - start;
        if pos + len > self.text.len() {
            return false;
        }
        let same = (0..len).all(|i| self.same(self.text[pos + i], self.text[start + i]));
        same && k(self, pos + len)
    }
}

#[cfg(test)]
mod tests {
    use super::Compiled;
    use crate::utils::search::posix::{translate, Syntax};

    fn compile(pattern: &str, syntax: Syntax) -> Compiled {
        Compiled::new("", &translate(pattern, syntax).unwrap()).unwrap()
    }

    fn all(c: &Compiled, text: &str) -> Vec<(usize, usize)> {
        let mut spans = Vec::new();
        c.for_each_match(text.as_bytes(), false, &mut |g| {
            spans.push(g[0].unwrap());
            true
        });
        spans
    }

    #[test]
    fn backreferences_match() {
        let c = compile(r"\(o\)\1", Syntax::Basic);
        assert!(matches!(c, Compiled::Slow(_)));
        assert!(c.is_match(b"foo"));
        assert!(!c.is_match(b"fo"));
        let c = compile(r"^(.*)\n\1$", Syntax::Extended);
        assert!(c.is_match(b"abc\nabc"));
        assert!(!c.is_match(b"abc\nabd"));
        let c = compile(r"([a-z]+) \1", Syntax::Extended);
        assert_eq!(all(&c, "x the the y a a"), [(2, 9), (12, 15)]);
        assert_eq!(c.captures_len(), 2);
    }

    #[test]
    fn quantifiers_words_and_case() {
        let c = Compiled::new(
            "(?i)",
            &translate(r"\(a\{2,\}\)b\1", Syntax::Basic).unwrap(),
        )
        .unwrap();
        assert!(c.is_match(b"xAAbaay"));
        assert!(!c.is_match(b"aaba"));
        let c = compile(r"\<\(\w*\) \1\>", Syntax::Basic);
        assert!(c.is_match(b"is is"));
        assert!(!c.is_match(b"this isx"));
        let c = compile(r"\(x*\)\1", Syntax::Basic);
        assert_eq!(all(&c, "ab"), [(0, 0), (1, 1), (2, 2)]);
    }

    #[test]
    fn runaway_backtracking_gives_up() {
        let c = compile(r"\(a*\)*b\1", Syntax::Basic);
        let text = "a".repeat(5000);
        assert!(!c.is_match(text.as_bytes()));
    }

    #[test]
    fn long_lines_do_not_nest() {
        let line = "word ".repeat(4000);
        let c = compile(r"^\(.*\)\n\1$", Syntax::Basic);
        assert!(c.is_match(format!("{line}\n{line}").as_bytes()));
        let c = compile(r"(\w+) \1 x", Syntax::Extended);
        assert!(c.is_match(format!("{line}x").as_bytes()));
    }

    #[test]
    fn fast_patterns_stay_fast() {
        assert!(matches!(
            compile("a+b", Syntax::Extended),
            Compiled::Fast(..)
        ));
        assert!(Compiled::new("", "(").is_err());
    }
}
