//! Three-way content merges against the machine's real git: random small
//! files (short, so changes collide often) changed on two branches, merged by `git merge` (merge-ort, its default level and
//! conflict style) and by `stead_git::merge`; the file each leaves is the
//! same, conflict markers included, and both agree on whether it
//! conflicted.

mod common;

use common::git;

/// A small deterministic generator (xorshift), so a failure names its seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A file of up to 12 lines, as code is: mostly distinct lines, some
/// repeated ones (`}`, blank).
fn file(rng: &mut Rng) -> Vec<String> {
    (0..rng.below(12) + 1)
        .map(|_| match rng.below(8) {
            0 => "}".to_string(),
            1 => String::new(),
            _ => format!("line {}", rng.below(40)),
        })
        .collect()
}

/// `base` with a few lines changed, inserted or deleted.
fn edit(rng: &mut Rng, base: &[String]) -> Vec<String> {
    let mut out = base.to_vec();
    for _ in 0..rng.below(3) + 1 {
        let at = rng.below(out.len() as u64 + 1) as usize;
        match rng.below(3) {
            0 if at < out.len() => out[at] = format!("x{}", rng.below(5)),
            1 if at < out.len() => {
                out.remove(at);
            }
            _ => out.insert(at, format!("y{}", rng.below(5))),
        }
    }
    out
}

fn text(lines: &[String]) -> String {
    lines.iter().map(|l| format!("{l}\n")).collect()
}

#[test]
fn content_merges_are_the_ones_git_makes() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path();
    git(work, &["init", "-q", "-b", "main"]);
    let mut rng = Rng(0x5eed_1234_abcd_ef01);
    let mut conflicted = 0;
    for case in 0..60 {
        let base = text(&file(&mut rng));
        let lines: Vec<String> = base.lines().map(str::to_string).collect();
        let (ours, theirs) = (text(&edit(&mut rng, &lines)), text(&edit(&mut rng, &lines)));
        let branch = format!("t{case}");
        std::fs::write(work.join("f"), &base).unwrap();
        git(work, &["add", "f"]);
        git(work, &["commit", "-q", "--allow-empty", "-m", "base"]);
        git(work, &["branch", &branch]);
        std::fs::write(work.join("f"), &ours).unwrap();
        git(work, &["commit", "-q", "--allow-empty", "-am", "ours"]);
        git(work, &["switch", "-q", &branch]);
        std::fs::write(work.join("f"), &theirs).unwrap();
        git(work, &["commit", "-q", "--allow-empty", "-am", "theirs"]);
        git(work, &["switch", "-q", "main"]);
        let status = common::git_command(work, &["merge", "-q", "--no-edit", &branch])
            .output()
            .unwrap()
            .status;
        let real = std::fs::read_to_string(work.join("f")).unwrap();
        let ours_merge = stead_git::merge::merge(
            base.as_bytes(),
            ours.as_bytes(),
            theirs.as_bytes(),
            "HEAD",
            &branch,
        );
        let mine = String::from_utf8(ours_merge.data).unwrap();
        assert_eq!(
            mine, real,
            "case {case}\nbase:\n{base}\nours:\n{ours}\ntheirs:\n{theirs}"
        );
        assert_eq!(ours_merge.conflicts > 0, !status.success(), "case {case}");
        if !status.success() {
            conflicted += 1;
            git(work, &["merge", "--abort"]);
        }
        git(work, &["reset", "-q", "--hard", "main"]);
    }
    assert!(
        conflicted > 10,
        "the cases conflict often enough: {conflicted}"
    );
}
