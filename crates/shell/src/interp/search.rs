//! Command search, as bash does it: a name that is not a function or a
//! builtin is looked for on `$PATH` (see `utils::which` for how the light
//! shell's programs sit in `/usr/bin` and `/bin`), and the location found is
//! remembered in the hash table, which later runs use without searching
//! again (so a file removed after it was found fails with `No such file or
//! directory`, and one added earlier on `PATH` is not seen until `hash -r`
//! or an assignment to `PATH`). Also the builtins that report it: `hash`,
//! `type` and `command -v/-V/-p`.

use std::collections::BTreeMap;

use super::{flags, is_builtin, lookup_builtin, Shell, R};
use crate::utils::which::{self, Found, DEFAULT_PATH};

/// A remembered location (`hash`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Hashed {
    pub path: String,
    /// Times it was used since found (`hash` shows them).
    pub hits: u32,
}

/// The reserved words, as `type` names them.
pub(super) const KEYWORDS: &[&str] = &[
    "if", "then", "else", "elif", "fi", "case", "esac", "for", "select", "while", "until", "do",
    "done", "in", "function", "time", "{", "}", "!", "[[", "]]", "coproc",
];

/// What a name runs as, in the order bash looks.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    Alias(String),
    Keyword,
    Function,
    Builtin,
    /// A file, and whether the hash table gave it.
    File(String, bool),
}

impl Kind {
    fn word(&self) -> &'static str {
        match self {
            Kind::Alias(_) => "alias",
            Kind::Keyword => "keyword",
            Kind::Function => "function",
            Kind::Builtin => "builtin",
            Kind::File(..) => "file",
        }
    }
}

impl Shell<'_> {
    /// Whether `name` is one of the light shell's programs (a utility, a
    /// command the host added, or `bash`/`sh`).
    pub(crate) fn is_program(&self, name: &str) -> bool {
        crate::utils::lookup(name).is_some()
            || self.extra.iter().any(|(n, _)| *n == name)
            || which::PROGRAM_BUILTINS.contains(&name)
            || matches!(name, "bash" | "sh")
    }

    /// Searches `$PATH` (or `path`) for `name`.
    fn search_path(&mut self, name: &str, path: Option<&str>, all: bool) -> Vec<Found> {
        // An unset PATH searches the current directory only.
        let path = match path {
            Some(p) => p.to_string(),
            None => self.get_scalar("PATH").unwrap_or_default(),
        };
        let is_program = |n: &str| self.is_program(n);
        which::search(self.fs, &self.st.cwd, &path, name, all, &is_program)
    }

    /// Where a command name (no `/`) runs from: the hash table, else a
    /// `$PATH` search whose executable result is remembered. A hashed
    /// location is used as is.
    pub(crate) fn find_command(&mut self, name: &str) -> Option<Found> {
        if let Some(h) = self.st.hashed.get_mut(name) {
            h.hits += 1;
            let path = h.path.clone();
            let base = path.rsplit('/').next().unwrap_or("");
            let dir = &path[..path.len() - base.len()];
            let in_program_dir = which::PROGRAM_DIRS
                .iter()
                .any(|d| dir.strip_suffix('/') == Some(d));
            return Some(if in_program_dir && self.is_program(base) {
                Found::Program(path)
            } else {
                Found::File(path)
            });
        }
        let found = self.search_path(name, None, false).pop()?;
        if !matches!(found, Found::NotExecutable(_)) {
            self.remember(name, found.path(), 1);
        }
        Some(found)
    }

    fn remember(&mut self, name: &str, path: &str, hits: u32) {
        self.st.hashed.insert(
            name.to_string(),
            Hashed {
                path: path.to_string(),
                hits,
            },
        );
    }

    /// `PATH` changed: bash forgets every remembered location.
    pub(crate) fn forget_hashed(&mut self) {
        self.st.hashed.clear();
    }

    /// How `name` would run, first match only unless `all`; `functions`
    /// false skips functions (`type -f`), `path_only` looks at files only
    /// (`type -P`).
    fn kinds(&mut self, name: &str, all: bool, functions: bool, path_only: bool) -> Vec<Kind> {
        let mut kinds = Vec::new();
        if !path_only {
            if let Some(a) = self.st.aliases.get(name) {
                kinds.push(Kind::Alias(a.clone()));
            }
            if KEYWORDS.contains(&name) {
                kinds.push(Kind::Keyword);
            }
            if functions && self.st.funcs.contains_key(name) {
                kinds.push(Kind::Function);
            }
            if is_builtin(name) {
                kinds.push(Kind::Builtin);
            }
            if !all && !kinds.is_empty() {
                kinds.truncate(1);
                return kinds;
            }
        }
        if name.contains('/') {
            let runs = super::VPath::parse_from(name, &self.st.cwd)
                .is_ok_and(|p| which::executable(self.fs, &p) == Some(true));
            if runs {
                kinds.push(Kind::File(name.to_string(), false));
            }
            return kinds;
        }
        if !all {
            if let Some(h) = self.st.hashed.get(name) {
                kinds.push(Kind::File(h.path.clone(), true));
                return kinds;
            }
        }
        for found in self.search_path(name, None, all) {
            kinds.push(Kind::File(found.path().to_string(), false));
        }
        kinds
    }
}

/// `hash [-r] [-d] [-t] [-l] [-p path] [name ...]`
pub(super) fn hash(sh: &mut Shell, args: &[String]) -> R<i32> {
    let parsed = match flags::parse(args, "rdtlp", "p") {
        Ok(parsed) => parsed,
        Err(bad) => {
            sh.err_line(&format!("hash: {}", bad.message()))?;
            sh.err_line("hash: usage: hash [-lr] [-p pathname] [-dt] [name ...]")?;
            return Ok(2);
        }
    };
    let (mut delete, mut show, mut list) = (false, false, false);
    let mut given_path = None;
    for (c, argument) in parsed.flags {
        match c {
            'r' => sh.forget_hashed(),
            'd' => delete = true,
            't' => show = true,
            'l' => list = true,
            _ => given_path = argument.map(str::to_string),
        }
    }
    let names = parsed.operands;
    if names.is_empty() {
        if delete || show || given_path.is_some() {
            return Ok(0);
        }
        return print_table(sh, list);
    }
    let mut status = 0;
    for name in names {
        if let Some(p) = &given_path {
            sh.remember(name, p, 0);
        } else if delete {
            if sh.st.hashed.remove(name).is_none() {
                sh.err_line(&format!("hash: {name}: not found"))?;
                status = 1;
            }
        } else if show {
            match sh.st.hashed.get(name).map(|h| h.path.clone()) {
                Some(p) if names.len() > 1 => sh.out(&format!("{name}\t{p}\n"))?,
                Some(p) => sh.out(&format!("{p}\n"))?,
                None => {
                    sh.err_line(&format!("hash: {name}: not found"))?;
                    status = 1;
                }
            }
        } else if !name.contains('/') && !is_builtin(name) {
            match sh.search_path(name, None, false).pop() {
                Some(f) if !matches!(f, Found::NotExecutable(_)) => sh.remember(name, f.path(), 0),
                _ => {
                    sh.err_line(&format!("hash: {name}: not found"))?;
                    status = 1;
                }
            }
        }
    }
    Ok(status)
}

fn print_table(sh: &mut Shell, reusable: bool) -> R<i32> {
    if sh.st.hashed.is_empty() {
        sh.err_line("hash: hash table empty")?;
        return Ok(0);
    }
    let table: BTreeMap<String, Hashed> = sh.st.hashed.clone();
    let mut text = String::new();
    if !reusable {
        text.push_str("hits\tcommand\n");
    }
    for (name, h) in &table {
        if reusable {
            text.push_str(&format!("builtin hash -p {} {name}\n", h.path));
        } else {
            text.push_str(&format!("{:>4}\t{}\n", h.hits, h.path));
        }
    }
    sh.out(&text)?;
    Ok(0)
}

/// `type [-afptP] name...`
pub(super) fn type_builtin(sh: &mut Shell, args: &[String]) -> R<i32> {
    let parsed = match flags::parse(args, "aftpP", "") {
        Ok(parsed) => parsed,
        Err(bad) => {
            sh.err_line(&format!("type: {}", bad.message()))?;
            sh.err_line("type: usage: type [-afptP] name [name ...]")?;
            return Ok(2);
        }
    };
    let (mut all, mut functions, mut kind_only, mut path, mut force_path) =
        (false, true, false, false, false);
    for (c, _) in parsed.flags {
        match c {
            'a' => all = true,
            'f' => functions = false,
            't' => kind_only = true,
            'p' => path = true,
            _ => force_path = true,
        }
    }
    let mut status = 0;
    for name in parsed.operands {
        let kinds = sh.kinds(name, all, functions, force_path);
        if kinds.is_empty() {
            status = 1;
            if !kind_only && !path && !force_path {
                sh.err_line(&format!("type: {name}: not found"))?;
            }
            continue;
        }
        let mut text = String::new();
        for kind in &kinds {
            if kind_only {
                text.push_str(kind.word());
                text.push('\n');
                if !all {
                    break;
                }
                continue;
            }
            if path || force_path {
                // Only files are reported; with -p the first match decides.
                match kind {
                    Kind::File(p, _) => text.push_str(&format!("{p}\n")),
                    _ if !all && !force_path => break,
                    _ => {}
                }
                continue;
            }
            text.push_str(&describe(sh, name, kind));
        }
        sh.out(&text)?;
    }
    Ok(status)
}

/// `type`'s sentence about one way `name` runs.
fn describe(sh: &Shell, name: &str, kind: &Kind) -> String {
    match kind {
        Kind::Alias(a) => format!("{name} is aliased to `{a}'\n"),
        Kind::Keyword => format!("{name} is a shell keyword\n"),
        Kind::Function => {
            let body = sh
                .st
                .funcs
                .get(name)
                .map(|f| super::print::function(f))
                .unwrap_or_default();
            format!("{name} is a function\n{body}")
        }
        Kind::Builtin => format!("{name} is a shell builtin\n"),
        Kind::File(p, true) => format!("{name} is hashed ({p})\n"),
        Kind::File(p, false) => format!("{name} is {p}\n"),
    }
}

/// `command [-pVv] name [arg ...]`: runs a builtin or program (never a
/// function), or describes names.
pub(super) fn command(sh: &mut Shell, args: &[String]) -> R<i32> {
    let mut i = 1;
    let mut verbose = None;
    let mut default_path = false;
    while let Some(a) = args.get(i) {
        if a == "--" {
            i += 1;
            break;
        }
        if !a.starts_with('-') || a.len() < 2 {
            break;
        }
        for c in a[1..].chars() {
            match c {
                'v' => verbose = Some(false),
                'V' => verbose = Some(true),
                'p' => default_path = true,
                _ => {
                    sh.err_line(&format!("command: -{c}: invalid option"))?;
                    sh.err_line("command: usage: command [-pVv] command [arg ...]")?;
                    return Ok(2);
                }
            }
        }
        i += 1;
    }
    let names = &args[i..];
    if names.is_empty() {
        return Ok(0);
    }
    if let Some(long) = verbose {
        let mut any = false;
        for name in names {
            let Some(kind) = sh.kinds(name, false, true, false).into_iter().next() else {
                if long {
                    sh.err_line(&format!("command: {name}: not found"))?;
                }
                continue;
            };
            any = true;
            let line = match (&kind, long) {
                (_, true) => describe(sh, name, &kind),
                (Kind::Alias(a), false) => {
                    format!("alias {name}='{}'\n", a.replace('\'', "'\\''"))
                }
                (Kind::File(p, _), false) => format!("{p}\n"),
                (_, false) => format!("{name}\n"),
            };
            sh.out(&line)?;
        }
        return Ok(if any { 0 } else { 1 });
    }
    let argv = names.to_vec();
    if let Some(b) = lookup_builtin(&argv[0]) {
        return b(sh, &argv);
    }
    if default_path && !argv[0].contains('/') {
        return match sh.search_path(&argv[0], Some(DEFAULT_PATH), false).pop() {
            Some(found) => sh.run_found(found, &argv),
            None => sh.not_found(&argv[0]),
        };
    }
    sh.run_external(&argv)
}
