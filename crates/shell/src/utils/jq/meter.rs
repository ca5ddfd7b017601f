//! jq inside the shell's budget.
//!
//! jaq evaluates a filter with no hook for its host: a loop or a recursion
//! inside the filter (`[range(1e9)]`, `def f: f; f`, `def f: 1 + f; f`,
//! `reduce range(60) as $i ("x"; . + .)`) never returns to us until it is
//! done, runs out of memory or overflows the stack. So the program is
//! rewritten, before jaq sees it, to pass through [`TICK`] at every step
//! that can repeat:
//!
//! - at the start of every `def` body (each call of a definition, so all
//!   recursion, jaq's own definitions included: see [`tick_std_def`]);
//! - after the update of every `reduce` and `foreach`;
//! - `..` becomes `recurse`, which is a definition.
//!
//! `range` is replaced by a native that steps the same way
//! ([`range`]). Each step is charged as a loop iteration, checks the stack
//! (`max_stack_bytes`) and checks the size of the value passing (a string
//! or array larger than the memory budget left ends the run with
//! `max_memory_bytes`). Once a limit is crossed every step yields nothing,
//! so the evaluation winds down (an error could be caught by `try`), and
//! the driver reports the limit instead of any further output.
//!
//! What no step sees, a single operation that makes a huge value from
//! small ones (`"x" * 1e9`), is checked before it is made: every `*` is
//! rewritten too (see [`super::products`]). Printing and `tojson` are
//! bounded by the writer (see `write::Style::max_len`).
//!
//! The rewrite also gives every interpolated string without a format an
//! explicit `@text`, so interpolation goes through our `tostring` (jaq's
//! built-in one prints 10/2 as `5.0`).

use jaq_core::box_iter::box_once;
use jaq_core::load::lex::{Lexer, StrPart, Tok, Token};
use jaq_core::load::parse::{BinaryOp, Def, Term};
use jaq_core::native::{v, Fun};
use jaq_core::{Exn, Native, ValX};
use jaq_json::Val;

use super::{span, Edit, Env, Kind};
use crate::limits::{too_deep_message, Abort, LimitKind, MAX_PARSE_DEPTH};

/// The native every repeating step passes through.
pub(super) const TICK: &str = "_stead_tick";

/// The program as it runs: checked for nesting, then rewritten (see the
/// module docs). `Err` is the message of a program nested too deeply
/// (jaq's lexer and parser recurse once per level). A program that does
/// not lex is returned as it is, for jaq to report.
pub(super) fn prepare(program: &str) -> Result<String, String> {
    if nesting(program) > MAX_PARSE_DEPTH {
        return Err(format!("syntax error: {}", too_deep_message()));
    }
    let Ok(tokens) = Lexer::new(program).lex() else {
        return Ok(program.to_string());
    };
    let mut edits = Vec::new();
    visit(program, &tokens, &mut edits);
    // Apply from the end, so offsets stay valid; at one offset, in the
    // order the edits were made.
    edits.sort_by_key(|e| std::cmp::Reverse(e.at));
    let mut out = program.to_string();
    for edit in edits {
        out.replace_range(edit.at..edit.at + edit.remove, edit.insert);
    }
    Ok(out)
}

fn visit(program: &str, tokens: &[Token<&str>], edits: &mut Vec<Edit>) {
    let insert = |edits: &mut Vec<Edit>, at: usize, insert: &'static str| {
        edits.push(Edit {
            at,
            remove: 0,
            insert,
        })
    };
    for (i, Token(text, tok)) in tokens.iter().enumerate() {
        match tok {
            Tok::Block(inner) => visit(program, inner, edits),
            Tok::Str(parts) => {
                let mut interpolated = false;
                for part in parts {
                    if let StrPart::Term(Token(_, Tok::Block(inner))) = part {
                        interpolated = true;
                        visit(program, inner, edits);
                    }
                }
                let formatted = i > 0 && matches!(tokens[i - 1].1, Tok::Fmt);
                if interpolated && !formatted {
                    insert(edits, span(program, text).start, "@text ");
                }
            }
            Tok::Word if *text == "def" => {
                // `def name(args): body;`: a step before the body.
                if let Some(colon) = tokens[i..]
                    .iter()
                    .find(|Token(t, tok)| matches!(tok, Tok::Sym) && *t == ":")
                {
                    insert(edits, span(program, colon.0).end, " _stead_tick |");
                }
            }
            Tok::Word if *text == "reduce" || *text == "foreach" => {
                if let Some(at) = update_end(program, &tokens[i..], *text == "foreach") {
                    insert(edits, at, " | _stead_tick");
                }
            }
            Tok::Sym if *text == ".." => edits.push(Edit {
                at: span(program, text).start,
                remove: 2,
                insert: "recurse",
            }),
            _ => {}
        }
    }
    // After this level's other edits: at one offset, a later edit's text
    // comes first (`. * .)` ends as `_stead_mul(. ; .) | _stead_tick)`).
    super::products::rewrite(program, tokens, edits);
}

/// Where the update of `reduce SOURCE as PATTERN (INIT; UPDATE)` (or
/// `foreach ... (INIT; UPDATE; EXTRACT)`) ends in the program text.
fn update_end(program: &str, tokens: &[Token<&str>], foreach: bool) -> Option<usize> {
    let after_as = tokens
        .iter()
        .position(|Token(t, tok)| matches!(tok, Tok::Word) && *t == "as")?;
    let Token(block_text, Tok::Block(inner)) = tokens[after_as..]
        .iter()
        .find(|Token(t, tok)| matches!(tok, Tok::Block(_)) && t.starts_with('('))?
    else {
        return None;
    };
    let semicolons: Vec<&str> = inner
        .iter()
        .filter(|Token(t, tok)| matches!(tok, Tok::Sym) && *t == ";")
        .map(|Token(t, _)| *t)
        .collect();
    match (foreach, semicolons.as_slice()) {
        (true, [_, second, ..]) => Some(span(program, second).start),
        (_, [_, ..]) => Some(span(program, block_text).end - 1),
        _ => None,
    }
}

/// The deepest nesting of brackets, string interpolations and `if`s in a
/// program, found without recursing (so before jaq's lexer does).
fn nesting(program: &str) -> usize {
    #[derive(PartialEq)]
    enum Open {
        Bracket,
        Interpolation,
        String,
    }
    let bytes = program.as_bytes();
    let mut stack: Vec<Open> = Vec::new();
    let mut ifs = 0usize;
    let mut deepest = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if stack.last() == Some(&Open::String) {
            match b {
                b'\\' if bytes.get(i + 1) == Some(&b'(') => {
                    stack.push(Open::Interpolation);
                    i += 1;
                }
                b'\\' => i += 1,
                b'"' => {
                    stack.pop();
                }
                _ => {}
            }
        } else {
            match b {
                b'"' => stack.push(Open::String),
                b'(' | b'[' | b'{' => stack.push(Open::Bracket),
                b')' | b']' | b'}' => {
                    stack.pop();
                }
                b'#' => {
                    while i < bytes.len() && bytes[i] != b'\n' {
                        i += 1;
                    }
                }
                _ if bytes[i..].starts_with(b"if") && word_at(bytes, i, 2) => ifs += 1,
                _ if bytes[i..].starts_with(b"end") && word_at(bytes, i, 3) => {
                    ifs = ifs.saturating_sub(1)
                }
                _ => {}
            }
        }
        deepest = deepest.max(stack.len() + ifs);
        i += 1;
    }
    deepest
}

/// Whether the `len` bytes at `at` are a whole word.
fn word_at(bytes: &[u8], at: usize, len: usize) -> bool {
    let ident = |b: &u8| b.is_ascii_alphanumeric() || *b == b'_' || *b == b'$';
    let after = bytes.get(at + len).is_some_and(ident);
    let before = at > 0 && ident(&bytes[at - 1]);
    !before && !after
}

/// A library definition (jaq's, or ours in `COMPAT_DEFS`) with a step
/// before its body; recursive definitions nested in ours have their own.
pub(super) fn tick_std_def(mut def: Def<&'static str>) -> Def<&'static str> {
    let body = std::mem::take(&mut def.body);
    def.body = Term::BinOp(
        Box::new(Term::Call(TICK, Vec::new())),
        BinaryOp::Pipe(None),
        Box::new(body),
    );
    def
}

/// Bytes a value holds at its top level (its parts were charged when
/// they passed a step themselves; shared parts are counted once each).
fn shallow_size(value: &Val) -> u64 {
    match value {
        Val::TStr(s) | Val::BStr(s) => s.len() as u64,
        Val::Arr(items) => items.len() as u64 * 16,
        Val::Obj(map) => map.len() as u64 * 48,
        Val::Null | Val::Bool(_) | Val::Num(_) => 0,
    }
}

/// Whether `value` nests deeper than [`super::MAX_DEPTH`] along its first
/// or its last elements. Dropping or printing a value recurses once per
/// level, and a value built one level per step (`def f: [.] | f`) would
/// overflow the stack when it is freed; following both ends catches the
/// ways such values are built at a cost of their depth per step.
fn too_deep(value: &Val) -> bool {
    fn end(value: &Val, last: bool) -> Option<&Val> {
        match value {
            Val::Arr(items) if last => items.last(),
            Val::Arr(items) => items.first(),
            Val::Obj(map) if last => map.values().last(),
            Val::Obj(map) => map.values().next(),
            _ => None,
        }
    }
    [false, true].into_iter().any(|last| {
        let mut current = value;
        for _ in 0..super::MAX_DEPTH {
            match end(current, last) {
                Some(inner) => current = inner,
                None => return false,
            }
        }
        true
    })
}

/// One step: charged, the stack checked, the value passing checked.
/// `false` once a limit is crossed (remembered in `env.limit`).
fn step(env: &Env<'_>, value: &Val) -> bool {
    if env.limit.borrow().is_some() {
        return false;
    }
    let checked = env
        .budget
        .charge_iteration()
        .and_then(|()| env.budget.check_stack())
        .and_then(|()| env.budget.check_memory(shallow_size(value)))
        .and_then(|()| match too_deep(value) {
            true => Err(Abort::Limit(LimitKind::Stack)),
            false => Ok(()),
        });
    match checked {
        Ok(()) => true,
        Err(abort) => {
            *env.limit.borrow_mut() = Some(abort);
            false
        }
    }
}

/// [`TICK`]: the identity, as a step; a path expression too, so `path(f)`
/// and `f |= g` work on definitions.
pub(super) fn tick() -> Fun<Kind> {
    let native = Native::<Kind>::new(|cv| {
        let env = cv.0.data();
        if step(env, &cv.1) {
            box_once(Ok(cv.1))
        } else {
            Box::new(std::iter::empty())
        }
    })
    .with_paths(|cv| {
        let env = cv.0.data();
        if step(env, &cv.1 .0) {
            box_once(Ok(cv.1))
        } else {
            Box::new(std::iter::empty())
        }
    })
    .with_update(|cv, f| {
        let env = cv.0.data();
        if step(env, &cv.1) {
            f(cv.1)
        } else {
            Box::new(std::iter::empty())
        }
    });
    (TICK, v(0), native)
}

/// `range($from; $upto; $by)` as jaq's native does it, one step per value.
pub(super) fn range() -> Fun<Kind> {
    let native = Native::<Kind>::new(|mut cv| {
        let by = cv.0.pop_var();
        let to = cv.0.pop_var();
        let from = cv.0.pop_var();
        let env: &Env<'_> = cv.0.data();
        let ascending = by > Val::from(0isize);
        let descending = by < Val::from(0isize);
        let mut next: Option<ValX<Val>> = Some(Ok(from));
        Box::new(std::iter::from_fn(move || {
            let x = match next.take()? {
                Ok(x) => x,
                Err(e) => return Some(Err(e)),
            };
            let more = if ascending {
                x < to
            } else if descending {
                x > to
            } else {
                x != to
            };
            if !more || !step(env, &x) {
                return None;
            }
            next = Some((x.clone() + by.clone()).map_err(Exn::from));
            Some(Ok(x))
        }))
    });
    ("range", v(3), native)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn definitions_reductions_and_recursion_get_steps() {
        assert_eq!(prepare("def f: f; f").unwrap(), "def f: _stead_tick | f; f");
        assert_eq!(
            prepare("reduce .[] as $x (0; . + $x)").unwrap(),
            "reduce .[] as $x (0; . + $x | _stead_tick)"
        );
        assert_eq!(
            prepare("foreach .[] as [$a] (0; . + $a; [.])").unwrap(),
            "foreach .[] as [$a] (0; . + $a | _stead_tick; [.])"
        );
        assert_eq!(prepare("[..] | length").unwrap(), "[recurse] | length");
        assert_eq!(
            prepare(r#""\(def g: 1; g)""#).unwrap(),
            r#"@text "\(def g: _stead_tick | 1; g)""#
        );
        // Words that only contain the keywords are left alone.
        assert_eq!(prepare(".define | .reduced").unwrap(), ".define | .reduced");
    }

    #[test]
    fn nesting_is_measured_without_recursion() {
        assert_eq!(nesting("[[1]]"), 2);
        assert_eq!(nesting(r#""\("\(1)")""#), 4);
        assert_eq!(nesting("if if 1 then 2 end then 3 end"), 2);
        assert_eq!(nesting(r#""((((""#), 1);
        assert_eq!(nesting(".k[\u{fffd}].x | if é then 1 end"), 1);
        assert!(prepare(&"[".repeat(10_000))
            .unwrap_err()
            .contains("max_parse_depth"));
    }
}
