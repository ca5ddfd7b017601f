//! The tree-walking interpreter: statements, expressions, variables and
//! the record/field state.
//!
//! Fields are split lazily (only when `$n` or `NF` is read) into byte
//! ranges of the record, so `{ print $3 }` costs one scan and one small
//! allocation per line.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use regex::Regex;

use super::format::{num_to_string, sprintf_within, Arg};
use super::io::{Inputs, MainInput, Outputs};
use super::lexer::Builtin;
use super::parser::{
    self as p, BinOp, CmpOp, Expr, GetSource, LValue, Pattern, Program, Redir, Stmt, Var,
};
use super::records::{compile, FieldSep, RecordSep};
use super::value::{Array, Value};
use super::{Stop, R};
use crate::limits::{Abort, Held, LimitKind, RegexCost};
use crate::utils::Ctx;

enum Flow {
    Normal,
    Break,
    Continue,
    Return(Value),
}

/// Where a variable lives, absolutely (for array arguments by reference).
#[derive(Debug, Clone, Copy)]
enum Slot {
    Global(usize),
    Stack(usize),
}

#[derive(Debug, Clone)]
enum Cell {
    Val(Value),
    Arr(Rc<RefCell<Array>>),
    /// An untyped argument: becomes the caller's array if used as one.
    Alias(Slot),
}

/// The current record and its lazily split fields.
#[derive(Default)]
struct Record {
    text: String,
    ranges: Vec<(usize, usize)>,
    split: bool,
    /// The FS in force when the record was read.
    fs: Value,
}

pub(crate) struct Interp<'p, 'c, 'a> {
    prog: &'p Program,
    pub ctx: &'c mut Ctx<'a>,
    regexes: Vec<Rc<ProgramRegex>>,
    dynamic: HashMap<String, Rc<ProgramRegex>>,
    globals: Vec<Cell>,
    stack: Vec<Cell>,
    frame: usize,
    record: Record,
    field_sep: (Rc<str>, Rc<FieldSep>),
    record_sep: (Rc<str>, Rc<RecordSep>),
    ranges: Vec<bool>,
    pub outputs: Outputs,
    pub inputs: Inputs,
    rand_state: u64,
    seed: f64,
    pub exit_status: i32,
    pub main: MainInput,
    pub ran_end: bool,
    /// The memory budget the program's data holds, as last measured.
    memory: Option<Held<'a>>,
    /// Bytes built since that measurement (see [`Interp::built`]).
    unmeasured: u64,
}

/// What an array element costs beyond its key and value: the slot, the
/// index entry and the allocations' headers.
const ELEMENT_BYTES: u64 = 64;

fn fatal<T>(message: impl Into<String>) -> R<T> {
    Err(Stop::Fatal(message.into()))
}

/// A regex of the program (literal or dynamic), with what its searches
/// cost.
pub(crate) struct ProgramRegex {
    re: Regex,
    cost: RegexCost,
}

impl ProgramRegex {
    fn new(source: &str) -> Result<ProgramRegex, String> {
        let re = compile(source)?;
        let cost = RegexCost::new(re.as_str());
        Ok(ProgramRegex { re, cost })
    }
}

impl std::ops::Deref for ProgramRegex {
    type Target = Regex;

    fn deref(&self) -> &Regex {
        &self.re
    }
}

impl<'p, 'c, 'a> Interp<'p, 'c, 'a> {
    pub(crate) fn new(prog: &'p Program, ctx: &'c mut Ctx<'a>) -> Result<Self, String> {
        let regexes = prog
            .regexes
            .iter()
            .map(|re| ProgramRegex::new(re).map(Rc::new))
            .collect::<Result<Vec<_>, _>>()?;
        let mut globals = vec![Cell::Val(Value::Uninit); prog.globals.len()];
        let defaults = [
            (p::FS, " "),
            (p::OFS, " "),
            (p::ORS, "\n"),
            (p::RS, "\n"),
            (p::SUBSEP, "\x1c"),
            (p::CONVFMT, "%.6g"),
            (p::OFMT, "%.6g"),
        ];
        for (slot, text) in defaults {
            globals[slot] = Cell::Val(Value::str(text));
        }
        for slot in [p::NR, p::FNR, p::NF, p::RSTART, p::RLENGTH] {
            globals[slot] = Cell::Val(Value::Num(0.0));
        }
        globals[p::RLENGTH] = Cell::Val(Value::Num(-1.0));
        let mut environ = Array::default();
        for (k, v) in ctx.env {
            environ.set(Rc::from(k.as_str()), Value::StrNum(Rc::from(v.as_str())));
        }
        globals[p::ENVIRON] = Cell::Arr(Rc::new(RefCell::new(environ)));
        globals[p::ARGV] = Cell::Arr(Rc::default());
        Ok(Interp {
            prog,
            ctx,
            regexes,
            dynamic: HashMap::new(),
            globals,
            stack: Vec::new(),
            frame: 0,
            record: Record::default(),
            field_sep: (Rc::from(" "), Rc::new(FieldSep::Blanks)),
            record_sep: (Rc::from("\n"), Rc::new(RecordSep::Char('\n'))),
            ranges: vec![false; prog.ranges],
            outputs: Outputs::default(),
            inputs: Inputs::default(),
            rand_state: 0x2545_f491_4f6c_dd1d,
            seed: 0.0,
            exit_status: 0,
            main: MainInput::default(),
            ran_end: false,
            memory: None,
            unmeasured: 0,
        })
    }

    // ----- memory -----

    /// A value of `bytes` is about to be built: it must fit in the memory
    /// budget beside what the program holds. What the program holds is
    /// measured again (see [`Interp::measure`]) once a sixteenth of the
    /// budget has been built since the last measurement, so the budget
    /// follows what is kept and not what was built and dropped, and a
    /// doubling string (`s = s s`) ends at the budget in a few steps.
    fn built(&mut self, bytes: usize) -> R<()> {
        let budget = self.ctx.budget;
        budget.check_memory(bytes as u64)?;
        self.unmeasured = self.unmeasured.saturating_add(bytes as u64);
        if self.unmeasured > budget.limits().max_memory_bytes / 16 {
            self.unmeasured = 0;
            let bytes = self.measure();
            match &mut self.memory {
                Some(held) => held.resize(bytes)?,
                None => self.memory = Some(budget.hold(bytes)?),
            }
        }
        Ok(())
    }

    /// The room left in the memory budget for one value.
    fn room(&self) -> usize {
        let budget = self.ctx.budget;
        let left = budget
            .limits()
            .max_memory_bytes
            .saturating_sub(budget.memory_in_use());
        usize::try_from(left).unwrap_or(usize::MAX)
    }

    /// Bytes the program's variables, arrays, call stack and record hold
    /// (a string or array shared between variables counted once).
    fn measure(&self) -> u64 {
        let mut seen: std::collections::HashSet<*const u8> = std::collections::HashSet::new();
        let mut value_bytes = |v: &Value| -> u64 {
            match v {
                Value::Str(s) | Value::StrNum(s) if seen.insert(s.as_ptr()) => s.len() as u64,
                _ => 0,
            }
        };
        let mut arrays: std::collections::HashSet<*const RefCell<Array>> =
            std::collections::HashSet::new();
        let mut total = (self.record.text.len() + self.record.ranges.len() * 16) as u64;
        for cell in self.globals.iter().chain(&self.stack) {
            total += match cell {
                Cell::Val(v) => value_bytes(v),
                Cell::Arr(a) if arrays.insert(Rc::as_ptr(a)) => {
                    let a = a.borrow();
                    a.entries()
                        .map(|(k, v)| k.len() as u64 + value_bytes(v) + ELEMENT_BYTES)
                        .sum()
                }
                Cell::Arr(_) | Cell::Alias(_) => 0,
            };
        }
        total
    }

    // ----- variables -----

    pub(crate) fn set_global(&mut self, slot: usize, value: Value) {
        self.globals[slot] = Cell::Val(value);
    }

    /// The slot of a global the program uses, by name.
    pub(crate) fn global_slot(&self, name: &str) -> Option<usize> {
        self.prog.globals.iter().position(|g| g == name)
    }

    /// Assigns a global as the program would (NF rebuilds the record).
    pub(crate) fn assign_global(&mut self, slot: usize, value: Value) -> R<()> {
        self.set_var(Var::Global(slot), value)
    }

    pub(crate) fn global(&self, slot: usize) -> Value {
        match &self.globals[slot] {
            Cell::Val(v) => v.clone(),
            _ => Value::Uninit,
        }
    }

    pub(crate) fn global_str(&self, slot: usize) -> Rc<str> {
        let convfmt = self.convfmt();
        self.global(slot).to_str(&convfmt)
    }

    fn convfmt(&self) -> Rc<str> {
        match &self.globals[p::CONVFMT] {
            Cell::Val(Value::Str(s)) | Cell::Val(Value::StrNum(s)) => s.clone(),
            _ => Rc::from("%.6g"),
        }
    }

    fn ofmt(&self) -> Rc<str> {
        match &self.globals[p::OFMT] {
            Cell::Val(Value::Str(s)) | Cell::Val(Value::StrNum(s)) => s.clone(),
            _ => Rc::from("%.6g"),
        }
    }

    pub(crate) fn to_str(&self, value: &Value) -> Rc<str> {
        match value {
            Value::Num(n) => Rc::from(num_to_string(*n, &self.convfmt())),
            other => other.to_str(""),
        }
    }

    fn slot(&self, var: Var) -> Slot {
        match var {
            Var::Global(i) => Slot::Global(i),
            Var::Local(i) => Slot::Stack(self.frame + i),
        }
    }

    fn cell(&self, slot: Slot) -> &Cell {
        match slot {
            Slot::Global(i) => &self.globals[i],
            Slot::Stack(i) => &self.stack[i],
        }
    }

    fn cell_mut(&mut self, slot: Slot) -> &mut Cell {
        match slot {
            Slot::Global(i) => &mut self.globals[i],
            Slot::Stack(i) => &mut self.stack[i],
        }
    }

    fn get_var(&mut self, var: Var) -> R<Value> {
        if var == Var::Global(p::NF) {
            self.split_record()?;
        }
        match self.cell(self.slot(var)) {
            Cell::Val(v) => Ok(v.clone()),
            Cell::Alias(_) => Ok(Value::Uninit),
            Cell::Arr(_) => fatal("attempt to use array in a scalar context"),
        }
    }

    fn set_var(&mut self, var: Var, value: Value) -> R<()> {
        if var == Var::Global(p::NF) {
            return self.set_nf(value.to_num());
        }
        let cell = self.cell_mut(self.slot(var));
        if let Cell::Arr(_) = cell {
            return fatal("attempt to use array in a scalar context");
        }
        *cell = Cell::Val(value);
        Ok(())
    }

    /// The array in `var`, creating it if the variable is untyped.
    pub(crate) fn array(&mut self, var: Var) -> R<Rc<RefCell<Array>>> {
        let slot = self.slot(var);
        let target = match self.cell(slot) {
            Cell::Arr(a) => return Ok(a.clone()),
            Cell::Alias(target) => *target,
            Cell::Val(Value::Uninit) => slot,
            Cell::Val(_) => return fatal("attempt to use a scalar value as array"),
        };
        let array = match self.cell(target) {
            Cell::Arr(a) => a.clone(),
            Cell::Val(Value::Uninit) | Cell::Alias(_) => {
                let a: Rc<RefCell<Array>> = Rc::default();
                *self.cell_mut(target) = Cell::Arr(a.clone());
                a
            }
            Cell::Val(_) => return fatal("attempt to use a scalar value as array"),
        };
        *self.cell_mut(slot) = Cell::Arr(array.clone());
        Ok(array)
    }

    fn subscript(&mut self, subs: &[Expr]) -> R<Rc<str>> {
        if let [single] = subs {
            let v = self.eval(single)?;
            return Ok(self.to_str(&v));
        }
        let sep = self.global_str(p::SUBSEP);
        let mut key = String::new();
        for (i, e) in subs.iter().enumerate() {
            if i > 0 {
                key.push_str(&sep);
            }
            let v = self.eval(e)?;
            key.push_str(&self.to_str(&v));
        }
        Ok(Rc::from(key))
    }

    fn get(&mut self, lv: &LValue) -> R<Value> {
        match lv {
            LValue::Var(v) => self.get_var(*v),
            LValue::Field(e) => {
                let i = self.field_index(e)?;
                self.field(i)
            }
            LValue::Index(arr, subs) => {
                let key = self.subscript(subs)?;
                let array = self.array(*arr)?;
                let mut array = array.borrow_mut();
                Ok(array.entry(key).clone())
            }
        }
    }

    fn assign(&mut self, lv: &LValue, value: Value) -> R<()> {
        match lv {
            LValue::Var(v) => self.set_var(*v, value),
            LValue::Field(e) => {
                let i = self.field_index(e)?;
                self.set_field(i, value)
            }
            LValue::Index(arr, subs) => {
                let key = self.subscript(subs)?;
                self.built(key.len() + ELEMENT_BYTES as usize)?;
                self.array(*arr)?.borrow_mut().set(key, value);
                Ok(())
            }
        }
    }

    // ----- record and fields -----

    fn field_index(&mut self, e: &Expr) -> R<usize> {
        let n = self.eval(e)?.to_num();
        if n < 0.0 {
            return fatal(format!("attempt to access field {}", n as i64));
        }
        Ok(n as usize)
    }

    /// Makes a main-input record (a byte range of the current file) `$0`.
    pub(crate) fn load_main_record(&mut self, (a, b): (usize, usize)) {
        self.record.text.clear();
        self.record.text.push_str(&self.main.source.data[a..b]);
        self.record.split = false;
        self.record.fs = self.global(p::FS);
    }

    /// Replaces `$0`; fields are split on demand with the current FS.
    pub(crate) fn set_record(&mut self, text: &str) {
        self.record.text.clear();
        self.record.text.push_str(text);
        self.record.split = false;
        self.record.fs = self.global(p::FS);
    }

    fn field_sep(&mut self, fs: &Value) -> R<Rc<FieldSep>> {
        let text = fs.to_str(&self.convfmt());
        if *text != *self.field_sep.0 {
            let sep = FieldSep::new(&text).map_err(Stop::Fatal)?;
            self.field_sep = (text, Rc::new(sep));
        }
        Ok(self.field_sep.1.clone())
    }

    pub(crate) fn record_sep(&mut self) -> R<Rc<RecordSep>> {
        let text = self.global_str(p::RS);
        if *text != *self.record_sep.0 {
            let sep = RecordSep::new(&text).map_err(Stop::Fatal)?;
            self.record_sep = (text, Rc::new(sep));
        }
        Ok(self.record_sep.1.clone())
    }

    fn split_record(&mut self) -> R<()> {
        if self.record.split {
            return Ok(());
        }
        let fs = std::mem::take(&mut self.record.fs);
        let sep = self.field_sep(&fs)?;
        let paragraph = matches!(*self.record_sep()?, RecordSep::Paragraph);
        sep.split(&self.record.text, paragraph, &mut self.record.ranges);
        self.record.split = true;
        self.globals[p::NF] = Cell::Val(Value::Num(self.record.ranges.len() as f64));
        Ok(())
    }

    fn field(&mut self, i: usize) -> R<Value> {
        if i == 0 {
            return Ok(Value::StrNum(Rc::from(self.record.text.as_str())));
        }
        self.split_record()?;
        Ok(match self.record.ranges.get(i - 1) {
            Some(&(a, b)) => Value::StrNum(Rc::from(&self.record.text[a..b])),
            None => Value::Uninit,
        })
    }

    fn fields_owned(&mut self) -> R<Vec<String>> {
        self.split_record()?;
        let text = &self.record.text;
        Ok(self
            .record
            .ranges
            .iter()
            .map(|&(a, b)| text[a..b].to_string())
            .collect())
    }

    /// Rebuilds `$0` from `fields` joined by OFS.
    fn rebuild(&mut self, fields: &[String]) {
        let ofs = self.global_str(p::OFS);
        let record = &mut self.record;
        record.text.clear();
        record.ranges.clear();
        for (i, f) in fields.iter().enumerate() {
            if i > 0 {
                record.text.push_str(&ofs);
            }
            let start = record.text.len();
            record.text.push_str(f);
            record.ranges.push((start, record.text.len()));
        }
        record.split = true;
        self.globals[p::NF] = Cell::Val(Value::Num(fields.len() as f64));
    }

    fn set_field(&mut self, i: usize, value: Value) -> R<()> {
        let text = self.to_str(&value);
        if i == 0 {
            self.set_record(&text);
            return Ok(());
        }
        let mut fields = self.fields_owned()?;
        if fields.len() < i {
            self.built((i - fields.len()).saturating_mul(24))?;
            fields.resize(i, String::new());
        }
        fields[i - 1] = text.to_string();
        self.rebuild(&fields);
        Ok(())
    }

    fn set_nf(&mut self, n: f64) -> R<()> {
        if n < 0.0 {
            return fatal("NF set to negative value");
        }
        let mut fields = self.fields_owned()?;
        let n = n as usize;
        self.built(n.saturating_sub(fields.len()).saturating_mul(24))?;
        fields.resize(n, String::new());
        self.rebuild(&fields);
        Ok(())
    }

    // ----- regexes -----

    fn regex_of(&mut self, e: &Expr) -> R<Rc<ProgramRegex>> {
        if let Expr::Regex(i) = e {
            return Ok(self.regexes[*i].clone());
        }
        let v = self.eval(e)?;
        let source = self.to_str(&v);
        self.dynamic_regex(&source)
    }

    pub(crate) fn dynamic_regex(&mut self, source: &str) -> R<Rc<ProgramRegex>> {
        if let Some(re) = self.dynamic.get(source) {
            return Ok(re.clone());
        }
        let re = Rc::new(ProgramRegex::new(source).map_err(Stop::Fatal)?);
        if self.dynamic.len() > 1000 {
            self.dynamic.clear();
        }
        self.dynamic.insert(source.to_string(), re.clone());
        Ok(re)
    }

    /// Charges what searching `text` with `re` costs beyond its bytes,
    /// before the search (see [`RegexCost`]).
    fn charge_search(&self, re: &ProgramRegex, text: &str) -> R<()> {
        self.ctx
            .budget
            .charge_cpu(re.cost.extra_work(text.as_bytes()))?;
        Ok(())
    }

    // ----- patterns and actions -----

    /// Runs BEGIN (or END) statements.
    pub(crate) fn run_block(&mut self, stmts: &[Stmt]) -> R<()> {
        match self.exec_all(stmts)? {
            Flow::Normal | Flow::Break | Flow::Continue | Flow::Return(_) => Ok(()),
        }
    }

    /// Runs the main items against the current record.
    pub(crate) fn run_items(&mut self) -> R<()> {
        let prog = self.prog;
        for item in &prog.items {
            if !self.matches(&item.pattern)? {
                continue;
            }
            match &item.action {
                Some(stmts) => {
                    self.exec_all(stmts)?;
                }
                None => {
                    let text = std::mem::take(&mut self.record.text);
                    let result = self.emit_record(&text);
                    self.record.text = text;
                    result?;
                }
            }
        }
        Ok(())
    }

    fn emit_record(&mut self, text: &str) -> R<()> {
        let ors = self.global_str(p::ORS);
        self.ctx.stdout.write_str(text)?;
        self.ctx.stdout.write_str(&ors)?;
        Ok(())
    }

    fn matches(&mut self, pattern: &Pattern) -> R<bool> {
        match pattern {
            Pattern::All => Ok(true),
            Pattern::Expr(e) => self.cond(e),
            Pattern::Range(start, end, i) => {
                if !self.ranges[*i] {
                    if !self.cond(start)? {
                        return Ok(false);
                    }
                    self.ranges[*i] = true;
                }
                if self.cond(end)? {
                    self.ranges[*i] = false;
                }
                Ok(true)
            }
        }
    }

    fn cond(&mut self, e: &Expr) -> R<bool> {
        Ok(self.eval(e)?.is_true())
    }

    // ----- statements -----

    fn exec_all(&mut self, stmts: &[Stmt]) -> R<Flow> {
        for stmt in stmts {
            match self.exec(stmt)? {
                Flow::Normal => {}
                other => return Ok(other),
            }
        }
        Ok(Flow::Normal)
    }

    /// Runs a loop body; `Some` ends the loop with that flow.
    fn body(&mut self, body: &Stmt) -> R<Option<Flow>> {
        self.ctx.budget.charge_iteration()?;
        match self.exec(body)? {
            Flow::Break => Ok(Some(Flow::Normal)),
            Flow::Normal | Flow::Continue => Ok(None),
            ret @ Flow::Return(_) => Ok(Some(ret)),
        }
    }

    fn exec(&mut self, stmt: &Stmt) -> R<Flow> {
        match stmt {
            Stmt::Expr(e) => {
                self.eval(e)?;
            }
            Stmt::Print(args, dest) => self.print(args, dest.as_ref())?,
            Stmt::Printf(args, dest) => {
                let text = self.sprintf(args)?;
                self.output(dest.as_ref(), &text)?;
            }
            Stmt::If(c, yes, no) => {
                if self.cond(c)? {
                    return self.exec(yes);
                } else if let Some(no) = no {
                    return self.exec(no);
                }
            }
            Stmt::While(c, body) => {
                while self.cond(c)? {
                    if let Some(flow) = self.body(body)? {
                        return Ok(flow);
                    }
                }
            }
            Stmt::Do(body, c) => loop {
                if let Some(flow) = self.body(body)? {
                    return Ok(flow);
                }
                if !self.cond(c)? {
                    break;
                }
            },
            Stmt::For(init, c, step, body) => return self.for_loop(init, c, step, body),
            Stmt::ForIn(key, arr, body) => return self.for_in(*key, *arr, body),
            Stmt::Block(stmts) => return self.exec_all(stmts),
            Stmt::Next => return Err(Stop::Next),
            Stmt::NextFile => return Err(Stop::NextFile),
            Stmt::Exit(e) => {
                if let Some(e) = e {
                    self.exit_status = self.eval(e)?.to_num() as i32;
                }
                return Err(Stop::Exit(self.exit_status));
            }
            Stmt::Return(e) => {
                let value = match e {
                    Some(e) => self.eval(e)?,
                    None => Value::Uninit,
                };
                return Ok(Flow::Return(value));
            }
            Stmt::Break => return Ok(Flow::Break),
            Stmt::Continue => return Ok(Flow::Continue),
            Stmt::Delete(arr, subs) => {
                let key = match subs {
                    Some(subs) => Some(self.subscript(subs)?),
                    None => None,
                };
                let array = self.array(*arr)?;
                let mut array = array.borrow_mut();
                match key {
                    Some(key) => array.remove(&key),
                    None => array.clear(),
                }
            }
        }
        Ok(Flow::Normal)
    }

    fn for_loop(
        &mut self,
        init: &Option<Box<Stmt>>,
        c: &Option<Expr>,
        step: &Option<Box<Stmt>>,
        body: &Stmt,
    ) -> R<Flow> {
        if let Some(init) = init {
            self.exec(init)?;
        }
        loop {
            if let Some(c) = c {
                if !self.cond(c)? {
                    break;
                }
            }
            if let Some(flow) = self.body(body)? {
                return Ok(flow);
            }
            if let Some(step) = step {
                self.exec(step)?;
            }
        }
        Ok(Flow::Normal)
    }

    fn for_in(&mut self, key: Var, arr: Var, body: &Stmt) -> R<Flow> {
        let keys = self.array(arr)?.borrow().keys();
        for k in keys {
            self.set_var(key, Value::Str(k))?;
            if let Some(flow) = self.body(body)? {
                return Ok(flow);
            }
        }
        Ok(Flow::Normal)
    }

    fn print(&mut self, args: &[Expr], dest: Option<&(Redir, Expr)>) -> R<()> {
        let mut line = String::new();
        if args.is_empty() {
            line.push_str(&self.record.text);
        } else {
            let ofmt = self.ofmt();
            let ofs = self.global_str(p::OFS);
            for (i, arg) in args.iter().enumerate() {
                if i > 0 {
                    line.push_str(&ofs);
                }
                self.eval(arg)?.push_to(&mut line, &ofmt);
            }
        }
        line.push_str(&self.global_str(p::ORS));
        self.output(dest, &line)
    }

    fn output(&mut self, dest: Option<&(Redir, Expr)>, text: &str) -> R<()> {
        let Some((kind, target)) = dest else {
            self.ctx.stdout.write_str(text)?;
            return Ok(());
        };
        let v = self.eval(target)?;
        let name = self.to_str(&v);
        self.outputs.write(self.ctx, *kind, &name, text)
    }

    fn sprintf(&mut self, args: &[Expr]) -> R<String> {
        let values = args.iter().map(|a| self.eval(a)).collect::<R<Vec<_>>>()?;
        let convfmt = self.convfmt();
        let fmt = values[0].to_str(&convfmt);
        let wrapped: Vec<FmtArg<'_>> = values[1..].iter().map(|v| FmtArg(v, &convfmt)).collect();
        let refs: Vec<&dyn Arg> = wrapped.iter().map(|a| a as &dyn Arg).collect();
        let text = sprintf_within(&fmt, &refs, self.room())
            .ok_or(Stop::Abort(Abort::Limit(LimitKind::Memory)))?;
        drop(wrapped);
        self.built(text.len())?;
        Ok(text)
    }

    // ----- expressions -----

    pub(crate) fn eval(&mut self, e: &Expr) -> R<Value> {
        Ok(match e {
            Expr::Num(n) => Value::Num(*n),
            Expr::Str(s) => Value::Str(s.clone()),
            Expr::Regex(i) => {
                let re = self.regexes[*i].clone();
                self.charge_search(&re, &self.record.text)?;
                bool_value(re.is_match(&self.record.text))
            }
            Expr::Lv(lv) => self.get(lv)?,
            Expr::Group(e) => self.eval(e)?,
            Expr::Assign(lv, op, rhs) => {
                let mut value = self.eval(rhs)?;
                if let Some(op) = op {
                    let current = self.get(lv)?.to_num();
                    value = Value::Num(arith(*op, current, value.to_num())?);
                }
                self.assign(lv, value.clone())?;
                value
            }
            Expr::Cond(c, yes, no) => {
                if self.cond(c)? {
                    self.eval(yes)?
                } else {
                    self.eval(no)?
                }
            }
            Expr::And(a, b) => bool_value(self.cond(a)? && self.cond(b)?),
            Expr::Or(a, b) => bool_value(self.cond(a)? || self.cond(b)?),
            Expr::Not(a) => bool_value(!self.cond(a)?),
            Expr::Neg(a) => Value::Num(-self.eval(a)?.to_num()),
            Expr::Plus(a) => Value::Num(self.eval(a)?.to_num()),
            Expr::Bin(op, a, b) => {
                let x = self.eval(a)?.to_num();
                let y = self.eval(b)?.to_num();
                Value::Num(arith(*op, x, y)?)
            }
            Expr::Cmp(op, a, b) => {
                let x = self.eval(a)?;
                let y = self.eval(b)?;
                bool_value(self.compare(*op, &x, &y))
            }
            Expr::Match(negate, a, re) => {
                let v = self.eval(a)?;
                let text = self.to_str(&v);
                let re = self.regex_of(re)?;
                self.charge_search(&re, &text)?;
                bool_value(re.is_match(&text) != *negate)
            }
            Expr::Concat(a, b) => {
                let x = self.eval(a)?;
                let y = self.eval(b)?;
                let convfmt = self.convfmt();
                let mut s = String::new();
                x.push_to(&mut s, &convfmt);
                y.push_to(&mut s, &convfmt);
                self.built(s.len())?;
                Value::Str(Rc::from(s))
            }
            Expr::In(subs, arr) => {
                let key = self.subscript(subs)?;
                bool_value(self.array(*arr)?.borrow().contains(&key))
            }
            Expr::IncDec(lv, pre, delta) => {
                let old = self.get(lv)?.to_num();
                self.assign(lv, Value::Num(old + delta))?;
                Value::Num(if *pre { old + delta } else { old })
            }
            Expr::Call(id, args) => self.call(*id, args)?,
            Expr::Builtin(b, args) => self.builtin(*b, args)?,
            Expr::Getline(source, var) => self.getline(source, var.as_deref())?,
        })
    }

    fn compare(&self, op: CmpOp, x: &Value, y: &Value) -> bool {
        use std::cmp::Ordering;
        let ord = match (x.numeric(), y.numeric()) {
            (Some(a), Some(b)) => a.partial_cmp(&b),
            _ => Some(self.to_str(x).cmp(&self.to_str(y))),
        };
        match ord {
            None => op == CmpOp::Ne,
            Some(ord) => match op {
                CmpOp::Lt => ord == Ordering::Less,
                CmpOp::Le => ord != Ordering::Greater,
                CmpOp::Gt => ord == Ordering::Greater,
                CmpOp::Ge => ord != Ordering::Less,
                CmpOp::Eq => ord == Ordering::Equal,
                CmpOp::Ne => ord != Ordering::Equal,
            },
        }
    }

    fn call(&mut self, id: usize, args: &[Expr]) -> R<Value> {
        let func = &self.prog.funcs[id];
        if args.len() > func.params {
            return fatal(format!(
                "function `{}' called with more arguments than declared",
                func.name
            ));
        }
        let mut cells = Vec::with_capacity(func.params);
        for arg in args {
            cells.push(self.argument(arg)?);
        }
        cells.resize(func.params, Cell::Val(Value::Uninit));
        self.ctx.budget.enter()?;
        let base = self.stack.len();
        self.stack.extend(cells);
        let saved = std::mem::replace(&mut self.frame, base);
        let result = self.exec_all(&func.body);
        self.frame = saved;
        self.stack.truncate(base);
        self.ctx.budget.leave();
        match result? {
            Flow::Return(v) => Ok(v),
            _ => Ok(Value::Uninit),
        }
    }

    /// A call argument: arrays (and untyped names) by reference, the rest by value.
    fn argument(&mut self, arg: &Expr) -> R<Cell> {
        if let Expr::Lv(LValue::Var(var)) = arg {
            if *var != Var::Global(p::NF) {
                let slot = self.slot(*var);
                return Ok(match self.cell(slot) {
                    Cell::Arr(a) => Cell::Arr(a.clone()),
                    Cell::Alias(target) => Cell::Alias(*target),
                    Cell::Val(Value::Uninit) => Cell::Alias(slot),
                    Cell::Val(v) => Cell::Val(v.clone()),
                });
            }
        }
        Ok(Cell::Val(self.eval(arg)?))
    }

    // ----- getline -----

    fn getline(&mut self, source: &GetSource, var: Option<&LValue>) -> R<Value> {
        let text = match source {
            GetSource::Main => {
                let Some((a, b)) = super::next_main_record(self)? else {
                    return Ok(Value::Num(0.0));
                };
                self.main.source.data[a..b].to_string()
            }
            GetSource::File(e) | GetSource::Cmd(e) => {
                let v = self.eval(e)?;
                let name = self.to_str(&v);
                let is_cmd = matches!(source, GetSource::Cmd(_));
                let sep = self.record_sep()?;
                match self.inputs.read(self.ctx, &name, is_cmd, &sep)? {
                    Some(Some(text)) => {
                        if is_cmd {
                            self.bump(p::NR);
                        }
                        text
                    }
                    Some(None) => return Ok(Value::Num(0.0)),
                    None => return Ok(Value::Num(-1.0)),
                }
            }
        };
        match var {
            Some(lv) => self.assign(lv, Value::StrNum(Rc::from(text)))?,
            None => self.set_record(&text),
        }
        Ok(Value::Num(1.0))
    }

    pub(crate) fn bump(&mut self, slot: usize) {
        let n = self.global(slot).to_num();
        self.globals[slot] = Cell::Val(Value::Num(n + 1.0));
    }

    // ----- built-in functions -----

    fn str_arg(&mut self, e: &Expr) -> R<Rc<str>> {
        let v = self.eval(e)?;
        Ok(self.to_str(&v))
    }

    fn num_arg(&mut self, e: &Expr) -> R<f64> {
        Ok(self.eval(e)?.to_num())
    }

    fn builtin(&mut self, b: Builtin, args: &[Expr]) -> R<Value> {
        use Builtin as B;
        let math = |f: fn(f64) -> f64, this: &mut Self| -> R<Value> {
            Ok(Value::Num(f(this.num_arg(&args[0])?)))
        };
        match b {
            B::Length => self.length(args),
            B::Substr => self.substr(args),
            B::Index => {
                let s = self.str_arg(&args[0])?;
                let t = self.str_arg(&args[1])?;
                let pos = s.find(&*t).map_or(0, |i| s[..i].chars().count() + 1);
                Ok(Value::Num(pos as f64))
            }
            B::Split => self.split(args),
            B::Sub | B::Gsub => self.substitute(args, b == B::Gsub),
            B::Match => self.match_fn(args),
            B::Sprintf => Ok(Value::Str(Rc::from(self.sprintf(args)?))),
            B::Tolower | B::Toupper => {
                let s = self.str_arg(&args[0])?;
                self.built(s.len())?;
                Ok(Value::Str(Rc::from(if b == B::Tolower {
                    s.to_lowercase()
                } else {
                    s.to_uppercase()
                })))
            }
            B::Int => math(f64::trunc, self),
            B::Sqrt => math(f64::sqrt, self),
            B::Exp => math(f64::exp, self),
            B::Log => math(f64::ln, self),
            B::Sin => math(f64::sin, self),
            B::Cos => math(f64::cos, self),
            B::Atan2 => {
                let y = self.num_arg(&args[0])?;
                let x = self.num_arg(&args[1])?;
                Ok(Value::Num(y.atan2(x)))
            }
            B::Rand => Ok(Value::Num(self.rand())),
            B::Srand => {
                let seed = match args.first() {
                    Some(e) => self.num_arg(e)?,
                    None => (self.ctx.clock.now_ms() / 1000) as f64,
                };
                let previous = std::mem::replace(&mut self.seed, seed);
                self.rand_state = (seed.to_bits() ^ 0x9e37_79b9_7f4a_7c15) | 1;
                Ok(Value::Num(previous))
            }
            B::System => {
                let cmd = self.str_arg(&args[0])?;
                self.outputs.flush_all(self.ctx)?;
                let status = super::io::run_shell(self.ctx, &cmd, &[], None)?;
                Ok(Value::Num(f64::from(status)))
            }
            B::Close => {
                let name = self.str_arg(&args[0])?;
                let closed_out = self.outputs.close(self.ctx, &name)?;
                let closed_in = self.inputs.close(&name);
                Ok(Value::Num(match closed_out.or(closed_in) {
                    Some(status) => f64::from(status),
                    None => -1.0,
                }))
            }
            B::Fflush => Ok(Value::Num(0.0)),
            B::Gensub => self.gensub(args),
            B::Asort | B::Asorti => self.asort(args, b == B::Asorti),
            B::Systime => Ok(Value::Num((self.ctx.clock.now_ms() / 1000) as f64)),
        }
    }

    fn rand(&mut self) -> f64 {
        // xorshift64*: deterministic per seed, as awk's rand is.
        let mut x = self.rand_state;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rand_state = x;
        (x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64
    }

    fn length(&mut self, args: &[Expr]) -> R<Value> {
        let Some(arg) = args.first() else {
            return Ok(Value::Num(self.record.text.chars().count() as f64));
        };
        if let Expr::Lv(LValue::Var(var)) = arg {
            let slot = self.slot(*var);
            let target = match self.cell(slot) {
                Cell::Alias(t) => *t,
                _ => slot,
            };
            if let Cell::Arr(a) = self.cell(target) {
                return Ok(Value::Num(a.borrow().len() as f64));
            }
        }
        let s = self.str_arg(arg)?;
        Ok(Value::Num(s.chars().count() as f64))
    }

    fn substr(&mut self, args: &[Expr]) -> R<Value> {
        let s = self.str_arg(&args[0])?;
        let start = round(self.num_arg(&args[1])?);
        let len = s.chars().count() as f64;
        let end = match args.get(2) {
            Some(e) => start + round(self.num_arg(e)?),
            None => len + 1.0,
        };
        let first = start.max(1.0);
        let last = end.min(len + 1.0);
        if first >= last || first.is_nan() || last.is_nan() {
            return Ok(Value::str(""));
        }
        let text: String = s
            .chars()
            .skip(first as usize - 1)
            .take((last - first) as usize)
            .collect();
        Ok(Value::Str(Rc::from(text)))
    }

    fn split(&mut self, args: &[Expr]) -> R<Value> {
        let s = self.str_arg(&args[0])?;
        let sep = match args.get(2) {
            Some(Expr::Regex(i)) => Rc::new(FieldSep::Regex((*self.regexes[*i]).clone())),
            Some(e) => {
                let v = self.eval(e)?;
                self.field_sep(&v)?
            }
            None => {
                let fs = self.global(p::FS);
                self.field_sep(&fs)?
            }
        };
        let Expr::Lv(LValue::Var(arr)) = &args[1] else {
            return fatal("split: second argument is not an array");
        };
        let mut ranges = Vec::new();
        sep.split(&s, false, &mut ranges);
        let elements = ranges.len() as u64 * (ELEMENT_BYTES + 8);
        self.built(
            s.len()
                .saturating_add(usize::try_from(elements).unwrap_or(usize::MAX)),
        )?;
        let array = self.array(*arr)?;
        let mut array = array.borrow_mut();
        array.clear();
        for (i, &(a, b)) in ranges.iter().enumerate() {
            array.set(index_key(i + 1), Value::StrNum(Rc::from(&s[a..b])));
        }
        drop(array);
        if let Some(Expr::Lv(LValue::Var(seps))) = args.get(3) {
            let seps = self.array(*seps)?;
            let mut seps = seps.borrow_mut();
            seps.clear();
            for (i, pair) in ranges.windows(2).enumerate() {
                seps.set(index_key(i + 1), Value::str(&s[pair[0].1..pair[1].0]));
            }
        }
        Ok(Value::Num(ranges.len() as f64))
    }

    fn substitute(&mut self, args: &[Expr], global: bool) -> R<Value> {
        let re = self.regex_of(&args[0])?;
        let repl = self.str_arg(&args[1])?;
        let target = match args.get(2) {
            Some(Expr::Lv(lv)) => lv.clone(),
            Some(_) => return fatal("sub/gsub: third argument is not a variable"),
            None => LValue::Field(Box::new(Expr::Num(0.0))),
        };
        let current = self.get(&target)?;
        let text = self.to_str(&current);
        let mut out = String::new();
        let mut last = 0;
        let mut count = 0;
        let room = self.room();
        self.charge_search(&re, &text)?;
        for m in re.find_iter(&text) {
            out.push_str(&text[last..m.start()]);
            expand_replacement(&repl, m.as_str(), &mut out);
            last = m.end();
            count += 1;
            if out.len() > room {
                return Err(Stop::Abort(Abort::Limit(LimitKind::Memory)));
            }
            if !global {
                break;
            }
        }
        if count > 0 {
            out.push_str(&text[last..]);
            self.built(out.len())?;
            self.assign(&target, Value::Str(Rc::from(out)))?;
        }
        Ok(Value::Num(count as f64))
    }

    fn gensub(&mut self, args: &[Expr]) -> R<Value> {
        let re = self.regex_of(&args[0])?;
        let repl = self.str_arg(&args[1])?;
        let how = self.eval(&args[2])?;
        let text = match args.get(3) {
            Some(e) => self.str_arg(e)?,
            None => Rc::from(self.record.text.as_str()),
        };
        let how_text = self.to_str(&how);
        let global = how_text.starts_with(['g', 'G']);
        let nth = if global {
            0
        } else {
            (how.to_num() as usize).max(1)
        };
        let mut out = String::new();
        let mut last = 0;
        let room = self.room();
        self.charge_search(&re, &text)?;
        for (i, caps) in re.captures_iter(&text).enumerate() {
            let m = caps.get(0).expect("group 0 always matches");
            if global || i + 1 == nth {
                out.push_str(&text[last..m.start()]);
                expand_gensub(&repl, &caps, &mut out);
                last = m.end();
                if out.len() > room {
                    return Err(Stop::Abort(Abort::Limit(LimitKind::Memory)));
                }
                if !global {
                    break;
                }
            }
        }
        out.push_str(&text[last..]);
        self.built(out.len())?;
        Ok(Value::Str(Rc::from(out)))
    }

    /// `asort` (values) and `asorti` (indices): numbers before strings.
    fn asort(&mut self, args: &[Expr], indices: bool) -> R<Value> {
        let Expr::Lv(LValue::Var(src)) = &args[0] else {
            return fatal("asort: first argument is not an array");
        };
        let source = self.array(*src)?;
        let mut items: Vec<Value> = {
            let source = source.borrow();
            source
                .keys()
                .into_iter()
                .map(|k| {
                    if indices {
                        Value::StrNum(k)
                    } else {
                        source.get(&k).cloned().unwrap_or_default()
                    }
                })
                .collect()
        };
        let convfmt = self.convfmt();
        items.sort_by(|a, b| sort_order(a, b, &convfmt));
        let dest = match args.get(1) {
            Some(Expr::Lv(LValue::Var(dest))) => self.array(*dest)?,
            Some(_) => return fatal("asort: second argument is not an array"),
            None => source,
        };
        let mut dest = dest.borrow_mut();
        dest.clear();
        let count = items.len();
        for (i, item) in items.into_iter().enumerate() {
            dest.set(index_key(i + 1), item);
        }
        Ok(Value::Num(count as f64))
    }

    fn match_fn(&mut self, args: &[Expr]) -> R<Value> {
        let s = self.str_arg(&args[0])?;
        let re = self.regex_of(&args[1])?;
        self.charge_search(&re, &s)?;
        let chars = |byte: usize| s[..byte].chars().count();
        let (start, length) = match re.captures(&s) {
            Some(caps) => {
                let m = caps.get(0).expect("group 0 always matches");
                if let Some(Expr::Lv(LValue::Var(arr))) = args.get(2) {
                    let array = self.array(*arr)?;
                    let mut array = array.borrow_mut();
                    array.clear();
                    for (i, group) in caps.iter().enumerate() {
                        if let Some(g) = group {
                            array.set(index_key(i), Value::StrNum(Rc::from(g.as_str())));
                        }
                    }
                }
                (chars(m.start()) + 1, m.as_str().chars().count() as f64)
            }
            None => (0, -1.0),
        };
        self.globals[p::RSTART] = Cell::Val(Value::Num(start as f64));
        self.globals[p::RLENGTH] = Cell::Val(Value::Num(length));
        Ok(Value::Num(start as f64))
    }
}

/// gawk's `gensub` replacement: `&` and `\0` the match, `\N` group N.
fn expand_gensub(repl: &str, caps: &regex::Captures<'_>, out: &mut String) {
    let mut chars = repl.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(d) if d.is_ascii_digit() => {
                    let group = d.to_digit(10).unwrap_or(0) as usize;
                    out.push_str(caps.get(group).map_or("", |m| m.as_str()));
                }
                Some(d) => out.push(d),
                None => out.push('\\'),
            },
            '&' => out.push_str(&caps[0]),
            _ => out.push(c),
        }
    }
}

/// `&` is the match, `\&` a literal ampersand, `\\` a backslash.
fn expand_replacement(repl: &str, matched: &str, out: &mut String) {
    let mut chars = repl.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if matches!(chars.peek(), Some('&' | '\\')) => {
                out.push(chars.next().unwrap_or('\\'));
            }
            '&' => out.push_str(matched),
            _ => out.push(c),
        }
    }
}

/// gawk's default sort order: numbers (ascending) before strings.
fn sort_order(a: &Value, b: &Value, convfmt: &str) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    let number = |v: &Value| match v {
        Value::Num(n) => Some(*n),
        Value::StrNum(_) | Value::Uninit => v.numeric(),
        Value::Str(_) => None,
    };
    match (number(a), number(b)) {
        (Some(x), Some(y)) => x.partial_cmp(&y).unwrap_or(Ordering::Equal),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => a.to_str(convfmt).cmp(&b.to_str(convfmt)),
    }
}

fn index_key(i: usize) -> Rc<str> {
    Rc::from(i.to_string())
}

fn round(n: f64) -> f64 {
    // awk rounds substr positions to the nearest integer, halves to even.
    let r = n.round();
    if (n - n.trunc()).abs() == 0.5 && r % 2.0 != 0.0 {
        r - n.signum()
    } else {
        r
    }
}

fn bool_value(b: bool) -> Value {
    Value::Num(if b { 1.0 } else { 0.0 })
}

fn arith(op: BinOp, x: f64, y: f64) -> R<f64> {
    Ok(match op {
        BinOp::Add => x + y,
        BinOp::Sub => x - y,
        BinOp::Mul => x * y,
        BinOp::Div => {
            if y == 0.0 {
                return fatal("division by zero attempted");
            }
            x / y
        }
        BinOp::Mod => {
            if y == 0.0 {
                return fatal("division by zero attempted in `%'");
            }
            x % y
        }
        BinOp::Pow => x.powf(y),
    })
}

/// A value handed to the formatter, with the CONVFMT for its string form.
struct FmtArg<'v>(&'v Value, &'v str);

impl Arg for FmtArg<'_> {
    fn num(&self) -> f64 {
        self.0.to_num()
    }
    fn text(&self) -> String {
        self.0.to_str(self.1).to_string()
    }
    fn is_num(&self) -> bool {
        match self.0 {
            Value::Num(_) => true,
            Value::StrNum(_) => self.0.numeric().is_some(),
            _ => false,
        }
    }
}
