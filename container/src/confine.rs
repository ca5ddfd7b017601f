//! How a command runs: as whom, and seeing what.
//!
//! Two boundaries, for the two ways the program is deployed:
//!
//! - **In the image** the program runs as root and every command as the
//!   unprivileged `agent` user ([`Owner`]). The container is the agent's
//!   alone; the user change is what keeps the program's own environment,
//!   which holds the secret (and that of PID 1, which the platform starts
//!   with it), unreadable: `/proc/<pid>/environ` of another user's process
//!   cannot be read. Files the program writes into the workspace are given
//!   to that user, so commands can change them.
//! - **As a local process** one program serves many agents, one directory
//!   each, on a host it shares with everything else. There each command
//!   runs in its own user, mount, PID and IPC namespaces
//!   ([`Isolation::Namespaces`]) on a root filesystem assembled for it: the
//!   host's system directories (`/usr`, `/etc`, ...) read-only, fresh
//!   `/proc`, `/tmp` and a few devices, and its own workspace, read-write,
//!   at its usual path. Nothing else of the host exists for it: not the
//!   other agents' workspaces, not the program's state, not the host's
//!   home directories, and not the program's process (so not its
//!   environment). Writing beside the workspace fails (the assembled root
//!   is read-only). When the command's shell exits, everything it started
//!   ends with its PID namespace.
//!
//! The namespaces are set up by this same binary, started as a helper
//! (`stead-computer __confine ...`) before it runs any other code: it
//! unshares the namespaces, and its child, PID 1 of the new namespace,
//! assembles the root, pivots into it and runs `bash -lc`, forwarding
//! SIGTERM to everything in the namespace and reaping orphans. The helper
//! itself waits and exits the way the command did.
//!
//! Not isolated in the local mode: the network (commands share the host's,
//! including abstract Unix sockets), CPU, memory and disk use, and what
//! the read-only system directories show (e.g. `/etc/passwd`, but not
//! `/etc/shadow`: commands never run as root).

use std::ffi::{CString, OsString};
use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use thiserror::Error;

/// The first argument that makes the binary the confinement helper.
pub const HELPER_ARG: &str = "__confine";

/// Host directories a confined command sees, read-only (or as the symlink
/// they are on a merged-/usr system).
const SYSTEM_DIRS: &[&str] = &[
    "usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc", "opt",
];

/// Devices a confined command sees.
const DEVICES: &[&str] = &["null", "zero", "full", "random", "urandom", "tty"];

/// The user commands run as, and who owns what the program writes into a
/// workspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Owner {
    pub uid: u32,
    pub gid: u32,
}

#[derive(Debug, Error)]
pub enum OwnerError {
    #[error("no user {0:?} (give a name from /etc/passwd or uid[:gid])")]
    Unknown(String),
    #[error("--run-as needs the program to run as root (it changes user for every command)")]
    NotRoot,
}

impl Owner {
    /// Parses `uid[:gid]` or looks a user name up.
    pub fn lookup(spec: &str) -> Result<Owner, OwnerError> {
        if let Some((uid, gid)) = spec.split_once(':') {
            if let (Ok(uid), Ok(gid)) = (uid.parse(), gid.parse()) {
                return Ok(Owner { uid, gid });
            }
        } else if let Ok(uid) = spec.parse() {
            return Ok(Owner { uid, gid: uid });
        }
        let name = CString::new(spec).map_err(|_| OwnerError::Unknown(spec.into()))?;
        // SAFETY: getpwnam is given a valid C string; its result is read at
        // once, before any other call could reuse its static buffer (this
        // runs at start-up, before any other thread exists).
        let entry = unsafe { libc::getpwnam(name.as_ptr()) };
        if entry.is_null() {
            return Err(OwnerError::Unknown(spec.into()));
        }
        // SAFETY: non-null, so it points at a valid passwd record.
        let entry = unsafe { &*entry };
        Ok(Owner {
            uid: entry.pw_uid,
            gid: entry.pw_gid,
        })
    }
}

/// Whether commands get namespaces of their own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isolation {
    /// Commands run in the program's own view of the system (the image:
    /// the container is the boundary).
    None,
    /// Each command gets user, mount, PID and IPC namespaces and a root of
    /// its own (the local process serving many agents).
    Namespaces,
}

/// How commands run.
#[derive(Debug, Clone)]
pub struct Confinement {
    pub owner: Option<Owner>,
    pub isolation: Isolation,
}

impl Confinement {
    /// Checks the combination can work here: a program running as root
    /// must run commands as someone else.
    pub fn new(owner: Option<Owner>, isolation: Isolation) -> Result<Confinement, OwnerError> {
        // SAFETY: getuid(2) cannot fail and touches no memory.
        let root = unsafe { libc::getuid() } == 0;
        if owner.is_some() && !root {
            return Err(OwnerError::NotRoot);
        }
        Ok(Confinement { owner, isolation })
    }

    /// In words, for the start-up line.
    pub fn describe(&self) -> String {
        let isolation = match self.isolation {
            Isolation::None => "unconfined",
            Isolation::Namespaces => "in their own namespaces",
        };
        match self.owner {
            Some(Owner { uid, gid }) => format!("{isolation}, as {uid}:{gid}"),
            None => format!("{isolation}, as the program's user"),
        }
    }

    /// Gives `path` (not following a symlink) to the user commands run as.
    pub fn own(&self, path: &Path) -> io::Result<()> {
        match self.owner {
            Some(Owner { uid, gid }) => std::os::unix::fs::lchown(path, Some(uid), Some(gid)),
            None => Ok(()),
        }
    }

    /// The process that runs `bash -lc <script>` in `cwd` for a workspace
    /// at `workspace`, with `sandbox` as the place to assemble a confined
    /// root. The caller adds the environment and the pipes.
    pub fn command(
        &self,
        workspace: &Path,
        sandbox: &Path,
        cwd: &Path,
        script: &str,
    ) -> io::Result<tokio::process::Command> {
        let mut command = match self.isolation {
            Isolation::None => {
                let mut command = tokio::process::Command::new("bash");
                command.arg("-lc").arg(script).current_dir(cwd);
                command
            }
            Isolation::Namespaces => {
                let mut command = tokio::process::Command::new(std::env::current_exe()?);
                command
                    .arg(HELPER_ARG)
                    .arg(workspace)
                    .arg(sandbox)
                    .arg(cwd)
                    .arg(script)
                    // The helper starts here and moves into the sandbox.
                    .current_dir("/");
                command
            }
        };
        if let Some(Owner { uid, gid }) = self.owner {
            // As root, std also drops the supplementary groups.
            command.uid(uid).gid(gid);
        }
        Ok(command)
    }

    /// Checks that commands can run as configured, by running one the way
    /// a command runs, in a throwaway workspace `<root>/~probe` (a name no
    /// container can have) with its sandbox under `state`.
    pub fn probe(&self, root: &Path, state: &Path) -> Result<(), String> {
        let workspace = root.join("~probe");
        let sandbox = state.join("~probe-sandbox");
        let prepared = (|| {
            fs::create_dir_all(&workspace)?;
            fs::create_dir_all(&sandbox)?;
            self.own(&workspace)
        })();
        prepared.map_err(|e| format!("preparing {}: {e}", workspace.display()))?;
        let mut command = self
            .command(&workspace, &sandbox, &workspace, "exit 0")
            .map_err(|e| e.to_string())?
            .into_std();
        let output = command
            .env_clear()
            .env("PATH", crate::exec::PATH)
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|e| format!("starting a command: {e}"))?;
        let _ = fs::remove_dir_all(&workspace);
        let _ = fs::remove_dir_all(&sandbox);
        if output.status.success() {
            Ok(())
        } else {
            Err(format!(
                "a command could not run ({}): {}",
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            ))
        }
    }
}

/// Runs the helper (the binary was started with [`HELPER_ARG`] first);
/// never returns. `args` are the ones after [`HELPER_ARG`]: workspace,
/// sandbox, cwd, script.
pub fn helper_main(args: &[OsString]) -> ! {
    let [workspace, sandbox, cwd, script] = args else {
        eprintln!("stead-computer: {HELPER_ARG} takes: workspace sandbox cwd script");
        std::process::exit(125);
    };
    let spec = Spec {
        workspace: PathBuf::from(workspace),
        sandbox: PathBuf::from(sandbox),
        cwd: PathBuf::from(cwd),
        script: script.clone(),
    };
    match run_helper(&spec) {
        Ok(end) => end.mirror(),
        Err(error) => {
            eprintln!("stead-computer: cannot confine the command: {error}");
            std::process::exit(125);
        }
    }
}

/// What the helper was asked to run.
struct Spec {
    workspace: PathBuf,
    sandbox: PathBuf,
    cwd: PathBuf,
    script: OsString,
}

/// How the confined shell ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    Exited(i32),
    Signalled(i32),
}

impl End {
    fn from_status(status: libc::c_int) -> End {
        if libc::WIFSIGNALED(status) {
            End::Signalled(libc::WTERMSIG(status))
        } else {
            End::Exited(libc::WEXITSTATUS(status))
        }
    }

    fn encode(self) -> [u8; 5] {
        let (kind, value) = match self {
            End::Exited(code) => (0, code),
            End::Signalled(signal) => (1, signal),
        };
        let mut out = [kind, 0, 0, 0, 0];
        out[1..].copy_from_slice(&value.to_le_bytes());
        out
    }

    fn decode(bytes: &[u8]) -> Option<End> {
        let value = i32::from_le_bytes(bytes.get(1..5)?.try_into().ok()?);
        match bytes.first()? {
            0 => Some(End::Exited(value)),
            1 => Some(End::Signalled(value)),
            _ => None,
        }
    }

    /// Ends this process the way the shell ended.
    fn mirror(self) -> ! {
        match self {
            End::Exited(code) => std::process::exit(code),
            End::Signalled(signal) => {
                // SAFETY: resetting a handler and signalling ourselves.
                unsafe {
                    libc::signal(signal, libc::SIG_DFL);
                    libc::kill(libc::getpid(), signal);
                }
                std::process::exit(128 + signal)
            }
        }
    }
}

fn check(result: libc::c_int, what: &str) -> io::Result<()> {
    if result == -1 {
        let error = io::Error::last_os_error();
        Err(io::Error::new(error.kind(), format!("{what}: {error}")))
    } else {
        Ok(())
    }
}

fn c_path(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a path holds NUL"))
}

/// The helper's own part: new namespaces, then a child to be their init.
fn run_helper(spec: &Spec) -> io::Result<End> {
    // SAFETY: plain syscalls on this (single-threaded) process.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    check(
        // SAFETY: as above.
        unsafe {
            libc::unshare(
                libc::CLONE_NEWUSER | libc::CLONE_NEWNS | libc::CLONE_NEWPID | libc::CLONE_NEWIPC,
            )
        },
        "unshare (user namespaces may be disabled here)",
    )?;
    // The same ids inside as outside: the command stays unprivileged.
    fs::write("/proc/self/setgroups", "deny")?;
    fs::write("/proc/self/uid_map", format!("{uid} {uid} 1"))?;
    fs::write("/proc/self/gid_map", format!("{gid} {gid} 1"))?;

    let mut fds = [0; 2];
    // SAFETY: pipe2 fills the two-element array.
    check(
        unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) },
        "pipe",
    )?;
    // SAFETY: both descriptors were just created and are owned here only.
    let (reader, writer) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };

    // SAFETY: the process is single-threaded, so the child may run
    // arbitrary code.
    let init = unsafe { libc::fork() };
    if init == -1 {
        return Err(io::Error::last_os_error());
    }
    if init == 0 {
        drop(reader);
        run_init(spec, writer);
    }
    drop(writer);
    // The group's SIGTERM reaches init, which passes it on, and any signal
    // sent to the group (a process's `signal` route) reaches the shell
    // directly: this process only waits, and must not die of one first.
    // SAFETY: setting dispositions of this process (after the fork, so
    // init and the shell start with the defaults).
    unsafe {
        for &(_, signal) in stead_sync::process::SIGNALS {
            if signal != libc::SIGKILL && signal != libc::SIGSTOP {
                libc::signal(signal, libc::SIG_IGN);
            }
        }
    }
    let status = wait_for(init)?;
    let mut report = Vec::new();
    let _ = File::from(reader).read_to_end(&mut report);
    Ok(End::decode(&report).unwrap_or(End::from_status(status)))
}

/// Waits for `pid`, through interruptions; its wait status.
fn wait_for(pid: libc::pid_t) -> io::Result<libc::c_int> {
    let mut status = 0;
    loop {
        // SAFETY: waitpid writes the status into a local.
        if unsafe { libc::waitpid(pid, &mut status, 0) } == pid {
            return Ok(status);
        }
        let error = io::Error::last_os_error();
        if error.kind() != io::ErrorKind::Interrupted {
            return Err(error);
        }
    }
}

/// Set by init's signal handler: pass a stop on to the namespace.
static STOP_ASKED: AtomicBool = AtomicBool::new(false);

extern "C" fn ask_stop(_: libc::c_int) {
    STOP_ASKED.store(true, Ordering::SeqCst);
}

/// PID 1 of the new namespaces: assembles the root, runs the shell, passes
/// stops on, reaps, and reports how the shell ended on `report`.
fn run_init(spec: &Spec, report: OwnedFd) -> ! {
    if let Err(error) = assemble_root(spec) {
        eprintln!("stead-computer: cannot confine the command: {error}");
        let _ = File::from(report).write_all(&End::Exited(125).encode());
        std::process::exit(125);
    }
    // SAFETY: installing a handler that only stores to an atomic; no
    // SA_RESTART, so waitpid returns on a signal. SIGTERM is how the
    // program stops a command; any other signal sent to the group (a
    // process's `signal` route: HUP to reload, INT) is the shell's, which
    // the group's signal reaches directly, so init must not die of it.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = ask_stop as extern "C" fn(libc::c_int) as libc::sighandler_t;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(libc::SIGTERM, &action, std::ptr::null_mut());
        for &(_, signal) in stead_sync::process::SIGNALS {
            if ![libc::SIGTERM, libc::SIGKILL, libc::SIGSTOP].contains(&signal) {
                libc::signal(signal, libc::SIG_IGN);
            }
        }
    }
    let shell = spawn_shell(spec);
    let mut end = End::Exited(127);
    loop {
        let mut status = 0;
        // SAFETY: waitpid writes the status into a local.
        let pid = unsafe { libc::waitpid(-1, &mut status, 0) };
        if pid == shell {
            end = End::from_status(status);
            break;
        }
        if pid == -1 {
            match io::Error::last_os_error().raw_os_error() {
                Some(libc::EINTR) if STOP_ASKED.swap(false, Ordering::SeqCst) => {
                    // SAFETY: kill(-1) from init signals every other
                    // process of this PID namespace.
                    unsafe { libc::kill(-1, libc::SIGTERM) };
                }
                Some(libc::EINTR) => {}
                _ => break,
            }
        }
    }
    let _ = File::from(report).write_all(&end.encode());
    // Leaving ends every process still in the namespace.
    std::process::exit(match end {
        End::Exited(code) => code,
        End::Signalled(signal) => 128 + signal,
    })
}

/// Starts `bash -lc <script>` as a child; its pid.
fn spawn_shell(spec: &Spec) -> libc::pid_t {
    // SAFETY: single-threaded; the child only resets signals and execs.
    let pid = unsafe { libc::fork() };
    if pid != 0 {
        return pid;
    }
    // SAFETY: restoring default dispositions before exec (an ignored
    // signal would stay ignored across it).
    unsafe {
        for &(_, signal) in stead_sync::process::SIGNALS {
            if signal != libc::SIGKILL && signal != libc::SIGSTOP {
                libc::signal(signal, libc::SIG_DFL);
            }
        }
    }
    let error = std::os::unix::process::CommandExt::exec(
        std::process::Command::new("bash")
            .arg("-lc")
            .arg(&spec.script)
            .current_dir(&spec.cwd),
    );
    eprintln!("stead-computer: starting bash: {error}");
    std::process::exit(127);
}

fn mount(
    source: Option<&Path>,
    target: &Path,
    kind: Option<&str>,
    flags: libc::c_ulong,
    data: Option<&str>,
) -> io::Result<()> {
    let source = source.map(c_path).transpose()?;
    let target_c = c_path(target)?;
    let kind = kind.map(|k| CString::new(k).expect("no NUL"));
    let data = data.map(|d| CString::new(d).expect("no NUL"));
    let ptr = |c: &Option<CString>| c.as_ref().map_or(std::ptr::null(), |c| c.as_ptr());
    // SAFETY: every pointer is a valid C string or null, as mount(2) takes.
    let result = unsafe {
        libc::mount(
            ptr(&source),
            target_c.as_ptr(),
            ptr(&kind),
            flags,
            ptr(&data).cast(),
        )
    };
    check(result, &format!("mounting {}", target.display()))
}

/// Binds `source` at `target` read-only, keeping the flags the original
/// mount has (a user namespace may not drop them).
fn bind_read_only(source: &Path, target: &Path) -> io::Result<()> {
    mount(
        Some(source),
        target,
        None,
        libc::MS_BIND | libc::MS_REC,
        None,
    )?;
    let target_c = c_path(target)?;
    // SAFETY: statvfs fills a zeroed struct for a valid path.
    let mut info: libc::statvfs = unsafe { std::mem::zeroed() };
    check(
        // SAFETY: as above.
        unsafe { libc::statvfs(target_c.as_ptr(), &mut info) },
        "statvfs",
    )?;
    let mut flags = libc::MS_REMOUNT | libc::MS_BIND | libc::MS_RDONLY;
    for (has, keep) in [
        (libc::ST_NOSUID, libc::MS_NOSUID),
        (libc::ST_NODEV, libc::MS_NODEV),
        (libc::ST_NOEXEC, libc::MS_NOEXEC),
        (libc::ST_NOATIME, libc::MS_NOATIME),
        (libc::ST_NODIRATIME, libc::MS_NODIRATIME),
        (libc::ST_RELATIME, libc::MS_RELATIME),
    ] {
        if info.f_flag & has != 0 {
            flags |= keep;
        }
    }
    mount(None, target, None, flags, None)
}

fn tmpfs(target: &Path, mode: &str) -> io::Result<()> {
    mount(
        Some(Path::new("tmpfs")),
        target,
        Some("tmpfs"),
        libc::MS_NOSUID | libc::MS_NODEV,
        Some(&format!("mode={mode}")),
    )
}

/// Builds the command's root under `spec.sandbox` and moves into it.
fn assemble_root(spec: &Spec) -> io::Result<()> {
    let root = spec.sandbox.as_path();
    // Nothing mounted here may leak back to the host.
    mount(
        None,
        Path::new("/"),
        None,
        libc::MS_REC | libc::MS_PRIVATE,
        None,
    )?;
    tmpfs(root, "0755")?;
    for name in SYSTEM_DIRS {
        let host = Path::new("/").join(name);
        let inside = root.join(name);
        match fs::symlink_metadata(&host) {
            Ok(meta) if meta.file_type().is_symlink() => symlink(fs::read_link(&host)?, &inside)?,
            Ok(meta) if meta.is_dir() => {
                fs::create_dir(&inside)?;
                bind_read_only(&host, &inside)?;
            }
            _ => {}
        }
    }
    let dev = root.join("dev");
    fs::create_dir(&dev)?;
    for name in DEVICES {
        let host = Path::new("/dev").join(name);
        if host.exists() {
            File::create(dev.join(name))?;
            mount(Some(&host), &dev.join(name), None, libc::MS_BIND, None)?;
        }
    }
    for (name, target) in [
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
    ] {
        symlink(target, dev.join(name))?;
    }
    fs::create_dir(dev.join("shm"))?;
    tmpfs(&dev.join("shm"), "1777")?;
    fs::create_dir(root.join("proc"))?;
    mount(
        Some(Path::new("proc")),
        &root.join("proc"),
        Some("proc"),
        libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
        None,
    )?;
    for dir in ["tmp", "var/tmp"] {
        fs::create_dir_all(root.join(dir))?;
        tmpfs(&root.join(dir), "1777")?;
    }
    let workspace = root.join(relative(&spec.workspace));
    fs::create_dir_all(&workspace)?;
    mount(
        Some(&spec.workspace),
        &workspace,
        None,
        libc::MS_BIND | libc::MS_REC,
        None,
    )?;

    std::env::set_current_dir(root)?;
    let dot = c_path(Path::new("."))?;
    check(
        // SAFETY: pivot_root(".", ".") stacks the old root under the new
        // one; both arguments are valid C strings.
        unsafe { libc::syscall(libc::SYS_pivot_root, dot.as_ptr(), dot.as_ptr()) as libc::c_int },
        "pivot_root",
    )?;
    check(
        // SAFETY: detaching the old root, now mounted at ".".
        unsafe { libc::umount2(dot.as_ptr(), libc::MNT_DETACH) },
        "detaching the host's root",
    )?;
    std::env::set_current_dir("/")?;
    // Writes outside the workspace, /tmp and /dev/shm now fail.
    mount(
        None,
        Path::new("/"),
        None,
        libc::MS_REMOUNT | libc::MS_BIND | libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV,
        None,
    )
}

/// `path` without its leading `/`.
fn relative(path: &Path) -> &Path {
    path.strip_prefix("/").unwrap_or(path)
}

/// Whether `path` lies where a confined command sees the host read-only
/// (a workspace there could not be bound read-write).
pub fn under_system_dir(path: &Path) -> Option<&'static str> {
    SYSTEM_DIRS
        .iter()
        .find(|dir| path.starts_with(Path::new("/").join(dir)))
        .copied()
}

#[cfg(test)]
mod tests {
    use super::{under_system_dir, End};
    use std::path::Path;

    #[test]
    fn ends_travel_through_the_report_pipe() {
        for end in [End::Exited(0), End::Exited(3), End::Signalled(9)] {
            assert_eq!(End::decode(&end.encode()), Some(end));
        }
        assert_eq!(End::decode(&[]), None);
        assert_eq!(End::decode(&[7, 0, 0, 0, 0]), None);
    }

    #[test]
    fn workspaces_cannot_live_in_system_dirs() {
        assert_eq!(under_system_dir(Path::new("/usr/local/w")), Some("usr"));
        assert_eq!(under_system_dir(Path::new("/etcetera/w")), None);
        assert_eq!(under_system_dir(Path::new("/tmp/w")), None);
    }
}
