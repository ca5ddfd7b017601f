//! Prints a function as bash does (`declare -f`, `type`): bash's layout
//! (`name () `, braces on their own lines, four spaces per level, `;`
//! after every command of a list but the last, `elif` as a nested `if`),
//! with simple commands, words and redirections as the script wrote them.
//! The result reads back as the same function (`eval "$(declare -f f)"`).

use super::ast::*;

const INDENT: &str = "    ";

/// `name () \n{ \n    body\n}` and the function's redirections.
pub(super) fn function(f: &Function) -> String {
    let mut p = Printer::default();
    p.function(f, 0, false);
    p.out.push('\n');
    p.out
}

#[derive(Default)]
struct Printer {
    out: String,
}

impl Printer {
    fn indent(&mut self, level: usize) {
        for _ in 0..level {
            self.out.push_str(INDENT);
        }
    }

    fn newline(&mut self, level: usize) {
        self.out.push('\n');
        self.indent(level);
    }

    /// A function definition; a nested one gets the `function` keyword.
    fn function(&mut self, f: &Function, level: usize, nested: bool) {
        if nested {
            self.out.push_str("function ");
        }
        self.out.push_str(&f.name);
        self.out.push_str(" () ");
        self.newline(level);
        let (body, redirs): (&Compound, &[Redir]) = match &f.body {
            Command::Compound(c, r) => (c, r),
            _ => return,
        };
        match body {
            Compound::Group(p) => self.group(p, level),
            other => {
                // bash shows any other body inside braces.
                self.out.push_str("{ ");
                self.newline(level + 1);
                self.compound(other, level + 1);
                self.newline(level);
                self.out.push('}');
            }
        }
        self.redirs(redirs);
    }

    fn group(&mut self, p: &Program, level: usize) {
        self.out.push_str("{ ");
        self.newline(level + 1);
        self.list(p, level + 1, false);
        self.newline(level);
        self.out.push('}');
    }

    /// Commands of a list, one a line (or, `inline`, separated by `; `).
    fn list(&mut self, p: &Program, level: usize, inline: bool) {
        for (i, item) in p.iter().enumerate() {
            let heredoc = self.item(item, level);
            if i + 1 == p.len() {
                break;
            }
            if item.background {
                self.out.push(' ');
            } else if heredoc {
                // The here-document's lines ended the line already.
                self.indent(level);
            } else if inline {
                self.out.push_str("; ");
            } else {
                self.out.push(';');
                self.newline(level);
            }
        }
    }

    /// One and-or list; true when it ended with a here-document's lines.
    fn item(&mut self, item: &Item, level: usize) -> bool {
        let mut heredocs = Vec::new();
        self.pipeline(&item.first, level, &mut heredocs);
        for (and, pipe) in &item.rest {
            self.out.push_str(if *and { " && " } else { " || " });
            self.pipeline(pipe, level, &mut heredocs);
        }
        if item.background {
            self.out.push_str(" &");
        }
        if heredocs.is_empty() {
            return false;
        }
        for lines in heredocs {
            self.out.push('\n');
            self.out.push_str(&lines);
        }
        true
    }

    fn pipeline(&mut self, pipe: &Pipeline, level: usize, heredocs: &mut Vec<String>) {
        if pipe.negate {
            self.out.push_str("! ");
        }
        for (i, cmd) in pipe.cmds.iter().enumerate() {
            if i > 0 {
                self.out.push_str(" | ");
            }
            self.command(cmd, level, heredocs);
        }
    }

    fn command(&mut self, cmd: &Command, level: usize, heredocs: &mut Vec<String>) {
        match cmd {
            Command::Simple(s) => {
                // The text holds a here-document's operator only; its lines
                // follow the command's line.
                self.out.push_str(&s.text);
                for r in &s.redirs {
                    if let Some((_, lines)) = r.text.split_once('\n') {
                        heredocs.push(lines.to_string());
                    }
                }
            }
            Command::Compound(c, redirs) => {
                self.compound(c, level);
                self.redirs(redirs);
            }
            Command::Function(f) => self.function(f, level, true),
        }
    }

    fn redirs(&mut self, redirs: &[Redir]) {
        for r in redirs {
            self.out.push(' ');
            self.out.push_str(&r.text);
        }
    }

    fn compound(&mut self, c: &Compound, level: usize) {
        match c {
            Compound::Group(p) => self.group(p, level),
            Compound::Subshell(p) => {
                self.out.push_str("( ");
                self.list(p, level, false);
                self.out.push_str(" )");
            }
            Compound::If {
                branches,
                otherwise,
            } => self.if_chain(branches, otherwise.as_ref(), level),
            Compound::While { until, cond, body } => {
                self.out.push_str(if *until { "until " } else { "while " });
                self.list(cond, level, true);
                self.out.push_str("; do");
                self.body(body, level);
                self.out.push_str("done");
            }
            Compound::For { head, body, .. } => self.for_loop("for", head, body, level),
            Compound::Select { head, body, .. } => self.for_loop("select", head, body, level),
            Compound::ArithFor { head, body, .. } => {
                self.out
                    .push_str(&format!("for (({}; {}; {}))", head[0], head[1], head[2]));
                self.newline(level);
                self.out.push_str("do");
                self.body(body, level);
                self.out.push_str("done");
            }
            Compound::Case { head, arms, .. } => {
                self.out.push_str(&format!("case {head} in "));
                for arm in arms {
                    self.newline(level + 1);
                    self.out.push_str(&arm.pattern_text.join(" | "));
                    self.out.push(')');
                    if arm.body.is_empty() {
                        self.out.push('\n');
                    } else {
                        self.newline(level + 2);
                        self.list(&arm.body, level + 2, false);
                    }
                    self.newline(level + 1);
                    self.out.push_str(match arm.term {
                        CaseTerm::Break => ";;",
                        CaseTerm::FallThrough => ";&",
                        CaseTerm::Continue => ";;&",
                    });
                }
                self.newline(level);
                self.out.push_str("esac");
            }
            Compound::Arith(a) => {
                let text = match a {
                    Arith::Static(_, text) => text.trim().to_string(),
                    Arith::Dynamic(_) => String::new(),
                };
                self.out.push_str(&format!("(( {text} ))"));
            }
            Compound::Cond(_, text) => self.out.push_str(&format!("[[ {text} ]]")),
        }
    }

    /// `\n    body;\n` up to the closing keyword's indentation.
    fn body(&mut self, body: &Program, level: usize) {
        self.newline(level + 1);
        self.list(body, level + 1, false);
        self.out.push(';');
        self.newline(level);
    }

    fn for_loop(&mut self, keyword: &str, head: &str, body: &Program, level: usize) {
        self.out.push_str(&format!("{keyword} {head};"));
        self.newline(level);
        self.out.push_str("do");
        self.body(body, level);
        self.out.push_str("done");
    }

    /// `if`, with each `elif` printed as an `if` inside `else`, as bash does.
    fn if_chain(
        &mut self,
        branches: &[(Program, Program)],
        otherwise: Option<&Program>,
        level: usize,
    ) {
        let Some(((cond, then), rest)) = branches.split_first() else {
            return;
        };
        self.out.push_str("if ");
        self.list(cond, level, true);
        self.out.push_str("; then");
        self.body(then, level);
        if !rest.is_empty() {
            self.out.push_str("else");
            self.newline(level + 1);
            self.if_chain(rest, otherwise, level + 1);
            self.out.push(';');
            self.newline(level);
        } else if let Some(o) = otherwise {
            self.out.push_str("else");
            self.body(o, level);
        }
        self.out.push_str("fi");
    }
}
