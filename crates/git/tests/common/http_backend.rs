//! A real smart-HTTP git server for tests: `git http-backend` (git's own
//! CGI program) behind a small loopback HTTP/1.1 server, one thread per
//! connection. It serves every bare repository under its root, passes the
//! `Git-Protocol` header on as `GIT_PROTOCOL` (so git answers in v2)
//! unless told to speak v0, and can cut a fetch's answer short, to test
//! what a client does with a pack that stops mid-stream, or require HTTP
//! Basic credentials as a private repository's host does (answering 401
//! with `WWW-Authenticate` without them). Two paths are not git at all: `/html/...` answers a web page, `/garbage/...` an
//! advertisement that is not pkt-lines.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// How the server behaves; changed while it runs.
#[derive(Default)]
pub struct Behaviour {
    /// Ignore `Git-Protocol`: git then answers in v0.
    pub v0_only: AtomicBool,
    /// Cut `git-upload-pack` answers after this many bytes (0: never).
    pub cut_fetch_after: AtomicUsize,
    /// Requests served.
    pub requests: AtomicUsize,
    /// The `Authorization` every request must carry (`Basic ...`); `None`:
    /// the repositories are public.
    pub require_authorization: Mutex<Option<String>>,
    /// Each `Authorization` header the server was sent, in order.
    pub authorizations: Mutex<Vec<String>>,
}

impl Behaviour {
    /// Makes every repository private: `user`/`password` in HTTP Basic.
    pub fn require_basic(&self, user: &str, password: &str) {
        *self.require_authorization.lock().unwrap() = Some(basic(user, password));
    }
}

/// `Basic <base64 of user:password>`, as HTTP Basic sends it.
pub fn basic(user: &str, password: &str) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let data = format!("{user}:{password}").into_bytes();
    let mut out = String::from("Basic ");
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i)) as usize & 63] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

pub struct Server {
    pub port: u16,
    pub root: PathBuf,
    pub behaviour: Arc<Behaviour>,
}

impl Server {
    /// Serves the bare repositories under `root` on a free loopback port.
    pub fn start(root: &Path) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        let port = listener.local_addr().unwrap().port();
        let behaviour = Arc::new(Behaviour::default());
        let (root_dir, shared) = (root.to_path_buf(), behaviour.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (root, behaviour) = (root_dir.clone(), shared.clone());
                std::thread::spawn(move || {
                    let _ = serve(stream, &root, &behaviour);
                });
            }
        });
        Server {
            port,
            root: root.to_path_buf(),
            behaviour,
        }
    }

    /// The URL of repository `name` (`project.git`).
    pub fn url(&self, name: &str) -> String {
        format!("http://127.0.0.1:{}/{name}", self.port)
    }
}

fn serve(stream: TcpStream, root: &Path, behaviour: &Behaviour) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let mut words = line.split_whitespace();
    let method = words.next().unwrap_or("GET").to_string();
    let target = words.next().unwrap_or("/").to_string();
    let mut headers = Vec::new();
    loop {
        let mut header = String::new();
        reader.read_line(&mut header)?;
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((k, v)) = header.split_once(':') {
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
    }
    let header = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    let mut body = Vec::new();
    if let Some(length) = header("content-length") {
        body.resize(length.parse().unwrap_or(0), 0);
        reader.read_exact(&mut body)?;
    } else if header("transfer-encoding").is_some_and(|t| t.contains("chunked")) {
        loop {
            let mut size = String::new();
            reader.read_line(&mut size)?;
            let size = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
            let mut chunk = vec![0; size + 2];
            reader.read_exact(&mut chunk)?;
            if size == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..size]);
        }
    }
    behaviour.requests.fetch_add(1, Ordering::SeqCst);
    let given = header("authorization");
    if let Some(given) = &given {
        behaviour.authorizations.lock().unwrap().push(given.clone());
    }
    let required = behaviour.require_authorization.lock().unwrap().clone();
    let (path, query) = target.split_once('?').unwrap_or((&target, ""));
    let (status, content_type, mut answer) = if required.is_some() && given != required {
        (401, "text/plain".to_string(), b"Unauthorized\n".to_vec())
    } else if path.starts_with("/html/") {
        (
            200,
            "text/html".to_string(),
            b"<html>not git</html>".to_vec(),
        )
    } else if path.starts_with("/garbage/") {
        (
            200,
            "application/x-git-upload-pack-advertisement".to_string(),
            b"this is not a pkt-line stream at all".to_vec(),
        )
    } else {
        cgi(root, &method, path, query, &header, &body, behaviour)?
    };
    let cut = behaviour.cut_fetch_after.load(Ordering::SeqCst);
    if cut > 0 && path.ends_with("/git-upload-pack") && answer.len() > cut {
        answer.truncate(cut);
    }
    let mut stream = stream;
    let reason = match status {
        200 => "OK",
        401 => "Unauthorized",
        404 => "Not Found",
        _ => "Status",
    };
    let challenge = if status == 401 {
        "WWW-Authenticate: Basic realm=\"git\"\r\n"
    } else {
        ""
    };
    write!(
        stream,
        "HTTP/1.1 {status} {reason}\r\n{challenge}Content-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        if cut > 0 && path.ends_with("/git-upload-pack") { answer.len() + 1000 } else { answer.len() }
    )?;
    stream.write_all(&answer)?;
    stream.flush()?;
    // A cut answer promised more than it sends: end the connection.
    stream.shutdown(std::net::Shutdown::Both)
}

/// Runs `git http-backend` for one request: (status, content type, body).
fn cgi(
    root: &Path,
    method: &str,
    path: &str,
    query: &str,
    header: &dyn Fn(&str) -> Option<String>,
    body: &[u8],
    behaviour: &Behaviour,
) -> std::io::Result<(u16, String, Vec<u8>)> {
    let mut command = Command::new("git");
    command
        .arg("http-backend")
        .env("GIT_PROJECT_ROOT", root)
        .env("GIT_HTTP_EXPORT_ALL", "1")
        .env("PATH_INFO", path)
        .env("QUERY_STRING", query)
        .env("REQUEST_METHOD", method)
        .env("CONTENT_TYPE", header("content-type").unwrap_or_default())
        .env("CONTENT_LENGTH", body.len().to_string())
        .env("REMOTE_ADDR", "127.0.0.1")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    if let Some(protocol) = header("git-protocol") {
        if !behaviour.v0_only.load(Ordering::SeqCst) {
            command.env("GIT_PROTOCOL", protocol);
        }
    }
    let mut child = command.spawn()?;
    let mut stdin = child.stdin.take().expect("piped");
    let input = body.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let mut output = Vec::new();
    child
        .stdout
        .take()
        .expect("piped")
        .read_to_end(&mut output)?;
    let _ = writer.join();
    child.wait()?;
    // CGI headers, a blank line, the body.
    let split = output
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|i| (i, 4))
        .or_else(|| output.windows(2).position(|w| w == b"\n\n").map(|i| (i, 2)));
    let Some((end, skip)) = split else {
        return Ok((500, "text/plain".into(), output));
    };
    let head = String::from_utf8_lossy(&output[..end]).to_string();
    let mut status = 200;
    let mut content_type = String::new();
    for line in head.lines() {
        if let Some((k, v)) = line.split_once(':') {
            match k.trim().to_ascii_lowercase().as_str() {
                "status" => {
                    status = v
                        .trim()
                        .split(' ')
                        .next()
                        .unwrap_or("200")
                        .parse()
                        .unwrap_or(500)
                }
                "content-type" => content_type = v.trim().to_string(),
                _ => {}
            }
        }
    }
    Ok((status, content_type, output[end + skip..].to_vec()))
}

/// Serves the repository at `work` (made by the caller with the real git):
/// a bare clone of it, `project.git` under `dir/served`, that takes
/// pushes. What every test and benchmark with a served repository starts
/// from.
pub fn serve_clone(dir: &Path, work: &Path) -> Server {
    let root = dir.join("served");
    std::fs::create_dir_all(&root).unwrap();
    let bare = root.join("project.git");
    fixture_git(
        dir,
        &[
            "clone",
            "-q",
            "--bare",
            &work.to_string_lossy(),
            &bare.to_string_lossy(),
        ],
    );
    fixture_git(&bare, &["config", "http.receivepack", "true"]);
    Server::start(&root)
}

/// The machine's git in `dir`, isolated from its configuration and with a
/// fixed identity, for making the repositories a server serves; its
/// stdout (panics when it fails).
pub fn fixture_git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "A U Thor")
        .env("GIT_AUTHOR_EMAIL", "author@example.com")
        .env("GIT_COMMITTER_NAME", "A U Thor")
        .env("GIT_COMMITTER_EMAIL", "author@example.com")
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}
