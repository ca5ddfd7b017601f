//! The port route's two halves of glue (the rules are
//! `stead_agent::ports`, the grants `stead_agent::port_grants`):
//!
//! - [`forward`], in the Worker: once the credential is checked, the
//!   request is rewritten for the dev server and sent straight to the
//!   agent's `Computer` object, with the caller in the headers only the
//!   Worker sets; the answer is rewritten on its way back.
//! - [`admitted`], in the `Computer` object: a grant for the caller and
//!   port lets the request on; without one the agent's Durable Object is
//!   asked (the same URL, method and caller, without the body), and its
//!   admission kept as a grant.

use std::cell::RefCell;

use stead_agent::auth::{self, Caller, Principal};
use stead_agent::port_grants::{Grants, URL_HEADER};
use stead_agent::route::Front;
use stead_agent::{ports, shares};
use worker::{Date, Env, Headers, Request, RequestInit, Response, Result};

/// Marks an answer of the agent's (a refusal) that the Worker passes on as
/// it is, rather than as the dev server's.
const REFUSED_HEADER: &str = "x-stead-port-refused";

/// Worker side: sends `req`, for `port` of agent `agent` on `front`, to the
/// agent's `Computer` object, and answers with what comes back.
pub(crate) async fn forward(
    req: Request,
    env: &Env,
    (agent, port, front): (&str, u16, Front),
    principal: Option<&Principal>,
) -> Result<Response> {
    let url = req.url()?;
    let now_s = (js_sys::Date::now() / 1000.0) as i64;
    // A browser's first visit with a share link: the link is kept as a
    // cookie until it expires.
    let share = match principal {
        Some(Principal::Share(claims)) => url
            .query_pairs()
            .find(|(key, _)| key == shares::QUERY_PARAM)
            .map(|(_, capability)| (capability.into_owned(), claims.exp)),
        _ => None,
    };
    let share = share.as_ref().map(|(c, exp)| (c.as_str(), *exp));
    let forward = ports::forward(
        (agent, port, front),
        share,
        (now_s, url.scheme() == "https"),
    );
    let host = url.host_str().unwrap_or_default();
    let host = match url.port() {
        Some(number) => format!("{host}:{number}"),
        None => host.to_string(),
    };
    let incoming: Vec<(String, String)> = req.headers().entries().collect();
    let headers = Headers::new();
    for (name, value) in ports::request_headers(&incoming, &forward, (&host, url.scheme())) {
        headers.append(&name, &value)?;
    }
    for (name, value) in Caller::of(principal).headers() {
        headers.set(name, &value)?;
    }
    headers.set(stead_sync::CONTAINER_HEADER, agent)?;
    headers.set(URL_HEADER, url.as_str())?;
    // The dev server's redirects go back to the client as they came.
    let init = crate::platform::passed_on(&req, headers);
    let target = ports::target(forward.path(url.path()), url.query());
    let to = format!(
        "http://computer{}{port}{target}",
        stead_sync::owner::PORTS_PREFIX
    );
    let answer = env
        .durable_object(crate::platform::COMPUTER_BINDING)?
        .id_from_name(agent)?
        .get_stub()?
        .fetch_with_request(Request::new_with_init(&to, &init)?)
        .await?;
    let refused = answer.headers().has(REFUSED_HEADER)?;
    let answered: Vec<(String, String)> = answer
        .headers()
        .entries()
        .filter(|(name, _)| name != REFUSED_HEADER)
        .collect();
    let out = Headers::new();
    let rewritten = match refused {
        true => answered,
        false => ports::response_headers(&answered, &forward),
    };
    for (name, value) in rewritten {
        out.append(&name, &value)?;
    }
    Ok(answer.with_headers(out))
}

/// `Computer` object side: whether `req`, a port request the Worker sent
/// for `port`, may go on. `None` when the caller holds a grant, or the
/// agent has just admitted it (then kept in `grants`); otherwise the
/// agent's refusal, to answer with.
pub(crate) async fn admitted(
    env: &Env,
    grants: &RefCell<Grants>,
    req: &Request,
    port: u16,
) -> Result<Option<Response>> {
    let header = |name: &str| req.headers().get(name).ok().flatten();
    let caller = Caller::from_headers(
        header(auth::ACTOR_HEADER).as_deref(),
        header(auth::SCOPES_HEADER).as_deref(),
        header(auth::EXPIRES_HEADER).as_deref(),
    );
    let known = caller != Caller::Anonymous;
    let key = caller.actor();
    let now_ms = Date::now().as_millis() as i64;
    if known && grants.borrow_mut().holds(&key, port, now_ms) {
        return Ok(None);
    }
    let epoch = grants.borrow().epoch();
    let (Some(agent), Some(url)) = (header(stead_sync::CONTAINER_HEADER), header(URL_HEADER))
    else {
        let error = stead_agent::ApiError::Internal("a port request without its agent".into());
        return crate::workspace::error_response(&error).map(Some);
    };
    let asked = Headers::new();
    for (name, value) in caller.headers() {
        asked.set(name, &value)?;
    }
    let mut init = RequestInit::new();
    init.with_method(req.method()).with_headers(asked);
    let answer = env
        .durable_object(crate::platform::WORKSPACE_BINDING)?
        .id_from_name(&agent)?
        .get_stub()?
        .fetch_with_request(Request::new_with_init(&url, &init)?)
        .await?;
    if answer.status_code() == 200 {
        if known {
            grants.borrow_mut().admitted(&key, port, epoch, now_ms);
        }
        return Ok(None);
    }
    let headers = Headers::new();
    for (name, value) in answer.headers().entries() {
        headers.append(&name, &value)?;
    }
    headers.set(REFUSED_HEADER, "1")?;
    Ok(Some(answer.with_headers(headers)))
}
