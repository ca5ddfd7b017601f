//! Tokens of the awk language.
//!
//! The program is tokenized up front. Whether `/` starts a regex or divides
//! depends on the previous token (after an operand it divides), which is
//! the classic awk rule; newlines are kept as tokens because they end
//! statements, and the parser skips them where the grammar allows.

/// The built-in functions, which are keywords in awk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Builtin {
    Length,
    Substr,
    Index,
    Split,
    Sub,
    Gsub,
    Match,
    Sprintf,
    Tolower,
    Toupper,
    Int,
    Sqrt,
    Exp,
    Log,
    Sin,
    Cos,
    Atan2,
    Rand,
    Srand,
    System,
    Close,
    Fflush,
    Gensub,
    Asort,
    Asorti,
    Systime,
}

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Tok {
    Num(f64),
    Str(String),
    Regex(String),
    Name(String),
    /// A name directly followed by `(`: a user function call.
    FuncName(String),
    Builtin(Builtin),
    Begin,
    End,
    Function,
    If,
    Else,
    While,
    For,
    Do,
    Break,
    Continue,
    Next,
    Nextfile,
    Exit,
    Return,
    Delete,
    In,
    Getline,
    Print,
    Printf,
    LBrace,
    RBrace,
    LParen,
    RParen,
    LBracket,
    RBracket,
    Semi,
    Newline,
    Comma,
    Plus,
    Minus,
    Star,
    Slash,
    Percent,
    Caret,
    Not,
    Gt,
    Lt,
    Ge,
    Le,
    Eq,
    Ne,
    Match,
    NoMatch,
    And,
    Or,
    Question,
    Colon,
    Assign,
    AddAssign,
    SubAssign,
    MulAssign,
    DivAssign,
    ModAssign,
    PowAssign,
    Incr,
    Decr,
    Dollar,
    Pipe,
    Append,
    Eof,
}

fn keyword(word: &str) -> Option<Tok> {
    use Builtin as B;
    Some(match word {
        "BEGIN" => Tok::Begin,
        "END" => Tok::End,
        "function" | "func" => Tok::Function,
        "if" => Tok::If,
        "else" => Tok::Else,
        "while" => Tok::While,
        "for" => Tok::For,
        "do" => Tok::Do,
        "break" => Tok::Break,
        "continue" => Tok::Continue,
        "next" => Tok::Next,
        "nextfile" => Tok::Nextfile,
        "exit" => Tok::Exit,
        "return" => Tok::Return,
        "delete" => Tok::Delete,
        "in" => Tok::In,
        "getline" => Tok::Getline,
        "print" => Tok::Print,
        "printf" => Tok::Printf,
        "length" => Tok::Builtin(B::Length),
        "substr" => Tok::Builtin(B::Substr),
        "index" => Tok::Builtin(B::Index),
        "split" => Tok::Builtin(B::Split),
        "sub" => Tok::Builtin(B::Sub),
        "gsub" => Tok::Builtin(B::Gsub),
        "match" => Tok::Builtin(B::Match),
        "sprintf" => Tok::Builtin(B::Sprintf),
        "tolower" => Tok::Builtin(B::Tolower),
        "toupper" => Tok::Builtin(B::Toupper),
        "int" => Tok::Builtin(B::Int),
        "sqrt" => Tok::Builtin(B::Sqrt),
        "exp" => Tok::Builtin(B::Exp),
        "log" => Tok::Builtin(B::Log),
        "sin" => Tok::Builtin(B::Sin),
        "cos" => Tok::Builtin(B::Cos),
        "atan2" => Tok::Builtin(B::Atan2),
        "rand" => Tok::Builtin(B::Rand),
        "srand" => Tok::Builtin(B::Srand),
        "system" => Tok::Builtin(B::System),
        "close" => Tok::Builtin(B::Close),
        "fflush" => Tok::Builtin(B::Fflush),
        "gensub" => Tok::Builtin(B::Gensub),
        "asort" => Tok::Builtin(B::Asort),
        "asorti" => Tok::Builtin(B::Asorti),
        "systime" => Tok::Builtin(B::Systime),
        _ => return None,
    })
}

/// Whether a `/` after `prev` divides (true) or opens a regex (false).
fn ends_operand(prev: Option<&Tok>) -> bool {
    matches!(
        prev,
        Some(
            Tok::Num(_)
                | Tok::Str(_)
                | Tok::Name(_)
                | Tok::Builtin(_)
                | Tok::RParen
                | Tok::RBracket
                | Tok::Incr
                | Tok::Decr
        )
    )
}

struct Lexer<'a> {
    chars: Vec<char>,
    pos: usize,
    out: Vec<Tok>,
    _src: &'a str,
}

/// Tokenizes a whole program.
pub(super) fn tokenize(src: &str) -> Result<Vec<Tok>, String> {
    let mut lexer = Lexer {
        chars: src.chars().collect(),
        pos: 0,
        out: Vec::new(),
        _src: src,
    };
    while let Some(tok) = lexer.next_token()? {
        lexer.out.push(tok);
    }
    lexer.out.push(Tok::Newline);
    lexer.out.push(Tok::Eof);
    Ok(lexer.out)
}

impl Lexer<'_> {
    fn peek(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.pos + ahead).copied()
    }

    fn skip_blanks(&mut self) {
        while let Some(c) = self.peek(0) {
            match c {
                ' ' | '\t' | '\r' => self.pos += 1,
                '\\' if self.peek(1) == Some('\n') => self.pos += 2,
                '\\' if self.peek(1) == Some('\r') && self.peek(2) == Some('\n') => self.pos += 3,
                '#' => {
                    while self.peek(0).is_some_and(|c| c != '\n') {
                        self.pos += 1;
                    }
                }
                _ => break,
            }
        }
    }

    fn next_token(&mut self) -> Result<Option<Tok>, String> {
        self.skip_blanks();
        let Some(c) = self.peek(0) else {
            return Ok(None);
        };
        if c.is_ascii_digit() || (c == '.' && self.peek(1).is_some_and(|d| d.is_ascii_digit())) {
            return Ok(Some(self.number()));
        }
        if c.is_alphabetic() || c == '_' {
            return Ok(Some(self.word()));
        }
        self.pos += 1;
        let tok = match c {
            '\n' => Tok::Newline,
            '"' => Tok::Str(self.string()?),
            '/' if !ends_operand(self.out.last()) => Tok::Regex(self.regex()?),
            '{' => Tok::LBrace,
            '}' => Tok::RBrace,
            '(' => Tok::LParen,
            ')' => Tok::RParen,
            '[' => Tok::LBracket,
            ']' => Tok::RBracket,
            ';' => Tok::Semi,
            ',' => Tok::Comma,
            '?' => Tok::Question,
            ':' => Tok::Colon,
            '$' => Tok::Dollar,
            '~' => Tok::Match,
            _ => return self.operator(c).map(Some),
        };
        Ok(Some(tok))
    }

    fn eat(&mut self, c: char) -> bool {
        if self.peek(0) == Some(c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn operator(&mut self, c: char) -> Result<Tok, String> {
        let tok = match c {
            '+' if self.eat('+') => Tok::Incr,
            '+' if self.eat('=') => Tok::AddAssign,
            '+' => Tok::Plus,
            '-' if self.eat('-') => Tok::Decr,
            '-' if self.eat('=') => Tok::SubAssign,
            '-' => Tok::Minus,
            '*' if self.peek(0) == Some('*') && self.peek(1) == Some('=') => {
                self.pos += 2;
                Tok::PowAssign
            }
            '*' if self.eat('*') => Tok::Caret,
            '*' if self.eat('=') => Tok::MulAssign,
            '*' => Tok::Star,
            '/' if self.eat('=') => Tok::DivAssign,
            '/' => Tok::Slash,
            '%' if self.eat('=') => Tok::ModAssign,
            '%' => Tok::Percent,
            '^' if self.eat('=') => Tok::PowAssign,
            '^' => Tok::Caret,
            '!' if self.eat('=') => Tok::Ne,
            '!' if self.eat('~') => Tok::NoMatch,
            '!' => Tok::Not,
            '>' if self.eat('=') => Tok::Ge,
            '>' if self.eat('>') => Tok::Append,
            '>' => Tok::Gt,
            '<' if self.eat('=') => Tok::Le,
            '<' => Tok::Lt,
            '=' if self.eat('=') => Tok::Eq,
            '=' => Tok::Assign,
            '&' if self.eat('&') => Tok::And,
            '|' if self.eat('|') => Tok::Or,
            '|' => Tok::Pipe,
            _ => {
                return Err(format!(
                    "syntax error at source line: unexpected character '{c}'"
                ))
            }
        };
        Ok(tok)
    }

    fn number(&mut self) -> Tok {
        let start = self.pos;
        if self.peek(0) == Some('0') && matches!(self.peek(1), Some('x' | 'X')) {
            let digits: String = self.chars[start + 2..]
                .iter()
                .take_while(|c| c.is_ascii_hexdigit())
                .collect();
            if !digits.is_empty() {
                self.pos += 2 + digits.len();
                return Tok::Num(i64::from_str_radix(&digits, 16).unwrap_or(0) as f64);
            }
        }
        while self.peek(0).is_some_and(|c| c.is_ascii_digit()) {
            self.pos += 1;
        }
        if self.peek(0) == Some('.') {
            self.pos += 1;
            while self.peek(0).is_some_and(|c| c.is_ascii_digit()) {
                self.pos += 1;
            }
        }
        if matches!(self.peek(0), Some('e' | 'E')) {
            let sign = usize::from(matches!(self.peek(1), Some('+' | '-')));
            if self.peek(1 + sign).is_some_and(|c| c.is_ascii_digit()) {
                self.pos += 1 + sign;
                while self.peek(0).is_some_and(|c| c.is_ascii_digit()) {
                    self.pos += 1;
                }
            }
        }
        let text: String = self.chars[start..self.pos].iter().collect();
        Tok::Num(text.parse().unwrap_or(0.0))
    }

    fn word(&mut self) -> Tok {
        let start = self.pos;
        while self
            .peek(0)
            .is_some_and(|c| c.is_alphanumeric() || c == '_')
        {
            self.pos += 1;
        }
        let word: String = self.chars[start..self.pos].iter().collect();
        if let Some(tok) = keyword(&word) {
            return tok;
        }
        if self.peek(0) == Some('(') {
            Tok::FuncName(word)
        } else {
            Tok::Name(word)
        }
    }

    fn string(&mut self) -> Result<String, String> {
        let mut text = String::new();
        loop {
            let Some(c) = self.peek(0) else {
                return Err("non-terminated string".into());
            };
            self.pos += 1;
            match c {
                '"' => return Ok(text),
                '\n' => return Err("non-terminated string".into()),
                '\\' => self.escape(&mut text),
                _ => text.push(c),
            }
        }
    }

    /// One escape sequence after a backslash in a string literal.
    fn escape(&mut self, text: &mut String) {
        let Some(c) = self.peek(0) else {
            text.push('\\');
            return;
        };
        self.pos += 1;
        match c {
            'n' => text.push('\n'),
            't' => text.push('\t'),
            'r' => text.push('\r'),
            'a' => text.push('\x07'),
            'b' => text.push('\x08'),
            'f' => text.push('\x0c'),
            'v' => text.push('\x0b'),
            '\n' => {}
            '0'..='7' => {
                let mut value = c.to_digit(8).unwrap_or(0);
                for _ in 0..2 {
                    match self.peek(0).and_then(|d| d.to_digit(8)) {
                        Some(d) => {
                            value = value * 8 + d;
                            self.pos += 1;
                        }
                        None => break,
                    }
                }
                text.push(char::from_u32(value).unwrap_or('\u{fffd}'));
            }
            '"' | '/' | '\\' => text.push(c),
            // Kept with its backslash so dynamic regexes like "\." still work.
            _ => {
                text.push('\\');
                text.push(c);
            }
        }
    }

    fn regex(&mut self) -> Result<String, String> {
        let mut text = String::new();
        let mut in_bracket = false;
        loop {
            let Some(c) = self.peek(0) else {
                return Err("non-terminated regular expression".into());
            };
            self.pos += 1;
            match c {
                '\n' => return Err("newline in regex".into()),
                '\\' if self.peek(0) == Some('/') => {
                    self.pos += 1;
                    text.push('/');
                }
                '\\' => {
                    text.push('\\');
                    if let Some(next) = self.peek(0) {
                        text.push(next);
                        self.pos += 1;
                    }
                }
                '[' if !in_bracket => {
                    in_bracket = true;
                    text.push('[');
                    if self.peek(0) == Some('^') {
                        text.push('^');
                        self.pos += 1;
                    }
                    if self.peek(0) == Some(']') {
                        text.push(']');
                        self.pos += 1;
                    }
                }
                '[' if self.peek(0) == Some(':') => {
                    text.push_str("[:");
                    self.pos += 1;
                    while let Some(d) = self.peek(0) {
                        self.pos += 1;
                        text.push(d);
                        if d == ']' {
                            break;
                        }
                    }
                }
                ']' if in_bracket => {
                    in_bracket = false;
                    text.push(']');
                }
                '/' if !in_bracket => return Ok(text),
                _ => text.push(c),
            }
        }
    }
}
