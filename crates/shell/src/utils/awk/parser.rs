//! The awk grammar: tokens to a tree, built once per run.
//!
//! Names are resolved here (globals to slots, function parameters to frame
//! offsets, calls to function indices) so the interpreter never looks a
//! name up while records stream through.

use std::collections::HashMap;
use std::rc::Rc;

use super::lexer::{Builtin, Tok};

/// A variable slot: a global, or a parameter/local of the running function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Var {
    Global(usize),
    Local(usize),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Pow,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CmpOp {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
}

#[derive(Debug, Clone)]
pub(crate) enum LValue {
    Var(Var),
    Field(Box<Expr>),
    Index(Var, Vec<Expr>),
}

#[derive(Debug, Clone)]
pub(crate) enum GetSource {
    /// The main input.
    Main,
    File(Box<Expr>),
    Cmd(Box<Expr>),
}

#[derive(Debug, Clone)]
pub(crate) enum Expr {
    Num(f64),
    Str(Rc<str>),
    /// A regex literal: as a value it means `$0 ~ /re/`.
    Regex(usize),
    Lv(LValue),
    Assign(Box<LValue>, Option<BinOp>, Box<Expr>),
    Cond(Box<Expr>, Box<Expr>, Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Not(Box<Expr>),
    Neg(Box<Expr>),
    Plus(Box<Expr>),
    Bin(BinOp, Box<Expr>, Box<Expr>),
    Cmp(CmpOp, Box<Expr>, Box<Expr>),
    Match(bool, Box<Expr>, Box<Expr>),
    Concat(Box<Expr>, Box<Expr>),
    In(Vec<Expr>, Var),
    IncDec(Box<LValue>, bool, f64),
    Call(usize, Vec<Expr>),
    Builtin(Builtin, Vec<Expr>),
    Getline(GetSource, Option<Box<LValue>>),
    Group(Box<Expr>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Redir {
    File,
    Append,
    Pipe,
}

#[derive(Debug, Clone)]
pub(crate) enum Stmt {
    Expr(Expr),
    Print(Vec<Expr>, Option<(Redir, Expr)>),
    Printf(Vec<Expr>, Option<(Redir, Expr)>),
    If(Expr, Box<Stmt>, Option<Box<Stmt>>),
    While(Expr, Box<Stmt>),
    Do(Box<Stmt>, Expr),
    For(
        Option<Box<Stmt>>,
        Option<Expr>,
        Option<Box<Stmt>>,
        Box<Stmt>,
    ),
    ForIn(Var, Var, Box<Stmt>),
    Block(Vec<Stmt>),
    Next,
    NextFile,
    Exit(Option<Expr>),
    Return(Option<Expr>),
    Break,
    Continue,
    Delete(Var, Option<Vec<Expr>>),
}

#[derive(Debug, Clone)]
pub(crate) enum Pattern {
    All,
    Expr(Expr),
    /// A range, with its index among the program's ranges.
    Range(Expr, Expr, usize),
}

#[derive(Debug, Clone)]
pub(crate) struct Item {
    pub pattern: Pattern,
    /// `None` prints the record.
    pub action: Option<Vec<Stmt>>,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct Func {
    pub name: String,
    pub params: usize,
    pub body: Vec<Stmt>,
    pub defined: bool,
}

#[derive(Debug, Default)]
pub(crate) struct Program {
    pub begin: Vec<Stmt>,
    pub end: Vec<Stmt>,
    pub items: Vec<Item>,
    pub funcs: Vec<Func>,
    pub globals: Vec<String>,
    pub regexes: Vec<String>,
    pub ranges: usize,
}

/// The special variables, pre-registered at these global slots.
pub(super) const SPECIALS: &[&str] = &[
    "NF", "NR", "FNR", "FS", "OFS", "ORS", "RS", "SUBSEP", "FILENAME", "RSTART", "RLENGTH",
    "CONVFMT", "OFMT", "ENVIRON", "ARGC", "ARGV",
];
pub(super) const NF: usize = 0;
pub(super) const NR: usize = 1;
pub(super) const FNR: usize = 2;
pub(super) const FS: usize = 3;
pub(super) const OFS: usize = 4;
pub(super) const ORS: usize = 5;
pub(super) const RS: usize = 6;
pub(super) const SUBSEP: usize = 7;
pub(super) const FILENAME: usize = 8;
pub(super) const RSTART: usize = 9;
pub(super) const RLENGTH: usize = 10;
pub(super) const CONVFMT: usize = 11;
pub(super) const OFMT: usize = 12;
pub(super) const ENVIRON: usize = 13;
pub(super) const ARGC: usize = 14;
pub(super) const ARGV: usize = 15;

type PResult<T> = Result<T, String>;

struct Parser {
    toks: Vec<Tok>,
    pos: usize,
    globals: HashMap<String, usize>,
    locals: Option<HashMap<String, usize>>,
    func_ids: HashMap<String, usize>,
    program: Program,
    /// In an unparenthesized print list, `>` is a redirection.
    no_gt: bool,
}

/// Parses a program.
pub(super) fn parse(src: &str) -> PResult<Program> {
    let toks = super::lexer::tokenize(src)?;
    let mut parser = Parser {
        toks,
        pos: 0,
        globals: HashMap::new(),
        locals: None,
        func_ids: HashMap::new(),
        program: Program::default(),
        no_gt: false,
    };
    for name in SPECIALS {
        parser.global(name);
    }
    parser.program_items()?;
    if let Some(f) = parser.program.funcs.iter().find(|f| !f.defined) {
        return Err(format!("function `{}' called but never defined", f.name));
    }
    Ok(parser.program)
}

fn syntax_error(tok: &Tok) -> String {
    format!("syntax error at or near {}", describe(tok))
}

fn describe(tok: &Tok) -> String {
    match tok {
        Tok::Eof => "end of file".into(),
        Tok::Newline => "end of line".into(),
        Tok::Name(n) | Tok::FuncName(n) => n.clone(),
        Tok::Str(s) => format!("\"{s}\""),
        Tok::Num(n) => n.to_string(),
        Tok::RBrace => "}".into(),
        Tok::LBrace => "{".into(),
        Tok::RParen => ")".into(),
        Tok::Semi => ";".into(),
        other => format!("{other:?}").to_lowercase(),
    }
}

impl Parser {
    fn peek(&self) -> &Tok {
        &self.toks[self.pos]
    }

    fn peek_at(&self, ahead: usize) -> &Tok {
        self.toks.get(self.pos + ahead).unwrap_or(&Tok::Eof)
    }

    fn advance(&mut self) -> Tok {
        let tok = self.toks[self.pos].clone();
        if self.pos + 1 < self.toks.len() {
            self.pos += 1;
        }
        tok
    }

    fn eat(&mut self, tok: &Tok) -> bool {
        if self.peek() == tok {
            self.advance();
            true
        } else {
            false
        }
    }

    fn expect(&mut self, tok: &Tok) -> PResult<()> {
        if self.eat(tok) {
            Ok(())
        } else {
            Err(syntax_error(self.peek()))
        }
    }

    fn skip_newlines(&mut self) {
        while self.eat(&Tok::Newline) {}
    }

    fn skip_terminators(&mut self) {
        while matches!(self.peek(), Tok::Newline | Tok::Semi) {
            self.advance();
        }
    }

    fn global(&mut self, name: &str) -> usize {
        if let Some(&slot) = self.globals.get(name) {
            return slot;
        }
        let slot = self.program.globals.len();
        self.program.globals.push(name.to_string());
        self.globals.insert(name.to_string(), slot);
        slot
    }

    fn var(&mut self, name: &str) -> Var {
        if let Some(slot) = self.locals.as_ref().and_then(|l| l.get(name)) {
            return Var::Local(*slot);
        }
        Var::Global(self.global(name))
    }

    fn func_id(&mut self, name: &str) -> usize {
        if let Some(&id) = self.func_ids.get(name) {
            return id;
        }
        let id = self.program.funcs.len();
        self.program.funcs.push(Func {
            name: name.to_string(),
            ..Func::default()
        });
        self.func_ids.insert(name.to_string(), id);
        id
    }

    fn regex(&mut self, source: String) -> usize {
        self.program.regexes.push(source);
        self.program.regexes.len() - 1
    }

    fn program_items(&mut self) -> PResult<()> {
        loop {
            self.skip_terminators();
            match self.peek() {
                Tok::Eof => return Ok(()),
                Tok::Function => self.function()?,
                Tok::Begin => {
                    self.advance();
                    self.skip_newlines();
                    let block = self.block()?;
                    self.program.begin.extend(block);
                }
                Tok::End => {
                    self.advance();
                    self.skip_newlines();
                    let block = self.block()?;
                    self.program.end.extend(block);
                }
                _ => self.item()?,
            }
        }
    }

    fn item(&mut self) -> PResult<()> {
        let pattern = if self.peek() == &Tok::LBrace {
            Pattern::All
        } else {
            let first = self.expr()?;
            if self.eat(&Tok::Comma) {
                self.skip_newlines();
                let second = self.expr()?;
                self.program.ranges += 1;
                Pattern::Range(first, second, self.program.ranges - 1)
            } else {
                Pattern::Expr(first)
            }
        };
        let action = if self.peek() == &Tok::LBrace {
            Some(self.block()?)
        } else {
            None
        };
        self.program.items.push(Item { pattern, action });
        Ok(())
    }

    fn function(&mut self) -> PResult<()> {
        self.advance();
        let name = match self.advance() {
            Tok::Name(n) | Tok::FuncName(n) => n,
            other => return Err(syntax_error(&other)),
        };
        let id = self.func_id(&name);
        if self.program.funcs[id].defined {
            return Err(format!("function `{name}' redefined"));
        }
        self.expect(&Tok::LParen)?;
        let mut params = HashMap::new();
        loop {
            self.skip_newlines();
            match self.advance() {
                Tok::RParen => break,
                Tok::Name(p) => {
                    let slot = params.len();
                    params.insert(p, slot);
                    self.skip_newlines();
                    if !self.eat(&Tok::Comma) {
                        self.skip_newlines();
                        self.expect(&Tok::RParen)?;
                        break;
                    }
                }
                other => return Err(syntax_error(&other)),
            }
        }
        let count = params.len();
        self.locals = Some(params);
        self.skip_newlines();
        let body = self.block()?;
        self.locals = None;
        let func = &mut self.program.funcs[id];
        func.params = count;
        func.body = body;
        func.defined = true;
        Ok(())
    }

    fn block(&mut self) -> PResult<Vec<Stmt>> {
        self.expect(&Tok::LBrace)?;
        let mut stmts = Vec::new();
        loop {
            self.skip_terminators();
            if self.eat(&Tok::RBrace) {
                return Ok(stmts);
            }
            stmts.push(self.stmt()?);
        }
    }

    /// A statement that ends a simple statement: `;`, newline, or (left in
    /// place) `}`.
    fn end_simple(&mut self) -> PResult<()> {
        match self.peek() {
            Tok::Semi | Tok::Newline => {
                self.advance();
                Ok(())
            }
            Tok::RBrace | Tok::Eof => Ok(()),
            other => Err(syntax_error(other)),
        }
    }

    fn body(&mut self) -> PResult<Stmt> {
        if self.eat(&Tok::Semi) {
            return Ok(Stmt::Block(Vec::new()));
        }
        self.skip_newlines();
        self.stmt()
    }

    fn stmt(&mut self) -> PResult<Stmt> {
        match self.peek() {
            Tok::LBrace => Ok(Stmt::Block(self.block()?)),
            Tok::If => self.if_stmt(),
            Tok::While => {
                self.advance();
                let cond = self.paren_expr()?;
                if self.eat(&Tok::Semi) {
                    return Ok(Stmt::While(cond, Box::new(Stmt::Block(Vec::new()))));
                }
                self.skip_newlines();
                Ok(Stmt::While(cond, Box::new(self.stmt()?)))
            }
            Tok::Do => {
                self.advance();
                self.skip_newlines();
                let body = self.stmt()?;
                self.skip_terminators();
                self.expect(&Tok::While)?;
                let cond = self.paren_expr()?;
                self.end_simple()?;
                Ok(Stmt::Do(Box::new(body), cond))
            }
            Tok::For => self.for_stmt(),
            Tok::Semi => {
                self.advance();
                Ok(Stmt::Block(Vec::new()))
            }
            _ => {
                let stmt = self.simple_stmt()?;
                self.end_simple()?;
                Ok(stmt)
            }
        }
    }

    fn paren_expr(&mut self) -> PResult<Expr> {
        self.expect(&Tok::LParen)?;
        let expr = self.nested(Self::expr)?;
        self.expect(&Tok::RParen)?;
        Ok(expr)
    }

    fn if_stmt(&mut self) -> PResult<Stmt> {
        self.advance();
        let cond = self.paren_expr()?;
        let then = self.body()?;
        let save = self.pos;
        self.skip_terminators();
        if self.eat(&Tok::Else) {
            self.skip_newlines();
            let other = self.stmt()?;
            return Ok(Stmt::If(cond, Box::new(then), Some(Box::new(other))));
        }
        self.pos = save;
        Ok(Stmt::If(cond, Box::new(then), None))
    }

    fn for_stmt(&mut self) -> PResult<Stmt> {
        self.advance();
        self.expect(&Tok::LParen)?;
        if let (Tok::Name(key), Tok::In, Tok::Name(arr), Tok::RParen) = (
            self.peek().clone(),
            self.peek_at(1).clone(),
            self.peek_at(2).clone(),
            self.peek_at(3).clone(),
        ) {
            self.pos += 4;
            let (key, arr) = (self.var(&key), self.var(&arr));
            let body = self.body()?;
            return Ok(Stmt::ForIn(key, arr, Box::new(body)));
        }
        let init = self.optional(&Tok::Semi, Self::simple_stmt)?;
        self.expect(&Tok::Semi)?;
        self.skip_newlines();
        let cond = self.optional(&Tok::Semi, Self::expr)?;
        self.expect(&Tok::Semi)?;
        self.skip_newlines();
        let step = self.optional(&Tok::RParen, Self::simple_stmt)?;
        self.expect(&Tok::RParen)?;
        let body = self.body()?;
        Ok(Stmt::For(
            init.map(Box::new),
            cond,
            step.map(Box::new),
            Box::new(body),
        ))
    }

    fn optional<T>(&mut self, end: &Tok, f: fn(&mut Self) -> PResult<T>) -> PResult<Option<T>> {
        if self.peek() == end {
            Ok(None)
        } else {
            self.nested(f).map(Some)
        }
    }

    fn simple_stmt(&mut self) -> PResult<Stmt> {
        match self.peek().clone() {
            Tok::Print | Tok::Printf => self.print(),
            Tok::Next => self.keyword(Stmt::Next),
            Tok::Nextfile => self.keyword(Stmt::NextFile),
            Tok::Break => self.keyword(Stmt::Break),
            Tok::Continue => self.keyword(Stmt::Continue),
            Tok::Exit => {
                self.advance();
                Ok(Stmt::Exit(self.value_if_any()?))
            }
            Tok::Return => {
                self.advance();
                Ok(Stmt::Return(self.value_if_any()?))
            }
            Tok::Delete => {
                self.advance();
                let name = match self.advance() {
                    Tok::Name(n) => n,
                    other => return Err(syntax_error(&other)),
                };
                let var = self.var(&name);
                if self.eat(&Tok::LBracket) {
                    let subs = self.nested(Self::expr_list)?;
                    self.expect(&Tok::RBracket)?;
                    Ok(Stmt::Delete(var, Some(subs)))
                } else {
                    Ok(Stmt::Delete(var, None))
                }
            }
            _ => Ok(Stmt::Expr(self.expr()?)),
        }
    }

    fn keyword(&mut self, stmt: Stmt) -> PResult<Stmt> {
        self.advance();
        Ok(stmt)
    }

    fn at_statement_end(&self) -> bool {
        matches!(
            self.peek(),
            Tok::Semi | Tok::Newline | Tok::RBrace | Tok::Eof
        )
    }

    fn value_if_any(&mut self) -> PResult<Option<Expr>> {
        if self.at_statement_end() {
            Ok(None)
        } else {
            self.expr().map(Some)
        }
    }

    fn print(&mut self) -> PResult<Stmt> {
        let is_printf = self.advance() == Tok::Printf;
        let args = self.print_args()?;
        let redir = match self.peek() {
            Tok::Gt => Some(Redir::File),
            Tok::Append => Some(Redir::Append),
            Tok::Pipe => Some(Redir::Pipe),
            _ => None,
        };
        let dest = match redir {
            Some(kind) => {
                self.advance();
                let saved = std::mem::replace(&mut self.no_gt, true);
                let target = self.concat();
                self.no_gt = saved;
                Some((kind, target?))
            }
            None => None,
        };
        if is_printf {
            if args.is_empty() {
                return Err("printf: no format".into());
            }
            Ok(Stmt::Printf(args, dest))
        } else {
            Ok(Stmt::Print(args, dest))
        }
    }

    fn print_args(&mut self) -> PResult<Vec<Expr>> {
        if self.at_statement_end() || matches!(self.peek(), Tok::Gt | Tok::Append | Tok::Pipe) {
            return Ok(Vec::new());
        }
        if self.peek() == &Tok::LParen {
            let save = self.pos;
            self.advance();
            let list = self.nested(Self::expr_list)?;
            if self.eat(&Tok::RParen)
                && (self.at_statement_end()
                    || matches!(self.peek(), Tok::Gt | Tok::Append | Tok::Pipe))
            {
                return Ok(list);
            }
            self.pos = save;
        }
        let saved = std::mem::replace(&mut self.no_gt, true);
        let list = self.expr_list();
        self.no_gt = saved;
        list
    }

    /// Runs `f` with `>` meaning comparison again (inside parentheses etc.).
    fn nested<T>(&mut self, f: fn(&mut Self) -> PResult<T>) -> PResult<T> {
        let saved = std::mem::replace(&mut self.no_gt, false);
        let result = f(self);
        self.no_gt = saved;
        result
    }

    fn expr_list(&mut self) -> PResult<Vec<Expr>> {
        let mut list = vec![self.expr()?];
        while self.eat(&Tok::Comma) {
            self.skip_newlines();
            list.push(self.expr()?);
        }
        Ok(list)
    }

    pub(crate) fn expr(&mut self) -> PResult<Expr> {
        let lhs = self.ternary()?;
        let op = match self.peek() {
            Tok::Assign => None,
            Tok::AddAssign => Some(BinOp::Add),
            Tok::SubAssign => Some(BinOp::Sub),
            Tok::MulAssign => Some(BinOp::Mul),
            Tok::DivAssign => Some(BinOp::Div),
            Tok::ModAssign => Some(BinOp::Mod),
            Tok::PowAssign => Some(BinOp::Pow),
            _ => return Ok(lhs),
        };
        let Expr::Lv(target) = lhs else {
            // `a /= 2` after a non-lvalue: a regex like /=.../ was meant.
            return Err(syntax_error(self.peek()));
        };
        self.advance();
        self.skip_newlines();
        let rhs = self.expr()?;
        Ok(Expr::Assign(Box::new(target), op, Box::new(rhs)))
    }

    fn ternary(&mut self) -> PResult<Expr> {
        let cond = self.or()?;
        if !self.eat(&Tok::Question) {
            return Ok(cond);
        }
        self.skip_newlines();
        let yes = self.expr()?;
        self.skip_newlines();
        self.expect(&Tok::Colon)?;
        self.skip_newlines();
        let no = self.expr()?;
        Ok(Expr::Cond(Box::new(cond), Box::new(yes), Box::new(no)))
    }

    fn or(&mut self) -> PResult<Expr> {
        let mut lhs = self.and()?;
        while self.eat(&Tok::Or) {
            self.skip_newlines();
            let rhs = self.and()?;
            lhs = Expr::Or(Box::new(lhs), Box::new(rhs));
        }
        Ok(lhs)
    }

    fn and(&mut self) -> PResult<Expr> {
        let mut lhs = self.in_expr()?;
        while self.eat(&Tok::And) {
            self.skip_newlines();
            let rhs = self.in_expr()?;
            lhs = Expr::And(Box::new(lhs), Box::new(rhs));
        }
        Ok(lhs)
    }

    fn in_expr(&mut self) -> PResult<Expr> {
        let mut lhs = self.matching()?;
        while self.peek() == &Tok::In {
            self.advance();
            let arr = self.array_name()?;
            lhs = Expr::In(vec![lhs], arr);
        }
        Ok(lhs)
    }

    fn array_name(&mut self) -> PResult<Var> {
        match self.advance() {
            Tok::Name(n) => Ok(self.var(&n)),
            other => Err(syntax_error(&other)),
        }
    }

    fn matching(&mut self) -> PResult<Expr> {
        let mut lhs = self.comparison()?;
        loop {
            let negate = match self.peek() {
                Tok::Match => false,
                Tok::NoMatch => true,
                _ => return Ok(lhs),
            };
            self.advance();
            let rhs = self.comparison()?;
            lhs = Expr::Match(negate, Box::new(lhs), Box::new(rhs));
        }
    }

    fn comparison(&mut self) -> PResult<Expr> {
        let lhs = self.pipe_getline()?;
        let op = match self.peek() {
            Tok::Lt => CmpOp::Lt,
            Tok::Le => CmpOp::Le,
            Tok::Gt if !self.no_gt => CmpOp::Gt,
            Tok::Ge => CmpOp::Ge,
            Tok::Eq => CmpOp::Eq,
            Tok::Ne => CmpOp::Ne,
            _ => return Ok(lhs),
        };
        self.advance();
        let rhs = self.pipe_getline()?;
        Ok(Expr::Cmp(op, Box::new(lhs), Box::new(rhs)))
    }

    fn pipe_getline(&mut self) -> PResult<Expr> {
        let mut lhs = self.concat()?;
        while self.peek() == &Tok::Pipe && self.peek_at(1) == &Tok::Getline {
            self.pos += 2;
            let var = self.getline_target()?;
            lhs = Expr::Getline(GetSource::Cmd(Box::new(lhs)), var);
        }
        Ok(lhs)
    }

    fn starts_operand(&self) -> bool {
        matches!(
            self.peek(),
            Tok::Num(_)
                | Tok::Str(_)
                | Tok::Regex(_)
                | Tok::Name(_)
                | Tok::FuncName(_)
                | Tok::Builtin(_)
                | Tok::Dollar
                | Tok::Not
                | Tok::LParen
                | Tok::Minus
                | Tok::Plus
                | Tok::Incr
                | Tok::Decr
        )
    }

    fn concat(&mut self) -> PResult<Expr> {
        let mut lhs = self.additive()?;
        while self.starts_operand() && !matches!(self.peek(), Tok::Minus | Tok::Plus | Tok::Not) {
            let rhs = self.additive()?;
            lhs = Expr::Concat(Box::new(lhs), Box::new(rhs));
        }
        Ok(lhs)
    }

    fn additive(&mut self) -> PResult<Expr> {
        let mut lhs = self.multiplicative()?;
        loop {
            let op = match self.peek() {
                Tok::Plus => BinOp::Add,
                Tok::Minus => BinOp::Sub,
                _ => return Ok(lhs),
            };
            self.advance();
            let rhs = self.multiplicative()?;
            lhs = Expr::Bin(op, Box::new(lhs), Box::new(rhs));
        }
    }

    fn multiplicative(&mut self) -> PResult<Expr> {
        let mut lhs = self.unary()?;
        loop {
            let op = match self.peek() {
                Tok::Star => BinOp::Mul,
                Tok::Slash => BinOp::Div,
                Tok::Percent => BinOp::Mod,
                _ => return Ok(lhs),
            };
            self.advance();
            let rhs = self.unary()?;
            lhs = Expr::Bin(op, Box::new(lhs), Box::new(rhs));
        }
    }

    fn unary(&mut self) -> PResult<Expr> {
        match self.peek() {
            Tok::Not => {
                self.advance();
                Ok(Expr::Not(Box::new(self.unary()?)))
            }
            Tok::Minus => {
                self.advance();
                Ok(Expr::Neg(Box::new(self.unary()?)))
            }
            Tok::Plus => {
                self.advance();
                Ok(Expr::Plus(Box::new(self.unary()?)))
            }
            _ => self.power(),
        }
    }

    fn power(&mut self) -> PResult<Expr> {
        let base = self.postfix()?;
        if !self.eat(&Tok::Caret) {
            return Ok(base);
        }
        // Right associative, and the exponent may carry a sign: 2^-1.
        let exponent = match self.peek() {
            Tok::Minus | Tok::Plus | Tok::Not => self.unary()?,
            _ => self.power()?,
        };
        Ok(Expr::Bin(BinOp::Pow, Box::new(base), Box::new(exponent)))
    }

    fn postfix(&mut self) -> PResult<Expr> {
        let expr = self.primary()?;
        if let Expr::Lv(lv) = &expr {
            let delta = match self.peek() {
                Tok::Incr => 1.0,
                Tok::Decr => -1.0,
                _ => return Ok(expr),
            };
            self.advance();
            return Ok(Expr::IncDec(Box::new(lv.clone()), false, delta));
        }
        Ok(expr)
    }

    fn primary(&mut self) -> PResult<Expr> {
        match self.advance() {
            Tok::Num(n) => Ok(Expr::Num(n)),
            Tok::Str(s) => Ok(Expr::Str(Rc::from(s))),
            Tok::Regex(r) => Ok(Expr::Regex(self.regex(r))),
            Tok::Dollar => {
                let operand = match self.peek() {
                    Tok::Incr | Tok::Decr | Tok::Minus | Tok::Plus | Tok::Not => self.unary()?,
                    _ => self.primary()?,
                };
                Ok(Expr::Lv(LValue::Field(Box::new(operand))))
            }
            Tok::LParen => self.group(),
            tok @ (Tok::Incr | Tok::Decr) => {
                let delta = if tok == Tok::Incr { 1.0 } else { -1.0 };
                match self.primary()? {
                    Expr::Lv(lv) => Ok(Expr::IncDec(Box::new(lv), true, delta)),
                    _ => Err(syntax_error(&tok)),
                }
            }
            Tok::Minus => Ok(Expr::Neg(Box::new(self.unary()?))),
            Tok::Plus => Ok(Expr::Plus(Box::new(self.unary()?))),
            Tok::Not => Ok(Expr::Not(Box::new(self.unary()?))),
            Tok::Name(name) => self.name(&name),
            Tok::FuncName(name) => {
                let id = self.func_id(&name);
                let args = self.call_args()?;
                Ok(Expr::Call(id, args))
            }
            Tok::Builtin(b) => self.builtin(b),
            Tok::Getline => {
                let var = self.getline_target()?;
                if self.eat(&Tok::Lt) {
                    let file = self.postfix()?;
                    return Ok(Expr::Getline(GetSource::File(Box::new(file)), var));
                }
                Ok(Expr::Getline(GetSource::Main, var))
            }
            other => Err(syntax_error(&other)),
        }
    }

    fn group(&mut self) -> PResult<Expr> {
        let list = self.nested(Self::expr_list)?;
        self.expect(&Tok::RParen)?;
        if list.len() > 1 {
            if !self.eat(&Tok::In) {
                return Err(syntax_error(self.peek()));
            }
            let arr = self.array_name()?;
            return Ok(Expr::In(list, arr));
        }
        let expr = list.into_iter().next().unwrap_or(Expr::Num(0.0));
        Ok(Expr::Group(Box::new(expr)))
    }

    fn name(&mut self, name: &str) -> PResult<Expr> {
        let var = self.var(name);
        if self.eat(&Tok::LBracket) {
            let subs = self.nested(Self::expr_list)?;
            self.expect(&Tok::RBracket)?;
            return Ok(Expr::Lv(LValue::Index(var, subs)));
        }
        Ok(Expr::Lv(LValue::Var(var)))
    }

    fn getline_target(&mut self) -> PResult<Option<Box<LValue>>> {
        if !matches!(self.peek(), Tok::Name(_) | Tok::Dollar) {
            return Ok(None);
        }
        match self.primary()? {
            Expr::Lv(lv) => Ok(Some(Box::new(lv))),
            _ => Err(syntax_error(self.peek())),
        }
    }

    fn call_args(&mut self) -> PResult<Vec<Expr>> {
        self.expect(&Tok::LParen)?;
        self.skip_newlines();
        if self.eat(&Tok::RParen) {
            return Ok(Vec::new());
        }
        let args = self.nested(Self::expr_list)?;
        self.skip_newlines();
        self.expect(&Tok::RParen)?;
        Ok(args)
    }

    fn builtin(&mut self, b: Builtin) -> PResult<Expr> {
        if self.peek() != &Tok::LParen {
            return match b {
                Builtin::Length => Ok(Expr::Builtin(b, Vec::new())),
                _ => Err(syntax_error(self.peek())),
            };
        }
        let args = self.call_args()?;
        let (min, max) = arity(b);
        if args.len() < min || args.len() > max {
            return Err(format!("{b:?}: wrong number of arguments").to_lowercase());
        }
        Ok(Expr::Builtin(b, args))
    }
}

/// The accepted argument counts of a built-in function.
fn arity(b: Builtin) -> (usize, usize) {
    use Builtin as B;
    match b {
        B::Length => (0, 1),
        B::Substr => (2, 3),
        B::Index | B::Atan2 => (2, 2),
        B::Split => (2, 4),
        B::Sub | B::Gsub => (2, 3),
        B::Match => (2, 3),
        B::Sprintf => (1, usize::MAX),
        B::Rand => (0, 0),
        B::Srand | B::Fflush => (0, 1),
        B::Gensub => (3, 4),
        B::Asort | B::Asorti => (1, 2),
        B::Systime => (0, 0),
        B::Close => (1, 2),
        _ => (1, 1),
    }
}
