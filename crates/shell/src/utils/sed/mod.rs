//! `sed`, the GNU stream editor: BRE by default, ERE with `-E`/`-r`,
//! in-place editing with `-i`, and GNU's extensions (`0,/re/`, `first~step`,
//! `addr,+N`, one-line `a text`, `\U`/`\L` in replacements, `Q`, `T`, `F`, `z`).
//!
//! The script is parsed once into a flat program ([`parse`]) and run by an
//! engine ([`exec`]). Regexes share `grep`'s POSIX translation; patterns
//! with back-references run on its backtracking matcher. Not supported:
//! the `e` command and flag (no processes here), and POSIX
//! leftmost-longest alternation (the `regex` crate is leftmost-first).

mod exec;
mod parse;

use super::{Ctx, Table};
use crate::limits::Abort;
use exec::{Engine, Settings, Stream};
use parse::Dialect;
use stead_vfs::Errno;

pub(crate) const UTILITIES: Table = &[("sed", sed)];

/// The command line.
#[derive(Debug, Default)]
struct Options {
    quiet: bool,
    extended: bool,
    separate: bool,
    null_data: bool,
    /// `-i`, with its backup suffix (empty: none).
    in_place: Option<String>,
    line_wrap: usize,
    /// Script pieces from `-e` (text) and `-f` (file names), in order.
    scripts: Vec<ScriptPart>,
    operands: Vec<String>,
}

#[derive(Debug)]
enum ScriptPart {
    Text(String),
    File(String),
}

const USAGE: &str = "Usage: sed [OPTION]... {script-only-if-no-other-script} [input-file]...\n";

fn sed(ctx: &mut Ctx<'_>, argv: &[String]) -> Result<i32, Abort> {
    let info = super::search::info_option(ctx, &argv[1..], "sed (GNU sed) 4.9\n", USAGE)?;
    if let Some(status) = info {
        return Ok(status);
    }
    let opts = match parse_options(&argv[1..]) {
        Ok(opts) => opts,
        Err(message) => {
            ctx.error("sed", &message)?;
            ctx.stderr.write_str(USAGE)?;
            return Ok(1);
        }
    };
    let Some(script) = script_text(ctx, &opts)? else {
        return Ok(1);
    };
    let quiet = opts.quiet || script.starts_with("#n\n") || script == "#n";
    let program = match parse::parse(
        &script,
        Dialect {
            extended: opts.extended,
        },
    ) {
        Ok(program) => program,
        Err(message) => {
            ctx.error("sed", &format!("-e expression #1, {message}"))?;
            return Ok(1);
        }
    };
    let settings = Settings {
        quiet,
        delimiter: if opts.null_data { 0 } else { b'\n' },
        line_wrap: opts.line_wrap,
    };
    let mut engine = Engine::new(&program, settings);
    let status = if opts.in_place.is_some() {
        edit_in_place(ctx, &opts, &mut engine)?
    } else {
        to_stdout(ctx, &opts, &mut engine)?
    };
    write_files(ctx, &engine)?;
    if let Some(message) = &engine.error {
        ctx.error("sed", &format!("-e expression #1, char 0: {message}"))?;
        return Ok(1);
    }
    Ok(engine.quit.unwrap_or(status))
}

/// Whether `sed` accepts `argv`'s options, as it reads them when it runs
/// (the script itself is not checked).
fn check_options(argv: &[String]) -> Result<(), String> {
    match super::search::info_request(&argv[1..]) {
        Some(_) => Ok(()),
        None => parse_options(&argv[1..]).map(drop),
    }
}

/// How `auto` checks `sed`'s options (see `utils::check_options`).
pub(crate) const OPTION_CHECKS: super::Checks = &[("sed", check_options)];

fn parse_options(args: &[String]) -> Result<Options, String> {
    let mut opts = Options {
        line_wrap: 70,
        ..Options::default()
    };
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        if arg == "--" {
            opts.operands.extend(args[i..].iter().cloned());
            break;
        }
        if let Some(long) = arg.strip_prefix("--") {
            i += long_option(&mut opts, long, args.get(i))?;
        } else if arg.len() > 1 && arg.starts_with('-') {
            i += short_options(&mut opts, &arg[1..], args.get(i))?;
        } else {
            opts.operands.push(arg.clone());
        }
    }
    if opts.scripts.is_empty() {
        if opts.operands.is_empty() {
            return Err("no script specified".into());
        }
        let script = opts.operands.remove(0);
        opts.scripts.push(ScriptPart::Text(script));
    }
    Ok(opts)
}

fn long_option(opts: &mut Options, text: &str, next: Option<&String>) -> Result<usize, String> {
    let (name, inline) = match text.split_once('=') {
        Some((n, v)) => (n, Some(v.to_string())),
        None => (text, None),
    };
    let mut used = 0;
    let mut value = || -> Result<String, String> {
        if let Some(v) = inline.clone() {
            return Ok(v);
        }
        used = 1;
        next.cloned()
            .ok_or(format!("option '--{name}' requires an argument"))
    };
    match name {
        "quiet" | "silent" => opts.quiet = true,
        "regexp-extended" => opts.extended = true,
        "separate" => opts.separate = true,
        "null-data" => opts.null_data = true,
        "in-place" => opts.in_place = Some(inline.clone().unwrap_or_default()),
        "expression" => opts.scripts.push(ScriptPart::Text(value()?)),
        "file" => opts.scripts.push(ScriptPart::File(value()?)),
        "line-length" => opts.line_wrap = value()?.parse().map_err(|_| "invalid line length")?,
        "posix" | "debug" | "unbuffered" | "follow-symlinks" | "sandbox" => {}
        _ => return Err(format!("unknown option -- '{name}'")),
    }
    Ok(used)
}

fn short_options(opts: &mut Options, bundle: &str, next: Option<&String>) -> Result<usize, String> {
    for (at, c) in bundle.char_indices() {
        let rest = &bundle[at + c.len_utf8()..];
        match c {
            'n' => opts.quiet = true,
            'E' | 'r' => opts.extended = true,
            's' => opts.separate = true,
            'z' => opts.null_data = true,
            'u' => {}
            'i' => {
                opts.in_place = Some(rest.to_string());
                return Ok(0);
            }
            'e' | 'f' | 'l' => {
                let (value, used) = if rest.is_empty() {
                    let value = next.ok_or(format!("option requires an argument -- '{c}'"))?;
                    (value.clone(), 1)
                } else {
                    (rest.to_string(), 0)
                };
                match c {
                    'e' => opts.scripts.push(ScriptPart::Text(value)),
                    'f' => opts.scripts.push(ScriptPart::File(value)),
                    _ => opts.line_wrap = value.parse().map_err(|_| "invalid line length")?,
                }
                return Ok(used);
            }
            _ => return Err(format!("invalid option -- '{c}'")),
        }
    }
    Ok(0)
}

/// The whole script: `-e` pieces and `-f` files joined by newlines.
fn script_text(ctx: &mut Ctx<'_>, opts: &Options) -> Result<Option<String>, Abort> {
    let mut pieces = Vec::new();
    for part in &opts.scripts {
        match part {
            ScriptPart::Text(text) => pieces.push(text.clone()),
            ScriptPart::File(name) => {
                let Some(bytes) = ctx.read_input("sed", name)? else {
                    return Ok(None);
                };
                let text = String::from_utf8_lossy(&bytes).into_owned();
                pieces.push(text.strip_suffix('\n').unwrap_or(&text).to_string());
            }
        }
    }
    Ok(Some(pieces.join("\n")))
}

/// Reads an input operand; on failure the message is printed as GNU does
/// and the exit status returned (2, or 4 for a directory).
fn read_operand(
    ctx: &mut Ctx<'_>,
    operand: &str,
    in_place: bool,
) -> Result<Result<Vec<u8>, i32>, Abort> {
    if operand == "-" {
        return Ok(Ok(ctx.stdin.all()?.to_vec()));
    }
    let read = ctx.path(operand).and_then(|path| ctx.fs.read(&path));
    match read {
        Ok(bytes) => {
            ctx.budget.charge_cpu(bytes.len() as u64)?;
            Ok(Ok(bytes))
        }
        Err(error) => {
            let text = super::strerror(&error);
            let message = if error.code() == Errno::Eisdir && in_place {
                format!("couldn't edit {operand}: not a regular file")
            } else if error.code() == Errno::Eisdir {
                format!("read error on {operand}: {text}")
            } else {
                format!("can't read {operand}: {text}")
            };
            ctx.error("sed", &message)?;
            Ok(Err(if error.code() == Errno::Eisdir { 4 } else { 2 }))
        }
    }
}

/// Runs over all operands (one stream, or one per file with `-s`), printing to stdout.
fn to_stdout(ctx: &mut Ctx<'_>, opts: &Options, engine: &mut Engine<'_>) -> Result<i32, Abort> {
    let operands = if opts.operands.is_empty() {
        vec!["-".to_string()]
    } else {
        opts.operands.clone()
    };
    let mut status = 0;
    let mut buffers = Vec::new();
    for operand in &operands {
        match read_operand(ctx, operand, false)? {
            Ok(data) => buffers.push((operand.clone(), data)),
            Err(code) => status = status.max(code),
        }
    }
    let delimiter = if opts.null_data { 0 } else { b'\n' };
    if opts.separate {
        for buffer in buffers {
            engine.reset_lines();
            engine.run(ctx, &mut Stream::new(vec![buffer], delimiter), true)?;
            if engine.quit.is_some() {
                break;
            }
        }
    } else {
        engine.run(ctx, &mut Stream::new(buffers, delimiter), true)?;
    }
    ctx.stdout.write(&std::mem::take(&mut engine.out))?;
    Ok(status)
}

/// `-i`: each file is its own stream, and its output replaces it.
fn edit_in_place(ctx: &mut Ctx<'_>, opts: &Options, engine: &mut Engine<'_>) -> Result<i32, Abort> {
    if opts.operands.is_empty() {
        ctx.error("sed", "no input files")?;
        return Ok(1);
    }
    let suffix = opts.in_place.clone().unwrap_or_default();
    let delimiter = if opts.null_data { 0 } else { b'\n' };
    let mut status = 0;
    for operand in &opts.operands {
        let data = match read_operand(ctx, operand, true)? {
            Ok(data) => data,
            Err(code) => {
                status = status.max(code);
                continue;
            }
        };
        let Ok(path) = ctx.path(operand) else {
            status = 2;
            continue;
        };
        if !suffix.is_empty() {
            let backup = backup_name(operand, &suffix);
            if let Ok(backup_path) = ctx.path(&backup) {
                if let Err(error) = ctx.write_file(&backup_path, &data)? {
                    ctx.fs_error("sed", &backup, &error)?;
                }
            }
        }
        engine.reset_lines();
        engine.run(
            ctx,
            &mut Stream::new(vec![(operand.clone(), data)], delimiter),
            false,
        )?;
        let output = std::mem::take(&mut engine.out);
        if let Err(error) = ctx.write_file(&path, &output)? {
            ctx.fs_error("sed", operand, &error)?;
            status = 4;
        }
        if engine.quit.is_some() {
            break;
        }
    }
    Ok(status)
}

/// GNU's backup name: `*` in the suffix stands for the file's base name.
fn backup_name(operand: &str, suffix: &str) -> String {
    if !suffix.contains('*') {
        return format!("{operand}{suffix}");
    }
    let (dir, base) = match operand.rsplit_once('/') {
        Some((dir, base)) => (format!("{dir}/"), base),
        None => (String::new(), operand),
    };
    let name = suffix.replace('*', base);
    if name.contains('/') {
        name
    } else {
        format!("{dir}{name}")
    }
}

/// Writes the content collected for `w` files.
fn write_files(ctx: &mut Ctx<'_>, engine: &Engine<'_>) -> Result<(), Abort> {
    for (name, data) in &engine.writes {
        let path = match ctx.path(name) {
            Ok(path) => path,
            Err(error) => {
                ctx.fs_error("sed", name, &error)?;
                continue;
            }
        };
        if let Err(error) = ctx.write_file(&path, data)? {
            ctx.fs_error("sed", &format!("couldn't open file {name}"), &error)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
