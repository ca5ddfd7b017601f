//! Shell builtins: the commands that need the interpreter's state.

use std::collections::BTreeMap;

use stead_vfs::{Kind, VPath};

use super::vars::{
    self, attr_letters, declare_body, escape_dq, Value, Var, EXPORT, INTEGER, LOWER, NAMEREF,
    READONLY, UPPER,
};
use super::{printf, Fd, Flow, Shell, R};
use crate::devices::Device;
use crate::limits::Abort;
use crate::utils;

fn usage(sh: &mut Shell, name: &str, msg: &str, status: i32) -> R<i32> {
    sh.err_line(&format!("{name}: {msg}"))?;
    Ok(status)
}

pub(super) fn echo(sh: &mut Shell, args: &[String]) -> R<i32> {
    let mut newline = true;
    let mut escapes = sh.st.opts.xpg_echo;
    let mut i = 1;
    while i < args.len() {
        let a = &args[i];
        if a.len() > 1 && a.starts_with('-') && a[1..].chars().all(|c| matches!(c, 'n' | 'e' | 'E'))
        {
            for c in a[1..].chars() {
                match c {
                    'n' => newline = false,
                    'e' => escapes = true,
                    _ => escapes = false,
                }
            }
            i += 1;
        } else {
            break;
        }
    }
    let mut text = args[i..].join(" ");
    if escapes {
        let (s, stop) = printf::unescape(&text, printf::Escapes::Echo);
        text = s;
        if stop {
            newline = false;
        }
    }
    if newline {
        text.push('\n');
    }
    sh.write_fd(1, text.as_bytes())?;
    Ok(0)
}

pub(super) fn printf_builtin(sh: &mut Shell, args: &[String]) -> R<i32> {
    let mut i = 1;
    let mut var = None;
    if args.get(i).map(String::as_str) == Some("-v") {
        var = args.get(i + 1).cloned();
        i += 2;
    }
    if args.get(i).map(String::as_str) == Some("--") {
        i += 1;
    }
    let Some(fmt) = args.get(i) else {
        return usage(sh, "printf", "usage: printf [-v var] format [arguments]", 2);
    };
    if let Some(v) = &var {
        let ok = match v.split_once('[') {
            Some((base, rest)) => super::parse::valid_name(base) && rest.ends_with(']'),
            None => super::parse::valid_name(v),
        };
        if !ok {
            sh.err_line(&format!("printf: `{v}': not a valid identifier"))?;
            return Ok(2);
        }
    }
    let now = (sh.clock.now_ms() / 1000) as i64;
    let f = printf::format(fmt, &args[i + 1..], now);
    for e in &f.errors {
        sh.err_line(&format!("printf: {e}"))?;
    }
    match var {
        Some(v) => sh.set_var_path(&v, f.text)?,
        None => sh.write_fd(1, f.text.as_bytes())?,
    }
    Ok(if f.errors.is_empty() { 0 } else { 1 })
}

impl Shell<'_> {
    /// Sets `name` or `name[key]` (for `printf -v`, `read`).
    pub(crate) fn set_var_path(&mut self, target: &str, value: String) -> R<()> {
        if let Some((name, rest)) = target.split_once('[') {
            let key = self.ref_key(name, rest)?;
            return self.set_element(name, &key, value);
        }
        self.set_scalar(target, value)
    }
}

pub(super) fn cd(sh: &mut Shell, args: &[String]) -> R<i32> {
    let physical = args[1..]
        .iter()
        .take_while(|a| a.starts_with('-') && a.len() > 1 && *a != "--")
        .fold(false, |p, a| match a.as_str() {
            "-P" => true,
            "-L" => false,
            _ => p,
        });
    let operands: Vec<&String> = args[1..]
        .iter()
        .filter(|a| !matches!(a.as_str(), "-L" | "-P" | "--"))
        .collect();
    if operands.len() > 1 {
        return usage(sh, "cd", "too many arguments", 1);
    }
    let mut print = false;
    let target = match operands.first().map(|s| s.as_str()) {
        None => match sh.get_scalar("HOME") {
            Some(h) => h,
            None => return usage(sh, "cd", "HOME not set", 1),
        },
        Some("-") => match sh.get_scalar("OLDPWD") {
            Some(o) => {
                print = true;
                o
            }
            None => return usage(sh, "cd", "OLDPWD not set", 1),
        },
        Some(t) => t.to_string(),
    };
    let (path, found_on_cdpath) = match cd_target(sh, &target) {
        Ok(found) => found,
        Err(why) => return usage(sh, "cd", &format!("{target}: {why}"), 1),
    };
    let path = if physical {
        sh.fs.realpath(&path).unwrap_or(path)
    } else {
        path
    };
    let old = sh.st.cwd.as_str().to_string();
    sh.st.cwd = path;
    sh.set_scalar("OLDPWD", old)?;
    if let Some(v) = sh.st.vars.get_mut("OLDPWD") {
        v.attrs |= EXPORT;
    }
    let new = sh.st.cwd.as_str().to_string();
    sh.set_scalar("PWD", new.clone())?;
    if print || found_on_cdpath {
        sh.out(&format!("{new}\n"))?;
    }
    Ok(0)
}

/// Where `cd target` goes: a relative target not starting with `.` is
/// looked for in each `CDPATH` folder first (`true` when found there under a
/// named folder, which `cd` then prints). Like bash, a `..` must follow an
/// existing directory (`cd missing/..` fails) although `..` is resolved
/// in the text.
fn cd_target(sh: &mut Shell, target: &str) -> Result<(VPath, bool), String> {
    let cdpath = sh.get_scalar("CDPATH").unwrap_or_default();
    let searched = !target.starts_with('/') && !target.starts_with('.') && !cdpath.is_empty();
    if searched {
        for dir in cdpath.split(':') {
            let candidate = if dir.is_empty() {
                target.to_string()
            } else {
                format!("{}/{target}", dir.trim_end_matches('/'))
            };
            if let Ok(path) = cd_directory(sh, &candidate) {
                return Ok((path, !dir.is_empty()));
            }
        }
    }
    cd_directory(sh, target).map(|p| (p, false))
}

/// `target` as an existing directory, from the current one; the error is
/// its `strerror` text.
fn cd_directory(sh: &mut Shell, target: &str) -> Result<VPath, String> {
    let dir = |sh: &mut Shell, text: &str| -> Result<VPath, String> {
        let path = VPath::parse_from(text, &sh.st.cwd).map_err(|e| utils::strerror(&e))?;
        match sh.fs.stat(&path, true) {
            Ok(node) if node.kind == Kind::Dir => Ok(path),
            Ok(_) => Err("Not a directory".into()),
            Err(e) => Err(utils::strerror(&e)),
        }
    };
    let mut prefix = String::new();
    for part in target.split('/') {
        if part == ".." && !prefix.is_empty() {
            dir(sh, &prefix)?;
        }
        prefix.push_str(part);
        prefix.push('/');
    }
    dir(sh, target)
}

pub(super) fn pwd(sh: &mut Shell, args: &[String]) -> R<i32> {
    let physical = args[1..].iter().any(|a| a == "-P");
    let cwd = sh.st.cwd.clone();
    let shown = if physical {
        sh.fs.realpath(&cwd).unwrap_or(cwd)
    } else {
        cwd
    };
    sh.out(&format!("{}\n", shown.as_str()))?;
    Ok(0)
}

/// Splits `name=value` / `name+=value`.
fn split_assign(arg: &str) -> (&str, Option<(&str, bool)>) {
    match arg.find('=') {
        Some(i) if i > 0 && arg.as_bytes()[i - 1] == b'+' => {
            (&arg[..i - 1], Some((&arg[i + 1..], true)))
        }
        Some(i) => (&arg[..i], Some((&arg[i + 1..], false))),
        None => (arg, None),
    }
}

fn valid_target(name: &str) -> bool {
    let base = name.split('[').next().unwrap_or("");
    super::parse::valid_name(base)
}

pub(super) fn export(sh: &mut Shell, args: &[String]) -> R<i32> {
    let mut unexport = false;
    let mut status = 0;
    let mut names = Vec::new();
    for a in &args[1..] {
        match a.as_str() {
            "-n" => unexport = true,
            "-p" | "-f" | "--" => {}
            _ => names.push(a),
        }
    }
    if names.is_empty() {
        let mut vars: Vec<(&String, &Var)> = sh
            .st
            .vars
            .iter()
            .filter(|(_, v)| v.attrs & EXPORT != 0)
            .collect();
        vars.sort_by(|a, b| a.0.cmp(b.0));
        let mut text = String::new();
        for (n, v) in vars {
            match v.scalar() {
                Some(s) => text.push_str(&format!("declare -x {n}=\"{}\"\n", escape_dq(&s))),
                None => text.push_str(&format!("declare -x {n}\n")),
            }
        }
        sh.out(&text)?;
        return Ok(0);
    }
    for a in names {
        let (name, value) = split_assign(a);
        if !valid_target(name) {
            sh.err_line(&format!("export: `{a}': not a valid identifier"))?;
            status = 1;
            continue;
        }
        if let Some((v, append)) = value {
            let v = if append {
                sh.get_scalar(name).unwrap_or_default() + v
            } else {
                v.to_string()
            };
            sh.set_scalar(name, v)?;
        }
        let var = sh.st.vars.entry(name.to_string()).or_insert(Var {
            value: Value::Unset,
            attrs: 0,
        });
        if unexport {
            var.attrs &= !EXPORT;
        } else {
            var.attrs |= EXPORT;
        }
    }
    Ok(status)
}

pub(super) fn unset(sh: &mut Shell, args: &[String]) -> R<i32> {
    let mut funcs = false;
    let mut no_deref = false;
    let mut status = 0;
    for a in &args[1..] {
        match a.as_str() {
            "-f" => {
                funcs = true;
                continue;
            }
            "-n" => {
                no_deref = true;
                continue;
            }
            "-v" => continue,
            _ => {}
        }
        let resolved;
        let a = if no_deref || !sh.is_nameref(a) {
            a
        } else {
            resolved = sh.resolve_ref(a).unwrap_or_else(|| a.clone());
            &resolved
        };
        if funcs {
            sh.st.funcs.remove(a);
            continue;
        }
        if let Some((name, rest)) = a.split_once('[') {
            let key = rest.trim_end_matches(']').to_string();
            if key == "@" || key == "*" {
                sh.unset_var(name)?;
                continue;
            }
            let is_assoc =
                matches!(sh.st.vars.get(name), Some(v) if matches!(v.value, Value::Assoc(_)));
            let raw = rest.strip_suffix(']').unwrap_or(rest);
            // Bash expands the subscript of any other variable as if in
            // double quotes, so quotes stay and break the arithmetic.
            if !is_assoc && sh.st.vars.contains_key(name) && raw.contains(['"', '\'']) {
                sh.err_line(&format!(
                    "unset: {raw}: syntax error: operand expected (error token is \"{raw}\")"
                ))?;
                status = 1;
                continue;
            }
            let key = sh.ref_key(name, rest)?;
            let mut bad_index = false;
            let mut not_array = false;
            if let Some(var) = sh.st.vars.get_mut(name) {
                match &mut var.value {
                    Value::Indexed(m) => {
                        let i: i64 = key.parse().unwrap_or(0);
                        let i = if i < 0 {
                            m.keys().next_back().map_or(0, |k| k + 1) + i
                        } else {
                            i
                        };
                        if i < 0 {
                            bad_index = true;
                        }
                        m.remove(&i);
                    }
                    Value::Assoc(m) => {
                        m.remove(&key);
                    }
                    // A scalar is its own element 0; any other subscript
                    // is an error.
                    Value::Str(_) | Value::Unset if key == "0" => {
                        sh.st.vars.remove(name);
                    }
                    Value::Str(_) | Value::Unset => not_array = true,
                }
            }
            if bad_index {
                sh.err_line(&format!("unset: [{key}]: bad array subscript"))?;
                status = 1;
            }
            if not_array {
                sh.err_line(&format!("unset: {name}: not an array variable"))?;
                status = 1;
            }
            continue;
        }
        if !super::parse::valid_name(a) {
            sh.err_line(&format!("unset: `{a}': not a valid identifier"))?;
            status = 1;
            continue;
        }
        if sh
            .st
            .vars
            .get(a.as_str())
            .is_some_and(|v| v.attrs & READONLY != 0)
        {
            sh.err_line(&format!("unset: {a}: cannot unset: readonly variable"))?;
            status = 1;
            continue;
        }
        if !sh.remove_var(a) {
            sh.st.funcs.remove(a.as_str());
        }
    }
    Ok(status)
}

#[derive(Default)]
struct DeclOpts {
    attrs_on: u8,
    attrs_off: u8,
    /// `-a` / `-A`: make indexed / associative arrays.
    indexed: bool,
    assoc: bool,
    /// `+a` / `+A`: which bash refuses for an array of that kind.
    indexed_off: bool,
    assoc_off: bool,
    print: bool,
    global: bool,
    funcs: bool,
    func_names: bool,
}

fn parse_decl_opts(args: &[String]) -> (DeclOpts, Vec<String>) {
    let mut o = DeclOpts::default();
    let mut names = Vec::new();
    let mut opts_done = false;
    for a in &args[1..] {
        if !opts_done && a == "--" {
            opts_done = true;
            continue;
        }
        if !opts_done && (a.starts_with('-') || a.starts_with('+')) && a.len() > 1 {
            let on = a.starts_with('-');
            for c in a[1..].chars() {
                let bit = match c {
                    'x' => EXPORT,
                    'r' => READONLY,
                    'i' => INTEGER,
                    'l' => LOWER,
                    'u' => UPPER,
                    'n' => NAMEREF,
                    'a' => {
                        *if on {
                            &mut o.indexed
                        } else {
                            &mut o.indexed_off
                        } = true;
                        0
                    }
                    'A' => {
                        *if on { &mut o.assoc } else { &mut o.assoc_off } = true;
                        0
                    }
                    'p' => {
                        o.print = true;
                        0
                    }
                    'g' => {
                        o.global = true;
                        0
                    }
                    'f' => {
                        o.funcs = true;
                        0
                    }
                    'F' => {
                        o.func_names = true;
                        0
                    }
                    _ => 0,
                };
                if on {
                    o.attrs_on |= bit;
                } else {
                    o.attrs_off |= bit;
                }
            }
            continue;
        }
        // Options end at the first name, as bash's option parser ends:
        // a later `-a` is a name, and not a valid one.
        opts_done = true;
        names.push(a.clone());
    }
    (o, names)
}

pub(super) fn declare(sh: &mut Shell, args: &[String]) -> R<i32> {
    declare_impl(sh, args, sh.in_function > 0)
}

pub(super) fn local(sh: &mut Shell, args: &[String]) -> R<i32> {
    if sh.in_function == 0 {
        return usage(sh, "local", "can only be used in a function", 1);
    }
    declare_impl(sh, args, true)
}

pub(super) fn readonly(sh: &mut Shell, args: &[String]) -> R<i32> {
    let mut v = vec!["readonly".to_string(), "-r".to_string()];
    v.extend_from_slice(&args[1..]);
    declare_impl(sh, &v, false)
}

fn declare_impl(sh: &mut Shell, args: &[String], local: bool) -> R<i32> {
    let (o, names) = parse_decl_opts(args);
    if o.funcs || o.func_names {
        return declare_funcs(sh, &o, &names);
    }
    // No names: list the variables (`declare -a` the indexed arrays,
    // `declare -x` the exported ones, ...).
    if o.print || (names.is_empty() && o.attrs_off == 0) {
        return declare_print(sh, &o, &names);
    }
    let local = local && !o.global;
    let mut status = 0;
    for a in &names {
        let (name, value) = split_assign(a);
        let base = name.split('[').next().unwrap_or(name).to_string();
        if !super::parse::valid_name(&base) {
            sh.err_line(&format!("{}: `{a}': not a valid identifier", args[0]))?;
            status = 1;
            continue;
        }
        if sh
            .st
            .vars
            .get(&base)
            .is_some_and(|v| v.attrs & READONLY != 0)
            && value.is_some()
        {
            sh.err_line(&format!("{base}: readonly variable"))?;
            status = 1;
            continue;
        }
        if o.attrs_on & NAMEREF != 0 && name == base {
            if let Some(message) = nameref_refusal(sh, &base, value) {
                sh.err_line(&format!("{}: {message}", args[0]))?;
                status = 1;
                continue;
            }
        }
        // An element assigned through `declare` (`declare r[1]=v`) of a
        // name reference is the name's own: bash drops the reference first.
        if name != base && value.is_some() && sh.is_nameref(&base) {
            sh.err_line(&format!("warning: {base}: removing nameref attribute"))?;
            if let Some(var) = sh.st.vars.get_mut(&base) {
                var.attrs &= !NAMEREF;
                var.value = Value::Unset;
            }
        }
        if local {
            sh.make_local(&base);
        }
        let existing = sh.st.vars.get(&base).map(|v| &v.value);
        if matches!(
            (existing, o.indexed_off, o.assoc_off),
            (Some(Value::Indexed(_)), true, _) | (Some(Value::Assoc(_)), _, true)
        ) {
            sh.err_line(&format!(
                "{}: {base}: cannot destroy array variables in this way",
                args[0]
            ))?;
            status = 1;
            continue;
        }
        // A value in parentheses from a quoted word is a compound
        // assignment only for an array: one being made (`-a`, `-A`) or one
        // that exists; otherwise it is a string (`declare +a 'x=(2 3)'`).
        let compound =
            o.indexed || o.assoc || matches!(existing, Some(Value::Indexed(_) | Value::Assoc(_)));
        // An array keeps its kind: bash refuses to convert one to the other.
        let conversion = match sh.st.vars.get(&base).map(|v| &v.value) {
            Some(Value::Indexed(_)) if o.assoc => Some("indexed to associative"),
            Some(Value::Assoc(_)) if o.indexed => Some("associative to indexed"),
            _ => None,
        };
        // It is an assignment error: the command is abandoned, its array
        // values unassigned.
        if let Some(what) = conversion {
            sh.err_line(&format!("{}: {base}: cannot convert {what} array", args[0]))?;
            sh.status = 1;
            return Err(Flow::Error(1));
        }
        let var = sh.st.vars.entry(base.clone()).or_insert(Var {
            value: Value::Unset,
            attrs: 0,
        });
        // `declare -a a` makes an array that lists without a value until
        // assigned; `readonly -a a` makes no array at all.
        let declared_only = value.is_none() && matches!(var.value, Value::Unset);
        if declared_only && (o.assoc || o.indexed) {
            if args[0] == "readonly" {
                var.attrs |= READONLY;
                continue;
            }
            var.attrs |= vars::DECLARED;
        }
        if o.assoc && !matches!(var.value, Value::Assoc(_)) {
            // A scalar becomes element "0", as an indexed array's element 0.
            var.value = match std::mem::replace(&mut var.value, Value::Unset) {
                Value::Str(s) => Value::Assoc(BTreeMap::from([("0".to_string(), s)])),
                _ => Value::Assoc(BTreeMap::new()),
            };
        } else if o.indexed && !matches!(var.value, Value::Indexed(_)) {
            var.value = match std::mem::replace(&mut var.value, Value::Unset) {
                Value::Str(s) => Value::Indexed(BTreeMap::from([(0, s)])),
                _ => Value::Indexed(BTreeMap::new()),
            };
        }
        var.attrs = (var.attrs | (o.attrs_on & !READONLY)) & !o.attrs_off;
        if o.attrs_on & NAMEREF != 0 && name == base {
            if let Some((v, false)) = value {
                var.value = Value::Str(v.to_string());
            }
        } else if let Some(a) = compound
            .then(|| value.and_then(|(v, append)| compound_text(name, v, append)))
            .flatten()
        {
            sh.assign(&a)?;
        } else if let Some((v, append)) = value {
            let v = v.to_string();
            if append {
                let old = sh.get_scalar(name).unwrap_or_default();
                sh.set_var_path(name, old + &v)?;
            } else {
                sh.set_var_path(name, v)?;
            }
        }
        if o.attrs_on & READONLY != 0 {
            if let Some(var) = sh.st.vars.get_mut(&base) {
                var.attrs |= READONLY;
            }
        }
    }
    Ok(status)
}

/// Why `declare -n name[=target]` is refused, if it is: a name reference
/// names a variable or an array element (`name[subscript]`), whether the
/// target is given or is the variable's value already. The variable is
/// then left as it was.
fn nameref_refusal(sh: &Shell, name: &str, value: Option<(&str, bool)>) -> Option<String> {
    let target = match value {
        Some((target, false)) => target.to_string(),
        // `+=` appends to the target's text; bash reads that as an
        // assignment, not a reference.
        Some((_, true)) => return None,
        None => match sh.st.vars.get(name).map(|v| &v.value) {
            Some(Value::Str(current)) => current.clone(),
            _ => return None,
        },
    };
    let names_a_variable = |text: &str| {
        let base = match text.split_once('[') {
            Some((base, subscript)) if subscript.ends_with(']') => base,
            Some(_) => return false,
            None => text,
        };
        super::parse::valid_name(base)
    };
    match target.as_str() {
        "" if value.is_some() => Some("`': not a valid identifier".to_string()),
        _ if names_a_variable(&target) => None,
        _ => Some(format!(
            "`{target}': invalid variable name for name reference"
        )),
    }
}

fn declare_funcs(sh: &mut Shell, o: &DeclOpts, names: &[String]) -> R<i32> {
    let listing = names.is_empty();
    let all: Vec<String> = if listing {
        let mut all: Vec<String> = sh.st.funcs.keys().cloned().collect();
        all.sort();
        all
    } else {
        names.to_vec()
    };
    let mut status = 0;
    let mut text = String::new();
    for n in all {
        match sh.st.funcs.get(&n) {
            // `declare -F f` names it; `declare -F` lists declarations.
            Some(_) if o.func_names && listing => text.push_str(&format!("declare -f {n}\n")),
            Some(_) if o.func_names => text.push_str(&format!("{n}\n")),
            Some(f) => text.push_str(&super::print::function(f)),
            None => status = 1,
        }
    }
    sh.out(&text)?;
    Ok(status)
}

fn declare_print(sh: &mut Shell, o: &DeclOpts, names: &[String]) -> R<i32> {
    let mut list: Vec<String> = if names.is_empty() {
        let mut v: Vec<String> = sh
            .st
            .vars
            .iter()
            .filter(|(_, v)| {
                (o.attrs_on == 0 || v.attrs & o.attrs_on != 0)
                    && (!o.assoc || matches!(v.value, Value::Assoc(_)))
                    && (!o.indexed || matches!(v.value, Value::Indexed(_)))
            })
            .map(|(k, _)| k.clone())
            .collect();
        v.sort();
        v
    } else {
        names.to_vec()
    };
    // Listings and errors come in the order of the names, as bash writes
    // each as it goes: held listings are written before an error.
    let mut text = String::new();
    let mut status = 0;
    for n in list.drain(..) {
        let Some(var) = sh.st.vars.get(&n) else {
            sh.out(&std::mem::take(&mut text))?;
            sh.err_line(&format!("declare: {n}: not found"))?;
            status = 1;
            continue;
        };
        let mut flags = attr_letters(Some(var));
        if flags.is_empty() {
            flags.push('-');
        }
        let body = declare_body(var);
        text.push_str(&format!("declare -{flags} {n}{body}\n"));
    }
    sh.out(&text)?;
    Ok(status)
}

/// `declare -a 'x=(1 2)'`: for an array, a value in parentheses is read as
/// a compound assignment, as bash reads it (its words expanded).
fn compound_text(name: &str, value: &str, append: bool) -> Option<super::ast::Assign> {
    if !(value.starts_with('(') && value.ends_with(')')) || name.contains('[') {
        return None;
    }
    let op = if append { "+=" } else { "=" };
    let prog = super::parse::parse_script(&format!("{name}{op}{value}")).ok()?;
    let [item] = prog.as_slice() else {
        return None;
    };
    match item.first.cmds.as_slice() {
        [super::ast::Command::Simple(s)] if item.rest.is_empty() && s.words.is_empty() => {
            match s.assigns.as_slice() {
                [a] => Some(a.clone()),
                _ => None,
            }
        }
        _ => None,
    }
}

/// A special builtin given more operands than it takes: bash reports it
/// and abandons the rest of the command line, with status 1; a `-c` text
/// it abandons whole (the shell, or the subshell it is in, ends with 1).
fn too_many_arguments(sh: &mut Shell, name: &str) -> R<i32> {
    sh.err_line(&format!("{name}: too many arguments"))?;
    sh.status = 1;
    if sh.st.command_text && !sh.st.interactive {
        return Err(Flow::Abort(Abort::Exit(1)));
    }
    Err(Flow::Error(1))
}

pub(super) fn shift(sh: &mut Shell, args: &[String]) -> R<i32> {
    if args.len() > 2 {
        return too_many_arguments(sh, "shift");
    }
    let n: usize = match args.get(1) {
        Some(a) => match a.parse() {
            Ok(n) => n,
            Err(_) => return usage(sh, "shift", &format!("{a}: numeric argument required"), 1),
        },
        None => 1,
    };
    if n > sh.st.positional.len() {
        return Ok(1);
    }
    sh.st.positional.drain(..n);
    Ok(0)
}

pub(super) fn eval(sh: &mut Shell, args: &[String]) -> R<i32> {
    let skip = match args.get(1).map(String::as_str) {
        Some("--") => 2,
        // eval takes no options: `-z` is refused, a lone `-` is a word.
        Some(a) if a.starts_with('-') && a.len() > 1 => {
            sh.err_line(&format!("eval: {a}: invalid option"))?;
            return usage(sh, "eval", "usage: eval [arg ...]", 2);
        }
        _ => 1,
    };
    let text = args[skip..].join(" ");
    let base = sh.line;
    run_text(sh, &text, "eval", base)
}

/// Runs `eval` or `source` text: its lines count from `line_base`.
fn run_text(sh: &mut Shell, text: &str, what: &str, line_base: usize) -> R<i32> {
    sh.budget.enter()?;
    let saved = std::mem::replace(&mut sh.line_base, line_base);
    let r = sh.run_source(text, Some(what), super::SourceKind::Eval);
    sh.line_base = saved;
    sh.budget.leave();
    r
}

pub(super) fn source(sh: &mut Shell, args: &[String]) -> R<i32> {
    let args: Vec<String> = if args.get(1).map(String::as_str) == Some("--") {
        std::iter::once(args[0].clone())
            .chain(args[2..].iter().cloned())
            .collect()
    } else {
        args.to_vec()
    };
    let Some(file) = args.get(1) else {
        return usage(sh, &args[0], "filename argument required", 2);
    };
    let found = if file.contains('/') {
        None
    } else {
        sh.source_lookup(file)
    };
    let named = found.as_deref().unwrap_or(file);
    // Devices read as on Linux: `/dev/null` is empty, and `/dev/stdin`
    // (`/dev/fd/N`) is what is left of that input, read to its end
    // (`cmd | source /dev/stdin`).
    let device = match Device::named(named) {
        Some(Device::Null) => Some(Vec::new()),
        Some(Device::Descriptor(n)) => match sh.fds.get(n).cloned().flatten() {
            Some(Fd::In(input)) => Some(input.take_rest()),
            _ => None,
        },
        _ => None,
    };
    let data = match device
        .map(Ok)
        .unwrap_or_else(|| VPath::parse_from(named, &sh.st.cwd).and_then(|p| sh.fs.read(&p)))
    {
        Ok(d) => d,
        // A file that cannot be read returns too: its `RETURN` trap runs.
        Err(e) => {
            let status = usage(sh, file, &utils::strerror(&e), 1)?;
            sh.fire_return_trap()?;
            return Ok(status);
        }
    };
    let text = crate::bytes::decode(&data);
    let saved =
        (args.len() > 2).then(|| std::mem::replace(&mut sh.st.positional, args[2..].to_vec()));
    sh.sourcing += 1;
    sh.st.sources.push(file.clone());
    sh.st.func_names.push("source".into());
    sh.st.call_lines.push(sh.line);
    let r = run_text(sh, &text, file, 0);
    sh.st.call_lines.pop();
    sh.st.func_names.pop();
    sh.st.sources.pop();
    sh.sourcing -= 1;
    if let Some(p) = saved {
        sh.st.positional = p;
    }
    let r = match r {
        Err(Flow::Return(s)) => Ok(s),
        other => other,
    }?;
    sh.status = r;
    sh.fire_return_trap()?;
    Ok(r)
}

/// Reads one record from fd 0 (up to `delim`, or `n` chars); `None` at EOF.
/// A record that runs into the end of an input that goes on (a pipe that
/// filled up) ends the exec with `max_pipe_bytes`: its rest is not there.
fn read_record(
    sh: &mut Shell,
    delim: Option<u8>,
    n: Option<usize>,
    fd: usize,
) -> R<Option<(Vec<u8>, bool)>> {
    let Some(Fd::In(input)) = sh.fds.get(fd).cloned().flatten() else {
        return Ok(None);
    };
    let pos = input.pos.get();
    let data = &input.data[pos.min(input.data.len())..];
    if data.is_empty() {
        input.rest().end()?;
        return Ok(None);
    }
    let (end, found) = match (n, delim) {
        (Some(n), _) => {
            let text = String::from_utf8_lossy(data);
            let mut bytes = 0;
            let mut found = false;
            for (i, c) in text.chars().enumerate() {
                if i == n {
                    break;
                }
                if Some(c as u32 as u8) == delim && c.is_ascii() {
                    found = true;
                    break;
                }
                bytes += c.len_utf8();
            }
            (bytes, found)
        }
        (None, Some(d)) => match data.iter().position(|&b| b == d) {
            Some(i) => (i, true),
            None => (data.len(), false),
        },
        (None, None) => (data.len(), false),
    };
    let short = match n {
        Some(n) => String::from_utf8_lossy(&data[..end]).chars().count() < n,
        None => true,
    };
    if !found && end == data.len() && short {
        input.rest().end()?;
    }
    let record = data[..end].to_vec();
    input.pos.set(pos + end + found as usize);
    // Complete at the delimiter, or with all `n` characters; the input
    // ending first is a failure (status 1), as for a line without its
    // newline.
    Ok(Some((record, found || (n.is_some() && !short))))
}

pub(super) fn read(sh: &mut Shell, args: &[String]) -> R<i32> {
    let mut raw = false;
    let mut delim = Some(b'\n');
    let mut nchars = None;
    // `-N`: the characters read are the value as they are, not split.
    let mut exact = false;
    let mut array = None;
    let mut prompt = None;
    let mut fd = 0;
    // `-t 0`: only whether input is available (it always is here: data or
    // end of input), nothing is read.
    let mut poll = false;
    let mut names = Vec::new();
    let mut i = 1;
    while i < args.len() {
        let a = &args[i];
        if a.starts_with('-') && a.len() > 1 && names.is_empty() {
            let mut chars = a[1..].chars();
            while let Some(c) = chars.next() {
                let rest: String = chars.clone().collect();
                let mut value = || -> Option<String> {
                    if !rest.is_empty() {
                        Some(rest.clone())
                    } else {
                        i += 1;
                        args.get(i).cloned()
                    }
                };
                match c {
                    'r' => raw = true,
                    's' | 'e' => {}
                    'd' => {
                        let v = value().unwrap_or_default();
                        delim = Some(v.bytes().next().unwrap_or(0));
                        break;
                    }
                    'n' | 'N' => {
                        nchars = value().and_then(|v| v.parse().ok());
                        if c == 'N' {
                            delim = None;
                            exact = true;
                        }
                        break;
                    }
                    'a' => {
                        array = value();
                        break;
                    }
                    'p' => {
                        prompt = value();
                        break;
                    }
                    't' => {
                        poll = value().is_some_and(|v| v.trim().parse::<f64>() == Ok(0.0));
                        break;
                    }
                    'u' => {
                        fd = value().and_then(|v| v.parse().ok()).unwrap_or(0);
                        break;
                    }
                    _ => return usage(sh, "read", &format!("-{c}: invalid option"), 2),
                }
            }
        } else {
            names.push(a.clone());
        }
        i += 1;
    }
    let _ = prompt;
    if poll {
        return Ok(0);
    }
    let Some((mut record, mut complete)) = read_record(sh, delim, nchars, fd)? else {
        for n in names.iter().chain(array.iter()) {
            if array.as_ref() == Some(n) {
                sh.st.vars.insert(
                    n.clone(),
                    Var {
                        value: Value::Indexed(BTreeMap::new()),
                        attrs: 0,
                    },
                );
            } else {
                sh.set_scalar(n, String::new())?;
            }
        }
        if names.is_empty() && array.is_none() {
            sh.set_scalar("REPLY", String::new())?;
        }
        return Ok(1);
    };
    // Without -r, a backslash before the delimiter continues the record.
    while !raw && complete && nchars.is_none() && ends_in_escape(&record) {
        record.pop();
        match read_record(sh, delim, nchars, fd)? {
            Some((more, found)) => {
                record.extend(more);
                complete = found;
            }
            None => complete = false,
        }
    }
    let record: Vec<u8> = record.into_iter().filter(|&b| b != 0).collect();
    let text = crate::bytes::decode(&record);
    // Each character, and whether a backslash quoted it (quoted ones are
    // never separators).
    let chars: Vec<(char, bool)> = if raw {
        text.chars().map(|c| (c, false)).collect()
    } else {
        unescape_read(&text)
    };
    let ifs = sh.ifs();
    let status = if complete { 0 } else { 1 };
    let split = |chars: &[(char, bool)], most: usize| match exact {
        true => vec![chars.iter().map(|(c, _)| c).collect::<String>()],
        false => split_fields(chars, &ifs, most),
    };
    if let Some(arr) = array {
        let fields = split(&chars, usize::MAX);
        sh.check_not_readonly(&arr)?;
        sh.assign_array_values(&arr, fields)?;
        return Ok(status);
    }
    if names.is_empty() {
        let text: String = chars.iter().map(|(c, _)| c).collect();
        sh.set_scalar("REPLY", text)?;
        return Ok(status);
    }
    let fields = split(&chars, names.len());
    for (k, n) in names.iter().enumerate() {
        let v = fields.get(k).cloned().unwrap_or_default();
        sh.set_var_path(n, v)?;
    }
    Ok(status)
}

/// Whether a record ends in an unquoted backslash.
fn ends_in_escape(record: &[u8]) -> bool {
    record.iter().rev().take_while(|&&b| b == b'\\').count() % 2 == 1
}

/// `read` without -r: a backslash quotes the next character (and is removed).
fn unescape_read(s: &str) -> Vec<(char, bool)> {
    let mut out = Vec::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('\n') | None => {}
                Some(n) => out.push((n, true)),
            }
        } else {
            out.push((c, false));
        }
    }
    out
}

impl Shell<'_> {
    fn check_not_readonly(&mut self, name: &str) -> R<()> {
        if self
            .st
            .vars
            .get(name)
            .is_some_and(|v| v.attrs & READONLY != 0)
        {
            self.err_line(&format!("{name}: readonly variable"))?;
            return Err(Flow::Fail(1));
        }
        Ok(())
    }
}

/// Splits for `read`: at most `max` fields, the last one keeps the rest
/// (as bash: leading and trailing IFS whitespace trimmed, one trailing
/// non-whitespace separator dropped). Quoted characters never split.
fn split_fields(chars: &[(char, bool)], ifs: &str, max: usize) -> Vec<String> {
    let is_ws = |&(c, q): &(char, bool)| !q && ifs.contains(c) && matches!(c, ' ' | '\t' | '\n');
    let is_sep = |&(c, q): &(char, bool)| !q && ifs.contains(c);
    let text = |cs: &[(char, bool)]| cs.iter().map(|(c, _)| c).collect::<String>();
    let mut i = 0;
    while i < chars.len() && is_ws(&chars[i]) {
        i += 1;
    }
    let mut fields = Vec::new();
    while i < chars.len() {
        let start = i;
        while i < chars.len() && !is_sep(&chars[i]) {
            i += 1;
        }
        let word = &chars[start..i];
        // skip whitespace, one non-whitespace separator, whitespace
        while i < chars.len() && is_ws(&chars[i]) {
            i += 1;
        }
        if i < chars.len() && is_sep(&chars[i]) && !is_ws(&chars[i]) {
            i += 1;
            while i < chars.len() && is_ws(&chars[i]) {
                i += 1;
            }
        }
        // The last variable takes the rest of the line, its trailing IFS
        // whitespace removed; as bash reads it, a rest that is one word
        // and its delimiters is that word (`IFS=" :"`: `b :` is `b`,
        // `b::` stays `b::`).
        if fields.len() + 1 == max && i < chars.len() {
            let mut end = chars.len();
            while end > start && is_ws(&chars[end - 1]) {
                end -= 1;
            }
            fields.push(text(&chars[start..end]));
            return fields;
        }
        fields.push(text(word));
    }
    fields
}

pub(super) fn test(sh: &mut Shell, args: &[String]) -> R<i32> {
    sh.test_args(&args[1..])
}

pub(super) fn bracket(sh: &mut Shell, args: &[String]) -> R<i32> {
    if args.last().map(String::as_str) != Some("]") {
        return usage(sh, "[", "missing `]'", 2);
    }
    sh.test_args(&args[1..args.len() - 1])
}

pub(super) fn builtin(sh: &mut Shell, args: &[String]) -> R<i32> {
    let skip = 1 + usize::from(args.get(1).is_some_and(|a| a == "--"));
    let Some(name) = args.get(skip) else {
        return Ok(0);
    };
    match super::lookup_builtin(name) {
        Some(b) => b(sh, &args[skip..]),
        None => usage(sh, "builtin", &format!("{name}: not a shell builtin"), 1),
    }
}

pub(super) fn getopts(sh: &mut Shell, args: &[String]) -> R<i32> {
    let Some(var) = args.get(2) else {
        return usage(sh, "getopts", "usage: getopts optstring name [arg ...]", 2);
    };
    if super::parse::valid_name(var) {
        return next_option(sh, args);
    }
    // bash still parses the option (OPTIND, OPTARG), then refuses the name.
    next_option(sh, args)?;
    sh.st.vars.remove(var);
    usage(
        sh,
        "getopts",
        &format!("`{var}': not a valid identifier"),
        1,
    )
}

/// `getopts spec var [args]`, `var` being checked by the caller.
fn next_option(sh: &mut Shell, args: &[String]) -> R<i32> {
    let (Some(spec), Some(var)) = (args.get(1), args.get(2)) else {
        return usage(sh, "getopts", "usage: getopts optstring name [arg ...]", 2);
    };
    let params: Vec<String> = if args.len() > 3 {
        args[3..].to_vec()
    } else {
        sh.st.positional.clone()
    };
    let silent = spec.starts_with(':');
    let spec = spec.trim_start_matches(':');
    let mut optind: usize = sh
        .get_scalar("OPTIND")
        .and_then(|s| s.parse().ok())
        .unwrap_or(1)
        .max(1);
    let mut sub: usize = sh
        .get_scalar("_GETOPTS_SUB")
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    // The end of the options: `?` in the variable, no OPTARG, status 1.
    let end = |sh: &mut Shell| -> R<i32> {
        sh.set_scalar(var, "?".into())?;
        sh.st.vars.remove("OPTARG");
        Ok(1)
    };
    // Past the arguments (another list than the last call's, `set --`),
    // OPTIND is set to one past the last, as bash does.
    let Some(arg) = params.get(optind - 1).cloned() else {
        sh.set_scalar("OPTIND", (params.len() + 1).to_string())?;
        return end(sh);
    };
    if sub == 0 {
        if arg == "--" {
            sh.set_scalar("OPTIND", (optind + 1).to_string())?;
            return end(sh);
        }
        if !arg.starts_with('-') || arg == "-" {
            return end(sh);
        }
        sub = 1;
    }
    let chars: Vec<char> = arg.chars().collect();
    let c = chars[sub];
    sub += 1;
    let at_end = sub >= chars.len();
    let advance = |optind: &mut usize, sub: &mut usize, at_end: bool| {
        if at_end {
            *optind += 1;
            *sub = 0;
        }
    };
    let pos = spec.find(c);
    match pos {
        None => {
            if silent {
                sh.set_scalar("OPTARG", c.to_string())?;
            } else {
                sh.err_line(&format!("illegal option -- {c}"))?;
                sh.st.vars.remove("OPTARG");
            }
            sh.set_scalar(var, "?".into())?;
            advance(&mut optind, &mut sub, at_end);
        }
        Some(p) if spec[p + 1..].starts_with(':') => {
            let value = if !at_end {
                let v: String = chars[sub..].iter().collect();
                optind += 1;
                sub = 0;
                Some(v)
            } else {
                optind += 1;
                sub = 0;
                let v = params.get(optind - 1).cloned();
                if v.is_some() {
                    optind += 1;
                }
                v
            };
            match value {
                Some(v) => {
                    sh.set_scalar("OPTARG", v)?;
                    sh.set_scalar(var, c.to_string())?;
                }
                None => {
                    if silent {
                        sh.set_scalar(var, ":".into())?;
                        sh.set_scalar("OPTARG", c.to_string())?;
                    } else {
                        sh.err_line(&format!("option requires an argument -- {c}"))?;
                        sh.set_scalar(var, "?".into())?;
                    }
                }
            }
        }
        Some(_) => {
            sh.set_scalar(var, c.to_string())?;
            sh.st.vars.remove("OPTARG");
            advance(&mut optind, &mut sub, at_end);
        }
    }
    sh.set_scalar("OPTIND", optind.to_string())?;
    sh.set_scalar("_GETOPTS_SUB", sub.to_string())?;
    Ok(0)
}

fn status_arg(sh: &mut Shell, args: &[String], name: &str) -> R<Result<i32, i32>> {
    match args.get(1) {
        None => Ok(Ok(sh.status)),
        Some(a) => match a.trim().parse::<i64>() {
            Ok(n) => Ok(Ok((n & 0xff) as i32)),
            Err(_) => {
                sh.err_line(&format!("{name}: {a}: numeric argument required"))?;
                Ok(Err(2))
            }
        },
    }
}

pub(super) fn exit(sh: &mut Shell, args: &[String]) -> R<i32> {
    // A numeric first argument with more after it: bash refuses, stays.
    if args.len() > 2 && args[1].trim().parse::<i64>().is_ok() {
        return too_many_arguments(sh, "exit");
    }
    let status = match status_arg(sh, args, "exit")? {
        Ok(s) | Err(s) => s,
    };
    Err(Flow::Abort(Abort::Exit(status)))
}

pub(super) fn return_builtin(sh: &mut Shell, args: &[String]) -> R<i32> {
    if args.len() > 2 {
        return too_many_arguments(sh, "return");
    }
    let status = match status_arg(sh, args, "return")? {
        Ok(s) | Err(s) => s,
    };
    if sh.in_function == 0 && sh.sourcing == 0 {
        sh.err_line("return: can only `return' from a function or sourced script")?;
        return Ok(2);
    }
    Err(Flow::Return(status))
}

fn loop_level(sh: &mut Shell, args: &[String], name: &str) -> R<Result<u32, i32>> {
    if args.len() > 2 {
        too_many_arguments(sh, name)?;
    }
    match args.get(1) {
        None => Ok(Ok(1)),
        Some(a) => match a.parse::<u32>() {
            Ok(n) if n >= 1 => Ok(Ok(n)),
            _ => {
                sh.err_line(&format!("{name}: {a}: loop count out of range"))?;
                Ok(Err(1))
            }
        },
    }
}

/// `break`/`continue` outside a loop (of the current function): an error
/// message, status 0, nothing else happens, as in bash.
fn outside_loop(sh: &mut Shell, name: &str) -> R<Option<i32>> {
    if sh.loop_depth > 0 {
        return Ok(None);
    }
    sh.err_line(&format!(
        "{name}: only meaningful in a `for', `while', or `until' loop"
    ))?;
    Ok(Some(0))
}

pub(super) fn break_builtin(sh: &mut Shell, args: &[String]) -> R<i32> {
    if let Some(s) = outside_loop(sh, "break")? {
        return Ok(s);
    }
    match loop_level(sh, args, "break")? {
        Ok(n) => Err(Flow::Break(n)),
        Err(s) => Ok(s),
    }
}

pub(super) fn continue_builtin(sh: &mut Shell, args: &[String]) -> R<i32> {
    if let Some(s) = outside_loop(sh, "continue")? {
        return Ok(s);
    }
    match loop_level(sh, args, "continue")? {
        Ok(n) => Err(Flow::Continue(n)),
        Err(s) => Ok(s),
    }
}

pub(super) fn let_builtin(sh: &mut Shell, args: &[String]) -> R<i32> {
    if args.len() < 2 {
        return usage(sh, "let", "expression expected", 1);
    }
    let mut last = 0;
    // Each argument is evaluated in turn; an error ends `let` there.
    for a in &args[1..] {
        let expr = super::arith::parse_labeled(a, "let: ");
        last = match sh.eval_arith(&expr) {
            Ok(v) => v,
            Err(Flow::Error(_)) => return Ok(1),
            Err(e) => return Err(e),
        };
    }
    Ok((last == 0) as i32)
}

pub(super) fn set(sh: &mut Shell, args: &[String]) -> R<i32> {
    if args.len() == 1 {
        return print_variables(sh);
    }
    let mut i = 1;
    while i < args.len() {
        let a = &args[i];
        match a.as_str() {
            "--" => {
                sh.st.positional = args[i + 1..].to_vec();
                return Ok(0);
            }
            // `set -`: the end of options, and -x and -v off.
            "-" => {
                sh.st.opts.xtrace = false;
                sh.st.opts.verbose = false;
                if i + 1 < args.len() {
                    sh.st.positional = args[i + 1..].to_vec();
                }
                return Ok(0);
            }
            "+" => {
                i += 1;
                continue;
            }
            _ => {}
        }
        let on = a.starts_with('-');
        if !(on || a.starts_with('+')) {
            sh.st.positional = args[i..].to_vec();
            return Ok(0);
        }
        for c in a[1..].chars() {
            if c == 'o' {
                i += 1;
                match args.get(i) {
                    Some(name) => {
                        if !sh.st.opts.set(name, super::options::Table::Set, on) {
                            sh.err_line(&format!("set: {name}: invalid option name"))?;
                            return Ok(2);
                        }
                    }
                    None => super::options::print_set_options(sh, !on)?,
                }
            } else if !sh.st.opts.set_flag(c, on) {
                sh.err_line(&format!("set: {}{c}: invalid option", &a[..1]))?;
                sh.err_line(
                    "set: usage: set [-abefhkmnptuvxBCEHPT] [-o option-name] [--] [-] [arg ...]",
                )?;
                return Ok(2);
            }
        }
        i += 1;
    }
    Ok(0)
}

/// `set` without arguments: every variable, as bash prints them.
fn print_variables(sh: &mut Shell) -> R<i32> {
    let mut names: Vec<&String> = sh.st.vars.keys().collect();
    names.sort();
    let mut text = String::new();
    for n in names {
        let var = &sh.st.vars[n];
        match &var.value {
            Value::Unset => {}
            Value::Str(s) => text.push_str(&format!("{n}={}\n", printf::quote(s))),
            Value::Indexed(m) => {
                let items: Vec<String> = m
                    .iter()
                    .map(|(k, v)| format!("[{k}]=\"{}\"", escape_dq(v)))
                    .collect();
                text.push_str(&format!("{n}=({})\n", items.join(" ")));
            }
            Value::Assoc(m) => {
                let items: Vec<String> = vars::bash_order(m)
                    .into_iter()
                    .map(|(k, v)| format!("[{}]=\"{}\"", printf::quote(k), escape_dq(v)))
                    .collect();
                text.push_str(&format!("{n}=({} )\n", items.join(" ")));
            }
        }
    }
    sh.out(&text)?;
    Ok(0)
}

pub(super) fn alias(sh: &mut Shell, args: &[String]) -> R<i32> {
    let mut status = 0;
    // `-p` lists (as no operand does); `--` ends the options.
    let skip = args[1..]
        .iter()
        .take_while(|a| matches!(a.as_str(), "-p" | "--"))
        .count();
    let operands = &args[1 + skip..];
    if operands.is_empty() {
        let text: String = sh
            .st
            .aliases
            .iter()
            .map(|(k, v)| format!("alias {k}='{v}'\n"))
            .collect();
        sh.out(&text)?;
        return Ok(0);
    }
    for a in operands {
        match a.split_once('=') {
            Some((k, v)) => {
                sh.st.aliases.insert(k.to_string(), v.to_string());
            }
            None => match sh.st.aliases.get(a) {
                Some(v) => {
                    let line = format!("alias {a}='{v}'\n");
                    sh.out(&line)?;
                }
                None => {
                    sh.err_line(&format!("alias: {a}: not found"))?;
                    status = 1;
                }
            },
        }
    }
    Ok(status)
}

pub(super) fn unalias(sh: &mut Shell, args: &[String]) -> R<i32> {
    let mut status = 0;
    let operands = match args.get(1).map(String::as_str) {
        Some("--") => &args[2..],
        _ => &args[1..],
    };
    if operands.is_empty() {
        return usage(sh, "unalias", "usage: unalias [-a] name [name ...]", 2);
    }
    for a in operands {
        if a == "-a" {
            sh.st.aliases.clear();
        } else if sh.st.aliases.remove(a).is_none() {
            sh.err_line(&format!("unalias: {a}: not found"))?;
            status = 1;
        }
    }
    Ok(status)
}

pub(super) fn mapfile(sh: &mut Shell, args: &[String]) -> R<i32> {
    let mut strip = false;
    let mut delim = b'\n';
    let mut name = "MAPFILE".to_string();
    let mut count = usize::MAX;
    let mut skip = 0;
    let mut origin: Option<i64> = None;
    let mut i = 1;
    while i < args.len() {
        match args[i].as_str() {
            "-t" => strip = true,
            "-d" => {
                i += 1;
                delim = args.get(i).and_then(|d| d.bytes().next()).unwrap_or(0);
            }
            "-n" => {
                i += 1;
                count = args
                    .get(i)
                    .and_then(|n| n.parse().ok())
                    .filter(|&n| n > 0)
                    .unwrap_or(usize::MAX);
            }
            "-s" => {
                i += 1;
                skip = args.get(i).and_then(|n| n.parse().ok()).unwrap_or(0);
            }
            "-O" => {
                i += 1;
                origin = args.get(i).and_then(|n| n.parse().ok());
            }
            "-u" | "-C" | "-c" => i += 1,
            a => name = a.to_string(),
        }
        i += 1;
    }
    // `-O n` adds from index n to what the array holds; else it is cleared.
    let mut map = match origin {
        Some(_) => match sh.st.vars.get(&name).map(|v| &v.value) {
            Some(Value::Indexed(m)) => m.clone(),
            Some(Value::Str(s)) => BTreeMap::from([(0, s.clone())]),
            _ => BTreeMap::new(),
        },
        None => BTreeMap::new(),
    };
    let first = origin.unwrap_or(0);
    let mut stored = 0;
    let mut k = 0;
    while stored < count {
        let Some((rec, found)) = read_record(sh, Some(delim), None, 0)? else {
            break;
        };
        if k < skip {
            k += 1;
            continue;
        }
        // bash keeps a line as a C string: it ends at a NUL byte, and the
        // delimiter after it is lost with the rest (`a\0b\n` is `a`).
        let nul = rec.iter().position(|&b| b == 0);
        let mut s = crate::bytes::decode(&rec[..nul.unwrap_or(rec.len())]);
        // A NUL delimiter cannot be kept: values hold no NUL bytes.
        if found && !strip && delim != 0 && nul.is_none() {
            s.push(delim as char);
        }
        sh.charge_built(s.len() + 64)?;
        map.insert(first + stored as i64, s);
        stored += 1;
        k += 1;
    }
    sh.check_not_readonly(&name)?;
    sh.st.vars.insert(
        name,
        Var {
            value: Value::Indexed(map),
            attrs: 0,
        },
    );
    Ok(0)
}

pub(super) fn exec_builtin(sh: &mut Shell, args: &[String]) -> R<i32> {
    let skip = 1 + usize::from(args.get(1).is_some_and(|a| a == "--"));
    if args.len() == skip {
        return Ok(0);
    }
    let argv = args[skip..].to_vec();
    let status = sh.dispatch(&argv, Vec::new())?;
    // The command replaced the shell, which runs no `EXIT` trap; one that
    // could not be run (not found, 127; not executable, 126) leaves the
    // shell to exit, trap and all.
    if !matches!(status, 126 | 127) {
        sh.st.traps.remove("EXIT");
    }
    Err(Flow::Abort(Abort::Exit(status)))
}
