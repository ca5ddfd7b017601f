//! `grep`'s command line, parsed the GNU way: options and operands may mix,
//! short options bundle (`-rn`, `-A2`, `-e pat`), long ones take `=value`
//! or the next argument, `--` ends options, and `-NUM` means `-C NUM`.

/// How patterns are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) enum Dialect {
    #[default]
    Basic,
    Extended,
    Fixed,
    /// `-P`: handed to the `regex` crate as written (its syntax is Perl-like).
    Perl,
}

/// What `grep` prints for each file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) enum Report {
    /// The selected lines (or matches, with `-o`).
    #[default]
    Lines,
    /// `-c`: the number of selected lines.
    Count,
    /// `-l`: the names of files with a selected line.
    FilesWith,
    /// `-L`: the names of files without one.
    FilesWithout,
    /// `-q`: nothing; stop at the first selected line.
    Quiet,
}

/// Everything the command line says.
#[derive(Debug, Default)]
pub(super) struct Options {
    pub dialect: Dialect,
    pub report: Report,
    pub ignore_case: bool,
    pub invert: bool,
    pub word: bool,
    pub line: bool,
    pub only_matching: bool,
    pub line_number: bool,
    pub byte_offset: bool,
    /// `Some(true)` for `-H`, `Some(false)` for `-h`, `None` for the default.
    pub with_filename: Option<bool>,
    pub no_messages: bool,
    pub recursive: bool,
    /// `-R`: follow every symlink, not just operands.
    pub dereference: bool,
    pub text: bool,
    pub skip_binary: bool,
    /// `-Z`: a NUL, not `:` or a newline, after each file name.
    pub null: bool,
    pub max_count: Option<u64>,
    pub after: usize,
    pub before: usize,
    /// Patterns from `-e` (each may hold several, newline-separated).
    pub patterns: Vec<String>,
    /// Files named by `-f`.
    pub pattern_files: Vec<String>,
    pub include: Vec<String>,
    pub exclude: Vec<String>,
    pub exclude_dir: Vec<String>,
    pub operands: Vec<String>,
}

/// Short options that take a value.
const SHORT_WITH_VALUE: &str = "efmABCd";

/// Long options: (name, takes a value, the short option it means or a
/// pseudo-letter for long-only ones).
const LONG: &[(&str, bool, char)] = &[
    ("regexp", true, 'e'),
    ("file", true, 'f'),
    ("max-count", true, 'm'),
    ("after-context", true, 'A'),
    ("before-context", true, 'B'),
    ("context", true, 'C'),
    ("include", true, '1'),
    ("exclude", true, '2'),
    ("exclude-dir", true, '3'),
    ("color", false, '4'),
    ("colour", false, '4'),
    ("binary-files", true, '5'),
    ("directories", true, 'd'),
    ("extended-regexp", false, 'E'),
    ("fixed-strings", false, 'F'),
    ("basic-regexp", false, 'G'),
    ("perl-regexp", false, 'P'),
    ("ignore-case", false, 'i'),
    ("no-ignore-case", false, '6'),
    ("invert-match", false, 'v'),
    ("word-regexp", false, 'w'),
    ("line-regexp", false, 'x'),
    ("count", false, 'c'),
    ("files-with-matches", false, 'l'),
    ("files-without-match", false, 'L'),
    ("only-matching", false, 'o'),
    ("quiet", false, 'q'),
    ("silent", false, 'q'),
    ("no-messages", false, 's'),
    ("line-number", false, 'n'),
    ("byte-offset", false, 'b'),
    ("with-filename", false, 'H'),
    ("no-filename", false, 'h'),
    ("recursive", false, 'r'),
    ("dereference-recursive", false, 'R'),
    ("text", false, 'a'),
    ("null", false, 'Z'),
];

fn number(option: &str, value: &str) -> Result<usize, String> {
    value
        .trim()
        .parse()
        .map_err(|_| format!("{value}: invalid {option} argument"))
}

impl Options {
    /// Parses `args` (without `argv[0]`). The first operand is the pattern
    /// unless `-e` or `-f` gave one.
    pub(super) fn parse(args: &[String]) -> Result<Options, String> {
        let mut opts = Options::default();
        let mut operands = Vec::new();
        let mut i = 0;
        while i < args.len() {
            let arg = &args[i];
            i += 1;
            if arg == "--" {
                operands.extend(args[i..].iter().cloned());
                break;
            }
            if let Some(long) = arg.strip_prefix("--") {
                i += opts.long(long, args.get(i))?;
            } else if arg.len() > 1 && arg.starts_with('-') {
                i += opts.short_bundle(&arg[1..], args.get(i))?;
            } else {
                operands.push(arg.clone());
            }
        }
        if opts.patterns.is_empty() && opts.pattern_files.is_empty() {
            if operands.is_empty() {
                return Err("usage".into());
            }
            opts.patterns.push(operands.remove(0));
        }
        opts.operands = operands;
        Ok(opts)
    }

    /// One `--name[=value]`; returns how many following arguments it used.
    fn long(&mut self, text: &str, next: Option<&String>) -> Result<usize, String> {
        let (name, inline) = match text.split_once('=') {
            Some((n, v)) => (n, Some(v.to_string())),
            None => (text, None),
        };
        let matches: Vec<_> = LONG.iter().filter(|(n, ..)| n.starts_with(name)).collect();
        let exact = LONG.iter().find(|(n, ..)| *n == name);
        let Some(&(_, takes, letter)) = exact.or(matches.first().copied()) else {
            return Err(format!("unrecognized option '--{name}'"));
        };
        if exact.is_none() && matches.len() > 1 {
            return Err(format!("option '--{name}' is ambiguous"));
        }
        if !takes {
            if letter != '4' && inline.is_some() {
                return Err(format!("option '--{name}' doesn't allow an argument"));
            }
            self.flag(letter)?;
            return Ok(0);
        }
        match inline {
            Some(value) => self.valued(letter, value).map(|_| 0),
            None => {
                let value = next.ok_or(format!("option '--{name}' requires an argument"))?;
                self.valued(letter, value.clone()).map(|_| 1)
            }
        }
    }

    /// A bundle of short options after its `-`; returns how many following
    /// arguments it used.
    fn short_bundle(&mut self, bundle: &str, next: Option<&String>) -> Result<usize, String> {
        if bundle.chars().all(|c| c.is_ascii_digit()) {
            let n = number("context length", bundle)?;
            (self.after, self.before) = (n, n);
            return Ok(0);
        }
        for (at, c) in bundle.char_indices() {
            if !SHORT_WITH_VALUE.contains(c) {
                self.flag(c)?;
                continue;
            }
            let rest = &bundle[at + c.len_utf8()..];
            if !rest.is_empty() {
                self.valued(c, rest.to_string())?;
                return Ok(0);
            }
            let value = next.ok_or(format!("option requires an argument -- '{c}'"))?;
            self.valued(c, value.clone())?;
            return Ok(1);
        }
        Ok(0)
    }

    fn flag(&mut self, c: char) -> Result<(), String> {
        match c {
            'E' => self.dialect = Dialect::Extended,
            'P' => self.dialect = Dialect::Perl,
            'F' => self.dialect = Dialect::Fixed,
            'G' => self.dialect = Dialect::Basic,
            'i' | 'y' => self.ignore_case = true,
            '6' => self.ignore_case = false,
            'v' => self.invert = true,
            'w' => self.word = true,
            'x' => self.line = true,
            // -q beats -l/-L, which beat -c, whatever the order.
            'c' if self.report == Report::Lines => self.report = Report::Count,
            'c' => {}
            'l' | 'L' if self.report == Report::Quiet => {}
            'l' => self.report = Report::FilesWith,
            'L' => self.report = Report::FilesWithout,
            'q' => self.report = Report::Quiet,
            'o' => self.only_matching = true,
            's' => self.no_messages = true,
            'n' => self.line_number = true,
            'b' => self.byte_offset = true,
            'H' => self.with_filename = Some(true),
            'h' => self.with_filename = Some(false),
            'r' => self.recursive = true,
            'R' => (self.recursive, self.dereference) = (true, true),
            'a' => self.text = true,
            'I' => self.skip_binary = true,
            'Z' => self.null = true,
            '4' | 'U' => {}
            _ => return Err(format!("invalid option -- '{c}'")),
        }
        Ok(())
    }

    fn valued(&mut self, c: char, value: String) -> Result<(), String> {
        match c {
            'e' => self.patterns.push(value),
            'f' => self.pattern_files.push(value),
            'm' => self.max_count = Some(number("max count", &value)? as u64),
            'A' => self.after = number("context length", &value)?,
            'B' => self.before = number("context length", &value)?,
            'C' => {
                let n = number("context length", &value)?;
                (self.after, self.before) = (n, n);
            }
            '1' => self.include.push(value),
            '2' => self.exclude.push(value),
            '3' => self.exclude_dir.push(value),
            '5' => match value.as_str() {
                "text" => self.text = true,
                "without-match" => self.skip_binary = true,
                _ => {}
            },
            'd' if value == "recurse" => self.recursive = true,
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::{Dialect, Options, Report};

    fn parse(args: &[&str]) -> Options {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        Options::parse(&args).unwrap()
    }

    #[test]
    fn bundles_values_and_permutation() {
        let o = parse(&["-rnA2", "pat", "dir", "-i", "--include=*.rs", "-m1"]);
        assert!(o.recursive && o.line_number && o.ignore_case);
        assert_eq!((o.after, o.before), (2, 0));
        assert_eq!(o.patterns, ["pat"]);
        assert_eq!(o.operands, ["dir"]);
        assert_eq!(o.include, ["*.rs"]);
        assert_eq!(o.max_count, Some(1));
    }

    #[test]
    fn explicit_patterns_leave_operands() {
        let o = parse(&["-e", "a", "-eb", "--", "-x", "f"]);
        assert_eq!(o.patterns, ["a", "b"]);
        assert_eq!(o.operands, ["-x", "f"]);
        let o = parse(&["-C", "3", "-Fc", "x"]);
        assert_eq!((o.after, o.before), (3, 3));
        assert_eq!(o.dialect, Dialect::Fixed);
        assert_eq!(o.report, Report::Count);
        let o = parse(&["-2", "--files-without", "x"]);
        assert_eq!((o.after, o.before), (2, 2));
        assert_eq!(o.report, Report::FilesWithout);
    }

    #[test]
    fn errors() {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(Options::parse(&args(&["-k", "x"])).is_err());
        assert!(Options::parse(&args(&[])).is_err());
        assert!(Options::parse(&args(&["-A"])).is_err());
        assert!(Options::parse(&args(&["--bogus", "x"])).is_err());
    }
}
