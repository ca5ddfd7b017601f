//! What the MCP endpoint answers before any JSON-RPC method is served, in
//! the Worker (before the agent wakes) and in the agent alike: origins and
//! CORS, refused credentials, and HTTP methods it does not serve.
//!
//! - **Origins.** A request whose `Origin` is not listed in
//!   `MCP_ALLOWED_ORIGINS` is refused with `403`, as both revisions ask
//!   against DNS rebinding. The endpoint's own origin is not admitted
//!   unless listed: it is read from the request's `Host`, which is just
//!   what a rebinding page controls (its `Origin` and the `Host` it sends
//!   name the same attacker's host), so only configuration can say which
//!   origins are trusted. A request without `Origin` (not a browser's
//!   cross-origin one: an MCP client, `curl`) is not refused by this check.
//!   A browser page on a listed origin
//!   first sends a CORS preflight (`OPTIONS`, without a credential, as
//!   browsers do): it is answered `204` with the methods and headers the
//!   transport uses, and every answer to that origin carries
//!   `Access-Control-Allow-Origin` (and exposes `Mcp-Session-Id`), so the
//!   page can read it. A preflight from any other origin is `403` without
//!   CORS headers, so the browser stops there.
//! - **Refused credentials** (a missing, malformed, expired or revoked
//!   token: `401`; a token without the scope or for another agent: `403`)
//!   are JSON-RPC errors (`-32600`, the API's error object as `data`, the
//!   request's id when its body could be read) with an RFC 6750 challenge:
//!   `WWW-Authenticate: Bearer` alone when no credential came, else
//!   `error="invalid_token"` (401) or `error="insufficient_scope"` (403) and
//!   an `error_description`. A client then shows why, and an OAuth-capable
//!   client sees no authorization server to look for (no `resource_metadata`;
//!   `/.well-known/*` answers `404`, see the README).
//! - **Methods.** `GET`, `POST`, `DELETE` (and `OPTIONS`); anything else is
//!   `405` with `Allow`.

use crate::auth::Caller;
use crate::error::ApiError;
use crate::mcp::jsonrpc::{self, RpcError, INTERNAL_ERROR, INVALID_REQUEST};
use crate::mcp::reply::{McpBody, McpReply};
use crate::route::{route, Action, Route};

/// The methods the endpoint serves, for `Allow` and preflights.
pub const ALLOWED_METHODS: &str = "GET, POST, DELETE, OPTIONS";
/// The request headers a browser client may send (CORS preflight).
const ALLOWED_HEADERS: &str = "Authorization, Content-Type, Accept, Mcp-Session-Id, \
MCP-Protocol-Version, Last-Event-ID, Mcp-Method, Mcp-Name";
/// The response headers a browser client may read.
const EXPOSED_HEADERS: &str = "Mcp-Session-Id, WWW-Authenticate";
/// How long a browser may keep a preflight's answer, seconds.
const PREFLIGHT_MAX_AGE_S: u32 = 600;

/// The body of a refused request read for its id, at most (the rest of a
/// larger body is not waited for).
pub const ID_PROBE_BYTES: usize = 64 * 1024;

/// Whether `path` is an agent's MCP endpoint.
pub fn is_endpoint(path: &str) -> bool {
    matches!(
        route("POST", path),
        Ok(Route::Agent {
            action: Action::Mcp,
            ..
        })
    )
}

/// The origins that may call the endpoint: those listed (comma-separated)
/// in `MCP_ALLOWED_ORIGINS`; and the endpoint's own, which links it makes
/// are built on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origins {
    own: String,
    listed: Vec<String>,
}

impl Origins {
    /// `own` (`https://host[:port]`) and the variable's value, if set.
    pub fn new(own: impl Into<String>, listed: Option<&str>) -> Origins {
        Origins {
            own: own.into(),
            listed: listed
                .unwrap_or_default()
                .split(',')
                .map(|origin| origin.trim().to_string())
                .filter(|origin| !origin.is_empty())
                .collect(),
        }
    }

    /// The endpoint's own origin, as the request named it: what links it
    /// hands out are built on, never a reason to trust a caller.
    pub fn own(&self) -> &str {
        &self.own
    }

    /// Whether a request from `origin` may be served: only a configured
    /// origin is (see the module docs).
    pub fn admits(&self, origin: &str) -> bool {
        self.listed.iter().any(|o| o == origin)
    }

    /// The refusal of a request whose `Origin` is not admitted, if it is
    /// one.
    pub fn refusal<S>(&self, origin: Option<&str>) -> Option<McpReply<S>> {
        let origin = origin.filter(|origin| !self.admits(origin))?;
        let error = RpcError::new(
            INVALID_REQUEST,
            format!("Forbidden: origin {origin} may not call this server; list it in MCP_ALLOWED_ORIGINS"),
        )
        .status(403);
        Some(McpReply::error(&error, None))
    }

    /// `reply` with the CORS headers for `origin` when it is admitted (a
    /// request without `Origin` is not a browser's cross-origin one).
    pub fn cors<S>(&self, reply: McpReply<S>, origin: Option<&str>) -> McpReply<S> {
        match origin.filter(|origin| self.admits(origin)) {
            Some(origin) => reply
                .header("access-control-allow-origin", origin)
                .header("access-control-expose-headers", EXPOSED_HEADERS)
                .header("vary", "Origin"),
            None => reply,
        }
    }

    /// The answer to `OPTIONS` from `origin`: a CORS preflight when it
    /// comes from a page (allowed or refused), else the methods served.
    pub fn preflight<S>(&self, origin: Option<&str>) -> McpReply<S> {
        let Some(origin) = origin else {
            return McpReply::new(204, McpBody::Empty).header("allow", ALLOWED_METHODS);
        };
        if let Some(refused) = self.refusal(Some(origin)) {
            return refused;
        }
        let reply = McpReply::new(204, McpBody::Empty)
            .header("access-control-allow-methods", ALLOWED_METHODS)
            .header("access-control-allow-headers", ALLOWED_HEADERS)
            .header("access-control-max-age", PREFLIGHT_MAX_AGE_S.to_string());
        self.cors(reply, Some(origin))
    }
}

/// The answer to a method the endpoint does not serve.
pub fn method_not_allowed<S>(method: &str) -> McpReply<S> {
    let error = RpcError::invalid_request(format!(
        "Method Not Allowed: the MCP endpoint serves {ALLOWED_METHODS}, not {method}"
    ))
    .status(405);
    McpReply::error(&error, None).header("allow", ALLOWED_METHODS)
}

/// A refused credential as a JSON-RPC error: `-32600` with the API's error
/// object as `data`, the challenge attached. A check that could not be made
/// (the service has no `API_TOKEN`, storage failed) is no refusal of the
/// credential: `-32603`, without a challenge.
pub fn refusal(error: &ApiError, presented: bool) -> RpcError {
    let refused = RpcError::new(INVALID_REQUEST, error.public_message())
        .data(error.body())
        .status(error.status());
    match error.status() {
        401 | 403 => refused.challenge(error.challenge(presented)),
        _ => RpcError {
            code: INTERNAL_ERROR,
            ..refused
        },
    }
}

/// The answer to a request whose credential was refused with `error`;
/// `body`: as much of the request's body as was read (for its id).
pub fn refused<S>(error: &ApiError, presented: bool, body: &[u8]) -> McpReply<S> {
    let id = jsonrpc::id_of(body);
    McpReply::error(&refusal(error, presented), id.as_ref())
}

/// Whether `caller` presented a credential at all.
pub fn presented(caller: &Caller) -> bool {
    !matches!(caller, Caller::Anonymous)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    /// The JSON-RPC id an unparsed body carries.
    fn id(body: &str) -> Value {
        jsonrpc::id_of(body.as_bytes()).unwrap_or(Value::Null)
    }

    type Reply = McpReply<()>;

    fn header<'a>(reply: &'a Reply, name: &str) -> Option<&'a str> {
        reply
            .headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn origins() -> Origins {
        Origins::new(
            "https://stead.test",
            Some(" https://app.test , ,https://b.test"),
        )
    }

    #[test]
    fn a_preflight_from_an_allowed_origin_gets_the_cors_headers() {
        let reply: Reply = origins().preflight(Some("https://app.test"));
        assert_eq!(reply.status, 204);
        assert_eq!(
            header(&reply, "access-control-allow-origin"),
            Some("https://app.test")
        );
        assert_eq!(header(&reply, "vary"), Some("Origin"));
        let methods = header(&reply, "access-control-allow-methods").unwrap();
        for method in ["GET", "POST", "DELETE"] {
            assert!(methods.contains(method), "{methods}");
        }
        let headers = header(&reply, "access-control-allow-headers")
            .unwrap()
            .to_ascii_lowercase();
        for name in [
            "authorization",
            "content-type",
            "mcp-session-id",
            "mcp-protocol-version",
            "last-event-id",
        ] {
            assert!(headers.contains(name), "{headers}");
        }
        assert!(header(&reply, "access-control-expose-headers")
            .unwrap()
            .contains("Mcp-Session-Id"));
    }

    /// DNS rebinding: a page on an attacker's host that resolves to the
    /// Worker sends `Origin` and `Host` naming that host, so "the endpoint's
    /// own origin" (read from `Host`) is the attacker's; only the listed
    /// origins are trusted, the own one too only when listed.
    #[test]
    fn an_origin_matching_the_host_passes_only_when_configured() {
        let rebound = Origins::new("http://rebound.test:8787", None);
        let refused: Option<Reply> = rebound.refusal(Some("http://rebound.test:8787"));
        assert_eq!(refused.map(|r| r.status), Some(403));
        let refused: Reply = rebound.preflight(Some("http://rebound.test:8787"));
        assert_eq!(refused.status, 403);
        assert!(!origins().admits("https://stead.test"));
        let listed = Origins::new("https://stead.test", Some("https://stead.test"));
        assert!(listed.admits("https://stead.test"));
        assert!(
            rebound.refusal::<()>(None).is_none(),
            "no Origin: not a page"
        );
    }

    #[test]
    fn a_preflight_from_another_origin_is_refused_without_cors_headers() {
        let reply: Reply = origins().preflight(Some("https://evil.test"));
        assert_eq!(reply.status, 403);
        assert!(reply
            .headers
            .iter()
            .all(|(name, _)| !name.starts_with("access-control-")));
        let plain: Reply = origins().preflight(None);
        assert_eq!(
            (plain.status, header(&plain, "allow")),
            (204, Some(ALLOWED_METHODS))
        );
        let answered: Reply = origins().cors(McpReply::new(200, McpBody::Empty), None);
        assert!(answered.headers.is_empty());
    }

    #[test]
    fn refused_credentials_carry_a_bearer_challenge_and_the_request_id() {
        let reply: Reply = refused(
            &ApiError::TokenExpired,
            true,
            br#"{"jsonrpc":"2.0","id":"r1","method":"tools/list"}"#,
        );
        assert_eq!(reply.status, 401);
        let McpBody::Json(body) = &reply.body else {
            panic!("a JSON body")
        };
        assert_eq!(body["id"], "r1");
        assert_eq!(body["error"]["code"], -32600);
        assert_eq!(body["error"]["data"]["error"]["code"], "TOKEN_EXPIRED");
        let challenge = header(&reply, "www-authenticate").unwrap();
        assert!(
            challenge.starts_with("Bearer error=\"invalid_token\", error_description=\""),
            "{challenge}"
        );
        let forbidden = ApiError::Forbidden {
            reason: "the token is for agent \"b\"".into(),
        };
        let scope = forbidden.challenge(true);
        assert!(
            scope.starts_with("Bearer error=\"insufficient_scope\", error_description=\"")
                && scope.ends_with("agent 'b'\""),
            "{scope}"
        );
        assert_eq!(ApiError::Unauthorized.challenge(false), "Bearer");
        let unconfigured: Reply = refused(&ApiError::NotConfigured, true, b"");
        assert_eq!(unconfigured.status, 503);
        assert!(header(&unconfigured, "www-authenticate").is_none());
        let McpBody::Json(body) = &unconfigured.body else {
            panic!("a JSON body")
        };
        assert_eq!(body["error"]["code"], -32603);
        assert_eq!(id("{nope"), Value::Null);
        assert_eq!(id(r#"{"id":{}}"#), Value::Null);
        assert_eq!(id(r#"{"id":7}"#), json!(7));
    }

    #[test]
    fn only_the_endpoint_is_the_endpoint() {
        assert!(is_endpoint("/agents/a/mcp"));
        assert!(!is_endpoint("/agents/a/read"));
        assert!(!is_endpoint("/.well-known/oauth-protected-resource"));
        let reply: Reply = method_not_allowed("PUT");
        assert_eq!(
            (reply.status, header(&reply, "allow")),
            (405, Some(ALLOWED_METHODS))
        );
    }
}
