//! `git` as a command: the subcommands agents use every day, with git's
//! output, messages and exit statuses, over a [`Files`].
//!
//! [`check`] tells, without running anything, whether a command line is
//! one this implements (subcommand and every option); the light shell's
//! `auto` routing sends the others to the computer's real git. [`run`]
//! refuses the same lines the same way, so a forced light-shell run never
//! gives a wrong answer.

mod args;
mod format;
mod ops;

use std::collections::BTreeMap;

pub use args::Refusal;
use args::{flag, optional, parse, unsupported, value, Parsed, Spec, Style};

use crate::files::Files;
use crate::refs::valid_name;
use format::Format;

/// The author and committer when nothing else names one (the computer's
/// git has the same in its global configuration).
pub const DEFAULT_NAME: &str = "stead agent";
pub const DEFAULT_EMAIL: &str = "agent@stead.invalid";

/// One run of `git`.
pub struct Invocation<'a> {
    /// The arguments after `git`.
    pub args: &'a [String],
    /// The absolute current directory.
    pub cwd: &'a str,
    /// The environment (identity: `GIT_AUTHOR_NAME` and friends).
    pub env: &'a BTreeMap<String, String>,
    /// Now, in milliseconds since the Unix epoch.
    pub now_ms: i64,
    /// How `clone`, `fetch`, `pull` and `push` reach a remote; without it
    /// they fail saying there is no network.
    pub net: Option<&'a dyn crate::transport::Http>,
}

/// What a run printed and its exit status.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub status: i32,
}

/// A subcommand with its parsed command line.
pub(crate) struct Command {
    pub(crate) name: &'static str,
    pub(crate) args: Parsed,
    /// `-C DIR` given before the subcommand.
    pub(crate) dirs: Vec<String>,
    /// The arguments after the subcommand, as given (for reflog messages:
    /// `fetch origin main: storing head`).
    pub(crate) given: Vec<String>,
}

/// Each subcommand this implements and the options it takes.
const SUBCOMMANDS: &[(&str, &[Spec], Style)] = &[
    (
        "init",
        &[flag(Some('q'), "quiet"), value(Some('b'), "initial-branch")],
        Style::Mixed,
    ),
    (
        "status",
        &[
            flag(Some('s'), "short"),
            optional(None, "porcelain"),
            flag(Some('b'), "branch"),
            optional(Some('u'), "untracked-files"),
            flag(None, "long"),
        ],
        Style::Mixed,
    ),
    (
        "add",
        &[
            flag(Some('A'), "all"),
            flag(Some('u'), "update"),
            flag(Some('f'), "force"),
            flag(Some('v'), "verbose"),
            flag(Some('n'), "dry-run"),
        ],
        Style::Mixed,
    ),
    (
        "rm",
        &[
            flag(None, "cached"),
            flag(Some('r'), ""),
            flag(Some('f'), "force"),
            flag(Some('q'), "quiet"),
        ],
        Style::Mixed,
    ),
    ("mv", &[flag(Some('f'), "force")], Style::Mixed),
    (
        "commit",
        &[
            value(Some('m'), "message"),
            flag(Some('a'), "all"),
            flag(None, "amend"),
            flag(Some('q'), "quiet"),
            flag(None, "allow-empty"),
            flag(None, "no-edit"),
            value(Some('F'), "file"),
        ],
        Style::Mixed,
    ),
    (
        "log",
        &[
            flag(None, "oneline"),
            value(Some('n'), "max-count"),
            value(None, "format"),
            value(None, "pretty"),
        ],
        Style::Counts,
    ),
    ("show", &[flag(None, "oneline")], Style::Mixed),
    (
        "diff",
        &[
            flag(None, "cached"),
            flag(None, "staged"),
            flag(None, "name-only"),
            flag(None, "name-status"),
            flag(None, "quiet"),
            flag(None, "exit-code"),
        ],
        Style::Mixed,
    ),
    (
        "branch",
        &[
            flag(Some('d'), "delete"),
            flag(Some('D'), ""),
            flag(Some('m'), "move"),
            flag(Some('l'), "list"),
            flag(None, "show-current"),
            flag(Some('f'), "force"),
        ],
        Style::Mixed,
    ),
    (
        "switch",
        &[
            value(Some('c'), "create"),
            flag(None, "detach"),
            flag(Some('q'), "quiet"),
        ],
        Style::Mixed,
    ),
    (
        "checkout",
        &[
            value(Some('b'), ""),
            flag(None, "detach"),
            flag(Some('q'), "quiet"),
        ],
        Style::Mixed,
    ),
    (
        "reset",
        &[
            flag(None, "soft"),
            flag(None, "mixed"),
            flag(None, "hard"),
            flag(Some('q'), "quiet"),
        ],
        Style::Mixed,
    ),
    (
        "tag",
        &[
            flag(Some('a'), "annotate"),
            value(Some('m'), "message"),
            flag(Some('d'), "delete"),
            flag(Some('l'), "list"),
        ],
        Style::Mixed,
    ),
    ("remote", &[flag(Some('v'), "verbose")], Style::Mixed),
    (
        "stash",
        &[value(Some('m'), "message"), flag(Some('q'), "quiet")],
        Style::Mixed,
    ),
    (
        "rev-parse",
        &[
            optional(None, "short"),
            flag(None, "abbrev-ref"),
            flag(None, "show-toplevel"),
            flag(None, "git-dir"),
            flag(None, "is-inside-work-tree"),
            flag(None, "verify"),
            flag(Some('q'), "quiet"),
            flag(None, "show-prefix"),
        ],
        Style::Mixed,
    ),
    (
        "ls-files",
        &[flag(Some('s'), "stage"), flag(Some('c'), "cached")],
        Style::Mixed,
    ),
    (
        "clone",
        &[
            flag(Some('q'), "quiet"),
            value(Some('b'), "branch"),
            value(None, "depth"),
            flag(None, "single-branch"),
            flag(Some('n'), "no-checkout"),
        ],
        Style::Mixed,
    ),
    (
        "fetch",
        &[
            flag(Some('q'), "quiet"),
            flag(Some('t'), "tags"),
            flag(None, "no-tags"),
        ],
        Style::Mixed,
    ),
    (
        "pull",
        &[
            flag(Some('q'), "quiet"),
            flag(None, "ff-only"),
            flag(Some('r'), "rebase"),
            flag(None, "no-rebase"),
        ],
        Style::Mixed,
    ),
    (
        "merge",
        &[
            flag(Some('q'), "quiet"),
            flag(None, "no-ff"),
            flag(None, "ff-only"),
            flag(None, "no-edit"),
            flag(None, "abort"),
            value(Some('m'), "message"),
        ],
        Style::Mixed,
    ),
    (
        "push",
        &[
            flag(Some('q'), "quiet"),
            flag(Some('u'), "set-upstream"),
            flag(Some('f'), "force"),
            flag(Some('d'), "delete"),
            flag(None, "tags"),
            optional(None, "force-with-lease"),
        ],
        Style::Mixed,
    ),
    (
        "config",
        &[
            flag(None, "get"),
            flag(None, "get-all"),
            flag(None, "unset"),
            flag(Some('l'), "list"),
            flag(None, "local"),
            flag(None, "add"),
        ],
        Style::OptionsFirst,
    ),
];

/// Parses a whole `git` command line (the arguments after `git`).
pub(crate) fn parse_command(args: &[String]) -> Result<Command, Refusal> {
    let mut i = 0;
    let mut dirs = Vec::new();
    // Global options before the subcommand.
    while let Some(arg) = args.get(i) {
        match arg.as_str() {
            "-C" => {
                let dir = args.get(i + 1).ok_or_else(|| Refusal {
                    message: "error: no directory given for -C".to_string(),
                    status: 129,
                })?;
                dirs.push(dir.clone());
                i += 2;
            }
            "--no-pager" | "-P" => i += 1,
            other if other.starts_with('-') => return Err(unsupported(&format!("git {other}"))),
            _ => break,
        }
    }
    let Some(name) = args.get(i) else {
        return Err(unsupported("git without a subcommand"));
    };
    let Some((name, spec, style)) = SUBCOMMANDS.iter().find(|(n, _, _)| n == name) else {
        return Err(unsupported(&format!("git {name}")));
    };
    let parsed = parse(name, &args[i + 1..], spec, *style)?;
    // Subcommand words this does not implement.
    let first = parsed.operands.first().map(String::as_str);
    // Pathspec magic and globs (`'*.rs'`, `:/x`) are git's, not here.
    let magic = parsed
        .operands
        .iter()
        .any(|o| o.starts_with(':') || o.contains(['*', '?', '[']));
    let refused = match *name {
        "remote" => !matches!(
            first,
            None | Some("add" | "remove" | "rm" | "get-url" | "set-url")
        ),
        "config" => match first {
            None => !parsed.has("list"),
            Some(key) => !key.contains('.'),
        },
        // An editor would open: there is none here.
        "commit" => {
            !parsed.operands.is_empty()
                || !(parsed.has("message") || parsed.has("file") || parsed.has("no-edit"))
        }
        "tag" => parsed.has("annotate") && !parsed.has("message"),
        "status" => !parsed.operands.is_empty(),
        "stash" => match parsed.operands.as_slice() {
            [] => false,
            [sub] => !matches!(sub.as_str(), "push" | "list" | "pop" | "apply" | "drop"),
            [sub, entry] => {
                !matches!(sub.as_str(), "pop" | "apply" | "drop")
                    || ops::stash_index(entry).is_none()
            }
            _ => true,
        },
        "log" => {
            magic
                || parsed
                    .value("format")
                    .map(|f| format!("tformat:{f}"))
                    .or(parsed.value("pretty").map(str::to_string))
                    .is_some_and(|f| Format::parse(&f).is_none())
        }
        "switch" | "checkout" => first == Some("-"),
        // Smart HTTP only: ssh, git:// and local paths are the computer's.
        "clone" => {
            !first.is_some_and(|url| url.starts_with("http://") || url.starts_with("https://"))
        }
        // A named remote or an http(s) URL; fetch and pull take
        // `[+]src[:dst]` refspecs (a `*` on both sides or neither).
        "fetch" | "pull" => {
            !first.is_none_or(|r| ops::is_remote_name(r) || ops::is_url(r))
                || !parsed.operands.iter().skip(1).all(|s| fetch_refspec(s))
        }
        // `[+]src[:dst]` and `:dst` (a deletion); not `src:` or globs.
        "push" => {
            !first.is_none_or(|r| ops::is_remote_name(r) || ops::is_url(r))
                || parsed.operands.iter().skip(1).any(|spec| {
                    let spec = spec.strip_prefix('+').unwrap_or(spec);
                    let (src, dst) = spec.split_once(':').unwrap_or((spec, spec));
                    let bad = |side: &str| !valid_name(side.trim_start_matches("refs/heads/"));
                    dst.contains(':') || bad(dst) || (!src.is_empty() && bad(src))
                })
        }
        // `--abort` alone; one commit (an octopus is the computer's).
        "merge" => {
            parsed.operands.len() > 1
                || (parsed.has("abort") && parsed.operands.len() + parsed.opts.len() > 1)
        }
        "add" | "rm" | "ls-files" | "diff" | "reset" | "mv" => magic,
        _ => false,
    };
    if refused {
        return Err(unsupported(&format!("git {name} {}", first.unwrap_or(""))));
    }
    Ok(Command {
        name,
        args: parsed,
        dirs,
        given: args[i + 1..].to_vec(),
    })
}

/// Whether `spec` is a fetch refspec the light shell reads as git does:
/// `[+]SRC[:DST]`, each side a ref name, a `*` in both or neither.
fn fetch_refspec(spec: &str) -> bool {
    let spec = spec.strip_prefix('+').unwrap_or(spec);
    let (src, dst) = spec.split_once(':').unwrap_or((spec, ""));
    let side = |s: &str| valid_name(&s.replacen('*', "x", 1));
    let stars = |s: &str| s.matches('*').count();
    side(src)
        && (dst.is_empty() || side(dst))
        && stars(src) <= 1
        && (dst.is_empty() || stars(src) == stars(dst))
}

/// `Ok` when the light shell's git implements this command line; the
/// refusal (what `run` would print) otherwise.
pub fn check(args: &[String]) -> Result<(), Refusal> {
    parse_command(args).map(drop)
}

/// Runs `git` with `invocation.args` over `files`.
pub fn run(files: &dyn Files, invocation: &Invocation<'_>) -> Outcome {
    let command = match parse_command(invocation.args) {
        Ok(command) => command,
        Err(refusal) => {
            return Outcome {
                stdout: Vec::new(),
                stderr: format!("{}\n", refusal.message).into_bytes(),
                status: refusal.status,
            }
        }
    };
    let mut run = ops::Run::new(files, invocation, &command);
    let status = match run.dispatch(&command) {
        Ok(status) => status,
        Err(error) => {
            if let crate::Error::Remote { said, .. } = &error {
                run.err(said);
            }
            run.err(&format!("fatal: {error}\n"));
            128
        }
    };
    Outcome {
        stdout: run.out,
        stderr: run.errout,
        status,
    }
}
