//! Issue 21: programs that ran far past every limit (minutes against a
//! 20 s wall limit) or grew to more than a gigabyte. Every utility charges
//! the shared budget where its work happens (per iteration, per byte
//! built, per pattern step), and a regular expression past its compiled
//! size bound is refused when given. Each test runs with shortened limits,
//! asserts the limit named and that the next exec on the same workspace
//! works, and bounds the time by a small multiple of the wall limit (a
//! runaway takes minutes, so the bound cannot flake on a slow machine).

mod common;

use std::time::{Duration, Instant};

use common::{db, run_in, write_files};
use stead_shell::{ExecResult, LimitKind, Limits, LIMIT_EXIT_CODE};

/// Wall limit of these tests: far below the default's 20 s.
const WALL_MS: u64 = 3_000;

/// Limits small enough that a runaway reaches one in well under a second.
fn short() -> Limits {
    Limits {
        max_wall_ms: WALL_MS,
        max_memory_bytes: 8 << 20,
        max_pipe_bytes: 4 << 20,
        ..Limits::default()
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Runs `script` with `limits`, and checks it ended within a few wall
/// limits and that a small exec on the same workspace runs after it.
fn run_bounded(db: &stead_sql::SqliteDb, script: &str, limits: Limits) -> ExecResult {
    let started = Instant::now();
    let r = run_in(db, script, "/", limits);
    let took = started.elapsed();
    assert!(
        took < Duration::from_millis(3 * limits.max_wall_ms),
        "{script}: took {took:?}"
    );
    let next = run_in(db, "echo next", "/", limits);
    assert_eq!(text(&next.stdout), "next\n", "after {script}");
    r
}

/// The exec ended with `kind`, its exit code and its message.
fn assert_ended_by(r: &ExecResult, kind: LimitKind, script: &str) {
    assert_eq!(r.limit, Some(kind), "{script}: {}", text(&r.stderr));
    assert_eq!(r.exit_code, LIMIT_EXIT_CODE, "{script}");
    let message = format!("stead: limit {} exceeded", kind.name());
    assert!(
        text(&r.stderr).contains(&message),
        "{script}: {}",
        text(&r.stderr)
    );
}

const TOO_LARGE: &str = "regular expression too large (compiled size over 2 MiB)";

/// `grep -cE 'a{1000}{1000}'` over a 2 MB file ran for minutes: the
/// pattern compiled to a million states. Every utility that compiles a
/// pattern from its input refuses one past the size bound when given,
/// with a message naming the bound (grep with status 2, as GNU grep for a
/// bad pattern); an ordinary large pattern still works.
#[test]
fn a_regex_past_the_compiled_size_bound_is_refused_everywhere() {
    let db = db();
    let big = vec![b'a'; 2 << 20];
    write_files(&db, &[("/big.txt", &big)]);
    let bomb = "a{1000}{1000}";
    let cases = [
        (format!("grep -cE '{bomb}' /big.txt"), 2),
        (format!("sed -E 's/{bomb}/x/' /big.txt"), 1),
        (format!("awk '/(a{{1000}}){{1000}}/' /big.txt"), 2),
        (
            format!("awk '{{ gsub(\"(a{{1000}}){{1000}}\", \"x\") }}' /big.txt"),
            2,
        ),
        ("expr aaa : '\\(a\\{1000\\}\\)\\{1000\\}'".to_string(), 2),
        (format!("[[ aaa =~ {bomb} ]]"), 2),
        (format!("find / -regex '{bomb}'"), 1),
    ];
    for (script, status) in cases {
        let r = run_bounded(&db, &script, short());
        assert_eq!(r.limit, None, "{script}");
        assert_eq!(r.exit_code, status, "{script}: {}", text(&r.stderr));
        assert!(
            text(&r.stderr).contains(TOO_LARGE),
            "{script}: {}",
            text(&r.stderr)
        );
    }
    let r = run_in(&db, "echo abc | grep -cE '\\w{40}|b'", "/", short());
    assert_eq!(text(&r.stdout), "1\n", "{}", text(&r.stderr));
}

/// awk built what it was asked without looking at the memory budget: a
/// doubling string, a gigabyte of padding from one `sprintf`, ten million
/// elements from one `split`, a record of a billion fields (1.4 GB
/// resident). Every value awk builds is checked against the budget beside
/// what the program holds, so each ends with `max_memory_bytes` at once.
#[test]
fn awk_builders_end_with_the_memory_limit() {
    let db = db();
    for script in [
        r#"awk 'BEGIN { s = "x"; while (1) s = s s }'"#,
        r#"awk 'BEGIN { printf "%s", sprintf("%*d", 1e9, 1) }'"#,
        r#"awk 'BEGIN { printf "%.*f", 1e9, 1 }'"#,
        r#"awk 'BEGIN { s = sprintf("%5000000s", ""); n = split(s, a, ""); print n }'"#,
        r#"awk 'BEGIN { s = sprintf("%1000s", ""); while (1) { s = s s; a[n++] = s } }'"#,
        r#"awk 'BEGIN { s = sprintf("%1000000s", ""); gsub(/ /, "xxxxxxxxxxxxxxxxxxxx", s) }'"#,
        r#"awk 'BEGIN { $1000000000 = "x" }'"#,
        r#"awk 'BEGIN { NF = 1e9 }'"#,
    ] {
        let r = run_bounded(&db, script, short());
        assert_ended_by(&r, LimitKind::Memory, script);
    }
    // Within the budget, the same builders work.
    let r = run_in(
        &db,
        r#"awk 'BEGIN { s = "x"; for (i = 0; i < 20; i++) s = s s; n = split(sprintf("%10000s", ""), a, ""); print length(s), n }'"#,
        "/",
        short(),
    );
    assert_eq!(text(&r.stdout), "1048576 10000\n", "{}", text(&r.stderr));
}

/// `sed ':a;s/^/xx/;ba'` and `sed ':a;h;G;ba'` looped for minutes: each
/// pass copied a growing pattern space, and only the loop count was
/// charged. Copies are now charged per byte and both spaces are held
/// against the memory budget.
#[test]
fn sed_loops_that_grow_their_spaces_end_with_a_limit() {
    let db = db();
    for (script, kind) in [
        ("echo x | sed ':a;s/^/xx/;ba'", LimitKind::Cpu),
        ("echo x | sed ':a;h;G;ba'", LimitKind::Memory),
        ("echo x | sed ':a;H;x;ba'", LimitKind::Memory),
        ("echo x | sed ':a;s/x*/&&&&/;ba'", LimitKind::Memory),
    ] {
        let r = run_bounded(&db, script, short());
        assert_ended_by(&r, kind, script);
    }
    let r = run_in(
        &db,
        "echo x | sed ':a;s/^x\\{1,99\\}$/&&/;ta'",
        "/",
        short(),
    );
    assert_eq!(text(&r.stdout), format!("{}\n", "x".repeat(128)));
}
