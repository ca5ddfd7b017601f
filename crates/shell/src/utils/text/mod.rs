//! The text utilities: the coreutils an agent pipes text through (`cat`,
//! `head`, `sort`, `cut`, `tr`, `wc`, ...), plus the small helpers that
//! usually sit next to them in a pipeline (`basename`, `seq`, `xargs`,
//! `date`, `diff`, digests).
//!
//! They follow GNU coreutils in the C locale (byte order, byte-wise
//! classes), because that is what agents' scripts and our recorded fixtures
//! expect. Every utility reads its whole input (pipelines are buffered stage
//! by stage anyway), charges [`crate::limits::Budget::charge_cpu`] for the
//! bytes it processes and writes through the capped [`crate::io::Output`].
//!
//! Shared plumbing lives here: the reading of operands and line splitting;
//! options are parsed by the utilities' one parser, `utils::getopt`.

mod arith;
mod comm;
mod convert;
mod date;
mod diff;
mod fields;
mod misc;
mod numfmt;
mod od;
mod shuf;
mod sort;
mod split;
mod tr;
mod view;

pub(crate) use date::format_utc;

use stead_vfs::VfsError;

use super::{Content, Ctx, Table};
use crate::limits::Abort;

pub(crate) const UTILITIES: Table = &[
    ("cat", view::cat),
    ("head", view::head),
    ("tail", view::tail),
    ("tac", view::tac),
    ("rev", view::rev),
    ("wc", view::wc),
    ("tee", view::tee),
    ("strings", view::strings),
    ("sort", sort::sort),
    ("uniq", sort::uniq),
    ("cut", fields::cut),
    ("paste", fields::paste),
    ("join", fields::join),
    ("column", fields::column),
    ("nl", fields::nl),
    ("fold", fields::fold),
    ("expand", fields::expand),
    ("unexpand", fields::unexpand),
    ("tr", tr::tr),
    ("basename", misc::basename),
    ("dirname", misc::dirname),
    ("seq", misc::seq),
    ("yes", misc::yes),
    ("env", misc::env),
    ("printenv", misc::printenv),
    ("sleep", misc::sleep),
    ("timeout", misc::timeout),
    ("xargs", misc::xargs),
    ("base64", convert::base64),
    ("md5sum", convert::md5sum),
    ("sha256sum", convert::sha256sum),
    ("sha512sum", convert::sha512sum),
    ("sha1sum", convert::sha1sum),
    ("sha224sum", convert::sha224sum),
    ("sha384sum", convert::sha384sum),
    ("date", date::date),
    ("diff", diff::diff),
    ("split", split::split),
    ("od", od::od),
    ("expr", arith::expr),
    ("factor", arith::factor),
    ("comm", comm::comm),
    ("shuf", shuf::shuf),
    ("numfmt", numfmt::numfmt),
];

pub(super) use super::getopt::{flag, getopt, getopt_until, with_arg, Opt, Parsed};

/// Checks `argv` against `opts` as a utility parsing `getopt(&argv[1..], opts)` would.
fn check(argv: &[String], opts: &[Opt]) -> Result<(), String> {
    getopt(&argv[1..], opts).map(drop)
}

/// How `auto` checks these utilities' options (see `utils::check_options`):
/// with the tables and parsers they run with.
pub(crate) const OPTION_CHECKS: super::Checks = &[
    ("cat", |a| check(a, view::CAT_OPTS)),
    ("head", |a| {
        getopt(&view::obsolete_count(&a[1..], false), view::HEAD_TAIL_OPTS).map(drop)
    }),
    ("tail", |a| {
        getopt(&view::obsolete_count(&a[1..], true), view::HEAD_TAIL_OPTS).map(drop)
    }),
    ("wc", |a| check(a, view::WC_OPTS)),
    ("sort", |a| check(a, sort::SORT_OPTS)),
    ("uniq", |a| check(a, sort::UNIQ_OPTS)),
    ("cut", |a| check(a, fields::CUT_OPTS)),
    ("join", |a| check(a, fields::JOIN_OPTS)),
    ("nl", |a| check(a, fields::NL_OPTS)),
    ("tr", |a| check(a, tr::TR_OPTS)),
    // The first operand is the command xargs runs: its options are its own.
    ("xargs", |a| {
        getopt_until(&a[1..], misc::XARGS_OPTS, true).map(drop)
    }),
    ("date", |a| date::parse_options(a).map(drop)),
    ("diff", |a| check(a, diff::DIFF_OPTS)),
];

/// Prints `util: message` and the `Try` line; returns `status`.
pub(super) fn usage(
    ctx: &mut Ctx<'_>,
    util: &str,
    message: &str,
    status: i32,
) -> Result<i32, Abort> {
    ctx.error(util, message)?;
    ctx.stderr
        .write_str(&format!("Try '{util} --help' for more information.\n"))?;
    Ok(status)
}

/// Reads a whole operand (`-` is stdin, devices as on Linux: see
/// [`Ctx::open_operand`]) without reporting errors. An input that goes on
/// (a full pipe, `/dev/zero`) ends the exec with `max_pipe_bytes`: a
/// utility reading through here needs all of it.
pub(super) fn read_operand(
    ctx: &mut Ctx<'_>,
    operand: &str,
) -> Result<Result<Vec<u8>, VfsError>, Abort> {
    match ctx.open_operand(operand)? {
        Ok(content) => content.whole().map(Ok),
        Err(error) => Ok(Err(error)),
    }
}

/// Writes `data` to the file `operand` names (replacing it), charging the
/// write budget; the filesystem error, if any, is for the caller to word.
pub(super) fn save(
    ctx: &mut Ctx<'_>,
    operand: &str,
    data: &[u8],
) -> Result<Result<(), VfsError>, Abort> {
    match ctx.path(operand) {
        Ok(path) => ctx.write_file(&path, data),
        Err(error) => Ok(Err(error)),
    }
}

/// Writes `data` to the file `operand`, or to stdout when there is none;
/// a failure is reported as `util: FILE: error` and gives status 1.
pub(super) fn save_or_print(
    ctx: &mut Ctx<'_>,
    util: &str,
    operand: Option<&str>,
    data: &[u8],
) -> Result<i32, Abort> {
    let Some(file) = operand else {
        return ctx.stdout.write(data).map(|()| 0);
    };
    match save(ctx, file, data)? {
        Ok(()) => Ok(0),
        Err(error) => ctx.fs_error(util, file, &error).map(|()| 1),
    }
}

/// For utilities that take exactly two files: GNU's complaint otherwise.
pub(super) fn two_operands(operands: &[String]) -> Option<String> {
    match operands {
        [_, _] => None,
        [] => Some("missing operand".to_string()),
        [only] => Some(format!("missing operand after ‘{only}’")),
        [_, _, extra, ..] => Some(format!("extra operand ‘{extra}’")),
    }
}

/// The numeric option `key` (`default` when absent); the bad text as the error.
pub(super) fn number_option<T: std::str::FromStr>(
    parsed: &Parsed,
    key: char,
    default: T,
) -> Result<T, String> {
    match parsed.value(key) {
        None => Ok(default),
        Some(text) => text.parse().map_err(|_| text.to_string()),
    }
}

/// Operands read: each name with its content.
pub(super) type Inputs = Vec<(String, Vec<u8>)>;

/// Reads every operand (stdin when there are none), reporting failures as
/// `util: name: strerror`. Returns the contents read and whether any failed.
pub(super) fn read_all(
    ctx: &mut Ctx<'_>,
    util: &str,
    operands: &[String],
) -> Result<(Inputs, bool), Abort> {
    read_all_with(ctx, util, operands, |operand, error| {
        format!("{operand}: {error}")
    })
}

/// Like [`read_all`], with the utility's own wording of a failure
/// (`describe(operand, strerror)`).
pub(super) fn read_all_with(
    ctx: &mut Ctx<'_>,
    util: &str,
    operands: &[String],
    describe: fn(&str, &str) -> String,
) -> Result<(Inputs, bool), Abort> {
    let (opened, failed) = open_all_with(ctx, util, operands, describe)?;
    let mut inputs = Vec::with_capacity(opened.len());
    for (name, content) in opened {
        inputs.push((name, content.whole()?));
    }
    Ok((inputs, failed))
}

/// Like [`read_all_with`] for a reader that may stop early: an input that
/// goes on is given as it is, for the reader to end (`Content::whole`) if
/// it needs the rest.
pub(super) fn open_all_with(
    ctx: &mut Ctx<'_>,
    util: &str,
    operands: &[String],
    describe: fn(&str, &str) -> String,
) -> Result<(Vec<(String, Content)>, bool), Abort> {
    let stdin = ["-".to_string()];
    let operands = if operands.is_empty() {
        &stdin[..]
    } else {
        operands
    };
    let mut inputs = Vec::new();
    let mut failed = false;
    for operand in operands {
        match ctx.open_operand(operand)? {
            Ok(content) => inputs.push((operand.clone(), content)),
            Err(error) => {
                ctx.error(util, &describe(operand, &super::strerror(&error)))?;
                failed = true;
            }
        }
    }
    Ok((inputs, failed))
}

/// Reads every operand and concatenates them (for filters such as `sort`).
pub(super) fn read_concat(
    ctx: &mut Ctx<'_>,
    util: &str,
    operands: &[String],
) -> Result<(Vec<u8>, bool), Abort> {
    let (inputs, failed) = read_all(ctx, util, operands)?;
    Ok((inputs.into_iter().flat_map(|(_, b)| b).collect(), failed))
}

/// The records of `data` separated by `sep`, without their separators; a
/// final separator does not start an empty record.
pub(super) fn records(data: &[u8], sep: u8) -> Vec<&[u8]> {
    let mut out: Vec<&[u8]> = data.split(|b| *b == sep).collect();
    if data.is_empty() || data.last() == Some(&sep) {
        out.pop();
    }
    out
}

/// Lines of `data` (newline-separated, see [`records`]).
pub(super) fn lines(data: &[u8]) -> Vec<&[u8]> {
    records(data, b'\n')
}

/// `value` zero-padded to `width` after its sign (`nl -n rz`).
pub(super) fn misc_pad_zero(value: i64, width: usize) -> String {
    let sign = if value < 0 { "-" } else { "" };
    let digits = value.unsigned_abs();
    format!("{sign}{digits:0>w$}", w = width.saturating_sub(sign.len()))
}

/// Parses a count with an optional GNU size suffix (`b` 512, `K`/`KiB`
/// 1024, `KB` 1000, `M`, `G`, ...).
pub(super) fn parse_count(text: &str) -> Option<u64> {
    let digits = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let number: u64 = text[..digits].parse().ok()?;
    let multiplier: u64 = match &text[digits..] {
        "" => 1,
        "b" => 512,
        "K" | "k" | "KiB" => 1 << 10,
        "KB" | "kB" => 1000,
        "M" | "MiB" => 1 << 20,
        "MB" => 1_000_000,
        "G" | "GiB" => 1 << 30,
        "GB" => 1_000_000_000,
        "T" | "TiB" => 1 << 40,
        _ => return None,
    };
    number.checked_mul(multiplier)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_operands_are_not_workspace_files() {
        use crate::utils::testing::{db, run};
        assert_eq!(
            run(&db(), &["cat", "/dev/null", "/dev/stdin"], "in").stdout,
            "in"
        );
        assert_eq!(
            run(&db(), &["head", "-c", "3", "/dev/zero"], "").stdout,
            "\0\0\0"
        );
        assert_eq!(
            run(&db(), &["head", "-c", "5", "/dev/urandom"], "").status,
            0
        );
    }

    #[test]
    fn records_drop_only_the_final_separator() {
        assert_eq!(lines(b"a\n\nb\n"), vec![&b"a"[..], b"", b"b"]);
        assert_eq!(lines(b"a\nb"), vec![&b"a"[..], b"b"]);
        assert!(lines(b"").is_empty());
        assert_eq!(parse_count("2K"), Some(2048));
        assert_eq!(parse_count("x"), None);
    }
}
