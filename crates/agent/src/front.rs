//! Fronts: the origins the Worker answers on.
//!
//! What a dev server serves is untrusted: it never runs on the API's
//! origin. Each port of each agent's computer has an origin of its own, a
//! host `{port}-{agent label}.{PORTS_HOST}` (`PORTS_HOST` is a deployment
//! variable, [`PORTS_HOST_VAR`]), where the URL path is the dev server's
//! own. The browser then keeps every port's cookies, storage and scripts
//! apart from the API's and from every other port's, and a share link's
//! cookie is that origin's alone. On that front the Worker answers nothing
//! but the port: no API.
//!
//! The agent label encodes the agent id (`[A-Za-z0-9._-]`, case-sensitive)
//! into one DNS label, which is case-insensitive and holds `[a-z0-9-]`: a
//! lowercase letter or digit stands for itself, and `-` starts a two-letter
//! escape: `-` followed by a lowercase letter is that letter in upper case,
//! `-0` is `-`, `-1` is `.` and `-2` is `_`. So `alice` is `alice`, `Bob`
//! is `-bob` and `web-1.dev` is `web-01-1dev`. An escape never ends in `-`,
//! so no label ends in one. One label is used (not one per piece of the
//! id) because a wildcard certificate for `*.PORTS_HOST` covers exactly
//! one label. A label holds at most 63 characters: an agent id of up to
//! 28 characters always fits (up to 57 of lowercase letters and digits);
//! a longer one whose label does not fit has no ports origin
//! ([`ApiError::NoPortOrigin`]).

use crate::error::ApiError;
use crate::route::{valid_agent_id, Action, Front, Route};

/// The deployment variable naming the ports origins' parent host.
pub const PORTS_HOST_VAR: &str = "PORTS_HOST";

/// The longest DNS label (RFC 1035 2.3.4).
const MAX_LABEL: usize = 63;

/// The escapes after `-`, as (agent id byte, label byte).
const ESCAPES: &[(u8, u8)] = &[(b'-', b'0'), (b'.', b'1'), (b'_', b'2')];

/// The DNS label of port `port` of agent `agent`.
pub fn label(agent: &str, port: u16) -> Result<String, ApiError> {
    let mut label = format!("{port}-");
    for byte in agent.bytes() {
        match byte {
            b'a'..=b'z' | b'0'..=b'9' => label.push(byte as char),
            b'A'..=b'Z' => {
                label.push('-');
                label.push(byte.to_ascii_lowercase() as char);
            }
            _ => {
                let (_, code) = ESCAPES
                    .iter()
                    .find(|(from, _)| *from == byte)
                    .ok_or_else(|| ApiError::InvalidAgentId { id: agent.into() })?;
                label.push('-');
                label.push(*code as char);
            }
        }
    }
    if label.len() > MAX_LABEL {
        return Err(ApiError::NoPortOrigin {
            agent: agent.into(),
            length: label.len(),
        });
    }
    Ok(label)
}

/// The agent and port a label names, if it is one [`label`] makes.
/// Upper case is read as lower case, as DNS does.
pub fn parse_label(label: &str) -> Option<(String, u16)> {
    let label = label.to_ascii_lowercase();
    let (number, encoded) = label.split_once('-')?;
    let port = number
        .parse::<u16>()
        .ok()
        .filter(|port| *port > 0 && port.to_string() == number)?;
    let mut agent = String::new();
    let mut bytes = encoded.bytes();
    while let Some(byte) = bytes.next() {
        match byte {
            b'a'..=b'z' | b'0'..=b'9' => agent.push(byte as char),
            b'-' => match bytes.next()? {
                letter @ b'a'..=b'z' => agent.push(letter.to_ascii_uppercase() as char),
                code => {
                    let (from, _) = ESCAPES.iter().find(|(_, to)| *to == code)?;
                    agent.push(*from as char);
                }
            },
            _ => return None,
        }
    }
    (valid_agent_id(&agent) && label.len() <= MAX_LABEL).then_some((agent, port))
}

/// The host of port `port` of agent `agent` under `ports_host`.
pub fn port_host(agent: &str, port: u16, ports_host: &str) -> Result<String, ApiError> {
    Ok(format!("{}.{ports_host}", label(agent, port)?))
}

/// The origin of port `port` of agent `agent`: the API origin's scheme and
/// port (`http://127.0.0.1:8787` gives `http://{host}:8787`) with the
/// port's host under `ports_host`.
pub fn port_origin(
    api_origin: &str,
    (agent, port): (&str, u16),
    ports_host: &str,
) -> Result<String, ApiError> {
    let (scheme, authority) = api_origin
        .split_once("://")
        .ok_or_else(|| ApiError::Internal(format!("an origin without a scheme: {api_origin}")))?;
    let listening = authority
        .rsplit_once(':')
        .map(|(_, number)| number)
        .filter(|number| !number.is_empty() && number.bytes().all(|b| b.is_ascii_digit()));
    let host = port_host(agent, port, ports_host)?;
    Ok(match listening {
        Some(number) => format!("{scheme}://{host}:{number}"),
        None => format!("{scheme}://{host}"),
    })
}

/// The label of `host` when it is a strict subdomain of `ports_host`
/// (compared as DNS does, ignoring case).
fn under<'a>(host: &'a str, ports_host: &str) -> Option<&'a str> {
    let cut = host.len().checked_sub(ports_host.len() + 1)?;
    let (label, parent) = (host.get(..cut)?, host.get(cut..)?);
    let parent = parent.strip_prefix('.')?;
    parent.eq_ignore_ascii_case(ports_host).then_some(label)
}

/// Routes a request by its host (without a port) and then its `method`
/// and percent-encoded `path`: a host under `ports_host` is a port's own
/// origin, where every path is the dev server's; any other host is the
/// API's.
pub fn route(
    method: &str,
    host: &str,
    path: &str,
    ports_host: Option<&str>,
) -> Result<Route, ApiError> {
    let Some(label) = ports_host
        .filter(|ports_host| !ports_host.is_empty())
        .and_then(|ports_host| under(host, ports_host))
    else {
        return crate::route::route(method, path);
    };
    let (id, port) = parse_label(label).ok_or_else(|| ApiError::NotAPortOrigin {
        host: host.to_ascii_lowercase(),
    })?;
    Ok(Route::Agent {
        id,
        action: Action::Port {
            port,
            path: path.to_string(),
            front: Front::Port,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_round_trip_every_kind_of_agent_id() {
        for (agent, expected) in [
            ("alice", "8000-alice"),
            ("Bob", "8000--bob"),
            ("web-1.dev_X", "8000-web-01-1dev-2-x"),
            ("-._", "8000--0-1-2"),
            ("0", "8000-0"),
        ] {
            let label = label(agent, 8000).unwrap();
            assert_eq!(label, expected);
            assert_eq!(parse_label(&label), Some((agent.to_string(), 8000)));
        }
        // Agent ids differing in case only have different labels.
        assert_ne!(label("ab", 1).unwrap(), label("aB", 1).unwrap());
        // A host comes back in any case: DNS ignores it.
        assert_eq!(parse_label("3000--bob"), parse_label("3000--BOB"));
        // The longest ids that fit, and the shortest that do not.
        let upper = "A".repeat(28);
        assert_eq!(
            parse_label(&label(&upper, 65535).unwrap()).unwrap().0,
            upper
        );
        assert!(matches!(
            label(&"A".repeat(29), 65535),
            Err(ApiError::NoPortOrigin { length: 64, .. })
        ));
        let lower = "a".repeat(57);
        assert_eq!(label(&lower, 65535).unwrap().len(), 63);
        assert!(label(&"a".repeat(58), 65535).is_err());
    }

    #[test]
    fn labels_that_no_agent_has_are_refused() {
        for label in [
            "", "8000", "8000-", "alice", "-alice", "0-a", "08000-a", "65536-a", "8000-a-",
            "8000-a-3", "8000-a_b", "8000-a.b", "8000-a-.", "8000-é",
        ] {
            assert_eq!(parse_label(label), None, "{label:?}");
        }
        // Longer than a DNS label, though it would decode.
        assert_eq!(parse_label(&format!("1-{}", "a".repeat(62))), None);
    }

    #[test]
    fn a_port_origin_keeps_the_api_origins_scheme_and_port() {
        assert_eq!(
            port_origin("http://127.0.0.1:8787", ("Bob", 3000), "localhost").unwrap(),
            "http://3000--bob.localhost:8787"
        );
        assert_eq!(
            port_origin("https://api.test", ("a", 80), "ports.test").unwrap(),
            "https://80-a.ports.test"
        );
        assert_eq!(
            port_origin("http://[::1]", ("a", 80), "localhost").unwrap(),
            "http://80-a.localhost"
        );
    }

    #[test]
    fn hosts_under_the_ports_host_reach_the_port_and_nothing_else() {
        let port = |path: &str| Route::Agent {
            id: "Bob".into(),
            action: Action::Port {
                port: 3000,
                path: path.into(),
                front: Front::Port,
            },
        };
        let ports = Some("ports.test");
        // Every path and method is the dev server's, the API's own included.
        for (method, path) in [
            ("GET", "/"),
            ("POST", "/share"),
            ("GET", "/health"),
            ("GET", "/agents/Bob/files/a"),
            ("POST", "/agents/Bob/mcp"),
            ("GET", "/.well-known/x"),
        ] {
            assert_eq!(
                route(method, "3000--bob.ports.test", path, ports).unwrap(),
                port(path)
            );
        }
        assert_eq!(
            route("GET", "3000--BOB.Ports.Test", "/", ports).unwrap(),
            port("/")
        );
        // A host under it that names no port is no API either.
        for host in [
            "api.ports.test",
            "x.3000-a.ports.test",
            "3000-a-3.ports.test",
        ] {
            assert!(
                matches!(
                    route("GET", host, "/health", ports),
                    Err(ApiError::NotAPortOrigin { .. })
                ),
                "{host}"
            );
        }
        // The ports host itself, other hosts, and no ports host: the API.
        for (host, ports) in [
            ("ports.test", ports),
            ("api.test", ports),
            ("xports.test", ports),
            ("3000-a.ports.test", None),
            ("3000-a.ports.test", Some("")),
        ] {
            assert_eq!(
                route("GET", host, "/health", ports).unwrap(),
                Route::Health,
                "{host}"
            );
        }
        // The port's path on the API's origin takes no share link: its
        // cookie would land on the API's origin.
        let Route::Agent { action, .. } =
            route("GET", "api.test", "/agents/a/ports/3000/x", ports).unwrap()
        else {
            panic!("not an agent's route");
        };
        assert!(matches!(
            action,
            Action::Port {
                front: Front::Api,
                ..
            }
        ));
        assert!(!action.takes_share_link());
        let Route::Agent { action, .. } = route("GET", "3000-a.ports.test", "/x", ports).unwrap()
        else {
            panic!("not an agent's route");
        };
        assert!(action.takes_share_link());
    }
}
