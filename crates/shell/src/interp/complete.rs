//! Programmable completion builtins: `complete`, `compgen`, `compopt`.
//!
//! There is no interactive line editor, so completion specs are only
//! stored and printed (`complete -p`), but `compgen` generates matches as
//! bash does, which scripts (and bash-completion code) use directly: word
//! lists (expanded, then split on `IFS`), the named actions, `-F` functions
//! (`COMPREPLY`), `-X` filters, `-P`/`-S` affixes and `-o plusdirs` /
//! `dirnames` / `default`. Matches come out in bash's order: each action in
//! bash's fixed order (names sorted within one), then files and
//! directories, then the word list, then `plusdirs`.

use stead_vfs::Kind;

use super::ast::Word;
use super::options::{set_option_names, shopt_names};
use super::{builtin_names, parse, pattern, Shell, R};
use crate::utils;

/// What `complete NAME` stored: its options as given, for `complete -p`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Spec {
    pub name: String,
    pub options: Vec<(String, Option<String>)>,
}

/// Actions in the order bash generates them.
const ACTIONS: &[&str] = &[
    "alias",
    "arrayvar",
    "binding",
    "builtin",
    "command",
    "disabled",
    "enabled",
    "export",
    "function",
    "group",
    "helptopic",
    "hostname",
    "job",
    "keyword",
    "running",
    "service",
    "setopt",
    "shopt",
    "signal",
    "stopped",
    "user",
    "variable",
    "directory",
    "file",
];

/// Reserved words, in the order `compgen -k` lists them.
const KEYWORDS: &[&str] = &[
    "if", "then", "else", "elif", "fi", "case", "esac", "for", "select", "while", "until", "do",
    "done", "in", "function", "time", "{", "}", "!", "[[", "]]", "coproc",
];

const COMPOPT_OPTIONS: &[&str] = &[
    "bashdefault",
    "default",
    "dirnames",
    "filenames",
    "noquote",
    "nosort",
    "nospace",
    "plusdirs",
];

/// Parsed `compgen`/`complete` options.
#[derive(Default)]
struct Options {
    actions: Vec<&'static str>,
    words: Option<String>,
    function: Option<String>,
    command: Option<String>,
    filter: Option<String>,
    prefix: String,
    suffix: String,
    glob: Option<String>,
    opts: Vec<String>,
    print: bool,
    remove: bool,
    default_spec: bool,
    /// Every option as given, for `complete -p`.
    given: Vec<(String, Option<String>)>,
    operands: Vec<String>,
}

fn action_for_flag(c: char) -> Option<&'static str> {
    Some(match c {
        'a' => "alias",
        'b' => "builtin",
        'c' => "command",
        'd' => "directory",
        'e' => "export",
        'f' => "file",
        'g' => "group",
        'j' => "job",
        'k' => "keyword",
        's' => "service",
        'u' => "user",
        'v' => "variable",
        _ => return None,
    })
}

/// Parses options; `Err` is the usage message (status 2).
fn parse_options(args: &[String], name: &str) -> Result<Options, String> {
    let mut o = Options::default();
    let mut i = 1;
    while i < args.len() {
        let a = &args[i];
        if a == "--" {
            o.operands.extend_from_slice(&args[i + 1..]);
            break;
        }
        if !(a.starts_with('-') || (a.starts_with('+') && name == "compopt")) || a.len() < 2 {
            o.operands.push(a.clone());
            i += 1;
            continue;
        }
        let chars: Vec<char> = a[1..].chars().collect();
        let mut k = 0;
        while k < chars.len() {
            let c = chars[k];
            k += 1;
            let takes_value = matches!(c, 'A' | 'W' | 'F' | 'C' | 'X' | 'P' | 'S' | 'G' | 'o');
            let value = if takes_value {
                let rest: String = chars[k..].iter().collect();
                k = chars.len();
                if rest.is_empty() {
                    i += 1;
                    match args.get(i) {
                        Some(v) => Some(v.clone()),
                        None => return Err(format!("-{c}: option requires an argument")),
                    }
                } else {
                    Some(rest)
                }
            } else {
                None
            };
            match c {
                'A' => {
                    let v = value.clone().unwrap_or_default();
                    match ACTIONS.iter().find(|x| **x == v) {
                        Some(x) => o.actions.push(x),
                        None => return Err(format!("{v}: invalid action name")),
                    }
                }
                'W' => o.words = value.clone(),
                'F' => o.function = value.clone(),
                'C' => o.command = value.clone(),
                'X' => o.filter = value.clone(),
                'P' => o.prefix = value.clone().unwrap_or_default(),
                'S' => o.suffix = value.clone().unwrap_or_default(),
                'G' => o.glob = value.clone(),
                'o' => {
                    let v = value.clone().unwrap_or_default();
                    if !COMPOPT_OPTIONS.contains(&v.as_str()) {
                        return Err(format!("{v}: invalid option name"));
                    }
                    o.opts.push(v);
                }
                'p' => o.print = true,
                'r' => o.remove = true,
                'D' | 'E' | 'I' => o.default_spec = true,
                c => match action_for_flag(c) {
                    Some(x) => o.actions.push(x),
                    None => return Err(format!("-{c}: invalid option")),
                },
            }
            if !matches!(c, 'p' | 'r') {
                o.given.push((format!("-{c}"), value));
            }
        }
        i += 1;
    }
    Ok(o)
}

/// `complete [-abcdefgjksuv] [-pr] [-DEI] [-o option] [-A action] [-G pat]
/// [-W words] [-F func] [-C cmd] [-X filter] [-P prefix] [-S suffix] [name ...]`
pub(super) fn complete(sh: &mut Shell, args: &[String]) -> R<i32> {
    let o = match parse_options(args, "complete") {
        Ok(o) => o,
        Err(m) => {
            sh.err_line(&format!("complete: {m}"))?;
            return Ok(2);
        }
    };
    if o.remove {
        if o.operands.is_empty() {
            sh.st.completions.clear();
        } else {
            sh.st.completions.retain(|s| !o.operands.contains(&s.name));
        }
        return Ok(0);
    }
    if o.print || (o.given.is_empty() && o.operands.is_empty()) {
        let mut text = String::new();
        let mut status = 0;
        let specs: Vec<Spec> = if o.operands.is_empty() {
            sh.st.completions.clone()
        } else {
            let mut v = Vec::new();
            for n in &o.operands {
                match sh.st.completions.iter().find(|s| s.name == *n) {
                    Some(s) => v.push(s.clone()),
                    None => {
                        sh.err_line(&format!("complete: {n}: no completion specification"))?;
                        status = 1;
                    }
                }
            }
            v
        };
        for spec in specs {
            text.push_str("complete");
            for (flag, value) in &spec.options {
                text.push(' ');
                text.push_str(flag);
                if let Some(v) = value {
                    text.push(' ');
                    let plain = !v.is_empty()
                        && v.chars()
                            .all(|c| c.is_ascii_alphanumeric() || "_-./:=@%+,".contains(c));
                    if plain {
                        text.push_str(v);
                    } else {
                        text.push_str(&super::printf::single_quote(v));
                    }
                }
            }
            text.push(' ');
            text.push_str(&spec.name);
            text.push('\n');
        }
        sh.out(&text)?;
        return Ok(status);
    }
    if o.operands.is_empty() && !o.default_spec {
        sh.err_line("complete: usage: complete [-abcdefgjksuv] [-pr] [-DEI] [-o option] [-A action] [-G globpat] [-W wordlist] [-F function] [-C command] [-X filterpat] [-P prefix] [-S suffix] [name ...]")?;
        return Ok(2);
    }
    for name in o.operands {
        sh.st.completions.retain(|s| s.name != name);
        sh.st.completions.push(Spec {
            name,
            options: o.given.clone(),
        });
    }
    Ok(0)
}

/// `compopt [-o|+o option] [-DEI] [name ...]`: changes the options of the
/// completion running now, so outside a completion function it fails.
pub(super) fn compopt(sh: &mut Shell, args: &[String]) -> R<i32> {
    if let Err(m) = parse_options(args, "compopt") {
        sh.err_line(&format!("compopt: {m}"))?;
        return Ok(2);
    }
    sh.err_line("compopt: not currently executing completion function")?;
    Ok(1)
}

/// `compgen [option] [word]`: prints the matches for `word`; status 1 when
/// there are none, or when generating them failed (an expansion error in
/// `-W` or the `-F` function).
pub(super) fn compgen(sh: &mut Shell, args: &[String]) -> R<i32> {
    match generate(sh, args) {
        Err(super::Flow::Error(_)) => Ok(1),
        other => other,
    }
}

fn generate(sh: &mut Shell, args: &[String]) -> R<i32> {
    let o = match parse_options(args, "compgen") {
        Ok(o) => o,
        Err(m) => {
            sh.err_line(&format!("compgen: {m}"))?;
            return Ok(2);
        }
    };
    let word = o.operands.first().cloned().unwrap_or_default();
    let mut matches = Vec::new();
    let mut actions = o.actions.clone();
    if o.opts.iter().any(|x| x == "default" || x == "bashdefault") {
        actions.push("file");
    }
    for action in ACTIONS {
        if actions.contains(action) {
            matches.extend(action_matches(sh, action, &word)?);
        }
    }
    if let Some(g) = &o.glob {
        matches.extend(sh.glob(g)?);
    }
    if let Some(words) = &o.words {
        let expanded = expand_word_list(sh, words)?;
        matches.extend(expanded.into_iter().filter(|w| w.starts_with(&word)));
    }
    if let Some(func) = &o.function {
        matches.extend(call_completion_function(sh, func, &word)?);
    }
    if let Some(cmd) = &o.command {
        let argv = vec![
            cmd.clone(),
            "compgen".to_string(),
            word.clone(),
            String::new(),
        ];
        let (out, _) = sh.capture(&argv)?;
        matches.extend(out.lines().map(str::to_string));
    }
    if let Some(filter) = &o.filter {
        let (negate, pat) = match filter.strip_prefix('!') {
            Some(p) => (true, p),
            None => (false, filter.as_str()),
        };
        let (ext, units) = (sh.st.opts.extglob, sh.units());
        let mut steps = sh.steps();
        let mut kept = Vec::with_capacity(matches.len());
        for m in matches {
            if pattern::matches(pat, &m, (ext, false, units), &mut steps)? == negate {
                kept.push(m);
            }
        }
        matches = kept;
    }
    if o.opts.iter().any(|x| x == "plusdirs")
        || (matches.is_empty() && o.opts.iter().any(|x| x == "dirnames"))
    {
        matches.extend(action_matches(sh, "directory", &word)?);
    }
    if matches.is_empty() {
        return Ok(1);
    }
    let mut text = String::new();
    for m in matches {
        text.push_str(&o.prefix);
        text.push_str(&m);
        text.push_str(&o.suffix);
        text.push('\n');
    }
    sh.out(&text)?;
    Ok(0)
}

/// `-W` words: expanded like a double-quoted word, then split on `IFS`.
fn expand_word_list(sh: &mut Shell, words: &str) -> R<Vec<String>> {
    let parts = parse::Parser::new(words)
        .dq_parts(None)
        .map_err(|m| sh.fatal(&format!("compgen: {m}")))?;
    let text = sh.expand_single(&Word(parts))?;
    // Split at IFS characters, a backslash quoting the next one (and
    // removed, as quote removal does: `a\:b` is one word `a:b`).
    let ifs = sh.ifs();
    let mut words = Vec::new();
    let mut word = String::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => word.extend(chars.next()),
            c if ifs.contains(c) => {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
            }
            c => word.push(c),
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    Ok(words)
}

/// Runs a `-F` function as `compgen` calls it, and returns `COMPREPLY`.
fn call_completion_function(sh: &mut Shell, func: &str, word: &str) -> R<Vec<String>> {
    let Some(f) = sh.st.funcs.get(func).cloned() else {
        sh.err_line(&format!("compgen: {func}: function not found"))?;
        return Ok(Vec::new());
    };
    sh.st.vars.remove("COMPREPLY");
    sh.assign_array_values("COMP_WORDS", Vec::new())?;
    sh.set_scalar("COMP_CWORD", "-1".into())?;
    sh.set_scalar("COMP_LINE", String::new())?;
    sh.set_scalar("COMP_POINT", "0".into())?;
    let argv = vec![
        func.to_string(),
        "compgen".to_string(),
        word.to_string(),
        String::new(),
    ];
    sh.call_function(&f, &argv)?;
    Ok(sh.get_all("COMPREPLY").unwrap_or_default())
}

/// The matches of one action for `word`.
fn action_matches(sh: &mut Shell, action: &str, word: &str) -> R<Vec<String>> {
    let mut names: Vec<String> = match action {
        "alias" => sh.st.aliases.keys().cloned().collect(),
        "arrayvar" => sh
            .st
            .vars
            .iter()
            .filter(|(_, v)| matches!(v.value, super::Value::Indexed(_) | super::Value::Assoc(_)))
            .map(|(k, _)| k.clone())
            .collect(),
        "builtin" | "enabled" | "helptopic" => builtin_names(),
        "command" => {
            let mut v: Vec<String> = sh.st.aliases.keys().cloned().collect();
            v.extend(builtin_names());
            v.extend(sh.st.funcs.keys().cloned());
            v.extend(KEYWORDS.iter().map(|s| s.to_string()));
            v.extend(utils::names().iter().map(|s| s.to_string()));
            v
        }
        "export" => sh
            .st
            .vars
            .iter()
            .filter(|(_, v)| v.attrs & super::vars::EXPORT != 0 && v.value != super::Value::Unset)
            .map(|(k, _)| k.clone())
            .collect(),
        "function" => sh.st.funcs.keys().cloned().collect(),
        "group" => vec!["agent".into(), "root".into()],
        "user" => vec!["agent".into(), "root".into()],
        "hostname" => vec!["localhost".into()],
        "job" | "running" => sh.job_texts(),
        "keyword" => KEYWORDS.iter().map(|s| s.to_string()).collect(),
        "setopt" => set_option_names().iter().map(|s| s.to_string()).collect(),
        "shopt" => shopt_names().iter().map(|s| s.to_string()).collect(),
        "signal" => (1..=64)
            .filter_map(super::traps::signal_name)
            .map(|n| format!("SIG{n}"))
            .collect(),
        "variable" => sh
            .st
            .vars
            .iter()
            .filter(|(_, v)| v.value != super::Value::Unset)
            .map(|(k, _)| k.clone())
            .collect(),
        "directory" | "file" => return Ok(path_matches(sh, word, action == "directory")),
        _ => Vec::new(),
    };
    names.retain(|n| n.starts_with(word));
    if action != "keyword" {
        names.sort();
        names.dedup();
    }
    Ok(names)
}

/// Paths starting with `word`: in its directory, names with its last
/// component as a prefix (hidden ones only when asked for).
fn path_matches(sh: &mut Shell, word: &str, dirs_only: bool) -> Vec<String> {
    let (dir_text, prefix) = match word.rfind('/') {
        Some(i) => (&word[..=i], &word[i + 1..]),
        None => ("", word),
    };
    let dir = if dir_text.is_empty() {
        Ok(sh.st.cwd.clone())
    } else {
        stead_vfs::VPath::parse_from(dir_text, &sh.st.cwd)
    };
    let Ok(dir) = dir else {
        return Vec::new();
    };
    let Ok(entries) = sh.fs.list(&dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in entries {
        if !e.name.starts_with(prefix) || (e.name.starts_with('.') && !prefix.starts_with('.')) {
            continue;
        }
        let is_dir = match e.node.kind {
            Kind::Dir => true,
            Kind::Symlink => sh
                .fs
                .stat(&dir.join(&e.name), true)
                .is_ok_and(|n| n.kind == Kind::Dir),
            Kind::File => false,
        };
        if dirs_only && !is_dir {
            continue;
        }
        out.push(format!("{dir_text}{}", e.name));
    }
    out
}
