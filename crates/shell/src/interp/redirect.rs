//! Redirections: each one rebinds a descriptor for the duration of a
//! command. Output to a file goes to a capture slot that is written out
//! when the redirection ends (`>` truncates first); input is read whole.

use std::rc::Rc;

use stead_vfs::{Errno, VPath};

use super::ast::{Redir, RedirOp};
use super::{Fd, Input, Shell, R};
use crate::devices::{Device, Endless};
use crate::utils::strerror;

/// Highest descriptor a redirection may name (a soft `ulimit -n` of 1024).
/// Descriptors live in a vector indexed by number, so without a bound
/// `echo 999999999>&1` would allocate gigabytes; bash too refuses
/// descriptors past its limit ("Bad file descriptor").
pub(super) const MAX_FD: usize = 1023;

impl Shell<'_> {
    /// Applies redirections; returns the descriptors to restore, or `None`
    /// after printing the error when one fails.
    pub(crate) fn apply_redirs(&mut self, redirs: &[Redir]) -> R<Option<Vec<Option<Fd>>>> {
        let saved = self.fds.clone();
        let first_new = self.slots.len();
        for r in redirs {
            if !self.apply_redir(r)? {
                self.restore_fds(saved)?;
                return Ok(None);
            }
        }
        // A file opened here that a later redirection displaced (`>a >b`)
        // is done with: close it now, so that it exists (empty) as in bash.
        for i in first_new..self.slots.len() {
            let referenced = self
                .fds
                .iter()
                .any(|f| matches!(f, Some(Fd::Out(s)) if *s == i));
            if !referenced && self.slots[i].open && self.slots[i].file.is_some() {
                self.close_slot(i)?;
            }
        }
        Ok(Some(saved))
    }

    /// Restores descriptors, closing slots opened since they were saved.
    pub(crate) fn restore_fds(&mut self, saved: Vec<Option<Fd>>) -> R<()> {
        let keep: Vec<usize> = saved
            .iter()
            .filter_map(|f| match f {
                Some(Fd::Out(i)) => Some(*i),
                _ => None,
            })
            .collect();
        let mut saved = saved;
        for &n in &self.persist_fds {
            if let Some(f) = self.fds.get(n).cloned() {
                if n >= saved.len() {
                    saved.resize(n + 1, None);
                }
                saved[n] = f;
            }
        }
        let current = std::mem::replace(&mut self.fds, saved);
        let mut to_close = Vec::new();
        let keep: Vec<usize> = keep
            .into_iter()
            .chain(self.fds.iter().filter_map(|f| match f {
                Some(Fd::Out(i)) => Some(*i),
                _ => None,
            }))
            .collect();
        for f in current.into_iter().flatten() {
            if let Fd::Out(i) = f {
                if !keep.contains(&i) && self.slots[i].file.is_some() && !to_close.contains(&i) {
                    to_close.push(i);
                }
            }
        }
        for i in to_close {
            self.close_slot(i)?;
        }
        Ok(())
    }

    fn set_fd(&mut self, n: usize, fd: Option<Fd>) {
        if n >= self.fds.len() {
            self.fds.resize(n + 1, None);
        }
        self.fds[n] = fd;
    }

    fn redir_error(&mut self, target: &str, msg: &str) -> R<bool> {
        self.err_line(&format!("{target}: {msg}"))?;
        Ok(false)
    }

    fn apply_redir(&mut self, r: &Redir) -> R<bool> {
        let input = matches!(
            r.op,
            RedirOp::In
                | RedirOp::DupIn
                | RedirOp::ReadWrite
                | RedirOp::HereDoc
                | RedirOp::HereString
        );
        let fd = r.fd.unwrap_or(if input { 0 } else { 1 });
        let mut fd = match usize::try_from(fd) {
            Ok(fd) if fd <= MAX_FD => fd,
            _ => return self.redir_error(&fd.to_string(), "Bad file descriptor"),
        };
        if let Some(name) = &r.var_fd {
            fd = (10..)
                .find(|&i| self.fds.get(i).is_none_or(|f| f.is_none()))
                .unwrap_or(10);
            self.set_scalar(name, fd.to_string())?;
            self.persist_fds.push(fd);
        }
        let target = match r.op {
            RedirOp::HereDoc => {
                let body = self.expand_single(&r.target)?;
                self.set_fd(fd, Some(input_fd(body.into_bytes())));
                return Ok(true);
            }
            RedirOp::HereString => {
                let mut body = self.expand_single(&r.target)?;
                body.push('\n');
                self.set_fd(fd, Some(input_fd(body.into_bytes())));
                return Ok(true);
            }
            _ => {
                // Brace expansion applies too: `> a-{1,2}` names two files.
                let braced = super::parse::brace_expand(r.target.clone()).unwrap_or_default();
                let words = self.expand_words(&braced)?;
                if words.len() != 1 {
                    let raw = self.expand_single(&r.target)?;
                    return self.redir_error(&raw, "ambiguous redirect");
                }
                words.into_iter().next().unwrap_or_default()
            }
        };
        let opens_file = matches!(
            r.op,
            RedirOp::In
                | RedirOp::ReadWrite
                | RedirOp::Out
                | RedirOp::Clobber
                | RedirOp::Append
                | RedirOp::AllOut
                | RedirOp::AllAppend
        );
        if opens_file && !target.starts_with("/dev/") && !self.may_open_file() {
            return self.redir_error(&target, "Too many open files");
        }
        match r.op {
            RedirOp::DupOut | RedirOp::DupIn => self.dup(fd, &target, r),
            RedirOp::In | RedirOp::ReadWrite => {
                self.open_input(fd, &target, r.op == RedirOp::ReadWrite)
            }
            RedirOp::Out | RedirOp::Clobber | RedirOp::Append => {
                let Some(f) =
                    self.open_output(&target, r.op == RedirOp::Append, r.op == RedirOp::Out)?
                else {
                    return Ok(false);
                };
                self.set_fd(fd, Some(f));
                Ok(true)
            }
            RedirOp::AllOut | RedirOp::AllAppend => {
                let Some(f) = self.open_output(&target, r.op == RedirOp::AllAppend, true)? else {
                    return Ok(false);
                };
                self.set_fd(1, Some(f.clone()));
                self.set_fd(2, Some(f));
                Ok(true)
            }
            RedirOp::HereDoc | RedirOp::HereString => Ok(true),
        }
    }

    fn dup(&mut self, fd: usize, target: &str, r: &Redir) -> R<bool> {
        if target == "-" {
            self.set_fd(fd, None);
            return Ok(true);
        }
        let (num, close) = match target.strip_suffix('-') {
            Some(n) => (n, true),
            None => (target, false),
        };
        match num.parse::<usize>() {
            Ok(n) => {
                let Some(src) = self.fds.get(n).cloned().flatten() else {
                    return self.redir_error(num, "Bad file descriptor");
                };
                self.set_fd(fd, Some(src));
                if close {
                    self.set_fd(n, None);
                }
                Ok(true)
            }
            Err(_) if r.op == RedirOp::DupOut && r.fd.is_none() => {
                let Some(f) = self.open_output(target, false, true)? else {
                    return Ok(false);
                };
                self.set_fd(1, Some(f.clone()));
                self.set_fd(2, Some(f));
                Ok(true)
            }
            // `1>&file`: bash opens the file for the descriptor.
            Err(_) if r.op == RedirOp::DupOut && fd == 1 => {
                let Some(f) = self.open_output(target, false, true)? else {
                    return Ok(false);
                };
                self.set_fd(1, Some(f));
                Ok(true)
            }
            Err(_) => self.redir_error(target, "ambiguous redirect"),
        }
    }

    /// `<` (or `<>`, `read_write`: the file is created if missing, and the
    /// descriptor writes too).
    fn open_input(&mut self, fd: usize, target: &str, read_write: bool) -> R<bool> {
        match Device::named(target) {
            Some(Device::Null) => {
                self.set_fd(fd, Some(input_fd(Vec::new())));
                return Ok(true);
            }
            Some(device @ (Device::Zero | Device::Random)) => {
                if let Some(endless) = Endless::read(device, self.budget, self.clock)? {
                    self.charge_built(endless.data.len())?;
                    self.set_fd(fd, Some(Fd::In(Rc::new(Input::cut(endless.data)))));
                    return Ok(true);
                }
            }
            // `/dev/fd/N` is descriptor N when it is open; a process
            // substitution's `/dev/fd/63` is a file of `crate::pipes`.
            Some(Device::Descriptor(n)) if self.fds.get(n).is_some_and(Option::is_some) => {
                let f = self.fds[n].clone();
                self.set_fd(fd, f);
                return Ok(true);
            }
            Some(Device::Descriptor(_)) | None => {}
        }
        let path = match VPath::parse_from(target, &self.st.cwd) {
            Ok(p) => p,
            Err(e) => return self.redir_error(target, &strerror(&e)),
        };
        match self.fs.read(&path) {
            Ok(data) => {
                self.budget.charge_cpu(data.len() as u64)?;
                let opened = if read_write {
                    read_write_fd(data, path)
                } else {
                    input_fd(data)
                };
                self.set_fd(fd, Some(opened));
                Ok(true)
            }
            Err(e) if read_write && e.code() == Errno::Enoent => {
                if let Err(e) = self.fs.write(&path, b"") {
                    return self.redir_error(target, &strerror(&e));
                }
                self.set_fd(fd, Some(read_write_fd(Vec::new(), path)));
                Ok(true)
            }
            Err(e) => self.redir_error(target, &strerror(&e)),
        }
    }

    /// Opens an output target (`>>` appends; `>` obeys `noclobber`), or
    /// prints why not.
    fn open_output(&mut self, target: &str, append: bool, check_clobber: bool) -> R<Option<Fd>> {
        match Device::named(target) {
            Some(Device::Null | Device::Zero | Device::Random) => return Ok(Some(Fd::Null)),
            Some(Device::Descriptor(n)) if self.fds.get(n).is_some_and(Option::is_some) => {
                return Ok(self.fds[n].clone())
            }
            Some(Device::Descriptor(_)) | None => {}
        }
        let path = match VPath::parse_from(target, &self.st.cwd) {
            Ok(p) => p,
            Err(e) => {
                self.redir_error(target, &strerror(&e))?;
                return Ok(None);
            }
        };
        if check_clobber && self.st.opts.noclobber && self.fs.stat(&path, true).is_ok() {
            self.redir_error(target, "cannot overwrite existing file")?;
            return Ok(None);
        }
        let mode = self.new_file_mode();
        if append {
            let created = mode.is_some() && self.fs.stat(&path, true).is_err();
            if let Err(e) = self.fs.append(&path, b"") {
                self.redir_error(target, &strerror(&e))?;
                return Ok(None);
            }
            if let (true, Some(m)) = (created, mode) {
                let _ = self.fs.chmod(&path, m);
            }
            let slot = self.open_slot(Some(path));
            return Ok(Some(Fd::Out(slot)));
        }
        // `>`: the file is truncated now only if it has content (what runs
        // meanwhile must see it empty); the output replaces it in one write
        // when the descriptor closes. Checking that it can be created costs
        // reads, not writes.
        let mut created = false;
        match self.fs.stat_or_creatable(&path) {
            Ok(Some(node)) if node.kind == stead_vfs::Kind::Dir => {
                self.redir_error(target, "Is a directory")?;
                return Ok(None);
            }
            Ok(Some(node)) if node.size > 0 => {
                if let Err(e) = self.fs.write(&path, b"") {
                    self.redir_error(target, &strerror(&e))?;
                    return Ok(None);
                }
            }
            Ok(Some(_)) => {}
            Ok(None) => created = true,
            Err(e) => {
                self.redir_error(target, &strerror(&e))?;
                return Ok(None);
            }
        }
        let slot = self.open_slot(Some(path));
        self.slots[slot].replace = true;
        if created {
            self.slots[slot].mode = mode;
        }
        Ok(Some(Fd::Out(slot)))
    }
}

impl Shell<'_> {
    /// After `exec` redirections: files written through from now on, and
    /// slots no descriptor refers to any more are closed.
    pub(crate) fn settle_exec_fds(&mut self) -> R<()> {
        let used: Vec<usize> = self
            .fds
            .iter()
            .filter_map(|f| match f {
                Some(Fd::Out(i)) => Some(*i),
                _ => None,
            })
            .collect();
        for i in 2..self.slots.len() {
            if self.slots[i].file.is_none() || !self.slots[i].open {
                continue;
            }
            if used.contains(&i) {
                self.slots[i].direct = true;
            } else {
                self.close_slot(i)?;
            }
        }
        self.flush_direct()
    }

    /// Writes out what write-through slots hold.
    pub(crate) fn flush_direct(&mut self) -> R<()> {
        for i in 2..self.slots.len() {
            let slot = &mut self.slots[i];
            if !slot.direct || !slot.open || slot.out.is_empty() {
                continue;
            }
            let cap = slot.out.cap();
            let bytes =
                std::mem::replace(&mut slot.out, crate::io::Output::with_cap(cap)).into_bytes();
            let replace = std::mem::replace(&mut slot.replace, false);
            if let Some(path) = slot.file.clone() {
                self.budget.charge_write(bytes.len() as u64)?;
                let written = if replace {
                    self.fs.write(&path, &bytes)
                } else {
                    self.fs.append(&path, &bytes)
                };
                if let Err(e) = written {
                    self.write_failed = true;
                    self.err_line(&format!("{}: {}", path.as_str(), strerror(&e)))?;
                }
            }
        }
        Ok(())
    }
}

fn input_fd(data: Vec<u8>) -> Fd {
    Fd::In(Rc::new(Input::new(data)))
}

/// `<>`: an input that writes through to its file (see [`Input::file`]).
fn read_write_fd(data: Vec<u8>, file: VPath) -> Fd {
    Fd::In(Rc::new(Input {
        file: Some(file),
        ..Input::new(data)
    }))
}
