//! `jq`, on the jaq engine (jaq-core, jaq-std, jaq-json), with jq 1.7's
//! command line, output format, error messages and exit statuses.
//!
//! jaq parses and runs the filter; this module supplies what jaq leaves to
//! its host: argument handling, reading inputs from the workspace, the
//! `input`/`inputs` stream, `$ENV` from the shell's environment (not the
//! host's), `now` from the shell's clock, `stderr`/`debug` into the
//! command's stderr, and printing values exactly as jq does ([`write`]).

mod meter;
mod products;
mod write;

use std::cell::RefCell;
use std::rc::Rc;

use jaq_core::box_iter::box_once;
use jaq_core::data::{DataT, HasLut};
use jaq_core::load::{Arena, File, Loader};
use jaq_core::native::{run, v, Filter, Fun};
use jaq_core::{Compiler, Ctx as JqCtx, Lut, RunPtr, Vars};
use jaq_json::{Map, Val};
use jaq_std::input::{HasInputs, Inputs, RcIter};

use super::{Ctx, Table};
use crate::limits::Abort;
use write::{write_str, write_value, Layout, Style};

/// Replaces `remove` bytes at `at` with `insert`: one change of the
/// program's text, of the rewrites that [`meter`] applies (its own and
/// [`products`]').
struct Edit {
    at: usize,
    remove: usize,
    insert: &'static str,
}

/// Where `text`, a slice of `program` (a token's), lies in it.
fn span(program: &str, text: &str) -> std::ops::Range<usize> {
    jaq_core::load::span(program, text)
}

pub(crate) const UTILITIES: Table = &[("jq", jq)];

const HINT: &str = "Use jq --help for help with command-line options,\n\
                    or see the jq manpage, or online docs  at https://jqlang.github.io/jq\n";

/// What the command line asked for.
#[derive(Default)]
struct Options {
    raw_output: bool,
    join_output: bool,
    nul_output: bool,
    null_input: bool,
    raw_input: bool,
    slurp: bool,
    exit_status: bool,
    sort_keys: bool,
    ascii: bool,
    seq: bool,
    tab: bool,
    indent: Option<usize>,
    compact: bool,
    program: Option<String>,
    program_file: Option<String>,
    files: Vec<String>,
    named: Vec<(String, Val)>,
    positional: Vec<Val>,
}

/// A command-line mistake: the message, printed with the help hint, exit 2.
struct UsageError(String);

/// Positional operands after `--args` / `--jsonargs`.
#[derive(Clone, Copy, PartialEq)]
enum Positional {
    Files,
    Strings,
    Json,
}

fn parse_json_arg(text: &str, flag: &str) -> Result<Val, UsageError> {
    jaq_json::read::parse_single(text.as_bytes())
        .map_err(|_| UsageError(format!("invalid JSON text passed to --{flag}")))
}

fn parse_args(ctx: &mut Ctx<'_>, args: &[String]) -> Result<Result<Options, UsageError>, Abort> {
    let mut opts = Options::default();
    let mut mode = Positional::Files;
    let mut i = 0;
    let mut options_done = false;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        if options_done || !arg.starts_with('-') || arg == "-" {
            if opts.program.is_none() && opts.program_file.is_none() {
                opts.program = Some(arg.clone());
                continue;
            }
            match mode {
                Positional::Files => opts.files.push(arg.clone()),
                Positional::Strings => opts.positional.push(Val::from(arg.clone())),
                Positional::Json => match parse_json_arg(arg, "jsonargs") {
                    Ok(v) => opts.positional.push(v),
                    Err(e) => return Ok(Err(e)),
                },
            }
            continue;
        }
        let mut take = |n: usize, what: &str| -> Result<Vec<String>, UsageError> {
            if i + n > args.len() {
                return Err(UsageError(format!("{arg} takes {what}")));
            }
            i += n;
            Ok(args[i - n..i].to_vec())
        };
        let step = match arg.as_str() {
            "--" => {
                options_done = true;
                Ok(())
            }
            "--args" => {
                mode = Positional::Strings;
                Ok(())
            }
            "--jsonargs" => {
                mode = Positional::Json;
                Ok(())
            }
            "--arg" => take(2, "two parameters (e.g. --arg varname value)").map(|p| {
                let value = Val::from(p[1].clone());
                opts.named.push((p[0].clone(), value));
            }),
            "--argjson" => take(2, "two parameters (e.g. --argjson varname text)").and_then(|p| {
                let value = parse_json_arg(&p[1], "argjson")?;
                opts.named.push((p[0].clone(), value));
                Ok(())
            }),
            "--slurpfile" | "--rawfile" => {
                match take(2, "two parameters (e.g. --slurpfile varname filename)") {
                    Ok(p) => match file_arg(ctx, &p[1], arg == "--slurpfile")? {
                        Ok(value) => {
                            opts.named.push((p[0].clone(), value));
                            Ok(())
                        }
                        Err(e) => Err(e),
                    },
                    Err(e) => Err(e),
                }
            }
            "--indent" => take(1, "one parameter").and_then(|p| match p[0].parse::<usize>() {
                Ok(n) if n <= 7 => {
                    opts.indent = Some(n);
                    Ok(())
                }
                _ => Err(UsageError("Cannot indent more than 7 characters".into())),
            }),
            "--from-file" => {
                take(1, "one parameter").map(|p| opts.program_file = Some(p[0].clone()))
            }
            "-L" => take(1, "one parameter").map(drop),
            long if long.starts_with("--") => long_flag(&mut opts, long),
            short => short_flags(&mut opts, short, &mut |o: &mut Options| {
                // `-f file` takes the next argument.
                if i < args.len() {
                    o.program_file = Some(args[i].clone());
                    i += 1;
                    Ok(())
                } else {
                    Err(UsageError("-f takes a parameter".into()))
                }
            }),
        };
        if let Err(e) = step {
            return Ok(Err(e));
        }
    }
    // With -f, the first operand was taken as the program: it is a file.
    if opts.program_file.is_some() {
        if let Some(first) = opts.program.take() {
            opts.files.insert(0, first);
        }
    }
    Ok(Ok(opts))
}

fn file_arg(ctx: &mut Ctx<'_>, name: &str, json: bool) -> Result<Result<Val, UsageError>, Abort> {
    let Some(bytes) = read_operand(ctx, name)? else {
        return Ok(Err(UsageError(format!("Bad JSON in --slurpfile {name}"))));
    };
    if !json {
        return Ok(Ok(Val::from(String::from_utf8_lossy(&bytes).into_owned())));
    }
    let values: Result<Vec<Val>, _> = jaq_json::read::parse_many(&bytes).collect();
    Ok(values
        .map(|vs| vs.into_iter().collect())
        .map_err(|e| UsageError(format!("Bad JSON in --slurpfile {name}: {e}"))))
}

fn long_flag(opts: &mut Options, flag: &str) -> Result<(), UsageError> {
    match flag {
        "--raw-output" => opts.raw_output = true,
        "--raw-output0" => {
            opts.raw_output = true;
            opts.nul_output = true;
        }
        "--join-output" => {
            opts.raw_output = true;
            opts.join_output = true;
        }
        "--compact-output" => opts.compact = true,
        "--null-input" => opts.null_input = true,
        "--raw-input" => opts.raw_input = true,
        "--slurp" => opts.slurp = true,
        "--exit-status" => opts.exit_status = true,
        "--sort-keys" => opts.sort_keys = true,
        "--ascii-output" => opts.ascii = true,
        "--tab" => opts.tab = true,
        "--seq" => opts.seq = true,
        "--color-output" | "--monochrome-output" | "--unbuffered" => {}
        _ => return Err(UsageError(format!("Unknown arguments: {flag}"))),
    }
    Ok(())
}

fn short_flags(
    opts: &mut Options,
    flags: &str,
    program_file: &mut dyn FnMut(&mut Options) -> Result<(), UsageError>,
) -> Result<(), UsageError> {
    for c in flags.chars().skip(1) {
        // Each short flag is a spelling of a long one: one table sets options.
        let long = match c {
            'r' => "--raw-output",
            'j' => "--join-output",
            'c' => "--compact-output",
            'n' => "--null-input",
            'R' => "--raw-input",
            's' => "--slurp",
            'e' => "--exit-status",
            'S' => "--sort-keys",
            'a' => "--ascii-output",
            'C' => "--color-output",
            'M' => "--monochrome-output",
            'f' => {
                program_file(opts)?;
                continue;
            }
            _ => return Err(UsageError(format!("Unknown arguments: {flags}"))),
        };
        long_flag(opts, long)?;
    }
    Ok(())
}

/// Reads `-` (stdin) or a file; prints jq's message and gives `None` on error.
fn read_operand(ctx: &mut Ctx<'_>, name: &str) -> Result<Option<Vec<u8>>, Abort> {
    if name == "-" {
        return Ok(Some(ctx.stdin.all()?.to_vec()));
    }
    match ctx.path(name).and_then(|p| ctx.fs.read(&p)) {
        Ok(bytes) => {
            ctx.budget.charge_cpu(bytes.len() as u64)?;
            Ok(Some(bytes))
        }
        Err(e) => {
            let reason = super::strerror(&e);
            ctx.error("jq", &format!("error: Could not open {name}: {reason}"))?;
            Ok(None)
        }
    }
}

/// The `jq` utility.
pub(super) fn jq(ctx: &mut Ctx<'_>, argv: &[String]) -> Result<i32, Abort> {
    let opts = match parse_args(ctx, &argv[1..])? {
        Ok(opts) => opts,
        Err(UsageError(message)) => {
            ctx.stderr.write_str(&format!("jq: {message}\n{HINT}"))?;
            return Ok(2);
        }
    };
    let program = match (&opts.program, &opts.program_file) {
        (_, Some(file)) => match read_operand(ctx, file)? {
            Some(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            None => return Ok(2),
        },
        (Some(program), None) => program.clone(),
        (None, None) => {
            ctx.stderr
                .write_str(&format!("Usage:\tjq [OPTIONS] FILTER [FILES...]\n{HINT}"))?;
            return Ok(2);
        }
    };
    let mut failed_files = false;
    let mut text = Vec::new();
    let operands = if opts.files.is_empty() {
        vec!["-".to_string()]
    } else {
        opts.files.clone()
    };
    for name in &operands {
        match read_operand(ctx, name)? {
            Some(bytes) => text.extend_from_slice(&bytes),
            None => failed_files = true,
        }
    }
    let source = if opts.files.len() == 1 {
        opts.files[0].clone()
    } else {
        "<stdin>".to_string()
    };
    let status = run_program(ctx, &opts, &program, &text, &source)?;
    Ok(if failed_files && status == 0 {
        2
    } else {
        status
    })
}

/// The inputs: JSON values, raw lines, or one slurped value.
fn input_values<'t>(
    opts: &Options,
    text: &'t [u8],
    line: Rc<std::cell::Cell<usize>>,
) -> Box<dyn Iterator<Item = Result<Val, String>> + 't> {
    let text = text.strip_prefix("\u{feff}".as_bytes()).unwrap_or(text);
    if opts.raw_input {
        let s = String::from_utf8_lossy(text).into_owned();
        if opts.slurp {
            return Box::new(std::iter::once(Ok(Val::from(s))));
        }
        let mut lines: Vec<String> = s.split('\n').map(str::to_string).collect();
        if s.ends_with('\n') || s.is_empty() {
            lines.pop();
        }
        return Box::new(lines.into_iter().map(|l| Ok(Val::from(l))));
    }
    let values = JsonValues { text, pos: 0, line };
    if opts.slurp {
        let all: Result<Vec<Val>, String> = values.collect();
        return Box::new(std::iter::once(all.map(|vs| vs.into_iter().collect())));
    }
    Box::new(values)
}

/// Whitespace-separated JSON values, tracking the line for error messages.
struct JsonValues<'t> {
    text: &'t [u8],
    pos: usize,
    line: Rc<std::cell::Cell<usize>>,
}

impl JsonValues<'_> {
    fn skip_blanks(&mut self) {
        while let Some(&b) = self.text.get(self.pos) {
            if !b.is_ascii_whitespace() {
                break;
            }
            if b == b'\n' {
                self.line.set(self.line.get() + 1);
            }
            self.pos += 1;
        }
    }
}

impl Iterator for JsonValues<'_> {
    type Item = Result<Val, String>;

    fn next(&mut self) -> Option<Self::Item> {
        self.skip_blanks();
        if self.pos >= self.text.len() {
            return None;
        }
        let rest = &self.text[self.pos..];
        let Some(end) = value_end(rest) else {
            self.pos = self.text.len();
            return Some(Err("Exceeds depth limit for parsing".into()));
        };
        let slice = &rest[..end];
        self.pos += end;
        let newlines = slice.iter().filter(|&&b| b == b'\n').count();
        self.line.set(self.line.get() + newlines);
        self.skip_blanks();
        let parsed = jaq_json::read::parse_single(slice).map_err(|e| describe_json_error(&e));
        if parsed.is_err() {
            self.pos = self.text.len();
        }
        Some(parsed)
    }
}

/// Deeper input nesting is refused, and so are deeper values built by a
/// filter (see `meter`): parsing, printing and freeing a value recurse.
const MAX_DEPTH: usize = 2000;

/// Where the JSON value at the start of `text` ends: strings and brackets
/// are matched, scalars run to a delimiter. Malformed text is left for the
/// parser to report; `None` when nesting is too deep.
fn value_end(text: &[u8]) -> Option<usize> {
    let mut depth = 0usize;
    let mut i = 0;
    while i < text.len() {
        match text[i] {
            b'"' => {
                i += 1;
                while i < text.len() && text[i] != b'"' {
                    i += if text[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
                if depth == 0 {
                    return Some(i.min(text.len()));
                }
                continue;
            }
            b'[' | b'{' => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return None;
                }
            }
            b']' | b'}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            b if depth == 0 && (b.is_ascii_whitespace() || b == b',') && i > 0 => return Some(i),
            _ => {}
        }
        i += 1;
    }
    Some(text.len())
}

fn describe_json_error(e: &jaq_json::read::Error) -> String {
    let text = e.to_string();
    if text.contains("EOF") || text.contains("eof") {
        "Unfinished JSON term at EOF".into()
    } else {
        format!("Cannot parse input: {text}")
    }
}

// ----- the jaq engine -----

/// jaq's view of our data: values are [`Val`], global data is [`Env`].
struct Kind;

impl DataT for Kind {
    type V<'a> = Val;
    type Data<'a> = &'a Env<'a>;
}

/// What our native filters can reach while a filter runs.
struct Env<'a> {
    lut: &'a Lut<Kind>,
    inputs: Inputs<'a, Val>,
    budget: &'a crate::limits::Budget,
    /// A limit crossed inside the filter, ending the run once it unwinds.
    limit: RefCell<Option<Abort>>,
    stderr: RefCell<String>,
    now_secs: f64,
}

impl<'a> HasLut<'a, Kind> for &'a Env<'a> {
    fn lut(&self) -> &'a Lut<Kind> {
        self.lut
    }
}

impl<'a> HasInputs<'a, Val> for &'a Env<'a> {
    fn inputs(&self) -> Inputs<'a, Val> {
        self.inputs
    }
}

/// Definitions layered over jaq's standard library for jq compatibility.
const COMPAT_DEFS: &str = r#"
def env: $ENV;
def tostring: _stead_tostring;
def @text: _stead_tostring;
def tojson: _stead_tojson;
def input_filename: null;
def get_search_list: [];
def have_decnum: false;
def have_literal_numbers: true;
def toarray: if type == "array" then . else [.] end;
def debug(msg): (msg | debug | empty), .;
def repeat(f): def rec: ., (_stead_tick | f | rec); rec;
def recurse(f): def rec: ., (_stead_tick | f | rec); rec;
def recurse: recurse(.[]?);
def recurse(f; cond): recurse(f | select(cond));
def while(cond; update): def rec: if cond then ., (_stead_tick | update | rec) else empty end; rec;
def until(cond; update): def rec: if cond then . else _stead_tick | update | rec end; rec;
def combinations: if length == 0 then [] else .[0][] as $x | (.[1:] | combinations) as $w | [$x] + $w end;
def IN(s): any(s == .; .);
def IN(src; s): any(src == s; .);
def INDEX(stream; idx_expr): reduce stream as $row ({}; .[$row | idx_expr | tostring] |= $row);
def INDEX(idx_expr): INDEX(.[]; idx_expr);
def JOIN($idx; idx_expr): [.[] | [., $idx[idx_expr]]];
def JOIN($idx; stream; idx_expr): stream | [., $idx[idx_expr]];
def JOIN($idx; stream; idx_expr; join_expr): stream | [., $idx[idx_expr]] | join_expr;
def pick(pathexps): . as $top | reduce path(pathexps) as $p (null; setpath($p; $top | getpath($p)));
def trimstr($x): ltrimstr($x) | rtrimstr($x);
def toboolean: if type == "boolean" then . elif . == "true" then true elif . == "false" then false
  else error("\(tojson) cannot be parsed as a boolean") end;
def join($x): reduce .[] as $i (null;
  (if . == null then "" else . + $x end) +
  ($i | if . == null then "" elif type == "string" then . else tojson end)) // "";
def @csv: if type != "array" then error("\(type) (\(tojson)) cannot be csv-formatted, only an array can be")
  else map(if type == "string" then "\"" + (split("\"") | join("\"\"")) + "\""
    elif type == "number" or type == "boolean" then tostring
    elif . == null then ""
    else error("\(type) (\(tojson)) is not valid in a csv row") end) | join(",") end;
def @tsv: if type != "array" then error("\(type) (\(tojson)) cannot be tsv-formatted, only an array can be")
  else map(if type == "string"
      then split("\\") | join("\\\\") | split("\t") | join("\\t")
        | split("\n") | join("\\n") | split("\r") | join("\\r")
    elif type == "number" or type == "boolean" then tostring
    elif . == null then ""
    else error("\(type) (\(tojson)) is not valid in a tsv row") end) | join("\t") end;
def leaf_paths: paths(scalars);
def tostream: path(def r: _stead_tick | (.[]? | r), .; r) as $p | getpath($p)
  | reduce path(.[]?) as $q ([$p, .]; [$p + $q]);
def fromstream(f): { x: null, e: false } as $init
  | foreach f as $i ($init;
      if .e then $init else . end
      | if $i | length == 2
        then setpath(["e"]; $i[0] | length == 0) | setpath(["x"] + $i[0]; $i[1])
        else setpath(["e"]; $i[0] | length == 1) end;
      if .e then .x else empty end);
def truncate_stream(stream): . as $n | null | stream | . as $input
  | if (.[0] | length) > $n then setpath([0]; .[0][$n:]) else empty end;
def ltrimstr($x): if type == "string" and ($x | type) == "string" and startswith($x)
  then .[($x | length):] else . end;
def rtrimstr($x): if type == "string" and ($x | type) == "string" and endswith($x) and ($x | length) > 0
  then .[:length - ($x | length)] else . end;
def from_entries: reduce .[] as $x ({}; . + {
  ($x | if .key == null then .k // .name // .Name // .K // .Key else .key end
      | if type == "string" then . else tojson end):
  ($x | if has("value") then .value else .v end) });
"#;

/// Natives that jaq would run against the host process, rewired.
fn host_natives() -> impl Iterator<Item = Fun<Kind>> {
    let natives: [Filter<RunPtr<Kind>>; 5] = [
        // jq's number notation (3, not 3.0; 1e+100) in tostring and tojson.
        ("_stead_tostring", v(0), |cv| {
            if let Val::TStr(_) = &cv.1 {
                return box_once(Ok(cv.1));
            }
            match compact_within(cv.0.data(), &cv.1) {
                Some(text) => box_once(Ok(Val::from(text))),
                None => Box::new(std::iter::empty()),
            }
        }),
        ("_stead_tojson", v(0), |cv| {
            match compact_within(cv.0.data(), &cv.1) {
                Some(text) => box_once(Ok(Val::from(text))),
                None => Box::new(std::iter::empty()),
            }
        }),
        ("now", v(0), |cv| {
            let now = cv.0.data().now_secs;
            box_once(Ok(Val::from(now)))
        }),
        ("stderr_empty", v(0), |cv| {
            let text = match &cv.1 {
                Val::TStr(s) => Some(String::from_utf8_lossy(s).into_owned()),
                other => compact_within(cv.0.data(), other),
            };
            if let Some(text) = text {
                cv.0.data().stderr.borrow_mut().push_str(&text);
            }
            Box::new(std::iter::empty())
        }),
        ("debug_empty", v(0), |cv| {
            if let Some(value) = compact_within(cv.0.data(), &cv.1) {
                let text = format!("[\"DEBUG:\",{value}]\n");
                cv.0.data().stderr.borrow_mut().push_str(&text);
            }
            Box::new(std::iter::empty())
        }),
    ];
    natives
        .into_iter()
        .map(run::<Kind>)
        .chain([meter::tick(), meter::range(), products::product()])
}

/// Error messages quote values; a huge input must not become a huge message.
fn shorten(text: &str) -> String {
    const MAX: usize = 300;
    match text.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text.to_string(),
    }
}

/// A value as compact JSON for an error message (cut short, as
/// [`shorten`] cuts it anyway).
fn compact(value: &Val) -> String {
    let mut text = String::new();
    write_value(&mut text, value, &COMPACT.with_max_len(4096), 0);
    text
}

/// A value as compact JSON, if the text fits in the memory budget left;
/// otherwise the run ends with `max_memory_bytes` (see `meter`).
fn compact_within(env: &Env<'_>, value: &Val) -> Option<String> {
    let budget = env.budget;
    let room = budget
        .limits()
        .max_memory_bytes
        .saturating_sub(budget.memory_in_use());
    let mut text = String::new();
    write_value(&mut text, value, &COMPACT.with_max_len(room as usize), 0);
    if text.len() as u64 > room {
        *env.limit.borrow_mut() = Some(Abort::Limit(crate::limits::LimitKind::Memory));
        return None;
    }
    Some(text)
}

const COMPACT: Style = Style {
    layout: Layout::Compact,
    sort_keys: false,
    ascii: false,
    max_len: usize::MAX,
};

const REPLACED: &[&str] = &[
    "range",
    "env",
    "now",
    "stderr_empty",
    "debug_empty",
    "input_filename",
];

fn all_funs() -> impl Iterator<Item = Fun<Kind>> {
    let std_io = jaq_std::input::funs::<Kind>()
        .into_vec()
        .into_iter()
        .map(run::<Kind>);
    jaq_core::funs::<Kind>()
        .chain(jaq_std::funs::<Kind>())
        .chain(jaq_json::funs::<Kind>())
        .filter(|(name, _, _)| !REPLACED.contains(name))
        .chain(std_io)
        .chain(host_natives())
}

/// The `$ENV`, `$ARGS` and named argument variables, names and values.
fn global_vars(ctx: &Ctx<'_>, opts: &Options) -> (Vec<String>, Vec<Val>) {
    let env: Map = ctx
        .env
        .iter()
        .map(|(k, v)| (Val::from(k.clone()), Val::from(v.clone())))
        .collect();
    let mut named = Map::default();
    for (name, value) in &opts.named {
        named.insert(Val::from(name.clone()), value.clone());
    }
    let mut args = Map::default();
    args.insert(
        Val::from("positional".to_string()),
        opts.positional.iter().cloned().collect(),
    );
    args.insert(Val::from("named".to_string()), Val::obj(named.clone()));
    let mut names = vec!["$ENV".to_string(), "$ARGS".to_string()];
    let mut values = vec![Val::obj(env), Val::obj(args)];
    for (name, value) in named {
        if let Val::TStr(name) = name {
            names.push(format!("${}", String::from_utf8_lossy(&name)));
            values.push(value);
        }
    }
    (names, values)
}

type Loaded<'s> = Result<jaq_core::load::Modules<&'s str, ()>, jaq_core::load::Errors<&'s str, ()>>;

fn load<'s>(
    arena: &'s Arena,
    defs: &[jaq_core::load::parse::Def<&'s str>],
    code: &'s str,
) -> Loaded<'s> {
    Loader::new(defs.iter().cloned()).load(arena, File { code, path: () })
}

/// Parses, compiles and runs the filter over the inputs; returns the status.
fn run_program(
    ctx: &mut Ctx<'_>,
    opts: &Options,
    program: &str,
    text: &[u8],
    source: &str,
) -> Result<i32, Abort> {
    let (names, values) = global_vars(ctx, opts);
    let arena = Arena::default();
    let compat = jaq_core::load::parse(COMPAT_DEFS, |p| p.defs()).unwrap_or_default();
    let defs: Vec<_> = jaq_core::defs()
        .chain(jaq_std::defs())
        .chain(jaq_json::defs())
        .chain(compat)
        .map(meter::tick_std_def)
        .chain(jaq_core::load::parse(products::PRODUCT_DEF, |p| p.defs()).unwrap_or_default())
        .collect();
    let prepared = match meter::prepare(program) {
        Ok(prepared) => prepared,
        Err(message) => return compile_failure(ctx, program, &[message]),
    };
    let code: &str = arena.alloc(prepared);
    let modules = match load(&arena, &defs, code) {
        Ok(modules) => modules,
        Err(errors) => {
            let messages: Vec<String> = errors
                .into_iter()
                .flat_map(|(_, e)| load_error_messages(e))
                .collect();
            return compile_failure(ctx, program, &messages);
        }
    };
    let compiled = Compiler::default()
        .with_funs(all_funs())
        .with_global_vars(names.iter().map(String::as_str))
        .compile(modules);
    let filter = match compiled {
        Ok(filter) => filter,
        Err(errors) => {
            let messages: Vec<String> = errors
                .into_iter()
                .flat_map(|(_, errs)| errs)
                .map(|(name, undefined)| match undefined {
                    jaq_core::compile::Undefined::Filter(arity) => {
                        format!("{name}/{arity} is not defined")
                    }
                    other => format!("{name} is not a defined {}", other.as_str()),
                })
                .collect();
            return compile_failure(ctx, program, &messages);
        }
    };
    let line = Rc::new(std::cell::Cell::new(0));
    let iter = RcIter::new(input_values(opts, text, line.clone()));
    let env = Env {
        lut: &filter.lut,
        inputs: &iter,
        budget: ctx.budget,
        limit: RefCell::new(None),
        stderr: RefCell::new(String::new()),
        now_secs: ctx.clock.now_ms() as f64 / 1000.0,
    };
    let mut runner = Runner {
        opts,
        style: style(opts),
        status: 0,
        last: None,
        halted: None,
        location: if opts.null_input {
            None
        } else {
            Some((source.to_string(), line))
        },
    };
    let jq_ctx = JqCtx::<Kind>::new(&env, Vars::new(values));
    let mut inputs: Inputs<'_, Val> = &iter;
    if opts.null_input {
        runner.run_one(ctx, &env, &filter.id, jq_ctx.clone(), Val::Null)?;
    } else {
        while runner.halted.is_none() {
            match inputs.next() {
                None => break,
                Some(Ok(value)) => runner.run_one(ctx, &env, &filter.id, jq_ctx.clone(), value)?,
                Some(Err(message)) => {
                    ctx.stderr.write_str(&format!(
                        "jq: error (at {source}:{}): {message}\n",
                        runner.line()
                    ))?;
                    runner.status = 2;
                    break;
                }
            }
        }
    }
    Ok(runner.finish())
}

fn load_error_messages(error: jaq_core::load::Error<&str>) -> Vec<String> {
    use jaq_core::load::Error as E;
    let unexpected = |found: &str| {
        if found.is_empty() {
            "end of file".to_string()
        } else {
            found.chars().take(20).collect()
        }
    };
    match error {
        E::Io(errs) => errs
            .into_iter()
            .map(|(path, e)| format!("{path}: {e}"))
            .collect(),
        E::Lex(errs) => errs
            .into_iter()
            .map(|(expect, found)| {
                format!(
                    "syntax error, unexpected {}, expecting {}",
                    unexpected(found),
                    expect.as_str()
                )
            })
            .collect(),
        E::Parse(errs) => errs
            .into_iter()
            .map(|(expect, found)| {
                format!(
                    "syntax error, unexpected {}, expecting {}",
                    unexpected(found),
                    expect.as_str()
                )
            })
            .collect(),
    }
}

fn compile_failure(ctx: &mut Ctx<'_>, program: &str, messages: &[String]) -> Result<i32, Abort> {
    for message in messages {
        ctx.stderr.write_str(&format!(
            "jq: error: {message} at <top-level>, line 1:\n{program}\n"
        ))?;
    }
    let count = messages.len().max(1);
    let plural = if count == 1 { "" } else { "s" };
    ctx.stderr
        .write_str(&format!("jq: {count} compile error{plural}\n"))?;
    Ok(3)
}

fn style(opts: &Options) -> Style {
    let layout = if opts.compact || opts.indent == Some(0) {
        Layout::Compact
    } else if opts.tab {
        Layout::Tab
    } else {
        Layout::Spaces(opts.indent.unwrap_or(2))
    };
    Style {
        layout,
        sort_keys: opts.sort_keys,
        ascii: opts.ascii,
        max_len: usize::MAX,
    }
}

/// Runs the filter per input and prints the outputs.
struct Runner<'o> {
    opts: &'o Options,
    style: Style,
    status: i32,
    /// Whether the last output was truthy (for `-e`).
    last: Option<bool>,
    halted: Option<i32>,
    /// The input's name and current line, for error messages.
    location: Option<(String, Rc<std::cell::Cell<usize>>)>,
}

impl Runner<'_> {
    fn line(&self) -> usize {
        self.location.as_ref().map_or(0, |(_, l)| l.get())
    }

    fn run_one<'a>(
        &mut self,
        ctx: &mut Ctx<'_>,
        env: &'a Env<'a>,
        id: &'a jaq_core::compile::TermId,
        jq_ctx: JqCtx<'a, Kind>,
        input: Val,
    ) -> Result<(), Abort> {
        for output in id.run((jq_ctx, input)) {
            self.emit_stderr(ctx, env)?;
            if let Some(abort) = env.limit.borrow_mut().take() {
                return Err(abort);
            }
            match output {
                Ok(value) => self.print(ctx, &value)?,
                Err(exn) => {
                    match exn.get_err() {
                        Ok(error) => self.report(ctx, error.into_val())?,
                        Err(exn) => match exn.get_halt() {
                            Ok(code) => self.halted = Some(code),
                            Err(_) => self.report(ctx, Val::from("internal error".to_string()))?,
                        },
                    }
                    break;
                }
            }
        }
        self.emit_stderr(ctx, env)?;
        match env.limit.borrow_mut().take() {
            Some(abort) => Err(abort),
            None => Ok(()),
        }
    }

    fn emit_stderr(&self, ctx: &mut Ctx<'_>, env: &Env<'_>) -> Result<(), Abort> {
        let text = std::mem::take(&mut *env.stderr.borrow_mut());
        if !text.is_empty() {
            ctx.stderr.write_str(&text)?;
        }
        Ok(())
    }

    fn report(&mut self, ctx: &mut Ctx<'_>, error: Val) -> Result<(), Abort> {
        let at = match &self.location {
            Some((name, line)) => format!("(at {name}:{})", line.get()),
            None => "(at <unknown>)".to_string(),
        };
        let message = match &error {
            Val::TStr(s) => format!("jq: error {at}: {}\n", shorten(&String::from_utf8_lossy(s))),
            other => format!(
                "jq: error {at} (not a string): {}\n",
                shorten(&compact(other))
            ),
        };
        ctx.stderr.write_str(&message)?;
        self.status = 5;
        Ok(())
    }

    fn print(&mut self, ctx: &mut Ctx<'_>, value: &Val) -> Result<(), Abort> {
        let mut text = String::new();
        if self.opts.seq {
            text.push('\u{1e}');
        }
        match value {
            Val::TStr(s) if self.opts.raw_output => {
                let s = String::from_utf8_lossy(s);
                if self.opts.ascii {
                    let mut quoted = String::new();
                    write_str(&mut quoted, &s, true);
                    text.push_str(&quoted[1..quoted.len() - 1]);
                } else {
                    text.push_str(&s);
                }
            }
            other => {
                // Past the room left in stdout, writing it fails anyway.
                let room = ctx.stdout.cap().saturating_sub(ctx.stdout.len());
                write_value(&mut text, other, &self.style.with_max_len(room), 0);
            }
        }
        if self.opts.nul_output {
            text.push('\0');
        } else if !self.opts.join_output {
            text.push('\n');
        }
        ctx.budget.charge_cpu(text.len() as u64)?;
        ctx.stdout.write_str(&text)?;
        self.last = Some(!matches!(value, Val::Null | Val::Bool(false)));
        Ok(())
    }

    fn finish(&self) -> i32 {
        if let Some(code) = self.halted {
            return code;
        }
        if self.status != 0 {
            return self.status;
        }
        if self.opts.exit_status {
            return match self.last {
                None => 4,
                Some(true) => 0,
                Some(false) => 1,
            };
        }
        0
    }
}

#[cfg(test)]
mod tests;
