//! Integration tests of the interpreter over a real SQLite workspace:
//! grammar, expansion, builtins, redirections and limits.

mod common;

use common::{db, out, run, run_in, write_files};
use stead_shell::{commands_used, light_shell_gaps, Gap, LimitKind, Limits};
use stead_vfs::{VPath, Vfs};

/// The gaps of `script` over an empty workspace, from `/`.
fn gaps(script: &str) -> Option<Vec<Gap>> {
    let db = db();
    light_shell_gaps(script, &Vfs::new(&db, 0), &VPath::root())
}

fn check(script: &str, want: &str) {
    assert_eq!(out(script), want, "script: {script}");
}

#[test]
fn lists_and_pipelines() {
    check("echo a; echo b", "a\nb\n");
    check("true && echo yes || echo no", "yes\n");
    check("false && echo yes || echo no", "no\n");
    check("! false; echo $?", "0\n");
    check("echo hi | { read x; echo got $x; }", "got hi\n");
    check("false | true; echo ${PIPESTATUS[@]}", "1 0\n");
    check("set -o pipefail; false | true; echo $?", "1\n");
}

#[test]
fn compound_commands() {
    check(
        "if false; then echo a; elif true; then echo b; else echo c; fi",
        "b\n",
    );
    check("for i in 1 2 3; do echo -n $i; done; echo", "123\n");
    check("for ((i=0;i<3;i++)); do echo -n $i; done; echo", "012\n");
    check(
        "i=0; while [ $i -lt 3 ]; do i=$((i+1)); done; echo $i",
        "3\n",
    );
    check(
        "i=0; until [ $i -ge 2 ]; do i=$((i+1)); done; echo $i",
        "2\n",
    );
    check("case abc in a*) echo one;; *) echo two;; esac", "one\n");
    check(
        "case a in a) echo 1;& b) echo 2;; c) echo 3;; esac",
        "1\n2\n",
    );
    check("case ab in a*) echo 1;;& *b) echo 2;; esac", "1\n2\n");
    check("x=1; (x=2; cd /tmp 2>/dev/null); echo $x $PWD", "1 /\n");
    check("{ echo a; echo b; } | wc -l 2>/dev/null || echo 2", "2\n");
}

#[test]
fn functions_and_control_flow() {
    check(
        "f() { local x=in; echo $x; }; x=out; f; echo $x",
        "in\nout\n",
    );
    check("f() { return 4; }; f; echo $?", "4\n");
    check(
        "for i in 1 2; do for j in a b; do [ $j = b ] && continue 2; echo $i$j; done; done",
        "1a\n2a\n",
    );
    check(
        "for i in 1 2 3; do [ $i = 2 ] && break; echo $i; done",
        "1\n",
    );
    check("function g { echo \"$# $1\"; }; g 'a b' c", "2 a b\n");
    check("echo start; exit 3; echo never", "start\n");
}

#[test]
fn parameter_expansion() {
    check(
        "x=hello; echo ${#x} ${x:1:3} ${x: -2} ${x^^} ${x^}",
        "5 ell lo HELLO Hello\n",
    );
    check(
        "p=/a/b/c.txt; echo ${p##*/} ${p%.*} ${p#/} ${p%%/*}x",
        "c.txt /a/b/c a/b/c.txt x\n",
    );
    check(
        "x=aXbXc; echo ${x/X/-} ${x//X/-} ${x/#a/A} ${x/%c/C}",
        "a-bXc a-b-c AXbXc aXbXC\n",
    );
    check(
        "echo ${u:-def} ${u-d2}; u=; echo \"${u:-e}\" \"${u-f}\"",
        "def d2\ne \n",
    );
    check(
        "echo ${v:=set}; echo $v; w=1; echo ${w:+alt}",
        "set\nset\nalt\n",
    );
    check("n=x; x=42; echo ${!n}", "42\n");
    check("(echo ${z:?missing}) 2>/dev/null; echo $?", "1\n");
}

#[test]
fn quoting_and_splitting() {
    check("x='a  b'; printf '<%s>' $x \"$x\"; echo", "<a><b><a  b>\n");
    check("IFS=:; x=a:b::c; printf '<%s>' $x; echo", "<a><b><><c>\n");
    check(
        "echo 'single $x' \"dq \\$x\" $'a\\tb'",
        "single $x dq $x a\tb\n",
    );
    check(
        "set -- 'a b' c; for a in \"$@\"; do echo \"[$a]\"; done",
        "[a b]\n[c]\n",
    );
    check("set -- a b; echo \"$*\"; IFS=,; echo \"$*\"", "a b\na,b\n");
    check(
        "echo {a,b}{1..2} {x..z} {05..3..2}",
        "a1 a2 b1 b2 x y z 05 03\n",
    );
    check("echo ~ ~/x", "/ //x\n");
}

#[test]
fn substitution_and_arithmetic() {
    check("echo $(echo a $(echo b)) `echo c`", "a b c\n");
    check("x=$(printf 'a\\n\\n'); echo \"[$x]\"", "[a]\n");
    check(
        "echo $((2**10)) $((7/2)) $((7%3)) $((1<<4)) $((16#ff)) $((0x10)) $((010))",
        "1024 3 1 16 255 16 8\n",
    );
    check(
        "i=5; ((i++)); ((i+=2)); echo $i $((i>7?1:0)) $((i==8 && 1))",
        "8 1 1\n",
    );
    check("((0)); echo $?; let x=3*4; echo $x", "1\n12\n");
}

#[test]
fn conditionals() {
    check("[[ abc == a* ]] && echo glob", "glob\n");
    check("[[ abc =~ ^a(b)c$ ]] && echo ${BASH_REMATCH[1]}", "b\n");
    check("[[ -z '' && -n x ]] && echo ok", "ok\n");
    check("[ 3 -lt 10 ] && [ abc != abd ] && echo ok", "ok\n");
    check("test -d / && test ! -f / && echo ok", "ok\n");
    check("[[ 10 -gt 9 ]] && [[ b > a ]] && echo ok", "ok\n");
}

#[test]
fn arrays() {
    check("a=(x y z); echo ${a[1]} ${#a[@]} ${a[@]:1}", "y 3 y z\n");
    check("a=(x y); a+=(z); a[5]=w; echo ${!a[@]}", "0 1 2 5\n");
    check(
        "declare -A m; m[k]=v; m[j]=u; echo ${m[k]} ${#m[@]}",
        "v 2\n",
    );
    check("a=(1 2 3); unset 'a[1]'; echo ${a[@]}", "1 3\n");
    check("mapfile -t l <<< $'a\\nb'; echo ${#l[@]} ${l[1]}", "2 b\n");
    check("read -ra w <<< 'p q r'; echo ${w[2]}", "r\n");
}

#[test]
fn builtins() {
    check(
        "printf '%5s|%-3d|%03d|%x|%.2f\\n' ab 7 5 255 3.14159",
        "   ab|7  |005|ff|3.14\n",
    );
    check("printf '%s-' a b c; echo", "a-b-c-\n");
    check("printf -v v '%d' 42; echo $v", "42\n");
    check("echo -e 'a\\nb'; echo -n x; echo", "a\nb\nx\n");
    check(
        "type echo | head -1 2>/dev/null || echo",
        "echo is a shell builtin\n",
    );
    check("command -v printf", "printf\n");
    check(
        "set -- -a -b x; while getopts ab: o; do echo $o ${OPTARG:-}; done",
        "a\nb x\n",
    );
    check("eval 'echo one; echo two'", "one\ntwo\n");
    check("set -e; false; echo never", "");
    check("x=1; unset x; echo ${x-unset}", "unset\n");
}

#[test]
fn redirections_and_files() {
    let db = db();
    write_files(&db, &[("/w/in.txt", b"line1\nline2\n")]);
    let r = run_in(
        &db,
        "echo a > out; echo b >> out; cat out; while read l; do echo \"<$l>\"; done < in.txt",
        "/w",
        Limits::default(),
    );
    assert_eq!(
        String::from_utf8_lossy(&r.stdout),
        "a\nb\n<line1>\n<line2>\n"
    );
    let r = run(
        &db,
        "cat <<EOF\nhi $HOME\nEOF\ncat <<'E'\n$x\nE\ncat <<< here",
    );
    assert_eq!(String::from_utf8_lossy(&r.stdout), "hi /\n$x\nhere\n");
    let r = run(&db, "{ echo out; echo err >&2; } 2>&1 >/dev/null | cat");
    assert_eq!(String::from_utf8_lossy(&r.stdout), "err\n");
    let r = run(
        &db,
        "ls /nonexistent-dir 2>/dev/null; echo $?; echo x &>/w/both; cat /w/both",
    );
    assert!(String::from_utf8_lossy(&r.stdout).ends_with("x\n"));
    let r = run(&db, "cat <(echo from-procsub)");
    assert_eq!(String::from_utf8_lossy(&r.stdout), "from-procsub\n");
}

#[test]
fn globbing() {
    let db = db();
    write_files(
        &db,
        &[
            ("/g/a.txt", b""),
            ("/g/b.txt", b""),
            ("/g/c.md", b""),
            ("/g/d/e.txt", b""),
        ],
    );
    let r = run_in(&db, "echo *.txt; echo *.none; shopt -s nullglob; echo *.none end; shopt -s globstar; echo **/*.txt", "/g", Limits::default());
    assert_eq!(
        String::from_utf8_lossy(&r.stdout),
        "a.txt b.txt\n*.none\nend\na.txt b.txt d/e.txt\n"
    );
}

#[test]
fn a_trailing_slash_globs_only_directories() {
    let db = db();
    write_files(
        &db,
        &[("/g/a.txt", b""), ("/g/d/e.txt", b""), ("/g/f/x", b"")],
    );
    let r = run_in(
        &db,
        "ln -s d link; ln -s a.txt file-link; echo */; echo /g/*/; echo [a-e]*/",
        "/g",
        Limits::default(),
    );
    assert_eq!(
        String::from_utf8_lossy(&r.stdout),
        "d/ f/ link/\n/g/d/ /g/f/ /g/link/\nd/\n"
    );
}

#[test]
fn unknown_command_is_127_with_a_clear_message() {
    let db = db();
    let r = run(&db, "no-such-tool --flag");
    assert_eq!(r.exit_code, 127);
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(err.contains("no-such-tool: command not found"), "{err}");
    assert!(err.contains("backend \"computer\""), "{err}");
}

#[test]
fn syntax_error_exits_2() {
    let db = db();
    let r = run(&db, "if then fi");
    assert_eq!(r.exit_code, 2);
    assert!(String::from_utf8_lossy(&r.stderr).contains("syntax error"));
}

fn small_limits() -> Limits {
    Limits {
        max_loop_iterations: 10_000,
        max_call_depth: 50,
        max_output_bytes: 100_000,
        max_wall_ms: 10_000,
        ..Limits::default()
    }
}

fn assert_limit(script: &str, kinds: &[LimitKind]) {
    let db = db();
    let r = run_in(&db, script, "/", small_limits());
    let limit = r.limit.unwrap_or_else(|| panic!("no limit for {script}"));
    assert!(kinds.contains(&limit), "{script}: {limit:?}");
    assert_eq!(r.exit_code, 124);
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(
        err.contains(&format!("stead: limit {} exceeded", limit.name())),
        "{err}"
    );
}

#[test]
fn infinite_loop_hits_loop_iterations() {
    assert_limit("while true; do :; done", &[LimitKind::LoopIterations]);
}

#[test]
fn deep_recursion_hits_call_depth() {
    assert_limit("f(){ f; }; f", &[LimitKind::CallDepth]);
}

#[test]
fn endless_output_hits_a_limit() {
    assert_limit(
        "while :; do echo xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx; done",
        &[LimitKind::OutputBytes, LimitKind::LoopIterations],
    );
}

#[test]
fn output_cap_sets_truncated() {
    let db = db();
    let r = run_in(
        &db,
        "for ((i=0;i<9000;i++)); do echo 0123456789abcdef; done",
        "/",
        small_limits(),
    );
    assert_eq!(r.limit, Some(LimitKind::OutputBytes));
    assert!(r.truncated);
}

#[test]
fn commands_used_lists_simple_command_names() {
    let names =
        commands_used("for f in *; do grep -q x \"$f\" && python3 a.py | jq .; done; echo $(date)")
            .unwrap();
    assert_eq!(names, vec!["date", "echo", "grep", "jq", "python3"]);
    assert!(commands_used("if then").is_none());
}

#[test]
fn gaps_are_the_commands_the_light_shell_lacks() {
    let found = gaps(
        "build() { cc -o app main.c; }; for f in *.c; do grep -c x \"$f\"; done; build; python3 t.py | sort; cd / && [ -d x ]; cc x.c",
    )
    .unwrap();
    assert_eq!(
        found,
        vec![Gap::Command("cc".into()), Gap::Command("python3".into())]
    );
    assert_eq!(gaps("echo hi | wc -l").unwrap(), vec![]);
    assert!(gaps("if then").is_none());
}

/// `auto`'s other rule: a utility the light shell has, given an option its
/// own parser does not take, is a gap too (checked before running, with
/// the parser the utility runs with).
#[test]
fn gaps_include_options_a_utility_lacks() {
    let option_gap = |script: &str| match gaps(script).unwrap().as_slice() {
        [Gap::Options { utility, message }] => format!("{utility}: {message}"),
        other => panic!("{script}: {other:?}"),
    };
    assert_eq!(
        option_gap("ls --time-style=long-iso -l"),
        "ls: unrecognized option '--time-style'"
    );
    assert_eq!(
        option_gap("cd /src && grep -rn --line-buffered TODO . | head -5"),
        "grep: unrecognized option '--line-buffered'"
    );
    assert_eq!(
        option_gap("x=$(sort --files0-from=list)"),
        "sort: unrecognized option '--files0-from'"
    );
    assert_eq!(
        option_gap("find . -name '*.rs' -fprint out"),
        "find: unknown predicate `-fprint'"
    );
    assert_eq!(
        option_gap("tar --zstd -cf a.tar.zst src"),
        "tar: unrecognized option '--zstd'"
    );
    // What every one of these utilities supports stays in the light shell,
    // with expanded words standing for operands and xargs' command left
    // to that command.
    let fine = "ls -la --color \"$d\"; grep -rn -e \"$pat\" --include='*.rs' src; sed -i -E 's/a/b/' f; \
                find . -type f -name '*.md' -newer x -print0 | xargs -0 -n1 ls --time-style=iso; \
                sort -k2,2n -t, f | uniq -c | head -n 3; tail -5 f; head -c 10 f; cut -d: -f1 f; \
                cat -n f; wc -l f; cp -a a b; mv -f b c; rm -rf c; tar -czf x.tgz src; tar xzf x.tgz; \
                date -u +%Y; date -Iseconds; stat -c %s f; du -sh .; diff -u a b; grep --version";
    assert_eq!(gaps(fine).unwrap(), vec![]);
    // A function named like a utility is the function.
    assert_eq!(
        gaps("ls() { command ls \"$@\"; }; ls --time-style=full-iso").unwrap(),
        vec![]
    );
}

/// Script files run in the light shell as bash runs them: `bash FILE`,
/// `sh FILE`, `./FILE` (executable, `#!/bin/bash`), `source` and `.`, with
/// `$0`, the positional parameters and `BASH_SOURCE` (the file of each
/// frame; code from no file is `environment`). Expected output recorded
/// from bash 5.2.
#[test]
fn script_files_run_with_their_name_arguments_and_sources() {
    let db = db();
    let script = "#!/bin/bash\necho $0 $# $1 ${BASH_SOURCE[0]} $BASH_SOURCE\n\
                  f() { echo in f ${BASH_SOURCE[@]} ${FUNCNAME[@]}; }; f\n";
    write_files(&db, &[("/w/x.sh", script.as_bytes())]);
    let r = run_in(
        &db,
        "bash x.sh a b; sh x.sh q; chmod +x x.sh; ./x.sh z; source x.sh s t; . ./x.sh; \
         g() { echo \"${#BASH_SOURCE[@]} [${BASH_SOURCE[*]}]\"; }; g; echo \"${#BASH_SOURCE[@]}\"",
        "/w",
        Limits::default(),
    );
    assert_eq!(
        common::text(&r.stdout),
        "x.sh 2 a x.sh x.sh\nin f x.sh x.sh f main\n\
         x.sh 1 q x.sh x.sh\nin f x.sh x.sh f main\n\
         ./x.sh 1 z ./x.sh ./x.sh\nin f ./x.sh ./x.sh f main\n\
         bash 2 s x.sh x.sh\nin f x.sh x.sh f source\n\
         bash 0 ./x.sh ./x.sh\nin f ./x.sh ./x.sh f source\n\
         1 [environment]\n0\n",
        "{}",
        common::text(&r.stderr)
    );
}

/// A file run as a program whose `#!` line names another interpreter does
/// not run as a bash script: bash's "bad interpreter" status, 126.
#[test]
fn a_script_for_another_interpreter_is_not_run_as_bash() {
    let db = db();
    write_files(&db, &[("/t.py", b"#!/usr/bin/env python3\nprint('hi')\n")]);
    let r = run(&db, "chmod +x t.py; ./t.py; echo $?");
    assert_eq!(common::text(&r.stdout), "126\n");
    assert!(
        common::text(&r.stderr).contains("./t.py: python3: bad interpreter"),
        "{}",
        common::text(&r.stderr)
    );
}

/// `auto` follows the script files a command runs: their commands are
/// checked as the command line's are, and a file run as a program for
/// another interpreter (or a binary) is a gap.
#[test]
fn gaps_follow_the_script_files_a_command_runs() {
    let db = db();
    write_files(
        &db,
        &[
            ("/s/ok.sh", b"#!/bin/sh\nls | wc -l\n"),
            ("/s/cc.sh", b"cc -o app main.c\n"),
            ("/s/t.py", b"#!/usr/bin/env python3\nprint(1)\n"),
            ("/s/app", b"\x7fELF\x02\x01\x00\x00"),
            ("/s/nested.sh", b"#!/bin/bash\n. ./lib.sh\nhelper\n"),
            ("/s/lib.sh", b"helper() { node x.js; }\n"),
            ("/s/loop.sh", b"bash ./loop.sh\n"),
        ],
    );
    let vfs = Vfs::new(&db, 0);
    let cwd = VPath::parse("/s").unwrap();
    let gaps = |script: &str| light_shell_gaps(script, &vfs, &cwd).unwrap();
    for fine in [
        "bash ok.sh",
        "sh ./ok.sh a b",
        "./ok.sh",
        "source ok.sh",
        ". /s/ok.sh",
        "bash -c 'ls | wc -l'",
        "bash missing.sh",
        "bash loop.sh",
    ] {
        assert_eq!(gaps(fine), vec![], "{fine}");
    }
    assert_eq!(gaps("bash cc.sh"), vec![Gap::Command("cc".into())]);
    assert_eq!(gaps("sh -e cc.sh x"), vec![Gap::Command("cc".into())]);
    assert_eq!(gaps("bash -c 'cc x.c'"), vec![Gap::Command("cc".into())]);
    assert_eq!(
        gaps("./t.py"),
        vec![Gap::Interpreter {
            file: "./t.py".into(),
            interpreter: "python3".into()
        }]
    );
    assert_eq!(gaps("/s/app -v"), vec![Gap::Binary("/s/app".into())]);
    // A sourced file's functions are the caller's: lib.sh's helper runs node.
    assert_eq!(gaps("./nested.sh"), vec![Gap::Command("node".into())]);
    assert!(light_shell_gaps("bash -c 'if then'", &vfs, &cwd).is_none());
}

/// Process substitutions and here-documents live outside the workspace:
/// commands read and write them as files (`/dev/fd/63`, as bash names
/// them), and the workspace gets no revision, change or `/dev` folder for
/// them. Each closes with its command, a compound command's included, so
/// the next one is `/dev/fd/63` again (as in bash 5.2).
#[test]
fn process_substitutions_and_here_documents_never_touch_the_workspace() {
    let db = db();
    write_files(&db, &[("/in.txt", b"x\ny\n")]);
    let vfs = Vfs::new(&db, 0);
    let before = vfs.revision().unwrap();
    let r = run(
        &db,
        "cat <(echo hi); diff <(echo a) <(echo b); tee >(wc -l) < in.txt >/dev/null; \
         paste <(seq 2) <(seq 3 4); while read l; do echo \"r $l\"; done < <(printf '1\\n'); \
         f() { echo \"$1\"; cat \"$1\"; }; f <(echo in); cat <<EOF\ndoc\nEOF\n\
         cat <<< str; [ -e /dev/fd/63 ] || echo closed; ls /",
    );
    assert_eq!(
        common::text(&r.stdout),
        "hi\n1c1\n< a\n---\n> b\n2\n1\t3\n2\t4\nr 1\n/dev/fd/63\nin\ndoc\nstr\nclosed\nin.txt\n",
        "{}",
        common::text(&r.stderr)
    );
    assert_eq!(vfs.revision().unwrap(), before);
    assert_eq!(vfs.changes_since(before, 100).unwrap(), Some(vec![]));
}

/// Counts the outermost transactions run through it: how many commits.
struct Commits<'a> {
    db: &'a stead_sql::SqliteDb,
    depth: std::cell::Cell<u32>,
    commits: std::cell::Cell<u32>,
}

impl stead_sql::Sql for Commits<'_> {
    fn query(
        &self,
        statement: &str,
        params: &[stead_sql::Param<'_>],
    ) -> Result<Vec<stead_sql::Row>, stead_sql::SqlError> {
        self.db.query(statement, params)
    }

    fn transaction<T, E>(&self, body: impl FnOnce() -> Result<T, E>) -> Result<T, E>
    where
        E: From<stead_sql::SqlError>,
    {
        if self.depth.get() == 0 {
            self.commits.set(self.commits.get() + 1);
        }
        self.depth.set(self.depth.get() + 1);
        let r = self.db.transaction(body);
        self.depth.set(self.depth.get() - 1);
        r
    }
}

/// One exec's writes commit together, in one transaction, and its later
/// reads see them: a thousand small writes cost one commit.
#[test]
fn an_execs_writes_commit_together() {
    let db = db();
    let commits = Commits {
        db: &db,
        depth: 0.into(),
        commits: 0.into(),
    };
    let vfs = Vfs::new(&commits, 0);
    let request = stead_shell::ExecRequest {
        command: "mkdir d; for i in $(seq 200); do echo \"line $i\" > d/f$i.txt; done; \
                  cat d/f*.txt | wc -l; rm d/f1.txt"
            .into(),
        cwd: VPath::root(),
        env: Default::default(),
        stdin: Vec::new(),
        limits: Limits::default(),
    };
    let r = stead_shell::exec(&vfs, &common::HostClock, request);
    assert_eq!(
        common::text(&r.stdout),
        "200\n",
        "{}",
        common::text(&r.stderr)
    );
    assert_eq!(commits.commits.get(), 1);
    let listed = Vfs::new(&db, 0).list(&VPath::parse("/d").unwrap(), None, 1000);
    assert_eq!(listed.unwrap().len(), 199);
}

/// A tight loop runs to its end within the loop budget, and one iteration
/// fewer of budget ends it with that limit's name. (How fast it runs is the
/// benchmark's business: `stead-bench shell`, "interpreter loop".)
#[test]
fn tight_arithmetic_loop_runs_within_its_iteration_limit() {
    let script = "s=0; for ((i=0;i<20000;i++)); do s=$((s+i)); done; echo $s";
    let limits = |max_loop_iterations| Limits {
        max_loop_iterations,
        ..Limits::default()
    };
    // 20,000 passes and the final failed test of the condition.
    let r = run_in(&db(), script, "/", limits(20_001));
    assert_eq!(String::from_utf8_lossy(&r.stdout), "199990000\n");
    assert_eq!(r.limit, None);
    let r = run_in(&db(), script, "/", limits(20_000));
    assert_eq!(r.limit, Some(LimitKind::LoopIterations));
    assert_eq!(r.exit_code, 124);
    assert!(String::from_utf8_lossy(&r.stderr).contains("limit max_loop_iterations exceeded"));
}

#[test]
fn traps_aliases_and_errexit_details() {
    check("trap 'echo bye' EXIT; echo hi", "hi\nbye\n");
    check("trap 'echo err' ERR; false; echo after", "err\nafter\n");
    // bash expands aliases as it parses, a line at a time: not on the
    // line that defines them (recorded from bash 5.2).
    check(
        "shopt -s expand_aliases; alias say='echo said'; say it\nsay it",
        "said it\n",
    );
    check("set -e; false && true; echo still", "still\n");
    check(
        "set -e; { test a = b && echo no; }; echo status=$?",
        "status=1\n",
    );
}

#[test]
fn exec_redirections_persist_and_close() {
    let db = db();
    let r = run(
        &db,
        "exec 3>/f3; echo one >&3; exec 3>&-; cat /f3; exec >/f4; echo two; exec >&2",
    );
    assert_eq!(String::from_utf8_lossy(&r.stdout), "one\n");
    let r = run(&db, "cat /f4");
    assert_eq!(String::from_utf8_lossy(&r.stdout), "two\n");
}

#[test]
fn a_writer_into_a_full_pipe_stops_like_sigpipe() {
    let db = common::db();
    let r = common::run(&db, "yes | head -2; echo \"${PIPESTATUS[@]}\"; echo after");
    assert_eq!(String::from_utf8_lossy(&r.stdout), "y\ny\n141 0\nafter\n");
    assert_eq!(r.limit, None);
    assert_eq!(r.exit_code, 0);
}

#[test]
fn namerefs_follow_declare_n_targets() {
    check(
        "show() { local -n arr=$1; echo \"${arr[$2]}\"; arr[1]=Z; }\n\
         a=(x y z); show a 2; echo \"${a[@]}\"",
        "z\nx Z z\n",
    );
    check(
        "x=1; declare -n r=x; r=2; echo $x ${!r}; unset r; echo \"x=${x-unset}\"",
        "2 x\nx=unset\n",
    );
    check("declare -n c1=c2; declare -n c2=c1; echo \"c=$c1\"", "c=\n");
    check(
        "declare -A A=([k]=v); key=k; declare -n e='A[$key]'; e=w; echo \"${A[k]}\"",
        "w\n",
    );
    check("set -- one; p=1; declare -n p; echo \"p=$p\"", "p=1\n");
    check(
        "declare -n q; y=Y; q=y; echo \"q=$q\"; declare -p q",
        "q=Y\ndeclare -n q=\"y\"\n",
    );
}

#[test]
fn array_literal_keys_append_and_evaluate_in_order() {
    check(
        "a=([0]=1+2+3 [a[0]]=10 [a[6]]=hello); echo \"${!a[@]} ${a[@]}\"",
        "0 6 10 1+2+3 10 hello\n",
    );
    check("b=([0]=1 [0]+=2); b+=([0]+=:3); echo \"${b[@]}\"", "12:3\n");
    check("declare -ia n=([0]=1 [0]+=2); echo \"${n[@]}\"", "3\n");
    check(
        "declare -A c=([x]=1 [x]+=2 [\"a b\"]=3); c+=([x]+=4); echo \"${c[x]} ${c[a b]}\"",
        "24 3\n",
    );
}

#[test]
fn globignore_filters_pathname_expansion() {
    check(
        "mkdir -p /g/sub; cd /g; touch a.txt b.md .env sub/c.txt\n\
         GLOBIGNORE='*.txt:[[:digit:]]*'; echo * sub/*\n\
         GLOBIGNORE='*'; echo *\n\
         unset GLOBIGNORE; echo *",
        ".env b.md sub sub/c.txt\n*\na.txt b.md sub\n",
    );
}

#[test]
fn set_a_exports_assigned_variables() {
    check(
        "set -a; X=1; f() { local L=2; declare -p L; }; f; declare -p X\n\
         set +a; Y=2; declare -p Y; set -o allexport; echo $-",
        "declare -x L=\"2\"\ndeclare -x X=\"1\"\ndeclare -- Y=\"2\"\nahB\n",
    );
}

#[test]
fn indirect_array_expansion_with_operators() {
    check(
        "b=(v1); v1=value; echo \"${!b[@]#?}\"; c=(a3[@]); a3=(1 2 3); echo \"[${!c[@]#?}]\"\n\
         d=(); echo \"[${!d[@]#?}]\"; a=(x y); (echo \"${!a[@]-d}\") 2>/dev/null; echo s=$?",
        "alue\n[  ]\n[]\ns=1\n",
    );
}

/// A write the filesystem refuses (here its stored-bytes quota) is reported
/// against the file and fails the command that wrote it, as a failing
/// `write(2)` fails `echo` in bash; the loop's status is its last command's.
#[test]
fn a_refused_write_fails_the_command() {
    let db = db();
    let vfs = stead_vfs::Vfs::new(&db, 1_700_000_000_000).with_limits(stead_vfs::Limits {
        max_stored_bytes: 4,
        ..stead_vfs::Limits::default()
    });
    let request = stead_shell::ExecRequest {
        command: "echo a > /a; echo $?; echo bb > /b; echo $?; \
                  for i in 1 2; do echo $i > /f$i; done; echo $?; { echo c; } > /c; echo $?"
            .to_string(),
        cwd: stead_vfs::VPath::parse("/").unwrap(),
        env: Default::default(),
        stdin: Vec::new(),
        limits: Limits::default(),
    };
    let r = stead_shell::exec(&vfs, &common::HostClock, request);
    assert_eq!(String::from_utf8_lossy(&r.stdout), "0\n1\n1\n1\n");
    let stderr = String::from_utf8_lossy(&r.stderr);
    assert!(stderr.contains("/b: No space left on device"), "{stderr}");
}

/// A quota error names the quota and how to raise it, as the API does,
/// whichever utility or redirection met it (one message, not per utility).
#[test]
fn a_quota_error_names_the_quota() {
    let db = db();
    write_files(&db, &[("/a", b"a"), ("/big", b"0123456789")]);
    // The root and the two files: three nodes, and room for one more.
    let vfs = stead_vfs::Vfs::new(&db, 1_700_000_000_000).with_limits(stead_vfs::Limits {
        max_nodes: 4,
        max_file_bytes: 8,
        ..stead_vfs::Limits::default()
    });
    let request = stead_shell::ExecRequest {
        command: "touch /b; echo x > /c; cp /a /d; mkdir /e; tar -cf /f a; cat /big /big > /b"
            .to_string(),
        cwd: stead_vfs::VPath::parse("/").unwrap(),
        env: Default::default(),
        stdin: Vec::new(),
        limits: Limits::default(),
    };
    let r = stead_shell::exec(&vfs, &common::HostClock, request);
    let nodes = "No space left on device (quota max_nodes = 4 reached; \
                 raise it with PUT /agents/{id}/settings or delete files)";
    let size = "File too large (quota max_file_bytes = 8 reached; \
                raise it with PUT /agents/{id}/settings)";
    assert_eq!(
        String::from_utf8_lossy(&r.stderr),
        format!(
            "bash: /c: {nodes}\n\
             cp: cannot copy '/a': {nodes}\n\
             mkdir: cannot create directory '/e': {nodes}\n\
             tar: /f: Cannot open: {size}\n\
             tar: Exiting with failure status due to previous errors\n\
             bash: /b: {size}\n"
        )
    );
}

#[test]
fn statuses_follow_bash_for_eval_unset_and_pipestatus() {
    // A text `eval` or `.` cannot parse returns 1; the caller goes on.
    check("eval 'echo >' 2>/dev/null; echo $?", "1\n");
    // A `case` that runs nothing leaves PIPESTATUS as it was.
    check(
        "false | true; case x in y) ;; esac; echo ${PIPESTATUS[@]}",
        "1 0\n",
    );
    check("(exit 3); echo ${PIPESTATUS[@]}", "3\n");
    // `unset` of an element of a scalar other than 0, or with a quoted
    // subscript on a non-associative variable, fails.
    check(
        "x=1; unset -v 'x[1]' 2>/dev/null; echo $? $x; unset -v 'x[0]'; echo $? ${x-gone}",
        "1 1\n0 gone\n",
    );
    check(
        "a=(1 2); unset -v 'a[\"k\"]' 2>/dev/null; echo $? ${#a[@]}",
        "1 2\n",
    );
    // A bare `${!ref}` naming no parameter is empty; with an operator it is an error.
    check("r='no such'; echo \"[${!r}]\" $?", "[] 0\n");
    check("r='no such'; (echo ${!r-d}) 2>/dev/null; echo $?", "1\n");
}
