//! `split`: cut an input into files of N lines (`-l`), N bytes (`-b`) or N
//! chunks (`-n`), named PREFIX + suffix (`aa`, `ab`, ... or `00` with `-d`).

use super::{flag, getopt, parse_count, read_operand, usage, with_arg, Parsed};
use crate::limits::Abort;
use crate::utils::Ctx;

/// How the input is cut.
#[derive(Clone, Copy)]
enum Cut {
    Lines(usize),
    Bytes(usize),
    Chunks(usize),
}

pub(super) fn split(ctx: &mut Ctx<'_>, argv: &[String]) -> Result<i32, Abort> {
    let opts = [
        with_arg('l', "lines"),
        with_arg('b', "bytes"),
        with_arg('n', "number"),
        with_arg('a', "suffix-length"),
        flag('d', ""),
        flag('x', ""),
        with_arg('\u{1}', "additional-suffix"),
        flag('\u{2}', "numeric-suffixes"),
        flag('\u{3}', "verbose"),
    ];
    let parsed = match getopt(&argv[1..], &opts) {
        Ok(p) => p,
        Err(message) => return usage(ctx, "split", &message, 1),
    };
    let cut = match cut_of(&parsed) {
        Ok(cut) => cut,
        Err(message) => {
            ctx.error("split", &message)?;
            return Ok(1);
        }
    };
    let input = parsed
        .operands
        .first()
        .map_or("-", String::as_str)
        .to_string();
    let prefix = parsed
        .operands
        .get(1)
        .map_or("x", String::as_str)
        .to_string();
    if let Some(extra) = parsed.operands.get(2) {
        return usage(ctx, "split", &format!("extra operand ‘{extra}’"), 1);
    }
    let data = match read_operand(ctx, &input)? {
        Ok(data) => data,
        Err(error) => {
            let message = format!(
                "cannot open '{input}' for reading: {}",
                crate::utils::strerror(&error)
            );
            ctx.error("split", &message)?;
            return Ok(1);
        }
    };
    let pieces = pieces(&data, cut);
    let naming = Naming {
        prefix,
        numeric: parsed.has('d') || parsed.has('\u{2}') || parsed.has('x'),
        hex: parsed.has('x'),
        length: parsed.value('a').and_then(|a| a.parse().ok()).unwrap_or(2),
        extra: parsed.value('\u{1}').unwrap_or("").to_string(),
    };
    for (index, piece) in pieces.iter().enumerate() {
        let Some(name) = naming.name(index) else {
            ctx.error("split", "output file suffixes exhausted")?;
            return Ok(1);
        };
        if parsed.has('\u{3}') {
            ctx.stdout.write_str(&format!("creating file '{name}'\n"))?;
        }
        if let Err(error) = super::save(ctx, &name, piece)? {
            ctx.fs_error("split", &name, &error)?;
            return Ok(1);
        }
    }
    Ok(0)
}

fn cut_of(parsed: &Parsed) -> Result<Cut, String> {
    let positive = |text: &str, what: &str| {
        parse_count(text)
            .and_then(|n| usize::try_from(n).ok())
            .filter(|n| *n > 0)
            .ok_or_else(|| format!("invalid number of {what}: ‘{text}’"))
    };
    if let Some(lines) = parsed.value('l') {
        return positive(lines, "lines").map(Cut::Lines);
    }
    if let Some(bytes) = parsed.value('b') {
        return positive(bytes, "bytes").map(Cut::Bytes);
    }
    if let Some(chunks) = parsed.value('n') {
        return positive(chunks, "chunks").map(Cut::Chunks);
    }
    Ok(Cut::Lines(1000))
}

fn pieces(data: &[u8], cut: Cut) -> Vec<&[u8]> {
    match cut {
        Cut::Bytes(size) => data.chunks(size).collect(),
        Cut::Lines(count) => {
            let lines: Vec<&[u8]> = data.split_inclusive(|b| *b == b'\n').collect();
            lines
                .chunks(count)
                .map(|group| {
                    let start = group[0].as_ptr() as usize - data.as_ptr() as usize;
                    let len: usize = group.iter().map(|l| l.len()).sum();
                    &data[start..start + len]
                })
                .collect()
        }
        Cut::Chunks(count) => {
            let size = data.len() / count;
            (0..count)
                .map(|i| {
                    let end = if i + 1 == count {
                        data.len()
                    } else {
                        (i + 1) * size
                    };
                    &data[i * size..end]
                })
                .collect()
        }
    }
}

/// Output file names.
struct Naming {
    prefix: String,
    numeric: bool,
    hex: bool,
    length: usize,
    extra: String,
}

impl Naming {
    fn name(&self, index: usize) -> Option<String> {
        let (base, digits): (usize, &[u8]) = match (self.numeric, self.hex) {
            (true, true) => (16, b"0123456789abcdef"),
            (true, false) => (10, b"0123456789"),
            _ => (26, b"abcdefghijklmnopqrstuvwxyz"),
        };
        let mut rest = index;
        let mut suffix = vec![digits[0]; self.length];
        for slot in suffix.iter_mut().rev() {
            *slot = digits[rest % base];
            rest /= base;
        }
        if rest > 0 {
            return None;
        }
        Some(format!(
            "{}{}{}",
            self.prefix,
            String::from_utf8_lossy(&suffix),
            self.extra
        ))
    }
}

#[cfg(test)]
mod tests {
    use crate::utils::testing::{db, run};

    #[test]
    fn splits_by_lines_bytes_and_chunks() {
        let db = db();
        run(&db, &["split", "-l", "2"], "1\n2\n3\n4\n5\n");
        assert_eq!(run(&db, &["cat", "/xaa"], "").stdout, "1\n2\n");
        assert_eq!(run(&db, &["cat", "/xac"], "").stdout, "5\n");
        run(&db, &["split", "-l", "2", "-d", "-", "pre"], "1\n2\n3\n");
        assert_eq!(run(&db, &["cat", "/pre01"], "").stdout, "3\n");
        run(&db, &["split", "-b", "3", "-a", "3", "-", "b"], "abcdefgh");
        assert_eq!(run(&db, &["cat", "/baac"], "").stdout, "gh");
        run(&db, &["split", "-n", "3", "-", "n"], "abcdefgh");
        assert_eq!(run(&db, &["cat", "/nab", "/nac"], "").stdout, "cdefgh");
        run(
            &db,
            &["split", "-l", "1", "--additional-suffix=.txt", "-", "s"],
            "a\nb\n",
        );
        assert_eq!(run(&db, &["cat", "/sab.txt"], "").stdout, "b\n");
    }

    #[test]
    fn reports_bad_counts_and_exhausted_suffixes() {
        let db = db();
        assert_eq!(run(&db, &["split", "-l", "0"], "x\n").status, 1);
        let many: String = (0..30).map(|i| format!("{i}\n")).collect();
        let r = run(&db, &["split", "-l", "1", "-a", "1"], &many);
        assert_eq!(
            (r.status, r.stderr.as_str()),
            (1, "split: output file suffixes exhausted\n")
        );
    }
}
