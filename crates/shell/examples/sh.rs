//! Runs a script over a fresh in-memory workspace: `cargo run --example sh -- 'echo hi'`.

#[path = "../tests/common/mod.rs"]
mod common;

fn main() {
    let script = std::env::args().nth(1).unwrap_or_default();
    let db = common::db();
    let r = common::run(&db, &script);
    print!("{}", String::from_utf8_lossy(&r.stdout));
    eprint!("{}", String::from_utf8_lossy(&r.stderr));
    eprintln!("[exit {} limit {:?}]", r.exit_code, r.limit);
}
