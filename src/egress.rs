//! The platform's side of the computer's egress (decisions in
//! `stead_agent::egress_gate`): the `Computer` object registers the
//! container's outbound interception when it starts it, the Worker hands
//! each intercepted request to the agent's Durable Object, and that object
//! sends it on (with the secret the agent chose, added here as it leaves)
//! or answers the refusal.
//!
//! `worker` 0.8.7 binds none of the interception API, so it is reached
//! here through the JavaScript objects: `ctx.container.interceptOutboundHttp
//! (address, fetcher)` and `interceptOutboundHttps(address, fetcher)` (and
//! the catch-alls `interceptAllOutboundHttp(fetcher)`,
//! `interceptOutboundHttps("*", fetcher)`), where the
//! fetcher is this Worker's own default entrypoint, `ctx.exports.default`,
//! given `props` that name the agent. Props come only from that loopback,
//! never from a request off the network, so an intercepted request cannot
//! be forged from outside.

use serde::Deserialize;
use stead_agent::egress_gate::Plan;
use stead_agent::ApiError;
use wasm_bindgen::{JsCast, JsValue};
use worker::{Container, Env, Fetch, Headers, Request, Response, Result, State};

use crate::platform::{local_development, passed_on, WORKSPACE_BINDING};
use crate::workspace::error_response;

/// The Workspace object's path for an intercepted request (reached only
/// by this Worker's own stub calls, never routed from outside).
pub(crate) const EGRESS_PATH: &str = "/_egress";

/// The header that carries the intercepted request's URL to it.
const URL_HEADER: &str = "x-stead-egress-url";

/// The props of the loopback fetcher a container's requests arrive on.
#[derive(Debug, Deserialize)]
pub(crate) struct EgressProps {
    /// The agent whose container made the request.
    pub egress_for: String,
}

/// The plan a request to the `Computer` object carries (none: nothing to
/// intercept, internet as the older header says).
pub(crate) fn plan_of(headers: &Headers) -> Result<Plan> {
    if let Some(text) = headers.get(stead_agent::egress_gate::PLAN_HEADER)? {
        return serde_json::from_str(&text)
            .map_err(|e| worker::Error::RustError(format!("egress plan: {e}")));
    }
    let internet = headers
        .get(stead_sync::INTERNET_HEADER)?
        .is_some_and(|v| v == "true");
    Ok(Plan {
        internet,
        ..Plan::default()
    })
}

/// Calls `container.<method>(args...)`, awaiting the promise it returns.
async fn call(container: &Container, method: &str, args: &[JsValue]) -> Result<()> {
    let raw: &JsValue = container.as_ref().unchecked_ref();
    let function: js_sys::Function = js_sys::Reflect::get(raw, &JsValue::from_str(method))?
        .dyn_into()
        .map_err(|_| worker::Error::RustError(format!("the runtime has no {method}")))?;
    let array = js_sys::Array::new();
    for arg in args {
        array.push(arg);
    }
    let promise: js_sys::Promise = js_sys::Reflect::apply(&function, raw, &array)?.dyn_into()?;
    wasm_bindgen_futures::JsFuture::from(promise).await?;
    Ok(())
}

/// The loopback fetcher for `agent`'s requests: `ctx.exports.default({props})`.
fn fetcher(state: &State, agent: &str) -> Result<JsValue> {
    let exports = js_sys::Reflect::get(state.as_raw(), &JsValue::from_str("exports"))?;
    let entry: js_sys::Function = js_sys::Reflect::get(&exports, &JsValue::from_str("default"))?
        .dyn_into()
        .map_err(|_| worker::Error::RustError("no ctx.exports.default".into()))?;
    let props = js_sys::Object::new();
    js_sys::Reflect::set(
        &props,
        &JsValue::from_str("egress_for"),
        &JsValue::from_str(agent),
    )?;
    let options = js_sys::Object::new();
    js_sys::Reflect::set(&options, &JsValue::from_str("props"), &props)?;
    // `Reflect.apply`, not `entry.call(..)`: the entry is an RPC stub,
    // whose `call` property would be a remote method of that name.
    let args = js_sys::Array::of1(&options);
    Ok(js_sys::Reflect::apply(&entry, &JsValue::UNDEFINED, &args)?)
}

/// Registers `plan`'s interception on a container just started for
/// `agent`, for HTTP and HTTPS alike (the platform terminates intercepted
/// TLS with the CA the container program adds to the machine's trust
/// store, `container/src/trust.rs`). A destination the runtime refuses to
/// intercept is logged and left closed (the container started without
/// internet unless the plan is `on`), never opened. The catch-alls
/// (`interceptAllOutboundHttp`, `interceptOutboundHttps("*")`) are
/// registered only in a deployment: the local runtime answers the HTTP one
/// by passing requests through to their destination, which would open what
/// the policy closes.
pub(crate) async fn intercept(
    state: &State,
    env: &Env,
    container: &Container,
    agent: &str,
    plan: &Plan,
) -> Result<()> {
    if plan.intercept.is_empty() && !plan.all {
        return Ok(());
    }
    let fetcher = fetcher(state, agent)?;
    let http = plan.intercept.iter().map(|a| ("interceptOutboundHttp", a));
    let https = plan
        .intercept_https
        .iter()
        .map(|a| ("interceptOutboundHttps", a));
    for (method, address) in http.chain(https) {
        let args = [JsValue::from_str(address), fetcher.clone()];
        if let Err(error) = call(container, method, &args).await {
            worker::console_warn!("egress: {address} not intercepted ({method}): {error}");
        }
    }
    if plan.all && !local_development(env) {
        call(
            container,
            "interceptAllOutboundHttp",
            std::slice::from_ref(&fetcher),
        )
        .await?;
        let every = [JsValue::from_str("*"), fetcher];
        call(container, "interceptOutboundHttps", &every).await?;
    }
    Ok(())
}

/// The Worker's side: an intercepted request from `props`' agent's
/// container, handed to that agent's Durable Object.
pub(crate) async fn hand_to_agent(req: Request, env: &Env, props: EgressProps) -> Result<Response> {
    let stub = env
        .durable_object(WORKSPACE_BINDING)?
        .id_from_name(&props.egress_for)?
        .get_stub()?;
    let headers = req.headers().clone();
    headers.set(URL_HEADER, req.url()?.as_ref())?;
    let init = passed_on(&req, headers);
    let inner = Request::new_with_init(&format!("http://workspace{EGRESS_PATH}"), &init)?;
    stub.fetch_with_request(inner).await
}

/// The Workspace object's side: refuses the request or sends it on, with
/// the secret the agent chose as its `Authorization`, redirects not
/// followed (a secret never goes where a server points), the answer
/// streamed back.
pub(crate) async fn send_on(
    agent: &stead_agent::Agent<crate::platform::WorkerHost>,
    req: Request,
) -> Result<Response> {
    let Some(url) = req.headers().get(URL_HEADER)? else {
        return error_response(&ApiError::InvalidRequest("no intercepted URL".into()));
    };
    let used = match agent.computer_egress(&url).await {
        Ok(used) => used,
        Err(error) => return error_response(&error),
    };
    let headers = Headers::new();
    for (name, value) in req.headers().entries() {
        if name != URL_HEADER {
            headers.append(&name, &value)?;
        }
    }
    if let Some(used) = &used {
        headers.set("authorization", &used.authorization)?;
    }
    let init = passed_on(&req, headers);
    Fetch::Request(Request::new_with_init(&url, &init)?)
        .send()
        .await
}
