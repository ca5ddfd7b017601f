//! The `Computer` Durable Object: one per agent, owner of the agent's
//! container. What it decides (when to start, retry, replace, keep alive
//! and release the container, how ports are reached, what its state is)
//! is `stead_agent::computer::owner`, tested there with a fake container
//! host; this file is that seam over `worker` types: the container
//! binding, the object's storage and alarm, and `fetch`. Locally without
//! containers (`wrangler dev --enable-containers=false`) there is no
//! binding, and requests go to the program at `COMPUTER_DEV_URL` with the
//! secret `COMPUTER_DEV_SECRET`.

use std::cell::RefCell;
use std::time::Duration;

use stead_agent::computer::owner::{
    Call, ContainerHost, HeaderList, Hop, Outgoing, Owner, Record, Reply, SendError, Start,
};
use stead_agent::port_grants::{Grants, FORGET_PATH};
use stead_agent::HostError;
use wasm_bindgen::{JsCast, JsValue};
use worker::{
    durable_object, Container, Date, Delay, DurableObject, Env, Fetch, Headers, Method, Request,
    RequestInit, Response, Result, State,
};

/// Where the record is kept in this object's storage.
const RECORD_KEY: &str = "computer";

type Hosted<T> = std::result::Result<T, HostError>;

#[durable_object]
pub struct Computer {
    owner: Owner<Platform>,
}

/// The owner's platform: this object's state and environment, and who may
/// reach which port now, as the agent admitted (`stead_agent::port_grants`:
/// forgotten with the container, and when the agent says so).
pub struct Platform {
    state: State,
    env: Env,
    grants: RefCell<Grants>,
}

impl DurableObject for Computer {
    fn new(state: State, env: Env) -> Self {
        let grants = RefCell::default();
        let owner = Owner::new(Platform { state, env, grants });
        Computer { owner }
    }

    async fn fetch(&self, mut req: Request) -> Result<Response> {
        let url = req.url()?;
        if req.method() == Method::Delete && url.path() == FORGET_PATH {
            self.owner.host().grants.borrow_mut().forget();
            return Response::empty();
        }
        let mut call = Call {
            method: req.method().to_string(),
            path: url.path().to_string(),
            query: url.query().map(str::to_string),
            headers: req.headers().entries().collect(),
            body: Vec::new(),
            plan: crate::egress::plan_of(req.headers()).map_err(|e| e.to_string()),
        };
        if call.holds_body() {
            call.body = req.bytes().await?;
        }
        match self.owner.fetch(&call, &req).await.map_err(failure)? {
            Reply::Passed(resp) => Ok(resp),
            Reply::Json { status, body } => {
                let headers = Headers::new();
                headers.set("content-type", "application/json")?;
                let resp = Response::from_bytes(body)?.with_status(status);
                Ok(resp.with_headers(headers))
            }
        }
    }

    async fn alarm(&self) -> Result<Response> {
        Response::ok(self.owner.alarm().await.map_err(failure)?.as_str())
    }
}

fn failure(error: HostError) -> worker::Error {
    worker::Error::RustError(error.to_string())
}

fn failed(operation: &'static str) -> impl Fn(worker::Error) -> HostError {
    move |error| HostError::new(operation, error)
}

impl Platform {
    fn container(&self) -> Hosted<Container> {
        let none = || HostError::new("reach the container", "no container binding");
        self.state.container().ok_or_else(none)
    }
}

impl ContainerHost for Platform {
    type Request = Request;
    type Answer = Response;

    fn has_container(&self) -> bool {
        self.state.container().is_some()
    }

    fn setting(&self, name: &str) -> Option<String> {
        let var = self.env.var(name).map(|v| v.to_string());
        var.or_else(|_| self.env.secret(name).map(|s| s.to_string()))
            .ok()
    }

    fn now_ms(&self) -> i64 {
        Date::now().as_millis() as i64
    }

    async fn sleep(&self, ms: u64) {
        Delay::from(Duration::from_millis(ms)).await
    }

    fn random_hex(&self, chars: usize) -> Hosted<String> {
        let drawn = crate::random::random_hex(chars);
        drawn.map_err(|e| HostError::new("draw a secret", format!("{e:?}")))
    }

    fn running(&self) -> bool {
        self.state.container().is_some_and(|c| c.running())
    }

    async fn start(&self, start: Start<'_>) -> Hosted<()> {
        self.grants.borrow_mut().forget();
        let container = self.container()?;
        let started = start_container(&container, start.env, start.plan.internet);
        started.map_err(failed("start the container"))?;
        let egress =
            crate::egress::intercept(&self.state, &self.env, &container, start.agent, start.plan);
        egress
            .await
            .map_err(failed("intercept the container's egress"))
    }

    async fn destroy(&self, why: &str) -> Hosted<()> {
        self.grants.borrow_mut().forget();
        let destroyed = self.container()?.destroy(Some(why)).await;
        destroyed.map_err(failed("destroy the container"))
    }

    async fn send(
        &self,
        hop: Hop,
        outgoing: Outgoing<'_, Request>,
    ) -> std::result::Result<Response, SendError> {
        let port = match hop {
            Hop::Container { port } => {
                let container = self.container().map_err(SendError::Undelivered)?;
                Some(container.get_tcp_port(port))
            }
            Hop::Network => None,
        };
        let sent = async {
            let req = request_for(outgoing)?;
            match port {
                Some(port) => port?.fetch_request(req).await,
                None => Fetch::Request(req).send().await,
            }
        };
        let failure = sent.await.map_err(failed("reach the computer"));
        failure.map_err(SendError::of_platform)
    }

    fn status_of(answer: &Response) -> u16 {
        answer.status_code()
    }

    async fn admit_port(&self, port: u16, request: &Request) -> Hosted<Option<Response>> {
        let admitted = crate::port_route::admitted(&self.env, &self.grants, request, port);
        admitted
            .await
            .map_err(failed("ask the agent about a port request"))
    }

    async fn read(&self, mut answer: Response) -> Hosted<Vec<u8>> {
        let read = answer.bytes().await;
        read.map_err(failed("read the computer's answer"))
    }

    async fn load(&self) -> Hosted<Option<Record>> {
        let loaded = self.state.storage().get::<Record>(RECORD_KEY).await;
        loaded.map_err(failed("load the computer's record"))
    }

    async fn save(&self, record: &Record) -> Hosted<()> {
        let saved = self.state.storage().put(RECORD_KEY, record).await;
        saved.map_err(failed("save the computer's record"))
    }

    async fn set_alarm(&self, in_ms: i64) -> Hosted<()> {
        let set = self.state.storage().set_alarm(in_ms).await;
        set.map_err(failed("set the alarm"))
    }

    async fn clear_alarm(&self) -> Hosted<()> {
        let cleared = self.state.storage().delete_alarm().await;
        cleared.map_err(failed("clear the alarm"))
    }
}

/// The platform request for `outgoing` (see [`Outgoing`]).
fn request_for(outgoing: Outgoing<'_, Request>) -> Result<Request> {
    let headers_of = |list: HeaderList| -> Result<Headers> {
        let headers = Headers::new();
        for (name, value) in list {
            headers.append(&name, &value)?;
        }
        Ok(headers)
    };
    let (url, init) = match outgoing {
        Outgoing::Program {
            method,
            url,
            headers,
            body,
        } => {
            let mut init = RequestInit::new();
            init.with_method(Method::from(method.to_string()))
                .with_headers(headers_of(headers)?);
            if !body.is_empty() {
                init.with_body(Some(js_sys::Uint8Array::from(body).into()));
            }
            (url, init)
        }
        Outgoing::Port {
            url,
            headers,
            request,
        } => (
            url,
            crate::platform::passed_on(request, headers_of(headers)?),
        ),
    };
    Request::new_with_init(&url, &init)
}

/// Starts `container` with `env` in its environment and outbound network
/// only if `internet`. The options go to the runtime as a plain object,
/// `{env: {...}, enableInternet}`, the shape its `start` documents:
/// `worker` 0.8.7's `ContainerStartupOptions` hands `env` over as a JS
/// `Map`, which the runtime reads as an empty dictionary, so the container
/// would start without its secret (and crash-loop refusing to run).
fn start_container(container: &Container, env: &[(&str, &str)], internet: bool) -> Result<()> {
    let vars = js_sys::Object::new();
    for (key, value) in env {
        js_sys::Reflect::set(&vars, &JsValue::from_str(key), &JsValue::from_str(value))?;
    }
    let options = js_sys::Object::new();
    js_sys::Reflect::set(&options, &JsValue::from_str("env"), &vars)?;
    let internet = JsValue::from_bool(internet);
    js_sys::Reflect::set(&options, &JsValue::from_str("enableInternet"), &internet)?;
    let raw: &worker::worker_sys::Container = container.as_ref().unchecked_ref();
    raw.start(&options)?;
    Ok(())
}
