//! git's HTTPS credentials, one per host: write-only settings the Durable
//! Object adds to its own git requests.
//!
//! No per-agent secret store exists yet, so this is the fallback the git
//! issue names: `PUT /agents/{id}/settings {"git_credentials":{"github.com":
//! {"token":"..."}}}` stores a credential for a host (a `username` and
//! `password`, or a `token`, sent as git's own credential helpers send
//! one: HTTP Basic with the user `x-access-token`); a host set to `null`
//! loses its credential; hosts not named keep theirs. Nothing reads a
//! secret back: `GET /settings` and the audit log show only which hosts
//! have one and when it was set, and the secret never reaches the shell
//! (the light shell's git asks for a request without it, and the agent adds
//! `Authorization` when it makes the request, after the journal recorded
//! what git asked), so it is not in `.git/config`, in command output, in a
//! transcript or in any token.
//!
//! A request gets a credential only when its URL's host (and port, when
//! the credential names one) is the credential's, over `https`; over plain
//! `http` only where the workspace allows private targets (local
//! development), since the secret would cross the network in the clear.
//! Redirects are never followed, so a credential never goes on to where a
//! server points.

use std::collections::BTreeMap;
use std::fmt;

use base64::Engine;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use stead_sql::Sql;
use url::Url;

use crate::error::ApiError;
use crate::settings;

/// The settings row the credentials live in (apart from the settings
/// `GET /settings` shows whole).
const KEY: &str = "git_credentials";

/// Most hosts a workspace keeps credentials for.
pub const MAX_HOSTS: usize = 32;

/// Longest username and secret, bytes.
const MAX_USERNAME: usize = 256;
const MAX_SECRET: usize = 4096;

/// The user a bare token is sent as (GitHub's convention; GitLab accepts
/// any user with a personal access token).
pub const TOKEN_USER: &str = "x-access-token";

/// One host's credential as stored. Its `Debug` hides the secret.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Stored {
    username: String,
    password: String,
    /// When it was set, milliseconds since the Unix epoch.
    set_at: i64,
}

impl fmt::Debug for Stored {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Stored")
            .field("username", &self.username)
            .field("password", &"<hidden>")
            .field("set_at", &self.set_at)
            .finish()
    }
}

/// One host's entry in a `PUT`: a username and password, or a token.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Given {
    username: Option<String>,
    password: Option<String>,
    token: Option<String>,
}

/// A checked `git_credentials` section: each host named, with its new
/// (username, secret), or `None` to forget it.
pub struct Patch(Vec<(String, Option<(String, String)>)>);

impl fmt::Debug for Patch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hosts: Vec<&str> = self.0.iter().map(|(h, _)| h.as_str()).collect();
        f.debug_tuple("Patch").field(&hosts).finish()
    }
}

fn invalid(message: String) -> ApiError {
    ApiError::InvalidRequest(message)
}

/// A host as a credential names it, in the form requests are matched by:
/// lowercase, `name` or `name:port`, nothing else.
fn host_key(text: &str) -> Result<String, ApiError> {
    let refused = || {
        invalid(format!(
            "git_credentials: {text:?} is not a host name (a name or address, with an optional :port, no scheme or path)"
        ))
    };
    if text.is_empty() || text.contains(['/', '@', '?', '#', ' ', '\\']) {
        return Err(refused());
    }
    let url = Url::parse(&format!("https://{text}/")).map_err(|_| refused())?;
    let host = url.host_str().ok_or_else(refused)?;
    Ok(match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_string(),
    })
}

/// The key a request URL's credential would be stored under, if it is
/// one a credential may go to.
fn url_key(url: &Url) -> Option<String> {
    let host = url.host_str()?;
    Some(match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_string(),
    })
}

fn check_text(host: &str, field: &str, value: &str, max: usize) -> Result<(), ApiError> {
    if value.is_empty() || value.len() > max || value.chars().any(char::is_control) {
        return Err(invalid(format!(
            "git_credentials.{host}.{field} must be 1 to {max} bytes without control characters"
        )));
    }
    Ok(())
}

impl Given {
    /// (username, secret), checked.
    fn into_pair(self, host: &str) -> Result<(String, String), ApiError> {
        let (username, secret) = match (self.username, self.password, self.token) {
            (Some(username), Some(password), None) => (username, password),
            (None, None, Some(token)) => (TOKEN_USER.to_string(), token),
            _ => {
                return Err(invalid(format!(
                "git_credentials.{host} needs either \"username\" and \"password\", or \"token\""
            )))
            }
        };
        check_text(host, "username", &username, MAX_USERNAME)?;
        if username.contains(':') {
            return Err(invalid(format!(
                "git_credentials.{host}.username may not contain ':'"
            )));
        }
        check_text(host, "password", &secret, MAX_SECRET)?;
        Ok((username, secret))
    }
}

/// Checks a `git_credentials` section of a settings `PUT`.
pub fn parse(section: &Value) -> Result<Patch, ApiError> {
    let Value::Object(hosts) = section else {
        return Err(invalid(
            "git_credentials must be an object keyed by host".into(),
        ));
    };
    let mut patch = Vec::new();
    for (host, entry) in hosts {
        let key = host_key(host)?;
        let value = match entry {
            Value::Null => None,
            entry => {
                let given: Given = crate::decode::decode_value(entry)
                    .map_err(|e| invalid(format!("git_credentials.{host}: {e}")))?;
                Some(given.into_pair(host)?)
            }
        };
        patch.push((key, value));
    }
    Ok(Patch(patch))
}

fn load(db: &impl Sql) -> Result<BTreeMap<String, Stored>, ApiError> {
    settings::load(db, KEY)
}

/// Stores `patch` (inside the caller's transaction), as set at `now_ms`.
pub fn apply(db: &impl Sql, patch: &Patch, now_ms: i64) -> Result<(), ApiError> {
    let mut stored = load(db)?;
    for (host, value) in &patch.0 {
        match value {
            Some((username, password)) => {
                stored.insert(
                    host.clone(),
                    Stored {
                        username: username.clone(),
                        password: password.clone(),
                        set_at: now_ms,
                    },
                );
            }
            None => {
                stored.remove(host);
            }
        }
    }
    if stored.len() > MAX_HOSTS {
        return Err(invalid(format!(
            "git_credentials: at most {MAX_HOSTS} hosts"
        )));
    }
    settings::store(db, KEY, &stored)
}

/// What `GET /settings` shows: each host with a credential and when it
/// was set, never the credential.
pub fn shown(db: &impl Sql) -> Result<Value, ApiError> {
    let stored = load(db)?;
    Ok(Value::Object(
        stored
            .into_iter()
            .map(|(host, s)| (host, json!({ "set_at": s.set_at })))
            .collect(),
    ))
}

/// The `Authorization` header value for a request to `url`, when a
/// credential is stored for its host and may go there: over `https`, or
/// over `http` when `plain_http` (local development).
pub fn authorization(
    db: &impl Sql,
    url: &str,
    plain_http: bool,
) -> Result<Option<String>, ApiError> {
    let Ok(url) = Url::parse(url) else {
        return Ok(None);
    };
    let allowed = match url.scheme() {
        "https" => true,
        "http" => plain_http,
        _ => false,
    };
    let Some(key) = url_key(&url).filter(|_| allowed) else {
        return Ok(None);
    };
    let stored = load(db)?;
    Ok(stored.get(&key).map(|s| {
        let pair = format!("{}:{}", s.username, s.password);
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(pair)
        )
    }))
}

#[cfg(test)]
mod tests {
    use stead_sql::{migrate, SqliteDb, MIGRATIONS};

    use super::*;

    fn db() -> SqliteDb {
        let db = SqliteDb::memory().unwrap();
        migrate(&db, MIGRATIONS).unwrap();
        db
    }

    fn set(db: &SqliteDb, body: Value, now: i64) {
        apply(db, &parse(&body).unwrap(), now).unwrap();
    }

    #[test]
    fn a_credential_goes_to_its_host_only() {
        let db = db();
        set(
            &db,
            json!({"GitHub.com": {"token": "ghp_secret"}, "127.0.0.1:8080": {"username": "u", "password": "p"}}),
            5,
        );
        let basic = |pair: &str| {
            Some(format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(pair)
            ))
        };
        let auth = |url: &str, plain| authorization(&db, url, plain).unwrap();
        assert_eq!(
            auth("https://github.com/a/b.git/info/refs", false),
            basic("x-access-token:ghp_secret")
        );
        assert_eq!(
            auth("https://github.com:443/a/b", false),
            basic("x-access-token:ghp_secret"),
            "the default port is the host's"
        );
        assert_eq!(
            auth("https://github.com:8443/a", false),
            None,
            "another port"
        );
        assert_eq!(auth("https://gitlab.com/a", false), None, "another host");
        assert_eq!(auth("https://api.github.com/a", false), None, "a subdomain");
        assert_eq!(auth("http://github.com/a", false), None, "not in the clear");
        assert_eq!(auth("http://127.0.0.1:8080/r", true), basic("u:p"));
        assert_eq!(auth("http://127.0.0.1:8080/r", false), None);
        assert_eq!(
            auth("http://127.0.0.1/r", true),
            None,
            "the port is part of it"
        );
        assert_eq!(
            shown(&db).unwrap(),
            json!({"127.0.0.1:8080": {"set_at": 5}, "github.com": {"set_at": 5}})
        );
        // A host set to null forgets its credential; the others stay.
        set(&db, json!({"github.com": null}), 6);
        assert_eq!(auth("https://github.com/a", false), None);
        assert_eq!(
            shown(&db).unwrap(),
            json!({"127.0.0.1:8080": {"set_at": 5}})
        );
    }

    #[test]
    fn bad_credentials_are_refused_and_secrets_never_shown() {
        for bad in [
            json!(["github.com"]),
            json!({"https://github.com": {"token": "t"}}),
            json!({"github.com/x": {"token": "t"}}),
            json!({"u@github.com": {"token": "t"}}),
            json!({"github.com": {"password": "p"}}),
            json!({"github.com": {"username": "u", "password": "p", "token": "t"}}),
            json!({"github.com": {"token": ""}}),
            json!({"github.com": {"token": "a\nb"}}),
            json!({"github.com": {"username": "a:b", "password": "p"}}),
            json!({"github.com": {"token": "t", "scope": "x"}}),
        ] {
            assert!(parse(&bad).is_err(), "{bad}");
        }
        let patch = parse(&json!({"github.com": {"token": "ghp_secret"}})).unwrap();
        assert!(!format!("{patch:?}").contains("ghp_secret"));
        let db = db();
        apply(&db, &patch, 1).unwrap();
        let stored = load(&db).unwrap();
        assert!(!format!("{stored:?}").contains("ghp_secret"));
        assert!(!shown(&db).unwrap().to_string().contains("ghp_secret"));
    }
}
