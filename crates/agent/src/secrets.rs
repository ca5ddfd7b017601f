//! The agent's secret store: credentials the admin writes and nothing
//! reads back, added to outbound requests as they leave.
//!
//! A secret has a name, the host patterns it may go to (`crate::egress`'s
//! matching rule; at least one: a secret bound to no host is refused) and
//! the header it is sent as: `Authorization: Bearer <value>`, or HTTP Basic
//! (`username` and password, what git over HTTPS sends). It is written in
//! the settings (`PUT /settings {"secrets": {"NAME": {...}}}`, each name
//! set or, with `null`, forgotten, the others kept) by a caller holding
//! `admin`. `GET /settings` shows each name with its hosts, its header kind
//! and when it was set; never the value, so neither does the audit log's
//! record of the change (it is computed from what `GET` shows).
//!
//! The value leaves SQLite in one place only: [`for_request`], which the
//! agent calls as one of its own requests leaves (the light shell's git),
//! after the replay journal recorded the request the shell made; the shell,
//! its output, the transcript and every token see the request without it.
//! It is never put in a command's environment, a file, or the computer.
//! Every use is recorded in the audit log as `secret.use`, naming the
//! secret and the host, never the value.
//!
//! git's HTTPS credentials (`crate::git_credentials`) are a view of this
//! store: secrets named `git:<host>`, sent as Basic.

use std::fmt;

use base64::Engine;
use serde::Deserialize;
use serde_json::{json, Value};
use stead_sql::{params, Sql};

use crate::egress::{self, Destination, HostPattern};
use crate::error::ApiError;

/// Most secrets an agent keeps.
pub const MAX_SECRETS: usize = 64;

/// Longest name, username and value, bytes.
const MAX_NAME: usize = 64;
const MAX_USERNAME: usize = 256;
const MAX_VALUE: usize = 4096;

/// How a secret is sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Header {
    /// `Authorization: Bearer <value>`.
    Bearer,
    /// `Authorization: Basic base64(username:value)`.
    Basic { username: String },
}

impl Header {
    /// The stored kind (`secrets.header`).
    fn kind(&self) -> &'static str {
        match self {
            Header::Bearer => "bearer",
            Header::Basic { .. } => "basic",
        }
    }

    /// A stored kind, checked.
    fn kind_of(text: &str) -> Result<&'static str, ApiError> {
        match text {
            "bearer" => Ok("bearer"),
            "basic" => Ok("basic"),
            other => Err(ApiError::Internal(format!(
                "stored secret header {other:?}"
            ))),
        }
    }

    fn from_row(kind: &str, username: Option<&str>) -> Result<Header, ApiError> {
        match (kind, username) {
            ("bearer", _) => Ok(Header::Bearer),
            ("basic", Some(username)) => Ok(Header::Basic {
                username: username.to_string(),
            }),
            _ => Err(ApiError::Internal(format!("stored secret header {kind:?}"))),
        }
    }

    /// The `Authorization` value carrying `value`.
    fn authorization(&self, value: &str) -> String {
        match self {
            Header::Bearer => format!("Bearer {value}"),
            Header::Basic { username } => format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(format!("{username}:{value}"))
            ),
        }
    }
}

/// A secret to store. Its `Debug` hides the value.
#[derive(Clone, PartialEq, Eq)]
pub struct NewSecret {
    pub hosts: Vec<HostPattern>,
    pub header: Header,
    pub value: String,
}

impl fmt::Debug for NewSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NewSecret")
            .field("hosts", &self.hosts)
            .field("header", &self.header.kind())
            .field("value", &"<hidden>")
            .finish()
    }
}

/// A secret's entry in a `PUT`: its hosts and exactly one of `bearer` or
/// `basic`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Given {
    #[serde(default)]
    hosts: Vec<String>,
    bearer: Option<String>,
    basic: Option<GivenBasic>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GivenBasic {
    username: String,
    password: String,
}

fn invalid(message: String) -> ApiError {
    ApiError::InvalidRequest(message)
}

/// Checks a username or value (`field` names it in errors).
pub(crate) fn check_text(field: &str, value: &str, max: usize) -> Result<(), ApiError> {
    if value.is_empty() || value.len() > max || value.chars().any(char::is_control) {
        return Err(invalid(format!(
            "{field} must be 1 to {max} bytes without control characters"
        )));
    }
    Ok(())
}

impl NewSecret {
    /// A checked secret; `field` names it in errors (`secrets.NAME`).
    pub fn new(
        field: &str,
        hosts: Vec<HostPattern>,
        header: Header,
        value: String,
    ) -> Result<NewSecret, ApiError> {
        if hosts.is_empty() {
            return Err(invalid(format!(
                "{field}.hosts must name at least one host: a secret bound to no host would go nowhere"
            )));
        }
        if let Header::Basic { username } = &header {
            check_text(&format!("{field}.basic.username"), username, MAX_USERNAME)?;
            if username.contains(':') {
                return Err(invalid(format!(
                    "{field}.basic.username may not contain ':'"
                )));
            }
        }
        check_text(&format!("{field} value"), &value, MAX_VALUE)?;
        Ok(NewSecret {
            hosts,
            header,
            value,
        })
    }
}

/// A checked `secrets` section: each name with its new secret, or `None`
/// to forget it.
#[derive(Debug)]
pub struct Patch(Vec<(String, Option<NewSecret>)>);

/// A name the admin may give a secret: letters, digits, `_`, `-` and `.`
/// (a `:` marks the names the store gives itself, such as `git:<host>`).
fn check_name(name: &str) -> Result<(), ApiError> {
    let ok = !name.is_empty()
        && name.len() <= MAX_NAME
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if ok {
        Ok(())
    } else {
        Err(invalid(format!(
            "secrets: {name:?} is not a secret name (1 to {MAX_NAME} letters, digits, '_', '-' or '.')"
        )))
    }
}

fn parse_given(name: &str, entry: &Value) -> Result<NewSecret, ApiError> {
    let field = format!("secrets.{name}");
    let given: Given =
        crate::decode::decode_value(entry).map_err(|e| invalid(format!("{field}: {e}")))?;
    let hosts = egress::parse_patterns(&format!("{field}.hosts"), &given.hosts)?;
    let (header, value) = match (given.bearer, given.basic) {
        (Some(token), None) => (Header::Bearer, token),
        (None, Some(basic)) => (
            Header::Basic {
                username: basic.username,
            },
            basic.password,
        ),
        _ => {
            return Err(invalid(format!(
                "{field} needs exactly one of \"bearer\" (a token) or \"basic\" ({{\"username\", \"password\"}})"
            )))
        }
    };
    NewSecret::new(&field, hosts, header, value)
}

/// Checks a `secrets` section of a settings `PUT`.
pub fn parse(section: &Value) -> Result<Patch, ApiError> {
    let Value::Object(names) = section else {
        return Err(invalid("secrets must be an object keyed by name".into()));
    };
    let mut patch = Vec::new();
    for (name, entry) in names {
        let value = match entry {
            Value::Null => None,
            entry => {
                check_name(name)?;
                Some(parse_given(name, entry)?)
            }
        };
        patch.push((name.clone(), value));
    }
    Ok(Patch(patch))
}

/// Stores or replaces `name` (inside the caller's transaction).
pub fn set(db: &impl Sql, name: &str, secret: &NewSecret, now_ms: i64) -> Result<(), ApiError> {
    let hosts: Vec<String> = secret.hosts.iter().map(ToString::to_string).collect();
    let hosts = serde_json::to_string(&hosts).expect("strings serialize");
    let username = match &secret.header {
        Header::Basic { username } => Some(username.as_str()),
        Header::Bearer => None,
    };
    db.execute(
        "INSERT INTO secrets (name, hosts, header, username, value, set_at) \
         VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (name) DO UPDATE SET \
         hosts = excluded.hosts, header = excluded.header, username = excluded.username, \
         value = excluded.value, set_at = excluded.set_at",
        params![
            name,
            hosts.as_str(),
            secret.header.kind(),
            username,
            secret.value.as_str(),
            now_ms
        ],
    )?;
    Ok(())
}

/// Forgets `name`, if it is stored.
pub fn remove(db: &impl Sql, name: &str) -> Result<(), ApiError> {
    db.execute("DELETE FROM secrets WHERE name = ?", params![name])?;
    Ok(())
}

/// Refuses more than [`MAX_SECRETS`] (after a patch, inside its
/// transaction, so a refused patch changes nothing).
pub fn check_count(db: &impl Sql) -> Result<(), ApiError> {
    let count = db
        .query_row("SELECT count(*) FROM secrets", params![])?
        .map(|row| row.int(0))
        .transpose()?
        .unwrap_or(0);
    if count as usize > MAX_SECRETS {
        return Err(invalid(format!(
            "secrets: at most {MAX_SECRETS} (git credentials included)"
        )));
    }
    Ok(())
}

/// Stores `patch` (inside the caller's transaction), as set at `now_ms`.
pub fn apply(db: &impl Sql, patch: &Patch, now_ms: i64) -> Result<(), ApiError> {
    for (name, secret) in &patch.0 {
        match secret {
            Some(secret) => set(db, name, secret, now_ms)?,
            None => remove(db, name)?,
        }
    }
    check_count(db)
}

/// One stored secret, without its value.
pub struct Shown {
    pub name: String,
    pub hosts: Vec<String>,
    pub header: &'static str,
    pub set_at: i64,
}

/// Every secret whose name starts with `prefix`, without values, by name.
pub fn list(db: &impl Sql, prefix: &str) -> Result<Vec<Shown>, ApiError> {
    let rows = db.query(
        "SELECT name, hosts, header, set_at FROM secrets ORDER BY name",
        params![],
    )?;
    let mut shown = Vec::new();
    for row in rows {
        let name = row.text(0)?;
        if !name.starts_with(prefix) {
            continue;
        }
        let hosts: Vec<String> = serde_json::from_str(row.text(1)?)
            .map_err(|e| ApiError::Internal(format!("stored secret hosts: {e}")))?;
        let header = Header::kind_of(row.text(2)?)?;
        shown.push(Shown {
            name: name.to_string(),
            hosts,
            header,
            set_at: row.int(3)?,
        });
    }
    Ok(shown)
}

/// What `GET /settings` shows: each secret's hosts, header kind and when
/// it was set, never its value.
pub fn shown(db: &impl Sql) -> Result<Value, ApiError> {
    Ok(Value::Object(
        list(db, "")?
            .into_iter()
            .map(|s| {
                let entry = json!({ "hosts": s.hosts, "header": s.header, "set_at": s.set_at });
                (s.name, entry)
            })
            .collect(),
    ))
}

/// A secret chosen for a request: which, for which host, and the header
/// value (hidden from `Debug`).
pub struct Use {
    pub name: String,
    /// The destination as the audit log names it (`host` or `host:port`).
    pub host: String,
    pub authorization: String,
}

impl fmt::Debug for Use {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Use")
            .field("name", &self.name)
            .field("host", &self.host)
            .field("authorization", &"<hidden>")
            .finish()
    }
}

/// The secret to add to a request to `url`, if one is bound to its host
/// and may go there: over `https`, or over `http` only when `plain_http`
/// (local development: the secret would cross the network in the clear).
/// Where several match, the one with the most specific matching pattern,
/// then the first by name.
pub fn for_request(db: &impl Sql, url: &str, plain_http: bool) -> Result<Option<Use>, ApiError> {
    let Some(to) = Destination::of_url(url) else {
        return Ok(None);
    };
    if to.in_the_clear() && !plain_http {
        return Ok(None);
    }
    let rows = db.query(
        "SELECT name, hosts, header, username, value FROM secrets ORDER BY name",
        params![],
    )?;
    let mut best: Option<((bool, bool), Use)> = None;
    for row in rows {
        let hosts: Vec<String> = serde_json::from_str(row.text(1)?)
            .map_err(|e| ApiError::Internal(format!("stored secret hosts: {e}")))?;
        let matched = hosts
            .iter()
            .filter_map(|text| HostPattern::parse(text).ok())
            .filter(|pattern| pattern.matches(&to))
            .map(|pattern| pattern.specificity())
            .max();
        let Some(rank) = matched else { continue };
        if best.as_ref().is_some_and(|(have, _)| *have >= rank) {
            continue;
        }
        let header = Header::from_row(row.text(2)?, row.opt_text(3)?)?;
        let chosen = Use {
            name: row.text(0)?.to_string(),
            host: to.label(),
            authorization: header.authorization(row.text(4)?),
        };
        best = Some((rank, chosen));
    }
    Ok(best.map(|(_, chosen)| chosen))
}

/// Records a use in the audit log (`secret.use`: the name as target, the
/// host in the detail).
pub fn record_use(db: &impl Sql, at: i64, actor: &str, used: &Use) {
    let note = crate::audit::Note {
        target: Some(used.name.clone()),
        detail: Some(json!({ "host": used.host })),
    };
    // The request goes on: failing to record its use must not fail it.
    let _ = crate::audit::record(db, at, actor, "secret.use", &note, "ok");
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

    fn set_all(db: &SqliteDb, body: Value, now: i64) -> Result<(), ApiError> {
        db.transaction(|| apply(db, &parse(&body)?, now))
    }

    /// A database holding one secret, `name`, bound to `host`.
    fn db_with(name: &str, host: &str, value: &str) -> SqliteDb {
        let db = db();
        let body = json!({ name: {"hosts": [host], "bearer": value} });
        set_all(&db, body, 1).unwrap();
        db
    }

    fn basic(pair: &str) -> String {
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(pair)
        )
    }

    #[test]
    fn a_secret_goes_to_its_hosts_only_as_its_header() {
        let db = db();
        set_all(
            &db,
            json!({
                "GH": {"hosts": ["github.com", "*.github.com"], "bearer": "ghp_tok"},
                "API": {"hosts": ["api.github.com"], "basic": {"username": "ada", "password": "pw"}},
                "LOCAL": {"hosts": ["127.0.0.1:9000"], "bearer": "local-tok"}
            }),
            7,
        )
        .unwrap();
        let auth = |url: &str, plain| {
            for_request(&db, url, plain)
                .unwrap()
                .map(|u| (u.name, u.host, u.authorization))
        };
        assert_eq!(
            auth("https://github.com/x", false),
            Some(("GH".into(), "github.com".into(), "Bearer ghp_tok".into()))
        );
        assert_eq!(
            auth("https://uploads.github.com/x", false).unwrap().0,
            "GH",
            "the wildcard"
        );
        assert_eq!(
            auth("https://api.github.com/x", false).unwrap().2,
            basic("ada:pw"),
            "the exact host beats the wildcard"
        );
        assert_eq!(
            auth("https://github.com:8443/x", false),
            None,
            "another port"
        );
        assert_eq!(auth("https://evilgithub.com/x", false), None);
        assert_eq!(auth("http://github.com/x", false), None, "not in the clear");
        assert_eq!(auth("http://127.0.0.1:9000/x", false), None);
        assert_eq!(
            auth("http://127.0.0.1:9000/x", true).unwrap().1,
            "127.0.0.1:9000"
        );
        assert_eq!(auth("ftp://github.com/x", true), None);
        // Shown without values; a null forgets one and keeps the others.
        let shown = shown(&db).unwrap();
        assert_eq!(
            shown["GH"],
            json!({"hosts": ["github.com", "*.github.com"], "header": "bearer", "set_at": 7})
        );
        assert_eq!(shown["API"]["header"], "basic");
        set_all(&db, json!({"GH": null}), 8).unwrap();
        assert_eq!(auth("https://github.com/x", false), None);
        assert_eq!(super::shown(&db).unwrap().as_object().unwrap().len(), 2);
    }

    #[test]
    fn bad_secrets_are_refused_whole_and_values_never_shown() {
        let db = db_with("KEEP", "a.com", "keep-me");
        for bad in [
            json!(["x"]),
            json!({"N": {"bearer": "t"}}),
            json!({"N": {"hosts": [], "bearer": "t"}}),
            json!({"N": {"hosts": ["https://a.com"], "bearer": "t"}}),
            json!({"N": {"hosts": ["a.com"]}}),
            json!({"N": {"hosts": ["a.com"], "bearer": "t", "basic": {"username": "u", "password": "p"}}}),
            json!({"N": {"hosts": ["a.com"], "bearer": ""}}),
            json!({"N": {"hosts": ["a.com"], "bearer": "a\nb"}}),
            json!({"N": {"hosts": ["a.com"], "basic": {"username": "a:b", "password": "p"}}}),
            json!({"N": {"hosts": ["a.com"], "bearer": "t", "header": "x"}}),
            json!({"bad name": {"hosts": ["a.com"], "bearer": "t"}}),
            json!({"git:a.com": {"hosts": ["a.com"], "bearer": "t"}}),
            json!({"OK": {"hosts": ["a.com"], "bearer": "t"}, "N": {"hosts": ["x/y"], "bearer": "t"}}),
        ] {
            let error = set_all(&db, bad.clone(), 2).expect_err(&bad.to_string());
            assert_eq!(error.status(), 400, "{bad}");
        }
        let error = set_all(
            &db,
            json!({"N": {"hosts": ["a.com", "x/y"], "bearer": "t"}}),
            2,
        )
        .unwrap_err();
        assert!(error.to_string().contains("\"x/y\""), "{error}");
        let error = set_all(&db, json!({"N": {"hosts": [], "bearer": "t"}}), 2).unwrap_err();
        assert!(error.to_string().contains("no host"), "{error}");
        assert_eq!(
            shown(&db).unwrap(),
            json!({"KEEP": {"hosts": ["a.com"], "header": "bearer", "set_at": 1}}),
            "refused patches change nothing"
        );
        let many: serde_json::Map<String, Value> = (0..=MAX_SECRETS)
            .map(|i| (format!("S{i}"), json!({"hosts": ["a.com"], "bearer": "t"})))
            .collect();
        assert!(set_all(&db, Value::Object(many), 3).is_err());
        assert_eq!(shown(&db).unwrap().as_object().unwrap().len(), 1);
        let patch = parse(&json!({"N": {"hosts": ["a.com"], "bearer": "hidden-value"}})).unwrap();
        assert!(!format!("{patch:?}").contains("hidden-value"));
        let used = for_request(&db, "https://a.com/", false).unwrap().unwrap();
        assert!(!format!("{used:?}").contains("keep-me"));
        assert!(!shown(&db).unwrap().to_string().contains("keep-me"));
    }

    #[test]
    fn a_use_is_audited_by_name_and_host() {
        let db = db_with("GH", "github.com", "ghp_tok");
        let used = for_request(&db, "https://github.com/a.git/info/refs", false)
            .unwrap()
            .unwrap();
        record_use(&db, 10, "admin", &used);
        let page = crate::audit::list(&db, crate::audit::Page::from_query(&[]).unwrap()).unwrap();
        let text = page.to_string();
        assert!(
            text.contains("secret.use") && text.contains("\"GH\"") && text.contains("github.com"),
            "{text}"
        );
        assert!(!text.contains("ghp_tok"));
    }
}
