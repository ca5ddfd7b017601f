//! POSIX regular expressions (GNU flavour) rewritten into the `regex`
//! crate's syntax, shared by `grep` and `sed`.
//!
//! GNU tools speak BRE by default (`\(` groups, literal `+`) and ERE with
//! `-E`; the `regex` crate speaks neither exactly: bracket expressions nest,
//! `\` escapes inside brackets, `{` must start a repetition. Translating the
//! text once keeps every matcher on the fast, linear-time engine.
//! Back-references (`\(a\)\1`) are passed through as `\1`, which the crate
//! rejects; [`super::backref`] then takes over. POSIX leftmost-longest
//! alternation is approximated by the crate's leftmost-first.

/// Which POSIX dialect a pattern is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Syntax {
    /// Basic (BRE): `\(`, `\{`, `\|`, `\+`, `\?` are operators.
    Basic,
    /// Extended (ERE, `-E`): `(`, `{`, `|`, `+`, `?` are operators.
    Extended,
}

/// Rewrites `pattern` into `regex` crate syntax; errors are GNU-style messages.
pub(crate) fn translate(pattern: &str, syntax: Syntax) -> Result<String, String> {
    Translator {
        chars: pattern.chars().collect(),
        pos: 0,
        out: String::with_capacity(pattern.len() + 8),
        syntax,
        depth: 0,
    }
    .run()
}

/// The `regex` spelling of one literal character.
fn literal(c: char) -> String {
    regex::escape(c.encode_utf8(&mut [0; 4]))
}

struct Translator {
    chars: Vec<char>,
    pos: usize,
    out: String,
    syntax: Syntax,
    depth: usize,
}

impl Translator {
    fn run(mut self) -> Result<String, String> {
        // `start` is true where `*` is literal and `^` is an anchor (BRE).
        let mut start = true;
        while let Some(c) = self.next() {
            start = self.token(c, start)?;
        }
        if self.depth > 0 {
            return Err("Unmatched ( or \\(".into());
        }
        Ok(self.out)
    }

    fn next(&mut self) -> Option<char> {
        let c = self.chars.get(self.pos).copied();
        self.pos += c.is_some() as usize;
        c
    }

    fn peek(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.pos + ahead).copied()
    }

    fn ere(&self) -> bool {
        self.syntax == Syntax::Extended
    }

    /// Translates one token starting with `c`; returns whether the next
    /// token is at the start of an expression.
    fn token(&mut self, c: char, start: bool) -> Result<bool, String> {
        match c {
            '\\' => self.escape(start),
            '[' => self.bracket().map(|_| false),
            '.' => {
                self.out.push('.');
                Ok(false)
            }
            '^' if start || self.ere() => {
                self.out.push('^');
                Ok(true)
            }
            '$' if self.ere() || self.dollar_is_anchor() => {
                self.out.push('$');
                Ok(false)
            }
            '*' if start => {
                self.out.push_str(r"\*");
                Ok(false)
            }
            '*' => {
                self.repeat("*");
                Ok(false)
            }
            '(' | ')' | '|' | '+' | '?' | '{' if self.ere() => self.operator(c, start),
            _ => {
                self.out.push_str(&literal(c));
                Ok(false)
            }
        }
    }

    /// A BRE `$` is an anchor only at the end of an expression.
    fn dollar_is_anchor(&self) -> bool {
        matches!(
            (self.peek(0), self.peek(1)),
            (None, _) | (Some('\\'), Some(')' | '|'))
        )
    }

    /// Appends a repetition operator unless the previous one already is one
    /// (GNU accepts `a**`; the crate does not).
    fn repeat(&mut self, op: &str) {
        let last = self.out.chars().last();
        let escaped = self.out.ends_with("\\*") || self.out.ends_with("\\+");
        if matches!(last, Some('*' | '+' | '?' | '}')) && !escaped {
            if !self.out.ends_with(op) {
                // `a*?`-like stacks: make the whole thing `*`, close enough.
                self.out.pop();
                self.out.push('*');
            }
            return;
        }
        self.out.push_str(op);
    }

    /// An operator character (ERE unescaped, BRE escaped).
    fn operator(&mut self, c: char, start: bool) -> Result<bool, String> {
        match c {
            '(' => {
                self.depth += 1;
                self.out.push('(');
                Ok(true)
            }
            ')' if self.depth == 0 && self.ere() => {
                self.out.push_str(r"\)");
                Ok(false)
            }
            ')' if self.depth == 0 => Err("Unmatched ) or \\)".into()),
            ')' => {
                self.depth -= 1;
                self.out.push(')');
                Ok(false)
            }
            '|' => {
                self.out.push('|');
                Ok(true)
            }
            '{' => self.interval(start),
            _ if start => {
                self.out.push_str(&literal(c));
                Ok(false)
            }
            _ => {
                self.repeat(&c.to_string());
                Ok(false)
            }
        }
    }

    /// `{m,n}` after the opening brace; a brace that starts no valid
    /// interval is literal in ERE.
    fn interval(&mut self, start: bool) -> Result<bool, String> {
        let close = if self.ere() { "}" } else { "\\}" };
        let rest: String = self.chars[self.pos..].iter().collect();
        let Some(end) = rest.find(close) else {
            if self.ere() {
                self.out.push_str(r"\{");
                return Ok(false);
            }
            return Err("Unmatched \\{".into());
        };
        let body = &rest[..end];
        let valid = !body.is_empty()
            && body.chars().all(|c| c.is_ascii_digit() || c == ',')
            && body.matches(',').count() <= 1;
        if !valid {
            if self.ere() {
                self.out.push_str(r"\{");
                return Ok(false);
            }
            return Err("Invalid content of \\{\\}".into());
        }
        self.pos += end + close.chars().count();
        if start {
            self.out.push_str(&regex::escape(&format!("{{{body}}}")));
            return Ok(false);
        }
        let body = if body.starts_with(',') {
            format!("0{body}")
        } else {
            body.to_string()
        };
        self.out.push_str(&format!("{{{body}}}"));
        Ok(false)
    }

    /// A backslash sequence.
    fn escape(&mut self, start: bool) -> Result<bool, String> {
        let Some(c) = self.next() else {
            return Err("Trailing backslash".into());
        };
        let special = match c {
            '(' | ')' | '|' | '{' | '}' | '+' | '?' if !self.ere() => {
                return self.operator(c, start);
            }
            '1'..='9' => {
                // Left for `backref::Compiled`, which runs these itself.
                self.out.push('\\');
                self.out.push(c);
                return Ok(false);
            }
            'n' => "\\n",
            't' => "\\t",
            'w' | 'W' | 's' | 'S' | 'b' | 'B' => {
                self.out.push('\\');
                self.out.push(c);
                return Ok(false);
            }
            '<' => r"\b{start}",
            '>' => r"\b{end}",
            '`' => r"\A",
            '\'' => r"\z",
            _ => {
                self.out.push_str(&literal(c));
                return Ok(false);
            }
        };
        self.out.push_str(special);
        Ok(false)
    }

    /// A bracket expression, after its `[`.
    fn bracket(&mut self) -> Result<(), String> {
        self.out.push('[');
        if self.peek(0) == Some('^') {
            self.pos += 1;
            self.out.push('^');
        }
        let mut first = true;
        loop {
            let Some(c) = self.next() else {
                return Err("Unmatched [, [^, [:, [., or [=".into());
            };
            match c {
                ']' if !first => break,
                '[' if matches!(self.peek(0), Some(':' | '=' | '.')) => self.bracket_class()?,
                '\\' | '[' | ']' | '&' | '~' | '^' => {
                    self.out.push('\\');
                    self.out.push(c);
                }
                '-' if self.out.ends_with('-') => self.out.push_str(r"\-"),
                _ => self.out.push(c),
            }
            first = false;
        }
        self.out.push(']');
        Ok(())
    }

    /// `[:class:]`, `[=c=]` or `[.c.]` inside a bracket, after its `[`.
    fn bracket_class(&mut self) -> Result<(), String> {
        let kind = self.next().unwrap_or(':');
        let rest: String = self.chars[self.pos..].iter().collect();
        let close = format!("{kind}]");
        let Some(end) = rest.find(&close) else {
            return Err("Unmatched [, [^, [:, [., or [=".into());
        };
        let name = &rest[..end];
        self.pos += name.chars().count() + 2;
        if kind == ':' {
            const CLASSES: &[&str] = &[
                "alnum", "alpha", "blank", "cntrl", "digit", "graph", "lower", "print", "punct",
                "space", "upper", "xdigit",
            ];
            if !CLASSES.contains(&name) {
                return Err("Invalid character class name".into());
            }
            self.out.push_str(&format!("[:{name}:]"));
        } else {
            for c in name.chars() {
                self.out.push_str(&literal(c));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::{translate, Syntax};

    fn bre(p: &str) -> String {
        translate(p, Syntax::Basic).unwrap()
    }

    fn ere(p: &str) -> String {
        translate(p, Syntax::Extended).unwrap()
    }

    fn matches(re: &str, text: &str) -> bool {
        regex::Regex::new(re).unwrap().is_match(text)
    }

    #[test]
    fn bre_operators_and_literals() {
        assert_eq!(bre(r"\(ab\)\{2\}"), "(ab){2}");
        assert_eq!(bre("a+b?(c)|{d}"), r"a\+b\?\(c\)\|\{d\}");
        assert_eq!(bre(r"a\|b\+c\?"), "a|b+c?");
        assert_eq!(bre("*a"), r"\*a");
        assert_eq!(bre(r"\(*a\)"), r"(\*a)");
        assert_eq!(bre("a^b$c"), r"a\^b\$c");
        assert_eq!(bre("^ab$"), "^ab$");
        assert_eq!(bre(r"a\{,3\}"), "a{0,3}");
    }

    #[test]
    fn ere_operators_and_literal_braces() {
        assert_eq!(ere("(ab){2}|c+"), "(ab){2}|c+");
        assert_eq!(ere(r"\(x\)"), r"\(x\)");
        assert_eq!(ere("a{"), r"a\{");
        assert_eq!(ere("a{x}"), r"a\{x\}");
        assert!(matches(&ere("ca+t"), "caaat"));
    }

    #[test]
    fn brackets_are_posix() {
        assert!(matches(&bre(r"[\]"), r"\"));
        assert!(matches(&bre("[]a]"), "]"));
        assert!(matches(&bre("[^]a]"), "b"));
        assert!(!matches(&bre("[^]a]"), "]"));
        assert!(matches(&bre("[[:digit:]x]"), "7"));
        assert!(matches(&bre("[a[]"), "["));
        assert!(translate("[[:nope:]]", Syntax::Basic).is_err());
        assert!(translate("[abc", Syntax::Basic).is_err());
    }

    #[test]
    fn gnu_escapes() {
        assert!(matches(&bre(r"\<foo\>"), "a foo b"));
        assert!(!matches(&bre(r"\<foo\>"), "afoo"));
        assert!(matches(&bre(r"a\.b"), "a.b"));
        assert!(!matches(&bre(r"a\.b"), "axb"));
        assert!(matches(&bre(r"a\/b"), "a/b"));
        assert_eq!(bre(r"\(a\)\1"), r"(a)\1");
        assert_eq!(bre("ab**"), "ab*");
    }
}
