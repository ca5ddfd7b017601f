//! git's smart HTTP protocol, the client side: what `clone`, `fetch`,
//! `pull` and `push` say to a server such as `git http-backend`.
//!
//! Protocol v2 is asked for (`Git-Protocol: version=2`) and used when the
//! server answers with it: `ls-refs` lists the refs, one `fetch` request
//! sends the wants, haves, `deepen` and `done` and gets the pack back on
//! side-band 1 (progress on 2, a server's error on 3). A server that
//! answers the advertisement in v0/v1 instead (its refs, then
//! capabilities after a NUL) is spoken to in v0: the same request as
//! `want`/`shallow`/`deepen`/`have`/`done` lines, the answer `shallow`
//! lines, `NAK`/`ACK`, then the side-band pack. Pushes use
//! `git-receive-pack`, which git speaks in v0 only: the ref updates, the
//! pack, and `report-status` back.
//!
//! The logic is plain Rust over [`Http`], one request and its whole answer
//! at a time, so the same code runs against a loopback server in host
//! tests and over the Durable Object's outbound fetch in the light shell.
//! Redirects are not followed (the caller's [`Http`] answers a 3xx as it
//! is): a server that moved is an error naming where it went.

mod pkt;

use gix_hash::ObjectId;

pub(crate) use pkt::{demux, Line, Reader, Writer};

/// What this client calls itself in `agent=` capabilities.
const AGENT: &str = "agent=git/2.47.3-stead";

/// An HTTP method the protocol uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Get,
    Post,
}

/// One HTTP request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub method: Method,
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// One HTTP answer, whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    /// The `Content-Type` header (empty when there was none).
    pub content_type: String,
    pub body: Vec<u8>,
}

/// How requests reach the network: `Err` is why one could not be made
/// (refused, unreachable, a target the caller does not allow).
pub trait Http {
    fn send(&self, request: Request) -> Result<Response, String>;
}

/// Why talking to a remote failed, in the words git uses after `fatal: `.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TransportError {
    #[error("unable to access '{url}': {reason}")]
    Unreachable { url: String, reason: String },
    #[error("repository '{url}' not found")]
    NotFound { url: String },
    #[error("Authentication failed for '{url}'")]
    Unauthorized { url: String },
    #[error("unable to access '{url}': The requested URL returned error: {status}")]
    Status { url: String, status: u16 },
    #[error("unable to access '{url}': the server answered {status}, a redirect (redirects are not followed)")]
    Redirect { url: String, status: u16 },
    #[error("{url}info/refs not valid: is this a git repository?")]
    NotGit { url: String },
    #[error("protocol error: {0}")]
    Protocol(String),
    #[error("remote error: {0}")]
    Remote(String),
    /// An HTTP failure whose answer was a plain-text message: git shows it
    /// (`said`, as `remote: ` lines) before `error`.
    #[error("{error}")]
    Said {
        said: String,
        error: Box<TransportError>,
    },
}

/// A failed answer's plain-text body as git shows it: trimmed, each line
/// after `remote: ` (nothing for another type or an empty body).
fn said(response: &Response) -> String {
    let plain = response
        .content_type
        .split(';')
        .next()
        .is_some_and(|t| t.trim().eq_ignore_ascii_case("text/plain"));
    if !plain {
        return String::new();
    }
    String::from_utf8_lossy(&response.body)
        .trim()
        .lines()
        .map(|line| format!("remote: {line}\n"))
        .collect()
}

/// A ref as a server lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteRef {
    /// `HEAD`, `refs/heads/main`, `refs/tags/v1`.
    pub name: String,
    pub id: ObjectId,
    /// What an annotated tag points at.
    pub peeled: Option<ObjectId>,
    /// Where a symbolic ref points (`HEAD` → `refs/heads/main`).
    pub symref: Option<String>,
}

/// One remote repository, by URL.
pub struct Remote<'a> {
    http: &'a dyn Http,
    /// The URL as given, without trailing slashes.
    base: String,
}

/// The service a request is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Service {
    UploadPack,
    ReceivePack,
}

impl Service {
    fn name(self) -> &'static str {
        match self {
            Service::UploadPack => "git-upload-pack",
            Service::ReceivePack => "git-receive-pack",
        }
    }
}

/// An upload-pack conversation: which protocol the server speaks, and
/// (in v0) the refs it advertised.
pub struct Session<'r, 'a> {
    remote: &'r Remote<'a>,
    version: Version,
}

/// The protocol a server answered in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Version {
    /// v2, with its capabilities (`fetch=shallow`, `ls-refs=unborn`).
    V2 { capabilities: Vec<String> },
    /// v0/v1: the advertised refs and capabilities.
    V0 {
        refs: Vec<RemoteRef>,
        capabilities: Vec<String>,
    },
}

/// What a fetch asks for.
#[derive(Debug, Default, Clone)]
pub struct FetchRequest {
    pub wants: Vec<ObjectId>,
    pub haves: Vec<ObjectId>,
    /// The repository's shallow boundary (`.git/shallow`).
    pub shallow: Vec<ObjectId>,
    /// `--depth`.
    pub depth: Option<u32>,
}

/// What a fetch brought.
#[derive(Debug, Default)]
pub struct Fetched {
    /// The pack, whole (empty when the server had nothing to send).
    pub pack: Vec<u8>,
    /// Commits that are now shallow, and ones that no longer are.
    pub shallow: Vec<ObjectId>,
    pub unshallow: Vec<ObjectId>,
}

/// One ref update of a push: `old` is what the server has (null for a
/// new ref), `new` what it should have.
#[derive(Debug, Clone)]
pub struct Update {
    pub name: String,
    pub old: ObjectId,
    pub new: ObjectId,
}

/// What the server said of a push.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// `unpack ok`, or the server's reason it could not unpack.
    pub unpack: Result<(), String>,
    /// Each ref: `ok`, or `ng` with the reason.
    pub refs: Vec<(String, Result<(), String>)>,
}

fn id(text: &str) -> Result<ObjectId, TransportError> {
    ObjectId::from_hex(text.as_bytes())
        .map_err(|_| TransportError::Protocol(format!("not an object id: {text:?}")))
}

impl<'a> Remote<'a> {
    pub fn new(http: &'a dyn Http, url: &str) -> Self {
        Remote {
            http,
            base: url.trim_end_matches('/').to_string(),
        }
    }

    /// The URL as git shows it in messages (with a trailing slash).
    pub fn shown(&self) -> String {
        format!("{}/", self.base)
    }

    fn send(&self, request: Request) -> Result<Response, TransportError> {
        let response = self
            .http
            .send(request)
            .map_err(|reason| TransportError::Unreachable {
                url: self.shown(),
                reason,
            })?;
        let url = self.shown();
        let error = match response.status {
            200..=299 => return Ok(response),
            status @ 300..=399 => TransportError::Redirect { url, status },
            401 | 403 => TransportError::Unauthorized { url },
            404 => TransportError::NotFound { url },
            status => TransportError::Status { url, status },
        };
        match said(&response) {
            said if said.is_empty() => Err(error),
            said => Err(TransportError::Said {
                said,
                error: Box::new(error),
            }),
        }
    }

    /// `GET info/refs?service=...`: the smart advertisement, after its
    /// `# service=` line and flush.
    fn advertisement(&self, service: Service, v2: bool) -> Result<Vec<u8>, TransportError> {
        let mut headers = vec![("Accept".to_string(), "*/*".to_string())];
        if v2 {
            headers.push(("Git-Protocol".into(), "version=2".into()));
        }
        let response = self.send(Request {
            method: Method::Get,
            url: format!("{}/info/refs?service={}", self.base, service.name()),
            headers,
            body: Vec::new(),
        })?;
        let expected = format!("application/x-{}-advertisement", service.name());
        if response.content_type != expected {
            return Err(TransportError::NotGit { url: self.shown() });
        }
        // `# service=...` and a flush come first in v0; a v2 answer may
        // start with its version line directly.
        let mut reader = Reader::new(&response.body);
        if let Some(line) = reader.next()? {
            match line.text() {
                Some(text) if text.starts_with("# service=") => {
                    if text != format!("# service={}", service.name()) {
                        return Err(TransportError::Protocol(format!(
                            "the advertisement is for {text:?}"
                        )));
                    }
                    if reader.expect()? != Line::Flush {
                        return Err(TransportError::Protocol(
                            "no flush after the service line".into(),
                        ));
                    }
                }
                _ => reader = Reader::new(&response.body),
            }
        }
        Ok(reader.rest().to_vec())
    }

    /// Starts a fetch: asks for v2 and learns what the server speaks.
    pub fn upload_pack(&self) -> Result<Session<'_, 'a>, TransportError> {
        let body = self.advertisement(Service::UploadPack, true)?;
        let mut reader = Reader::new(&body);
        let version = match reader.next()? {
            Some(line) if line.text() == Some("version 2") => {
                let mut capabilities = Vec::new();
                loop {
                    match reader.expect()? {
                        Line::Flush => break,
                        line => capabilities.push(
                            line.text()
                                .ok_or_else(|| {
                                    TransportError::Protocol("a capability is not text".into())
                                })?
                                .to_string(),
                        ),
                    }
                }
                Version::V2 { capabilities }
            }
            _ => {
                let (refs, capabilities) = v0_refs(&body)?;
                Version::V0 { refs, capabilities }
            }
        };
        Ok(Session {
            remote: self,
            version,
        })
    }

    fn post(&self, service: Service, body: Vec<u8>, v2: bool) -> Result<Response, TransportError> {
        let mut headers = vec![
            (
                "Content-Type".to_string(),
                format!("application/x-{}-request", service.name()),
            ),
            (
                "Accept".to_string(),
                format!("application/x-{}-result", service.name()),
            ),
        ];
        if v2 {
            headers.push(("Git-Protocol".into(), "version=2".into()));
        }
        let response = self.send(Request {
            method: Method::Post,
            url: format!("{}/{}", self.base, service.name()),
            headers,
            body,
        })?;
        let expected = format!("application/x-{}-result", service.name());
        if response.content_type != expected {
            return Err(TransportError::Protocol(format!(
                "the server answered {:?}, not {expected}",
                response.content_type
            )));
        }
        Ok(response)
    }

    /// The refs `git-receive-pack` advertises (what a push updates from).
    pub fn receive_pack_refs(&self) -> Result<(Vec<RemoteRef>, Vec<String>), TransportError> {
        let body = self.advertisement(Service::ReceivePack, false)?;
        v0_refs(&body)
    }

    /// Sends `updates` and `pack` to `git-receive-pack`; the server's
    /// report. `capabilities` are what it advertised.
    pub fn push(
        &self,
        updates: &[Update],
        pack: &[u8],
        capabilities: &[String],
    ) -> Result<Report, TransportError> {
        let has = |cap: &str| capabilities.iter().any(|c| c == cap);
        let side_band = has("side-band-64k");
        let mut writer = Writer::default();
        for (i, update) in updates.iter().enumerate() {
            let mut line = format!("{} {} {}", update.old, update.new, update.name);
            if i == 0 {
                line.push('\0');
                line.push_str("report-status");
                if side_band {
                    line.push_str(" side-band-64k");
                }
                line.push_str(" quiet ");
                line.push_str(AGENT);
            }
            line.push('\n');
            writer.line(&line);
        }
        writer.flush();
        let mut body = writer.bytes;
        body.extend_from_slice(pack);
        let response = self.post(Service::ReceivePack, body, false)?;
        let status = if side_band {
            demux(&mut Reader::new(&response.body), &mut |_| {})?
        } else {
            response.body
        };
        report(&status)
    }
}

/// Parses `report-status`: `unpack ok|<reason>`, then `ok <ref>` or
/// `ng <ref> <reason>` lines, then a flush.
fn report(body: &[u8]) -> Result<Report, TransportError> {
    let mut reader = Reader::new(body);
    let unpack = match reader.expect()?.text() {
        Some("unpack ok") => Ok(()),
        Some(text) => match text.strip_prefix("unpack ") {
            Some(reason) => Err(reason.to_string()),
            None => return Err(TransportError::Protocol(format!("unexpected {text:?}"))),
        },
        None => return Err(TransportError::Protocol("no unpack status".into())),
    };
    let mut refs = Vec::new();
    while let Some(line) = reader.next()? {
        let Some(text) = line.text() else { break };
        if let Some(name) = text.strip_prefix("ok ") {
            refs.push((name.to_string(), Ok(())));
        } else if let Some(rest) = text.strip_prefix("ng ") {
            let (name, reason) = rest.split_once(' ').unwrap_or((rest, "failed"));
            refs.push((name.to_string(), Err(reason.to_string())));
        } else {
            return Err(TransportError::Protocol(format!("unexpected {text:?}")));
        }
    }
    Ok(Report { unpack, refs })
}

/// A v0 advertisement: `<id> <name>` lines, the first with the
/// capabilities after a NUL, `<id> <tag>^{}` lines peeling the tag
/// before; an empty repository advertises `capabilities^{}` alone.
fn v0_refs(body: &[u8]) -> Result<(Vec<RemoteRef>, Vec<String>), TransportError> {
    let mut reader = Reader::new(body);
    let mut refs: Vec<RemoteRef> = Vec::new();
    let mut capabilities = Vec::new();
    let mut first = true;
    loop {
        let line = match reader.expect()? {
            Line::Flush => break,
            Line::Data(data) => data,
            _ => return Err(TransportError::Protocol("unexpected line in refs".into())),
        };
        let line = line.strip_suffix(b"\n").unwrap_or(line);
        let (text, caps) = match line.iter().position(|&b| b == 0) {
            Some(nul) if first => (&line[..nul], Some(&line[nul + 1..])),
            _ => (line, None),
        };
        first = false;
        if let Some(caps) = caps {
            capabilities = String::from_utf8_lossy(caps)
                .split(' ')
                .filter(|c| !c.is_empty())
                .map(str::to_string)
                .collect();
        }
        let text = String::from_utf8_lossy(text);
        let (hex, name) = text
            .split_once(' ')
            .ok_or_else(|| TransportError::Protocol(format!("bad ref line {text:?}")))?;
        if name == "capabilities^{}" {
            continue;
        }
        let oid = id(hex)?;
        if let Some(tag) = name.strip_suffix("^{}") {
            if let Some(last) = refs.last_mut().filter(|r| r.name == tag) {
                last.peeled = Some(oid);
            }
            continue;
        }
        refs.push(RemoteRef {
            name: name.to_string(),
            id: oid,
            peeled: None,
            symref: None,
        });
    }
    for cap in &capabilities {
        if let Some((from, to)) = cap.strip_prefix("symref=").and_then(|s| s.split_once(':')) {
            if let Some(r) = refs.iter_mut().find(|r| r.name == from) {
                r.symref = Some(to.to_string());
            }
        }
    }
    Ok((refs, capabilities))
}

impl Session<'_, '_> {
    /// The protocol the server answered in.
    pub fn version(&self) -> &Version {
        &self.version
    }

    /// The refs under `prefixes` (`HEAD` included when asked for), with
    /// symbolic targets and peeled tags.
    pub fn list_refs(&self, prefixes: &[&str]) -> Result<Vec<RemoteRef>, TransportError> {
        let wanted = |name: &str| prefixes.iter().any(|p| name.starts_with(p));
        match &self.version {
            Version::V0 { refs, .. } => {
                Ok(refs.iter().filter(|r| wanted(&r.name)).cloned().collect())
            }
            Version::V2 { .. } => {
                let mut writer = Writer::default();
                writer.line("command=ls-refs\n");
                writer.line(&format!("{AGENT}\n"));
                writer.line("object-format=sha1\n");
                writer.delim();
                writer.line("peel\n");
                writer.line("symrefs\n");
                for prefix in prefixes {
                    writer.line(&format!("ref-prefix {prefix}\n"));
                }
                writer.flush();
                let response = self.remote.post(Service::UploadPack, writer.bytes, true)?;
                let mut reader = Reader::new(&response.body);
                let mut refs = Vec::new();
                loop {
                    let line = reader.expect()?;
                    if line == Line::Flush {
                        break;
                    }
                    let text = line
                        .text()
                        .ok_or_else(|| TransportError::Protocol("a ref line is not text".into()))?;
                    refs.push(v2_ref(text)?);
                }
                Ok(refs.into_iter().filter(|r| wanted(&r.name)).collect())
            }
        }
    }

    /// Asks for a pack of what `request` wants.
    pub fn fetch(&self, request: &FetchRequest) -> Result<Fetched, TransportError> {
        match &self.version {
            Version::V2 { .. } => self.fetch_v2(request),
            Version::V0 { capabilities, .. } => self.fetch_v0(request, capabilities),
        }
    }

    fn fetch_v2(&self, request: &FetchRequest) -> Result<Fetched, TransportError> {
        let mut writer = Writer::default();
        writer.line("command=fetch\n");
        writer.line(&format!("{AGENT}\n"));
        writer.line("object-format=sha1\n");
        writer.delim();
        writer.line("ofs-delta\n");
        writer.line("include-tag\n");
        writer.line("no-progress\n");
        negotiation(&mut writer, request);
        writer.line("done\n");
        writer.flush();
        let response = self.remote.post(Service::UploadPack, writer.bytes, true)?;
        let mut reader = Reader::new(&response.body);
        let mut fetched = Fetched::default();
        loop {
            let Some(section) = reader.next()? else {
                return Err(TransportError::Protocol("no packfile in the answer".into()));
            };
            match section.text() {
                Some("packfile") => {
                    fetched.pack = demux(&mut reader, &mut |_| {})?;
                    return Ok(fetched);
                }
                Some("shallow-info") => shallow_lines(&mut reader, &mut fetched, Line::Delim)?,
                Some("acknowledgments" | "wanted-refs" | "packfile-uris") => {
                    skip_section(&mut reader)?
                }
                Some(other) => {
                    return Err(TransportError::Protocol(format!(
                        "unexpected section {other:?}"
                    )))
                }
                None if section == Line::Flush => return Ok(fetched),
                None => return Err(TransportError::Protocol("a section without a name".into())),
            }
        }
    }

    fn fetch_v0(
        &self,
        request: &FetchRequest,
        capabilities: &[String],
    ) -> Result<Fetched, TransportError> {
        let has = |cap: &str| capabilities.iter().any(|c| c == cap);
        if !has("side-band-64k") {
            return Err(TransportError::Protocol(
                "the server does not offer side-band-64k".into(),
            ));
        }
        if request.depth.is_some() && !has("shallow") {
            return Err(TransportError::Protocol(
                "the server does not support shallow clients".into(),
            ));
        }
        let mut writer = Writer::default();
        for (i, want) in request.wants.iter().enumerate() {
            if i == 0 {
                let mut caps = String::from("side-band-64k ofs-delta include-tag no-progress");
                if request.depth.is_some() || !request.shallow.is_empty() {
                    caps.push_str(" shallow");
                }
                writer.line(&format!("want {want} {caps} {AGENT}\n"));
            } else {
                writer.line(&format!("want {want}\n"));
            }
        }
        for id in &request.shallow {
            writer.line(&format!("shallow {id}\n"));
        }
        if let Some(depth) = request.depth {
            writer.line(&format!("deepen {depth}\n"));
        }
        writer.flush();
        for id in &request.haves {
            writer.line(&format!("have {id}\n"));
        }
        writer.line("done\n");
        let response = self.remote.post(Service::UploadPack, writer.bytes, false)?;
        let mut reader = Reader::new(&response.body);
        let mut fetched = Fetched::default();
        if request.depth.is_some() {
            shallow_lines(&mut reader, &mut fetched, Line::Flush)?;
        }
        // NAK, or ACKs ending with one that is not "continue"-style.
        loop {
            let line = reader.expect()?;
            match line.text() {
                Some("NAK") => break,
                Some(text) if text.starts_with("ACK ") => {
                    if text.split(' ').count() == 2 {
                        break;
                    }
                }
                Some(text) => {
                    if let Some(error) = text.strip_prefix("ERR ") {
                        return Err(TransportError::Remote(error.to_string()));
                    }
                    return Err(TransportError::Protocol(format!("unexpected {text:?}")));
                }
                None => return Err(TransportError::Protocol("no NAK or ACK".into())),
            }
        }
        fetched.pack = demux(&mut reader, &mut |_| {})?;
        Ok(fetched)
    }
}

/// `want`, `shallow`, `deepen` and `have` lines of a v2 fetch.
fn negotiation(writer: &mut Writer, request: &FetchRequest) {
    for want in &request.wants {
        writer.line(&format!("want {want}\n"));
    }
    for id in &request.shallow {
        writer.line(&format!("shallow {id}\n"));
    }
    if let Some(depth) = request.depth {
        writer.line(&format!("deepen {depth}\n"));
    }
    for have in &request.haves {
        writer.line(&format!("have {have}\n"));
    }
}

/// `shallow <id>` / `unshallow <id>` lines up to `end`.
fn shallow_lines(
    reader: &mut Reader<'_>,
    fetched: &mut Fetched,
    end: Line<'_>,
) -> Result<(), TransportError> {
    loop {
        let line = reader.expect()?;
        if line == end {
            return Ok(());
        }
        let text = line
            .text()
            .ok_or_else(|| TransportError::Protocol("bad shallow line".into()))?;
        if let Some(hex) = text.strip_prefix("shallow ") {
            fetched.shallow.push(id(hex)?);
        } else if let Some(hex) = text.strip_prefix("unshallow ") {
            fetched.unshallow.push(id(hex)?);
        } else {
            return Err(TransportError::Protocol(format!("unexpected {text:?}")));
        }
    }
}

/// Skips a v2 section up to its delimiter.
fn skip_section(reader: &mut Reader<'_>) -> Result<(), TransportError> {
    loop {
        match reader.expect()? {
            Line::Delim => return Ok(()),
            Line::Flush | Line::End => {
                return Err(TransportError::Protocol(
                    "the answer ends before its packfile".into(),
                ))
            }
            Line::Data(_) => {}
        }
    }
}

/// One `ls-refs` line: `<id> <name>` with `symref-target:` and `peeled:`
/// attributes.
fn v2_ref(text: &str) -> Result<RemoteRef, TransportError> {
    let mut words = text.split(' ');
    let hex = words.next().unwrap_or_default();
    let name = words
        .next()
        .ok_or_else(|| TransportError::Protocol(format!("bad ref line {text:?}")))?;
    let mut remote = RemoteRef {
        name: name.to_string(),
        id: id(hex)?,
        peeled: None,
        symref: None,
    };
    for attribute in words {
        if let Some(target) = attribute.strip_prefix("symref-target:") {
            remote.symref = Some(target.to_string());
        } else if let Some(peeled) = attribute.strip_prefix("peeled:") {
            remote.peeled = Some(id(peeled)?);
        }
    }
    Ok(remote)
}
