//! git's HTTPS credentials, one per host: a view of the secret store
//! (`crate::secrets`) kept for the settings section that came first.
//!
//! `PUT /agents/{id}/settings {"git_credentials":{"github.com":
//! {"token":"..."}}}` stores a credential for a host (a `username` and
//! `password`, or a `token`, sent as git's own credential helpers send
//! one: HTTP Basic with the user `x-access-token`) as the secret
//! `git:<host>`, bound to that host and sent as Basic; a host set to `null`
//! loses it; hosts not named keep theirs. `GET /settings` shows which hosts
//! have one and when it was set. What the store promises holds for them:
//! nothing reads one back, and the Durable Object adds it to its own git
//! requests as they leave (`crate::shell_net`), so it is not in
//! `.git/config`, in command output, in a transcript or in any token.
//!
//! Before the store existed these were a settings row; migration 0020
//! moved each into the store under the same name scheme.

use serde::Deserialize;
use serde_json::{json, Value};
use stead_sql::Sql;
use url::Url;

use crate::egress::HostPattern;
use crate::error::ApiError;
use crate::secrets::{self, Header, NewSecret};

/// The names of git's credentials in the secret store: `git:<host>`.
const PREFIX: &str = "git:";

/// Most hosts a workspace keeps credentials for.
pub const MAX_HOSTS: usize = 32;

/// The user a bare token is sent as (GitHub's convention; GitLab accepts
/// any user with a personal access token).
pub const TOKEN_USER: &str = "x-access-token";

/// One host's entry in a `PUT`: a username and password, or a token.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Given {
    username: Option<String>,
    password: Option<String>,
    token: Option<String>,
}

/// A checked `git_credentials` section: each host named, with its new
/// secret, or `None` to forget it. Its `Debug` hides the secrets.
#[derive(Debug)]
pub struct Patch(Vec<(String, Option<NewSecret>)>);

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

impl Given {
    /// The secret for `key` (`host` names it as given), checked.
    fn into_secret(self, host: &str, key: &str) -> Result<NewSecret, ApiError> {
        let (username, secret) = match (self.username, self.password, self.token) {
            (Some(username), Some(password), None) => (username, password),
            (None, None, Some(token)) => (TOKEN_USER.to_string(), token),
            _ => {
                return Err(invalid(format!(
                "git_credentials.{host} needs either \"username\" and \"password\", or \"token\""
            )))
            }
        };
        NewSecret::new(
            &format!("git_credentials.{host}"),
            vec![HostPattern::parse(key)?],
            Header::Basic { username },
            secret,
        )
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
                Some(given.into_secret(host, &key)?)
            }
        };
        patch.push((key, value));
    }
    Ok(Patch(patch))
}

/// The name of `host`'s credential in the secret store.
fn secret_name(host: &str) -> String {
    format!("{PREFIX}{host}")
}

/// Stores `patch` (inside the caller's transaction), as set at `now_ms`.
pub fn apply(db: &impl Sql, patch: &Patch, now_ms: i64) -> Result<(), ApiError> {
    for (host, value) in &patch.0 {
        let name = secret_name(host);
        match value {
            Some(secret) => secrets::set(db, &name, secret, now_ms)?,
            None => secrets::remove(db, &name)?,
        }
    }
    if secrets::list(db, PREFIX)?.len() > MAX_HOSTS {
        return Err(invalid(format!(
            "git_credentials: at most {MAX_HOSTS} hosts"
        )));
    }
    secrets::check_count(db)
}

/// What `GET /settings` shows: each host with a credential and when it
/// was set, never the credential.
pub fn shown(db: &impl Sql) -> Result<Value, ApiError> {
    Ok(Value::Object(
        secrets::list(db, PREFIX)?
            .into_iter()
            .map(|s| {
                let host = s.name[PREFIX.len()..].to_string();
                (host, json!({ "set_at": s.set_at }))
            })
            .collect(),
    ))
}

#[cfg(test)]
mod tests {
    use base64::Engine;
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
        let auth = |url: &str, plain| {
            secrets::for_request(&db, url, plain)
                .unwrap()
                .map(|used| used.authorization)
        };
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
        assert!(!shown(&db).unwrap().to_string().contains("ghp_secret"));
        assert!(!secrets::shown(&db)
            .unwrap()
            .to_string()
            .contains("ghp_secret"));
    }

    #[test]
    fn credentials_stored_before_the_secret_store_move_into_it() {
        let db = SqliteDb::memory().unwrap();
        let before: Vec<_> = MIGRATIONS
            .iter()
            .copied()
            .filter(|m| m.version < 20)
            .collect();
        migrate(&db, &before).unwrap();
        let old = json!({"github.com": {"username": "x-access-token", "password": "ghp_old", "set_at": 3}});
        crate::settings::store(&db, "git_credentials", &old).unwrap();
        migrate(&db, MIGRATIONS).unwrap();
        assert_eq!(shown(&db).unwrap(), json!({"github.com": {"set_at": 3}}));
        let used = secrets::for_request(&db, "https://github.com/a.git", false)
            .unwrap()
            .unwrap();
        assert_eq!(used.name, "git:github.com");
        assert_eq!(
            used.authorization,
            format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode("x-access-token:ghp_old")
            )
        );
        let row = db
            .query_row(
                "SELECT count(*) FROM settings WHERE key = 'git_credentials'",
                &[],
            )
            .unwrap()
            .unwrap();
        assert_eq!(row.int(0).unwrap(), 0, "the old row is gone");
    }
}
