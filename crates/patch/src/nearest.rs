//! Finding the text a failed hunk most likely meant, to quote back.
//!
//! A model whose hunk did not apply usually had the right place and a
//! slightly wrong memory of it. Quoting that place (with its line number)
//! lets it fix the patch without reading the file again.
//!
//! Each non-blank line of the hunk votes for the region start its exact
//! occurrences in the file imply (ignoring surrounding whitespace); the
//! start with most votes wins, the one nearest where the hunk was expected
//! on a tie. Lines that occur very often (`}`, `end`) carry no information
//! and would cost quadratic time, so they do not vote. When no line occurs
//! at all, the file line most similar to the hunk's first line (by shared
//! character pairs) is quoted instead.

use std::collections::HashMap;

use crate::error::Nearest;

/// Occurrences above which a line does not vote.
const COMMON_LINE: usize = 64;
/// Most lines quoted.
const QUOTED_LINES: usize = 40;
/// Least similarity (Dice coefficient of character pairs) worth quoting.
const MIN_SIMILARITY: f64 = 0.5;
/// Most bytes of file compared by similarity, to bound the cost.
const SIMILARITY_BUDGET: usize = 8 << 20;

/// The region of `lines` most like `pattern`, expected near line index `around`.
pub(crate) fn nearest(lines: &[&str], pattern: &[String], around: usize) -> Option<Nearest> {
    let of = pattern
        .iter()
        .filter(|line| !line.trim().is_empty())
        .count();
    if lines.is_empty() || of == 0 {
        return None;
    }
    let mut positions: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, line) in lines.iter().enumerate() {
        let line = line.trim();
        if !line.is_empty() {
            positions.entry(line).or_default().push(i);
        }
    }
    let mut votes: HashMap<usize, usize> = HashMap::new();
    for (j, wanted) in pattern.iter().enumerate() {
        let Some(found) = positions.get(wanted.trim()) else {
            continue;
        };
        if found.len() > COMMON_LINE {
            continue;
        }
        for &i in found.iter().filter(|&&i| i >= j) {
            *votes.entry(i - j).or_default() += 1;
        }
    }
    let distance = |start: usize| start.abs_diff(around);
    // Most votes, then nearest, then first: the same answer every time.
    let best = votes.into_iter().max_by(|(a, va), (b, vb)| {
        va.cmp(vb)
            .then(distance(*b).cmp(&distance(*a)))
            .then(b.cmp(a))
    });
    let (start, matching_lines) = match best {
        Some(best) => best,
        None => (most_similar(lines, pattern, around)?, 0),
    };
    let end = (start + pattern.len().clamp(1, QUOTED_LINES)).min(lines.len());
    Some(Nearest {
        line: start + 1,
        text: lines[start..end].join("\n"),
        matching_lines,
        of,
    })
}

/// The line most similar to the pattern's first non-blank line, if any is
/// similar enough (shifted back so the quote lines up with the pattern).
fn most_similar(lines: &[&str], pattern: &[String], around: usize) -> Option<usize> {
    let (offset, first) = pattern
        .iter()
        .enumerate()
        .find(|(_, line)| !line.trim().is_empty())?;
    let wanted = pairs(first.trim());
    let mut budget = SIMILARITY_BUDGET;
    let mut best: Option<(f64, usize)> = None;
    for (i, line) in lines.iter().enumerate() {
        budget = budget.checked_sub(line.len())?;
        let score = similarity(&wanted, &pairs(line.trim()));
        let better = match best {
            None => score >= MIN_SIMILARITY,
            Some((top, at)) => {
                score > top || (score == top && i.abs_diff(around) < at.abs_diff(around))
            }
        };
        if better {
            best = Some((score, i));
        }
    }
    best.map(|(_, i)| i.saturating_sub(offset))
}

/// The sorted character pairs of `text` (a one-character text is its own pair).
fn pairs(text: &str) -> Vec<(char, char)> {
    let chars: Vec<char> = text.chars().collect();
    let mut pairs: Vec<(char, char)> = match chars.len() {
        0 => Vec::new(),
        1 => vec![(chars[0], chars[0])],
        _ => chars.windows(2).map(|w| (w[0], w[1])).collect(),
    };
    pairs.sort_unstable();
    pairs
}

/// Dice coefficient of two sorted pair lists: shared pairs over all pairs.
fn similarity(a: &[(char, char)], b: &[(char, char)]) -> f64 {
    if a.is_empty() || b.is_empty() {
        return 0.0;
    }
    let (mut i, mut j, mut shared) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                shared += 1;
                i += 1;
                j += 1;
            }
        }
    }
    2.0 * shared as f64 / (a.len() + b.len()) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(lines: &[&str]) -> Vec<String> {
        lines.iter().map(|l| l.to_string()).collect()
    }

    #[test]
    fn votes_pick_the_region_where_most_lines_agree() {
        let file = ["a", "b", "c", "x", "a", "b", "d", "e"];
        let found = nearest(&file, &strings(&["a", "b", "d", "z"]), 0).unwrap();
        assert_eq!((found.line, found.matching_lines, found.of), (5, 3, 4));
        assert_eq!(found.text, "a\nb\nd\ne");
    }

    #[test]
    fn ties_go_to_the_region_nearest_the_expected_line() {
        let file = ["a", "q", "a", "q", "a"];
        assert_eq!(nearest(&file, &strings(&["a", "z"]), 4).unwrap().line, 5);
        assert_eq!(nearest(&file, &strings(&["a", "z"]), 0).unwrap().line, 1);
        // Equally near: the first.
        assert_eq!(nearest(&file, &strings(&["a", "z"]), 1).unwrap().line, 1);
    }

    #[test]
    fn without_shared_lines_the_most_similar_line_is_quoted() {
        let file = [
            "fn alpha() {",
            "fn compute_total(items: &[u32]) -> u32 {",
            "}",
        ];
        let found = nearest(
            &file,
            &strings(&["", "fn compute_totals(items: &[u64]) -> u64 {"]),
            0,
        )
        .unwrap();
        assert_eq!((found.line, found.matching_lines), (1, 0));
        assert!(found.text.contains("compute_total"));
        assert!(nearest(&file, &strings(&["completely different"]), 0).is_none());
    }

    #[test]
    fn nothing_to_compare() {
        assert!(nearest(&[], &strings(&["a"]), 0).is_none());
        assert!(nearest(&["a"], &strings(&["", "  "]), 0).is_none());
    }

    #[test]
    fn similarity_bounds() {
        assert_eq!(similarity(&pairs("abc"), &pairs("abc")), 1.0);
        assert_eq!(similarity(&pairs("abc"), &pairs("xyz")), 0.0);
        assert_eq!(similarity(&pairs(""), &pairs("abc")), 0.0);
    }
}
