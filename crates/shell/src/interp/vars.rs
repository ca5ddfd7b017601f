//! Variables: scalars, indexed and associative arrays, attributes,
//! special parameters, and scoping (dynamic, as in bash: a frame saves the
//! outer value of each name it binds and restores it when it ends).
//!
//! Frames are bash's variable contexts: a function call's, and the
//! temporary environment of a command's prefix assignments (`v=1 f`,
//! `v=1 eval ...`). Where bash is subtle, so is this: `local v` of a name
//! whose visible value comes from a temporary environment keeps that value;
//! `unset` of a local of the current call only empties it (it stays local),
//! while `unset` from a function it was called from, or of a temporary
//! binding, removes that binding and reveals the one beneath it.

use std::collections::BTreeMap;

use super::ast::{ArrayElem, Assign, AssignValue};
use super::{Flow, Shell, R};

pub(super) const EXPORT: u8 = 1;
pub(super) const READONLY: u8 = 2;
pub(super) const INTEGER: u8 = 4;
pub(super) const LOWER: u8 = 8;
pub(super) const UPPER: u8 = 16;
pub(super) const NAMEREF: u8 = 32;
/// An array declared and never assigned (`declare -a a`): bash lists it
/// without `=()` (its `att_invisible`). Any assignment to it clears this.
pub(super) const DECLARED: u8 = 64;

/// Variables bash sets up readonly.
const BASH_READONLY: &[&str] = &["SHELLOPTS", "BASHOPTS", "UID", "EUID", "PPID"];

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    /// Declared without a value (`local x`, `declare -a a` has Indexed).
    Unset,
    Str(String),
    Indexed(BTreeMap<i64, String>),
    Assoc(BTreeMap<String, String>),
}

/// One variable context (see the module doc).
#[derive(Debug, Clone, Default)]
pub(crate) struct Frame {
    pub kind: FrameKind,
    /// Each name this frame binds, with the value it hides, oldest first.
    pub cells: Vec<Cell>,
}

#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(crate) enum FrameKind {
    /// A command's prefix assignments, for the command's duration.
    #[default]
    Env,
    /// A function call; `env_below` when the frame just beneath it holds
    /// the call's own prefix assignments (bash merges them into the call's
    /// context, so they are the function's to make local).
    Function { env_below: bool },
}

#[derive(Debug, Clone)]
pub(crate) struct Cell {
    pub name: String,
    /// The value this binding hides (`None`: the name was unset).
    pub outer: Option<Var>,
    pub kind: CellKind,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum CellKind {
    /// A prefix assignment's temporary binding.
    Temp,
    /// Made by `local` / `declare` in a function.
    Local,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Var {
    pub value: Value,
    pub attrs: u8,
}

impl Var {
    pub(crate) fn new(value: String) -> Self {
        Var {
            value: Value::Str(value),
            attrs: 0,
        }
    }

    /// The value as a scalar (`${a}` of an array is element 0).
    pub(crate) fn scalar(&self) -> Option<String> {
        match &self.value {
            Value::Unset => None,
            Value::Str(s) => Some(s.clone()),
            Value::Indexed(m) => m.get(&0).cloned(),
            Value::Assoc(m) => m.get("0").cloned(),
        }
    }

    pub(crate) fn values(&self) -> Vec<String> {
        match &self.value {
            Value::Unset => Vec::new(),
            Value::Str(s) => vec![s.clone()],
            Value::Indexed(m) => m.values().cloned().collect(),
            Value::Assoc(m) => bash_order(m).into_iter().map(|(_, v)| v.clone()).collect(),
        }
    }

    pub(crate) fn keys(&self) -> Vec<String> {
        match &self.value {
            Value::Unset => Vec::new(),
            Value::Str(_) => vec!["0".into()],
            Value::Indexed(m) => m.keys().map(|k| k.to_string()).collect(),
            Value::Assoc(m) => bash_order(m).into_iter().map(|(k, _)| k.clone()).collect(),
        }
    }
}

/// An associative array's entries in the order bash lists them: bash keeps
/// them in a hash table of 1,024 buckets (FNV-1 hash of the key) and walks
/// the buckets in order, so scripts see that order in `${!a[@]}`,
/// `${a[@]}` and `declare -p`. Keys sharing a bucket come in key order here
/// (bash puts the newest first); past 2,048 entries bash's table grows and
/// its order is no longer this one.
pub(super) fn bash_order(map: &BTreeMap<String, String>) -> Vec<(&String, &String)> {
    let mut entries: Vec<(&String, &String)> = map.iter().collect();
    entries.sort_by_key(|(k, _)| fnv1(k.as_bytes()) & 1023);
    entries
}

/// bash's `hash_string`: 32-bit FNV-1.
fn fnv1(bytes: &[u8]) -> u32 {
    bytes.iter().fold(2_166_136_261u32, |h, &b| {
        h.wrapping_mul(16_777_619) ^ u32::from(b)
    })
}

impl Shell<'_> {
    /// Follows `declare -n` references from `name` to the variable they
    /// name. A nameref without a target resolves to itself; `None` on a
    /// reference cycle.
    pub(crate) fn resolve_ref(&self, name: &str) -> Option<String> {
        let mut cur = name.to_string();
        for _ in 0..32 {
            match self.st.vars.get(&cur) {
                Some(Var {
                    value: Value::Str(t),
                    attrs,
                }) if attrs & NAMEREF != 0 && ref_target_ok(t) => cur = t.clone(),
                _ => return Some(cur),
            }
        }
        None
    }

    /// `name` with namerefs resolved (a cycle resolves to an unset name).
    pub(super) fn target(&self, name: &str) -> String {
        match self.st.vars.get(name) {
            Some(v) if v.attrs & NAMEREF != 0 => self.resolve_ref(name).unwrap_or_default(),
            _ => name.to_string(),
        }
    }

    pub(crate) fn is_nameref(&self, name: &str) -> bool {
        self.st
            .vars
            .get(name)
            .is_some_and(|v| v.attrs & NAMEREF != 0)
    }

    /// A parameter's value; `None` when unset.
    pub(crate) fn get_scalar(&mut self, name: &str) -> Option<String> {
        let first = name.as_bytes().first().copied().unwrap_or(b' ');
        if !(first.is_ascii_alphabetic() || first == b'_') {
            return self.special(name);
        }
        if let Some(v) = self.st.vars.get(name) {
            if v.attrs & NAMEREF == 0 {
                return v.scalar();
            }
            let t = self.target(name);
            if t == name {
                return self.st.vars.get(name).and_then(|v| v.scalar());
            }
            if let Some((base, rest)) = t.split_once('[') {
                let key = self.ref_key(base, rest).ok()?;
                return self.get_element(base, &key);
            }
            if t.is_empty() {
                return None;
            }
            return self.get_scalar(&t);
        }
        match name {
            "_" => Some(self.last_arg.clone()),
            "RANDOM" => Some((self.next_random() % 32768).to_string()),
            "LINENO" => Some(self.line.to_string()),
            "SECONDS" => Some("0".into()),
            "BASHPID" => Some(self.st.bashpid.to_string()),
            "BASH_COMMAND" => Some(self.bash_command.clone()),
            "PPID" => Some("4241".into()),
            "UID" | "EUID" => Some("1000".into()),
            "SHLVL" => Some("1".into()),
            "FUNCNAME" => self.function_frames().first().cloned(),
            "BASH_LINENO" => self.st.call_lines.last().map(|n| n.to_string()),
            "BASH_SOURCE" => self.st.sources.last().cloned(),
            "PIPESTATUS" => self.pipestatus.first().map(|s| s.to_string()),
            "BASH_VERSION" => Some("5.2.21(1)-release".into()),
            "SHELLOPTS" => Some(self.st.opts.on_list(super::options::Table::Set)),
            "BASHOPTS" => Some(self.st.opts.on_list(super::options::Table::Shopt)),
            "OSTYPE" => Some("linux-gnu".into()),
            // The isolate has no network name (see `utils/system.rs`).
            "HOSTNAME" => Some("localhost".into()),
            "HOSTTYPE" | "MACHTYPE" => Some("x86_64".into()),
            _ => None,
        }
    }

    fn special(&mut self, name: &str) -> Option<String> {
        Some(match name {
            "?" => self.status.to_string(),
            "#" => self.st.positional.len().to_string(),
            "$" => super::jobs::SHELL_PID.to_string(),
            "!" => return self.st.last_bg_pid.map(|p| p.to_string()),
            "-" => {
                let mut flags = self.st.opts.flags();
                if self.st.interactive {
                    let at = flags.find(|c| "kmnptuvxBCEHPT".contains(c));
                    flags.insert(at.unwrap_or(flags.len()), 'i');
                }
                if self.st.command_text {
                    flags.push('c');
                }
                flags
            }
            "0" => self.st.arg0.clone(),
            "@" | "*" => {
                let sep = self.ifs_first();
                self.st.positional.join(&sep)
            }
            _ => {
                let n: usize = name.parse().ok()?;
                return self.st.positional.get(n.checked_sub(1)?).cloned();
            }
        })
    }

    pub(crate) fn ifs(&self) -> String {
        match self.st.vars.get("IFS") {
            Some(v) => v.scalar().unwrap_or_default(),
            None => " \t\n".into(),
        }
    }

    pub(crate) fn ifs_first(&self) -> String {
        self.ifs()
            .chars()
            .next()
            .map(String::from)
            .unwrap_or_default()
    }

    pub(crate) fn is_assoc(&self, name: &str) -> bool {
        matches!(
            self.st.vars.get(&self.target(name)),
            Some(Var {
                value: Value::Assoc(_),
                ..
            })
        )
    }

    /// `FUNCNAME`, innermost first: set only while a function runs, when
    /// it names the frames below too (`source`, and `main` for a script
    /// file).
    fn function_frames(&self) -> Vec<String> {
        if self.in_function == 0 {
            return Vec::new();
        }
        self.st.func_names.iter().rev().cloned().collect()
    }

    /// All values of a parameter (`${a[@]}`, `$@`).
    pub(crate) fn get_all(&mut self, name: &str) -> Option<Vec<String>> {
        match name {
            "@" | "*" => return Some(self.st.positional.clone()),
            "PIPESTATUS" if !self.st.vars.contains_key(name) => {
                return Some(self.pipestatus.iter().map(|s| s.to_string()).collect())
            }
            "FUNCNAME" if !self.st.vars.contains_key(name) => return Some(self.function_frames()),
            "BASH_SOURCE" if !self.st.vars.contains_key(name) => {
                return Some(self.st.sources.iter().rev().cloned().collect())
            }
            "BASH_LINENO" if !self.st.vars.contains_key(name) => {
                return Some(
                    self.st
                        .call_lines
                        .iter()
                        .rev()
                        .map(|n| n.to_string())
                        .collect(),
                )
            }
            _ => {}
        }
        if self.is_nameref(name) {
            let t = self.target(name);
            if t != name {
                return if t.is_empty() || t.contains('[') {
                    self.get_scalar(name).map(|s| vec![s])
                } else {
                    self.get_all(&t)
                };
            }
        }
        match self.st.vars.get(name) {
            Some(v) if v.value != Value::Unset => Some(v.values()),
            Some(_) => None,
            None => self.get_scalar(name).map(|s| vec![s]),
        }
    }

    pub(crate) fn get_keys(&mut self, name: &str) -> Vec<String> {
        if name == "@" || name == "*" {
            return (1..=self.st.positional.len())
                .map(|i| i.to_string())
                .collect();
        }
        let name = self.target(name);
        self.st
            .vars
            .get(&name)
            .map(|v| v.keys())
            .unwrap_or_default()
    }

    /// One element; `key` is already evaluated (an index for indexed arrays).
    pub(crate) fn get_element(&mut self, name: &str, key: &str) -> Option<String> {
        if name == "PIPESTATUS" && !self.st.vars.contains_key(name) {
            let i: usize = key.parse().ok()?;
            return self.pipestatus.get(i).map(|s| s.to_string());
        }
        if name == "FUNCNAME" && !self.st.vars.contains_key(name) {
            let i: usize = key.parse().ok()?;
            return self.function_frames().get(i).cloned();
        }
        if name == "BASH_SOURCE" && !self.st.vars.contains_key(name) {
            let i: usize = key.parse().ok()?;
            return self.st.sources.iter().rev().nth(i).cloned();
        }
        if name == "BASH_LINENO" && !self.st.vars.contains_key(name) {
            let i: usize = key.parse().ok()?;
            return self
                .st
                .call_lines
                .iter()
                .rev()
                .nth(i)
                .map(|n| n.to_string());
        }
        let name = self.target(name);
        let var = self.st.vars.get(&name)?;
        match &var.value {
            Value::Unset => None,
            Value::Str(s) => (key == "0").then(|| s.clone()),
            Value::Indexed(m) => {
                let i: i64 = key.parse().ok()?;
                let i = if i < 0 {
                    m.keys().next_back().map_or(0, |k| k + 1) + i
                } else {
                    i
                };
                m.get(&i).cloned()
            }
            Value::Assoc(m) => m.get(key).cloned(),
        }
    }

    /// Whether `name` (through namerefs) is readonly: declared so, or one
    /// of the variables bash itself makes readonly.
    pub(crate) fn is_readonly(&self, name: &str) -> bool {
        let target = self.target(name);
        match self.st.vars.get(&target) {
            Some(v) => v.attrs & READONLY != 0,
            None => BASH_READONLY.contains(&target.as_str()),
        }
    }

    /// A negative index past the start of an indexed array.
    pub(super) fn bad_subscript<T>(&mut self, name: &str, key: &str) -> R<T> {
        self.err_line(&format!("{name}[{key}]: bad array subscript"))?;
        Err(Flow::Fail(1))
    }

    fn check_writable(&mut self, name: &str) -> R<()> {
        if self.is_readonly(name) {
            let msg = format!("{name}: readonly variable");
            self.err_line(&msg)?;
            return Err(Flow::Fail(1));
        }
        Ok(())
    }

    fn transform_value(&mut self, name: &str, value: String) -> R<String> {
        let attrs = self.st.vars.get(name).map_or(0, |v| v.attrs);
        if attrs & INTEGER != 0 {
            return Ok(self.arith_value(&value)?.to_string());
        }
        if attrs & LOWER != 0 {
            return Ok(value.to_lowercase());
        }
        if attrs & UPPER != 0 {
            return Ok(value.to_uppercase());
        }
        Ok(value)
    }

    /// Assigns a scalar; assigning `PATH`, `HISTSIZE` or `HISTFILESIZE`
    /// also acts on what they govern.
    pub(crate) fn set_scalar(&mut self, name: &str, value: String) -> R<()> {
        match name {
            "PATH" => self.forget_hashed(),
            "HISTSIZE" | "HISTFILESIZE" => {
                self.set_scalar_value(name, value)?;
                return self.history_size_changed(name);
            }
            _ => {}
        }
        self.set_scalar_value(name, value)
    }

    fn set_scalar_value(&mut self, name: &str, value: String) -> R<()> {
        if self.is_nameref(name) {
            let t = self.deref_for_write(name)?;
            if let Some((base, rest)) = t.split_once('[') {
                let key = self.ref_key(base, rest)?;
                return self.set_element(base, &key, value);
            }
            if t != name {
                return self.set_scalar(&t, value);
            }
        }
        if let Some(var) = self.st.vars.get_mut(name) {
            if var.attrs == 0 && !self.st.opts.allexport {
                if let Value::Str(s) = &mut var.value {
                    *s = value;
                    return Ok(());
                }
            }
        }
        self.check_writable(name)?;
        let value = self.transform_value(name, value)?;
        match self.st.vars.get_mut(name) {
            Some(var) => match &mut var.value {
                Value::Indexed(m) => {
                    m.insert(0, value);
                }
                Value::Assoc(m) => {
                    m.insert("0".into(), value);
                }
                other => *other = Value::Str(value),
            },
            None => {
                self.st.vars.insert(name.to_string(), Var::new(value));
            }
        }
        self.auto_export(name);
        Ok(())
    }

    /// `set -a`: every variable assigned is exported.
    fn auto_export(&mut self, name: &str) {
        if self.st.opts.allexport {
            if let Some(v) = self.st.vars.get_mut(name) {
                v.attrs |= EXPORT;
            }
        }
    }

    /// The key of `base[rest` written in a string (a nameref target,
    /// `unset 'a[$k]'`, `test -v`, `printf -v`): bash expands the subscript
    /// then (quotes removed, `$k` expanded; arithmetic for indexed arrays).
    pub(super) fn ref_key(&mut self, base: &str, rest: &str) -> R<String> {
        let raw = rest.strip_suffix(']').unwrap_or(rest);
        let word = super::parse::Parser::index_word(raw).map_err(|e| self.fatal(&e.message))?;
        let text = self.expand_single(&word)?;
        self.subscript_key(base, &text)
    }

    /// The variable a write to `name` lands on; errors on a cycle.
    fn deref_for_write(&mut self, name: &str) -> R<String> {
        match self.resolve_ref(name) {
            Some(t) => Ok(t),
            None => {
                self.err_line(&format!("warning: {name}: circular name reference"))?;
                Err(Flow::Fail(1))
            }
        }
    }

    pub(crate) fn set_element(&mut self, name: &str, key: &str, value: String) -> R<()> {
        let name = &self.deref_for_write(name)?;
        self.check_writable(name)?;
        let value = self.transform_value(name, value)?;
        let var = self.st.vars.entry(name.to_string()).or_insert(Var {
            value: Value::Unset,
            attrs: 0,
        });
        var.attrs &= !DECLARED;
        match &mut var.value {
            Value::Assoc(m) => {
                m.insert(key.to_string(), value);
            }
            Value::Indexed(m) => {
                let i: i64 = key.parse().unwrap_or(0);
                let i = if i < 0 {
                    m.keys().next_back().map_or(0, |k| k + 1) + i
                } else {
                    i
                };
                if i < 0 {
                    return self.bad_subscript(name, key);
                }
                m.insert(i, value);
            }
            other => {
                let mut m = BTreeMap::new();
                if let Value::Str(s) = other {
                    m.insert(0, std::mem::take(s));
                }
                m.insert(key.parse().unwrap_or(0), value);
                *other = Value::Indexed(m);
            }
        }
        self.auto_export(name);
        Ok(())
    }

    pub(crate) fn unset_var(&mut self, name: &str) -> R<bool> {
        let name = &self.target(name);
        if name == "PATH" {
            self.forget_hashed();
        }
        self.check_writable(name)?;
        Ok(self.remove_var(name))
    }

    /// Unsets `name` by bash's rules (see the module doc); whether it was
    /// bound at all.
    pub(crate) fn remove_var(&mut self, name: &str) -> bool {
        let Some((f, c)) = self.innermost_cell(name) else {
            return self.st.vars.remove(name).is_some();
        };
        let cell = &self.st.frames[f].cells[c];
        if cell.kind == CellKind::Local && f >= self.current_level() {
            self.st.vars.remove(name);
            return true;
        }
        let cell = self.st.frames[f].cells.remove(c);
        let was = match cell.outer {
            Some(v) => self.st.vars.insert(cell.name, v),
            None => self.st.vars.remove(&cell.name),
        };
        was.is_some()
    }

    /// The frame and cell of the innermost binding of `name`.
    fn innermost_cell(&self, name: &str) -> Option<(usize, usize)> {
        self.st
            .frames
            .iter()
            .enumerate()
            .rev()
            .find_map(|(f, frame)| {
                let c = frame.cells.iter().rposition(|c| c.name == name)?;
                Some((f, c))
            })
    }

    /// The first frame of the running function's own context: its call
    /// frame (with its prefix assignments' frame beneath it) and the
    /// frames of commands it runs (`v=1 eval ...`); 0 outside functions.
    fn current_level(&self) -> usize {
        let frames = &self.st.frames;
        match frames
            .iter()
            .rposition(|f| matches!(f.kind, FrameKind::Function { .. }))
        {
            Some(i) if frames[i].kind == (FrameKind::Function { env_below: true }) => {
                i.saturating_sub(1)
            }
            Some(i) => i,
            None => 0,
        }
    }

    /// Starts a frame for one command's prefix assignments.
    pub(crate) fn push_env_frame(&mut self) {
        self.st.frames.push(Frame::default());
    }

    /// Ends the innermost frame: each binding it still holds gives back the
    /// value it hid, unless `keep` (prefix assignments that outlive their
    /// command, as `declare`'s do).
    pub(crate) fn pop_frame(&mut self, keep: bool) {
        let Some(frame) = self.st.frames.pop() else {
            return;
        };
        if keep {
            return;
        }
        for cell in frame.cells.into_iter().rev() {
            match cell.outer {
                Some(v) => {
                    self.st.vars.insert(cell.name, v);
                }
                None => {
                    self.st.vars.remove(&cell.name);
                }
            }
        }
    }

    /// Sets `name` to an indexed array of `values`.
    pub(crate) fn assign_array_values(&mut self, name: &str, values: Vec<String>) -> R<()> {
        self.check_writable(name)?;
        let map = values
            .into_iter()
            .enumerate()
            .map(|(i, v)| (i as i64, v))
            .collect();
        let attrs = self.st.vars.get(name).map_or(0, |v| v.attrs);
        self.st.vars.insert(
            name.to_string(),
            Var {
                value: Value::Indexed(map),
                attrs,
            },
        );
        Ok(())
    }

    /// Makes `name` local to the current function call. A name already
    /// bound in the call's context stays as it is (a temporary binding
    /// becomes the local); a new local starts unset, or with the visible
    /// value when that comes from a temporary binding.
    pub(crate) fn make_local(&mut self, name: &str) {
        let found = self.innermost_cell(name);
        if let Some((f, c)) = found {
            if f >= self.current_level() {
                self.st.frames[f].cells[c].kind = CellKind::Local;
                return;
            }
        }
        let Some(call) = self
            .st
            .frames
            .iter()
            .rposition(|f| matches!(f.kind, FrameKind::Function { .. }))
        else {
            return;
        };
        let inherit = found.is_some_and(|(f, c)| self.st.frames[f].cells[c].kind == CellKind::Temp);
        let old = self.st.vars.get(name).cloned();
        self.st.frames[call].cells.push(Cell {
            name: name.to_string(),
            outer: old.clone(),
            kind: CellKind::Local,
        });
        let attrs = old.as_ref().map_or(0, |v| v.attrs & EXPORT);
        let value = match old {
            Some(Var {
                value: v @ Value::Str(_),
                ..
            }) if inherit => v,
            _ => Value::Unset,
        };
        self.st.vars.insert(name.to_string(), Var { value, attrs });
    }

    /// Evaluates an array subscript for `name` (arithmetic unless assoc).
    pub(crate) fn subscript_key(&mut self, name: &str, text: &str) -> R<String> {
        if self.is_assoc(name) {
            return Ok(text.to_string());
        }
        Ok(self.eval_arith(&super::arith::parse(text))?.to_string())
    }

    /// Performs an assignment word (`x=1`, `a[i]+=v`, `a=(1 2)`).
    pub(crate) fn assign(&mut self, a: &Assign) -> R<()> {
        if self.is_nameref(&a.name) {
            let t = self.deref_for_write(&a.name)?;
            // A reference to an element (`declare -n r='a[0]'`) takes no
            // subscript or list of its own: bash puts what `r[1]=` or
            // `r=(..)` adds after the target's text, which names no
            // variable, and refuses it (the line abandoned).
            let adds = a.index.is_some() || matches!(a.value, AssignValue::Array(_));
            if t.contains('[') && adds {
                self.err_line(&format!("`{t}': not a valid identifier"))?;
                return Err(Flow::Fail(1));
            }
            if t != a.name && !t.contains('[') {
                let mut a = a.clone();
                a.name = t;
                return self.assign(&a);
            }
        }
        match &a.value {
            AssignValue::Scalar(w) => {
                let value = self.expand_assign_value(w)?;
                if let Some(index) = &a.index {
                    if index.0.is_empty() {
                        let msg = format!("{}[]: bad array subscript", a.name);
                        return Err(self.fatal(&msg));
                    }
                    let text = self.expand_single(index)?;
                    let key = self.subscript_key(&a.name, &text)?;
                    let value = if a.append {
                        format!(
                            "{}{}",
                            self.get_element(&a.name, &key).unwrap_or_default(),
                            value
                        )
                    } else {
                        value
                    };
                    return self.set_element(&a.name, &key, value);
                }
                if a.append {
                    let attrs = self.st.vars.get(&a.name).map_or(0, |v| v.attrs);
                    if attrs & INTEGER != 0 {
                        let old = self.get_scalar(&a.name).unwrap_or_default();
                        let sum = self.arith_value(&old)? + self.arith_value(&value)?;
                        return self.set_scalar(&a.name, sum.to_string());
                    }
                    if let Some(Var {
                        value: Value::Indexed(m),
                        ..
                    }) = self.st.vars.get_mut(&a.name)
                    {
                        m.entry(0).or_default().push_str(&value);
                        return Ok(());
                    }
                    let old = self.get_scalar(&a.name).unwrap_or_default();
                    return self.set_scalar(&a.name, old + &value);
                }
                self.set_scalar(&a.name, value)
            }
            AssignValue::Array(_) if a.index.is_some() => {
                let index = a
                    .index
                    .as_ref()
                    .map(|w| self.expand_single(w))
                    .transpose()?;
                let index = index.unwrap_or_default();
                self.err_line(&format!(
                    "{}[{index}]: cannot assign list to array member",
                    a.name
                ))?;
                Err(Flow::Fail(1))
            }
            AssignValue::Array(elems) => self.assign_array(&a.name, elems, a.append),
        }
    }

    /// A prefix assignment (`B=(b "x y") cmd`): bash makes a compound
    /// value a string for the command's environment, its elements
    /// expanded as assignment values (unsplit, unglobbed) and joined by
    /// single spaces inside the parentheses (`(b x y)`).
    pub(crate) fn assign_prefix(&mut self, a: &Assign) -> R<()> {
        let AssignValue::Array(elems) = &a.value else {
            return self.assign(a);
        };
        let mut words = Vec::with_capacity(elems.len());
        for ArrayElem { key, value, .. } in elems {
            let value = self.expand_assign_value(value)?;
            words.push(match key {
                Some((k, add)) => {
                    let op = if *add { "+=" } else { "=" };
                    format!("[{}]{op}{value}", self.expand_single(k)?)
                }
                None => value,
            });
        }
        let text = format!("({})", words.join(" "));
        let text = match a.append {
            true => self.get_scalar(&a.name).unwrap_or_default() + &text,
            false => text,
        };
        self.set_scalar(&a.name, text)
    }

    fn assign_array(&mut self, name: &str, elems: &[ArrayElem], append: bool) -> R<()> {
        self.check_writable(name)?;
        let assoc = self.is_assoc(name);
        // Every value is expanded before the array changes.
        let mut values = Vec::new();
        for ArrayElem { key, value, braced } in elems {
            match key {
                Some(_) if !assoc && !braced.is_empty() => {
                    for v in self.expand_words(braced)? {
                        values.push((None, v));
                    }
                }
                Some((k, add)) => {
                    let k = self.expand_single(k)?;
                    // bash 5.2 leaves a `~` after `[key]=` of an
                    // associative array as it is.
                    let v = match assoc {
                        true => self.expand_single(&value.without_tilde())?,
                        false => self.expand_assign_value(value)?,
                    };
                    values.push((Some((k, *add)), v));
                }
                None if assoc => {
                    let v = self.expand_assign_value(value)?;
                    values.push((None, v));
                }
                None => {
                    for v in self.expand_words(std::slice::from_ref(value))? {
                        values.push((None, v));
                    }
                }
            }
        }
        let attrs = self.st.vars.get(name).map_or(0, |v| v.attrs) & !DECLARED;
        if assoc {
            let mut m = match (append, self.st.vars.get(name)) {
                (
                    true,
                    Some(Var {
                        value: Value::Assoc(m),
                        ..
                    }),
                ) => m.clone(),
                _ => BTreeMap::new(),
            };
            // `(k1 v1 k2 v2)` when the first element has no `[key]=`: then
            // every element is a word of the list, `[k]=v` included; after
            // a first `[key]=`, an element without one is refused.
            let pairs = matches!(values.first(), Some((None, _)));
            let mut pending_key: Option<String> = None;
            for (k, v) in values {
                let (k, v) = match (k, v) {
                    (Some((k, add)), v) if pairs => {
                        let op = if add { "+=" } else { "=" };
                        (None, format!("[{k}]{op}{v}"))
                    }
                    (None, v) if !pairs => {
                        self.err_line(&format!(
                            "{name}: {v}: must use subscript when assigning associative array"
                        ))?;
                        continue;
                    }
                    kv => kv,
                };
                match k {
                    // bash builds a fresh table unless appending, so `[k]+=`
                    // then extends the variable's value from before.
                    Some((k, true)) if append => m.entry(k).or_default().push_str(&v),
                    Some((k, true)) => {
                        let old = self.get_element(name, &k).unwrap_or_default();
                        m.insert(k, old + &v);
                    }
                    Some((k, false)) => {
                        m.insert(k, v);
                    }
                    None => match pending_key.take() {
                        Some(k) => {
                            m.insert(k, v);
                        }
                        None => pending_key = Some(v),
                    },
                }
            }
            if let Some(k) = pending_key {
                m.insert(k, String::new());
            }
            self.st.vars.insert(
                name.to_string(),
                Var {
                    value: Value::Assoc(m),
                    attrs,
                },
            );
            self.auto_export(name);
            return Ok(());
        }
        let m = match (append, self.st.vars.get(name)) {
            (
                true,
                Some(Var {
                    value: Value::Indexed(m),
                    ..
                }),
            ) => m.clone(),
            (
                true,
                Some(Var {
                    value: Value::Str(s),
                    ..
                }),
            ) => BTreeMap::from([(0, s.clone())]),
            _ => BTreeMap::new(),
        };
        let mut next = m.keys().next_back().map_or(0, |k| k + 1);
        self.st.vars.insert(
            name.to_string(),
            Var {
                value: Value::Indexed(m),
                attrs,
            },
        );
        // Each `[k]` is evaluated after the elements before it are stored.
        for (k, v) in values {
            let (i, add) = match k {
                Some((k, add)) => {
                    let key = self.subscript_key(name, &k)?;
                    (key.parse().unwrap_or(0), add)
                }
                None => (next, false),
            };
            let old = match add {
                true => self.get_element(name, &i.to_string()),
                false => None,
            };
            let v = if attrs & INTEGER != 0 {
                let old = match old {
                    Some(o) => self.arith_value(&o)?,
                    None => 0,
                };
                (old + self.arith_value(&v)?).to_string()
            } else {
                old.unwrap_or_default() + &v
            };
            if let Some(Var {
                value: Value::Indexed(m),
                ..
            }) = self.st.vars.get_mut(name)
            {
                m.insert(i, v);
            }
            next = i + 1;
        }
        self.auto_export(name);
        Ok(())
    }
}

/// Whether a nameref value names a variable (`x`, `a[i]`) it can follow.
fn ref_target_ok(t: &str) -> bool {
    match t.split_once('[') {
        Some((base, rest)) => super::parse::valid_name(base) && rest.ends_with(']'),
        None => super::parse::valid_name(t),
    }
}

// How `declare -p` (and `${v@A}`, `export -p`, `set`) shows a variable.

/// The attribute letters `declare -p` and `${v@a}` show, in bash's order.
pub(super) fn attr_letters(var: Option<&Var>) -> String {
    let Some(v) = var else { return String::new() };
    let mut s = String::new();
    match v.value {
        Value::Indexed(_) => s.push('a'),
        Value::Assoc(_) => s.push('A'),
        _ => {}
    }
    for (bit, c) in [
        (INTEGER, 'i'),
        (LOWER, 'l'),
        (NAMEREF, 'n'),
        (READONLY, 'r'),
        (UPPER, 'u'),
        (EXPORT, 'x'),
    ] {
        if v.attrs & bit != 0 {
            s.push(c);
        }
    }
    s
}

/// What `declare -p` prints after the name: `="v"`, `=([0]="a" ...)`,
/// nothing for an array declared and never assigned.
pub(super) fn declare_body(var: &Var) -> String {
    let empty = match &var.value {
        Value::Indexed(m) => m.is_empty(),
        Value::Assoc(m) => m.is_empty(),
        Value::Unset | Value::Str(_) => false,
    };
    if empty && var.attrs & DECLARED != 0 {
        return String::new();
    }
    match &var.value {
        Value::Unset => String::new(),
        Value::Str(s) => format!("=\"{}\"", escape_dq(s)),
        Value::Indexed(m) => format!(
            "=({})",
            m.iter()
                .map(|(k, v)| format!("[{k}]=\"{}\"", escape_dq(v)))
                .collect::<Vec<_>>()
                .join(" ")
        ),
        Value::Assoc(m) if m.is_empty() => "=()".to_string(),
        Value::Assoc(m) => format!(
            "=({} )",
            bash_order(m)
                .into_iter()
                .map(|(k, v)| format!("[{}]=\"{}\"", super::printf::quote(k), escape_dq(v)))
                .collect::<Vec<_>>()
                .join(" ")
        ),
    }
}

/// Text for inside double quotes: `"`, `\`, `$` and `` ` `` escaped.
pub(super) fn escape_dq(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if matches!(c, '"' | '\\' | '$' | '`') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}
