//! The edit tool: `edit::apply` on arbitrary text and edits.
//!
//! `apply` is where agent-written strings meet file content, with CRLF
//! translation, uniqueness and overlap rules, and fuzzy matching that maps
//! normalised text back to byte ranges; any of those can index a string
//! wrongly. The checks: no panic; an error names an edit that exists; a
//! success changed the text; each exactly matched edit's (translated) `new`
//! is in the result and a non-`replace_all` one matched exactly once; a
//! fuzzy match is reported only for an edit with no exact match, and what it
//! replaced is text of the original; with no fuzzy match the result has
//! exactly the length the replacements imply.

use arbitrary::{Result, Unstructured};
use stead_patch::MatchRule;
use stead_vfs::edit::{self, EditError, Replacement};

use crate::Target;

pub const TARGET: Target = Target {
    name: "edit",
    about: "edit::apply: no panic, errors name a real edit, exact results contain each new string and have the implied length, fuzzy matches replace real text the exact search missed",
    run,
    seeds,
    tokens: &[
        "\r\n", "\n", "\r", "é", "😀", "a", "ab", "\0", "  ", "\t", "\u{301}", "\u{201C}", "\u{2019}",
        "\u{2014}", "\u{a0}",
    ],
    bounds: None,
};

pub fn run(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let Ok((original, edits)) = generate(&mut u) else {
        return;
    };
    let _ = edit::as_text(data);
    match edit::apply(&original, &edits, "/f") {
        Ok(edited) => {
            assert_ne!(edited.text, original, "a success must change the text");
            assert!(edited.replacements >= edits.len());
            assert!(!edited.diff.is_empty());
            let crlf = is_crlf(&original);
            let mut expected_len = original.len() as i64;
            let mut reports = edited.fuzzy.iter().peekable();
            for (index, e) in edits.iter().enumerate() {
                let (old, new) = translate(crlf, e);
                let count = original.matches(old.as_str()).count() as i64;
                if let Some(report) = reports.next_if(|r| r.edit_index == index) {
                    // Fuzzy only when the exact text is absent, and what it
                    // replaced is real text of the file.
                    assert_eq!(count, 0, "fuzzy match of an edit found exactly");
                    assert!(!report.matched.is_empty());
                    assert!(original.contains(&report.matched), "{report:?}");
                    assert_ne!(report.rule, MatchRule::Exact);
                    continue;
                }
                assert!(edited.text.contains(&new), "result lacks {new:?}");
                assert!(count >= 1);
                if !e.replace_all {
                    assert_eq!(count, 1, "a non-replace_all edit matched {count} times");
                }
                expected_len += count * (new.len() as i64 - old.len() as i64);
            }
            assert!(
                reports.next().is_none(),
                "fuzzy reports out of order: {:?}",
                edited.fuzzy
            );
            if edited.fuzzy.is_empty() {
                assert_eq!(edited.text.len() as i64, expected_len);
            }
        }
        Err(error) => {
            if let Some(index) = error.index() {
                assert!(index < edits.len(), "{error:?} for {} edits", edits.len());
            }
            if let EditError::Overlap { index, other } = error {
                assert!(other < index);
            }
            assert!(!matches!(error, EditError::NotText));
            assert!(!error.code().as_str().is_empty());
        }
    }
}

/// Original text and up to four edits; an `old` is often a slice of the
/// original, so that edits match.
fn generate(u: &mut Unstructured<'_>) -> Result<(String, Vec<Replacement>)> {
    let original: String = u.arbitrary()?;
    let count = u.int_in_range(0..=4)?;
    let mut edits = Vec::new();
    for _ in 0..count {
        let old = if !original.is_empty() && u.ratio(3, 4)? {
            let chars: Vec<(usize, char)> = original.char_indices().collect();
            let a = u.choose_index(chars.len())?;
            let b = a + u.int_in_range(0..=(chars.len() - a).min(8))?;
            let start = chars[a].0;
            let end = chars.get(b).map_or(original.len(), |(i, _)| *i);
            original[start..end].to_string()
        } else {
            u.arbitrary()?
        };
        let new: String = u.arbitrary()?;
        edits.push(Replacement {
            old,
            new,
            replace_all: u.arbitrary()?,
        });
    }
    Ok((original, edits))
}

/// The documented CRLF rule: a file is CRLF when it has at least one `\r\n`
/// and no more bare `\n` than `\r\n`.
fn is_crlf(text: &str) -> bool {
    let newlines = text.matches('\n').count();
    let crlf = text.matches("\r\n").count();
    crlf > 0 && crlf >= newlines - crlf
}

/// `old` and `new` as matched: in a CRLF file an `old` without `\r` has its
/// bare `\n`s turned into `\r\n`, and so does its `new`.
fn translate(crlf: bool, e: &Replacement) -> (String, String) {
    if crlf && !e.old.contains('\r') {
        (
            stead_vfs::edit::lf_to_crlf(&e.old),
            stead_vfs::edit::lf_to_crlf(&e.new),
        )
    } else {
        (e.old.clone(), e.new.clone())
    }
}

fn seeds() -> Vec<Vec<u8>> {
    let mut seeds = vec![
        b"\x14hello world\nsecond\n\x02\x00\x05\x02\x03HELLO\x01".to_vec(),
        b"\x18line one\r\nline two\r\n\x03\x01\x04\x02\x04two\nthree\x00".to_vec(),
        b"\x06aaaaaa\x04\x00\x02\x01\x02bb\x01\x00\x03\x01c\x00".to_vec(),
        "\u{10}caf\u{e9} \u{1F600} na\u{ef}ve\x02\x00\x05\x01"
            .as_bytes()
            .to_vec(),
    ];
    seeds.push(vec![0x40; 70]);
    seeds
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mutate::{mutate, Rng};

    /// Coverage-free fuzzing only tests what it reaches: mutated seeds must
    /// produce successful edits and each kind of failure.
    #[test]
    fn mutated_seeds_reach_successes_and_failures() {
        let corpus = seeds();
        let mut rng = Rng::new(1);
        let mut codes = std::collections::BTreeMap::new();
        for i in 0..20_000 {
            let input = mutate(
                &mut rng,
                &corpus[i % corpus.len()],
                &corpus,
                TARGET.tokens,
                512,
            );
            let mut u = Unstructured::new(&input);
            let Ok((original, edits)) = generate(&mut u) else {
                continue;
            };
            let code = match edit::apply(&original, &edits, "/f") {
                Ok(_) => "ok",
                Err(e) => e.code().as_str(),
            };
            *codes.entry(code).or_insert(0) += 1;
        }
        for code in [
            "ok",
            "EDIT_NO_MATCH",
            "EDIT_AMBIGUOUS",
            "EDIT_OVERLAP",
            "EDIT_NO_CHANGE",
        ] {
            assert!(
                codes.get(code).copied().unwrap_or(0) > 20,
                "{code}: {codes:?}"
            );
        }
    }
}
