//! The MCP protocol versions served, the two shapes they come in, and the
//! `_meta` keys of the current one.

/// The two shapes of the protocol this server speaks, each served by its
/// own path through the transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Revision {
    /// 2025-03-26 to 2025-11-25: `initialize`, sessions (`Mcp-Session-Id`),
    /// a GET stream for server-sent notifications, `resources/subscribe`.
    Sessions,
    /// 2026-07-28: stateless; every request carries its version and client
    /// capabilities in `_meta`; `server/discover`; `subscriptions/listen`.
    Stateless,
}

impl Revision {
    /// The newest version of this shape.
    pub fn latest(self) -> Version {
        match self {
            Revision::Sessions => Version::V2025_11_25,
            Revision::Stateless => Version::V2026_07_28,
        }
    }

    /// The newest version of this shape, as the protocol writes it.
    pub fn version(self) -> &'static str {
        self.latest().as_str()
    }
}

/// A protocol version this server speaks: the value of `protocolVersion`
/// and of the `MCP-Protocol-Version` header.
///
/// The three session versions share the Streamable HTTP shape (sessions,
/// a GET stream, `Last-Event-ID`); what differs between them and matters
/// here is whether the client sends `MCP-Protocol-Version` after
/// `initialize` (from 2025-06-18; see [`Version::sends_version_header`])
/// and whether it may send JSON-RPC batches (2025-03-26 only; see
/// [`Version::takes_batches`]).
/// Everything else a newer version added (structured tool output, titles,
/// icons) is fields an older client ignores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    V2025_03_26,
    V2025_06_18,
    V2025_11_25,
    V2026_07_28,
}

impl Version {
    /// Newest first, as `supportedVersions` lists them.
    pub const ALL: [Version; 4] = [
        Version::V2026_07_28,
        Version::V2025_11_25,
        Version::V2025_06_18,
        Version::V2025_03_26,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Version::V2025_03_26 => "2025-03-26",
            Version::V2025_06_18 => "2025-06-18",
            Version::V2025_11_25 => "2025-11-25",
            Version::V2026_07_28 => "2026-07-28",
        }
    }

    /// The version written `text`, if served.
    pub fn parse(text: &str) -> Option<Version> {
        Version::ALL.into_iter().find(|v| v.as_str() == text)
    }

    /// The shape it is served with.
    pub fn revision(self) -> Revision {
        match self {
            Version::V2025_03_26 | Version::V2025_06_18 | Version::V2025_11_25 => {
                Revision::Sessions
            }
            Version::V2026_07_28 => Revision::Stateless,
        }
    }

    /// Whether a client of this version sends `MCP-Protocol-Version` on
    /// every request after `initialize` (2025-06-18 on; 2025-03-26 has no
    /// such header, and a server that gets none assumes 2025-03-26 unless
    /// it knows better, as from the session).
    pub fn sends_version_header(self) -> bool {
        !matches!(self, Version::V2025_03_26)
    }

    /// Whether a client may POST a JSON-RPC batch (an array of messages):
    /// 2025-03-26 requires servers to accept them; 2025-06-18 removed them.
    pub fn takes_batches(self) -> bool {
        matches!(self, Version::V2025_03_26)
    }

    /// Every version served, newest first.
    pub fn supported() -> Vec<&'static str> {
        Version::ALL.iter().map(|v| v.as_str()).collect()
    }

    /// The answer to `initialize` asking for `requested`: the same version
    /// when it is a session version served, else the newest session version
    /// (the client then decides whether it can speak it), as the lifecycle
    /// rules ask (basic/lifecycle, "Version Negotiation").
    pub fn negotiate(requested: Option<&str>) -> Version {
        requested
            .and_then(Version::parse)
            .filter(|v| v.revision() == Revision::Sessions)
            .unwrap_or(Revision::Sessions.latest())
    }
}

/// `_meta` key of a 2026-07-28 request's protocol version.
pub const PROTOCOL_VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key of a 2026-07-28 request's client capabilities.
pub const CLIENT_CAPABILITIES_KEY: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key identifying the server in a 2026-07-28 result.
pub const SERVER_INFO_KEY: &str = "io.modelcontextprotocol/serverInfo";
/// `_meta` key of the subscription a 2026-07-28 notification belongs to.
pub const SUBSCRIPTION_ID_KEY: &str = "io.modelcontextprotocol/subscriptionId";
/// Our own `_meta` key (a vendor prefix, as the spec asks): the change-log
/// position of a notification, and in a `subscriptions/listen` request the
/// position to resume after.
pub const CURSOR_KEY: &str = "stead/cursor";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn initialize_echoes_a_session_version_and_answers_the_newest_otherwise() {
        for asked in ["2025-03-26", "2025-06-18", "2025-11-25"] {
            assert_eq!(Version::negotiate(Some(asked)).as_str(), asked);
        }
        for other in [Some("2024-11-05"), Some("2026-07-28"), Some("soon"), None] {
            assert_eq!(Version::negotiate(other), Version::V2025_11_25, "{other:?}");
        }
        assert_eq!(
            Version::supported(),
            ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"]
        );
        assert!(!Version::V2025_03_26.sends_version_header());
        assert!(Version::V2025_06_18.sends_version_header());
        assert!(Version::V2025_03_26.takes_batches() && !Version::V2025_06_18.takes_batches());
    }
}
