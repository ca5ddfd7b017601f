//! The `Computer` Durable Object's decisions: one object per agent owns
//! the agent's container, and this is everything it decides, in plain
//! Rust behind [`ContainerHost`] (what only the platform can do: start,
//! destroy and reach the container, keep the record, set the alarm, tell
//! the time). The `stead` crate's `src/computer/` implements the trait over
//! `worker::Container` and nothing else; the tests drive it with a fake
//! container host that injects faults.
//!
//! The workspace's Durable Object never holds container credentials: it
//! sends protocol requests to the owner, which starts the container when
//! needed (with a fresh random secret in its environment, and the network
//! its [`Plan`] says), adds the secret to each request and forwards it to
//! the program's port. The secret is kept in the record ([`Record`]) so a
//! restarted object can still reach a running container; nothing else
//! ever sees it. A container that runs with a secret the record lost is
//! restarted.
//!
//! **Requests** ([`Owner::fetch`]). A protocol request is tried for up to
//! [`START_TRIES`] × 250 ms while a cold container comes up; a container
//! that dies meanwhile is replaced. One that answers `SHUTTING_DOWN` (its
//! program got SIGTERM) is replaced once and the request asked again,
//! unless it starts or reads an exec, which is never moved to another
//! container (it would run on a disk that was not pushed).
//!
//! **A command is never sent to two containers.** Each failed send says
//! whether the request may have reached the program ([`SendError`]): a
//! refused connection (nothing listens yet) cannot have, so asking the
//! same container again, or a replacement of one that died that way,
//! repeats nothing. Any other failure may have delivered it. Asking the
//! same container again is still safe then (its program refuses an exec
//! id it has seen, `ALREADY_STARTED`), but once a container that may have
//! received an exec is gone (dead, or replaced by another request), the
//! exec is answered `503 COMPUTER_LOST` and no other container is given
//! it: it may or may not have run, and the workspace keeps only what was
//! synced back. A background
//! request ([`stead_sync::owner::is_background`]) never starts a container
//! nor counts as use. A port request ([`PORTS_PREFIX`], see `ports`) counts
//! as use and never starts one either.
//!
//! **Lifetime** ([`Owner::alarm`]). A container runs only while its
//! Durable Object is active, so while one runs the alarm fires every
//! [`HEARTBEAT_MS`], keeping both alive, and checks the idle deadline: the
//! last request plus the idle timeout that came with the requests
//! ([`stead_sync::IDLE_HEADER`], else the deployment's default). Past it, a
//! program that reports a running command or a busy process (one serving a
//! port, an open terminal) counts as activity; otherwise the container is
//! destroyed and the alarm stops. The environment is not saved here: the
//! workspace's own alarm saves it ahead of the deadline it reads from the
//! state route (`crate::environment`), with background requests that do
//! not put the release off.
//!
//! **The record is changed, never written back.** A Durable Object runs
//! one request at a time only between awaits: while one request sends to
//! the container, waits between tries or starts one, another (a status
//! check, a port request, the alarm, a stop) can replace the container or
//! release it. So no request keeps a copy of the record across an await
//! to store later: each write is a change applied to the record as it is
//! now in the object's memory (`Owner::change`), computed from what this
//! request did — the last use moves only forward, an answer marks ready
//! only the container that gave it, a start records the container that
//! now runs. A decision taken after an await reads the record again too:
//! a request that waited asks which container (which secret) is current
//! before it sends, and the alarm, once the program said it is idle,
//! releases the container only if no request used it meanwhile.
//!
//! **Local development** ([`Provider::Local`]): one program started as a
//! local process serves every agent (told apart by
//! [`stead_sync::CONTAINER_HEADER`]); it is never started, stopped or
//! released from here.

mod ports;
pub mod record;

use std::cell::{Cell, RefCell};

use serde_json::json;
use stead_sync::owner::{
    ComputerState, Lifecycle, Provision, DEFAULT_IDLE_MS, PORTS_PREFIX, STATE_PATH, STOP_PATH,
};
use stead_sync::{ErrorBody, ErrorCode, Status, AUTH_HEADER, CONTAINER_HEADER, IDLE_HEADER};

use crate::egress_gate::Plan;
use crate::error::HostError;
pub use record::{Life, Record};

/// The port the container program listens on.
pub const PORT: u16 = 8080;

/// How long a cold container may take to answer, in tries of [`TRY_MS`].
pub const START_TRIES: u32 = 240;

/// Between tries of a container that does not answer yet.
pub const TRY_MS: u64 = 250;

/// Between alarms while a container runs: well inside the time an idle
/// Durable Object stays in memory, so the container is never stopped
/// before its idle deadline.
pub const HEARTBEAT_MS: i64 = 5_000;

/// The container's environment variable that carries its secret.
pub const SECRET_VAR: &str = "STEAD_COMPUTER_SECRET";

/// The deployment's setting of the local program's URL (local development
/// without containers).
pub const DEV_URL_SETTING: &str = "COMPUTER_DEV_URL";

/// The deployment's setting of the local program's secret.
pub const DEV_SECRET_SETTING: &str = "COMPUTER_DEV_SECRET";

/// The deployment's setting of the idle timeout, in milliseconds.
pub const IDLE_SETTING: &str = "COMPUTER_IDLE_MS";

/// How this deployment provides computers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Provider {
    /// A container per agent, through the platform's binding.
    Container,
    /// One program for every agent, at `base` with `secret` (local
    /// development without containers).
    Local { base: String, secret: String },
    /// Neither: requests are answered `UNAVAILABLE`.
    Missing,
}

/// Which way a request leaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hop {
    /// To a port of the container.
    Container { port: u16 },
    /// Over the network (the local program, or a port of its machine).
    Network,
}

/// Why a request sent to the computer got no answer.
#[derive(Debug)]
pub enum SendError {
    /// Nothing reached the program: no connection was made (nothing
    /// listens on the port yet, or no instance is there). Sending it again,
    /// to this container or another, cannot repeat anything.
    Undelivered(HostError),
    /// A connection was made, or the platform did not say: the program may
    /// have received the request, and begun on it, before it broke.
    Broken(HostError),
}

/// What the platform's failures say when no connection was made (the
/// deployed runtime's, its local one's, and a plain refused connect):
/// matched in lower case. Any other failure counts as
/// [`SendError::Broken`], which is the safe side to err on.
const UNDELIVERED: [&str; 4] = [
    "the container is not listening",
    "container port not found",
    "connection refused",
    "no container instance",
];

impl SendError {
    /// `error`, a failure of the platform's send, by what its message says
    /// (the platform reports it as text only).
    pub fn of_platform(error: HostError) -> Self {
        let message = error.message.to_lowercase();
        match UNDELIVERED.iter().any(|said| message.contains(said)) {
            true => SendError::Undelivered(error),
            false => SendError::Broken(error),
        }
    }

    /// Whether the program may have received the request.
    fn may_have_arrived(&self) -> bool {
        match self {
            SendError::Undelivered(_) => false,
            SendError::Broken(_) => true,
        }
    }
}

impl From<SendError> for HostError {
    fn from(error: SendError) -> Self {
        match error {
            SendError::Undelivered(error) | SendError::Broken(error) => error,
        }
    }
}

/// Header names and values, in order.
pub type HeaderList = Vec<(String, String)>;

/// What is sent, to `url`.
#[derive(Debug)]
pub enum Outgoing<'a, R> {
    /// A request to the program: exactly these.
    Program {
        method: &'a str,
        url: String,
        headers: HeaderList,
        body: &'a [u8],
    },
    /// The request being served, passed on with `headers`: its method, its
    /// body streamed, a redirect not followed. Sent once.
    Port {
        url: String,
        headers: HeaderList,
        request: &'a R,
    },
}

/// A container to start.
#[derive(Debug)]
pub struct Start<'a> {
    /// Its environment.
    pub env: &'a [(&'a str, &'a str)],
    /// Its outbound network and the interception to register.
    pub plan: &'a Plan,
    /// The agent it is for (the interception's fetcher names it).
    pub agent: &'a str,
}

/// What only the platform can do for the owner. Each method is one
/// platform call; none decides anything.
#[allow(async_fn_in_trait)]
pub trait ContainerHost {
    /// A request as the platform holds it.
    type Request;
    /// An answer as the platform holds it (passed on untouched, or read).
    type Answer;

    /// Whether the platform gives this object a container.
    fn has_container(&self) -> bool;
    /// The deployment's setting `name` (a variable or a secret), if set.
    fn setting(&self, name: &str) -> Option<String>;
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> i64;
    async fn sleep(&self, ms: u64);
    /// `chars` random lowercase hex digits from a CSPRNG.
    fn random_hex(&self, chars: usize) -> Result<String, HostError>;

    /// Whether the container runs.
    fn running(&self) -> bool;
    /// Starts the container and registers its interception.
    async fn start(&self, start: Start<'_>) -> Result<(), HostError>;
    async fn destroy(&self, why: &str) -> Result<(), HostError>;
    /// Sends `outgoing`; `Err` when no answer came, saying whether the
    /// request may have reached the program ([`SendError::of_platform`]).
    async fn send(
        &self,
        hop: Hop,
        outgoing: Outgoing<'_, Self::Request>,
    ) -> Result<Self::Answer, SendError>;
    fn status_of(answer: &Self::Answer) -> u16;
    /// Whether a request to `port` may go on: `None` when the caller holds
    /// the agent's admission (asked of the agent and kept for a while by
    /// the platform's side, `crate::port_grants`), else the refusal to
    /// answer with.
    async fn admit_port(
        &self,
        port: u16,
        request: &Self::Request,
    ) -> Result<Option<Self::Answer>, HostError>;
    /// Reads an answer's body whole.
    async fn read(&self, answer: Self::Answer) -> Result<Vec<u8>, HostError>;

    async fn load(&self) -> Result<Option<Record>, HostError>;
    async fn save(&self, record: &Record) -> Result<(), HostError>;
    /// Sets the alarm `in_ms` from now.
    async fn set_alarm(&self, in_ms: i64) -> Result<(), HostError>;
    async fn clear_alarm(&self) -> Result<(), HostError>;
}

/// A request to the owner, as read from the platform's.
#[derive(Debug, Clone)]
pub struct Call {
    /// Its method, upper case.
    pub method: String,
    pub path: String,
    pub query: Option<String>,
    /// Its headers, names in lower case.
    pub headers: HeaderList,
    /// Its body, when [`Call::holds_body`] (else empty: it streams).
    pub body: Vec<u8>,
    /// Its egress plan, or why that did not read.
    pub plan: Result<Plan, String>,
}

/// The headers of a protocol request that go on to the program (with the
/// secret added). `upgrade`: a terminal session's stream is a WebSocket,
/// passed on as the program answers it.
const PROTOCOL_HEADERS: [&str; 3] = [CONTAINER_HEADER, "content-type", "upgrade"];

impl Call {
    fn header(&self, name: &str) -> Option<&str> {
        let mut found = self.headers.iter().filter(|(key, _)| key == name);
        found.next().map(|(_, value)| value.as_str())
    }

    /// The idle timeout it carries ([`stead_sync::IDLE_HEADER`]).
    fn idle_ms(&self) -> Option<u64> {
        self.header(IDLE_HEADER)?.trim().parse().ok()
    }

    /// The agent it names ([`CONTAINER_HEADER`]).
    fn agent(&self) -> Option<&str> {
        self.header(CONTAINER_HEADER)
    }

    /// The protocol request for the program at `url`, with `secret`.
    fn to_program<'a, R>(&'a self, url: String, secret: &str) -> Outgoing<'a, R> {
        let mut headers: HeaderList = PROTOCOL_HEADERS
            .iter()
            .filter_map(|name| Some((name.to_string(), self.header(name)?.to_string())))
            .collect();
        headers.push(bearer(secret));
        Outgoing::Program {
            method: &self.method,
            url,
            headers,
            body: &self.body,
        }
    }

    /// The headers a port request passes on: all but stead's own.
    fn port_headers(&self) -> HeaderList {
        let passed = self
            .headers
            .iter()
            .filter(|(name, _)| !name.starts_with("x-stead-"));
        passed.cloned().collect()
    }

    /// Whether the request's body is read whole before it goes on (a
    /// protocol request, which may be sent more than once) rather than
    /// streamed (a port's, or one of the owner's own routes).
    pub fn holds_body(&self) -> bool {
        !self.path.starts_with(PORTS_PREFIX) && self.own_route().is_none()
    }

    fn own_route(&self) -> Option<OwnRoute> {
        match (self.method.as_str(), self.path.as_str()) {
            ("GET", STATE_PATH) => Some(OwnRoute::State),
            ("POST", STOP_PATH) => Some(OwnRoute::Stop),
            _ => None,
        }
    }

    /// The path with its query (`?from=` of a reattach).
    fn target(&self) -> String {
        with_query(&self.path, self.query.as_deref())
    }
}

enum OwnRoute {
    State,
    Stop,
}

fn bearer(secret: &str) -> (String, String) {
    (AUTH_HEADER.to_string(), format!("Bearer {secret}"))
}

fn with_query(path: &str, query: Option<&str>) -> String {
    match query {
        Some(query) => format!("{path}?{query}"),
        None => path.to_string(),
    }
}

/// The owner's answer.
#[derive(Debug)]
pub enum Reply<A> {
    /// The computer's answer, passed on as it came (a WebSocket too).
    Passed(A),
    /// A JSON answer made (or read and rebuilt) here.
    Json { status: u16, body: Vec<u8> },
}

impl<A> Reply<A> {
    fn json(status: u16, value: &impl serde::Serialize) -> Self {
        Reply::Json {
            status,
            body: serde_json::to_vec(value).expect("plain JSON"),
        }
    }

    fn error(status: u16, code: ErrorCode, message: &str) -> Self {
        Reply::json(
            status,
            &json!({ "error": { "code": code, "message": message } }),
        )
    }
}

/// The answer to a background request when no container runs.
fn not_running<A>(released: bool) -> Reply<A> {
    match released {
        true => Reply::error(503, ErrorCode::Released, "the computer was released"),
        false => Reply::error(503, ErrorCode::Gone, "no container runs for this agent"),
    }
}

/// The answer to an exec whose container died after the exec may have
/// reached it: it is never sent to another (see the module docs).
fn computer_lost<A>() -> Reply<A> {
    Reply::error(
        503,
        ErrorCode::ComputerLost,
        "the computer was lost while the command was sent to it: the command may or may not \
         have run, it is not run again elsewhere, and the workspace has only what was synced \
         back before it",
    )
}

fn unavailable<A>() -> Reply<A> {
    Reply::error(
        503,
        ErrorCode::Unavailable,
        "no container binding and no COMPUTER_DEV_URL",
    )
}

/// What an alarm found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Alarmed {
    /// Local development: nothing to look after.
    NoContainer,
    /// The container had gone; the alarm stops.
    Stopped,
    /// Idle past its deadline: destroyed, and the alarm stops.
    Released,
    /// It runs on; the next alarm is set.
    Running,
}

impl Alarmed {
    pub fn as_str(self) -> &'static str {
        match self {
            Alarmed::NoContainer => "no container",
            Alarmed::Stopped => "stopped",
            Alarmed::Released => "released",
            Alarmed::Running => "running",
        }
    }
}

/// Whether `path` starts or reads an exec, which is never moved to another
/// container once it may have reached one (it would run a second time, on
/// a disk that was not pushed, or read a log that is not there).
fn runs_an_exec(path: &str) -> bool {
    path == "/v1/exec" || path.starts_with("/v1/exec/")
}

/// The owner of one agent's container: its decisions over `host`.
pub struct Owner<H> {
    host: H,
    /// The record as last loaded or saved: requests read storage once per
    /// life of the object.
    record: RefCell<Option<Record>>,
    /// Whether this object has set its alarm (the alarm then keeps
    /// re-setting itself while the container runs).
    alarm_set: Cell<bool>,
}

impl<H: ContainerHost> Owner<H> {
    pub fn new(host: H) -> Self {
        Owner {
            host,
            record: RefCell::new(None),
            alarm_set: Cell::new(false),
        }
    }

    pub fn host(&self) -> &H {
        &self.host
    }

    /// Answers `call`, whose platform request is `request`.
    pub async fn fetch(
        &self,
        call: &Call,
        request: &H::Request,
    ) -> Result<Reply<H::Answer>, HostError> {
        match call.own_route() {
            Some(OwnRoute::State) => return self.answer_state(call).await,
            Some(OwnRoute::Stop) => {
                self.release("released on request").await?;
                return self.answer_state(call).await;
            }
            None => {}
        }
        if let Some(rest) = call.path.strip_prefix(PORTS_PREFIX) {
            return self.forward_port(rest, call, request).await;
        }
        match self.provider() {
            Provider::Container => self.forward(call).await,
            Provider::Local { base, secret } => {
                let outgoing = call.to_program(format!("{base}{}", call.target()), &secret);
                let answer = self.host.send(Hop::Network, outgoing).await;
                Ok(Reply::Passed(answer.map_err(HostError::from)?))
            }
            Provider::Missing => Ok(unavailable()),
        }
    }

    /// A protocol request to the container: started if need be, tried
    /// while it comes up, replaced once if it is stopping.
    async fn forward(&self, call: &Call) -> Result<Reply<H::Answer>, HostError> {
        let plan = call
            .plan
            .clone()
            .map_err(|e| HostError::new("read the egress plan", e))?;
        let agent = call.agent().unwrap_or_default();
        let start = (&plan, agent);
        let path = call.path.as_str();
        let idle = call.idle_ms();
        let background = stead_sync::owner::is_background(path);
        let now = self.host.now_ms();
        let note = |record: &mut Record| {
            if let Some(idle) = idle {
                record.idle_ms = Some(idle);
            }
            if !background {
                record.last_used_ms = record.last_used_ms.max(Some(now));
            }
        };
        let mut secret = if background {
            // Watching is not use, and never starts a computer.
            let record = self.change(note).await?;
            match (record.secret(), self.host.running()) {
                (Some(secret), true) => secret.to_string(),
                _ => return Ok(not_running(record.released())),
            }
        } else {
            self.ensure_started(start, note).await?
        };
        if !self.alarm_set.get() {
            self.schedule(&self.load().await?).await?;
        }
        let url = format!("http://container{}", call.target());
        let mut tries = 0;
        let mut replaced = false;
        // Whether the request may have reached the program of the container
        // it is being sent to (the one `secret` opens).
        let mut arrived = false;
        loop {
            let outgoing = call.to_program(url.clone(), &secret);
            match self
                .host
                .send(Hop::Container { port: PORT }, outgoing)
                .await
            {
                Ok(answer) if H::status_of(&answer) == 503 && !runs_an_exec(path) && !replaced => {
                    let body = self.host.read(answer).await?;
                    if !is_shutting_down(&body) {
                        return Ok(Reply::Json { status: 503, body });
                    }
                    if background {
                        // Watching never starts a computer, nor a
                        // replacement for one that is going.
                        return Ok(not_running(self.load().await?.released()));
                    }
                    // The program got SIGTERM and is draining a command it
                    // stopped. This request plans new work (the previous
                    // command, acknowledged or abandoned, is over: commands
                    // run one at a time), so replace the container now and
                    // ask the new one. A push planned for the old instance
                    // is refused there as stale, and the workspace side
                    // plans again. An exec is never moved: it would run on
                    // a disk that was not pushed.
                    replaced = true;
                    self.host.destroy("replacing a stopping container").await?;
                    secret = self.ensure_started(start, |_| {}).await?;
                    arrived = false;
                }
                Ok(answer) => return self.answered(answer, path, &secret).await,
                Err(_) if background => {
                    // The container went (or is going) between the check
                    // above and this request: say so, start nothing.
                    return Ok(not_running(self.load().await?.released()));
                }
                Err(error) if tries < START_TRIES => {
                    arrived |= error.may_have_arrived();
                    tries += 1;
                    self.host.sleep(TRY_MS).await;
                    if self.still_runs(&secret) {
                        // Still coming up (or its answer was cut): asked
                        // again. An exec that did arrive is refused there
                        // as already started, never run twice.
                        continue;
                    }
                    if arrived && runs_an_exec(path) {
                        // It died (or was replaced) with the command
                        // perhaps begun: a command is never sent to two
                        // containers.
                        self.forget_container(&secret).await?;
                        return Ok(computer_lost());
                    }
                    // It died while starting (or was stopped) before the
                    // request could reach it: start a new one rather than
                    // wait for the old one (or, when another request
                    // replaced it, go on with the one that runs now).
                    secret = self.ensure_started(start, |_| {}).await?;
                    arrived = false;
                }
                Err(error) => return Err(error.into()),
            }
        }
    }

    /// Whether the container the request was sent to with `secret` still
    /// runs: a container runs, and it is the one this object last started
    /// with that secret (another request may have replaced it meanwhile).
    fn still_runs(&self, secret: &str) -> bool {
        let known = self.record.borrow();
        let same = known.as_ref().and_then(Record::secret) == Some(secret);
        same && self.host.running()
    }

    /// Forgets the container opened by `secret`, which is gone, unless
    /// the record already moved on (released, or another started).
    async fn forget_container(&self, secret: &str) -> Result<(), HostError> {
        let forget = |record: &mut Record| {
            if record.secret() == Some(secret) {
                record.stop();
            }
        };
        self.change(forget).await.map(drop)
    }

    /// The alarm: the heartbeat while a container runs, and its release
    /// once it has been idle past its deadline.
    pub async fn alarm(&self) -> Result<Alarmed, HostError> {
        if self.provider() != Provider::Container {
            return Ok(Alarmed::NoContainer);
        }
        // This alarm has fired: the next one is set below, or none is.
        self.alarm_set.set(false);
        if !self.host.running() {
            self.change(Record::stop).await?;
            return Ok(Alarmed::Stopped);
        }
        let now = self.host.now_ms();
        let mut record = self.load().await?;
        if now >= record.deadline(self.default_idle()) {
            let at_work = self.is_at_work(&record).await;
            // A request may have come while the program was asked.
            record = self.load().await?;
            if at_work {
                // Still working (a command, or a process serving a port):
                // that is activity.
                let used = |record: &mut Record| {
                    record.last_used_ms = record.last_used_ms.max(Some(now));
                };
                record = self.change(used).await?;
            } else if now >= record.deadline(self.default_idle()) {
                self.host.destroy("idle").await?;
                self.change(Record::release).await?;
                return Ok(Alarmed::Released);
            }
        }
        self.schedule(&record).await?;
        Ok(Alarmed::Running)
    }

    /// How this deployment provides computers: a container if the
    /// platform gives one, else the local program if both its settings are
    /// there.
    fn provider(&self) -> Provider {
        if self.host.has_container() {
            return Provider::Container;
        }
        let setting = |name| self.host.setting(name);
        match (setting(DEV_URL_SETTING), setting(DEV_SECRET_SETTING)) {
            (Some(base), Some(secret)) => Provider::Local {
                base: base.trim_end_matches('/').to_string(),
                secret,
            },
            _ => Provider::Missing,
        }
    }

    /// The idle timeout when the workspace sent none.
    fn default_idle(&self) -> u64 {
        let set = self.host.setting(IDLE_SETTING);
        set.and_then(|ms| ms.trim().parse().ok())
            .unwrap_or(DEFAULT_IDLE_MS)
    }

    /// The record: from memory, else from storage.
    async fn load(&self) -> Result<Record, HostError> {
        if let Some(record) = self.record.borrow().clone() {
            return Ok(record);
        }
        let stored = self.host.load().await?.unwrap_or_default();
        // Another request may have loaded (and changed) it meanwhile.
        let mut known = self.record.borrow_mut();
        Ok(known.get_or_insert(stored).clone())
    }

    /// Applies `change` to the record as it is now (see the module docs)
    /// and keeps it; returns it changed.
    async fn change(&self, change: impl FnOnce(&mut Record)) -> Result<Record, HostError> {
        let before = self.load().await?;
        let mut record = before.clone();
        change(&mut record);
        self.keep(&before, &record).await?;
        Ok(record)
    }

    /// Saves the record to memory and storage.
    async fn save(&self, record: &Record) -> Result<(), HostError> {
        *self.record.borrow_mut() = Some(record.clone());
        self.host.save(record).await
    }

    /// Keeps `record`, changed from `before`: always in memory, in storage
    /// only when [`Record::worth_storing_after`] says.
    async fn keep(&self, before: &Record, record: &Record) -> Result<(), HostError> {
        if record.worth_storing_after(before) {
            self.save(record).await
        } else {
            *self.record.borrow_mut() = Some(record.clone());
            Ok(())
        }
    }

    /// Sets the alarm to the next heartbeat (or the deadline).
    async fn schedule(&self, record: &Record) -> Result<(), HostError> {
        let offset = record.next_alarm_in(self.host.now_ms(), self.default_idle());
        self.host.set_alarm(offset).await?;
        self.alarm_set.set(true);
        Ok(())
    }

    /// Starts the container unless it runs, with outbound network and its
    /// interception as `start` (the plan, and the agent) says; returns the
    /// secret it was given. `note` is this request's own change to the
    /// record, kept with the start.
    async fn ensure_started(
        &self,
        (plan, agent): (&Plan, &str),
        note: impl FnOnce(&mut Record),
    ) -> Result<String, HostError> {
        if self.host.running() {
            if let Some(secret) = self.load().await?.secret().map(str::to_string) {
                self.change(note).await?;
                return Ok(secret);
            }
            // Running with a secret this object no longer knows: restart it.
            self.host.destroy("secret lost").await?;
        }
        let secret = self.host.random_hex(64)?;
        let env = [(SECRET_VAR, secret.as_str())];
        let start = Start {
            env: &env,
            plan,
            agent,
        };
        self.host.start(start).await?;
        let life = Life::Started {
            secret: secret.clone(),
            started_ms: self.host.now_ms(),
            ready: false,
            instance: None,
        };
        // The container that runs now is this one, whatever another
        // request recorded while it started.
        self.change(|record| {
            note(record);
            record.life = life;
        })
        .await?;
        Ok(secret)
    }

    /// Notes that the program of the container opened by `secret`
    /// answered (and, from a status answer, which instance and build it
    /// is), unless the record moved on meanwhile; then hands the answer on.
    async fn answered(
        &self,
        answer: H::Answer,
        path: &str,
        secret: &str,
    ) -> Result<Reply<H::Answer>, HostError> {
        let note = |status: Option<Status>| {
            move |record: &mut Record| {
                if record.secret() == Some(secret) {
                    record.answered(status);
                }
            }
        };
        if path != "/v1/status" || H::status_of(&answer) != 200 {
            self.change(note(None)).await?;
            return Ok(Reply::Passed(answer));
        }
        let body = self.host.read(answer).await?;
        let status = serde_json::from_slice::<Status>(&body).ok();
        self.change(note(status)).await?;
        Ok(Reply::Json { status: 200, body })
    }

    /// Whether the container's program reports a running command, or a
    /// process that keeps it awake (one serving a port, a terminal).
    async fn is_at_work(&self, record: &Record) -> bool {
        let Some(secret) = record.secret() else {
            return false;
        };
        self.status(
            Hop::Container { port: PORT },
            "http://container",
            secret,
            None,
        )
        .await
        .is_some_and(|status| status.running.is_some() || status.busy)
    }

    /// The program's status at `base`, if it answers one.
    async fn status(
        &self,
        hop: Hop,
        base: &str,
        secret: &str,
        agent: Option<&str>,
    ) -> Option<Status> {
        let mut headers = vec![bearer(secret)];
        if let Some(agent) = agent {
            headers.push((CONTAINER_HEADER.to_string(), agent.to_string()));
        }
        let outgoing = Outgoing::Program {
            method: "GET",
            url: format!("{base}/v1/status"),
            headers,
            body: &[],
        };
        let answer = self.host.send(hop, outgoing).await.ok()?;
        let body = self.host.read(answer).await.ok()?;
        serde_json::from_slice(&body).ok()
    }

    /// Destroys the container now, if one runs.
    async fn release(&self, why: &str) -> Result<(), HostError> {
        if self.provider() != Provider::Container {
            return Ok(());
        }
        // Released before the container is destroyed: a background request
        // that comes in meanwhile (the processes' poll) finds the
        // computer released, not gone, and nothing takes the destroy's
        // silence for a death to repair.
        self.change(Record::release).await?;
        if self.host.running() {
            self.host.destroy(why).await?;
        }
        self.alarm_set.set(false);
        self.host.clear_alarm().await
    }

    async fn answer_state(&self, call: &Call) -> Result<Reply<H::Answer>, HostError> {
        let state = match self.provider() {
            Provider::Container => self
                .load()
                .await?
                .state(self.host.running(), self.default_idle()),
            Provider::Local { base, secret } => {
                self.local_state(&base, &secret, call.agent()).await
            }
            Provider::Missing => self.stopped_local(),
        };
        Ok(Reply::json(200, &state))
    }

    /// The local program's state for this agent: it runs if it answers.
    async fn local_state(&self, base: &str, secret: &str, agent: Option<&str>) -> ComputerState {
        let mut state = self.stopped_local();
        if let Some(status) = self.status(Hop::Network, base, secret, agent).await {
            state.state = Lifecycle::Running;
            state.instance = Some(status.instance);
            state.image = status.build;
        }
        state
    }

    fn stopped_local(&self) -> ComputerState {
        ComputerState {
            state: Lifecycle::Stopped,
            provision: Provision::LocalProcess,
            instance: None,
            started_ms: None,
            last_used_ms: None,
            idle_ms: self.default_idle(),
            idle_deadline_ms: None,
            image: None,
        }
    }
}

/// Whether a 503's body is the program's `SHUTTING_DOWN`.
fn is_shutting_down(body: &[u8]) -> bool {
    serde_json::from_slice::<ErrorBody>(body).is_ok_and(|b| b.error.code == ErrorCode::ShuttingDown)
}
