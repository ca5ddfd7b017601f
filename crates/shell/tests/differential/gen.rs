//! A seeded, grammar-based generator of bash scripts for the differential
//! tester (see `README.md` next to this file).
//!
//! A script is a few statements, each drawn from one [`Area`]'s
//! productions over a small pool of words (odd spacing, glob characters,
//! quotes, backslashes, empty strings), a few variables and the generated
//! file tree ([`TREE`]). Statements are lists of pieces, one a line, so
//! the shrinker can drop whole statements and pieces of them.
//!
//! What is never generated, because the light shell differs from bash there
//! by design (the documented differences, listed here once):
//! - processes: `$$`, `$PPID`, `$BASHPID`, `ps`, `/proc`, job control
//!   timing (`cmd &` runs when waited for), signals from outside;
//! - the machine: absolute paths of the working directory (`pwd`, `$PWD`,
//!   `~`), `$HOME`, `$RANDOM`, `date`, `$SECONDS`, host and user names;
//! - deep recursion and runaway loops are generated ([`Area::Runaway`]), but
//!   compared against the light shell's documented limits, not bash's crash
//!   or endless run: the light shell must end with its limit's error;
//! - stderr wording (compared: stdout, exit status and the files);
//! - a syntax error inside `[[ ]]` (`[[ a == ]]`, an unquoted space in a
//!   `=~` pattern): the light shell ends it with status 2, as the recorded
//!   spec cases have bash do, where bash 5.2.15 keeps `$?`; the spec's
//!   answer is the one kept (the shell crate's README says why).

/// What part of the language a statement exercises.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Area {
    Quoting,
    Expansion,
    WordSplitting,
    Arrays,
    AssocArrays,
    Arithmetic,
    Read,
    HereDoc,
    Redirection,
    Functions,
    Trap,
    Errexit,
    Glob,
    Extglob,
    Case,
    Cond,
    Printf,
    Subshell,
    ParseError,
    Options,
    Unicode,
    Runaway,
}

impl Area {
    pub const ALL: [Area; 22] = [
        Area::Quoting,
        Area::Expansion,
        Area::WordSplitting,
        Area::Arrays,
        Area::AssocArrays,
        Area::Arithmetic,
        Area::Read,
        Area::HereDoc,
        Area::Redirection,
        Area::Functions,
        Area::Trap,
        Area::Errexit,
        Area::Glob,
        Area::Extglob,
        Area::Case,
        Area::Cond,
        Area::Printf,
        Area::Subshell,
        Area::ParseError,
        Area::Options,
        Area::Unicode,
        Area::Runaway,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Area::Quoting => "quoting",
            Area::Expansion => "expansion",
            Area::WordSplitting => "word-splitting",
            Area::Arrays => "arrays",
            Area::AssocArrays => "assoc-arrays",
            Area::Arithmetic => "arithmetic",
            Area::Read => "read",
            Area::HereDoc => "here-doc",
            Area::Redirection => "redirection",
            Area::Functions => "functions",
            Area::Trap => "trap",
            Area::Errexit => "errexit",
            Area::Glob => "glob",
            Area::Extglob => "extglob",
            Area::Case => "case",
            Area::Cond => "cond",
            Area::Printf => "printf",
            Area::Subshell => "subshell",
            Area::ParseError => "parse-error",
            Area::Options => "options",
            Area::Unicode => "unicode",
            Area::Runaway => "runaway",
        }
    }
}

/// The file tree every script starts in (relative paths, contents).
pub const TREE: &[(&str, &str)] = &[
    ("a.txt", "alpha\nbeta\n"),
    ("b.log", "one two\nthree\n"),
    ("c.txt", ""),
    ("sp ace.txt", "s p\n"),
    (".hidden", "h\n"),
    ("d1/x.txt", "x1\nx2\nx3\n"),
    ("d1/y.log", "y\n"),
    ("d1/sub/z.md", "# z\n"),
    ("d2/aa", "aa\n"),
    ("d2/ab", "ab\n"),
];

/// A generated script: its statements (each a list of pieces) and the area
/// of each.
#[derive(Debug, Clone)]
pub struct Script {
    pub statements: Vec<(Area, Vec<String>)>,
}

impl Script {
    pub fn text(&self) -> String {
        let mut out = String::new();
        for (_, pieces) in &self.statements {
            out.push_str(&pieces.join("\n"));
            out.push('\n');
        }
        out
    }

    pub fn areas(&self) -> Vec<Area> {
        let mut areas: Vec<Area> = self.statements.iter().map(|(a, _)| *a).collect();
        areas.sort();
        areas.dedup();
        areas
    }

    pub fn has(&self, area: Area) -> bool {
        self.statements.iter().any(|(a, _)| *a == area)
    }
}

/// splitmix64: small, seedable, the same on every machine.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    pub fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

/// Raw words, before quoting.
const WORDS: &[&str] = &[
    "x",
    "hello world",
    "  lead",
    "trail  ",
    "a  b   c",
    "",
    "*.txt",
    "d?/*",
    "[ab]*",
    "a:b:c",
    "1,2,,3",
    "x=y",
    "-n",
    "back\\slash",
    "it's",
    "q\"uote",
    "tab\there",
    "é ü",
    "42",
    "-7",
    "a.b.c",
    "path/to/file.tar.gz",
    "AbC",
];

const IFS_VALUES: &[&str] = &[" ", ":", " :", "", ",", ":,", "x", " \t\n", "a"];

const GLOBS: &[&str] = &[
    "*", "*.txt", "?.*", "d*/*", "[a-c]*", "[!a]*", "*/*.log", "d2/a[ab]", "*.none", "d1/**", ".*",
    "\\*", "'*'.txt",
];

const EXTGLOBS: &[&str] = &[
    "!(*.txt)",
    "@(a|c).txt",
    "+(d)[12]",
    "*(x).log",
    "?(b).log",
    "d2/a@(a|b)",
    "!(d*)",
    "@(*.txt|*.log)",
];

const PATTERNS: &[&str] = &[
    "*",
    "x*",
    "*o*",
    "?",
    "[a-z]*",
    "h*d",
    "[[:digit:]]*",
    "*.*",
    "a*b*c",
    "\\*.txt",
    "''",
];

impl Rng {
    /// A word, quoted one of several ways (or not).
    fn word(&mut self) -> String {
        let w = *self.pick(WORDS);
        self.quoted(w)
    }

    fn quoted(&mut self, w: &str) -> String {
        match self.below(5) {
            0 if is_plain(w) => w.to_string(),
            0 | 1 => single(w),
            2 => double(w),
            3 => ansi_c(w),
            _ => format!(
                "{}{}",
                single(w),
                if self.chance(50) { "\"\"" } else { "''" }
            ),
        }
    }

    /// A variable reference, quoted or not.
    fn var(&mut self) -> String {
        let name = *self.pick(&["a", "b", "c", "unset_v", "n"]);
        match self.below(4) {
            0 => format!("${name}"),
            1 => format!("\"${name}\""),
            2 => format!("${{{name}}}"),
            _ => format!("\"${{{name}}}\""),
        }
    }

    fn assign(&mut self) -> String {
        let name = *self.pick(&["a", "b", "c"]);
        format!("{name}={}", self.word())
    }

    fn number(&mut self) -> String {
        self.pick(&[
            "0", "1", "2", "3", "7", "10", "-1", "255", "08", "0x1f", "2#101", "n", "a",
        ])
        .to_string()
    }

    fn arith(&mut self, depth: u32) -> String {
        if depth > 2 || self.chance(35) {
            return self.number();
        }
        let op = *self.pick(&[
            "+", "-", "*", "/", "%", "**", "<<", ">>", "&", "|", "^", "<", ">=", "==", "!=", "&&",
            "||", ",",
        ]);
        let (l, r) = (self.arith(depth + 1), self.arith(depth + 1));
        match self.below(6) {
            0 => format!("({l} {op} {r})"),
            1 => format!("{l} ? {r} : {}", self.number()),
            2 => format!("!{l}"),
            3 => format!("~{l}"),
            _ => format!("{l} {op} {r}"),
        }
    }
}

fn is_plain(w: &str) -> bool {
    !w.is_empty()
        && w.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.,:=/".contains(c))
}

fn single(w: &str) -> String {
    format!("'{}'", w.replace('\'', "'\\''"))
}

fn double(w: &str) -> String {
    let mut s = String::from("\"");
    for c in w.chars() {
        if "\"\\$`".contains(c) {
            s.push('\\');
        }
        s.push(c);
    }
    s.push('"');
    s
}

fn ansi_c(w: &str) -> String {
    let mut s = String::from("$'");
    for c in w.chars() {
        match c {
            '\'' => s.push_str("\\'"),
            '\\' => s.push_str("\\\\"),
            '\t' => s.push_str("\\t"),
            c => s.push(c),
        }
    }
    s.push('\'');
    s
}

/// One statement of `area`.
fn statement(g: &mut Rng, area: Area) -> Vec<String> {
    let p = |s: &str| s.to_string();
    match area {
        Area::Quoting => {
            let mut v = vec![g.assign()];
            let words: Vec<String> = (0..1 + g.below(3)).map(|_| g.word()).collect();
            v.push(format!("printf '<%s>' {} {}", words.join(" "), g.var()));
            v.push(p("echo"));
            if g.chance(40) {
                v.push(format!(
                    "echo {}{} \"{}\"",
                    g.var(),
                    g.word(),
                    g.pick(&["$a$b", "${a}x", "\\$a", "'$a'"])
                ));
            }
            v
        }
        Area::Expansion => {
            let op = *g.pick(&[
                ":-def", "-def", ":=set", ":+alt", "+alt", "#*/", "##*/", "%.*", "%%.*", "/a/X",
                "//[ab]/_", "/#x/Y", "/%c/Z", "^^", ",,", "^", "~~", ":1", ":1:2", ": -2", "@Q",
            ]);
            let name = *g.pick(&["a", "b", "unset_v"]);
            let mut v = vec![g.assign()];
            v.push(format!("printf '[%s]' \"${{{name}{op}}}\" ${{#{name}}}"));
            v.push(p("echo"));
            if g.chance(30) {
                v.push(format!("echo ${{{name}{op}}}"));
            }
            v
        }
        Area::WordSplitting => {
            let ifs = *g.pick(IFS_VALUES);
            let mut v = vec![g.assign(), format!("IFS={}", single(ifs))];
            match g.below(3) {
                0 => {
                    v.push(format!("set -- {} {}", g.var(), g.word()));
                    v.push(p("echo $#"));
                    v.push(p("printf '(%s)' \"$@\" $*"));
                    v.push(p("echo \"$*\""));
                }
                1 => {
                    v.push(format!("arr=({} {})", g.var(), g.word()));
                    v.push(p("printf '(%s)' ${arr[*]} \"${arr[*]}\" ${#arr[@]}"));
                }
                _ => {
                    v.push(format!(
                        "x={}{}",
                        g.var(),
                        g.pick(&["", "\"$b\"", "$b", "' '"])
                    ));
                    v.push(p("printf '(%s)' $x ${x} \"$x\"$x; echo"));
                }
            }
            v.push(p("unset IFS"));
            v
        }
        Area::Arrays => {
            let words: Vec<String> = (0..g.below(4)).map(|_| g.word()).collect();
            let mut v = vec![format!("arr=({})", words.join(" "))];
            v.push(format!("arr+=({})", g.word()));
            v.push(format!("arr[{}]={}", g.below(6), g.word()));
            if g.chance(40) {
                v.push(format!("unset 'arr[{}]'", g.below(4)));
            }
            v.push(p("echo ${#arr[@]} ${!arr[@]}"));
            v.push(format!(
                "printf '<%s>' {}",
                g.pick(&[
                    "\"${arr[@]}\"",
                    "${arr[@]}",
                    "\"${arr[*]}\"",
                    "\"${arr[@]:1}\"",
                    "\"${arr[@]/a/X}\"",
                    "\"${arr[-1]}\""
                ])
            ));
            v.push(p("echo"));
            v
        }
        Area::AssocArrays => {
            let mut v = vec![format!(
                "declare -A m=([k]={} [\"x y\"]={})",
                g.word(),
                g.word()
            )];
            v.push(format!(
                "m[{}]={}",
                g.pick(&["q", "'a b'", "k", "1"]),
                g.word()
            ));
            if g.chance(30) {
                v.push(p("unset 'm[k]'"));
            }
            v.push(p("echo ${#m[@]}"));
            v.push(p("printf '%s\\n' \"${!m[@]}\" | sort"));
            v.push(p("printf '%s\\n' \"${m[@]}\" | sort"));
            v.push(format!(
                "[[ -v m[{}] ]] && echo set || echo unset",
                g.pick(&["k", "q", "zz"])
            ));
            v
        }
        Area::Arithmetic => {
            let mut v = vec![format!("n={}", g.number())];
            v.push(format!("echo $(( {} ))", g.arith(0)));
            if g.chance(50) {
                v.push(format!("(( x = {}, y = x + 1 ))", g.arith(1)));
                v.push(p("echo $? $x $y"));
            }
            if g.chance(30) {
                v.push(format!("let 'z = {}'", g.arith(1)));
                v.push(p("echo $? $z"));
            }
            v
        }
        Area::Read => {
            let data = *g.pick(&[
                "a b c\\nd e\\n",
                "  lead  trail  \\n",
                "x:y::z\\n",
                "back\\\\\\\\slash word\\n",
                "no newline",
                "\\n",
                "one\\ntwo\\nthree",
                "a,b,c\\n",
            ]);
            let ifs = g
                .pick(&["", "IFS=: ", "IFS=, ", "IFS= ", "IFS=' ' "])
                .to_string();
            let read = *g.pick(&[
                "read x y",
                "read -r x y",
                "read -ra parts",
                "read -a parts",
                "read -n 3 x",
                "read -N 4 x",
                "read -d : x",
                "read -d '' -r x y",
                "read -r",
                "read x",
                "read x y z",
            ]);
            let show = "echo \"$? [${x-}] [${y-}] [${REPLY-}] ${#parts[@]} [${parts[*]-}]\"";
            match g.below(3) {
                0 => vec![format!("printf '{data}' | {{ {ifs}{read}; {show}; }}")],
                1 => vec![format!("{ifs}{read} <<< $(printf '{data}')"), p(show)],
                _ => vec![format!(
                    "printf '{data}' | while {ifs}read -r line; do echo \"<$line>\"; done"
                )],
            }
        }
        Area::HereDoc => {
            let body = *g.pick(&[
                "$a text",
                "'quoted' \\$b",
                "`echo bq`",
                "$(echo cs) ${#a}",
                "\ttab",
            ]);
            let (op, delim) = *g.pick(&[
                ("<<", "EOF"),
                ("<<", "'EOF'"),
                ("<<-", "EOF"),
                ("<<", "\"E F\""),
            ]);
            let end = delim.trim_matches(|c| c == '\'' || c == '"');
            vec![
                g.assign(),
                format!("cat {op}{delim}\n{body}\nline 2\n{end}"),
            ]
        }
        Area::Redirection => {
            let f = *g.pick(&["out.txt", "d1/new.txt", "'sp ace.txt'", "c.txt"]);
            let mut v = vec![format!("echo {} > {f}", g.word())];
            v.push(format!("echo {} >> {f}", g.word()));
            match g.below(4) {
                0 => v.push(format!("cat {f}")),
                1 => v.push(format!("exec 3>{f}; echo fd3 >&3; exec 3>&-; cat {f}")),
                2 => v.push(p("{ echo o; echo e >&2; } 2>&1 | sort")),
                _ => v.push(format!(
                    "wc -l < {f} 2>/dev/null; cat nofile 2>/dev/null; echo $?"
                )),
            }
            if g.chance(30) {
                v.push(format!("set -C; echo clobber > {f}; echo $?; set +C"));
            }
            v
        }
        Area::Functions => {
            let ret = g.below(4);
            let mut v = vec![format!(
                "f() {{ local x={}; {} echo \"$x $# ${{1-}}\"; return {ret}; }}",
                g.word(),
                g.pick(&[
                    "",
                    "local -i i=2+3; echo $i;",
                    "x+=y;",
                    "shift;",
                    "set -- z;"
                ])
            )];
            v.push(format!("x=outer; f {} {}", g.word(), g.word()));
            v.push(p("echo $? $x"));
            if g.chance(30) {
                v.push(p(
                    "g() { echo \"${FUNCNAME[0]} ${FUNCNAME[1]}\"; }; h() { g; }; h",
                ));
            }
            v
        }
        Area::Trap => match g.below(4) {
            0 => vec![
                p("(trap 'echo exit $?' EXIT; echo in; exit 3)"),
                p("echo $?"),
            ],
            1 => vec![p(
                "(trap 'echo err' ERR; false; echo after; trap - ERR; false)",
            )],
            2 => vec![p(
                "f() { trap 'echo ret' RETURN; echo body; }; f; trap - RETURN",
            )],
            _ => vec![p(
                "(trap 'echo one' EXIT; trap 'echo two' EXIT; trap -p EXIT)",
            )],
        },
        Area::Errexit => match g.below(5) {
            0 => vec![p("(set -e; false; echo not)"), p("echo $?")],
            1 => vec![p(
                "(set -e; false || echo ok; if false; then :; fi; echo on)",
            )],
            2 => vec![p("(set -u; echo ${unset_v}; echo not)"), p("echo $?")],
            3 => vec![p(
                "(set -o pipefail; false | true; echo $?; true | false | true; echo $?)",
            )],
            _ => vec![p("(set -e; f() { false; echo inf; }; f || echo caught)")],
        },
        Area::Glob => {
            let mut v = vec![];
            if g.chance(40) {
                v.push(
                    g.pick::<&str>(&[
                        "shopt -s nullglob",
                        "shopt -s dotglob",
                        "shopt -s globstar",
                        "shopt -s failglob",
                        "shopt -s nocaseglob",
                        "set -f",
                    ])
                    .to_string(),
                );
            }
            v.push(format!("echo {}", g.pick(GLOBS)));
            v.push(format!(
                "for f in {}; do printf '[%s]' \"$f\"; done",
                g.pick(GLOBS)
            ));
            v.push(p("echo"));
            v
        }
        Area::Extglob => {
            let pat = *g.pick(EXTGLOBS);
            let mut v = vec![p("shopt -s extglob"), format!("echo {pat}")];
            v.push(format!(
                "[[ {} == {pat} ]] && echo m || echo n",
                g.pick(&["a.txt", "d1", "x.log", "aa"])
            ));
            v
        }
        Area::Case => {
            let (a, b) = (*g.pick(PATTERNS), *g.pick(PATTERNS));
            vec![
                g.assign(),
                format!("case $a in {a}) echo first;; {b}|x) echo second;& *) echo rest;; esac"),
            ]
        }
        Area::Cond => {
            let mut v = vec![g.assign()];
            v.push(match g.below(5) {
                0 => format!("[[ $a == {} ]] && echo y || echo n", g.pick(PATTERNS)),
                1 => format!(
                    "[[ $a =~ {} ]] && echo \"y ${{BASH_REMATCH[*]}}\" || echo n",
                    g.pick(&["^h", "([a-z]+)\\ ([a-z]+)", "[0-9]+", "^$", "a|b", "'.'"])
                ),
                2 => p("[[ -n $a && ! -z \"$a\" || -v b ]] && echo y || echo n"),
                3 => format!(
                    "[[ {} -lt {} ]] && echo lt || echo ge",
                    g.number(),
                    g.number()
                ),
                _ => format!("[[ $a < {} ]] && echo lt || echo ge", g.word()),
            });
            if g.chance(30) {
                v.push(format!("[ {} = {} ]; echo $?", g.var(), g.word()));
            }
            v
        }
        Area::Printf => {
            let fmt = *g.pick(&[
                "%s|%s\\n",
                "%5s|%-5s|\\n",
                "%d %i\\n",
                "%05.1f\\n",
                "%x %X %o\\n",
                "%q\\n",
                "%b\\n",
                "%c%c\\n",
                "%3\\$s\\n",
                "%%|%s\\n",
                "[%*d]\\n",
                "%.2s\\n",
                "%#x\\n",
                "%e\\n",
            ]);
            let args: Vec<String> = (0..g.below(4))
                .map(|_| {
                    g.pick(&[
                        "1", "42", "-3", "3.5", "x", "'a\\tb'", "0x10", "''", "ab cd",
                    ])
                    .to_string()
                })
                .collect();
            vec![format!("printf '{fmt}' {}", args.join(" ")), p("echo $?")]
        }
        Area::Subshell => match g.below(5) {
            0 => vec![p("x=1; (x=2; echo in $x); echo out $x")],
            1 => vec![p("(cd d1 && echo *); echo *.log")],
            2 => vec![
                p("v=$(printf 'a\\n\\n'); echo \"[$v]\""),
                p("echo $(echo $(echo nested))"),
            ],
            3 => vec![p("echo `echo back` $(exit 3) $?"), p("x=$(false); echo $?")],
            _ => vec![
                p("{ echo g1; echo g2; } | tac"),
                p("echo $( (echo a; echo b) | wc -l)"),
            ],
        },
        Area::ParseError => vec![p(g.pick::<&str>(&[
            "echo \"unterminated",
            "if true; then echo x",
            "echo ${a",
            "(( 1 + ))",
            "echo $((1 +* 2))",
            "case x in",
            "for in; do :; done",
            "f() { echo x",
            "echo ${unset_v:?missing}",
            "fi",
            "echo )",
            "x=(a b",
            "{ echo x",
            "echo ${a/[/x}",
            "done",
        ]))],
        Area::Options => match g.below(5) {
            0 => vec![
                format!(
                    "set -{}",
                    g.pick(&["e", "u", "f", "C", "x", "o pipefail", "o noglob"])
                ),
                p("echo $-"),
                p("set -o | grep -E 'errexit|nounset|noglob|noclobber|xtrace|pipefail'"),
                p("set +eufCx; set +o pipefail"),
            ],
            1 => vec![
                format!(
                    "shopt -s {}",
                    g.pick(&["extglob", "nullglob", "dotglob", "globstar", "nocasematch"])
                ),
                p("shopt -p extglob nullglob dotglob globstar nocasematch"),
            ],
            2 => vec![p(
                "set -o noclobber; set +o | grep -E 'noclobber|errexit'; set +C",
            )],
            3 => vec![p(
                "shopt extglob; shopt -q nullglob; echo $?; shopt -u extglob; shopt -o errexit",
            )],
            _ => vec![
                p("echo ${SHELLOPTS//:/ }"),
                p("set -u; echo ${SHELLOPTS//:/ }; set +u"),
            ],
        },
        Area::Unicode => {
            let s = *g.pick(&["é", "añb", "日本語", "ü x", "Ωmega", "aé日"]);
            let mut v = vec![format!("s={}", single(s))];
            v.push(p(g.pick::<&str>(&[
                "echo ${#s} \"${s:1:2}\" \"${s^^}\" \"${s#?}\"",
                "printf '[%5s][%-4s][%.2s]\\n' \"$s\" \"$s\" \"$s\"",
                "[[ $s == ?* ]] && echo m; [[ ${s:0:1} == [[:alpha:]] ]] && echo alpha || echo not",
                "echo \"$s\" | wc -c; echo \"$s\" | wc -m; echo \"$s\" | rev",
                "for ((i=0; i<${#s}; i++)); do printf '<%s>' \"${s:i:1}\"; done; echo",
                "echo \"$s\" | tr a-z A-Z; echo \"$s\" | cut -c1-2",
            ])));
            v
        }
        Area::Runaway => vec![p(g.pick::<&str>(&[
            "while :; do :; done",
            "f() { f; }; f",
            "for ((;;)); do x=1; done",
            "yes | while read l; do :; done",
        ]))],
    }
}

/// Script `index` of the run seeded `seed`.
pub fn script(seed: u64, index: u64) -> Script {
    let mut g = Rng::new(seed ^ index.wrapping_mul(0xA24B_AED4_963E_E407));
    let n = 1 + g.below(4);
    let mut statements = Vec::new();
    for _ in 0..n {
        // Runaway scripts are rarer and come last: what follows never runs.
        let area = loop {
            let area = *g.pick(&Area::ALL);
            if area != Area::Runaway || g.chance(20) {
                break area;
            }
        };
        statements.push((area, statement(&mut g, area)));
        if area == Area::Runaway {
            break;
        }
    }
    Script { statements }
}
