//! The file utilities: listing (`ls`, `tree`, `stat`, `du`, `find`), changing
//! the tree (`mkdir`, `rm`, `mv`, `cp`, `ln`, `touch`, `chmod`), resolving
//! paths (`realpath`, `readlink`) and archives (`tar`, `gzip`).
//!
//! They follow GNU coreutils/findutils output for the flags agents use, over
//! the workspace filesystem. What the workspace does not have is modelled
//! plainly: every node belongs to `agent agent` (uid/gid 1000) with one link;
//! disk usage counts 4 KiB blocks (a file takes `ceil(size/4096)*4` KiB, a
//! directory 4 KiB, a symlink none), as on a typical ext4 disk, so `du` and
//! `ls -l`'s `total` read like GNU's; hard links do not exist, so `ln`
//! without `-s` fails with a message saying so.

mod find;
mod gzip;
mod info;
mod list;
mod manage;
mod tar;
mod time;

use stead_vfs::{Kind, Node};

use super::getopt::{getopt, Opt};
use super::{Checks, Ctx, Table};
use crate::limits::Abort;

pub(crate) const UTILITIES: Table = &[
    ("ls", list::ls),
    ("tree", list::tree),
    ("du", list::du),
    ("stat", info::stat),
    ("realpath", info::realpath),
    ("readlink", info::readlink),
    ("file", info::file),
    ("mkdir", manage::mkdir),
    ("rm", manage::rm),
    ("rmdir", manage::rmdir),
    ("mv", manage::mv),
    ("cp", manage::cp),
    ("touch", manage::touch),
    ("ln", manage::ln),
    ("chmod", manage::chmod),
    ("find", find::find),
    ("tar", tar::tar),
    ("gzip", gzip::gzip),
    ("gunzip", gzip::gunzip),
    ("zcat", gzip::zcat),
];

/// The owner and group every node shows.
const OWNER: &str = "agent";
const OWNER_ID: u32 = 1000;

/// Parsed command-line options: flags in order, then operands.
#[derive(Debug, Default)]
struct Opts {
    flags: Vec<(char, Option<String>)>,
    operands: Vec<String>,
}

impl Opts {
    fn has(&self, flag: char) -> bool {
        self.flags.iter().any(|(f, _)| *f == flag)
    }

    /// The last value given to `flag`.
    fn value(&self, flag: char) -> Option<&str> {
        self.flags
            .iter()
            .rev()
            .find(|(f, _)| *f == flag)
            .and_then(|(_, v)| v.as_deref())
    }

    /// Which of `flags` came last (for overriding pairs such as `-f`/`-n`).
    fn last_of(&self, flags: &str) -> Option<char> {
        self.flags
            .iter()
            .rev()
            .map(|(f, _)| *f)
            .find(|f| flags.contains(*f))
    }
}

/// A utility's options: `short` lists the short flags, a `:` after one
/// meaning it takes a value; `long` maps long names to the flag they stand
/// for (the flag must be in `short` when it takes a value). The utility
/// parses with it and `auto` checks a command line against it, so the two
/// cannot disagree.
pub(super) struct Spec {
    pub short: &'static str,
    pub long: &'static [(&'static str, char)],
}

/// Parses options with the utilities' one parser (`utils::getopt`).
fn parse_opts(args: &[String], spec: &Spec) -> Result<Opts, String> {
    let short = spec.short;
    let takes_value = |c: char| {
        short
            .find(c)
            .is_some_and(|i| short[i + c.len_utf8()..].starts_with(':'))
    };
    let mut opts: Vec<Opt> = short
        .chars()
        .filter(|&c| c != ':')
        .map(|c| Opt {
            key: c,
            long: "",
            arg: takes_value(c),
        })
        .collect();
    for &(name, key) in spec.long {
        opts.push(Opt {
            key,
            long: name,
            arg: takes_value(key),
        });
    }
    let parsed = getopt(&args[1..], &opts)?;
    Ok(Opts {
        flags: parsed
            .opts
            .into_iter()
            .map(|(k, v)| {
                let value = takes_value(k).then_some(v);
                (k, value)
            })
            .collect(),
        operands: parsed.operands,
    })
}

/// Parses options, or prints GNU's usage error and returns the status to exit with.
fn options(
    ctx: &mut Ctx<'_>,
    args: &[String],
    spec: &Spec,
    usage_status: i32,
) -> Result<Result<Opts, i32>, Abort> {
    match parse_opts(args, spec) {
        Ok(opts) => Ok(Ok(opts)),
        Err(message) => {
            let util = args[0].as_str();
            ctx.error(util, &message)?;
            ctx.stderr
                .write_str(&format!("Try '{util} --help' for more information.\n"))?;
            Ok(Err(usage_status))
        }
    }
}

/// Checks `args` against `spec` as the utility's parser would.
fn check(args: &[String], spec: &Spec) -> Result<(), String> {
    parse_opts(args, spec).map(drop)
}

/// How `auto` checks these utilities' options (see `utils::check_options`).
pub(crate) const OPTION_CHECKS: Checks = &[
    ("ls", |a| check(a, &list::LS_OPTIONS)),
    ("tree", |a| check(a, &list::TREE_OPTIONS)),
    ("du", |a| check(a, &list::DU_OPTIONS)),
    ("stat", |a| check(a, &info::STAT_OPTIONS)),
    ("realpath", |a| check(a, &info::REALPATH_OPTIONS)),
    ("readlink", |a| check(a, &info::READLINK_OPTIONS)),
    ("file", |a| check(a, &info::FILE_OPTIONS)),
    ("mkdir", |a| check(a, &manage::MKDIR_OPTIONS)),
    ("rm", |a| check(a, &manage::RM_OPTIONS)),
    ("rmdir", |a| check(a, &manage::RMDIR_OPTIONS)),
    ("mv", |a| check(a, &manage::MV_OPTIONS)),
    ("cp", |a| check(a, &manage::CP_OPTIONS)),
    ("touch", |a| check(a, &manage::TOUCH_OPTIONS)),
    ("ln", |a| check(a, &manage::LN_OPTIONS)),
    ("find", find::check_options),
    ("tar", tar::check_options),
    ("gzip", |a| check(a, &gzip::GZIP_OPTIONS)),
    ("gunzip", |a| check(a, &gzip::GZIP_OPTIONS)),
    ("zcat", |a| check(a, &gzip::GZIP_OPTIONS)),
];

/// `ls -l`'s ten-character type and permission string, e.g. `drwxr-xr-x`.
fn mode_string(kind: Kind, mode: u32) -> String {
    let mut s = String::with_capacity(10);
    s.push(match kind {
        Kind::File => '-',
        Kind::Dir => 'd',
        Kind::Symlink => 'l',
    });
    let special = [(0o4000, 's', 'S'), (0o2000, 's', 'S'), (0o1000, 't', 'T')];
    for (i, (bit, on, off)) in special.iter().enumerate() {
        let shift = 6 - 3 * i;
        let bits = (mode >> shift) & 7;
        s.push(if bits & 4 != 0 { 'r' } else { '-' });
        s.push(if bits & 2 != 0 { 'w' } else { '-' });
        let exec = bits & 1 != 0;
        s.push(match (mode & bit != 0, exec) {
            (true, true) => *on,
            (true, false) => *off,
            (false, true) => 'x',
            (false, false) => '-',
        });
    }
    s
}

/// The size GNU tools show: directories as one 4 KiB block.
fn shown_size(node: &Node) -> u64 {
    match node.kind {
        Kind::Dir => 4096,
        _ => node.size,
    }
}

/// Disk usage in KiB under the 4 KiB block model (see the module docs).
fn usage_kib(node: &Node) -> u64 {
    match node.kind {
        Kind::File => node.size.div_ceil(4096) * 4,
        Kind::Dir => 4,
        Kind::Symlink => 0,
    }
}

/// A size as `-h` shows it: `512`, `1.5K`, `12M` (powers of 1024, rounded up).
fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 8] = ["K", "M", "G", "T", "P", "E", "Z", "Y"];
    if bytes < 1024 {
        return bytes.to_string();
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    loop {
        if value < 10.0 {
            let tenths = (value * 10.0 - 1e-9).ceil() / 10.0;
            if tenths < 10.0 {
                return format!("{tenths:.1}{}", UNITS[unit]);
            }
            value = 10.0;
        }
        let whole = (value - 1e-9).ceil();
        if whole < 1024.0 || unit == UNITS.len() - 1 {
            return format!("{whole:.0}{}", UNITS[unit]);
        }
        value /= 1024.0;
        unit += 1;
    }
}

/// The last name of an operand as written (`a/b/` gives `b`), for messages
/// and for moving or copying into a directory.
fn base_name(operand: &str) -> &str {
    let trimmed = operand.trim_end_matches('/');
    if trimmed.is_empty() {
        return "/";
    }
    trimmed.rsplit('/').next().unwrap_or(trimmed)
}

/// `dir` joined with `name` as the user would write it (`.` + `a` is `./a`).
fn join_operand(dir: &str, name: &str) -> String {
    if dir.ends_with('/') {
        format!("{dir}{name}")
    } else {
        format!("{dir}/{name}")
    }
}

/// Appends what a backslash escape in a `-printf`/`--printf` format stands
/// for (`\n`, `\t`, `\0`, `\\`); unknown escapes stay as written.
fn push_escape(out: &mut String, escaped: Option<char>) {
    match escaped {
        Some('n') => out.push('\n'),
        Some('t') => out.push('\t'),
        Some('0') => out.push('\0'),
        Some('\\') => out.push('\\'),
        Some(other) => {
            out.push('\\');
            out.push(other);
        }
        None => out.push('\\'),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn parses_clusters_values_and_longs() {
        let args = strings(&[
            "x", "-la", "file", "-mvalue", "--all", "--mode=7", "--", "-z",
        ]);
        let spec = Spec {
            short: "lam:",
            long: &[("all", 'a'), ("mode", 'm')],
        };
        let opts = parse_opts(&args, &spec).unwrap();
        assert!(opts.has('l') && opts.has('a'));
        assert_eq!(opts.value('m'), Some("7"));
        assert_eq!(opts.operands, strings(&["file", "-z"]));
        let spec = Spec {
            short: "l",
            long: &[],
        };
        assert!(parse_opts(&strings(&["x", "-q"]), &spec).is_err());
        assert!(parse_opts(&strings(&["x", "--nope"]), &spec).is_err());
    }

    #[test]
    fn formats_modes_and_sizes() {
        assert_eq!(mode_string(Kind::Dir, 0o755), "drwxr-xr-x");
        assert_eq!(mode_string(Kind::File, 0o4644), "-rwSr--r--");
        assert_eq!(mode_string(Kind::Dir, 0o1777), "drwxrwxrwt");
        assert_eq!(human_size(3), "3");
        assert_eq!(human_size(4096), "4.0K");
        assert_eq!(human_size(1100), "1.1K");
        assert_eq!(human_size(10 * 1024 + 1), "11K");
        assert_eq!(human_size(1 << 20), "1.0M");
        assert_eq!(base_name("a/b/"), "b");
        assert_eq!(join_operand(".", "a"), "./a");
    }
}
