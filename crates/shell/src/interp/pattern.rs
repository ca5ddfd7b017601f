//! Glob patterns: `*`, `?`, `[...]` (with classes), backslash escapes and,
//! with `extglob`, `@(..)`, `*(..)`, `+(..)`, `?(..)`, `!(..)`. Used by
//! `case`, `[[ == ]]`, `${x#pat}` and friends, and pathname expansion over
//! the workspace filesystem.

use stead_vfs::{Kind, VPath};

use super::Shell;

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

fn match_at(toks: &[Tok], text: &[char], nocase: bool, steps: &mut u32) -> bool {
    *steps += 1;
    if *steps > 2_000_000 {
        return false;
    }
    let Some(t) = toks.first() else {
        return text.is_empty();
    };
    match t {
        Tok::Ch(c) => {
            text.first()
                .is_some_and(|x| x == c || (nocase && x.eq_ignore_ascii_case(c)))
                && match_at(&toks[1..], &text[1..], nocase, steps)
        }
        Tok::Any => !text.is_empty() && match_at(&toks[1..], &text[1..], nocase, steps),
        Tok::Class(neg, items) => {
            text.first()
                .is_some_and(|&x| class_has(items, x, nocase) != *neg)
                && match_at(&toks[1..], &text[1..], nocase, steps)
        }
        Tok::Star => {
            if toks.len() == 1 {
                return true;
            }
            (0..=text.len()).any(|i| match_at(&toks[1..], &text[i..], nocase, steps))
        }
        Tok::Ext(kind, alts) => {
            let rest = &toks[1..];
            let one =
                |s: &[char], steps: &mut u32| alts.iter().any(|a| match_at(a, s, nocase, steps));
            match kind {
                '@' => (0..=text.len())
                    .any(|j| one(&text[..j], steps) && match_at(rest, &text[j..], nocase, steps)),
                '?' => {
                    match_at(rest, text, nocase, steps)
                        || (0..=text.len()).any(|j| {
                            one(&text[..j], steps) && match_at(rest, &text[j..], nocase, steps)
                        })
                }
                '!' => (0..=text.len())
                    .any(|j| !one(&text[..j], steps) && match_at(rest, &text[j..], nocase, steps)),
                _ => {
                    // `*(..)` zero or more, `+(..)` one or more
                    if *kind == '*' && match_at(rest, text, nocase, steps) {
                        return true;
                    }
                    (1..=text.len()).any(|j| {
                        one(&text[..j], steps) && {
                            let again = [Tok::Ext('*', alts.clone())];
                            let mut v = again.to_vec();
                            v.extend_from_slice(rest);
                            match_at(&v, &text[j..], nocase, steps)
                        }
                    })
                }
            }
        }
    }
}

/// Whether `text` matches the whole pattern.
pub fn matches(pat: &str, text: &str, ext: bool, nocase: bool) -> bool {
    let p: Vec<char> = pat.chars().collect();
    let toks = compile(&p, ext);
    let t: Vec<char> = text.chars().collect();
    match_at(&toks, &t, nocase, &mut 0)
}

/// Whether the pattern has unescaped glob characters.
pub fn has_glob(pat: &str) -> bool {
    let mut escaped = false;
    for c in pat.chars() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if matches!(c, '*' | '?' | '[') {
            return true;
        }
    }
    false
}

/// Removes backslash escapes.
pub fn unescape(pat: &str) -> String {
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
pub fn strip(pat: &str, s: &str, suffix: bool, longest: bool, ext: bool) -> String {
    let p: Vec<char> = pat.chars().collect();
    let toks = compile(&p, ext);
    let t: Vec<char> = s.chars().collect();
    let n = t.len();
    let mut steps = 0;
    let range: Box<dyn Iterator<Item = usize>> = if longest == suffix {
        Box::new(0..=n)
    } else {
        Box::new((0..=n).rev())
    };
    for k in range {
        let ok = if suffix {
            match_at(&toks, &t[k..], false, &mut steps)
        } else {
            match_at(&toks, &t[..k], false, &mut steps)
        };
        if ok {
            return if suffix {
                t[..k].iter().collect()
            } else {
                t[k..].iter().collect()
            };
        }
    }
    s.to_string()
}

/// `${s/pat/rep}` with mode 0 (first), `/` (all), `#` (prefix), `%` (suffix).
pub fn replace(pat: &str, s: &str, rep: &str, mode: u8, ext: bool) -> String {
    let p: Vec<char> = pat.chars().collect();
    let toks = compile(&p, ext);
    let t: Vec<char> = s.chars().collect();
    let n = t.len();
    let mut steps = 0;
    if p.is_empty() && mode != b'#' && mode != b'%' {
        return s.to_string();
    }
    match mode {
        b'#' => {
            for k in (0..=n).rev() {
                if match_at(&toks, &t[..k], false, &mut steps) {
                    return format!("{rep}{}", t[k..].iter().collect::<String>());
                }
            }
            s.to_string()
        }
        b'%' => {
            for k in 0..=n {
                if match_at(&toks, &t[k..], false, &mut steps) {
                    return format!("{}{rep}", t[..k].iter().collect::<String>());
                }
            }
            s.to_string()
        }
        _ => {
            let mut out = String::new();
            let mut i = 0;
            let mut replaced = false;
            while i <= n {
                if !(replaced && mode != b'/') {
                    if let Some(end) = (i..=n)
                        .rev()
                        .find(|&e| e > i && match_at(&toks, &t[i..e], false, &mut steps))
                    {
                        out.push_str(rep);
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
            out
        }
    }
}

impl Shell<'_> {
    pub fn pattern_match(&self, pat: &str, text: &str) -> bool {
        matches(pat, text, true, self.st.opts.nocasematch)
    }

    /// Pathname expansion: the sorted matches of `pat`, or none.
    pub fn glob(&mut self, pat: &str) -> Vec<String> {
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
        let mut budget = 100_000u32;
        let ignore = self.get_scalar("GLOBIGNORE").unwrap_or_default();
        // A non-empty GLOBIGNORE turns on dotglob while it is set.
        let dotglob = self.st.opts.dotglob;
        self.st.opts.dotglob |= !ignore.is_empty();
        self.glob_walk(&base, &prefix, &comps, &mut results, &mut budget);
        self.st.opts.dotglob = dotglob;
        if !ignore.is_empty() {
            let pats = split_ignore(&ignore);
            let ext = self.st.opts.extglob;
            results.retain(|r| {
                let name = r.rsplit('/').next().unwrap_or(r);
                name != "." && name != ".." && !pats.iter().any(|p| path_matches(p, r, ext))
            });
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
        results
    }

    fn glob_walk(
        &mut self,
        dir: &VPath,
        shown: &str,
        comps: &[&str],
        out: &mut Vec<String>,
        budget: &mut u32,
    ) {
        let Some((first, rest)) = comps.split_first() else {
            out.push(shown.trim_end_matches('/').to_string());
            return;
        };
        if *budget == 0 {
            return;
        }
        *budget -= 1;
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
                    self.glob_walk(&path, &next, rest, out, budget);
                }
            }
            return;
        }
        if *first == "**" && self.st.opts.globstar {
            // zero directories
            if rest.is_empty() {
                if !shown.is_empty() {
                    out.push(shown.trim_end_matches('/').to_string() + "/");
                }
            } else {
                self.glob_walk(dir, shown, rest, out, budget);
            }
            let Ok(entries) = self.fs.list(dir) else {
                return;
            };
            for e in entries {
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
                    out.push(if is_dir {
                        next.clone() + "/"
                    } else {
                        next.clone()
                    });
                }
                if is_dir {
                    self.glob_walk(&path, &next, comps, out, budget);
                }
            }
            if rest.is_empty() {
                for r in out.iter_mut() {
                    if r.ends_with('/') {
                        r.pop();
                    }
                }
            }
            return;
        }
        let Ok(entries) = self.fs.list(dir) else {
            return;
        };
        let ext = self.st.opts.extglob || first.contains('(');
        let dot_ok = first.starts_with('.') || first.starts_with("\\.");
        for e in entries {
            if e.name.starts_with('.') && !dot_ok && !self.st.opts.dotglob {
                continue;
            }
            if !matches(first, &e.name, ext, self.st.opts.nocaseglob) {
                continue;
            }
            let next = join(shown, &e.name);
            if rest.is_empty() {
                out.push(next);
            } else {
                let path = dir.join(&e.name);
                if self.fs.stat(&path, true).is_ok_and(|n| n.kind == Kind::Dir) {
                    self.glob_walk(&path, &next, rest, out, budget);
                }
            }
        }
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
fn path_matches(pat: &str, path: &str, ext: bool) -> bool {
    let pc: Vec<&str> = pat.split('/').collect();
    let tc: Vec<&str> = path.split('/').collect();
    pc.len() == tc.len() && pc.iter().zip(&tc).all(|(p, t)| matches(p, t, ext, false))
}
