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
//! Locally (`wrangler dev` cannot run containers here) `state.container()`
//! is `None`: requests go to the program started as a local process at
//! `COMPUTER_DEV_URL`, with the secret `COMPUTER_DEV_SECRET`. One local
//! program serves every agent, each in its own directory, told apart by the
//! `x-stead-container` header.

use serde_json::json;
use wasm_bindgen::{JsCast, JsValue};

use crate::random::random_hex;
use stead_sync::{ErrorCode, AUTH_HEADER};
use worker::{
    durable_object, Container, Delay, DurableObject, Env, Fetch, Headers, Request, RequestInit,
    Response, Result, State,
};

/// The port the container program listens on.
const PORT: u16 = 8080;

/// How long a cold container may take to answer, in tries of 250 ms.
const START_TRIES: u32 = 240;

#[durable_object]
pub struct Computer {
    state: State,
    env: Env,
}

impl DurableObject for Computer {
    fn new(state: State, env: Env) -> Self {
        Computer { state, env }
    }

    async fn fetch(&self, mut req: Request) -> Result<Response> {
        let url = req.url()?;
        let path = url.path().to_string();
        let method = req.method();
        let body = req.bytes().await?;
        let headers = Headers::new();
        for name in [stead_sync::CONTAINER_HEADER, "content-type"] {
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
            Request::new_with_init(&format!("{base}{path}"), &init)
        };
        match self.state.container() {
            Some(container) => {
                let internet = req
                    .headers()
                    .get(super::link::INTERNET_HEADER)?
                    .is_some_and(|v| v == "true");
                let secret = self.start(&container, internet).await?;
                let port = container.get_tcp_port(PORT)?;
                let mut tries = 0;
                loop {
                    match port
                        .fetch_request(build("http://container", &secret)?)
                        .await
                    {
                        Ok(resp) => return Ok(resp),
                        Err(_) if tries < START_TRIES => {
                            tries += 1;
                            Delay::from(std::time::Duration::from_millis(250)).await;
                        }
                        Err(error) => return Err(error),
                    }
                }
            }
            None => {
                let (Ok(base), Ok(secret)) = (
                    self.env.var("COMPUTER_DEV_URL").map(|v| v.to_string()),
                    self.env
                        .secret("COMPUTER_DEV_SECRET")
                        .map(|v| v.to_string()),
                ) else {
                    return unavailable();
                };
                Fetch::Request(build(base.trim_end_matches('/'), &secret)?)
                    .send()
                    .await
            }
        }
    }
}

impl Computer {
    /// Starts the container unless it runs, with outbound network only if
    /// `internet`; returns the secret it was given.
    async fn start(&self, container: &Container, internet: bool) -> Result<String> {
        let storage = self.state.storage();
        if container.running() {
            if let Some(secret) = storage.get::<String>("secret").await? {
                return Ok(secret);
            }
            // Running with a secret this object no longer knows: restart it.
            container.destroy(Some("secret lost")).await?;
        }
        let secret = random_hex(64)?;
        start_container(container, &[("STEAD_COMPUTER_SECRET", &secret)], internet)?;
        storage.put("secret", &secret).await?;
        Ok(secret)
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

fn unavailable() -> Result<Response> {
    let body = json!({ "error": {
        "code": ErrorCode::Unavailable,
        "message": "no container binding and no COMPUTER_DEV_URL",
    }});
    Ok(Response::from_json(&body)?.with_status(503))
}
