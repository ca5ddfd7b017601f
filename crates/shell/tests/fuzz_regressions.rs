//! Scripts the fuzzer (`fuzz/`, target `shell`) found to crash or hang the
//! interpreter, kept so the fixes stay fixed.

mod common;

use common::{db, run, text};

/// A redirection naming a huge descriptor (`echo hi 379697012>&1`) used to
/// grow the descriptor table to that size: gigabytes and seconds of work
/// from one short script. It now fails like bash past its descriptor limit
/// (the error is the proof: no table is grown; speed is not asserted here).
#[test]
fn huge_descriptor_numbers_are_refused() {
    let result = run(
        &db(),
        "echo hi 379697012>&1; echo status $?; echo ok 1023>&1",
    );
    assert_eq!(text(&result.stdout), "status 1\nok\n");
    let stderr = text(&result.stderr);
    assert!(
        stderr.contains("379697012: Bad file descriptor"),
        "{stderr}"
    );
    assert_eq!(result.limit, None);
}

/// `tail` / `head` looked for the obsolete `-5` form by slicing the first
/// operand at byte 1, which panicked when it began with a multi-byte
/// character.
#[test]
fn operand_starting_with_a_multibyte_character() {
    let result = run(&db(), "seq 3 | tail \u{e9}5; echo status $?");
    assert_eq!(text(&result.stdout), "status 1\n");
}

/// A command substitution in a redirection target left its (closed) capture
/// slot unpopped under the file's slot; closing all slots at the end then
/// indexed past the end of the slot list and panicked.
#[test]
fn command_substitution_in_a_redirection_target() {
    let db = db();
    let result = run(&db, "echo hi >$(true)a >x; cat a x; echo status $?");
    assert_eq!(text(&result.stdout), "hi\nstatus 0\n");
    let result = run(
        &db,
        "exec 3>log; for i in 1 2 3; do v=$(echo $i) >&3; echo $v >&3; done; exec 3>&-; cat log",
    );
    assert_eq!(text(&result.stdout), "1\n2\n3\n");
}

/// `printf` built its padding in memory before any cap applied:
/// `printf '%99999999999d'` asked for 77 GB and aborted the process, and a
/// large precision padded one character at a time (quadratic). The bound
/// now refuses them up front, with the error GNU printf gives.
#[test]
fn printf_refuses_huge_widths_and_precisions() {
    let db = db();
    for script in [
        "printf '%99999999999d' 1",
        "printf '%*d' 99999999999 1",
        "printf '%*d' -9223372036854775808 1",
        "printf '%.99999999999d' 1",
        "printf '%.99999999999999999999999f' 1",
        "printf '%.9999999x' 1",
    ] {
        let result = run(&db, &format!("{script}; echo \" status $?\""));
        let stdout = text(&result.stdout);
        assert!(stdout.ends_with(" status 1\n"), "{script}: {stdout}");
        assert!(
            text(&result.stderr).contains("Numerical result out of range"),
            "{script}"
        );
        assert_eq!(result.limit, None, "{script}");
    }
    // Within the bound, padding still works.
    let result = run(&db, "printf '%5d|%-4s|%.3d|%08.3f\\n' 42 ab 7 3.14159");
    assert_eq!(text(&result.stdout), "   42|ab  |007|0003.142\n");
}

/// `tr` read past the end of a set ending in `[`, and built `[c*n]` repeats
/// in memory whatever `n` said (a repeat count past the set's use is now
/// clamped: the output shows it, no output limit is hit).
#[test]
fn tr_sets_ending_in_a_bracket_or_with_huge_repeats() {
    let db = db();
    let result = run(&db, "echo 'a[b' | tr [ x; echo 'a[b' | tr 'a[' 'b['");
    assert_eq!(text(&result.stdout), "axb\nb[b\n");
    let result = run(&db, "echo abc | tr abc '[x*99999999999]'");
    assert_eq!(text(&result.stdout), "xxx\n");
    assert_eq!(result.limit, None);
}

/// The syntax error message cut the unexpected token at byte 1 when it was
/// one two-byte character (`done \u{64b}`), panicking instead of failing.
#[test]
fn syntax_error_at_a_multibyte_token() {
    let db = db();
    for script in [
        "for i in 1; do echo $i; done \u{64b} x",
        "echo a; ) \u{e9}",
        "if \u{e9}\u{e9}",
    ] {
        let result = run(&db, script);
        assert_eq!(result.exit_code, 2, "{script}");
        assert!(text(&result.stderr).contains("syntax error"), "{script}");
    }
}
