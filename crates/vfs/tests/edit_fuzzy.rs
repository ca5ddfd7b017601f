//! `Vfs::edit` with fuzzy matching, on real SQLite: the answer reports the
//! rule and the text replaced, and an ambiguous fuzzy match changes nothing.

mod common;

use common::*;
use stead_patch::MatchRule;
use stead_vfs::edit::{FuzzyMatch, Replacement};

fn rep(old: &str, new: &str) -> Replacement {
    Replacement {
        old: old.to_string(),
        new: new.to_string(),
        replace_all: false,
    }
}

#[test]
fn a_fuzzy_edit_is_applied_and_reported() {
    let db = db();
    let vfs = vfs(&db);
    put(
        &vfs,
        "/app.py",
        "def greet():\n    print(\u{201C}hi\u{201D})   \n",
    );
    let out = vfs
        .edit(
            &p("/app.py"),
            &[rep("print(\"hi\")\n", "print(\"hello\")\n")],
            false,
        )
        .unwrap();
    assert_eq!(
        get(&vfs, "/app.py"),
        b"def greet():\n    print(\"hello\")\n"
    );
    assert_eq!(
        out.fuzzy,
        [FuzzyMatch {
            edit_index: 0,
            rule: MatchRule::Typography,
            // Indentation is forgiven too, so the whole line is matched
            // and `new` re-indented to it.
            matched: "    print(\u{201C}hi\u{201D})   \n".into(),
        }]
    );
    assert!(out.diff.contains("+    print(\"hello\")\n"), "{}", out.diff);
    assert_eq!(out.revision, Some(vfs.revision().unwrap()));
}

#[test]
fn an_ambiguous_fuzzy_edit_changes_nothing() {
    let db = db();
    let vfs = vfs(&db);
    put(&vfs, "/f.txt", "x = 1 \ny = 2\nx = 1\t\n");
    let before = dump(&db);
    let result = vfs.edit(&p("/f.txt"), &[rep("x = 1\n", "x = 3\n")], false);
    let err = result.unwrap_err();
    assert_eq!(err.code().as_str(), "EDIT_AMBIGUOUS");
    assert_eq!(err.path(), Some("/f.txt"));
    assert!(
        err.to_string()
            .contains("matches 2 places ignoring trailing whitespace"),
        "{err}"
    );
    assert_eq!(dump(&db), before);
}
