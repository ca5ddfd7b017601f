//! The syntax tree of a script: parsed once, then walked by the interpreter.
//!
//! Words keep their quoting structure (literal, quoted, expansions) so that
//! expansion never re-scans text; arithmetic without `$` is parsed here too,
//! which makes tight `(( ))` loops cheap.

use std::rc::Rc;

use super::arith::Expr;

/// A list of commands (`a; b && c | d`).
pub(crate) type Program = Vec<Item>;

#[derive(Debug, Clone)]
pub(crate) struct Item {
    pub first: Pipeline,
    /// `&&` (true) or `||` (false), then the next pipeline.
    pub rest: Vec<(bool, Pipeline)>,
    /// Ended by `&`: runs as a background job.
    pub background: bool,
    /// Its source text (for `jobs`).
    pub text: Rc<str>,
}

#[derive(Debug, Clone)]
pub(crate) struct Pipeline {
    pub negate: bool,
    /// `time`: its run time goes to stderr.
    pub timed: bool,
    pub cmds: Vec<Command>,
    /// The line it starts on (1-based, within its source text).
    pub line: usize,
}

#[derive(Debug, Clone)]
pub(crate) enum Command {
    Simple(Simple),
    Compound(Box<Compound>, Vec<Redir>),
    Function(Rc<Function>),
}

#[derive(Debug, Clone)]
pub(crate) struct Simple {
    pub assigns: Vec<Assign>,
    pub words: Vec<Word>,
    pub redirs: Vec<Redir>,
    pub line: usize,
    /// Its source text (`$BASH_COMMAND`).
    pub text: Rc<str>,
}

#[derive(Debug, Clone)]
pub(crate) struct Function {
    pub name: String,
    pub body: Command,
}

/// An array literal element.
#[derive(Debug, Clone)]
pub(crate) struct ArrayElem {
    /// The `[k]` word, with whether it is `[k]+=v`.
    pub key: Option<(Word, bool)>,
    pub value: Word,
    /// What brace expansion makes of a keyed element as a whole word, when
    /// it makes more than one: an indexed array takes these as plain
    /// elements (`a=([k]=-{a,b}-)` is `[k]=-a-` and `[k]=-b-`), while an
    /// associative array takes the key and value unexpanded, as bash does.
    pub braced: Vec<Word>,
}

#[derive(Debug, Clone)]
pub(crate) struct Assign {
    pub name: String,
    pub index: Option<Word>,
    pub append: bool,
    pub value: AssignValue,
}

#[derive(Debug, Clone)]
pub(crate) enum AssignValue {
    Scalar(Word),
    /// `(a b [k]=v)`
    /// Elements; a keyed one carries its `[k]` word and whether it is `[k]+=v`.
    Array(Vec<ArrayElem>),
}

#[derive(Debug, Clone)]
pub(crate) enum Compound {
    Group(Program),
    Subshell(Program),
    If {
        branches: Vec<(Program, Program)>,
        otherwise: Option<Program>,
    },
    For {
        var: String,
        words: Option<Vec<Word>>,
        body: Program,
        /// `var in words` as written (for printing the function).
        head: Rc<str>,
    },
    /// `select var in words; do body; done`
    Select {
        var: String,
        words: Option<Vec<Word>>,
        body: Program,
        head: Rc<str>,
    },
    ArithFor {
        init: Option<Arith>,
        cond: Option<Arith>,
        step: Option<Arith>,
        body: Program,
        /// The three expressions as written.
        head: [Rc<str>; 3],
    },
    While {
        until: bool,
        cond: Program,
        body: Program,
    },
    Case {
        word: Word,
        arms: Vec<CaseArm>,
        /// The subject as written.
        head: Rc<str>,
    },
    Arith(Arith),
    /// `[[ ... ]]`, with the text between the brackets as written.
    Cond(Cond, Rc<str>),
}

#[derive(Debug, Clone)]
pub(crate) struct CaseArm {
    pub patterns: Vec<Word>,
    /// The patterns as written.
    pub pattern_text: Vec<Rc<str>>,
    pub body: Program,
    pub term: CaseTerm,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CaseTerm {
    /// `;;`
    Break,
    /// `;&`
    FallThrough,
    /// `;;&`
    Continue,
}

#[derive(Debug, Clone)]
pub(crate) enum Cond {
    Not(Box<Cond>),
    And(Box<Cond>, Box<Cond>),
    Or(Box<Cond>, Box<Cond>),
    Unary(String, Word),
    Binary(String, Word, Word),
    Word(Word),
}

#[derive(Debug, Clone)]
pub(crate) struct Redir {
    pub fd: Option<i32>,
    /// `{name}>file`: allocate an fd and store it in `name`.
    pub var_fd: Option<String>,
    pub op: RedirOp,
    pub target: Word,
    /// The redirection as written; a here-document's also holds its lines
    /// and delimiter line, after a newline (for printing a function).
    pub text: Rc<str>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RedirOp {
    In,
    Out,
    Append,
    Clobber,
    ReadWrite,
    DupOut,
    DupIn,
    AllOut,
    AllAppend,
    /// The target is the body (expanded unless the delimiter was quoted).
    HereDoc,
    HereString,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct Word(pub Vec<Part>);

#[derive(Debug, Clone)]
pub(crate) enum Part {
    /// Unquoted text (glob characters active).
    Lit(String),
    /// Quoted or escaped text.
    Quoted(String),
    /// `"..."`
    Double(Vec<Part>),
    Param(Box<Param>),
    Command(Rc<Program>),
    Arith(Arith),
    /// `~user` (empty: `~`).
    Tilde(String),
    /// `<(...)` (true) or `>(...)`.
    ProcSub(Rc<Program>, bool),
    /// `${ ...; }` (false) or `${|...; }` (true, the value of `REPLY`).
    FunSub(Rc<Program>, bool),
    /// `declare a=(...)`: expands to the name; assigned after the builtin.
    ArrayAssign(Rc<Assign>),
    /// A `${...}` that does not parse: an error when expanded.
    BadSubst(Rc<str>),
}

/// Arithmetic: parsed once when it has no `$`, else expanded then parsed.
#[derive(Debug, Clone)]
pub(crate) enum Arith {
    Static(Rc<Expr>, Rc<str>),
    Dynamic(Word),
}

#[derive(Debug, Clone)]
pub(crate) struct Param {
    pub name: String,
    pub sub: Option<Subscript>,
    pub op: ParamOp,
    /// `${!name}`
    pub indirect: bool,
    /// `$name` without braces: text that brace expansion puts after it
    /// continues the name, as in bash, which expands braces in the text.
    pub bare: bool,
}

#[derive(Debug, Clone)]
pub(crate) enum Subscript {
    /// `[@]` (false) or `[*]` (true)
    All(bool),
    Index(Word),
}

#[derive(Debug, Clone)]
pub(crate) enum ParamOp {
    None,
    Length,
    /// `-`, `=`, `+`, `?` with or without `:`.
    Test {
        op: char,
        colon: bool,
        word: Word,
    },
    Substr(Arith, Option<Arith>),
    Strip {
        suffix: bool,
        longest: bool,
        pat: Word,
    },
    Replace {
        /// b'/' all, b'#' prefix, b'%' suffix, 0 first
        mode: u8,
        pat: Word,
        rep: Word,
    },
    Case {
        to: CaseChange,
        all: bool,
        pat: Word,
    },
    Transform(char),
    /// `${!prefix*}` / `${!prefix@}`
    Names(bool),
    /// `${!a[@]}`
    Keys,
}

impl Word {
    pub(crate) fn lit(text: &str) -> Word {
        Word(vec![Part::Lit(text.to_string())])
    }

    /// The word with its tildes as written (`~user` kept literal).
    pub(crate) fn without_tilde(&self) -> Word {
        let parts = self.0.iter().map(|p| match p {
            Part::Tilde(user) => Part::Lit(format!("~{user}")),
            other => other.clone(),
        });
        Word(parts.collect())
    }

    /// The text when the word is a single unquoted literal.
    pub(crate) fn as_lit(&self) -> Option<&str> {
        match self.0.as_slice() {
            [Part::Lit(s)] => Some(s),
            _ => None,
        }
    }
}

/// What `${x^}` (upper), `${x,}` (lower) and `${x~}` (toggle) do to the
/// letters they match.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CaseChange {
    Upper,
    Lower,
    Toggle,
}
