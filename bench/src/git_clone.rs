//! The clone row of `stead-bench git`: `git clone` of a served repository
//! of 5,000 files in the light shell (stead's exec over the VFS on SQLite,
//! run as the agent runs an exec that needs the network: each run that
//! stops for an answer rolled back, the request made, the exec run again)
//! against the machine's `git clone` of the same URL, in the same run. The
//! server is git's own `git http-backend` on loopback, shared by both.

use std::rc::Rc;

use stead_shell::exec;
use stead_shell::net::{self, Journal, Method, Request, Response};
use stead_sql::{migrate, params, Sql, SqlError, SqliteDb, MIGRATIONS};
use stead_vfs::Vfs;
use tempfile::TempDir;

#[path = "../../crates/git/tests/common/http_backend.rs"]
mod http_backend;
#[path = "../../crates/git/tests/common/http_client.rs"]
mod http_client;

use super::{now_ms, real, WallClock};
use crate::report::{Aim, Report, Row, Unit};
use crate::stats::{best_of, millis, timed};

const RUNS: usize = 3;

fn fetch(request: &Request) -> Result<Response, String> {
    let post = request.method == Method::Post;
    let (status, content_type, body) =
        http_client::send(post, &request.url, &request.headers, &request.body, 1 << 30)?;
    Ok(Response {
        status,
        content_type,
        body,
    })
}

/// How a run ended: kept, or rolled back to wait for the network.
enum Ran {
    Waiting,
    Storage(SqlError),
}

impl From<SqlError> for Ran {
    fn from(error: SqlError) -> Self {
        Ran::Storage(error)
    }
}

/// `command` in the light shell with the network, as the agent runs it.
fn light_with_network(db: &SqliteDb, command: &str) -> (usize, String) {
    let journal = Rc::new(Journal::default());
    loop {
        journal.begin_run();
        let vfs = Vfs::new(db, now_ms());
        let ran = db.transaction(|| {
            let result =
                net::with_journal(&journal, || exec(&vfs, &WallClock, super::request(command)));
            if journal.waiting() {
                return Err(Ran::Waiting);
            }
            Ok(result)
        });
        match ran {
            Ok(r) => {
                assert_eq!(
                    r.exit_code,
                    0,
                    "{command}: {}",
                    String::from_utf8_lossy(&r.stderr)
                );
                return (
                    journal.len(),
                    String::from_utf8_lossy(&r.stdout).into_owned(),
                );
            }
            Err(Ran::Storage(e)) => panic!("storage: {e}"),
            Err(Ran::Waiting) => {
                let request = journal
                    .take_pending()
                    .expect("a waiting run names its request");
                let answer = fetch(&request);
                journal.record(request, answer);
            }
        }
    }
}

/// Adds the clone row for a repository of `files` files.
pub(super) fn run(files: usize, report: &mut Report) {
    let dir = TempDir::new().expect("temp dir");
    let work = dir.path().join("work");
    for i in 0..files {
        let file = work.join(super::path_of(i));
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, super::content(i)).unwrap();
    }
    real(&work, &["init", "-q", "-b", "main"]);
    real(&work, &["add", "-A"]);
    real(&work, &["commit", "-qm", "base"]);
    let server = http_backend::serve_clone(dir.path(), &work);
    let url = server.url("project.git");
    let (ours, requests) = best_of(RUNS, |run| {
        let db = SqliteDb::open(&dir.path().join(format!("ws{run}.sqlite"))).expect("open");
        db.query("PRAGMA journal_mode = WAL", params![])
            .expect("WAL");
        db.execute("PRAGMA synchronous = NORMAL", params![])
            .expect("synchronous");
        migrate(&db, MIGRATIONS).expect("migrate");
        let (elapsed, (requests, out)) = timed(|| {
            light_with_network(
                &db,
                &format!("git clone -q {url} repo && git -C repo ls-files | wc -l"),
            )
        });
        assert_eq!(out.trim(), files.to_string());
        (elapsed, requests)
    });
    let (theirs, _) = best_of(RUNS, |run| {
        let target = format!("real{run}");
        real(dir.path(), &["clone", "-q", &url, &target])
    });
    report.rows.push(Row {
        section: format!("git clone over smart HTTP, {files} files"),
        measure: format!(
            "light shell `git clone` ({requests} requests, {} runs)",
            requests + 1
        ),
        figure: Ok(millis(ours)),
        unit: Unit::Millis,
        baseline: Ok(millis(theirs)),
        baseline_label: "real git clone".to_string(),
        aim: Some(Aim::AtMost(3.0)),
    });
}
