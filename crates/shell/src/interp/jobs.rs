//! Background jobs: `cmd &`, `$!`, `wait`, `jobs`, `fg`, `bg`, `disown`
//! and `kill`.
//!
//! The isolate has one thread and no processes, so a background command
//! cannot run beside the shell. It is recorded instead, with a copy of the
//! shell state at the moment it was started (a subshell environment: its
//! assignments, `cd` and `exit` stay its own), and runs to completion when
//! the shell waits for it: `wait`, `fg`, before an output it writes to is
//! closed, when the (sub)shell that started it ends, and at the end of the
//! exec. Its standard input is empty, as bash gives background commands
//! `/dev/null` without job control. `kill` of a job that has not run yet
//! ends it with the signal, so `wait` reports 128 + the signal's number as
//! bash does; a job that already ran is no longer a process
//! (`No such process`). Job statuses stay known after they are reported,
//! so `wait $pid` twice gives the same status, as in bash.

use std::rc::Rc;

use super::ast::{Command, Compound, Item};
use super::traps::{signal_name, signal_number, signal_table};
use super::{Fd, Input, Shell, State, R};

/// The shell's own process id (`$$`).
pub(super) const SHELL_PID: u32 = 4242;

pub(super) struct Job {
    /// `%n`
    pub number: usize,
    pub pid: u32,
    /// The command text, for `jobs` and `fg`.
    pub text: Rc<str>,
    pub state: JobState,
    /// Reported by `wait` or `jobs` once done.
    pub reported: bool,
}

pub(super) enum JobState {
    /// Not run yet: the command and the environment it was started in.
    Pending(Box<PendingJob>),
    Done(i32),
}

pub(super) struct PendingJob {
    item: Item,
    st: State,
    fds: Vec<Option<Fd>>,
    line_base: usize,
}

impl Shell<'_> {
    /// Starts `item` as a background job (`item &`); `$?` is 0.
    pub(super) fn start_job(&mut self, item: &Item) -> R<()> {
        let pid = self.new_pid();
        let mut fds = self.fds.clone();
        fds[0] = Some(Fd::In(Rc::new(Input::new(Vec::new()))));
        let mut item = item.clone();
        item.background = false;
        // Job numbers are reused once a job is reported.
        let number = self.jobs[self.job_floor..]
            .iter()
            .filter(|j| !j.reported)
            .map(|j| j.number)
            .max()
            .unwrap_or(0)
            + 1;
        self.jobs.push(Job {
            number,
            pid,
            text: item.text.clone(),
            state: JobState::Pending(Box::new(PendingJob {
                item,
                st: self.st.clone(),
                fds,
                line_base: self.line_base,
            })),
            reported: false,
        });
        self.st.last_bg_pid = Some(pid);
        self.status = 0;
        Ok(())
    }

    /// A fresh process id for a job or subshell.
    pub(super) fn new_pid(&mut self) -> u32 {
        self.next_pid += 1;
        self.next_pid
    }

    /// Runs job `index` if it has not run; returns its status.
    fn complete_job(&mut self, index: usize) -> R<i32> {
        let state = std::mem::replace(&mut self.jobs[index].state, JobState::Done(0));
        let pending = match state {
            JobState::Done(s) => {
                self.jobs[index].state = JobState::Done(s);
                return Ok(s);
            }
            JobState::Pending(p) => p,
        };
        let pid = self.jobs[index].pid;
        let PendingJob {
            item,
            st,
            fds,
            line_base,
        } = *pending;
        let saved_status = self.status;
        let status = self.subshell(move |sh| {
            sh.st = st;
            sh.reset_traps_for_subshell();
            sh.st.bashpid = pid;
            sh.fds = fds;
            sh.line_base = line_base;
            sh.job_unchecked = own_status_unchecked(&item);
            sh.run_item(&item)?;
            Ok(sh.status)
        })?;
        self.status = saved_status;
        if let Some(job) = self.jobs.get_mut(index) {
            job.state = JobState::Done(status);
        }
        Ok(status)
    }

    /// Runs every job of this (sub)shell that has not run yet.
    pub(crate) fn complete_all_jobs(&mut self) -> R<()> {
        let mut i = self.job_floor;
        while i < self.jobs.len() {
            if matches!(self.jobs[i].state, JobState::Pending(_)) {
                self.complete_job(i)?;
            }
            i += 1;
        }
        Ok(())
    }

    /// Runs the pending jobs that write to output slot `slot`, before it is
    /// closed.
    pub(super) fn complete_jobs_writing_to(&mut self, slot: usize) -> R<()> {
        let mut i = 0;
        while i < self.jobs.len() {
            let writes = match &self.jobs[i].state {
                JobState::Pending(p) => p
                    .fds
                    .iter()
                    .any(|fd| matches!(fd, Some(Fd::Out(s)) if *s == slot)),
                JobState::Done(_) => false,
            };
            if writes {
                self.complete_job(i)?;
            }
            i += 1;
        }
        Ok(())
    }

    /// The command texts of this shell's unreported jobs (`compgen -j`).
    pub(super) fn job_texts(&self) -> Vec<String> {
        self.jobs[self.job_floor..]
            .iter()
            .filter(|j| !j.reported)
            .map(|j| j.text.to_string())
            .collect()
    }

    /// The job a `%spec` or pid names, among this shell's jobs.
    fn find_job(&self, spec: &str) -> Option<usize> {
        let mine = self.job_floor..self.jobs.len();
        let Some(job) = spec.strip_prefix('%') else {
            let pid: u32 = spec.parse().ok()?;
            return mine.into_iter().find(|&i| self.jobs[i].pid == pid);
        };
        let live: Vec<usize> = mine.filter(|&i| !self.jobs[i].reported).collect();
        match job {
            "" | "%" | "+" => live.last().copied(),
            "-" => live.iter().rev().nth(1).or(live.last()).copied(),
            n if n.bytes().all(|b| b.is_ascii_digit()) => {
                let n: usize = n.parse().ok()?;
                live.into_iter().find(|&i| self.jobs[i].number == n)
            }
            text => {
                let contains = text.strip_prefix('?');
                live.into_iter().rev().find(|&i| match contains {
                    Some(t) => self.jobs[i].text.contains(t),
                    None => self.jobs[i].text.starts_with(text),
                })
            }
        }
    }
}

/// `wait [-fn] [-p var] [id ...]`
pub(super) fn wait(sh: &mut Shell, args: &[String]) -> R<i32> {
    let mut next = false;
    let mut var = None;
    let mut i = 1;
    while let Some(a) = args.get(i) {
        match a.as_str() {
            "-n" => next = true,
            "-f" => {}
            "-p" => {
                i += 1;
                var = args.get(i).cloned();
            }
            "--" => {
                i += 1;
                break;
            }
            f if f.starts_with('-') && f.len() > 1 => {
                sh.err_line(&format!("wait: {f}: invalid option"))?;
                sh.err_line("wait: usage: wait [-fn] [-p var] [id ...]")?;
                return Ok(2);
            }
            _ => break,
        }
        i += 1;
    }
    let ids = &args[i..];
    if next {
        let candidates: Vec<usize> = if ids.is_empty() {
            (sh.job_floor..sh.jobs.len()).collect()
        } else {
            ids.iter().filter_map(|id| sh.find_job(id)).collect()
        };
        let Some(index) = candidates.into_iter().find(|&i| !sh.jobs[i].reported) else {
            return Ok(127);
        };
        let status = sh.complete_job(index)?;
        sh.jobs[index].reported = true;
        if let Some(v) = var {
            let pid = sh.jobs[index].pid.to_string();
            sh.set_scalar(&v, pid)?;
        }
        return Ok(status);
    }
    if ids.is_empty() {
        sh.complete_all_jobs()?;
        for job in &mut sh.jobs[sh.job_floor..] {
            job.reported = true;
        }
        return Ok(0);
    }
    let mut status = 0;
    for id in ids {
        let Some(index) = sh.find_job(id) else {
            if id.starts_with('%') {
                sh.err_line(&format!("wait: {id}: no such job"))?;
            } else if id.parse::<u32>().is_ok() {
                sh.err_line(&format!("wait: pid {id} is not a child of this shell"))?;
            } else {
                sh.err_line(&format!("wait: `{id}': not a pid or valid job spec"))?;
                status = 2;
                continue;
            }
            status = 127;
            continue;
        };
        status = sh.complete_job(index)?;
        sh.jobs[index].reported = true;
        if let Some(v) = &var {
            let pid = sh.jobs[index].pid.to_string();
            sh.set_scalar(v, pid)?;
        }
    }
    Ok(status)
}

/// `jobs [-lnprs] [jobspec ...]`
pub(super) fn jobs(sh: &mut Shell, args: &[String]) -> R<i32> {
    let mut pids_only = false;
    let mut long = false;
    let mut specs = Vec::new();
    for a in &args[1..] {
        match a.as_str() {
            "-p" => pids_only = true,
            "-l" => long = true,
            "-n" | "-r" | "-s" => {}
            _ => specs.push(a.clone()),
        }
    }
    let mut indexes: Vec<usize> = if specs.is_empty() {
        (sh.job_floor..sh.jobs.len())
            .filter(|&i| !sh.jobs[i].reported)
            .collect()
    } else {
        let mut v = Vec::new();
        for s in &specs {
            match sh.find_job(s) {
                Some(i) => v.push(i),
                None => {
                    sh.err_line(&format!("jobs: {s}: no such job"))?;
                    return Ok(1);
                }
            }
        }
        v
    };
    indexes.sort_unstable();
    let live: Vec<usize> = (sh.job_floor..sh.jobs.len())
        .filter(|&i| !sh.jobs[i].reported)
        .collect();
    let current = live.last().copied();
    let previous = live.iter().rev().nth(1).copied();
    let mut text = String::new();
    for i in indexes {
        let job = &sh.jobs[i];
        if pids_only {
            text.push_str(&format!("{}\n", job.pid));
            continue;
        }
        let mark = if Some(i) == current {
            '+'
        } else if Some(i) == previous {
            '-'
        } else {
            ' '
        };
        let (state, suffix) = match job.state {
            JobState::Pending(_) => ("Running".to_string(), " &"),
            JobState::Done(0) => ("Done".to_string(), ""),
            JobState::Done(s) if s > 128 && signal_name(s - 128).is_some() => {
                (signal_description(s - 128), "")
            }
            JobState::Done(s) => (format!("Exit {s}"), ""),
        };
        let pid = if long {
            format!("{} ", job.pid)
        } else {
            String::new()
        };
        text.push_str(&format!(
            "[{}]{mark}  {pid}{state:<24}{}{suffix}\n",
            job.number, job.text
        ));
    }
    // Finished jobs are reported once.
    for job in &mut sh.jobs[sh.job_floor..] {
        if matches!(job.state, JobState::Done(_)) {
            job.reported = true;
        }
    }
    sh.out(&text)?;
    Ok(0)
}

/// How `jobs` shows a job ended by signal `n`.
fn signal_description(n: i32) -> String {
    match n {
        1 => "Hangup".into(),
        2 => "Interrupt".into(),
        9 => "Killed".into(),
        15 => "Terminated".into(),
        10 => "User defined signal 1".into(),
        12 => "User defined signal 2".into(),
        _ => format!("SIG{}", signal_name(n).unwrap_or_default()),
    }
}

/// `fg [jobspec]`: runs the job now and returns its status.
pub(super) fn fg(sh: &mut Shell, args: &[String]) -> R<i32> {
    let spec = args.get(1).map_or("%+", String::as_str);
    let Some(index) = sh.find_job(spec) else {
        sh.err_line(&format!("fg: {spec}: no such job"))?;
        return Ok(1);
    };
    let text = format!("{}\n", sh.jobs[index].text);
    sh.out(&text)?;
    let status = sh.complete_job(index)?;
    sh.jobs[index].reported = true;
    Ok(status)
}

/// `bg [jobspec]`: jobs already run in the background here.
pub(super) fn bg(sh: &mut Shell, args: &[String]) -> R<i32> {
    let spec = args.get(1).map_or("%+", String::as_str);
    if sh.find_job(spec).is_none() {
        sh.err_line(&format!("bg: {spec}: no such job"))?;
        return Ok(1);
    }
    Ok(0)
}

/// `disown [jobspec ...]`: the shell forgets the job (it still runs).
pub(super) fn disown(sh: &mut Shell, args: &[String]) -> R<i32> {
    let specs: Vec<&String> = args[1..].iter().filter(|a| !a.starts_with('-')).collect();
    let targets: Vec<usize> = if specs.is_empty() {
        sh.find_job("%+").into_iter().collect()
    } else {
        let mut v = Vec::new();
        for s in specs {
            match sh.find_job(s) {
                Some(i) => v.push(i),
                None => {
                    sh.err_line(&format!("disown: {s}: no such job"))?;
                    return Ok(1);
                }
            }
        }
        v
    };
    for i in targets {
        sh.jobs[i].reported = true;
    }
    Ok(0)
}

/// `kill [-s sig | -n num | -sig] pid|jobspec ...` and `kill -l|-L [sig ...]`.
pub(super) fn kill(sh: &mut Shell, args: &[String]) -> R<i32> {
    let mut signal = 15;
    let mut i = 1;
    match args.get(1).map(String::as_str) {
        Some("-l" | "-L") => return list_signals(sh, &args[2..]),
        Some("-s" | "-n") => {
            let Some(spec) = args.get(2) else {
                sh.err_line(&format!("kill: {}: option requires an argument", args[1]))?;
                return Ok(2);
            };
            match signal_number(spec) {
                Some(n) => signal = n,
                None => {
                    sh.err_line(&format!("kill: {spec}: invalid signal specification"))?;
                    return Ok(1);
                }
            }
            i = 3;
        }
        Some("--") => i = 2,
        Some(flag) if flag.starts_with('-') && flag.len() > 1 => {
            let spec = &flag[1..];
            match signal_number(spec).or_else(|| (spec == "0").then_some(0)) {
                Some(n) => signal = n,
                None => {
                    sh.err_line(&format!("kill: {spec}: invalid signal specification"))?;
                    return Ok(1);
                }
            }
            i = 2;
        }
        _ => {}
    }
    if args.get(i).map(String::as_str) == Some("--") {
        i += 1;
    }
    let targets = &args[i..];
    if targets.is_empty() {
        sh.err_line("kill: usage: kill [-s sigspec | -n signum | -sigspec] pid | jobspec ... or kill -l [sigspec]")?;
        return Ok(2);
    }
    let mut status = 0;
    for target in targets {
        let pid = target.parse::<i64>().ok();
        if pid.is_some_and(|p| p == i64::from(sh.st.bashpid) || p == 0 || p == -1) {
            if signal != 0 {
                // The trap runs once `kill` has succeeded: `$?` is 0 in it.
                sh.status = 0;
                sh.deliver_signal(signal)?;
            }
            continue;
        }
        // An enclosing shell (`sh -c "kill $$"`): delivered when it resumes.
        if let Some(p) = pid.filter(|&p| sh.pid_stack.iter().any(|&a| i64::from(a) == p)) {
            if signal != 0 {
                sh.pending_signals.push((p as u32, signal));
            }
            continue;
        }
        let Some(index) = sh.find_job(target) else {
            if target.starts_with('%') {
                sh.err_line(&format!("kill: {target}: no such job"))?;
            } else if target.parse::<i64>().is_ok() {
                sh.err_line(&format!("kill: ({target}) - No such process"))?;
            } else {
                sh.err_line(&format!(
                    "kill: {target}: arguments must be process or job IDs"
                ))?;
            }
            status = 1;
            continue;
        };
        match sh.jobs[index].state {
            JobState::Pending(_) if signal == 0 => {}
            JobState::Pending(_) if matches!(signal, 17 | 18 | 23 | 28) => {}
            JobState::Pending(_) => sh.jobs[index].state = JobState::Done(128 + signal),
            JobState::Done(_) => {
                sh.err_line(&format!("kill: ({}) - No such process", sh.jobs[index].pid))?;
                status = 1;
            }
        }
    }
    Ok(status)
}

/// `kill -l`: the table, or each argument translated (a number, or an exit
/// status above 128, to a name; a name to its number).
fn list_signals(sh: &mut Shell, specs: &[String]) -> R<i32> {
    if specs.is_empty() {
        sh.out(&signal_table())?;
        return Ok(0);
    }
    let mut status = 0;
    let mut text = String::new();
    for spec in specs {
        if let Ok(n) = spec.parse::<i32>() {
            let n = if n > 128 { n - 128 } else { n };
            match (n, signal_name(n)) {
                (0, _) => text.push_str("EXIT\n"),
                (_, Some(name)) => text.push_str(&format!("{name}\n")),
                (_, None) => {
                    sh.out(&text)?;
                    text.clear();
                    sh.err_line(&format!("kill: {spec}: invalid signal specification"))?;
                    status = 1;
                }
            }
            continue;
        }
        match signal_number(spec) {
            Some(n) => text.push_str(&format!("{n}\n")),
            None => {
                sh.out(&text)?;
                text.clear();
                sh.err_line(&format!("kill: {spec}: invalid signal specification"))?;
                status = 1;
            }
        }
    }
    sh.out(&text)?;
    Ok(status)
}

/// Whether a job's status is left to its parent alone: bash runs a simple
/// command, a pipeline or a `( )` in the background without the check the
/// shell makes after a command it waits for (the `ERR` trap, `set -e`),
/// while other compound commands and `&&`/`||` lists run in a subshell of
/// their own that checks them as it would in the foreground.
fn own_status_unchecked(item: &Item) -> bool {
    if !item.rest.is_empty() {
        return false;
    }
    match item.first.cmds.as_slice() {
        [Command::Simple(_)] => true,
        [Command::Compound(c, _)] => matches!(c.as_ref(), Compound::Subshell(_)),
        [Command::Function(_)] => false,
        _ => true,
    }
}
