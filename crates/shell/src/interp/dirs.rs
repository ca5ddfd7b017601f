//! The directory stack: `pushd`, `popd`, `dirs`.
//!
//! As in bash, entry 0 is always the current directory; the saved entries
//! follow it (`State::dir_stack`, nearest first). Listings show `$HOME` as
//! `~` unless `-l` is given.

use super::{Shell, R};

impl Shell<'_> {
    /// The whole stack: the current directory, then the saved entries.
    fn dir_entries(&self) -> Vec<String> {
        std::iter::once(self.st.cwd.as_str().to_string())
            .chain(self.st.dir_stack.iter().cloned())
            .collect()
    }

    fn tilde_short(&mut self, dir: &str) -> String {
        match self
            .get_scalar("HOME")
            .filter(|h| !h.is_empty() && h != "/")
        {
            Some(home) if dir == home => "~".to_string(),
            Some(home) => match dir.strip_prefix(&format!("{home}/")) {
                Some(rest) => format!("~/{rest}"),
                None => dir.to_string(),
            },
            None => dir.to_string(),
        }
    }

    /// Changes to `dir` as `cd` does (`PWD`, `OLDPWD`); prints the error
    /// and returns false when it cannot.
    fn change_dir(&mut self, builtin: &str, dir: &str) -> R<bool> {
        let argv = vec!["cd".to_string(), "--".to_string(), dir.to_string()];
        let (_, status) = self.capture(&argv)?;
        if status != 0 {
            let _ = builtin;
            return Ok(false);
        }
        Ok(true)
    }

    fn print_dirs(&mut self) -> R<()> {
        let entries = self.dir_entries();
        let shown: Vec<String> = entries.iter().map(|d| self.tilde_short(d)).collect();
        self.out(&format!("{}\n", shown.join(" ")))
    }
}

/// `+N` / `-N`: an index into the stack counted from the left or right.
fn stack_index(arg: &str, len: usize) -> Option<Result<usize, ()>> {
    let (from_left, digits) = match arg.as_bytes().first() {
        Some(b'+') => (true, &arg[1..]),
        Some(b'-') if arg.len() > 1 => (false, &arg[1..]),
        _ => return None,
    };
    let n: usize = digits.parse().ok()?;
    if n >= len {
        return Some(Err(()));
    }
    Some(Ok(if from_left { n } else { len - 1 - n }))
}

/// `pushd [-n] [dir | +N | -N]`
pub(super) fn pushd(sh: &mut Shell, args: &[String]) -> R<i32> {
    let mut no_cd = false;
    let mut target = None;
    for a in &args[1..] {
        match a.as_str() {
            "-n" => no_cd = true,
            "--" => {}
            _ => target = Some(a.clone()),
        }
    }
    let mut entries = sh.dir_entries();
    match target {
        None => {
            if entries.len() < 2 {
                sh.err_line("pushd: no other directory")?;
                return Ok(1);
            }
            entries.swap(0, 1);
        }
        Some(t) => match stack_index(&t, entries.len()) {
            Some(Ok(n)) => entries.rotate_left(n),
            Some(Err(())) => {
                sh.err_line(&format!("pushd: {t}: directory stack index out of range"))?;
                return Ok(1);
            }
            None if no_cd => {
                entries.insert(1, t);
                sh.st.dir_stack = entries[1..].to_vec();
                return Ok(0);
            }
            None => {
                let here = sh.st.cwd.as_str().to_string();
                if !sh.change_dir("pushd", &t)? {
                    return Ok(1);
                }
                sh.st.dir_stack.insert(0, here);
                sh.print_dirs()?;
                return Ok(0);
            }
        },
    }
    if !no_cd && !sh.change_dir("pushd", &entries[0])? {
        return Ok(1);
    }
    sh.st.dir_stack = entries[1..].to_vec();
    sh.print_dirs()?;
    Ok(0)
}

/// `popd [-n] [+N | -N]`
pub(super) fn popd(sh: &mut Shell, args: &[String]) -> R<i32> {
    let mut no_cd = false;
    let mut which = None;
    for a in &args[1..] {
        match a.as_str() {
            "-n" => no_cd = true,
            "--" => {}
            _ => which = Some(a.clone()),
        }
    }
    let mut entries = sh.dir_entries();
    if entries.len() < 2 {
        sh.err_line("popd: directory stack empty")?;
        return Ok(1);
    }
    let index = match which {
        None => 0,
        Some(w) => match stack_index(&w, entries.len()) {
            Some(Ok(n)) => n,
            Some(Err(())) => {
                sh.err_line(&format!("popd: {w}: directory stack index out of range"))?;
                return Ok(1);
            }
            None => {
                sh.err_line(&format!("popd: {w}: invalid argument"))?;
                return Ok(2);
            }
        },
    };
    entries.remove(index);
    if index == 0 && !no_cd && !sh.change_dir("popd", &entries[0])? {
        return Ok(1);
    }
    sh.st.dir_stack = entries[1..].to_vec();
    sh.print_dirs()?;
    Ok(0)
}

/// `dirs [-clpv] [+N | -N]`
pub(super) fn dirs(sh: &mut Shell, args: &[String]) -> R<i32> {
    let (mut long, mut per_line, mut numbered) = (false, false, false);
    let mut which = None;
    for a in &args[1..] {
        match a.as_str() {
            "-c" => {
                sh.st.dir_stack.clear();
                return Ok(0);
            }
            "-l" => long = true,
            "-p" => per_line = true,
            "-v" => {
                per_line = true;
                numbered = true;
            }
            _ if a.starts_with(['+', '-']) && a.len() > 1 => which = Some(a.clone()),
            _ => {
                sh.err_line(&format!("dirs: {a}: invalid option"))?;
                return Ok(2);
            }
        }
    }
    let entries = sh.dir_entries();
    let shown: Vec<String> = entries
        .iter()
        .map(|d| if long { d.clone() } else { sh.tilde_short(d) })
        .collect();
    if let Some(w) = which {
        return match stack_index(&w, shown.len()) {
            Some(Ok(n)) => {
                sh.out(&format!("{}\n", shown[n]))?;
                Ok(0)
            }
            _ => {
                sh.err_line(&format!("dirs: {w}: directory stack index out of range"))?;
                Ok(1)
            }
        };
    }
    let text = if numbered {
        shown
            .iter()
            .enumerate()
            .map(|(i, d)| format!("{i:2}  {d}\n"))
            .collect()
    } else if per_line {
        shown.iter().map(|d| format!("{d}\n")).collect()
    } else {
        format!("{}\n", shown.join(" "))
    };
    sh.out(&text)?;
    Ok(0)
}
