//! The `Registry` Durable Object: the deployment's index of agents
//! ([`stead_agent::agent_index`]), one instance for the whole deployment.
//!
//! Only the Worker talks to it: [`note`] after an agent's creation,
//! deletion or fork succeeded, and [`list`] for `GET /agents`. A failure to
//! note is logged, not returned: the agent's own answer is the truth (the
//! agent was created or deleted), a `PUT /agents/{id}` of an existing agent
//! records it again, and the listing drops any agent that answers 404.

use stead_agent::agent_index::{self, Page};
use stead_agent::auth::Caller;
use stead_agent::{Action, ApiError};
use worker::{
    durable_object, DurableObject, Env, Headers, Method, Request, RequestInit, Response, Result,
    State,
};

use crate::do_sql::DoSql;
use crate::workspace::{error_response, json_response};

const REGISTRY_BINDING: &str = "REGISTRY";
/// The one instance's name.
const INSTANCE: &str = "agents";

#[durable_object]
pub struct Registry {
    state: State,
}

impl DurableObject for Registry {
    fn new(state: State, _env: Env) -> Self {
        Registry { state }
    }

    async fn fetch(&self, req: Request) -> Result<Response> {
        let url = req.url()?;
        let db = DoSql::new(&self.state)?;
        let done = || json_response(200, &serde_json::json!({ "ok": true }));
        let outcome = agent_index::migrate(&db).and_then(|()| {
            match (req.method(), url.path().split_once("/agent/")) {
                (Method::Put, Some(("", id))) => {
                    agent_index::record(&db, id, worker::Date::now().as_millis() as i64)
                        .map(|()| None)
                }
                (Method::Delete, Some(("", id))) => agent_index::forget(&db, id).map(|()| None),
                (Method::Get, None) if url.path() == "/page" => {
                    let query: Vec<(String, String)> = url
                        .query_pairs()
                        .map(|(k, v)| (k.into_owned(), v.into_owned()))
                        .collect();
                    agent_index::page(&db, &query).map(Some)
                }
                _ => Err(ApiError::Internal(format!(
                    "the registry has no route {} {}",
                    req.method(),
                    url.path()
                ))),
            }
        });
        match outcome {
            Ok(Some(page)) => json_response(200, &serde_json::to_value(&page)?),
            Ok(None) => done(),
            Err(error) => error_response(&error),
        }
    }
}

fn stub(env: &Env) -> Result<worker::Stub> {
    env.durable_object(REGISTRY_BINDING)?
        .id_from_name(INSTANCE)?
        .get_stub()
}

/// An internal request to `path` with the admin caller's headers.
fn internal(method: Method, url: &str) -> Result<Request> {
    let headers = Headers::new();
    for (name, value) in Caller::Admin.headers() {
        headers.set(name, &value)?;
    }
    let mut init = RequestInit::new();
    init.with_method(method).with_headers(headers);
    Request::new_with_init(url, &init)
}

/// Keeps the index in step with what `action` on agent `id` answered.
pub(crate) async fn note(env: &Env, id: &str, action: &Action, answer: &Response) {
    if !(200..300).contains(&answer.status_code()) {
        return;
    }
    let change = match action {
        Action::Create => Some((Method::Put, id.to_string())),
        Action::Delete => Some((Method::Delete, id.to_string())),
        // The new agent is the answer's `Location: /agents/{new}`.
        Action::Fork => answer
            .headers()
            .get("location")
            .ok()
            .flatten()
            .and_then(|l| l.strip_prefix("/agents/").map(str::to_string))
            .map(|new| (Method::Put, new)),
        _ => None,
    };
    let Some((method, agent)) = change else {
        return;
    };
    let sent = async {
        let req = internal(method, &format!("https://registry/agent/{agent}"))?;
        stub(env)?.fetch_with_request(req).await
    };
    match sent.await {
        Ok(reply) if reply.status_code() == 200 => {}
        Ok(reply) => worker::console_error!(
            "agent index: noting {agent} answered {}",
            reply.status_code()
        ),
        Err(error) => worker::console_error!("agent index: noting {agent}: {error}"),
    }
}

/// `GET /agents`: a page of the index, each agent with its usage (its own
/// `GET /agents/{id}`, asked of every agent on the page at once).
pub(crate) async fn list(env: &Env, url: &worker::Url) -> Result<Response> {
    let query = url.query().map(|q| format!("?{q}")).unwrap_or_default();
    let mut reply = stub(env)?
        .fetch_with_request(internal(
            Method::Get,
            &format!("https://registry/page{query}"),
        )?)
        .await?;
    if reply.status_code() != 200 {
        return Ok(reply);
    }
    let page: Page = reply.json().await?;
    let workspaces = env.durable_object(crate::platform::WORKSPACE_BINDING)?;
    let asks = page.agents.iter().map(|listed| {
        let workspaces = &workspaces;
        async move {
            let req = internal(Method::Get, &format!("https://agent/agents/{}", listed.id))?;
            let mut answer = workspaces
                .id_from_name(&listed.id)?
                .get_stub()?
                .fetch_with_request(req)
                .await?;
            match answer.status_code() {
                200 => Ok(Some(answer.json::<serde_json::Value>().await?)),
                // Deleted while the index missed it: forget it now.
                404 => {
                    let forget = internal(
                        Method::Delete,
                        &format!("https://registry/agent/{}", listed.id),
                    )?;
                    stub(env)?.fetch_with_request(forget).await?;
                    Ok(None)
                }
                // Busy (a fork still arriving) or failing: listed without usage.
                _ => Ok(Some(serde_json::Value::Null)),
            }
        }
    });
    let details: Vec<Result<Option<serde_json::Value>>> = futures::future::join_all(asks).await;
    let details = details.into_iter().collect::<Result<Vec<_>>>()?;
    json_response(200, &agent_index::answer(page, details))
}
