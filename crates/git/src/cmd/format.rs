//! `git log --format`: the placeholders agents use (`%H %h %T %t %P %p`,
//! `%an %ae %ad %at`, `%cn %ce %cd %ct`, `%s %b %B`, `%n %%`), with git's
//! `format:` (a separator between commits) and `tformat:` (a terminator
//! after each, what `--format=` means) and the named `oneline`. A format
//! with any other placeholder is not parsed, so the command goes to the
//! computer's git.

use gix_hash::ObjectId;

use crate::objects::{Commit, Signature};

/// One piece of a format.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Text(String),
    Hash { short: bool },
    Tree { short: bool },
    Parents { short: bool },
    Name { committer: bool },
    Email { committer: bool },
    Date { committer: bool },
    Stamp { committer: bool },
    Subject,
    Body,
    Raw,
}

/// A parsed `--format`/`--pretty`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Format {
    pieces: Vec<Piece>,
    /// `format:`: newlines between commits rather than after each.
    separator: bool,
}

impl Format {
    pub(crate) fn parse(spec: &str) -> Option<Format> {
        let (separator, text) = if let Some(t) = spec.strip_prefix("format:") {
            (true, t)
        } else if let Some(t) = spec.strip_prefix("tformat:") {
            (false, t)
        } else if spec == "oneline" {
            // `--pretty=oneline`: the full id and the subject.
            return Some(Format {
                pieces: vec![
                    Piece::Hash { short: false },
                    Piece::Text(" ".into()),
                    Piece::Subject,
                ],
                separator: false,
            });
        } else if spec.contains('%') {
            (false, spec)
        } else {
            return None;
        };
        let mut pieces = Vec::new();
        let mut literal = String::new();
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            if c != '%' {
                literal.push(c);
                continue;
            }
            let piece = match chars.next()? {
                '%' => {
                    literal.push('%');
                    continue;
                }
                'n' => {
                    literal.push('\n');
                    continue;
                }
                'H' => Piece::Hash { short: false },
                'h' => Piece::Hash { short: true },
                'T' => Piece::Tree { short: false },
                't' => Piece::Tree { short: true },
                'P' => Piece::Parents { short: false },
                'p' => Piece::Parents { short: true },
                's' => Piece::Subject,
                'b' => Piece::Body,
                'B' => Piece::Raw,
                who @ ('a' | 'c') => {
                    let committer = who == 'c';
                    match chars.next()? {
                        'n' => Piece::Name { committer },
                        'e' => Piece::Email { committer },
                        'd' => Piece::Date { committer },
                        't' => Piece::Stamp { committer },
                        _ => return None,
                    }
                }
                _ => return None,
            };
            if !literal.is_empty() {
                pieces.push(Piece::Text(std::mem::take(&mut literal)));
            }
            pieces.push(piece);
        }
        if !literal.is_empty() {
            pieces.push(Piece::Text(literal));
        }
        Some(Format { pieces, separator })
    }

    /// Whether commits are separated (`format:`) rather than terminated.
    pub(crate) fn separates(&self) -> bool {
        self.separator
    }

    pub(crate) fn render(
        &self,
        id: &ObjectId,
        commit: &Commit,
        abbrev: &dyn Fn(&ObjectId) -> String,
        date: &dyn Fn(&Signature) -> String,
    ) -> String {
        let mut out = String::new();
        let who = |committer: bool| {
            if committer {
                &commit.committer
            } else {
                &commit.author
            }
        };
        for piece in &self.pieces {
            match piece {
                Piece::Text(t) => out.push_str(t),
                Piece::Hash { short: false } => out.push_str(&id.to_string()),
                Piece::Hash { short: true } => out.push_str(&abbrev(id)),
                Piece::Tree { short: false } => out.push_str(&commit.tree.to_string()),
                Piece::Tree { short: true } => out.push_str(&abbrev(&commit.tree)),
                Piece::Parents { short } => {
                    let parents: Vec<String> = commit
                        .parents
                        .iter()
                        .map(|p| if *short { abbrev(p) } else { p.to_string() })
                        .collect();
                    out.push_str(&parents.join(" "));
                }
                Piece::Name { committer } => out.push_str(&who(*committer).name),
                Piece::Email { committer } => out.push_str(&who(*committer).email),
                Piece::Date { committer } => out.push_str(&date(who(*committer))),
                Piece::Stamp { committer } => out.push_str(&who(*committer).seconds.to_string()),
                Piece::Subject => out.push_str(&commit.subject()),
                Piece::Body => {
                    let message = commit.message.trim_start_matches('\n');
                    if let Some((_, body)) = message.split_once("\n\n") {
                        out.push_str(body.trim_start_matches('\n'));
                    }
                }
                Piece::Raw => out.push_str(&commit.message),
            }
        }
        out
    }
}
