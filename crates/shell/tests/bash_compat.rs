//! Behaviours of GNU bash, one test per feature: every expected output here
//! was recorded by running the same script with GNU bash 5.2 (5.2.15, the
//! machine's `/bin/bash`) in an empty folder, not written by hand.

mod common;

use common::{db, run};

/// Runs `script` on a fresh workspace; returns stdout and the exit status.
fn sh(script: &str) -> (String, i32) {
    let r = run(&db(), script);
    (String::from_utf8_lossy(&r.stdout).into_owned(), r.exit_code)
}

/// Asserts stdout (recorded from bash 5.2) and an exit status of 0.
fn check(script: &str, want: &str) {
    assert_eq!(sh(script), (want.to_string(), 0), "script: {script}");
}

/// Asserts stdout and exit status (both recorded from bash 5.2).
fn check_status(script: &str, want: &str, status: i32) {
    assert_eq!(sh(script), (want.to_string(), status), "script: {script}");
}

/// `$?` in an assignment-only command is the previous command's status;
/// the assignment's own status is that of its last command substitution.
#[test]
fn assignment_sees_and_sets_status() {
    check(
        "false; rc=$?; echo $rc; x=$(exit 3); echo $?; x=1; echo $?; false; y=$? z=$?; echo $y $z",
        "1\n3\n0\n1 1\n",
    );
}

/// bash reads a script a complete command at a time: lines before a syntax
/// error run, the error ends the script with status 2; in `eval` it ends
/// only the eval, with status 2.
#[test]
fn syntax_error_stops_only_what_follows() {
    check_status("echo one\necho two; fi\necho three", "one\n", 2);
    check("eval \"echo a\nfi\"; echo st=$?", "a\nst=2\n");
}

/// Aliases are expanded as the parser reads a command (from the line after
/// their definition), in command position, after an alias ending in a
/// blank, and into reserved words.
#[test]
fn aliases_expand_at_parse_time() {
    check(
        "shopt -s expand_aliases\nalias hi='echo hello '\nalias w=world\nhi w\nalias LEFT={\nLEFT echo in; }",
        "hello world\nin\n",
    );
}
