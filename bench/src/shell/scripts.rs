//! The agent scripts of the shell benchmark and the data they run on, all
//! generated deterministically.

use std::fmt::Write as _;

use crate::gen::{document, text, Rng};

/// How much work each script does.
#[derive(Clone, Copy)]
pub struct Sizes {
    pub tree_files: usize,
    pub tree_bytes: usize,
    pub log_bytes: usize,
    pub json_bytes: usize,
    pub writes: usize,
    pub loop_iterations: usize,
}

impl Sizes {
    pub const FULL: Sizes = Sizes {
        tree_files: 500,
        tree_bytes: 5_000_000,
        log_bytes: 10_000_000,
        json_bytes: 5_000_000,
        writes: 1000,
        loop_iterations: 100_000,
    };
    /// Everything 10x smaller.
    pub const QUICK: Sizes = Sizes {
        tree_files: 50,
        tree_bytes: 500_000,
        log_bytes: 1_000_000,
        json_bytes: 500_000,
        writes: 100,
        loop_iterations: 10_000,
    };
}

/// A file of a data set: path relative to the data set's folder, content.
pub struct DataFile {
    pub path: String,
    pub content: String,
}

/// The files one or more scripts run on, in a folder of their own (the
/// scripts' working directory).
pub struct DataSet {
    /// The folder's name.
    pub name: &'static str,
    pub files: Vec<DataFile>,
}

impl DataSet {
    pub fn bytes(&self) -> usize {
        self.files.iter().map(|file| file.content.len()).sum()
    }

    /// For section titles: "500 files, 5.0 MB", "no files".
    pub fn describe(&self) -> String {
        match self.files.len() {
            0 => "no files".into(),
            1 => format!("{}, {:.1} MB", self.files[0].path, mb(self.bytes())),
            n => format!("{n} files, {:.1} MB", mb(self.bytes())),
        }
    }
}

fn mb(bytes: usize) -> f64 {
    bytes as f64 / 1e6
}

/// One script, run the same way by every side.
pub struct Script {
    pub name: &'static str,
    pub command: String,
    /// Index into the data sets.
    pub data: usize,
    /// The output's line order is unspecified (`grep -r` follows directory
    /// order), so outputs are compared as sorted lines.
    pub unordered: bool,
}

/// The data sets and the scripts over them.
pub fn scripts(sizes: Sizes) -> (Vec<DataSet>, Vec<Script>) {
    let data = vec![
        DataSet {
            name: "tree",
            files: tree(sizes.tree_files, sizes.tree_bytes),
        },
        DataSet {
            name: "logs",
            files: vec![DataFile {
                path: "app.log".into(),
                content: log(sizes.log_bytes),
            }],
        },
        DataSet {
            name: "writes",
            files: Vec::new(),
        },
        DataSet {
            name: "json",
            files: vec![DataFile {
                path: "data.json".into(),
                content: json_array(sizes.json_bytes),
            }],
        },
        DataSet {
            name: "loop",
            files: Vec::new(),
        },
    ];
    let script = |name, command: &str, data, unordered| Script {
        name,
        command: command.into(),
        data,
        unordered,
    };
    let scripts = vec![
        script("search literal", "grep -rn needle .", 0, true),
        script(
            "search regex",
            "grep -rlE 'err(or)?_[0-9]+' . | sort",
            0,
            false,
        ),
        script(
            "log top paths",
            "awk '{print $3}' app.log | sort | uniq -c | sort -rn | head",
            1,
            false,
        ),
        script(
            "log users",
            r"sed -n 's/.*user=\([a-z]*\).*/\1/p' app.log | sort | uniq -c",
            1,
            false,
        ),
        script(
            "small writes",
            &format!(
                "for i in $(seq 1 {}); do echo \"line $i\" > f$i.txt; done; cat f*.txt | wc -l",
                sizes.writes
            ),
            2,
            false,
        ),
        script(
            "jq filter",
            "jq '[.[] | select(.level == \"error\") | .id] | length' data.json",
            3,
            false,
        ),
        script(
            "interpreter loop",
            &format!(
                "for ((i=0;i<{};i++)); do s=$((s+i)); done; echo $s",
                sizes.loop_iterations
            ),
            4,
            false,
        ),
    ];
    (data, scripts)
}

/// Lines planted in tree file `i`: needles, error codes, near misses.
/// Generated text has no `_` or digits, so only these match the regex.
fn planted(i: usize) -> Vec<String> {
    let mut lines = Vec::new();
    if i % 9 == 4 {
        lines.push(format!("    let at = needle.find(haystack); // file {i}"));
    }
    if i % 23 == 7 {
        lines.push(format!("    needle: \"{i}\", needles: []"));
    }
    if i % 13 == 2 {
        let code = (i * 37) % 1000;
        let name = ["error", "err"][i % 2];
        lines.push(format!(
            "2024-05-01T12:00:{:02}Z request failed: {name}_{code} upstream",
            i % 60
        ));
    }
    if i % 17 == 0 {
        lines.push("    note: error-404, err_x and ERR_12 are near misses".into());
    }
    lines
}

/// `files` text files of about `bytes` in all, in 10 directories with 5
/// subdirectories each.
fn tree(files: usize, bytes: usize) -> Vec<DataFile> {
    let mut rng = Rng::new(11);
    let mean = bytes / files;
    (0..files)
        .map(|i| {
            let len = rng.between(mean / 2, mean * 3 / 2);
            DataFile {
                path: format!("src{}/mod{}/file{i:04}.txt", i % 10, (i / 10) % 5),
                content: document(&mut rng, len, &planted(i)),
            }
        })
        .collect()
}

/// Picks index `k` of `n` with weight 1/(k+1): a few values are common,
/// most are rare, and the top counts are far apart (no ties in `head`).
fn zipf(rng: &mut Rng, n: usize) -> usize {
    let total: f64 = (1..=n).map(|k| 1.0 / k as f64).sum();
    let mut left = rng.next_u64() as f64 / u64::MAX as f64 * total;
    for k in 0..n {
        left -= 1.0 / (k + 1) as f64;
        if left <= 0.0 {
            return k;
        }
    }
    n - 1
}

const RESOURCES: [&str; 8] = [
    "items", "users", "orders", "carts", "search", "auth", "files", "reports",
];
const ACTIONS: [&str; 5] = ["list", "get", "create", "update", "delete"];
const USERS: [&str; 24] = [
    "alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi", "ivan", "judy", "mallory",
    "niaj", "olivia", "peggy", "rupert", "sybil", "trent", "uma", "victor", "walter", "xena",
    "yann", "zoe", "quinn",
];

/// An application log of about `bytes`:
/// `<time> <level> <path> method=.. status=.. ms=.. [user=..] req=..`.
fn log(bytes: usize) -> String {
    let mut rng = Rng::new(12);
    let mut out = String::with_capacity(bytes + 200);
    let mut millis: u64 = 0;
    while out.len() < bytes {
        millis += rng.between(1, 400) as u64;
        let (s, ms) = (millis / 1000, millis % 1000);
        let level = match rng.between(0, 99) {
            0..=79 => "INFO",
            80..=91 => "WARN",
            92..=96 => "ERROR",
            _ => "DEBUG",
        };
        let route = zipf(&mut rng, RESOURCES.len() * ACTIONS.len());
        let _ = write!(
            out,
            "2024-05-01T{:02}:{:02}:{:02}.{ms:03}Z {level} /api/v1/{}/{} method={} status={} ms={}",
            (s / 3600) % 24,
            (s / 60) % 60,
            s % 60,
            RESOURCES[route % RESOURCES.len()],
            ACTIONS[route / RESOURCES.len()],
            ["GET", "GET", "GET", "POST", "PUT", "DELETE"][rng.between(0, 5)],
            [200, 200, 200, 201, 204, 400, 404, 500][rng.between(0, 7)],
            rng.between(1, 2000),
        );
        if rng.between(0, 3) > 0 {
            let _ = write!(out, " user={}", USERS[zipf(&mut rng, USERS.len())]);
        }
        let _ = writeln!(out, " req={:08x}", rng.next_u64() as u32);
    }
    out
}

/// A JSON array of about `bytes` of log events, one per line.
fn json_array(bytes: usize) -> String {
    let mut rng = Rng::new(13);
    let mut out = String::with_capacity(bytes + 400);
    out.push_str("[\n");
    let mut id = 0;
    while out.len() < bytes {
        if id > 0 {
            out.push_str(",\n");
        }
        id += 1;
        let level = match rng.between(0, 99) {
            0..=69 => "info",
            70..=84 => "warn",
            85..=96 => "error",
            _ => "debug",
        };
        let len = rng.between(40, 160);
        let message = serde_json::to_string(text(&mut rng, len).trim_end()).expect("JSON string");
        let _ = write!(
            out,
            "{{\"id\":{id},\"ts\":\"2024-05-01T00:00:{:02}Z\",\"level\":\"{level}\",\
             \"service\":\"{}\",\"msg\":{message},\"latency_ms\":{}.{},\"tags\":[\"{}\",\"{}\"]}}",
            id % 60,
            RESOURCES[rng.between(0, RESOURCES.len() - 1)],
            rng.between(0, 999),
            rng.between(0, 9),
            ACTIONS[rng.between(0, ACTIONS.len() - 1)],
            USERS[rng.between(0, USERS.len() - 1)],
        );
    }
    out.push_str("\n]\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_is_deterministic_and_about_the_asked_size() {
        let (a, all) = scripts(Sizes::QUICK);
        let (b, _) = scripts(Sizes::QUICK);
        for (a, b) in a.iter().zip(&b) {
            assert_eq!(a.bytes(), b.bytes());
            assert!(a
                .files
                .iter()
                .zip(&b.files)
                .all(|(x, y)| x.content == y.content));
        }
        assert_eq!(a[0].files.len(), 50);
        assert!((450_000..600_000).contains(&a[0].bytes()));
        assert!((1_000_000..1_001_000).contains(&a[1].bytes()));
        assert!(all.iter().all(|script| script.data < a.len()));
    }

    #[test]
    fn json_data_parses() {
        let value: serde_json::Value =
            serde_json::from_str(&json_array(20_000)).expect("valid JSON");
        let events = value.as_array().expect("array");
        assert!(events.len() > 50);
        assert!(events.iter().any(|event| event["level"] == "error"));
    }
}
