//! Shell arithmetic (`$(( ))`, `(( ))`, `let`, array indices): a Pratt
//! parser into [`Expr`], evaluated over the shell's variables with 64-bit
//! wrapping integers, as bash does.
//!
//! bash evaluates an expression as it reads it, so a syntax error ends it
//! only after what came before has run (`z = 5 , 08` assigns `z`, then
//! fails). The parser keeps that order: where it finds an error it stops
//! and leaves an [`Expr::Fail`] in the tree, which evaluation reaches after
//! everything bash would have evaluated first. A failure in a branch that
//! is not taken (`0 && 08`) still ends the expression, as bash reads that
//! branch too.

use std::rc::Rc;

use super::Flow;
use super::Shell;
use crate::limits::{too_deep_message, MAX_PARSE_DEPTH};

#[derive(Debug, Clone)]
pub(crate) enum Expr {
    Num(i64),
    Var(String),
    /// `name[index]`, with the index's source text (assoc keys).
    Index(String, Box<Expr>, String),
    Unary(&'static str, Box<Expr>),
    Binary(&'static str, Box<Expr>, Box<Expr>),
    /// `=`, `+=`, ...: the operator without `=` ("" for plain).
    Assign(&'static str, Box<Expr>, Box<Expr>),
    /// `++x` (true, +1) etc.: (prefix, delta, target)
    Step(bool, i64, Box<Expr>),
    Ternary(Box<Expr>, Box<Expr>, Box<Expr>),
    /// A syntax error, after the operand bash evaluated before finding it
    /// (if any); the message is complete (`expr: what`).
    Fail(Option<Box<Expr>>, Rc<str>),
}

struct Parser<'a> {
    src: &'a [u8],
    pos: usize,
    /// Nesting of operands (parentheses, unary operators, right-associative
    /// chains, subscripts), bounded by [`MAX_PARSE_DEPTH`].
    depth: usize,
    /// What an error message starts with (`let: 1 +: `).
    prefix: &'a str,
    /// An error was found: every rule returns what it has, unextended.
    failed: bool,
}

const BINARY: &[(&str, u8)] = &[
    ("||", 3),
    ("&&", 4),
    ("|", 5),
    ("^", 6),
    ("&", 7),
    ("==", 8),
    ("!=", 8),
    ("<=", 9),
    (">=", 9),
    ("<", 9),
    (">", 9),
    ("<<", 10),
    (">>", 10),
    ("+", 11),
    ("-", 11),
    ("*", 12),
    ("/", 12),
    ("%", 12),
    ("**", 13),
];

const ASSIGN_OPS: &[&str] = &[
    "<<=", ">>=", "+=", "-=", "*=", "/=", "%=", "&=", "^=", "|=", "=",
];

/// The characters bash's arithmetic tokens start with, besides names and
/// numbers.
const OPERATOR_CHARS: &[u8] = b"=<>+-*/%&|^~!?:,()";

/// Parses a whole arithmetic expression (comma lists included).
pub(crate) fn parse(src: &str) -> Expr {
    parse_labeled(src, "")
}

/// Parses an expression whose error messages start with `label` (`let: `).
pub(crate) fn parse_labeled(src: &str, label: &str) -> Expr {
    let prefix = format!("{label}{}: ", src.trim());
    parse_nested(src, 0, &prefix).0
}

/// Parses an expression nested `depth` levels inside another (a
/// subscript); says whether it failed.
fn parse_nested(src: &str, depth: usize, prefix: &str) -> (Expr, bool) {
    let mut p = Parser {
        src: src.as_bytes(),
        pos: 0,
        depth,
        prefix,
        failed: false,
    };
    p.skip();
    if p.pos == p.src.len() {
        return (Expr::Num(0), false);
    }
    let e = p.comma();
    if !p.failed && p.pos < p.src.len() {
        let msg = format!(
            "syntax error in expression (error token is \"{}\")",
            p.rest()
        );
        return (p.fail(Some(e), &msg), true);
    }
    (e, p.failed)
}

impl Parser<'_> {
    /// Runs `f` one operand deeper; every recursion of the grammar passes
    /// through here (via [`Parser::unary`] or an assignment's right side).
    fn deeper(&mut self, f: impl FnOnce(&mut Self) -> Expr) -> Expr {
        if self.depth >= MAX_PARSE_DEPTH {
            return self.fail(None, &format!("syntax error: {}", too_deep_message()));
        }
        self.depth += 1;
        let r = f(self);
        self.depth -= 1;
        r
    }

    /// Stops parsing at an error, after `before` (evaluated first).
    fn fail(&mut self, before: Option<Expr>, message: &str) -> Expr {
        self.failed = true;
        Expr::Fail(
            before.map(Box::new),
            Rc::from(format!("{}{message}", self.prefix)),
        )
    }

    fn skip(&mut self) {
        while self.pos < self.src.len() && self.src[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
    }

    fn eat(&mut self, tok: &str) -> bool {
        self.skip();
        if self.src[self.pos..].starts_with(tok.as_bytes()) {
            self.pos += tok.len();
            true
        } else {
            false
        }
    }

    fn rest(&self) -> String {
        String::from_utf8_lossy(&self.src[self.pos..]).into_owned()
    }

    /// No operand where one must be.
    fn operand_expected(&mut self) -> Expr {
        let msg = format!(
            "syntax error: operand expected (error token is \"{}\")",
            self.rest()
        );
        self.fail(None, &msg)
    }

    fn comma(&mut self) -> Expr {
        let mut e = self.assign();
        while !self.failed && self.eat(",") {
            let r = self.assign();
            e = Expr::Binary(",", Box::new(e), Box::new(r));
        }
        e
    }

    fn assign(&mut self) -> Expr {
        let lhs = self.ternary();
        if self.failed {
            return lhs;
        }
        self.skip();
        let rest = &self.src[self.pos..];
        let Some(op) = ASSIGN_OPS.iter().copied().find(|op| {
            rest.starts_with(op.as_bytes()) && !(*op == "=" && rest.get(1) == Some(&b'='))
        }) else {
            return lhs;
        };
        if !matches!(lhs, Expr::Var(_) | Expr::Index(..)) {
            let msg = format!(
                "attempted assignment to non-variable (error token is \"{}\")",
                self.rest()
            );
            return self.fail(Some(lhs), &msg);
        }
        self.pos += op.len();
        let rhs = self.deeper(Self::assign);
        Expr::Assign(&op[..op.len() - 1], Box::new(lhs), Box::new(rhs))
    }

    fn ternary(&mut self) -> Expr {
        let cond = self.binary(3);
        if self.failed || !self.eat("?") {
            return cond;
        }
        self.skip();
        if matches!(self.src.get(self.pos), None | Some(b':')) {
            let msg = format!("expression expected (error token is \"{}\")", self.rest());
            return self.fail(Some(cond), &msg);
        }
        let a = self.comma();
        let b = if self.failed {
            Expr::Num(0)
        } else if self.eat(":") {
            self.assign()
        } else {
            let msg = format!(
                "`:' expected for conditional expression (error token is \"{}\")",
                self.rest()
            );
            self.fail(None, &msg)
        };
        Expr::Ternary(Box::new(cond), Box::new(a), Box::new(b))
    }

    fn peek_binary(&mut self) -> Option<(&'static str, u8)> {
        self.skip();
        let rest = &self.src[self.pos..];
        let mut best: Option<(&'static str, u8)> = None;
        for &(op, prec) in BINARY {
            if rest.starts_with(op.as_bytes()) && best.is_none_or(|(b, _)| op.len() > b.len()) {
                best = Some((op, prec));
            }
        }
        let (op, _) = best?;
        // `a += 1` and `a == b`: not a binary operator when an assignment follows.
        let after = rest.get(op.len()).copied();
        if after == Some(b'=') && !matches!(op, "<" | ">" | "==" | "!=" | "<=" | ">=") {
            return None;
        }
        if (op == "<" || op == ">") && after == Some(b'=') {
            return None;
        }
        best
    }

    fn binary(&mut self, min: u8) -> Expr {
        let mut lhs = self.unary();
        while !self.failed {
            let Some((op, prec)) = self.peek_binary() else {
                break;
            };
            if prec < min {
                break;
            }
            self.pos += op.len();
            let rhs = if op == "**" {
                self.binary(prec)
            } else {
                self.binary(prec + 1)
            };
            lhs = Expr::Binary(op, Box::new(lhs), Box::new(rhs));
        }
        lhs
    }

    fn unary(&mut self) -> Expr {
        self.deeper(Self::operand)
    }

    fn operand(&mut self) -> Expr {
        self.skip();
        for (tok, delta) in [("++", 1), ("--", -1)] {
            if self.src[self.pos..].starts_with(tok.as_bytes()) {
                self.pos += 2;
                let target = self.unary();
                return Expr::Step(true, delta, Box::new(target));
            }
        }
        for op in ["!", "~", "-", "+"] {
            if self.eat(op) {
                let e = self.unary();
                return Expr::Unary(op, Box::new(e));
            }
        }
        let e = self.primary();
        if self.failed {
            return e;
        }
        self.skip();
        for (tok, delta) in [("++", 1), ("--", -1)] {
            if self.src[self.pos..].starts_with(tok.as_bytes())
                && matches!(e, Expr::Var(_) | Expr::Index(..))
            {
                self.pos += 2;
                return self.lookahead(Expr::Step(false, delta, Box::new(e)));
            }
        }
        self.lookahead(e)
    }

    /// bash reads the token after an operand before it uses the operand:
    /// one that cannot be read (a bad number, a character no token starts
    /// with) ends the expression there, before an assignment of `e`.
    fn lookahead(&mut self, e: Expr) -> Expr {
        self.skip();
        let Some(&c) = self.src.get(self.pos) else {
            return e;
        };
        if c.is_ascii_digit() {
            let text = self.number_text();
            self.pos -= text.len();
            return match parse_number(&text) {
                Some(_) => e,
                None => self.fail(Some(e), &bad_number(&text)),
            };
        }
        if c.is_ascii_alphabetic() || c == b'_' || OPERATOR_CHARS.contains(&c) {
            return e;
        }
        let msg = format!(
            "syntax error: invalid arithmetic operator (error token is \"{}\")",
            self.rest()
        );
        self.fail(Some(e), &msg)
    }

    fn primary(&mut self) -> Expr {
        self.skip();
        let Some(&c) = self.src.get(self.pos) else {
            return self.operand_expected();
        };
        if c == b'(' {
            self.pos += 1;
            let e = self.comma();
            if self.failed {
                return e;
            }
            if !self.eat(")") {
                return self.fail(Some(e), "syntax error: missing `)'");
            }
            return e;
        }
        if c.is_ascii_digit() {
            return self.number();
        }
        if c.is_ascii_alphabetic() || c == b'_' {
            return self.variable();
        }
        self.operand_expected()
    }

    /// A name, or `name[index]`.
    fn variable(&mut self) -> Expr {
        let start = self.pos;
        while self.pos < self.src.len()
            && (self.src[self.pos].is_ascii_alphanumeric() || self.src[self.pos] == b'_')
        {
            self.pos += 1;
        }
        let name = String::from_utf8_lossy(&self.src[start..self.pos]).into_owned();
        if self.src.get(self.pos) != Some(&b'[') {
            return Expr::Var(name);
        }
        let open = self.pos + 1;
        let mut depth = 0;
        let mut end = open;
        while end < self.src.len() {
            match self.src[end] {
                b'[' => depth += 1,
                b']' if depth == 0 => break,
                b']' => depth -= 1,
                _ => {}
            }
            end += 1;
        }
        if end >= self.src.len() {
            self.pos = start;
            let msg = format!("bad array subscript (error token is \"{}\")", self.rest());
            return self.fail(None, &msg);
        }
        let text = String::from_utf8_lossy(&self.src[open..end]).into_owned();
        self.pos = end + 1;
        // `A['key']` / `A["key"]`: a quoted associative key.
        let t = text.trim();
        let quoted = t.len() >= 2
            && (t.starts_with('\'') && t.ends_with('\'') || t.starts_with('"') && t.ends_with('"'));
        if quoted {
            let key = t[1..t.len() - 1].to_string();
            return Expr::Index(name, Box::new(Expr::Num(0)), key);
        }
        let (index, failed) = parse_nested(&text, self.depth, self.prefix);
        self.failed |= failed;
        Expr::Index(name, Box::new(index), text)
    }

    /// The text of the number at the cursor, consumed.
    fn number_text(&mut self) -> String {
        let start = self.pos;
        while self.pos < self.src.len()
            && (self.src[self.pos].is_ascii_alphanumeric()
                || matches!(self.src[self.pos], b'#' | b'@' | b'_'))
        {
            self.pos += 1;
        }
        String::from_utf8_lossy(&self.src[start..self.pos]).into_owned()
    }

    fn number(&mut self) -> Expr {
        let text = self.number_text();
        match parse_number(&text) {
            Some(n) => Expr::Num(n),
            None => self.fail(None, &bad_number(&text)),
        }
    }
}

/// bash's message for a constant it cannot read.
fn bad_number(text: &str) -> String {
    format!("value too great for base (error token is \"{text}\")")
}

/// Parses an integer constant: decimal, `0x1f`, `017`, `base#digits`.
pub(crate) fn parse_number(text: &str) -> Option<i64> {
    let (base, digits) = if let Some((b, d)) = text.split_once('#') {
        // A base is decimal: `02#1` (read as octal first) is refused.
        if b.starts_with('0') {
            return None;
        }
        (b.parse::<u32>().ok().filter(|b| (2..=64).contains(b))?, d)
    } else if let Some(h) = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        (16, h)
    } else if text.len() > 1 && text.starts_with('0') {
        (8, &text[1..])
    } else {
        (10, text)
    };
    if digits.is_empty() {
        return None;
    }
    let mut value: i64 = 0;
    for c in digits.chars() {
        let d = match c {
            '0'..='9' => c as u32 - '0' as u32,
            'a'..='z' => c as u32 - 'a' as u32 + 10,
            'A'..='Z' if base <= 36 => c as u32 - 'A' as u32 + 10,
            'A'..='Z' => c as u32 - 'A' as u32 + 36,
            '@' => 62,
            '_' => 63,
            _ => return None,
        };
        if d >= base {
            return None;
        }
        value = value.wrapping_mul(base as i64).wrapping_add(d as i64);
    }
    Some(value)
}

impl Shell<'_> {
    /// Evaluates a parsed expression.
    pub(crate) fn eval_arith(&mut self, e: &Expr) -> Result<i64, Flow> {
        Ok(match e {
            Expr::Num(n) => *n,
            // In a branch not taken, bash looks no variable up: all are 0.
            Expr::Var(_) if self.arith_noeval > 0 => 0,
            Expr::Index(_, index, _) if self.arith_noeval > 0 => {
                self.eval_arith(index)?;
                0
            }
            Expr::Var(name) => self.arith_var(name, None)?,
            Expr::Index(name, index, text) => {
                let key = self.arith_key(name, index, text)?;
                self.arith_var(name, Some(key))?
            }
            Expr::Unary(op, a) => {
                let v = self.eval_arith(a)?;
                match *op {
                    "!" => (v == 0) as i64,
                    "~" => !v,
                    "-" => v.wrapping_neg(),
                    _ => v,
                }
            }
            Expr::Binary(op, a, b) => self.arith_binary(op, a, b)?,
            Expr::Assign(op, target, rhs) => {
                let value = if op.is_empty() {
                    self.eval_arith(rhs)?
                } else {
                    let old = self.eval_arith(target)?;
                    let r = self.eval_arith(rhs)?;
                    self.arith_apply(op, old, r)?
                };
                self.arith_store(target, value)?;
                value
            }
            Expr::Step(prefix, delta, target) => {
                let old = self.eval_arith(target)?;
                let new = old.wrapping_add(*delta);
                self.arith_store(target, new)?;
                if *prefix {
                    new
                } else {
                    old
                }
            }
            Expr::Ternary(c, a, b) => {
                if self.eval_arith(c)? != 0 {
                    let v = self.eval_arith(a)?;
                    self.skip_arith(b)?;
                    v
                } else {
                    self.skip_arith(a)?;
                    self.eval_arith(b)?
                }
            }
            Expr::Fail(before, message) => {
                if let Some(e) = before {
                    self.eval_arith(e)?;
                }
                return Err(self.arith_error(message));
            }
        })
    }

    /// A branch not taken (`0 && x`, `?:`), computed as bash's `noeval`
    /// computes it: every variable is 0, nothing is assigned, a division by
    /// 0 is 0, but a syntax error or a negative exponent (`0 && 2 ** -1`)
    /// still ends the expression.
    fn skip_arith(&mut self, e: &Expr) -> Result<(), Flow> {
        self.arith_noeval += 1;
        let r = self.eval_arith(e);
        self.arith_noeval -= 1;
        r.map(drop)
    }

    /// A binary operator applied; its error ends the expression.
    fn arith_apply(&mut self, op: &str, l: i64, r: i64) -> Result<i64, Flow> {
        if self.arith_noeval > 0 && r == 0 && matches!(op, "/" | "%") {
            return Ok(0);
        }
        apply(op, l, r).map_err(|m| self.arith_error(&m))
    }

    fn arith_binary(&mut self, op: &str, a: &Expr, b: &Expr) -> Result<i64, Flow> {
        let l = self.eval_arith(a)?;
        match (op, l != 0) {
            ("&&", true) | ("||", false) => return Ok((self.eval_arith(b)? != 0) as i64),
            ("&&", false) | ("||", true) => {
                self.skip_arith(b)?;
                return Ok((l != 0) as i64);
            }
            _ => {}
        }
        let r = self.eval_arith(b)?;
        self.arith_apply(op, l, r)
    }

    fn arith_key(&mut self, name: &str, index: &Expr, text: &str) -> Result<String, Flow> {
        if self.is_assoc(name) {
            // An empty key (`A["$unset"]`): bash refuses it.
            if text.trim().is_empty() {
                return Err(self.arith_error(&format!("{name}[{text}]: bad array subscript")));
            }
            let key = text.trim();
            let key = key.strip_prefix('$').unwrap_or(key);
            if text.trim().starts_with('$') {
                return Ok(self.get_scalar(key).unwrap_or_default());
            }
            return Ok(text.to_string());
        }
        Ok(self.eval_arith(index)?.to_string())
    }

    fn arith_var(&mut self, name: &str, key: Option<String>) -> Result<i64, Flow> {
        let value = match &key {
            Some(k) => self.get_element(name, k),
            None => self.get_scalar(name),
        };
        let Some(value) = value else {
            // As in a parameter expansion, an unset name ends the shell.
            if self.st.opts.nounset {
                let msg = format!("{name}: unbound variable");
                return Err(self.fatal_exit(&msg));
            }
            return Ok(0);
        };
        self.arith_value(&value)
    }

    /// The numeric value of a variable's text (itself an expression).
    pub(crate) fn arith_value(&mut self, value: &str) -> Result<i64, Flow> {
        let t = value.trim();
        if t.is_empty() {
            return Ok(0);
        }
        // Plain decimals are common; a leading 0 means octal, left to the parser.
        let digits = t.strip_prefix(['-', '+']).unwrap_or(t);
        if !digits.starts_with('0') || digits == "0" {
            if let Ok(n) = t.parse::<i64>() {
                return Ok(n);
            }
        }
        // bash's MAX_EXPR_RECURSION_LEVEL, or half the stack budget: a
        // value naming itself (`a=a:b`) is an error the script survives.
        if self.arith_depth > 1024 || self.budget.stack_half_used() {
            return Err(self.arith_error("expression recursion level exceeded"));
        }
        self.budget.check_stack()?;
        let expr = parse(t);
        self.arith_depth += 1;
        let r = self.eval_arith(&expr);
        self.arith_depth -= 1;
        r
    }

    fn arith_store(&mut self, target: &Expr, value: i64) -> Result<(), Flow> {
        match target {
            _ if self.arith_noeval > 0 => Ok(()),
            Expr::Var(name) => self.set_scalar(name, value.to_string()),
            Expr::Index(name, index, text) => {
                let key = self.arith_key(name, index, text)?;
                self.set_element(name, &key, value.to_string())
            }
            _ => Err(self.arith_error("attempted assignment to non-variable")),
        }
    }

    fn arith_error(&mut self, message: &str) -> Flow {
        let _ = self.err_line(message);
        Flow::Error(1)
    }
}

fn apply(op: &str, l: i64, r: i64) -> Result<i64, String> {
    Ok(match op {
        "+" => l.wrapping_add(r),
        "-" => l.wrapping_sub(r),
        "*" => l.wrapping_mul(r),
        "/" | "%" => {
            if r == 0 {
                return Err("division by 0 (error token is \"0\")".into());
            }
            if op == "/" {
                l.wrapping_div(r)
            } else {
                l.wrapping_rem(r)
            }
        }
        "**" => {
            if r < 0 {
                return Err("exponent less than 0 (error token is \"0\")".into());
            }
            l.wrapping_pow(r.min(u32::MAX as i64) as u32)
        }
        "<<" => l.wrapping_shl(r as u32),
        ">>" => l.wrapping_shr(r as u32),
        "&" => l & r,
        "|" => l | r,
        "^" => l ^ r,
        "==" => (l == r) as i64,
        "!=" => (l != r) as i64,
        "<" => (l < r) as i64,
        ">" => (l > r) as i64,
        "<=" => (l <= r) as i64,
        ">=" => (l >= r) as i64,
        "," => r,
        _ => return Err(format!("unknown operator {op}")),
    })
}
