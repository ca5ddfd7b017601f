//! `awk`: the POSIX awk language, with the gawk extensions agents reach for
//! (`nextfile`, `length(array)`, `**`, `split`'s fourth argument, `match`'s
//! third, `\y`).
//!
//! The program is tokenized ([`lexer`]), parsed once into a tree with names
//! resolved to slots ([`parser`]), then walked per record ([`interp`]).
//! Input files are read whole from the workspace and cut into records in
//! place; fields are split only when used. Loops charge the iteration
//! budget and records the CPU budget, so `BEGIN { while (1) ; }` ends with
//! a named limit instead of hanging the isolate.

mod format;
mod interp;
mod io;
mod lexer;
mod parser;
mod records;
mod value;

use std::rc::Rc;

use super::{Ctx, Table};
use crate::limits::Abort;
use interp::Interp;
use parser::{Var, ARGC, ARGV, FILENAME, FNR, FS, NR};
use value::{looks_numeric, Value};

/// Why a run of the program stopped unwinding: the interpreter's `next`,
/// `nextfile` and `exit`, and the errors of the interpreter and of its
/// side streams alike (so it is the program's, not one part's).
#[derive(Debug)]
pub(crate) enum Stop {
    Next,
    NextFile,
    Exit(i32),
    Fatal(String),
    Abort(Abort),
}

impl From<Abort> for Stop {
    fn from(abort: Abort) -> Self {
        Stop::Abort(abort)
    }
}

type R<T> = Result<T, Stop>;

pub(crate) const UTILITIES: Table = &[("awk", awk), ("gawk", awk), ("mawk", awk)];

const USAGE: &str = "usage: awk [-F fs][-v var=value][prog | -f progfile][file ...]";

/// What the command line asked for.
#[derive(Default)]
struct Invocation {
    fs: Option<String>,
    assigns: Vec<String>,
    program_files: Vec<String>,
    program: Option<String>,
    operands: Vec<String>,
}

fn parse_args(args: &[String]) -> Result<Invocation, String> {
    let mut inv = Invocation::default();
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        if arg == "--" {
            break;
        }
        if !arg.starts_with('-') || arg == "-" {
            i -= 1;
            break;
        }
        let (flag, attached) = arg.split_at(2.min(arg.len()));
        let mut value = || -> Result<String, String> {
            if !attached.is_empty() {
                return Ok(attached.to_string());
            }
            i += 1;
            args.get(i - 1)
                .cloned()
                .ok_or_else(|| format!("option requires an argument -- {}", &flag[1..]))
        };
        match flag {
            "-F" => inv.fs = Some(value()?),
            "-v" => inv.assigns.push(value()?),
            "-f" => inv.program_files.push(value()?),
            _ if arg == "--version" || arg == "-W" => {
                return Err("version".into());
            }
            _ => return Err(format!("not an option: {arg}")),
        }
    }
    let mut rest = args[i..].iter().cloned();
    if inv.program_files.is_empty() {
        inv.program = Some(rest.next().ok_or_else(|| USAGE.to_string())?);
    }
    inv.operands = rest.collect();
    Ok(inv)
}

/// The `awk` utility.
pub(super) fn awk(ctx: &mut Ctx<'_>, argv: &[String]) -> Result<i32, Abort> {
    let inv = match parse_args(&argv[1..]) {
        Ok(inv) => inv,
        Err(message) if message == "version" => {
            ctx.stdout.write_str("awk (stead) 1.0\n")?;
            return Ok(0);
        }
        Err(message) => {
            ctx.error("awk", &message)?;
            return Ok(2);
        }
    };
    let source = match program_text(ctx, &inv)? {
        Ok(source) => source,
        Err(message) => {
            ctx.error("awk", &message)?;
            return Ok(2);
        }
    };
    let program = match parser::parse(&source) {
        Ok(program) => program,
        Err(message) => {
            ctx.error("awk", &format!("cmd. line:1: {message}"))?;
            return Ok(2);
        }
    };
    let mut interp = match Interp::new(&program, ctx) {
        Ok(interp) => interp,
        Err(message) => {
            ctx.error("awk", &format!("cmd. line:1: {message}"))?;
            return Ok(2);
        }
    };
    let status = match setup(&mut interp, &inv, &argv[0]) {
        Ok(()) => execute(&mut interp, &program),
        Err(stop) => Err(stop),
    };
    finish(&mut interp, status)
}

fn program_text(ctx: &mut Ctx<'_>, inv: &Invocation) -> Result<Result<String, String>, Abort> {
    if let Some(program) = &inv.program {
        return Ok(Ok(program.clone()));
    }
    let mut source = String::new();
    for file in &inv.program_files {
        match ctx.read_input("awk", file)? {
            Some(bytes) => {
                source.push_str(&String::from_utf8_lossy(&bytes));
                source.push('\n');
            }
            None => return Ok(Err(format!("can't open source file `{file}'"))),
        }
    }
    Ok(Ok(source))
}

/// Sets FS, ARGV, ARGC and the `-v` assignments.
fn setup(interp: &mut Interp<'_, '_, '_>, inv: &Invocation, name: &str) -> R<()> {
    if let Some(fs) = &inv.fs {
        let fs = if fs == "t" {
            "\t".to_string()
        } else {
            unescape(fs)
        };
        interp.set_global(FS, Value::str(&fs));
    }
    let argv = interp.array(Var::Global(ARGV))?;
    {
        let mut argv = argv.borrow_mut();
        argv.set(Rc::from("0"), Value::str(name));
        for (i, op) in inv.operands.iter().enumerate() {
            argv.set(
                Rc::from((i + 1).to_string()),
                Value::StrNum(Rc::from(op.as_str())),
            );
        }
    }
    interp.set_global(ARGC, Value::Num((inv.operands.len() + 1) as f64));
    for assign in &inv.assigns {
        if !apply_assignment(interp, assign)? {
            return Err(Stop::Fatal(format!(
                "`{assign}' argument to `-v' not in `var=value' form"
            )));
        }
    }
    Ok(())
}

/// Applies `name=value` (from `-v` or an operand); false when `text` is
/// not an assignment.
fn apply_assignment(interp: &mut Interp<'_, '_, '_>, text: &str) -> R<bool> {
    let Some((name, value)) = text.split_once('=') else {
        return Ok(false);
    };
    let valid = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !valid {
        return Ok(false);
    }
    let Some(slot) = interp_global(interp, name) else {
        // A variable the program never mentions: nothing can observe it.
        return Ok(true);
    };
    let value = unescape(value);
    let value = if looks_numeric(&value).is_some() {
        Value::StrNum(Rc::from(value))
    } else {
        Value::Str(Rc::from(value))
    };
    interp.assign_global(slot, value)?;
    Ok(true)
}

fn interp_global(interp: &Interp<'_, '_, '_>, name: &str) -> Option<usize> {
    interp.global_slot(name)
}

/// Processes the escape sequences of a command-line value as in a string literal.
fn unescape(text: &str) -> String {
    if !text.contains('\\') {
        return text.to_string();
    }
    match lexer::tokenize(&format!("\"{}\"", text.replace('"', "\\\""))) {
        Ok(tokens) => match tokens.first() {
            Some(lexer::Tok::Str(s)) => s.clone(),
            _ => text.to_string(),
        },
        Err(_) => text.to_string(),
    }
}

/// Runs BEGIN, the main loop and END; returns the exit status.
fn execute(interp: &mut Interp<'_, '_, '_>, program: &parser::Program) -> R<i32> {
    match interp.run_block(&program.begin) {
        Ok(()) => {}
        Err(Stop::Exit(_)) => return run_end(interp, program),
        Err(Stop::Next | Stop::NextFile) => {
            return Err(Stop::Fatal("`next' used in BEGIN action".into()))
        }
        Err(other) => return Err(other),
    }
    if !program.items.is_empty() || !program.end.is_empty() {
        match main_loop(interp) {
            Ok(()) | Err(Stop::Exit(_)) => {}
            Err(other) => return Err(other),
        }
        // An exit in the main loop still runs END.
    }
    run_end(interp, program)
}

fn run_end(interp: &mut Interp<'_, '_, '_>, program: &parser::Program) -> R<i32> {
    if interp.ran_end {
        return Ok(interp.exit_status);
    }
    interp.ran_end = true;
    match interp.run_block(&program.end) {
        Ok(()) | Err(Stop::Exit(_)) => Ok(interp.exit_status),
        Err(Stop::Next | Stop::NextFile) => Err(Stop::Fatal("`next' used in END action".into())),
        Err(other) => Err(other),
    }
}

fn main_loop(interp: &mut Interp<'_, '_, '_>) -> R<()> {
    while let Some(range) = next_main_record(interp)? {
        interp.load_main_record(range);
        match interp.run_items() {
            Ok(()) | Err(Stop::Next) => {}
            Err(Stop::NextFile) => interp.main.open = false,
            Err(other) => return Err(other),
        }
    }
    Ok(())
}

/// The next record of the main input (a byte range of
/// `interp.main.source.data`), moving through ARGV's files as needed.
pub(crate) fn next_main_record(interp: &mut Interp<'_, '_, '_>) -> R<Option<(usize, usize)>> {
    loop {
        if interp.main.open {
            let sep = interp.record_sep()?;
            let source = &mut interp.main.source;
            if let Some((a, b)) = sep.next(&source.data, &mut source.pos) {
                interp.ctx.budget.charge_cpu((b - a) as u64 + 1)?;
                interp.bump(NR);
                interp.bump(FNR);
                return Ok(Some((a, b)));
            }
            interp.main.open = false;
        }
        if !open_next_file(interp)? {
            return Ok(None);
        }
    }
}

fn open_next_file(interp: &mut Interp<'_, '_, '_>) -> R<bool> {
    loop {
        let argc = interp.global(ARGC).to_num().max(0.0) as usize;
        let name = if interp.main.next_arg == 0 {
            interp.main.next_arg = 1;
            continue;
        } else if interp.main.next_arg < argc {
            let i = interp.main.next_arg;
            interp.main.next_arg += 1;
            let argv = interp.array(Var::Global(ARGV))?;
            let value = argv.borrow().get(&i.to_string()).cloned();
            match value {
                Some(v) => interp.to_str(&v).to_string(),
                None => continue,
            }
        } else if !interp.main.used_file {
            interp.main.used_file = true;
            "-".to_string()
        } else {
            return Ok(false);
        };
        if name.is_empty() || apply_assignment(interp, &name)? {
            continue;
        }
        interp.main.used_file = true;
        match io::read_file(interp.ctx, &name)? {
            Ok(data) => {
                interp.main.source = io::Source { data, pos: 0 };
                interp.main.open = true;
                let shown = if name == "-" { "" } else { name.as_str() };
                interp.set_global(FILENAME, Value::str(shown));
                interp.set_global(FNR, Value::Num(0.0));
                return Ok(true);
            }
            Err(reason) => {
                interp.ctx.error(
                    "awk",
                    &format!("cannot open file `{name}' for reading: {reason}"),
                )?;
                interp.main.failed = true;
            }
        }
    }
}

/// Flushes redirections and turns the outcome into an exit status.
fn finish(interp: &mut Interp<'_, '_, '_>, status: R<i32>) -> Result<i32, Abort> {
    let status = status.and_then(|status| {
        interp.outputs.finish(interp.ctx)?;
        Ok(status)
    });
    match status {
        Ok(status) if interp.main.failed && status == 0 => Ok(2),
        Ok(status) => Ok(status),
        Err(Stop::Abort(abort)) => Err(abort),
        Err(Stop::Exit(status)) => Ok(status),
        Err(Stop::Fatal(message)) => {
            interp.outputs.finish(interp.ctx).ok();
            interp
                .ctx
                .error("awk", &format!("cmd. line:1: fatal: {message}"))?;
            Ok(2)
        }
        Err(Stop::Next | Stop::NextFile) => Ok(2),
    }
}

#[cfg(test)]
mod tests;
