//! The per-process settings bash keeps for the commands it starts: resource
//! limits (`ulimit`) and the file creation mask (`umask`).
//!
//! Limits have a soft and a hard value, start as on a typical Linux
//! account, and follow the kernel's rules: the soft limit may not exceed
//! the hard one, and the hard one may be lowered but not raised (the agent
//! is not root). The light shell enforces the ones that have a meaning for
//! it: `-f` (a redirection that would make a file larger ends the shell as
//! `SIGXFSZ` does, status 153) and `-n` (with fewer than four descriptors
//! allowed a redirection cannot open its file). The others are recorded and
//! reported; the isolate's own limits (`Limits`) bound what a script uses.
//!
//! The mask applies to files the shell's redirections create; utilities
//! create files with the usual `0644` and directories with `0755`.

use std::collections::BTreeMap;

use super::{flags, Shell, R};

/// `RLIM_INFINITY`.
const UNLIMITED: u64 = u64::MAX;

/// One resource `ulimit` knows.
struct Resource {
    flag: char,
    description: &'static str,
    /// What a value counts (`ulimit -a` shows it).
    unit: &'static str,
    /// Bytes (or other base units) per unit of the value.
    scale: u64,
    soft: u64,
    hard: u64,
}

const fn res(
    flag: char,
    description: &'static str,
    unit: &'static str,
    scale: u64,
    soft: u64,
    hard: u64,
) -> Resource {
    Resource {
        flag,
        description,
        unit,
        scale,
        soft,
        hard,
    }
}

/// bash's resources, in `ulimit -a` order, with a Linux account's defaults.
const RESOURCES: &[Resource] = &[
    res(
        'R',
        "real-time non-blocking time",
        "microseconds",
        1,
        UNLIMITED,
        UNLIMITED,
    ),
    res('c', "core file size", "blocks", 1024, 0, UNLIMITED),
    res('d', "data seg size", "kbytes", 1024, UNLIMITED, UNLIMITED),
    res('e', "scheduling priority", "", 1, 0, 0),
    res('f', "file size", "blocks", 1024, UNLIMITED, UNLIMITED),
    res('i', "pending signals", "", 1, 63_382, 63_382),
    res('l', "max locked memory", "kbytes", 1024, 8_192, 8_192),
    res('m', "max memory size", "kbytes", 1024, UNLIMITED, UNLIMITED),
    res('n', "open files", "", 1, 1_024, 1_048_576),
    res('p', "pipe size", "512 bytes", 512, 8, 8),
    res('q', "POSIX message queues", "bytes", 1, 819_200, 819_200),
    res('r', "real-time priority", "", 1, 0, 0),
    res('s', "stack size", "kbytes", 1024, 8_192, UNLIMITED),
    res('t', "cpu time", "seconds", 1, UNLIMITED, UNLIMITED),
    res('u', "max user processes", "", 1, 63_382, 63_382),
    res('v', "virtual memory", "kbytes", 1024, UNLIMITED, UNLIMITED),
    res('x', "file locks", "", 1, UNLIMITED, UNLIMITED),
];

fn resource(flag: char) -> Option<&'static Resource> {
    RESOURCES.iter().find(|r| r.flag == flag)
}

/// The limits a shell has changed from the defaults, in base units.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Limits {
    changed: BTreeMap<char, (u64, u64)>,
}

impl Limits {
    /// `(soft, hard)` of a resource.
    fn get(&self, flag: char) -> (u64, u64) {
        if let Some(v) = self.changed.get(&flag) {
            return *v;
        }
        let r = resource(flag).expect("known resource");
        (scaled(r.soft, r.scale), scaled(r.hard, r.scale))
    }

    /// The soft `-f` limit in bytes, if any.
    pub(crate) fn file_size(&self) -> Option<u64> {
        Some(self.get('f').0).filter(|v| *v != UNLIMITED)
    }

    /// The soft `-n` limit.
    pub(crate) fn open_files(&self) -> u64 {
        self.get('n').0
    }
}

fn scaled(value: u64, scale: u64) -> u64 {
    if value == UNLIMITED {
        UNLIMITED
    } else {
        value.saturating_mul(scale)
    }
}

fn shown(value: u64, scale: u64) -> String {
    if value == UNLIMITED {
        "unlimited".to_string()
    } else {
        (value / scale).to_string()
    }
}

/// `ulimit [-SHa] [-RcdefilmnpqrstuvxT...] [limit]`
pub(super) fn ulimit(sh: &mut Shell, args: &[String]) -> R<i32> {
    let known: String = "SHa"
        .chars()
        .chain(RESOURCES.iter().map(|r| r.flag))
        .collect();
    let parsed = match flags::parse(args, &known, "") {
        Ok(parsed) => parsed,
        Err(bad) => {
            sh.err_line(&format!("ulimit: {}", bad.message()))?;
            sh.err_line("ulimit: usage: ulimit [-SHabcdefiklmnpqrstuvxPRT] [limit]")?;
            return Ok(2);
        }
    };
    let (mut soft, mut hard, mut all) = (false, false, false);
    let mut flags = Vec::new();
    for (c, _) in parsed.flags {
        match c {
            'S' => soft = true,
            'H' => hard = true,
            'a' => all = true,
            c => flags.push(c),
        }
    }
    if all {
        return print_all(sh, hard && !soft);
    }
    if flags.is_empty() {
        flags.push('f');
    }
    let Some(value) = parsed.operands.first() else {
        let mut text = String::new();
        for &flag in &flags {
            let r = resource(flag).expect("known resource");
            let (s, h) = sh.st.limits.get(flag);
            let v = if hard && !soft { h } else { s };
            if flags.len() > 1 {
                text.push_str(&format!(
                    "{:<28}({}{}-{flag}) ",
                    r.description,
                    r.unit,
                    if r.unit.is_empty() { "" } else { ", " }
                ));
            }
            text.push_str(&shown(v, r.scale));
            text.push('\n');
        }
        sh.out(&text)?;
        return Ok(0);
    };
    // The value applies to the last resource named.
    let flag = *flags.last().expect("a resource");
    let r = resource(flag).expect("known resource");
    let (old_soft, old_hard) = sh.st.limits.get(flag);
    let new = match value.as_str() {
        "unlimited" => Some(Some(UNLIMITED)),
        "hard" => Some(Some(old_hard)),
        "soft" => Some(Some(old_soft)),
        v => v.parse::<u64>().ok().map(|n| n.checked_mul(r.scale)),
    };
    let new = match new {
        None => {
            sh.err_line(&format!("ulimit: {value}: invalid number"))?;
            return Ok(1);
        }
        Some(None) => {
            sh.err_line(&format!("ulimit: {value}: limit out of range"))?;
            return Ok(1);
        }
        Some(Some(n)) => n,
    };
    let (set_soft, set_hard) = if soft || hard {
        (soft, hard)
    } else {
        (true, true)
    };
    let soft_v = if set_soft { new } else { old_soft };
    let hard_v = if set_hard { new } else { old_hard };
    let why = if set_hard && hard_v > old_hard {
        Some("Operation not permitted")
    } else if soft_v > hard_v {
        Some("Invalid argument")
    } else {
        None
    };
    if let Some(why) = why {
        sh.err_line(&format!(
            "ulimit: {}: cannot modify limit: {why}",
            r.description
        ))?;
        return Ok(1);
    }
    sh.st.limits.changed.insert(flag, (soft_v, hard_v));
    Ok(0)
}

fn print_all(sh: &mut Shell, hard: bool) -> R<i32> {
    let mut text = String::new();
    for r in RESOURCES {
        let (s, h) = sh.st.limits.get(r.flag);
        let unit = if r.unit.is_empty() {
            format!("(-{})", r.flag)
        } else {
            format!("({}, -{})", r.unit, r.flag)
        };
        let label = format!("{} {unit}", r.description);
        text.push_str(&format!(
            "{label:<36}{}\n",
            shown(if hard { h } else { s }, r.scale)
        ));
    }
    sh.out(&text)?;
    Ok(0)
}

/// `umask [-p] [-S] [mode]`: octal or symbolic (`u=rwx,g-w,o=`).
pub(super) fn umask(sh: &mut Shell, args: &[String]) -> R<i32> {
    let (mut symbolic, mut reusable) = (false, false);
    let mut i = 1;
    while let Some(a) = args.get(i).filter(|a| a.starts_with('-') && a.len() > 1) {
        for c in a[1..].chars() {
            match c {
                'S' => symbolic = true,
                'p' => reusable = true,
                _ => {
                    sh.err_line(&format!("umask: -{c}: invalid option"))?;
                    sh.err_line("umask: usage: umask [-p] [-S] [mode]")?;
                    return Ok(2);
                }
            }
        }
        i += 1;
    }
    let Some(mode) = args.get(i) else {
        let m = sh.st.umask;
        let text = if symbolic {
            symbolic_mask(m)
        } else {
            format!("{m:04o}")
        };
        let prefix = if reusable { "umask " } else { "" };
        let flag = if reusable && symbolic { "-S " } else { "" };
        sh.out(&format!("{prefix}{flag}{text}\n"))?;
        return Ok(0);
    };
    let parsed = if mode.starts_with(|c: char| c.is_ascii_digit()) {
        u32::from_str_radix(mode, 8)
            .ok()
            .filter(|m| *m <= 0o777)
            .ok_or("octal number out of range")
    } else {
        apply_symbolic(sh.st.umask, mode).ok_or("invalid symbolic mode operator")
    };
    match parsed {
        Ok(m) => {
            sh.st.umask = m;
            if symbolic {
                sh.out(&format!("{}\n", symbolic_mask(m)))?;
            }
            Ok(0)
        }
        Err(why) => {
            sh.err_line(&format!("umask: {mode}: {why}"))?;
            Ok(1)
        }
    }
}

/// `u=rwx,g=rx,o=rx` for mask `022`.
fn symbolic_mask(mask: u32) -> String {
    let allowed = !mask & 0o777;
    ["u", "g", "o"]
        .iter()
        .enumerate()
        .map(|(i, who)| {
            let bits = (allowed >> (6 - 3 * i)) & 7;
            let perms: String = [(4, 'r'), (2, 'w'), (1, 'x')]
                .iter()
                .filter(|(b, _)| bits & b != 0)
                .map(|(_, c)| *c)
                .collect();
            format!("{who}={perms}")
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// Applies `u+w,go-x,a=r` to a mask: the clauses speak of the permissions
/// allowed, which are the mask's complement.
fn apply_symbolic(mask: u32, spec: &str) -> Option<u32> {
    let mut allowed = !mask & 0o777;
    for clause in spec.split(',') {
        let op_at = clause.find(['+', '-', '='])?;
        let (who, rest) = clause.split_at(op_at);
        let mut whom = 0;
        for c in who.chars() {
            whom |= match c {
                'u' => 0o700,
                'g' => 0o070,
                'o' => 0o007,
                'a' => 0o777,
                _ => return None,
            };
        }
        if whom == 0 {
            whom = 0o777;
        }
        let op = rest.chars().next()?;
        let mut bits = 0;
        for c in rest[1..].chars() {
            bits |= match c {
                'r' => 0o444,
                'w' => 0o222,
                'x' => 0o111,
                _ => return None,
            };
        }
        let bits = bits & whom;
        allowed = match op {
            '+' => allowed | bits,
            '-' => allowed & !bits,
            _ => (allowed & !whom) | bits,
        };
    }
    Some(!allowed & 0o777)
}

impl Shell<'_> {
    /// The mode a file created by a redirection gets, when it is not the
    /// workspace's usual `0644`.
    pub(crate) fn new_file_mode(&self) -> Option<u32> {
        Some(0o666 & !self.st.umask).filter(|m| *m != 0o644)
    }

    /// Whether a redirection may open another file (`ulimit -n`: 0, 1 and 2
    /// are open already).
    pub(crate) fn may_open_file(&self) -> bool {
        self.st.limits.open_files() > 3
    }

    /// `bytes` cut to what `ulimit -f` allows the file to reach, and
    /// whether they had to be cut.
    pub(crate) fn within_file_size(
        &self,
        path: &stead_vfs::VPath,
        mut bytes: Vec<u8>,
        replace: bool,
    ) -> (Vec<u8>, bool) {
        let Some(max) = self.st.limits.file_size() else {
            return (bytes, false);
        };
        let existing = if replace {
            0
        } else {
            self.fs.stat(path, true).map_or(0, |n| n.size)
        };
        let room = max.saturating_sub(existing) as usize;
        if bytes.len() <= room {
            return (bytes, false);
        }
        bytes.truncate(room);
        (bytes, true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symbolic_masks_read_and_write_as_bash() {
        assert_eq!(symbolic_mask(0o022), "u=rwx,g=rx,o=rx");
        assert_eq!(symbolic_mask(0o027), "u=rwx,g=rx,o=");
        assert_eq!(apply_symbolic(0o027, "u=rwx,g=rx,o="), Some(0o027));
        assert_eq!(apply_symbolic(0o027, "g+w"), Some(0o007));
        assert_eq!(apply_symbolic(0o002, "g-w,o-w"), Some(0o022));
        assert_eq!(apply_symbolic(0o022, "q+w"), None);
    }
}
