//! Shell options: `set` (flags and `-o` names), `shopt`, `$-`,
//! `$SHELLOPTS` and `$BASHOPTS`, with bash's names, defaults and output
//! formats.
//!
//! Every option bash has can be set, unset, queried and listed. The ones
//! the light shell acts on are fields of [`Opts`]; the others (interactive
//! and history options, `braceexpand`, ...) are remembered so that scripts
//! which save and restore options see what they set.

use std::collections::BTreeSet;

use super::{Opts, Shell, R};

/// `set -o` names and their single-letter flags, in bash's listing order.
const SET_OPTIONS: &[(&str, Option<char>)] = &[
    ("allexport", Some('a')),
    ("braceexpand", Some('B')),
    ("emacs", None),
    ("errexit", Some('e')),
    ("errtrace", Some('E')),
    ("functrace", Some('T')),
    ("hashall", Some('h')),
    ("histexpand", Some('H')),
    ("history", None),
    ("ignoreeof", None),
    ("interactive-comments", None),
    ("keyword", Some('k')),
    ("monitor", Some('m')),
    ("noclobber", Some('C')),
    ("noexec", Some('n')),
    ("noglob", Some('f')),
    ("nolog", None),
    ("notify", Some('b')),
    ("nounset", Some('u')),
    ("onecmd", Some('t')),
    ("physical", Some('P')),
    ("pipefail", None),
    ("posix", None),
    ("privileged", Some('p')),
    ("verbose", Some('v')),
    ("vi", None),
    ("xtrace", Some('x')),
];

/// The order of letters in `$-`.
const FLAG_ORDER: &str = "abefhkmnptuvxBCEHPT";

/// `shopt` names, in bash's listing order.
const SHOPT_OPTIONS: &[&str] = &[
    "autocd",
    "assoc_expand_once",
    "cdable_vars",
    "cdspell",
    "checkhash",
    "checkjobs",
    "checkwinsize",
    "cmdhist",
    "compat31",
    "compat32",
    "compat40",
    "compat41",
    "compat42",
    "compat43",
    "compat44",
    "complete_fullquote",
    "direxpand",
    "dirspell",
    "dotglob",
    "execfail",
    "expand_aliases",
    "extdebug",
    "extglob",
    "extquote",
    "failglob",
    "force_fignore",
    "globasciiranges",
    "globskipdots",
    "globstar",
    "gnu_errfmt",
    "histappend",
    "histreedit",
    "histverify",
    "hostcomplete",
    "huponexit",
    "inherit_errexit",
    "interactive_comments",
    "lastpipe",
    "lithist",
    "localvar_inherit",
    "localvar_unset",
    "login_shell",
    "mailwarn",
    "no_empty_cmd_completion",
    "nocaseglob",
    "nocasematch",
    "noexpand_translation",
    "nullglob",
    "patsub_replacement",
    "progcomp",
    "progcomp_alias",
    "promptvars",
    "restricted_shell",
    "shift_verbose",
    "sourcepath",
    "varredir_close",
    "xpg_echo",
];

/// Options the light shell does not act on that bash turns on by default.
const DEFAULT_ON: &[&str] = &[
    "braceexpand",
    "hashall",
    "interactive-comments",
    "checkwinsize",
    "cmdhist",
    "complete_fullquote",
    "extquote",
    "force_fignore",
    "globasciiranges",
    "globskipdots",
    "hostcomplete",
    "interactive_comments",
    "patsub_replacement",
    "progcomp",
    "promptvars",
    "sourcepath",
];

/// The options without a field of their own that are on.
pub(super) fn default_others() -> BTreeSet<&'static str> {
    DEFAULT_ON.iter().copied().collect()
}

/// The field behind an option the light shell acts on.
fn field<'o>(o: &'o mut Opts, name: &str) -> Option<&'o mut bool> {
    Some(match name {
        "allexport" => &mut o.allexport,
        "errexit" => &mut o.errexit,
        "errtrace" => &mut o.errtrace,
        "functrace" => &mut o.functrace,
        "noclobber" => &mut o.noclobber,
        "noexec" => &mut o.noexec,
        "noglob" => &mut o.noglob,
        "nounset" => &mut o.nounset,
        "pipefail" => &mut o.pipefail,
        "posix" => &mut o.posix,
        "verbose" => &mut o.verbose,
        "xtrace" => &mut o.xtrace,
        "dotglob" => &mut o.dotglob,
        "expand_aliases" => &mut o.expand_aliases,
        "extglob" => &mut o.extglob,
        "failglob" => &mut o.failglob,
        "globstar" => &mut o.globstar,
        "lastpipe" => &mut o.lastpipe,
        "nocaseglob" => &mut o.nocaseglob,
        "nocasematch" => &mut o.nocasematch,
        "nullglob" => &mut o.nullglob,
        "inherit_errexit" => &mut o.inherit_errexit,
        "xpg_echo" => &mut o.xpg_echo,
        _ => return None,
    })
}

/// Which table an option name belongs to.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Table {
    Set,
    Shopt,
}

fn known(name: &str, table: Table) -> Option<&'static str> {
    match table {
        Table::Set => SET_OPTIONS.iter().map(|(n, _)| *n).find(|n| *n == name),
        Table::Shopt => SHOPT_OPTIONS.iter().copied().find(|n| *n == name),
    }
}

/// The `set -o` names (for `compgen -A setopt`).
pub(crate) fn set_option_names() -> Vec<&'static str> {
    SET_OPTIONS.iter().map(|(n, _)| *n).collect()
}

/// The `shopt` names (for `compgen -A shopt`).
pub(crate) fn shopt_names() -> Vec<&'static str> {
    SHOPT_OPTIONS.to_vec()
}

impl Opts {
    /// An option's state; `None` if there is no such option.
    pub(crate) fn get(&mut self, name: &str, table: Table) -> Option<bool> {
        let name = known(name, table)?;
        if let Some(f) = field(self, name) {
            return Some(*f);
        }
        Some(self.others.contains(name))
    }

    /// Sets an option; `false` if there is no such option.
    pub(crate) fn set(&mut self, name: &str, table: Table, on: bool) -> bool {
        let Some(name) = known(name, table) else {
            return false;
        };
        if let Some(f) = field(self, name) {
            *f = on;
        } else if on {
            self.others.insert(name);
        } else {
            self.others.remove(name);
        }
        true
    }

    /// Sets a single-letter flag (`set -e`); `false` if unknown.
    pub(crate) fn set_flag(&mut self, c: char, on: bool) -> bool {
        match SET_OPTIONS.iter().find(|(_, f)| *f == Some(c)) {
            Some((name, _)) => self.set(name, Table::Set, on),
            None => false,
        }
    }

    /// `$-`: the single-letter options that are on, in bash's order.
    pub(crate) fn flags(&mut self) -> String {
        let mut out = String::new();
        for c in FLAG_ORDER.chars() {
            let name = SET_OPTIONS
                .iter()
                .find(|(_, f)| *f == Some(c))
                .map(|(n, _)| *n);
            if name.is_some_and(|n| self.get(n, Table::Set) == Some(true)) {
                out.push(c);
            }
        }
        out
    }

    /// `$SHELLOPTS` or `$BASHOPTS`: the names that are on, `:`-separated.
    pub(crate) fn on_list(&mut self, table: Table) -> String {
        let names: Vec<&str> = match table {
            Table::Set => set_option_names(),
            Table::Shopt => shopt_names(),
        };
        names
            .into_iter()
            .filter(|n| self.get(n, table) == Some(true))
            .collect::<Vec<_>>()
            .join(":")
    }
}

/// Lists options as `set -o` / `shopt` do (`name<tab>on`), or as commands
/// that restore them (`set +o name`, `shopt -u name`).
fn listing(sh: &mut Shell, names: &[&str], table: Table, as_commands: bool) -> String {
    let mut text = String::new();
    for name in names {
        let on = sh.st.opts.get(name, table).unwrap_or(false);
        if as_commands {
            let line = match (table, on) {
                (Table::Set, true) => format!("set -o {name}\n"),
                (Table::Set, false) => format!("set +o {name}\n"),
                (Table::Shopt, true) => format!("shopt -s {name}\n"),
                (Table::Shopt, false) => format!("shopt -u {name}\n"),
            };
            text.push_str(&line);
        } else {
            text.push_str(&format!("{name:<15}\t{}\n", if on { "on" } else { "off" }));
        }
    }
    text
}

/// `set -o` / `set +o` with no name: the listing.
pub(super) fn print_set_options(sh: &mut Shell, as_commands: bool) -> R<()> {
    let text = listing(sh, &set_option_names(), Table::Set, as_commands);
    sh.out(&text)
}

/// `shopt [-pqsu] [-o] [optname ...]`
pub(super) fn shopt(sh: &mut Shell, args: &[String]) -> R<i32> {
    let mut mode = None;
    let mut quiet = false;
    let mut print = false;
    let mut table = Table::Shopt;
    let mut names: Vec<String> = Vec::new();
    let mut i = 1;
    while let Some(a) = args.get(i) {
        if a == "--" {
            names.extend_from_slice(&args[i + 1..]);
            break;
        }
        match a.strip_prefix('-').filter(|f| !f.is_empty()) {
            Some(flags) if names.is_empty() => {
                for c in flags.chars() {
                    match c {
                        's' => mode = Some(true),
                        'u' => mode = Some(false),
                        'q' => quiet = true,
                        'p' => print = true,
                        'o' => table = Table::Set,
                        _ => {
                            sh.err_line(&format!("shopt: -{c}: invalid option"))?;
                            sh.err_line("shopt: usage: shopt [-pqsu] [-o] [optname ...]")?;
                            return Ok(2);
                        }
                    }
                }
            }
            _ => names.push(a.clone()),
        }
        i += 1;
    }
    let all: Vec<&str> = match table {
        Table::Set => set_option_names(),
        Table::Shopt => shopt_names(),
    };
    let mut status = 0;
    let mut valid: Vec<&'static str> = Vec::new();
    for n in &names {
        match known(n, table) {
            Some(k) => valid.push(k),
            None => {
                let msg = match table {
                    Table::Shopt => format!("shopt: {n}: invalid shell option name"),
                    Table::Set => format!("shopt: {n}: invalid option name"),
                };
                sh.err_line(&msg)?;
                status = 1;
            }
        }
    }
    if let Some(on) = mode {
        if names.is_empty() {
            // `shopt -s` / `shopt -u`: list the options in that state.
            let chosen: Vec<&str> = all
                .into_iter()
                .filter(|n| sh.st.opts.get(n, table) == Some(on))
                .collect();
            let text = listing(sh, &chosen, table, print);
            sh.out(&text)?;
            return Ok(0);
        }
        for n in valid {
            sh.st.opts.set(n, table, on);
        }
        return Ok(status);
    }
    let shown: Vec<&str> = if names.is_empty() { all } else { valid };
    let any_off = shown.iter().any(|n| sh.st.opts.get(n, table) != Some(true));
    if !quiet {
        let text = listing(sh, &shown, table, print);
        sh.out(&text)?;
    }
    if !names.is_empty() && any_off {
        status = 1;
    }
    Ok(status)
}
