//! git's option parsing (parse-options): long options with `=` or a
//! following value and unique-prefix abbreviations, clustered short ones
//! (`-am msg`), operands mixed with options, `--` ending them. What a
//! subcommand does not accept is refused, so `auto` runs it on the
//! computer's real git instead of guessing.

/// One option a subcommand accepts.
pub(crate) struct Spec {
    pub(crate) short: Option<char>,
    pub(crate) long: &'static str,
    pub(crate) arg: Arg,
}

/// Whether an option takes a value.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Arg {
    No,
    Required,
    /// Only as `--long=value` (or stuck to the short form: `-uall`).
    Optional,
}

pub(crate) const fn flag(short: Option<char>, long: &'static str) -> Spec {
    Spec {
        short,
        long,
        arg: Arg::No,
    }
}

pub(crate) const fn value(short: Option<char>, long: &'static str) -> Spec {
    Spec {
        short,
        long,
        arg: Arg::Required,
    }
}

pub(crate) const fn optional(short: Option<char>, long: &'static str) -> Spec {
    Spec {
        short,
        long,
        arg: Arg::Optional,
    }
}

/// A parsed command line: options by long name, in order, and operands
/// (those after `--` counted from `dashdash`).
#[derive(Debug, Default)]
pub(crate) struct Parsed {
    pub(crate) opts: Vec<(&'static str, Option<String>)>,
    pub(crate) operands: Vec<String>,
    pub(crate) dashdash: Option<usize>,
}

impl Parsed {
    pub(crate) fn has(&self, long: &str) -> bool {
        self.opts.iter().any(|(l, _)| *l == long)
    }
    pub(crate) fn value(&self, long: &str) -> Option<&str> {
        self.opts
            .iter()
            .rev()
            .find(|(l, _)| *l == long)
            .and_then(|(_, v)| v.as_deref())
    }
    pub(crate) fn values(&self, long: &str) -> Vec<&str> {
        self.opts
            .iter()
            .filter(|(l, _)| *l == long)
            .filter_map(|(_, v)| v.as_deref())
            .collect()
    }
    /// Operands before `--` (revisions) and after it (paths).
    pub(crate) fn split(&self) -> (&[String], &[String]) {
        let at = self.dashdash.unwrap_or(self.operands.len());
        (&self.operands[..at], &self.operands[at..])
    }
}

/// Why a command line was not taken: the message and git's status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub message: String,
    pub status: i32,
}

pub(crate) fn unsupported(what: &str) -> Refusal {
    Refusal {
        message: format!(
            "stead: {what} is not in the light shell's git; run it on the computer (backend \"computer\", or \"auto\")"
        ),
        status: 129,
    }
}

/// How a subcommand's line is read beyond its table of options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Style {
    /// Options anywhere among the operands, as most subcommands take them.
    Mixed,
    /// As [`Style::Mixed`], and `-5` is `--max-count=5` (log's form).
    Counts,
    /// Options end at the first operand, and what follows is operands
    /// whatever it looks like: git reads `config` so
    /// (`PARSE_OPT_STOP_AT_NON_OPTION`), and `git config KEY --no-tags`
    /// sets the value `--no-tags`.
    OptionsFirst,
}

/// Parses `args` against `spec` (`sub` names the subcommand in messages)
/// in `style`.
pub(crate) fn parse(
    sub: &str,
    args: &[String],
    spec: &[Spec],
    style: Style,
) -> Result<Parsed, Refusal> {
    let mut parsed = Parsed::default();
    let mut i = 0;
    let refuse = |opt: &str| unsupported(&format!("git {sub} {opt}"));
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        let options_over = style == Style::OptionsFirst && !parsed.operands.is_empty();
        if options_over || parsed.dashdash.is_some() || arg == "-" || !arg.starts_with('-') {
            parsed.operands.push(arg.clone());
            continue;
        }
        if arg == "--" {
            parsed.dashdash = Some(parsed.operands.len());
            continue;
        }
        if let Some(long) = arg.strip_prefix("--") {
            let (name, inline) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (long, None),
            };
            let exact = spec.iter().find(|s| s.long == name);
            let matches: Vec<&Spec> = spec
                .iter()
                .filter(|s| !s.long.is_empty() && s.long.starts_with(name))
                .collect();
            let found = match (exact, matches.as_slice()) {
                (Some(s), _) => s,
                (None, [one]) => *one,
                _ => return Err(refuse(arg)),
            };
            let value = match found.arg {
                Arg::No if inline.is_some() => return Err(refuse(arg)),
                Arg::No => None,
                Arg::Optional => inline,
                Arg::Required => match inline {
                    Some(v) => Some(v),
                    None => {
                        let Some(v) = args.get(i) else {
                            return Err(Refusal {
                                message: format!("error: option `{}' requires a value", found.long),
                                status: 129,
                            });
                        };
                        i += 1;
                        Some(v.clone())
                    }
                },
            };
            parsed.opts.push((found.long, value));
            continue;
        }
        let cluster = &arg[1..];
        if style == Style::Counts && cluster.bytes().all(|b| b.is_ascii_digit()) {
            parsed.opts.push(("max-count", Some(cluster.to_string())));
            continue;
        }
        let chars: Vec<char> = cluster.chars().collect();
        let mut j = 0;
        while j < chars.len() {
            let c = chars[j];
            j += 1;
            let Some(found) = spec.iter().find(|s| s.short == Some(c)) else {
                return Err(refuse(&format!("-{c}")));
            };
            let rest: String = chars[j..].iter().collect();
            let value = match found.arg {
                Arg::No => None,
                Arg::Optional => {
                    j = chars.len();
                    (!rest.is_empty()).then_some(rest)
                }
                Arg::Required => {
                    j = chars.len();
                    if !rest.is_empty() {
                        Some(rest)
                    } else if let Some(v) = args.get(i) {
                        i += 1;
                        Some(v.clone())
                    } else {
                        return Err(Refusal {
                            message: format!("error: switch `{c}' requires a value"),
                            status: 129,
                        });
                    }
                }
            };
            parsed.opts.push((found.long, value));
        }
    }
    Ok(parsed)
}
