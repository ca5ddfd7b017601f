//! `shuf`: random permutations of lines (or of `-e` arguments, or of a
//! `-i LO-HI` range), optionally only `-n` of them or `-r` with repeats.
//! The randomness is a xorshift generator seeded from the clock: fine for
//! sampling, not for secrets.

use super::{flag, getopt, read_operand, records, usage, with_arg, Parsed};
use crate::limits::Abort;
use crate::utils::Ctx;

/// A small, seedable random source.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// Uniform in `0..bound` (`bound` > 0).
    fn below(&mut self, bound: usize) -> usize {
        (self.next() % bound as u64) as usize
    }
}

pub(super) fn shuf(ctx: &mut Ctx<'_>, argv: &[String]) -> Result<i32, Abort> {
    let opts = [
        flag('e', "echo"),
        with_arg('i', "input-range"),
        with_arg('n', "head-count"),
        with_arg('o', "output"),
        flag('r', "repeat"),
        flag('z', "zero-terminated"),
        with_arg('\u{1}', "random-source"),
    ];
    let parsed = match getopt(&argv[1..], &opts) {
        Ok(p) => p,
        Err(message) => return usage(ctx, "shuf", &message, 1),
    };
    let sep = if parsed.has('z') { 0 } else { b'\n' };
    let Some(count) = parsed
        .value('n')
        .map_or(Some(usize::MAX), |n| n.parse().ok())
    else {
        let n = parsed.value('n').unwrap_or_default();
        ctx.error("shuf", &format!("invalid line count: ‘{n}’"))?;
        return Ok(1);
    };
    let items = match items(ctx, &parsed, sep)? {
        Ok(items) => items,
        Err(message) => {
            ctx.error("shuf", &message)?;
            return Ok(1);
        }
    };
    ctx.budget.charge_cpu(items.len() as u64)?;
    let mut random = XorShift(ctx.clock.now_ms() ^ 0x9E37_79B9_7F4A_7C15 | 1);
    let mut out = Vec::new();
    if parsed.has('r') {
        repeat(
            ctx,
            &items,
            count,
            sep,
            parsed.value('o').is_none(),
            &mut random,
            &mut out,
        )?;
    } else {
        for item in permute(items, count, &mut random) {
            out.extend_from_slice(&item);
            out.push(sep);
        }
    }
    super::save_or_print(ctx, "shuf", parsed.value('o'), &out)
}

/// What to shuffle: `-e` operands, a `-i LO-HI` range, or the input's lines.
fn items(
    ctx: &mut Ctx<'_>,
    parsed: &Parsed,
    sep: u8,
) -> Result<Result<Vec<Vec<u8>>, String>, Abort> {
    if parsed.has('e') {
        return Ok(Ok(parsed
            .operands
            .iter()
            .map(|o| o.as_bytes().to_vec())
            .collect()));
    }
    if let Some(range) = parsed.value('i') {
        let bounds = range
            .split_once('-')
            .and_then(|(lo, hi)| Some((lo.parse::<u64>().ok()?, hi.parse::<u64>().ok()?)));
        return Ok(match bounds {
            Some((lo, hi)) if lo <= hi.saturating_add(1) && hi.saturating_sub(lo) < 10_000_000 => {
                Ok((lo..=hi).map(|n| n.to_string().into_bytes()).collect())
            }
            _ => Err(format!("invalid input range: ‘{range}’")),
        });
    }
    let operand = parsed.operands.first().map_or("-", String::as_str);
    Ok(match read_operand(ctx, operand)? {
        Ok(data) => Ok(records(&data, sep)
            .into_iter()
            .map(<[u8]>::to_vec)
            .collect()),
        Err(error) => Err(format!("{operand}: {}", crate::utils::strerror(&error))),
    })
}

/// The first `count` items of a Fisher-Yates shuffle.
fn permute(mut items: Vec<Vec<u8>>, count: usize, random: &mut XorShift) -> Vec<Vec<u8>> {
    let take = count.min(items.len());
    for i in 0..take {
        let j = i + random.below(items.len() - i);
        items.swap(i, j);
    }
    items.truncate(take);
    items
}

/// `count` draws with replacement (`-r`) into `out`; without `-n` that is
/// endless, as GNU's: it ends when the output cannot take more (the
/// output cap, or a full pipe as with SIGPIPE), or, for `-o FILE`, at the
/// memory budget. With `to_stdout`, what is drawn is written as it goes.
fn repeat(
    ctx: &mut Ctx<'_>,
    items: &[Vec<u8>],
    count: usize,
    sep: u8,
    to_stdout: bool,
    random: &mut XorShift,
    out: &mut Vec<u8>,
) -> Result<(), Abort> {
    if items.is_empty() {
        return Ok(());
    }
    const CHUNK: usize = 64 << 10;
    for _ in 0..count {
        let item = &items[random.below(items.len())];
        out.extend_from_slice(item);
        out.push(sep);
        if out.len() >= CHUNK {
            ctx.budget.charge_cpu(out.len() as u64)?;
            if to_stdout {
                ctx.stdout.write(out)?;
                out.clear();
            } else {
                ctx.budget.check_memory(out.len() as u64)?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::utils::testing::{db, run};

    fn sorted(text: &str) -> Vec<&str> {
        let mut lines: Vec<&str> = text.lines().collect();
        lines.sort_unstable();
        lines
    }

    #[test]
    fn permutes_every_line_once() {
        let r = run(&db(), &["shuf"], "a\nb\nc\nd\n");
        assert_eq!(sorted(&r.stdout), vec!["a", "b", "c", "d"]);
        let e = run(&db(), &["shuf", "-e", "x", "y"], "");
        assert_eq!(sorted(&e.stdout), vec!["x", "y"]);
        let i = run(&db(), &["shuf", "-i", "1-5"], "");
        assert_eq!(sorted(&i.stdout), vec!["1", "2", "3", "4", "5"]);
    }

    #[test]
    fn counts_and_repeats() {
        assert_eq!(
            run(&db(), &["shuf", "-n", "2", "-i", "1-100"], "")
                .stdout
                .lines()
                .count(),
            2
        );
        let r = run(&db(), &["shuf", "-r", "-n", "5", "-e", "z"], "");
        assert_eq!(r.stdout, "z\nz\nz\nz\nz\n");
        assert_eq!(run(&db(), &["shuf", "-n", "x"], "").status, 1);
        assert_eq!(run(&db(), &["shuf", "-i", "5-1"], "").status, 1);
        assert_eq!(run(&db(), &["shuf", "-i", "5-4"], "").stdout, "");
        let db = db();
        assert_eq!(run(&db, &["shuf", "-o", "/out", "-e", "q"], "").stdout, "");
        assert_eq!(run(&db, &["cat", "/out"], "").stdout, "q\n");
        let missing = run(&db, &["shuf", "/nope"], "");
        assert_eq!(
            (missing.status, missing.stderr.as_str()),
            (1, "shuf: /nope: No such file or directory\n")
        );
    }
}
