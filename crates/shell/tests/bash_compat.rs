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
