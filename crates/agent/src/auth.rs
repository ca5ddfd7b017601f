//! Who is calling, and what they may do.
//!
//! Two kinds of credential, both `Authorization: Bearer ...`:
//!
//! - the **admin token** (the `API_TOKEN` secret): everything, on every
//!   agent, including minting tokens;
//! - **agent tokens** minted with it (`POST /tokens`): one agent, a set of
//!   [`Scope`]s, an expiry. A token is `stk_<payload>.<signature>`: the
//!   payload is base64url JSON [`Claims`], the signature hex
//!   HMAC-SHA256 over the payload keyed by the admin token. Checking one
//!   needs no storage, so the Worker refuses a bad, expired, foreign-agent or
//!   under-scoped token before any Durable Object wakes. Revocation before
//!   expiry is the agent's business: its Durable Object keeps revoked token
//!   ids (until they expire) and refuses them. Rotating `API_TOKEN` revokes
//!   every token at once.
//!
//! Comparisons of secrets are constant-time; no error names a secret.

use serde::{Deserialize, Serialize};
use stead_sql::{params, Sql, SqlError};

use crate::error::ApiError;
use crate::seal::{constant_time_eq, Seal};

/// What a token allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Scope {
    /// Read files, stat, list, search; read jobs, schedules, hooks.
    #[serde(rename = "read")]
    Read,
    /// Change files.
    #[serde(rename = "write")]
    Write,
    /// Run commands in the light shell.
    #[serde(rename = "exec:shell")]
    ExecShell,
    /// Run commands on the Linux computer.
    #[serde(rename = "exec:computer")]
    ExecComputer,
    /// Create, change and delete schedules and hooks.
    #[serde(rename = "schedule")]
    Schedule,
    /// Create and delete the agent, revoke its tokens, read its audit log.
    #[serde(rename = "admin")]
    Admin,
    /// Reach the ports of processes on the computer, and share them.
    #[serde(rename = "ports")]
    Ports,
}

impl Scope {
    /// The scope called `name` (as tokens and headers spell it).
    pub fn from_name(name: &str) -> Option<Scope> {
        [
            Scope::Read,
            Scope::Write,
            Scope::ExecShell,
            Scope::ExecComputer,
            Scope::Schedule,
            Scope::Admin,
            Scope::Ports,
        ]
        .into_iter()
        .find(|scope| scope.name() == name)
    }

    pub fn name(self) -> &'static str {
        match self {
            Scope::Read => "read",
            Scope::Write => "write",
            Scope::ExecShell => "exec:shell",
            Scope::ExecComputer => "exec:computer",
            Scope::Schedule => "schedule",
            Scope::Admin => "admin",
            Scope::Ports => "ports",
        }
    }
}

/// What an agent token says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Claims {
    /// Names the token for revocation and the audit log.
    pub id: String,
    pub agent: String,
    pub scopes: Vec<Scope>,
    /// Expiry, Unix seconds.
    pub exp: i64,
}

/// The caller, once authenticated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Principal {
    Admin,
    Token(Claims),
    /// A share link, which opens one port of one agent (see
    /// `crate::shares`).
    Share(crate::shares::ShareClaims),
}

/// An agent token: `stk_`, signed with no domain (the first kind).
const TOKEN: Seal = Seal {
    prefix: "stk_",
    domain: "",
};

/// Mints a token carrying `claims`, signed with the admin token `key`.
pub fn mint(key: &str, claims: &Claims) -> String {
    TOKEN.seal(key, claims)
}

/// The token of an `Authorization: Bearer` header: the scheme is
/// case-insensitive and one or more spaces follow it (RFC 9110 11.1 and
/// 11.4, RFC 6750 2.1).
fn bearer_token(header: &str) -> Option<&str> {
    let (scheme, rest) = header.split_once(' ')?;
    let token = rest.trim_start_matches(' ');
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// Authenticates an `Authorization` header against the admin token.
pub fn authenticate(
    header: Option<&str>,
    admin_token: Option<&str>,
    now_s: i64,
) -> Result<Principal, ApiError> {
    let admin = admin_token
        .filter(|t| !t.is_empty())
        .ok_or(ApiError::NotConfigured)?;
    let presented = header
        .and_then(bearer_token)
        .ok_or(ApiError::Unauthorized)?;
    if constant_time_eq(presented.as_bytes(), admin.as_bytes()) {
        return Ok(Principal::Admin);
    }
    let claims: Claims = TOKEN.open(admin, presented).ok_or(ApiError::InvalidToken)?;
    if claims.exp <= now_s {
        return Err(ApiError::TokenExpired);
    }
    Ok(Principal::Token(claims))
}

/// Headers on which the Worker tells the agent who is calling. The Worker
/// removes any a client sent; the agent's Durable Object is reachable only
/// through the Worker.
pub const ACTOR_HEADER: &str = "x-stead-actor";
pub const SCOPES_HEADER: &str = "x-stead-scopes";
/// An agent token's expiry (Unix seconds), so that whatever outlives the
/// request that opened it (a WebSocket, an MCP stream) ends with it.
pub const EXPIRES_HEADER: &str = "x-stead-token-expires";

/// The caller as the agent sees it (and as a WebSocket remembers it in its
/// attachment).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(try_from = "CallerWire", into = "CallerWire")]
pub enum Caller {
    /// The admin token: every scope.
    Admin,
    /// An agent token, by id, with its scopes and its expiry (Unix
    /// seconds).
    Token {
        id: String,
        scopes: Vec<Scope>,
        expires: i64,
    },
    /// A share link, by id: it opens only its port, which the agent checks
    /// with its revocation.
    Share { id: String },
    /// No bearer credential (a hook call, whose secret the agent checks).
    #[default]
    Anonymous,
}

/// How a caller travels: `actor` is `admin`, `token:<id>` or `anonymous`;
/// `scopes` is `None` for every scope.
#[derive(Serialize, Deserialize)]
struct CallerWire {
    actor: String,
    scopes: Option<Vec<Scope>>,
    /// A token's expiry. One without it (a socket opened before the
    /// expiry travelled) is taken as expired: refused, never trusted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    expires: Option<i64>,
}

impl From<Caller> for CallerWire {
    fn from(caller: Caller) -> Self {
        let actor = caller.actor();
        let (scopes, expires) = match caller {
            Caller::Admin => (None, None),
            Caller::Token {
                scopes, expires, ..
            } => (Some(scopes), Some(expires)),
            Caller::Share { .. } | Caller::Anonymous => (Some(Vec::new()), None),
        };
        CallerWire {
            actor,
            scopes,
            expires,
        }
    }
}

impl TryFrom<CallerWire> for Caller {
    type Error = String;

    fn try_from(wire: CallerWire) -> Result<Self, String> {
        match (wire.actor.as_str(), wire.scopes) {
            ("admin", None) => Ok(Caller::Admin),
            ("anonymous", _) => Ok(Caller::Anonymous),
            (actor, Some(scopes)) if actor.starts_with("share:") && scopes.is_empty() => {
                match actor.strip_prefix("share:") {
                    Some(id) if !id.is_empty() => Ok(Caller::Share { id: id.to_string() }),
                    _ => Err(format!("unknown actor {actor:?}")),
                }
            }
            (actor, Some(scopes)) => match actor.strip_prefix("token:") {
                Some(id) if !id.is_empty() => Ok(Caller::Token {
                    id: id.to_string(),
                    scopes,
                    expires: wire.expires.unwrap_or(0),
                }),
                _ => Err(format!("unknown actor {actor:?}")),
            },
            (actor, None) => Err(format!("actor {actor:?} cannot hold every scope")),
        }
    }
}

impl Caller {
    pub fn of(principal: Option<&Principal>) -> Caller {
        match principal {
            Some(Principal::Admin) => Caller::Admin,
            Some(Principal::Token(claims)) => Caller::Token {
                id: claims.id.clone(),
                scopes: claims.scopes.clone(),
                expires: claims.exp,
            },
            Some(Principal::Share(claims)) => Caller::Share {
                id: claims.id.clone(),
            },
            None => Caller::Anonymous,
        }
    }

    /// The name the audit log records: `admin`, `token:<id>`,
    /// `share:<id>`, `anonymous`.
    pub fn actor(&self) -> String {
        match self {
            Caller::Admin => "admin".into(),
            Caller::Token { id, .. } => format!("token:{id}"),
            Caller::Share { id } => format!("share:{id}"),
            Caller::Anonymous => "anonymous".into(),
        }
    }

    /// The header values to forward.
    pub fn headers(&self) -> [(&'static str, String); 3] {
        let scopes = match self {
            Caller::Admin => "*".to_string(),
            Caller::Token { scopes, .. } => scopes
                .iter()
                .map(|s| s.name())
                .collect::<Vec<_>>()
                .join(","),
            Caller::Share { .. } | Caller::Anonymous => String::new(),
        };
        let expires = match self {
            Caller::Token { expires, .. } => expires.to_string(),
            Caller::Admin | Caller::Share { .. } | Caller::Anonymous => String::new(),
        };
        [
            (ACTOR_HEADER, self.actor()),
            (SCOPES_HEADER, scopes),
            (EXPIRES_HEADER, expires),
        ]
    }

    /// Reads forwarded headers; anything malformed is an anonymous caller
    /// (and a token whose expiry is missing, an expired one).
    pub fn from_headers(
        actor: Option<&str>,
        scopes: Option<&str>,
        expires: Option<&str>,
    ) -> Caller {
        let (Some(actor), Some(scopes)) = (actor, scopes) else {
            return Caller::Anonymous;
        };
        let scopes = if scopes == "*" {
            None
        } else {
            let parsed: Option<Vec<Scope>> = scopes
                .split(',')
                .filter(|s| !s.is_empty())
                .map(Scope::from_name)
                .collect();
            match parsed {
                Some(list) => Some(list),
                None => return Caller::Anonymous,
            }
        };
        Caller::try_from(CallerWire {
            actor: actor.to_string(),
            scopes,
            expires: expires.and_then(|e| e.parse().ok()),
        })
        .unwrap_or(Caller::Anonymous)
    }

    /// Refuses a token past its expiry at `now_s` (Unix seconds). The
    /// Worker checks it for each request; a WebSocket or an MCP stream
    /// outlives that check, so the agent asks again for every message and
    /// everything it pushes.
    pub fn check_expiry(&self, now_s: i64) -> Result<(), ApiError> {
        match self {
            Caller::Token { expires, .. } if now_s >= *expires => Err(ApiError::TokenExpired),
            _ => Ok(()),
        }
    }

    /// The id of the caller's token, if it used one.
    pub fn token_id(&self) -> Option<&str> {
        match self {
            Caller::Token { id, .. } => Some(id),
            Caller::Admin | Caller::Share { .. } | Caller::Anonymous => None,
        }
    }

    /// Checks the caller holds `scope`.
    pub fn require(&self, scope: Scope) -> Result<(), ApiError> {
        match self {
            Caller::Admin => Ok(()),
            Caller::Token { scopes, .. } if scopes.contains(&scope) => Ok(()),
            Caller::Token { .. } => Err(ApiError::Forbidden {
                reason: format!("the token lacks the {:?} scope", scope.name()),
            }),
            Caller::Share { .. } => Err(ApiError::Forbidden {
                reason: "a share link opens only its port".into(),
            }),
            Caller::Anonymous => Err(ApiError::Unauthorized),
        }
    }
}

/// `POST /tokens`: what to mint.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MintRequest {
    pub agent: String,
    pub scopes: Vec<Scope>,
    /// Lifetime in seconds (default an hour, at most 90 days).
    pub ttl_seconds: Option<i64>,
}

/// Longest token lifetime.
pub const MAX_TTL_SECONDS: i64 = 90 * 24 * 3600;

impl MintRequest {
    /// The claims of the token to mint, with id `id`, at `now_s`.
    pub fn claims(self, id: String, now_s: i64) -> Result<Claims, ApiError> {
        if !crate::route::valid_agent_id(&self.agent) {
            return Err(ApiError::InvalidAgentId { id: self.agent });
        }
        if self.scopes.is_empty() {
            return Err(ApiError::InvalidRequest("scopes must not be empty".into()));
        }
        let ttl = crate::decode::within(
            "ttl_seconds",
            self.ttl_seconds.unwrap_or(3600),
            1,
            MAX_TTL_SECONDS,
        )?;
        let mut scopes = self.scopes;
        scopes.sort();
        scopes.dedup();
        Ok(Claims {
            id,
            agent: self.agent,
            scopes,
            exp: now_s + ttl,
        })
    }
}

/// Records on the agent that token `id` (expiring at `exp`) is revoked;
/// entries past their expiry are dropped on the way, as the token would be
/// refused anyway.
pub fn revoke(db: &impl Sql, id: &str, exp: i64, now_s: i64) -> Result<(), SqlError> {
    db.execute("DELETE FROM revoked_tokens WHERE exp <= ?", params![now_s])?;
    db.execute(
        "INSERT INTO revoked_tokens (id, exp) VALUES (?, ?) ON CONFLICT (id) DO NOTHING",
        params![id, exp],
    )?;
    Ok(())
}

/// What an agent knows of one of its tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// The agent revoked it.
    Revoked,
    /// Its mint is in the agent's ledger (`crate::minted`).
    Recorded,
    /// Neither, on an agent never deleted: minted before the agent kept a
    /// ledger.
    Unrecorded,
    /// Neither, on an agent deleted and made again (`crate::tombstone`),
    /// whose ledger began empty: minted for the agent before it.
    Predecessors,
}

/// The standing of token `id` with the agent, in one statement (the last
/// column: whether `crate::tombstone`'s record is there).
pub fn standing(db: &impl Sql, id: &str) -> Result<Standing, SqlError> {
    let row = db.query_row(
        "SELECT EXISTS (SELECT 1 FROM revoked_tokens WHERE id = ?1), \
         EXISTS (SELECT 1 FROM minted_tokens WHERE id = ?1), \
         EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'agent_tombstone')",
        params![id],
    )?;
    let known = |column| -> Result<bool, SqlError> {
        Ok(match &row {
            Some(row) => row.int(column)? != 0,
            None => false,
        })
    };
    Ok(match (known(0)?, known(1)?, known(2)?) {
        (true, _, _) => Standing::Revoked,
        (false, true, _) => Standing::Recorded,
        (false, false, false) => Standing::Unrecorded,
        (false, false, true) => Standing::Predecessors,
    })
}

/// `POST /tokens/revoke` and `POST /agents/{id}/tokens/revoke`: which
/// token. `agent` is the token's agent: required at `/tokens/revoke` (it
/// says which agent keeps the revocation), and on an agent's route, if
/// given, it must be that agent.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RevokeRequest {
    /// The token's id (`id` in the answer of `POST /tokens`).
    pub id: String,
    /// The token's agent.
    pub agent: Option<String>,
}

impl RevokeRequest {
    /// The agent whose token this is, for `POST /tokens/revoke`.
    pub fn agent(&self) -> Result<&str, ApiError> {
        let agent = self.agent.as_deref().ok_or_else(|| {
            ApiError::InvalidRequest(
                "name the token's agent: {\"agent\": \"<agent id>\", \"id\": \"<token id>\"}"
                    .into(),
            )
        })?;
        if !crate::route::valid_agent_id(agent) {
            return Err(ApiError::InvalidAgentId { id: agent.into() });
        }
        Ok(agent)
    }

    /// Checks the request is for agent `agent` (when it names one).
    pub fn check_agent(&self, agent: &str) -> Result<(), ApiError> {
        match self.agent.as_deref() {
            Some(named) if named != agent => Err(ApiError::InvalidRequest(format!(
                "agent {named:?} in the body differs from {agent:?} in the path"
            ))),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    const KEY: &str = "admin-secret";

    /// Claims of token `t1` for agent `alice`.
    pub(crate) fn claims(scopes: &[Scope], exp: i64) -> Claims {
        Claims {
            id: "t1".into(),
            agent: "alice".into(),
            scopes: scopes.to_vec(),
            exp,
        }
    }

    fn auth(token: &str, now: i64) -> Result<Principal, ApiError> {
        authenticate(Some(&format!("Bearer {token}")), Some(KEY), now)
    }

    #[test]
    fn admin_and_minted_tokens_authenticate() {
        assert_eq!(auth(KEY, 0).unwrap(), Principal::Admin);
        let token = mint(KEY, &claims(&[Scope::Read], 100));
        assert_eq!(
            auth(&token, 99).unwrap(),
            Principal::Token(claims(&[Scope::Read], 100))
        );
        assert!(matches!(auth(&token, 100), Err(ApiError::TokenExpired)));
        assert!(matches!(
            authenticate(Some(&format!("Bearer {token}")), Some("other key"), 0),
            Err(ApiError::InvalidToken)
        ));
        assert!(matches!(
            authenticate(None, None, 0),
            Err(ApiError::NotConfigured)
        ));
    }

    #[test]
    fn tampered_tokens_are_refused() {
        let token = mint(KEY, &claims(&[Scope::Read], 100));
        let (payload, signature) = token.split_once('.').unwrap();
        // Granting oneself more scopes breaks the signature.
        let forged = base64::Engine::encode(
            &base64::engine::general_purpose::URL_SAFE_NO_PAD,
            serde_json::to_vec(&claims(&[Scope::Read, Scope::Admin], 100)).unwrap(),
        );
        for bad in [
            format!("stk_{forged}.{signature}"),
            format!("{payload}.{}", &signature[1..]),
            format!("{payload}x.{signature}"),
            "stk_".to_string(),
            "stk_.".to_string(),
            token.replace("stk_", "xyz_"),
        ] {
            assert!(
                matches!(auth(&bad, 0), Err(ApiError::InvalidToken)),
                "{bad}"
            );
        }
    }

    #[test]
    fn callers_travel_in_headers() {
        for principal in [
            Some(Principal::Admin),
            Some(Principal::Token(claims(
                &[Scope::Read, Scope::ExecShell],
                9,
            ))),
            None,
        ] {
            let caller = Caller::of(principal.as_ref());
            let [(_, actor), (_, scopes), (_, expires)] = caller.headers();
            assert_eq!(
                Caller::from_headers(Some(&actor), Some(&scopes), Some(&expires)),
                caller
            );
        }
        let reader = Caller::from_headers(Some("token:t1"), Some("read"), Some("100"));
        reader.check_expiry(99).unwrap();
        assert!(matches!(
            reader.check_expiry(100),
            Err(ApiError::TokenExpired)
        ));
        // A token whose expiry did not travel is expired, never endless.
        let undated = Caller::from_headers(Some("token:t1"), Some("read"), None);
        assert!(matches!(
            undated.check_expiry(0),
            Err(ApiError::TokenExpired)
        ));
        assert_eq!(reader.token_id(), Some("t1"));
        reader.require(Scope::Read).unwrap();
        assert!(matches!(
            reader.require(Scope::ExecComputer),
            Err(ApiError::Forbidden { .. })
        ));
        let nobody = Caller::from_headers(None, Some("*"), None);
        assert!(matches!(
            nobody.require(Scope::Read),
            Err(ApiError::Unauthorized)
        ));
        let garbled = Caller::from_headers(Some("admin"), Some("read,root"), None);
        assert_eq!(garbled, Caller::Anonymous);
        // Only the admin may hold every scope.
        assert_eq!(
            Caller::from_headers(Some("token:t1"), Some("*"), None),
            Caller::Anonymous
        );
        let stored = serde_json::to_value(&reader).unwrap();
        assert_eq!(
            stored,
            serde_json::json!({ "actor": "token:t1", "scopes": ["read"], "expires": 100 })
        );
        assert_eq!(serde_json::from_value::<Caller>(stored).unwrap(), reader);
    }

    #[test]
    fn authorization_headers_are_checked() {
        let token = Some("s3cret");
        let authorize = |header, token| authenticate(header, token, 0);
        // The scheme in any case, then one or more spaces (RFC 9110 11.1).
        for header in [
            "Bearer s3cret",
            "bearer s3cret",
            "BEARER s3cret",
            "Bearer   s3cret",
        ] {
            assert_eq!(
                authorize(Some(header), token).unwrap(),
                Principal::Admin,
                "{header}"
            );
        }
        for header in [
            None,
            Some("Bearer s3cre"),
            Some("Bearers3cret"),
            Some("Basic s3cret"),
            Some("s3cret"),
            Some("Bearer "),
            Some("Bearer s3cret "),
        ] {
            assert_eq!(
                authorize(header, token).unwrap_err().status(),
                401,
                "{header:?}"
            );
        }
        // No configured token: refuse everything rather than run open.
        assert_eq!(
            authorize(Some("Bearer "), None).unwrap_err().code(),
            "NOT_CONFIGURED"
        );
        assert_eq!(
            authorize(Some("Bearer x"), Some("")).unwrap_err().code(),
            "NOT_CONFIGURED"
        );
    }

    #[test]
    fn revoked_ids_are_kept_until_they_expire() {
        let db = stead_sql::SqliteDb::memory().unwrap();
        stead_sql::migrate(&db, stead_sql::MIGRATIONS).unwrap();
        let revoked = |id: &str| standing(&db, id).unwrap() == Standing::Revoked;
        revoke(&db, "old", 50, 10).unwrap();
        revoke(&db, "new", 500, 10).unwrap();
        assert!(revoked("old") && revoked("new"));
        assert_eq!(standing(&db, "other").unwrap(), Standing::Unrecorded);
        revoke(&db, "third", 900, 100).unwrap();
        assert!(!revoked("old"), "expired entries go");
        assert!(revoked("new"));
    }

    #[test]
    fn mint_requests_are_checked() {
        let request = |json: &str| serde_json::from_str::<MintRequest>(json).unwrap();
        let claims = request(r#"{"agent":"a","scopes":["write","read","read"]}"#)
            .claims("id".into(), 10)
            .unwrap();
        assert_eq!(claims.scopes, vec![Scope::Read, Scope::Write]);
        assert_eq!(claims.exp, 3610);
        assert!(request(r#"{"agent":"a","scopes":[]}"#)
            .claims("id".into(), 0)
            .is_err());
        assert!(request(r#"{"agent":"a b","scopes":["read"]}"#)
            .claims("id".into(), 0)
            .is_err());
        let error = request(r#"{"agent":"a","scopes":["read"],"ttl_seconds":0}"#)
            .claims("id".into(), 0)
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            format!("invalid request: ttl_seconds must be between 1 and {MAX_TTL_SECONDS} (got 0)"),
            "the bound in words, as every bound is"
        );
        assert!(serde_json::from_str::<MintRequest>(r#"{"agent":"a","scopes":["root"]}"#).is_err());
    }
}
