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

/// The text `eval` and `source` run starts with `$?` as it was; an empty
/// text, or one of assignments alone, ends with status 0.
#[test]
fn eval_and_source_see_the_status_before_them() {
    check(
        "printf 'echo src=$?\\n' > s.sh; false; eval 'echo $?'; false; eval ''; echo e=$?; \
         false; eval 'x=1'; echo a=$?; false; . ./s.sh; false; eval 'y=$?'; echo y=$y",
        "1\ne=0\na=0\nsrc=1\ny=1\n",
    );
}

/// bash reads a script a complete command at a time: lines before a syntax
/// error run, the error ends the script with status 2; in `eval` it ends
/// only the eval, which returns 1.
#[test]
fn syntax_error_stops_only_what_follows() {
    check_status("echo one\necho two; fi\necho three", "one\n", 2);
    check("eval \"echo a\nfi\"; echo st=$?", "a\nst=1\n");
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

/// A background job runs in a subshell environment: its assignments and
/// `exit` stay its own; `wait` gives its status (again on a second wait),
/// 127 for an unknown pid; `$!` is its pid.
#[test]
fn background_jobs_run_in_a_subshell() {
    check(
        "x=1; { x=2; echo in job; exit 7; } & p=$!; wait $p; echo \"x=$x st=$?\"; \
         (exit 3) & q=$!; wait $q; echo a=$?; wait $q; echo b=$?; wait 99999; echo c=$?; \
         (exit 4) & wait -n; echo n=$?; wait -n; echo n=$?; [ \"$!\" -gt 0 ] && echo pid ok",
        "in job\nx=1 st=7\na=3\nb=3\nc=127\nn=4\nn=127\npid ok\n",
    );
}

/// `kill` of a job ends it with the signal (`wait` gives 128 + n); `kill -l`
/// translates; `jobs` lists running jobs as bash does.
#[test]
fn kill_wait_and_jobs() {
    check(
        "sleep 5 & p=$!; kill $p; wait $p; echo term=$?; sleep 5 & kill -9 %1; wait %1; echo kill=$?; \
         kill -l 143; kill -l USR1; sleep 1 & sleep 2 & jobs",
        "term=143\nkill=137\nTERM\n10\n[1]-  Running                 sleep 1 &\n[2]+  Running                 sleep 2 &\n",
    );
}

/// A signal sent to the shell runs its trap (with `$?` 0, kill's status);
/// `trap -p` prints traps; `trap ''` ignores; without a trap, SIGTERM ends
/// the shell with 143.
#[test]
fn signal_traps() {
    check_status(
        "trap \"echo usr1 \\$?\" USR1; false; kill -USR1 $$; echo after=$?; trap -p USR1; \
         trap '' INT; trap -p; trap - USR1 INT; trap -p; kill -TERM $$; echo not",
        "usr1 0\nafter=0\ntrap -- 'echo usr1 $?' SIGUSR1\ntrap -- '' SIGINT\ntrap -- 'echo usr1 $?' SIGUSR1\n",
        143,
    );
}

/// RETURN fires as functions return once set by the function or under
/// `set -T`; DEBUG runs before each simple command with `$BASH_COMMAND`;
/// ERR sees `LINENO` of the failing command, and reaches into functions and
/// subshells only with `set -E`.
#[test]
fn return_debug_and_err_traps() {
    check(
        "trap \"echo ret \\$FUNCNAME\" RETURN; f() { echo in f; }; f; g() { trap \"echo gret\" RETURN; }; g; set -T; f\n\
         trap \"echo dbg \\$BASH_COMMAND\" DEBUG; x=1; echo hi; trap - DEBUG\n\
         trap \"echo err \\$LINENO\" ERR\n\
         false\n\
         h() { false; true; }; h; set -E; h; (false); echo end",
        "in f\ngret\nin f\ngret\ndbg x=1\ndbg echo hi\nhi\ndbg trap - DEBUG\nerr 4\ngret\nerr 5\ngret\nerr 5\nerr 5\nend\n",
    );
}

/// `return` outside a function or sourced file is an error (status 2) and
/// the script goes on.
#[test]
fn top_level_return_is_an_error() {
    check("return 3; echo st=$?", "st=2\n");
}

/// `compgen` generates matches (actions, word lists split on IFS) and
/// `complete -p` prints specs as bash does.
#[test]
fn compgen_and_complete() {
    check(
        "f1() { :; }; f2() { :; }; alias fa=x; compgen -A function f; compgen -W \"one two three\" t; \
         compgen -k el; compgen -A alias -A function f; complete -W \"a b\" -F g cmd; complete -p; \
         compgen -v __nope; echo st=$?; IFS=\":\"; compgen -W \"x:y\"",
        "f1\nf2\ntwo\nthree\nelse\nelif\nfa\nf1\nf2\ncomplete -W 'a b' -F g cmd\nst=1\nx\ny\n",
    );
}

/// `shopt` and `set -o` list and print options in bash's formats; `$-`
/// lists flags in bash's order (recorded from a script file, so without
/// the `c` of `bash -c`); unknown names are errors.
#[test]
fn option_listings() {
    check(
        "shopt -p extglob; shopt -s extglob; shopt extglob; shopt -q nullglob; echo q=$?; \
         set -o errexit; set -o | grep errexit; set +o | grep -E \"errexit|xtrace\"; set +e; \
         shopt -s nosuch; echo st=$?; set -o nosuch; echo st=$?; set -eu; echo $-",
        "shopt -u extglob\nextglob        \ton\nq=1\nerrexit        \ton\nset -o errexit\nset +o xtrace\nst=1\nst=2\nehuB\n",
    );
}

/// An expansion error abandons the rest of its line and the script goes
/// on; `failglob` does the same; `${x?}` ends the script with status 1
/// (recorded from a script file).
#[test]
fn expansion_errors_abandon_the_line() {
    check_status(
        "echo $((1/0)); echo same line\necho next; shopt -s failglob; echo *.nomatch; echo same\n\
         echo after; echo ${x?unset here}; echo not reached",
        "next\nafter\n",
        1,
    );
}

/// `$'\xNN'` and printf escapes hold the byte itself; bytes that are not
/// UTF-8 count as one character and come out unchanged; `%q` quotes them;
/// out-of-range integers clamp as bash's do; `%c` prints the first byte;
/// `%(fmt)T` formats seconds; NUL bytes cannot be in a value.
#[test]
fn bytes_and_printf() {
    check(
        "x=$'\\xff'; echo ${#x}; printf %s \"$x\" | od -An -tx1; printf '\\351\\n' | od -An -tx1; \
         printf '%q\\n' \"$x\" 'a b' $'t\\tx'; printf '%u %d\\n' -18446744073709551615 99999999999999999999; \
         printf '%(%Y-%m-%d)T\\n' 86400; printf '%c' $'\\u03bc' | od -An -tx1; y=$(printf 'a\\0b'); echo ${#y}; \
         z=$'a\\0b'; echo ${#z}",
        "1\n ff\n e9 0a\n$'\\377'\na\\ b\n$'t\\tx'\n1 9223372036854775807\n1970-01-02\n ce\n2\n1\n",
    );
}

/// `pushd`, `popd` and `dirs` keep bash's directory stack.
#[test]
fn directory_stack() {
    check(
        "mkdir -p /w/t /w/u; cd /w/t; pushd ../u >/dev/null; dirs -l -v; popd >/dev/null; pwd; popd; echo st=$?",
        " 0  /w/u\n 1  /w/t\n/w/t\nst=1\n",
    );
}

/// `read` without -r joins backslash-newline continuations and keeps
/// backslash-quoted separators inside a field; `-t 0`, `-d ''`, `-N`.
#[test]
fn read_options() {
    check(
        "printf \"a\\\\\\\\\\nb c\\n\" | { read x y; echo \"[$x][$y]\"; }; \
         printf \"a\\\\\\\\ b c\\n\" | { read -a arr; echo \"${#arr[@]} [${arr[0]}]\"; }; \
         read -t 0; echo t=$?; printf \"x y\\0z\\0\" | { read -d \"\" v; echo \"[$v]\"; }; \
         printf \"abcdef\" | { read -N 4 w; echo \"[$w]\"; }",
        "[ab][c]\n2 [a b]\nt=0\n[x y]\n[abcd]\n",
    );
}

/// `${x@Q}`, `${x@A}`, `${a@a}`, `${a[@]@A}`, `${x@E}`, `${p@P}`.
#[test]
fn parameter_transformations() {
    check(
        "x=\"a b\"; echo ${x@Q} ${x@A}; declare -ai n=(1 2); echo ${n@a} ${n[@]@A}; \
         e=$'a\\\\tb'; echo \"${e@E}\"; p='[\\$] \\\\'; echo \"${p@P}\"",
        "'a b' x='a b'\nai declare -ai n=([0]=\"1\" [1]=\"2\")\na\tb\n[$] \\\n",
    );
}

/// `select` reads a choice; `break` outside a loop is an error that changes
/// nothing; `break 2` in a loop condition leaves both loops; backquotes in
/// double quotes unescape `\"`; `~` expands in an unquoted `${x:-~}`.
#[test]
fn select_break_backquotes_and_tilde() {
    check(
        "printf \"2\\n\" | select x in one two; do echo \"got $x $REPLY\"; done 2>/dev/null; break; echo a; \
         for i in 1 2; do while break 2; do :; done; done; echo \"a`echo \\\"b\\\"`c\"; HOME=/h; x=; echo ${x:-~} \"${x:-~}\"",
        "got two 2\n\na\nabc\n/h ~\n",
    );
}

/// Prefix assignments last for their command only (builtins and functions
/// too), except for special builtins in POSIX mode; `env` runs programs,
/// not shell functions.
#[test]
fn temporary_bindings_and_env() {
    check(
        "x=1; f() { echo in $x; }; x=2 f; echo $x; x=3 true; echo $x; \
         set -o posix; y=1 : ; echo $y; set +o posix; \
         g() { echo g; }; env X=2 printenv X; env X=3 g; echo st=$?; env X=4 echo hi",
        "in 2\n1\n1\n1\n2\nst=127\nhi\n",
    );
}

/// Commands are searched on `$PATH` in order, the light shell's programs
/// living in `/usr/bin` and `/bin`; what is found is hashed and reused until
/// `hash -r` or `PATH` changes; a non-executable file is the last resort
/// (126 with `Permission denied`), as is a directory.
#[test]
fn path_search_and_the_hash_table() {
    check(
        "mkdir -p one two\n\
         echo 'echo two' > two/mycmd; chmod +x two/mycmd\n\
         echo 'echo one' > one/mycmd\n\
         PATH=\"one:two:/usr/bin:/bin\"\n\
         mycmd; echo status=$?\n\
         chmod +x one/mycmd\n\
         mycmd\n\
         hash -r\n\
         mycmd\n\
         type -t mycmd cat; type -P cat\n\
         rm one/mycmd; mycmd; echo status=$?\n\
         touch plain; ./plain; echo status=$?\n\
         mkdir d; ./d; echo status=$?\n\
         PATH=/nowhere; cat </dev/null; echo status=$?\n\
         command -p cat </dev/null; echo status=$?",
        "two\nstatus=0\ntwo\none\nfile\nfile\n/usr/bin/cat\nstatus=127\nstatus=126\nstatus=126\nstatus=127\nstatus=0\n",
    );
}

/// `declare -f` and `type` print a function in bash's layout, which reads
/// back as the same function; `type -a` lists every way a name runs;
/// `command -v` succeeds when any name is found; `hash` shows hits.
#[test]
fn function_printing_type_and_hash() {
    let def = "f () \n{ \n    local x=1;\n    if [ \"$x\" = 1 ]; then\n        echo \"one $x\";\n    \
               else\n        if false; then\n            :;\n        else\n            echo no;\n        \
               fi;\n    fi;\n    for i in a b;\n    do\n        echo $i;\n    done;\n    while false; do\n        \
               :;\n    done;\n    case $x in \n        1 | 2)\n            echo hit\n        ;;\n        \
               *)\n\n        ;;\n    esac\n}\n";
    check(
        "f() { local x=1; if [ \"$x\" = 1 ]; then echo \"one $x\"; elif false; then :; else echo no; fi; \
         for i in a b; do echo $i; done; while false; do :; done; case $x in 1|2) echo hit;; *) ;; esac; }\n\
         declare -f f\n\
         type f\n\
         eval \"$(declare -f f | sed 's/^f/g/')\"; g\n\
         declare -F f; declare -F\n\
         echo; type -a echo; command -v echo cat nope; echo $?\n\
         cat </dev/null; hash; hash -t cat",
        &format!(
            "{def}f is a function\n{def}one 1\na\nb\nhit\nf\ndeclare -f f\ndeclare -f g\n\n\
             echo is a shell builtin\necho is /usr/bin/echo\necho is /bin/echo\necho\n/usr/bin/cat\n0\n\
             hits\tcommand\n   1\t/usr/bin/cat\n/usr/bin/cat\n"
        ),
    );
}

/// `bash -i` reads its history file, records each command line, runs
/// `$PROMPT_COMMAND` before each prompt without touching `$?`, survives
/// `${x?}`, and appends the session to `$HISTFILE`; `fc -l` counts back from
/// itself. A non-interactive shell ends on `${x?}`: 127 for a `-c` text, 1
/// for a script. An unknown long option is a usage error (2). Assigning a
/// readonly variable abandons the line.
#[test]
fn interactive_shell_history_and_fatal_errors() {
    check(
        "printf 'echo old\\n' > hist\n\
         printf 'echo a\\nPROMPT_COMMAND=\"echo P\"\\n( exit 3 )\\necho $?\\nhistory\\nfc -l -2\\necho ${nope?}\\necho after\\n' \
           | HISTFILE=hist bash --norc -i 2>/dev/null\n\
         echo status=$?\n\
         cat hist\n\
         bash -c 'echo ${nope?}' 2>/dev/null; echo c=$?\n\
         echo 'echo ${nope?}' > s.sh; bash s.sh 2>/dev/null; echo f=$?\n\
         bash --rcdir x -c 'echo hi' 2>/dev/null; echo bad=$?\n\
         bash -i -c 'echo $-' 2>/dev/null | tr -d 'hmBHs'\n\
         readonly r=1; r=2 2>/dev/null; echo not-here\n\
         echo here",
        "a\nP\nP\n3\nP\n    1  echo old\n    2  echo a\n    3  PROMPT_COMMAND=\"echo P\"\n    4  ( exit 3 )\n    \
         5  echo $?\n    6  history\nP\n5\t echo $?\n6\t history\nP\nP\nafter\nP\nstatus=0\n\
         echo old\necho a\nPROMPT_COMMAND=\"echo P\"\n( exit 3 )\necho $?\nhistory\nfc -l -2\necho ${nope?}\necho after\n\
         c=127\nf=1\nbad=2\nic\nhere\n",
    );
}

/// `umask` (octal and symbolic) gives the mode of files redirections
/// create; `ulimit` keeps soft and hard limits with the kernel's rules
/// (soft at most hard, hard only lowered); `exit` with extra arguments
/// refuses and stays.
#[test]
fn umask_ulimit_and_exit_arguments() {
    check(
        "umask 0002; echo a > one; umask g-w,o-w; echo b > two; stat -c '%a' one two; umask; umask -S\n\
         ulimit -f; ulimit -t 100; ulimit -t; ulimit -H -t 200; echo raise=$?; ulimit -S -t 150; echo over=$?\n\
         ulimit -t zz; echo bad=$?\n\
         exit 7 8 9\n\
         echo status=$?",
        "664\n644\n0022\nu=rwx,g=rx,o=rx\nunlimited\n100\nraise=1\nover=1\nbad=1\nstatus=1\n",
    );
}

/// `$[expr]` is arithmetic; a leading 0 is octal; `${#...}` is a length only
/// before a whole parameter name; a tilde expands (and matches literally)
/// in `[[ ]]` patterns and regexes; extglob groups expand their words;
/// a unary test operator needs its operand.
#[test]
fn arith_length_tilde_and_extglob_words() {
    check(
        "echo $[1+2] $[ 2 * 3 ]\necho $(( 010 + 0x10 )) $(( -010 ))\n\
         x=abc; set -- a b; echo ${#x} ${##} ${#-} ${#?}\n\
         [[ -q ]]; echo $?\n\
         HOME=/h; [[ /h/x == ~/* ]] && echo tilde-lit\n\
         [[ ~ =~ ^/h ]] && echo tilde-re\n\
         shopt -s extglob\n\
         y=b; [[ b == @($y|c) ]] && echo ext-var\n\
         [[ 'a b' == @('a b'|c) ]] && echo ext-quoted",
        "3 6\n24 -8\n3 1 2 1\n0\ntilde-lit\ntilde-re\next-var\next-quoted\n",
    );
    assert_eq!(sh("echo a\n[[ -n ]]\necho b").0, "a\n");
}

/// Recorded with `bash -c` (descriptor 10 free): a `{fd}>` redirection on
/// its own creates the file and keeps nothing open; `<(` is text in double
/// quotes and a process substitution in `=~`, numbered from 63 again for each
/// command; `$\<newline>?`; a backslash before an ordinary character stays in
/// `"${x-...}"`; `$(< file)`; words that expand to nothing keep the status of
/// their last command substitution; getopts unsets OPTARG at the end; tilde
/// expansion after brace expansion; a leading `/` of a `//` pattern; slices
/// of sparse arrays by index; associative arrays listed in bash's hash order;
/// empty `$@` elements kept when IFS has no blanks; `BASH_LINENO`; `echo -e`
/// takes octal only as `\0nnn`.
#[test]
fn substitutions_redirections_and_listing_order() {
    check(
        r#"{out}>o.txt; test -f o.txt && echo created; : {n}>n.txt; echo "n=$n"
printf '<%s>\n' "${undef:-<(x)}"
echo <(true); echo <(true) <(true)
[[ /dev/fd/63 =~ <(true) ]] && echo re
echo $\
?
echo "${undef-\z}" "${undef-\$}"
seq 2 3 > f; x=$(< f); echo "[$x]"
`false`; echo $?
$(exit 4) $(exit 5); echo $?
getopts "c:" o -c1; getopts "c:" o -c1; echo "$o/${OPTARG-unset}"
HOME=/h; echo ~{/src,root}
x=/_/; echo ${x////c}
a=(); a[3]=x; a[7]=y; a[9]=z; echo "${a[@]:4:2}"
declare -A A=([hello]=1 [abc]=3 [zz]=4 [k1]=5); echo "${!A[@]}"
set -- one "" two; IFS=x; printf '<%s>' $@; echo; IFS=$' \t\n'
f() { echo "${BASH_LINENO[@]}"; }; f
echo -e '\1|\0101'
"#,
        r#"created
n=10
<<(x)>
/dev/fd/63
/dev/fd/63 /dev/fd/62
re
0
\z $
[2
3]
1
5
?/unset
/h/src /root
c_c
y z
hello zz k1 abc
<one><><two>
17
\1|A
"#,
    );
}

/// Recorded running the script as a file. `shift`, `break`, `continue` and
/// `return` with too many operands report it and abandon the rest of the
/// line (status 1); `alias --`; `unalias`
/// without operands is a usage error; `eval -z` is an invalid option; a
/// bad array subscript is reported; `mapfile -O` appends, `-d ''` splits on
/// NUL; exported arrays stay out of the environment; `cd -P`, `pwd -P`,
/// `CDPATH`, `cd missing/..` fails.
#[test]
fn builtin_usage_errors_and_directories() {
    check(
        r#"set -- a b c; shift 1 2; echo not-here
echo st=$?
for i in 1; do break 1 2; done; echo not-here
alias -- foo=bar; alias foo; unalias; echo u=$?; eval -z; echo e=$?
b=(1); unset -v 'b[-3]'; echo un=$?
arr=(x y z); printf '%s\n' a b | mapfile -O 2 -t arr; printf '%s\n' a b | { mapfile -O 2 -t arr; echo "${arr[@]}"; }
printf '%s\0' 1 2 | { mapfile -d '' m; echo "${#m[@]} ${m[1]}"; }
declare -A k=([a]=1); k_key=a; unset -v 'k[$k_key]'; echo "${#k[@]}"
mkdir -p /tmp/cd/real/sub; ln -s /tmp/cd/real /tmp/cd/link; cd /tmp/cd/link; pwd; pwd -P; cd -P /tmp/cd/link; pwd
cd /tmp/cd/missing/.. 2>/dev/null; echo cd=$?
CDPATH=/tmp/cd/real; cd sub; cd /; echo OLDPWD=$OLDPWD"#,
        r#"st=1
alias foo='bar'
u=2
e=2
un=1
x y a b
2 2
0
/tmp/cd/link
/tmp/cd/real
/tmp/cd/real
cd=1
/tmp/cd/real/sub
OLDPWD=/tmp/cd/real/sub
"#,
    );
}

/// Recorded running the script as a file: single quotes in `"${u:-'$v'}"`
/// are kept and `$v` expands; a here-document delimiter keeps `$(...)` as
/// written; `test -v` of an array is about its element 0; brace expansion
/// in a redirection target is an ambiguous redirect; `$LINENO` in `for ((`
/// is the loop's line; assigning a list to an element fails and abandons
/// the line.
#[test]
fn quoting_in_words_delimiters_and_element_lists() {
    check(
        r#"v='a b'; printf '<%s>\n' "${u:-'$v'}" "${u-a\nb}"
cat <<EOF$(echo 'x')
in
EOF$(echo 'x')
typeset -a arr; test -v arr; echo v=$?; arr[0]=1; test -v arr; echo v=$?
echo hi > r-{1,2}; echo redir=$?
for (( i = 0; i < LINENO; i++ )); do
  :
done; echo "i=$i"
a=(1 2)
a[0]=(3 4); echo not-here
echo "st=$? ${a[*]}"
"#,
        "<'a b'>\n<a\\nb>\nin\nv=1\nv=0\nredir=1\ni=7\nst=1 1 2\n",
    );
}

/// bash's variable contexts: a prefix assignment binds in a frame of its
/// own (merged into a function call's); `unset` of the current call's local
/// empties it, `unset` from a called function or of a temporary binding
/// removes that binding and reveals the one beneath; `local` of a name
/// bound by a temporary environment keeps its value.
#[test]
fn unset_and_local_follow_bash_variable_contexts() {
    check(
        "unlocal() { unset -v \"$1\"; }\nf1() { local v=local; unset v; echo \"a ${v-(unset)}\"; }\nv=global; f1; v=tempenv f1\nf1() { local v=local; unlocal v; echo \"b ${v-(unset)}\"; }\nv=global; f1; v=tempenv f1\nf1() { unset v; echo \"c ${v-(unset)}\"; }\nv=tempenv f1\nf1() { unlocal v; echo \"d ${v-(unset)}\"; }\nv=tempenv f1\nf5() {\n  echo \"[$1] v: ${v-(unset)}\"\n  local v\n  echo \"[$1,local] v: ${v-(unset)}\"\n  ( unset v; echo \"[$1,local+unset] v: ${v-(unset)}\" )\n  ( unlocal v; echo \"[$1,local+unlocal] v: ${v-(unset)}\" )\n}\nf5 'global'\nv=tempenv f5 'global,tempenv'\nv=tempenv eval 'f5 \"global,tempenv,(eval)\"'\nf3() {\n  local v=local1\n  v=tempenv2 eval '\n    local v=local2\n    v=tempenv3 eval \"\n      local v=local3\n      echo \\\"e \\${v-(unset)}\\\"\n      unlocal v; echo \\\"e1 \\${v-(unset)}\\\"\n      unlocal v; echo \\\"e2 \\${v-(unset)}\\\"\n      unlocal v; echo \\\"e3 \\${v-(unset)}\\\"\n      unlocal v; echo \\\"e4 \\${v-(unset)}\\\"\n    \"\n  '\n  echo \"after ${v-(unset)}\"\n}\nv=global\nv=tempenv1 f3\necho \"end ${v-(unset)}\"\nx=global\ng() { x=mut; echo $x; unset x; echo \"g ${x-u}\"; }\nx=temp g; echo \"top $x\"\nv=g; v=t eval 'unset v; echo \"ev ${v-u}\"'; echo \"ev2 ${v-u}\"\nh() { local -x q=1; q=2 eval 'local q=3; echo $q'; echo \"h $q\"; }; h\n",
        "a (unset)\na (unset)\nb global\nb global\nc global\nd global\n[global] v: global\n[global,local] v: (unset)\n[global,local+unset] v: (unset)\n[global,local+unlocal] v: global\n[global,tempenv] v: tempenv\n[global,tempenv,local] v: tempenv\n[global,tempenv,local+unset] v: (unset)\n[global,tempenv,local+unlocal] v: global\n[global,tempenv,(eval)] v: tempenv\n[global,tempenv,(eval),local] v: tempenv\n[global,tempenv,(eval),local+unset] v: (unset)\n[global,tempenv,(eval),local+unlocal] v: tempenv\ne local3\ne1 local2\ne2 local1\ne3 global\ne4 (unset)\nafter (unset)\nend (unset)\nmut\ng global\ntop global\nev g\nev2 g\n3\nh 1\n",
    );
}

/// `getopts` past the last argument (another list than the last call's,
/// `set --`) sets OPTIND to one past the last, as bash does.
#[test]
fn getopts_past_the_arguments_sets_optind_to_one_past_the_last() {
    check(
        "set -- -a; while getopts \"ab:\" opt; do echo .; done; echo OPTIND=$OPTIND\nset -- -c -d -e foo; while getopts \"cde:\" opt; do echo -; done; echo OPTIND=$OPTIND\nset -- -f; while getopts \"f:\" opt; do echo _; done 2>/dev/null; echo OPTIND=$OPTIND\nset --; while getopts \"h\" opt; do echo -; done; echo OPTIND=$OPTIND\n",
        ".\nOPTIND=2\n-\n-\nOPTIND=5\nOPTIND=2\nOPTIND=1\n",
    );
}

/// An arithmetic expression is expanded as if in double quotes, but its
/// own double quotes are removed (`$(( "1 + 2" * 3 ))` is 7).
#[test]
fn double_quotes_in_arithmetic_are_removed() {
    check(
        "echo $(( \"1 + 2\" * 3 )); x='1 + 2'; echo $(( \"$x\" * 3 )) $(( $(echo \"4\") + \"2\" )); (( y = \"1+2\" * 3 )); echo $y\n",
        "7\n7 6\n7\n",
    );
}

/// `set -u`: an unset name in arithmetic ends the script, as in a
/// parameter expansion.
#[test]
fn nounset_in_arithmetic_ends_the_script() {
    check_status(
        "set -u; echo start; x=$(( zz + 1 )); echo not reached\n",
        "start\n",
        1,
    );
}

/// bash expands braces in the text: `{$a,b}_c` makes `$a_c`, the variable
/// `a_c`, while `${a}` and `$1` end where they end.
#[test]
fn brace_expansion_continues_a_bare_name() {
    check(
        "a=A; a_c=AC; echo {$a,b}_{c,d}; echo {_$a,b}_{c,d}; echo {${a},b}_c; set -- one; echo {$1,b}2\n",
        "AC b_c b_d\n_AC _ b_c b_d\nA_c b_c\none2 b2\n",
    );
}

/// `${a[@]@K}` is one word of `key "value"` pairs (an associative array's
/// ending in a blank), `@k` separate words; a scalar is quoted as by `@Q`.
#[test]
fn transform_k_lists_keys_and_values() {
    check(
        "a=(x \"y z\" 'q\"$'); printf \"<%s>\" \"${a[@]@K}\"; echo; printf \"<%s>\" \"${a[@]@k}\"; echo; printf \"<%s>\" \"${a[*]@k}\"; echo\ndeclare -A A=([k]=v); printf \"<%s>\" \"${A[@]@K}\"; echo; x=x; e=; echo ${x@K} ${e@K} ${u@K} ${x@k} \"${a[1]@K}\"\n",
        "<0 \"x\" 1 \"y z\" 2 \"q\\\"\\$\">\n<0><x><1><y z><2><q\"$>\n<0 x 1 y z 2 q\"$>\n<k \"v\" >\n'x' '' 'x' 'y z'\n",
    );
}

/// `${s:}` has no offset: a bad substitution (`${s: }` is offset 0).
#[test]
fn substring_without_an_offset_is_a_bad_substitution() {
    check_status(
        "s=123; echo ${s: }; echo \"${s:}\"; echo not reached\n",
        "123\n",
        1,
    );
}

/// Devices are character devices; `-u`, `-g` and `-k` each test their own
/// mode bit.
#[test]
fn file_tests_of_devices_and_mode_bits() {
    check(
        "test -c /dev/zero; echo $?; touch s g; chmod u+s s; chmod g+s g; test -u s; echo $?; test -u g; echo $?; test -g s; echo $?; test -g g; echo $?; test -k s; echo $?\n",
        "0\n0\n1\n1\n0\n1\n",
    );
}

/// `declare -a` / `-A` alone list those arrays; an array is never converted
/// to the other kind (the command is abandoned, status 1), a scalar becomes
/// element 0; an associative list is `(key value ...)` unless its first
/// element has a `[key]=`, after which one without is refused.
#[test]
fn declare_lists_converts_and_reads_associative_lists_as_bash() {
    check_status(
        "z=(1); z[5]=d; declare -A A=([k]=v); declare -a | grep -E \"^declare -a z\"; declare -A | grep -E \" A=\"\ndeclare -a a=(1 2 3 4); eval 'declare -A a=([a]=x [b]=y)'; echo status=$?; echo \"${a[@]}\"\neval 'declare -a A=(1 2)'; echo status=$?; declare -p A\ns1=hello; declare -A s1=([a]=x); declare -p s1; s2=world; declare -A s2+=([b]=y); declare -p s2\ndeclare -A c; c=([j]=1 2 3); declare -p c; declare -A d; d=(1 2 [k]=v 3); echo \"${d[1]}\" \"${d[\"[k]=v\"]}\"\necho ${!undef-d}; echo st=$?; set -u; echo ${!undef}; echo not reached\n",
        "declare -a z=([0]=\"1\" [5]=\"d\")\ndeclare -A A=([k]=\"v\" )\nstatus=1\n1 2 3 4\nstatus=1\ndeclare -A A=([k]=\"v\" )\ndeclare -A s1=([a]=\"x\" )\ndeclare -A s2=([0]=\"world\" [b]=\"y\" )\ndeclare -A c=([j]=\"1\" )\n2 3\n",
        1,
    );
}

/// `${!name}` of an unset `name` is an error that abandons the line (under
/// `set -u` too).
#[test]
fn indirect_expansion_of_an_unset_name_is_an_error() {
    check(
        "echo ${!undef-d}; echo not reached\necho st=$?\nset -u\necho ${!undef}\necho not reached\n",
        "st=1\nnot reached\n",
    );
}

/// A command of assignments alone leaves `$_` empty.
#[test]
fn assignments_alone_leave_no_last_argument() {
    check(
        ": foo\ns=bar\necho \"[$_]\"\n: x\nx=$_ y=1\necho \"[$_] $x\"\n: z\na=(1 2)\necho \"[$_]\"\n: q\nr=$(echo hi)\necho \"[$_]\"\n",
        "[]\n[] x\n[]\n[]\n",
    );
}

/// `${a[*]:-w}` tests the elements joined by IFS's first character (empty
/// when IFS is), `${a[@]:-w}` joined by a blank; `a[]=v` and `${a[]}` have
/// no subscript (an error, status 1); `compgen -W` splits its list at IFS
/// characters, a backslash quoting one.
#[test]
fn joined_tests_empty_subscripts_and_compgen_word_lists() {
    check(
        "a=(\"\" \"\"); IFS=\necho \"a[*]: '${a[*]-no-colon}' '${a[*]:-with-colon}'\"\necho \"a[@]: '${a[@]-no-colon}' '${a[@]:-with-colon}'\"\nset -- \"\" \"\"\necho \"at: '${*:-with-colon}' '${@:-with-colon}'\"\nIFS=' '\necho \"a[*]: '${a[*]:-with-colon}'\"\nb=(1 2 3)\nb[]=42\necho status=$? ${b[@]}\necho ${b[]}\necho status=$?\nIFS=':%'\ncompgen -W 'spam:eggs%ham cheese\\:colon'\n",
        "a[*]: '' 'with-colon'\na[@]: ' ' ' '\nat: 'with-colon' ' '\na[*]: ' '\nstatus=1 1 2 3\nstatus=1\nspam\neggs\nham cheese:colon\n",
    );
}

/// The `ERR` trap fires once for a failed assignment (its command
/// substitution does not inherit the trap) and for `[[ ]]` and `(( ))`.
#[test]
fn err_trap_fires_once_for_an_assignment_and_for_atoms() {
    check(
        "trap 'echo line=$LINENO' ERR\n\nx=$(false)\n\n[[ a == b ]]\n\n(( 0 ))\necho ok\n",
        "line=3\nline=5\nline=7\nok\n",
    );
}

/// Without `set -E` a function does not inherit `ERR`: its failed call fires
/// the trap with `$LINENO` the call's line; with it, the failing line's.
#[test]
fn err_trap_of_a_failed_call_names_the_call_line() {
    check(
        "trap 'echo line=$LINENO' ERR\n\npassing() {\n  false  # line 4\n  true\n}\n\nfailing() {\n  true\n  false\n}\n\npassing\nfailing\n\nset -o errtrace\n\necho 'now with errtrace'\npassing\nfailing\n\necho ok\n",
        "line=14\nnow with errtrace\nline=4\nline=10\nline=20\nok\n",
    );
}

/// Prefix assignments last for their command only, `declare`, `export`,
/// `readonly` and `local` included; in POSIX mode a special builtin's stay.
#[test]
fn prefix_assignments_of_declaration_builtins_do_not_stay() {
    check(
        "FOO=foo readonly v=1; echo \"[$FOO]\"; B=b declare x=1; echo \"[$B]\"; C=c export y=1; echo \"[$C]\"\nf() { E=e local z=1; echo \"in [$E] $z\"; }; f; echo \"[$E]\"\nset -o posix; H=h readonly w=1; echo \"[$H]\"; I=i eval :; echo \"[$I]\"\n",
        "[]\n[]\n[]\nin [] 1\n[]\n[h]\n[i]\n",
    );
}
