//! Glob patterns: `*`, `?`, `[...]` (with classes), backslash escapes and,
//! with `extglob`, `@(..)`, `*(..)`, `+(..)`, `?(..)`, `!(..)`. Used by
//! `case`, `[[ == ]]`, `${x#pat}` and friends, and pathname expansion over
//! the workspace filesystem.

use stead_vfs::{Kind, VPath};

use super::Shell;
use crate::limits::{Abort, Budget, Clock, NODE_COST};

/// What a pattern's `?` and a bracket expression match one of, as the
/// locale's character type decides (bash's `LC_CTYPE`): a character, or
/// under the C locale (`LC_ALL=C`) a byte, so `?` matches one byte of `μ`
/// and `[[:alpha:]]` no byte of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Units {
    Chars,
    Bytes,
}

impl Units {
    /// `text` cut into units: under [`Units::Bytes`] a character past ASCII
    /// is its UTF-8 bytes, each carried as a raw byte (`crate::bytes`).
    pub(crate) fn cut(self, text: &str) -> Vec<char> {
        match self {
            Units::Chars => text.chars().collect(),
            Units::Bytes => crate::bytes::encode_bytes(text.as_bytes())
                .iter()
                .map(|&b| {
                    if b.is_ascii() {
                        b as char
                    } else {
                        crate::bytes::byte_char(b)
                    }
                })
                .collect(),
        }
    }

    /// Units back into text: bytes that make UTF-8 characters are those
    /// characters again.
    pub(crate) fn join(self, units: &[char]) -> String {
        let text: String = units.iter().collect();
        match self {
            Units::Chars => text,
            Units::Bytes => crate::bytes::decode(&crate::bytes::encode_bytes(text.as_bytes())),
        }
    }
}

#[derive(Debug, Clone)]
enum Tok {
    Ch(char),
    Any,
    Star,
    Class(bool, Vec<ClassItem>),
    Ext(char, Vec<Vec<Tok>>),
}

#[derive(Debug, Clone)]
enum ClassItem {
    Ch(char),
    Range(char, char),
    Named(String),
}

fn compile(pat: &[char], ext: bool) -> Vec<Tok> {
    let mut toks = Vec::new();
    let mut i = 0;
    while i < pat.len() {
        let c = pat[i];
        if ext && matches!(c, '@' | '*' | '+' | '?' | '!') && pat.get(i + 1) == Some(&'(') {
            if let Some((alts, end)) = ext_group(pat, i + 2) {
                toks.push(Tok::Ext(c, alts.iter().map(|a| compile(a, ext)).collect()));
                i = end;
                continue;
            }
        }
        match c {
            '\\' if i + 1 < pat.len() => {
                toks.push(Tok::Ch(pat[i + 1]));
                i += 2;
                continue;
            }
            '?' => toks.push(Tok::Any),
            '*' => {
                if !matches!(toks.last(), Some(Tok::Star)) {
                    toks.push(Tok::Star);
                }
            }
            '[' => {
                if let Some((class, end)) = parse_class(pat, i + 1) {
                    toks.push(class);
                    i = end;
                    continue;
                }
                toks.push(Tok::Ch('['));
            }
            _ => toks.push(Tok::Ch(c)),
        }
        i += 1;
    }
    toks
}

/// Splits `a|b)` into alternatives; returns them and the index after `)`.
fn ext_group(pat: &[char], start: usize) -> Option<(Vec<Vec<char>>, usize)> {
    let mut alts = vec![Vec::new()];
    let mut depth = 0;
    let mut i = start;
    while i < pat.len() {
        let c = pat[i];
        match c {
            '\\' if i + 1 < pat.len() => {
                alts.last_mut()?.push(c);
                alts.last_mut()?.push(pat[i + 1]);
                i += 2;
                continue;
            }
            '(' => depth += 1,
            ')' if depth == 0 => return Some((alts, i + 1)),
            ')' => depth -= 1,
            '|' if depth == 0 => {
                alts.push(Vec::new());
                i += 1;
                continue;
            }
            _ => {}
        }
        alts.last_mut()?.push(c);
        i += 1;
    }
    None
}

fn parse_class(pat: &[char], start: usize) -> Option<(Tok, usize)> {
    let mut i = start;
    let neg = matches!(pat.get(i), Some('!' | '^'));
    if neg {
        i += 1;
    }
    let mut items = Vec::new();
    let first = i;
    while i < pat.len() {
        let c = pat[i];
        if c == ']' && i > first {
            return Some((Tok::Class(neg, items), i + 1));
        }
        if c == '[' && pat.get(i + 1) == Some(&':') {
            let rest: String = pat[i + 2..].iter().collect();
            if let Some(end) = rest.find(":]") {
                items.push(ClassItem::Named(rest[..end].to_string()));
                i += 2 + rest[..end].chars().count() + 2;
                continue;
            }
        }
        let c = if c == '\\' && i + 1 < pat.len() {
            i += 1;
            pat[i]
        } else {
            c
        };
        if pat.get(i + 1) == Some(&'-') && pat.get(i + 2).is_some_and(|&e| e != ']') {
            let mut e = pat[i + 2];
            let mut skip = 3;
            if e == '\\' && i + 3 < pat.len() {
                e = pat[i + 3];
                skip = 4;
            }
            items.push(ClassItem::Range(c, e));
            i += skip;
            continue;
        }
        items.push(ClassItem::Ch(c));
        i += 1;
    }
    None
}

fn class_has(items: &[ClassItem], c: char, nocase: bool) -> bool {
    let test = |c: char| {
        items.iter().any(|it| match it {
            ClassItem::Ch(x) => *x == c,
            ClassItem::Range(a, b) => *a <= c && c <= *b,
            ClassItem::Named(n) => match n.as_str() {
                "alpha" => c.is_alphabetic(),
                "digit" => c.is_ascii_digit(),
                "alnum" => c.is_alphanumeric(),
                "upper" => c.is_uppercase(),
                "lower" => c.is_lowercase(),
                "space" => c.is_whitespace(),
                "blank" => c == ' ' || c == '\t',
                "punct" => c.is_ascii_punctuation(),
                "xdigit" => c.is_ascii_hexdigit(),
                "cntrl" => c.is_control(),
                "print" => !c.is_control(),
                "graph" => !c.is_control() && c != ' ',
                "word" => c.is_alphanumeric() || c == '_',
                _ => false,
            },
        })
    };
    test(c) || (nocase && (test(c.to_ascii_lowercase()) || test(c.to_ascii_uppercase())))
}

/// The steps a match takes, charged to the exec's CPU budget (and the
/// wall clock read now and then): backtracking over `*` and extglob
/// groups can take time exponential in the text, and past the budget the
/// exec ends with the limit's error rather than a "no match" that would
/// be a wrong answer.
pub(crate) struct Steps<'b> {
    budget: &'b Budget,
    clock: &'b dyn Clock,
    pending: u64,
}

/// CPU units of one match step: a step (a call of the backtracking
/// matcher) takes some 30 ns, where a unit is about a byte processed. In a
/// Worker the clock does not move during an exec, so this is what bounds a
/// backtracking match there: the CPU budget is about one to three seconds
/// of matching.
const STEP_COST: u64 = 32;

/// Units charged to the budget at once.
const BATCH: u64 = 8192;

impl<'b> Steps<'b> {
    pub(crate) fn new(budget: &'b Budget, clock: &'b dyn Clock) -> Self {
        Steps {
            budget,
            clock,
            pending: 0,
        }
    }

    /// Charges `units` of CPU work.
    fn take(&mut self, units: u64) -> Result<(), Abort> {
        self.pending += units;
        if self.pending >= BATCH {
            let pending = std::mem::take(&mut self.pending);
            self.budget.charge_cpu(pending)?;
            self.budget.check_time(self.clock)?;
        }
        Ok(())
    }
}

impl Drop for Steps<'_> {
    fn drop(&mut self) {
        // What is left of a batch; a bound it crosses is seen at the next check.
        let _ = self.budget.charge_cpu(self.pending);
    }
}

fn match_at(toks: &[Tok], text: &[char], nocase: bool, steps: &mut Steps) -> Result<bool, Abort> {
    steps.take(STEP_COST)?;
    let Some(t) = toks.first() else {
        return Ok(text.is_empty());
    };
    Ok(match t {
        Tok::Ch(_) | Tok::Any | Tok::Class(..) => {
            text.first().is_some_and(|&x| single_matches(t, x, nocase))
                && match_at(&toks[1..], &text[1..], nocase, steps)?
        }
        Tok::Star => {
            if toks.len() == 1 {
                return Ok(true);
            }
            for i in 0..=text.len() {
                if match_at(&toks[1..], &text[i..], nocase, steps)? {
                    return Ok(true);
                }
            }
            false
        }
        Tok::Ext(kind, alts) => {
            let rest = &toks[1..];
            let one = |s: &[char], steps: &mut Steps| -> Result<bool, Abort> {
                for a in alts {
                    if match_at(a, s, nocase, steps)? {
                        return Ok(true);
                    }
                }
                Ok(false)
            };
            match kind {
                '@' | '?' | '!' => {
                    if *kind == '?' && match_at(rest, text, nocase, steps)? {
                        return Ok(true);
                    }
                    for j in 0..=text.len() {
                        let here = one(&text[..j], steps)? != (*kind == '!');
                        if here && match_at(rest, &text[j..], nocase, steps)? {
                            return Ok(true);
                        }
                    }
                    false
                }
                _ => {
                    // `*(..)` zero or more, `+(..)` one or more
                    if *kind == '*' && match_at(rest, text, nocase, steps)? {
                        return Ok(true);
                    }
                    let mut again = vec![Tok::Ext('*', alts.clone())];
                    again.extend_from_slice(rest);
                    for j in 1..=text.len() {
                        if one(&text[..j], steps)? && match_at(&again, &text[j..], nocase, steps)? {
                            return Ok(true);
                        }
                    }
                    false
                }
            }
        }
    })
}

/// Whether a one-character token matches `x`.
fn single_matches(t: &Tok, x: char, nocase: bool) -> bool {
    match t {
        Tok::Ch(c) => x == *c || (nocase && x.eq_ignore_ascii_case(c)),
        Tok::Any => true,
        Tok::Class(neg, items) => class_has(items, x, nocase) != *neg,
        Tok::Star | Tok::Ext(..) => false,
    }
}

/// The shortest and longest text the pattern can match (`None`: no
/// longest). A match is only tried at lengths in between: literal text,
/// `?` and brackets have one length, which makes `${s//lit/rep}` and
/// `${s#lit}` linear, and `?(x)a` at most two.
fn len_bounds(toks: &[Tok]) -> (usize, Option<usize>) {
    let mut min = 0usize;
    let mut max = Some(0usize);
    for t in toks {
        let (lo, hi) = match t {
            Tok::Ch(_) | Tok::Any | Tok::Class(..) => (1, Some(1)),
            Tok::Star => (0, None),
            Tok::Ext(kind, alts) => {
                let bounds: Vec<_> = alts.iter().map(|a| len_bounds(a)).collect();
                let lo = bounds.iter().map(|b| b.0).min().unwrap_or(0);
                let hi = bounds.iter().try_fold(0usize, |m, b| b.1.map(|h| m.max(h)));
                match kind {
                    '@' => (lo, hi),
                    '?' => (0, hi),
                    '+' => (lo, hi.filter(|&h| h == 0)),
                    '*' => (0, hi.filter(|&h| h == 0)),
                    _ => (0, None),
                }
            }
        };
        min += lo;
        max = max.zip(hi).map(|(a, b)| a + b);
    }
    (min, max)
}

/// The length bash's `${s/pat/rep}` tries for a pattern without `*` or an
/// extglob group (`None`: any length), computed as bash computes it, before
/// and apart from matching: a bracket ends at the first `]` after the
/// character following `[`, so `[]a]` is one character but `[^]]` and
/// `[!]a]` count as a bracket and more literal text, and such a pattern
/// replaces nothing in bash (`${s//[^]]/z}` leaves `s` as it was).
fn fixed_len(pat: &[char]) -> Option<usize> {
    let mut len = 0;
    let mut i = 0;
    while i < pat.len() {
        let c = pat[i];
        i += 1;
        match c {
            '*' => return None,
            '?' | '+' | '!' | '@' if pat.get(i) == Some(&'(') => return None,
            '\\' => {
                len += 1;
                i += 1;
            }
            '[' => {
                let (end, counted) = bracket_end(pat, i);
                len += counted;
                i = end;
            }
            _ => len += 1,
        }
    }
    Some(len)
}

/// Where bash's length count ends a bracket whose text starts at `from`
/// (after `[`), and what the bracket adds to the length: one character, or
/// for a bracket without its `]`, one for the `[` and one for each item
/// bash stepped over. The first character is never the closing `]`; `[:`,
/// `[.` and `[=` open a class, collating symbol or equivalence class whose
/// `:]`, `.]` or `=]` (and, after `[.` or `[=`, a `]` right away) does not
/// close the bracket.
fn bracket_end(pat: &[char], from: usize) -> (usize, usize) {
    let mut i = from;
    let mut inside: Option<char> = None;
    let mut items = 1;
    let mut first = true;
    while i < pat.len() {
        let c = pat[i];
        i += 1;
        if c == ']' && !first {
            return (i, 1);
        }
        first = false;
        items += 1;
        match c {
            '\\' => {
                if i + 1 >= pat.len() {
                    return (pat.len(), items);
                }
                i += 1;
            }
            '[' if matches!(pat.get(i), Some(':' | '.' | '=')) => {
                let kind = pat[i];
                i += 1;
                if kind != ':' && pat.get(i) == Some(&']') {
                    i += 1;
                    items += 1;
                }
                inside = Some(kind);
            }
            k if Some(k) == inside && pat.get(i) == Some(&']') => {
                i += 1;
                inside = None;
            }
            _ => {}
        }
    }
    (pat.len(), items)
}

/// The lengths to try for a match in `left` characters, longest first
/// or shortest first.
fn lengths(
    (min, max): (usize, Option<usize>),
    left: usize,
    longest: bool,
) -> Box<dyn Iterator<Item = usize>> {
    let top = max.map_or(left, |m| m.min(left));
    if min > top {
        Box::new(std::iter::empty())
    } else if longest {
        Box::new((min..=top).rev())
    } else {
        Box::new(min..=top)
    }
}

/// Whether `text` matches the whole pattern.
pub(super) fn matches(
    pat: &str,
    text: &str,
    (ext, nocase, units): (bool, bool, Units),
    steps: &mut Steps,
) -> Result<bool, Abort> {
    let p = units.cut(pat);
    let toks = compile(&p, ext);
    let t = units.cut(text);
    match_at(&toks, &t, nocase, steps)
}

/// Whether the pattern has unescaped glob characters, as bash decides
/// whether a word is a pattern: `*`, `?`, a `[` with a `]` after it (a lone
/// `[`, as in `[ "$a" = b ]`, is a plain word, even under `nullglob`), or
/// an extglob group `@(..)`, `+(..)` or `!(..)` (`@(a|b).txt` globs).
pub(super) fn has_glob(pat: &str) -> bool {
    let chars: Vec<char> = pat.chars().collect();
    let mut escaped = false;
    let mut prev = None;
    for (i, &c) in chars.iter().enumerate() {
        if escaped {
            escaped = false;
            prev = None;
            continue;
        }
        let closes = |from: usize| chars[from..].contains(&']');
        if c == '\\' {
            escaped = true;
        } else if matches!(c, '*' | '?')
            || (c == '[' && closes(i + 1))
            || (c == '(' && matches!(prev, Some('@' | '+' | '!')))
        {
            return true;
        }
        prev = Some(c);
    }
    false
}

/// Whether unquoted text may glob: it has `*`, `?`, `[` or an extglob
/// group's opening (checked exactly, escapes included, by [`has_glob`]).
pub(super) fn may_glob(text: &str) -> bool {
    text.contains(['*', '?', '[']) || ["@(", "+(", "!("].iter().any(|g| text.contains(g))
}

/// Removes backslash escapes.
pub(super) fn unescape(pat: &str) -> String {
    let mut out = String::new();
    let mut escaped = false;
    for c in pat.chars() {
        if !escaped && c == '\\' {
            escaped = true;
            continue;
        }
        escaped = false;
        out.push(c);
    }
    out
}

/// `${s#pat}` / `${s##pat}` / `${s%pat}` / `${s%%pat}`.
pub(super) fn strip(
    pat: &str,
    s: &str,
    (suffix, longest): (bool, bool),
    (ext, units): (bool, Units),
    steps: &mut Steps,
) -> Result<String, Abort> {
    let p = units.cut(pat);
    let toks = compile(&p, ext);
    let t = units.cut(s);
    let n = t.len();
    for len in lengths(len_bounds(&toks), n, longest) {
        let (kept, piece) = if suffix {
            (&t[..n - len], &t[n - len..])
        } else {
            (&t[len..], &t[..len])
        };
        if match_at(&toks, piece, false, steps)? {
            return Ok(units.join(kept));
        }
    }
    Ok(s.to_string())
}

/// `${s/pat/rep}` with mode 0 (first), `/` (all), `#` (prefix), `%` (suffix).
pub(super) fn replace(
    pat: &str,
    s: &str,
    rep: &str,
    mode: u8,
    (ext, units): (bool, Units),
    steps: &mut Steps,
) -> Result<String, Abort> {
    let p = units.cut(pat);
    let toks = compile(&p, ext);
    let t = units.cut(s);
    let n = t.len();
    if p.is_empty() && mode != b'#' && mode != b'%' {
        return Ok(s.to_string());
    }
    // bash replaces the longest match, of the one length it computes for a
    // fixed-length pattern (see `fixed_len`), or of any length.
    let bounds = match fixed_len(&p) {
        Some(len) => (len, Some(len)),
        None => len_bounds(&toks),
    };
    match mode {
        b'#' => {
            for len in lengths(bounds, n, true) {
                if match_at(&toks, &t[..len], false, steps)? {
                    return Ok(format!("{rep}{}", units.join(&t[len..])));
                }
            }
            Ok(s.to_string())
        }
        b'%' => {
            for len in lengths(bounds, n, true) {
                if match_at(&toks, &t[n - len..], false, steps)? {
                    return Ok(format!("{}{rep}", units.join(&t[..n - len])));
                }
            }
            Ok(s.to_string())
        }
        _ => {
            let mut out = Vec::new();
            let mut i = 0;
            let mut replaced = false;
            while i <= n {
                if !(replaced && mode != b'/') {
                    let mut found = None;
                    // A match starting here must match its first character.
                    let first_ok = match toks.first() {
                        Some(t0 @ (Tok::Ch(_) | Tok::Any | Tok::Class(..))) => {
                            t.get(i).is_some_and(|&x| single_matches(t0, x, false))
                        }
                        _ => true,
                    };
                    if first_ok {
                        for len in lengths(bounds, n - i, true) {
                            if len > 0 && match_at(&toks, &t[i..i + len], false, steps)? {
                                found = Some(i + len);
                                break;
                            }
                        }
                    } else {
                        steps.take(STEP_COST)?;
                    }
                    if let Some(end) = found {
                        out.extend(units.cut(rep));
                        i = end;
                        replaced = true;
                        continue;
                    }
                }
                if i < n {
                    out.push(t[i]);
                }
                i += 1;
            }
            Ok(units.join(&out))
        }
    }
}

impl<'a> Shell<'a> {
    /// A counter of match steps charged to this exec's budget.
    pub(crate) fn steps(&self) -> Steps<'a> {
        Steps::new(self.budget, self.clock)
    }

    pub(crate) fn pattern_match(&self, pat: &str, text: &str) -> Result<bool, Abort> {
        let how = (true, self.st.opts.nocasematch, self.units());
        matches(pat, text, how, &mut self.steps())
    }

    /// The locale's [`Units`]: bytes when the locale that decides the
    /// character type (`LC_ALL`, else `LC_CTYPE`, else `LANG`, the first
    /// set and not empty) is `C` or `POSIX`. Any other name is taken as a
    /// UTF-8 locale, and so is none at all: the light shell's text is
    /// UTF-8 (where bash with no locale set would be in `C`).
    pub(crate) fn units(&self) -> Units {
        let locale = ["LC_ALL", "LC_CTYPE", "LANG"].into_iter().find_map(|name| {
            match self.st.vars.get(name).map(|v| &v.value) {
                Some(super::Value::Str(s)) if !s.is_empty() => Some(s.as_str()),
                _ => None,
            }
        });
        match locale {
            Some("C" | "POSIX") => Units::Bytes,
            _ => Units::Chars,
        }
    }

    /// Pathname expansion: the sorted matches of `pat`, or none. Every
    /// directory entry visited is a step (`**` over a large tree ends
    /// with a limit, not minutes later).
    pub(crate) fn glob(&mut self, pat: &str) -> Result<Vec<String>, Abort> {
        let absolute = pat.starts_with('/');
        let comps: Vec<&str> = pat.split('/').filter(|c| !c.is_empty()).collect();
        let base = if absolute {
            VPath::root()
        } else {
            self.st.cwd.clone()
        };
        let prefix = if absolute {
            "/".to_string()
        } else {
            String::new()
        };
        let mut results = Vec::new();
        let mut steps = self.steps();
        let ignore = self.get_scalar("GLOBIGNORE").unwrap_or_default();
        // A non-empty GLOBIGNORE turns on dotglob while it is set.
        let dotglob = self.st.opts.dotglob;
        self.st.opts.dotglob |= !ignore.is_empty();
        let walked = self.glob_walk(&base, &prefix, &comps, &mut results, &mut steps);
        self.st.opts.dotglob = dotglob;
        walked?;
        // A directory part without glob characters is kept as written, so
        // `d1/**` matching no directory below names `d1/` (bash joins the
        // literal `d1/` and the empty match); `d*/**` names `d1`.
        if let Some(dir) = pat
            .strip_suffix("/**")
            .filter(|d| self.st.opts.globstar && !has_glob(d))
        {
            let written = unescape(dir);
            for r in results.iter_mut().filter(|r| **r == written) {
                r.push('/');
            }
        }
        if !ignore.is_empty() {
            let pats = split_ignore(&ignore);
            let ext = self.st.opts.extglob;
            let units = self.units();
            let mut kept = Vec::with_capacity(results.len());
            for r in results {
                let name = r.rsplit('/').next().unwrap_or(&r);
                if name == "." || name == ".." {
                    continue;
                }
                let mut ignored = false;
                for p in &pats {
                    if path_matches(p, &r, (ext, units), &mut steps)? {
                        ignored = true;
                        break;
                    }
                }
                if !ignored {
                    kept.push(r);
                }
            }
            results = kept;
        }
        if pat.ends_with('/') {
            // A trailing `/` matches directories only (symlinks to them too).
            let (fs, cwd) = (self.fs, &self.st.cwd);
            results.retain(|r: &String| {
                !r.is_empty()
                    && VPath::parse_from(r, cwd)
                        .and_then(|path| fs.stat(&path, true))
                        .is_ok_and(|node| node.kind == Kind::Dir)
            });
            results = results.into_iter().map(|r| format!("{r}/")).collect();
        }
        results.sort();
        results.dedup();
        Ok(results)
    }

    fn glob_walk(
        &mut self,
        dir: &VPath,
        shown: &str,
        comps: &[&str],
        out: &mut Vec<String>,
        steps: &mut Steps,
    ) -> Result<(), Abort> {
        let Some((first, rest)) = comps.split_first() else {
            out.push(shown.trim_end_matches('/').to_string());
            return Ok(());
        };
        steps.take(NODE_COST)?;
        let join = |shown: &str, name: &str| {
            if shown.is_empty() {
                name.to_string()
            } else if shown.ends_with('/') {
                format!("{shown}{name}")
            } else {
                format!("{shown}/{name}")
            }
        };
        if !has_glob(first) {
            let name = unescape(first);
            let path = if name == "." || name == ".." {
                VPath::parse_from(&name, dir).unwrap_or_else(|_| dir.clone())
            } else {
                dir.join(&name)
            };
            if self.fs.stat(&path, true).is_ok() {
                let next = join(shown, &name);
                if rest.is_empty() {
                    out.push(next);
                } else {
                    self.glob_walk(&path, &next, rest, out, steps)?;
                }
            }
            return Ok(());
        }
        if *first == "**" && self.st.opts.globstar {
            // zero directories
            if rest.is_empty() {
                if !shown.is_empty() {
                    out.push(shown.trim_end_matches('/').to_string());
                }
            } else {
                self.glob_walk(dir, shown, rest, out, steps)?;
            }
            let Ok(entries) = self.fs.list(dir) else {
                return Ok(());
            };
            for e in entries {
                steps.take(NODE_COST)?;
                if e.name.starts_with('.') && !self.st.opts.dotglob {
                    continue;
                }
                let path = dir.join(&e.name);
                let next = join(shown, &e.name);
                let is_dir = self
                    .fs
                    .stat(&path, false)
                    .is_ok_and(|n| n.kind == Kind::Dir);
                if rest.is_empty() {
                    out.push(next.clone());
                }
                if is_dir {
                    self.glob_walk(&path, &next, comps, out, steps)?;
                }
            }
            return Ok(());
        }
        let Ok(entries) = self.fs.list(dir) else {
            return Ok(());
        };
        let ext = self.st.opts.extglob || first.contains('(');
        let units = self.units();
        let dot_ok = first.starts_with('.') || first.starts_with("\\.");
        // With `globskipdots` off, `.` and `..` are entries too, matched by
        // a pattern whose leading dot is written (`.*`), never by `*`.
        let dots = dot_ok && !self.st.opts.others.contains("globskipdots");
        let names = [".", ".."].into_iter().filter(|_| dots).map(str::to_string);
        for name in names.chain(entries.into_iter().map(|e| e.name)) {
            steps.take(NODE_COST)?;
            if name.starts_with('.') && !dot_ok && !self.st.opts.dotglob {
                continue;
            }
            if !matches(first, &name, (ext, self.st.opts.nocaseglob, units), steps)? {
                continue;
            }
            let next = join(shown, &name);
            if rest.is_empty() {
                out.push(next);
            } else {
                let path = VPath::parse_from(&name, dir).unwrap_or_else(|_| dir.join(&name));
                if self.fs.stat(&path, true).is_ok_and(|n| n.kind == Kind::Dir) {
                    self.glob_walk(&path, &next, rest, out, steps)?;
                }
            }
        }
        Ok(())
    }
}

/// GLOBIGNORE's patterns: split at `:` outside bracket expressions.
fn split_ignore(list: &str) -> Vec<String> {
    let mut pats = vec![String::new()];
    let mut depth = 0usize;
    let mut chars = list.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                let cur = pats.last_mut().expect("non-empty");
                cur.push(c);
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
                continue;
            }
            '[' => depth += 1,
            ']' => depth = depth.saturating_sub(1),
            ':' if depth == 0 => {
                pats.push(String::new());
                continue;
            }
            _ => {}
        }
        pats.last_mut().expect("non-empty").push(c);
    }
    pats.retain(|p| !p.is_empty());
    pats
}

/// Matches a pathname against a pattern one `/`-separated component at a
/// time, so `*` does not cross a slash.
fn path_matches(
    pat: &str,
    path: &str,
    (ext, units): (bool, Units),
    steps: &mut Steps,
) -> Result<bool, Abort> {
    let pc: Vec<&str> = pat.split('/').collect();
    let tc: Vec<&str> = path.split('/').collect();
    if pc.len() != tc.len() {
        return Ok(false);
    }
    for (p, t) in pc.iter().zip(&tc) {
        if !matches(p, t, (ext, false, units), steps)? {
            return Ok(false);
        }
    }
    Ok(true)
}
