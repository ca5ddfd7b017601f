//! Shared helpers for the integration tests: a fresh SQLite workspace and
//! a way to run a script over it.

#![allow(dead_code)]

pub mod corpus;

use std::collections::BTreeMap;

use stead_shell::{
    exec_with_commands, Clock, ExecRequest, ExecResult, LimitKind, Limits, Utility, LIMIT_EXIT_CODE,
};
use stead_sql::{migrate, SqliteDb, MIGRATIONS};
use stead_vfs::{VPath, Vfs, WriteOptions};

/// The host's wall clock.
pub struct HostClock;

impl Clock for HostClock {
    fn now_ms(&self) -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0)
    }

    /// The host can block: `sleep` really waits.
    fn sleep_ms(&self, ms: u64) -> bool {
        std::thread::sleep(std::time::Duration::from_millis(ms));
        true
    }
}

/// Output bytes as text (invalid UTF-8 shown as U+FFFD).
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Asserts the exec ended with limit `kind`: its exit code and its message.
pub fn assert_ended_by(r: &ExecResult, kind: LimitKind, script: &str) {
    assert_eq!(r.limit, Some(kind), "{script}: {}", text(&r.stderr));
    assert_eq!(r.exit_code, LIMIT_EXIT_CODE, "{script}");
    let message = format!("stead: limit {} exceeded", kind.name());
    assert!(
        text(&r.stderr).contains(&message),
        "{script}: {}",
        text(&r.stderr)
    );
}

pub fn db() -> SqliteDb {
    let db = SqliteDb::memory().unwrap();
    migrate(&db, MIGRATIONS).unwrap();
    db
}

/// Writes files (creating parents).
pub fn write_files(db: &SqliteDb, files: &[(&str, &[u8])]) {
    let vfs = Vfs::new(db, 1_700_000_000_000);
    for (path, content) in files {
        let opts = WriteOptions {
            mode: None,
            create_parents: true,
        };
        vfs.write(&VPath::parse(path).unwrap(), content, opts)
            .unwrap();
    }
}

/// `argv.py`: prints its arguments like Python 2's repr of a list of
/// (byte) strings, as the Oils spec tests' `argv.py` does: bytes above 0x7f
/// as `\xNN` (the shell hands raw bytes over as private-use characters,
/// U+10FF80 + byte - 0x80).
pub fn argv_py(ctx: &mut stead_shell::Ctx<'_>, argv: &[String]) -> Result<i32, stead_shell::Abort> {
    let items: Vec<String> = argv[1..].iter().map(|a| py_repr(a)).collect();
    ctx.stdout.write_str(&format!("[{}]\n", items.join(", ")))?;
    Ok(0)
}

fn py_repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::new();
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c if (0x10_FF80..=0x10_FFFF).contains(&(c as u32)) => {
                out.push_str(&format!("\\x{:02x}", c as u32 - 0x10_FF00))
            }
            c if !c.is_ascii() => {
                let mut buf = [0u8; 4];
                for b in c.encode_utf8(&mut buf).bytes() {
                    out.push_str(&format!("\\x{b:02x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// `stdout_stderr.py [OUT [ERR]]`: one line to each stream (`STDOUT` and
/// `STDERR` unless given), as the Oils spec tests' program does.
pub fn stdout_stderr_py(
    ctx: &mut stead_shell::Ctx<'_>,
    argv: &[String],
) -> Result<i32, stead_shell::Abort> {
    let out = argv.get(1).map_or("STDOUT", String::as_str);
    let err = argv.get(2).map_or("STDERR", String::as_str);
    ctx.stdout.write_str(&format!("{out}\n"))?;
    ctx.stderr.write_str(&format!("{err}\n"))?;
    Ok(0)
}

/// `printenv.py NAME...`: each variable's value, or `None`.
pub fn printenv_py(
    ctx: &mut stead_shell::Ctx<'_>,
    argv: &[String],
) -> Result<i32, stead_shell::Abort> {
    for name in &argv[1..] {
        let value = ctx.env.get(name).cloned().unwrap_or_else(|| "None".into());
        ctx.stdout.write_str(&format!("{value}\n"))?;
    }
    Ok(0)
}

pub const EXTRA: &[(&str, Utility)] = &[
    ("argv.py", argv_py),
    ("stdout_stderr.py", stdout_stderr_py),
    ("printenv.py", printenv_py),
];

/// Runs `script` in `cwd` with `limits`.
pub fn run_in(db: &SqliteDb, script: &str, cwd: &str, limits: Limits) -> ExecResult {
    let vfs = Vfs::new(db, 1_700_000_000_000);
    let request = ExecRequest {
        command: script.to_string(),
        cwd: VPath::parse(cwd).unwrap(),
        env: BTreeMap::new(),
        stdin: Vec::new(),
        limits,
    };
    exec_with_commands(&vfs, &HostClock, request, EXTRA)
}

/// Runs `script` at `/` with default limits.
pub fn run(db: &SqliteDb, script: &str) -> ExecResult {
    run_in(db, script, "/", Limits::default())
}

/// Stdout of a script run on a fresh workspace.
pub fn out(script: &str) -> String {
    let db = db();
    let r = run(&db, script);
    String::from_utf8_lossy(&r.stdout).into_owned()
}
