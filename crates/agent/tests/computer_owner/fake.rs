//! The one fake of these tests: [`FakeContainers`], the `Computer`
//! object's platform as plain Rust. A container binding, a Durable
//! Object's storage and its alarm do not exist outside Workers, so it
//! records what the owner asks of them; its "container" is a scripted
//! program that answers the protocol as the real one does (a status with
//! its instance id, `401` to a wrong secret, `SHUTTING_DOWN` when told
//! and `STALE_INSTANCE` to an exec planned for another instance),
//! with faults a test injects: a container that dies while starting, one
//! that dies once a request has reached it, one that stops answering, one
//! left running with a secret nobody knows. Failures read as the
//! platform's do (`connection refused` before a connection, `the
//! connection was lost` after), classified by the owner's own rule.
//! The clock is the test's: sleeping moves it. A sleep or a send can be
//! held ([`Inner::hold_sleeps`], [`Inner::hold_sends`]) so that a test
//! runs another request, or the alarm, while one waits, as a Durable
//! Object does between awaits.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;

use serde_json::{json, Value};
use stead_agent::computer::owner::{
    ContainerHost, HeaderList, Hop, Outgoing, Provider, Record, SendError, Start,
    DEV_SECRET_SETTING, DEV_URL_SETTING, IDLE_SETTING, PORT, SECRET_VAR,
};
use stead_agent::HostError;

/// The fake's answer: a status and a body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FakeAnswer {
    pub status: u16,
    pub body: Vec<u8>,
}

/// What the owner asked of the platform, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    Start {
        instance: String,
        internet: bool,
        intercept: Vec<String>,
        agent: String,
    },
    Destroy(String),
    Sent {
        hop: Hop,
        url: String,
        headers: HeaderList,
    },
    Alarm(i64),
    AlarmCleared,
    Saved,
}

/// What the program does with the next protocol request (after its cold
/// tries).
#[derive(Debug, Clone)]
pub enum Next {
    /// `503 SHUTTING_DOWN`: it got SIGTERM.
    ShuttingDown,
    /// This answer.
    Answer(u16, Value),
}

#[derive(Default)]
pub struct Inner {
    pub now: Cell<i64>,
    pub provider: RefCell<Option<Provider>>,
    pub default_idle: Cell<Option<u64>>,
    /// The running container's secret and instance id.
    container: RefCell<Option<(String, String)>>,
    starts: Cell<u32>,
    /// Faults: the next this many containers die before they answer.
    pub die_while_starting: Cell<u32>,
    /// Each new container refuses this many requests while it comes up.
    pub cold_tries: Cell<u32>,
    cold_left: Cell<u32>,
    dying: Cell<bool>,
    /// The running container takes requests and never answers them.
    pub hung: Cell<bool>,
    /// The running container dies once a request for this path reaches
    /// its program (before it answers).
    pub dies_on: RefCell<Option<String>>,
    /// Each protocol request that reached a program: the instance, the
    /// path.
    pub received: RefCell<Vec<(String, String)>>,
    /// The next starts fail.
    pub start_fails: Cell<bool>,
    pub script: RefCell<VecDeque<Next>>,
    /// What its status reports: an exec running, a busy process.
    pub exec_running: RefCell<Option<String>>,
    pub busy: Cell<bool>,
    pub storage: RefCell<Option<Value>>,
    pub sleeps: Cell<u32>,
    /// While set, a sleep does not end (its future stays pending).
    pub hold_sleeps: Cell<bool>,
    /// While set, a send waits before it goes (its future stays pending).
    pub hold_sends: Cell<bool>,
    pub events: RefCell<Vec<Event>>,
}

/// The fake host; clones share one platform (the test keeps one, the
/// owner another).
#[derive(Clone, Default)]
pub struct FakeContainers(pub Rc<Inner>);

impl std::ops::Deref for FakeContainers {
    type Target = Inner;
    fn deref(&self) -> &Inner {
        &self.0
    }
}

impl FakeContainers {
    /// The provider the owner is to find.
    pub fn provider(&self) -> Provider {
        self.provider.borrow().clone().expect("a provider")
    }

    pub fn new() -> Self {
        let fake = FakeContainers::default();
        *fake.provider.borrow_mut() = Some(Provider::Container);
        fake.now.set(1_000_000);
        fake
    }

    pub fn events(&self) -> Vec<Event> {
        self.events.borrow().clone()
    }

    pub fn forget_events(&self) {
        self.events.borrow_mut().clear();
    }

    pub fn starts(&self) -> Vec<String> {
        let events = self.events.borrow();
        let started = events.iter().filter_map(|event| match event {
            Event::Start { instance, .. } => Some(instance.clone()),
            _ => None,
        });
        started.collect()
    }

    pub fn destroys(&self) -> Vec<String> {
        let events = self.events.borrow();
        let destroyed = events.iter().filter_map(|event| match event {
            Event::Destroy(why) => Some(why.clone()),
            _ => None,
        });
        destroyed.collect()
    }

    pub fn alarms(&self) -> Vec<Event> {
        let events = self.events.borrow();
        let alarms = events
            .iter()
            .filter(|e| matches!(e, Event::Alarm(_) | Event::AlarmCleared));
        alarms.cloned().collect()
    }

    pub fn sent(&self) -> Vec<(Hop, String)> {
        let events = self.events.borrow();
        let sent = events.iter().filter_map(|event| match event {
            Event::Sent { hop, url, .. } => Some((*hop, url.clone())),
            _ => None,
        });
        sent.collect()
    }

    /// The instances whose program received a request for `path`.
    pub fn received_by(&self, path: &str) -> Vec<String> {
        let received = self.received.borrow();
        let by = received.iter().filter(|(_, to)| to == path);
        by.map(|(instance, _)| instance.clone()).collect()
    }

    pub fn saves(&self) -> usize {
        let events = self.events.borrow();
        events.iter().filter(|e| **e == Event::Saved).count()
    }

    /// A container runs that no record knows (started by an earlier life
    /// of the object, whose record was lost).
    pub fn leave_running(&self, secret: &str) {
        *self.container.borrow_mut() = Some((secret.into(), "stray".into()));
    }

    /// The running container dies (the platform stopped it).
    pub fn kill(&self) {
        *self.container.borrow_mut() = None;
    }

    fn answer(status: u16, body: Value) -> FakeAnswer {
        FakeAnswer {
            status,
            body: body.to_string().into_bytes(),
        }
    }

    /// The program's answer to a protocol request for `url` with `secret`.
    fn program(&self, url: &str, secret: &str) -> Result<FakeAnswer, HostError> {
        let refused = || Err(HostError::new("fetch", "connection refused"));
        let Some((expected, instance)) = self.container.borrow().clone() else {
            return refused();
        };
        if self.dying.get() {
            self.dying.set(false);
            self.kill();
            return refused();
        }
        if self.cold_left.get() > 0 {
            self.cold_left.set(self.cold_left.get() - 1);
            return refused();
        }
        let target = url.strip_prefix("http://container").unwrap_or(url);
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        let path = path.to_string();
        let lost = || Err(HostError::new("fetch", "the connection was lost"));
        self.received
            .borrow_mut()
            .push((instance.clone(), path.clone()));
        if self.hung.get() {
            return lost();
        }
        if self.dies_on.borrow().as_deref() == Some(path.as_str()) {
            *self.dies_on.borrow_mut() = None;
            self.kill();
            return lost();
        }
        if secret != expected {
            let body = json!({"error": {"code": "UNAUTHORIZED", "message": "wrong secret"}});
            return Ok(Self::answer(401, body));
        }
        if path == "/v1/status" {
            return Ok(Self::answer(200, self.status(&instance)));
        }
        let planned_for = (path == "/v1/exec").then_some(query);
        let planned_for = planned_for
            .into_iter()
            .flat_map(|query| query.split('&'))
            .filter_map(|pair| pair.split_once('='))
            .find(|(key, _)| *key == stead_sync::EXEC_INSTANCE_PARAM);
        if let Some((_, planned)) = planned_for.filter(|(_, id)| *id != instance) {
            let message = format!("the request was planned for instance {planned}");
            let body = json!({"error": {"code": "STALE_INSTANCE", "message": message}});
            return Ok(Self::answer(409, body));
        }
        Ok(match self.script.borrow_mut().pop_front() {
            Some(Next::ShuttingDown) => {
                let message = "the computer is shutting down";
                let body = json!({"error": {"code": "SHUTTING_DOWN", "message": message}});
                Self::answer(503, body)
            }
            Some(Next::Answer(status, body)) => Self::answer(status, body),
            None => Self::answer(200, json!({"path": path, "instance": instance})),
        })
    }

    fn status(&self, instance: &str) -> Value {
        json!({
            "protocol": stead_sync::PROTOCOL, "instance": instance, "build": "build-1",
            "running": self.exec_running.borrow().clone(), "busy": self.busy.get(),
        })
    }

    /// A request over the network: the local program and its machine.
    fn network(&self, url: &str, agent: Option<&str>) -> FakeAnswer {
        if url.ends_with("/v1/status") {
            let mut status = self.status("local");
            status["agent"] = json!(agent);
            return Self::answer(200, status);
        }
        Self::answer(200, json!({"local": url}))
    }
}

/// Pending while `hold` is set.
async fn held(hold: &Cell<bool>) {
    std::future::poll_fn(|_| match hold.get() {
        true => std::task::Poll::Pending,
        false => std::task::Poll::Ready(()),
    })
    .await
}

impl ContainerHost for FakeContainers {
    /// The platform's request is not needed: the call carries it all.
    type Request = ();
    type Answer = FakeAnswer;

    fn has_container(&self) -> bool {
        self.provider() == Provider::Container
    }

    /// The settings that make [`Inner::provider`] (read back by the
    /// owner) and the default idle timeout.
    fn setting(&self, name: &str) -> Option<String> {
        match (self.provider(), name) {
            (Provider::Local { base, .. }, DEV_URL_SETTING) => Some(base),
            (Provider::Local { secret, .. }, DEV_SECRET_SETTING) => Some(secret),
            (_, IDLE_SETTING) => self.default_idle.get().map(|ms| ms.to_string()),
            _ => None,
        }
    }

    fn now_ms(&self) -> i64 {
        self.now.get()
    }

    async fn sleep(&self, ms: u64) {
        self.sleeps.set(self.sleeps.get() + 1);
        held(&self.hold_sleeps).await;
        self.now.set(self.now.get() + ms as i64);
    }

    fn random_hex(&self, chars: usize) -> Result<String, HostError> {
        let n = self.starts.get() + 1;
        Ok(format!("{n:0>chars$}"))
    }

    fn running(&self) -> bool {
        self.container.borrow().is_some()
    }

    async fn start(&self, start: Start<'_>) -> Result<(), HostError> {
        if self.start_fails.get() {
            return Err(HostError::new("start the container", "no capacity"));
        }
        let secret = start.env.iter().find(|(key, _)| *key == SECRET_VAR);
        let secret = secret.expect("started with its secret").1.to_string();
        self.starts.set(self.starts.get() + 1);
        let instance = format!("instance-{}", self.starts.get());
        *self.container.borrow_mut() = Some((secret, instance.clone()));
        self.cold_left.set(self.cold_tries.get());
        let dies = self.die_while_starting.get();
        self.dying.set(dies > 0);
        self.die_while_starting.set(dies.saturating_sub(1));
        self.events.borrow_mut().push(Event::Start {
            instance,
            internet: start.plan.internet,
            intercept: start.plan.intercept.clone(),
            agent: start.agent.to_string(),
        });
        Ok(())
    }

    async fn destroy(&self, why: &str) -> Result<(), HostError> {
        self.kill();
        self.events.borrow_mut().push(Event::Destroy(why.into()));
        Ok(())
    }

    async fn send(&self, hop: Hop, outgoing: Outgoing<'_, ()>) -> Result<FakeAnswer, SendError> {
        held(&self.hold_sends).await;
        let (url, headers, to_program) = match outgoing {
            Outgoing::Program { url, headers, .. } => (url, headers, true),
            Outgoing::Port { url, headers, .. } => (url, headers, false),
        };
        let header = |name: &str| {
            let mut found = headers.iter().filter(|(key, _)| key == name);
            found.next().map(|(_, value)| value.clone())
        };
        let secret = header("authorization").map(|v| v.trim_start_matches("Bearer ").to_string());
        let agent = header(stead_sync::CONTAINER_HEADER);
        self.events.borrow_mut().push(Event::Sent {
            hop,
            url: url.clone(),
            headers: headers.clone(),
        });
        let answered = match (hop, to_program) {
            (Hop::Network, _) => Ok(self.network(&url, agent.as_deref())),
            (Hop::Container { port }, true) if port == PORT => {
                self.program(&url, secret.as_deref().unwrap_or_default())
            }
            (Hop::Container { port }, _) => match self.running() && !self.hung.get() {
                true => Ok(Self::answer(200, json!({"port": port, "url": url}))),
                false => Err(HostError::new("fetch", "connection refused")),
            },
        };
        answered.map_err(SendError::of_platform)
    }

    fn status_of(answer: &FakeAnswer) -> u16 {
        answer.status
    }

    async fn read(&self, answer: FakeAnswer) -> Result<Vec<u8>, HostError> {
        Ok(answer.body)
    }

    async fn load(&self) -> Result<Option<Record>, HostError> {
        let stored = self.storage.borrow().clone();
        let record = stored.map(|value| serde_json::from_value(value).expect("a stored record"));
        Ok(record)
    }

    async fn save(&self, record: &Record) -> Result<(), HostError> {
        *self.storage.borrow_mut() = Some(serde_json::to_value(record).expect("a record"));
        self.events.borrow_mut().push(Event::Saved);
        Ok(())
    }

    async fn set_alarm(&self, in_ms: i64) -> Result<(), HostError> {
        self.events.borrow_mut().push(Event::Alarm(in_ms));
        Ok(())
    }

    async fn clear_alarm(&self) -> Result<(), HostError> {
        self.events.borrow_mut().push(Event::AlarmCleared);
        Ok(())
    }

    /// Every caller is admitted: the admission's rules are the agent's
    /// (`crate::ports`), tested end to end in `tests/processes.rs`.
    async fn admit_port(&self, _port: u16, _request: &()) -> Result<Option<FakeAnswer>, HostError> {
        Ok(None)
    }
}
