//! `gzip`, `gunzip`, `zcat`: whole files compressed in memory with flate2.
//! Inflating is charged to the CPU budget chunk by chunk and capped at
//! [`MAX_INFLATED`], so a small bomb cannot exhaust the isolate's memory.

use std::io::{Read, Write};

use flate2::read::MultiGzDecoder;
use flate2::{Compression, GzBuilder};

use super::{base_name, options, Opts, Spec};
use crate::limits::Abort;
use crate::utils::{strerror, Ctx};

/// The most bytes one decompression may produce.
pub(super) const MAX_INFLATED: usize = 256 << 20;

/// Why data could not be inflated.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum InflateError {
    NotGzip,
    Corrupt,
    TooLarge,
}

impl InflateError {
    fn message(&self) -> &'static str {
        match self {
            InflateError::NotGzip => "not in gzip format",
            InflateError::Corrupt => "invalid compressed data--format violated",
            InflateError::TooLarge => "decompressed data too large for the light shell",
        }
    }
}

/// Gzip-compresses `data` (with `name` and `mtime` in the header when given).
pub(super) fn deflate(
    ctx: &Ctx<'_>,
    data: &[u8],
    level: u32,
    name: Option<&str>,
    mtime: u32,
) -> Result<Vec<u8>, Abort> {
    ctx.budget.charge_cpu(data.len() as u64)?;
    let mut builder = GzBuilder::new().mtime(mtime).operating_system(3);
    if let Some(name) = name {
        builder = builder.filename(name);
    }
    let mut encoder = builder.write(
        Vec::with_capacity(data.len() / 2 + 64),
        Compression::new(level),
    );
    // Writing to a Vec cannot fail.
    let _ = encoder.write_all(data);
    Ok(encoder.finish().unwrap_or_default())
}

/// Inflates gzip data (all members), charging the budget as it goes.
pub(super) fn inflate(ctx: &Ctx<'_>, data: &[u8]) -> Result<Result<Vec<u8>, InflateError>, Abort> {
    if !data.starts_with(&[0x1f, 0x8b]) {
        return Ok(Err(InflateError::NotGzip));
    }
    let mut decoder = MultiGzDecoder::new(data);
    let mut out = Vec::new();
    let mut chunk = vec![0u8; 64 << 10];
    loop {
        let n = match decoder.read(&mut chunk) {
            Ok(0) => return Ok(Ok(out)),
            Ok(n) => n,
            Err(_) => return Ok(Err(InflateError::Corrupt)),
        };
        ctx.budget.charge_cpu(n as u64)?;
        if out.len() + n > MAX_INFLATED {
            return Ok(Err(InflateError::TooLarge));
        }
        out.extend_from_slice(&chunk[..n]);
    }
}

/// What one `gzip` run does.
struct GzMode {
    decompress: bool,
    stdout: bool,
    keep: bool,
    force: bool,
    level: u32,
}

/// `gzip [-cdkf1-9] [FILE]...`
pub(super) fn gzip(ctx: &mut Ctx<'_>, args: &[String]) -> Result<i32, Abort> {
    run(ctx, args, false, false)
}

/// `gunzip [-ckf] [FILE]...`
pub(super) fn gunzip(ctx: &mut Ctx<'_>, args: &[String]) -> Result<i32, Abort> {
    run(ctx, args, true, false)
}

/// `zcat [FILE]...`
pub(super) fn zcat(ctx: &mut Ctx<'_>, args: &[String]) -> Result<i32, Abort> {
    run(ctx, args, true, true)
}

/// The options of `gzip`, `gunzip` and `zcat` (their parser and `auto`'s
/// check read this one table).
pub(super) const GZIP_OPTIONS: Spec = Spec {
    short: "cdkfqvnN123456789",
    long: &[
        ("stdout", 'c'),
        ("to-stdout", 'c'),
        ("decompress", 'd'),
        ("uncompress", 'd'),
        ("keep", 'k'),
        ("force", 'f'),
        ("quiet", 'q'),
        ("verbose", 'v'),
        ("best", '9'),
        ("fast", '1'),
    ],
};

fn run(
    ctx: &mut Ctx<'_>,
    args: &[String],
    decompress: bool,
    to_stdout: bool,
) -> Result<i32, Abort> {
    let opts: Opts = match options(ctx, args, &GZIP_OPTIONS, 1)? {
        Ok(opts) => opts,
        Err(status) => return Ok(status),
    };
    let level = opts
        .last_of("123456789")
        .and_then(|c| c.to_digit(10))
        .unwrap_or(6);
    let mode = GzMode {
        decompress: decompress || opts.has('d'),
        stdout: to_stdout || opts.has('c'),
        keep: opts.has('k'),
        force: opts.has('f'),
        level,
    };
    let util = if mode.decompress && !decompress {
        "gzip"
    } else {
        args[0].as_str()
    };
    let util = base_name(util).to_string();
    if opts.operands.is_empty() || opts.operands == ["-"] {
        return stream(ctx, &util, &mode);
    }
    let mut status = 0;
    for operand in &opts.operands {
        status = status.max(one_file(ctx, &util, &mode, operand)?);
    }
    Ok(status)
}

/// stdin to stdout.
fn stream(ctx: &mut Ctx<'_>, util: &str, mode: &GzMode) -> Result<i32, Abort> {
    let input = ctx.stdin.all()?.to_vec();
    if !mode.decompress {
        let out = deflate(ctx, &input, mode.level, None, 0)?;
        ctx.stdout.write(&out)?;
        return Ok(0);
    }
    match inflate(ctx, &input)? {
        Ok(out) => {
            ctx.stdout.write(&out)?;
            Ok(0)
        }
        Err(error) => {
            ctx.error(util, &format!("stdin: {}", error.message()))?;
            Ok(1)
        }
    }
}

/// The name a compressed file decompresses to, if its suffix is known.
fn decompressed_name(name: &str) -> Option<String> {
    if let Some(stem) = name.strip_suffix(".tgz") {
        return Some(format!("{stem}.tar"));
    }
    [".gz", "-gz", ".z", "-z", "_z"]
        .iter()
        .find_map(|suffix| name.strip_suffix(suffix))
        .filter(|stem| !stem.is_empty() && !stem.ends_with('/'))
        .map(str::to_string)
}

fn one_file(ctx: &mut Ctx<'_>, util: &str, mode: &GzMode, operand: &str) -> Result<i32, Abort> {
    let found = ctx
        .path(operand)
        .and_then(|p| ctx.fs.stat(&p, true).map(|n| (p, n)));
    let (path, node) = match found {
        Ok(found) => found,
        Err(error) => {
            ctx.error(util, &format!("{operand}: {}", strerror(&error)))?;
            return Ok(1);
        }
    };
    if node.is_dir() {
        ctx.error(util, &format!("{operand} is a directory -- ignored"))?;
        return Ok(2);
    }
    let target = if mode.decompress {
        match decompressed_name(operand) {
            Some(name) => name,
            None if mode.stdout => String::new(),
            None => {
                ctx.error(util, &format!("{operand}: unknown suffix -- ignored"))?;
                return Ok(2);
            }
        }
    } else {
        if operand.ends_with(".gz") && !mode.stdout {
            ctx.error(
                util,
                &format!("{operand} already has .gz suffix -- unchanged"),
            )?;
            return Ok(0);
        }
        format!("{operand}.gz")
    };
    let data = match ctx.fs.read(&path) {
        Ok(data) => data,
        Err(error) => {
            ctx.error(util, &format!("{operand}: {}", strerror(&error)))?;
            return Ok(1);
        }
    };
    let out = if mode.decompress {
        match inflate(ctx, &data)? {
            Ok(out) => out,
            Err(error) => {
                ctx.error(util, &format!("{operand}: {}", error.message()))?;
                return Ok(1);
            }
        }
    } else {
        let mtime = u32::try_from(node.mtime / 1000).unwrap_or(0);
        deflate(ctx, &data, mode.level, Some(base_name(operand)), mtime)?
    };
    if mode.stdout {
        ctx.stdout.write(&out)?;
        return Ok(0);
    }
    write_result(ctx, util, mode, (&path, &node), &target, &out)
}

/// Writes the (de)compressed file next to the original, which goes unless `-k`.
fn write_result(
    ctx: &mut Ctx<'_>,
    util: &str,
    mode: &GzMode,
    (path, node): (&stead_vfs::VPath, &stead_vfs::Node),
    target: &str,
    out: &[u8],
) -> Result<i32, Abort> {
    let target_path = match ctx.path(target) {
        Ok(p) => p,
        Err(error) => {
            ctx.error(util, &format!("{target}: {}", strerror(&error)))?;
            return Ok(1);
        }
    };
    if !mode.force && ctx.fs.stat(&target_path, false).is_ok() {
        ctx.error(util, &format!("{target} already exists;\tnot overwritten"))?;
        return Ok(2);
    }
    let written = ctx.write_file(&target_path, out)?.and_then(|()| {
        ctx.fs.chmod(&target_path, node.mode)?;
        ctx.fs.touch(&target_path, Some(node.mtime))?;
        if mode.keep {
            Ok(())
        } else {
            ctx.fs.remove(path, false)
        }
    });
    if let Err(error) = written {
        ctx.error(util, &format!("{target}: {}", strerror(&error)))?;
        return Ok(1);
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use crate::utils::testing::{db, files, run};

    #[test]
    fn gzip_round_trip_and_keep() {
        let db = db();
        files(&db, &[("/a.txt", "hello hello hello\n")]);
        assert_eq!(run(&db, &["gzip", "/a.txt"], "").status, 0);
        assert_eq!(run(&db, &["ls", "/"], "").stdout, "a.txt.gz\n");
        assert_eq!(
            run(&db, &["zcat", "/a.txt.gz"], "").stdout,
            "hello hello hello\n"
        );
        assert_eq!(run(&db, &["gunzip", "-k", "/a.txt.gz"], "").status, 0);
        assert_eq!(run(&db, &["ls", "/"], "").stdout, "a.txt\na.txt.gz\n");
        let r = run(&db, &["gzip", "/a.txt"], "");
        assert_eq!(
            (r.status, r.stderr.as_str()),
            (2, "gzip: /a.txt.gz already exists;\tnot overwritten\n")
        );
        assert_eq!(run(&db, &["gzip", "-f", "/a.txt"], "").status, 0);
        assert_eq!(
            run(&db, &["gzip", "-dc", "/a.txt.gz"], "").stdout,
            "hello hello hello\n"
        );
    }

    #[test]
    fn gzip_errors() {
        let db = db();
        files(&db, &[("/u", "x"), ("/bad.gz", "not gzip")]);
        let r = run(&db, &["gunzip", "/u"], "");
        assert_eq!(
            (r.status, r.stderr.as_str()),
            (2, "gunzip: /u: unknown suffix -- ignored\n")
        );
        let r = run(&db, &["gunzip", "/bad.gz"], "");
        assert_eq!(
            (r.status, r.stderr.as_str()),
            (1, "gunzip: /bad.gz: not in gzip format\n")
        );
        let r = run(&db, &["gzip", "/nope"], "");
        assert_eq!(r.stderr, "gzip: /nope: No such file or directory\n");
    }

    #[test]
    fn gzip_output_is_real_gzip() {
        let db = db();
        files(&db, &[("/a", "abc")]);
        run(&db, &["gzip", "-k", "/a"], "");
        let vfs = stead_vfs::Vfs::new(&db, 0);
        let data = vfs
            .read_file(&stead_vfs::VPath::parse("/a.gz").unwrap())
            .unwrap();
        assert_eq!(&data[..3], &[0x1f, 0x8b, 8]);
        let mut text = String::new();
        std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&data[..]), &mut text)
            .unwrap();
        assert_eq!(text, "abc");
    }

    #[test]
    fn gzip_streams_stdin() {
        let db = db();
        files(&db, &[("/a", "abc")]);
        run(&db, &["gzip", "-k", "/a"], "");
        let vfs = stead_vfs::Vfs::new(&db, 0);
        let data = vfs
            .read_file(&stead_vfs::VPath::parse("/a.gz").unwrap())
            .unwrap();
        assert_eq!(data[3] & 0x08, 0x08, "the original name is stored");
        let r = run(&db, &["gzip", "-d"], "plain");
        assert_eq!(
            (r.status, r.stderr.as_str()),
            (1, "gzip: stdin: not in gzip format\n")
        );
    }
}
