//! The smart-HTTP client against a real git server: `git http-backend`
//! behind a loopback server (`common/http_backend.rs`), in protocol v2 and
//! v0. Clones, fetches, pulls and pushes made here are compared with what
//! the machine's real git makes of the same server, and checked with
//! `git fsck`; a pack cut mid-stream leaves nothing behind.

mod common;
#[path = "common/http_backend.rs"]
mod http_backend;
#[path = "common/http_client.rs"]
mod http_client;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::Ordering;

use common::{git, git_command, Disk};
use http_backend::Server;
use stead_git::cmd::{self, Invocation, Outcome};
use stead_git::transport::{Http, Method, Request, Response};

/// The machine's HTTP client as the transport's [`Http`].
struct Client;

impl Http for Client {
    fn send(&self, request: Request) -> Result<Response, String> {
        let post = request.method == Method::Post;
        let (status, content_type, body) =
            http_client::send(post, &request.url, &request.headers, &request.body, 1 << 30)?;
        Ok(Response {
            status,
            content_type,
            body,
        })
    }
}

/// A served repository with history: branches, an annotated and a
/// lightweight tag, a subdirectory, an executable.
struct Fixture {
    _dir: tempfile::TempDir,
    root: std::path::PathBuf,
    server: Server,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir_all(work.join("src")).unwrap();
    git(&work, &["init", "-q", "-b", "main"]);
    let mut text = String::new();
    for i in 0..12 {
        text.push_str(&format!("line {i} of the readme, long enough to delta\n"));
        std::fs::write(work.join("README.md"), &text).unwrap();
        std::fs::write(
            work.join(format!("src/f{}.rs", i % 4)),
            format!("fn f{i}() {{}}\n"),
        )
        .unwrap();
        git(&work, &["add", "-A"]);
        git(&work, &["commit", "-q", "-m", &format!("commit {i}")]);
        if i == 5 {
            git(&work, &["tag", "-a", "v0.5", "-m", "half way"]);
            git(&work, &["branch", "old"]);
        }
    }
    std::fs::write(work.join("run.sh"), "#!/bin/sh\necho hi\n").unwrap();
    git(&work, &["update-index", "--add", "--chmod=+x", "run.sh"]);
    git(&work, &["commit", "-q", "-m", "a script"]);
    git(&work, &["tag", "light"]);
    let server = http_backend::serve_clone(dir.path(), &work);
    let root = dir.path().join("served");
    Fixture {
        root,
        server,
        _dir: dir,
    }
}

/// Runs the light shell's git in `cwd` of `disk` with `args`.
fn run(disk: &Disk, cwd: &str, args: &[&str]) -> Outcome {
    let env: BTreeMap<String, String> = [
        ("GIT_AUTHOR_NAME", "A U Thor"),
        ("GIT_AUTHOR_EMAIL", "author@example.com"),
        ("GIT_COMMITTER_NAME", "C O Mitter"),
        ("GIT_COMMITTER_EMAIL", "committer@example.com"),
        ("GIT_AUTHOR_DATE", "1700000000 +0100"),
        ("GIT_COMMITTER_DATE", "1700000000 +0100"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let client = Client;
    cmd::run(
        disk,
        &Invocation {
            args: &args,
            cwd,
            env: &env,
            now_ms: 1_700_000_000_000,
            net: Some(&client),
        },
    )
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// What real git says about `dir`: every ref with its commit subject,
/// status, and fsck's verdict.
fn describe(dir: &Path) -> String {
    let refs = git(
        dir,
        &[
            "for-each-ref",
            "--format=%(refname) %(objectname) %(*objectname)",
        ],
    );
    let log = git(dir, &["log", "--format=%H %s", "HEAD"]);
    let status = git(dir, &["status", "--porcelain=v1", "-b"]);
    let head = std::fs::read_to_string(dir.join(".git/HEAD")).unwrap();
    format!(
        "refs:\n{}\nlog:\n{}\nstatus:\n{}\nhead: {head}",
        text(&refs),
        text(&log),
        text(&status)
    )
}

fn fsck(dir: &Path) {
    let out = git_command(dir, &["fsck", "--strict", "--no-dangling"])
        .output()
        .unwrap();
    assert!(
        out.status.success() && out.stdout.is_empty(),
        "git fsck: {}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
}

/// Clones `args` with real git and with this crate, side by side, and
/// checks both see the same repository.
fn clone_both(fixture: &Fixture, args: &[&str], name: &str) -> (tempfile::TempDir, Outcome) {
    let dir = tempfile::tempdir().unwrap();
    let url = fixture.server.url("project.git");
    let mut real = vec!["clone", "-q"];
    real.extend_from_slice(args);
    real.extend_from_slice(&[&url, "real"]);
    git(dir.path(), &real);
    let disk = Disk {
        root: dir.path().to_path_buf(),
    };
    let mut ours = vec!["clone"];
    ours.extend_from_slice(args);
    ours.extend_from_slice(&[&url, name]);
    let outcome = run(&disk, "/", &ours);
    assert_eq!(outcome.status, 0, "clone: {}", text(&outcome.stderr));
    let (real, mine) = (dir.path().join("real"), dir.path().join(name));
    assert_eq!(describe(&mine), describe(&real));
    assert_eq!(
        std::fs::read_to_string(mine.join(".git/config")).unwrap(),
        std::fs::read_to_string(real.join(".git/config")).unwrap()
    );
    for file in ["packed-refs", "shallow", "refs/remotes/origin/HEAD"] {
        assert_eq!(
            std::fs::read_to_string(mine.join(".git").join(file)).ok(),
            std::fs::read_to_string(real.join(".git").join(file)).ok(),
            "{file}"
        );
    }
    fsck(&mine);
    (dir, outcome)
}

#[test]
fn a_clone_in_protocol_v2_is_the_one_git_makes() {
    let fixture = fixture();
    let (dir, outcome) = clone_both(&fixture, &[], "mine");
    assert_eq!(text(&outcome.stderr), "Cloning into 'mine'...\n");
    // The worktree is checked out, the script executable, the index clean.
    let mine = dir.path().join("mine");
    assert_eq!(
        std::fs::read(mine.join("src/f1.rs")).unwrap(),
        std::fs::read(dir.path().join("real/src/f1.rs")).unwrap()
    );
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(mine.join("run.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o111, 0o111);
    // Our own git reads what it cloned: status and log.
    let disk = Disk {
        root: dir.path().to_path_buf(),
    };
    let status = run(&disk, "/mine", &["status"]);
    assert_eq!(
        text(&status.stdout),
        "On branch main\nYour branch is up to date with 'origin/main'.\n\nnothing to commit, working tree clean\n"
    );
    let log = run(&disk, "/mine", &["log", "--oneline", "-n", "2"]);
    let real_log = git(&dir.path().join("real"), &["log", "--oneline", "-n", "2"]);
    assert_eq!(text(&log.stdout), text(&real_log));
}

#[test]
fn a_server_speaking_v0_is_cloned_the_same() {
    let fixture = fixture();
    fixture
        .server
        .behaviour
        .v0_only
        .store(true, Ordering::SeqCst);
    clone_both(&fixture, &[], "mine");
    clone_both(&fixture, &["--depth", "2"], "shallow");
}

#[test]
fn depth_and_branch_clone_what_git_clones() {
    let fixture = fixture();
    let (dir, _) = clone_both(&fixture, &["--depth", "1"], "one");
    let log = git(&dir.path().join("one"), &["log", "--oneline"]);
    assert_eq!(text(&log).lines().count(), 1);
    clone_both(&fixture, &["--depth", "3", "--branch", "old"], "old3");
    clone_both(&fixture, &["--branch", "old"], "old");
    clone_both(&fixture, &["--single-branch"], "single");
}

#[test]
fn commits_pushed_from_a_clone_are_the_servers() {
    let fixture = fixture();
    let dir = tempfile::tempdir().unwrap();
    let disk = Disk {
        root: dir.path().to_path_buf(),
    };
    let url = fixture.server.url("project.git");
    assert_eq!(run(&disk, "/", &["clone", "-q", &url, "a"]).status, 0);
    std::fs::write(dir.path().join("a/README.md"), "rewritten\n").unwrap();
    std::fs::write(dir.path().join("a/new.txt"), "new\n").unwrap();
    assert_eq!(run(&disk, "/a", &["add", "-A"]).status, 0);
    assert_eq!(run(&disk, "/a", &["commit", "-qm", "from stead"]).status, 0);
    let head = text(&git(&dir.path().join("a"), &["rev-parse", "HEAD"]));
    let pushed = run(&disk, "/a", &["push"]);
    assert_eq!(pushed.status, 0, "{}", text(&pushed.stderr));
    let bare = fixture.root.join("project.git");
    assert_eq!(text(&git(&bare, &["rev-parse", "main"])), head);
    let fsck = git_command(&bare, &["fsck", "--strict"]).output().unwrap();
    assert!(fsck.status.success(), "{}", text(&fsck.stderr));
    assert_eq!(text(&git(&bare, &["show", "main:new.txt"])), "new\n");
    let short = &head[..7];
    let stderr = text(&pushed.stderr);
    assert!(stderr.starts_with(&format!("To {url}\n   ")), "{stderr}");
    assert!(
        stderr.ends_with(&format!("..{short}  main -> main\n")),
        "{stderr}"
    );
    // The tracking ref moved: status says up to date.
    let status = run(&disk, "/a", &["status", "-sb"]);
    assert_eq!(text(&status.stdout), "## main...origin/main\n");
    // Nothing more to push.
    let again = run(&disk, "/a", &["push"]);
    assert_eq!(
        (again.status, text(&again.stderr)),
        (0, "Everything up-to-date\n".into())
    );
    // A new branch, with -u.
    assert_eq!(run(&disk, "/a", &["switch", "-c", "topic"]).status, 0);
    let topic = run(&disk, "/a", &["push", "-u", "origin", "topic"]);
    assert_eq!(topic.status, 0, "{}", text(&topic.stderr));
    assert!(text(&topic.stderr).contains(" * [new branch]      topic -> topic\n"));
    assert_eq!(
        text(&topic.stdout),
        "branch 'topic' set up to track 'origin/topic'.\n"
    );
    assert_eq!(text(&git(&bare, &["rev-parse", "topic"])), head);
}

#[test]
fn a_push_behind_the_server_is_rejected_as_git_rejects_it() {
    let fixture = fixture();
    let dir = tempfile::tempdir().unwrap();
    let disk = Disk {
        root: dir.path().to_path_buf(),
    };
    let url = fixture.server.url("project.git");
    for name in ["a", "b"] {
        assert_eq!(run(&disk, "/", &["clone", "-q", &url, name]).status, 0);
    }
    std::fs::write(dir.path().join("a/a.txt"), "a\n").unwrap();
    run(&disk, "/a", &["add", "a.txt"]);
    run(&disk, "/a", &["commit", "-qm", "a"]);
    assert_eq!(run(&disk, "/a", &["push", "-q"]).status, 0);
    std::fs::write(dir.path().join("b/b.txt"), "b\n").unwrap();
    run(&disk, "/b", &["add", "b.txt"]);
    run(&disk, "/b", &["commit", "-qm", "b"]);
    let before = text(&git(
        &fixture.root.join("project.git"),
        &["rev-parse", "main"],
    ));
    let rejected = run(&disk, "/b", &["push"]);
    assert_eq!(rejected.status, 1);
    assert_eq!(
        text(&rejected.stderr),
        format!("To {url}\n ! [rejected]        main -> main (fetch first)\nerror: failed to push some refs to '{url}'\nhint: Updates were rejected because the remote contains work that you do not\nhint: have locally. This is usually caused by another repository pushing to\nhint: the same ref. If you want to integrate the remote changes, use\nhint: 'git pull' before pushing again.\nhint: See the 'Note about fast-forwards' in 'git push --help' for details.\n")
    );
    // After a fetch the tip is known: non-fast-forward.
    let fetched = run(&disk, "/b", &["fetch"]);
    assert_eq!(fetched.status, 0, "{}", text(&fetched.stderr));
    assert!(
        text(&fetched.stderr).contains("  main       -> origin/main\n"),
        "{}",
        text(&fetched.stderr)
    );
    let rejected = run(&disk, "/b", &["push"]);
    assert_eq!(rejected.status, 1);
    assert!(
        text(&rejected.stderr).contains(" ! [rejected]        main -> main (non-fast-forward)\n")
    );
    assert_eq!(
        text(&git(
            &fixture.root.join("project.git"),
            &["rev-parse", "main"]
        )),
        before
    );
    // pull --ff-only refuses diverged branches as git does.
    let pulled = run(&disk, "/b", &["pull", "--ff-only"]);
    assert_eq!(pulled.status, 128);
    assert!(text(&pulled.stderr).ends_with("fatal: Not possible to fast-forward, aborting.\n"));
    fsck(&dir.path().join("b"));
}

/// The served fixture cloned twice into a new directory: `mine` by this
/// crate, `real` by the machine's git.
fn two_clones() -> (Fixture, tempfile::TempDir, Disk, String) {
    let fixture = fixture();
    let dir = tempfile::tempdir().unwrap();
    let disk = Disk {
        root: dir.path().to_path_buf(),
    };
    let url = fixture.server.url("project.git");
    assert_eq!(run(&disk, "/", &["clone", "-q", &url, "mine"]).status, 0);
    git(dir.path(), &["clone", "-q", &url, "real"]);
    (fixture, dir, disk, url)
}

#[test]
fn a_pull_fast_forwards_as_git_does() {
    let (_fixture, dir, disk, url) = two_clones();
    // Someone else pushes two commits.
    let other = dir.path().join("other");
    git(dir.path(), &["clone", "-q", &url, "other"]);
    std::fs::write(other.join("README.md"), "changed\n").unwrap();
    std::fs::write(other.join("added.txt"), "one\ntwo\n").unwrap();
    git(&other, &["add", "-A"]);
    git(&other, &["commit", "-q", "-m", "upstream work"]);
    git(&other, &["push", "-q"]);
    let ours = run(&disk, "/mine", &["pull"]);
    let real = git_command(&dir.path().join("real"), &["pull"])
        .output()
        .unwrap();
    assert_eq!(ours.status, 0, "{}", text(&ours.stderr));
    assert_eq!(text(&ours.stdout), text(&real.stdout));
    assert_eq!(
        text(&ours.stderr),
        text(&real.stderr).replace("/real", "/mine")
    );
    assert_eq!(
        describe(&dir.path().join("mine")),
        describe(&dir.path().join("real"))
    );
    let again = run(&disk, "/mine", &["pull", "--ff-only"]);
    assert_eq!(text(&again.stdout), "Already up to date.\n");
    fsck(&dir.path().join("mine"));
}

#[test]
fn a_pack_cut_mid_stream_leaves_nothing_behind() {
    let fixture = fixture();
    let dir = tempfile::tempdir().unwrap();
    let disk = Disk {
        root: dir.path().to_path_buf(),
    };
    let url = fixture.server.url("project.git");
    fixture
        .server
        .behaviour
        .cut_fetch_after
        .store(2000, Ordering::SeqCst);
    let cut = run(&disk, "/", &["clone", &url, "cut"]);
    assert_eq!(cut.status, 128);
    assert!(
        text(&cut.stderr).starts_with("Cloning into 'cut'...\nfatal: "),
        "{}",
        text(&cut.stderr)
    );
    assert!(
        !dir.path().join("cut").exists(),
        "a failed clone leaves its directory"
    );
    // A fetch cut short changes nothing in an existing clone.
    fixture
        .server
        .behaviour
        .cut_fetch_after
        .store(0, Ordering::SeqCst);
    assert_eq!(
        run(&disk, "/", &["clone", "-q", "--depth", "1", &url, "mine"]).status,
        0
    );
    let other = dir.path().join("other");
    git(dir.path(), &["clone", "-q", &url, "other"]);
    for i in 0..30 {
        std::fs::write(
            other.join(format!("big{i}.txt")),
            format!("{i} {}\n", "x".repeat(5000 + i)),
        )
        .unwrap();
    }
    git(&other, &["add", "-A"]);
    git(&other, &["commit", "-q", "-m", "much more"]);
    git(&other, &["push", "-q"]);
    let mine = dir.path().join("mine");
    let before = describe(&mine);
    let packs = std::fs::read_dir(mine.join(".git/objects/pack"))
        .unwrap()
        .count();
    fixture
        .server
        .behaviour
        .cut_fetch_after
        .store(3000, Ordering::SeqCst);
    let fetch = run(&disk, "/mine", &["fetch"]);
    assert_eq!(fetch.status, 128, "{}", text(&fetch.stderr));
    assert_eq!(describe(&mine), before);
    assert_eq!(
        std::fs::read_dir(mine.join(".git/objects/pack"))
            .unwrap()
            .count(),
        packs
    );
    fsck(&mine);
}

#[test]
fn what_is_not_a_git_server_is_named() {
    let fixture = fixture();
    let dir = tempfile::tempdir().unwrap();
    let disk = Disk {
        root: dir.path().to_path_buf(),
    };
    let port = fixture.server.port;
    for (path, message) in [
        ("nope.git", format!("fatal: repository 'http://127.0.0.1:{port}/nope.git/' not found\n")),
        ("html/x", format!("fatal: http://127.0.0.1:{port}/html/x/info/refs not valid: is this a git repository?\n")),
        ("garbage/x", "fatal: protocol error: ".to_string()),
    ] {
        let url = format!("http://127.0.0.1:{port}/{path}");
        let out = run(&disk, "/", &["clone", "-q", &url, "x"]);
        assert_eq!(out.status, 128, "{path}");
        assert!(text(&out.stderr).starts_with(&message), "{path}: {}", text(&out.stderr));
        assert!(!dir.path().join("x").exists());
    }
    let refused = run(&disk, "/", &["clone", "-q", "http://127.0.0.1:1/x.git"]);
    assert_eq!(refused.status, 128);
    assert!(
        text(&refused.stderr).starts_with("fatal: unable to access 'http://127.0.0.1:1/x.git/': ")
    );
}

#[test]
fn a_private_repository_fails_as_git_fails_it_and_opens_to_its_credential() {
    let fixture = fixture();
    fixture.server.behaviour.require_basic("ada", "s3cret");
    let dir = tempfile::tempdir().unwrap();
    let url = fixture.server.url("project.git");
    // Real git: refused without a credential (no prompt: none is asked
    // for), cloned with one (so the server is a private host as git
    // sees one).
    let real = git_command(dir.path(), &["clone", "-q", &url, "real"])
        .env("GIT_TERMINAL_PROMPT", "0")
        .output()
        .unwrap();
    assert_eq!(real.status.code(), Some(128));
    let port = fixture.server.port;
    git(
        dir.path(),
        &[
            "clone",
            "-q",
            &format!("http://ada:s3cret@127.0.0.1:{port}/project.git"),
            "real",
        ],
    );
    // Refused as git refuses a wrong credential (what the server said,
    // then git's line), and nothing is left.
    let wrong = git_command(
        dir.path(),
        &[
            "clone",
            "-q",
            &format!("http://ada:wrong@127.0.0.1:{port}/project.git"),
            "wrong",
        ],
    )
    .env("GIT_TERMINAL_PROMPT", "0")
    .output()
    .unwrap();
    assert_eq!(wrong.status.code(), Some(128));
    assert_eq!(
        text(&wrong.stderr),
        format!("remote: Unauthorized\nfatal: Authentication failed for '{url}/'\n")
    );
    let disk = Disk {
        root: dir.path().to_path_buf(),
    };
    let out = run(&disk, "/", &["clone", &url, "mine"]);
    assert_eq!(out.status, 128);
    assert_eq!(
        text(&out.stderr),
        format!("Cloning into 'mine'...\n{}", text(&wrong.stderr))
    );
    assert!(!dir.path().join("mine").exists());
}

#[test]
fn a_pull_of_diverged_branches_merges_as_git_does() {
    let (_fixture, dir, disk, url) = two_clones();
    // A local commit on both clones (the same, so the ids match) ...
    for name in ["mine", "real"] {
        let at = dir.path().join(name);
        std::fs::write(at.join("local.txt"), "ours\n").unwrap();
        let readme = std::fs::read_to_string(at.join("README.md")).unwrap();
        std::fs::write(at.join("README.md"), format!("top\n{readme}")).unwrap();
    }
    assert_eq!(run(&disk, "/mine", &["add", "-A"]).status, 0);
    assert_eq!(
        run(&disk, "/mine", &["commit", "-qm", "local work"]).status,
        0
    );
    git(&dir.path().join("real"), &["add", "-A"]);
    git(&dir.path().join("real"), &["commit", "-qm", "local work"]);
    // ... and upstream work that does not touch the same lines.
    let other = dir.path().join("other");
    git(dir.path(), &["clone", "-q", &url, "other"]);
    let readme = std::fs::read_to_string(other.join("README.md")).unwrap();
    std::fs::write(other.join("README.md"), format!("{readme}bottom\n")).unwrap();
    std::fs::write(other.join("theirs.txt"), "theirs\n").unwrap();
    git(&other, &["add", "-A"]);
    git(&other, &["commit", "-q", "-m", "upstream work"]);
    git(&other, &["push", "-q"]);
    let refused = run(&disk, "/mine", &["pull"]);
    assert_eq!(refused.status, 128, "no reconciliation configured");
    let ours = run(&disk, "/mine", &["pull", "--no-rebase"]);
    let real = git_command(&dir.path().join("real"), &["pull", "--no-rebase"])
        .output()
        .unwrap();
    assert_eq!(ours.status, 0, "{}", text(&ours.stderr));
    assert_eq!(text(&ours.stdout), text(&real.stdout));
    assert!(text(&ours.stdout)
        .starts_with("Auto-merging README.md\nMerge made by the 'ort' strategy.\n"));
    assert_eq!(
        describe(&dir.path().join("mine")),
        describe(&dir.path().join("real"))
    );
    fsck(&dir.path().join("mine"));
    // Conflicting work: the state git leaves, with the commit's id as the
    // marker's label.
    for name in ["mine", "other"] {
        std::fs::write(
            dir.path().join(name).join("theirs.txt"),
            format!("{name}\n"),
        )
        .unwrap();
    }
    assert_eq!(run(&disk, "/mine", &["commit", "-qam", "mine"]).status, 0);
    git(&other, &["commit", "-qam", "other"]);
    git(&other, &["push", "-q"]);
    git(
        &dir.path().join("mine"),
        &["config", "pull.rebase", "false"],
    );
    let conflict = run(&disk, "/mine", &["pull", "-q"]);
    assert_eq!(conflict.status, 1);
    assert_eq!(
        text(&conflict.stdout),
        "Auto-merging theirs.txt\nCONFLICT (content): Merge conflict in theirs.txt\nAutomatic merge failed; fix conflicts and then commit the result.\n"
    );
    let id = text(&git(&other, &["rev-parse", "HEAD"]));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("mine/theirs.txt")).unwrap(),
        format!(
            "<<<<<<< HEAD\nmine\n=======\nother\n>>>>>>> {}\n",
            id.trim()
        )
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("mine/.git/MERGE_MSG")).unwrap(),
        format!(
            "Merge branch 'main' of {}\n\n# Conflicts:\n#\ttheirs.txt\n",
            url.trim_end_matches(".git")
        )
    );
    let status = git(&dir.path().join("mine"), &["status", "--porcelain"]);
    assert_eq!(text(&status), "UU theirs.txt\n");
}

#[test]
fn forced_pushes_and_deletions_are_the_ones_git_makes() {
    let (fixture, dir, disk, url) = two_clones();
    let bare = fixture.root.join("project.git");
    // Someone else moves main on; both clones rewrite it their own way.
    let other = dir.path().join("other");
    git(dir.path(), &["clone", "-q", &url, "other"]);
    std::fs::write(other.join("o.txt"), "o\n").unwrap();
    git(&other, &["add", "o.txt"]);
    git(&other, &["commit", "-qm", "other"]);
    git(&other, &["push", "-q"]);
    for name in ["mine", "real"] {
        std::fs::write(dir.path().join(name).join("r.txt"), "rewritten\n").unwrap();
    }
    assert_eq!(run(&disk, "/mine", &["add", "r.txt"]).status, 0);
    assert_eq!(run(&disk, "/mine", &["commit", "-qm", "rewrite"]).status, 0);
    let real = dir.path().join("real");
    git(&real, &["add", "r.txt"]);
    git(&real, &["commit", "-qm", "rewrite"]);
    let ours = text(&git(&real, &["rev-parse", "HEAD"]));
    // `+src:dst` and `--force` replace what the server has, as git's do.
    for args in [
        &["push", "origin", "+main:main"][..],
        &["push", "--force"][..],
    ] {
        git(&other, &["push", "-q", "-f", "origin", "HEAD:main"]);
        let mine = run(&disk, "/mine", args);
        git(&other, &["push", "-q", "-f", "origin", "HEAD:main"]);
        let theirs = git_command(&real, args).output().unwrap();
        git(&other, &["push", "-q", "-f", "origin", "HEAD:main"]);
        assert_eq!(mine.status, 0, "{args:?}: {}", text(&mine.stderr));
        assert_eq!(theirs.status.code(), Some(0));
        assert_eq!(text(&mine.stderr), text(&theirs.stderr), "{args:?}");
        assert!(
            text(&mine.stderr).contains("(forced update)"),
            "{}",
            text(&mine.stderr)
        );
    }
    assert_eq!(run(&disk, "/mine", &["push", "-qf"]).status, 0);
    assert_eq!(text(&git(&bare, &["rev-parse", "main"])), ours);
    // A deletion, then one of a ref the server does not have.
    assert_eq!(
        run(&disk, "/mine", &["push", "-q", "origin", "main:gone"]).status,
        0
    );
    let deleted = run(&disk, "/mine", &["push", "origin", ":gone"]);
    assert_eq!(deleted.status, 0, "{}", text(&deleted.stderr));
    assert_eq!(
        text(&deleted.stderr),
        format!("To {url}\n - [deleted]         gone\n")
    );
    assert!(git_command(&bare, &["rev-parse", "--verify", "-q", "gone"])
        .output()
        .unwrap()
        .stdout
        .is_empty());
    let tracking = run(
        &disk,
        "/mine",
        &["rev-parse", "--verify", "-q", "origin/gone"],
    );
    assert_eq!(tracking.status, 1, "the remote-tracking ref goes too");
    let missing = run(&disk, "/mine", &["push", "origin", ":nope"]);
    let real_missing = git_command(&real, &["push", "origin", ":nope"])
        .output()
        .unwrap();
    assert_eq!(missing.status, 1);
    assert_eq!(real_missing.status.code(), Some(1));
    assert_eq!(text(&missing.stderr), text(&real_missing.stderr));
    git(&bare, &["fsck", "--strict"]);
}

/// Two servers of the same fixture, `mine` cloned from the first by this
/// crate and `real` from the second by the machine's git, so every step
/// can run on both sides and be compared.
struct Twins {
    mine_server: Fixture,
    real_server: Fixture,
    dir: tempfile::TempDir,
    disk: Disk,
}

impl Twins {
    fn new() -> Twins {
        let (mine_server, real_server) = (fixture(), fixture());
        let dir = tempfile::tempdir().unwrap();
        let disk = Disk {
            root: dir.path().to_path_buf(),
        };
        let url = mine_server.server.url("project.git");
        assert_eq!(run(&disk, "/", &["clone", "-q", &url, "mine"]).status, 0);
        let real_url = real_server.server.url("project.git");
        git(dir.path(), &["clone", "-q", &real_url, "real"]);
        Twins {
            mine_server,
            real_server,
            dir,
            disk,
        }
    }

    fn urls(&self) -> (String, String) {
        (
            self.mine_server.server.url("project.git"),
            self.real_server.server.url("project.git"),
        )
    }

    /// Runs `args` on both sides (`{url}` standing for each side's server);
    /// asserts the same status and output, and returns the status.
    fn both(&self, args: &[&str]) -> i32 {
        let (mine_url, real_url) = self.urls();
        let on =
            |url: &str| -> Vec<String> { args.iter().map(|a| a.replace("{url}", url)).collect() };
        let mine_args = on(&mine_url);
        let mine_args: Vec<&str> = mine_args.iter().map(String::as_str).collect();
        let mine = run(&self.disk, "/mine", &mine_args);
        let real_args = on(&real_url);
        let real_args: Vec<&str> = real_args.iter().map(String::as_str).collect();
        let real = git_command(&self.dir.path().join("real"), &real_args)
            .output()
            .unwrap();
        // Real git names its worktree by its path on this machine.
        let root = self.dir.path().display().to_string();
        let shown = |bytes: &[u8], url: &str| {
            text(bytes)
                .replace(url, "URL")
                .replace(url.trim_end_matches(".git"), "URL")
                .replace(&root, "")
                .replace("/real", "/mine")
        };
        assert_eq!(
            (
                mine.status,
                shown(&mine.stderr, &mine_url),
                text(&mine.stdout)
            ),
            (
                real.status.code().unwrap(),
                shown(&real.stderr, &real_url),
                text(&real.stdout)
            ),
            "{args:?}"
        );
        mine.status
    }

    /// Someone else's commit pushed to both servers' `main`.
    fn upstream_work(&self) {
        self.upstream(&[
            &["commit", "-q", "--allow-empty", "-m", "other"],
            &["push", "-q"],
        ]);
    }

    /// Runs real git's `steps` in someone else's clone of each server.
    fn upstream(&self, steps: &[&[&str]]) {
        for (i, url) in [self.urls().0, self.urls().1].iter().enumerate() {
            let other = self.dir.path().join(format!("other{i}"));
            if !other.exists() {
                git(self.dir.path(), &["clone", "-q", url, &format!("other{i}")]);
            }
            for step in steps {
                git(&other, step);
            }
        }
    }

    /// Both sides' `FETCH_HEAD` and reflogs of remote-tracking refs and
    /// branches are the same (each side's URL read as `URL`).
    fn same_logs(&self) {
        let (mine_url, real_url) = self.urls();
        let read = |side: &str, url: &str| {
            let git_dir = self.dir.path().join(side).join(".git");
            let mut files = vec![git_dir.join("FETCH_HEAD")];
            let mut todo = vec![git_dir.join("logs/refs")];
            while let Some(dir) = todo.pop() {
                for entry in std::fs::read_dir(&dir).into_iter().flatten() {
                    let path = entry.unwrap().path();
                    match path.is_dir() {
                        true => todo.push(path),
                        false => files.push(path),
                    }
                }
            }
            files.sort();
            files
                .iter()
                .map(|f| {
                    let name = f.strip_prefix(&git_dir).unwrap().display().to_string();
                    let body = std::fs::read_to_string(f).unwrap_or_default();
                    let body = body
                        .replace(url, "URL")
                        .replace(url.trim_end_matches(".git"), "URL");
                    format!("{name}:\n{body}")
                })
                .collect::<String>()
        };
        assert_eq!(read("mine", &mine_url), read("real", &real_url));
    }

    /// Both sides' repositories and servers are the same, and sound.
    fn same(&self) {
        let (mine, real) = (self.dir.path().join("mine"), self.dir.path().join("real"));
        assert_eq!(describe(&mine), describe(&real));
        let bare = |f: &Fixture| {
            text(&git(
                &f.root.join("project.git"),
                &["for-each-ref", "--format=%(refname) %(objectname)"],
            ))
        };
        assert_eq!(bare(&self.mine_server), bare(&self.real_server));
        fsck(&mine);
        git(
            &self.mine_server.root.join("project.git"),
            &["fsck", "--strict"],
        );
    }
}

#[test]
fn tags_deletions_and_leases_push_as_git_pushes_them() {
    let twins = Twins::new();
    for side in ["mine", "real"] {
        std::fs::write(twins.dir.path().join(side).join("l.txt"), "local\n").unwrap();
    }
    let steps: &[&[&str]] = &[
        &["add", "l.txt"],
        &["commit", "-qm", "local"],
        &["tag", "new1"],
        &["tag", "-a", "ann", "-m", "annotated"],
        &["push", "--tags"],
        &["push", "--tags"],
        // A moved tag the server has is refused (`already exists`).
        &["tag", "-d", "light"],
        &["tag", "light", "HEAD~2"],
        &["push", "--tags"],
        &["push", "origin", "--delete", "light", "new1"],
        &["push", "--delete", "origin", "nope"],
        &["push", "--delete", "origin"],
        &["push", "origin", "--delete", "a:b"],
        &["push", "-q", "origin", "main:gone"],
        &["push", "origin", ":gone"],
    ];
    for step in steps {
        twins.both(step);
    }
    twins.same();
    // A lease on what the remote-tracking ref says: stale once someone
    // else pushed, however it is spelled, and nothing changes.
    twins.upstream_work();
    twins.both(&["commit", "-q", "--amend", "-m", "rewritten"]);
    for lease in [
        "--force-with-lease",
        "--force-with-lease=main",
        "--force-with-lease=main:origin/main",
        "--force-with-lease=other",
        "--force-with-lease=main:nonsense",
        "--force-with-lease=refs/heads/main:",
    ] {
        let status = twins.both(&["push", lease]);
        assert_ne!(status, 0, "{lease}");
    }
    twins.same();
    // Fetched, the lease holds and the push is forced.
    twins.both(&["fetch", "-q"]);
    twins.both(&["push", "--force-with-lease=main:HEAD"]);
    assert_eq!(twins.both(&["push", "--force-with-lease"]), 0);
    // A URL as the remote: no remote-tracking ref is written.
    assert_eq!(twins.both(&["push", "{url}", "main:via-url"]), 0);
    assert_eq!(twins.both(&["push", "{url}", "--delete", "via-url"]), 0);
    twins.same();
}

#[test]
fn push_hints_reflogs_and_ambiguous_refspecs_are_gits() {
    let twins = Twins::new();
    twins.upstream_work();
    let steps: &[&[&str]] = &[
        &["commit", "-q", "--allow-empty", "-m", "local"],
        &["fetch", "-q"],
        // The current branch behind, pushed by name or through another
        // source: git's hint for the current branch.
        &["push"],
        &["branch", "older", "HEAD~3"],
        &["push", "origin", "older:main"],
        // Another branch behind: git's hint for a pushed branch tip.
        &["switch", "-q", "older"],
        &["push", "origin", "main"],
        &["switch", "-q", "main"],
        // A tag and a branch of one name: git refuses the source.
        &["tag", "dup"],
        &["branch", "dup"],
        &["push", "origin", "dup"],
        &["push", "origin", "refs/heads/dup"],
        &["push", "-q", "origin", "main:refs/tags/amb"],
        &["push", "-q", "origin", "main:refs/heads/amb"],
        &["push", "origin", "main:amb"],
        // Remote-tracking refs pushed are logged, deleted ones lose
        // their log.
        &["push", "-f", "origin", "main"],
        &["push", "origin", "older:topic"],
        &["push", "origin", "main:topic"],
        &["push", "origin", ":topic"],
        // An upstream of another name, with git's advice.
        &["switch", "-q", "-c", "elsewhere"],
        &["config", "branch.elsewhere.remote", "origin"],
        &["config", "branch.elsewhere.merge", "refs/heads/main"],
        &["push"],
        &["config", "push.default", "simple"],
        &["config", "branch.autoSetupMerge", "simple"],
        &["push"],
    ];
    for step in steps {
        twins.both(step);
    }
    twins.same();
    twins.same_logs();
}

#[test]
fn fetch_refspecs_tags_and_urls_are_gits() {
    let twins = Twins::new();
    twins.upstream_work();
    let steps: &[&[&str]] = &[
        // A branch into FETCH_HEAD, its remote-tracking ref moved too.
        &["fetch", "origin", "main"],
        &["fetch", "origin", "main"],
        &["fetch", "origin", "v0.5"],
        &["fetch", "origin", "nope"],
        // Into a local branch, forced or fast-forward or refused.
        &["fetch", "origin", "old:mine"],
        &["fetch", "origin", "main:mine"],
        &["fetch", "origin", "old:mine"],
        &["fetch", "origin", "+old:mine"],
        &["fetch", "origin", "main:refs/heads/mine", "old:other"],
        &["fetch", "origin", "main:x", "old:x"],
        &["fetch", "origin", "refs/heads/*:refs/remotes/copy/*"],
        &["fetch", "origin", "+refs/heads/*:refs/remotes/copy/*"],
        // A URL as the remote: HEAD, or what is named.
        &["fetch", "{url}"],
        &["fetch", "{url}", "old"],
        &["fetch", "-q", "{url}", "main:from-url"],
    ];
    for step in steps {
        twins.both(step);
    }
    twins.same();
    twins.same_logs();
    // New tags on the server: only followed when they point into what
    // is fetched, all with --tags; a moved tag is refused.
    twins.upstream(&[
        &["tag", "loose", "HEAD~4"],
        &["commit", "-q", "--allow-empty", "-m", "tagged"],
        &["tag", "-a", "fresh", "-m", "fresh"],
        &["tag", "-f", "light", "HEAD~1"],
        &["tag", "-a", "late", "-m", "of an old commit", "HEAD~6"],
        &["push", "-q", "-f", "--tags"],
        &["push", "-q"],
    ]);
    for step in [
        &["fetch", "--no-tags"][..],
        &["fetch"],
        &["fetch", "--tags"],
        &["tag", "-d", "light"],
        &["fetch", "--tags"],
        &["fetch", "--tags"],
    ] {
        twins.both(step);
    }
    twins.same();
    twins.same_logs();
    // `remote.<name>.tagOpt` as git reads it (set by real git on both
    // sides, so only the fetch differs).
    twins.upstream(&[&["tag", "later", "HEAD~3"], &["push", "-q", "--tags"]]);
    let tag_opt = |value: &str| {
        for side in ["mine", "real"] {
            let dir = twins.dir.path().join(side);
            git(&dir, &["config", "remote.origin.tagOpt", value]);
        }
    };
    tag_opt("--no-tags");
    twins.both(&["fetch", "origin", "main:mine"]);
    tag_opt("--tags");
    twins.both(&["fetch"]);
    twins.same();
    // A fetch that would prune is the computer's, and changes nothing.
    twins.both(&["config", "fetch.prune", "true"]);
    let before = describe(&twins.dir.path().join("mine"));
    let refused = run(&twins.disk, "/mine", &["fetch"]);
    assert_eq!(
        (refused.status, text(&refused.stderr)),
        (129, "stead: git fetch that prunes (fetch.prune, remote.<name>.prune) is not in the light shell's git; run it on the computer\n".to_string())
    );
    assert_eq!(describe(&twins.dir.path().join("mine")), before);
}

#[test]
fn pulls_of_refspecs_and_urls_are_gits() {
    let twins = Twins::new();
    twins.upstream_work();
    let steps: &[&[&str]] = &[
        &["pull", "-q", "origin", "main"],
        &["switch", "-q", "-c", "side", "HEAD~2"],
        &["pull"],
        &["pull", "origin"],
        &["pull", "origin", "refs/heads/nothing*:refs/x/*"],
        &["pull", "{url}", "main"],
        &["switch", "-q", "-c", "third", "HEAD~3"],
        &["pull", "--ff-only", "{url}"],
        &["config", "branch.third.remote", "origin"],
        &["config", "branch.third.merge", "refs/heads/gone"],
        &["pull"],
        // A fetch refuses to store into the current branch.
        &["fetch", "origin", "main:third"],
    ];
    for step in steps {
        twins.both(step);
    }
    twins.same();
    twins.same_logs();
    // A pull may (git then moves the worktree too): the computer's.
    let mine = twins.dir.path().join("mine");
    let state = || {
        (
            describe(&mine),
            std::fs::read(mine.join(".git/FETCH_HEAD")).ok(),
        )
    };
    let before = state();
    let refused = run(&twins.disk, "/mine", &["pull", "origin", "main:third"]);
    assert_eq!(
        (refused.status, text(&refused.stderr)),
        (129, "stead: git pull of a refspec into the current branch is not in the light shell's git; run it on the computer\n".to_string())
    );
    assert_eq!(state(), before);
}

#[test]
fn a_pull_that_rebases_is_gits() {
    let twins = Twins::new();
    let write = |side: &str, name: &str, body: &str| {
        std::fs::write(twins.dir.path().join(side).join(name), body).unwrap();
    };
    let upstream_change = |name: &str, body: &str| {
        twins.upstream(&[]);
        for i in 0..2 {
            write(&format!("other{i}"), name, body);
        }
        twins.upstream(&[&["add", "-A"], &["commit", "-qm", name], &["push", "-q"]]);
    };
    upstream_change("up.txt", "up\n");
    for (name, body) in [("l1.txt", "one\n"), ("l2.txt", "two\n")] {
        for side in ["mine", "real"] {
            write(side, name, body);
        }
        twins.both(&["add", name]);
        twins.both(&["commit", "-qm", name]);
    }
    // A dirty worktree or index is refused before anything is fetched.
    for side in ["mine", "real"] {
        write(side, "README.md", "changed\n");
    }
    twins.both(&["pull", "--rebase"]);
    twins.both(&["add", "README.md"]);
    twins.both(&["pull", "--rebase"]);
    for side in ["mine", "real"] {
        write(side, "README.md", "changed again\n");
    }
    twins.both(&["pull", "--rebase"]);
    twins.both(&["reset", "-q", "--hard"]);
    assert_eq!(twins.both(&["pull", "--rebase"]), 0);
    twins.both(&["pull", "--rebase"]);
    twins.same();
    twins.same_logs();
    // Configured, quiet, and a fast-forward.
    upstream_change("up2.txt", "up2\n");
    twins.both(&["config", "pull.rebase", "true"]);
    assert_eq!(twins.both(&["pull", "-q"]), 0);
    upstream_change("up3.txt", "up3\n");
    twins.both(&["reset", "-q", "--hard", "origin/main"]);
    twins.both(&["pull"]);
    twins.same();
    twins.same_logs();
    // A replay that conflicts is the computer's: nothing changes.
    upstream_change("up.txt", "theirs\n");
    write("mine", "up.txt", "ours\n");
    let mine = twins.dir.path().join("mine");
    assert_eq!(
        run(&twins.disk, "/mine", &["commit", "-qam", "ours"]).status,
        0
    );
    let state = || {
        let head = text(&git(&mine, &["rev-parse", "HEAD", "main"]));
        let status = text(&git(&mine, &["status", "--porcelain"]));
        let files = std::fs::read_to_string(mine.join("up.txt")).unwrap();
        (head, status, files, mine.join(".git/ORIG_HEAD").exists())
    };
    let before = state();
    let refused = run(&twins.disk, "/mine", &["pull", "--rebase"]);
    assert_eq!(refused.status, 129, "{}", text(&refused.stderr));
    assert!(
        text(&refused.stderr).ends_with("stead: git pull --rebase with conflicts is not in the light shell's git; run it on the computer\n"),
        "{}",
        text(&refused.stderr)
    );
    // Only the fetch happened.
    assert_eq!(state(), before);
    fsck(&mine);
}
