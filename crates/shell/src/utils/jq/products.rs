//! Multiplication inside the budget.
//!
//! One `*` can make a huge value from small ones: `"x" * 1e9` repeats a
//! string in a single operation, and jaq multiplies integers without
//! bound (`reduce range(30) as $i (3; . * .)` squares its way to a number
//! of hundreds of millions of digits, minutes of work and gigabytes, in 30
//! steps). No step of [`super::meter`] sees inside one operation, so every
//! binary `*` of a program is rewritten to go through [`PRODUCT_DEF`],
//! whose native [`product`] checks the size of the result before making
//! it:
//!
//! - a string times `n`: `len * n` bytes must fit in the memory budget left,
//!   or the run ends with `max_memory_bytes` (as a large value passing a
//!   step does); a fraction repeats it as many whole times (jq's rule,
//!   where jaq refuses);
//! - two numbers whose integer product does not fit in 64 bits multiply as
//!   doubles, as they do in jq (whose numbers are doubles), so a product
//!   never grows past a double's range;
//! - anything else (objects merged deeply, ...) is jaq's `*` as it is.
//!
//! The rewrite works on jaq's tokens: `*` binds tighter than every other
//! binary operator, so its right operand is the one atom after it and its
//! left operand the chain of atoms joined by `*`, `/` and `%` before it.
//! `A * B` becomes `_stead_mul(A; B)`, with jq's order of evaluation (for
//! each value of `B`, each value of `A`). An operand that starts with `def`
//! or `label` (which reach to the end of the term) is left as it is, and
//! so is `*=`.

use jaq_core::box_iter::box_once;
use jaq_core::load::lex::{Tok, Token};
use jaq_core::native::{v, Fun};
use jaq_core::{Exn, Native};
use jaq_json::{Num, Val};
use jaq_std::ValT;

use super::{span, Edit, Env, Kind};

/// The definition every rewritten `*` calls.
pub(super) const PRODUCT_DEF: &str =
    "def _stead_mul(a; b): b as $y | a as $x | $x | _stead_product($y);";

/// The native behind [`PRODUCT_DEF`].
const PRODUCT: &str = "_stead_product";

/// Adds the edits that rewrite every binary `*` among `tokens` (one level
/// of nesting: blocks are visited on their own).
pub(super) fn rewrite(program: &str, tokens: &[Token<&str>], edits: &mut Vec<Edit>) {
    for (at, Token(text, tok)) in tokens.iter().enumerate() {
        if !matches!(tok, Tok::Sym) || *text != "*" || at == 0 {
            continue;
        }
        let (Some(left), Some(right_end)) = (left_start(tokens, at), atom_end(tokens, at + 1))
        else {
            continue;
        };
        edits.push(Edit {
            at: span(program, tokens[left].0).start,
            remove: 0,
            insert: "_stead_mul(",
        });
        edits.push(Edit {
            at: span(program, text).start,
            remove: 1,
            insert: ";",
        });
        edits.push(Edit {
            at: span(program, tokens[right_end - 1].0).end,
            remove: 0,
            insert: ")",
        });
    }
}

/// Where the left operand of the operator at `op` starts: the first atom
/// that ends right before it, extended over `*`, `/` and `%` to its left.
fn left_start(tokens: &[Token<&str>], op: usize) -> Option<usize> {
    let start = (0..op).find(|&i| starts_operand(tokens, i) && atom_end(tokens, i) == Some(op))?;
    match start.checked_sub(1).map(|before| &tokens[before]) {
        Some(Token(t, Tok::Sym)) if matches!(*t, "*" | "/" | "%") => left_start(tokens, start - 1),
        _ => Some(start),
    }
}

/// Whether an operand can start at `i`: a `-` there is a negation only
/// where no value ends before it (`x - 1` subtracts).
fn starts_operand(tokens: &[Token<&str>], i: usize) -> bool {
    let Token(text, tok) = &tokens[i];
    if !(matches!(tok, Tok::Sym) && *text == "-") || i == 0 {
        return true;
    }
    !ends_value(&tokens[i - 1])
}

/// Whether a token can be the last of a value (so a `-` after it is
/// binary).
fn ends_value(Token(text, tok): &Token<&str>) -> bool {
    match tok {
        Tok::Num | Tok::Str(_) | Tok::Var | Tok::Block(_) | Tok::Fmt => true,
        Tok::Word => !is_keyword(text) || *text == "end",
        Tok::Sym => text.starts_with('.') || *text == "?",
    }
}

fn is_keyword(word: &str) -> bool {
    matches!(
        word,
        "def"
            | "if"
            | "then"
            | "elif"
            | "else"
            | "end"
            | "as"
            | "reduce"
            | "foreach"
            | "try"
            | "catch"
            | "label"
            | "import"
            | "include"
            | "and"
            | "or"
    )
}

/// The index after the atom that starts at `i` (its suffixes included), as
/// jaq's parser reads an atom; `None` where no atom starts, or one that
/// reaches to the end of the term (`def`, `label`).
fn atom_end(tokens: &[Token<&str>], i: usize) -> Option<usize> {
    let Token(text, tok) = tokens.get(i)?;
    let is =
        |at: usize, word: &str| matches!(tokens.get(at), Some(Token(t, Tok::Word)) if *t == word);
    let block = |at: usize, open: char| matches!(tokens.get(at), Some(Token(t, Tok::Block(_))) if t.starts_with(open));
    let primary_end = match tok {
        Tok::Sym if *text == "-" => return atom_end(tokens, i + 1),
        Tok::Sym if text.starts_with('.') => i + 1,
        Tok::Sym => return None,
        Tok::Word => match *text {
            "if" => {
                let mut depth = 0usize;
                let end = (i..tokens.len()).find(|&at| {
                    if is(at, "if") {
                        depth += 1;
                    } else if is(at, "end") {
                        depth -= 1;
                    }
                    depth == 0
                })?;
                end + 1
            }
            "try" => {
                let body = atom_end(tokens, i + 1)?;
                return if is(body, "catch") {
                    atom_end(tokens, body + 1)
                } else {
                    Some(body)
                };
            }
            "reduce" | "foreach" => {
                let source = atom_end(tokens, i + 1)?;
                if !is(source, "as") {
                    return None;
                }
                let pattern = source + 1;
                match tokens.get(pattern) {
                    Some(Token(_, Tok::Var | Tok::Block(_))) if block(pattern + 1, '(') => {
                        pattern + 2
                    }
                    _ => return None,
                }
            }
            "break" => i + 2,
            word if is_keyword(word) => return None,
            _ if block(i + 1, '(') => i + 2,
            _ => i + 1,
        },
        Tok::Fmt if matches!(tokens.get(i + 1), Some(Token(_, Tok::Str(_)))) => i + 2,
        Tok::Fmt | Tok::Num | Tok::Str(_) | Tok::Var | Tok::Block(_) => i + 1,
    };
    Some(suffixes_end(tokens, primary_end))
}

/// The index after the path suffixes (`[..]`, `.name`, `."name"`, `.[..]`,
/// `?`) from `at`.
fn suffixes_end(tokens: &[Token<&str>], mut at: usize) -> usize {
    loop {
        match tokens.get(at) {
            Some(Token(t, Tok::Block(_))) if t.starts_with('[') => at += 1,
            Some(Token("?", Tok::Sym)) => at += 1,
            Some(Token(".", Tok::Sym))
                if matches!(
                    tokens.get(at + 1),
                    Some(Token(_, Tok::Str(_))) | Some(Token(_, Tok::Block(_)))
                ) =>
            {
                at += 2
            }
            Some(Token(t, Tok::Sym)) if t.starts_with('.') && t.len() > 1 && *t != ".." => at += 1,
            _ => return at,
        }
    }
}

/// `$x * $y` for [`PRODUCT_DEF`], within the budget (see the module docs).
pub(super) fn product() -> Fun<Kind> {
    let native = Native::<Kind>::new(|mut cv| {
        let y = cv.0.pop_var();
        let env: &Env<'_> = cv.0.data();
        let (x, y) = whole_times(cv.1, y);
        if env.limit.borrow().is_some() {
            return Box::new(std::iter::empty());
        }
        if let Some(bytes) = repeated_len(&x, &y) {
            if let Err(abort) = env.budget.check_memory(bytes) {
                *env.limit.borrow_mut() = Some(abort);
                return Box::new(std::iter::empty());
            }
        }
        if let Some(double) = as_doubles(&x, &y) {
            return box_once(Ok(Val::Num(Num::Float(double))));
        }
        box_once((x * y).map_err(Exn::from))
    });
    (PRODUCT, v(1), native)
}

/// A string times a fraction repeats it as many whole times, as in jq
/// (jaq refuses such a product).
fn whole_times(x: Val, y: Val) -> (Val, Val) {
    let whole = |n: &Val| Val::Num(Num::Int(n.as_f64().unwrap_or(0.0) as isize));
    match (&x, &y) {
        (Val::TStr(_) | Val::BStr(_), Val::Num(Num::Float(_) | Num::Dec(_))) => {
            let y = whole(&y);
            (x, y)
        }
        (Val::Num(Num::Float(_) | Num::Dec(_)), Val::TStr(_) | Val::BStr(_)) => (whole(&x), y),
        _ => (x, y),
    }
}

/// The bytes `x * y` makes when it repeats a string.
fn repeated_len(x: &Val, y: &Val) -> Option<u64> {
    let (text, times) = match (x, y) {
        (Val::TStr(s) | Val::BStr(s), Val::Num(n)) | (Val::Num(n), Val::TStr(s) | Val::BStr(s)) => {
            (s, n)
        }
        _ => return None,
    };
    let times = match times {
        Num::Int(i) => *i as i128,
        // jaq saturates a big integer to the machine's.
        Num::BigInt(_) => i64::MAX as i128,
        Num::Float(_) | Num::Dec(_) => return None,
    };
    Some((text.len() as i128 * times.max(0)).min(u64::MAX as i128) as u64)
}

/// The product of two numbers as doubles, when their integer product would
/// not fit in 64 bits (jaq would make a big integer; jq's numbers are
/// doubles).
fn as_doubles(x: &Val, y: &Val) -> Option<f64> {
    let (Val::Num(a), Val::Num(b)) = (x, y) else {
        return None;
    };
    let fits = match (a, b) {
        (Num::Int(a), Num::Int(b)) => a.checked_mul(*b).is_some(),
        (Num::BigInt(_), _) | (_, Num::BigInt(_)) => false,
        _ => true,
    };
    if fits {
        return None;
    }
    Some(x.as_f64()? * y.as_f64()?)
}

#[cfg(test)]
mod tests {
    use super::super::meter::prepare;

    #[test]
    fn every_binary_star_goes_through_the_guard() {
        assert_eq!(prepare(r#""x" * 3"#).unwrap(), r#"_stead_mul("x" ; 3)"#);
        assert_eq!(
            prepare("1 + .a.b[0] * -2 - 3").unwrap(),
            "1 + _stead_mul(.a.b[0] ; -2) - 3"
        );
        // Left-associative, with `/` and `%` in the chain.
        assert_eq!(
            prepare("4 / 2 * 3 * $x % 5").unwrap(),
            "_stead_mul(_stead_mul(4 / 2 ; 3) ; $x) % 5"
        );
        assert_eq!(
            prepare("if . then 2 else 3 end * f(1; 2)").unwrap(),
            "_stead_mul(if . then 2 else 3 end ; f(1; 2))"
        );
        assert_eq!(
            prepare("x - 1 * 2, [. * .]").unwrap(),
            "x - _stead_mul(1 ; 2), [_stead_mul(. ; .)]"
        );
        assert_eq!(
            prepare("reduce range(3) as $i (2; . * .)").unwrap(),
            "reduce range(3) as $i (2; _stead_mul(. ; .) | _stead_tick)"
        );
        // `*=` and operands reaching to the end of the term are left alone.
        assert_eq!(prepare(".a *= 2").unwrap(), ".a *= 2");
        assert_eq!(
            prepare("def f: 2; f * 3").unwrap(),
            "def f: _stead_tick | 2; _stead_mul(f ; 3)"
        );
    }
}
