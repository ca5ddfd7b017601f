//! `expr` and `factor`: the arithmetic helpers old scripts still call.
//!
//! `expr` evaluates its arguments as one expression (`|`, `&`, comparisons,
//! `+ -`, `* / %`, `:` regex match, `match`, `substr`, `index`, `length`)
//! with GNU's exit codes: 0 for a non-null, non-zero result, 1 otherwise,
//! 2 for a bad expression. Integers are 64-bit (GNU uses bignums).

use std::cmp::Ordering;

use super::usage;
use crate::limits::{build_regex, Abort, RegexError};
use crate::utils::Ctx;

/// An `expr` value: numbers stay strings until arithmetic needs them.
type Value = String;

/// Recursive-descent evaluation over the argument list.
struct Expr<'a> {
    args: &'a [String],
    at: usize,
}

impl Expr<'_> {
    fn peek(&self) -> Option<&str> {
        self.args.get(self.at).map(String::as_str)
    }

    fn take(&mut self) -> Result<&str, String> {
        let token = self.args.get(self.at).ok_or_else(|| {
            match self.at.checked_sub(1).and_then(|i| self.args.get(i)) {
                Some(last) => format!("syntax error: missing argument after ‘{last}’"),
                None => "syntax error".to_string(),
            }
        })?;
        self.at += 1;
        Ok(token)
    }

    fn accept(&mut self, ops: &[&str]) -> Option<String> {
        let op = self.peek().filter(|t| ops.contains(t))?.to_string();
        self.at += 1;
        Some(op)
    }

    fn or(&mut self) -> Result<Value, String> {
        let mut left = self.and()?;
        while self.accept(&["|"]).is_some() {
            let right = self.and()?;
            left = if is_null(&left) {
                if is_null(&right) {
                    "0".into()
                } else {
                    right
                }
            } else {
                left
            };
        }
        Ok(left)
    }

    fn and(&mut self) -> Result<Value, String> {
        let mut left = self.compare()?;
        while self.accept(&["&"]).is_some() {
            let right = self.compare()?;
            left = if is_null(&left) || is_null(&right) {
                "0".into()
            } else {
                left
            };
        }
        Ok(left)
    }

    fn compare(&mut self) -> Result<Value, String> {
        let mut left = self.sum()?;
        while let Some(op) = self.accept(&["<", "<=", "=", "==", "!=", ">=", ">"]) {
            let right = self.sum()?;
            let order = match (left.parse::<i64>(), right.parse::<i64>()) {
                (Ok(a), Ok(b)) => a.cmp(&b),
                _ => left.as_bytes().cmp(right.as_bytes()),
            };
            let holds = match op.as_str() {
                "<" => order == Ordering::Less,
                "<=" => order != Ordering::Greater,
                "=" | "==" => order == Ordering::Equal,
                "!=" => order != Ordering::Equal,
                ">=" => order != Ordering::Less,
                _ => order == Ordering::Greater,
            };
            left = if holds { "1" } else { "0" }.to_string();
        }
        Ok(left)
    }

    fn sum(&mut self) -> Result<Value, String> {
        let mut left = self.product()?;
        while let Some(op) = self.accept(&["+", "-"]) {
            let right = self.product()?;
            left = arithmetic(&left, &op, &right)?;
        }
        Ok(left)
    }

    fn product(&mut self) -> Result<Value, String> {
        let mut left = self.matching()?;
        while let Some(op) = self.accept(&["*", "/", "%"]) {
            let right = self.matching()?;
            left = arithmetic(&left, &op, &right)?;
        }
        Ok(left)
    }

    fn matching(&mut self) -> Result<Value, String> {
        let mut left = self.primary()?;
        while self.accept(&[":"]).is_some() {
            let pattern = self.primary()?;
            left = regex_match(&left, &pattern)?;
        }
        Ok(left)
    }

    fn primary(&mut self) -> Result<Value, String> {
        let token = self.take()?.to_string();
        match token.as_str() {
            "(" => {
                let value = self.or()?;
                match self.take() {
                    Ok(")") => Ok(value),
                    _ => Err("syntax error: expecting ')'".to_string()),
                }
            }
            "+" => Ok(self.take()?.to_string()),
            "length" => Ok(self.primary()?.chars().count().to_string()),
            "match" => {
                let text = self.primary()?;
                let pattern = self.primary()?;
                regex_match(&text, &pattern)
            }
            "substr" => {
                let text = self.primary()?;
                let (start, len) = (self.primary()?, self.primary()?);
                let (start, len) = (
                    start.parse::<usize>().unwrap_or(0),
                    len.parse::<usize>().unwrap_or(0),
                );
                if start == 0 {
                    return Ok(String::new());
                }
                Ok(text.chars().skip(start - 1).take(len).collect())
            }
            "index" => {
                let text = self.primary()?;
                let chars = self.primary()?;
                let found = text
                    .chars()
                    .position(|c| chars.contains(c))
                    .map_or(0, |p| p + 1);
                Ok(found.to_string())
            }
            _ => Ok(token),
        }
    }
}

fn is_null(value: &str) -> bool {
    value.is_empty() || value.parse::<i64>() == Ok(0)
}

fn arithmetic(left: &str, op: &str, right: &str) -> Result<Value, String> {
    let parse = |s: &str| {
        s.parse::<i64>()
            .map_err(|_| "non-integer argument".to_string())
    };
    let (a, b) = (parse(left)?, parse(right)?);
    let result = match op {
        "+" => a.checked_add(b),
        "-" => a.checked_sub(b),
        "*" => a.checked_mul(b),
        _ if b == 0 => return Err("division by zero".to_string()),
        "/" => a.checked_div(b),
        _ => a.checked_rem(b),
    };
    result
        .map(|v| v.to_string())
        .ok_or_else(|| "integer result too large".to_string())
}

/// `STRING : REGEX`, anchored at the start: the first group, or the match length.
fn regex_match(text: &str, pattern: &str) -> Result<Value, String> {
    let translated = format!("^(?:{})", bre_to_regex(pattern));
    let re = build_regex(&mut regex::RegexBuilder::new(&translated)).map_err(|e| match e {
        RegexError::TooLarge => e.to_string(),
        RegexError::Invalid(_) => format!("invalid regular expression: {pattern}"),
    })?;
    let captures = re.captures(text);
    if re.captures_len() > 1 {
        return Ok(captures
            .and_then(|c| c.get(1))
            .map_or(String::new(), |m| m.as_str().to_string()));
    }
    Ok(captures.map_or(0, |c| c[0].chars().count()).to_string())
}

/// Translates a POSIX basic regular expression to `regex` syntax.
fn bre_to_regex(pattern: &str) -> String {
    let mut out = String::new();
    let mut chars = pattern.chars().peekable();
    let mut at_start = true;
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(special @ ('(' | ')' | '{' | '}' | '+' | '?' | '|')) => out.push(special),
                Some(other) => {
                    out.push('\\');
                    out.push(other);
                }
                None => out.push_str("\\\\"),
            },
            '*' if at_start => out.push_str("\\*"),
            '(' | ')' | '{' | '}' | '+' | '?' | '|' => {
                out.push('\\');
                out.push(c);
            }
            _ => out.push(c),
        }
        at_start = out.ends_with('(') && !out.ends_with("\\(");
    }
    out
}

pub(super) fn expr(ctx: &mut Ctx<'_>, argv: &[String]) -> Result<i32, Abort> {
    let args = match argv.get(1).map(String::as_str) {
        Some("--") => &argv[2..],
        _ => &argv[1..],
    };
    if args.is_empty() {
        return usage(ctx, "expr", "missing operand", 2);
    }
    ctx.budget.charge_cpu(args.len() as u64)?;
    let mut parser = Expr { args, at: 0 };
    let result = parser.or().and_then(|value| match parser.peek() {
        None => Ok(value),
        Some(extra) => Err(format!("syntax error: unexpected argument ‘{extra}’")),
    });
    match result {
        Ok(value) => {
            ctx.stdout.write_str(&format!("{value}\n"))?;
            Ok(i32::from(is_null(&value)))
        }
        Err(message) => {
            ctx.error("expr", &message)?;
            Ok(2)
        }
    }
}

fn mul_mod(a: u64, b: u64, m: u64) -> u64 {
    (u128::from(a) * u128::from(b) % u128::from(m)) as u64
}

fn pow_mod(mut base: u64, mut exp: u64, m: u64) -> u64 {
    let mut result = 1;
    base %= m;
    while exp > 0 {
        if exp & 1 == 1 {
            result = mul_mod(result, base, m);
        }
        base = mul_mod(base, base, m);
        exp >>= 1;
    }
    result
}

/// Deterministic Miller-Rabin for 64-bit numbers.
fn is_prime(n: u64) -> bool {
    if n < 2 {
        return false;
    }
    const WITNESSES: [u64; 12] = [2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37];
    if let Some(p) = WITNESSES.iter().find(|p| n % **p == 0) {
        return n == *p;
    }
    let (mut d, mut s) = (n - 1, 0);
    while d % 2 == 0 {
        d /= 2;
        s += 1;
    }
    WITNESSES.iter().all(|&a| {
        let mut x = pow_mod(a, d, n);
        if x == 1 || x == n - 1 {
            return true;
        }
        (1..s).any(|_| {
            x = mul_mod(x, x, n);
            x == n - 1
        })
    })
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// A non-trivial factor of composite `n` (Pollard's rho).
fn rho(n: u64, ctx: &Ctx<'_>) -> Result<u64, Abort> {
    if n % 2 == 0 {
        return Ok(2);
    }
    for c in 1.. {
        let step = |x: u64| (mul_mod(x, x, n) + c) % n;
        let (mut x, mut y, mut d) = (2, 2, 1);
        while d == 1 {
            ctx.budget.charge_cpu(1)?;
            x = step(x);
            y = step(step(y));
            d = gcd(x.abs_diff(y), n);
        }
        if d != n {
            return Ok(d);
        }
    }
    Ok(n)
}

fn factorize(n: u64, ctx: &Ctx<'_>, out: &mut Vec<u64>) -> Result<(), Abort> {
    if n < 2 {
        return Ok(());
    }
    if is_prime(n) {
        out.push(n);
        return Ok(());
    }
    let d = rho(n, ctx)?;
    factorize(d, ctx, out)?;
    factorize(n / d, ctx, out)
}

pub(super) fn factor(ctx: &mut Ctx<'_>, argv: &[String]) -> Result<i32, Abort> {
    let parsed = match super::getopt(&argv[1..], &[]) {
        Ok(p) => p,
        Err(message) => return usage(ctx, "factor", &message, 1),
    };
    let input;
    let numbers: Vec<&str> = if !parsed.operands.is_empty() {
        parsed.operands.iter().map(String::as_str).collect()
    } else {
        input = String::from_utf8_lossy(ctx.stdin.all()?).into_owned();
        input.split_whitespace().collect()
    };
    let mut status = 0;
    for text in numbers {
        let Ok(n) = text.trim_start_matches('+').parse::<u64>() else {
            ctx.error(
                "factor",
                &format!("‘{text}’ is not a valid positive integer"),
            )?;
            status = 1;
            continue;
        };
        let mut factors = Vec::new();
        factorize(n, ctx, &mut factors)?;
        factors.sort_unstable();
        let shown: String = factors.iter().map(|f| format!(" {f}")).collect();
        ctx.stdout.write_str(&format!("{n}:{shown}\n"))?;
    }
    Ok(status)
}

#[cfg(test)]
mod tests {
    use crate::utils::testing::{db, run};

    fn expr(args: &[&str]) -> (String, i32) {
        let mut argv = vec!["expr"];
        argv.extend_from_slice(args);
        let r = run(&db(), &argv, "");
        (r.stdout, r.status)
    }

    #[test]
    fn expr_arithmetic_and_comparisons() {
        assert_eq!(expr(&["1", "+", "2"]), ("3\n".into(), 0));
        assert_eq!(expr(&["10", "/", "3"]), ("3\n".into(), 0));
        assert_eq!(expr(&["5", "*", "2", "-", "1"]), ("9\n".into(), 0));
        assert_eq!(expr(&["3", ">", "20"]), ("0\n".into(), 1));
        assert_eq!(expr(&["a", ">", "20"]), ("1\n".into(), 0));
        assert_eq!(expr(&["abc", "=", "abc"]), ("1\n".into(), 0));
        assert_eq!(expr(&["", "|", "5"]), ("5\n".into(), 0));
        assert_eq!(expr(&["0", "&", "3"]), ("0\n".into(), 1));
        assert_eq!(expr(&["--", "-5", "+", "2"]), ("-3\n".into(), 0));
        assert_eq!(
            expr(&["(", "1", "+", "2", ")", "*", "3"]),
            ("9\n".into(), 0)
        );
    }

    #[test]
    fn expr_strings_and_errors() {
        assert_eq!(expr(&["length", "hello"]).0, "5\n");
        assert_eq!(expr(&["substr", "hello", "2", "3"]).0, "ell\n");
        assert_eq!(expr(&["index", "hello", "l"]).0, "3\n");
        assert_eq!(expr(&["hello", ":", "h\\(.*\\)o"]).0, "ell\n");
        assert_eq!(expr(&["hello", ":", "hel"]).0, "3\n");
        assert_eq!(expr(&["hello", ":", "x"]), ("0\n".into(), 1));
        assert_eq!(expr(&["1", "/", "0"]).1, 2);
        assert_eq!(expr(&["a", "+", "1"]).1, 2);
        assert_eq!(expr(&["1", "+"]).1, 2);
        assert_eq!(expr(&[]).1, 2);
        let r = run(&db(), &["expr", "1", "/", "0"], "");
        assert_eq!(r.stderr, "expr: division by zero\n");
    }

    #[test]
    fn factor_matches_gnu() {
        let r = run(&db(), &["factor", "12", "97", "1", "0", "1001"], "");
        assert_eq!(r.stdout, "12: 2 2 3\n97: 97\n1:\n0:\n1001: 7 11 13\n");
        let big = run(&db(), &["factor"], "18446744073709551615\n");
        assert_eq!(
            big.stdout,
            "18446744073709551615: 3 5 17 257 641 65537 6700417\n"
        );
        assert_eq!(run(&db(), &["factor", "x"], "").status, 1);
        assert_eq!(run(&db(), &["factor", "--", "6"], "").stdout, "6: 2 3\n");
        assert_eq!(
            run(&db(), &["factor", "-5"], "").stderr.lines().next(),
            Some("factor: invalid option -- '5'")
        );
    }
}
