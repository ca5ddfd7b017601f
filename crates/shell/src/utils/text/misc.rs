//! Small utilities around text pipelines: `basename`, `dirname`, `seq`,
//! `yes`, `env`, `printenv`, `sleep`, `timeout`, `xargs`.
//!
//! The light shell has one thread and no processes, so `sleep` does not
//! wait (it checks the wall budget and returns), and `timeout` runs its
//! command to completion under the exec's own wall-time limit rather than
//! its own duration. `env NAME=VALUE cmd` calls a utility directly with the
//! changed environment; builtins and functions run through the runner,
//! which has no environment parameter, so they see the caller's.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::{flag, getopt, getopt_until, usage, with_arg, Opt};
use crate::limits::{Abort, LimitKind};
use crate::utils::{lookup, Ctx};

pub(super) fn basename(ctx: &mut Ctx<'_>, argv: &[String]) -> Result<i32, Abort> {
    let opts = [
        flag('a', "multiple"),
        with_arg('s', "suffix"),
        flag('z', "zero"),
    ];
    let parsed = match getopt(&argv[1..], &opts) {
        Ok(p) => p,
        Err(message) => return usage(ctx, "basename", &message, 1),
    };
    let names = &parsed.operands;
    if names.is_empty() {
        return usage(ctx, "basename", "missing operand", 1);
    }
    let multiple = parsed.has('a') || parsed.has('s');
    let (names, suffix): (&[String], Option<&str>) = if multiple {
        (names, parsed.value('s'))
    } else if names.len() <= 2 {
        (&names[..1], names.get(1).map(String::as_str))
    } else {
        return usage(ctx, "basename", &format!("extra operand ‘{}’", names[2]), 1);
    };
    let end = if parsed.has('z') { '\0' } else { '\n' };
    let mut out = String::new();
    for name in names {
        out.push_str(&base_of(name, suffix));
        out.push(end);
    }
    ctx.stdout.write_str(&out).map(|()| 0)
}

/// The last component of `name`, minus `suffix` unless that is all of it.
fn base_of(name: &str, suffix: Option<&str>) -> String {
    let trimmed = name.trim_end_matches('/');
    if trimmed.is_empty() {
        return if name.is_empty() {
            String::new()
        } else {
            "/".to_string()
        };
    }
    let base = trimmed.rsplit('/').next().unwrap_or(trimmed);
    match suffix {
        Some(s) if !s.is_empty() && base.len() > s.len() && base.ends_with(s) => {
            base[..base.len() - s.len()].to_string()
        }
        _ => base.to_string(),
    }
}

pub(super) fn dirname(ctx: &mut Ctx<'_>, argv: &[String]) -> Result<i32, Abort> {
    let parsed = match getopt(&argv[1..], &[flag('z', "zero")]) {
        Ok(p) => p,
        Err(message) => return usage(ctx, "dirname", &message, 1),
    };
    if parsed.operands.is_empty() {
        return usage(ctx, "dirname", "missing operand", 1);
    }
    let end = if parsed.has('z') { '\0' } else { '\n' };
    let mut out = String::new();
    for name in &parsed.operands {
        out.push_str(dir_of(name));
        out.push(end);
    }
    ctx.stdout.write_str(&out).map(|()| 0)
}

/// `name` without its last component (`.` if it has none).
fn dir_of(name: &str) -> &str {
    let trimmed = name.trim_end_matches('/');
    if trimmed.is_empty() {
        return if name.is_empty() { "." } else { "/" };
    }
    match trimmed.rfind('/') {
        None => ".",
        Some(at) => {
            let dir = trimmed[..at].trim_end_matches('/');
            if dir.is_empty() {
                "/"
            } else {
                dir
            }
        }
    }
}

/// A `seq` operand: its value and how many decimals it was written with.
#[derive(Clone, Copy)]
struct SeqNumber {
    value: f64,
    decimals: usize,
}

fn seq_number(text: &str) -> Option<SeqNumber> {
    let value: f64 = text.trim().parse().ok()?;
    if value.is_nan() {
        return None;
    }
    let lower = text.to_ascii_lowercase();
    let decimals = match (lower.find('.'), lower.contains('e')) {
        (Some(dot), false) => lower.len() - dot - 1,
        _ => 0,
    };
    Some(SeqNumber { value, decimals })
}

pub(super) fn seq(ctx: &mut Ctx<'_>, argv: &[String]) -> Result<i32, Abort> {
    let opts = [
        with_arg('s', "separator"),
        flag('w', "equal-width"),
        with_arg('f', "format"),
    ];
    let args: Vec<String> = argv[1..].to_vec();
    // Negative numbers are operands, not options.
    let split = args
        .iter()
        .position(|a| {
            a.starts_with('-')
                && a.len() > 1
                && a[1..].starts_with(|c: char| c.is_ascii_digit() || c == '.')
        })
        .unwrap_or(args.len());
    let mut parsed = match getopt(&args[..split], &opts) {
        Ok(p) => p,
        Err(message) => return usage(ctx, "seq", &message, 1),
    };
    parsed.operands.extend(args[split..].iter().cloned());
    let (first, step, last) = match seq_operands(&parsed.operands) {
        Ok(numbers) => numbers,
        Err(message) => return usage(ctx, "seq", &message, 1),
    };
    let separator = parsed.value('s').unwrap_or("\n").to_string();
    let decimals = first.decimals.max(step.decimals);
    let width = if parsed.has('w') {
        let shown = |n: f64| format!("{n:.decimals$}").len();
        shown(first.value).max(shown(last.value))
    } else {
        0
    };
    let format = parsed.value('f').map(str::to_string);
    let render = |value: f64| match &format {
        Some(f) => format_float(f, value),
        None if width > 0 => zero_pad(&format!("{value:.decimals$}"), width),
        None => format!("{value:.decimals$}"),
    };
    let range = (first.value, step.value, last.value);
    emit_seq(ctx, range, &separator, render)
}

/// FIRST, INCREMENT and LAST from one to three operands, or GNU's complaint.
fn seq_operands(operands: &[String]) -> Result<(SeqNumber, SeqNumber, SeqNumber), String> {
    let mut numbers = Vec::with_capacity(operands.len());
    for operand in operands {
        let number = seq_number(operand)
            .ok_or_else(|| format!("invalid floating point argument: ‘{operand}’"))?;
        numbers.push(number);
    }
    let one = SeqNumber {
        value: 1.0,
        decimals: 0,
    };
    let (first, step, last) = match numbers.as_slice() {
        [last] => (one, one, *last),
        [first, last] => (*first, one, *last),
        [first, step, last] => (*first, *step, *last),
        [] => return Err("missing operand".to_string()),
        _ => return Err(format!("extra operand ‘{}’", operands[3])),
    };
    if step.value == 0.0 {
        return Err(format!("invalid Zero increment value: ‘{}’", operands[1]));
    }
    Ok((first, step, last))
}

/// Writes the numbers in chunks, so the output cap stops a huge `seq` early.
fn emit_seq(
    ctx: &mut Ctx<'_>,
    (first, step, last): (f64, f64, f64),
    separator: &str,
    render: impl Fn(f64) -> String,
) -> Result<i32, Abort> {
    let mut chunk = String::new();
    let mut index = 0u64;
    loop {
        let value = first + step * index as f64;
        if (step > 0.0 && value > last + 1e-10 * step.abs())
            || (step < 0.0 && value < last - 1e-10 * step.abs())
        {
            break;
        }
        // Charged per number: with an empty format and separator nothing
        // would reach the output cap.
        ctx.budget.charge_cpu(1)?;
        if index > 0 {
            chunk.push_str(separator);
        }
        chunk.push_str(&render(value));
        index += 1;
        if chunk.len() >= 1 << 16 {
            ctx.budget.charge_cpu(chunk.len() as u64)?;
            ctx.stdout.write_str(&chunk)?;
            chunk.clear();
        }
    }
    if index > 0 {
        chunk.push('\n');
    }
    ctx.budget.charge_cpu(chunk.len() as u64)?;
    ctx.stdout.write_str(&chunk).map(|()| 0)
}

/// Pads a number with zeros after its sign to `width`.
fn zero_pad(number: &str, width: usize) -> String {
    let (sign, digits) = match number.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", number),
    };
    format!("{sign}{digits:0>w$}", w = width.saturating_sub(sign.len()))
}

/// `printf`-style formatting of one float for `seq -f`: `%[flags][width][.prec]{f,g,e,G,E}`.
pub(super) fn format_float(format: &str, value: f64) -> String {
    let mut out = String::new();
    let mut rest = format;
    while let Some(at) = rest.find('%') {
        out.push_str(&rest[..at]);
        let spec = &rest[at + 1..];
        if let Some(after) = spec.strip_prefix('%') {
            out.push('%');
            rest = after;
            continue;
        }
        let end = spec
            .find(|c: char| c.is_ascii_alphabetic())
            .unwrap_or(spec.len());
        let conversion = spec[end..].chars().next().unwrap_or('g');
        out.push_str(&convert_one(&spec[..end], conversion, value));
        rest = &spec[(end + 1).min(spec.len())..];
    }
    out.push_str(rest);
    out
}

/// One conversion: `flags_width` is like `-08.3`.
fn convert_one(flags_width: &str, conversion: char, value: f64) -> String {
    let flags: String = flags_width
        .chars()
        .take_while(|c| "-+ 0#".contains(*c))
        .collect();
    let rest = &flags_width[flags.len()..];
    let (width, precision) = match rest.split_once('.') {
        Some((w, p)) => (w.parse().unwrap_or(0), Some(p.parse().unwrap_or(0))),
        None => (rest.parse().unwrap_or(0), None),
    };
    let mut body = match conversion {
        'f' | 'F' => format!("{value:.p$}", p = precision.unwrap_or(6)),
        'e' | 'E' => c_exponent(value, precision.unwrap_or(6)),
        _ => c_general(value, precision.unwrap_or(6)),
    };
    if conversion.is_ascii_uppercase() {
        body = body.to_ascii_uppercase();
    }
    if flags.contains('+') && value >= 0.0 {
        body.insert(0, '+');
    }
    if body.len() >= width {
        body
    } else if flags.contains('-') {
        format!("{body:<width$}")
    } else if flags.contains('0') {
        zero_pad(&body, width)
    } else {
        format!("{body:>width$}")
    }
}

/// C's `%.Ne`: mantissa and a two-digit (at least) signed exponent.
fn c_exponent(value: f64, precision: usize) -> String {
    let text = format!("{value:.precision$e}");
    let (mantissa, exponent) = text.split_once('e').unwrap_or((&text, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let sign = if exponent < 0 { '-' } else { '+' };
    format!("{mantissa}e{sign}{:02}", exponent.abs())
}

/// C's `%.Ng`: the shorter of `%f`/`%e` by the exponent rule, trailing zeros dropped.
fn c_general(value: f64, precision: usize) -> String {
    let precision = precision.max(1);
    if value == 0.0 {
        return "0".to_string();
    }
    let exponent = value.abs().log10().floor() as i32;
    let strip = |s: String| {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    };
    if exponent < -4 || exponent >= precision as i32 {
        let text = c_exponent(value, precision - 1);
        let (mantissa, exp) = text.split_once('e').unwrap_or((&text, ""));
        format!("{}e{exp}", strip(mantissa.to_string()))
    } else {
        let decimals = (precision as i32 - 1 - exponent).max(0) as usize;
        strip(format!("{value:.decimals$}"))
    }
}

pub(super) fn yes(ctx: &mut Ctx<'_>, argv: &[String]) -> Result<i32, Abort> {
    let line = if argv.len() > 1 {
        format!("{}\n", argv[1..].join(" "))
    } else {
        "y\n".to_string()
    };
    let chunk = line.repeat((8192 / line.len()).max(1));
    // Ends only when the output cap (or the CPU budget) says so.
    loop {
        ctx.budget.charge_cpu(chunk.len() as u64)?;
        ctx.stdout.write_str(&chunk)?;
    }
}

pub(super) fn printenv(ctx: &mut Ctx<'_>, argv: &[String]) -> Result<i32, Abort> {
    let parsed = match getopt(&argv[1..], &[flag('0', "null")]) {
        Ok(p) => p,
        Err(message) => return usage(ctx, "printenv", &message, 2),
    };
    let end = if parsed.has('0') { '\0' } else { '\n' };
    if parsed.operands.is_empty() {
        let listing = listing(ctx.env, end);
        return ctx.stdout.write_str(&listing).map(|()| 0);
    }
    let mut out = String::new();
    let mut missing = false;
    for name in &parsed.operands {
        match ctx.env.get(name) {
            Some(value) => {
                out.push_str(value);
                out.push(end);
            }
            None => missing = true,
        }
    }
    ctx.stdout.write_str(&out)?;
    Ok(i32::from(missing))
}

fn listing(env: &BTreeMap<String, String>, end: char) -> String {
    let mut out = String::new();
    for (name, value) in env {
        let _ = write!(out, "{name}={value}{end}");
    }
    out
}

pub(super) fn env(ctx: &mut Ctx<'_>, argv: &[String]) -> Result<i32, Abort> {
    let opts = [
        flag('i', "ignore-environment"),
        with_arg('u', "unset"),
        flag('0', "null"),
        with_arg('C', "chdir"),
    ];
    let args = &argv[1..];
    // A lone `-` means -i, as in GNU.
    let args: Vec<String> = args
        .iter()
        .map(|a| {
            if a == "-" {
                "-i".to_string()
            } else {
                a.clone()
            }
        })
        .collect();
    let parsed = match getopt_until(&args, &opts, true) {
        Ok(p) => p,
        Err(message) => return usage(ctx, "env", &message, 125),
    };
    let mut vars = if parsed.has('i') {
        BTreeMap::new()
    } else {
        ctx.env.clone()
    };
    for (key, value) in &parsed.opts {
        if *key == 'u' {
            vars.remove(value);
        }
    }
    let mut rest = parsed.operands.as_slice();
    while let Some((name, value)) = rest.first().and_then(|a| a.split_once('=')) {
        vars.insert(name.to_string(), value.to_string());
        rest = &rest[1..];
    }
    if rest.is_empty() {
        let end = if parsed.has('0') { '\0' } else { '\n' };
        return ctx.stdout.write_str(&listing(&vars, end)).map(|()| 0);
    }
    run_with_env(ctx, rest, &vars)
}

/// Builtins that are also programs on a Linux system, so `env` can run them.
const PROGRAM_BUILTINS: &[&str] = &[
    "echo", "printf", "true", "false", "test", "[", "pwd", "kill",
];

/// Runs a utility directly with `vars` as its environment. `env` runs
/// programs, never shell functions or shell-only builtins (as GNU env:
/// `No such file or directory`); a builtin that is also a program, or a
/// script on `$PATH`, runs through the runner, with the caller's
/// environment.
fn run_with_env(
    ctx: &mut Ctx<'_>,
    argv: &[String],
    vars: &BTreeMap<String, String>,
) -> Result<i32, Abort> {
    let Some(utility) = lookup(&argv[0]) else {
        let name = argv[0].as_str();
        let on_path = || {
            vars.get("PATH").is_some_and(|path| {
                path.split(':').filter(|d| !d.is_empty()).any(|dir| {
                    ctx.path(&format!("{dir}/{name}"))
                        .ok()
                        .and_then(|p| ctx.fs.stat(&p, true).ok())
                        .is_some_and(|n| n.kind == stead_vfs::Kind::File)
                })
            })
        };
        if name.contains('/') || PROGRAM_BUILTINS.contains(&name) || on_path() {
            return run_command(ctx, "env", argv, ctx.stdin);
        }
        ctx.error("env", &format!("‘{name}’: No such file or directory"))?;
        return Ok(127);
    };
    ctx.budget.charge_command()?;
    let mut inner = Ctx {
        fs: ctx.fs,
        clock: ctx.clock,
        budget: ctx.budget,
        cwd: ctx.cwd,
        env: vars,
        stdin: ctx.stdin,
        stdout: &mut *ctx.stdout,
        stderr: &mut *ctx.stderr,
        runner: &mut *ctx.runner,
    };
    utility(&mut inner, argv)
}

/// Runs `argv` through the runner; 127 (with GNU's message) if it is unknown.
fn run_command(
    ctx: &mut Ctx<'_>,
    util: &str,
    argv: &[String],
    stdin: crate::io::Stdin<'_>,
) -> Result<i32, Abort> {
    let mut errors = crate::io::Output::with_cap(ctx.stderr.cap().saturating_sub(ctx.stderr.len()));
    let status = ctx.runner.run(argv, stdin, ctx.stdout, &mut errors)?;
    let not_found = format!("{}: command not found\n", argv[0]);
    if status == 127 && errors.as_bytes() == not_found.as_bytes() {
        let message = match util {
            "xargs" => format!("{}: No such file or directory", argv[0]),
            _ => format!("‘{}’: No such file or directory", argv[0]),
        };
        ctx.error(util, &message)?;
    } else {
        ctx.stderr.write(errors.as_bytes())?;
    }
    Ok(status)
}

/// Parses `sleep`/`timeout` durations: a number with an optional s/m/h/d.
fn duration_ms(text: &str) -> Option<f64> {
    let (number, unit) = match text.char_indices().last() {
        Some((at, c)) if "smhd".contains(c) => (&text[..at], c),
        _ => (text, 's'),
    };
    let value: f64 = number.parse().ok()?;
    if value.is_nan() || value < 0.0 || number.starts_with('+') && number.len() == 1 {
        return None;
    }
    let scale = match unit {
        'm' => 60.0,
        'h' => 3600.0,
        'd' => 86400.0,
        _ => 1.0,
    };
    Some(value * scale * 1000.0)
}

/// `sleep`: waits for the sum of its operands, for real when the host's
/// clock can block (on the host); in a Worker's isolate, which cannot block
/// inside an exec, the exec's clock moves forward instead (so `date` and
/// the wall limit see the time pass) without waiting. A sleep reaching past
/// the wall limit (or an enclosing `timeout`) waits until then and ends
/// there with that limit, as a real `sleep` would be killed.
pub(super) fn sleep(ctx: &mut Ctx<'_>, argv: &[String]) -> Result<i32, Abort> {
    let parsed = match getopt(&argv[1..], &[]) {
        Ok(p) => p,
        Err(message) => return usage(ctx, "sleep", &message, 1),
    };
    if parsed.operands.is_empty() {
        return usage(ctx, "sleep", "missing operand", 1);
    }
    let mut total_ms = 0.0;
    for operand in &parsed.operands {
        match duration_ms(operand) {
            Some(ms) => total_ms += ms,
            None => {
                return usage(
                    ctx,
                    "sleep",
                    &format!("invalid time interval ‘{operand}’"),
                    1,
                )
            }
        }
    }
    ctx.budget.check_time(ctx.clock)?;
    let wanted = total_ms.ceil().min(u64::MAX as f64) as u64;
    let left = ctx.budget.remaining_ms(ctx.clock);
    if wanted > left {
        ctx.clock.sleep_ms(left);
        return Err(Abort::Limit(LimitKind::WallTime));
    }
    ctx.clock.sleep_ms(wanted);
    Ok(0)
}

/// `timeout DURATION COMMAND`: runs the command with a deadline; when it
/// passes (checked where the shell checks the wall clock: `sleep`, loops,
/// every few hundred commands) the command is stopped and `timeout` exits
/// 124, as GNU's does when it kills the command. A duration of 0 sets no
/// deadline.
pub(super) fn timeout(ctx: &mut Ctx<'_>, argv: &[String]) -> Result<i32, Abort> {
    let opts = [
        with_arg('s', "signal"),
        with_arg('k', "kill-after"),
        flag('v', "verbose"),
        flag('\u{1}', "preserve-status"),
        flag('\u{2}', "foreground"),
    ];
    let parsed = match getopt_until(&argv[1..], &opts, true) {
        Ok(p) => p,
        Err(message) => return usage(ctx, "timeout", &message, 125),
    };
    let Some((limit, command)) = parsed.operands.split_first() else {
        return usage(ctx, "timeout", "missing operand", 125);
    };
    let Some(duration) = duration_ms(limit) else {
        return usage(
            ctx,
            "timeout",
            &format!("invalid time interval ‘{limit}’"),
            125,
        );
    };
    if command.is_empty() {
        return usage(
            ctx,
            "timeout",
            &format!("missing operand after ‘{limit}’"),
            125,
        );
    }
    ctx.budget.check_time(ctx.clock)?;
    if duration == 0.0 {
        return run_command(ctx, "timeout", command, ctx.stdin);
    }
    let deadline = ctx
        .clock
        .now_ms()
        .saturating_add(duration.ceil().min(u64::MAX as f64) as u64);
    ctx.budget.start_deadline(deadline);
    let ran = run_command(ctx, "timeout", command, ctx.stdin);
    ctx.budget.end_deadline();
    match ran {
        Err(Abort::Limit(LimitKind::WallTime))
            if ctx.budget.deadline_passed(deadline, ctx.clock) =>
        {
            if parsed.has('v') {
                ctx.error(
                    "timeout",
                    &format!("sending signal TERM to command ‘{}’", command[0]),
                )?;
            }
            Ok(if parsed.has('\u{1}') { 128 + 15 } else { 124 })
        }
        other => other,
    }
}

pub(super) const XARGS_OPTS: &[Opt] = &[
    with_arg('n', "max-args"),
    with_arg('I', ""),
    with_arg('i', "replace"),
    with_arg('L', "max-lines"),
    flag('0', "null"),
    with_arg('d', "delimiter"),
    flag('r', "no-run-if-empty"),
    flag('t', "verbose"),
    with_arg('P', "max-procs"),
    with_arg('s', "max-chars"),
    with_arg('E', "eof"),
    flag('x', "exit"),
    with_arg('a', "arg-file"),
];

pub(super) fn xargs(ctx: &mut Ctx<'_>, argv: &[String]) -> Result<i32, Abort> {
    let parsed = match getopt_until(&argv[1..], XARGS_OPTS, true) {
        Ok(p) => p,
        Err(message) => return usage(ctx, "xargs", &message, 1),
    };
    let replace = parsed.value('I').or(parsed
        .value('i')
        .map(|v| if v.is_empty() { "{}" } else { v }));
    let input = match parsed.value('a') {
        Some(file) => match super::read_operand(ctx, file)? {
            Ok(bytes) => bytes,
            Err(error) => return ctx.fs_error("xargs", file, &error).map(|()| 1),
        },
        None => {
            let stdin = ctx.stdin.all()?;
            ctx.budget.charge_cpu(stdin.len() as u64)?;
            stdin.to_vec()
        }
    };
    let items = match split_items(&input, &parsed, replace.is_some()) {
        Ok(items) => items,
        Err(message) => {
            ctx.error("xargs", &message)?;
            return Ok(1);
        }
    };
    let command: Vec<String> = if parsed.operands.is_empty() {
        vec!["echo".to_string()]
    } else {
        parsed.operands.clone()
    };
    let batches = batch(items, &parsed, replace.is_some());
    if batches.is_empty() && (parsed.has('r') || replace.is_some()) {
        return Ok(0);
    }
    let batches = if batches.is_empty() {
        vec![Vec::new()]
    } else {
        batches
    };
    let mut status = 0;
    for items in batches {
        ctx.budget.charge_iteration()?;
        let argv = build_argv(&command, items, replace);
        if parsed.has('t') {
            ctx.stderr.write_str(&format!("{}\n", argv.join(" ")))?;
        }
        match run_command(ctx, "xargs", &argv, crate::io::Stdin::complete(&[]))? {
            0 => {}
            code @ (126 | 127) => return Ok(code),
            255 => return Ok(124),
            _ => status = 123,
        }
    }
    Ok(status)
}

/// The command line of one invocation.
fn build_argv(command: &[String], items: Vec<String>, replace: Option<&str>) -> Vec<String> {
    match replace {
        Some(marker) => {
            let item = items.concat();
            command.iter().map(|a| a.replace(marker, &item)).collect()
        }
        None => command.iter().cloned().chain(items).collect(),
    }
}

/// Splits the input into arguments: by `-0`/`-d` exactly, by lines with
/// `-I`, or by blanks honouring quotes and backslashes.
fn split_items(input: &[u8], parsed: &super::Parsed, lines: bool) -> Result<Vec<String>, String> {
    let text = String::from_utf8_lossy(input);
    let delimiter = if parsed.has('0') {
        Some('\0')
    } else {
        parsed.value('d').map(delimiter_char)
    };
    let mut items: Vec<String> = match delimiter {
        Some(d) => {
            let mut items: Vec<String> = text.split(d).map(str::to_string).collect();
            if items.last().is_some_and(String::is_empty) {
                items.pop();
            }
            items
        }
        None if lines => text
            .lines()
            .map(|l| l.trim_start().to_string())
            .filter(|l| !l.is_empty())
            .collect(),
        None => shell_words(&text)?,
    };
    if let Some(eof) = parsed.value('E') {
        if let Some(at) = items.iter().position(|i| i == eof) {
            items.truncate(at);
        }
    }
    Ok(items)
}

fn delimiter_char(text: &str) -> char {
    match text {
        "\\n" => '\n',
        "\\t" => '\t',
        "\\0" => '\0',
        _ => text.chars().next().unwrap_or('\n'),
    }
}

/// xargs' default word splitting.
fn shell_words(text: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' | '\n' => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\'' | '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some(q) if q == c => break,
                        Some('\n') | None => {
                            let kind = if c == '\'' { "single" } else { "double" };
                            return Err(format!(
                                "unmatched {kind} quote; by default quotes are special to xargs unless you use the -0 option"
                            ));
                        }
                        Some(other) => word.push(other),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(next) = chars.next() {
                    word.push(next);
                }
            }
            other => {
                in_word = true;
                word.push(other);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Ok(words)
}

/// Groups items per invocation (`-n`, `-L`; one per invocation with `-I`).
fn batch(items: Vec<String>, parsed: &super::Parsed, replace: bool) -> Vec<Vec<String>> {
    let per = if replace {
        1
    } else {
        parsed
            .value('n')
            .or(parsed.value('L'))
            .and_then(|v| v.parse::<usize>().ok())
            .filter(|n| *n > 0)
            .unwrap_or(usize::MAX)
    };
    if items.is_empty() {
        return Vec::new();
    }
    items
        .chunks(per.min(items.len()))
        .map(<[String]>::to_vec)
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::io::Output;
    use crate::limits::{Abort, Budget, Clock, LimitKind, Limits};
    use crate::utils::testing::{db, run, FixedClock, UtilRunner};
    use crate::utils::Ctx;

    fn out(argv: &[&str], stdin: &str) -> String {
        run(&db(), argv, stdin).stdout
    }

    #[test]
    fn basename_and_dirname_match_gnu() {
        assert_eq!(
            out(&["basename", "/path/to/file.txt", ".txt"], ""),
            "file\n"
        );
        assert_eq!(
            out(&["basename", "/path/to/file.txt", ".md"], ""),
            "file.txt\n"
        );
        assert_eq!(out(&["basename", "/path/to/dir/"], ""), "dir\n");
        assert_eq!(
            out(
                &["basename", "-a", "-s", ".txt", "/p/one.txt", "two.txt"],
                ""
            ),
            "one\ntwo\n"
        );
        assert_eq!(out(&["basename", "/"], ""), "/\n");
        assert_eq!(out(&["basename", ".txt", ".txt"], ""), ".txt\n");
        assert_eq!(out(&["dirname", "/path/to/dir/"], ""), "/path/to\n");
        assert_eq!(out(&["dirname", "file.txt"], ""), ".\n");
        assert_eq!(out(&["dirname", "/file.txt"], ""), "/\n");
        assert_eq!(out(&["dirname", "a/b", "/a/b//"], ""), "a\n/a\n");
        assert_eq!(run(&db(), &["basename"], "").status, 1);
    }

    #[test]
    fn seq_counts_formats_and_pads() {
        assert_eq!(out(&["seq", "3"], ""), "1\n2\n3\n");
        assert_eq!(out(&["seq", "1", "2", "10"], ""), "1\n3\n5\n7\n9\n");
        assert_eq!(out(&["seq", "5", "-1", "3"], ""), "5\n4\n3\n");
        assert_eq!(out(&["seq", "0.5", "0.5", "2"], ""), "0.5\n1.0\n1.5\n2.0\n");
        assert_eq!(out(&["seq", "1", "0.1", "1.3"], ""), "1.0\n1.1\n1.2\n1.3\n");
        assert_eq!(out(&["seq", "-w", "8", "11"], ""), "08\n09\n10\n11\n");
        assert_eq!(out(&["seq", "-w", "-1", "1"], ""), "-1\n00\n01\n");
        assert_eq!(out(&["seq", "-s,", "3"], ""), "1,2,3\n");
        assert_eq!(out(&["seq", "-f", "%03g", "3"], ""), "001\n002\n003\n");
        assert_eq!(out(&["seq", "-f", "n%.2f", "2"], ""), "n1.00\nn2.00\n");
        assert_eq!(out(&["seq", "10", "1"], ""), "");
        let bad = run(&db(), &["seq", "abc"], "");
        assert_eq!(
            (bad.status, bad.stderr.lines().next()),
            (1, Some("seq: invalid floating point argument: ‘abc’"))
        );
    }

    /// Runs a utility with a budget that starts at the test clock's time
    /// (so wall-time checks pass) and a small output cap.
    fn run_timed(argv: &[&str], stdin: &[u8], cap: usize) -> (Result<i32, Abort>, Vec<u8>) {
        let db = db();
        let vfs = stead_vfs::Vfs::new(&db, 0);
        let budget = Budget::new(Limits::default(), FixedClock.now_ms());
        let cwd = stead_vfs::VPath::root();
        let env = std::collections::BTreeMap::new();
        let (mut stdout, mut stderr) = (Output::with_cap(cap), Output::with_cap(cap));
        let mut runner = UtilRunner {
            fs: &vfs,
            budget: &budget,
            cwd: &cwd,
            env: &env,
        };
        let mut ctx = Ctx {
            fs: &vfs,
            clock: &FixedClock,
            budget: &budget,
            cwd: &cwd,
            env: &env,
            stdin: crate::io::Stdin::complete(stdin),
            stdout: &mut stdout,
            stderr: &mut stderr,
            runner: &mut runner,
        };
        let argv: Vec<String> = argv.iter().map(|a| a.to_string()).collect();
        let result = crate::utils::lookup(&argv[0]).expect("utility")(&mut ctx, &argv);
        (result, stdout.into_bytes())
    }

    #[test]
    fn yes_stops_at_the_output_cap() {
        let (result, out) = run_timed(&["yes", "ok"], b"", 100);
        assert_eq!(result, Err(Abort::Limit(LimitKind::OutputBytes)));
        assert_eq!(out.len(), 100);
        assert!(out.starts_with(b"ok\nok\n"));
    }

    #[test]
    fn env_and_printenv() {
        assert_eq!(out(&["env", "-i", "A=1", "B=2"], ""), "A=1\nB=2\n");
        assert_eq!(out(&["env", "-i", "A=1", "printenv", "A"], ""), "1\n");
        assert_eq!(out(&["env", "X=y", "env"], ""), "X=y\n");
        let missing = run(&db(), &["printenv", "NOPE"], "");
        assert_eq!((missing.stdout.as_str(), missing.status), ("", 1));
        let unknown = run(&db(), &["env", "nosuch"], "");
        assert_eq!(
            (unknown.status, unknown.stderr.as_str()),
            (127, "env: ‘nosuch’: No such file or directory\n")
        );
    }

    /// The unit tests' clock cannot block and stands still: a sleep within
    /// the wall limit returns at once, one past it ends with the limit.
    #[test]
    fn sleep_and_timeout_on_a_clock_that_cannot_block() {
        assert_eq!(run_timed(&["sleep", "0.1"], b"", 10).0, Ok(0));
        assert_eq!(run_timed(&["sleep", "1", "0.5"], b"", 10).0, Ok(0));
        assert_eq!(
            run_timed(&["sleep", "1m"], b"", 10).0,
            Err(Abort::Limit(LimitKind::WallTime))
        );
        assert_eq!(run(&db(), &["sleep", "x"], "").status, 1);
        assert_eq!(run(&db(), &["sleep"], "").status, 1);
        assert_eq!(
            run_timed(&["timeout", "5", "cat"], b"in\n", 10),
            (Ok(0), b"in\n".to_vec())
        );
        assert_eq!(run(&db(), &["timeout", "x", "cat"], "").status, 125);
        assert_eq!(run_timed(&["timeout", "1s", "seq", "x"], b"", 99).0, Ok(1));
    }

    #[test]
    fn xargs_batches_replaces_and_reports() {
        assert_eq!(
            out(&["xargs", "-n", "2", "dirname"], "/a/x /b/y /c/z\n"),
            "/a\n/b\n/c\n"
        );
        assert_eq!(out(&["xargs", "basename"], "/a/x.c .c\n"), "x\n");
        assert_eq!(
            out(&["xargs", "-n", "1", "basename"], "'/a b/c' \"d\"\\ e\n"),
            "c\nd e\n"
        );
        assert_eq!(
            out(
                &["xargs", "-I", "{}", "basename", "/p/{}.txt", ".txt"],
                "x\n y\n"
            ),
            "x\ny\n"
        );
        assert_eq!(
            out(&["xargs", "-0", "-n1", "dirname"], "/a/b\0/c/d\0"),
            "/a\n/c\n"
        );
        assert_eq!(out(&["xargs", "-d,", "-n1", "basename"], "a,b"), "a\nb\n");
        assert_eq!(out(&["xargs", "-r", "seq"], ""), "");
        let traced = run(&db(), &["xargs", "-t", "seq"], "2\n");
        assert_eq!(
            (traced.stdout.as_str(), traced.stderr.as_str()),
            ("1\n2\n", "seq 2\n")
        );
        assert_eq!(run(&db(), &["xargs", "seq"], "x\n").status, 123);
        let unknown = run(&db(), &["xargs", "nosuch"], "a\n");
        assert_eq!(
            (unknown.status, unknown.stderr.as_str()),
            (127, "xargs: nosuch: No such file or directory\n")
        );
        assert_eq!(run(&db(), &["xargs", "seq"], "'x\n").status, 1);
    }
}
