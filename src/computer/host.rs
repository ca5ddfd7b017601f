//! The `Computer` Durable Object: one per agent, owner of the agent's
//! container.
//!
//! The workspace's Durable Object never holds container credentials: it
//! sends protocol requests here, and this object starts the container when
//! needed (with a fresh random secret in its environment, and outbound
//! network only if the agent's settings allow it), adds the secret to each
//! request and forwards it to the program's port. The secret is kept in this
//! object's storage so a restarted object can still reach a running
//! container; nothing else ever sees it.
//!
//! **Lifetime.** A container instance runs only while its Durable Object is
//! active (handling a request or an alarm, or streaming a response); once
//! the object goes idle and leaves memory the platform stops the container
//! with it (locally that happens about 10 s after the last event). So while
//! a container runs, this object's alarm fires every [`HEARTBEAT_MS`],
//! which keeps it (and the container) alive, and at each alarm it checks
//! the idle deadline: the last request plus the idle timeout that came with
//! the requests ([`stead_sync::IDLE_HEADER`], default 10 minutes, or
//! `COMPUTER_IDLE_MS` when set). A command still running on the container
//! counts as activity. Past the deadline the container is destroyed and the
//! alarm stops: a released computer costs nothing, and the next request
//! starts a fresh one (whose new instance id makes the workspace push the
//! full manifest). The routes of [`stead_sync::host`] answer the state and
//! release the container on request, and forward requests to the ports of
//! the processes it runs ([`stead_sync::host::PORTS_PREFIX`], through
//! `get_tcp_port`), streaming both ways. A terminal session's stream (a
//! WebSocket upgrade, `stead_sync::terminal`) is forwarded like any other
//! request, and its answer, the socket, handed back whole: its bytes never
//! pass through this object's code. An open session counts as activity
//! through the program's status (`busy`).
//!
//! Locally without containers (`wrangler dev --enable-containers=false`)
//! `state.container()` is `None`: requests go to the program started as a
//! local process at `COMPUTER_DEV_URL`, with the secret
//! `COMPUTER_DEV_SECRET`. One local program serves every agent, each in its
//! own directory, told apart by the `x-stead-container` header; it is never
//! stopped from here.

use std::cell::{Cell, RefCell};

use serde::{Deserialize, Serialize};
use serde_json::json;
use wasm_bindgen::{JsCast, JsValue};

use crate::random::random_hex;
use stead_agent::egress_gate::Plan;
use stead_agent::port_grants::{Grants, FORGET_PATH};
use stead_sync::host::{
    ComputerState, Lifecycle, Provision, DEFAULT_IDLE_MS, PORTS_PREFIX, STATE_PATH, STOP_PATH,
};
use stead_sync::{ErrorBody, ErrorCode, Status, AUTH_HEADER, CONTAINER_HEADER, IDLE_HEADER};
use worker::{
    durable_object, Container, Date, Delay, DurableObject, Env, Fetch, Headers, Method, Request,
    RequestInit, Response, Result, State,
};

/// The port the container program listens on.
const PORT: u16 = 8080;

/// How long a cold container may take to answer, in tries of 250 ms.
const START_TRIES: u32 = 240;

/// Between alarms while a container runs: well inside the time an idle
/// Durable Object stays in memory, so the container is never stopped
/// before its idle deadline.
const HEARTBEAT_MS: i64 = 5_000;

/// Where the record is kept in this object's storage.
const RECORD_KEY: &str = "computer";

/// What this object remembers about its container.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
struct Record {
    /// The secret the running container was started with.
    secret: Option<String>,
    /// When it was started.
    started_ms: Option<i64>,
    /// Whether its program has answered since.
    ready: bool,
    /// The program's instance id and build, from its last status answer.
    instance: Option<String>,
    image: Option<String>,
    /// When a request last came.
    last_used_ms: Option<i64>,
    /// The idle timeout last sent (None: the default).
    idle_ms: Option<u64>,
    /// The last container was released on purpose (idle, on request)
    /// rather than lost; cleared when one starts.
    #[serde(default)]
    released: bool,
}

impl Record {
    fn idle_ms(&self, default: u64) -> u64 {
        self.idle_ms.unwrap_or(default)
    }

    /// When the container is released if nothing happens before.
    fn deadline(&self, default_idle: u64) -> i64 {
        let idle = i64::try_from(self.idle_ms(default_idle)).unwrap_or(i64::MAX);
        self.last_used_ms
            .or(self.started_ms)
            .unwrap_or(0)
            .saturating_add(idle)
    }

    /// The alarm offset from `now`: the next heartbeat, or the deadline if
    /// it comes first.
    fn next_alarm_in(&self, now: i64, default_idle: u64) -> i64 {
        (self.deadline(default_idle) - now).clamp(0, HEARTBEAT_MS)
    }

    /// Forgets the container (it is gone); the last build seen stays.
    fn stopped(&mut self) {
        self.secret = None;
        self.started_ms = None;
        self.ready = false;
        self.instance = None;
    }

    /// The state route's answer, given whether a container runs now.
    fn state(&self, running: bool, default_idle: u64) -> ComputerState {
        let state = match (running, self.ready) {
            (false, _) => Lifecycle::Stopped,
            (true, false) => Lifecycle::Starting,
            (true, true) => Lifecycle::Running,
        };
        ComputerState {
            state,
            provision: Provision::Container,
            instance: self.instance.clone().filter(|_| running),
            started_ms: self.started_ms.filter(|_| running),
            last_used_ms: self.last_used_ms,
            idle_ms: self.idle_ms(default_idle),
            idle_deadline_ms: running.then(|| self.deadline(default_idle)),
            image: self.image.clone(),
        }
    }
}

fn now_ms() -> i64 {
    Date::now().as_millis() as i64
}

#[durable_object]
pub struct Computer {
    state: State,
    env: Env,
    /// The record as last loaded or saved: requests read storage once per
    /// life of this object.
    record: RefCell<Option<Record>>,
    /// Whether this object has set its alarm (the alarm then keeps
    /// re-setting itself while the container runs).
    alarm_set: Cell<bool>,
    /// Who may reach which port now, as the agent admitted
    /// (`stead_agent::port_grants`): forgotten with the container.
    grants: RefCell<Grants>,
}

impl DurableObject for Computer {
    fn new(state: State, env: Env) -> Self {
        Computer {
            state,
            env,
            record: RefCell::new(None),
            alarm_set: Cell::new(false),
            grants: RefCell::default(),
        }
    }

    async fn fetch(&self, mut req: Request) -> Result<Response> {
        let url = req.url()?;
        let path = url.path().to_string();
        // What is forwarded: the path with its query (`?from=` of a reattach).
        let target = match url.query() {
            Some(query) => format!("{path}?{query}"),
            None => path.clone(),
        };
        let method = req.method();
        let idle = req
            .headers()
            .get(IDLE_HEADER)?
            .and_then(|v| v.trim().parse::<u64>().ok());
        match (&method, path.as_str()) {
            (Method::Get, STATE_PATH) => return self.answer_state(&req).await,
            (Method::Post, STOP_PATH) => {
                self.release("released on request").await?;
                return self.answer_state(&req).await;
            }
            (Method::Delete, FORGET_PATH) => {
                self.grants.borrow_mut().forget();
                return Response::empty();
            }
            _ => {}
        }
        if let Some(rest) = path.strip_prefix(PORTS_PREFIX) {
            return self.forward_port(req, rest, url.query()).await;
        }
        let body = req.bytes().await?;
        let headers = Headers::new();
        // `upgrade`: a terminal session's stream is a WebSocket, passed on
        // as the program answers it.
        for name in [CONTAINER_HEADER, "content-type", "upgrade"] {
            if let Some(value) = req.headers().get(name)? {
                headers.set(name, &value)?;
            }
        }
        let build = |base: &str, secret: &str| -> Result<Request> {
            headers.set(AUTH_HEADER, &format!("Bearer {secret}"))?;
            let mut init = RequestInit::new();
            init.with_method(method.clone())
                .with_headers(headers.clone());
            if !body.is_empty() {
                init.with_body(Some(js_sys::Uint8Array::from(body.as_slice()).into()));
            }
            Request::new_with_init(&format!("{base}{target}"), &init)
        };
        let Some(container) = self.state.container() else {
            let Some((base, secret)) = self.local_program() else {
                return unavailable();
            };
            return Fetch::Request(build(&base, &secret)?).send().await;
        };
        // Outbound network and its interception (`crate::egress`), for
        // the agent the request names.
        let plan = crate::egress::plan_of(req.headers())?;
        let agent = req.headers().get(CONTAINER_HEADER)?.unwrap_or_default();
        let start = (&plan, agent.as_str());
        let mut record = self.load().await?;
        let before = record.clone();
        if idle.is_some() {
            record.idle_ms = idle;
        }
        let background = stead_sync::host::is_background(&path);
        let mut secret = if background {
            // Watching is not use, and never starts a computer.
            match (&record.secret, container.running()) {
                (Some(secret), true) => secret.clone(),
                _ => return not_running(record.released),
            }
        } else {
            record.last_used_ms = Some(now_ms());
            self.ensure_started(&container, start, &mut record).await?
        };
        self.keep(&before, &record).await?;
        if !self.alarm_set.get() {
            self.schedule(&record).await?;
        }
        let port = container.get_tcp_port(PORT)?;
        let mut tries = 0;
        let mut replaced = false;
        loop {
            match port
                .fetch_request(build("http://container", &secret)?)
                .await
            {
                Ok(resp) if resp.status_code() == 503 && !runs_an_exec(&path) && !replaced => {
                    let (resp, stopping) = shutting_down(resp).await?;
                    if !stopping {
                        return Ok(resp);
                    }
                    if background {
                        // Watching never starts a computer, nor a
                        // replacement for one that is going.
                        return not_running(self.load().await?.released);
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
                    container
                        .destroy(Some("replacing a stopping container"))
                        .await?;
                    let before = record.clone();
                    record.stopped();
                    secret = self.ensure_started(&container, start, &mut record).await?;
                    self.keep(&before, &record).await?;
                }
                Ok(resp) => return self.answered(resp, &path, &mut record).await,
                Err(_) if background => {
                    // The container went (or is going) between the check
                    // above and this request: say so, start nothing.
                    return not_running(self.load().await?.released);
                }
                Err(_) if tries < START_TRIES => {
                    tries += 1;
                    Delay::from(std::time::Duration::from_millis(250)).await;
                    if !container.running() {
                        // It died while starting (or was stopped): start a
                        // new one rather than wait for the old one.
                        let before = record.clone();
                        secret = self.ensure_started(&container, start, &mut record).await?;
                        self.keep(&before, &record).await?;
                    }
                }
                Err(error) => return Err(error),
            }
        }
    }

    async fn alarm(&self) -> Result<Response> {
        let Some(container) = self.state.container() else {
            return Response::ok("no container");
        };
        // This alarm has fired: the next one is set below, or none is.
        self.alarm_set.set(false);
        let mut record = self.load().await?;
        if !container.running() {
            record.stopped();
            self.save(&record).await?;
            return Response::ok("stopped");
        }
        let now = now_ms();
        if now >= record.deadline(self.default_idle()) {
            if self.is_at_work(&container, &record).await {
                // Still working (a command, or a process serving a port):
                // that is activity.
                record.last_used_ms = Some(now);
                self.save(&record).await?;
            } else {
                container.destroy(Some("idle")).await?;
                record.stopped();
                record.released = true;
                self.save(&record).await?;
                return Response::ok("released");
            }
        }
        self.schedule(&record).await?;
        Response::ok("running")
    }
}

impl Computer {
    /// The idle timeout when the workspace sent none: `COMPUTER_IDLE_MS`,
    /// else [`DEFAULT_IDLE_MS`].
    fn default_idle(&self) -> u64 {
        self.env
            .var("COMPUTER_IDLE_MS")
            .ok()
            .and_then(|v| v.to_string().trim().parse().ok())
            .unwrap_or(DEFAULT_IDLE_MS)
    }

    /// The local program's URL and secret, when configured.
    fn local_program(&self) -> Option<(String, String)> {
        let base = self.env.var("COMPUTER_DEV_URL").ok()?.to_string();
        let secret = self.env.secret("COMPUTER_DEV_SECRET").ok()?.to_string();
        Some((base.trim_end_matches('/').to_string(), secret))
    }

    /// The record: from memory, else from storage.
    async fn load(&self) -> Result<Record> {
        if let Some(record) = self.record.borrow().clone() {
            return Ok(record);
        }
        let stored = self
            .state
            .storage()
            .get::<Record>(RECORD_KEY)
            .await?
            .unwrap_or_default();
        *self.record.borrow_mut() = Some(stored.clone());
        Ok(stored)
    }

    /// Saves the record to memory and storage.
    async fn save(&self, record: &Record) -> Result<()> {
        *self.record.borrow_mut() = Some(record.clone());
        self.state.storage().put(RECORD_KEY, record).await
    }

    /// Keeps `record`, changed from `before`: always in memory, in storage
    /// only when more than the last-used time changed, or that moved by a
    /// heartbeat or more. The memory copy is what counts while this object
    /// lives (its container goes with it); the stored one only has to be
    /// near enough for an object that starts while its container still
    /// runs. So most requests cost no storage write.
    async fn keep(&self, before: &Record, record: &Record) -> Result<()> {
        let without_use = |r: &Record| Record {
            last_used_ms: None,
            ..r.clone()
        };
        let use_moved = match (before.last_used_ms, record.last_used_ms) {
            (Some(then), Some(now)) => now - then >= HEARTBEAT_MS,
            (then, now) => then != now,
        };
        if use_moved || without_use(before) != without_use(record) {
            self.save(record).await
        } else {
            *self.record.borrow_mut() = Some(record.clone());
            Ok(())
        }
    }

    /// Sets the alarm to the next heartbeat (or the deadline).
    async fn schedule(&self, record: &Record) -> Result<()> {
        let offset = record.next_alarm_in(now_ms(), self.default_idle());
        self.state.storage().set_alarm(offset).await?;
        self.alarm_set.set(true);
        Ok(())
    }

    /// Starts the container unless it runs, with outbound network and its
    /// interception as `start` (the plan, and the agent) says; returns the
    /// secret it was given.
    async fn ensure_started(
        &self,
        container: &Container,
        (plan, agent): (&Plan, &str),
        record: &mut Record,
    ) -> Result<String> {
        if container.running() {
            if let Some(secret) = &record.secret {
                return Ok(secret.clone());
            }
            // Running with a secret this object no longer knows: restart it.
            container.destroy(Some("secret lost")).await?;
        }
        record.stopped();
        record.released = false;
        self.grants.borrow_mut().forget();
        let secret = random_hex(64)?;
        start_container(
            container,
            &[("STEAD_COMPUTER_SECRET", &secret)],
            plan.internet,
        )?;
        crate::egress::intercept(&self.state, &self.env, container, agent, plan).await?;
        record.secret = Some(secret.clone());
        record.started_ms = Some(now_ms());
        Ok(secret)
    }

    /// Notes that the program answered (and, from a status answer, which
    /// instance and build it is), then hands the answer on.
    async fn answered(&self, resp: Response, path: &str, record: &mut Record) -> Result<Response> {
        let before = record.clone();
        record.ready = true;
        if path != "/v1/status" || resp.status_code() != 200 {
            self.keep(&before, record).await?;
            return Ok(resp);
        }
        let mut resp = resp;
        let bytes = resp.bytes().await?;
        if let Ok(status) = serde_json::from_slice::<Status>(&bytes) {
            record.instance = Some(status.instance);
            record.image = status.build.or(record.image.take());
        }
        self.keep(&before, record).await?;
        let headers = Headers::new();
        headers.set("content-type", "application/json")?;
        Ok(Response::from_bytes(bytes)?.with_headers(headers))
    }

    /// Whether the container's program reports a running command, or a
    /// process that keeps it awake (one serving a port).
    async fn is_at_work(&self, container: &Container, record: &Record) -> bool {
        let Some(secret) = &record.secret else {
            return false;
        };
        let asked = async {
            let headers = Headers::new();
            headers.set(AUTH_HEADER, &format!("Bearer {secret}"))?;
            let mut init = RequestInit::new();
            init.with_method(Method::Get).with_headers(headers);
            let req = Request::new_with_init("http://container/v1/status", &init)?;
            let mut resp = container.get_tcp_port(PORT)?.fetch_request(req).await?;
            resp.json::<Status>().await
        };
        asked
            .await
            .is_ok_and(|status| status.running.is_some() || status.busy)
    }

    /// Forwards `req` to a port of the container: `rest` is `{port}{path}`
    /// (see [`PORTS_PREFIX`]). The body streams on as it came, and the
    /// answer as it comes, a WebSocket upgrade included. A port request is
    /// use of the computer, but it never starts one.
    async fn forward_port(
        &self,
        req: Request,
        rest: &str,
        query: Option<&str>,
    ) -> Result<Response> {
        let (number, tail) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        let Ok(port) = number.parse::<u16>() else {
            let body = json!({ "error": {
                "code": ErrorCode::InvalidRequest, "message": format!("{number:?} is not a port"),
            }});
            return Ok(Response::from_json(&body)?.with_status(400));
        };
        if let Some(refused) =
            crate::port_route::admitted(&self.env, &self.grants, &req, port).await?
        {
            return Ok(refused);
        }
        let tail = if tail.is_empty() { "/" } else { tail };
        let target = match query {
            Some(query) => format!("{tail}?{query}"),
            None => tail.to_string(),
        };
        let headers = Headers::new();
        for (name, value) in req.headers().entries() {
            if !name.starts_with("x-stead-") {
                headers.append(&name, &value)?;
            }
        }
        // A dev server's redirect is the client's to follow (its Location
        // and cookies are rewritten under the prefix on the way back), so
        // no hop between here and the browser may follow it.
        let init = crate::platform::passed_on(&req, headers);
        let Some(container) = self.state.container() else {
            let Some((base, _)) = self.local_program() else {
                return unavailable();
            };
            let host = worker::Url::parse(&base)?
                .host_str()
                .unwrap_or("127.0.0.1")
                .to_string();
            let url = format!("http://{host}:{port}{target}");
            return Fetch::Request(Request::new_with_init(&url, &init)?)
                .send()
                .await;
        };
        let mut record = self.load().await?;
        if record.secret.is_none() || !container.running() {
            return not_running(record.released);
        }
        let before = record.clone();
        record.last_used_ms = Some(now_ms());
        self.keep(&before, &record).await?;
        // The dev server sees `localhost`, the host name dev servers allow.
        let url = format!("http://localhost:{port}{target}");
        container
            .get_tcp_port(port)?
            .fetch_request(Request::new_with_init(&url, &init)?)
            .await
    }

    /// Destroys the container now, if one runs.
    async fn release(&self, why: &str) -> Result<()> {
        self.grants.borrow_mut().forget();
        let Some(container) = self.state.container() else {
            return Ok(());
        };
        // Released before the container is destroyed: a background request
        // that comes in meanwhile (the processes' poll) finds the
        // computer released, not gone, and nothing takes the destroy's
        // silence for a death to repair.
        let mut record = self.load().await?;
        record.stopped();
        record.released = true;
        self.save(&record).await?;
        if container.running() {
            container.destroy(Some(why)).await?;
        }
        self.alarm_set.set(false);
        self.state.storage().delete_alarm().await
    }

    async fn answer_state(&self, req: &Request) -> Result<Response> {
        let state = match self.state.container() {
            Some(container) => self
                .load()
                .await?
                .state(container.running(), self.default_idle()),
            None => self.local_state(req).await?,
        };
        Response::from_json(&state)
    }

    /// The local program's state for this agent: it runs if it answers.
    async fn local_state(&self, req: &Request) -> Result<ComputerState> {
        let mut state = ComputerState {
            state: Lifecycle::Stopped,
            provision: Provision::LocalProcess,
            instance: None,
            started_ms: None,
            last_used_ms: None,
            idle_ms: self.default_idle(),
            idle_deadline_ms: None,
            image: None,
        };
        let Some((base, secret)) = self.local_program() else {
            return Ok(state);
        };
        let headers = Headers::new();
        headers.set(AUTH_HEADER, &format!("Bearer {secret}"))?;
        if let Some(agent) = req.headers().get(CONTAINER_HEADER)? {
            headers.set(CONTAINER_HEADER, &agent)?;
        }
        let mut init = RequestInit::new();
        init.with_method(Method::Get).with_headers(headers);
        let asked = Request::new_with_init(&format!("{base}/v1/status"), &init)?;
        if let Ok(mut resp) = Fetch::Request(asked).send().await {
            if let Ok(status) = resp.json::<Status>().await {
                state.state = Lifecycle::Running;
                state.instance = Some(status.instance);
                state.image = status.build;
            }
        }
        Ok(state)
    }
}

/// Starts `container` with `env` in its environment and outbound network
/// only if `internet`.
///
/// The options go to the runtime as a plain object, `{env: {...},
/// enableInternet}`, the shape its `start` documents: `worker` 0.8.7's
/// `ContainerStartupOptions` hands `env` over as a JS `Map`, which the
/// runtime reads as an empty dictionary, so the container would start
/// without its secret (and crash-loop refusing to run without one).
fn start_container(container: &Container, env: &[(&str, &str)], internet: bool) -> Result<()> {
    let vars = js_sys::Object::new();
    for (key, value) in env {
        js_sys::Reflect::set(&vars, &JsValue::from_str(key), &JsValue::from_str(value))?;
    }
    let options = js_sys::Object::new();
    js_sys::Reflect::set(&options, &JsValue::from_str("env"), &vars)?;
    js_sys::Reflect::set(
        &options,
        &JsValue::from_str("enableInternet"),
        &JsValue::from_bool(internet),
    )?;
    let raw: &worker::worker_sys::Container = container.as_ref().unchecked_ref();
    raw.start(&options)?;
    Ok(())
}

/// Whether a 503 from the program is its `SHUTTING_DOWN`; the answer is
/// rebuilt to be passed on otherwise.
async fn shutting_down(mut resp: Response) -> Result<(Response, bool)> {
    let bytes = resp.bytes().await?;
    let stopping = serde_json::from_slice::<ErrorBody>(&bytes)
        .is_ok_and(|body| body.error.code == ErrorCode::ShuttingDown);
    let headers = Headers::new();
    headers.set("content-type", "application/json")?;
    let resp = Response::from_bytes(bytes)?
        .with_status(503)
        .with_headers(headers);
    Ok((resp, stopping))
}

/// Whether `path` starts or reads an exec, which is never moved to another
/// container (it would run on a disk that was not pushed, or read a log
/// that is not there).
fn runs_an_exec(path: &str) -> bool {
    path == "/v1/exec" || path.starts_with("/v1/exec/")
}

/// The answer to a background request when no container runs.
fn not_running(released: bool) -> Result<Response> {
    let (code, message) = match released {
        true => (ErrorCode::Released, "the computer was released"),
        false => (ErrorCode::Gone, "no container runs for this agent"),
    };
    let body = json!({ "error": { "code": code, "message": message } });
    Ok(Response::from_json(&body)?.with_status(503))
}

fn unavailable() -> Result<Response> {
    let body = json!({ "error": {
        "code": ErrorCode::Unavailable,
        "message": "no container binding and no COMPUTER_DEV_URL",
    }});
    Ok(Response::from_json(&body)?.with_status(503))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(last_used: i64, idle: Option<u64>) -> Record {
        Record {
            secret: Some("s".into()),
            started_ms: Some(100),
            ready: true,
            instance: Some("i".into()),
            image: Some("b".into()),
            last_used_ms: Some(last_used),
            idle_ms: idle,
            released: false,
        }
    }

    #[test]
    fn the_deadline_counts_from_the_last_request() {
        let r = record(1_000, Some(60_000));
        assert_eq!(r.deadline(DEFAULT_IDLE_MS), 61_000);
        assert_eq!(record(1_000, None).deadline(2_000), 3_000);
        // Heartbeats until the deadline is near, then the deadline.
        assert_eq!(r.next_alarm_in(1_000, DEFAULT_IDLE_MS), HEARTBEAT_MS);
        assert_eq!(r.next_alarm_in(59_000, DEFAULT_IDLE_MS), 2_000);
        assert_eq!(r.next_alarm_in(70_000, DEFAULT_IDLE_MS), 0);
    }

    #[test]
    fn the_state_follows_the_container() {
        let mut r = record(1_000, Some(60_000));
        let running = r.state(true, DEFAULT_IDLE_MS);
        assert_eq!(running.state, Lifecycle::Running);
        assert_eq!(running.idle_deadline_ms, Some(61_000));
        assert_eq!(running.instance.as_deref(), Some("i"));
        r.ready = false;
        assert_eq!(r.state(true, DEFAULT_IDLE_MS).state, Lifecycle::Starting);
        let stopped = r.state(false, DEFAULT_IDLE_MS);
        assert_eq!(stopped.state, Lifecycle::Stopped);
        assert_eq!((stopped.instance, stopped.started_ms), (None, None));
        assert_eq!(stopped.idle_deadline_ms, None);
        r.stopped();
        assert_eq!((r.secret, r.ready), (None, false));
        assert_eq!(r.image.as_deref(), Some("b"), "the last build seen stays");
    }
}
