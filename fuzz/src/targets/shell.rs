//! The shell: parser, expander and interpreter on arbitrary scripts.
//!
//! A script is whatever an agent (or a prompt injection) sends, so the
//! interpreter must answer every one: no panic, no hang, and a limit that
//! ends the run says so. Limits are tight here so that a loop costs
//! milliseconds, and the clock is a counter (every reading one "ms" later),
//! so a run is deterministic and `sleep` cannot stall the fuzzer. The
//! routing helpers `commands_used` and `unsupported_commands` parse the same
//! script and must agree with each other.
//!
//! Memory limits are on (`max_memory_bytes` 4 MiB, pipes 256 KiB), and the
//! driver measures every run's heap against [`TARGET`]'s bounds: a script
//! that holds more than a small multiple of what the limits allow, or runs
//! longer than they allow, is a limit overrun even if nothing panics.
//!
//! Each run works in one migrated database per thread, inside a savepoint
//! rolled back afterwards (also when the run panics), so every run starts
//! from the same fresh workspace without paying for the migrations.

use std::cell::Cell;
use std::collections::BTreeMap;

use stead_shell::{Clock, ExecRequest, Limits, LIMIT_EXIT_CODE};
use stead_sql::{Sql, SqliteDb};
use stead_vfs::{VPath, Vfs, WriteOptions};

use crate::{Bounds, Target};

/// The limits every run has.
pub const LIMITS: Limits = Limits {
    max_commands: 2_000,
    max_loop_iterations: 500,
    max_call_depth: 24,
    max_output_bytes: 64 * 1024,
    max_bytes_written: 256 * 1024,
    max_wall_ms: 20_000,
    max_cpu_units: 2_000_000,
    max_memory_bytes: 4 << 20,
    max_pipe_bytes: 256 * 1024,
    max_stack_bytes: 512 << 10,
};

/// What a run may hold: the accounted data four times over (the copies an
/// expansion or a utility makes while it works), the outputs, and what
/// SQLite keeps for the bytes written (pages and the savepoint's journal).
const HEAP_BYTES: usize = 4 * LIMITS.max_memory_bytes as usize
    + 2 * LIMITS.max_output_bytes
    + 4 * LIMITS.max_bytes_written as usize
    + (8 << 20);

pub const TARGET: Target = Target {
    name: "shell",
    about: "stead_shell::exec with tight limits (no panic, always returns, limit => exit 124), commands_used/unsupported_commands agree",
    run,
    seeds,
    tokens: TOKENS,
    // Two seconds: the limits allow a few million units of work.
    bounds: Some(Bounds {
        heap_bytes: HEAP_BYTES,
        run_ms: 2_000,
    }),
};

/// Shell syntax and the commands the fuzzer splices in.
pub(crate) const TOKENS: &[&str] = &[
    "$(",
    ")",
    "${",
    "}",
    "$((",
    "))",
    "`",
    "'",
    "\"",
    "\\",
    "|",
    "||",
    "&&",
    ";",
    ";;",
    "&",
    "<",
    ">",
    ">>",
    "<<",
    "<<-",
    "<<<",
    "2>&1",
    "<(",
    "(",
    "{ ",
    " }",
    "[[ ",
    " ]]",
    "*",
    "?",
    "[a-z]",
    "**",
    "{a,b}",
    "{1..9}",
    "~",
    "$@",
    "$#",
    "$?",
    "${#x}",
    "${x:-y}",
    "${x//a/b}",
    "${x:1:2}",
    "${!x}",
    "${x[@]}",
    "=~",
    "if ",
    "then ",
    "else ",
    "fi",
    "for ",
    "in ",
    "do ",
    "done",
    "while ",
    "until ",
    "case ",
    "esac",
    "function ",
    "local ",
    "declare -A ",
    "set -e",
    "eval ",
    "exec ",
    "trap ",
    "shift",
    "break",
    "return",
    "x=",
    "\n",
    " ",
    "EOF\n",
    "$((1<<62))",
    "$((-9223372036854775807-1))",
    "/",
    "0",
    "-1",
    "echo ",
    "cat ",
    "sed ",
    "awk ",
    "jq ",
    "grep ",
    "printf ",
    "read ",
    "seq ",
    "xargs ",
    "find ",
    "sort ",
    "tr ",
    "cut ",
    "head ",
    "tail ",
    "wc ",
    "/dev/zero",
    "/dev/urandom",
    "/dev/fd/0",
    "sleep ",
    "timeout ",
    "mapfile ",
    "yes ",
    "range(",
    "reduce ",
    "foreach ",
    "def f: ",
    "recurse",
    "..",
    "limit(",
    "[.[]]",
];

/// A clock that moves one millisecond per reading.
struct Ticks(Cell<u64>);

impl Clock for Ticks {
    fn now_ms(&self) -> u64 {
        let now = self.0.get() + 1;
        self.0.set(now);
        now
    }
}

pub fn run(data: &[u8]) {
    let script = super::text(data);
    check_routing(&script);
    DB.with(|db| {
        let _rollback = Savepoint::start(db);
        exec(db, script);
    });
}

/// `commands_used` and `light_shell_gaps` parse the script alike, and
/// every command or utility the light shell lacks (or lacks options of) is
/// among what the script uses. (Over an empty workspace: there are no
/// script files whose commands would be gaps too.)
pub(crate) fn check_routing(script: &str) {
    let used = stead_shell::commands_used(script);
    let gaps =
        EMPTY.with(|db| stead_shell::light_shell_gaps(script, &Vfs::new(db, 0), &VPath::root()));
    match (&used, &gaps) {
        (Some(used), Some(gaps)) => {
            for gap in gaps {
                let name = match gap {
                    stead_shell::Gap::Command(name) => name,
                    stead_shell::Gap::Options { utility, .. } => utility,
                    stead_shell::Gap::Interpreter { file, .. } | stead_shell::Gap::Binary(file) => {
                        file
                    }
                };
                assert!(used.contains(name), "{gap:?} found but {name:?} not used");
            }
        }
        (None, None) => {}
        _ => panic!("commands_used {used:?} but light_shell_gaps {gaps:?}"),
    }
}

thread_local! {
    static DB: SqliteDb = super::fresh_db();
    /// A workspace nothing writes to, for routing.
    static EMPTY: SqliteDb = super::fresh_db();
}

/// A savepoint rolled back when dropped (unwinding included).
struct Savepoint<'d>(&'d SqliteDb);

impl<'d> Savepoint<'d> {
    fn start(db: &'d SqliteDb) -> Self {
        db.execute("SAVEPOINT fuzz_run", &[]).expect("savepoint");
        Savepoint(db)
    }
}

impl Drop for Savepoint<'_> {
    fn drop(&mut self) {
        let _ = self.0.execute("ROLLBACK TO fuzz_run", &[]);
        let _ = self.0.execute("RELEASE fuzz_run", &[]);
    }
}

fn exec(db: &SqliteDb, script: String) {
    let vfs = Vfs::new(db, 1_700_000_000_000);
    for (path, content) in [
        ("/home/a.txt", &b"one\ntwo\nthree\n"[..]),
        ("/home/data.json", b"{\"k\":[1,2,{\"x\":null}]}"),
    ] {
        vfs.write(
            &VPath::parse(path).expect("fixture path"),
            content,
            WriteOptions::default(),
        )
        .expect("fixture write");
    }
    let limits = LIMITS;
    let request = ExecRequest {
        command: script,
        cwd: VPath::parse("/home").expect("cwd"),
        env: BTreeMap::new(),
        stdin: b"in\n".to_vec(),
        limits,
    };
    let result = stead_shell::exec(&vfs, &Ticks(Cell::new(0)), request);
    if result.limit.is_some() {
        assert_eq!(result.exit_code, LIMIT_EXIT_CODE, "a limit ended the run");
    }
    // Output is capped (a little slack for the limit message).
    assert!(result.stdout.len() <= limits.max_output_bytes + 4096);
}

pub(crate) fn seeds() -> Vec<Vec<u8>> {
    [
        "echo hello | tr a-z A-Z",
        "for i in 1 2 3; do echo $i; done > out.txt; cat out.txt",
        "x=5; while [ $x -gt 0 ]; do x=$((x-1)); done; echo $x",
        "f() { local a=$1; echo ${a:-none}; }; f; f yes",
        "cat <<EOF\nhome is $HOME\n$(echo sub)\nEOF",
        "if [[ abc =~ ^a(b)c$ ]]; then echo ${BASH_REMATCH[1]}; fi",
        "declare -A m; m[k]=v; echo ${!m[@]} ${m[k]}",
        "arr=(a b c); echo ${#arr[@]} ${arr[@]:1}",
        "case $1 in a*) echo a;; *) echo other;; esac",
        "set -euo pipefail; false || echo recovered",
        "echo {a,b}{1..3} ~ *",
        "cat a.txt | sort -r | uniq -c | head -n 2",
        "sed -n 's/o/0/gp' a.txt; awk '{print NR\": \"$0}' a.txt",
        "jq '.k[2].x' data.json",
        "grep -rn two /home | cut -d: -f1",
        "mkdir -p d/e && touch d/e/f && find . -type f | wc -l",
        "printf '%s-%d\\n' a 1 b 2",
        "read line; echo \"got $line\"",
        "(cd /; pwd); pwd",
        "echo $((2**62 * 4)) $((7 % 0))",
        "f() { f; }; f",
        "while :; do :; done",
        "yes | head -n 3",
        "seq 1 1000000 | tail -n 1",
        "exec 3>&1; echo to3 >&3",
        "trap 'echo bye' EXIT; exit 3",
        "eval 'echo ${x:?unset}'",
        "echo ${x/#/pre} ${y%%.*} \"${z^^}\"",
        "tar -cf t.tar a.txt && tar -tf t.tar",
        "ln -s a.txt l; cat l; readlink l; rm l",
        "echo 'unterminated",
        "if then fi",
        "$(($(()))",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect()
}
