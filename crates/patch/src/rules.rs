//! How far text may differ from what a patch or an edit expects and still
//! count as the same text.
//!
//! Models copy code into patches and edits from memory, and what they get
//! wrong is predictable: trailing spaces dropped, indentation re-typed,
//! typographic quotes and dashes turned into ASCII ones (or the reverse),
//! accented letters in a different Unicode normal form. Each [`MatchRule`]
//! forgives one more of these. The rules form a ladder, each including every
//! one before it, and callers try them in order: text that matches exactly
//! never goes near a fuzzy rule, and when a looser rule is needed the answer
//! names it, so the caller can tell the model what was assumed.
//!
//! The same ladder serves V4A and unified hunks (line by line, see
//! [`normalize_line`]) and the VFS `edit` tool (character by character, with
//! [`fold_typography`] and [`nfc`] as building blocks), so "trailing
//! whitespace" means the same thing everywhere.

use std::borrow::Cow;

use unicode_normalization::{is_nfc_quick, IsNormalized, UnicodeNormalization};

/// One rung of the matching ladder. Each rule forgives everything the rules
/// before it forgive, plus one more kind of difference.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MatchRule {
    /// Byte for byte.
    Exact,
    /// `\r\n` and `\n` are the same line ending. (Hunks always match this
    /// way: a file's line endings are taken off before matching.)
    LineEndings,
    /// Canonically equivalent Unicode is the same (NFC: `é` as one code
    /// point or as `e` plus a combining accent).
    Unicode,
    /// Spaces and tabs at the end of a line are ignored.
    TrailingWhitespace,
    /// Whitespace at the start and end of a line is ignored.
    Indentation,
    /// Typographic quotes, dashes and spaces equal their ASCII forms
    /// (`‘’‚‛` `'`, `“”„‟` `"`, `‐‑‒–—―−` `-`, no-break and other spaces ` `).
    Typography,
}

impl MatchRule {
    /// The ladder hunks climb, strictest first. (A file's line endings are
    /// taken off before hunks are matched, so `LineEndings` is not on it.)
    pub const LINE_LADDER: [MatchRule; 5] = [
        MatchRule::Exact,
        MatchRule::Unicode,
        MatchRule::TrailingWhitespace,
        MatchRule::Indentation,
        MatchRule::Typography,
    ];

    /// The rules an `edit` whose `old` is not in the file exactly falls
    /// back to, in order.
    pub const TEXT_FALLBACKS: [MatchRule; 5] = [
        MatchRule::LineEndings,
        MatchRule::Unicode,
        MatchRule::TrailingWhitespace,
        MatchRule::Indentation,
        MatchRule::Typography,
    ];

    /// The name the API uses (`trailing_whitespace`).
    pub fn as_str(self) -> &'static str {
        match self {
            MatchRule::Exact => "exact",
            MatchRule::LineEndings => "line_endings",
            MatchRule::Unicode => "unicode",
            MatchRule::TrailingWhitespace => "trailing_whitespace",
            MatchRule::Indentation => "indentation",
            MatchRule::Typography => "typography",
        }
    }

    /// What the rule forgives, for messages ("matched ignoring ...").
    pub fn forgives(self) -> &'static str {
        match self {
            MatchRule::Exact => "nothing",
            MatchRule::LineEndings => "CRLF versus LF line endings",
            MatchRule::Unicode => "Unicode normalisation (NFC)",
            MatchRule::TrailingWhitespace => "trailing whitespace",
            MatchRule::Indentation => "indentation and trailing whitespace",
            MatchRule::Typography => "whitespace and typographic quotes, dashes and spaces",
        }
    }
}

impl std::fmt::Display for MatchRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `line` as `rule` sees it (a line has no line ending, so
/// [`MatchRule::LineEndings`] changes nothing here). Two lines match under
/// `rule` when their normalised forms are equal.
pub fn normalize_line(line: &str, rule: MatchRule) -> Cow<'_, str> {
    match rule {
        MatchRule::Exact | MatchRule::LineEndings => Cow::Borrowed(line),
        MatchRule::Unicode => nfc(line),
        MatchRule::TrailingWhitespace => trimmed(nfc(line), str::trim_end),
        MatchRule::Indentation => trimmed(nfc(line), str::trim),
        MatchRule::Typography => {
            let folded: String = nfc(line).chars().map(fold_typography).collect();
            Cow::Owned(folded.trim().to_string())
        }
    }
}

fn trimmed<'a>(text: Cow<'a, str>, trim: fn(&str) -> &str) -> Cow<'a, str> {
    match text {
        Cow::Borrowed(text) => Cow::Borrowed(trim(text)),
        Cow::Owned(text) => Cow::Owned(trim(&text).to_string()),
    }
}

/// `text` in Unicode Normalization Form C; borrowed when it already is
/// (always, for ASCII), so the common case costs one scan.
pub fn nfc(text: &str) -> Cow<'_, str> {
    if text.is_ascii() || is_nfc_quick(text.chars()) == IsNormalized::Yes {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(text.nfc().collect())
    }
}

/// The ASCII form of a typographic quote, dash or space; any other character
/// is returned as it is. One character always maps to one character, so
/// positions survive folding.
pub fn fold_typography(c: char) -> char {
    match c {
        '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' => '\'',
        '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' => '"',
        '\u{2010}'..='\u{2015}' | '\u{2212}' => '-',
        '\u{00A0}' | '\u{2000}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' => ' ',
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_rule_forgives_its_own_difference_and_those_before_it() {
        let cases = [
            ("caf\u{e9}", "cafe\u{301}", MatchRule::Unicode),
            ("x = 1;", "x = 1;  \t", MatchRule::TrailingWhitespace),
            ("x = 1;", "\t  x = 1; ", MatchRule::Indentation),
            (
                "say \"hi\" - 'now'",
                "  say \u{201C}hi\u{201D} \u{2014} \u{2018}now\u{2019}",
                MatchRule::Typography,
            ),
            ("a b", "a\u{a0}b", MatchRule::Typography),
        ];
        for rule in MatchRule::LINE_LADDER
            .into_iter()
            .chain([MatchRule::LineEndings])
        {
            for (a, b, needs) in cases {
                let same = normalize_line(a, rule) == normalize_line(b, rule);
                assert_eq!(same, rule >= needs, "{a:?} vs {b:?} under {rule}");
            }
        }
    }

    #[test]
    fn nfc_borrows_text_already_normal() {
        assert!(matches!(nfc("plain ascii"), Cow::Borrowed(_)));
        assert!(matches!(nfc("d\u{e9}j\u{e0}"), Cow::Borrowed(_)));
        assert_eq!(nfc("de\u{301}ja\u{300}"), "d\u{e9}j\u{e0}");
    }

    #[test]
    fn folding_keeps_one_character_per_character() {
        let typographic = "\u{2018}\u{2019}\u{201C}\u{201D}\u{2013}\u{2014}\u{2212}\u{a0}\u{3000}";
        let folded: String = typographic.chars().map(fold_typography).collect();
        assert_eq!(folded, "''\"\"---  ");
        assert_eq!(fold_typography('é'), 'é');
    }

    #[test]
    fn names_are_the_serialized_names() {
        for rule in MatchRule::LINE_LADDER
            .into_iter()
            .chain(MatchRule::TEXT_FALLBACKS)
        {
            assert!(!rule.forgives().is_empty());
            assert_eq!(rule.to_string(), rule.as_str());
            let json = serde_json::to_string(&rule).unwrap();
            assert_eq!(json, format!("\"{}\"", rule.as_str()));
        }
    }
}
