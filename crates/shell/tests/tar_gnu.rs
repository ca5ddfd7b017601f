//! The light shell's `tar` against the real programs, differentially:
//! archives GNU tar (`--format=pax`) and Python's `tarfile` (what every
//! sdist is made with) write extract in the light shell with the names and
//! mtimes GNU tar gives them, and archives the light shell writes extract
//! with GNU tar the same way. Skipped (with a note) where GNU tar, Python
//! or bash is not installed.

mod common;

use std::path::Path;
use std::process::Command;

use common::{db, run, write_files};
use stead_vfs::{VPath, Vfs};

/// Names of everything, then `%n %Y %y` of all but symlinks (the light
/// shell does not keep a symlink's own mtime), under `pkg-1.0`.
const LISTING: &str = "cd \"$1\" && find pkg-1.0 | sort && find pkg-1.0 ! -type l | sort | xargs stat -c '%n %Y %y' && readlink pkg-1.0/link";

fn have(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

fn real_programs() -> bool {
    let found = have("tar") && have("python3") && have("bash");
    if !found {
        eprintln!("tar_gnu: GNU tar, python3 or bash missing; nothing to compare against");
    }
    found
}

/// Runs `bash -c script _ args...` on the host, in UTC and the C locale.
fn host(script: &str, args: &[&str]) -> String {
    let out = Command::new("bash")
        .arg("-c")
        .arg(script)
        .arg("_")
        .args(args)
        .env("TZ", "UTC")
        .env("LC_ALL", "C")
        .output()
        .expect("run bash");
    assert!(
        out.status.success(),
        "{script} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Runs a light-shell script; its stdout (it must succeed).
fn light(db: &stead_sql::SqliteDb, script: &str) -> String {
    let r = run(db, script);
    let stderr = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.exit_code, 0, "{script}: {stderr}");
    assert_eq!(stderr, "", "{script}");
    String::from_utf8(r.stdout).unwrap()
}

/// A source tree like an sdist's: sub-second and whole-second mtimes, a
/// path too long for ustar, a symlink, a directory with its own mtime.
fn make_tree(root: &Path) -> String {
    let long = format!("{}/{}.py", "d".repeat(120), "f".repeat(110));
    host(
        "set -e; cd \"$1\"; mkdir -p pkg-1.0/src \"pkg-1.0/$(dirname \"$2\")\"
         printf 'setup()\\n' > pkg-1.0/setup.py; printf 'x = 1\\n' > pkg-1.0/src/mod.py
         printf 'long\\n' > \"pkg-1.0/$2\"; ln -s setup.py pkg-1.0/link
         touch -d @1700000000.5 pkg-1.0/setup.py; touch -d @1600000000 pkg-1.0/src/mod.py
         touch -d @1650000000.25 \"pkg-1.0/$2\"; touch -d @1500000000 pkg-1.0/src
         touch -d @1690000000.125 \"pkg-1.0/$(dirname \"$2\")\"; touch -d @1400000000 pkg-1.0",
        &[root.to_str().unwrap(), &long],
    );
    long
}

/// Extracts `archive` with GNU tar into a fresh folder; that folder's listing.
fn gnu_extract(archive: &Path) -> String {
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().to_str().unwrap();
    host(
        "tar -xf \"$1\" -C \"$2\"",
        &[archive.to_str().unwrap(), dir],
    );
    host(LISTING, &[dir])
}

/// Puts `archive` into a fresh workspace and extracts it with the light
/// shell's tar into `/out`; the workspace and `/out`'s listing.
fn light_extract(archive: &Path) -> (stead_sql::SqliteDb, String) {
    let db = db();
    write_files(&db, &[("/in/archive", &std::fs::read(archive).unwrap())]);
    light(&db, "mkdir /out && tar -xf /in/archive -C /out");
    let listing = light(&db, &LISTING.replace("\"$1\"", "/out"));
    (db, listing)
}

#[test]
fn archives_gnu_tar_and_python_write_extract_with_their_names_and_mtimes() {
    if !real_programs() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    std::fs::create_dir(&src).unwrap();
    let long = make_tree(&src);
    let src = src.to_str().unwrap();
    let gnu = tmp.path().join("gnu.tar");
    host(
        "tar --format=pax -cf \"$1\" -C \"$2\" pkg-1.0",
        &[gnu.to_str().unwrap(), src],
    );
    let sdist = tmp.path().join("pkg-1.0.tar.gz");
    host(
        "python3 -c 'import sys, tarfile
with tarfile.open(sys.argv[1], \"w:gz\", format=tarfile.PAX_FORMAT, pax_headers={\"comment\": \"sdist\"}) as t:
    t.add(sys.argv[2] + \"/pkg-1.0\", arcname=\"pkg-1.0\")' \"$1\" \"$2\"",
        &[sdist.to_str().unwrap(), src],
    );
    for archive in [&gnu, &sdist] {
        let want = gnu_extract(archive);
        // The listing reads the dates the tree was made with, not 1970.
        assert!(
            want.contains("pkg-1.0/setup.py 1700000000 2023-11-14 22:13:20.500000000 +0000\n"),
            "{want}"
        );
        assert!(
            want.contains(&format!("pkg-1.0/{long} 1650000000 ")),
            "{want}"
        );
        let (_, got) = light_extract(archive);
        assert_eq!(got, want, "{}", archive.display());
    }
}

#[test]
fn archives_the_light_shell_writes_extract_with_gnu_tar_the_same() {
    if !real_programs() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    std::fs::create_dir(&src).unwrap();
    make_tree(&src);
    let gnu = tmp.path().join("gnu.tar");
    host(
        "tar --format=pax -cf \"$1\" -C \"$2\" pkg-1.0",
        &[gnu.to_str().unwrap(), src.to_str().unwrap()],
    );
    let (db, listing) = light_extract(&gnu);
    for (flags, name) in [("-cf", "made.tar"), ("-czf", "made.tgz")] {
        light(&db, &format!("tar {flags} /{name} -C /out pkg-1.0"));
        let made = Vfs::new(&db, 0)
            .read_file(&VPath::parse(&format!("/{name}")).unwrap())
            .unwrap();
        let path = tmp.path().join(name);
        std::fs::write(&path, made).unwrap();
        assert_eq!(gnu_extract(&path), listing, "{name}");
    }
}
