//! `apply_patch` as models call it from a shell: a heredoc after `cd`, the
//! patch as the argument, a diff piped in, and `&&`/`||` on its status.

mod common;

use common::{db, run, write_files};
use stead_sql::SqliteDb;
use stead_vfs::{VPath, Vfs};

fn read(db: &SqliteDb, path: &str) -> Option<Vec<u8>> {
    Vfs::new(db, 0).read_file(&VPath::parse(path).unwrap()).ok()
}

#[test]
fn a_heredoc_patch_after_cd_uses_the_new_directory() {
    let db = db();
    write_files(&db, &[("/proj/src/lib.rs", b"fn a() {}\nfn b() {}\n")]);
    let script = r#"cd /proj && apply_patch <<'EOF'
*** Begin Patch
*** Update File: src/lib.rs
@@
-fn b() {}
+fn b() -> u8 { 1 }
*** Add File: tests/it.rs
+#[test]
+fn it() {}
*** End Patch
EOF
echo "status $?""#;
    let ran = run(&db, script);
    assert_eq!(
        String::from_utf8_lossy(&ran.stdout),
        "Success. Updated the following files:\nM src/lib.rs\nA tests/it.rs\nstatus 0\n",
        "{}",
        String::from_utf8_lossy(&ran.stderr)
    );
    assert_eq!(
        read(&db, "/proj/src/lib.rs").unwrap(),
        b"fn a() {}\nfn b() -> u8 { 1 }\n"
    );
    assert_eq!(
        read(&db, "/proj/tests/it.rs").unwrap(),
        b"#[test]\nfn it() {}\n"
    );
}

#[test]
fn a_failure_is_a_nonzero_status_and_a_message() {
    let db = db();
    write_files(&db, &[("/f.txt", b"one\n")]);
    let script = "apply_patch '*** Begin Patch\n*** Update File: f.txt\n@@\n-two\n+2\n*** End Patch' || echo failed $?";
    let ran = run(&db, script);
    assert_eq!(String::from_utf8_lossy(&ran.stdout), "failed 1\n");
    let stderr = String::from_utf8_lossy(&ran.stderr);
    assert!(
        stderr.starts_with("apply_patch: /f.txt: hunk #1 (@@) does not apply"),
        "{stderr}"
    );
    assert_eq!(read(&db, "/f.txt").unwrap(), b"one\n");
}

#[test]
fn a_unified_diff_piped_in() {
    let db = db();
    write_files(&db, &[("/w/a.txt", b"x\ny\n")]);
    let script = "cd /w; printf -- '--- a/a.txt\\n+++ b/a.txt\\n@@ -1,2 +1,2 @@\\n x\\n-y\\n+z\\n' | apply_patch";
    let ran = run(&db, script);
    assert_eq!(
        String::from_utf8_lossy(&ran.stdout),
        "Success. Updated the following files:\nM a.txt\n",
        "{}",
        String::from_utf8_lossy(&ran.stderr)
    );
    assert_eq!(read(&db, "/w/a.txt").unwrap(), b"x\nz\n");
}
