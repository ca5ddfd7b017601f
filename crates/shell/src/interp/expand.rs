//! Word expansion: parameters, command substitution, arithmetic, tilde,
//! then field splitting on IFS and pathname expansion, in bash's order.
//!
//! Expansion builds fields in a [`Fields`] builder that tracks, per field,
//! the literal text and a glob pattern in which quoted characters are
//! escaped, so that `"*"` stays literal while `*` globs.

use super::ast::*;
use super::pattern::{self, Units};
use super::vars::{attr_letters, declare_body, escape_dq, Value, DECLARED};
use super::{printf, Fd, Shell, R};
use crate::limits::Abort;

#[derive(Default)]
struct Field {
    text: String,
    pat: String,
    glob: bool,
}

struct Fields {
    done: Vec<Field>,
    cur: Field,
    started: bool,
    split: bool,
    ifs: String,
    just_split_ws: bool,
}

/// A parameter's value before it is pushed into fields.
enum Val {
    One(Option<String>),
    Many(Vec<String>, bool),
}

impl Fields {
    fn new(split: bool, ifs: String) -> Self {
        Fields {
            done: Vec::new(),
            cur: Field::default(),
            started: false,
            split,
            ifs,
            just_split_ws: false,
        }
    }

    fn push(&mut self, s: &str, quoted: bool) {
        self.started = true;
        self.just_split_ws = false;
        self.cur.text.push_str(s);
        if quoted {
            for c in s.chars() {
                if matches!(
                    c,
                    '*' | '?' | '[' | ']' | '\\' | '(' | ')' | '|' | '@' | '+' | '!'
                ) {
                    self.cur.pat.push('\\');
                }
                self.cur.pat.push(c);
            }
        } else {
            if pattern::may_glob(s) {
                self.cur.glob = true;
            }
            self.cur.pat.push_str(s);
        }
    }

    fn finish(&mut self) {
        self.done.push(std::mem::take(&mut self.cur));
        self.started = false;
    }

    /// Pushes the result of an unquoted expansion, splitting on IFS.
    fn push_split(&mut self, s: &str) {
        if !self.split {
            self.push(s, false);
            return;
        }
        let mut buf = String::new();
        for c in s.chars() {
            if !self.ifs.contains(c) {
                buf.push(c);
                continue;
            }
            if !buf.is_empty() {
                self.push(&buf, false);
                buf.clear();
            }
            if c == ' ' || c == '\t' || c == '\n' {
                if self.started {
                    self.finish();
                    self.just_split_ws = true;
                }
            } else {
                if self.started || !self.just_split_ws {
                    self.finish();
                }
                self.just_split_ws = false;
            }
        }
        if !buf.is_empty() {
            self.push(&buf, false);
        }
    }

    fn end(mut self) -> Vec<Field> {
        if self.started {
            self.finish();
        }
        self.done
    }
}

impl Shell<'_> {
    /// Expands command words into fields (split and globbed).
    pub(crate) fn expand_words(&mut self, words: &[Word]) -> R<Vec<String>> {
        let mut out = Vec::with_capacity(words.len());
        let ifs = self.ifs();
        for w in words {
            if let Some(l) = w.as_lit() {
                if !pattern::may_glob(l) || self.st.opts.noglob {
                    out.push(l.to_string());
                    continue;
                }
            }
            let mut f = Fields::new(true, ifs.clone());
            self.expand_parts(&w.0, false, &mut f)?;
            for field in f.end() {
                if field.glob && !self.st.opts.noglob && pattern::has_glob(&field.pat) {
                    let matches = self.glob(&field.pat)?;
                    if !matches.is_empty() {
                        out.extend(matches);
                        continue;
                    }
                    if self.st.opts.failglob {
                        let msg = format!("no match: {}", field.text);
                        return Err(self.fatal(&msg));
                    }
                    if self.st.opts.nullglob {
                        continue;
                    }
                }
                out.push(field.text);
            }
        }
        // Each field is a string of its own (its bytes were charged as the
        // parts that made it were pushed).
        self.charge_built(out.len() * std::mem::size_of::<String>())?;
        Ok(out)
    }

    /// Expands a word to one string (no splitting, no globbing).
    pub(crate) fn expand_single(&mut self, w: &Word) -> R<String> {
        if let Some(l) = w.as_lit() {
            return Ok(l.to_string());
        }
        let mut f = Fields::new(false, " ".into());
        self.expand_parts(&w.0, false, &mut f)?;
        let fields = f.end();
        Ok(fields
            .into_iter()
            .map(|f| f.text)
            .collect::<Vec<_>>()
            .join(" "))
    }

    pub(crate) fn expand_assign_value(&mut self, w: &Word) -> R<String> {
        self.expand_single(w)
    }

    /// Expands a word to a pattern: quoted characters are escaped.
    pub(crate) fn expand_pattern(&mut self, w: &Word) -> R<String> {
        if let Some(l) = w.as_lit() {
            return Ok(l.to_string());
        }
        let mut f = Fields::new(false, " ".into());
        self.expand_parts(&w.0, false, &mut f)?;
        Ok(f.end()
            .into_iter()
            .map(|f| f.pat)
            .collect::<Vec<_>>()
            .join(" "))
    }

    fn expand_parts(&mut self, parts: &[Part], quoted: bool, f: &mut Fields) -> R<()> {
        for p in parts {
            match p {
                Part::Lit(s) => f.push(s, quoted),
                Part::Quoted(s) => f.push(s, true),
                Part::Double(inner) => {
                    if inner.is_empty() {
                        f.push("", true);
                    }
                    self.expand_parts(inner, true, f)?;
                }
                Part::Tilde(user) => {
                    let home = self.tilde(user);
                    f.push(&home, true);
                }
                Part::Param(param) => self.expand_param(param, quoted, f)?,
                Part::Command(prog) => {
                    let text = self.command_subst(prog)?;
                    self.charge_built(2 * text.len())?;
                    push_value(f, &text, quoted);
                }
                Part::FunSub(prog, reply) => {
                    let text = self.function_subst(prog, *reply)?;
                    self.charge_built(2 * text.len())?;
                    push_value(f, &text, quoted);
                }
                Part::Arith(a) => {
                    let v = self.arith(a)?;
                    push_value(f, &v.to_string(), quoted);
                }
                Part::ProcSub(prog, input) => {
                    let path = self.procsub(prog, *input)?;
                    f.push(&path, true);
                }
                Part::ArrayAssign(a) => {
                    f.push(&a.name, true);
                    self.deferred.push(a.clone());
                }
                Part::BadSubst(text) => {
                    return Err(self.fatal(&format!("{text}: bad substitution")));
                }
            }
        }
        Ok(())
    }

    fn tilde(&mut self, user: &str) -> String {
        match user {
            "" => self.get_scalar("HOME").unwrap_or_else(|| "/".into()),
            "+" => self.get_scalar("PWD").unwrap_or_default(),
            "-" => self.get_scalar("OLDPWD").unwrap_or_else(|| "~-".into()),
            "root" => "/root".into(),
            _ => format!("~{user}"),
        }
    }

    /// Runs `$(...)` and returns its output without trailing newlines.
    pub(crate) fn command_subst(&mut self, prog: &Program) -> R<String> {
        if let Some(redir) = file_read_only(prog) {
            return self.file_subst(redir);
        }
        let run = |sh: &mut Self| {
            // Without `set -E` a command substitution does not inherit the
            // ERR trap (its failure is the outer command's to report).
            if !sh.st.opts.errtrace {
                sh.st.traps.remove("ERR");
            }
            sh.run_program(prog)
        };
        let (bytes, r) = self.stdout_of(|sh| sh.subshell(run))?;
        let status = r?;
        self.status = status;
        self.cmdsub_status = Some(status);
        Ok(substituted_text(bytes))
    }

    /// The indices of `name` when it is an indexed array, in order.
    fn array_indices(&self, name: &str) -> Option<Vec<i64>> {
        match &self.st.vars.get(&self.target(name))?.value {
            Value::Indexed(map) => Some(map.keys().copied().collect()),
            _ => None,
        }
    }

    /// `$(< file)`: the file's contents, without running a command; a
    /// file that cannot be read is reported, with status 1.
    fn file_subst(&mut self, redir: &Redir) -> R<String> {
        let (bytes, status) = match self.apply_redirs(std::slice::from_ref(redir))? {
            Some(saved) => {
                let bytes = match self.fds.first().cloned().flatten() {
                    Some(Fd::In(input)) => {
                        let data = &input.data[input.pos.get().min(input.data.len())..];
                        data.to_vec()
                    }
                    _ => Vec::new(),
                };
                self.restore_fds(saved)?;
                (bytes, 0)
            }
            None => (Vec::new(), 1),
        };
        self.status = status;
        self.cmdsub_status = Some(status);
        Ok(substituted_text(bytes))
    }

    /// Runs `run` with standard output going to a fresh slot; returns what
    /// it wrote and its result.
    pub(super) fn stdout_of<T>(
        &mut self,
        run: impl FnOnce(&mut Self) -> R<T>,
    ) -> R<(Vec<u8>, R<T>)> {
        let slot = self.open_slot(None);
        let saved = self.fds[1].replace(Fd::Out(slot));
        let r = run(self);
        self.fds[1] = saved;
        let bytes = std::mem::take(&mut self.slots[slot].out).into_bytes();
        self.slots[slot].open = false;
        self.close_slot(slot)?;
        Ok((bytes, r))
    }

    /// Runs `${ ...; }` in the current shell and returns its output
    /// without trailing newlines; `${|...; }` leaves the output alone and
    /// returns `REPLY`, which is local to it.
    fn function_subst(&mut self, prog: &Program, reply: bool) -> R<String> {
        if reply {
            let saved = self.st.vars.remove("REPLY");
            let r = self.run_program(prog);
            let value = self.get_scalar("REPLY").unwrap_or_default();
            match saved {
                Some(v) => self.st.vars.insert("REPLY".into(), v),
                None => self.st.vars.remove("REPLY"),
            };
            r?;
            return Ok(value);
        }
        let (bytes, r) = self.stdout_of(|sh| sh.run_program(prog))?;
        r?;
        self.cmdsub_status = Some(self.status);
        Ok(substituted_text(bytes))
    }

    fn expand_param(&mut self, p: &Param, quoted: bool, f: &mut Fields) -> R<()> {
        if p.indirect
            && p.sub.is_none()
            && matches!(p.op, ParamOp::None)
            && self.is_nameref(&p.name)
        {
            // `${!ref}` of a nameref is the name it refers to.
            if let Some(Value::Str(t)) = self.st.vars.get(&p.name).map(|v| v.value.clone()) {
                push_value(f, &t, quoted);
            } else if quoted {
                f.push("", true);
            }
            return Ok(());
        }
        let (name, sub) = if p.indirect {
            self.indirect_target(p)?
        } else {
            (p.name.clone(), p.sub.clone())
        };
        let val = match &p.op {
            ParamOp::Names(star) => {
                let mut names: Vec<String> = self
                    .st
                    .vars
                    .keys()
                    .filter(|k| k.starts_with(&name))
                    .cloned()
                    .collect();
                names.sort();
                Val::Many(names, *star)
            }
            ParamOp::Keys => {
                let keys = self.get_keys(&name);
                Val::Many(keys, matches!(sub, Some(Subscript::All(true))))
            }
            _ => {
                let raw = self.lookup_param(&name, sub.as_ref())?;
                self.apply_op(&name, sub.as_ref(), &p.op, raw, (quoted, p.indirect), f)?
            }
        };
        // The value goes into the field's text and its glob pattern.
        self.charge_built(
            2 * match &val {
                Val::One(s) => s.as_ref().map_or(0, String::len),
                Val::Many(items, _) => items.iter().map(|i| i.len() + 32).sum(),
            },
        )?;
        match val {
            Val::One(Some(s)) => push_value(f, &s, quoted),
            Val::One(None) => {
                if quoted {
                    f.push("", true);
                }
            }
            Val::Many(items, star) => self.push_many(f, items, star, quoted),
        }
        Ok(())
    }

    /// Pushes the elements of `$@`, `$*`, `${a[@]}` or `${a[*]}` (`star`).
    fn push_many(&mut self, f: &mut Fields, items: Vec<String>, star: bool, quoted: bool) {
        if quoted && star {
            let sep = self.ifs_first();
            f.push(&items.join(&sep), true);
        } else if quoted {
            // One field each, the first and last joined to what is around.
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    f.finish();
                    f.started = true;
                }
                f.push(item, true);
            }
        } else if !f.split {
            // Not split (an assignment, `case`, `[[ ]]`): joined by IFS's
            // first character for `*`, by a blank for `@`.
            let sep = if star {
                self.ifs_first()
            } else {
                " ".to_string()
            };
            f.push(&items.join(&sep), false);
        } else if !f.ifs.is_empty() {
            // Split with a non-null IFS, `$*` and `$@` alike are joined by
            // IFS's first character and the result split: `IFS=:; set --
            // '' ''` gives one empty field (`:`), `set -- a ''` one, `a`.
            let sep = self.ifs_first();
            f.push_split(&items.join(&sep));
        } else {
            // A null IFS splits nothing: the elements stay apart and an
            // empty one is no field unless joined to text around it.
            for (i, item) in items.iter().enumerate() {
                if i > 0 && f.started {
                    f.finish();
                }
                f.push_split(item);
            }
        }
    }

    fn indirect_target(&mut self, p: &Param) -> R<(String, Option<Subscript>)> {
        let target = match &p.sub {
            Some(Subscript::Index(w)) => {
                let text = self.expand_single(w)?;
                let key = self.subscript_key(&p.name, &text)?;
                self.get_element(&p.name, &key)
            }
            // `${!a[@]op}`: the array's elements, joined, name the target.
            Some(Subscript::All(_)) => match self.get_all(&p.name) {
                Some(vals) if vals.is_empty() => return Ok((String::new(), None)),
                Some(vals) => Some(vals.join(" ")),
                None => {
                    let msg = format!("{}[@]: invalid indirect expansion", p.name);
                    return Err(self.fatal(&msg));
                }
            },
            None => self.get_scalar(&p.name),
        };
        // An unset reference names nothing: bash 5 reports it and abandons
        // the line (with or without `set -u`).
        let Some(target) = target else {
            return Err(self.fatal(&format!("{}: invalid indirect expansion", p.name)));
        };
        if let Some((n, rest)) = target.split_once('[') {
            let inner = rest.strip_suffix(']').unwrap_or(rest);
            let sub = match inner {
                "@" => Subscript::All(false),
                "*" => Subscript::All(true),
                // Expanded as written: `ref='A["K"]'`, `ref='A[$key]'`.
                _ => Subscript::Index(
                    super::parse::Parser::index_word(inner).map_err(|e| self.fatal(&e.message))?,
                ),
            };
            return Ok((n.to_string(), Some(sub)));
        }
        let valid = target
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_')
            || matches!(target.as_str(), "@" | "*" | "#" | "?");
        if target.is_empty() || (!valid && !matches!(p.op, ParamOp::None)) {
            return Err(self.fatal(&format!("{target}: invalid indirect expansion")));
        }
        // A value that names no parameter (`a='bad name'; ${!a}`) names
        // nothing set: bash expands a bare `${!a}` to nothing, with no
        // error (it rejects the name only before applying an operator).
        if !valid {
            return Ok((String::new(), None));
        }
        Ok((target, None))
    }

    fn lookup_param(&mut self, name: &str, sub: Option<&Subscript>) -> R<Val> {
        Ok(match sub {
            Some(Subscript::All(star)) => match self.get_all(name) {
                Some(v) => Val::Many(v, *star),
                None => Val::Many(Vec::new(), *star),
            },
            // `${a[]}`: no subscript at all.
            Some(Subscript::Index(w)) if w.0.is_empty() => {
                return Err(self.fatal(&format!("{name}[]: bad substitution")))
            }
            Some(Subscript::Index(w)) => {
                let text = self.expand_single(w)?;
                let key = self.subscript_key(name, &text)?;
                Val::One(self.get_element(name, &key))
            }
            None if name == "@" || name == "*" => {
                Val::Many(self.st.positional.clone(), name == "*")
            }
            None => Val::One(self.get_scalar(name)),
        })
    }

    fn apply_op(
        &mut self,
        name: &str,
        sub: Option<&Subscript>,
        op: &ParamOp,
        val: Val,
        (quoted, indirect): (bool, bool),
        f: &mut Fields,
    ) -> R<Val> {
        let is_unset = match &val {
            Val::One(v) => v.is_none(),
            Val::Many(v, _) => {
                v.is_empty() && !self.st.vars.contains_key(name) && name != "@" && name != "*"
            }
        };
        // Under `set -u`, bash's `${#a[@]}` needs an array assigned
        // (`a=()` is one; unset or only declared is not), while `${#a[3]}`
        // of an array is 0 for an element not set.
        let array = self.st.vars.get(name).map(|v| {
            matches!(v.value, Value::Indexed(_) | Value::Assoc(_)) && v.attrs & DECLARED == 0
        });
        let unbound = match (op, sub) {
            (ParamOp::Length, Some(Subscript::All(_))) => {
                array != Some(true) && !matches!(name, "@" | "*")
            }
            (ParamOp::Length, Some(Subscript::Index(_))) if array == Some(true) => false,
            (ParamOp::Test { .. }, _) | (_, Some(Subscript::All(_))) => false,
            _ => is_unset && !matches!(name, "@" | "*"),
        };
        if unbound && self.st.opts.nounset {
            return Err(self.fatal_exit(&format!("{name}: unbound variable")));
        }
        Ok(match op {
            ParamOp::None | ParamOp::Names(_) | ParamOp::Keys => val,
            ParamOp::Length => match val {
                Val::Many(v, _) => Val::One(Some(v.len().to_string())),
                Val::One(v) => {
                    let units = self.units();
                    Val::One(Some(v.map_or(0, |s| units.cut(&s).len()).to_string()))
                }
            },
            ParamOp::Test { op, colon, word } => {
                let null = match &val {
                    Val::One(None) => true,
                    Val::One(Some(s)) => *colon && s.is_empty(),
                    // The elements joined as the expansion joins them: by
                    // IFS's first character for a quoted `[*]`, else by a
                    // separator that is never null (unquoted with a null
                    // IFS, the elements stay apart: `IFS=; set -- '' ''`
                    // makes `${*:-x}` not null).
                    // Through `${!ref}` (`ref='a[@]'`), bash tests the
                    // text the target expands to, and quoted, the text of
                    // empty elements is a quoted null, which is not null:
                    // only an array without elements is.
                    Val::Many(v, _) if indirect && quoted => v.is_empty(),
                    Val::Many(v, star) => {
                        let joined_empty =
                            v.len() <= 1 || (*star && quoted && self.ifs_first().is_empty());
                        v.is_empty() || (*colon && v.iter().all(|s| s.is_empty()) && joined_empty)
                    }
                };
                match op {
                    '-' if null => {
                        self.expand_default(&word.0, quoted, f)?;
                        Val::One(None).drop_quiet()
                    }
                    '=' if null => {
                        let v = self.expand_single(word)?;
                        match sub {
                            Some(Subscript::Index(w)) => {
                                let text = self.expand_single(w)?;
                                let key = self.subscript_key(name, &text)?;
                                self.set_element(name, &key, v.clone())?;
                            }
                            _ => self.set_scalar(name, v.clone())?,
                        }
                        Val::One(Some(v))
                    }
                    '+' if !null => {
                        self.expand_default(&word.0, quoted, f)?;
                        Val::One(None).drop_quiet()
                    }
                    '+' => {
                        // What is left is the parameter itself: quoted,
                        // `"${a[@]+w}"` of an empty array is no word at all,
                        // one empty element one empty word.
                        let words = match &val {
                            Val::Many(v, false) => v.len(),
                            Val::One(None) if matches!(sub, Some(Subscript::All(false))) => 0,
                            _ => 1,
                        };
                        if quoted {
                            for _ in 0..words {
                                f.push("", true);
                            }
                        }
                        Val::One(None).drop_quiet()
                    }
                    '?' if null => {
                        let msg = self.expand_single(word)?;
                        let msg = if msg.is_empty() {
                            "parameter null or not set".to_string()
                        } else {
                            msg
                        };
                        return Err(self.fatal_exit(&format!("{name}: {msg}")));
                    }
                    _ => val,
                }
            }
            ParamOp::Substr(off, len) => {
                let off = self.arith(off)?;
                let len = match len {
                    Some(l) => Some(self.arith(l)?),
                    None => None,
                };
                match val {
                    Val::One(v) => {
                        let units = self.units();
                        Val::One(v.map(|s| substr(&s, off, len, units)))
                    }
                    Val::Many(mut items, star) => {
                        if let Some(l) = len.filter(|&l| l < 0) {
                            return Err(self.fatal(&format!("{l}: substring expression < 0")));
                        }
                        let mut off = off;
                        if name == "@" || name == "*" {
                            items.insert(0, self.st.arg0.clone());
                        }
                        // An indexed array's offset is an index: the slice
                        // starts at the first element at or after it, and a
                        // negative one counts back from the highest index + 1.
                        let indices = self.array_indices(name);
                        let end = indices
                            .as_ref()
                            .and_then(|i| i.last())
                            .map_or(items.len() as i64, |m| m + 1);
                        if off < 0 {
                            off += end;
                            if off < 0 {
                                return Ok(Val::Many(Vec::new(), star));
                            }
                        }
                        if let Some(indices) = indices {
                            off = indices.iter().take_while(|&&i| i < off).count() as i64;
                        }
                        Val::Many(slice(items, off, len), star)
                    }
                }
            }
            ParamOp::Strip {
                suffix,
                longest,
                pat,
            } => {
                let pat = self.expand_pattern(pat)?;
                let how = (self.st.opts.extglob, self.units());
                let mut steps = self.steps();
                self.try_map_val(val, |s| {
                    pattern::strip(&pat, s, (*suffix, *longest), how, &mut steps)
                })?
            }
            ParamOp::Replace { mode, pat, rep } => {
                let pat = self.expand_pattern(pat)?;
                let rep = self.expand_single(rep)?;
                let how = (self.st.opts.extglob, self.units());
                let mut steps = self.steps();
                self.try_map_val(val, |s| {
                    pattern::replace(&pat, s, &rep, *mode, how, &mut steps)
                })?
            }
            ParamOp::Case { to, all, pat } => {
                let pat = self.expand_pattern(pat)?;
                let ext = self.st.opts.extglob;
                let mut steps = self.steps();
                self.try_map_val(val, |s| change_case(s, &pat, *to, *all, ext, &mut steps))?
            }
            ParamOp::Transform(t) => self.transform(name, *t, val)?,
        })
    }

    /// The word of `${x:-word}`: unquoted literal text is split too.
    fn expand_default(&mut self, parts: &[Part], quoted: bool, f: &mut Fields) -> R<()> {
        if quoted {
            f.push("", true);
            return self.expand_parts(parts, true, f);
        }
        for p in parts {
            match p {
                Part::Lit(s) => f.push_split(s),
                other => self.expand_parts(std::slice::from_ref(other), false, f)?,
            }
        }
        Ok(())
    }

    /// [`Shell::map_val`] with a step that can end the exec.
    fn try_map_val(
        &self,
        val: Val,
        mut f: impl FnMut(&str) -> Result<String, Abort>,
    ) -> Result<Val, Abort> {
        Ok(match val {
            Val::One(v) => Val::One(v.map(|s| f(&s)).transpose()?),
            Val::Many(items, star) => {
                Val::Many(items.iter().map(|s| f(s)).collect::<Result<_, _>>()?, star)
            }
        })
    }

    fn map_val(&mut self, val: Val, mut f: impl FnMut(&str) -> String) -> Val {
        match val {
            Val::One(v) => Val::One(v.map(|s| f(&s))),
            Val::Many(items, star) => Val::Many(items.iter().map(|s| f(s)).collect(), star),
        }
    }

    fn transform(&mut self, name: &str, t: char, val: Val) -> R<Val> {
        let attrs = self.st.vars.get(name).cloned();
        Ok(match t {
            'Q' => self.map_val(val, printf::value_quote),
            'E' => self.map_val(val, |s| printf::unescape(s, printf::Escapes::Text).0),
            'P' => match val {
                Val::One(Some(s)) => Val::One(Some(self.expand_prompt(&s)?)),
                Val::One(None) => Val::One(None),
                Val::Many(items, star) => {
                    let mut out = Vec::with_capacity(items.len());
                    for item in items {
                        out.push(self.expand_prompt(&item)?);
                    }
                    Val::Many(out, star)
                }
            },
            'U' => self.map_val(val, |s| s.to_uppercase()),
            'L' => self.map_val(val, |s| s.to_lowercase()),
            'u' => {
                let mut steps = self.steps();
                self.try_map_val(val, |s| {
                    change_case(s, "", CaseChange::Upper, false, false, &mut steps)
                })?
            }
            // Each element of `${a[@]@a}` shows the array's attributes.
            'a' => {
                let letters = attr_letters(attrs.as_ref());
                match val {
                    Val::Many(items, star) => Val::Many(vec![letters; items.len()], star),
                    Val::One(_) => Val::One(Some(letters)),
                }
            }
            'A' => match (attrs, val) {
                (Some(var), Val::Many(..))
                    if matches!(var.value, Value::Indexed(_) | Value::Assoc(_)) =>
                {
                    let flags = attr_letters(Some(&var));
                    let body = declare_body(&var);
                    Val::One(Some(format!("declare -{flags} {name}{body}")))
                }
                (attrs, Val::One(Some(s))) => {
                    let flags = attr_letters(attrs.as_ref());
                    let assign = format!("{name}={}", printf::value_quote(&s));
                    Val::One(Some(if flags.is_empty() {
                        assign
                    } else {
                        format!("declare -{flags} {assign}")
                    }))
                }
                _ => Val::One(None),
            },
            // An array's keys and values: `@K` as one word of `key "value"`
            // pairs (quoted as `declare -p` quotes), `@k` as separate words;
            // any other value is quoted as by `@Q`.
            'K' | 'k' => match (attrs, val) {
                (Some(var), Val::Many(_, star))
                    if matches!(var.value, Value::Indexed(_) | Value::Assoc(_)) =>
                {
                    let assoc = matches!(var.value, Value::Assoc(_));
                    let keys =
                        var.keys()
                            .into_iter()
                            .map(|k| if assoc { printf::quote(&k) } else { k });
                    let pairs: Vec<(String, String)> = keys.zip(var.values()).collect();
                    if pairs.is_empty() {
                        Val::Many(Vec::new(), star)
                    } else if t == 'k' {
                        Val::Many(pairs.into_iter().flat_map(|(k, v)| [k, v]).collect(), star)
                    } else {
                        let mut word = pairs
                            .iter()
                            .map(|(k, v)| format!("{k} \"{}\"", escape_dq(v)))
                            .collect::<Vec<_>>()
                            .join(" ");
                        // bash ends an associative array's list with a blank.
                        if assoc {
                            word.push(' ');
                        }
                        Val::Many(vec![word], star)
                    }
                }
                (_, val) => self.map_val(val, printf::value_quote),
            },
            _ => return Err(self.fatal(&format!("{name}: bad substitution"))),
        })
    }
}

impl Shell<'_> {
    /// Expands prompt escapes (`\u`, `\w`, `\$`, ...) as bash does for `PS1`,
    /// then parameters and command substitutions in the result.
    pub(crate) fn expand_prompt(&mut self, text: &str) -> R<String> {
        let mut out = String::new();
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            if c != '\\' {
                out.push(c);
                continue;
            }
            let Some(e) = chars.next() else {
                out.push('\\');
                break;
            };
            match e {
                'u' => out.push_str(&self.get_scalar("USER").unwrap_or_else(|| "agent".into())),
                'h' | 'H' => out.push_str("localhost"),
                'w' | 'W' => {
                    let cwd = self.st.cwd.as_str().to_string();
                    let home = self.get_scalar("HOME").unwrap_or_default();
                    let shown = if !home.is_empty() && home != "/" && cwd == home {
                        "~".to_string()
                    } else if e == 'W' {
                        cwd.rsplit('/')
                            .next()
                            .filter(|n| !n.is_empty())
                            .unwrap_or("/")
                            .to_string()
                    } else if !home.is_empty()
                        && home != "/"
                        && cwd.starts_with(&format!("{home}/"))
                    {
                        format!("~{}", &cwd[home.len()..])
                    } else {
                        cwd
                    };
                    out.push_str(&shown);
                }
                '$' => out.push(if self.get_scalar("EUID").as_deref() == Some("0") {
                    '#'
                } else {
                    '$'
                }),
                'n' => out.push('\n'),
                'r' => out.push('\r'),
                'a' => out.push('\x07'),
                'e' => out.push('\x1b'),
                's' => out.push_str("bash"),
                'v' => out.push_str("5.2"),
                'V' => out.push_str("5.2.21"),
                'j' => out.push_str(&self.job_texts().len().to_string()),
                '[' | ']' => {}
                '\\' => out.push('\\'),
                d if d.is_digit(8) => {
                    let mut v = d.to_digit(8).unwrap_or(0);
                    for _ in 0..2 {
                        match chars.peek().and_then(|c| c.to_digit(8)) {
                            Some(n) => {
                                v = v * 8 + n;
                                chars.next();
                            }
                            None => break,
                        }
                    }
                    out.push(char::from_u32(v).unwrap_or('?'));
                }
                other => {
                    out.push('\\');
                    out.push(other);
                }
            }
        }
        let parts = super::parse::Parser::new(&out)
            .dq_parts(None)
            .map_err(|e| self.fatal(&e.message))?;
        self.expand_single(&Word(parts))
    }
}

trait Quiet {
    fn drop_quiet(self) -> Val;
}

impl Quiet for Val {
    /// A value already pushed (by `${x:-word}`): nothing more to push.
    fn drop_quiet(self) -> Val {
        Val::Many(Vec::new(), false)
    }
}

fn push_value(f: &mut Fields, s: &str, quoted: bool) {
    if quoted {
        f.push(s, true);
    } else {
        f.push_split(s);
    }
}

/// `${s:off:len}`, counted in the locale's units.
fn substr(s: &str, off: i64, len: Option<i64>, units: Units) -> String {
    let chars = units.cut(s);
    let n = chars.len() as i64;
    let start = if off < 0 { n + off } else { off };
    if start < 0 || start > n {
        return String::new();
    }
    let end = match len {
        None => n,
        Some(l) if l < 0 => n + l,
        Some(l) => (start + l).min(n),
    };
    if end < start {
        return String::new();
    }
    units.join(&chars[start as usize..end as usize])
}

fn slice(items: Vec<String>, off: i64, len: Option<i64>) -> Vec<String> {
    let n = items.len() as i64;
    let start = off.clamp(0, n) as usize;
    let end = match len {
        None => n as usize,
        Some(l) if l < 0 => (n + l).max(start as i64) as usize,
        Some(l) => (start as i64 + l).min(n) as usize,
    };
    items
        .into_iter()
        .skip(start)
        .take(end.saturating_sub(start))
        .collect()
}

fn change_case(
    s: &str,
    pat: &str,
    to: CaseChange,
    all: bool,
    ext: bool,
    steps: &mut pattern::Steps,
) -> Result<String, Abort> {
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        let applies = (all || i == 0)
            && (pat.is_empty()
                || pattern::matches(pat, &c.to_string(), (ext, false, Units::Chars), steps)?);
        if applies {
            match to {
                CaseChange::Upper => out.extend(c.to_uppercase()),
                CaseChange::Lower => out.extend(c.to_lowercase()),
                CaseChange::Toggle if c.is_uppercase() => out.extend(c.to_lowercase()),
                CaseChange::Toggle => out.extend(c.to_uppercase()),
            }
        } else {
            out.push(c);
        }
    }
    Ok(out)
}

/// A command substitution's value: its output without NUL bytes (bash
/// drops them, they cannot be in a value) nor trailing newlines; other
/// bytes that are not UTF-8 are kept as raw bytes.
fn substituted_text(mut bytes: Vec<u8>) -> String {
    bytes.retain(|&b| b != 0);
    let mut text = crate::bytes::decode(&bytes);
    while text.ends_with('\n') {
        text.pop();
    }
    text
}

/// The redirection of a substitution that is only `< file` (`$(< file)`).
fn file_read_only(prog: &Program) -> Option<&Redir> {
    let [item] = prog.as_slice() else {
        return None;
    };
    if !item.rest.is_empty() || item.background || item.first.negate || item.first.timed {
        return None;
    }
    let [Command::Simple(cmd)] = item.first.cmds.as_slice() else {
        return None;
    };
    match (
        cmd.words.as_slice(),
        cmd.assigns.as_slice(),
        cmd.redirs.as_slice(),
    ) {
        ([], [], [r])
            if r.op == RedirOp::In && matches!(r.fd, None | Some(0)) && r.var_fd.is_none() =>
        {
            Some(r)
        }
        _ => None,
    }
}
