//! Conditionals: `[[ ... ]]` and the `test` / `[` builtin, sharing the
//! file, string and integer operators.

use stead_vfs::Kind;

use crate::limits::{build_regex, RegexError};

use super::ast::{Cond, Part, Word};
use super::{Flow, Shell, R};

const UNARY: &str = "abcdefghknoprstuwxzGLNOSv";

impl Shell<'_> {
    pub(crate) fn eval_cond(&mut self, c: &Cond) -> R<bool> {
        Ok(match c {
            Cond::Not(c) => !self.eval_cond(c)?,
            Cond::And(a, b) => self.eval_cond(a)? && self.eval_cond(b)?,
            Cond::Or(a, b) => self.eval_cond(a)? || self.eval_cond(b)?,
            Cond::Word(w) => !self.expand_single(w)?.is_empty(),
            Cond::Unary(op, w) => {
                let arg = self.expand_single(w)?;
                match self.test_unary(op, &arg)? {
                    Some(b) => b,
                    None => {
                        return Err(self.fatal(&format!(
                            "unexpected argument `{op}' to conditional unary operator"
                        )))
                    }
                }
            }
            Cond::Binary(op, l, r) => {
                let left = self.expand_single(l)?;
                match op.as_str() {
                    "==" | "=" | "!=" => {
                        let pat = self.expand_pattern(r)?;
                        let m = self.pattern_match(&pat, &left)?;
                        if op == "!=" {
                            !m
                        } else {
                            m
                        }
                    }
                    "=~" => self.regex_match(&left, r)?,
                    "-eq" | "-ne" | "-lt" | "-le" | "-gt" | "-ge" => {
                        let right = self.expand_single(r)?;
                        // An operand that is not a valid expression makes
                        // the test false (its error reported), as in bash:
                        // unlike `$(( ))`, it does not abandon the line.
                        let values = self
                            .arith_value(&left)
                            .and_then(|a| Ok((a, self.arith_value(&right)?)));
                        match values {
                            Ok((a, b)) => int_cmp(op, a, b),
                            Err(Flow::Error(_)) => false,
                            Err(e) => return Err(e),
                        }
                    }
                    _ => {
                        let right = self.expand_single(r)?;
                        self.test_binary(op, &left, &right)?.unwrap_or(false)
                    }
                }
            }
        })
    }

    fn regex_match(&mut self, text: &str, w: &Word) -> R<bool> {
        let mut pat = String::new();
        for p in &w.0 {
            match p {
                Part::Quoted(s) => pat.push_str(&regex::escape(s)),
                // A quoted part, or a tilde's directory, matches literally.
                Part::Double(_) | Part::Tilde(_) => {
                    let s = self.expand_single(&Word(vec![p.clone()]))?;
                    pat.push_str(&regex::escape(&s));
                }
                _ => pat.push_str(&self.expand_single(&Word(vec![p.clone()]))?),
            }
        }
        // bash answers 2 without a word for a bad expression; one past the
        // size bound says which bound.
        let re = match build_regex(&mut regex::RegexBuilder::new(&posix_to_rust(&pat))) {
            Ok(re) => re,
            Err(RegexError::TooLarge) => {
                self.err_line(&format!("{pat}: {}", RegexError::TooLarge))?;
                return Err(Flow::Fail(2));
            }
            Err(RegexError::Invalid(_)) => return Err(Flow::Fail(2)),
        };
        let Some(caps) = re.captures(text) else {
            self.st.vars.remove("BASH_REMATCH");
            return Ok(false);
        };
        let groups: Vec<(Option<&str>, String)> = caps
            .iter()
            .map(|m| (None, m.map_or(String::new(), |m| m.as_str().to_string())))
            .collect();
        let map = groups
            .into_iter()
            .enumerate()
            .map(|(i, (_, s))| (i as i64, s))
            .collect();
        self.st.vars.insert(
            "BASH_REMATCH".into(),
            super::Var {
                value: super::Value::Indexed(map),
                attrs: 0,
            },
        );
        Ok(true)
    }

    /// A unary test; `None` when `op` is not one.
    pub(crate) fn test_unary(&mut self, op: &str, arg: &str) -> R<Option<bool>> {
        let Some(flag) = op
            .strip_prefix('-')
            .filter(|f| f.len() == 1 && UNARY.contains(*f))
        else {
            return Ok(None);
        };
        Ok(Some(match flag {
            "z" => arg.is_empty(),
            "n" => !arg.is_empty(),
            "v" => self.var_is_set(arg),
            "o" => builtins_option(self, arg),
            "t" => false,
            _ => self.file_test(flag, arg),
        }))
    }

    fn var_is_set(&mut self, arg: &str) -> bool {
        if let Some((name, rest)) = arg.split_once('[') {
            let key = rest.trim_end_matches(']');
            if key == "@" || key == "*" {
                return self.get_all(name).is_some_and(|v| !v.is_empty());
            }
            let Ok(key) = self.ref_key(name, rest) else {
                return false;
            };
            return self.get_element(name, &key).is_some();
        }
        // An array's name stands for its element 0 (bash: `a=(); test -v a`
        // is false).
        self.get_scalar(arg).is_some()
    }

    fn file_test(&self, flag: &str, arg: &str) -> bool {
        if arg.is_empty() {
            return false;
        }
        let Ok(path) = stead_vfs::VPath::parse_from(arg, &self.st.cwd) else {
            return false;
        };
        // The devices are character devices, as on Linux (`/dev/fd/N` is
        // what that descriptor holds: a process substitution's file).
        use crate::devices::Device;
        if matches!(
            Device::named(arg),
            Some(Device::Null | Device::Zero | Device::Random)
        ) || matches!(arg, "/dev/stdin" | "/dev/stdout" | "/dev/stderr")
        {
            return matches!(flag, "e" | "a" | "c" | "r" | "w");
        }
        let follow = !matches!(flag, "h" | "L");
        let Ok(node) = self.fs.stat(&path, follow) else {
            return false;
        };
        match flag {
            "e" | "a" => true,
            "f" => node.kind == Kind::File,
            "d" => node.kind == Kind::Dir,
            "h" | "L" => node.kind == Kind::Symlink,
            "s" => node.size > 0,
            "r" => node.mode & 0o444 != 0,
            "w" => node.mode & 0o222 != 0,
            "x" => node.mode & 0o111 != 0,
            "O" | "G" => true,
            "N" => true,
            "u" => node.mode & 0o4000 != 0,
            "g" => node.mode & 0o2000 != 0,
            "k" => node.mode & 0o1000 != 0,
            _ => false,
        }
    }

    /// A binary test; `None` when `op` is not one.
    pub(crate) fn test_binary(&mut self, op: &str, a: &str, b: &str) -> R<Option<bool>> {
        Ok(Some(match op {
            "=" | "==" => a == b,
            "!=" => a != b,
            "<" => a < b,
            ">" => a > b,
            "-eq" | "-ne" | "-lt" | "-le" | "-gt" | "-ge" => {
                let (Some(x), Some(y)) = (parse_int(a), parse_int(b)) else {
                    let bad = if parse_int(a).is_none() { a } else { b };
                    self.err_line(&format!("test: {bad}: integer expression expected"))?;
                    return Err(Flow::Fail(2));
                };
                int_cmp(op, x, y)
            }
            "-nt" | "-ot" => {
                let ma = self.mtime(a);
                let mb = self.mtime(b);
                match op {
                    "-nt" => ma.is_some() && (mb.is_none() || ma > mb),
                    _ => mb.is_some() && (ma.is_none() || ma < mb),
                }
            }
            "-ef" => {
                let ra = stead_vfs::VPath::parse_from(a, &self.st.cwd)
                    .ok()
                    .and_then(|p| self.fs.realpath(&p).ok());
                let rb = stead_vfs::VPath::parse_from(b, &self.st.cwd)
                    .ok()
                    .and_then(|p| self.fs.realpath(&p).ok());
                ra.is_some() && ra == rb
            }
            _ => return Ok(None),
        }))
    }

    fn mtime(&self, p: &str) -> Option<i64> {
        let path = stead_vfs::VPath::parse_from(p, &self.st.cwd).ok()?;
        self.fs.stat(&path, true).ok().map(|n| n.mtime)
    }

    /// The `test` / `[` builtin over already-expanded arguments.
    pub(crate) fn test_args(&mut self, args: &[String]) -> R<i32> {
        let mut p = TestParser { args, pos: 0 };
        match p.expr(self) {
            Ok(b) if p.pos == args.len() => Ok((!b) as i32),
            Ok(_) => {
                let tok = &args[p.pos];
                self.err_line(&format!("test: {tok}: unexpected operator"))?;
                Ok(2)
            }
            Err(Flow::Error(s)) => Ok(s),
            Err(e) => Err(e),
        }
    }
}

fn builtins_option(sh: &Shell, name: &str) -> bool {
    let o = &sh.st.opts;
    match name {
        "errexit" => o.errexit,
        "nounset" => o.nounset,
        "xtrace" => o.xtrace,
        "pipefail" => o.pipefail,
        "noglob" => o.noglob,
        "noclobber" => o.noclobber,
        _ => false,
    }
}

fn parse_int(s: &str) -> Option<i64> {
    let t = s.trim();
    t.parse::<i64>().ok()
}

fn int_cmp(op: &str, a: i64, b: i64) -> bool {
    match op {
        "-eq" => a == b,
        "-ne" => a != b,
        "-lt" => a < b,
        "-le" => a <= b,
        "-gt" => a > b,
        _ => a >= b,
    }
}

/// POSIX ERE to the `regex` crate: bracket expressions keep `[` literal.
fn posix_to_rust(p: &str) -> String {
    let mut out = String::new();
    let chars: Vec<char> = p.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\\' && i + 1 < chars.len() {
            out.push(c);
            out.push(chars[i + 1]);
            i += 2;
            continue;
        }
        if c == '[' {
            out.push('[');
            i += 1;
            if i < chars.len() && chars[i] == '^' {
                out.push('^');
                i += 1;
            }
            if i < chars.len() && chars[i] == ']' {
                out.push_str("\\]");
                i += 1;
            }
            while i < chars.len() && chars[i] != ']' {
                if chars[i] == '[' && chars.get(i + 1) == Some(&':') {
                    let rest: String = chars[i..].iter().collect();
                    if let Some(end) = rest.find(":]") {
                        out.push_str(&rest[..end + 2]);
                        i += rest[..end + 2].chars().count();
                        continue;
                    }
                }
                if chars[i] == '[' || chars[i] == '\\' {
                    out.push('\\');
                }
                out.push(chars[i]);
                i += 1;
            }
            out.push(']');
            i += 1;
            continue;
        }
        out.push(c);
        i += 1;
    }
    out
}

struct TestParser<'a> {
    args: &'a [String],
    pos: usize,
}

impl TestParser<'_> {
    fn peek(&self) -> Option<&str> {
        self.args.get(self.pos).map(String::as_str)
    }

    fn expr(&mut self, sh: &mut Shell) -> R<bool> {
        let n = self.args.len() - self.pos;
        // POSIX rules by argument count.
        match n {
            0 => return Ok(false),
            1 => {
                self.pos += 1;
                return Ok(!self.args[self.pos - 1].is_empty());
            }
            2 if self.peek() == Some("!") => {
                self.pos += 2;
                return Ok(self.args[self.pos - 1].is_empty());
            }
            3 => {
                let (a, op, b) = (
                    &self.args[self.pos],
                    &self.args[self.pos + 1],
                    &self.args[self.pos + 2],
                );
                if let Some(r) = sh.test_binary(op, a, b)? {
                    self.pos += 3;
                    return Ok(r);
                }
                if op == "-a" || op == "-o" {
                    self.pos += 3;
                    let (x, y) = (!a.is_empty(), !b.is_empty());
                    return Ok(if op == "-a" { x && y } else { x || y });
                }
                if a == "!" {
                    self.pos += 1;
                    return Ok(!self.expr(sh)?);
                }
                if a == "(" && b == ")" {
                    self.pos += 3;
                    return Ok(!op.is_empty());
                }
            }
            4 if self.peek() == Some("!") => {
                self.pos += 1;
                return Ok(!self.expr(sh)?);
            }
            _ => {}
        }
        self.or(sh)
    }

    fn or(&mut self, sh: &mut Shell) -> R<bool> {
        let mut v = self.and(sh)?;
        while self.peek() == Some("-o") {
            self.pos += 1;
            let r = self.and(sh)?;
            v = v || r;
        }
        Ok(v)
    }

    fn and(&mut self, sh: &mut Shell) -> R<bool> {
        let mut v = self.not(sh)?;
        while self.peek() == Some("-a") {
            self.pos += 1;
            let r = self.not(sh)?;
            v = v && r;
        }
        Ok(v)
    }

    fn not(&mut self, sh: &mut Shell) -> R<bool> {
        // Arguments come from expansion, so their nesting has no parse-time
        // bound: `!` and `(` recurse through here.
        sh.budget.check_stack()?;
        if self.peek() == Some("!") {
            self.pos += 1;
            return Ok(!self.not(sh)?);
        }
        self.primary(sh)
    }

    fn primary(&mut self, sh: &mut Shell) -> R<bool> {
        let Some(tok) = self.peek().map(str::to_string) else {
            sh.err_line("test: argument expected")?;
            return Err(Flow::Fail(2));
        };
        if tok == "(" {
            self.pos += 1;
            let v = self.or(sh)?;
            if self.peek() != Some(")") {
                sh.err_line("test: `)' expected")?;
                return Err(Flow::Fail(2));
            }
            self.pos += 1;
            return Ok(v);
        }
        if let (Some(op), Some(b)) = (self.args.get(self.pos + 1), self.args.get(self.pos + 2)) {
            if let Some(r) = sh.test_binary(op, &tok, b)? {
                self.pos += 3;
                return Ok(r);
            }
        }
        if let Some(arg) = self.args.get(self.pos + 1) {
            if let Some(r) = sh.test_unary(&tok, arg)? {
                self.pos += 2;
                return Ok(r);
            }
        }
        if tok.starts_with('-')
            && tok.len() == 2
            && UNARY.contains(&tok[1..])
            && self.args.len() == self.pos + 1
        {
            self.pos += 1;
            return Ok(true);
        }
        self.pos += 1;
        Ok(!tok.is_empty())
    }
}
