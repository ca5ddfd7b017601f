//! `find`: walk the given paths and evaluate an expression on each node,
//! as GNU findutils does. The expression is parsed once into a tree of
//! tests, operators and actions; `-exec` runs commands through the runner.
//! Children are visited in name order (GNU uses directory order, which
//! agents sort anyway). Unless the expression can change the tree, the
//! whole tree below a start directory is read at the start in a few
//! statements (`Fs::subtree`), not one listing per directory.

use std::collections::HashMap;

use stead_vfs::{DirEntry, Kind, Node, VPath};

use super::{base_name, join_operand, mode_string, shown_size, time};
use crate::io::Stdin;
use crate::limits::{build_regex, Abort, RegexError, NODE_COST};
use crate::utils::{strerror, Ctx};

/// How a numeric test compares: `+N`, `-N` or `N`.
#[derive(Debug, Clone, Copy)]
enum Cmp {
    More(u64),
    Less(u64),
    Exactly(u64),
}

impl Cmp {
    fn parse(text: &str) -> Option<Cmp> {
        let (make, digits): (fn(u64) -> Cmp, &str) = match text.as_bytes().first()? {
            b'+' => (Cmp::More, &text[1..]),
            b'-' => (Cmp::Less, &text[1..]),
            _ => (Cmp::Exactly, text),
        };
        digits.parse().ok().map(make)
    }

    fn test(self, value: u64) -> bool {
        match self {
            Cmp::More(n) => value > n,
            Cmp::Less(n) => value < n,
            Cmp::Exactly(n) => value == n,
        }
    }
}

/// One node of a parsed expression.
#[derive(Debug)]
enum Expr {
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Not(Box<Expr>),
    True,
    False,
    Name {
        pattern: String,
        fold: bool,
    },
    Path {
        pattern: String,
        fold: bool,
    },
    Regex(regex::Regex),
    Type(Vec<Kind>),
    Size {
        cmp: Cmp,
        unit: u64,
    },
    Age {
        cmp: Cmp,
        unit_ms: i64,
    },
    Newer(i64),
    Empty,
    Prune,
    Quit,
    Print {
        end: &'static str,
    },
    Printf(String),
    Delete,
    Exec {
        argv: Vec<String>,
        batch: Option<usize>,
    },
}

impl Expr {
    fn has_action(&self) -> bool {
        match self {
            Expr::And(a, b) | Expr::Or(a, b) => a.has_action() || b.has_action(),
            Expr::Not(a) => a.has_action(),
            Expr::Print { .. }
            | Expr::Printf(_)
            | Expr::Delete
            | Expr::Exec { .. }
            | Expr::Quit => true,
            _ => false,
        }
    }

    /// Whether evaluating it can change the tree being walked (`-delete`,
    /// or a command of `-exec`), so that the walk must list each directory
    /// as it enters it rather than take the whole tree at the start.
    fn can_change_tree(&self) -> bool {
        match self {
            Expr::And(a, b) | Expr::Or(a, b) => a.can_change_tree() || b.can_change_tree(),
            Expr::Not(a) => a.can_change_tree(),
            Expr::Delete | Expr::Exec { .. } => true,
            Expr::True
            | Expr::False
            | Expr::Name { .. }
            | Expr::Path { .. }
            | Expr::Regex(_)
            | Expr::Type(_)
            | Expr::Size { .. }
            | Expr::Age { .. }
            | Expr::Newer(_)
            | Expr::Empty
            | Expr::Prune
            | Expr::Quit
            | Expr::Print { .. }
            | Expr::Printf(_) => false,
        }
    }
}

/// Entries a walk takes at its start at most (then it lists directory by
/// directory): a bound on what it holds in memory.
const PREFETCH_LIMIT: usize = 50_000;

/// Options that apply to the whole walk.
#[derive(Debug)]
struct Walk {
    min_depth: usize,
    max_depth: usize,
    depth_first: bool,
    /// Paths gathered for each `-exec ... {} +`.
    batches: Vec<(Vec<String>, Vec<String>)>,
    now_ms: i64,
}

/// Parses the expression tokens.
struct Parser<'a> {
    tokens: &'a [String],
    at: usize,
    walk: Walk,
}

type Parsed<T> = Result<T, String>;

impl Parser<'_> {
    fn peek(&self) -> Option<&str> {
        self.tokens.get(self.at).map(String::as_str)
    }

    fn next(&mut self) -> Option<&str> {
        let token = self.tokens.get(self.at).map(String::as_str);
        self.at += 1;
        token
    }

    fn argument(&mut self, primary: &str) -> Parsed<String> {
        self.next()
            .map(str::to_string)
            .ok_or_else(|| format!("missing argument to `{primary}'"))
    }

    fn or(&mut self) -> Parsed<Expr> {
        let mut left = self.and()?;
        while matches!(self.peek(), Some("-o" | "-or")) {
            self.at += 1;
            let right = self.and()?;
            left = Expr::Or(Box::new(left), Box::new(right));
        }
        Ok(left)
    }

    fn and(&mut self) -> Parsed<Expr> {
        let mut left = self.unary()?;
        loop {
            match self.peek() {
                None | Some("-o" | "-or" | ")" | ",") => return Ok(left),
                Some("-a" | "-and") => self.at += 1,
                Some(_) => {}
            }
            let right = self.unary()?;
            left = Expr::And(Box::new(left), Box::new(right));
        }
    }

    fn unary(&mut self) -> Parsed<Expr> {
        match self.next() {
            Some("!" | "-not") => Ok(Expr::Not(Box::new(self.unary()?))),
            Some("(") => {
                let inner = self.or()?;
                match self.next() {
                    Some(")") => Ok(inner),
                    _ => Err("invalid expression; I was expecting to find a ')' somewhere but did not see one.".into()),
                }
            }
            Some(")") => Err("invalid expression; you have too many ')'".into()),
            Some(primary) => {
                let primary = primary.to_string();
                self.primary(&primary)
            }
            None => Err("invalid expression".into()),
        }
    }

    fn depth_value(&mut self, primary: &str) -> Parsed<usize> {
        let value = self.argument(primary)?;
        value.parse().map_err(|_| {
            format!("Expected a positive decimal integer argument to {primary}, but got '{value}'")
        })
    }

    fn primary(&mut self, primary: &str) -> Parsed<Expr> {
        Ok(match primary {
            "-name" | "-iname" => Expr::Name {
                pattern: self.argument(primary)?,
                fold: primary == "-iname",
            },
            "-path" | "-ipath" | "-wholename" | "-iwholename" => Expr::Path {
                pattern: self.argument(primary)?,
                fold: primary.starts_with("-i"),
            },
            "-regex" | "-iregex" => {
                let text = self.argument(primary)?;
                let fold = if primary == "-iregex" { "(?i)" } else { "" };
                build_regex(&mut regex::RegexBuilder::new(&format!(
                    "{fold}^(?:{text})$"
                )))
                .map(Expr::Regex)
                .map_err(|e| match e {
                    RegexError::TooLarge => format!("{text}: {e}"),
                    RegexError::Invalid(_) => format!("invalid regular expression '{text}'"),
                })?
            }
            "-type" | "-xtype" => self.kinds(primary)?,
            "-size" => self.size()?,
            "-mtime" | "-mmin" | "-ctime" | "-cmin" | "-atime" | "-amin" => {
                let value = self.argument(primary)?;
                let cmp = Cmp::parse(&value)
                    .ok_or_else(|| format!("invalid argument `{value}' to `{primary}'"))?;
                let unit_ms = if primary.ends_with("min") {
                    60_000
                } else {
                    86_400_000
                };
                Expr::Age { cmp, unit_ms }
            }
            "-newer-ms" => {
                let value = self.argument(primary)?;
                Expr::Newer(
                    value
                        .parse()
                        .map_err(|_| format!("invalid argument `{value}' to `-newer'"))?,
                )
            }
            "-empty" => Expr::Empty,
            "-true" => Expr::True,
            "-false" => Expr::False,
            "-prune" => Expr::Prune,
            "-quit" => Expr::Quit,
            "-print" => Expr::Print { end: "\n" },
            "-print0" => Expr::Print { end: "\0" },
            "-printf" => Expr::Printf(self.argument(primary)?),
            "-delete" => {
                self.walk.depth_first = true;
                Expr::Delete
            }
            "-exec" | "-execdir" | "-ok" | "-okdir" => self.exec(primary)?,
            "-maxdepth" => {
                self.walk.max_depth = self.depth_value(primary)?;
                Expr::True
            }
            "-mindepth" => {
                self.walk.min_depth = self.depth_value(primary)?;
                Expr::True
            }
            "-depth" | "-d" => {
                self.walk.depth_first = true;
                Expr::True
            }
            "-noleaf" | "-xdev" | "-mount" | "-follow" | "-nowarn" | "-warn" => Expr::True,
            "-user" | "-group" | "-uid" | "-gid" => {
                let who = self.argument(primary)?;
                if who == super::OWNER || who == super::OWNER_ID.to_string() {
                    Expr::True
                } else {
                    Expr::False
                }
            }
            other if other.starts_with('-') => return Err(format!("unknown predicate `{other}'")),
            other => return Err(format!("paths must precede expression: `{other}'")),
        })
    }

    fn kinds(&mut self, primary: &str) -> Parsed<Expr> {
        let value = self.argument(primary)?;
        let mut kinds = Vec::new();
        for letter in value.split(',') {
            kinds.push(match letter {
                "f" => Kind::File,
                "d" => Kind::Dir,
                "l" => Kind::Symlink,
                "b" | "c" | "p" | "s" | "D" => continue,
                _ => return Err(format!("Unknown argument to {primary}: {letter}")),
            });
        }
        Ok(Expr::Type(kinds))
    }

    fn size(&mut self) -> Parsed<Expr> {
        let value = self.argument("-size")?;
        let (number, unit) = match value.chars().last() {
            Some(c) if c.is_ascii_alphabetic() => (&value[..value.len() - 1], c),
            _ => (value.as_str(), 'b'),
        };
        let unit = match unit {
            'c' => 1,
            'w' => 2,
            'b' => 512,
            'k' => 1024,
            'M' => 1 << 20,
            'G' => 1 << 30,
            _ => return Err(format!("invalid -size type `{unit}'")),
        };
        let cmp =
            Cmp::parse(number).ok_or_else(|| format!("invalid argument `{value}' to `-size'"))?;
        Ok(Expr::Size { cmp, unit })
    }

    fn exec(&mut self, primary: &str) -> Parsed<Expr> {
        let mut argv = Vec::new();
        loop {
            match self.next() {
                None => return Err(format!("missing argument to `{primary}'")),
                Some(";") => return Ok(Expr::Exec { argv, batch: None }),
                Some("+") if argv.last().is_some_and(|a: &String| a == "{}") => {
                    argv.pop();
                    self.walk.batches.push((argv.clone(), Vec::new()));
                    let batch = Some(self.walk.batches.len() - 1);
                    return Ok(Expr::Exec { argv, batch });
                }
                Some(arg) => argv.push(arg.to_string()),
            }
        }
    }
}

/// A node being visited.
struct Visit<'a> {
    path: &'a VPath,
    shown: &'a str,
    start: &'a str,
    node: &'a Node,
    depth: usize,
}

/// What evaluation decided beyond true/false.
#[derive(Default)]
struct Flags {
    prune: bool,
    quit: bool,
    status: i32,
}

/// Matches `text` against a shell pattern (`*`, `?`, `[...]`, `\`), as
/// `fnmatch` without flags: `*` also matches `/` and leading dots.
pub(super) fn fnmatch(pattern: &str, text: &str, fold: bool) -> bool {
    let lower = |s: &str| {
        if fold {
            s.to_lowercase()
        } else {
            s.to_string()
        }
    };
    let p: Vec<char> = lower(pattern).chars().collect();
    let t: Vec<char> = lower(text).chars().collect();
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        let step = match p.get(pi) {
            Some('*') => {
                star = Some((pi, ti));
                pi += 1;
                continue;
            }
            Some('?') => Some(pi + 1),
            Some('[') => match_class(&p, pi, t[ti]),
            Some('\\') if pi + 1 < p.len() => (p[pi + 1] == t[ti]).then_some(pi + 2),
            Some(&c) => (c == t[ti]).then_some(pi + 1),
            None => None,
        };
        match (step, star) {
            (Some(next), _) => {
                pi = next;
                ti += 1;
            }
            (None, Some((sp, st))) => {
                pi = sp + 1;
                ti = st + 1;
                star = Some((sp, st + 1));
            }
            (None, None) => return false,
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

/// Matches `c` against the bracket expression at `p[start]`; the index after
/// it on success. An unclosed `[` matches itself.
fn match_class(p: &[char], start: usize, c: char) -> Option<usize> {
    let mut i = start + 1;
    let negate = matches!(p.get(i), Some('!' | '^'));
    if negate {
        i += 1;
    }
    let mut matched = false;
    let mut first = true;
    while i < p.len() && (first || p[i] != ']') {
        first = false;
        let lo = p[i];
        if p.get(i + 1) == Some(&'-') && p.get(i + 2).is_some_and(|h| *h != ']') {
            matched |= lo <= c && c <= p[i + 2];
            i += 3;
        } else {
            matched |= lo == c;
            i += 1;
        }
    }
    if i >= p.len() {
        return (c == '[').then_some(start + 1);
    }
    (matched != negate).then_some(i + 1)
}

/// Runs the expression on the nodes below each start path.
struct Finder {
    /// `-L`: symlinks are seen (and walked) as what they point to.
    follow: bool,
    /// Inodes of the directories being walked, to stop symlink loops.
    ancestors: Vec<i64>,
    /// The entries of the directories below the start path, by inode,
    /// taken in one go when the expression cannot change the tree (see
    /// [`Finder::take_tree`]); a directory missing here is listed when
    /// entered.
    listed: HashMap<i64, Vec<DirEntry>>,
    walk: Walk,
    flags: Flags,
}

impl Finder {
    fn eval(&mut self, ctx: &mut Ctx<'_>, expr: &Expr, v: &Visit<'_>) -> Result<bool, Abort> {
        Ok(match expr {
            Expr::And(a, b) => self.eval(ctx, a, v)? && self.eval(ctx, b, v)?,
            Expr::Or(a, b) => self.eval(ctx, a, v)? || self.eval(ctx, b, v)?,
            Expr::Not(a) => !self.eval(ctx, a, v)?,
            Expr::True => true,
            Expr::False => false,
            Expr::Name { pattern, fold } => fnmatch(pattern, base_name(v.shown), *fold),
            Expr::Path { pattern, fold } => fnmatch(pattern, v.shown, *fold),
            Expr::Regex(re) => re.is_match(v.shown),
            Expr::Type(kinds) => kinds.contains(&v.node.kind),
            Expr::Size { cmp, unit } => cmp.test(shown_size(v.node).div_ceil(*unit)),
            Expr::Age { cmp, unit_ms } => {
                let age = (self.walk.now_ms - v.node.mtime).max(0) / unit_ms;
                cmp.test(age as u64)
            }
            Expr::Newer(ms) => v.node.mtime > *ms,
            Expr::Empty => match v.node.kind {
                Kind::File => v.node.size == 0,
                Kind::Dir => match self.listed.get(&v.node.ino) {
                    Some(entries) => entries.is_empty(),
                    None => ctx.fs.list(v.path).is_ok_and(|e| e.is_empty()),
                },
                Kind::Symlink => false,
            },
            Expr::Prune => {
                self.flags.prune = true;
                true
            }
            Expr::Quit => {
                self.flags.quit = true;
                true
            }
            Expr::Print { end } => {
                ctx.stdout.write_str(&format!("{}{end}", v.shown))?;
                true
            }
            Expr::Printf(format) => {
                ctx.stdout.write_str(&printf(format, v))?;
                true
            }
            Expr::Delete => self.delete(ctx, v)?,
            Expr::Exec {
                batch: Some(id), ..
            } => {
                self.walk.batches[*id].1.push(v.shown.to_string());
                true
            }
            Expr::Exec { argv, batch: None } => {
                let argv: Vec<String> = argv.iter().map(|a| a.replace("{}", v.shown)).collect();
                ctx.runner
                    .run(&argv, Stdin::complete(b""), ctx.stdout, ctx.stderr)?
                    == 0
            }
        })
    }

    fn delete(&mut self, ctx: &mut Ctx<'_>, v: &Visit<'_>) -> Result<bool, Abort> {
        if v.path.is_root() || v.shown == "." {
            return Ok(true);
        }
        match ctx.fs.remove(v.path, false) {
            Ok(()) => Ok(true),
            Err(error) => {
                ctx.error(
                    "find",
                    &format!("cannot delete '{}': {}", v.shown, strerror(&error)),
                )?;
                self.flags.status = 1;
                Ok(false)
            }
        }
    }

    fn visit(&mut self, ctx: &mut Ctx<'_>, expr: &Expr, v: &Visit<'_>) -> Result<(), Abort> {
        ctx.budget.charge_cpu(NODE_COST)?;
        let in_range = v.depth >= self.walk.min_depth;
        self.flags.prune = false;
        if in_range && !self.walk.depth_first {
            self.eval(ctx, expr, v)?;
        }
        let pruned = std::mem::take(&mut self.flags.prune) && !self.walk.depth_first;
        let descend = v.node.is_dir() && v.depth < self.walk.max_depth && !pruned;
        if descend && !self.flags.quit && !self.in_loop(ctx, v)? {
            self.ancestors.push(v.node.ino);
            let listed = self.listed.remove(&v.node.ino).map(Ok);
            let entries = match listed.unwrap_or_else(|| ctx.fs.list(v.path)) {
                Ok(entries) => entries,
                Err(error) => {
                    ctx.error("find", &format!("'{}': {}", v.shown, strerror(&error)))?;
                    self.flags.status = 1;
                    Vec::new()
                }
            };
            for entry in entries {
                if self.flags.quit {
                    break;
                }
                let path = v.path.join(&entry.name);
                let shown = join_operand(v.shown, &entry.name);
                let node = match entry.node.kind {
                    Kind::Symlink if self.follow => ctx.fs.stat(&path, true).unwrap_or(entry.node),
                    _ => entry.node,
                };
                let child = Visit {
                    path: &path,
                    shown: &shown,
                    start: v.start,
                    node: &node,
                    depth: v.depth + 1,
                };
                self.visit(ctx, expr, &child)?;
            }
            self.ancestors.pop();
        }
        if in_range && self.walk.depth_first && !self.flags.quit {
            self.eval(ctx, expr, v)?;
        }
        Ok(())
    }

    /// Takes the tree below start directory `path` (inode `ino`) in one go,
    /// so that entering a directory costs no statement: each directory's
    /// entries, the empty ones too, by inode. Not when the expression can
    /// change the tree (a directory must be listed as it is entered) or
    /// the tree is too large to hold; then nothing is taken.
    fn take_tree(&mut self, ctx: &Ctx<'_>, expr: &Expr, path: &VPath, ino: i64) {
        self.listed.clear();
        let max_depth = self.walk.max_depth;
        if expr.can_change_tree() || max_depth == 0 {
            return;
        }
        let Ok(Some(tree)) = ctx.fs.subtree(path, max_depth, PREFETCH_LIMIT) else {
            return;
        };
        self.listed.insert(ino, Vec::new());
        for found in tree {
            let depth = found.relative.matches('/').count() + 1;
            if found.entry.node.kind == Kind::Dir && depth < max_depth {
                self.listed.entry(found.entry.node.ino).or_default();
            }
            self.listed
                .entry(found.parent)
                .or_default()
                .push(found.entry);
        }
    }

    /// Whether walking into `v` would loop (only possible with `-L`).
    fn in_loop(&mut self, ctx: &mut Ctx<'_>, v: &Visit<'_>) -> Result<bool, Abort> {
        if !self.ancestors.contains(&v.node.ino) {
            return Ok(false);
        }
        let message = format!(
            "File system loop detected; '{}' is part of the same file system loop.",
            v.shown
        );
        ctx.error("find", &message)?;
        self.flags.status = 1;
        Ok(true)
    }

    fn run_batches(&mut self, ctx: &mut Ctx<'_>) -> Result<(), Abort> {
        for (argv, paths) in std::mem::take(&mut self.walk.batches) {
            if paths.is_empty() {
                continue;
            }
            let mut full = argv;
            full.extend(paths);
            if ctx
                .runner
                .run(&full, Stdin::complete(b""), ctx.stdout, ctx.stderr)?
                != 0
            {
                self.flags.status = 1;
            }
        }
        Ok(())
    }
}

/// Expands a `-printf` format for one node.
fn printf(format: &str, v: &Visit<'_>) -> String {
    let mut out = String::new();
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => super::push_escape(&mut out, chars.next()),
            '%' => match chars.next() {
                Some('p') => out.push_str(v.shown),
                Some('f') => out.push_str(base_name(v.shown)),
                Some('P') => out.push_str(
                    v.shown
                        .strip_prefix(v.start)
                        .map_or(v.shown, |s| s.trim_start_matches('/')),
                ),
                Some('h') => out.push_str(v.shown.rsplit_once('/').map_or(".", |(dir, _)| dir)),
                Some('s') => out.push_str(&shown_size(v.node).to_string()),
                Some('d') => out.push_str(&v.depth.to_string()),
                Some('m') => out.push_str(&format!("{:o}", v.node.mode & 0o7777)),
                Some('M') => out.push_str(&mode_string(v.node.kind, v.node.mode)),
                Some('y') => out.push(match v.node.kind {
                    Kind::File => 'f',
                    Kind::Dir => 'd',
                    Kind::Symlink => 'l',
                }),
                Some('l') => out.push_str(v.node.target.as_deref().unwrap_or("")),
                Some('t' | 'a' | 'c') => out.push_str(&time::ctime(v.node.mtime)),
                Some('T' | 'A' | 'C') => match chars.next() {
                    Some(field) => out.push_str(&time::field(v.node.mtime, field)),
                    None => out.push('%'),
                },
                Some('k') => out.push_str(&super::usage_kib(v.node).to_string()),
                Some('b') => out.push_str(&(super::usage_kib(v.node) * 2).to_string()),
                Some('u') | Some('g') => out.push_str(super::OWNER),
                Some('%') => out.push('%'),
                Some(other) => {
                    out.push('%');
                    out.push(other);
                }
                None => out.push('%'),
            },
            _ => out.push(c),
        }
    }
    out
}

/// Splits `find`'s arguments into start paths and expression tokens.
fn split_args(args: &[String]) -> (Vec<String>, &[String]) {
    let first_expr = args
        .iter()
        .position(|a| (a.starts_with('-') && a.len() > 1) || a == "(" || a == "!" || a == ")")
        .unwrap_or(args.len());
    (args[..first_expr].to_vec(), &args[first_expr..])
}

/// Replaces `-newer FILE` tokens' files by their mtime (needs the filesystem).
fn resolve_newer(ctx: &mut Ctx<'_>, tokens: &[String]) -> Result<Result<Vec<String>, ()>, Abort> {
    let mut out = Vec::with_capacity(tokens.len());
    let mut iter = tokens.iter();
    while let Some(token) = iter.next() {
        if token != "-newer" {
            out.push(token.clone());
            continue;
        }
        let Some(file) = iter.next() else {
            ctx.error("find", "missing argument to `-newer'")?;
            return Ok(Err(()));
        };
        match ctx.path(file).and_then(|p| ctx.fs.stat(&p, true)) {
            Ok(node) => {
                out.push("-newer-ms".to_string());
                out.push(node.mtime.to_string());
            }
            Err(error) => {
                ctx.error("find", &format!("'{file}': {}", strerror(&error)))?;
                return Ok(Err(()));
            }
        }
    }
    Ok(Ok(out))
}

/// Parses the expression, defaulting to `-print` when it has no action.
fn parse_expr(tokens: &[String], now_ms: i64) -> Parsed<(Expr, Walk)> {
    let walk = Walk {
        min_depth: 0,
        max_depth: usize::MAX,
        depth_first: false,
        batches: Vec::new(),
        now_ms,
    };
    let mut parser = Parser {
        tokens,
        at: 0,
        walk,
    };
    let expr = if tokens.is_empty() {
        Expr::True
    } else {
        parser.or()?
    };
    if parser.at < tokens.len() {
        return Err(format!("unexpected `{}'", tokens[parser.at]));
    }
    let expr = if expr.has_action() {
        expr
    } else {
        Expr::And(Box::new(expr), Box::new(Expr::Print { end: "\n" }))
    };
    Ok((expr, parser.walk))
}

/// `find [PATH...] [EXPRESSION]`
/// How many of `args` (after the name) are the leading `-L`/`-H`/`-P`.
fn leading_options(args: &[String]) -> usize {
    args[1..]
        .iter()
        .take_while(|a| matches!(a.as_str(), "-L" | "-H" | "-P"))
        .count()
}

/// Whether `find` accepts `args`' expression, as it parses it when it runs
/// (a `-newer` file's time is not looked up).
pub(super) fn check_options(args: &[String]) -> Result<(), String> {
    let (_, tokens) = split_args(&args[1 + leading_options(args)..]);
    let mut resolved = Vec::with_capacity(tokens.len());
    let mut tokens = tokens.iter();
    while let Some(token) = tokens.next() {
        if token != "-newer" {
            resolved.push(token.clone());
        } else if tokens.next().is_some() {
            resolved.extend(["-newer-ms".to_string(), "0".to_string()]);
        } else {
            return Err("missing argument to `-newer'".into());
        }
    }
    parse_expr(&resolved, 0).map(drop)
}

pub(super) fn find(ctx: &mut Ctx<'_>, args: &[String]) -> Result<i32, Abort> {
    let options = leading_options(args);
    let follow = args[1..=options]
        .iter()
        .rev()
        .find(|a| a.as_str() != "-H")
        .is_some_and(|a| a == "-L");
    let (mut starts, tokens) = split_args(&args[1 + options..]);
    let tokens = match resolve_newer(ctx, tokens)? {
        Ok(tokens) => tokens,
        Err(()) => return Ok(1),
    };
    let (expr, walk) = match parse_expr(&tokens, ctx.clock.now_ms() as i64) {
        Ok(parsed) => parsed,
        Err(message) => {
            ctx.error("find", &message)?;
            return Ok(1);
        }
    };
    if starts.is_empty() {
        starts.push(".".to_string());
    }
    let mut finder = Finder {
        follow,
        ancestors: Vec::new(),
        listed: HashMap::new(),
        walk,
        flags: Flags::default(),
    };
    for start in &starts {
        if finder.flags.quit {
            break;
        }
        let follow = follow || start.ends_with('/');
        let found = ctx
            .path(start)
            .and_then(|p| ctx.fs.stat(&p, follow).map(|n| (p, n)));
        match found {
            Ok((path, node)) => {
                if node.kind == Kind::Dir {
                    finder.take_tree(ctx, &expr, &path, node.ino);
                }
                let visit = Visit {
                    path: &path,
                    shown: start,
                    start,
                    node: &node,
                    depth: 0,
                };
                finder.visit(ctx, &expr, &visit)?;
            }
            Err(error) => {
                ctx.error("find", &format!("'{start}': {}", strerror(&error)))?;
                finder.flags.status = 1;
            }
        }
    }
    finder.run_batches(ctx)?;
    Ok(finder.flags.status)
}

#[cfg(test)]
mod tests {
    use super::fnmatch;
    use crate::utils::testing::{db, files, run};

    #[test]
    fn fnmatch_patterns() {
        assert!(fnmatch("*.txt", "a.txt", false));
        assert!(fnmatch("a?.txt", "a1.txt", false));
        assert!(!fnmatch("a?.txt", "a10.txt", false));
        assert!(fnmatch("[ab]*", "beta", false));
        assert!(!fnmatch("[!ab]*", "beta", false));
        assert!(fnmatch("[a-c]x", "bx", false));
        assert!(fnmatch("*/pulls/*.json", "./pulls/nested/deep.json", false));
        assert!(fnmatch("*.TXT", "a.txt", true));
        assert!(fnmatch("\\*", "*", false));
        assert!(!fnmatch("\\*", "a", false));
    }

    fn tree() -> stead_sql::SqliteDb {
        let db = db();
        files(
            &db,
            &[
                ("/a.txt", "1"),
                ("/dir/b.txt", "22"),
                ("/dir/sub/c.js", ""),
                ("/keep", ""),
            ],
        );
        db
    }

    #[test]
    fn find_tests_and_depth() {
        let db = tree();
        let r = run(&db, &["find", "/", "-name", "*.txt"], "");
        assert_eq!(r.stdout, "/a.txt\n/dir/b.txt\n");
        let r = run(&db, &["find", ".", "-maxdepth", "1", "-type", "f"], "");
        assert_eq!(r.stdout, "./a.txt\n./keep\n");
        let r = run(&db, &["find", "dir", "-mindepth", "1", "-type", "d"], "");
        assert_eq!(r.stdout, "dir/sub\n");
        let r = run(
            &db,
            &["find", ".", "-name", "*.txt", "-o", "-name", "*.js"],
            "",
        );
        assert_eq!(r.stdout, "./a.txt\n./dir/b.txt\n./dir/sub/c.js\n");
        let r = run(&db, &["find", "/", "-type", "f", "!", "-name", "*.txt"], "");
        assert_eq!(r.stdout, "/dir/sub/c.js\n/keep\n");
        let r = run(&db, &["find", "/", "-empty"], "");
        assert_eq!(r.stdout, "/dir/sub/c.js\n/keep\n");
        let r = run(&db, &["find", "/", "-size", "+1c"], "");
        assert_eq!(r.stdout, "/\n/dir\n/dir/b.txt\n/dir/sub\n");
        let r = run(&db, &["find", "/nope"], "");
        assert_eq!(
            (r.status, r.stderr.as_str()),
            (1, "find: '/nope': No such file or directory\n")
        );
        let r = run(&db, &["find", "/", "-bogus"], "");
        assert_eq!(
            (r.status, r.stderr.as_str()),
            (1, "find: unknown predicate `-bogus'\n")
        );
    }

    #[test]
    fn find_operators_prune_and_printf() {
        let db = tree();
        let r = run(
            &db,
            &[
                "find", ".", "-type", "f", "(", "-name", "keep", "-print", "-o", "-name", "a.txt",
                "-print", ")",
            ],
            "",
        );
        assert_eq!(r.stdout, "./a.txt\n./keep\n");
        let r = run(
            &db,
            &[
                "find", ".", "-name", "dir", "-prune", "-o", "-type", "f", "-print",
            ],
            "",
        );
        assert_eq!(r.stdout, "./a.txt\n./keep\n");
        let r = run(
            &db,
            &["find", "dir", "-type", "f", "-printf", "%f %s %P %d\\n"],
            "",
        );
        assert_eq!(r.stdout, "b.txt 2 b.txt 1\nc.js 0 sub/c.js 2\n");
        let r = run(
            &db,
            &["find", "/a.txt", "-printf", "%T@|%t|%TF %TT|%k %b\\n"],
            "",
        );
        assert_eq!(
            r.stdout,
            "1700000000.0000000000|Tue Nov 14 22:13:20.0000000000 2023|2023-11-14 22:13:20.0000000000|4 8\n"
        );
        let r = run(&db, &["find", "dir", "-name", "*.js", "-print0"], "");
        assert_eq!(r.stdout, "dir/sub/c.js\0");
        let r = run(&db, &["find", "/", "-path", "*/sub/*"], "");
        assert_eq!(r.stdout, "/dir/sub/c.js\n");
    }

    #[test]
    fn find_exec_and_delete() {
        let db = tree();
        let r = run(
            &db,
            &[
                "find", "/dir", "-type", "f", "-exec", "echo", "got", "{}", ";",
            ],
            "",
        );
        if r.stderr.contains("command not found") {
            // `echo` comes from another family; check the batching with `ls`.
        } else {
            assert_eq!(r.stdout, "got /dir/b.txt\ngot /dir/sub/c.js\n");
        }
        let r = run(
            &db,
            &["find", "/dir", "-type", "f", "-exec", "ls", "{}", "+"],
            "",
        );
        assert_eq!(r.stdout, "/dir/b.txt\n/dir/sub/c.js\n");
        let r = run(
            &db,
            &["find", "/dir", "-name", "*.js", "-exec", "ls", "{}", ";"],
            "",
        );
        assert_eq!(r.stdout, "/dir/sub/c.js\n");
        assert_eq!(run(&db, &["find", "/dir", "-delete"], "").status, 0);
        assert_eq!(run(&db, &["ls", "/"], "").stdout, "a.txt\nkeep\n");
    }

    #[test]
    fn find_newer_and_mtime() {
        let db = tree();
        run(&db, &["touch", "-d", "@1000", "/a.txt"], "");
        let r = run(&db, &["find", "/", "-type", "f", "-mtime", "+1"], "");
        assert_eq!(r.stdout, "/a.txt\n");
        let r = run(&db, &["find", "/", "-type", "f", "-newer", "/a.txt"], "");
        assert_eq!(r.stdout, "/dir/b.txt\n/dir/sub/c.js\n/keep\n");
    }

    #[test]
    fn find_follows_links_with_l_and_stops_loops() {
        let db = tree();
        run(&db, &["ln", "-s", "/dir", "/dir/sub/up"], "");
        let r = run(&db, &["find", "/dir", "-type", "d"], "");
        assert_eq!(r.stdout, "/dir\n/dir/sub\n");
        let r = run(&db, &["find", "-L", "/dir", "-type", "d"], "");
        assert_eq!(r.stdout, "/dir\n/dir/sub\n/dir/sub/up\n");
        assert_eq!(r.status, 1);
        assert!(r.stderr.contains("File system loop detected"));
    }

    #[test]
    fn find_case_folding_regex_and_quit() {
        let db = tree();
        files(&db, &[("/UP.TXT", "")]);
        let r = run(
            &db,
            &["find", "/", "-maxdepth", "1", "-iname", "up.txt"],
            "",
        );
        assert_eq!(r.stdout, "/UP.TXT\n");
        let r = run(&db, &["find", "/dir", "-regex", ".*/[a-c]\\.txt"], "");
        assert_eq!(r.stdout, "/dir/b.txt\n");
        let r = run(&db, &["find", "/", "-type", "f", "-print", "-quit"], "");
        assert_eq!(r.stdout, "/UP.TXT\n");
        let r = run(&db, &["find", "/", "-maxdepth", "x"], "");
        assert_eq!(r.status, 1);
        assert!(r
            .stderr
            .contains("Expected a positive decimal integer argument to -maxdepth"));
    }

    /// A walk of 120 directories takes its tree in a few statements (one
    /// per few hundred entries), not one listing per directory, and prints
    /// what a walk listing each directory does; one whose expression can
    /// change the tree (`-exec`) lists each directory as it enters it.
    #[test]
    fn a_read_only_walk_takes_the_tree_in_a_few_statements() {
        use crate::fs::Fs;
        use crate::utils::testing::{Counting, FixedClock};
        let db = db();
        let tree: Vec<(String, String)> = (0..600)
            .map(|i| {
                (
                    format!("/w/m{}/s{}/f{i:03}.rs", i % 20, i % 5),
                    String::new(),
                )
            })
            .collect();
        let refs: Vec<(&str, &str)> = tree.iter().map(|(p, c)| (p.as_str(), c.as_str())).collect();
        files(&db, &refs);
        let mut expected: Vec<&str> = refs
            .iter()
            .map(|(path, _)| path.trim_start_matches('/'))
            .collect();
        expected.sort_by(|a, b| a.split('/').cmp(b.split('/')));
        let find = |command: &str| {
            let counting = Counting {
                db: &db,
                statements: Default::default(),
            };
            let vfs = stead_vfs::Vfs::new(&counting, 0);
            let fs: &dyn Fs = &vfs;
            let request = crate::ExecRequest {
                command: command.to_string(),
                cwd: stead_vfs::VPath::root(),
                env: Default::default(),
                stdin: Vec::new(),
                limits: Default::default(),
            };
            let out = crate::exec(fs, &FixedClock, request);
            let printed = String::from_utf8_lossy(&out.stdout).into_owned();
            (printed, counting.statements.get())
        };
        let (printed, statements) = find("find w -type f -name '*.rs'");
        assert_eq!(printed.lines().collect::<Vec<_>>(), expected);
        assert!(statements < 15, "{statements} statements");
        let (printed, statements) = find("find w -type f -name '*.rs' -exec true \\;");
        assert_eq!(printed, "");
        // The 41 directories (each `m` holds one `s`), each listed and its
        // last name looked up (the exec's batch knows the folders above).
        assert!(
            statements > 80,
            "{statements} statements: a listing per directory"
        );
        let (printed, _) = find("find w -maxdepth 2 -type d -empty");
        assert_eq!(printed, "");
        let (printed, _) = find("find w -mindepth 2 -maxdepth 2 -type d -name 's4' -path '*m19*'");
        assert_eq!(printed, "w/m19/s4\n");
    }
}
