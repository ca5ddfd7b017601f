//! The option syntax of bash's simple builtins (`hash`, `history`, `type`,
//! `ulimit`), as bash's own `internal_getopt` reads it: letters clustered
//! after one `-` (`-ab`), a letter that takes an argument taking the rest
//! of its cluster or else the next word (`-pPATH`, `-p PATH`), `--` ending
//! the options, and the first word that is not an option (a lone `-`
//! included) ending them too. Every letter is checked before the builtin
//! acts on any, so a bad option changes nothing.

/// A builtin's arguments, read.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Parsed<'a> {
    /// Each option letter in order, with its argument if it takes one.
    pub flags: Vec<(char, Option<&'a str>)>,
    /// What follows the options.
    pub operands: &'a [String],
}

/// Why the options could not be read.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum BadFlag {
    /// A letter the builtin does not know.
    Unknown(char),
    /// A letter that takes an argument, with none after it.
    NoArgument(char),
}

impl BadFlag {
    /// Bash's words for it (after the builtin's name).
    pub(super) fn message(&self) -> String {
        match self {
            BadFlag::Unknown(c) => format!("-{c}: invalid option"),
            BadFlag::NoArgument(c) => format!("-{c}: option requires an argument"),
        }
    }
}

/// Reads `args` (the builtin's name first): the letters in `known` are
/// options, those also in `with_argument` take an argument.
pub(super) fn parse<'a>(
    args: &'a [String],
    known: &str,
    with_argument: &str,
) -> Result<Parsed<'a>, BadFlag> {
    let mut flags = Vec::new();
    let mut i = 1;
    while let Some(word) = args.get(i) {
        i += 1;
        if word == "--" {
            break;
        }
        let Some(cluster) = word.strip_prefix('-').filter(|rest| !rest.is_empty()) else {
            i -= 1;
            break;
        };
        for (at, c) in cluster.char_indices() {
            if !known.contains(c) {
                return Err(BadFlag::Unknown(c));
            }
            if !with_argument.contains(c) {
                flags.push((c, None));
                continue;
            }
            let rest = &cluster[at + c.len_utf8()..];
            let argument = if rest.is_empty() {
                let next = args.get(i).ok_or(BadFlag::NoArgument(c))?;
                i += 1;
                next.as_str()
            } else {
                rest
            };
            flags.push((c, Some(argument)));
            break;
        }
    }
    Ok(Parsed {
        flags,
        operands: &args[i.min(args.len())..],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        text.split(' ').map(String::from).collect()
    }

    #[test]
    fn clusters_arguments_and_the_end_of_options() {
        let args = words("hash -lr -p /bin/ls ls -t");
        let parsed = parse(&args, "lrpdt", "p").unwrap();
        assert_eq!(
            parsed.flags,
            [('l', None), ('r', None), ('p', Some("/bin/ls"))]
        );
        assert_eq!(parsed.operands, &words("ls -t")[..]);

        let args = words("hash -tp/bin/ls ls");
        let parsed = parse(&args, "lrpdt", "p").unwrap();
        assert_eq!(parsed.flags, [('t', None), ('p', Some("/bin/ls"))]);
        assert_eq!(parsed.operands, &words("ls")[..]);

        let args = words("type -- -a - x");
        let parsed = parse(&args, "a", "").unwrap();
        assert!(parsed.flags.is_empty());
        assert_eq!(parsed.operands, &words("-a - x")[..]);

        let args = words("type - -a");
        assert_eq!(parse(&args, "a", "").unwrap().operands, &words("- -a")[..]);
        let args = words("type");
        assert!(parse(&args, "a", "").unwrap().operands.is_empty());
    }

    #[test]
    fn unknown_letters_and_missing_arguments_are_refused() {
        let args = words("type -ax name");
        assert_eq!(parse(&args, "a", ""), Err(BadFlag::Unknown('x')));
        assert_eq!(BadFlag::Unknown('x').message(), "-x: invalid option");
        let args = words("history -d");
        assert_eq!(parse(&args, "cd", "d"), Err(BadFlag::NoArgument('d')));
        assert_eq!(
            BadFlag::NoArgument('d').message(),
            "-d: option requires an argument"
        );
    }
}
