//! Encodings and digests: `base64`, `md5sum`, `sha256sum`, `sha512sum`
//! (with `-c` checking and `--tag`).

use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD};
use base64::Engine as _;
use md5::Md5;
use sha2::{Digest, Sha224, Sha256, Sha384, Sha512};

use super::{flag, getopt, read_all, usage, with_arg, Parsed};
use crate::limits::Abort;
use crate::utils::Ctx;

pub(super) fn base64(ctx: &mut Ctx<'_>, argv: &[String]) -> Result<i32, Abort> {
    let opts = [
        flag('d', "decode"),
        flag('i', "ignore-garbage"),
        with_arg('w', "wrap"),
    ];
    let parsed = match getopt(&argv[1..], &opts) {
        Ok(p) => p,
        Err(message) => return usage(ctx, "base64", &message, 1),
    };
    if parsed.operands.len() > 1 {
        return usage(
            ctx,
            "base64",
            &format!("extra operand ‘{}’", parsed.operands[1]),
            1,
        );
    }
    let Some(wrap) = parsed
        .value('w')
        .map_or(Some(76), |w| w.parse::<usize>().ok())
    else {
        let w = parsed.value('w').unwrap_or_default();
        ctx.error("base64", &format!("invalid wrap size: ‘{w}’"))?;
        return Ok(1);
    };
    let (inputs, failed) = read_all(ctx, "base64", &parsed.operands)?;
    let Some((_, data)) = inputs.into_iter().next() else {
        return Ok(i32::from(failed));
    };
    if parsed.has('d') {
        return decode(ctx, &data, parsed.has('i'));
    }
    let encoded = STANDARD.encode(&data);
    ctx.stdout
        .write_str(&wrap_lines(&encoded, wrap))
        .map(|()| 0)
}

/// Breaks `text` every `width` characters (never when 0), ending with a newline.
fn wrap_lines(text: &str, width: usize) -> String {
    if text.is_empty() {
        return String::new();
    }
    if width == 0 {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len() + text.len() / width + 1);
    for chunk in text.as_bytes().chunks(width) {
        out.push_str(&String::from_utf8_lossy(chunk));
        out.push('\n');
    }
    out
}

fn decode(ctx: &mut Ctx<'_>, data: &[u8], ignore_garbage: bool) -> Result<i32, Abort> {
    let alphabet = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=');
    let cleaned: Vec<u8> = data
        .iter()
        .copied()
        .filter(|b| !b.is_ascii_whitespace() && (!ignore_garbage || alphabet(b)))
        .collect();
    match STANDARD.decode(&cleaned) {
        Ok(bytes) => ctx.stdout.write(&bytes).map(|()| 0),
        Err(_) => {
            // Like GNU, print what decodes before the bad spot.
            let mut good = cleaned
                .iter()
                .take_while(|b| alphabet(b) && **b != b'=')
                .count();
            if good % 4 == 1 {
                good -= 1;
            }
            if let Ok(bytes) = STANDARD_NO_PAD.decode(&cleaned[..good]) {
                ctx.stdout.write(&bytes)?;
            }
            ctx.error("base64", "invalid input")?;
            Ok(1)
        }
    }
}

/// A digest algorithm: its `--tag` name and how to hash.
struct Algorithm {
    util: &'static str,
    tag: &'static str,
    hex_len: usize,
    hash: fn(&[u8]) -> String,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

const MD5: Algorithm = Algorithm {
    util: "md5sum",
    tag: "MD5",
    hex_len: 32,
    hash: |data| hex(&Md5::digest(data)),
};

const SHA256: Algorithm = Algorithm {
    util: "sha256sum",
    tag: "SHA256",
    hex_len: 64,
    hash: |data| hex(&Sha256::digest(data)),
};

const SHA512: Algorithm = Algorithm {
    util: "sha512sum",
    tag: "SHA512",
    hex_len: 128,
    hash: |data| hex(&Sha512::digest(data)),
};

const SHA1: Algorithm = Algorithm {
    util: "sha1sum",
    tag: "SHA1",
    hex_len: 40,
    hash: |data| hex(&sha1(data)),
};

const SHA224: Algorithm = Algorithm {
    util: "sha224sum",
    tag: "SHA224",
    hex_len: 56,
    hash: |data| hex(&Sha224::digest(data)),
};

const SHA384: Algorithm = Algorithm {
    util: "sha384sum",
    tag: "SHA384",
    hex_len: 96,
    hash: |data| hex(&Sha384::digest(data)),
};

/// SHA-1 (FIPS 180-4), written out because no SHA-1 crate is a dependency.
/// Only for `sha1sum` compatibility: SHA-1 is not collision resistant.
fn sha1(data: &[u8]) -> [u8; 20] {
    let mut state: [u32; 5] = [
        0x6745_2301,
        0xEFCD_AB89,
        0x98BA_DCFE,
        0x1032_5476,
        0xC3D2_E1F0,
    ];
    let mut message = data.to_vec();
    message.push(0x80);
    while message.len() % 64 != 56 {
        message.push(0);
    }
    message.extend_from_slice(&((data.len() as u64) * 8).to_be_bytes());
    for block in message.chunks(64) {
        let mut w = [0u32; 80];
        for (i, word) in block.chunks(4).enumerate() {
            w[i] = u32::from_be_bytes([word[0], word[1], word[2], word[3]]);
        }
        for i in 16..80 {
            w[i] = (w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16]).rotate_left(1);
        }
        let [mut a, mut b, mut c, mut d, mut e] = state;
        for (i, word) in w.iter().enumerate() {
            let (f, k) = match i {
                0..=19 => ((b & c) | (!b & d), 0x5A82_7999),
                20..=39 => (b ^ c ^ d, 0x6ED9_EBA1),
                40..=59 => ((b & c) | (b & d) | (c & d), 0x8F1B_BCDC),
                _ => (b ^ c ^ d, 0xCA62_C1D6),
            };
            let next = a
                .rotate_left(5)
                .wrapping_add(f)
                .wrapping_add(e)
                .wrapping_add(k)
                .wrapping_add(*word);
            (e, d, c, b, a) = (d, c, b.rotate_left(30), a, next);
        }
        for (slot, value) in state.iter_mut().zip([a, b, c, d, e]) {
            *slot = slot.wrapping_add(value);
        }
    }
    let mut out = [0u8; 20];
    for (chunk, value) in out.chunks_mut(4).zip(state) {
        chunk.copy_from_slice(&value.to_be_bytes());
    }
    out
}

pub(super) fn sha1sum(ctx: &mut Ctx<'_>, argv: &[String]) -> Result<i32, Abort> {
    digest(ctx, argv, &SHA1)
}

pub(super) fn sha224sum(ctx: &mut Ctx<'_>, argv: &[String]) -> Result<i32, Abort> {
    digest(ctx, argv, &SHA224)
}

pub(super) fn sha384sum(ctx: &mut Ctx<'_>, argv: &[String]) -> Result<i32, Abort> {
    digest(ctx, argv, &SHA384)
}

pub(super) fn md5sum(ctx: &mut Ctx<'_>, argv: &[String]) -> Result<i32, Abort> {
    digest(ctx, argv, &MD5)
}

pub(super) fn sha256sum(ctx: &mut Ctx<'_>, argv: &[String]) -> Result<i32, Abort> {
    digest(ctx, argv, &SHA256)
}

pub(super) fn sha512sum(ctx: &mut Ctx<'_>, argv: &[String]) -> Result<i32, Abort> {
    digest(ctx, argv, &SHA512)
}

fn digest(ctx: &mut Ctx<'_>, argv: &[String], algorithm: &Algorithm) -> Result<i32, Abort> {
    let opts = [
        flag('b', "binary"),
        flag('t', "text"),
        flag('c', "check"),
        flag('z', "zero"),
        flag('\u{1}', "tag"),
        flag('\u{2}', "quiet"),
        flag('\u{3}', "status"),
        flag('w', "warn"),
        flag('\u{4}', "strict"),
        flag('\u{5}', "ignore-missing"),
    ];
    let parsed = match getopt(&argv[1..], &opts) {
        Ok(p) => p,
        Err(message) => return usage(ctx, algorithm.util, &message, 1),
    };
    let (inputs, failed) = read_all(ctx, algorithm.util, &parsed.operands)?;
    if parsed.has('c') {
        return check_all(ctx, algorithm, &inputs, &parsed)
            .map(|status| status.max(i32::from(failed)));
    }
    let mut out = String::new();
    for (name, data) in &inputs {
        ctx.budget.charge_cpu(data.len() as u64)?;
        let sum = (algorithm.hash)(data);
        if parsed.has('\u{1}') {
            out.push_str(&format!("{} ({name}) = {sum}\n", algorithm.tag));
        } else {
            let mode = if parsed.has('b') { '*' } else { ' ' };
            out.push_str(&format!("{sum} {mode}{name}\n"));
        }
    }
    ctx.stdout.write_str(&out)?;
    Ok(i32::from(failed))
}

/// Parses a check line: `HASH  NAME`, `HASH *NAME` or `TAG (NAME) = HASH`.
fn check_line<'l>(line: &'l str, algorithm: &Algorithm) -> Option<(&'l str, &'l str)> {
    if let Some(rest) = line
        .strip_prefix(algorithm.tag)
        .and_then(|r| r.strip_prefix(" ("))
    {
        let (name, hash) = rest.rsplit_once(") = ")?;
        return (hash.len() == algorithm.hex_len).then_some((hash, name));
    }
    let (hash, rest) = line.split_once(' ')?;
    let name = rest.strip_prefix(' ').or_else(|| rest.strip_prefix('*'))?;
    let valid = hash.len() == algorithm.hex_len && hash.bytes().all(|b| b.is_ascii_hexdigit());
    valid.then_some((hash, name))
}

/// Tallies of a `-c` run.
#[derive(Default)]
struct CheckTally {
    mismatched: usize,
    unreadable: usize,
    malformed: usize,
}

fn check_all(
    ctx: &mut Ctx<'_>,
    algorithm: &Algorithm,
    inputs: &[(String, Vec<u8>)],
    parsed: &Parsed,
) -> Result<i32, Abort> {
    let (quiet, status_only) = (parsed.has('\u{2}'), parsed.has('\u{3}'));
    let mut tally = CheckTally::default();
    let mut status = 0;
    for (list_name, list) in inputs {
        let text = String::from_utf8_lossy(list).into_owned();
        let mut well_formed = 0;
        for line in text.lines() {
            let Some((expected, name)) = check_line(line, algorithm) else {
                tally.malformed += 1;
                continue;
            };
            well_formed += 1;
            let verdict = match super::read_operand(ctx, name)? {
                Ok(data) if (algorithm.hash)(&data).eq_ignore_ascii_case(expected) => "OK",
                Ok(_) => {
                    tally.mismatched += 1;
                    "FAILED"
                }
                Err(error) => {
                    tally.unreadable += 1;
                    ctx.fs_error(algorithm.util, name, &error)?;
                    "FAILED open or read"
                }
            };
            let show = !status_only && (!quiet || verdict != "OK");
            if show {
                ctx.stdout.write_str(&format!("{name}: {verdict}\n"))?;
            }
        }
        if well_formed == 0 {
            let shown = if list_name == "-" {
                "standard input"
            } else {
                list_name
            };
            ctx.error(
                algorithm.util,
                &format!("{shown}: no properly formatted checksum lines found"),
            )?;
            status = 1;
        }
    }
    report_tally(ctx, algorithm.util, &tally, status_only)?;
    Ok(if tally.mismatched + tally.unreadable > 0 {
        1
    } else {
        status
    })
}

fn report_tally(
    ctx: &mut Ctx<'_>,
    util: &str,
    tally: &CheckTally,
    status_only: bool,
) -> Result<(), Abort> {
    let plural = |n: usize, one: &str, many: &str| {
        if n == 1 {
            one.to_string()
        } else {
            many.to_string()
        }
    };
    if tally.malformed > 0 && !status_only {
        let lines = plural(tally.malformed, "line is", "lines are");
        ctx.error(
            util,
            &format!("WARNING: {} {lines} improperly formatted", tally.malformed),
        )?;
    }
    if tally.unreadable > 0 && !status_only {
        let files = plural(
            tally.unreadable,
            "listed file could not be read",
            "listed files could not be read",
        );
        ctx.error(util, &format!("WARNING: {} {files}", tally.unreadable))?;
    }
    if tally.mismatched > 0 && !status_only {
        let sums = plural(
            tally.mismatched,
            "computed checksum did NOT match",
            "computed checksums did NOT match",
        );
        ctx.error(util, &format!("WARNING: {} {sums}", tally.mismatched))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::utils::testing::{db, files, run};

    #[test]
    fn base64_encodes_wraps_and_decodes() {
        let db = db();
        assert_eq!(run(&db, &["base64"], "hi\n").stdout, "aGkK\n");
        assert_eq!(run(&db, &["base64", "-d"], "aGkK\n").stdout, "hi\n");
        let long = "0".repeat(100);
        let wrapped = run(&db, &["base64"], &long).stdout;
        assert_eq!(
            wrapped.lines().map(str::len).collect::<Vec<_>>(),
            vec![76, 60]
        );
        assert_eq!(
            run(&db, &["base64", "-w", "0"], &long)
                .stdout
                .lines()
                .count(),
            1
        );
        assert!(!run(&db, &["base64", "-w0"], "x").stdout.ends_with('\n'));
        let bad = run(&db, &["base64", "-d"], "!!\n");
        assert_eq!(
            (bad.status, bad.stderr.as_str()),
            (1, "base64: invalid input\n")
        );
        assert_eq!(run(&db, &["base64", ""], "").status, 1);
    }

    #[test]
    fn digests_match_gnu() {
        let db = db();
        files(&db, &[("/h1", "hi\n")]);
        assert_eq!(
            run(&db, &["md5sum"], "hi\n").stdout,
            "764efa883dda1e11db47671c4a3bbd9e  -\n"
        );
        assert_eq!(
            run(&db, &["md5sum", "--tag", "/h1"], "").stdout,
            "MD5 (/h1) = 764efa883dda1e11db47671c4a3bbd9e\n"
        );
        assert_eq!(
            run(&db, &["sha256sum", "/h1"], "").stdout,
            "98ea6e4f216f2fb4b69fff9b3a44842c38686ca685f3f55dc48c5d3fb1107be4  /h1\n"
        );
        assert_eq!(
            run(&db, &["sha512sum"], "")
                .stdout
                .split(' ')
                .next()
                .map(str::len),
            Some(128)
        );
        let missing = run(&db, &["md5sum", "/nope"], "");
        assert_eq!(
            (missing.status, missing.stderr.as_str()),
            (1, "md5sum: /nope: No such file or directory\n")
        );
    }

    #[test]
    fn digest_check_mode() {
        let db = db();
        let good = "98ea6e4f216f2fb4b69fff9b3a44842c38686ca685f3f55dc48c5d3fb1107be4";
        let bad = "0".repeat(64);
        files(
            &db,
            &[
                ("/h1", "hi\n"),
                ("/ok", &format!("{good}  /h1\n")),
                ("/bad", &format!("{bad}  /h1\nnonsense\n")),
            ],
        );
        let ok = run(&db, &["sha256sum", "-c", "/ok"], "");
        assert_eq!((ok.status, ok.stdout.as_str()), (0, "/h1: OK\n"));
        assert_eq!(
            run(&db, &["sha256sum", "-c", "--quiet", "/ok"], "").stdout,
            ""
        );
        let failed = run(&db, &["sha256sum", "-c", "/bad"], "");
        assert_eq!(
            (failed.status, failed.stdout.as_str()),
            (1, "/h1: FAILED\n")
        );
        assert_eq!(
            failed.stderr,
            "sha256sum: WARNING: 1 line is improperly formatted\nsha256sum: WARNING: 1 computed checksum did NOT match\n"
        );
        let none = run(&db, &["sha256sum", "-c"], "junk\n");
        assert_eq!(none.status, 1);
        assert!(none
            .stderr
            .contains("standard input: no properly formatted checksum lines found"));
    }
}
