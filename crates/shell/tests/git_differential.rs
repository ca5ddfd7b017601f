//! git in the light shell against the machine's real `git`: the same
//! scripted sessions run by real git (under bash, in a temporary
//! directory) and by the light shell (over a SQLite workspace) print the
//! same stdout and stderr and exit with the same statuses, step by step;
//! the repository the light shell leaves passes `git fsck --strict` and
//! has the same commits, refs and index as real git's; and each side reads
//! the other's commits.
//!
//! Both sides get the same identity and clock through the environment
//! (`GIT_AUTHOR_DATE` and friends), so the object ids must match too, and
//! real git gets the global configuration the computer gives it (the same
//! default identity, nothing else).

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use stead_shell::{exec, ExecRequest, Limits};
use stead_sql::SqliteDb;
use stead_vfs::{Kind, VPath, Vfs};

const GLOBAL_CONFIG: &str = "[user]\n\tname = stead agent\n\temail = agent@stead.invalid\n";

fn env() -> BTreeMap<String, String> {
    [
        ("GIT_AUTHOR_DATE", "1700000000 +0100"),
        ("GIT_COMMITTER_DATE", "1700000100 +0100"),
        ("LANG", "C"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

/// What one step printed.
#[derive(Debug, PartialEq, Eq)]
struct Step {
    stdout: String,
    stderr: String,
    status: i32,
}

struct Real {
    dir: tempfile::TempDir,
    home: tempfile::TempDir,
}

impl Real {
    fn new() -> Real {
        let home = tempfile::tempdir().unwrap();
        std::fs::write(home.path().join("gitconfig"), GLOBAL_CONFIG).unwrap();
        Real {
            dir: tempfile::tempdir().unwrap(),
            home,
        }
    }

    fn run(&self, line: &str) -> Step {
        let out = Command::new("bash")
            .arg("-c")
            .arg(line)
            .current_dir(self.dir.path())
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", self.home.path())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", self.home.path().join("gitconfig"))
            .envs(env())
            .output()
            .unwrap();
        let root = self.dir.path().to_string_lossy().into_owned();
        let clean = |b: &[u8]| {
            String::from_utf8_lossy(b)
                .replace(&format!("{root}/"), "/")
                .replace(&root, "/")
        };
        Step {
            stdout: clean(&out.stdout),
            stderr: clean(&out.stderr),
            status: out.status.code().unwrap_or(-1),
        }
    }
}

struct Light {
    db: SqliteDb,
}

impl Light {
    fn run(&self, line: &str) -> Step {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as i64;
        let vfs = Vfs::new(&self.db, now);
        let r = exec(
            &vfs,
            &common::HostClock,
            ExecRequest {
                command: line.to_string(),
                cwd: VPath::root(),
                env: env(),
                stdin: Vec::new(),
                limits: Limits::default(),
            },
        );
        Step {
            stdout: common::text(&r.stdout),
            stderr: common::text(&r.stderr),
            status: r.exit_code,
        }
    }

    /// Copies the workspace onto disk under `dir`.
    fn export(&self, dir: &Path) {
        let vfs = Vfs::new(&self.db, 0);
        fn walk(vfs: &Vfs<'_, SqliteDb>, at: &VPath, dir: &Path) {
            for e in vfs.list(at, None, usize::MAX >> 1).unwrap() {
                let path = at.join(&e.name);
                let disk = dir.join(&e.name);
                match e.node.kind {
                    Kind::Dir => {
                        std::fs::create_dir_all(&disk).unwrap();
                        walk(vfs, &path, &disk);
                    }
                    Kind::File => {
                        use std::os::unix::fs::PermissionsExt;
                        std::fs::write(&disk, vfs.read_file(&path).unwrap()).unwrap();
                        std::fs::set_permissions(
                            &disk,
                            std::fs::Permissions::from_mode(e.node.mode),
                        )
                        .unwrap();
                    }
                    Kind::Symlink => {
                        std::os::unix::fs::symlink(e.node.target.unwrap(), &disk).unwrap()
                    }
                }
            }
        }
        walk(&vfs, &VPath::root(), dir);
    }
}

/// Runs `session` on both sides, comparing every step, then the
/// repositories.
fn differential(session: &[&str]) {
    let real = Real::new();
    let light = Light { db: common::db() };
    for line in session {
        let want = real.run(line);
        let got = light.run(line);
        assert_eq!(
            got, want,
            "step `{line}`\nlight shell: {got:#?}\nreal git: {want:#?}"
        );
    }
    // The light shell's repository, on disk, for the real git to judge.
    let copy = tempfile::tempdir().unwrap();
    light.export(copy.path());
    let judge = Real {
        dir: copy,
        home: tempfile::tempdir().unwrap(),
    };
    std::fs::write(judge.home.path().join("gitconfig"), GLOBAL_CONFIG).unwrap();
    let fsck = judge.run("git fsck --strict --no-dangling 2>&1; echo status $?");
    assert!(fsck.stdout.ends_with("status 0\n"), "fsck: {}", fsck.stdout);
    for probe in [
        "git log --all --format='%H %P %an <%ae> %ad %cn %cd %s' 2>&1",
        "git for-each-ref --format='%(refname) %(objectname)'",
        "git ls-files -s",
        "git status --porcelain",
        "git cat-file -p HEAD 2>&1 | head -5",
    ] {
        assert_eq!(judge.run(probe), real.run(probe), "{probe}");
    }
}

#[test]
fn first_commits() {
    differential(&[
        "git status",
        "git init",
        "git status",
        "echo hello > a.txt; mkdir -p d/e; echo x > d/e/f; echo y > d/g",
        "git status",
        "git status -s",
        "git add a.txt",
        "git status",
        "git status --short --branch",
        "git commit -m 'first commit'",
        "git status",
        "git add .",
        "git commit -q -m second -m 'with a body'",
        "git log",
        "git log --oneline",
        "git log -1 --oneline",
        "git log -n 1",
        "git rev-parse HEAD",
        "git rev-parse --short HEAD~1",
        "git rev-parse --abbrev-ref HEAD",
        "git rev-parse --show-toplevel --is-inside-work-tree",
        "git ls-files",
        "git ls-files -s",
        "git show --oneline HEAD~1",
        "git show HEAD:a.txt",
        "git log --oneline -- d/g",
        "git log --format='%H %h %T %t %an <%ae> %ad %at %cn <%ce> %cd %ct %s'",
        "git log --pretty=format:'%s|%b|%P|%p%n--'",
        "git log --format=%B",
        "git log --pretty=oneline",
    ]);
}

#[test]
fn modify_stage_diff_and_amend() {
    differential(&[
        "git init -q -b main",
        "printf 'one\\ntwo\\nthree\\nfour\\nfive\\nsix\\nseven\\neight\\n' > n.txt; echo keep > k; git add -A; git commit -qm base",
        "sed -i 's/four/FOUR/' n.txt; echo new > new.txt; rm k",
        "git status",
        "git diff",
        "git diff --name-status",
        "git add n.txt",
        "git diff --cached",
        "git diff",
        "git status -s",
        "git commit -a -m 'change four, drop k'",
        "git status --porcelain",
        "git show",
        "echo more >> n.txt; git commit -a --amend --no-edit",
        "git log --oneline",
        "git commit --amend -m 'reworded'",
        "git diff HEAD~1 HEAD",
        "git diff HEAD~1 --name-only",
        "git commit -m nothing",
    ]);
}

#[test]
fn branches_tags_and_reset() {
    differential(&[
        "git init -q -b main",
        "echo a > a; git add a; git commit -qm A",
        "git branch topic",
        "git branch",
        "git switch topic",
        "echo b > b; git add b; git commit -qm B",
        "git switch main",
        "ls",
        "git branch -d topic",
        "git checkout -b other",
        "git branch --show-current",
        "git checkout topic",
        "git branch -d other",
        "git tag v1",
        "git tag -a v2 -m 'second release'",
        "git tag",
        "git show v2 --oneline",
        "git tag v1",
        "git tag -d v1",
        "git tag -d v1",
        "echo c >> b; git add b",
        "git reset",
        "git status -s",
        "git reset --hard",
        "git status",
        "git reset --soft HEAD~1",
        "git status -s",
        "git reset --hard main",
        "ls; git log --oneline",
        "git checkout HEAD~0 2>&1 | tail -1",
        "git switch nope",
        "git branch -m topic renamed; git branch",
    ]);
}

#[test]
fn rm_mv_ignore_and_config() {
    differential(&[
        "git init -q",
        "mkdir src; echo 1 > src/one.rs; echo 2 > src/two.rs; echo '*.log' > .gitignore; echo x > debug.log",
        "git status",
        "git add debug.log",
        "git add .",
        "git commit -qm files",
        "git mv src/one.rs src/uno.rs",
        "git status",
        "git commit -m rename",
        "git rm src/two.rs",
        "git rm nothing",
        "git rm -r src",
        "git status -s",
        "git config user.name",
        "git config core.bare",
        "git config remote.origin.url https://example.invalid/repo.git",
        "git config --get remote.origin.url",
        "git remote -v",
        "git remote add up https://example.invalid/up.git; git remote",
        "git remote add up x",
        "git config --unset nothing.here; echo $?",
        "git config --list --local",
        // Options end at the key: a value may look like one.
        "git config remote.origin.tagOpt --no-tags",
        "git config a.b -x; git config a.b",
        "git config a.c --get; git config --get -- a.c",
        "git config a.d --; git config a.d",
        // Names are matched in any case and written as typed.
        "git config Sec.Sub.VarName v; git config FOO.barBaz w; git config core.FileMode false",
        "git config A.NewOne 1; git config sec.Sub.varname; git config sec.sub.varname; echo $?",
        "git config --list --local",
        "cat .git/config",
    ]);
}

/// Real git commits; the light shell reads them, commits on top; real git
/// reads that.
#[test]
fn each_side_reads_the_others_commits() {
    let dir = tempfile::tempdir().unwrap();
    let real = Real {
        dir,
        home: tempfile::tempdir().unwrap(),
    };
    std::fs::write(real.home.path().join("gitconfig"), GLOBAL_CONFIG).unwrap();
    for line in [
        "git init -q -b main",
        "for i in 1 2 3; do echo $i > f$i; git add f$i; git commit -qm c$i; done",
        "git gc -q",
    ] {
        assert_eq!(real.run(line).status, 0, "{line}");
    }
    // Into the workspace, packed objects and all.
    let light = Light { db: common::db() };
    let vfs = Vfs::new(&light.db, 1_700_000_000_000);
    fn import(vfs: &Vfs<'_, SqliteDb>, disk: &Path, at: &VPath) {
        for e in std::fs::read_dir(disk).unwrap() {
            let e = e.unwrap();
            let path = at.join(&e.file_name().to_string_lossy());
            if e.file_type().unwrap().is_dir() {
                vfs.mkdir(&path, true, None).unwrap();
                import(vfs, &e.path(), &path);
            } else {
                vfs.write(&path, &std::fs::read(e.path()).unwrap(), Default::default())
                    .unwrap();
            }
        }
    }
    import(&vfs, real.dir.path(), &VPath::root());
    let log = light.run("git log --oneline");
    assert_eq!(log, real.run("git log --oneline"));
    assert_eq!(log.stdout.lines().count(), 3);
    assert_eq!(light.run("git status --porcelain").stdout, "");
    let commit = light.run("echo 4 > f4; git add f4; git commit -qm 'from the light shell'");
    assert_eq!(commit.status, 0, "{commit:?}");
    let copy = tempfile::tempdir().unwrap();
    light.export(copy.path());
    let judge = Real {
        dir: copy,
        home: tempfile::tempdir().unwrap(),
    };
    std::fs::write(judge.home.path().join("gitconfig"), GLOBAL_CONFIG).unwrap();
    assert_eq!(judge.run("git fsck --strict").status, 0);
    let log = judge.run("git log --format='%an %s'");
    assert_eq!(
        log.stdout,
        "stead agent from the light shell\nstead agent c3\nstead agent c2\nstead agent c1\n"
    );
    assert_eq!(judge.run("git status --porcelain").stdout, "");
}

/// What the light shell's git lacks goes to the computer under `auto`
/// (an option gap), and run here anyway it says so: never a wrong answer.
#[test]
fn what_is_not_implemented_is_routed_to_the_computer() {
    let db = common::db();
    let vfs = Vfs::new(&db, 1_700_000_000_000);
    let gaps = |script: &str| stead_shell::light_shell_gaps(script, &vfs, &VPath::root()).unwrap();
    for script in [
        "git status",
        "git add -A && git commit -qm x",
        "git log --oneline -5 -- src",
        "git commit --amend --no-edit",
        "git -C sub diff --cached",
        "git switch -c topic",
        "git push origin main",
        "git clone https://example.invalid/r.git",
        "git clone --depth 1 -b dev https://example.invalid/r.git dir",
        "git fetch && git pull --ff-only",
        "git push -u origin HEAD",
        "git merge topic",
        "git merge --no-ff -m 'join' topic",
        "git pull --no-rebase",
        "git merge --abort",
        "git commit --no-edit",
        "git push --force",
        "git push -f origin +main:main :old",
        "git push --delete origin old",
        "git push --tags",
        "git push --force-with-lease=main:origin/main",
        "git push https://example.invalid/r.git main:main",
        "git fetch origin main",
        "git fetch --tags",
        "git fetch -q origin +main:refs/remotes/origin/main 'refs/heads/*:refs/remotes/x/*'",
        "git fetch https://example.invalid/r.git",
        "git pull https://example.invalid/r.git main",
        "git pull origin topic",
        "git pull --rebase",
        "git pull -r -q origin main",
    ] {
        assert_eq!(gaps(script), vec![], "{script}");
    }
    for script in [
        "git clone git@example.invalid:r.git",
        "git push origin main:",
        "git push git@example.invalid:r.git main",
        "git fetch --all",
        "git fetch --prune",
        "git fetch origin 'refs/heads/*:refs/x'",
        "git fetch git@example.invalid:r.git main",
        "git pull origin main:a:b",
        "git pull --rebase=merges",
        "git rebase -i HEAD~2",
        "git stash show",
        "git commit",
        "git commit -m x --fixup HEAD",
        "git log --graph",
        "git log --format='%ar %s'",
        "git diff --stat",
        "git add '*.rs'",
        "git -c user.name=x commit -m y",
        "git status src",
        "git merge a b",
        "git merge -s ours topic",
        "git merge --abort topic",
    ] {
        let found = gaps(script);
        assert!(
            matches!(found.as_slice(), [stead_shell::Gap::Options { utility, .. }] if utility == "git"),
            "{script}: {found:?}"
        );
    }
    let light = Light { db: common::db() };
    // A merge rename detection could decide (g renamed on one side,
    // changed on the other) is refused before anything is written.
    light.run("mkdir r; cd r; git init -q -b main; echo x > g; git add g; git commit -qm base; git switch -qc side; git mv g h; git commit -qm moved; git switch -q main; echo y >> g; git commit -qam changed");
    let before = light.run("cd r; git status --porcelain; ls -a; git log --format=%H");
    let refused = light.run("cd r; git merge side");
    assert_eq!(refused.status, 129, "{refused:?}");
    assert_eq!(
        refused.stderr,
        "stead: git merge with renames is not in the light shell's git; run it on the computer\n"
    );
    assert_eq!(
        light.run("cd r; git status --porcelain; ls -a; git log --format=%H"),
        before
    );
    let refused = light.run("git init -q; git rebase main");
    assert_eq!(refused.status, 129);
    assert!(
        refused.stderr.contains("not in the light shell's git"),
        "{}",
        refused.stderr
    );
}

/// git's reads and writes count against the exec's limits like any
/// utility's: a `git add` that would write past `max_bytes_written` ends
/// the exec with that limit.
#[test]
fn git_is_bounded_by_the_exec_limits() {
    let db = common::db();
    let vfs = Vfs::new(&db, 1_700_000_000_000);
    let run = |command: &str, limits: Limits| {
        exec(
            &vfs,
            &common::HostClock,
            ExecRequest {
                command: command.to_string(),
                cwd: VPath::root(),
                env: env(),
                stdin: Vec::new(),
                limits,
            },
        )
    };
    assert_eq!(
        run(
            "git init -q; head -c 300000 /dev/urandom > big",
            Limits::default()
        )
        .exit_code,
        0
    );
    let tight = Limits {
        max_bytes_written: 100_000,
        ..Limits::default()
    };
    let r = run("git add big", tight);
    common::assert_ended_by(&r, stead_shell::LimitKind::BytesWritten, "git add big");
}

#[test]
fn subdirectories_modes_and_odd_content() {
    differential(&[
        "git init -q -b main",
        "mkdir -p lib/deep; echo a > lib/a; echo b > lib/deep/b; echo top > top; printf 'no newline' > nonl; : > empty; printf 'bin\\0ary' > blob.bin; git add -A; git commit -qm base",
        "cd lib && git status -s && echo x >> a && mkdir new && echo n > new/n && git status && git status -s && git diff",
        "cd lib && git add a && git status --porcelain && git reset -q a && git status -s",
        "cd lib/deep && git rev-parse --show-prefix && git ls-files && git log --oneline -- ../a",
        "chmod +x top; git status -s; git diff",
        "printf 'still no newline!' > nonl; printf 'bin\\0ary2' > blob.bin; git diff",
        "echo content > empty; git diff empty",
        "ln -s top link; git add link; git commit -qm link; git ls-files -s link",
        "git checkout -- lib/a && git status -s",
        "echo y > top; git checkout top; git status -s",
        "git add -A; git commit -qm all; git show --oneline HEAD~1",
        "git rm -q --cached nonl; git status -s; git diff --cached --name-status",
    ]);
}

/// Paths that name a directory, the repository's root or a file: what
/// lies beneath a directory is restored, unstaged and removed as git does.
#[test]
fn pathspecs_of_directories_and_the_root() {
    differential(&[
        "git init -q -b main",
        "mkdir -p d/e dd; echo 1 > d/a; echo 2 > d/e/b; echo 3 > dd/c; echo 4 > top; git add -A; git commit -qm base",
        "echo x > d/a; echo y > d/e/b; echo z > dd/c; echo w > top",
        "git checkout -- d",
        "git status --porcelain",
        "git checkout .",
        "git status --porcelain",
        "echo x > d/a; echo z > dd/c; git add -A; git reset -q d",
        "git status --porcelain",
        "git reset -q .",
        "git status --porcelain",
        "git checkout -- .; git rm -rq d",
        "git status --porcelain",
        "git checkout nosuch",
    ]);
}

/// What agents type most, one after another.
#[test]
fn an_agents_everyday_session() {
    differential(&[
        "git init -q",
        "git status",
        "echo hello > README.md; mkdir src; printf 'fn main() {}\\n' > src/main.rs; git add .",
        "git status",
        "git commit -m 'first commit'",
        "git log --oneline",
        "git checkout -b feature",
        "echo more >> README.md; git diff",
        "git commit -am 'more'",
        "git log --oneline -n 5",
        "git branch",
        "git checkout master",
        "git branch -d feature",
        "git branch -D feature",
        "git status -sb",
        "git log -1",
        "git rev-parse --abbrev-ref HEAD",
        "git rev-parse --show-toplevel",
        "git ls-files",
        "git tag v1; git tag",
        "git show HEAD",
        "git diff HEAD",
    ]);
}

#[test]
fn stash() {
    differential(&[
        "git init -q -b main",
        "echo a > a; echo b > b; git add .; git commit -qm base",
        "git stash",
        "echo a2 >> a; echo new > n; git add n; rm b",
        "git stash",
        "git status -s; ls",
        "git stash list",
        "echo b2 >> a; git stash push -m 'my message'",
        "git stash list",
        "git log --format='%H %T %P|%an <%ae> %at|%cn <%ce> %ct|%B' refs/stash",
        "git stash pop",
        "git stash list",
        "echo dirty >> a; git stash apply stash@{0}",
        "git checkout -- a; git stash apply",
        "git status -s",
        "git reset -q --hard; git stash drop stash@{0}",
        "git stash drop",
        "git stash pop",
        "git log --format='%H %P %s'",
    ]);
}

/// A corrupt object or index in `.git` is git's fatal error (status 128,
/// the damage named), never a panic or a wrong answer; and nothing is
/// written on top of it.
#[test]
fn corrupt_repositories_are_fatal_errors() {
    let light = Light { db: common::db() };
    let made =
        light.run("git init -q; echo a > a; git add a; git commit -qm one; git rev-parse HEAD");
    let head = made.stdout.trim().to_string();
    let object = format!(".git/objects/{}/{}", &head[..2], &head[2..]);
    light.run(&format!("printf 'not zlib' > {object}"));
    let log = light.run("git log");
    assert_eq!(log.status, 128, "{log:?}");
    assert!(
        log.stderr.starts_with("fatal: ") && log.stderr.contains("corrupt"),
        "{log:?}"
    );
    let commit = light.run("echo b > b; git add b; git commit -qm two");
    assert_eq!(commit.status, 128, "{commit:?}");
    assert_eq!(
        light.run(&format!("cat {object}")).stdout,
        "not zlib",
        "HEAD is left as it was"
    );
    light.run("printf 'DIRC garbage' > .git/index");
    let status = light.run("git status");
    assert_eq!(status.status, 128, "{status:?}");
    assert!(status.stderr.contains("index file corrupt"), "{status:?}");
}

#[test]
fn merges_without_conflicts() {
    differential(&[
        "git init -q -b main",
        "printf 'a\\nb\\nc\\nd\\ne\\nf\\ng\\n' > f; echo x > g; mkdir d; echo 1 > d/one; git add -A; git commit -qm base",
        "git switch -qc feat; sed -i 's/^b$/B/' f; echo new > h; git rm -q d/one; git add -A; git commit -qm feat",
        "git switch -q main; sed -i 's/^f$/F/' f; echo y >> g; git commit -qam main",
        "git merge feat",
        "git log --format='%P %s' -n 1",
        "cat f; ls; git status",
        "git merge feat",
        "git switch -qc later feat; echo more >> h; git commit -qam more",
        "git switch -q main; git merge -q later; git log --format=%s -n 1",
        "git switch -qc topic HEAD~1; echo t > t; git add t; git commit -qm t",
        "git merge --no-edit main",
        "git log --format='%s' -n 1; cat .git/ORIG_HEAD",
        "git switch -q main; git merge topic",
        "git reset -q --hard HEAD~1; git merge --ff-only topic",
        "git switch -qc ff; git switch -q main; git merge --no-ff -m 'joined by hand' ff",
        "git merge nope",
        "git merge",
        "git merge --abort",
    ]);
}

#[test]
fn a_merge_refuses_to_overwrite_local_changes() {
    differential(&[
        "git init -q -b main",
        "printf '1\\n2\\n3\\n' > f; echo g > g; git add -A; git commit -qm base",
        "git switch -qc feat; echo 4 >> f; git commit -qam feat",
        "git switch -q main; echo h > h; git add h; git commit -qm h",
        "echo dirty >> f; git merge feat",
        "git status --short",
        "git checkout f; echo staged >> g; git add g; git merge feat",
        "git reset -q --hard; echo unrelated >> g; git merge feat",
        "git status --short; git log --format=%s -n 1",
    ]);
}

#[test]
fn a_conflicted_merge_is_left_as_git_leaves_it_and_concluded() {
    differential(&[
        "git init -q -b main",
        "printf 'a\\nb\\nc\\nd\\ne\\nf\\ng\\n' > f; echo x > g; echo k > k; git add -A; git commit -qm base",
        "git switch -qc c1; sed -i 's/^d$/D1/' f; git rm -q g; git add -A; git commit -qm c1",
        "git switch -q main; sed -i 's/^d$/D2/' f; echo y >> g; echo K > k; git add -A; git commit -qm main",
        "git merge c1",
        "cat f; ls",
        "git ls-files -s",
        "cat .git/MERGE_HEAD .git/MERGE_MSG; cat .git/MERGE_MODE; git rev-parse ORIG_HEAD",
        "git status",
        "git status --short; git status --porcelain -b",
        "git diff --cached --name-only",
        "git commit -m premature",
        "git merge c1",
        "git commit --amend --no-edit",
        "echo fixed > f; git add f; git status",
        "git rm -q g; git status",
        "git merge c1",
        "git commit --no-edit",
        "git log --format='%P|%B' -n 1",
        "git status; ls .git | grep -c MERGE",
    ]);
}

#[test]
fn a_conflicted_merge_is_aborted() {
    differential(&[
        "git init -q -b main",
        "printf 'a\\nb\\nc\\n' > f; git add f; git commit -qm base",
        "git switch -qc topic; echo X > f; echo n > new; git add -A; git commit -qm topic",
        "git switch -q main; echo Y > f; echo m > new; echo u > untracked; git add f new; git commit -qm main",
        "git merge --abort",
        "echo local > local; git add local; git commit -qm local; echo edit > local",
        "git merge -q topic",
        "git status",
        "cat new",
        "git merge --abort; echo $?",
        "git status --short; cat f; cat local",
    ]);
}
