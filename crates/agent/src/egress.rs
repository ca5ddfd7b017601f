//! Where an agent's outbound requests may go: host patterns, the presets
//! for the public package registries, and the computer's network policy
//! (`computer.network` in the settings).
//!
//! One matching rule serves both the network policy and the secret store
//! (`crate::secrets`), so "the hosts a secret goes to" and "the hosts the
//! computer may reach" can never disagree on what `*.example.com` means:
//!
//! - a pattern is a host name or an IP address, lowercase, optionally
//!   preceded by `*.` (any subdomain, at any depth, never the name
//!   itself), optionally followed by `:port`;
//! - without a port it matches the URL scheme's default port only (80 for
//!   `http`, 443 for `https`), as git's credential matching does: a
//!   service on another port of the same host is another service;
//! - names compare case-insensitively, with a trailing dot ignored.
//!
//! Patterns that do not parse are refused with a message naming them,
//! before anything is stored.

use std::fmt;

use serde::{Deserialize, Serialize};
use url::Url;

use crate::error::ApiError;

/// Most patterns one allow-list or one secret holds.
pub const MAX_PATTERNS: usize = 64;

/// A checked host pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPattern {
    /// `*.` was given: subdomains of `host` match, `host` itself does not.
    subdomains: bool,
    /// Lowercase name or address (IPv6 without brackets).
    host: String,
    port: Option<u16>,
}

/// A destination as a request names it: host (lowercase) and port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Destination {
    pub host: String,
    pub port: u16,
    /// The port the URL's scheme uses by default.
    default_port: u16,
}

impl Destination {
    /// The destination of an `http` or `https` URL; `None` for any other.
    pub fn of_url(url: &str) -> Option<Destination> {
        let url = Url::parse(url).ok()?;
        let default_port = match url.scheme() {
            "http" => 80,
            "https" => 443,
            _ => return None,
        };
        let host = match url.host()? {
            url::Host::Domain(name) => name.trim_end_matches('.').to_ascii_lowercase(),
            url::Host::Ipv4(ip) => ip.to_string(),
            url::Host::Ipv6(ip) => ip.to_string(),
        };
        Some(Destination {
            host,
            port: url.port().unwrap_or(default_port),
            default_port,
        })
    }

    /// Whether the request would be plain `http`.
    pub fn in_the_clear(&self) -> bool {
        self.default_port == 80
    }

    /// `host` or `host:port` (the port only when it is not the default).
    pub fn label(&self) -> String {
        if self.port == self.default_port {
            self.host.clone()
        } else if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

/// A pattern that does not parse; its message names it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{0:?} is not a host pattern (a host name or address, optionally \"*.\" before it \
     and \":port\" after it, no scheme, path or user)"
)]
pub struct BadPattern(String);

impl From<BadPattern> for ApiError {
    fn from(error: BadPattern) -> Self {
        ApiError::InvalidRequest(error.to_string())
    }
}

fn refused(text: &str) -> BadPattern {
    BadPattern(text.to_string())
}

impl HostPattern {
    /// Parses `text`; a 400 naming it if it is not a pattern.
    pub fn parse(text: &str) -> Result<HostPattern, BadPattern> {
        let (subdomains, rest) = match text.strip_prefix("*.") {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        if rest.is_empty()
            || rest.len() > 253
            || rest.contains(['/', '@', '?', '#', '*', ' ', '\\', '%'])
            || rest.chars().any(|c| c.is_control() || !c.is_ascii())
        {
            return Err(refused(text));
        }
        let url = Url::parse(&format!("http://{rest}/")).map_err(|_| refused(text))?;
        let host = match url.host().ok_or_else(|| refused(text))? {
            url::Host::Domain(name) => {
                let name = name.trim_end_matches('.').to_ascii_lowercase();
                let labels_ok = !name.is_empty()
                    && name.split('.').all(|label| {
                        !label.is_empty()
                            && label.len() <= 63
                            && !label.starts_with('-')
                            && !label.ends_with('-')
                            && label
                                .chars()
                                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
                    });
                if !labels_ok {
                    return Err(refused(text));
                }
                name
            }
            url::Host::Ipv4(ip) if !subdomains => ip.to_string(),
            url::Host::Ipv6(ip) if !subdomains => ip.to_string(),
            _ => return Err(refused(text)),
        };
        // `http://host:80/` parses with no port: read it from the text.
        let port = match rest.rsplit_once(':') {
            Some((before, port)) if !before.ends_with(':') && !rest.ends_with(']') => Some(
                port.parse::<u16>()
                    .ok()
                    .filter(|p| *p != 0)
                    .ok_or_else(|| refused(text))?,
            ),
            _ => None,
        };
        Ok(HostPattern {
            subdomains,
            host,
            port,
        })
    }

    /// How closely the pattern names what it matches: an exact host beats
    /// a wildcard, a given port beats none (compared as a tuple).
    pub fn specificity(&self) -> (bool, bool) {
        (!self.subdomains, self.port.is_some())
    }

    /// What HTTPS interception takes for this pattern: the TLS server
    /// name it matches (`*.host` or `host`), if it can match HTTPS. A
    /// pattern whose port is not HTTPS's 443 names a plain-HTTP service
    /// and is intercepted as HTTP only: one port speaks one protocol, and
    /// a destination registered for both is treated as TLS (seen under
    /// `wrangler dev`).
    pub fn server_name(&self) -> Option<String> {
        if self.port.is_some_and(|port| port != 443) {
            return None;
        }
        let name = HostPattern {
            port: None,
            ..self.clone()
        };
        Some(name.to_string())
    }

    /// Whether a request to `to` matches.
    pub fn matches(&self, to: &Destination) -> bool {
        let port_ok = to.port == self.port.unwrap_or(to.default_port);
        let host_ok = if self.subdomains {
            to.host
                .strip_suffix(self.host.as_str())
                .is_some_and(|head| head.len() > 1 && head.ends_with('.'))
        } else {
            to.host == self.host
        };
        port_ok && host_ok
    }
}

impl fmt::Display for HostPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.subdomains {
            f.write_str("*.")?;
        }
        if self.host.contains(':') {
            write!(f, "[{}]", self.host)?;
        } else {
            f.write_str(&self.host)?;
        }
        match self.port {
            Some(port) => write!(f, ":{port}"),
            None => Ok(()),
        }
    }
}

impl Serialize for HostPattern {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for HostPattern {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        HostPattern::parse(&text).map_err(|e| serde::de::Error::custom(e.to_string()))
    }
}

/// Parses a list of patterns (`field` names it in errors): at least one,
/// at most [`MAX_PATTERNS`].
pub fn parse_patterns(field: &str, texts: &[String]) -> Result<Vec<HostPattern>, ApiError> {
    if texts.len() > MAX_PATTERNS {
        return Err(ApiError::InvalidRequest(format!(
            "{field}: at most {MAX_PATTERNS} host patterns"
        )));
    }
    texts
        .iter()
        .map(|text| {
            HostPattern::parse(text).map_err(|e| ApiError::InvalidRequest(format!("{field}: {e}")))
        })
        .collect()
}

/// The public package registries an allow-list can name at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Preset {
    /// Python: the index and the files it links to.
    Pypi,
    /// Node: the npm registry.
    Npm,
    /// Rust: crates.io's index and downloads.
    Crates,
    /// Go: the module proxy and checksum database.
    Go,
    /// Ruby: RubyGems.
    Rubygems,
    /// Debian's archive (apt).
    Debian,
    /// GitHub: git over HTTPS, release downloads and raw files.
    Github,
}

impl Preset {
    /// The hosts the preset admits (on the default ports).
    pub fn hosts(self) -> &'static [&'static str] {
        match self {
            Preset::Pypi => &["pypi.org", "files.pythonhosted.org"],
            Preset::Npm => &["registry.npmjs.org"],
            Preset::Crates => &["crates.io", "index.crates.io", "static.crates.io"],
            Preset::Go => &["proxy.golang.org", "sum.golang.org"],
            Preset::Rubygems => &["rubygems.org", "index.rubygems.org"],
            Preset::Debian => &["deb.debian.org", "security.debian.org"],
            Preset::Github => &[
                "github.com",
                "codeload.github.com",
                "objects.githubusercontent.com",
                "raw.githubusercontent.com",
            ],
        }
    }

    fn admits(self, to: &Destination) -> bool {
        to.port == to.default_port && self.hosts().contains(&to.host.as_str())
    }
}

/// An allow-list: the patterns and presets a computer may reach.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AllowList {
    #[serde(default)]
    pub allow: Vec<HostPattern>,
    #[serde(default)]
    pub presets: Vec<Preset>,
}

/// The computer's outbound network (`computer.network`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum NetworkPolicy {
    /// No outbound network (the default).
    #[default]
    Off,
    /// Any host.
    On,
    /// Only the hosts an allow-list admits.
    Allow(AllowList),
}

impl NetworkPolicy {
    /// Whether a request to `to` may leave.
    pub fn admits(&self, to: &Destination) -> bool {
        match self {
            NetworkPolicy::Off => false,
            NetworkPolicy::On => true,
            NetworkPolicy::Allow(list) => {
                list.allow.iter().any(|p| p.matches(to))
                    || list.presets.iter().any(|p| p.admits(to))
            }
        }
    }

    /// Whether the container starts with the platform's open internet
    /// (only `on`: an allow-list starts closed and is let through by the
    /// egress interception, host by host).
    pub fn open_internet(&self) -> bool {
        match self {
            NetworkPolicy::On => true,
            NetworkPolicy::Off | NetworkPolicy::Allow(_) => false,
        }
    }
}

impl Serialize for NetworkPolicy {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            NetworkPolicy::Off => s.serialize_str("off"),
            NetworkPolicy::On => s.serialize_str("on"),
            NetworkPolicy::Allow(list) => list.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for NetworkPolicy {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let value = serde_json::Value::deserialize(d)?;
        match value {
            serde_json::Value::String(word) => match word.as_str() {
                "off" => Ok(NetworkPolicy::Off),
                "on" => Ok(NetworkPolicy::On),
                other => Err(D::Error::custom(format!(
                    "network must be \"off\", \"on\" or {{\"allow\": [...], \"presets\": [...]}}, not {other:?}"
                ))),
            },
            value @ serde_json::Value::Object(_) => {
                let list: AllowList = serde_json::from_value(value).map_err(D::Error::custom)?;
                if list.allow.len() > MAX_PATTERNS {
                    return Err(D::Error::custom(format!(
                        "network.allow: at most {MAX_PATTERNS} host patterns"
                    )));
                }
                Ok(NetworkPolicy::Allow(list))
            }
            _ => Err(D::Error::custom(
                "network must be \"off\", \"on\" or {\"allow\": [...], \"presets\": [...]}",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn to(url: &str) -> Destination {
        Destination::of_url(url).unwrap()
    }

    #[test]
    fn patterns_parse_or_are_refused_by_name() {
        for good in [
            "github.com",
            "GitHub.com.",
            "*.example.com",
            "127.0.0.1:8080",
            "localhost:3000",
            "[::1]:8080",
            "a_b.internal",
        ] {
            assert!(HostPattern::parse(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "*",
            "*.",
            "https://github.com",
            "github.com/x",
            "u@github.com",
            "git*hub.com",
            "*.*.com",
            "a..b",
            "-a.com",
            "github.com:0",
            "github.com:99999",
            "github.com:",
            "*.127.0.0.1",
            "exa mple.com",
            "é.com",
        ] {
            let error = ApiError::from(HostPattern::parse(bad).expect_err(bad));
            assert_eq!(error.status(), 400);
            assert!(error.to_string().contains(&format!("{bad:?}")), "{error}");
        }
        assert_eq!(
            HostPattern::parse("GitHub.com.").unwrap().to_string(),
            "github.com"
        );
        assert_eq!(
            HostPattern::parse("[::1]:8080").unwrap().to_string(),
            "[::1]:8080"
        );
    }

    #[test]
    fn a_pattern_matches_its_host_and_port_only() {
        let p = |t: &str| HostPattern::parse(t).unwrap();
        assert!(p("github.com").matches(&to("https://github.com/a")));
        assert!(p("github.com").matches(&to("http://GITHUB.com./a")));
        assert!(!p("github.com").matches(&to("https://github.com:8443/a")));
        assert!(!p("github.com").matches(&to("https://api.github.com/a")));
        assert!(!p("github.com").matches(&to("https://evilgithub.com/a")));
        assert!(!p("github.com").matches(&to("https://github.com.evil.org/a")));
        assert!(p("*.github.com").matches(&to("https://api.github.com/a")));
        assert!(p("*.github.com").matches(&to("https://a.b.github.com/a")));
        assert!(!p("*.github.com").matches(&to("https://github.com/a")));
        assert!(!p("*.github.com").matches(&to("https://evilgithub.com/a")));
        assert!(p("127.0.0.1:8080").matches(&to("http://127.0.0.1:8080/x")));
        assert!(!p("127.0.0.1:8080").matches(&to("http://127.0.0.1:8081/x")));
        assert!(!p("127.0.0.1").matches(&to("http://127.0.0.1:8080/x")));
        assert!(p("github.com:443").matches(&to("https://github.com/")));
        assert!(p("[::1]:80").matches(&to("http://[::1]/")));
        assert!(Destination::of_url("ftp://github.com/").is_none());
        assert_eq!(to("http://127.0.0.1:8080/").label(), "127.0.0.1:8080");
        assert_eq!(to("https://github.com:443/").label(), "github.com");
    }

    #[test]
    fn the_policy_reads_and_decides() {
        let parse = |v: serde_json::Value| serde_json::from_value::<NetworkPolicy>(v);
        assert_eq!(parse(serde_json::json!("off")).unwrap(), NetworkPolicy::Off);
        assert_eq!(parse(serde_json::json!("on")).unwrap(), NetworkPolicy::On);
        let list = parse(
            serde_json::json!({"allow": ["127.0.0.1:9000", "*.example.org"], "presets": ["pypi"]}),
        )
        .unwrap();
        assert!(list.admits(&to("http://127.0.0.1:9000/")));
        assert!(!list.admits(&to("http://127.0.0.1:9001/")));
        assert!(list.admits(&to("https://files.pythonhosted.org/p")));
        assert!(!list.admits(&to("https://files.pythonhosted.org:8443/p")));
        assert!(list.admits(&to("https://a.example.org/")));
        assert!(!list.admits(&to("https://registry.npmjs.org/")));
        assert!(!list.open_internet());
        assert!(!NetworkPolicy::Off.admits(&to("https://pypi.org/")));
        assert!(NetworkPolicy::On.admits(&to("https://pypi.org/")));
        for bad in [
            serde_json::json!("maybe"),
            serde_json::json!(true),
            serde_json::json!({"allow": ["https://x"]}),
            serde_json::json!({"presets": ["cpan"]}),
            serde_json::json!({"allow": [], "deny": []}),
        ] {
            assert!(parse(bad.clone()).is_err(), "{bad}");
        }
        let error = parse(serde_json::json!({"allow": ["ok.com", "bad/path"]})).unwrap_err();
        assert!(error.to_string().contains("\"bad/path\""), "{error}");
        assert_eq!(
            serde_json::to_value(&list).unwrap(),
            serde_json::json!({"allow": ["127.0.0.1:9000", "*.example.org"], "presets": ["pypi"]})
        );
    }
}
