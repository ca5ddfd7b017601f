//! The computer behind a test runtime, in one of two modes.
//!
//! - **Real containers** ([`ComputerMode::Container`]): `wrangler dev
//!   --enable-containers` runs the project's own image through the
//!   `Computer` object's Container binding, one container per agent, on
//!   the local Docker engine. This is the path production takes, so it is
//!   used whenever an engine answers.
//! - **Local process** ([`ComputerMode::LocalProcess`]): where no engine
//!   can run, `stead-computer` runs on the host, serving every agent of one
//!   runtime in its own directory, and the Worker reaches it through
//!   `COMPUTER_DEV_URL`.
//!
//! Tests act on an agent's computer from outside (kill it, stop it, talk
//! to its program with a chosen secret) through a [`Machine`], which hides
//! which mode runs.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use crate::{repo_root, Client};

/// A fresh secret for one local program: 32 random bytes, in hex. Never a
/// fixed one: the program listens on the loopback that the commands it
/// runs share, so a secret anyone can know would let a command drive it
/// for every agent.
fn random_secret() -> String {
    use std::io::Read;
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut random| random.read_exact(&mut bytes))
        .expect("read /dev/urandom");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// How the computer runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ComputerMode {
    /// The project's image in real containers, through the Container binding.
    Container,
    /// `stead-computer` as a local process (no Docker engine).
    LocalProcess,
}

impl ComputerMode {
    /// `STEAD_COMPUTER_MODE` (`container` or `local`) when set; otherwise
    /// what `scripts/computer-mode` decides, as `scripts/dev` and
    /// `scripts/test` do (see [`environment`]). The choice is announced once
    /// per process on standard error (uncaptured, so test runs show it).
    pub fn from_env() -> ComputerMode {
        discovered().mode
    }

    /// What the mode is, in words.
    pub fn describe(self) -> &'static str {
        match self {
            ComputerMode::Container => {
                "in real containers (the Container binding on the local Docker engine)"
            }
            ComputerMode::LocalProcess => {
                "as a local process (stead-computer on the host; no Docker engine)"
            }
        }
    }

    fn parse(text: &str) -> Option<ComputerMode> {
        match text {
            "container" => Some(ComputerMode::Container),
            "local" => Some(ComputerMode::LocalProcess),
            _ => None,
        }
    }
}

/// The computer mode this process uses, and the environment wrangler needs
/// for it.
struct Discovered {
    mode: ComputerMode,
    env: Vec<(String, String)>,
}

fn discovered() -> &'static Discovered {
    static FOUND: OnceLock<Discovered> = OnceLock::new();
    FOUND.get_or_init(|| {
        let found = match std::env::var("STEAD_COMPUTER_MODE") {
            Ok(text) if !text.is_empty() => Discovered {
                mode: ComputerMode::parse(&text).unwrap_or_else(|| {
                    panic!("STEAD_COMPUTER_MODE must be `container` or `local`, not {text:?}")
                }),
                env: Vec::new(),
            },
            _ => run_computer_mode(),
        };
        let _ = writeln!(
            std::io::stderr(),
            "stead-harness: the computer runs {}",
            found.mode.describe()
        );
        found
    })
}

/// The variables `scripts/computer-mode` exported for this process's mode
/// (on the development machines, what wrangler needs to run the project's
/// containers: `WRANGLER_DOCKER_BIN`, `MINIFLARE_CONTAINER_EGRESS_IMAGE`,
/// ...); empty when `STEAD_COMPUTER_MODE` was set, since whoever set it
/// (`scripts/test`) has exported them already.
pub fn environment() -> &'static [(String, String)] {
    &discovered().env
}

/// Sources `scripts/computer-mode` as `scripts/dev` does.
fn run_computer_mode() -> Discovered {
    source_mode_script(&repo_root().join("scripts/computer-mode"))
        .unwrap_or_else(|why| panic!("{why}; STEAD_COMPUTER_MODE=local uses the local process"))
}

/// Sources `script` in `sh` from the repository root (its messages, and
/// those of the container environment's `prepare`, on our standard error)
/// and takes the mode it exported as `STEAD_COMPUTER_MODE` and every other
/// variable it set or changed.
fn source_mode_script(script: &Path) -> Result<Discovered, String> {
    let output = Command::new("sh")
        .arg("-c")
        .arg(". \"$0\" >&2 && env -0")
        .arg(script)
        .current_dir(repo_root())
        .env_remove("STEAD_COMPUTER_MODE")
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run sh for {}: {e}", script.display()))?;
    if !output.status.success() {
        return Err(format!("{} failed ({})", script.display(), output.status));
    }
    // The shell's own bookkeeping is not the mode's environment.
    const SHELL_OWN: [&str; 4] = ["PWD", "OLDPWD", "SHLVL", "_"];
    let mut mode = None;
    let mut env = Vec::new();
    for entry in output.stdout.split(|b| *b == 0) {
        let entry = String::from_utf8_lossy(entry);
        let Some((name, value)) = entry.split_once('=') else {
            continue;
        };
        if name == "STEAD_COMPUTER_MODE" {
            mode = ComputerMode::parse(value);
        } else if !SHELL_OWN.contains(&name)
            && std::env::var_os(name).is_none_or(|ours| ours.to_string_lossy() != value)
        {
            env.push((name.to_string(), value.to_string()));
        }
    }
    let mode = mode.ok_or_else(|| {
        format!(
            "{} exported no STEAD_COMPUTER_MODE of `container` or `local`",
            script.display()
        )
    })?;
    Ok(Discovered { mode, env })
}

/// Runs the Docker CLI; its standard output, or why it failed.
pub fn docker(args: &[&str]) -> Result<String, String> {
    let output = Command::new("docker")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("docker {}: {e}", args.join(" ")))?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
    } else {
        Err(format!(
            "docker {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    }
}

/// Cargo's build directory: `CARGO_TARGET_DIR` when set (relative to the
/// repository root), else `target/`.
fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => repo_root().join(dir),
        None => repo_root().join("target"),
    }
}

/// Builds the container-side program once per process; returns its path.
pub fn build_computer() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let binary = target_dir().join("release/stead-computer");
            if std::env::var("STEAD_SKIP_BUILD").as_deref() == Ok("1") && binary.exists() {
                return binary;
            }
            let status = Command::new("cargo")
                .args(["build", "--release", "-p", "stead-computer"])
                .current_dir(repo_root())
                .status()
                .expect("run cargo build");
            assert!(status.success(), "building stead-computer failed");
            binary
        })
        .clone()
}

/// The container-side program as a local process, serving every agent of
/// one runtime, each in its own directory.
pub struct ComputerProcess {
    child: Child,
    port: u16,
    dir: PathBuf,
    secret: String,
}

impl ComputerProcess {
    /// Starts the program on `port` with its workspaces under `dir`, and a
    /// secret of its own.
    pub fn start(dir: &Path, port: u16) -> ComputerProcess {
        ComputerProcess::start_with_secret(dir, port, random_secret())
    }

    fn start_with_secret(dir: &Path, port: u16, secret: String) -> ComputerProcess {
        let binary = build_computer();
        std::fs::create_dir_all(dir).expect("computer dir");
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.with_extension("log"))
            .expect("computer log");
        let mut command = Command::new(binary);
        command
            .args(["--listen", &format!("127.0.0.1:{port}"), "--per-container"])
            .arg("--root")
            .arg(dir.join("workspaces"))
            .arg("--state")
            .arg(dir.join("state"));
        // SAFETY: getuid(2) cannot fail and touches no memory.
        if unsafe { libc::getuid() } == 0 {
            // The program never runs commands as root.
            command.args(["--run-as", "nobody"]);
        }
        let child = command
            .env("STEAD_COMPUTER_SECRET", &secret)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log file"))
            .stderr(log)
            .spawn()
            .expect("start stead-computer");
        let mut process = ComputerProcess {
            child,
            port,
            dir: dir.to_path_buf(),
            secret,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if ureq::get(&format!("{}/health", process.url()))
                .call()
                .is_ok()
            {
                return process;
            }
            if let Ok(Some(status)) = process.child.try_wait() {
                panic!("stead-computer exited at start ({status}); see its log");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("stead-computer did not become ready");
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The secret requests to the program carry (`Authorization: Bearer`).
    pub fn secret(&self) -> &str {
        &self.secret
    }

    /// The directory holding agent `agent`'s copy of its workspace.
    pub fn workspace(&self, agent: &str) -> PathBuf {
        self.dir.join("workspaces").join(agent)
    }

    /// Kills the program at once (SIGKILL), as a vanished container.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Sends SIGTERM, as the platform stopping a container, and waits (at
    /// most `patience`) for the program to exit; whether it did.
    pub fn terminate(&mut self, patience: Duration) -> bool {
        signal(self.child.id(), libc::SIGTERM);
        let deadline = Instant::now() + patience;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    /// Starts a fresh program on the same port (its disk wiped), after
    /// killing this one if it still runs; the Worker knows it by the same
    /// secret.
    pub fn restart(&mut self) {
        self.kill();
        *self = ComputerProcess::start_with_secret(&self.dir, self.port, self.secret.clone());
    }
}

impl Drop for ComputerProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

fn signal(pid: u32, signal: i32) {
    // SAFETY: kill(2) on our own child; no memory is involved.
    unsafe {
        libc::kill(pid as i32, signal);
    }
}

/// The computer side of one runtime.
pub(crate) enum Computers {
    Containers,
    Local(Mutex<ComputerProcess>),
}

impl Computers {
    pub(crate) fn local(&self) -> Option<MutexGuard<'_, ComputerProcess>> {
        match self {
            Computers::Containers => None,
            Computers::Local(process) => Some(process.lock().unwrap_or_else(|e| e.into_inner())),
        }
    }
}

/// One agent's computer, seen from outside: found with
/// [`crate::Runtime::machine`] while the agent's computer is idle.
pub enum Machine<'a> {
    /// A real container, by name (`workerd-<session>-<app>-<object id>`).
    Container { name: String },
    /// The runtime's local program, serving this agent in its directory.
    Local {
        process: &'a Mutex<ComputerProcess>,
        agent: String,
    },
}

impl Machine<'_> {
    /// Finds agent `agent`'s container: the command's hostname is that of
    /// the sidecar whose network the container shares, and the container
    /// is named as the sidecar without its `-proxy` suffix. Runs a command
    /// on the computer (which starts it if needed).
    pub(crate) fn find_container(client: &Client, agent: &str) -> Machine<'static> {
        let reply = client.tool(
            agent,
            "exec",
            serde_json::json!({ "command": "hostname", "backend": "computer" }),
        );
        let out = reply.json();
        assert_eq!(out["exit_code"], 0, "hostname on the computer: {out}");
        let host = out["stdout"]
            .as_str()
            .unwrap_or_default()
            .trim()
            .to_string();
        let sidecar = docker(&["inspect", "--format", "{{.Name}}", &host])
            .unwrap_or_else(|e| panic!("the computer's sidecar {host}: {e}"));
        let name = sidecar
            .trim_start_matches('/')
            .strip_suffix("-proxy")
            .unwrap_or_else(|| panic!("{sidecar} is not a container sidecar"))
            .to_string();
        Machine::Container { name }
    }

    /// Kills the computer at once (SIGKILL), as a container that vanishes;
    /// the next command finds a fresh one.
    pub fn kill(&self) {
        match self {
            Machine::Container { name } => {
                docker(&["kill", name]).unwrap_or_else(|e| panic!("{e}"));
            }
            Machine::Local { process, .. } => lock(process).restart(),
        }
    }

    /// Stops the computer as the platform does (SIGTERM to its program),
    /// waits until it has exited (panics after `patience`), and leaves the
    /// next command a fresh one.
    pub fn terminate(&self, patience: Duration) {
        match self {
            Machine::Container { name } => {
                docker(&["kill", "--signal", "TERM", name]).unwrap_or_else(|e| panic!("{e}"));
                let deadline = Instant::now() + patience;
                while self.is_running() {
                    assert!(
                        Instant::now() < deadline,
                        "{name} still runs {patience:?} after SIGTERM"
                    );
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
            Machine::Local { process, .. } => {
                let mut process = lock(process);
                assert!(
                    process.terminate(patience),
                    "stead-computer still runs {patience:?} after SIGTERM"
                );
                process.restart();
            }
        }
    }

    /// Sends SIGTERM to the computer's program, as the platform does when
    /// it stops a container, and returns at once: the program drains the
    /// command it stopped while the `Computer` object replaces it for the
    /// next one. (The local program has no owner to replace it, so there
    /// this waits for it to exit, at most `patience`, and restarts it.)
    pub fn ask_to_stop(&self, patience: Duration) {
        match self {
            Machine::Container { name } => {
                docker(&["kill", "--signal", "TERM", name]).unwrap_or_else(|e| panic!("{e}"));
            }
            Machine::Local { .. } => self.terminate(patience),
        }
    }

    /// Whether the computer runs (the local program always counts as
    /// running: it serves every agent).
    pub fn is_running(&self) -> bool {
        match self {
            Machine::Container { name } => {
                docker(&["inspect", "--format", "{{.State.Running}}", name]).as_deref()
                    == Ok("true")
            }
            Machine::Local { .. } => true,
        }
    }

    /// The environment the computer's program was started with (the
    /// container's configuration; for the local program, what the harness
    /// gave it).
    pub fn environment(&self) -> Vec<(String, String)> {
        match self {
            Machine::Container { name } => {
                let text = docker(&["inspect", "--format", "{{json .Config.Env}}", name])
                    .unwrap_or_else(|e| panic!("{e}"));
                let list: Vec<String> = serde_json::from_str(&text).expect("env list");
                list.iter()
                    .filter_map(|pair| pair.split_once('='))
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect()
            }
            Machine::Local { process, .. } => vec![(
                "STEAD_COMPUTER_SECRET".to_string(),
                lock(process).secret().to_string(),
            )],
        }
    }

    /// The HTTP status the computer's program answers `GET path` with,
    /// sent with `Authorization: Bearer <secret>` from beside it (inside
    /// the container, or on the host to the local program).
    pub fn status_with_secret(&self, path: &str, secret: &str) -> u16 {
        match self {
            Machine::Container { name } => {
                let url = format!("http://127.0.0.1:8080{path}");
                let auth = format!("Authorization: Bearer {secret}");
                let code = docker(&[
                    "exec",
                    name,
                    "curl",
                    "-s",
                    "-o",
                    "/dev/null",
                    "-w",
                    "%{http_code}",
                    "-H",
                    &auth,
                    &url,
                ])
                .unwrap_or_else(|e| panic!("{e}"));
                code.parse()
                    .unwrap_or_else(|_| panic!("curl said {code:?}"))
            }
            Machine::Local { process, agent } => {
                let url = format!("{}{path}", lock(process).url());
                let agent_config = ureq::Agent::config_builder()
                    .http_status_as_error(false)
                    .build();
                let client: ureq::Agent = agent_config.into();
                client
                    .get(&url)
                    .header("authorization", &format!("Bearer {secret}"))
                    .header("x-stead-container", agent)
                    .call()
                    .map(|r| r.status().as_u16())
                    .unwrap_or_else(|e| panic!("GET {url}: {e}"))
            }
        }
    }
}

fn lock(process: &Mutex<ComputerProcess>) -> MutexGuard<'_, ComputerProcess> {
    process.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn script(text: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = crate::temp_state();
        let path = dir.path().join("computer-mode");
        std::fs::write(&path, text).unwrap();
        (dir, path)
    }

    /// The harness takes its mode and wrangler's environment from the
    /// mode script, as `scripts/dev` does by sourcing it.
    #[test]
    fn the_mode_script_gives_the_mode_and_the_environment_it_exports() {
        let (_dir, path) = script(
            "echo 'computer: real containers'\n\
             export WRANGLER_DOCKER_BIN=/opt/shim MINIFLARE_CONTAINER_EGRESS_IMAGE='127.0.0.1:5055/p:local'\n\
             unexported=1\ncd /\nSTEAD_COMPUTER_MODE=container\nexport STEAD_COMPUTER_MODE\n",
        );
        let found = source_mode_script(&path).unwrap();
        assert_eq!(found.mode, ComputerMode::Container);
        let mut env = found.env;
        env.sort();
        assert_eq!(
            env,
            [
                (
                    "MINIFLARE_CONTAINER_EGRESS_IMAGE".to_string(),
                    "127.0.0.1:5055/p:local".to_string()
                ),
                ("WRANGLER_DOCKER_BIN".to_string(), "/opt/shim".to_string()),
            ]
        );
    }

    #[test]
    fn a_failing_mode_script_says_so() {
        let (_dir, path) = script("echo 'computer-mode: no engine' >&2; exit 1\n");
        let error = source_mode_script(&path).err().unwrap();
        assert!(
            error.ends_with("computer-mode failed (exit status: 1)"),
            "{error}"
        );
        let (_dir, path) = script("export STEAD_COMPUTER_MODE=podman\n");
        let error = source_mode_script(&path).err().unwrap();
        assert!(
            error.ends_with("exported no STEAD_COMPUTER_MODE of `container` or `local`"),
            "{error}"
        );
    }
}
