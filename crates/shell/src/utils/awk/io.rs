//! awk's side streams: `print > file`, `print | cmd`, `getline < file`,
//! `cmd | getline`, `system()`, and the main input walking ARGV.
//!
//! Redirected output is buffered per destination and written to the
//! workspace at `close()` or at exit (large buffers are flushed as they
//! grow); commands run through the shell's [`Runner`](crate::utils::Runner)
//! as `sh -c`.

use std::collections::HashMap;

use super::parser::Redir;
use super::records::RecordSep;
use super::{Stop, R};
use crate::io::{Output, Stdin};
use crate::utils::{strerror, Ctx};

/// The argv that runs `cmd`: split on blanks when it is a plain command
/// line (so it needs no shell), else `sh -c cmd`.
fn command_argv(cmd: &str) -> Vec<String> {
    let plain = cmd
        .chars()
        .all(|c| c.is_alphanumeric() || " \t-_./,:+@=".contains(c));
    if plain && !cmd.trim().is_empty() {
        return cmd.split_whitespace().map(str::to_string).collect();
    }
    vec!["sh".to_string(), "-c".to_string(), cmd.to_string()]
}

/// Runs `cmd` (see [`command_argv`]), feeding `stdin`; output goes to
/// `capture` or to the utility's stdout. Returns the exit status.
pub(super) fn run_shell(
    ctx: &mut Ctx<'_>,
    cmd: &str,
    stdin: &[u8],
    capture: Option<&mut Output>,
) -> R<i32> {
    let argv = command_argv(cmd);
    let status = match capture {
        Some(out) => ctx
            .runner
            .run(&argv, Stdin::complete(stdin), out, ctx.stderr)?,
        None => ctx
            .runner
            .run(&argv, Stdin::complete(stdin), ctx.stdout, ctx.stderr)?,
    };
    Ok(status)
}

struct Stream {
    name: String,
    kind: Redir,
    buf: Vec<u8>,
    /// A `>` file has been truncated already.
    started: bool,
}

/// Open output redirections, in the order they were opened.
#[derive(Default)]
pub(crate) struct Outputs {
    streams: Vec<Stream>,
}

const FLUSH_AT: usize = 1 << 20;

impl Outputs {
    pub(crate) fn write(
        &mut self,
        ctx: &mut Ctx<'_>,
        kind: Redir,
        name: &str,
        text: &str,
    ) -> R<()> {
        if kind != Redir::Pipe {
            match name {
                "/dev/stdout" | "-" => return Ok(ctx.stdout.write_str(text)?),
                "/dev/stderr" => return Ok(ctx.stderr.write_str(text)?),
                "/dev/null" => return Ok(()),
                _ => {}
            }
        }
        let index = match self.streams.iter().position(|s| s.name == name) {
            Some(i) => i,
            None => {
                self.streams.push(Stream {
                    name: name.to_string(),
                    kind,
                    buf: Vec::new(),
                    started: false,
                });
                self.streams.len() - 1
            }
        };
        let stream = &mut self.streams[index];
        stream.buf.extend_from_slice(text.as_bytes());
        if stream.kind != Redir::Pipe && stream.buf.len() >= FLUSH_AT {
            flush(ctx, stream)?;
        }
        Ok(())
    }

    /// Closes `name`; `None` when it was not open.
    pub(crate) fn close(&mut self, ctx: &mut Ctx<'_>, name: &str) -> R<Option<i32>> {
        let Some(index) = self.streams.iter().position(|s| s.name == name) else {
            return Ok(None);
        };
        let mut stream = self.streams.remove(index);
        flush(ctx, &mut stream).map(Some)
    }

    /// Writes out pending file output (pipes wait for close or exit).
    pub(crate) fn flush_all(&mut self, ctx: &mut Ctx<'_>) -> R<()> {
        for stream in self.streams.iter_mut().filter(|s| s.kind != Redir::Pipe) {
            flush(ctx, stream)?;
        }
        Ok(())
    }

    /// Closes everything, at exit.
    pub(crate) fn finish(&mut self, ctx: &mut Ctx<'_>) -> R<()> {
        for mut stream in std::mem::take(&mut self.streams) {
            flush(ctx, &mut stream)?;
        }
        Ok(())
    }
}

fn flush(ctx: &mut Ctx<'_>, stream: &mut Stream) -> R<i32> {
    let data = std::mem::take(&mut stream.buf);
    if stream.kind == Redir::Pipe {
        return run_shell(ctx, &stream.name, &data, None);
    }
    let path = ctx
        .path(&stream.name)
        .map_err(|e| Stop::Fatal(redirect_error(&stream.name, &strerror(&e))))?;
    ctx.budget.charge_write(data.len() as u64)?;
    let truncate = stream.kind == Redir::File && !stream.started;
    stream.started = true;
    let result = if truncate {
        ctx.fs.write(&path, &data)
    } else {
        ctx.fs.append(&path, &data)
    };
    result.map_err(|e| Stop::Fatal(redirect_error(&stream.name, &strerror(&e))))?;
    Ok(0)
}

fn redirect_error(name: &str, reason: &str) -> String {
    format!("can't redirect to `{name}' ({reason})")
}

/// Text being read record by record.
#[derive(Default)]
pub(crate) struct Source {
    pub data: String,
    pub pos: usize,
}

/// Files and commands open for `getline`.
#[derive(Default)]
pub(crate) struct Inputs {
    open: HashMap<String, Source>,
}

impl Inputs {
    /// The next record from `name`: `None` if it cannot be opened,
    /// `Some(None)` at its end.
    pub(crate) fn read(
        &mut self,
        ctx: &mut Ctx<'_>,
        name: &str,
        is_cmd: bool,
        sep: &RecordSep,
    ) -> R<Option<Option<String>>> {
        if !self.open.contains_key(name) {
            let data = if is_cmd {
                let mut out = Output::with_cap(ctx.stdout.cap());
                run_shell(ctx, name, &[], Some(&mut out))?;
                String::from_utf8_lossy(out.as_bytes()).into_owned()
            } else {
                match read_file(ctx, name)? {
                    Ok(data) => data,
                    Err(_) => return Ok(None),
                }
            };
            self.open.insert(name.to_string(), Source { data, pos: 0 });
        }
        let source = self.open.get_mut(name).expect("opened above");
        let record = sep
            .next(&source.data, &mut source.pos)
            .map(|(a, b)| source.data[a..b].to_string());
        Ok(Some(record))
    }

    pub(crate) fn close(&mut self, name: &str) -> Option<i32> {
        self.open.remove(name).map(|_| 0)
    }
}

/// A whole input file (`-` and `/dev/stdin` are stdin), or why not.
pub(super) fn read_file(ctx: &mut Ctx<'_>, name: &str) -> R<Result<String, String>> {
    let bytes = match name {
        "-" | "/dev/stdin" => ctx.stdin.all()?.to_vec(),
        _ => match ctx.path(name).and_then(|p| ctx.fs.read(&p)) {
            Ok(bytes) => bytes,
            Err(e) => return Ok(Err(strerror(&e))),
        },
    };
    ctx.budget.charge_cpu(bytes.len() as u64)?;
    Ok(Ok(match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    }))
}

/// The file the main input is reading, and where ARGV processing is.
#[derive(Default)]
pub(crate) struct MainInput {
    pub source: Source,
    pub open: bool,
    pub next_arg: usize,
    pub used_file: bool,
    pub failed: bool,
}
