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

use common::{assert_ended_by, db, run_in, text, write_files};
use stead_shell::{ExecResult, LimitKind, Limits};

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
        ("awk '/(a{1000}){1000}/' /big.txt".to_string(), 2),
        (
            "awk '{ gsub(\"(a{1000}){1000}\", \"x\") }' /big.txt".to_string(),
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
    // jq's regexes (jaq's own engine) have their own size bound.
    let script = format!("jq -n '\"aaa\" | test(\"{bomb}\")'");
    let r = run_bounded(&db, &script, short());
    assert_eq!(r.exit_code, 5, "{script}");
    assert!(
        text(&r.stderr).contains("size limit"),
        "{}",
        text(&r.stderr)
    );
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

/// `a{1000}{10}` compiles small (10,000 states), but over a 2 MB line of
/// `a`s the regex crate's fast engine gives up and the slow one took 87 s,
/// past every limit. A search is measured before it runs: one the fast
/// engine gives up on is charged the slow engine's worst case, so it ends
/// on the CPU budget at once; a pattern the fast engine handles on the same
/// line runs as before.
#[test]
fn a_search_only_the_slow_regex_engine_could_do_ends_on_the_cpu_budget() {
    let db = db();
    write_files(&db, &[("/big.txt", &vec![b'a'; 2 << 20])]);
    for script in [
        "grep -cE 'a{1000}{10}' /big.txt",
        "sed -n '/a\\{1000\\}\\{10\\}/p' /big.txt",
        "sed -E 's/a{1000}{10}/x/g' /big.txt",
        "awk '/(a{1000}){10}/' /big.txt",
        "awk '{ n = gsub(/(a{1000}){10}/, \"x\") } END { print n }' /big.txt",
    ] {
        let r = run_bounded(&db, script, short());
        assert_ended_by(&r, LimitKind::Cpu, script);
    }
    let r = run_bounded(&db, "grep -cE 'a{100}' /big.txt", short());
    assert_eq!(text(&r.stdout), "1\n", "{}", text(&r.stderr));
}

/// jq: `"x" * 1e9` repeated a string into a gigabyte in one operation, and
/// integer products grew without bound (`. * .` thirty times is a number
/// of 300 million digits: 84 s and 150 MB before this, past every limit).
/// A string product is checked against the memory budget before it is
/// made; an integer product past 64 bits is a double, as in jq.
#[test]
fn jq_products_stay_within_the_budget() {
    let db = db();
    for script in [
        r#"jq -n '"x" * 1000000000 | length'"#,
        r#"jq -n '[1, 2] | "xy" * 1e12'"#,
        // Past the budget left (8 MiB here), far below a gigabyte.
        r#"jq -n '"abcd" * 4000000 | length'"#,
    ] {
        let r = run_bounded(&db, script, short());
        assert_ended_by(&r, LimitKind::Memory, script);
    }
    let r = run_bounded(
        &db,
        r#"jq -nc '(reduce range(30) as $i (3; . * .)), ("ab" * 3), ("ab" * 2.5), ([(1,2) * (10,20)]), (9223372036854775807 * 2)'"#,
        short(),
    );
    assert_eq!(
        text(&r.stdout),
        "1.7976931348623157e+308\n\"ababab\"\n\"abab\"\n[10,20,20,40]\n18446744073709552000\n",
        "{}",
        text(&r.stderr)
    );
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

/// `${s//b/c}` on 100,000 characters took 31 s: every position tried every
/// end. A pattern whose matches have one length (literal text, `?`,
/// brackets) is tried at that length only, so replacing is linear; and the
/// matcher's steps were a private count shared by all positions, after
/// which it answered "no match": `${s//a/b}` on 5,000 characters left 204
/// `a`s with status 0. Steps are now charged to the exec's CPU budget,
/// large enough for such inputs, and past it the exec ends with that
/// limit.
#[test]
fn pattern_substitution_is_linear_and_never_stops_silently() {
    let db = db();
    let script = "s=$(printf '%100000s' '' | tr ' ' b); t=${s//b/c}; u=${s//[b]/c}; \
                  echo ${#t} ${t:0:3} ${t: -3} ${#u}; t=${s#b*}; u=${s%%?}; echo ${#t} ${#u}";
    let r = run_bounded(&db, script, short());
    assert_eq!(
        text(&r.stdout),
        "100000 ccc ccc 100000\n99999 99999\n",
        "{}",
        text(&r.stderr)
    );
    let script = "shopt -s extglob; s=$(printf '%5000s' '' | tr ' ' a); t=${s//a/b}; [[ $t == *a* ]] && echo left || echo none; \
                  t=${s//?(x)a/b}; [[ $t == *a* ]] && echo left || echo none";
    let r = run_bounded(&db, script, short());
    assert_eq!(text(&r.stdout), "none\nnone\n", "{}", text(&r.stderr));
    // The first alternative backtracks through millions of steps before
    // the second matches: bash says yes.
    let script = "shopt -s extglob; s=$(printf '%26s' '' | tr ' ' a)c; \
                  [[ $s == @(+(a|aa)b|+(a)c) ]] && echo yes || echo no";
    let r = run_bounded(&db, script, short());
    assert_eq!(text(&r.stdout), "yes\n", "{}", text(&r.stderr));
    // Exponential backtracking ends with a limit, not "no".
    let script = "shopt -s extglob; s=$(printf '%200s' '' | tr ' ' a); \
                  [[ $s == +(+(a)|+(a))b ]] && echo yes || echo no";
    let r = run_bounded(&db, script, short());
    assert!(
        matches!(r.limit, Some(LimitKind::Cpu | LimitKind::WallTime)),
        "{:?} {}",
        r.limit,
        text(&r.stdout)
    );
    assert_eq!(text(&r.stdout), "");
}

/// `shopt -s globstar; echo /**/*` over a deep tree ran for minutes (and
/// a private count cut the walk silently at 100,000 directories). Every
/// directory entry visited is now a step charged to the budget, and the
/// wall clock is read as the walk goes.
#[test]
fn globstar_over_a_large_tree_ends_with_a_limit() {
    let db = db();
    let build = "for i in {1..30}; do mkdir -p /t/$i/a/b/c/d/e/f/g; touch /t/$i/a/b/c/d/e/f/g/{1..30}; done";
    let r = run_in(&db, build, "/", short());
    assert_eq!(r.exit_code, 0, "{}", text(&r.stderr));
    let small = Limits {
        max_cpu_units: 1_000,
        ..short()
    };
    let script = "shopt -s globstar; echo /**/*";
    let r = run_bounded(&db, script, small);
    assert_ended_by(&r, LimitKind::Cpu, script);
    let r = run_in(&db, "shopt -s globstar; echo /t/**/* | wc -w", "/", short());
    assert_eq!(text(&r.stdout), "1140\n", "{}", text(&r.stderr));
}
