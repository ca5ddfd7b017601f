//! Finding an edit's `old` text when the file does not hold it exactly.
//!
//! Why: models re-type the text they mean to replace, and get the same
//! things wrong every time (see `stead_patch::rules`). Failing those edits
//! costs a round trip and often a second wrong guess; applying the wrong
//! match would be worse. So the rules are tried strictest first, each one
//! cumulative (line endings, then NFC, then trailing whitespace, then
//! indentation, then typographic punctuation), and the first rule that finds
//! the text decides: exactly one match is applied, more than one is an
//! error naming the count.
//!
//! How: the file and `old` are normalised character by character, every
//! normalised character remembering the bytes of the file it came from, so
//! a match in the normalised text maps back to an exact byte range of the
//! file. That range is what gets replaced, and it is reported back.
//!
//! When indentation was forgiven, `new` is re-indented the way the file
//! differs from `old` (one consistent prefix swap, e.g. four more spaces,
//! or two spaces for a tab); if the lines do not differ consistently there
//! is no safe way to indent `new`, and the rule does not match. When line
//! endings were forgiven, `new` gets the file's line endings.

use stead_patch::rules::{fold_typography, nfc};
use stead_patch::MatchRule;

use super::lf_to_crlf;

/// What the fuzzy search found for one edit.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Search {
    Found(Found),
    /// The first rule that matched at all matched `count` places.
    Ambiguous {
        count: usize,
        rule: MatchRule,
    },
    NotFound,
}

/// One fuzzy match: the file's bytes `start..end`, to be replaced by `new`.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Found {
    pub start: usize,
    pub end: usize,
    pub rule: MatchRule,
    /// The edit's `new`, re-indented and with the file's line endings.
    pub new: String,
}

/// Largest file searched fuzzily, in bytes. The normalised copy costs about
/// twelve bytes per character, and a Worker has 128 MB: past this only the
/// exact text is looked for.
pub(super) const MAX_FUZZY_BYTES: usize = 4 << 20;

/// Searches `text` for `old` under each rule in turn. `crlf` says whether
/// the file uses CRLF line endings.
pub(super) fn search(text: &str, old: &str, new: &str, crlf: bool) -> Search {
    if text.len() > MAX_FUZZY_BYTES {
        return Search::NotFound;
    }
    for rule in MatchRule::TEXT_FALLBACKS {
        let haystack = Normalized::of(text, rule);
        let needle = Normalized::of(old, rule).text;
        if needle.is_empty() {
            continue;
        }
        let mut matches = haystack.text.match_indices(&needle).map(|(at, _)| at);
        let Some(at) = matches.next() else {
            continue;
        };
        let others = matches.count();
        if others > 0 {
            return Search::Ambiguous {
                count: others + 1,
                rule,
            };
        }
        let (mut start, end) = haystack.original(at, at + needle.len());
        let mut new = match crlf {
            true => lf_to_crlf(new),
            false => new.replace("\r\n", "\n"),
        };
        if rule >= MatchRule::Indentation {
            let at_line_start = haystack.text[..at].ends_with('\n') || at == 0;
            if at_line_start {
                start = line_start(text, start);
            }
            match reindent(old, &text[start..end], &new, at_line_start) {
                Some(reindented) => new = reindented,
                None => continue,
            }
        }
        return Search::Found(Found {
            start,
            end,
            rule,
            new,
        });
    }
    Search::NotFound
}

/// `text` as `rule` sees it, each character knowing its source bytes.
struct Normalized {
    text: String,
    /// Per character of `text`: where it starts in `text`, and the range of
    /// the original it stands for.
    units: Vec<Unit>,
}

#[derive(Clone, Copy)]
struct Unit {
    at: u32,
    start: u32,
    end: u32,
}

/// A character on its way through the normalisation stages.
#[derive(Clone, Copy)]
struct Char {
    ch: char,
    start: u32,
    end: u32,
}

impl Normalized {
    fn of(text: &str, rule: MatchRule) -> Self {
        let mut chars: Vec<Char> = text
            .char_indices()
            .map(|(i, ch)| Char {
                ch,
                start: i as u32,
                end: (i + ch.len_utf8()) as u32,
            })
            .collect();
        if rule >= MatchRule::LineEndings {
            chars = join_crlf(chars);
        }
        if rule >= MatchRule::Unicode {
            chars = compose(chars);
        }
        if rule >= MatchRule::Typography {
            for c in &mut chars {
                c.ch = fold_typography(c.ch);
            }
        }
        if rule >= MatchRule::TrailingWhitespace {
            chars = drop_trailing_space(chars);
        }
        if rule >= MatchRule::Indentation {
            chars = drop_leading_space(chars);
        }
        let mut out = String::with_capacity(chars.len());
        let units = chars
            .iter()
            .map(|c| {
                let at = out.len() as u32;
                out.push(c.ch);
                Unit {
                    at,
                    start: c.start,
                    end: c.end,
                }
            })
            .collect();
        Normalized { text: out, units }
    }

    /// The original byte range the normalised bytes `from..to` (character
    /// boundaries, `from < to`) stand for.
    fn original(&self, from: usize, to: usize) -> (usize, usize) {
        let first = self.units.partition_point(|u| (u.at as usize) < from);
        let last = self.units.partition_point(|u| (u.at as usize) < to) - 1;
        (
            self.units[first].start as usize,
            self.units[last].end as usize,
        )
    }
}

/// `\r\n` becomes one `\n` standing for both bytes.
fn join_crlf(chars: Vec<Char>) -> Vec<Char> {
    let mut out: Vec<Char> = Vec::with_capacity(chars.len());
    for c in chars {
        match out.last_mut() {
            Some(prev) if prev.ch == '\r' && c.ch == '\n' => {
                prev.ch = '\n';
                prev.end = c.end;
            }
            _ => out.push(c),
        }
    }
    out
}

/// NFC, a segment at a time: a segment runs from an ASCII character (which
/// never composes with what precedes it) to the next, so composing each
/// alone equals composing the whole. Every character of a composed segment
/// stands for the whole segment.
fn compose(chars: Vec<Char>) -> Vec<Char> {
    let mut out = Vec::with_capacity(chars.len());
    let mut segment = String::new();
    let mut i = 0;
    while i < chars.len() {
        let mut j = i + 1;
        while j < chars.len() && !chars[j].ch.is_ascii() {
            j += 1;
        }
        if j == i + 1 {
            out.push(chars[i]);
        } else {
            segment.clear();
            segment.extend(chars[i..j].iter().map(|c| c.ch));
            let (start, end) = (chars[i].start, chars[j - 1].end);
            out.extend(nfc(&segment).chars().map(|ch| Char { ch, start, end }));
        }
        i = j;
    }
    out
}

fn is_space(ch: char) -> bool {
    ch != '\n' && ch.is_whitespace()
}

/// Drops whitespace that ends a line (or the text).
fn drop_trailing_space(chars: Vec<Char>) -> Vec<Char> {
    let mut keep = vec![true; chars.len()];
    let mut at_end = true;
    for (i, c) in chars.iter().enumerate().rev() {
        if c.ch == '\n' {
            at_end = true;
        } else if is_space(c.ch) {
            keep[i] = !at_end;
        } else {
            at_end = false;
        }
    }
    chars
        .into_iter()
        .zip(keep)
        .filter_map(|(c, keep)| keep.then_some(c))
        .collect()
}

/// Drops whitespace that starts a line (or the text).
fn drop_leading_space(chars: Vec<Char>) -> Vec<Char> {
    let mut at_start = true;
    chars
        .into_iter()
        .filter(|c| {
            if c.ch == '\n' {
                at_start = true;
                true
            } else if is_space(c.ch) {
                !at_start
            } else {
                at_start = false;
                true
            }
        })
        .collect()
}

/// The start of the line holding byte `at` of `text`.
fn line_start(text: &str, at: usize) -> usize {
    text[..at].rfind('\n').map_or(0, |nl| nl + 1)
}

fn leading_space(line: &str) -> &str {
    &line[..line.len() - line.trim_start_matches(is_space).len()]
}

/// `new` with the indentation change that turns `old` into `matched` (the
/// file's text), or `None` when `old` and `matched` differ in indentation
/// inconsistently. With `first_line_whole` false, `old` starts mid-line, so
/// its first line says nothing about indentation and `new`'s keeps its own.
fn reindent(old: &str, matched: &str, new: &str, first_line_whole: bool) -> Option<String> {
    let old = old.replace("\r\n", "\n");
    let matched = matched.replace("\r\n", "\n");
    let old_lines: Vec<&str> = old.split('\n').collect();
    let matched_lines: Vec<&str> = matched.split('\n').collect();
    if old_lines.len() != matched_lines.len() {
        return None;
    }
    let pairs: Vec<(&str, &str)> = old_lines
        .iter()
        .zip(&matched_lines)
        .enumerate()
        .filter(|(i, (old, _))| (*i > 0 || first_line_whole) && !old.trim().is_empty())
        .map(|(_, (old, matched))| (leading_space(old), leading_space(matched)))
        .collect();
    let Some(&(first_old, first_matched)) = pairs.first() else {
        return Some(new.to_string());
    };
    // The longest common tail of the first pair is indentation both share;
    // what precedes it is the swap (`strip` in old becomes `add` in the file).
    let common = first_old
        .chars()
        .rev()
        .zip(first_matched.chars().rev())
        .take_while(|(a, b)| a == b)
        .map(|(a, _)| a.len_utf8())
        .sum::<usize>();
    let strip = &first_old[..first_old.len() - common];
    let add = &first_matched[..first_matched.len() - common];
    let consistent = pairs.iter().all(|(old, matched)| {
        match (old.strip_prefix(strip), matched.strip_prefix(add)) {
            (Some(old_rest), Some(matched_rest)) => old_rest == matched_rest,
            _ => false,
        }
    });
    if !consistent {
        return None;
    }
    if strip == add {
        return Some(new.to_string());
    }
    let lines: Vec<String> = new
        .split('\n')
        .enumerate()
        .map(|(i, line)| match line.strip_prefix(strip) {
            Some(rest) if (i > 0 || first_line_whole) && !line.trim().is_empty() => {
                format!("{add}{rest}")
            }
            _ => line.to_string(),
        })
        .collect();
    Some(lines.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(text: &str, old: &str, new: &str) -> (MatchRule, String, String) {
        match search(text, old, new, stead_patch::is_crlf(text)) {
            Search::Found(found) => {
                let matched = text[found.start..found.end].to_string();
                let mut edited = text.to_string();
                edited.replace_range(found.start..found.end, &found.new);
                (found.rule, matched, edited)
            }
            other => panic!("expected a match of {old:?} in {text:?}, got {other:?}"),
        }
    }

    #[test]
    fn each_rule_finds_what_it_forgives() {
        let (rule, matched, edited) = found("a\r\nb\nc\n", "a\nb", "x\ny");
        assert_eq!(rule, MatchRule::LineEndings);
        assert_eq!(matched, "a\r\nb");
        assert_eq!(edited, "x\ny\nc\n");

        let (rule, matched, edited) = found("un café noir\n", "cafe\u{301}", "thé");
        assert_eq!((rule, matched.as_str()), (MatchRule::Unicode, "café"));
        assert_eq!(edited, "un thé noir\n");

        let (rule, matched, edited) = found(
            "let a = 1;   \nlet b = 2;\n",
            "let a = 1;\nlet b",
            "let a = 9;\nlet b",
        );
        assert_eq!(rule, MatchRule::TrailingWhitespace);
        assert_eq!(matched, "let a = 1;   \nlet b");
        assert_eq!(edited, "let a = 9;\nlet b = 2;\n");

        let (rule, _, edited) = found("say “hello” — now\n", "say \"hello\" - now", "say 'bye'");
        assert_eq!(rule, MatchRule::Typography);
        assert_eq!(edited, "say 'bye'\n");
    }

    #[test]
    fn indentation_is_forgiven_and_new_is_reindented_to_match() {
        let text = "impl A {\n        fn f() {\n            g();\n        }\n}\n";
        // The model dropped a level of indentation throughout.
        let (rule, matched, edited) = found(
            text,
            "    fn f() {\n        g();\n    }",
            "    fn f() {\n        h();\n        g();\n    }",
        );
        assert_eq!(rule, MatchRule::Indentation);
        assert_eq!(matched, "        fn f() {\n            g();\n        }");
        assert_eq!(
            edited,
            "impl A {\n        fn f() {\n            h();\n            g();\n        }\n}\n"
        );
        // Spaces for a tab, one level deep.
        let (_, _, edited) = found("\tif x:\n\tpass\n", "  if x:\n  pass", "  if y:\n  pass");
        assert_eq!(edited, "\tif y:\n\tpass\n");
    }

    #[test]
    fn inconsistent_indentation_is_not_guessed() {
        // One line gained four spaces, the other lost two: no single swap.
        let text = "        a\nb\n";
        assert_eq!(search(text, "    a\n  b", "x", false), Search::NotFound);
    }

    #[test]
    fn an_old_starting_mid_line_keeps_the_first_lines_indentation() {
        let text = "x = call(a,\n            b)\n";
        let (rule, matched, edited) = found(text, "call(a,\n        b)", "call(a,\n        c)");
        assert_eq!(rule, MatchRule::Indentation);
        assert_eq!(matched, "call(a,\n            b)");
        assert_eq!(edited, "x = call(a,\n            c)\n");
        // At a line start (after indentation), the whole line is matched.
        let text = "    call(a,\n            b)\n";
        let (_, matched, edited) = found(text, "call(a,\n        b)", "call(a,\n        c)");
        assert_eq!(matched, text.trim_end());
        assert_eq!(edited, "    call(a,\n            c)\n");
    }

    #[test]
    fn the_first_rule_that_matches_decides_even_when_ambiguous() {
        let text = "x = 1 \nx = 1\t\n";
        assert_eq!(
            search(text, "x = 1\n", "y", false),
            Search::Ambiguous {
                count: 2,
                rule: MatchRule::TrailingWhitespace
            }
        );
    }

    #[test]
    fn new_takes_the_files_line_endings() {
        let (_, _, edited) = found("a\nb\nc\n", "a\r\nb", "x\r\ny");
        assert_eq!(edited, "x\ny\nc\n");
        // A CRLF file: `old` already had `\r` (so no translation happened),
        // but with a stray space.
        let (rule, _, edited) = found("a \r\nb\r\n", "a\r\nb", "x\ny");
        assert_eq!(rule, MatchRule::TrailingWhitespace);
        assert_eq!(edited, "x\r\ny\r\n");
    }

    #[test]
    fn large_files_are_only_searched_exactly() {
        let mut text = "x".repeat(MAX_FUZZY_BYTES);
        text.push_str("\nlast line   \n");
        assert_eq!(search(&text, "last line\n", "y", false), Search::NotFound);
        let (rule, ..) = found(&text[MAX_FUZZY_BYTES - 8..], "last line\n", "y");
        assert_eq!(rule, MatchRule::TrailingWhitespace);
    }

    #[test]
    fn whitespace_only_old_never_matches_fuzzily() {
        assert_eq!(search("a  \n b\n", "   ", "x", false), Search::NotFound);
    }

    #[test]
    fn normalized_ranges_map_back_to_the_original() {
        let text = "e\u{301}t\u{e9}\r\n  x";
        let n = Normalized::of(text, MatchRule::Indentation);
        assert_eq!(n.text, "\u{e9}t\u{e9}\nx");
        let at = n.text.find('x').unwrap();
        assert_eq!(n.original(at, at + 1), (text.len() - 1, text.len()));
        let nl = n.text.find('\n').unwrap();
        assert_eq!(
            &text[n.original(nl, nl + 1).0..n.original(nl, nl + 1).1],
            "\r\n"
        );
        // `é` as `e` plus a combining accent is one character standing for
        // three bytes; `t` shares a segment with the `é` after it.
        assert_eq!(n.original(0, 2), (0, 3));
        assert_eq!(n.original(2, 3), (3, 6));
    }
}
