//! The one command-line parser of the utilities, GNU style: options and
//! operands may be mixed (operands are permuted out), short options cluster
//! (`-nrk2`, the last may take the rest or the next argument), long options
//! take `--name=value` or `--name value` and may be abbreviated to a unique
//! prefix, `--` ends the options and `-` alone is an operand. Errors are the
//! messages GNU tools print before their `Try ... --help` line.

/// One option a utility accepts: its short letter (or a private key for
/// long-only options), its long name (empty if none), and whether it takes
/// an argument.
#[derive(Clone, Copy)]
pub(crate) struct Opt {
    pub key: char,
    pub long: &'static str,
    pub arg: bool,
}

/// A short option (with a long name, or "" for none).
pub(crate) const fn flag(key: char, long: &'static str) -> Opt {
    Opt {
        key,
        long,
        arg: false,
    }
}

/// A short option taking an argument.
pub(crate) const fn with_arg(key: char, long: &'static str) -> Opt {
    Opt {
        key,
        long,
        arg: true,
    }
}

/// Keys for long-only options are not letters, so they cannot be typed as `-x`.
fn is_short_key(key: char) -> bool {
    key.is_ascii_graphic()
}

/// The options (in order) and the operands of a command line.
#[derive(Debug, Default)]
pub(crate) struct Parsed {
    pub opts: Vec<(char, String)>,
    pub operands: Vec<String>,
}

impl Parsed {
    pub(super) fn has(&self, key: char) -> bool {
        self.opts.iter().any(|(k, _)| *k == key)
    }

    /// The last value given for `key`.
    pub(super) fn value(&self, key: char) -> Option<&str> {
        self.opts
            .iter()
            .rev()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// Parses `args` (without argv[0]) GNU-style. Operands and options may be
/// mixed; `--` ends the options; `-` alone is an operand. The error is the
/// message to print before the `Try ... --help` line.
pub(crate) fn getopt(args: &[String], spec: &[Opt]) -> Result<Parsed, String> {
    getopt_until(args, spec, false)
}

/// Like [`getopt`]; with `stop_at_operand`, the first operand ends the
/// options (for commands that run other commands: `xargs`, `env`, `timeout`).
pub(crate) fn getopt_until(
    args: &[String],
    spec: &[Opt],
    stop_at_operand: bool,
) -> Result<Parsed, String> {
    let mut parsed = Parsed::default();
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        if arg == "--" {
            parsed.operands.extend(args[i..].iter().cloned());
            break;
        }
        if let Some(long) = arg.strip_prefix("--") {
            let (opt, value) = long_option(long, spec)?;
            let value = match (opt.arg, value) {
                (true, Some(v)) => v,
                (true, None) => {
                    let v = args
                        .get(i)
                        .cloned()
                        .ok_or_else(|| format!("option '--{}' requires an argument", opt.long))?;
                    i += 1;
                    v
                }
                (false, Some(_)) => {
                    return Err(format!("option '--{}' doesn't allow an argument", opt.long))
                }
                (false, None) => String::new(),
            };
            parsed.opts.push((opt.key, value));
        } else if arg.len() > 1 && arg.starts_with('-') {
            i += short_options(&arg[1..], args.get(i), spec, &mut parsed)?;
        } else {
            parsed.operands.push(arg.clone());
            if stop_at_operand {
                parsed.operands.extend(args[i..].iter().cloned());
                break;
            }
        }
    }
    Ok(parsed)
}

/// Finds `--name[=value]` by exact name or unique prefix.
fn long_option(text: &str, spec: &[Opt]) -> Result<(Opt, Option<String>), String> {
    let (name, value) = match text.split_once('=') {
        Some((n, v)) => (n, Some(v.to_string())),
        None => (text, None),
    };
    let named = || spec.iter().filter(|o| !o.long.is_empty());
    if let Some(opt) = named().find(|o| o.long == name) {
        return Ok((*opt, value));
    }
    let mut matches = named().filter(|o| o.long.starts_with(name));
    match (matches.next(), matches.next()) {
        (Some(opt), None) if !name.is_empty() => Ok((*opt, value)),
        (Some(_), Some(_)) => Err(format!("option '--{name}' is ambiguous")),
        _ => Err(format!("unrecognized option '--{name}'")),
    }
}

/// Parses one cluster of short options (`-nrk2`); returns how many of the
/// following arguments it consumed (1 when the last option took the next one).
fn short_options(
    cluster: &str,
    next: Option<&String>,
    spec: &[Opt],
    parsed: &mut Parsed,
) -> Result<usize, String> {
    for (at, c) in cluster.char_indices() {
        let opt = spec
            .iter()
            .find(|o| o.key == c && is_short_key(o.key))
            .ok_or_else(|| format!("invalid option -- '{c}'"))?;
        if !opt.arg {
            parsed.opts.push((c, String::new()));
            continue;
        }
        let rest = &cluster[at + c.len_utf8()..];
        if !rest.is_empty() {
            parsed.opts.push((c, rest.to_string()));
            return Ok(0);
        }
        let value = next.ok_or_else(|| format!("option requires an argument -- '{c}'"))?;
        parsed.opts.push((c, value.clone()));
        return Ok(1);
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| s.to_string()).collect()
    }

    const SPEC: &[Opt] = &[
        flag('n', "number"),
        with_arg('k', "key"),
        flag('r', "reverse"),
    ];

    #[test]
    fn getopt_clusters_permutes_and_takes_arguments() {
        let p = getopt(
            &strings(&["a", "-nk2,2", "b", "--rev", "-k", "3", "--", "-r"]),
            SPEC,
        )
        .unwrap();
        assert_eq!(p.operands, strings(&["a", "b", "-r"]));
        assert!(p.has('n') && p.has('r'));
        assert_eq!(p.value('k'), Some("3"));
        assert_eq!(p.opts.iter().filter(|(k, _)| *k == 'k').count(), 2);
    }

    #[test]
    fn getopt_reports_errors_like_gnu() {
        assert_eq!(
            getopt(&strings(&["-z"]), SPEC).unwrap_err(),
            "invalid option -- 'z'"
        );
        assert_eq!(
            getopt(&strings(&["-k"]), SPEC).unwrap_err(),
            "option requires an argument -- 'k'"
        );
        assert_eq!(
            getopt(&strings(&["--foo"]), SPEC).unwrap_err(),
            "unrecognized option '--foo'"
        );
        assert_eq!(
            getopt(&strings(&["--key=1"]), SPEC).unwrap().value('k'),
            Some("1")
        );
    }

    #[test]
    fn long_values_inline_or_next_and_the_end_of_options() {
        for args in [
            &["--key=5", "x"][..],
            &["--key", "5", "x"],
            &["--ke", "5", "x"],
            &["-k5", "x"],
        ] {
            let p = getopt(&strings(args), SPEC).unwrap();
            assert_eq!(p.value('k'), Some("5"), "{args:?}");
            assert_eq!(p.operands, strings(&["x"]), "{args:?}");
        }
        assert_eq!(
            getopt(&strings(&["--number=3"]), SPEC).unwrap_err(),
            "option '--number' doesn't allow an argument"
        );
        let p = getopt(&strings(&["-rn", "--", "--key", "-"]), SPEC).unwrap();
        assert!(p.has('r') && p.has('n'));
        assert_eq!(p.operands, strings(&["--key", "-"]));
        assert_eq!(
            getopt(
                &strings(&["--re"]),
                &[flag('r', "reverse"), flag('R', "recursive")]
            )
            .unwrap_err(),
            "option '--re' is ambiguous"
        );
    }
}
