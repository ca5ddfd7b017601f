//! `comm`: compare two sorted inputs line by line, in three columns (only
//! in the first, only in the second, in both). Like GNU, out-of-order input
//! is reported once an unpairable line has been seen.

use super::{flag, getopt, read_all, usage, with_arg};
use crate::limits::Abort;
use crate::utils::Ctx;

pub(super) fn comm(ctx: &mut Ctx<'_>, argv: &[String]) -> Result<i32, Abort> {
    let opts = [
        flag('1', ""),
        flag('2', ""),
        flag('3', ""),
        flag('i', ""),
        flag('z', "zero-terminated"),
        flag('\u{1}', "check-order"),
        flag('\u{2}', "nocheck-order"),
        with_arg('\u{3}', "output-delimiter"),
        flag('\u{4}', "total"),
    ];
    let parsed = match getopt(&argv[1..], &opts) {
        Ok(p) => p,
        Err(message) => return usage(ctx, "comm", &message, 1),
    };
    if let Some(message) = super::two_operands(&parsed.operands) {
        return usage(ctx, "comm", &message, 1);
    }
    let (inputs, failed) = read_all(ctx, "comm", &parsed.operands)?;
    if failed {
        return Ok(1);
    }
    let sep = if parsed.has('z') { 0 } else { b'\n' };
    let left = super::records(&inputs[0].1, sep);
    let right = super::records(&inputs[1].1, sep);
    let show = [!parsed.has('1'), !parsed.has('2'), !parsed.has('3')];
    let delimiter = parsed.value('\u{3}').unwrap_or("\t").as_bytes().to_vec();
    let layout = Layout {
        show,
        delimiter,
        sep,
    };
    let mut merge = Merge {
        layout: &layout,
        out: Vec::new(),
        counts: [0; 3],
        seen_unpairable: parsed.has('\u{1}'),
        disorder: [false; 2],
        check: !parsed.has('\u{2}'),
    };
    merge.run([&left, &right], parsed.has('i'));
    if parsed.has('\u{4}') {
        let [a, b, c] = merge.counts;
        let d = String::from_utf8_lossy(&layout.delimiter).into_owned();
        merge
            .out
            .extend_from_slice(format!("{a}{d}{b}{d}{c}{d}total\n").as_bytes());
    }
    for (index, disordered) in merge.disorder.iter().enumerate() {
        if *disordered {
            ctx.error(
                "comm",
                &format!("file {} is not in sorted order", index + 1),
            )?;
        }
    }
    ctx.stdout.write(&merge.out)?;
    if merge.disorder.iter().any(|d| *d) {
        ctx.error("comm", "input is not in sorted order")?;
        return Ok(1);
    }
    Ok(0)
}

/// Which columns show, and how they are separated.
struct Layout {
    show: [bool; 3],
    delimiter: Vec<u8>,
    sep: u8,
}

/// The state of one merge.
struct Merge<'l> {
    layout: &'l Layout,
    out: Vec<u8>,
    counts: [usize; 3],
    seen_unpairable: bool,
    disorder: [bool; 2],
    check: bool,
}

impl Merge<'_> {
    fn emit(&mut self, column: usize, line: &[u8]) {
        self.counts[column] += 1;
        if !self.layout.show[column] {
            return;
        }
        let indent = self.layout.show[..column].iter().filter(|s| **s).count();
        for _ in 0..indent {
            self.out.extend_from_slice(&self.layout.delimiter);
        }
        self.out.extend_from_slice(line);
        self.out.push(self.layout.sep);
    }

    /// Line `row` of input `which` has just been read.
    fn read(&mut self, which: usize, lines: &[&[u8]], row: usize, fold: bool) {
        if self.check
            && self.seen_unpairable
            && !self.disorder[which]
            && row > 0
            && row < lines.len()
        {
            self.disorder[which] = compare(lines[row - 1], lines[row], fold).is_gt();
        }
    }

    fn run(&mut self, inputs: [&[&[u8]]; 2], fold: bool) {
        let [left, right] = inputs;
        let (mut i, mut j) = (0, 0);
        while i < left.len() || j < right.len() {
            let order = match (left.get(i), right.get(j)) {
                (Some(a), Some(b)) => compare(a, b, fold),
                (Some(_), None) => std::cmp::Ordering::Less,
                _ => std::cmp::Ordering::Greater,
            };
            match order {
                std::cmp::Ordering::Less => {
                    self.seen_unpairable = true;
                    self.emit(0, left[i]);
                    i += 1;
                    self.read(0, left, i, fold);
                }
                std::cmp::Ordering::Greater => {
                    self.seen_unpairable = true;
                    self.emit(1, right[j]);
                    j += 1;
                    self.read(1, right, j, fold);
                }
                std::cmp::Ordering::Equal => {
                    self.emit(2, left[i]);
                    i += 1;
                    j += 1;
                    self.read(0, left, i, fold);
                    self.read(1, right, j, fold);
                }
            }
        }
    }
}

fn compare(a: &[u8], b: &[u8], fold: bool) -> std::cmp::Ordering {
    if fold {
        a.to_ascii_lowercase().cmp(&b.to_ascii_lowercase())
    } else {
        a.cmp(b)
    }
}

#[cfg(test)]
mod tests {
    use crate::utils::testing::{db, files, run};

    #[test]
    fn three_columns_and_suppression() {
        let db = db();
        files(&db, &[("/g1", "a\nb\nd\n"), ("/g2", "b\nc\nd\n")]);
        assert_eq!(
            run(&db, &["comm", "/g1", "/g2"], "").stdout,
            "a\n\t\tb\n\tc\n\t\td\n"
        );
        assert_eq!(
            run(&db, &["comm", "-12", "/g1", "/g2"], "").stdout,
            "b\nd\n"
        );
        assert_eq!(
            run(&db, &["comm", "-3", "/g1", "/g2"], "").stdout,
            "a\n\tc\n"
        );
        assert_eq!(
            run(&db, &["comm", "-1", "/g1", "/g2"], "").stdout,
            "\tb\nc\n\td\n"
        );
        assert_eq!(
            run(&db, &["comm", "--output-delimiter=:", "/g1", "/g2"], "").stdout,
            "a\n::b\n:c\n::d\n"
        );
        assert_eq!(
            run(&db, &["comm", "-", "/g2"], "c\n").stdout,
            "\tb\n\t\tc\n\td\n"
        );
    }

    #[test]
    fn reports_unsorted_input_like_gnu() {
        let db = db();
        files(
            &db,
            &[
                ("/f1", "b\na\n"),
                ("/f2", "c\n"),
                ("/s1", "a\nb\n"),
                ("/s2", "b\na\n"),
            ],
        );
        let r = run(&db, &["comm", "/f1", "/f2"], "");
        assert_eq!((r.stdout.as_str(), r.status), ("b\na\n\tc\n", 1));
        assert_eq!(
            r.stderr,
            "comm: file 1 is not in sorted order\ncomm: input is not in sorted order\n"
        );
        assert_eq!(run(&db, &["comm", "/s2", "/s2"], "").status, 0);
        assert_eq!(run(&db, &["comm", "/s2", "/s1"], "").status, 1);
        assert_eq!(run(&db, &["comm", "/f1"], "").status, 1);
    }
}
