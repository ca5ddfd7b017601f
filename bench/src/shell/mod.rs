//! `stead-bench shell`: the same agent scripts through stead's shell (`POST
//! /agents/{id}/exec`), just-bash (in Node, in-memory filesystem) and GNU
//! bash with coreutils (a local process on a temporary folder), in one run.
//! Each side's outputs are checked against GNU bash's.

mod scripts;
mod sides;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::{json, Value};

use crate::agent::Agent;
use crate::report::{Aim, Measured, Report, Row, Unit};
use crate::stats::millis;

use scripts::{DataSet, Script, Sizes};
use sides::{first_line, JustBash, Ran, Runs, Stead};

/// Runs per script and side, fewer once a side has spent the budget on the
/// script; the fastest counts.
const RUNS: Runs = Runs {
    max: 5,
    budget: Duration::from_secs(20),
};
/// stead at least 10x faster than just-bash...
const AIM_JUST_BASH: Aim = Aim::AtMost(0.10);
/// ...and within 3x of GNU bash.
const AIM_GNU: Aim = Aim::AtMost(3.0);

const STEAD: &str = "stead";
const JUST_BASH: &str = "just-bash";
const GNU: &str = "GNU bash";

/// Runs every script through the three shells. `agent` is the stead agent
/// to exec in, or why there is none (its side then shows `n/a`).
/// A run's report, and whether stead's side ran every script (a run
/// whose stead side failed measured nothing of stead's).
pub struct ShellRun {
    pub report: Report,
    pub stead_complete: bool,
}

pub fn run(quick: bool, agent: Result<Agent, String>, target: &str) -> ShellRun {
    let sizes = if quick { Sizes::QUICK } else { Sizes::FULL };
    let (data, scripts) = scripts::scripts(sizes);
    let local = tempfile::tempdir().expect("temp dir");
    for set in &data {
        write_local(&local.path().join(set.name), set);
    }
    let stead = Stead::new(agent);
    let uploads: Vec<Result<(), String>> = data
        .iter()
        .map(|set| {
            eprintln!("shell: uploading {} ({})", set.name, set.describe());
            unpanicked(|| stead.upload(set))
        })
        .collect();
    let just_bash = JustBash::new();

    let mode = if quick { "quick" } else { "full" };
    let agent_id = stead.agent().map(|agent| agent.id().to_string());
    let mut report = Report::new(
        format!(
            "stead-bench shell ({mode}): stead exec against {target}, agent {}; best of {} runs \
             per side, fewer past {} s\naims: stead {} just-bash (10x faster) and {} GNU bash",
            agent_id.as_deref().unwrap_or("n/a"),
            RUNS.max,
            RUNS.budget.as_secs(),
            AIM_JUST_BASH.describe(),
            AIM_GNU.describe(),
        ),
        json!({
            "mode": mode,
            "target": target,
            "agent": agent_id,
            "unix_time": crate::unix_seconds(),
            "runs": { "max": RUNS.max, "budget_ms": millis(RUNS.budget) },
            "aims": {
                "stead_vs_just_bash": AIM_JUST_BASH.to_json(),
                "stead_vs_gnu_bash": AIM_GNU.to_json(),
            },
            "sizes": {
                "tree_files": sizes.tree_files,
                "tree_bytes": sizes.tree_bytes,
                "log_bytes": sizes.log_bytes,
                "json_bytes": sizes.json_bytes,
                "writes": sizes.writes,
                "loop_iterations": sizes.loop_iterations,
            },
            "versions": {
                "bash": bash_version(),
                "just_bash": just_bash.versions(),
            },
        }),
    );

    let mut failures = Failures::default();
    let mut details = Vec::new();
    for script in &scripts {
        let set = &data[script.data];
        let dir = local.path().join(set.name);
        eprintln!("shell: {}: {}", script.name, script.command);
        // just-bash loads the folder before GNU bash writes into it.
        let stead_ran = uploads[script.data]
            .clone()
            .and_then(|()| unpanicked(|| stead.run(set, script, RUNS)));
        let just_bash_ran = just_bash.run(&dir, script, RUNS);
        let gnu_ran = sides::gnu(&dir, script, RUNS);
        let sides = [
            (STEAD, &stead_ran),
            (JUST_BASH, &just_bash_ran),
            (GNU, &gnu_ran),
        ];
        let mut side_details = serde_json::Map::new();
        for (side, ran) in sides {
            if let Err(error) = ran {
                failures.add(side, error, script.name);
            }
            let checked = check_output(script, side, ran, &gnu_ran, &mut report);
            side_details.insert(side.into(), side_json(ran, checked));
        }
        details.push(json!({
            "script": script.name,
            "command": script.command,
            "data": set.describe(),
            "data_bytes": set.bytes(),
            "sides": side_details,
        }));
        add_rows(
            &mut report,
            script,
            set,
            &stead_ran,
            &just_bash_ran,
            &gnu_ran,
        );
    }
    let stead_complete = !failures.any(STEAD);
    failures.report(&mut report);
    report.details = json!({ "scripts": details });
    if let Some(agent) = stead.into_agent() {
        if let Err(error) = unpanicked(|| {
            agent.delete();
            Ok(())
        }) {
            report.warn(format!("deleting the agent failed: {error}"));
        }
    }
    ShellRun {
        report,
        stead_complete,
    }
}

/// Runs `f`, turning a panic (a failed request, a Worker that did not
/// start) into an error, so one side failing leaves the others measured.
/// The panic is not printed: the error is reported as a warning.
pub fn unpanicked<T>(f: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    std::panic::set_hook(hook);
    result.unwrap_or_else(|panic| {
        let text = panic
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| panic.downcast_ref::<&str>().copied())
            .unwrap_or("panicked");
        Err(text.lines().next().unwrap_or("").to_string())
    })
}

fn write_local(dir: &Path, set: &DataSet) {
    std::fs::create_dir_all(dir).expect("local data dir");
    for file in &set.files {
        let path = dir.join(&file.path);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("local data dir");
        std::fs::write(path, &file.content).expect("local data file");
    }
}

fn bash_version() -> String {
    Command::new("bash")
        .arg("--version")
        .output()
        .map(|output| first_line(&String::from_utf8_lossy(&output.stdout), 200))
        .unwrap_or_else(|e| format!("unknown ({e})"))
}

fn best_millis(ran: &Ran) -> Measured {
    ran.as_ref()
        .map(|outcome| millis(outcome.best()))
        .map_err(Clone::clone)
}

/// Two rows per script: stead against just-bash, and against GNU bash.
fn add_rows(
    report: &mut Report,
    script: &Script,
    set: &DataSet,
    stead: &Ran,
    just_bash: &Ran,
    gnu: &Ran,
) {
    let section = format!("{} ({}): {}", script.name, set.describe(), script.command);
    for (label, baseline, aim) in [(JUST_BASH, just_bash, AIM_JUST_BASH), (GNU, gnu, AIM_GNU)] {
        report.rows.push(Row {
            section: section.clone(),
            measure: format!("{STEAD} vs {label}"),
            figure: best_millis(stead),
            unit: Unit::Millis,
            baseline: best_millis(baseline),
            baseline_label: label.into(),
            aim: Some(aim),
        });
    }
}

/// How a side's output compares with GNU bash's.
#[derive(Clone, Copy)]
enum Agreement {
    Same,
    Differs,
    /// The side or GNU bash failed.
    Unchecked,
    /// GNU bash itself.
    Reference,
}

impl Agreement {
    fn name(self) -> &'static str {
        match self {
            Agreement::Same => "same as GNU bash",
            Agreement::Differs => "differs from GNU bash",
            Agreement::Unchecked => "not checked",
            Agreement::Reference => "reference",
        }
    }
}

/// The output's lines, sorted if their order is unspecified.
fn lines<'a>(stdout: &'a str, script: &Script) -> Vec<&'a str> {
    let mut lines: Vec<&str> = stdout.lines().collect();
    if script.unordered {
        lines.sort_unstable();
    }
    lines
}

/// Compares a side's output with GNU bash's and warns about a difference
/// (and about GNU bash printing nothing, which would check little).
fn check_output(
    script: &Script,
    side: &str,
    ran: &Ran,
    gnu: &Ran,
    report: &mut Report,
) -> Agreement {
    let (Ok(outcome), Ok(reference)) = (ran, gnu) else {
        return Agreement::Unchecked;
    };
    if side == GNU {
        if reference.stdout.trim().is_empty() {
            report.warn(format!(
                "{}: GNU bash printed nothing, so outputs are barely checked",
                script.name
            ));
        }
        return Agreement::Reference;
    }
    let (got, want) = (
        lines(&outcome.stdout, script),
        lines(&reference.stdout, script),
    );
    if got == want {
        return Agreement::Same;
    }
    let at = got
        .iter()
        .zip(&want)
        .position(|(a, b)| a != b)
        .unwrap_or(got.len().min(want.len()));
    let line = |lines: &[&str]| {
        lines.get(at).map_or("(no line)".into(), |line| {
            format!("{:?}", first_line(line, 80))
        })
    };
    report.warn(format!(
        "{}: {side} output differs from GNU bash ({} vs {} lines{}); first difference at line \
         {}: {side} {} vs GNU bash {}",
        script.name,
        got.len(),
        want.len(),
        if script.unordered { ", sorted" } else { "" },
        at + 1,
        line(&got),
        line(&want),
    ));
    Agreement::Differs
}

fn side_json(ran: &Ran, checked: Agreement) -> Value {
    match ran {
        Ok(outcome) => json!({
            "best_ms": millis(outcome.best()),
            "times_ms": outcome.times.iter().map(|t| millis(*t)).collect::<Vec<_>>(),
            "stdout_bytes": outcome.stdout.len(),
            "stderr": first_line(&outcome.stderr, 200),
            "output": checked.name(),
        }),
        Err(error) => json!({ "error": error }),
    }
}

/// Errors by side, each with the scripts that hit it, so a missing route or
/// feature is one warning rather than one per script.
#[derive(Default)]
struct Failures(BTreeMap<(String, String), Vec<&'static str>>);

impl Failures {
    fn add(&mut self, side: &str, error: &str, script: &'static str) {
        self.0
            .entry((side.into(), error.into()))
            .or_default()
            .push(script);
    }

    fn any(&self, side: &str) -> bool {
        self.0.keys().any(|(failed, _)| failed == side)
    }

    fn report(self, report: &mut Report) {
        for ((side, error), scripts) in self.0 {
            report.warn(format!("{side} failed ({}): {error}", scripts.join(", ")));
        }
    }
}
