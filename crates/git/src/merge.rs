//! Three-way merge of one file's content, as git's `xdl_merge` does it at
//! the level `merge-ort` asks for ("zealous", conflict style `merge`).
//!
//! Each side is diffed against the base (Myers, as [`crate::diff`]). Changes
//! that do not touch are taken from their side; changes that overlap or
//! touch are a conflict unless both sides made the same one. Each conflict
//! is then refined: the two sides' versions of it are diffed with each
//! other, and only the lines that differ stay conflicting, the lines both
//! share becoming merged text between smaller conflicts; two conflicts
//! with three lines or fewer between them are joined again into one
//! (fewer markers to read). A conflict is written with git's markers:
//! `<<<<<<< ours`, our lines, `=======`, their lines, `>>>>>>> theirs`, a
//! side's last line given a newline when it has none.
//!
//! Content with a NUL in its first 8000 bytes is binary: it is not merged
//! line by line, and a change on both sides is a conflict that keeps ours.

use similar::{capture_diff_slices, Algorithm, DiffOp};

/// A merge's result: the merged content (with conflict markers where the
/// sides disagree) and how many conflicts it has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Merged {
    pub data: Vec<u8>,
    pub conflicts: usize,
}

/// Whether git treats `data` as binary.
pub fn is_binary(data: &[u8]) -> bool {
    data[..data.len().min(8000)].contains(&0)
}

/// One change a diff found: lines `old..old + old_len` of the first file
/// are lines `new..new + new_len` of the second.
#[derive(Debug, Clone, Copy)]
struct Hunk {
    old: isize,
    old_len: isize,
    new: isize,
    new_len: isize,
}

fn lines(data: &[u8]) -> Vec<&[u8]> {
    data.split_inclusive(|&b| b == b'\n').collect()
}

/// The changes from `a` to `b` as git's xdiff gives them: which lines of
/// each side changed (Myers), each run of changes slid as far down as the
/// content allows unless it can line up with a change on the other side
/// (`xdl_change_compact`), then paired into hunks from the end
/// (`xdl_build_script`).
fn hunks(a: &[&[u8]], b: &[&[u8]]) -> Vec<Hunk> {
    let mut changed_a = vec![false; a.len()];
    let mut changed_b = vec![false; b.len()];
    for op in capture_diff_slices(Algorithm::Myers, a, b) {
        let (old, new) = (op.old_range(), op.new_range());
        if !matches!(op, DiffOp::Equal { .. }) {
            changed_a[old].iter_mut().for_each(|c| *c = true);
            changed_b[new].iter_mut().for_each(|c| *c = true);
        }
    }
    compact(&mut changed_a, a, &changed_b);
    compact(&mut changed_b, b, &changed_a);
    let mut out = Vec::new();
    let (mut i1, mut i2) = (a.len(), b.len());
    loop {
        let before = |c: &[bool], i: usize| i > 0 && c[i - 1];
        if before(&changed_a, i1) || before(&changed_b, i2) {
            let (l1, l2) = (i1, i2);
            while before(&changed_a, i1) {
                i1 -= 1;
            }
            while before(&changed_b, i2) {
                i2 -= 1;
            }
            out.push(Hunk {
                old: i1 as isize,
                old_len: (l1 - i1) as isize,
                new: i2 as isize,
                new_len: (l2 - i2) as isize,
            });
        }
        if i1 == 0 && i2 == 0 {
            break;
        }
        i1 = i1.saturating_sub(1);
        i2 = i2.saturating_sub(1);
    }
    out.reverse();
    out
}

/// A run of changed lines `start..end` of one side (empty between two
/// unchanged lines).
#[derive(Clone, Copy)]
struct Group {
    start: usize,
    end: usize,
}

impl Group {
    fn first(changed: &[bool]) -> Group {
        let mut g = Group { start: 0, end: 0 };
        g.extend(changed);
        g
    }

    fn extend(&mut self, changed: &[bool]) {
        while self.end < changed.len() && changed[self.end] {
            self.end += 1;
        }
    }

    fn next(&mut self, changed: &[bool]) -> bool {
        if self.end == changed.len() {
            return false;
        }
        self.start = self.end + 1;
        self.end = self.start;
        self.extend(changed);
        true
    }

    fn previous(&mut self, changed: &[bool]) -> bool {
        if self.start == 0 {
            return false;
        }
        self.end = self.start - 1;
        self.start = self.end;
        while self.start > 0 && changed[self.start - 1] {
            self.start -= 1;
        }
        true
    }

    fn slide_down(&mut self, changed: &mut [bool], lines: &[&[u8]]) -> bool {
        if self.end < lines.len() && lines[self.start] == lines[self.end] {
            changed[self.start] = false;
            changed[self.end] = true;
            self.start += 1;
            self.end += 1;
            self.extend(changed);
            return true;
        }
        false
    }

    fn slide_up(&mut self, changed: &mut [bool], lines: &[&[u8]]) -> bool {
        if self.start > 0 && lines[self.start - 1] == lines[self.end - 1] {
            self.start -= 1;
            self.end -= 1;
            changed[self.start] = true;
            changed[self.end] = false;
            while self.start > 0 && changed[self.start - 1] {
                self.start -= 1;
            }
            return true;
        }
        false
    }
}

/// Slides each run of changes in `changed` (of `lines`) down as far as it
/// goes, joining runs it meets, then back up to end where a change of the
/// other side ends when it passed one: git's `xdl_change_compact` without
/// the indent heuristic (merges do not use it).
fn compact(changed: &mut [bool], lines: &[&[u8]], other: &[bool]) {
    let mut g = Group::first(changed);
    let mut go = Group::first(other);
    loop {
        if g.end != g.start {
            let mut earliest_end;
            let mut end_matching_other;
            loop {
                let size = g.end - g.start;
                end_matching_other = None;
                while g.slide_up(changed, lines) {
                    go.previous(other);
                }
                earliest_end = g.end;
                if go.end > go.start {
                    end_matching_other = Some(g.end);
                }
                while g.slide_down(changed, lines) {
                    go.next(other);
                    if go.end > go.start {
                        end_matching_other = Some(g.end);
                    }
                }
                if size == g.end - g.start {
                    break;
                }
            }
            if g.end != earliest_end && end_matching_other.is_some() {
                while go.end == go.start {
                    g.slide_up(changed, lines);
                    go.previous(other);
                }
            }
        }
        if !g.next(changed) {
            break;
        }
        go.next(other);
    }
}

/// What the merge takes for a region.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Take {
    Conflict,
    Ours,
    Theirs,
    /// Both sides made the same change (found when refining).
    Same,
}

/// A region of the merge: lines `i1..i1 + chg1` of ours and `i2..i2 +
/// chg2` of theirs stand for base lines `i0..i0 + chg0`.
#[derive(Debug, Clone, Copy)]
struct Region {
    take: Take,
    i0: isize,
    chg0: isize,
    i1: isize,
    chg1: isize,
    i2: isize,
    chg2: isize,
}

impl Region {
    /// Our change `c`, where their side has the base's lines at `i2`.
    fn ours(c: Hunk, i2: isize) -> Region {
        Region {
            take: Take::Ours,
            i0: c.old,
            chg0: c.old_len,
            i1: c.new,
            chg1: c.new_len,
            i2,
            chg2: c.old_len,
        }
    }

    /// Their change `c`, where our side has the base's lines at `i1`.
    fn theirs(c: Hunk, i1: isize) -> Region {
        Region {
            take: Take::Theirs,
            i0: c.old,
            chg0: c.old_len,
            i1,
            chg1: c.old_len,
            i2: c.new,
            chg2: c.new_len,
        }
    }
}

/// Appends `region`, joining it to the last one when the two touch (a
/// join of different takes is a conflict).
fn append(regions: &mut Vec<Region>, region: Region) {
    if let Some(last) = regions.last_mut() {
        if region.i1 <= last.i1 + last.chg1 || region.i2 <= last.i2 + last.chg2 {
            if region.take != last.take {
                last.take = Take::Conflict;
            }
            last.chg0 = region.i0 + region.chg0 - last.i0;
            last.chg1 = region.i1 + region.chg1 - last.i1;
            last.chg2 = region.i2 + region.chg2 - last.i2;
            return;
        }
    }
    regions.push(region);
}

/// Lines `at..at + len` of `side`.
fn span<'s, 'a>(side: &'s [&'a [u8]], at: isize, len: isize) -> &'s [&'a [u8]] {
    &side[at as usize..(at + len) as usize]
}

/// The regions the two sides' changes make, before refining.
fn regions(
    x1: &[Hunk],
    x2: &[Hunk],
    ours: &[&[u8]],
    theirs: &[&[u8]],
    base_len: isize,
) -> Vec<Region> {
    let mut out = Vec::new();
    let (mut p, mut q) = (0, 0);
    while p < x1.len() && q < x2.len() {
        let (c1, c2) = (x1[p], x2[q]);
        if c1.old + c1.old_len < c2.old {
            append(&mut out, Region::ours(c1, c2.new - c2.old + c1.old));
            p += 1;
            continue;
        }
        if c2.old + c2.old_len < c1.old {
            append(&mut out, Region::theirs(c2, c1.new - c1.old + c2.old));
            q += 1;
            continue;
        }
        let same = c1.old == c2.old
            && c1.old_len == c2.old_len
            && c1.new_len == c2.new_len
            && span(ours, c1.new, c1.new_len) == span(theirs, c2.new, c2.new_len);
        if !same {
            let off = c1.old - c2.old;
            let ffo = off + c1.old_len - c2.old_len;
            let (mut i0, mut i1, mut i2) = (c1.old, c1.new, c2.new);
            if off > 0 {
                i0 -= off;
                i1 -= off;
            } else {
                i2 += off;
            }
            let mut chg0 = c1.old + c1.old_len - i0;
            let mut chg1 = c1.new + c1.new_len - i1;
            let mut chg2 = c2.new + c2.new_len - i2;
            if ffo < 0 {
                chg0 -= ffo;
                chg1 -= ffo;
            } else {
                chg2 += ffo;
            }
            append(
                &mut out,
                Region {
                    take: Take::Conflict,
                    i0,
                    chg0,
                    i1,
                    chg1,
                    i2,
                    chg2,
                },
            );
        }
        let (end1, end2) = (c1.old + c1.old_len, c2.old + c2.old_len);
        if end1 >= end2 {
            q += 1;
        }
        if end2 >= end1 {
            p += 1;
        }
    }
    let (ours_len, theirs_len) = (ours.len() as isize, theirs.len() as isize);
    for c1 in &x1[p..] {
        append(&mut out, Region::ours(*c1, c1.old + theirs_len - base_len));
    }
    for c2 in &x2[q..] {
        append(&mut out, Region::theirs(*c2, c2.old + ours_len - base_len));
    }
    out
}

/// Narrows each conflict to the lines the two sides do not share: their
/// versions of it are diffed, and each difference is a conflict of its own.
fn refine(regions: Vec<Region>, ours: &[&[u8]], theirs: &[&[u8]]) -> Vec<Region> {
    let mut out = Vec::with_capacity(regions.len());
    for region in regions {
        if region.take != Take::Conflict || region.chg1 == 0 || region.chg2 == 0 {
            out.push(region);
            continue;
        }
        let found = hunks(
            span(ours, region.i1, region.chg1),
            span(theirs, region.i2, region.chg2),
        );
        if found.is_empty() {
            out.push(Region {
                take: Take::Same,
                ..region
            });
            continue;
        }
        for hunk in found {
            out.push(Region {
                take: Take::Conflict,
                i1: region.i1 + hunk.old,
                chg1: hunk.old_len,
                i2: region.i2 + hunk.new,
                chg2: hunk.new_len,
                ..region
            });
        }
    }
    out
}

/// Joins conflicts with three lines or fewer between them.
fn simplify(regions: &mut Vec<Region>) {
    let mut at = 0;
    while at + 1 < regions.len() {
        let (m, next) = (regions[at], regions[at + 1]);
        let between = next.i1 - (m.i1 + m.chg1);
        if m.take != Take::Conflict || next.take != Take::Conflict || between > 3 {
            at += 1;
            continue;
        }
        regions[at].chg1 = next.i1 + next.chg1 - m.i1;
        regions[at].chg2 = next.i2 + next.chg2 - m.i2;
        regions.remove(at + 1);
    }
}

/// Appends `lines`, with a newline after the last when `newline` and it
/// has none.
fn copy(out: &mut Vec<u8>, lines: &[&[u8]], newline: bool) {
    for line in lines {
        out.extend_from_slice(line);
    }
    if newline && lines.last().is_some_and(|l| !l.ends_with(b"\n")) {
        out.push(b'\n');
    }
}

fn marker(out: &mut Vec<u8>, mark: u8, label: Option<&str>) {
    out.extend_from_slice(&[mark; 7]);
    if let Some(label) = label {
        out.push(b' ');
        out.extend_from_slice(label.as_bytes());
    }
    out.push(b'\n');
}

/// Merges what `ours` and `theirs` each made of `base`; conflicts are
/// marked with `ours_label` and `theirs_label`.
pub fn merge(
    base: &[u8],
    ours: &[u8],
    theirs: &[u8],
    ours_label: &str,
    theirs_label: &str,
) -> Merged {
    if is_binary(base) || is_binary(ours) || is_binary(theirs) {
        let (data, conflicts) = if ours == theirs || base == theirs {
            (ours, 0)
        } else if base == ours {
            (theirs, 0)
        } else {
            (ours, 1)
        };
        return Merged {
            data: data.to_vec(),
            conflicts,
        };
    }
    let (b, o, t) = (lines(base), lines(ours), lines(theirs));
    let (x1, x2) = (hunks(&b, &o), hunks(&b, &t));
    if x1.is_empty() {
        return Merged {
            data: theirs.to_vec(),
            conflicts: 0,
        };
    }
    if x2.is_empty() {
        return Merged {
            data: ours.to_vec(),
            conflicts: 0,
        };
    }
    let mut regions = refine(regions(&x1, &x2, &o, &t, b.len() as isize), &o, &t);
    simplify(&mut regions);
    let mut data = Vec::with_capacity(ours.len().max(theirs.len()));
    let mut conflicts = 0;
    let mut i: isize = 0;
    for m in &regions {
        match m.take {
            Take::Conflict => {
                conflicts += 1;
                copy(&mut data, span(&o, i, m.i1 - i), false);
                marker(&mut data, b'<', Some(ours_label));
                copy(&mut data, span(&o, m.i1, m.chg1), true);
                marker(&mut data, b'=', None);
                copy(&mut data, span(&t, m.i2, m.chg2), true);
                marker(&mut data, b'>', Some(theirs_label));
            }
            Take::Ours => copy(&mut data, span(&o, i, m.i1 + m.chg1 - i), false),
            Take::Theirs => copy(
                &mut data,
                span(&t, m.i2 - m.i1 + i, m.i1 + m.chg2 - i),
                false,
            ),
            Take::Same => continue,
        }
        i = m.i1 + m.chg1;
    }
    copy(&mut data, span(&o, i, o.len() as isize - i), false);
    Merged { data, conflicts }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn merged(base: &str, ours: &str, theirs: &str) -> (String, usize) {
        let m = merge(
            base.as_bytes(),
            ours.as_bytes(),
            theirs.as_bytes(),
            "HEAD",
            "feat",
        );
        (String::from_utf8(m.data).unwrap(), m.conflicts)
    }

    #[test]
    fn changes_apart_merge_cleanly() {
        let base = "a\nb\nc\nd\ne\nf\ng\n";
        assert_eq!(
            merged(base, "a\nB\nc\nd\ne\nf\ng\n", "a\nb\nc\nd\ne\nF\ng\n"),
            ("a\nB\nc\nd\ne\nF\ng\n".into(), 0)
        );
        assert_eq!(merged(base, base, "x\n"), ("x\n".into(), 0));
        assert_eq!(
            merged(base, "a\nB\nc\nd\ne\nf\ng\n", "a\nB\nc\nd\ne\nf\ng\n"),
            ("a\nB\nc\nd\ne\nf\ng\n".into(), 0),
            "the same change on both sides"
        );
    }

    #[test]
    fn a_conflict_is_marked_as_git_marks_it() {
        let (text, n) = merged("a\nb\nc\n", "a\nX\nc\n", "a\nY\nc\n");
        assert_eq!(n, 1);
        assert_eq!(text, "a\n<<<<<<< HEAD\nX\n=======\nY\n>>>>>>> feat\nc\n");
        // Refined: lines both sides added stay outside the markers.
        let (text, n) = merged("a\n", "a\ns\nX\nt\n", "a\ns\nY\nt\n");
        assert_eq!(n, 1);
        assert_eq!(text, "a\ns\n<<<<<<< HEAD\nX\n=======\nY\n>>>>>>> feat\nt\n");
        // A missing final newline gets one before the next marker.
        let (text, _) = merged("a\n", "b", "c");
        assert_eq!(text, "<<<<<<< HEAD\nb\n=======\nc\n>>>>>>> feat\n");
    }
}
